/*
 * libFuzzer target for fatelfd's parameter dispatch: the input is the
 * "parameters" object of a call, as a client would write it. It is wrapped
 * in a call to io.fatelf.Manager.Install, parsed by vl_call_parse the way
 * the daemon parses every message, and its parameters are then dispatched
 * against the daemon's own table for every method (daemon/params.c, the
 * tables fatelfd dispatches with).
 *
 * The daemon's handlers trust what dispatch gives them, so the invariants
 * checked here are what they rely on:
 *  - dispatch accepts exactly what an independent model of the rules
 *    accepts (no unknown field, right type, within range, no NUL inside
 *    a string, every mandatory field present and not null);
 *  - on refusal it names a field (one of the table's or the unknown key)
 *    and leaves the destination untouched, byte for byte;
 *  - on success every present field holds its value (strings are the
 *    parameter's own, NUL-free; STRV arrays hold every element in order
 *    and are NULL-terminated) and every absent field keeps its default;
 *  - STRV arrays are freed the way the daemon frees them (LeakSanitizer
 *    would report one that dispatch allocated behind the caller's back).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "varlink.h"

/* The byte every destination is filled with before dispatch, so an
 * absent field that was written to shows. */
#define CANARY 0xa5

static void check(bool ok, const char *method, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_dispatch: %s: %s\n", method, what);
		abort();
	}
}

static const vl_field *field_find(const vl_field *table, const char *name)
{
	for (const vl_field *f = table; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

static bool model_string_ok(json_object *v)
{
	return json_object_is_type(v, json_type_string) &&
	       memchr(json_object_get_string(v), 0, (size_t)json_object_get_string_len(v)) == NULL;
}

/* The rules of varlink.h, written again from its comments: whether a
 * non-null value fits field f. */
static bool model_value_ok(const vl_field *f, json_object *v)
{
	switch (f->type) {
	case VL_STRING:
		return model_string_ok(v);
	case VL_BOOL:
		return json_object_is_type(v, json_type_boolean);
	case VL_INT64: {
		int64_t x;

		if (!json_object_is_type(v, json_type_int))
			return false;
		x = json_object_get_int64(v);
		/* A value json-c clamped to INT64_MAX is out of range. */
		if (x == INT64_MAX && json_object_get_uint64(v) != (uint64_t)INT64_MAX)
			return false;
		return !(f->min || f->max) || (x >= f->min && x <= f->max);
	}
	case VL_UINT64:
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return false;
		return !f->umax || json_object_get_uint64(v) <= f->umax;
	case VL_STRV:
		if (!json_object_is_type(v, json_type_array))
			return false;
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!model_string_ok(json_object_array_get_idx(v, i)))
				return false;
		return true;
	case VL_OBJECT:
		return json_object_is_type(v, json_type_object);
	case VL_ARRAY:
		/* any array: its items are the handler's to check (Install's fds) */
		return json_object_is_type(v, json_type_array);
	}
	return false;
}

static bool model_accepts(json_object *params, const vl_field *table)
{
	if (params) {
		json_object_object_foreach(params, key, v) {
			const vl_field *f = field_find(table, key);

			if (!f)
				return false;
			if (v && !model_value_ok(f, v))
				return false;
		}
	}
	for (const vl_field *f = table; f->name; f++) {
		json_object *v = NULL;

		if ((f->flags & VL_MANDATORY) &&
		    (!params || !json_object_object_get_ex(params, f->name, &v) || !v))
			return false;
	}
	return true;
}

static bool bytes_are(const void *p, int c, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)c)
			return false;
	return true;
}

static size_t field_size(const vl_field *f)
{
	switch (f->type) {
	case VL_STRING:
	case VL_STRV:
	case VL_OBJECT:
		return sizeof(void *);
	case VL_BOOL:
		return sizeof(bool);
	case VL_INT64:
	case VL_UINT64:
		return sizeof(int64_t);
	}
	return 0;
}

