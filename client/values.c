/*
 * Values for people and from replies: sizes, times and durations in
 * words, a reply's fields read without trusting their types, what the
 * repositories offer of one package, and the shapes of arguments (a
 * repository package, a minisign key line). Pure functions, no I/O,
 * shared by every verb and by the error words.
 */
#include <errno.h>
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

int ctl_json_distinct(json_object *array, const char *key, json_object **ret)
{
	size_t n = array ? json_object_array_length(array) : 0;
	json_object *out = json_object_new_array();

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *s = ctl_json_str(json_object_array_get_idx(array, i), key, NULL);
		size_t m = json_object_array_length(out);
		bool seen = false;
		json_object *v;

		if (!s)
			continue;
		for (size_t k = 0; k < m && !seen; k++)
			seen = strcmp(json_object_get_string(json_object_array_get_idx(out, k)), s) == 0;
		if (seen)
			continue;
		v = json_object_new_string(s);
		if (!v || json_object_array_add(out, v) < 0) {
			json_object_put(v);
			json_object_put(out);
			return -ENOMEM;
		}
	}
	*ret = out;
	return 0;
}

/* ------------------------------------------------------------ what the repositories offer */

int ctl_available_of(json_object *packages, const char *name, json_object **ret)
{
	size_t n = packages ? json_object_array_length(packages) : 0;
	json_object *out = json_object_new_array();

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(packages, i);
		const char *pn = ctl_json_str(p, "name", NULL);

		if (!pn || strcmp(pn, name) != 0)
			continue;
		if (json_object_array_add(out, json_object_get(p)) < 0) {
			json_object_put(p);
			json_object_put(out);
			return -ENOMEM;
		}
	}
	*ret = out;
	return 0;
}

const char *ctl_available_join(json_object *available, char *buf, size_t size)
{
	size_t n = available ? json_object_array_length(available) : 0, used = 0;

	snprintf(buf, size, "-");
	for (size_t i = 0; i < n && used < size; i++) {
		json_object *a = json_object_array_get_idx(available, i);
		int w = snprintf(buf + used, size - used, "%s%s (%s)", i ? ", " : "",
				 ctl_json_str(a, "version", "?"), ctl_json_str(a, "repository", "?"));

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

/* ------------------------------------------------------------ arguments */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || fatelf_text_is_digit(c) || c == '+' || c == '.' || c == '-';
}

static bool version_char(char c)
{
	return fatelf_text_is_alpha(c) || fatelf_text_is_digit(c) || c == '.' || c == '+' ||
	       c == '~' || c == '-' || c == ':';
}

bool ctl_package_spec(const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);

	/* The first character also keeps "-" and options out. */
	if (name_len < 2 || name_len > 255 || arg[0] == '+' || arg[0] == '.' || arg[0] == '-')
		return false;
	for (size_t i = 0; i < name_len; i++)
		if (!name_char(arg[i]))
			return false;
	if (!eq)
		return true;
	eq++;
	if (!fatelf_text_is_digit(eq[0]) || strlen(eq) > 255)
		return false;
	for (const char *q = eq; *q; q++)
		if (!version_char(*q))
			return false;
	return true;
}

/* minisign's key and secret key files, as base64 lines: "Ed", the key id
 * (8 bytes) and the Ed25519 key (32 bytes); the secret key's 158 bytes. */
#define KEY_LINE_LEN 56
#define SECRET_LINE_LEN 212

static bool b64_char(char c)
{
	return fatelf_text_is_alpha(c) || fatelf_text_is_digit(c) || c == '+' || c == '/' || c == '=';
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The next line of [*p, end) without its newline and surrounding blanks;
 * false at the end. */
static bool next_line(const char **p, const char *end, const char **ret, size_t *ret_len)
{
	const char *s = *p, *e;

	if (s >= end)
		return false;
	e = memchr(s, '\n', (size_t)(end - s));
	*p = e ? e + 1 : end;
	if (!e)
		e = end;
	while (s < e && blank(*s))
		s++;
	while (e > s && blank(e[-1]))
		e--;
	*ret = s;
	*ret_len = (size_t)(e - s);
	return true;
}

enum ctl_key_kind ctl_key_line(const char *text, size_t len, const char **ret_line, size_t *ret_len)
{
	static const char comment[] = "untrusted comment:";
	const char *p = text, *end = text + len, *line, *rest;
	size_t n, rest_len;

	if (!next_line(&p, end, &line, &n))
		return CTL_KEY_INVALID;
	if (n >= sizeof(comment) - 1 && memcmp(line, comment, sizeof(comment) - 1) == 0 &&
	    !next_line(&p, end, &line, &n))
		return CTL_KEY_INVALID;
	for (size_t i = 0; i < n; i++)
		if (!b64_char(line[i]))
			return CTL_KEY_INVALID;
	/* Blank lines may follow (an editor's final newline), nothing else. */
	while (next_line(&p, end, &rest, &rest_len))
		if (rest_len)
			return CTL_KEY_INVALID;
	if (n == SECRET_LINE_LEN)
		return CTL_KEY_SECRET;
	/* "Ed" in base64 is "RW"; the key line has no padding. */
	if (n != KEY_LINE_LEN || line[0] != 'R' || line[1] != 'W' || memchr(line, '=', n))
		return CTL_KEY_INVALID;
	*ret_line = line;
	*ret_len = n;
	return CTL_KEY_PUBLIC;
}

int ctl_keep_packages(json_object *params, bool continues, void *userdata)
{
	json_object **ret = userdata;
	json_object *pkgs = ctl_json_array(params, "packages");

	(void)continues;
	json_object_put(*ret);
	*ret = pkgs ? json_object_get(pkgs) : NULL;
	return CTL_CONTINUE;
}
