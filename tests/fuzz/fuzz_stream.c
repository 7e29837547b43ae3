/*
 * fuzz_stream: libFuzzer target for the streaming thinner, the parser the
 * bundle installer runs on bytes straight out of an archive.
 *
 * The input is pushed in chunks whose sizes come from a generator seeded
 * by a hash of the input itself, so every input replays the same way. The
 * same hash picks the keep set (all records, or the first), the output
 * form, and whether the input size is announced. Besides "no crash, no
 * sanitizer report" it checks, and aborts when one does not hold:
 *   - the stream accepts exactly the inputs that fatelf_validate accepts;
 *   - for an accepted input, the stream's output is byte for byte what
 *     fatelf_plan_write writes for the same header, keep set and form
 *     (both written to memfds and compared in memory).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fatelf.h"
#include "fuzz.h"

/* More output than this is an input designed to blow up memory (records
 * that overlap); the write callback refuses it. */
#define OUTPUT_CAP ((size_t)64 << 20)

struct run {
	uint64_t rng;
	bool keep_all;
	int form;
	/* filled by select */
	bool selected;
	fatelf_keepset keep;
	/* the stream's output */
	uint8_t *out;
	size_t len, cap;
	bool write_refused;
};

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h ? h : 1;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64 */
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int on_select(void *ctx, const fatelf_header *hdr, fatelf_keepset *ret_keep,
		     int *ret_form, fatelf_diag *d)
{
	struct run *run = ctx;

	fuzz_assert(!run->selected);
	fuzz_assert(hdr->nrecords >= 1);
	fatelf_keep_clear(&run->keep);
	if (run->keep_all) {
		for (unsigned i = 0; i < hdr->nrecords; i++)
			fatelf_keep_add(&run->keep, i);
	} else {
		fatelf_keep_add(&run->keep, 0);
	}
	run->selected = true;
	*ret_keep = run->keep;
	*ret_form = run->form;
	return 0;
}

static int on_write(void *ctx, const void *buf, size_t len)
{
	struct run *run = ctx;

	if (len > OUTPUT_CAP - run->len) {
		run->write_refused = true;
		return -EFBIG;
	}
	if (run->len + len > run->cap) {
		size_t cap = run->cap ? run->cap : 4096;
		uint8_t *p;

		while (cap < run->len + len)
			cap *= 2;
		p = realloc(run->out, cap);
		fuzz_assert(p != NULL);
		run->out = p;
		run->cap = cap;
	}
	memcpy(run->out + run->len, buf, len);
	run->len += len;
	return 0;
}

static void on_warn(void *ctx, int warning, int record, const char *msg)
{
	fuzz_assert(msg != NULL);
}

static int memfd_with(const void *buf, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;

	fuzz_assert(fd >= 0);
	while (done < len) {
		ssize_t n = write(fd, (const uint8_t *)buf + done, len - done);

		fuzz_assert(n > 0);
		done += (size_t)n;
	}
	return fd;
}

/* What the seekable writer makes of the same input: compared with the
 * stream's output. */
static void compare_with_plan_write(const uint8_t *data, size_t size, const fatelf_header *hdr,
				    struct run *run, const fatelf_plan *splan)
{
	static fatelf_plan plan;
	fatelf_diag d;
	uint8_t *want;
	int in_fd, out_fd, r;
	off_t end;

	fatelf_diag_clear(&d);
	r = fatelf_plan_make(hdr, &run->keep, run->form, &plan, &d);
	if (r < 0) {
		fprintf(stderr, "plan_make fails on a stream-accepted input: %s\n", d.msg);
		abort();
	}
	fuzz_assert(plan.out_size == splan->out_size);
	fuzz_assert(plan.form == splan->form);

