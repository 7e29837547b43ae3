/*
 * Unit tests for lib/fatelf/stream.c: the streaming thinner gives the same bytes
 * as the seekable writer, whatever the chunking, and the same verdict as
 * fatelf_validate on bad input.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "corpus.h"
#include "elfgen.h"
#include "fatelf.h"
#include "testutil.h"

struct sink {
	uint8_t *buf;
	size_t len, cap;
	fatelf_keepset keep;
	int form;
	int warnings[8];
	unsigned nwarn;
	int fail_after;         /* write fails after this many calls, -1 never */
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
	struct sink *s = ctx;

	if (s->fail_after == 0)
		return -ENOSPC;
	if (s->fail_after > 0)
		s->fail_after--;
	if (s->len + len > s->cap) {
		s->cap = (s->len + len) * 2;
		s->buf = realloc(s->buf, s->cap);
		ck_assert_ptr_nonnull(s->buf);
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

static int sink_select(void *ctx, const fatelf_header *hdr, fatelf_keepset *ret_keep,
		       int *ret_form, fatelf_diag *d)
{
	struct sink *s = ctx;

	*ret_keep = s->keep;
	*ret_form = s->form;
	return 0;
}

static void sink_warn(void *ctx, int warning, int record, const char *msg)
{
	struct sink *s = ctx;

	if (s->nwarn < 8)
		s->warnings[s->nwarn++] = warning;
}

/* Streams buf in chunks of `chunk` bytes; returns the stream's verdict. */
static int run_stream(const uint8_t *buf, size_t len, size_t chunk, bool known_size,
		      struct sink *sink, fatelf_diag *d)
{
	fatelf_stream_opts o = {
		.select = sink_select,
		.write = sink_write,
		.warn = sink_warn,
		.ctx = sink,
		.input_size = known_size ? len : UINT64_MAX,
	};
	fatelf_stream *s = NULL;
	int r;

	ck_assert_int_eq(fatelf_stream_new(&o, &s), 0);
	for (size_t off = 0; off < len; off += chunk) {
		r = fatelf_stream_push(s, buf + off, len - off < chunk ? len - off : chunk, d);
		if (r < 0) {
			fatelf_stream_free(s);
			return r;
		}
	}
	r = fatelf_stream_finish(s, d);
	fatelf_stream_free(s);
	return r;
}

/* The seekable writer's output for the same input and keep set. */
static uint8_t *seekable_output(const uint8_t *buf, size_t len, const fatelf_keepset *keep,
				int form, size_t *ret_len)
{
	fatelf_reader src;
	fatelf_header hdr;
	fatelf_plan plan;
	fatelf_diag d;
	int in = memfd_create("in", 0), out = memfd_create("out", 0);

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	ck_assert_int_eq(write(in, buf, len), (ssize_t)len);
	fatelf_reader_seekable_fd(&src, in);
	ck_assert_int_eq(fatelf_validate(&src, NULL, &hdr, NULL, &d), 0);
	ck_assert_int_eq(fatelf_plan_make(&hdr, keep, form, &plan, &d), 0);
	ck_assert_int_eq(fatelf_plan_write(&plan, &hdr, in, out, &d), 0);

	off_t n = lseek(out, 0, SEEK_END);
	uint8_t *res = malloc((size_t)n + 1);
	ck_assert_int_eq(pread(out, res, (size_t)n, 0), n);
	close(in);
	close(out);
	*ret_len = (size_t)n;
	return res;
}

/* A fat file with records out of offset order, a big-endian record, a
 * 64 KiB-aligned record and trailing bytes. */
static uint8_t *make_mixed(size_t *ret_len, unsigned *ret_n)
{
	elfgen_opts o;
	uint8_t *imgs[4];
	size_t lens[4];
	fatelf_header hdr;
	size_t len;

	elfgen_defaults(&o, 62, FATELF_CLASS64, FATELF_DATA2LSB);
	o.size = 9000;
	o.nload = 2;
	imgs[0] = elfgen_make(&o, &lens[0]);
	elfgen_defaults(&o, 183, FATELF_CLASS64, FATELF_DATA2LSB);
	o.size = 70000;
	o.p_align = 0x10000;
	o.seed = 2;
	imgs[1] = elfgen_make(&o, &lens[1]);
	elfgen_defaults(&o, 22, FATELF_CLASS64, FATELF_DATA2MSB);
	o.size = 5000;
	o.seed = 3;
	imgs[2] = elfgen_make(&o, &lens[2]);
	elfgen_defaults(&o, 3, FATELF_CLASS32, FATELF_DATA2LSB);
	o.size = 3000;
	o.seed = 4;
	o.type = ELFGEN_ET_DYN;
	imgs[3] = elfgen_make(&o, &lens[3]);

	elfgen_image im[4] = {
		{ imgs[0], lens[0], 0 },
		{ imgs[1], lens[1], 0x10000 },
		{ imgs[2], lens[2], 0 },
		{ imgs[3], lens[3], 0 },
	};
	uint8_t *fat = elfgen_fat(im, 4, &len, &hdr);
	/* Swap records 0 and 3 in the table: offsets now out of order. */
	fatelf_record t = hdr.records[0];
	hdr.records[0] = hdr.records[3];
	hdr.records[3] = t;
	elfgen_put_header(fat, &hdr);
	/* Trailing bytes after the last record. */
	fat = realloc(fat, len + 100);
	memset(fat + len, 0xAB, 100);
	len += 100;
	for (int i = 0; i < 4; i++)
		free(imgs[i]);
	*ret_len = len;
	*ret_n = 4;
	return fat;
}

START_TEST(test_stream_matches_seekable)
{
	size_t len;
	unsigned n;
	uint8_t *fat = make_mixed(&len, &n);
	const size_t chunks[] = { 1, 7, 4096, 65536, 1u << 30 };
	unsigned cases = 0;

	/* Every non-empty keep set of the 4 records, each form that fits. */
	for (unsigned mask = 1; mask < (1u << n); mask++) {
		for (int form = FATELF_FORM_AUTO; form <= FATELF_FORM_FAT; form++) {
			fatelf_keepset keep;
			fatelf_keep_clear(&keep);
			for (unsigned i = 0; i < n; i++)
				if (mask & (1u << i))
					fatelf_keep_add(&keep, i);
			if (form == FATELF_FORM_ELF && fatelf_keep_count(&keep) != 1)
				continue;
			size_t want_len;
			uint8_t *want = seekable_output(fat, len, &keep, form, &want_len);

			for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
				struct sink sk = { .keep = keep, .form = form, .fail_after = -1 };
				fatelf_diag d;
				int r = run_stream(fat, len, chunks[c], c % 2 == 0, &sk, &d);

				ck_assert_msg(r == 0, "mask %u form %d chunk %zu: %s", mask, form,
					      chunks[c], d.msg);
				ck_assert_uint_eq(sk.len, want_len);
				ck_assert_msg(memcmp(sk.buf, want, want_len) == 0,
					      "mask %u form %d chunk %zu: bytes differ", mask, form,
					      chunks[c]);
				/* The trailing bytes were reported. */
				ck_assert_uint_eq(sk.nwarn, 1);
				ck_assert_int_eq(sk.warnings[0], FATELF_W_TRAILING);
				free(sk.buf);
				cases++;
			}
			free(want);
		}
	}
	ck_assert_uint_ge(cases, 15 * 5);
	free(fat);
}
END_TEST

