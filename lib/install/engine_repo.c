/*
 * An install from a repository (doc/repository.md): one package version's
 * manifest, signature and pack list, and its objects from wherever they
 * are cheapest. The engine's own preflight says which objects the staging
 * will read (engine_install_opts.needs: nothing for a file an upgrade
 * leaves in place, one record of a FatELF file thinned to it); of those,
 * an object whose bytes a file already installed has is read from that
 * file (cloned, where the file system shares extents, else copied), and
 * only the rest is fetched, all at once, before the first file is
 * staged. Every object's bytes are checked against their hash, which the
 * signed manifest pins, as they are staged (a clone's on the staged copy
 * itself); a local file whose bytes no longer match is fetched instead.
 * The transaction is the engine's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "engine_private.h"
#include "hashset.h"
#include "hex.h"
#include "macro.h"
#include "repo.h"

struct need {
	uint8_t sha[32];
	uint64_t size;
	char *local;            /* root path of an installed file with these bytes */
	bool fetched;
	bool cloned;            /* counted once in stats->cloned */
};

struct rctx {
	engine *e;
	const engine_repo_version *v;
	const engine_repo_fetch *f;
	const engine_install_opts *o;
	engine_repo_stats *stats;
	const fatelf_manifest *m;       /* the reader's */
	struct need *needs;
	size_t nneeds, needs_cap;
	hashset set;                    /* needs by hash */
};

static bool need_is(size_t i, const void *sha, const void *userdata)
{
	const struct rctx *c = userdata;

	return memcmp(c->needs[i].sha, sha, 32) == 0;
}

static struct need *need_find(const struct rctx *c, const uint8_t sha[32])
{
	size_t i = hashset_find(&c->set, hashset_hash_digest(sha), sha, need_is, c);

	return i == HASHSET_NONE ? NULL : &c->needs[i];
}

static int need_add(struct rctx *c, const uint8_t sha[32], uint64_t size)
{
	if (need_find(c, sha))
		return 0;
	if (GROW_ARRAY(c->needs, c->needs_cap, c->nneeds + 1) < 0)
		return -ENOMEM;
	if (hashset_add(&c->set, hashset_hash_digest(sha), c->nneeds) < 0)
		return -ENOMEM;
	memset(&c->needs[c->nneeds], 0, sizeof(*c->needs));
	memcpy(c->needs[c->nneeds].sha, sha, 32);
	c->needs[c->nneeds].size = size;
	c->nneeds++;
	return 0;
}

/* The index of the reader's entry that be is (be may be a copy in the
 * install's view of the manifest). */
static size_t entry_index(const struct rctx *c, const fatelf_bundle_entry *be)
{
	const fatelf_bundle_entry *first = fatelf_manifest_find(c->m, be->path);
	size_t n;

	if (!first)
		return SIZE_MAX;
	n = fatelf_manifest_path_count(c->m, first);
	for (size_t i = 0; i < n; i++)
		if (memcmp(first[i].sha256, be->sha256, 32) == 0)
			return (size_t)(first + i - c->m->entries);
	return SIZE_MAX;
}

static int local_candidate(void *ctx, const char *path, const char *hex)
{
	struct rctx *c = ctx;
	uint8_t sha[32];
	struct need *n;

	if (strlen(hex) != 64 || fatelf_unhex_lower(hex, sha, 32) < 0)
		return 0;
	n = need_find(c, sha);
	if (n && !n->local) {
		n->local = strdup(path);
		if (!n->local)
			return -ENOMEM;
	}
	return 0;
}

/* Every need known: find local copies, then fetch the rest at once. */
static int plan_done(struct rctx *c, fatelf_diag *d)
{
	_cleanup_free_ fatelf_repo_object *objs = NULL;
	size_t nobjs = 0;
	int q;

	q = store_files_hashes(c->e->st, local_candidate, c, d);
	if (q < 0)
		return q;
	objs = calloc(c->nneeds ? c->nneeds : 1, sizeof(*objs));
	if (!objs)
		return fatelf_diag_oom(d);
	for (size_t i = 0; i < c->nneeds; i++) {
		struct need *n = &c->needs[i];
		const fatelf_repo_object *po;

		c->stats->objects++;
		if (n->local) {
			c->stats->local++;
			continue;
		}
		if (c->v->pack) {
			po = fatelf_repo_pack_object(c->v->pack, n->sha);
			if (!po) {
				char hex[65];

				fatelf_hex(n->sha, 32, hex);
				return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1, "object %s is not in the pack list", hex);
			}
			objs[nobjs] = *po;
			c->stats->fetch_bytes += po->csize;
		} else {
			/* no pack list (no stored frame): the compressed size is
			 * learned as it arrives */
			memcpy(objs[nobjs].sha256, n->sha, 32);
			objs[nobjs].size = n->size;
			objs[nobjs].csize = c->f->csize ? c->f->csize(c->f->ctx, n->sha) : 0;
			c->stats->fetch_bytes += objs[nobjs].csize;
		}
		nobjs++;
		n->fetched = true;
	}
	c->stats->fetched = nobjs;
	if (c->o->dry_run || nobjs == 0)
		return 0;
	return c->f->fetch(c->f->ctx, objs, nobjs, d);
}

