/*
 * The one-pass bundle reader: libarchive over any byte source, the
 * manifest and its signature first, then every member checked against
 * its manifest entry as it streams (type, size, SHA-256 of the file and
 * of each FatELF record, FatELF validation), with the kept bytes handed
 * to a consumer. Memory is the manifest plus fixed buffers.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bundle.h"
#include "hashq.h"
#include "macro.h"
#include "text.h"

#define SIG_MAX 8192

struct reader {
	struct archive *a;
	const fatelf_reader *src;
	int src_err;                    /* the source's own error, kept apart from libarchive's */
	const fatelf_bundle_read_opts *o;
	const fatelf_bundle_reader_ops *ops;
	fatelf_manifest *m;
	bool *seen;

	/* the file member being read */
	const fatelf_bundle_entry *e;
	fatelf_hashq *hashq;            /* SHA-256 on the other core */
	/* files whose digests are still being computed, oldest first */
	struct pending {
		const fatelf_bundle_entry *e;
		uint8_t order[FATELF_MAX_RECORDS];
	} pending[FATELF_HASHQ_PENDING];
	unsigned ptail, npending;
	bool digest_failed;             /* the error being returned is a digest's */
	uint64_t pos;
	uint8_t *rec_order;             /* e->records indexes by offset */
	fatelf_stream *stream;
	bool thinning;                  /* consumer gets the stream's output */
	uint8_t elf_head[64];
	int consumer_err;
	fatelf_diag *d;
};

static ssize_t src_read(struct archive *a, void *ctx, const void **buf)
{
	struct reader *r = ctx;
	ssize_t n = r->src->read(r->src->ctx, buf);

	if (n < 0) {
		r->src_err = (int)n;
		archive_set_error(a, (int)-n, "read error: %s", fatelf_strerror((int)n));
		return -1;
	}
	return n;
}

/* A libarchive failure: the source's errno when it was the cause. */
static int archive_fail(struct reader *r, const char *what)
{
	if (r->src_err)
		return fatelf_diag_set(r->d, r->src_err, -1, "%s: %s", what,
				       fatelf_strerror(r->src_err));
	const char *msg = archive_error_string(r->a);
	return fatelf_diag_set(r->d, -FATELF_E_ARCHIVE, -1, "%s: %s", what,
			       msg ? msg : "damaged or truncated archive");
}

/*
 * An error about one manifest entry (or one member, for a member no entry
 * lists): the message starts with "entry 'PATH': " and the diag's subject
 * is PATH, so that every layer above names the same entry as the message.
 */
static int __attribute__((format(printf, 5, 6)))
entry_fail(struct reader *r, const char *path, int code, int record, const char *fmt, ...)
{
	char rule[sizeof(r->d->msg)];
	va_list ap;

	if (!r->d)
		return code;
	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	fatelf_diag_set(r->d, code, record, "entry '%s': %s", path, rule);
	fatelf_diag_names(r->d, path);
	return code;
}

