/*
 * The INI reader (lib/basic/ini.c), through a table of every type: the
 * line each refusal names (blank and comment lines counted), trimming,
 * the boolean spellings, unknown and duplicate keys, sections, required
 * keys, numbers and sizes, overlong lines, NUL bytes and lines without
 * '='.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"
#include "macro.h"
#include "testutil.h"

struct settings {
	bool flag;
	char *path;
	unsigned count;
	size_t entries;
	uint64_t size;
	char list[256];         /* the Item= values, joined by '|' */
	int items;
	char name[64];
};

/* Item= adds to a list; "fail" is refused with a code of its own. */
static int parse_item(ini_file *f, const ini_key *k, const char *value, void *field)
{
	struct settings *s = field;
	size_t n = strlen(s->list);

	if (strcmp(value, "fail") == 0)
		return ini_error(f, -EPERM, k->name, "'%s' is refused", value);
	snprintf(s->list + n, sizeof(s->list) - n, "%s%s", n ? "|" : "", value);
	s->items++;
	return 0;
}

static int parse_name(ini_file *f, const ini_key *k, const char *value, void *field)
{
	snprintf(field, 64, "%s", value);
	return 0;
}

static const ini_key keys[] = {
	{ .section = "Main", .name = "Flag", .type = INI_BOOL, .offset = offsetof(struct settings, flag) },
	{ .section = "Main", .name = "Path", .type = INI_PATH, .offset = offsetof(struct settings, path) },
	{ .section = "Main", .name = "Count", .type = INI_UNSIGNED, .offset = offsetof(struct settings, count),
	  .min = 1, .max = 100 },
	{ .section = "Main", .name = "Entries", .type = INI_SIZE, .offset = offsetof(struct settings, entries),
	  .min = 0, .max = SIZE_MAX },
	{ .section = "Main", .name = "Size", .type = INI_BYTES, .offset = offsetof(struct settings, size),
	  .min = 1, .max = UINT64_MAX },
	{ .section = "Main", .name = "Item", .type = INI_CUSTOM, .offset = 0, .parse = parse_item },
	{ .section = "Other", .name = "Name", .type = INI_CUSTOM, .offset = offsetof(struct settings, name),
	  .flags = INI_REQUIRED, .parse = parse_name },
};

static int parse_n(const char *text, size_t len, struct settings *s, fatelf_diag *d)
{
	const ini_table t = { .keys = keys, .nkeys = ARRAY_SIZE(keys), .base = s };

	memset(s, 0, sizeof(*s));
	fatelf_diag_clear(d);
	return ini_parse(&t, "t.conf", text, len, d);
}

static int parse(const char *text, struct settings *s, fatelf_diag *d)
{
	return parse_n(text, strlen(text), s, d);
}

/* text parses; the settings are in *s (its path freed by the caller). */
static void parses(const char *text, struct settings *s)
{
	fatelf_diag d;

	ck_assert_msg(parse(text, s, &d) == 0, "%s: %s", text, d.msg);
}

/* text is refused with code and exactly msg, naming t.conf. */
static void refused_n(const char *text, size_t len, int code, const char *msg)
{
	struct settings s;
	fatelf_diag d;

	ck_assert_int_eq(parse_n(text, len, &s, &d), code);
	ck_assert_int_eq(d.code, code);
	ck_assert_str_eq(d.msg, msg);
	ck_assert_str_eq(d.subject, "t.conf");
	free(s.path);
}

static void refused(const char *text, const char *msg)
{
	refused_n(text, strlen(text), -EINVAL, msg);
}

