/*
 * Unit tests for lib/varlink/varlink.c: framing across split reads and several
 * messages per read, the size limit, the strict call parser's refusals,
 * dispatch tables (mandatory, unknown, wrong type, ranges, string arrays,
 * dest untouched on error), and the exact bytes of replies and calls with
 * their round trips through the parsers.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"
#include "testutil.h"

/* ------------------------------------------------------------ framer */

START_TEST(test_framer_split_and_batched)
{
	static const char input[] = "{\"method\":\"a.b.C\"}\0{\"x\":1}\0{}\0";
	vl_buffer b;
	const char *msg;
	size_t len;

	/* Byte at a time: a message appears only once its NUL has arrived. */
	vl_buffer_init(&b, 0);
	for (size_t i = 0; i < 18; i++) {
		ck_assert_int_eq(vl_buffer_append(&b, input + i, 1), 0);
		ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 0);
	}
	ck_assert_uint_eq(vl_buffer_pending(&b), 18);
	ck_assert_int_eq(vl_buffer_append(&b, input + 18, 1), 0);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
	ck_assert_uint_eq(len, 18);
	ck_assert_str_eq(msg, "{\"method\":\"a.b.C\"}");
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 0);
	ck_assert_uint_eq(vl_buffer_pending(&b), 0);
	vl_buffer_done(&b);

	/* Everything in one read, then a split in the middle of a message. */
	vl_buffer_init(&b, 0);
	ck_assert_int_eq(vl_buffer_append(&b, input, sizeof(input) - 1), 0);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
	ck_assert_str_eq(msg, "{\"method\":\"a.b.C\"}");
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
	ck_assert_str_eq(msg, "{\"x\":1}");
	ck_assert_uint_eq(len, 7);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
	ck_assert_str_eq(msg, "{}");
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 0);

	ck_assert_int_eq(vl_buffer_append(&b, "{\"ab", 4), 0);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 0);
	ck_assert_uint_eq(vl_buffer_pending(&b), 4);
	ck_assert_int_eq(vl_buffer_append(&b, "c\":2}\0{\"d", 9), 0);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
	ck_assert_str_eq(msg, "{\"abc\":2}");
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 0);
	ck_assert_uint_eq(vl_buffer_pending(&b), 3);
	vl_buffer_done(&b);
}
END_TEST

START_TEST(test_framer_oversize)
{
	char big[100];
	vl_buffer b;
	const char *msg;
	size_t len;

	memset(big, 'x', sizeof(big));
	/* Exactly max bytes plus the NUL is fine. */
	vl_buffer_init(&b, 16);
	ck_assert_int_eq(vl_buffer_append(&b, big, 16), 0);
	ck_assert_int_eq(vl_buffer_append(&b, "", 1), 0);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
	ck_assert_uint_eq(len, 16);

	/* One byte more without a NUL is refused, and stays refused. */
	ck_assert_int_eq(vl_buffer_append(&b, big, 16), 0);
	ck_assert_int_eq(vl_buffer_append(&b, big, 1), -EMSGSIZE);
	ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), -EMSGSIZE);
	ck_assert_int_eq(vl_buffer_append(&b, "", 1), -EMSGSIZE);
	vl_buffer_done(&b);

	/* An oversized message that is complete in one read is refused too,
	 * even when a small one precedes it. */
	vl_buffer_init(&b, 16);
	ck_assert_int_eq(vl_buffer_append(&b, "{}\0xxxxxxxxxxxxxxxxxxxxxxxx\0", 28), -EMSGSIZE);
	vl_buffer_done(&b);

	/* A peer that never sends a NUL: memory stays bounded by the limit. */
	vl_buffer_init(&b, 1000);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(vl_buffer_append(&b, big, sizeof(big)), 0);
	ck_assert_int_eq(vl_buffer_append(&b, big, 1), -EMSGSIZE);
	ck_assert_uint_le(b.cap, 4096);
	vl_buffer_done(&b);

	/* The default limit is 1 MiB. */
	vl_buffer_init(&b, 0);
	ck_assert_uint_eq(b.max, 1u << 20);
	vl_buffer_done(&b);
}
END_TEST

/* ------------------------------------------------------------ calls */

