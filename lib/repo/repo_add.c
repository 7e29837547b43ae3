/*
 * fatelf repo add: a bundle into a repository's objects (doc/repository.md,
 * "Adding a bundle"). The bundle is read once by the bundle reader, which
 * checks every byte against its manifest; as a member streams by, each
 * object it holds that the repository lacks is compressed into a hidden
 * temp file in its folder: a data or ELF file whole, a FatELF file as one
 * object per record plus its frame when the frame is not the canonical
 * one. Only once the reader said every byte is the vendor's are the
 * objects synced and renamed to their names; then the manifest, its
 * signature and the pack list. The index is the caller's to publish.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "atomic.h"
#include "hashset.h"
#include "hex.h"
#include "macro.h"
#include "repo.h"
#include "text.h"

/* An object written under a temp name, to be renamed once all is checked. */
struct pending {
	uint8_t sha[32];
	uint8_t bucket;
	char tmp[FATELF_TEMP_NAME_MAX];
};

/* One object being written while its bytes stream. */
struct owr {
	fatelf_repo_owriter *w;
	fatelf_tmpfile t;
	uint8_t sha[32];        /* what it must hash to; for a frame, filled at the end */
	bool active;
};

struct add {
	fatelf_repo_dir *r;
	fatelf_diag *d;
	int buckets[256];
	struct pending *pending;
	size_t npending, pending_cap;
	/* the entry streaming */
	const fatelf_bundle_entry *e;
	uint64_t at;                    /* its bytes seen */
	unsigned order[FATELF_MAX_RECORDS];     /* its records by offset */
	unsigned next;                  /* the record at or after at, in order */
	struct owr obj;                 /* a whole file, or the record at hand */
	struct owr frame;
	const fatelf_manifest *m;       /* the reader's */
	fatelf_repo_frame *frames;      /* the frames that are not canonical */
	size_t nframes, frames_cap;
	hashset set;                    /* pending objects by hash */
	fatelf_repo_result_counts *counts;
};

/* Notes pending[i] in the set. */
static int set_add(struct add *a, size_t i)
{
	return hashset_add(&a->set, hashset_hash_digest(a->pending[i].sha), i);
}

static bool pending_is(size_t i, const void *sha, const void *userdata)
{
	const struct add *a = userdata;

	return memcmp(a->pending[i].sha, sha, 32) == 0;
}

static bool set_has(const struct add *a, const uint8_t sha[32])
{
	return hashset_find(&a->set, hashset_hash_digest(sha), sha, pending_is, a) != HASHSET_NONE;
}

