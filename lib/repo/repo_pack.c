/*
 * Pack lists (doc/repository.md, "Pack lists") and the frames of FatELF
 * files. A pack list is text, one line a fact, in one canonical form:
 *
 *   fatelf-pack 1
 *   object <sha256> <size> <compressed size>     (by sha256, each once)
 *   frame <entry index> <sha256>                 (by entry, each once)
 *
 * It is parsed strictly, in place, with no allocation but the two
 * arrays, sized from a first count of the lines.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashset.h"
#include "hex.h"
#include "macro.h"
#include "repo.h"
#include "text.h"

#define PACK_MAGIC "fatelf-pack 1\n"

static int frame_cmp(const void *pa, const void *pb)
{
	const fatelf_repo_frame *a = pa, *b = pb;

	return a->entry < b->entry ? -1 : a->entry > b->entry;
}

fatelf_repo_pack *fatelf_repo_pack_free(fatelf_repo_pack *p)
{
	if (p) {
		free(p->objects);
		free(p->frames);
		free(p);
	}
	return NULL;
}

const fatelf_repo_object *fatelf_repo_pack_object(const fatelf_repo_pack *p, const uint8_t sha[32])
{
	return p->nobjects ? bsearch(sha, p->objects, p->nobjects, sizeof(*p->objects), digest_cmp) : NULL;
}

const fatelf_repo_frame *fatelf_repo_pack_frame(const fatelf_repo_pack *p, uint32_t entry)
{
	fatelf_repo_frame key = { .entry = entry };

	return p->nframes ? bsearch(&key, p->frames, p->nframes, sizeof(*p->frames), frame_cmp) : NULL;
}

struct lex {
	const char *s, *end;
	size_t line;
	fatelf_diag *d;
};

static int __attribute__((format(printf, 2, 3))) lex_fail(struct lex *x, const char *fmt, ...)
{
	char rule[sizeof(((fatelf_diag *)0)->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	return fatelf_diag_set(x->d, -FATELF_E_REPO_PACK, -1, "pack list line %zu: %s", x->line, rule);
}

/* A word ended by sep ('\n' or ' '), which is consumed. */
static int word(struct lex *x, char sep, const char **ret, size_t *ret_len)
{
	const char *p = x->s;

	while (p < x->end && *p != ' ' && *p != '\n')
		p++;
	if (p == x->end)
		return lex_fail(x, "ends without a newline");
	if (*p != sep)
		return lex_fail(x, sep == ' ' ? "has too few fields" : "has too many fields");
	*ret = x->s;
	*ret_len = (size_t)(p - x->s);
	x->s = p + 1;
	return 0;
}

/* A decimal number with no leading zero, at most max. */
static int number(struct lex *x, char sep, const char *what, uint64_t max, uint64_t *ret)
{
	const char *w;
	size_t n;
	uint64_t v = 0;
	int r = word(x, sep, &w, &n);

	if (r < 0)
		return r;
	if (n == 0 || n > 20 || (n > 1 && w[0] == '0'))
		return lex_fail(x, "%s is not a decimal number", what);
	for (size_t i = 0; i < n; i++) {
		if (w[i] < '0' || w[i] > '9')
			return lex_fail(x, "%s is not a decimal number", what);
		if (v > (max - (uint64_t)(w[i] - '0')) / 10)
			return lex_fail(x, "%s is larger than %" PRIu64, what, max);
		v = v * 10 + (uint64_t)(w[i] - '0');
	}
	*ret = v;
	return 0;
}

static int sha(struct lex *x, char sep, uint8_t out[32])
{
	const char *w;
	size_t n;
	int r = word(x, sep, &w, &n);

	if (r < 0)
		return r;
	if (n != 64 || fatelf_unhex_lower(w, out, 32) < 0)
		return lex_fail(x, "a SHA-256 is 64 lower-case hex digits");
	return 0;
}