static int parse(const char *s, vl_call *c, fatelf_diag *d)
{
	fatelf_diag_clear(d);
	return vl_call_parse(s, strlen(s), c, d);
}

START_TEST(test_call_valid)
{
	vl_call c;
	fatelf_diag d;

	ck_assert_int_eq(parse("{\"method\":\"io.fatelf.Manager.List\"}", &c, &d), 0);
	ck_assert_str_eq(c.method, "io.fatelf.Manager.List");
	ck_assert_uint_eq(c.flags, 0);
	ck_assert(json_object_is_type(c.parameters, json_type_object));
	ck_assert_int_eq(json_object_object_length(c.parameters), 0);
	vl_call_done(&c);

	ck_assert_int_eq(parse(" {\"parameters\":{\"name\":\"hello\"},\"more\":true,"
			       "\"method\":\"io.fatelf.Manager.Install\",\"upgrade\":false} \n",
			       &c, &d), 0);
	ck_assert_str_eq(c.method, "io.fatelf.Manager.Install");
	ck_assert_uint_eq(c.flags, VL_CALL_MORE);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c.parameters, "name")), "hello");
	vl_call_done(&c);

	ck_assert_int_eq(parse("{\"method\":\"org.varlink.service.GetInfo\",\"oneway\":true,"
			       "\"upgrade\":true,\"parameters\":null}", &c, &d), 0);
	ck_assert_uint_eq(c.flags, VL_CALL_ONEWAY | VL_CALL_UPGRADE);
	vl_call_done(&c);
}
END_TEST

START_TEST(test_call_refused)
{
	static const char *const bad[] = {
		"",                                                     /* empty */
		"{\"method\":\"a.b.C\"",                                /* cut */
		"{\"method\":\"a.b.C\",}",                              /* trailing comma */
		"{'method':'a.b.C'}",                                   /* not JSON */
		"{\"method\":\"a.b.C\"} x",                             /* trailing garbage */
		"{\"method\":\"a.b.C\"}{}",                             /* two objects */
		"[\"a.b.C\"]",                                          /* not an object */
		"\"a.b.C\"",
		"42",
		"{}",                                                   /* no method */
		"{\"parameters\":{}}",
		"{\"method\":1}",                                       /* wrong types */
		"{\"method\":null}",
		"{\"method\":\"a.b.C\",\"parameters\":[]}",
		"{\"method\":\"a.b.C\",\"parameters\":\"x\"}",
		"{\"method\":\"a.b.C\",\"more\":1}",
		"{\"method\":\"a.b.C\",\"oneway\":\"true\"}",
		"{\"method\":\"a.b.C\",\"upgrade\":{}}",
		"{\"method\":\"a.b.C\",\"id\":1}",                      /* unknown key */
		"{\"method\":\"a.b.C\",\"Method\":\"a.b.C\"}",
		"{\"method\":\"a.b.C\",\"oneway\":true,\"more\":true}", /* contradiction */
		"{\"method\":\"List\"}",                                /* bad names */
		"{\"method\":\"fatelf.List\"}",
		"{\"method\":\"io.fatelf.Manager.list\"}",
		"{\"method\":\"io.fatelf.Manager.\"}",
		"{\"method\":\"1o.fatelf.Manager.List\"}",
		"{\"method\":\"io..fatelf.List\"}",
		"{\"method\":\"io.fatelf-.List\"}",
		"{\"method\":\"1o.fatelf.List\"}",
		"{\"method\":\"io.fatelf.Li_st\"}",
		"{\"method\":\"io.fatelf.List \"}",
		"{\"method\":\"a.b.C\\u0000x\"}",                       /* NUL escaped */
		"{\"method\":\"a.b.\xff\"}",                            /* invalid UTF-8 */
		/* integers json-c would silently saturate */
		"{\"method\":\"a.b.C\",\"parameters\":{\"i\":100000000000000000000}}",
		"{\"method\":\"a.b.C\",\"parameters\":{\"i\":18446744073709551616}}",
		"{\"method\":\"a.b.C\",\"parameters\":{\"i\":[-9223372036854775809]}}",
	};
	vl_call c = { .method = (char *)"untouched" };
	fatelf_diag d;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i], &c, &d);

		ck_assert_msg(r == -EBADMSG, "message %zu (%s): %d", i, bad[i], r);
		ck_assert_int_ne(d.msg[0], 0);
		ck_assert_str_eq(c.method, "untouched");
	}

	/* A raw NUL inside the given length. */
	ck_assert_int_eq(vl_call_parse("{\"method\":\"a.b.C\"}\0{}", 21, &c, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "NUL"));

	/* Nesting: 32 levels in all (the call, its parameters and 30 more)
	 * pass, 33 do not. */
	for (int depth = 30; depth <= 31; depth++) {
		char msg[256];
		int n = snprintf(msg, sizeof(msg), "{\"method\":\"a.b.C\",\"parameters\":");

		for (int i = 0; i < depth; i++)
			n += snprintf(msg + n, sizeof(msg) - n, "{\"a\":");
		n += snprintf(msg + n, sizeof(msg) - n, "1");
		for (int i = 0; i < depth + 1; i++)
			n += snprintf(msg + n, sizeof(msg) - n, "}");
		if (depth == 30) {
			ck_assert_int_eq(parse(msg, &c, &d), 0);
			vl_call_done(&c);
			c.method = (char *)"untouched";
		} else {
			ck_assert_int_eq(parse(msg, &c, &d), -EBADMSG);
		}
	}
}
END_TEST