/* Reads a whole small member into a malloc'd buffer of at most max bytes. */
static int read_small(struct reader *r, struct archive_entry *ae, size_t max, int too_big,
		      const char *name, uint8_t **ret, size_t *ret_len)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0, cap;

	if (archive_entry_size_is_set(ae) && archive_entry_size(ae) > (la_int64_t)max)
		return fatelf_diag_set(r->d, too_big, -1, "%s is %lld bytes, more than the %zu allowed",
				       name, (long long)archive_entry_size(ae), max);
	cap = archive_entry_size_is_set(ae) ? (size_t)archive_entry_size(ae) + 1 : 65536;
	buf = malloc(cap);
	if (!buf)
		return fatelf_diag_oom(r->d);
	for (;;) {
		if (len == cap) {
			if (cap > max)
				return fatelf_diag_set(r->d, too_big, -1,
						       "%s is more than the %zu bytes allowed", name, max);
			cap = MIN(cap * 2, max + 1);
			uint8_t *nb = realloc(buf, cap);
			if (!nb)
				return fatelf_diag_oom(r->d);
			buf = nb;
		}
		la_ssize_t n = archive_read_data(r->a, buf + len, cap - len);
		if (n < 0)
			return archive_fail(r, name);
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return fatelf_diag_set(r->d, too_big, -1,
					       "%s is more than the %zu bytes allowed", name, max);
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

static const char *entry_type_name(int t)
{
	switch (t) {
	case FATELF_ENTRY_FILE:
		return "file";
	case FATELF_ENTRY_DIR:
		return "directory";
	case FATELF_ENTRY_SYMLINK:
		return "symlink";
	}
	return "unknown";
}

/* Stream output: the kept bytes of a FatELF being thinned. */
static int stream_write(void *ctx, const void *buf, size_t len)
{
	struct reader *r = ctx;

	if (!r->thinning || len == 0)
		return 0;
	int q = r->ops->data ? r->ops->data(r->ops->ctx, r->e, buf, len) : 0;
	if (q < 0)
		r->consumer_err = q;
	return q;
}

static int stream_select(void *ctx, const fatelf_header *hdr, fatelf_keepset *ret_keep,
			 int *ret_form, fatelf_diag *d)
{
	struct reader *r = ctx;
	const fatelf_bundle_entry *e = r->e;
	int q;

	/* The header must be the one the manifest describes. */
	if (hdr->nrecords != e->nrecords)
		return fatelf_diag_set(d, -FATELF_E_RECORDS, -1,
				       "the file has %u records, the manifest lists %u",
				       hdr->nrecords, e->nrecords);
	for (unsigned i = 0; i < e->nrecords; i++) {
		const fatelf_record *h = &hdr->records[i];
		const fatelf_bundle_record *b = &e->records[i];
		if (!fatelf_target_equal(&h->target, &b->target) || h->offset != b->offset ||
		    h->size != b->size) {
			char hn[FATELF_TARGET_NAME_MAX], bn[FATELF_TARGET_NAME_MAX];
			fatelf_target_format(&h->target, hn);
			fatelf_target_format(&b->target, bn);
			return fatelf_diag_set(d, -FATELF_E_RECORDS, (int)i,
					       "record %u is %s at 0x%llx (%llu bytes) in the file, "
					       "%s at 0x%llx (%llu bytes) in the manifest",
					       i, hn, (unsigned long long)h->offset,
					       (unsigned long long)h->size, bn,
					       (unsigned long long)b->offset, (unsigned long long)b->size);
		}
	}

	fatelf_keep_clear(ret_keep);
	*ret_form = FATELF_FORM_AUTO;
	if (r->ops->select) {
		q = r->ops->select(r->ops->ctx, e, hdr, ret_keep, ret_form, d);
		if (q < 0)
			return q;
	}
	r->thinning = fatelf_keep_count(ret_keep) > 0;
	if (!r->thinning) {
		/* As shipped: the stream only validates; the consumer gets the
		 * member's own bytes. */
		for (unsigned i = 0; i < hdr->nrecords; i++)
			fatelf_keep_add(ret_keep, i);
		*ret_form = FATELF_FORM_FAT;
	}
	return 0;
}

static int file_feed(struct reader *r, const uint8_t *p, size_t len)
{
	const fatelf_bundle_entry *e = r->e;
	int q;

	if (len > e->size - r->pos)
		return fatelf_diag_set(r->d, -FATELF_E_MEMBER_SIZE, -1,
				       "member holds more than the %llu bytes the manifest declares",
				       (unsigned long long)e->size);
	q = fatelf_hashq_feed(r->hashq, p, len);
	if (q < 0)
		return fatelf_diag_set(r->d, q, -1, "%s", fatelf_strerror(q));
	if (r->pos < sizeof(r->elf_head))
		memcpy(r->elf_head + r->pos, p, (size_t)MIN((uint64_t)len, sizeof(r->elf_head) - r->pos));
	if (e->kind == FATELF_KIND_FATELF) {
		q = fatelf_stream_push(r->stream, p, len, r->d);
		if (q < 0)
			return r->consumer_err ? r->consumer_err : q;
	}
	if (!r->thinning && r->ops->data) {
		q = r->ops->data(r->ops->ctx, e, p, len);
		if (q < 0)
			return fatelf_diag_set(r->d, q, -1, "%s", fatelf_strerror(q));
	}
	r->pos += len;
	return 0;
}

/* The first bytes of a plain ELF entry must name the manifest's target.
 * The rest of the image is pinned by the file's hash. */
static int check_plain_elf(struct reader *r)
{
	const fatelf_bundle_entry *e = r->e;
	const uint8_t *h = r->elf_head;
	fatelf_target t;
	char want[FATELF_TARGET_NAME_MAX], got[FATELF_TARGET_NAME_MAX];

	if (e->size < 20 || !fatelf_is_elf(h, 4))
		return fatelf_diag_set(r->d, -FATELF_E_RECORDS, -1,
				       "the manifest says ELF, the file is not one");
	t.word_size = h[4];
	t.byte_order = h[5];
	t.osabi = h[7];
	t.osabi_version = h[8];
	t.machine = h[5] == FATELF_DATA2MSB ? get_be16(h + 18) : get_le16(h + 18);
	if (!fatelf_target_equal(&t, &e->target)) {
		fatelf_target_format(&e->target, want);
		fatelf_target_format(&t, got);
		return fatelf_diag_set(r->d, -FATELF_E_RECORDS, -1,
				       "the manifest says ELF target %s, the file's header says %s",
				       want, got);
	}
	return 0;
}

/* Checks one file's digests against its entry. */
static int check_digests(struct reader *r, const struct pending *p, const fatelf_hash_result *h)
{
	const fatelf_bundle_entry *e = p->e;
	int q = 0;

	/* Each record's own hash first: it says which record was changed. */
	for (unsigned k = 0; e->kind == FATELF_KIND_FATELF && k < e->nrecords; k++) {
		const fatelf_bundle_record *b = &e->records[p->order[k]];
		if (memcmp(h->ranges[k], b->sha256, 32) != 0) {
			char name[FATELF_TARGET_NAME_MAX], hex[65];
			fatelf_target_format(&b->target, name);
			fatelf_hex(h->ranges[k], 32, hex);
			q = entry_fail(r, e->path, -FATELF_E_RECORD_HASH, p->order[k],
				       "record %u (%s): SHA-256 is %s, the manifest says otherwise",
				       p->order[k], name, hex);
			break;
		}
	}
	if (q == 0 && memcmp(h->file, e->sha256, 32) != 0) {
		char hex[65], want[65];
		fatelf_hex(h->file, 32, hex);
		fatelf_hex(e->sha256, 32, want);
		q = entry_fail(r, e->path, -FATELF_E_HASH, -1, "SHA-256 is %s, the manifest says %s",
			       hex, want);
	}
	if (q < 0)
		r->digest_failed = true;
	return q;
}

/* Checks the files whose digests are done (all of them, with wait), in
 * archive order, so the first bad file is the one reported. */
static int collect_digests(struct reader *r, bool wait)
{
	fatelf_hash_result *h = malloc(sizeof(*h));
	int q = 0;

	if (!h)
		return fatelf_diag_oom(r->d);
	while (q == 0 && r->npending > 0 && fatelf_hashq_collect(r->hashq, wait, h) == 1) {
		q = check_digests(r, &r->pending[r->ptail], h);
		r->ptail = (r->ptail + 1) % FATELF_HASHQ_PENDING;
		r->npending--;
	}
	free(h);
	return q;
}

/*
 * The checks that can be made as the member ends: its size, the FatELF
 * validation, a plain ELF's target. Its digests are checked later, by
 * collect_digests: the consumer commits nothing before the whole read
 * returned 0 anyway, and not waiting here keeps both cores busy.
 */
static int file_finish(struct reader *r)
{
	const fatelf_bundle_entry *e = r->e;
	int q;

	if (r->pos != e->size)
		return fatelf_diag_set(r->d, -FATELF_E_MEMBER_SIZE, -1,
				       "member holds %llu bytes, the manifest declares %llu",
				       (unsigned long long)r->pos, (unsigned long long)e->size);
	if (e->kind == FATELF_KIND_FATELF) {
		q = fatelf_stream_finish(r->stream, r->d);
		if (q < 0)
			return r->consumer_err ? r->consumer_err : q;
	} else if (e->kind == FATELF_KIND_ELF) {
		q = check_plain_elf(r);
		if (q < 0)
			return q;
	}
	/* Only a file that passed the checks above is queued for its digest
	 * verdict, so a file's own error is never overtaken by its hash. */
	q = fatelf_hashq_end(r->hashq);
	if (q < 0)
		return fatelf_diag_set(r->d, q, -1, "%s", fatelf_strerror(q));
	struct pending *p = &r->pending[(r->ptail + r->npending) % FATELF_HASHQ_PENDING];
	p->e = e;
	if (e->kind == FATELF_KIND_FATELF)
		memcpy(p->order, r->rec_order, e->nrecords);
	r->npending++;
	return collect_digests(r, false);
}

/* Reads the data of the current file member through file_feed. */
static int file_member(struct reader *r)
{
	const fatelf_bundle_entry *e = r->e;
	const void *buf;
	size_t len;
	la_int64_t off;
	int q;

	fatelf_hash_range ranges[FATELF_MAX_RECORDS];
	unsigned nranges = 0;

	r->pos = 0;
	r->thinning = false;
	r->consumer_err = 0;
	if (e->kind == FATELF_KIND_FATELF) {
		fatelf_stream_opts so = {
			.select = stream_select,
			.write = stream_write,
			.ctx = r,
			.input_size = e->size,
		};
		free(r->rec_order);
		r->rec_order = malloc(e->nrecords ? e->nrecords : 1);
		if (!r->rec_order)
			return fatelf_diag_oom(r->d);
		for (unsigned i = 0; i < e->nrecords; i++) {
			unsigned j = i;
			while (j > 0 && e->records[r->rec_order[j - 1]].offset > e->records[i].offset) {
				r->rec_order[j] = r->rec_order[j - 1];
				j--;
			}
			r->rec_order[j] = (uint8_t)i;
		}
		for (unsigned k = 0; k < e->nrecords; k++)
			ranges[nranges++] = (fatelf_hash_range){ e->records[r->rec_order[k]].offset,
								 e->records[r->rec_order[k]].size };
		r->stream = fatelf_stream_free(r->stream);
		q = fatelf_stream_new(&so, &r->stream);
		if (q < 0)
			return q;
	}

	if (r->npending == FATELF_HASHQ_PENDING) {
		/* Too many files in flight: wait for the oldest. */
		fatelf_hash_result *h = malloc(sizeof(*h));
		if (!h)
			return fatelf_diag_oom(r->d);
		q = fatelf_hashq_collect(r->hashq, true, h) == 1
			    ? check_digests(r, &r->pending[r->ptail], h) : -EIO;
		free(h);
		r->ptail = (r->ptail + 1) % FATELF_HASHQ_PENDING;
		r->npending--;
		if (q < 0)
			return q;
	}
	q = fatelf_hashq_begin(r->hashq, ranges, nranges);
	if (q < 0)
		return fatelf_diag_set(r->d, q, -1, "%s", fatelf_strerror(q));
	for (;;) {
		int ar = archive_read_data_block(r->a, &buf, &len, &off);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN)
			return archive_fail(r, "reading the member");
		if (off < 0 || (uint64_t)off < r->pos)
			return fatelf_diag_set(r->d, -FATELF_E_ARCHIVE, -1, "member data out of order");
		/* A sparse member's holes are zeros. */
		while (r->pos < (uint64_t)off) {
			static const uint8_t zeros[4096];
			size_t n = (size_t)MIN((uint64_t)off - r->pos, (uint64_t)sizeof(zeros));
			q = file_feed(r, zeros, n);
			if (q < 0)
				return q;
		}
		q = file_feed(r, buf, len);
		if (q < 0)
			return q;
	}
	return file_finish(r);
}

