/*
 * Unit tests for lib/fatelf/validate.c and lib/fatelf/elf.c: every corpus file is
 * rejected with exactly its own code and a message naming its record,
 * every valid edge case is accepted with exactly its warnings, and
 * validation reads headers only, whatever the size of the images.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "elfgen.h"
#include "fatelf.h"
#include "testutil.h"

/* The validation codes, first to last, as listed in fatelf.h. */
#define FIRST_RULE FATELF_E_SHORT
#define LAST_RULE FATELF_E_SEGMENT
/* Rules about the file as a whole; every later one is about a record. */
#define LAST_HEADER_RULE FATELF_E_TABLE_TRUNCATED

struct warnings {
	unsigned count[4];
	int record[4];
	char msg[4][512];
};

static void collect(void *ctx, int warning, int record, const char *msg)
{
	struct warnings *w = ctx;

	ck_assert_int_ge(warning, 1);
	ck_assert_int_le(warning, 3);
	w->count[warning]++;
	w->record[warning] = record;
	snprintf(w->msg[warning], sizeof(w->msg[warning]), "%s", msg);
}

static void make(size_t i, corpus_file *f)
{
	int r = corpus_make(i, f);

	ck_assert_msg(r == 0, "corpus entry %zu: %s", i, strerror(-r));
}

static int find(const char *name, corpus_file *f)
{
	for (size_t i = 0; i < corpus_count(); i++) {
		make(i, f);
		if (strcmp(f->name, name) == 0)
			return 0;
		corpus_file_free(f);
	}
	ck_abort_msg("no corpus entry %s", name);
	return -1;
}

START_TEST(test_corpus_malformed_rejected_with_own_code)
{
	bool seen[LAST_RULE + 1] = { false };

	for (size_t i = 0; i < corpus_count(); i++) {
		corpus_file f;
		fatelf_reader src;
		fatelf_header hdr, untouched;
		fatelf_diag d;
		char want[32];
		int r;

		make(i, &f);
		if (f.expected == 0) {
			corpus_file_free(&f);
			continue;
		}
		/* The name before '-' is the error name the file is filed under. */
		ck_assert_msg(strncmp(f.name, fatelf_error_name(f.expected),
				      strlen(fatelf_error_name(f.expected))) == 0, "%s", f.name);
		corpus_source(&f, &src);
		fatelf_diag_clear(&d);
		memset(&hdr, 0xab, sizeof(hdr));
		untouched = hdr;
		r = fatelf_validate(&src, NULL, &hdr, NULL, &d);
		ck_assert_msg(r == f.expected, "%s: got %s (%s)", f.name, fatelf_error_name(r), d.msg);
		ck_assert_int_eq(d.code, r);
		ck_assert_msg(memcmp(&hdr, &untouched, sizeof(hdr)) == 0, "%s: ret changed", f.name);
		ck_assert_msg(d.msg[0] != '\0', "%s: empty message", f.name);
		if (-r > LAST_HEADER_RULE) {
			ck_assert_msg(d.record >= 0, "%s: no record in diag", f.name);
			snprintf(want, sizeof(want), "record %d (", d.record);
			ck_assert_msg(strncmp(d.msg, want, strlen(want)) == 0, "%s: message \"%s\"",
				      f.name, d.msg);
		} else {
			ck_assert_msg(d.record == -1, "%s: record %d", f.name, d.record);
		}
		seen[-r] = true;
		corpus_file_free(&f);
	}
	for (int c = FIRST_RULE; c <= LAST_RULE; c++)
		ck_assert_msg(seen[c], "no corpus file for %s", fatelf_error_name(c));
}
END_TEST

/*
 * The table-level verdict of fatelf_validate_table (what the streaming
 * reader uses) agrees with fatelf_validate's, and decoding fails with the
 * same code for the rules decoding checks.
 */