int fatelf_repo_pack_parse(const void *text, size_t len, fatelf_repo_pack **ret, fatelf_diag *d)
{
	struct lex x = { .s = text, .end = (const char *)text + len, .line = 1, .d = d };
	_cleanup_repo_pack_ fatelf_repo_pack *p = NULL;
	size_t lines = 0;
	int r;

	if (len > FATELF_REPO_PACK_MAX)
		return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1, "pack list is %zu bytes, the limit is %u",
				       len, FATELF_REPO_PACK_MAX);
	if (len < strlen(PACK_MAGIC) || memcmp(text, PACK_MAGIC, strlen(PACK_MAGIC)) != 0)
		return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1, "pack list does not start with '%.*s'",
				       (int)strlen(PACK_MAGIC) - 1, PACK_MAGIC);
	x.s += strlen(PACK_MAGIC);
	/* Every line ends in a newline: a slot is taken only for a line that
	 * is whole. */
	if (((const char *)text)[len - 1] != '\n')
		return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1, "pack list does not end with a newline");
	for (const char *q = x.s; q < x.end; q++)
		lines += *q == '\n';
	p = calloc(1, sizeof(*p));
	if (!p)
		return fatelf_diag_oom(d);
	if (lines > 0) {
		p->objects = calloc(lines, sizeof(*p->objects));
		p->frames = calloc(lines, sizeof(*p->frames));
		if (!p->objects || !p->frames)
			return fatelf_diag_oom(d);
	}
	while (x.s < x.end) {
		const char *kw;
		size_t kn;

		x.line++;
		r = word(&x, ' ', &kw, &kn);
		if (r < 0)
			return r;
		if (kn == 6 && memcmp(kw, "object", 6) == 0) {
			fatelf_repo_object *o = &p->objects[p->nobjects];

			if (p->nframes > 0)
				return lex_fail(&x, "an object after a frame");
			if ((r = sha(&x, ' ', o->sha256)) < 0 ||
			    (r = number(&x, ' ', "the size", INT64_MAX, &o->size)) < 0 ||
			    (r = number(&x, '\n', "the compressed size", INT64_MAX, &o->csize)) < 0)
				return r;
			if (p->nobjects > 0 && memcmp(o[-1].sha256, o->sha256, 32) >= 0)
				return lex_fail(&x, "objects are not sorted by SHA-256, each once");
			p->nobjects++;
		} else if (kn == 5 && memcmp(kw, "frame", 5) == 0) {
			fatelf_repo_frame *f = &p->frames[p->nframes];
			uint64_t entry;

			if ((r = number(&x, ' ', "the entry", UINT32_MAX, &entry)) < 0 ||
			    (r = sha(&x, '\n', f->sha256)) < 0)
				return r;
			f->entry = (uint32_t)entry;
			if (p->nframes > 0 && f[-1].entry >= f->entry)
				return lex_fail(&x, "frames are not sorted by entry, each once");
			p->nframes++;
		} else
			return lex_fail(&x, "unknown line (expected 'object' or 'frame')");
	}
	*ret = TAKE_PTR(p);
	return 0;
}

int fatelf_repo_pack_serialize(fatelf_repo_pack *p, char **ret, size_t *ret_len, fatelf_diag *d)
{
	size_t cap = strlen(PACK_MAGIC) + p->nobjects * 120 + p->nframes * 90 + 1, len;
	char *s = malloc(cap), hex[65];

	if (!s)
		return fatelf_diag_oom(d);
	if (p->nobjects > 1)
		qsort(p->objects, p->nobjects, sizeof(*p->objects), digest_cmp);
	if (p->nframes > 1)
		qsort(p->frames, p->nframes, sizeof(*p->frames), frame_cmp);
	for (size_t i = 0; i < p->nobjects; i++)
		if (p->objects[i].size > INT64_MAX || p->objects[i].csize > INT64_MAX) {
			free(s);
			return fatelf_diag_set(d, -EINVAL, -1, "pack list: a size past 2^63-1");
		}
	for (size_t i = 1; i < p->nframes; i++)
		if (p->frames[i - 1].entry == p->frames[i].entry) {
			free(s);
			return fatelf_diag_set(d, -EINVAL, -1, "pack list: a frame listed twice");
		}
	len = (size_t)snprintf(s, cap, "%s", PACK_MAGIC);
	for (size_t i = 0; i < p->nobjects; i++) {
		if (i > 0 && memcmp(p->objects[i - 1].sha256, p->objects[i].sha256, 32) == 0) {
			free(s);
			return fatelf_diag_set(d, -EINVAL, -1, "pack list: an object listed twice");
		}
		fatelf_hex(p->objects[i].sha256, 32, hex);
		len += (size_t)snprintf(s + len, cap - len, "object %s %" PRIu64 " %" PRIu64 "\n", hex,
					p->objects[i].size, p->objects[i].csize);
	}
	for (size_t i = 0; i < p->nframes; i++) {
		fatelf_hex(p->frames[i].sha256, 32, hex);
		len += (size_t)snprintf(s + len, cap - len, "frame %" PRIu32 " %s\n", p->frames[i].entry, hex);
	}
	*ret = s;
	*ret_len = len;
	return 0;
}