START_TEST(test_names)
{
	ck_assert(vl_name_is_valid("io.fatelf.Manager.List"));
	ck_assert(vl_name_is_valid("org.varlink.service.InvalidParameter"));
	ck_assert(vl_name_is_valid("a.b.C"));
	ck_assert(vl_name_is_valid("a-1.b2.C3d"));
	ck_assert(!vl_name_is_valid("InvalidParameter"));
	ck_assert(!vl_name_is_valid("service.InvalidParameter"));
	ck_assert(vl_name_is_valid("io.systemd.UserDatabase.GetUserRecord"));
	ck_assert(!vl_name_is_valid("a.-b.C"));
	ck_assert(!vl_name_is_valid("a.b-.C"));
	ck_assert(!vl_name_is_valid("a.b.c"));
	ck_assert(!vl_name_is_valid("a.b.C-d"));
	ck_assert(!vl_name_is_valid("9a.b.C"));
	ck_assert(!vl_name_is_valid(""));
	ck_assert(!vl_name_is_valid(NULL));
	ck_assert_uint_eq(vl_name_interface_len("io.fatelf.Manager.List"), strlen("io.fatelf.Manager"));
}
END_TEST

/* ------------------------------------------------------------ dispatch */

struct install_args {
	const char *url;
	bool force;
	int64_t priority;
	uint64_t limit;
	const char **targets;
	json_object *extra;
};

static const vl_field install_table[] = {
	{ .name = "url", .type = VL_STRING, .offset = offsetof(struct install_args, url), .flags = VL_MANDATORY },
	{ .name = "force", .type = VL_BOOL, .offset = offsetof(struct install_args, force) },
	{ .name = "priority", .type = VL_INT64, .offset = offsetof(struct install_args, priority),
	  .min = -10, .max = 10 },
	{ .name = "limit", .type = VL_UINT64, .offset = offsetof(struct install_args, limit),
	  .umax = 1000 },
	{ .name = "targets", .type = VL_STRV, .offset = offsetof(struct install_args, targets) },
	{ .name = "extra", .type = VL_OBJECT, .offset = offsetof(struct install_args, extra) },
	{}
};

