/*
 * A package version read from a repository's objects instead of a
 * bundle (doc/repository.md): the same consumer (fatelf_bundle_reader_ops),
 * the same promises. The manifest's signature is checked by the bundle
 * reader's rules before anything in it is trusted; then each entry, in
 * manifest order, gets begin, its bytes and end. A file's bytes are its
 * object's; a FatELF file's are what the consumer's keep set makes of
 * it: the kept records' objects laid out by the one plan every thinner
 * uses (fatelf_plan_make), or, kept whole, its frame and every record
 * rebuilt to the file's SHA-256. Only the objects an entry's form needs
 * are asked of the source, and each is checked against its hash, which
 * the signed manifest pins, before the read returns 0. An entry that is
 * one object whole may instead be a clone the consumer makes of a copy
 * the source has on the machine; that clone is hashed in its place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "macro.h"
#include "repo.h"
#include "text.h"

#define CLONE_CHECK_BUF (256u << 10)

struct rr {
	const fatelf_bundle_reader_ops *ops;
	const fatelf_repo_source *src;
	const fatelf_repo_pack *pack;
	const fatelf_manifest *m;
	const fatelf_bundle_entry *e;
	fatelf_diag *d;
	fatelf_sha256 *h;       /* the whole file, when it is rebuilt */
	uint64_t out;           /* bytes handed on for the entry */
	int consumer_err;
};

static int to_consumer(void *ctx, const void *buf, size_t len)
{
	struct rr *r = ctx;
	int q;

	if (r->h)
		fatelf_sha256_update(r->h, buf, len);
	r->out += len;
	if (!r->ops->data || len == 0)
		return 0;
	q = r->ops->data(r->ops->ctx, r->e, buf, len);
	if (q < 0)
		r->consumer_err = q;
	return q;
}

static int zeros_to_consumer(struct rr *r, uint64_t n)
{
	static const uint8_t zeros[4096];

	while (n > 0) {
		size_t k = (size_t)MIN(n, (uint64_t)sizeof(zeros));
		int q = to_consumer(r, zeros, k);

		if (q < 0)
			return q;
		n -= k;
	}
	return 0;
}

static int object(struct rr *r, const uint8_t sha[32], uint64_t size)
{
	return r->src->object(r->src->ctx, sha, size, to_consumer, r, r->d);
}

/* Whether the consumer's copy fd is exactly the size bytes that hash to
 * sha: 0, -ESTALE when it is not, or -errno when it cannot be read. */
