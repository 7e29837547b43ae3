/*
 * Unit tests for the shapes of fatelfctl's arguments (client/values.c):
 * which install arguments name a package of the repositories, and the key
 * line that `repo add --key` takes from a minisign .pub file or as text;
 * and for what upgrade and info make of a Search reply: the packages it
 * names, once each, and the versions offered of one package; and the
 * "did you mean" of a mistyped verb or package name (client/suggest.c).
 */
#include <check.h>
#include <string.h>

#include <json-c/json.h>

#include "fatelfctl.h"
#include "testutil.h"

START_TEST(test_package_spec)
{
	static const char *const yes[] = {
		"hello", "hello=1.0", "hello=1:2.0-1~rc1", "libc6", "g++", "x.y-z+w", "42",
		"hello=2.0+dfsg-3", "hello.fatbundle",
	};
	static const char *const no[] = {
		"", "h", "Hello", "hello world", "./hello", "dir/hello", "/opt/hello", "-", "--force",
		"+hello", ".hello", "hello=", "=1.0", "hello=abc", "hello=1.0=2", "hello=1 0",
		"hello=1/0", "hello_x", "https://example.org/hello", "hello\n", "héllo",
	};
	char longname[300];

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(ctl_package_spec(yes[i]), "'%s' names a package", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(!ctl_package_spec(no[i]), "'%s' names no package", no[i]);

	/* The name rule's 255 characters, and a version's. */
	memset(longname, 'a', 255);
	longname[255] = '\0';
	ck_assert(ctl_package_spec(longname));
	longname[255] = 'a';
	longname[256] = '\0';
	ck_assert(!ctl_package_spec(longname));
	memcpy(longname, "ab=", 3);
	memset(longname + 3, '1', 255);
	longname[258] = '\0';
	ck_assert(ctl_package_spec(longname));
	longname[258] = '1';
	longname[259] = '\0';
	ck_assert(!ctl_package_spec(longname));
}
END_TEST

#define KEY "RWTUSUjf9sNE+58+m8ezyIHELTCHaNiUbZPMEQzaLY6pgjS9ZOIf0nrG"
/* The kind of text, and the key line it holds (or ""). */
static enum ctl_key_kind key_of(const char *text, char line[128])
{
	const char *l = NULL;
	size_t n = 0;
	enum ctl_key_kind k = ctl_key_line(text, strlen(text), &l, &n);

	line[0] = '\0';
	if (k == CTL_KEY_PUBLIC) {
		ck_assert_uint_lt(n, 128);
		memcpy(line, l, n);
		line[n] = '\0';
	}
	return k;
}

START_TEST(test_key_line)
{
	char line[128];

	/* minisign -G's .pub, its key line alone, with blanks and CRLF. */
	ck_assert_int_eq(key_of("untrusted comment: minisign public key FB44C3F6DF4849D4\n" KEY "\n", line),
			 CTL_KEY_PUBLIC);
	ck_assert_str_eq(line, KEY);
	ck_assert_int_eq(key_of(KEY, line), CTL_KEY_PUBLIC);
	ck_assert_str_eq(line, KEY);
	ck_assert_int_eq(key_of("untrusted comment: k\r\n  " KEY " \r\n\r\n\n", line), CTL_KEY_PUBLIC);
	ck_assert_str_eq(line, KEY);

	/* The secret key file is named as such: its line of 158 bytes
	 * ("Ed", the KDF and checksum names, ...; zeros will do here). */
	{
		static const char head[] = "untrusted comment: minisign encrypted secret key\nRWQAAEIy";
		char secret[sizeof(head) + 212];

		memcpy(secret, head, sizeof(head) - 1);
		memset(secret + sizeof(head) - 1, 'A', 203);
		memcpy(secret + sizeof(head) - 1 + 203, "=\n", 3);
		ck_assert_int_eq(key_of(secret, line), CTL_KEY_SECRET);
	}

	/* Anything else is no key. */
	ck_assert_int_eq(key_of("", line), CTL_KEY_INVALID);
	ck_assert_int_eq(key_of("untrusted comment: k\n", line), CTL_KEY_INVALID);
	ck_assert_int_eq(key_of("untrusted comment: k\n" KEY "\nmore\n", line), CTL_KEY_INVALID);
	ck_assert_int_eq(key_of("comment: k\n" KEY "\n", line), CTL_KEY_INVALID);
	ck_assert_int_eq(key_of(KEY "A", line), CTL_KEY_INVALID);                 /* too long */
	ck_assert_int_eq(key_of("RWTUSUjf9sNE+58+m8ezyIHELTCHaNiUbZPMEQzaLY6pgjS9ZOIf0nr", line),
			 CTL_KEY_INVALID);                                            /* too short */
	ck_assert_int_eq(key_of("RXTUSUjf9sNE+58+m8ezyIHELTCHaNiUbZPMEQzaLY6pgjS9ZOIf0nrG", line),
			 CTL_KEY_INVALID);                                            /* not "Ed" */
	ck_assert_int_eq(key_of("RWTUSUjf9sNE+58+m8ezyIHELTCHaNiUbZPMEQzaLY6pgjS9ZOIf0nr=", line),
			 CTL_KEY_INVALID);                                            /* padding */
	ck_assert_int_eq(key_of("RWTUSUjf9sNE+58+m8ezyIHELTCHaNiUbZPMEQ aLY6pgjS9ZOIf0nrG", line),
			 CTL_KEY_INVALID);
	ck_assert_int_eq(key_of("keys/vendor.pub", line), CTL_KEY_INVALID);
	/* A NUL inside the text is not base64 either. */
	{
		static const char nul[] = "RWTUSUjf9sNE+58+m8ezyIHELTCHaNiU\0ZPMEQzaLY6pgjS9ZOIf0nrG";
		const char *l;
		size_t n;

		ck_assert_int_eq(ctl_key_line(nul, sizeof(nul) - 1, &l, &n), CTL_KEY_INVALID);
	}
}
END_TEST

/* A Search reply's packages: hello in two repositories, newest first in
 * each, and hello-extra, which a pattern "hello" finds too. */
static json_object *search_reply(void)
{
	json_object *o = json_tokener_parse(
		"[{\"name\":\"hello\",\"version\":\"2.0\",\"repository\":\"main\",\"installed\":\"1.0\"},"
		" {\"name\":\"hello-extra\",\"version\":\"3\",\"repository\":\"main\"},"
		" {\"name\":\"hello\",\"version\":\"1.0\",\"repository\":\"main\",\"installed\":\"1.0\"},"
		" {\"name\":\"hello\",\"version\":\"1.5\",\"repository\":\"backports\"},"
		" {\"version\":\"9\"}, 42, {\"name\":7}]");

	ck_assert_ptr_nonnull(o);
	return o;
}

START_TEST(test_distinct)
{
	json_object *reply = search_reply(), *names = NULL;

	ck_assert_int_eq(ctl_json_distinct(reply, "name", &names), 0);
	/* In the order they first come; no name, or not a string: skipped. */
	ck_assert_str_eq(json_object_to_json_string_ext(names, JSON_C_TO_STRING_PLAIN),
			 "[\"hello\",\"hello-extra\"]");
	json_object_put(names);
	ck_assert_int_eq(ctl_json_distinct(reply, "repository", &names), 0);
	ck_assert_str_eq(json_object_to_json_string_ext(names, JSON_C_TO_STRING_PLAIN),
			 "[\"main\",\"backports\"]");
	json_object_put(names);
	/* No reply at all (a daemon that sent no array): none. */
	ck_assert_int_eq(ctl_json_distinct(NULL, "name", &names), 0);
	ck_assert_uint_eq(json_object_array_length(names), 0);
	json_object_put(names);
	json_object_put(reply);
}
END_TEST

START_TEST(test_available)
{
	json_object *reply = search_reply(), *hello = NULL, *none = NULL;
	char buf[256], small[12];

	ck_assert_int_eq(ctl_available_of(reply, "hello", &hello), 0);
	ck_assert_uint_eq(json_object_array_length(hello), 3);
	/* The objects are the reply's own, whole. */
	ck_assert_ptr_eq(json_object_array_get_idx(hello, 0), json_object_array_get_idx(reply, 0));
	ck_assert_str_eq(ctl_available_join(hello, buf, sizeof(buf)), "2.0 (main), 1.0 (main), 1.5 (backports)");
	/* A part of a name is no match, in either direction. */
	ck_assert_int_eq(ctl_available_of(reply, "hell", &none), 0);
	ck_assert_uint_eq(json_object_array_length(none), 0);
	ck_assert_str_eq(ctl_available_join(none, buf, sizeof(buf)), "-");
	json_object_put(none);
	ck_assert_int_eq(ctl_available_of(reply, "hello-extra", &none), 0);
	ck_assert_str_eq(ctl_available_join(none, buf, sizeof(buf)), "3 (main)");
	json_object_put(none);
	ck_assert_str_eq(ctl_available_join(NULL, buf, sizeof(buf)), "-");
	/* A short buffer is cut, never overrun. */
	ck_assert_str_eq(ctl_available_join(hello, small, sizeof(small)), "2.0 (main),");
	json_object_put(hello);
	/* The objects outlive the reply in the array that shares them. */
	ck_assert_int_eq(ctl_available_of(reply, "hello-extra", &none), 0);
	json_object_put(reply);
	ck_assert_str_eq(ctl_json_str(json_object_array_get_idx(none, 0), "version", "?"), "3");
	json_object_put(none);
}
END_TEST

START_TEST(test_suggest)
{
	static const char *const verbs[] = {
		"install", "upgrade", "remove", "autoremove", "list", "info", "repo", "update", "search",
		"hold", "unhold", "show", "purge",
	};
	static const char *const pkgs[] = { "greeter", "hello", "hello-doc", "webtool" };
	const size_t nv = sizeof(verbs) / sizeof(verbs[0]), np = sizeof(pkgs) / sizeof(pkgs[0]);

	/* A swap, a letter missing, one too many, one wrong: one edit each. */
	ck_assert_str_eq(ctl_suggest("isntall", verbs, nv), "install");
	ck_assert_str_eq(ctl_suggest("instal", verbs, nv), "install");
	ck_assert_str_eq(ctl_suggest("removee", verbs, nv), "remove");
	ck_assert_str_eq(ctl_suggest("lisr", verbs, nv), "list");
	ck_assert_str_eq(ctl_suggest("shwo", verbs, nv), "show");
	/* Two edits from five letters on; one below. */
	ck_assert_str_eq(ctl_suggest("upgarad", verbs, nv), "upgrade");
	ck_assert_ptr_null(ctl_suggest("lsr", verbs, nv));
	/* The only verb a word begins. */
	ck_assert_str_eq(ctl_suggest("autorem", verbs, nv), "autoremove");
	ck_assert_str_eq(ctl_suggest("sea", verbs, nv), "search");
	/* Two verbs begin "up" and none is near: no guess. */
	ck_assert_ptr_null(ctl_suggest("up", verbs, nv));
	ck_assert_ptr_null(ctl_suggest("frobnicate", verbs, nv));
	ck_assert_ptr_null(ctl_suggest("", verbs, nv));
	ck_assert_ptr_null(ctl_suggest("install", NULL, 0));
	/* Case is a typo too; the nearest wins. */
	ck_assert_str_eq(ctl_suggest("Greeter", pkgs, np), "greeter");
	ck_assert_str_eq(ctl_suggest("helo", pkgs, np), "hello");
	ck_assert_str_eq(ctl_suggest("hello-dc", pkgs, np), "hello-doc");
	ck_assert_ptr_null(ctl_suggest("zzzzzzzz", pkgs, np));
}
END_TEST

static Suite *ctlargs_suite(void)
{
	Suite *s = suite_create("ctlargs");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_package_spec);
	tcase_add_test(tc, test_key_line);
	tcase_add_test(tc, test_distinct);
	tcase_add_test(tc, test_available);
	tcase_add_test(tc, test_suggest);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(ctlargs_suite());
}