START_TEST(test_dispatch_good)
{
	json_object *o = json_tokener_parse(
		"{\"url\":\"file:///x\",\"force\":true,\"priority\":-10,\"limit\":1000,"
		"\"targets\":[\"x86_64\",\"aarch64\"],\"extra\":{\"k\":1}}");
	struct install_args a = { .priority = 5 };
	const char *bad = "unset";

	ck_assert_int_eq(vl_dispatch(o, install_table, &a, &bad), 0);
	ck_assert_str_eq(bad, "unset");
	ck_assert_str_eq(a.url, "file:///x");
	ck_assert(a.force);
	ck_assert_int_eq(a.priority, -10);
	ck_assert_uint_eq(a.limit, 1000);
	ck_assert_ptr_nonnull(a.targets);
	ck_assert_str_eq(a.targets[0], "x86_64");
	ck_assert_str_eq(a.targets[1], "aarch64");
	ck_assert_ptr_null(a.targets[2]);
	ck_assert_int_eq(json_object_get_int(json_object_object_get(a.extra, "k")), 1);
	free(a.targets);
	json_object_put(o);

	/* Optional fields absent or null keep the caller's defaults. */
	o = json_tokener_parse("{\"url\":\"u\",\"force\":null}");
	a = (struct install_args){ .priority = 5, .force = true };
	ck_assert_int_eq(vl_dispatch(o, install_table, &a, &bad), 0);
	ck_assert_int_eq(a.priority, 5);
	ck_assert(a.force);
	ck_assert_ptr_null(a.targets);
	json_object_put(o);

	/* An empty string array is an array with just its NULL. */
	o = json_tokener_parse("{\"url\":\"u\",\"targets\":[]}");
	a = (struct install_args){ 0 };
	ck_assert_int_eq(vl_dispatch(o, install_table, &a, &bad), 0);
	ck_assert_ptr_nonnull(a.targets);
	ck_assert_ptr_null(a.targets[0]);
	free(a.targets);
	json_object_put(o);
}
END_TEST

START_TEST(test_dispatch_refused)
{
	static const struct {
		const char *json;
		const char *field;
	} bad[] = {
		{ "{}", "url" },                                        /* mandatory missing */
		{ "{\"url\":null}", "url" },
		{ "{\"force\":true}", "url" },
		{ "{\"url\":\"u\",\"colour\":1}", "colour" },           /* unknown */
		{ "{\"url\":\"u\",\"URL\":\"u\"}", "URL" },
		{ "{\"url\":1}", "url" },                               /* wrong type */
		{ "{\"url\":\"u\",\"force\":\"yes\"}", "force" },
		{ "{\"url\":\"u\",\"force\":1}", "force" },
		{ "{\"url\":\"u\",\"priority\":\"1\"}", "priority" },
		{ "{\"url\":\"u\",\"priority\":1.5}", "priority" },
		{ "{\"url\":\"u\",\"priority\":11}", "priority" },      /* range */
		{ "{\"url\":\"u\",\"priority\":-11}", "priority" },
		{ "{\"url\":\"u\",\"limit\":1001}", "limit" },
		{ "{\"url\":\"u\",\"limit\":-1}", "limit" },
		{ "{\"url\":\"u\",\"limit\":true}", "limit" },
		{ "{\"url\":\"u\",\"targets\":\"x86_64\"}", "targets" },
		{ "{\"url\":\"u\",\"targets\":[\"a\",1]}", "targets" },
		{ "{\"url\":\"u\",\"targets\":[null]}", "targets" },
		{ "{\"url\":\"u\",\"extra\":[]}", "extra" },
		{ "{\"url\":\"a\\u0000b\"}", "url" },                   /* NUL inside */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct install_args a = { .url = "untouched", .priority = 7 }, before = a;
		const char *field;
		int r;

		/* An unknown field's name points into o: compared before the put. */
		json_object *o = json_tokener_parse(bad[i].json);

		ck_assert_ptr_nonnull(o);
		r = vl_dispatch(o, install_table, &a, &field);
		ck_assert_msg(r == -EINVAL, "%s: %d", bad[i].json, r);
		ck_assert_ptr_nonnull(field);
		ck_assert_str_eq(field, bad[i].field);
		ck_assert(memcmp(&a, &before, sizeof(a)) == 0);
		json_object_put(o);
	}
}
END_TEST

