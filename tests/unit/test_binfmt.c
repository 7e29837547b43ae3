/*
 * Unit tests for binfmt_misc entries (lib/run/binfmt.c): the text the kernel
 * prints for an entry, parsed field by field (qemu-user's aarch64 entry
 * with a mask, entries without one, extension entries, disabled ones),
 * malformed texts refused with a message naming the line, matching under
 * a mask as the kernel matches, telling FatELF's own handler apart, the
 * choice of handler for a record, and listing a (fake) binfmt_misc
 * directory.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fatelf.h"
#include "run.h"
#include "testutil.h"

/* What Linux prints for qemu-user-static's aarch64 registration. */
static const char qemu_aarch64[] =
	"enabled\n"
	"interpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\n"
	"flags: POF\n"
	"offset 0\n"
	"magic 7f454c460201010000000000000000000200b700\n"
	"mask ffffffffffffff00fffffffffffffffffeffffff\n";

static const char qemu_riscv64[] =
	"enabled\n"
	"interpreter /usr/libexec/qemu-binfmt/riscv64-binfmt-P\n"
	"flags: POF\n"
	"offset 0\n"
	"magic 7f454c460201010000000000000000000200f300\n"
	"mask ffffffffffffff00fffffffffffffffffeffffff\n";

/* data/binfmt.d/fatelf.conf, as the kernel prints it */
static const char fatelf_entry[] =
	"enabled\n"
	"interpreter /usr/bin/fatelf-run\n"
	"flags: PO\n"
	"offset 0\n"
	"magic fa700e1f0100\n";

static const char jar_entry[] =
	"enabled\n"
	"interpreter /usr/bin/jexec\n"
	"flags: \n"
	"extension .jar\n";

/* A minimal ELF header: e_ident, e_type, e_machine (little endian). */
static void elf_header(uint8_t buf[64], uint8_t cls, uint8_t type, uint16_t machine, uint8_t osabi)
{
	memset(buf, 0, 64);
	memcpy(buf, "\x7f" "ELF", 4);
	buf[4] = cls;
	buf[5] = 1;
	buf[6] = 1;
	buf[7] = osabi;
	buf[16] = type;
	buf[18] = (uint8_t)machine;
	buf[19] = (uint8_t)(machine >> 8);
	buf[20] = 1;
}

static fatelf_binfmt_entry *parse_ok(const char *name, const char *text)
{
	static fatelf_binfmt_entry e[4];
	static unsigned next;
	fatelf_binfmt_entry *ret = &e[next++ % 4];
	fatelf_diag d;
	int r;

	fatelf_diag_clear(&d);
	r = fatelf_binfmt_parse(name, text, strlen(text), ret, &d);
	ck_assert_msg(r == 0, "parsing %s failed: %s (%s)", name, fatelf_error_name(r), d.msg);
	return ret;
}

/* The text is refused with -EINVAL, a message naming `want` (the line and
 * rule), and the output left as it was. */
static void parse_fails_len(const char *text, size_t len, const char *want)
{
	fatelf_binfmt_entry e, before;
	fatelf_diag d;
	int r;

	memset(&e, 0x5a, sizeof(e));
	memcpy(&before, &e, sizeof(e));
	fatelf_diag_clear(&d);
	r = fatelf_binfmt_parse("bad", text, len, &e, &d);
	ck_assert_msg(r == -EINVAL, "text \"%.60s\" gave %s, want EINVAL", text, fatelf_error_name(r));
	ck_assert_int_eq(d.code, -EINVAL);
	ck_assert_msg(strstr(d.msg, want) != NULL, "message lacks \"%s\": %s", want, d.msg);
	ck_assert_msg(memcmp(&e, &before, sizeof(e)) == 0, "a failed parse changed its output");
}

static void parse_fails(const char *text, const char *want)
{
	parse_fails_len(text, strlen(text), want);
}

#define HEAD "enabled\ninterpreter /bin/true\nflags: \n"

/* ---------------------------------------------------------------- parse */