START_TEST(test_values)
{
	struct settings s;

	parses("[Main]\nFlag=yes\nPath=/a/b\nCount=7\nEntries=123456\nSize=3M\nItem=x\n[Other]\nName=n\n", &s);
	ck_assert(s.flag);
	ck_assert_str_eq(s.path, "/a/b");
	ck_assert_uint_eq(s.count, 7);
	ck_assert_uint_eq(s.entries, 123456);
	ck_assert_uint_eq(s.size, 3u << 20);
	ck_assert_str_eq(s.list, "x");
	ck_assert_str_eq(s.name, "n");
	free(s.path);

	/* the last line needs no "\n"; CRLF ends are fine */
	parses("[Other]\r\nName=last\r\n[Main]\r\nCount=1", &s);
	ck_assert_str_eq(s.name, "last");
	ck_assert_uint_eq(s.count, 1);
}
END_TEST

START_TEST(test_line_numbers)
{
	/* blank lines, blank-looking lines and comments count */
	refused("\n\n[Main]\n\n# a comment\n; another\n   \t\nBogus=1\n",
		"t.conf:8: Bogus: unknown key in [Main]");
	refused("# one\n\n\n\n[Main]\r\n\r\nFlag=maybe\r\n",
		"t.conf:7: Flag: 'maybe' is not a boolean (yes, no, true, false, on, off, 1 or 0)");
	/* the last line, without its "\n" */
	refused("[Main]\n\n\nCount=0", "t.conf:4: Count: 0 is out of range (1 to 100)");
	/* a custom parser's refusal, with its own code */
	refused_n("[Main]\n\nItem=a\n\nItem=fail\n", 26, -EPERM, "t.conf:5: Item: 'fail' is refused");
}
END_TEST

START_TEST(test_trimming)
{
	struct settings s;

	parses("  [Other]  \n \t Name \t = \t two words \t \r\n[Main]\nPath =/p \nCount= 5\nItem  =  =x= \n", &s);
	ck_assert_str_eq(s.name, "two words");
	ck_assert_str_eq(s.path, "/p");
	ck_assert_uint_eq(s.count, 5);
	/* the value is everything after the first '=' */
	ck_assert_str_eq(s.list, "=x=");
	free(s.path);

	/* an empty value is the empty string */
	parses("[Other]\nName=x\nName=\n", &s);
	ck_assert_str_eq(s.name, "");
	/* a '#' after a value is part of it */
	parses("[Other]\nName=a # b\n", &s);
	ck_assert_str_eq(s.name, "a # b");
}
END_TEST

START_TEST(test_booleans)
{
	static const struct { const char *text; bool want; } good[] = {
		{ "yes", true }, { "true", true }, { "on", true }, { "1", true },
		{ "no", false }, { "false", false }, { "off", false }, { "0", false },
		{ "YES", true }, { "True", true }, { "oN", true }, { "No", false }, { "FALSE", false },
		{ "OFF", false },
	};
	static const char *const bad[] = { "maybe", "y", "n", "2", "01", "yes please", "enabled", "" };
	struct settings s;
	char text[128], msg[256];

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		/* start from the other value, so that each spelling has to set it */
		snprintf(text, sizeof(text), "[Other]\nName=x\n[Main]\nFlag=%s\nFlag = %s\n", good[i].want ? "no" : "yes",
			 good[i].text);
		parses(text, &s);
		ck_assert_msg(s.flag == good[i].want, "Flag=%s", good[i].text);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "[Main]\nFlag=%s\n", bad[i]);
		snprintf(msg, sizeof(msg),
			 "t.conf:2: Flag: '%s' is not a boolean (yes, no, true, false, on, off, 1 or 0)", bad[i]);
		refused(text, msg);
	}
}
END_TEST

