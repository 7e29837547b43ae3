/*
 * The streaming thinner: a FatELF read from bytes pushed in order, with the
 * kept records written out as they pass. It holds the record table, one
 * ELF header and one program header table at a time, whatever the size of
 * the input, and validates every record with the same rules and codes as
 * fatelf_validate (by running fatelf_elf_inspect on the captured bytes).
 */
#include <stdio.h>
#include <string.h>

#include "fatelf.h"
#include "macro.h"

/* Largest program header table captured: 65534 entries of 64 bytes. */
#define PH_CAPTURE_MAX ((size_t)65535 * 64)
#define EHDR_CAPTURE 64

struct fatelf_stream {
	fatelf_stream_opts o;
	int err;                        /* sticky first error */
	bool finished;
	uint64_t pos;                   /* input bytes consumed */

	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	size_t table_len;
	size_t table_need;
	bool have_table;
	fatelf_header hdr;
	fatelf_plan plan;
	uint64_t max_end;               /* end of the furthest record */

	/* records in ascending offset order, and the one being read */
	uint8_t order[FATELF_MAX_RECORDS];
	unsigned cur;

	/* bytes captured from the current record */
	uint8_t ehdr[EHDR_CAPTURE];
	size_t ehdr_len;
	bool ph_set;                    /* capture window known */
	uint8_t *ph;
	uint64_t ph_off;                /* record-relative */
	size_t ph_len;

	/* output */
	uint64_t out_pos;
	int cur_slot;                   /* output position of current record in plan, -1 if dropped */
};

static const uint8_t zeros[65536];

/* A source over the captured bytes of the current record: what
 * fatelf_elf_inspect reads must be the ELF header or the program header
 * table, which are exactly what is captured. */
static ssize_t capture_pread(const fatelf_reader *src, void *buf, size_t len, uint64_t off)
{
	const fatelf_stream *s = (const fatelf_stream *)src->mem;
	uint8_t *out = buf;

	if (off >= src->size)
		return 0;
	len = (size_t)MIN((uint64_t)len, src->size - off);
	for (size_t i = 0; i < len; i++) {
		uint64_t at = off + i;
		if (at < s->ehdr_len)
			out[i] = s->ehdr[at];
		else if (s->ph && at >= s->ph_off && at - s->ph_off < s->ph_len)
			out[i] = s->ph[at - s->ph_off];
		else
			return -EIO; /* never captured: a reader asked for more than headers */
	}
	return (ssize_t)len;
}

static int fail(fatelf_stream *s, int r)
{
	if (!s->err)
		s->err = r;
	return r;
}

static int emit(fatelf_stream *s, const void *buf, size_t len)
{
	if (len == 0)
		return 0;
	int r = s->o.write(s->o.ctx, buf, len);
	if (r < 0)
		return r;
	s->out_pos += len;
	return 0;
}

static int emit_zeros(fatelf_stream *s, uint64_t upto)
{
	while (s->out_pos < upto) {
		size_t n = (size_t)MIN(upto - s->out_pos, (uint64_t)sizeof(zeros));
		int r = emit(s, zeros, n);
		if (r < 0)
			return r;
	}
	return 0;
}

int fatelf_stream_new(const fatelf_stream_opts *opts, fatelf_stream **ret)
{
	fatelf_stream *s;

	if (!opts || !opts->select || !opts->write)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *opts;
	s->table_need = FATELF_HEADER_SIZE;
	s->cur_slot = -1;
	*ret = s;
	return 0;
}

fatelf_stream *fatelf_stream_free(fatelf_stream *s)
{
	if (s) {
		free(s->ph);
		free(s);
	}
	return NULL;
}

const fatelf_header *fatelf_stream_header(const fatelf_stream *s)
{
	return s->have_table ? &s->hdr : NULL;
}

const fatelf_plan *fatelf_stream_plan(const fatelf_stream *s)
{
	return s->have_table ? &s->plan : NULL;
}

