/*
 * Values for people and from replies: sizes, times and durations in
 * words, and a reply's fields read without trusting their types. Pure
 * functions, no I/O, shared by every verb and by the error words.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fatelfctl.h"
#include "macro.h"

/* ------------------------------------------------------------ formats */

const char *ctl_format_time(int64_t t, char buf[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !localtime_r(&tt, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M", &tm) == 0)
		snprintf(buf, 32, "-");
	return buf;
}

const char *ctl_format_duration(int64_t s, char buf[32])
{
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, 32, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, 32, "%lldm %02llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, 32, "%lldh %02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else
		snprintf(buf, 32, "%lldd %02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
	return buf;
}

/* ------------------------------------------------------------ reading replies */

const char *ctl_json_str(json_object *o, const char *key, const char *fallback)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return fallback;
}

int64_t ctl_json_int(json_object *o, const char *key)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return 0;
}

bool ctl_json_bool(json_object *o, const char *key)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	return false;
}

json_object *ctl_json_obj(json_object *o, const char *key)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_object))
		return v;
	return NULL;
}

json_object *ctl_json_array(json_object *o, const char *key)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array))
		return v;
	return NULL;
}

const char *ctl_json_join(json_object *array, char *buf, size_t size)
{
	size_t n = array ? json_object_array_length(array) : 0, used = 0;

	snprintf(buf, size, "-");
	for (size_t i = 0; i < n && used < size; i++) {
		json_object *e = json_object_array_get_idx(array, i);
		const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "?";
		int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", s);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