	in_fd = memfd_with(data, size);
	out_fd = memfd_with(NULL, 0);
	fatelf_diag_clear(&d);
	r = fatelf_plan_write(&plan, hdr, in_fd, out_fd, &d);
	if (r < 0) {
		fprintf(stderr, "plan_write fails on a stream-accepted input: %s\n", d.msg);
		abort();
	}
	end = lseek(out_fd, 0, SEEK_END);
	fuzz_assert(end >= 0);
	if ((uint64_t)end != run->len) {
		fprintf(stderr, "plan_write wrote %lld bytes, the stream %zu\n",
			(long long)end, run->len);
		abort();
	}
	want = malloc(run->len ? run->len : 1);
	fuzz_assert(want != NULL);
	fuzz_assert(pread(out_fd, want, run->len, 0) == (ssize_t)run->len);
	if (memcmp(want, run->out, run->len) != 0) {
		size_t i = 0;

		while (want[i] == run->out[i])
			i++;
		fprintf(stderr, "stream and plan_write differ at byte %zu\n", i);
		abort();
	}
	free(want);
	close(in_fd);
	close(out_fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fatelf_header vhdr;
	struct run run;
	fatelf_stream_opts opts;
	fatelf_stream *s = NULL;
	fatelf_reader src;
	fatelf_diag d;
	uint64_t h = hash_bytes(data, size);
	size_t off = 0, max_chunk;
	int r, vr;
	bool ok;

	memset(&run, 0, sizeof(run));
	run.rng = h;
	run.keep_all = h & 1;
	run.form = (h >> 1) & 1 ? FATELF_FORM_FAT : FATELF_FORM_AUTO;
	switch ((h >> 3) & 3) {
	case 0: max_chunk = 1; break;
	case 1: max_chunk = 17; break;
	case 2: max_chunk = 4096; break;
	default: max_chunk = size ? size : 1; break;
	}

	memset(&opts, 0, sizeof(opts));
	opts.select = on_select;
	opts.write = on_write;
	opts.warn = on_warn;
	opts.ctx = &run;
	opts.input_size = (h >> 2) & 1 ? (uint64_t)size : UINT64_MAX;
	fuzz_assert(fatelf_stream_new(&opts, &s) == 0);

	fatelf_diag_clear(&d);
	r = 0;
	while (off < size && r == 0) {
		size_t n = 1 + (size_t)(rng_next(&run.rng) % max_chunk);

		if (n > size - off)
			n = size - off;
		r = fatelf_stream_push(s, data + off, n, &d);
		off += n;
	}
	if (r == 0)
		r = fatelf_stream_finish(s, &d);
	ok = r == 0;
	if (!ok) {
		fuzz_assert(d.code == r);
		fuzz_assert(d.msg[0] != '\0');
		/* an error is sticky */
		fatelf_diag d2;
		fatelf_diag_clear(&d2);
		fuzz_assert(fatelf_stream_push(s, data, size ? 1 : 0, &d2) < 0 || size == 0);
	}

	fatelf_reader_seekable_mem(&src, data, size);
	fatelf_diag_clear(&d);
	vr = fatelf_validate(&src, NULL, &vhdr, NULL, &d);

	if (ok) {
		if (vr != 0) {
			fprintf(stderr, "the stream accepts what validate rejects: %s\n", d.msg);
			abort();
		}
		fuzz_assert(run.selected);
		fuzz_assert(fatelf_stream_header(s) != NULL);
		fuzz_assert(fatelf_stream_plan(s) != NULL);
		fuzz_assert(fatelf_stream_bytes_out(s) == run.len);
		fuzz_assert(fatelf_stream_plan(s)->out_size == run.len);
		compare_with_plan_write(data, size, &vhdr, &run, fatelf_stream_plan(s));
	} else if (vr == 0 && !run.write_refused) {
		fprintf(stderr, "the stream rejects what validate accepts (stream error %s)\n",
			fatelf_error_name(r));
		abort();
	}

	fatelf_stream_free(s);
	free(run.out);
	return 0;
}