static int bucket_fd(struct add *a, uint8_t b)
{
	char name[32];
	int k;

	if (a->buckets[b] >= 0)
		return a->buckets[b];
	snprintf(name, sizeof(name), FATELF_REPO_OBJECTS "/%02x", b);
	if (mkdirat(a->r->fd, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	k = openat(a->r->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (k < 0)
		return -errno;
	a->buckets[b] = k;
	return k;
}

/* Whether the object is in the repository, or already written by this add. */
static bool have(struct add *a, const uint8_t sha[32])
{
	return set_has(a, sha) || fatelf_repo_has_object(a->r, sha);
}

static int owr_start(struct add *a, struct owr *o, const uint8_t *sha)
{
	int dfd, k;

	/* a frame's bucket is known only at its end: the objects folder */
	dfd = sha ? bucket_fd(a, sha[0]) : bucket_fd(a, 0);
	if (dfd < 0)
		return fatelf_diag_set(a->d, dfd, -1, "cannot open the objects folder: %s", fatelf_strerror(dfd));
	k = fatelf_tmpfile_open(dfd, "object", 0644, &o->t);
	if (k < 0)
		return fatelf_diag_set(a->d, k, -1, "cannot make an object's temp file: %s", fatelf_strerror(k));
	k = fatelf_repo_owriter_open(o->t.fd, &o->w, a->d);
	if (k < 0) {
		fatelf_tmpfile_abort(&o->t);
		return k;
	}
	if (sha)
		memcpy(o->sha, sha, 32);
	o->active = true;
	return 0;
}

static void owr_abort(struct owr *o)
{
	if (!o->active)
		return;
	fatelf_repo_owriter_abort(o->w);
	o->w = NULL;
	fatelf_tmpfile_abort(&o->t);
	o->active = false;
}

/* Ends the object: checks its hash (a frame takes the one it has) and
 * keeps it pending, or drops it when drop. */
static int owr_finish(struct add *a, struct owr *o, bool is_frame)
{
	uint8_t sha[32];
	uint64_t size;
	struct pending *p;
	int k;

	if (!o->active)
		return 0;
	k = fatelf_repo_owriter_close(o->w, sha, &size, a->d);
	o->w = NULL;
	if (k < 0) {
		owr_abort(o);
		return k;
	}
	if (is_frame)
		memcpy(o->sha, sha, 32);
	else if (memcmp(sha, o->sha, 32) != 0) {
		owr_abort(o);
		return fatelf_diag_set(a->d, -FATELF_E_HASH, -1, "an object's bytes do not hash to its name");
	}
	if (have(a, o->sha)) {
		owr_abort(o);
		return 0;
	}
	/* The frame was written in bucket 0's folder: move it to its own. */
	if (is_frame && sha[0] != 0) {
		char name[FATELF_TEMP_NAME_MAX];
		int dfd = bucket_fd(a, sha[0]);

		if (dfd < 0 || fatelf_temp_name("object", name) < 0 ||
		    renameat(o->t.dirfd, o->t.name, dfd, name) < 0) {
			k = dfd < 0 ? dfd : -errno;
			owr_abort(o);
			return fatelf_diag_set(a->d, k, -1, "cannot move a frame object: %s", fatelf_strerror(k));
		}
		snprintf(o->t.name, sizeof(o->t.name), "%s", name);
		o->t.dirfd = dfd;
	}
	if (GROW_ARRAY(a->pending, a->pending_cap, a->npending + 1) < 0) {
		owr_abort(o);
		return fatelf_diag_oom(a->d);
	}
	p = &a->pending[a->npending];
	memcpy(p->sha, o->sha, 32);
	p->bucket = o->sha[0];
	snprintf(p->tmp, sizeof(p->tmp), "%s", o->t.name);
	if (set_add(a, a->npending) < 0) {
		owr_abort(o);
		return fatelf_diag_oom(a->d);
	}
	a->npending++;
	close(o->t.fd);
	o->t.fd = -1;
	o->t.name[0] = '\0';
	o->active = false;
	a->counts->objects_new++;
	return 0;
}

static int cmp_offset(const fatelf_bundle_entry *e, unsigned x, unsigned y)
{
	return e->records[x].offset < e->records[y].offset ? -1 : e->records[x].offset > e->records[y].offset;
}

static int add_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct add *a = ctx;

	(void)d;
	a->e = e;
	a->at = 0;
	a->next = 0;
	if (e->type != FATELF_ENTRY_FILE)
		return 0;
	if (e->kind != FATELF_KIND_FATELF) {
		if (have(a, e->sha256)) {
			a->counts->objects_shared++;
			return 0;       /* still read and hashed by the reader */
		}
		return owr_start(a, &a->obj, e->sha256);
	}
	/* records by offset (insertion sort: at most 255) */
	for (unsigned i = 0; i < e->nrecords; i++) {
		unsigned j = i;

		while (j > 0 && cmp_offset(e, a->order[j - 1], i) > 0) {
			a->order[j] = a->order[j - 1];
			j--;
		}
		a->order[j] = i;
	}
	return owr_start(a, &a->frame, NULL);
}

/* Bytes [at, at + len) of a FatELF file: to the frame or a record. */
static int fat_data(struct add *a, const uint8_t *p, size_t len)
{
	const fatelf_bundle_entry *e = a->e;
	int k;

	while (len > 0) {
		const fatelf_bundle_record *rec = a->next < e->nrecords ? &e->records[a->order[a->next]] : NULL;
		size_t n;

		if (!rec || a->at < rec->offset) {
			/* frame bytes up to the next record */
			n = rec ? (size_t)MIN((uint64_t)len, rec->offset - a->at) : len;
			k = fatelf_repo_owriter_write(a->frame.w, p, n, a->d);
		} else {
			uint64_t end = rec->offset + rec->size;

			if (a->at == rec->offset) {
				if (have(a, rec->sha256))
					a->counts->objects_shared++;
				else if ((k = owr_start(a, &a->obj, rec->sha256)) < 0)
					return k;
			}
			n = (size_t)MIN((uint64_t)len, end - a->at);
			k = a->obj.active ? fatelf_repo_owriter_write(a->obj.w, p, n, a->d) : 0;
			if (k == 0 && a->at + n == end) {
				k = owr_finish(a, &a->obj, false);
				a->next++;
			}
		}
		if (k < 0)
			return k;
		a->at += n;
		p += n;
		len -= n;
	}
	return 0;
}

static int add_data(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len)
{
	struct add *a = ctx;

	if (e->kind == FATELF_KIND_FATELF)
		return fat_data(a, buf, len);
	a->at += len;
	return a->obj.active ? fatelf_repo_owriter_write(a->obj.w, buf, len, a->d) : 0;
}

static int add_end(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d)
{
	struct add *a = ctx;
	uint8_t canon[32];
	size_t before = a->npending;
	int k;

	(void)d;
	if (status < 0 || e->type != FATELF_ENTRY_FILE) {
		owr_abort(&a->obj);
		owr_abort(&a->frame);
		return 0;
	}
	if (e->kind != FATELF_KIND_FATELF)
		return owr_finish(a, &a->obj, false);
	k = fatelf_repo_frame_canonical_sha(e, canon);
	if (k < 0)
		return fatelf_diag_set(a->d, k, -1, "%s", fatelf_strerror(k));
	k = owr_finish(a, &a->frame, true);
	if (k < 0)
		return k;
	if (memcmp(a->frame.sha, canon, 32) != 0) {
		/* The manifest does not give this frame: the pack lists it. */
		if (GROW_ARRAY(a->frames, a->frames_cap, a->nframes + 1) < 0)
			return fatelf_diag_oom(a->d);
		a->frames[a->nframes].entry = (uint32_t)(e - a->m->entries);
		memcpy(a->frames[a->nframes].sha256, a->frame.sha, 32);
		a->nframes++;
	} else if (a->npending > before) {
		/* canonical: the manifest rebuilds it, no object needed */
		struct pending *p = &a->pending[--a->npending];
		int dfd = bucket_fd(a, p->bucket);

		if (dfd >= 0)
			unlinkat(dfd, p->tmp, 0);
		a->counts->objects_new--;
		hashset_clear(&a->set);
		for (size_t i = 0; i < a->npending; i++)
			set_add(a, i);
	}
	return 0;
}

static int add_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer, fatelf_diag *d)
{
	struct add *a = ctx;

	(void)signer;
	(void)d;
	a->m = m;
	return 0;
}

static const fatelf_bundle_reader_ops add_ops = {
	.manifest = add_manifest,
	.begin = add_begin,
	.data = add_data,
	.end = add_end,
};

static void drop_pending(struct add *a)
{
	for (size_t i = 0; i < a->npending; i++) {
		int dfd = bucket_fd(a, a->pending[i].bucket);

		if (dfd >= 0)
			unlinkat(dfd, a->pending[i].tmp, 0);
	}
	a->npending = 0;
	hashset_clear(&a->set);
}

static int commit_pending(struct add *a)
{
	char name[80], hex[65];

	if (a->npending > 0 && syncfs(a->r->fd) < 0)
		return fatelf_diag_set(a->d, -errno, -1, "syncing the objects: %s", fatelf_strerror(-errno));
	for (size_t i = 0; i < a->npending; i++) {
		int dfd = bucket_fd(a, a->pending[i].bucket);

		fatelf_hex(a->pending[i].sha, 32, hex);
		snprintf(name, sizeof(name), "%s.zst", hex);
		if (dfd < 0 || renameat(dfd, a->pending[i].tmp, dfd, name) < 0)
			return fatelf_diag_set(a->d, dfd < 0 ? dfd : -errno, -1, "naming object %s: %s", hex,
					       fatelf_strerror(dfd < 0 ? dfd : -errno));
	}
	a->npending = 0;
	hashset_clear(&a->set);
	return 0;
}

/* The compressed size of an object in the repository. */
static int object_csize(const fatelf_repo_dir *r, const uint8_t sha[32], uint64_t *ret, fatelf_diag *d)
{
	char rel[FATELF_REPO_OBJECT_PATH_MAX];
	struct stat st;

	fatelf_repo_object_path(sha, rel);
	if (fstatat(r->fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return fatelf_diag_at(d, -FATELF_E_REPO_MISSING, -1, rel, "not in the repository");
	*ret = (uint64_t)st.st_size;
	return 0;
}

static int pack_add(const fatelf_repo_dir *r, fatelf_repo_pack *p, size_t *cap, const uint8_t sha[32],
		    uint64_t size, fatelf_diag *d)
{
	fatelf_repo_object *o;

	if (GROW_ARRAY(p->objects, *cap, p->nobjects + 1) < 0)
		return fatelf_diag_oom(d);
	o = &p->objects[p->nobjects];
	memcpy(o->sha256, sha, 32);
	o->size = size;
	if (object_csize(r, sha, &o->csize, d) < 0)
		return -FATELF_E_REPO_MISSING;
	p->nobjects++;
	return 0;
}

/* The pack list of m: every object its files and records name, and the
 * frames that are not canonical, each object once with its sizes. */
static int make_pack(const fatelf_repo_dir *r, const fatelf_manifest *m, const fatelf_repo_frame *frames,
		     size_t nframes, fatelf_repo_pack *p, fatelf_diag *d)
{
	size_t cap = 0, k = 0;
	int q;

	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		if (e->type != FATELF_ENTRY_FILE)
			continue;
		if (e->kind == FATELF_KIND_FATELF) {
			for (unsigned j = 0; j < e->nrecords; j++)
				if ((q = pack_add(r, p, &cap, e->records[j].sha256, e->records[j].size, d)) < 0)
					return q;
		} else if ((q = pack_add(r, p, &cap, e->sha256, e->size, d)) < 0)
			return q;
	}
	for (size_t i = 0; i < nframes; i++)
		if ((q = pack_add(r, p, &cap, frames[i].sha256, fatelf_repo_frame_size(&m->entries[frames[i].entry]),
				  d)) < 0)
			return q;
	/* the same bytes in several files are one object */
	if (p->nobjects > 1)
		qsort(p->objects, p->nobjects, sizeof(*p->objects), digest_cmp);
	for (size_t i = 0; i < p->nobjects; i++)
		if (k == 0 || memcmp(p->objects[k - 1].sha256, p->objects[i].sha256, 32) != 0)
			p->objects[k++] = p->objects[i];
	p->nobjects = k;
	if (nframes > 0) {
		p->frames = malloc(nframes * sizeof(*frames));
		if (!p->frames)
			return fatelf_diag_oom(d);
		memcpy(p->frames, frames, nframes * sizeof(*frames));
		p->nframes = nframes;
	}
	return 0;
}

/* Writes buf as a compressed object (if missing) and gives its sha. */
static int put_object(struct add *a, const void *buf, size_t len, uint8_t ret_sha[32])
{
	struct owr o = { .t = { .fd = -1 } };
	fatelf_sha256 *h = fatelf_sha256_new();
	int k;

	if (!h)
		return fatelf_diag_oom(a->d);
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, ret_sha);
	fatelf_sha256_free(h);
	if (have(a, ret_sha))
		return 0;
	k = owr_start(a, &o, ret_sha);
	if (k == 0)
		k = fatelf_repo_owriter_write(o.w, buf, len, a->d);
	if (k == 0)
		k = owr_finish(a, &o, false);
	if (k < 0)
		owr_abort(&o);
	return k;
}

/* The first two members: the manifest's exact bytes and the signature's. */
static int read_head(int fd, char **ret_json, size_t *ret_len, char **ret_sig, size_t *ret_siglen, fatelf_diag *d)
{
	struct archive *ar = archive_read_new();
	struct archive_entry *ent;
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 };
	int q = 0;

	if (!ar)
		return fatelf_diag_oom(d);
	archive_read_support_filter_all(ar);
	archive_read_support_format_all(ar);
	if (archive_read_open_fd(ar, fd, 128 << 10) != ARCHIVE_OK) {
		q = fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1, "opening the archive: %s",
				    archive_error_string(ar) ? archive_error_string(ar) : "damaged");
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		const char *want = i == 0 ? FATELF_MANIFEST_NAME : FATELF_SIGNATURE_NAME;
		size_t max = i == 0 ? FATELF_MANIFEST_MAX : FATELF_REPO_SIG_MAX;
		la_int64_t size;

		if (archive_read_next_header(ar, &ent) != ARCHIVE_OK ||
		    strcmp(archive_entry_pathname(ent), want) != 0) {
			if (i == 1)
				break;
			q = fatelf_diag_set(d, -FATELF_E_MEMBER_ORDER, -1, "the first member is not " FATELF_MANIFEST_NAME);
			goto out;
		}
		size = archive_entry_size(ent);
		if (size < 0 || (uint64_t)size > max) {
			q = fatelf_diag_set(d, i == 0 ? -FATELF_E_MANIFEST_TOO_BIG : -FATELF_E_SIG_FORMAT, -1,
					    "%s is larger than %zu bytes", want, max);
			goto out;
		}
		bufs[i] = malloc((size_t)size + 1);
		if (!bufs[i]) {
			q = fatelf_diag_oom(d);
			goto out;
		}
		if (archive_read_data(ar, bufs[i], (size_t)size) != size) {
			q = fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1, "%s: damaged or truncated", want);
			goto out;
		}
		bufs[i][size] = '\0';
		lens[i] = (size_t)size;
	}
	*ret_json = TAKE_PTR(bufs[0]);
	*ret_len = lens[0];
	*ret_sig = TAKE_PTR(bufs[1]);
	*ret_siglen = lens[1];