uint64_t fatelf_stream_bytes_out(const fatelf_stream *s)
{
	return s->out_pos;
}

static void warn(fatelf_stream *s, int w, int record, const char *msg)
{
	if (s->o.warn)
		s->o.warn(s->o.ctx, w, record, msg);
}

/* The table is complete: check it, sort records, plan, write the header. */
static int table_done(fatelf_stream *s, fatelf_diag *d)
{
	fatelf_keepset keep;
	int form = FATELF_FORM_AUTO;
	int r;

	r = fatelf_header_decode(s->table, s->table_len, &s->hdr, d);
	if (r < 0)
		return r;
	r = fatelf_validate_table(&s->hdr, s->o.input_size, d);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < s->hdr.nrecords; i++) {
		uint8_t v = (uint8_t)i;
		unsigned j = i;
		while (j > 0 && s->hdr.records[s->order[j - 1]].offset > s->hdr.records[v].offset) {
			s->order[j] = s->order[j - 1];
			j--;
		}
		s->order[j] = v;
		s->max_end = MAX(s->max_end, s->hdr.records[i].offset + s->hdr.records[i].size);
	}
	s->have_table = true;

	fatelf_keep_clear(&keep);
	r = s->o.select(s->o.ctx, &s->hdr, &keep, &form, d);
	if (r < 0)
		return r;
	r = fatelf_plan_make(&s->hdr, &keep, form, &s->plan, d);
	if (r < 0)
		return r;
	if (s->plan.form == FATELF_FORM_FAT) {
		uint8_t out[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
		ssize_t n = fatelf_header_encode(&s->plan.out, out, sizeof(out));
		if (n < 0)
			return fatelf_diag_set(d, (int)n, -1, "cannot encode the output header");
		r = emit(s, out, (size_t)n);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "cannot write the output: %s", fatelf_strerror(r));
	}
	return 0;
}

/* Where the current record goes in the output, -1 when it is dropped. */
static int slot_of(const fatelf_stream *s, unsigned index)
{
	for (unsigned k = 0; k < s->plan.nkept; k++)
		if (s->plan.in_index[k] == index)
			return (int)k;
	return -1;
}

/* Copies the part of [rel, rel+len) that falls in the capture window. */
static void capture(fatelf_stream *s, uint64_t rel, const uint8_t *p, size_t len)
{
	if (rel < EHDR_CAPTURE) {
		size_t n = (size_t)MIN((uint64_t)len, EHDR_CAPTURE - rel);
		memcpy(s->ehdr + rel, p, n);
		s->ehdr_len = MAX(s->ehdr_len, (size_t)rel + n);
	}
	if (s->ph) {
		uint64_t lo = MAX(rel, s->ph_off), hi = MIN(rel + len, s->ph_off + s->ph_len);
		if (lo < hi)
			memcpy(s->ph + (lo - s->ph_off), p + (lo - rel), (size_t)(hi - lo));
	}
}

/* Once the ELF header is in, set up the program header window. Anything
 * out of bounds is left for fatelf_elf_inspect to report. */
static int setup_ph(fatelf_stream *s, const fatelf_record *rec)
{
	const uint8_t *e = s->ehdr;
	int msb = e[5] == FATELF_DATA2MSB;
	uint64_t phoff;
	uint16_t phentsize, phnum;

	s->ph_set = true;
	if (memcmp(e, "\177ELF", 4) != 0 || (e[4] != FATELF_CLASS32 && e[4] != FATELF_CLASS64))
		return 0;
	if (e[4] == FATELF_CLASS64) {
		if (s->ehdr_len < 64)
			return 0;
		phoff = get_e64(e + 32, msb);
		phentsize = get_e16(e + 54, msb);
		phnum = get_e16(e + 56, msb);
	} else {
		if (s->ehdr_len < 52)
			return 0;
		phoff = get_e32(e + 28, msb);
		phentsize = get_e16(e + 42, msb);
		phnum = get_e16(e + 44, msb);
	}
	uint64_t len = (uint64_t)phentsize * phnum;
	if (phnum == 0 || phnum == 0xffff || len > PH_CAPTURE_MAX || phoff > rec->size ||
	    len > rec->size - phoff)
		return 0;
	s->ph = malloc((size_t)len ? (size_t)len : 1);
	if (!s->ph)
		return -ENOMEM;
	s->ph_off = phoff;
	s->ph_len = (size_t)len;
	/* The part of the table that already went by sits in the ELF header capture. */
	if (phoff < s->ehdr_len) {
		size_t n = (size_t)MIN((uint64_t)s->ehdr_len - phoff, len);
		memcpy(s->ph, s->ehdr + phoff, n);
	}
	return 0;
}