static int need(const fatelf_repo_pack *p, const fatelf_bundle_entry *e, const uint8_t sha[32], int record,
		fatelf_diag *d)
{
	char hex[65], q[FATELF_TEXT_QUOTE_BUF];

	if (fatelf_repo_pack_object(p, sha))
		return 0;
	fatelf_hex(sha, 32, hex);
	fatelf_text_quote(e->path, q);
	if (record >= 0)
		fatelf_diag_set(d, -FATELF_E_REPO_PACK, record, "entry '%s': record %d's object %s is not in the pack list",
				q, record, hex);
	else
		fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1, "entry '%s': object %s is not in the pack list", q, hex);
	fatelf_diag_names(d, q);
	return -FATELF_E_REPO_PACK;
}

int fatelf_repo_pack_check(const fatelf_repo_pack *p, const fatelf_manifest *m, fatelf_diag *d)
{
	int r;

	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		if (e->type != FATELF_ENTRY_FILE)
			continue;
		if (e->kind == FATELF_KIND_FATELF) {
			for (unsigned k = 0; k < e->nrecords; k++)
				if ((r = need(p, e, e->records[k].sha256, (int)k, d)) < 0)
					return r;
		} else if ((r = need(p, e, e->sha256, -1, d)) < 0)
			return r;
	}
	for (size_t i = 0; i < p->nframes; i++) {
		const fatelf_repo_frame *f = &p->frames[i];

		if (f->entry >= m->nentries || m->entries[f->entry].type != FATELF_ENTRY_FILE ||
		    m->entries[f->entry].kind != FATELF_KIND_FATELF)
			return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1,
					       "pack list: frame of entry %" PRIu32 ", which is not a FatELF file",
					       f->entry);
		if (!fatelf_repo_pack_object(p, f->sha256))
			return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1,
					       "pack list: the frame of entry %" PRIu32 " is not among its objects",
					       f->entry);
	}
	return 0;
}

/* Frames */

uint64_t fatelf_repo_frame_size(const fatelf_bundle_entry *e)
{
	uint64_t n = e->size;

	for (unsigned k = 0; k < e->nrecords; k++)
		n -= e->records[k].size;
	return n;
}

int fatelf_repo_frame_canonical(const fatelf_bundle_entry *e, int (*data)(void *ctx, const void *buf, size_t len),
				void *ctx)
{
	static const uint8_t zeros[4096];
	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	fatelf_header hdr;
	ssize_t n;
	uint64_t left;
	int r;

	if (e->nrecords == 0 || e->nrecords > FATELF_MAX_RECORDS)
		return -EINVAL;
	fatelf_header_init(&hdr);
	hdr.nrecords = (uint8_t)e->nrecords;
	for (unsigned k = 0; k < e->nrecords; k++) {
		hdr.records[k].target = e->records[k].target;
		hdr.records[k].offset = e->records[k].offset;
		hdr.records[k].size = e->records[k].size;
	}
	n = fatelf_header_encode(&hdr, table, sizeof(table));
	if (n < 0)
		return (int)n;
	left = fatelf_repo_frame_size(e);
	if ((uint64_t)n > left)
		return -EINVAL;
	r = data(ctx, table, (size_t)n);
	if (r < 0)
		return r;
	left -= (uint64_t)n;
	while (left > 0) {
		size_t k = (size_t)MIN(left, (uint64_t)sizeof(zeros));

		r = data(ctx, zeros, k);
		if (r < 0)
			return r;
		left -= k;
	}
	return 0;
}

static int hash_piece(void *ctx, const void *buf, size_t len)
{
	fatelf_sha256_update(ctx, buf, len);
	return 0;
}

int fatelf_repo_frame_canonical_sha(const fatelf_bundle_entry *e, uint8_t ret[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();
	int r;

	if (!h)
		return -ENOMEM;
	r = fatelf_repo_frame_canonical(e, hash_piece, h);
	if (r == 0)
		fatelf_sha256_final(h, ret);
	fatelf_sha256_free(h);
	return r;
}