out:
	free(bufs[0]);
	free(bufs[1]);
	archive_read_free(ar);
	return q;
}

/* The add's buckets closed, its lists freed. */
static void add_done(struct add *a)
{
	for (size_t i = 0; i < ARRAY_SIZE(a->buckets); i++)
		if (a->buckets[i] >= 0)
			close(a->buckets[i]);
	free(a->pending);
	free(a->frames);
	hashset_done(&a->set);
}

#define _cleanup_add_ _cleanup_(add_done)

/* A pack list held by value: its lists freed. */
static void pack_lists_done(fatelf_repo_pack *p)
{
	free(p->objects);
	free(p->frames);
}

#define _cleanup_pack_lists_ _cleanup_(pack_lists_done)

/* The manifest and its signature, read and checked by the same rules as
 * the read that checks every payload byte after (these are the bytes
 * stored). */
static int add_head(int fd, const fatelf_bundle_read_opts *o, char **ret_json, size_t *ret_jlen, char **ret_sig,
		    size_t *ret_siglen, fatelf_manifest **ret_m, fatelf_diag *d)
{
	const fatelf_ms_pubkey *signer;
	int q;

	q = read_head(fd, ret_json, ret_jlen, ret_sig, ret_siglen, d);
	if (q < 0)
		return q;
	return fatelf_bundle_check_manifest(o, *ret_json, *ret_jlen, *ret_sig, *ret_siglen, ret_m, &signer, d);
}