START_TEST(test_dispatch_int_limits)
{
	struct ints { int64_t i; uint64_t u; } v = { 0 };
	static const vl_field table[] = {
		{ .name = "i", .type = VL_INT64, .offset = offsetof(struct ints, i) },
		{ .name = "u", .type = VL_UINT64, .offset = offsetof(struct ints, u) },
		{}
	};
	const char *bad = NULL;
	json_object *o;

	o = json_tokener_parse("{\"i\":-9223372036854775808,\"u\":18446744073709551615}");
	ck_assert_int_eq(vl_dispatch(o, table, &v, &bad), 0);
	ck_assert_int_eq(v.i, INT64_MIN);
	ck_assert_uint_eq(v.u, UINT64_MAX);
	json_object_put(o);

	o = json_tokener_parse("{\"i\":9223372036854775807}");
	ck_assert_int_eq(vl_dispatch(o, table, &v, &bad), 0);
	ck_assert_int_eq(v.i, INT64_MAX);
	json_object_put(o);

	/* Above INT64_MAX for a signed field: refused, not clamped. */
	o = json_tokener_parse("{\"i\":9223372036854775808}");
	ck_assert_int_eq(vl_dispatch(o, table, &v, &bad), -EINVAL);
	ck_assert_str_eq(bad, "i");
	json_object_put(o);

	/* The largest literals pass the call parser; doubles of any size and
	 * digits inside strings are not integers. */
	{
		static const char ok[] = "{\"method\":\"a.b.C\",\"parameters\":{\"u\":18446744073709551615,"
					 "\"i\":-9223372036854775808,\"d\":1e400,\"s\":\"99999999999999999999999\\\"1\"}}";
		vl_call c;
		fatelf_diag d;

		ck_assert_int_eq(vl_call_parse(ok, strlen(ok), &c, &d), 0);
		vl_call_done(&c);
	}

	/* No params at all is an empty object. */
	ck_assert_int_eq(vl_dispatch(NULL, table, &v, &bad), 0);
	ck_assert_int_eq(vl_dispatch(NULL, install_table, &v, &bad), -EINVAL);
	ck_assert_str_eq(bad, "url");
}
END_TEST

/* ------------------------------------------------------------ replies */

/* Asserts buf/len is exactly want plus its NUL. */
static void assert_bytes(char *buf, size_t len, const char *want)
{
	ck_assert_uint_eq(len, strlen(want) + 1);
	ck_assert_int_eq(buf[len - 1], 0);
	ck_assert_str_eq(buf, want);
}

START_TEST(test_reply_bytes_and_round_trip)
{
	json_object *p = json_object_new_object();
	vl_response resp;
	fatelf_diag d;
	char *buf;
	size_t len;

	json_object_object_add(p, "path", json_object_new_string("/opt/x/bin"));
	json_object_object_add(p, "n", json_object_new_int(3));

	ck_assert_int_eq(vl_reply(p, false, &buf, &len), 0);
	assert_bytes(buf, len, "{\"parameters\":{\"path\":\"/opt/x/bin\",\"n\":3}}");
	ck_assert_int_eq(vl_reply_parse(buf, len - 1, &resp, &d), 0);
	ck_assert_ptr_null(resp.error);
	ck_assert(!resp.continues);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(resp.parameters, "path")),
			 "/opt/x/bin");
	vl_response_done(&resp);
	free(buf);

	ck_assert_int_eq(vl_reply(NULL, true, &buf, &len), 0);
	assert_bytes(buf, len, "{\"parameters\":{},\"continues\":true}");
	ck_assert_int_eq(vl_reply_parse(buf, len - 1, &resp, &d), 0);
	ck_assert(resp.continues);
	vl_response_done(&resp);
	free(buf);

	/* p is borrowed, not consumed. */
	ck_assert_int_eq(json_object_put(p), 1);
}
END_TEST