START_TEST(test_corpus_table_rules_agree)
{
	for (size_t i = 0; i < corpus_count(); i++) {
		uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
		corpus_file f;
		fatelf_reader src;
		fatelf_header hdr;
		size_t len;
		int r;

		make(i, &f);
		corpus_source(&f, &src);
		len = (size_t)(f.size < sizeof(table) ? f.size : sizeof(table));
		ck_assert_int_eq(src.pread(&src, table, len, 0), (ssize_t)len);
		r = fatelf_header_decode(table, len, &hdr, NULL);
		if (r < 0) {
			ck_assert_msg(r == f.expected, "%s: decode says %s", f.name,
				      fatelf_error_name(r));
		} else {
			int t = fatelf_validate_table(&hdr, f.size, NULL);
			if (f.expected == 0 || -f.expected > FATELF_E_DUPLICATE)
				ck_assert_msg(t == 0, "%s: table says %s", f.name, fatelf_error_name(t));
			else
				ck_assert_msg(t == f.expected, "%s: table says %s", f.name,
					      fatelf_error_name(t));
			/* Streaming: the size is unknown, only "outside" is skipped. */
			t = fatelf_validate_table(&hdr, UINT64_MAX, NULL);
			if (f.expected == -FATELF_E_OUTSIDE || f.expected == 0 ||
			    -f.expected > FATELF_E_DUPLICATE)
				ck_assert_msg(t == 0, "%s: streaming says %s", f.name,
					      fatelf_error_name(t));
			else
				ck_assert_msg(t == f.expected, "%s: streaming says %s", f.name,
					      fatelf_error_name(t));
		}
		corpus_file_free(&f);
	}
}
END_TEST

START_TEST(test_corpus_valid_accepted_with_warnings)
{
	unsigned nvalid = 0;

	for (size_t i = 0; i < corpus_count(); i++) {
		corpus_file f;
		fatelf_reader src;
		fatelf_header hdr;
		fatelf_elfinfo *info = calloc(FATELF_MAX_RECORDS, sizeof(*info));
		struct warnings w = { 0 };
		fatelf_validate_opts opts = { .warn = collect, .warn_ctx = &w };
		fatelf_diag d;
		int r;

		ck_assert_ptr_nonnull(info);
		make(i, &f);
		if (f.expected != 0) {
			corpus_file_free(&f);
			free(info);
			continue;
		}
		nvalid++;
		corpus_source(&f, &src);
		r = fatelf_validate(&src, &opts, &hdr, info, &d);
		ck_assert_msg(r == 0, "%s: %s: %s", f.name, fatelf_error_name(r), d.msg);
		for (int k = FATELF_W_UNDER_ALIGNED; k <= FATELF_W_TRAILING; k++)
			ck_assert_msg(w.count[k] == ((f.warnings & CORPUS_WARN(k)) ? 1u : 0u),
				      "%s: warning %d given %u times", f.name, k, w.count[k]);
		ck_assert_int_ge(hdr.nrecords, 1);
		for (unsigned k = 0; k < hdr.nrecords; k++)
			ck_assert_msg(fatelf_target_equal(&info[k].target, &hdr.records[k].target),
				      "%s: info %u", f.name, k);
		corpus_file_free(&f);
		free(info);
	}
	ck_assert_uint_ge(nvalid, 10);
}
END_TEST

static void validate_entry(const char *name, fatelf_header *hdr, fatelf_elfinfo *info,
			   struct warnings *w)
{
	corpus_file f;
	fatelf_reader src;
	fatelf_validate_opts opts = { .warn = collect, .warn_ctx = w };
	fatelf_diag d;
	int r;

	find(name, &f);
	corpus_source(&f, &src);
	r = fatelf_validate(&src, &opts, hdr, info, &d);
	ck_assert_msg(r == 0, "%s: %s", name, d.msg);
	corpus_file_free(&f);
}

START_TEST(test_info_filled)
{
	fatelf_elfinfo info[FATELF_MAX_RECORDS];
	fatelf_header hdr;
	struct warnings w = { 0 };

	validate_entry("align-64k", &hdr, info, &w);
	ck_assert_int_eq(hdr.nrecords, 2);
	ck_assert_uint_eq(info[0].max_align, 4096);
	ck_assert_uint_eq(info[1].max_align, 0x10000);
	ck_assert_uint_eq(hdr.records[1].offset, 0x10000);
	ck_assert_int_eq(info[1].type, ELFGEN_ET_EXEC);
	ck_assert_int_eq(info[1].phnum, 2);
	ck_assert_int_eq(info[1].target.machine, 183);
	/* elfgen's entry point is right after the headers */
	ck_assert_uint_eq(info[0].entry, 0x400000 + 64 + 2 * 56);

	validate_entry("et-rel", &hdr, info, &w);
	for (unsigned i = 0; i < hdr.nrecords; i++) {
		ck_assert_int_eq(info[i].type, ELFGEN_ET_REL);
		ck_assert_int_eq(info[i].phnum, 0);
		ck_assert_uint_eq(info[i].max_align, 0);
	}
	validate_entry("et-dyn", &hdr, info, &w);
	ck_assert_int_eq(info[0].type, ELFGEN_ET_DYN);

	validate_entry("big-endian", &hdr, info, &w);
	ck_assert_int_eq(info[1].target.machine, 22);
	ck_assert_int_eq(info[1].target.byte_order, FATELF_DATA2MSB);
	ck_assert_int_eq(info[2].target.word_size, FATELF_CLASS32);
	ck_assert_uint_eq(info[2].max_align, 4096);
	ck_assert_uint_eq(info[2].entry, 0x400000 + 52 + 2 * 32);
}
END_TEST