START_TEST(test_keys_and_sections)
{
	refused("[Main]\nflag=yes\n", "t.conf:2: flag: unknown key in [Main]");
	refused("[Main]\nName=x\n", "t.conf:2: Name: unknown key in [Main] (it belongs in [Other])");
	refused("\nFlag=yes\n", "t.conf:2: Flag: key outside a section (put it under [Main] or [Other])");
	refused("[Main]\n[Nope]\n", "t.conf:2: [Nope]: unknown section (only [Main] and [Other])");
	refused("[main]\n", "t.conf:1: [main]: unknown section (only [Main] and [Other])");
	refused("[ Main ]\n", "t.conf:1: [ Main ]: unknown section (only [Main] and [Other])");
	refused("[Main] ; x\n", "t.conf:1: [Main] ; x: a section header is '[Name]' alone on its line");
	refused("[Main\n", "t.conf:1: [Main: a section header is '[Name]' alone on its line");
	refused("[Other]\nName=x\n[Main]\nFlag\n",
		"t.conf:4: syntax: 'Flag' is not a [Section] header, a Key=Value line or a comment");
	refused("[Main]\n  = yes\n", "t.conf:2: syntax: '=yes' has no key");
	/* hostile bytes in a message are escaped */
	refused("[Main]\nBo\033gus=1\n", "t.conf:2: Bo\\x1bgus: unknown key in [Main]");
	refused("[Main]\nFlag=\xff\n",
		"t.conf:2: Flag: '\\xff' is not a boolean (yes, no, true, false, on, off, 1 or 0)");
}
END_TEST

/* A key given again: the later value wins; a list adds each line; a
 * section may be opened again. */
START_TEST(test_duplicates)
{
	struct settings s;

	parses("[Main]\nCount=3\nPath=/a\nItem=a\n[Other]\nName=1\n[Main]\nCount=4\nPath=/b\nItem=b\n"
	       "[Other]\nName=2\n", &s);
	ck_assert_uint_eq(s.count, 4);
	ck_assert_str_eq(s.path, "/b");
	ck_assert_str_eq(s.list, "a|b");
	ck_assert_int_eq(s.items, 2);
	ck_assert_str_eq(s.name, "2");
	free(s.path);
}
END_TEST

START_TEST(test_required)
{
	/* at the line of the section's last header */
	refused("[Other]\n\n[Main]\nFlag=1\n[Other]\n\n", "t.conf:5: Name: missing: [Other] needs a Name= line");
	/* no such section: the last line */
	refused("[Main]\n\n# end\n", "t.conf:3: Name: missing: [Other] needs a Name= line");
	refused("", "t.conf:1: Name: missing: [Other] needs a Name= line");
}
END_TEST

START_TEST(test_numbers)
{
	static const struct { const char *text; uint64_t want; } sizes[] = {
		{ "1", 1 }, { "4096B", 4096 }, { "512K", 512u << 10 }, { "2 MiB", 2u << 20 }, { "7G", 7ull << 30 },
		{ "3TiB", 3ull << 40 }, { "18446744073709551615", UINT64_MAX }, { "16777215T", 16777215ull << 40 },
	};
	struct settings s;
	char text[128];

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		snprintf(text, sizeof(text), "[Other]\nName=x\n[Main]\nSize=%s\n", sizes[i].text);
		parses(text, &s);
		ck_assert_msg(s.size == sizes[i].want, "Size=%s", sizes[i].text);
	}
	parses("[Other]\nName=x\n[Main]\nEntries=0\nCount=100\n", &s);
	ck_assert_uint_eq(s.entries, 0);
	ck_assert_uint_eq(s.count, 100);

	refused("[Main]\nCount=101\n", "t.conf:2: Count: 101 is out of range (1 to 100)");
	refused("[Main]\nCount=-1\n", "t.conf:2: Count: '-1' is not a whole number");
	refused("[Main]\nCount=+1\n", "t.conf:2: Count: '+1' is not a whole number");
	refused("[Main]\nCount=0x10\n", "t.conf:2: Count: '0x10' is not a whole number");
	refused("[Main]\nCount=1 2\n", "t.conf:2: Count: '1 2' is not a whole number");
	refused("[Main]\nCount=\n", "t.conf:2: Count: '' is not a whole number");
	refused("[Main]\nEntries=18446744073709551616\n",
		"t.conf:2: Entries: 18446744073709551616 is out of range (0 to 18446744073709551615)");
	refused("[Main]\nSize=0\n", "t.conf:2: Size: 0 is out of range (1 to 18446744073709551615)");
	refused("[Main]\nSize=16777216T\n", "t.conf:2: Size: 16777216T is out of range");
	refused("[Main]\nSize=1Q\n", "t.conf:2: Size: '1Q' is not a size (bytes, or a number with K, M, G or T)");
	refused("[Main]\nSize=1k\n", "t.conf:2: Size: '1k' is not a size (bytes, or a number with K, M, G or T)");
	refused("[Main]\nPath=rel/p\n", "t.conf:2: Path: 'rel/p' is not an absolute path");
	refused("[Main]\nPath=\n", "t.conf:2: Path: '' is not an absolute path");
}
END_TEST