/* One payload member: check it against its entry and pass it on. */
static int payload_member(struct reader *r, struct archive_entry *ae, const char *name)
{
	char path[4200];
	size_t plen;
	char q_name[FATELF_TEXT_QUOTE_BUF], q_name2[FATELF_TEXT_QUOTE_BUF];
	int type, q;

	/* A member name comes from whoever made the archive: it is quoted
	 * so that no control byte of it reaches a terminal. */
	if (strncmp(name, FATELF_PAYLOAD_PREFIX, strlen(FATELF_PAYLOAD_PREFIX)) != 0)
		return entry_fail(r, fatelf_text_quote(name, q_name), -FATELF_E_MEMBER_UNKNOWN, -1,
				  "the member is not under " FATELF_PAYLOAD_PREFIX);
	plen = strlen(name + strlen(FATELF_PAYLOAD_PREFIX));
	if (plen >= sizeof(path))
		return entry_fail(r, fatelf_text_quote(name, q_name), -FATELF_E_MEMBER_UNKNOWN, -1,
				  "the member's name is too long");
	memcpy(path, name + strlen(FATELF_PAYLOAD_PREFIX), plen + 1);
	if (plen > 0 && path[plen - 1] == '/')
		path[--plen] = '\0'; /* directory members end in '/' */

	const fatelf_bundle_entry *e = fatelf_manifest_find(r->m, path);
	if (!e)
		return entry_fail(r, fatelf_text_quote(path, q_name), -FATELF_E_MEMBER_UNKNOWN, -1,
				  "member '%s' is not listed in the manifest",
				  fatelf_text_quote(name, q_name2));
	size_t idx = (size_t)(e - r->m->entries);
	/* Per-arch entries that share a path: one member each, in the
	 * manifest's order. */
	size_t nsame = fatelf_manifest_path_count(r->m, e);
	for (size_t k = 1; k < nsame && r->seen[idx]; k++)
		idx++;
	if (r->seen[idx] && nsame > 1)
		return entry_fail(r, e->path, -FATELF_E_MEMBER_DUPLICATE, -1,
				  "a member more than its %zu per-arch entries", nsame);
	if (r->seen[idx])
		return entry_fail(r, e->path, -FATELF_E_MEMBER_DUPLICATE, -1, "a second member");
	e = &r->m->entries[idx];
	r->seen[idx] = true;

	if (archive_entry_hardlink(ae))
		return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1, "hard links are not allowed");
	switch (archive_entry_filetype(ae)) {
	case AE_IFREG:
		type = FATELF_ENTRY_FILE;
		break;
	case AE_IFDIR:
		type = FATELF_ENTRY_DIR;
		break;
	case AE_IFLNK:
		type = FATELF_ENTRY_SYMLINK;
		break;
	case AE_IFCHR:
	case AE_IFBLK:
		return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1, "device nodes are not allowed");
	case AE_IFIFO:
		return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1, "FIFOs are not allowed");
	case AE_IFSOCK:
		return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1, "sockets are not allowed");
	default:
		return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1,
				  "member type %o is not allowed", (unsigned)archive_entry_filetype(ae));
	}
	if (type != e->type)
		return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1,
				  "the member is a %s, the manifest says %s", entry_type_name(type),
				  entry_type_name(e->type));
	if (type == FATELF_ENTRY_SYMLINK) {
		const char *t = archive_entry_symlink(ae);
		if (!t || strcmp(t, e->link_target) != 0)
			return entry_fail(r, e->path, -FATELF_E_MEMBER_TYPE, -1,
					  "the member's symlink target differs from the manifest's");
	}
	if (type == FATELF_ENTRY_FILE && archive_entry_size_is_set(ae) &&
	    (uint64_t)archive_entry_size(ae) != e->size)
		return entry_fail(r, e->path, -FATELF_E_MEMBER_SIZE, -1,
				  "the member is %lld bytes, the manifest declares %llu",
				  (long long)archive_entry_size(ae), (unsigned long long)e->size);

	r->e = e;
	bool skip = false;
	if (r->ops->begin) {
		q = r->ops->begin(r->ops->ctx, e, r->d);
		if (q < 0)
			return q;
		skip = q == FATELF_BUNDLE_SKIP && type == FATELF_ENTRY_FILE;
	}
	if (skip)
		q = archive_read_data_skip(r->a) == ARCHIVE_OK ? 0 : archive_fail(r, "skipping a member");
	else
		q = type == FATELF_ENTRY_FILE ? file_member(r) : 0;
	if (q < 0 && r->d && !r->d->subject[0]) {
		/* A rule of a lower layer, broken by this member: name it in
		 * front. An error with a subject is already about its own
		 * entry or path (a digest that finished late names an earlier
		 * member, never this one). */
		char rule[sizeof(r->d->msg)];
		memcpy(rule, r->d->msg, sizeof(rule));
		entry_fail(r, e->path, q, r->d->record, "%s", rule[0] ? rule : fatelf_strerror(q));
	}
	if (r->ops->end) {
		int q2 = r->ops->end(r->ops->ctx, e, q, r->d);
		if (q == 0 && q2 < 0)
			q = q2;
	}
	r->e = NULL;
	return q;
}