START_TEST(test_parse_qemu_aarch64)
{
	static const uint8_t magic[20] = {
		0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0xb7, 0,
	};
	static const uint8_t mask[20] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff,
	};
	fatelf_binfmt_entry *e = parse_ok("qemu-aarch64", qemu_aarch64);

	ck_assert_str_eq(e->name, "qemu-aarch64");
	ck_assert(e->enabled);
	ck_assert(e->magic_type);
	ck_assert_str_eq(e->interpreter, "/usr/libexec/qemu-binfmt/aarch64-binfmt-P");
	ck_assert_str_eq(e->flags, "POF");
	ck_assert_uint_eq(e->offset, 0);
	ck_assert_uint_eq(e->magic_len, 20);
	ck_assert_mem_eq(e->magic, magic, 20);
	ck_assert_mem_eq(e->mask, mask, 20);
	ck_assert_str_eq(e->extension, "");
}
END_TEST

START_TEST(test_parse_no_mask)
{
	fatelf_binfmt_entry *e = parse_ok("fatelf", fatelf_entry);
	uint8_t ones[FATELF_BINFMT_BUF];

	ck_assert(e->enabled);
	ck_assert(e->magic_type);
	ck_assert_str_eq(e->interpreter, "/usr/bin/fatelf-run");
	ck_assert_str_eq(e->flags, "PO");
	ck_assert_uint_eq(e->magic_len, 6);
	ck_assert_mem_eq(e->magic, "\xfa\x70\x0e\x1f\x01\x00", 6);
	/* no mask line: every bit counts */
	memset(ones, 0xff, sizeof(ones));
	ck_assert_mem_eq(e->mask, ones, sizeof(ones));

	e = parse_ok("offs", "disabled\ninterpreter /x y/z\nflags: C\noffset 249\nmagic 0102030405AbcD\n");
	ck_assert(!e->enabled);
	ck_assert_str_eq(e->interpreter, "/x y/z");
	ck_assert_str_eq(e->flags, "C");
	ck_assert_uint_eq(e->offset, 249);
	ck_assert_uint_eq(e->magic_len, 7);
	ck_assert_mem_eq(e->magic, "\x01\x02\x03\x04\x05\xab\xcd", 7);
}
END_TEST

START_TEST(test_parse_extension)
{
	fatelf_binfmt_entry *e = parse_ok("jar", jar_entry);

	ck_assert(e->enabled);
	ck_assert(!e->magic_type);
	ck_assert_str_eq(e->interpreter, "/usr/bin/jexec");
	ck_assert_str_eq(e->flags, "");
	ck_assert_str_eq(e->extension, "jar");
	ck_assert_uint_eq(e->magic_len, 0);
}
END_TEST

START_TEST(test_parse_disabled)
{
	char text[sizeof(qemu_aarch64) + 8];
	fatelf_binfmt_entry *e;

	snprintf(text, sizeof(text), "disabled%s", qemu_aarch64 + strlen("enabled"));
	e = parse_ok("qemu-aarch64", text);
	ck_assert(!e->enabled);
	ck_assert(e->magic_type);
	ck_assert_uint_eq(e->magic_len, 20);
}
END_TEST

START_TEST(test_parse_last_newline_optional)
{
	fatelf_binfmt_entry *e;

	e = parse_ok("x", "enabled\ninterpreter /bin/true\nflags: F\noffset 2\nmagic abcd");
	ck_assert_uint_eq(e->offset, 2);
	ck_assert_uint_eq(e->magic_len, 2);
	ck_assert_mem_eq(e->magic, "\xab\xcd", 2);
	e = parse_ok("x", "enabled\ninterpreter /bin/true\nflags: \nextension .py");
	ck_assert_str_eq(e->extension, "py");
}
END_TEST

START_TEST(test_parse_masks_the_magic)
{
	/* the kernel stores magic & mask; a hand-written entry is normalized */
	fatelf_binfmt_entry *e = parse_ok("x", HEAD "offset 0\nmagic ffff\nmask f00f\n");

	ck_assert_mem_eq(e->magic, "\xf0\x0f", 2);
}
END_TEST