START_TEST(test_stream_single_record_is_the_elf)
{
	size_t len;
	unsigned n;
	uint8_t *fat = make_mixed(&len, &n);
	fatelf_header hdr;
	fatelf_diag d;

	ck_assert_int_eq(fatelf_header_decode(fat, len, &hdr, &d), 0);
	for (unsigned i = 0; i < n; i++) {
		struct sink sk = { .form = FATELF_FORM_AUTO, .fail_after = -1 };
		fatelf_keep_clear(&sk.keep);
		fatelf_keep_add(&sk.keep, i);
		ck_assert_int_eq(run_stream(fat, len, 333, true, &sk, &d), 0);
		ck_assert_uint_eq(sk.len, hdr.records[i].size);
		ck_assert(memcmp(sk.buf, fat + hdr.records[i].offset, sk.len) == 0);
		free(sk.buf);
	}
	free(fat);
}
END_TEST

START_TEST(test_stream_truncated_input)
{
	size_t len;
	unsigned n;
	uint8_t *fat = make_mixed(&len, &n);
	fatelf_diag d;
	struct sink sk = { .form = FATELF_FORM_AUTO, .fail_after = -1 };

	fatelf_keep_clear(&sk.keep);
	fatelf_keep_add(&sk.keep, 0);
	/* Cut in the middle of the last record: the same verdict as a
	 * seekable reader of the cut file (the record lies outside it). */
	size_t cut = len - 100 - 10;
	ck_assert_int_eq(run_stream(fat, cut, 4096, false, &sk, &d), -FATELF_E_OUTSIDE);
	free(sk.buf);

	/* With the size declared up front, the short input is caught at the end. */
	memset(&sk, 0, sizeof(sk));
	sk.fail_after = -1;
	fatelf_keep_add(&sk.keep, 0);
	fatelf_stream_opts o = { .select = sink_select, .write = sink_write, .ctx = &sk,
				 .input_size = len };
	fatelf_stream *s;
	ck_assert_int_eq(fatelf_stream_new(&o, &s), 0);
	ck_assert_int_eq(fatelf_stream_push(s, fat, cut, &d), 0);
	ck_assert_int_eq(fatelf_stream_finish(s, &d), -FATELF_E_STREAM_TRUNCATED);
	/* Errors are sticky, and the stream refuses more input. */
	ck_assert_int_eq(fatelf_stream_push(s, fat, 1, &d), -FATELF_E_STREAM_TRUNCATED);
	fatelf_stream_free(s);
	free(sk.buf);

	/* Only 5 bytes: shorter than the header. */
	memset(&sk, 0, sizeof(sk));
	sk.fail_after = -1;
	ck_assert_int_eq(run_stream(fat, 5, 1, false, &sk, &d), -FATELF_E_SHORT);
	/* Header but half a table. */
	ck_assert_int_eq(run_stream(fat, 20, 3, false, &sk, &d), -FATELF_E_TABLE_TRUNCATED);
	free(sk.buf);
	free(fat);
}
END_TEST