START_TEST(test_warning_messages)
{
	fatelf_elfinfo info[FATELF_MAX_RECORDS];
	fatelf_header hdr;
	struct warnings w = { 0 };

	validate_entry("under-aligned", &hdr, info, &w);
	ck_assert_int_eq(w.record[FATELF_W_UNDER_ALIGNED], 1);
	ck_assert_str_eq(w.msg[FATELF_W_UNDER_ALIGNED],
			 "record 1 (aarch64:64bits:le:sysv:osabiver0): offset 0x2000 is aligned "
			 "below its p_align 0x10000");
	memset(&w, 0, sizeof(w));
	validate_entry("trailing", &hdr, info, &w);
	ck_assert_int_eq(w.record[FATELF_W_TRAILING], -1);
	ck_assert_str_eq(w.msg[FATELF_W_TRAILING], "100 bytes after the last record are ignored");
}
END_TEST

static void expect_msg(const char *name, const char *msg)
{
	corpus_file f;
	fatelf_reader src;
	fatelf_diag d;

	find(name, &f);
	corpus_source(&f, &src);
	ck_assert_int_eq(fatelf_validate(&src, NULL, NULL, NULL, &d), f.expected);
	ck_assert_str_eq(d.msg, msg);
	corpus_file_free(&f);
}

START_TEST(test_messages_name_record_and_rule)
{
	expect_msg("FATELF_E_ALIGN",
		   "record 1 (aarch64:64bits:le:sysv:osabiver0): offset 0x3008 is not aligned to 4096");
	expect_msg("FATELF_E_ELF_MACHINE",
		   "record 1 (riscv:64bits:le:sysv:osabiver0): ELF header says machine 183 "
		   "(aarch64), record says 243 (riscv)");
	expect_msg("FATELF_E_PH_TABLE-pn-xnum",
		   "record 1 (aarch64:64bits:le:sysv:osabiver0): extended program header count "
		   "(PN_XNUM) is not supported");
	expect_msg("FATELF_E_SEGMENT",
		   "record 1 (aarch64:64bits:le:sysv:osabiver0): PT_LOAD segment (program header 0) "
		   "covers file bytes [0x0, 0x0 + 0x1001), outside the image's 0x1000 bytes");
	expect_msg("FATELF_E_4GIB-boundary",
		   "record 1 (i386:32bits:le:sysv:osabiver0): 32-bit record ends at 0x100000000, "
		   "beyond 0xffffffff");
	expect_msg("FATELF_E_OVERLAP-by-one",
		   "record 1 (aarch64:64bits:le:sysv:osabiver0): bytes [0x2000, 0x3000) overlap "
		   "record 0 (x86_64:64bits:le:sysv:osabiver0) at [0x1000, 0x2001)");
	expect_msg("FATELF_E_DUPLICATE-be",
		   "record 2 (s390:64bits:be:sysv:osabiver0): same target as record 0");
	expect_msg("FATELF_E_HDR_RESERVED", "header reserved byte is 0x01, must be 0");
}
END_TEST

/* A source that counts what is read through it. */
struct counting {
	fatelf_reader inner;
	uint64_t bytes;
	unsigned calls;
};

static ssize_t counting_pread(const fatelf_reader *src, void *buf, size_t len, uint64_t off)
{
	struct counting *c = src->ctx;

	c->bytes += len;
	c->calls++;
	return c->inner.pread(&c->inner, buf, len, off);
}