static int sha256_of(const void *buf, size_t len, uint8_t ret_sha[32], fatelf_diag *d)
{
	fatelf_sha256 *h = fatelf_sha256_new();

	if (!h)
		return fatelf_diag_oom(d);
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, ret_sha);
	fatelf_sha256_free(h);
	return 0;
}

/* Every byte, through the bundle reader's checks, its objects committed
 * to the repository. */
static int add_payload(struct add *a, int fd, fatelf_bundle_read_opts *o, const fatelf_manifest *m, fatelf_diag *d)
{
	_cleanup_manifest_ fatelf_manifest *read_m = NULL;
	fatelf_bundle_reader_ops ops = add_ops;
	int q;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return fatelf_diag_set(d, -errno, -1, "the bundle cannot be read twice: %s", fatelf_strerror(-errno));
	o->ret_manifest = &read_m;
	ops.ctx = a;
	q = fatelf_bundle_read_fd(fd, o, &ops, d);
	o->ret_manifest = NULL;
	owr_abort(&a->obj);
	owr_abort(&a->frame);
	if (q == 0)
		q = commit_pending(a);
	if (q < 0) {
		drop_pending(a);
		return q;
	}
	if (read_m->nentries != m->nentries)
		return fatelf_diag_set(d, -EIO, -1, "the bundle changed while it was read");
	return 0;
}