START_TEST(test_parse_malformed)
{
	char big[2 * 257 + 64];
	char magic256[2 * 256 + 1];

	parse_fails("", "line 1: expected \"enabled\" or \"disabled\", found the end");
	parse_fails("enable\n", "line 1: expected \"enabled\" or \"disabled\"");
	parse_fails("enabled \n", "line 1: expected \"enabled\"");
	parse_fails("enabled\n", "line 2: expected \"interpreter PATH\", found the end");
	parse_fails("enabled\ninterp /bin/true\n", "line 2: expected \"interpreter PATH\"");
	parse_fails("enabled\ninterpreter \n", "line 2 (interpreter): empty path");
	parse_fails("enabled\ninterpreter /bin/true\n", "line 3: expected \"flags: LETTERS\", found the end");
	parse_fails("enabled\ninterpreter /bin/true\nflags:\n", "line 3: expected \"flags: LETTERS\"");
	parse_fails("enabled\ninterpreter /bin/true\nflags: PX\n", "line 3 (flags): byte 1 is not one of");
	parse_fails("enabled\ninterpreter /bin/true\nflags: POP\n", "line 3 (flags): flag P twice");
	parse_fails(HEAD, "line 4: expected \"offset N\" or \"extension .EXT\", found the end");
	parse_fails(HEAD "frobnicate 1\n", "line 4: expected \"offset N\" or \"extension .EXT\"");
	parse_fails(HEAD "offset -1\nmagic 00\n", "line 4 (offset): not a decimal number");
	parse_fails(HEAD "offset 0x10\nmagic 00\n", "line 4 (offset): not a decimal number");
	parse_fails(HEAD "offset \nmagic 00\n", "line 4 (offset): no number");
	parse_fails(HEAD "offset 257\nmagic 00\n", "line 4 (offset): beyond the kernel's 256-byte buffer");
	parse_fails(HEAD "offset 99999999999999999999\nmagic 00\n", "line 4 (offset): beyond");
	parse_fails(HEAD "offset 0\n", "line 5: expected \"magic HEX\", found the end");
	parse_fails(HEAD "offset 0\nmask ff\n", "line 5: expected \"magic HEX\"");
	parse_fails(HEAD "offset 0\nmagic 7f45zz\n", "line 5 (magic): byte 2 is not two hex digits");
	parse_fails(HEAD "offset 0\nmagic 7f 45\n", "line 5 (magic): odd number of hex digits");
	parse_fails(HEAD "offset 0\nmagic 7f4\n", "line 5 (magic): odd number of hex digits (3)");
	parse_fails(HEAD "offset 0\nmagic \n", "line 5 (magic): no bytes");
	parse_fails(HEAD "offset 0\nmagic 7f45\nmask ff\n", "line 6 (mask): 1 bytes, the magic has 2");
	parse_fails(HEAD "offset 0\nmagic 7f45\nmask ffgf\n", "line 6 (mask): byte 1 is not two hex");
	parse_fails(HEAD "offset 0\nmagic 7f45\nmask\n", "line 6: expected \"mask HEX\" or the end");
	parse_fails(HEAD "offset 0\nmagic 7f45\nmask ffff\n\n", "line 7: unexpected line");
	parse_fails(HEAD "offset 0\nmagic 7f45\nmask ffff\nenabled\n", "line 7: unexpected line \"enabled\"");
	parse_fails(HEAD "offset 0\nmagic 7f45\nextension .x\n", "line 6: expected \"mask HEX\"");
	parse_fails(HEAD "extension .\n", "line 4 (extension): empty");
	parse_fails(HEAD "extension .a/b\n", "line 4 (extension): empty or holds a '/'");
	parse_fails(HEAD "extension .jar\noffset 0\n", "line 5: unexpected line");
	parse_fails(HEAD "extension jar\n", "line 4: expected \"offset N\" or \"extension .EXT\"");
	parse_fails_len("enabled\0\ninterpreter /bin/true\n", 30, "a NUL byte");

	/* 257 bytes do not fit the kernel's buffer; 256 at offset 0 do, at 1 not */
	memset(magic256, 'a', 2 * 256);
	magic256[2 * 256] = '\0';
	snprintf(big, sizeof(big), HEAD "offset 0\nmagic %saa\n", magic256);
	parse_fails(big, "line 5 (magic): 257 bytes, more than the kernel's 256-byte buffer");
	snprintf(big, sizeof(big), HEAD "offset 1\nmagic %s\n", magic256);
	parse_fails(big, "line 5 (magic): offset 1 + 256 bytes reach past the kernel's 256-byte buffer");
	snprintf(big, sizeof(big), HEAD "offset 250\nmagic 00112233445566\n");
	parse_fails(big, "line 5 (magic): offset 250 + 7 bytes reach past");
	snprintf(big, sizeof(big), HEAD "offset 0\nmagic %s\n", magic256);
	ck_assert_uint_eq(parse_ok("x", big)->magic_len, 256);
	snprintf(big, sizeof(big), HEAD "offset 255\nmagic 01\n");
	ck_assert_uint_eq(parse_ok("x", big)->offset, 255);
}
END_TEST