/* The current record has been read whole: validate its ELF. */
static int record_done(fatelf_stream *s, unsigned index, fatelf_diag *d)
{
	const fatelf_record *rec = &s->hdr.records[index];
	fatelf_reader src;
	fatelf_elfinfo info;
	char name[FATELF_TARGET_NAME_MAX];
	int r;

	memset(&src, 0, sizeof(src));
	src.pread = capture_pread;
	src.size = rec->size;
	src.fd = -1;
	src.mem = (const uint8_t *)s;
	r = fatelf_record_check_elf(&src, 0, rec, index, &info, d);
	if (r < 0)
		return r;
	fatelf_target_format(&rec->target, name);
	if (info.max_align > FATELF_MIN_ALIGN && (info.max_align & (info.max_align - 1)) == 0 &&
	    rec->offset % info.max_align != 0) {
		char msg[256];
		snprintf(msg, sizeof(msg),
			 "record %u (%s): offset 0x%llx is aligned below its p_align 0x%llx",
			 index, name, (unsigned long long)rec->offset,
			 (unsigned long long)info.max_align);
		warn(s, FATELF_W_UNDER_ALIGNED, (int)index, msg);
	}
	free(s->ph);
	s->ph = NULL;
	s->ph_len = 0;
	s->ph_set = false;
	s->ehdr_len = 0;
	return 0;
}

static int push_body(fatelf_stream *s, const uint8_t *p, size_t len, fatelf_diag *d)
{
	int r;

	while (len > 0) {
		if (s->cur >= s->hdr.nrecords) {
			s->pos += len; /* trailing bytes: not part of any record */
			return 0;
		}
		unsigned index = s->order[s->cur];
		const fatelf_record *rec = &s->hdr.records[index];

		if (s->pos < rec->offset) { /* padding before the record */
			size_t n = (size_t)MIN((uint64_t)len, rec->offset - s->pos);
			s->pos += n;
			p += n;
			len -= n;
			continue;
		}
		uint64_t rel = s->pos - rec->offset;
		if (rel == 0) {
			s->cur_slot = slot_of(s, index);
			if (s->cur_slot >= 0 && s->plan.form == FATELF_FORM_FAT) {
				r = emit_zeros(s, s->plan.out.records[s->plan.out_index[s->cur_slot]].offset);
				if (r < 0)
					return fatelf_diag_set(d, r, -1, "cannot write the output: %s",
							       fatelf_strerror(r));
			}
		}
		size_t n = (size_t)MIN((uint64_t)len, rec->size - rel);
		capture(s, rel, p, n);
		if (!s->ph_set && s->ehdr_len >= MIN((uint64_t)EHDR_CAPTURE, rec->size)) {
			r = setup_ph(s, rec);
			if (r < 0)
				return fatelf_diag_oom(d);
			/* The table may start inside this very chunk. */
			capture(s, rel, p, n);
		}
		if (s->cur_slot >= 0) {
			r = emit(s, p, n);
			if (r < 0)
				return fatelf_diag_set(d, r, -1, "cannot write the output: %s",
						       fatelf_strerror(r));
		}
		s->pos += n;
		p += n;
		len -= n;
		if (rel + n == rec->size) {
			r = record_done(s, index, d);
			if (r < 0)
				return r;
			s->cur++;
			s->cur_slot = -1;
		}
	}
	return 0;
}