START_TEST(test_long_lines)
{
	size_t n = INI_LINE_MAX, size = n + 64;
	char *fill = malloc(n + 1), *text = malloc(size);
	struct settings s;
	fatelf_diag d;

	ck_assert_ptr_nonnull(fill);
	ck_assert_ptr_nonnull(text);
	memset(fill, '#', n);
	fill[n] = '\0';
	/* INI_LINE_MAX bytes: fine, a comment or a value */
	snprintf(text, size, "[Other]\nName=x\n\n%s\n[Main]\nItem=%.*s\n", fill, (int)(n - 5), fill);
	ck_assert_msg(parse(text, &s, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(s.items, 1);
	/* one more: refused, comment or not, at its line */
	snprintf(text, size, "[Other]\nName=x\n\n%s#\n[Main]\n", fill);
	refused(text, "t.conf:4: syntax: line is longer than 4096 bytes");
	snprintf(text, size, "[Main]\nItem=%.*s\n", (int)(n - 4), fill);
	refused(text, "t.conf:2: syntax: line is longer than 4096 bytes");
	free(fill);
	free(text);
}
END_TEST

START_TEST(test_nul)
{
	static const char t1[] = "[Main]\n\nFlag=yes\0\n";
	static const char t2[] = "[Main]\n#\0 in a comment\n";
	static const char t3[] = "[Other]\nName=x\n\0";

	refused_n(t1, sizeof(t1) - 1, -EINVAL, "t.conf:3: syntax: line holds a NUL byte");
	refused_n(t2, sizeof(t2) - 1, -EINVAL, "t.conf:2: syntax: line holds a NUL byte");
	refused_n(t3, sizeof(t3) - 1, -EINVAL, "t.conf:3: syntax: line holds a NUL byte");
}
END_TEST

/* A refusal leaves what came before it set (callers parse into a copy);
 * a table too large for the reader is refused whole. */
START_TEST(test_partial_and_table)
{
	ini_key many[INI_KEYS_MAX + 1];
	struct settings s;
	fatelf_diag d;

	ck_assert_int_eq(parse("[Main]\nCount=9\nPath=/x\nBogus=1\nCount=10\n", &s, &d), -EINVAL);
	ck_assert_uint_eq(s.count, 9);
	ck_assert_str_eq(s.path, "/x");
	free(s.path);

	for (size_t i = 0; i < ARRAY_SIZE(many); i++)
		many[i] = keys[0];
	fatelf_diag_clear(&d);
	ck_assert_int_eq(ini_parse(&(const ini_table){ .keys = many, .nkeys = ARRAY_SIZE(many), .base = &s },
				   "t.conf", "", 0, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "t.conf: more than 64 keys in the reader's table");
}
END_TEST

static Suite *ini_suite(void)
{
	Suite *s = suite_create("ini");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_line_numbers);
	tcase_add_test(tc, test_trimming);
	tcase_add_test(tc, test_booleans);
	tcase_add_test(tc, test_keys_and_sections);
	tcase_add_test(tc, test_duplicates);
	tcase_add_test(tc, test_required);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_long_lines);
	tcase_add_test(tc, test_nul);
	tcase_add_test(tc, test_partial_and_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(ini_suite());
}