/*
 * A signature by a key that is not trusted proves nothing: with a
 * signature required it is refused, naming the key (the diag's subject is
 * its id); otherwise, when the caller asked, the bundle reads as unsigned
 * and the caller learns the key's id. A signature that a trusted key does
 * not verify is an attack on that vendor's name and is always refused.
 */
static int check_signature(const fatelf_bundle_read_opts *o, const uint8_t *manifest, size_t mlen,
			   const char *sig, size_t slen, const fatelf_ms_pubkey **ret_signer, fatelf_diag *d)
{
	char id[FATELF_MS_KEYID_SIZE * 2 + 1] = "";
	fatelf_ms_signature s;
	int q;

	q = fatelf_ms_verify(o->keys, o->nkeys, manifest, mlen, sig, slen, ret_signer, d);
	if (q != -FATELF_E_SIG_KEY)
		return q;
	/* verify parsed it already: this cannot fail. */
	if (fatelf_ms_sig_parse(sig, slen, &s, NULL) == 0)
		fatelf_ms_keyid_format(s.keyid, id);
	if (o->untrusted_keyid)
		memcpy(o->untrusted_keyid, id, sizeof(id));
	if (o->require_signature) {
		if (o->nkeys == 0)
			return fatelf_diag_set(d, -FATELF_E_SIG_KEY, -1,
					       "signed by key %s, but no trusted key is configured", id);
		return q;
	}
	if (!o->untrusted_keyid)
		return q;
	fatelf_diag_clear(d);
	return 0;
}