int fatelf_stream_push(fatelf_stream *s, const void *buf, size_t len, fatelf_diag *d)
{
	const uint8_t *p = buf;
	int r;

	if (s->err)
		return fatelf_diag_set(d, s->err, -1, "%s", fatelf_diag_text(NULL, s->err));
	if (s->finished)
		return fail(s, fatelf_diag_set(d, -FATELF_E_STREAM_STATE, -1,
					       "bytes pushed after the end of the input"));
	if (s->o.input_size != UINT64_MAX && len > s->o.input_size - s->pos)
		return fail(s, fatelf_diag_set(d, -FATELF_E_INVALID, -1,
					       "input is longer than its declared %llu bytes",
					       (unsigned long long)s->o.input_size));
	while (!s->have_table && len > 0) {
		size_t n = MIN(len, s->table_need - s->table_len);
		memcpy(s->table + s->table_len, p, n);
		s->table_len += n;
		s->pos += n;
		p += n;
		len -= n;
		if (s->table_len < s->table_need)
			return 0;
		if (s->table_need == FATELF_HEADER_SIZE) {
			/* Magic, version and count first: they say how long the table is. */
			r = fatelf_header_decode(s->table, s->table_len, &s->hdr, d);
			if (r < 0 && r != -FATELF_E_TABLE_TRUNCATED)
				return fail(s, r);
			fatelf_diag_clear(d); /* a short table is expected here, not an error */
			s->table_need = (size_t)FATELF_TABLE_SIZE(s->table[6]);
			if (s->table_len < s->table_need)
				continue;
		}
		r = table_done(s, d);
		if (r < 0)
			return fail(s, r);
	}
	if (len == 0)
		return 0;
	r = push_body(s, p, len, d);
	if (r < 0)
		return fail(s, r);
	return 0;
}

int fatelf_stream_finish(fatelf_stream *s, fatelf_diag *d)
{
	int r;

	if (s->err)
		return fatelf_diag_set(d, s->err, -1, "%s", fatelf_diag_text(NULL, s->err));
	if (s->finished)
		return fail(s, fatelf_diag_set(d, -FATELF_E_STREAM_STATE, -1, "stream already finished"));
	s->finished = true;
	if (!s->have_table) {
		if (s->table_len < FATELF_HEADER_SIZE)
			r = fatelf_header_decode(s->table, s->table_len, &s->hdr, d);
		else
			r = fatelf_diag_set(d, -FATELF_E_TABLE_TRUNCATED, -1,
					    "record table of %u records needs %zu bytes, input has %zu",
					    s->table[6], s->table_need, s->table_len);
		return fail(s, r);
	}
	if (s->o.input_size != UINT64_MAX && s->pos != s->o.input_size)
		return fail(s, fatelf_diag_set(d, -FATELF_E_STREAM_TRUNCATED, -1,
					       "input ended after %llu of its %llu bytes",
					       (unsigned long long)s->pos,
					       (unsigned long long)s->o.input_size));
	if (s->cur < s->hdr.nrecords) {
		/* The same verdict a seekable reader gives a file of this size. */
		r = fatelf_validate_table(&s->hdr, s->pos, d);
		if (r == 0)
			r = fatelf_diag_set(d, -FATELF_E_STREAM_TRUNCATED, s->order[s->cur],
					    "input ended before record %u was complete",
					    s->order[s->cur]);
		return fail(s, r);
	}
	if (s->pos > s->max_end) {
		char msg[128];
		snprintf(msg, sizeof(msg), "%llu bytes after the last record are ignored",
			 (unsigned long long)(s->pos - s->max_end));
		warn(s, FATELF_W_TRAILING, -1, msg);
	}
	if (s->out_pos != s->plan.out_size)
		return fail(s, fatelf_diag_set(d, -EIO, -1, "output is %llu bytes, expected %llu",
					       (unsigned long long)s->out_pos,
					       (unsigned long long)s->plan.out_size));
	return 0;
}