START_TEST(test_parse_limits)
{
	char name[FATELF_BINFMT_NAME_MAX + 1];
	char *text;
	size_t n = FATELF_BINFMT_INTERP_MAX + 64;
	fatelf_binfmt_entry e;
	fatelf_diag d;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_binfmt_parse(name, fatelf_entry, strlen(fatelf_entry), &e, &d), -EINVAL);
	ck_assert_ptr_nonnull(strstr(d.msg, "entry name longer than 255 bytes"));

	/* an interpreter of 4095 bytes fits, 4096 does not */
	text = malloc(n);
	ck_assert_ptr_nonnull(text);
	snprintf(text, n, "enabled\ninterpreter /%0*d\nflags: \nextension .x\n",
		 FATELF_BINFMT_INTERP_MAX - 2, 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_binfmt_parse("x", text, strlen(text), &e, &d), 0);
	ck_assert_uint_eq(strlen(e.interpreter), FATELF_BINFMT_INTERP_MAX - 1);
	snprintf(text, n, "enabled\ninterpreter /%0*d\nflags: \nextension .x\n",
		 FATELF_BINFMT_INTERP_MAX - 1, 0);
	parse_fails(text, "line 2 (interpreter): longer than 4095 bytes");
	free(text);

	/* a parse reads only len bytes, not up to a NUL */
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_binfmt_parse("x", qemu_aarch64, strlen(qemu_aarch64) - 2, &e, &d), -EINVAL);
	ck_assert_ptr_nonnull(strstr(d.msg, "line 6 (mask): odd number"));
	ck_assert_int_eq(fatelf_binfmt_parse("x", NULL, 0, &e, NULL), -EINVAL);
}
END_TEST

/* ---------------------------------------------------------------- match */

START_TEST(test_matches_under_mask)
{
	const fatelf_binfmt_entry *e = parse_ok("qemu-aarch64", qemu_aarch64);
	uint8_t buf[64];

	elf_header(buf, 2, 2, 183, 0);
	ck_assert(fatelf_binfmt_matches(e, buf, sizeof(buf)));
	/* ET_DYN: e_type's low bit is outside the mask */
	elf_header(buf, 2, 3, 183, 0);
	ck_assert(fatelf_binfmt_matches(e, buf, sizeof(buf)));
	/* EI_OSABI is masked out entirely */
	elf_header(buf, 2, 2, 183, 3);
	ck_assert(fatelf_binfmt_matches(e, buf, sizeof(buf)));
	/* ...but ET_REL, ET_CORE, another machine, class or byte order are not */
	elf_header(buf, 2, 1, 183, 0);
	ck_assert(!fatelf_binfmt_matches(e, buf, sizeof(buf)));
	elf_header(buf, 2, 4, 183, 0);
	ck_assert(!fatelf_binfmt_matches(e, buf, sizeof(buf)));
	elf_header(buf, 2, 2, 62, 0);
	ck_assert(!fatelf_binfmt_matches(e, buf, sizeof(buf)));
	elf_header(buf, 1, 2, 183, 0);
	ck_assert(!fatelf_binfmt_matches(e, buf, sizeof(buf)));
	elf_header(buf, 2, 2, 183, 0);
	buf[5] = 2;
	ck_assert(!fatelf_binfmt_matches(e, buf, sizeof(buf)));
	/* the bytes past the magic do not matter */
	elf_header(buf, 2, 2, 183, 0);
	memset(buf + 20, 0xee, sizeof(buf) - 20);
	ck_assert(fatelf_binfmt_matches(e, buf, sizeof(buf)));
	/* the buffer must hold offset + magic_len bytes */
	ck_assert(fatelf_binfmt_matches(e, buf, 20));
	ck_assert(!fatelf_binfmt_matches(e, buf, 19));
	ck_assert(!fatelf_binfmt_matches(e, buf, 0));
}
END_TEST