int fatelf_bundle_check_manifest(const fatelf_bundle_read_opts *o, const void *manifest, size_t mlen,
				 const char *sig, size_t slen, fatelf_manifest **ret,
				 const fatelf_ms_pubkey **ret_signer, fatelf_diag *d)
{
	fatelf_bundle_limits lim = o->limits;
	int q;

	*ret_signer = NULL;
	if (lim.max_path == 0 && lim.max_entries == 0 && lim.max_total == 0)
		fatelf_bundle_limits_default(&lim);
	if (mlen > fatelf_bundle_manifest_max(&lim))
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_TOO_BIG, -1, "the manifest is %zu bytes, the limit is %zu",
				       mlen, fatelf_bundle_manifest_max(&lim));
	/* The signature is checked before the manifest is trusted. */
	if (o->require_signature && !sig)
		return fatelf_diag_set(d, -FATELF_E_SIG_MISSING, -1,
				       "the bundle has no " FATELF_SIGNATURE_NAME " and a signature is required");
	if (sig && (o->nkeys > 0 || o->require_signature || o->untrusted_keyid)) {
		q = check_signature(o, manifest, mlen, sig, slen, ret_signer, d);
		if (q < 0)
			return q;
	}
	return fatelf_manifest_parse(manifest, mlen, &lim, ret, d);
}