START_TEST(test_reads_only_headers)
{
	const size_t big = (size_t)64 << 20;
	elfgen_image imgs[2];
	elfgen_opts o;
	uint8_t *a, *b, *fat;
	size_t alen, blen, flen;
	struct counting c = { 0 };
	fatelf_reader src;
	fatelf_diag d;

	elfgen_defaults(&o, 62, FATELF_CLASS64, FATELF_DATA2LSB);
	o.size = big;
	o.nload = 4;
	a = elfgen_make(&o, &alen);
	elfgen_defaults(&o, 22, FATELF_CLASS64, FATELF_DATA2MSB);
	o.size = big;
	b = elfgen_make(&o, &blen);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	imgs[0] = (elfgen_image){ .data = a, .len = alen };
	imgs[1] = (elfgen_image){ .data = b, .len = blen };
	fat = elfgen_fat(imgs, 2, &flen, NULL);
	ck_assert_ptr_nonnull(fat);
	free(a);
	free(b);
	ck_assert_uint_gt(flen, 2 * big);

	fatelf_reader_seekable_mem(&c.inner, fat, flen);
	src = c.inner;
	src.pread = counting_pread;
	src.ctx = &c;
	ck_assert_int_eq(fatelf_validate(&src, NULL, NULL, NULL, &d), 0);
	ck_assert_uint_lt(c.bytes, 1u << 20);
	ck_assert_uint_lt(c.bytes, 4096);
	ck_assert_uint_le(c.calls, 8);
	free(fat);
}
END_TEST

START_TEST(test_open_validated)
{
	fatelf_header hdr;
	fatelf_diag d;
	corpus_file f;
	elfgen_opts o;
	uint8_t *img;
	size_t len;
	int fd;

	tu_tmpdir();
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_open_validated("missing.fatelf", &hdr, NULL, NULL, &d), -ENOENT);
	ck_assert_int_eq(d.code, -ENOENT);
	ck_assert_str_eq(d.subject, "missing.fatelf");

	elfgen_defaults(&o, 62, FATELF_CLASS64, FATELF_DATA2LSB);
	img = elfgen_make(&o, &len);
	tu_write_file("plain", img, len);
	free(img);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_open_validated("plain", &hdr, NULL, NULL, &d), -FATELF_E_MAGIC);
	ck_assert_ptr_nonnull(strstr(d.msg, "plain ELF"));
	ck_assert_str_eq(d.subject, "plain");

	find("FATELF_E_OUTSIDE", &f);
	ck_assert_int_eq(corpus_write(&f, "outside.fatelf"), 0);
	corpus_file_free(&f);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_open_validated("outside.fatelf", &hdr, NULL, NULL, &d),
			 -FATELF_E_OUTSIDE);
	ck_assert_str_eq(d.subject, "outside.fatelf");
	ck_assert_int_eq(d.record, 1);

	find("twelve-records", &f);
	ck_assert_int_eq(corpus_write(&f, "twelve.fatelf"), 0);
	corpus_file_free(&f);
	fatelf_diag_clear(&d);
	fd = fatelf_open_validated("twelve.fatelf", &hdr, NULL, NULL, &d);
	ck_assert_msg(fd >= 0, "%s", d.msg);
	ck_assert_int_eq(hdr.nrecords, 12);
	ck_assert_str_eq(d.subject, "");
	close(fd);

	ck_assert_int_eq(fatelf_open_validated(".", &hdr, NULL, NULL, &d), -EISDIR);
	ck_assert_str_eq(d.subject, ".");
}
END_TEST

/* The 4 GiB files are sparse on disk: validation reads only headers. */
START_TEST(test_sparse_files_on_disk)
{
	static const char *const names[] = {
		"FATELF_E_4GIB", "64bit-above-4gib", "32bit-below-4gib",
	};
	fatelf_header hdr;
	fatelf_diag d;

	tu_tmpdir();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		corpus_file f;
		int fd;

		find(names[i], &f);
		ck_assert(f.sparse);
		ck_assert_int_eq(corpus_write(&f, "f"), 0);
		fd = fatelf_open_validated("f", &hdr, NULL, NULL, &d);
		if (f.expected) {
			ck_assert_int_eq(fd, f.expected);
		} else {
			ck_assert_msg(fd >= 0, "%s: %s", names[i], d.msg);
			close(fd);
		}
		corpus_file_free(&f);
		unlink("f");
	}
}
END_TEST