/* The pack list made, checked and stored as an object (psha). */
static int add_pack(struct add *a, const fatelf_manifest *m, fatelf_repo_pack *pack, uint8_t psha[32],
		    size_t *ret_plen, fatelf_diag *d)
{
	_cleanup_free_ char *packtext = NULL;
	size_t plen = 0;
	int q;

	q = make_pack(a->r, m, a->frames, a->nframes, pack, d);
	if (q < 0)
		return q;
	q = fatelf_repo_pack_check(pack, m, d);
	if (q < 0)
		return q;
	q = fatelf_repo_pack_serialize(pack, &packtext, &plen, d);
	if (q == 0)
		q = put_object(a, packtext, plen, psha);
	if (q == 0)
		q = commit_pending(a);
	if (q < 0)
		return q;
	*ret_plen = plen;
	return 0;
}

/* The manifest's files: its signature (if any), then its bytes. */
static int add_manifest_files(fatelf_repo_dir *r, const uint8_t msha[32], const char *json, size_t jlen,
			      const char *sig, size_t siglen, fatelf_diag *d)
{
	char rel[FATELF_REPO_MANIFEST_PATH_MAX];
	int q;

	if (sig) {
		fatelf_repo_manifest_path(msha, true, rel);
		q = fatelf_repo_write_file(r, rel, sig, siglen, true, d);
		if (q < 0)
			return q;
	}
	fatelf_repo_manifest_path(msha, false, rel);
	return fatelf_repo_write_file(r, rel, json, jlen, true, d);
}