static int read_all(struct reader *r)
{
	struct archive_entry *ae;
	_cleanup_free_ uint8_t *manifest = NULL, *sig = NULL;
	size_t mlen = 0, slen = 0;
	const fatelf_ms_pubkey *signer = NULL;
	fatelf_bundle_limits lim = r->o->limits;
	bool pending = false;
	char q_name[FATELF_TEXT_QUOTE_BUF];
	int ar, q;

	if (lim.max_path == 0 && lim.max_entries == 0 && lim.max_total == 0)
		fatelf_bundle_limits_default(&lim);

	ar = archive_read_next_header(r->a, &ae);
	if (ar == ARCHIVE_EOF)
		return fatelf_diag_set(r->d, -FATELF_E_ARCHIVE, -1, "the archive is empty");
	if (ar < ARCHIVE_WARN)
		return archive_fail(r, "reading the first member");
	if (strcmp(archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "", FATELF_MANIFEST_NAME) != 0 ||
	    archive_entry_filetype(ae) != AE_IFREG) {
		const char *first = archive_entry_pathname(ae);

		return fatelf_diag_set(r->d, -FATELF_E_MEMBER_ORDER, -1,
				       "the first member is '%s', not a regular file " FATELF_MANIFEST_NAME,
				       fatelf_text_quote(first ? first : "", q_name));
	}
	q = read_small(r, ae, fatelf_bundle_manifest_max(&lim), -FATELF_E_MANIFEST_TOO_BIG, FATELF_MANIFEST_NAME,
		       &manifest, &mlen);
	if (q < 0)
		return q;

	ar = archive_read_next_header(r->a, &ae);
	if (ar < ARCHIVE_WARN && ar != ARCHIVE_EOF)
		return archive_fail(r, "reading the second member");
	if (ar != ARCHIVE_EOF && archive_entry_pathname(ae) &&
	    strcmp(archive_entry_pathname(ae), FATELF_SIGNATURE_NAME) == 0) {
		if (archive_entry_filetype(ae) != AE_IFREG)
			return fatelf_diag_set(r->d, -FATELF_E_MEMBER_TYPE, -1,
					       FATELF_SIGNATURE_NAME " is not a regular file");
		q = read_small(r, ae, SIG_MAX, -FATELF_E_SIG_FORMAT, FATELF_SIGNATURE_NAME, &sig, &slen);
		if (q < 0)
			return q;
		ar = archive_read_next_header(r->a, &ae);
		if (ar < ARCHIVE_WARN && ar != ARCHIVE_EOF)
			return archive_fail(r, "reading the third member");
	}
	pending = ar != ARCHIVE_EOF;

	q = fatelf_bundle_check_manifest(r->o, manifest, mlen, (const char *)sig, slen, &r->m, &signer, r->d);
	if (q < 0)
		return q;
	/* The parsed form is all that is used from here on: the text (tens
	 * of MB for a package of 200,000 entries) goes before the consumer
	 * builds its own state. */
	free(manifest);
	manifest = NULL;
	r->seen = calloc(r->m->nentries ? r->m->nentries : 1, sizeof(bool));
	if (!r->seen)
		return fatelf_diag_oom(r->d);
	if (r->ops->manifest) {
		q = r->ops->manifest(r->ops->ctx, r->m, signer, r->d);
		if (q < 0)
			return q;
	}

	while (pending) {
		const char *name = archive_entry_pathname(ae);
		if (!name)
			return fatelf_diag_set(r->d, -FATELF_E_ARCHIVE, -1, "a member has no name");
		if (strcmp(name, FATELF_MANIFEST_NAME) == 0 || strcmp(name, FATELF_SIGNATURE_NAME) == 0)
			return fatelf_diag_set(r->d, -FATELF_E_MEMBER_DUPLICATE, -1,
					       "a second '%s' member", name);
		q = payload_member(r, ae, name);
		if (q < 0)
			return q;
		ar = archive_read_next_header(r->a, &ae);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN)
			return archive_fail(r, "reading the next member");
	}

	q = collect_digests(r, true);
	if (q < 0)
		return q;
	for (size_t i = 0; i < r->m->nentries; i++)
		if (!r->seen[i])
			return entry_fail(r, r->m->entries[i].path, -FATELF_E_MEMBER_MISSING, -1,
					  "no member of the archive holds it");
	return 0;
}