static int on_needs(void *ctx, const fatelf_manifest *m, const fatelf_bundle_entry *be, const uint8_t *sha,
		    uint64_t size, fatelf_diag *d)
{
	struct rctx *c = ctx;
	int q;

	c->m = m;

	if (!be)
		return plan_done(c, d);
	if (!sha) {
		/* the frame of a FatELF file kept whole, when it is stored */
		size_t i = entry_index(c, be);
		const fatelf_repo_frame *fr = i == SIZE_MAX || !c->v->pack ? NULL
					       : fatelf_repo_pack_frame(c->v->pack, (uint32_t)i);

		if (!fr)
			return 0;
		sha = fr->sha256;
		size = fatelf_repo_frame_size(be);
	}
	q = need_add(c, sha, size);
	return q < 0 ? fatelf_diag_oom(d) : 0;
}

/* Opens the installed file of n beneath the root, never through a
 * symlink: -ESTALE when it is not (any more) a regular file of n's size,
 * or a parent's error. */
static int open_local(struct rctx *c, const struct need *n, fatelf_diag *d)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	const char *base;
	struct stat st;

	dfd = fatelf_root_open_parent(c->e->rootfd, n->local + 1, false, &base, d);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != n->size)
		return -ESTALE;
	return TAKE_FD(fd);
}

/* Reads an installed file's bytes, checked against sha and size:
 * -ESTALE when they are not (any more) those. */
static int read_local(struct rctx *c, const struct need *n, int (*data)(void *, const void *, size_t), void *dctx,
		      fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	_cleanup_sha256_ fatelf_sha256 *h = NULL;
	uint8_t buf[128 << 10], out[32];
	uint64_t got = 0;
	int q;

	fd = open_local(c, n, d);
	if (fd < 0)
		return fd;
	h = fatelf_sha256_new();
	if (!h)
		return fatelf_diag_oom(d);
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		if ((uint64_t)k > n->size - got)
			return -ESTALE;
		fatelf_sha256_update(h, buf, (size_t)k);
		got += (uint64_t)k;
		if (data && (q = data(dctx, buf, (size_t)k)) < 0)
			return q;
	}
	fatelf_sha256_final(h, out);
	return got == n->size && memcmp(out, n->sha, 32) == 0 ? 0 : -ESTALE;
}

static int src_object(void *ctx, const uint8_t sha[32], uint64_t size, int (*data)(void *, const void *, size_t),
		      void *dctx, fatelf_diag *d)
{
	struct rctx *c = ctx;
	struct need *n = need_find(c, sha);
	int q;

	if (n && n->local) {
		/* A first pass proves the bytes before any is handed on. */
		q = read_local(c, n, NULL, NULL, d);
		if (q == 0) {
			q = read_local(c, n, data, dctx, d);
			if (q == -ESTALE) {
				char hex[65];

				/* Bytes are handed on already: a fetch now would
				 * follow a prefix of other bytes. */
				fatelf_hex(sha, 32, hex);
				return fatelf_diag_set(d, -ESTALE, -1,
						       "%s changed while it was read as object %s: nothing was "
						       "installed; run the install again",
						       n->local, hex);
			}
			return q;
		}
		if (q != -ESTALE)
			return q;
		fatelf_diag_clear(d);
		/* changed since it was installed: fetch it after all */
		free(n->local);
		n->local = NULL;
		{
			const fatelf_repo_object *po = c->v->pack ? fatelf_repo_pack_object(c->v->pack, sha) : NULL;
			fatelf_repo_object one = { .size = size };

			if (c->v->pack && !po)
				return fatelf_diag_set(d, -FATELF_E_REPO_PACK, -1, "an object is not in the pack list");
			memcpy(one.sha256, sha, 32);
			if (po)
				one = *po;
			q = c->f->fetch(c->f->ctx, &one, 1, d);
			if (q < 0)
				return q;
			c->stats->local--;
			c->stats->fetched++;
			c->stats->fetch_bytes += one.csize;
		}
	}
	return c->f->object(c->f->ctx, sha, size, data, dctx, d);
}

/* The installed file said to hold object sha, for the consumer to clone;
 * the reader checks the clone, so a file that changed is found then. */
static int src_local(void *ctx, const uint8_t sha[32], uint64_t size)
{
	struct rctx *c = ctx;
	struct need *n = need_find(c, sha);
	fatelf_diag ignored;

	if (!n || !n->local || n->size != size)
		return -ENOENT;
	return open_local(c, n, &ignored);
}

static void src_cloned(void *ctx, const uint8_t sha[32], uint64_t size)
{
	struct rctx *c = ctx;
	struct need *n = need_find(c, sha);

	(void)size;
	if (n && !n->cloned) {
		n->cloned = true;
		c->stats->cloned++;
	}
}

static int drive(void *ctx, const fatelf_bundle_read_opts *ro, const fatelf_bundle_reader_ops *ops, fatelf_diag *d)
{
	struct rctx *c = ctx;
	fatelf_repo_source src = { .object = src_object, .local = src_local, .cloned = src_cloned, .ctx = c };

	return fatelf_repo_read(c->v->manifest, c->v->manifest_len, c->v->sig, c->v->sig_len, c->v->pack, &src, ro,
				ops, d);
}

int engine_install_repo(engine *e, const engine_repo_version *v, const engine_repo_fetch *f,
			const engine_install_opts *o, engine_repo_stats *stats, engine_result *ret, fatelf_diag *d)
{
	struct rctx c = { .e = e, .v = v, .f = f, .stats = stats };
	engine_install_opts io = o ? *o : (engine_install_opts){ 0 };
	int q;

	memset(stats, 0, sizeof(*stats));
	c.o = &io;
	io.drive = drive;
	io.drive_ctx = &c;
	io.needs = on_needs;
	io.needs_ctx = &c;
	q = engine_install(e, NULL, &io, ret, d);
	for (size_t i = 0; i < c.nneeds; i++)
		free(c.needs[i].local);
	free(c.needs);
	hashset_done(&c.set);
	return q;
}