START_TEST(test_stream_write_error)
{
	size_t len;
	unsigned n;
	uint8_t *fat = make_mixed(&len, &n);
	fatelf_diag d;
	struct sink sk = { .form = FATELF_FORM_FAT, .fail_after = 2 };

	for (unsigned i = 0; i < n; i++)
		fatelf_keep_add(&sk.keep, i);
	ck_assert_int_eq(run_stream(fat, len, 1000, true, &sk, &d), -ENOSPC);
	ck_assert_int_eq(d.code, -ENOSPC);
	free(sk.buf);
	free(fat);
}
END_TEST

/* Streams a corpus file read through its source, chunk bytes at a time,
 * stopping at the first error (sparse files fail at their table). */
static int run_corpus(const corpus_file *f, size_t chunk, bool known, struct sink *sk,
		      fatelf_diag *d)
{
	fatelf_reader src;
	fatelf_stream_opts o = {
		.select = sink_select,
		.write = sink_write,
		.warn = sink_warn,
		.ctx = sk,
		.input_size = known ? f->size : UINT64_MAX,
	};
	fatelf_stream *s = NULL;
	uint8_t *buf = malloc(chunk);
	int r = 0;

	corpus_source(f, &src);
	ck_assert_int_eq(fatelf_stream_new(&o, &s), 0);
	for (uint64_t off = 0; off < f->size && r == 0; off += chunk) {
		size_t n = (size_t)(f->size - off < chunk ? f->size - off : chunk);
		ck_assert_int_eq(fatelf_reader_read_at(&src, buf, n, off), 0);
		r = fatelf_stream_push(s, buf, n, d);
	}
	if (r == 0)
		r = fatelf_stream_finish(s, d);
	fatelf_stream_free(s);
	free(buf);
	return r;
}

START_TEST(test_stream_corpus_same_verdict)
{
	/* Every malformed file gets the code fatelf_validate gives it, from a
	 * stream of known or unknown size, in small or large chunks; every
	 * valid one streams, with the same warnings. */
	unsigned bad = 0, good = 0;

	for (size_t i = 0; i < corpus_count(); i++) {
		corpus_file f;
		fatelf_reader src;
		fatelf_diag vd;

		ck_assert_int_eq(corpus_make(i, &f), 0);
		corpus_source(&f, &src);
		ck_assert_int_eq(fatelf_validate(&src, NULL, NULL, NULL, &vd), f.expected);
		for (int known = 0; known < 2; known++) {
			for (size_t chunk = 1; chunk <= 65536; chunk *= 256) {
				struct sink sk = { .form = FATELF_FORM_FAT, .fail_after = -1 };
				fatelf_diag d;

				if (f.sparse && chunk < 65536)
					continue;
				for (unsigned k = 0; k < FATELF_MAX_RECORDS; k++)
					fatelf_keep_add(&sk.keep, k);
				int r = run_corpus(&f, chunk, known, &sk, &d);
				if (f.expected == 0) {
					unsigned w = 0;
					ck_assert_msg(r == 0, "%s: stream rejects a valid file: %s", f.name, d.msg);
					for (unsigned k = 0; k < sk.nwarn; k++)
						w |= CORPUS_WARN(sk.warnings[k]);
					ck_assert_msg(w == f.warnings, "%s: warnings %x, want %x", f.name, w,
						      f.warnings);
				} else {
					ck_assert_msg(r == f.expected,
						      "%s (known size %d, chunk %zu): got %s, want %s: %s",
						      f.name, known, chunk, fatelf_error_name(r),
						      fatelf_error_name(f.expected), d.msg);
				}
				free(sk.buf);
			}
		}
		if (f.expected)
			bad++;
		else
			good++;
		corpus_file_free(&f);
	}
	ck_assert_uint_ge(bad, 25);
	ck_assert_uint_ge(good, 5);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stream");
	TCase *tc = tcase_create("stream");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stream_matches_seekable);
	tcase_add_test(tc, test_stream_single_record_is_the_elf);
	tcase_add_test(tc, test_stream_truncated_input);
	tcase_add_test(tc, test_stream_write_error);
	tcase_add_test(tc, test_stream_corpus_same_verdict);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