START_TEST(test_matches_offset_and_state)
{
	fatelf_binfmt_entry *e = parse_ok("o", HEAD "offset 4\nmagic abcd\nmask f0ff\n");
	fatelf_binfmt_entry off;
	uint8_t buf[8] = { 0xab, 0xcd, 0, 0, 0xa7, 0xcd, 0, 0 };

	ck_assert(fatelf_binfmt_matches(e, buf, sizeof(buf)));
	ck_assert(fatelf_binfmt_matches(e, buf, 6));
	ck_assert(!fatelf_binfmt_matches(e, buf, 5));
	buf[5] = 0xcc;
	ck_assert(!fatelf_binfmt_matches(e, buf, sizeof(buf)));
	buf[5] = 0xcd;
	/* a disabled entry matches nothing */
	memcpy(&off, e, sizeof(off));
	off.enabled = false;
	ck_assert(!fatelf_binfmt_matches(&off, buf, sizeof(buf)));
	/* neither does an extension entry */
	ck_assert(!fatelf_binfmt_matches(parse_ok("jar", jar_entry), buf, sizeof(buf)));
	/* a magic at the very end of the kernel's buffer */
	{
		uint8_t page[FATELF_BINFMT_BUF] = { 0 };

		e = parse_ok("end", HEAD "offset 255\nmagic 42\n");
		page[255] = 0x42;
		ck_assert(fatelf_binfmt_matches(e, page, sizeof(page)));
		ck_assert(!fatelf_binfmt_matches(e, page, sizeof(page) - 1));
	}
}
END_TEST

START_TEST(test_is_fatelf)
{
	ck_assert(fatelf_binfmt_is_fatelf(parse_ok("fatelf", fatelf_entry)));
	ck_assert(fatelf_binfmt_is_fatelf(parse_ok("f4", HEAD "offset 0\nmagic fa700e1f\n")));
	ck_assert(fatelf_binfmt_is_fatelf(parse_ok("fm", HEAD "offset 0\nmagic fa700e1f01\nmask ffffffff00\n")));
	/* a disabled FatELF handler is still FatELF's */
	ck_assert(fatelf_binfmt_is_fatelf(parse_ok("fd", "disabled\ninterpreter /x\nflags: PO\noffset 0\nmagic fa700e1f0100\n")));

	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("qemu", qemu_aarch64)));
	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("jar", jar_entry)));
	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("short", HEAD "offset 0\nmagic fa700e\n")));
	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("at1", HEAD "offset 1\nmagic fa700e1f\n")));
	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("other", HEAD "offset 0\nmagic fa700e1e\n")));
	/* a mask that leaves a magic bit open belongs to a broader handler */
	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("loose", HEAD "offset 0\nmagic fa700e1f\nmask ffffff1f\n")));
	ck_assert(!fatelf_binfmt_is_fatelf(parse_ok("loose0", HEAD "offset 0\nmagic fa700e1f\nmask 7fffffff\n")));
}
END_TEST