static int inspect_mem(const void *buf, size_t len, fatelf_elfinfo *info, fatelf_diag *d)
{
	fatelf_reader src;

	fatelf_reader_seekable_mem(&src, buf, len);
	fatelf_diag_clear(d);
	return fatelf_elf_inspect(&src, 0, len, -1, info, d);
}

START_TEST(test_inspect_small_and_foreign)
{
	fatelf_elfinfo info;
	fatelf_diag d;
	elfgen_opts o;
	uint8_t *img;
	size_t len;

	ck_assert_int_eq(inspect_mem("\177EL", 3, &info, &d), -FATELF_E_TOO_SMALL);
	ck_assert_int_eq(inspect_mem("abc", 3, &info, &d), -FATELF_E_ELF_MAGIC);
	ck_assert_int_eq(inspect_mem("", 0, &info, &d), -FATELF_E_ELF_MAGIC);
	ck_assert_int_eq(inspect_mem("#!/bin/sh\nexit 0\n", 17, &info, &d), -FATELF_E_ELF_MAGIC);
	ck_assert_ptr_null(strstr(d.msg, "record"));

	elfgen_defaults(&o, 62, FATELF_CLASS64, FATELF_DATA2LSB);
	img = elfgen_make(&o, &len);
	ck_assert_int_eq(inspect_mem(img, 63, &info, &d), -FATELF_E_TOO_SMALL);
	ck_assert_int_eq(inspect_mem(img, 64, &info, &d), -FATELF_E_PH_TABLE);
	ck_assert_int_eq(inspect_mem(img, len, &info, &d), 0);
	ck_assert_int_eq(inspect_mem(img, len - 1, &info, &d), -FATELF_E_SEGMENT);
	/* a record's image is named by index when inspected alone */
	{
		fatelf_reader src;
		fatelf_reader_seekable_mem(&src, img, len);
		ck_assert_int_eq(fatelf_elf_inspect(&src, 0, 63, 4, &info, &d), -FATELF_E_TOO_SMALL);
		ck_assert_int_eq(d.record, 4);
		ck_assert_int_eq(strncmp(d.msg, "record 4: ", 10), 0);
	}
	free(img);

	elfgen_defaults(&o, 8, FATELF_CLASS32, FATELF_DATA2MSB);
	img = elfgen_make(&o, &len);
	ck_assert_int_eq(inspect_mem(img, 51, &info, &d), -FATELF_E_TOO_SMALL);
	ck_assert_int_eq(inspect_mem(img, len, &info, &d), 0);
	ck_assert_int_eq(info.target.machine, 8);
	ck_assert_int_eq(info.target.byte_order, FATELF_DATA2MSB);
	ck_assert_int_eq(info.phnum, 2);
	free(img);
}
END_TEST

/* More program headers than one read batch: the last PT_LOAD is checked. */
START_TEST(test_inspect_many_program_headers)
{
	fatelf_elfinfo info;
	fatelf_diag d;
	elfgen_opts o;
	uint8_t *img;
	size_t len;
	uint64_t phoff;

	elfgen_defaults(&o, 183, FATELF_CLASS64, FATELF_DATA2MSB);
	o.nload = 65533; /* + PT_GNU_STACK: 65534, the most without PN_XNUM */
	o.p_align = 0x10000;
	img = elfgen_make(&o, &len);
	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(inspect_mem(img, len, &info, &d), 0);
	ck_assert_int_eq(info.phnum, 65534);
	ck_assert_uint_eq(info.max_align, 0x10000);

	/* p_filesz of the last PT_LOAD (big endian), one byte too long */
	phoff = elfgen_phoff(&o) + (uint64_t)65532 * 56;
	uint8_t *fs = img + phoff + 32;
	uint64_t v = 0;
	for (int k = 0; k < 8; k++)
		v = v << 8 | fs[k];
	v++;
	for (int k = 7; k >= 0; k--, v >>= 8)
		fs[k] = (uint8_t)v;
	ck_assert_int_eq(inspect_mem(img, len, &info, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "program header 65532"));
	free(img);
}
END_TEST