static int copy_is(int fd, const uint8_t sha[32], uint64_t size)
{
	_cleanup_free_ uint8_t *buf = NULL;
	fatelf_sha256 *h;
	uint8_t got[32];
	struct stat st;
	uint64_t off = 0;
	int q = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		return -ESTALE;
	buf = malloc(CLONE_CHECK_BUF);
	h = fatelf_sha256_new();
	if (!buf || !h) {
		fatelf_sha256_free(h);
		return -ENOMEM;
	}
	while (off < size) {
		ssize_t n = pread_all(fd, buf, (size_t)MIN((uint64_t)CLONE_CHECK_BUF, size - off), off);

		if (n <= 0) {
			q = n < 0 ? (int)n : -ESTALE;
			break;
		}
		fatelf_sha256_update(h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	fatelf_sha256_final(h, got);
	fatelf_sha256_free(h);
	if (q == 0 && memcmp(got, sha, 32) != 0)
		q = -ESTALE;
	return q;
}

/*
 * The entry's whole output is object sha: offered to the consumer as a
 * clone of a copy on the machine, when the source knows one. 1 when the
 * consumer's clone holds the object's bytes (checked here, on the
 * consumer's own copy: the file it came from may change after the clone
 * without touching it), 0 when the bytes must come through object, or an
 * error.
 */
static int clone_local(struct rr *r, const uint8_t sha[32], uint64_t size)
{
	_cleanup_close_ int from = -1, copy = -1;
	int q;

	if (!r->ops->clone || !r->src->local || size == 0 || r->out != 0)
		return 0;
	from = r->src->local(r->src->ctx, sha, size);
	if (from < 0)
		return 0;
	copy = r->ops->clone(r->ops->ctx, r->e, from, size, r->d);
	if (copy < 0) {
		fatelf_diag_clear(r->d);
		return 0;
	}
	q = copy_is(copy, sha, size);
	if (q == 0) {
		r->out = size;
		if (r->src->cloned)
			r->src->cloned(r->src->ctx, sha, size);
		return 1;
	}
	/* not the object's bytes (or unreadable): dropped, then read as
	 * though no copy had been offered */
	q = r->ops->clone(r->ops->ctx, r->e, -1, 0, r->d);
	return q < 0 ? q : 0;
}

/* An entry whose output is one object, whole. */
static int one_object(struct rr *r, const uint8_t sha[32], uint64_t size)
{
	int q = clone_local(r, sha, size);

	if (q != 0)
		return q < 0 ? q : 0;
	return object(r, sha, size);
}

/* The header the manifest gives for a FatELF entry. */
static void entry_header(const fatelf_bundle_entry *e, fatelf_header *hdr)
{
	fatelf_header_init(hdr);
	hdr->nrecords = (uint8_t)e->nrecords;
	for (unsigned i = 0; i < e->nrecords; i++) {
		hdr->records[i].target = e->records[i].target;
		hdr->records[i].offset = e->records[i].offset;
		hdr->records[i].size = e->records[i].size;
	}
}

/* The rebuild of a file as shipped: its frame streams by, and each
 * record's object is put in as the frame reaches the record's offset. */
struct wctx {
	struct rr *r;
	unsigned order[FATELF_MAX_RECORDS];
	unsigned next;
	uint64_t at;            /* offset in the file */
};

/* Puts in every record that starts at the offset reached. */
static int records_here(struct wctx *w)
{
	const fatelf_bundle_entry *e = w->r->e;

	while (w->next < e->nrecords && e->records[w->order[w->next]].offset == w->at) {
		const fatelf_bundle_record *rec = &e->records[w->order[w->next]];
		int q = object(w->r, rec->sha256, rec->size);

		if (q < 0)
			return q;
		w->at += rec->size;
		w->next++;
	}
	return 0;
}

static int frame_piece(void *ctx, const void *buf, size_t len)
{
	struct wctx *w = ctx;
	const fatelf_bundle_entry *e = w->r->e;
	const uint8_t *p = buf;

	while (len > 0) {
		uint64_t end = w->next < e->nrecords ? e->records[w->order[w->next]].offset : e->size;
		size_t n;
		int q;

		if (end <= w->at)
			return fatelf_diag_set(w->r->d, -FATELF_E_REPO_OBJECT, -1, "the frame is longer than the file's gaps");
		n = (size_t)MIN((uint64_t)len, end - w->at);
		if ((q = to_consumer(w->r, p, n)) < 0)
			return q;
		w->at += n;
		p += n;
		len -= n;
		if ((q = records_here(w)) < 0)
			return q;
	}
	return 0;
}

static int whole(struct rr *r, const fatelf_header *hdr)
{
	const fatelf_bundle_entry *e = r->e;
	const fatelf_repo_frame *fr = r->pack ? fatelf_repo_pack_frame(r->pack, (uint32_t)(e - r->m->entries)) : NULL;
	struct wctx w = { .r = r };
	uint8_t sha[32];
	int q;

	(void)hdr;
	for (unsigned i = 0; i < e->nrecords; i++) {
		unsigned j = i;

		while (j > 0 && e->records[w.order[j - 1]].offset > e->records[i].offset) {
			w.order[j] = w.order[j - 1];
			j--;
		}
		w.order[j] = i;
	}
	r->h = fatelf_sha256_new();
	if (!r->h)
		return fatelf_diag_oom(r->d);
	if (fr)
		q = r->src->object(r->src->ctx, fr->sha256, fatelf_repo_frame_size(e), frame_piece, &w, r->d);
	else
		q = fatelf_repo_frame_canonical(e, frame_piece, &w);
	if (q == 0 && w.at != e->size)
		q = fatelf_diag_set(r->d, -FATELF_E_REPO_OBJECT, -1, "the frame is shorter than the file's gaps");
	if (q == 0) {
		fatelf_sha256_final(r->h, sha);
		if (memcmp(sha, e->sha256, 32) != 0) {
			char qn[FATELF_TEXT_QUOTE_BUF];

			q = fatelf_diag_set(r->d, -FATELF_E_HASH, -1,
					    "entry '%s': its frame and records do not rebuild the file",
					    fatelf_text_quote(e->path, qn));
		}
	}
	r->h = fatelf_sha256_free(r->h);
	return q;
}

/* The kept records, laid out as the plan says. */
static int thinned(struct rr *r, const fatelf_header *hdr, const fatelf_keepset *keep, int form)
{
	const fatelf_bundle_entry *e = r->e;
	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	fatelf_plan plan;
	ssize_t n;
	int q;

	q = fatelf_plan_make(hdr, keep, form, &plan, r->d);
	if (q < 0)
		return q;
	if (plan.form == FATELF_FORM_ELF)
		return one_object(r, e->records[plan.in_index[0]].sha256, e->records[plan.in_index[0]].size);
	n = fatelf_header_encode(&plan.out, table, sizeof(table));
	if (n < 0)
		return fatelf_diag_set(r->d, (int)n, -1, "%s", fatelf_strerror((int)n));
	if ((q = to_consumer(r, table, (size_t)n)) < 0)
		return q;
	for (unsigned k = 0; k < plan.nkept; k++) {
		const fatelf_bundle_record *rec = &e->records[plan.in_index[k]];
		uint64_t off = plan.out.records[plan.out_index[k]].offset;

		if (off < r->out)
			return fatelf_diag_set(r->d, -FATELF_E_RECORDS, -1, "the thinned layout overlaps");
		if ((q = zeros_to_consumer(r, off - r->out)) < 0 || (q = object(r, rec->sha256, rec->size)) < 0)
			return q;
	}
	if (r->out != plan.out_size)
		return zeros_to_consumer(r, plan.out_size - r->out);
	return 0;
}

static int fat_file(struct rr *r)
{
	fatelf_header hdr;
	fatelf_keepset keep;
	int form = FATELF_FORM_AUTO, q;

	entry_header(r->e, &hdr);
	fatelf_keep_clear(&keep);
	if (r->ops->select) {
		q = r->ops->select(r->ops->ctx, r->e, &hdr, &keep, &form, r->d);
		if (q < 0)
			return q;
	}
	if (fatelf_keep_count(&keep) == 0)
		return whole(r, &hdr);
	return thinned(r, &hdr, &keep, form);
}

static int entry(struct rr *r, const fatelf_bundle_entry *e)
{
	int q = 0, b;

	r->e = e;
	r->out = 0;
	r->consumer_err = 0;
	b = r->ops->begin ? r->ops->begin(r->ops->ctx, e, r->d) : 0;
	if (b < 0)
		return b;
	if (b != FATELF_BUNDLE_SKIP && e->type == FATELF_ENTRY_FILE)
		q = e->kind == FATELF_KIND_FATELF ? fat_file(r) : one_object(r, e->sha256, e->size);
	if (q < 0 && r->consumer_err < 0)
		q = r->consumer_err;
	if (r->ops->end) {
		int k = r->ops->end(r->ops->ctx, e, q, r->d);

		if (q == 0 && k < 0)
			q = k;
	}
	return q;
}

int fatelf_repo_read(const void *manifest, size_t mlen, const char *sig, size_t slen, const fatelf_repo_pack *pack,
		     const fatelf_repo_source *src, const fatelf_bundle_read_opts *o,
		     const fatelf_bundle_reader_ops *ops, fatelf_diag *d)
{
	struct rr r = { .ops = ops, .src = src, .pack = pack, .d = d };
	fatelf_manifest *m = NULL;
	const fatelf_ms_pubkey *signer = NULL;
	int q;

	q = fatelf_bundle_check_manifest(o, manifest, mlen, sig, slen, &m, &signer, d);
	if (q < 0)
		return q;
	r.m = m;
	if (pack && (q = fatelf_repo_pack_check(pack, m, d)) < 0)
		goto out;
	if (ops->manifest && (q = ops->manifest(ops->ctx, m, signer, d)) < 0)
		goto out;
	for (size_t i = 0; i < m->nentries; i++) {
		q = entry(&r, &m->entries[i]);
		if (q < 0)
			goto out;
	}
	if (o->ret_manifest) {
		*o->ret_manifest = m;
		m = NULL;
	}
out:
	fatelf_manifest_free(m);
	return q;
}