/* The version's dependencies, the manifest's (already sorted by name). */
static int version_depends_copy(fatelf_repo_version *ver, const fatelf_manifest *m, fatelf_diag *d)
{
	int q = 0;

	if (m->ndepends == 0)
		return 0;
	ver->depends = calloc(m->ndepends, sizeof(*ver->depends));
	for (size_t i = 0; ver->depends && i < m->ndepends && q >= 0; i++) {
		const fatelf_depend *dep = &m->depends[i];

		ver->depends[i].op = dep->op;
		ver->depends[i].name = strdup(dep->name);
		ver->depends[i].version = dep->version ? strdup(dep->version) : NULL;
		ver->ndepends++;
		if (!ver->depends[i].name || (dep->version && !ver->depends[i].version))
			q = -ENOMEM;
	}
	if (!ver->depends || q < 0)
		return fatelf_diag_oom(d);
	return 0;
}

/* The version's row of the index. */
static int add_index_row(fatelf_repo_index *ix, const fatelf_manifest *m, const uint8_t msha[32], size_t jlen,
			 bool is_signed, const fatelf_repo_pack *pack, const uint8_t psha[32], size_t plen,
			 fatelf_repo_add_result *res, fatelf_diag *d)
{
	fatelf_repo_package *pkg = fatelf_repo_index_add_package(ix, m->name);
	fatelf_repo_version *ver = pkg ? fatelf_repo_package_add_version(pkg, m->version) : NULL;

	if (!ver || !(ver->targets = calloc(m->ntargets ? m->ntargets : 1, sizeof(*ver->targets))))
		return fatelf_diag_oom(d);
	free(ver->summary);
	ver->summary = strdup(m->summary ? m->summary : "");
	memcpy(ver->targets, m->targets, m->ntargets * sizeof(*m->targets));
	ver->ntargets = m->ntargets;
	ver->entries = m->nentries;
	ver->size = m->total_size;
	memcpy(ver->manifest, msha, 32);
	ver->manifest_size = jlen;
	ver->signed_manifest = is_signed;
	memcpy(ver->pack, psha, 32);
	ver->pack_size = plen;
	ver->frames = pack->nframes;
	res->pack_objects = pack->nobjects;
	if (!ver->summary)
		return fatelf_diag_oom(d);
	return version_depends_copy(ver, m, d);
}