START_TEST(test_match_order_and_messages)
{
	fatelf_target rec = { .machine = 62, .osabi = 0, .osabi_version = 0,
			      .word_size = FATELF_CLASS64, .byte_order = FATELF_DATA2LSB };
	fatelf_target elf = { .machine = 0x9999, .osabi = 9, .osabi_version = 3,
			      .word_size = FATELF_CLASS32, .byte_order = FATELF_DATA2MSB };
	static const int order[] = {
		FATELF_E_ELF_CLASS, FATELF_E_ELF_DATA, FATELF_E_ELF_MACHINE,
		FATELF_E_ELF_OSABI, FATELF_E_ELF_ABIVERSION,
	};
	fatelf_diag d;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		ck_assert_int_eq(fatelf_elf_match(&rec, &elf, 3, "x86_64:64bits:le:sysv:osabiver0", &d),
				 -order[i]);
		ck_assert_int_eq(d.record, 3);
		ck_assert_int_eq(strncmp(d.msg, "record 3 (x86_64:64bits:le:sysv:osabiver0): ", 44), 0);
		switch (order[i]) {
		case FATELF_E_ELF_CLASS: elf.word_size = rec.word_size; break;
		case FATELF_E_ELF_DATA: elf.byte_order = rec.byte_order; break;
		case FATELF_E_ELF_MACHINE:
			/* an unnamed machine prints as its number alone */
			ck_assert_ptr_nonnull(strstr(d.msg, "machine 39321, record says 62 (x86_64)"));
			elf.machine = rec.machine;
			break;
		case FATELF_E_ELF_OSABI: elf.osabi = rec.osabi; break;
		default: elf.osabi_version = rec.osabi_version; break;
		}
	}
	ck_assert_int_eq(fatelf_elf_match(&rec, &elf, -1, NULL, &d), 0);
	elf.osabi = 3;
	ck_assert_int_eq(fatelf_elf_match(&rec, &elf, -1, NULL, &d), -FATELF_E_ELF_OSABI);
	ck_assert_int_eq(strncmp(d.msg, "ELF header says osabi 3", 23), 0);
	ck_assert_uint_eq(fatelf_elf_ehdr_size(FATELF_CLASS32), 52);
	ck_assert_uint_eq(fatelf_elf_ehdr_size(FATELF_CLASS64), 64);
	ck_assert_uint_eq(fatelf_elf_ehdr_size(3), 0);
}
END_TEST

/* Rules the corpus cannot reach by file (the size is unknown). */
START_TEST(test_validate_table_streaming)
{
	fatelf_header h;
	fatelf_diag d;

	fatelf_header_init(&h);
	h.nrecords = 1;
	h.records[0] = (fatelf_record){
		.target = { .machine = 3, .word_size = FATELF_CLASS32, .byte_order = FATELF_DATA2LSB },
		.offset = UINT64_C(0x200000000), .size = 4096,
	};
	ck_assert_int_eq(fatelf_validate_table(&h, UINT64_MAX, &d), -FATELF_E_4GIB);
	ck_assert_int_eq(fatelf_validate_table(&h, 4096, &d), -FATELF_E_OUTSIDE);
	h.records[0].offset = UINT64_C(0xFFFFF000);
	h.records[0].size = 0xFFF;
	ck_assert_int_eq(fatelf_validate_table(&h, UINT64_MAX, &d), 0);
	h.records[0].size = 0x1000;
	ck_assert_int_eq(fatelf_validate_table(&h, UINT64_MAX, &d), -FATELF_E_4GIB);
	h.records[0].target.word_size = FATELF_CLASS64;
	ck_assert_int_eq(fatelf_validate_table(&h, UINT64_MAX, &d), 0);
	h.nrecords = 0;
	ck_assert_int_eq(fatelf_validate_table(&h, UINT64_MAX, &d), -FATELF_E_NO_RECORDS);
}
END_TEST

static Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_corpus_malformed_rejected_with_own_code);
	tcase_add_test(tc, test_corpus_table_rules_agree);
	tcase_add_test(tc, test_corpus_valid_accepted_with_warnings);
	tcase_add_test(tc, test_info_filled);
	tcase_add_test(tc, test_warning_messages);
	tcase_add_test(tc, test_messages_name_record_and_rule);
	tcase_add_test(tc, test_reads_only_headers);
	tcase_add_test(tc, test_open_validated);
	tcase_add_test(tc, test_sparse_files_on_disk);
	tcase_add_test(tc, test_inspect_small_and_foreign);
	tcase_add_test(tc, test_inspect_many_program_headers);
	tcase_add_test(tc, test_match_order_and_messages);
	tcase_add_test(tc, test_validate_table_streaming);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(validate_suite());
}