START_TEST(test_reply_errors)
{
	vl_response resp;
	fatelf_diag d;
	char *buf = NULL;
	size_t len;

	ck_assert_int_eq(vl_reply_error_str(VL_ERROR_INVALID_PARAMETER, "parameter", "colour", &buf, &len), 0);
	assert_bytes(buf, len, "{\"error\":\"org.varlink.service.InvalidParameter\","
			       "\"parameters\":{\"parameter\":\"colour\"}}");
	ck_assert_int_eq(vl_reply_parse(buf, len - 1, &resp, &d), 0);
	ck_assert_str_eq(resp.error, "org.varlink.service.InvalidParameter");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(resp.parameters, "parameter")),
			 "colour");
	vl_response_done(&resp);
	free(buf);

	ck_assert_int_eq(vl_reply_error(VL_ERROR_PERMISSION_DENIED, NULL, &buf, &len), 0);
	assert_bytes(buf, len, "{\"error\":\"org.varlink.service.PermissionDenied\",\"parameters\":{}}");
	free(buf);

	/* Error names must be fully qualified. */
	buf = NULL;
	ck_assert_int_eq(vl_reply_error("PermissionDenied", NULL, &buf, &len), -EINVAL);
	ck_assert_int_eq(vl_reply_error("service.PermissionDenied", NULL, &buf, &len), -EINVAL);
	ck_assert_ptr_null(buf);

	/* The client refuses malformed replies. */
	static const char *const bad[] = {
		"{\"error\":\"PermissionDenied\"}",
		"{\"error\":1}",
		"{\"error\":\"a.b.C\",\"continues\":true}",
		"{\"continues\":\"yes\"}",
		"{\"parameters\":[]}",
		"{\"parameters\":{},\"method\":\"a.b.C\"}",
		"[]",
		"{\"parameters\":{}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(vl_reply_parse(bad[i], strlen(bad[i]), &resp, &d) == -EBADMSG, "%s", bad[i]);
}
END_TEST

START_TEST(test_call_format_round_trip)
{
	json_object *p = json_object_new_object();
	vl_call c;
	fatelf_diag d;
	char *buf = NULL;
	size_t len;

	json_object_object_add(p, "url", json_object_new_string("http://h/a/b"));
	ck_assert_int_eq(vl_call_format("io.fatelf.Manager.Install", p, VL_CALL_MORE, &buf, &len), 0);
	/* No escaped slashes: NOSLASHESCAPE. */
	assert_bytes(buf, len, "{\"method\":\"io.fatelf.Manager.Install\","
			       "\"parameters\":{\"url\":\"http://h/a/b\"},\"more\":true}");
	ck_assert_int_eq(vl_call_parse(buf, len - 1, &c, &d), 0);
	ck_assert_str_eq(c.method, "io.fatelf.Manager.Install");
	ck_assert_uint_eq(c.flags, VL_CALL_MORE);
	vl_call_done(&c);
	free(buf);
	json_object_put(p);

	buf = NULL;
	ck_assert_int_eq(vl_call_format("List", NULL, 0, &buf, &len), -EINVAL);
	ck_assert_int_eq(vl_call_format("a.b.C", NULL, VL_CALL_ONEWAY | VL_CALL_MORE, &buf, &len), -EINVAL);
	ck_assert_ptr_null(buf);

	/* Through the framer, as bytes would arrive on a socket. */
	{
		vl_buffer b;
		const char *msg;
		char *b1, *b2;
		size_t l1, l2;

		ck_assert_int_eq(vl_call_format("a.b.C", NULL, 0, &b1, &l1), 0);
		ck_assert_int_eq(vl_call_format("a.b.D", NULL, VL_CALL_ONEWAY, &b2, &l2), 0);
		vl_buffer_init(&b, 0);
		ck_assert_int_eq(vl_buffer_append(&b, b1, l1), 0);
		ck_assert_int_eq(vl_buffer_append(&b, b2, l2), 0);
		ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
		ck_assert_int_eq(vl_call_parse(msg, len, &c, &d), 0);
		ck_assert_str_eq(c.method, "a.b.C");
		vl_call_done(&c);
		ck_assert_int_eq(vl_buffer_next(&b, &msg, &len), 1);
		ck_assert_int_eq(vl_call_parse(msg, len, &c, &d), 0);
		ck_assert_str_eq(c.method, "a.b.D");
		ck_assert_uint_eq(c.flags, VL_CALL_ONEWAY);
		vl_call_done(&c);
		vl_buffer_done(&b);
		free(b1);
		free(b2);
	}
}
END_TEST

static Suite *varlink_suite(void)
{
	Suite *s = suite_create("varlink");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_framer_split_and_batched);
	tcase_add_test(tc, test_framer_oversize);
	tcase_add_test(tc, test_call_valid);
	tcase_add_test(tc, test_call_refused);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_dispatch_good);
	tcase_add_test(tc, test_dispatch_refused);
	tcase_add_test(tc, test_dispatch_int_limits);
	tcase_add_test(tc, test_reply_bytes_and_round_trip);
	tcase_add_test(tc, test_reply_errors);
	tcase_add_test(tc, test_call_format_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(varlink_suite());
}