START_TEST(test_find_handler)
{
	fatelf_binfmt_entry list[4];
	uint8_t a64[64], rv[64], x64[64];
	uint8_t fat[16] = { 0xfa, 0x70, 0x0e, 0x1f, 1, 0, 2, 0 };

	elf_header(a64, 2, 3, 183, 0);
	elf_header(rv, 2, 2, 243, 0);
	elf_header(x64, 2, 2, 62, 0);

	/* a disabled entry is skipped for a later enabled one */
	memcpy(&list[0], parse_ok("qemu-aarch64", qemu_aarch64), sizeof(list[0]));
	list[0].enabled = false;
	memcpy(&list[1], parse_ok("qemu-riscv64", qemu_riscv64), sizeof(list[1]));
	memcpy(&list[2], parse_ok("qemu-aarch64-2", qemu_aarch64), sizeof(list[2]));
	memcpy(&list[3], parse_ok("fatelf", fatelf_entry), sizeof(list[3]));
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 4, a64, sizeof(a64)), 2);
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 4, rv, sizeof(rv)), 1);
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 4, x64, sizeof(x64)), -1);
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 2, a64, sizeof(a64)), -1);
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 0, a64, sizeof(a64)), -1);
	/* the first enabled match wins */
	list[0].enabled = true;
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 4, a64, sizeof(a64)), 0);
	/* FatELF's own handler matches a fat file but is never chosen, while
	 * a broader entry that also matches it is */
	ck_assert(fatelf_binfmt_matches(&list[3], fat, sizeof(fat)));
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 4, fat, sizeof(fat)), -1);
	memcpy(&list[0], parse_ok("any-fa", HEAD "offset 0\nmagic fa\n"), sizeof(list[0]));
	ck_assert_int_eq(fatelf_binfmt_find_handler(&list[3], 1, fat, sizeof(fat)), -1);
	memcpy(&list[1], &list[3], sizeof(list[1]));
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 2, fat, sizeof(fat)), 0);
	list[0].enabled = false;
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, 2, fat, sizeof(fat)), -1);
}
END_TEST

/* ---------------------------------------------------------------- list */

static void write_text(const char *path, const char *text)
{
	tu_write_file(path, text, strlen(text));
}

static void fake_binfmt_dir(const char *dir, const char *status)
{
	char p[4096];

	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/register", dir);
	write_text(p, "");
	snprintf(p, sizeof(p), "%s/status", dir);
	write_text(p, status);
	snprintf(p, sizeof(p), "%s/qemu-riscv64", dir);
	write_text(p, qemu_riscv64);
	snprintf(p, sizeof(p), "%s/qemu-aarch64", dir);
	write_text(p, qemu_aarch64);
	snprintf(p, sizeof(p), "%s/fatelf", dir);
	write_text(p, fatelf_entry);
	snprintf(p, sizeof(p), "%s/jar", dir);
	write_text(p, jar_entry);
	snprintf(p, sizeof(p), "%s/broken", dir);
	write_text(p, "enabled\ninterpreter /bin/true\nflags: \noffset 0\nmagic zz\n");
	snprintf(p, sizeof(p), "%s/subdir", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

START_TEST(test_list_fake_dir)
{
	fatelf_binfmt_entry *list = NULL;
	uint8_t a64[64];
	int n;

	tu_tmpdir();
	fake_binfmt_dir("bm", "enabled\n");
	n = fatelf_binfmt_list("bm", &list);
	/* register, status, the broken entry and the directory are skipped;
	 * the rest come in name order */
	ck_assert_int_eq(n, 4);
	ck_assert_ptr_nonnull(list);
	ck_assert_str_eq(list[0].name, "fatelf");
	ck_assert_str_eq(list[1].name, "jar");
	ck_assert_str_eq(list[2].name, "qemu-aarch64");
	ck_assert_str_eq(list[3].name, "qemu-riscv64");
	ck_assert(fatelf_binfmt_is_fatelf(&list[0]));
	ck_assert(!list[1].magic_type);
	ck_assert_str_eq(list[2].interpreter, "/usr/libexec/qemu-binfmt/aarch64-binfmt-P");
	ck_assert(list[2].enabled);
	elf_header(a64, 2, 2, 183, 0);
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, (size_t)n, a64, sizeof(a64)), 2);
	free(list);
}
END_TEST