int fatelf_bundle_read(const fatelf_reader *src, const fatelf_bundle_read_opts *o,
		       const fatelf_bundle_reader_ops *ops, fatelf_diag *d)
{
	static const fatelf_bundle_reader_ops no_ops;
	static const fatelf_bundle_read_opts no_opts;
	struct reader r = {
		.src = src,
		.o = o ? o : &no_opts,
		.ops = ops ? ops : &no_ops,
		.d = d,
	};
	int q;

	fatelf_diag_clear(d);
	r.a = archive_read_new();
	if (!r.a || fatelf_hashq_new(&r.hashq) < 0) {
		q = fatelf_diag_oom(d);
		goto out;
	}
	archive_read_support_filter_all(r.a);
	archive_read_support_format_all(r.a);
	if (archive_read_open(r.a, &r, NULL, src_read, NULL) != ARCHIVE_OK) {
		q = archive_fail(&r, "opening the archive");
		goto out;
	}
	q = read_all(&r);
	if (q < 0 && !r.digest_failed && r.hashq && r.npending > 0) {
		/* A file that ended before the failure may have failed its
		 * hash: report the first failure in archive order, whatever
		 * the timing of the hashing core. */
		int h = collect_digests(&r, true);
		if (h < 0)
			q = h;
	}
	if (q >= 0 && r.o->ret_manifest) {
		*r.o->ret_manifest = r.m;
		r.m = NULL;
	}
out:
	if (r.a)
		archive_read_free(r.a);
	fatelf_hashq_free(r.hashq);
	fatelf_stream_free(r.stream);
	free(r.rec_order);
	free(r.seen);
	fatelf_manifest_free(r.m);
	return q;
}

int fatelf_bundle_read_fd(int fd, const fatelf_bundle_read_opts *o,
			  const fatelf_bundle_reader_ops *ops, fatelf_diag *d)
{
	fatelf_reader src;
	int q;

	q = fatelf_reader_file(&src, fd);
	if (q < 0)
		return q;
	q = fatelf_bundle_read(&src, o, ops, d);
	fatelf_reader_close(&src);
	return q;
}

int fatelf_bundle_read_mem(const void *buf, size_t len, const fatelf_bundle_read_opts *o,
			   const fatelf_bundle_reader_ops *ops, fatelf_diag *d)
{
	fatelf_reader src;
	int q;

	q = fatelf_reader_mem(&src, buf, len);
	if (q < 0)
		return q;
	q = fatelf_bundle_read(&src, o, ops, d);
	fatelf_reader_close(&src);
	return q;
}