int fatelf_repo_add_bundle(fatelf_repo_dir *r, fatelf_repo_index *ix, int fd, const fatelf_bundle_read_opts *ro,
			   fatelf_repo_add_result *res, fatelf_diag *d)
{
	_cleanup_free_ char *json = NULL, *sig = NULL;
	_cleanup_manifest_ fatelf_manifest *m = NULL;
	_cleanup_pack_lists_ fatelf_repo_pack pack = { 0 };
	_cleanup_add_ struct add a = { .r = r, .d = d, .obj = { .t = { .fd = -1 } }, .frame = { .t = { .fd = -1 } } };
	const fatelf_repo_package *pkg;
	const fatelf_repo_version *ver;
	fatelf_bundle_read_opts o = *ro;
	uint8_t msha[32], psha[32];
	size_t jlen = 0, siglen = 0, plen = 0;
	int q;

	for (size_t i = 0; i < ARRAY_SIZE(a.buckets); i++)
		a.buckets[i] = -1;
	memset(res, 0, sizeof(*res));
	a.counts = &res->counts;
	q = add_head(fd, &o, &json, &jlen, &sig, &siglen, &m, d);
	if (q < 0)
		return q;
	snprintf(res->name, sizeof(res->name), "%s", m->name);
	snprintf(res->version, sizeof(res->version), "%s", m->version);
	q = sha256_of(json, jlen, msha, d);
	if (q < 0)
		return q;
	pkg = fatelf_repo_index_find(ix, m->name);
	ver = pkg ? fatelf_repo_package_version(pkg, m->version) : NULL;
	if (ver) {
		if (memcmp(ver->manifest, msha, 32) == 0) {
			res->unchanged = true;
			return 0;
		}
		return fatelf_diag_set(d, -EEXIST, -1,
				       "%s %s is in the repository already, with another manifest: remove it first",
				       m->name, m->version);
	}
	q = add_payload(&a, fd, &o, m, d);
	if (q < 0)
		return q;
	q = add_pack(&a, m, &pack, psha, &plen, d);
	if (q < 0)
		return q;
	q = add_manifest_files(r, msha, json, jlen, sig, siglen, d);
	if (q < 0)
		return q;
	return add_index_row(ix, m, msha, jlen, sig != NULL, &pack, psha, plen, res, d);
}