/* Checks one filled field against the parameter it came from. */
static void field_check(const char *method, const vl_field *f, const uint8_t *p, json_object *v)
{
	switch (f->type) {
	case VL_STRING: {
		const char *s;

		memcpy(&s, p, sizeof(s));
		check(s == json_object_get_string(v), method, "string is not the parameter's own");
		check(strlen(s) == (size_t)json_object_get_string_len(v), method, "string has a NUL inside");
		break;
	}
	case VL_BOOL: {
		bool b;

		memcpy(&b, p, sizeof(b));
		check(b == json_object_get_boolean(v), method, "bool differs from the parameter");
		break;
	}
	case VL_INT64: {
		int64_t x;

		memcpy(&x, p, sizeof(x));
		check(x == json_object_get_int64(v), method, "int differs from the parameter");
		check(!(f->min || f->max) || (x >= f->min && x <= f->max), method, "int out of range");
		break;
	}
	case VL_UINT64: {
		uint64_t x;

		memcpy(&x, p, sizeof(x));
		check(x == json_object_get_uint64(v), method, "uint differs from the parameter");
		check(!f->umax || x <= f->umax, method, "uint out of range");
		break;
	}
	case VL_STRV: {
		const char **a;
		size_t n = json_object_array_length(v), i;

		memcpy(&a, p, sizeof(a));
		check(a != NULL, method, "strv not filled");
		for (i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(v, i);

			check(a[i] != NULL, method, "strv shorter than the array");
			check(a[i] == json_object_get_string(e), method, "strv element is not the array's");
			check(strlen(a[i]) == (size_t)json_object_get_string_len(e), method,
			      "strv element has a NUL inside");
		}
		check(a[n] == NULL, method, "strv not NULL-terminated");
		break;
	}
	case VL_OBJECT: {
		json_object *o;

		memcpy(&o, p, sizeof(o));
		check(o == v, method, "object is not the parameter");
		break;
	}
	}
}

/* Frees the STRV arrays of a filled destination, as the daemon does. */
static void params_free(const vl_field *table, union method_params *p)
{
	for (const vl_field *f = table; f->name; f++)
		if (f->type == VL_STRV) {
			void *v;

			memcpy(&v, (uint8_t *)p + f->offset, sizeof(v));
			/* Left as the canary when absent: nothing to free. */
			if (!bytes_are(&v, CANARY, sizeof(v)))
				free(v);
		}
}

static void dispatch_check(const char *method, const vl_field *table, json_object *params)
{
	union method_params p, before;
	const char *bad = NULL;
	bool want = model_accepts(params, table);
	int r;

	memset(&p, CANARY, sizeof(p));
	memcpy(&before, &p, sizeof(p));
	r = vl_dispatch(params, table, &p, &bad);
	if (r == -ENOMEM)
		return;
	if (r < 0) {
		check(r == -EINVAL, method, "refused with a code other than -EINVAL");
		check(!want, method, "refused parameters the rules accept");
		check(memcmp(&p, &before, sizeof(p)) == 0, method, "refusal touched the destination");
		check(bad != NULL, method, "refused without naming a field");
		check(field_find(table, bad) != NULL ||
		      (params && json_object_object_get_ex(params, bad, NULL)),
		      method, "bad field is neither the table's nor a parameter");
		return;
	}
	check(r == 0, method, "dispatch returned a positive value");
	check(want, method, "accepted parameters the rules refuse");
	for (const vl_field *f = table; f->name; f++) {
		const uint8_t *dst = (const uint8_t *)&p + f->offset;
		json_object *v = NULL;

		if (!params || !json_object_object_get_ex(params, f->name, &v) || !v) {
			check(!(f->flags & VL_MANDATORY), method, "mandatory field absent after dispatch");
			check(bytes_are(dst, CANARY, field_size(f)), method, "absent field was written to");
			continue;
		}
		field_check(method, f, dst, v);
	}
	params_free(table, &p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char head[] = "{\"method\":\"io.fatelf.Manager.Install\",\"parameters\":";
	static bool once;
	fatelf_diag d = { 0 };
	vl_call c;
	char *msg;
	size_t len;

	/* No parameters at all: accepted exactly where nothing is mandatory. */
	if (!once) {
		once = true;
		for (const params_method *m = params_methods; m->name; m++)
			dispatch_check(m->name, m->fields, NULL);
	}
	if (size > 1 << 20)
		return 0;
	len = sizeof(head) - 1 + size + 1;
	msg = malloc(len + 1);
	if (!msg)
		return 0;
	memcpy(msg, head, sizeof(head) - 1);
	memcpy(msg + sizeof(head) - 1, data, size);
	msg[len - 1] = '}';
	msg[len] = '\0';
	if (vl_call_parse(msg, len, &c, &d) == 0) {
		check(c.parameters != NULL && json_object_is_type(c.parameters, json_type_object),
		      "parse", "parameters is not an object");
		for (const params_method *m = params_methods; m->name; m++)
			dispatch_check(m->name, m->fields, c.parameters);
		vl_call_done(&c);
	}
	free(msg);
	return 0;
}