START_TEST(test_list_status_disabled)
{
	fatelf_binfmt_entry *list = NULL;
	uint8_t a64[64];
	int n;

	tu_tmpdir();
	/* "echo 0 > status": the kernel runs no entry at all */
	fake_binfmt_dir("bm", "disabled\n");
	n = fatelf_binfmt_list("bm", &list);
	ck_assert_int_eq(n, 4);
	for (int i = 0; i < n; i++)
		ck_assert_msg(!list[i].enabled, "%s is enabled", list[i].name);
	elf_header(a64, 2, 2, 183, 0);
	ck_assert_int_eq(fatelf_binfmt_find_handler(list, (size_t)n, a64, sizeof(a64)), -1);
	free(list);
}
END_TEST

START_TEST(test_list_not_mounted)
{
	static fatelf_binfmt_entry dummy;
	fatelf_binfmt_entry *sentinel = &dummy, *list = sentinel;
	char p[64];

	tu_tmpdir();
	/* an entry but no "register": binfmt_misc is not mounted there */
	ck_assert_int_eq(mkdir("empty", 0755), 0);
	write_text("empty/qemu-aarch64", qemu_aarch64);
	ck_assert_int_eq(fatelf_binfmt_list("empty", &list), -ENOENT);
	ck_assert_ptr_eq(list, sentinel);
	ck_assert_int_eq(fatelf_binfmt_list("no-such-dir", &list), -ENOENT);
	write_text("plainfile", "x");
	ck_assert_int_eq(fatelf_binfmt_list("plainfile", &list), -ENOENT);
	ck_assert_ptr_eq(list, sentinel);

	/* mounted with no entries: 0 and no array */
	ck_assert_int_eq(mkdir("bare", 0755), 0);
	write_text("bare/register", "");
	ck_assert_int_eq(fatelf_binfmt_list("bare", &list), 0);
	ck_assert_ptr_null(list);
	snprintf(p, sizeof(p), "bare/jar");
	write_text(p, jar_entry);
	ck_assert_int_eq(fatelf_binfmt_list("bare", &list), 1);
	ck_assert_str_eq(list[0].name, "jar");
	free(list);
}
END_TEST

START_TEST(test_list_env)
{
	fatelf_binfmt_entry *list = NULL;
	const char *old = getenv("FATELF_BINFMT_MISC_DIR");
	char dir[4096];
	int n;

	snprintf(dir, sizeof(dir), "%s/bm", tu_tmpdir());
	fake_binfmt_dir("bm", "enabled\n");
	ck_assert_int_eq(setenv("FATELF_BINFMT_MISC_DIR", dir, 1), 0);
	n = fatelf_binfmt_list(NULL, &list);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(list[3].name, "qemu-riscv64");
	free(list);
	/* an explicit directory wins over the variable */
	ck_assert_int_eq(setenv("FATELF_BINFMT_MISC_DIR", "/nonexistent-binfmt", 1), 0);
	ck_assert_int_eq(fatelf_binfmt_list(NULL, &list), -ENOENT);
	ck_assert_int_eq(fatelf_binfmt_list(dir, &list), 4);
	free(list);
	if (old)
		setenv("FATELF_BINFMT_MISC_DIR", old, 1);
	else
		unsetenv("FATELF_BINFMT_MISC_DIR");
}
END_TEST

static Suite *binfmt_suite(void)
{
	Suite *s = suite_create("binfmt");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_parse_qemu_aarch64);
	tcase_add_test(tc, test_parse_no_mask);
	tcase_add_test(tc, test_parse_extension);
	tcase_add_test(tc, test_parse_disabled);
	tcase_add_test(tc, test_parse_last_newline_optional);
	tcase_add_test(tc, test_parse_masks_the_magic);
	tcase_add_test(tc, test_parse_malformed);
	tcase_add_test(tc, test_parse_limits);
	tcase_add_test(tc, test_matches_under_mask);
	tcase_add_test(tc, test_matches_offset_and_state);
	tcase_add_test(tc, test_is_fatelf);
	tcase_add_test(tc, test_find_handler);
	tcase_add_test(tc, test_list_fake_dir);
	tcase_add_test(tc, test_list_status_disabled);
	tcase_add_test(tc, test_list_not_mounted);
	tcase_add_test(tc, test_list_env);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(binfmt_suite());
}
