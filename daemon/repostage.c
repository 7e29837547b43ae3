/*
 * The objects of an install from a repository or a registry: fetched by
 * the helper into one spool file under the state directory while the
 * engine stages each as its bytes arrive, every blob of a registry
 * checked against its digest once whole and every object against its
 * hash as it is staged; nothing commits before every byte checked out.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hashset.h"
#include "hex.h"
#include "macro.h"
#include "path.h"
#include "repos.h"
#include "worker_private.h"

const struct oci_blob_ref *oci_blobs_find(const struct oci_blobs *b, const uint8_t object[32])
{
	return b->n ? bsearch(object, b->v, b->n, sizeof(*b->v), digest_cmp) : NULL;
}

int repo_membuf_put(void *ctx, const void *buf, size_t len)
{
	struct repo_membuf *m = ctx;

	if (len > m->cap - m->len)
		return -EFBIG;
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

/* Install from a repository (the worker's) */

struct byhash {
	uint8_t sha[32];
	size_t i;
};

struct rfetch {
	const engine_config *cfg;
	const struct repo_conf *r;
	worker *w;
	int cache;              /* the cache directory */
	uint64_t bytes;         /* received */
	/* The download that runs beside the staging: the engine stages each
	 * object as its bytes arrive, in the order the helper was given (the
	 * manifest's), while the next ones arrive too. Nothing staged
	 * commits before every object's bytes checked out against its hash. */
	pthread_t thread;
	bool running;
	struct repo_helper pre; /* its helper, started before the metadata is fetched */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct repo_get *gets;
	/* Every object of the download in one file with no name, each at
	 * its own offset (gets[i].base, room for its largest size; the rest
	 * is a hole; an object two files need is read twice): one inode for
	 * all of them, not one created and unlinked per object. */
	int spool;
	char *paths;            /* n of plen bytes each */
	size_t plen;
	char (*names)[80];
	/* From a registry: where each object's blob is, and its digest,
	 * checked once the blob is whole (before the reader sees its end). */
	const struct oci_blobs *oci;
	const uint8_t **digests;
	int verdict;            /* a blob that failed its digest */
	fatelf_diag vdiag;
	bool *ready;            /* whole */
	uint64_t *have;         /* bytes in, from the start */
	struct byhash *byhash;  /* sorted */
	size_t n;
	bool finished;
	int result;
	fatelf_diag diag;
	atomic_int stop;
};

static void cache_name(const uint8_t sha[32], char buf[80])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	snprintf(buf, 80, "%s.zst", hex);
}

/* Whether the cache file name hashes to digest (the blob at path). */
static int cache_digest_check(int cache, const char *name, const uint8_t digest[32], const char *path,
			      fatelf_diag *d)
{
	uint8_t buf[1 << 16], sha[32];
	fatelf_sha256 *h;
	ssize_t n;
	int fd = openat(cache, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), k = 0;

	if (fd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", path, fatelf_strerror(-errno));
	h = fatelf_sha256_new();
	if (!h) {
		close(fd);
		return fatelf_diag_oom(d);
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			k = fatelf_diag_set(d, -errno, -1, "%s: %s", path, fatelf_strerror(-errno));
			break;
		}
		fatelf_sha256_update(h, buf, (size_t)n);
	}
	fatelf_sha256_final(h, sha);
	fatelf_sha256_free(h);
	close(fd);
	if (k == 0 && memcmp(sha, digest, 32) != 0)
		k = fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1,
				    "%s: the blob's bytes do not hash to the digest that names them", path);
	return k;
}

/* Whether the stored bytes of gets[i] hash to the blob's digest. */
static int rf_digest(struct rfetch *f, size_t i, fatelf_diag *d)
{
	const struct repo_get *g = &f->gets[i];
	_cleanup_free_ uint8_t *buf = malloc(1 << 17);
	fatelf_sha256 *h = fatelf_sha256_new();
	uint8_t sha[32];
	uint64_t pos = 0;
	int k = 0;

	if (!buf || !h) {
		fatelf_sha256_free(h);
		return fatelf_diag_oom(d);
	}
	while (pos < g->len && k == 0) {
		ssize_t n = pread(f->spool, buf, (size_t)MIN((uint64_t)(1 << 17), g->len - pos), (off_t)(g->base + pos));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			k = fatelf_diag_set(d, n < 0 ? -errno : -EIO, -1, "%s: cannot read it back: %s", g->path,
					    fatelf_strerror(n < 0 ? -errno : -EIO));
		else {
			fatelf_sha256_update(h, buf, (size_t)n);
			pos += (uint64_t)n;
		}
	}
	fatelf_sha256_final(h, sha);
	fatelf_sha256_free(h);
	if (k == 0 && memcmp(sha, f->digests[i], 32) != 0) {
		char hex[65];

		fatelf_hex(sha, 32, hex);
		k = fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1,
				    "%s: the blob's bytes hash to sha256:%s, not to the digest that names them",
				    g->path, hex);
	}
	return k;
}

static void rf_event(void *ctx, size_t i, bool whole)
{
	struct rfetch *f = ctx;
	fatelf_diag d = { 0 };
	int k = 0;

	if (whole && f->digests && f->digests[i])
		k = rf_digest(f, i, &d);
	pthread_mutex_lock(&f->lock);
	if (k < 0) {
		if (!f->verdict) {
			f->verdict = k;
			f->vdiag = d;
		}
		atomic_store(&f->stop, 1);
	} else {
		f->have[i] = f->gets[i].len;
		if (whole)
			f->ready[i] = true;
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static void *rf_main(void *arg)
{
	struct rfetch *f = arg;
	fatelf_diag d = { 0 };
	int k = repo_fetch_each(f->cfg, f->r, f->gets, f->n, &f->pre, &f->stop, &f->w->fetch_pid, rf_event, f,
				&d);

	pthread_mutex_lock(&f->lock);
	f->result = k;
	f->diag = d;
	f->finished = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Stops the download (when it still runs) and waits for its thread. */
static void rf_finish(struct rfetch *f)
{
	if (!f->running)
		return;
	atomic_store(&f->stop, 1);
	pthread_join(f->thread, NULL);
	f->running = false;
	for (size_t i = 0; i < f->n; i++)
		f->bytes += f->gets[i].len;
}

static void rf_free(struct rfetch *f)
{
	rf_finish(f);
	repo_helper_discard(&f->pre);
	if (f->spool >= 0)
		close(f->spool);
	f->spool = -1;
	free(f->gets);
	free(f->paths);
	free(f->digests);
	free(f->names);
	free(f->ready);
	free(f->have);
	free(f->byhash);
	f->gets = NULL;
	f->paths = NULL;
	f->digests = NULL;
	f->names = NULL;
	f->ready = NULL;
	f->have = NULL;
	f->byhash = NULL;
	f->n = 0;
}

/* Where object sha is on f's mirrors, into buf (f->plen bytes): the
 * repository's path, or the blob that holds it in a registry (then
 * *ret_blob is its layer). */
static int rf_path(struct rfetch *f, const uint8_t sha[32], char *buf, const struct oci_blob_ref **ret_blob,
		   fatelf_diag *d)
{
	const struct oci_blob_ref *b;
	char hex[65];

	*ret_blob = NULL;
	if (!f->oci) {
		fatelf_repo_object_path(sha, buf);
		return 0;
	}
	b = oci_blobs_find(f->oci, sha);
	fatelf_hex(sha, 32, hex);
	if (!b)
		return fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1,
				       "%s: object %s is not a layer of the manifest, so the install cannot fetch it",
				       f->r->name, hex);
	fatelf_hex(b->digest, 32, hex);
	snprintf(buf, f->plen, "%s%s", f->oci->prefix, hex);
	*ret_blob = b;
	return 0;
}

/* gets for objs into the cache, each file opened at its first bytes. */
static int rf_prepare(struct rfetch *f, const fatelf_repo_object *objs, size_t n, fatelf_diag *d)
{
	f->gets = calloc(n ? n : 1, sizeof(*f->gets));
	f->paths = calloc(n ? n : 1, f->plen);
	f->digests = f->oci ? calloc(n ? n : 1, sizeof(*f->digests)) : NULL;
	f->names = calloc(n ? n : 1, sizeof(*f->names));
	f->ready = calloc(n ? n : 1, sizeof(*f->ready));
	f->have = calloc(n ? n : 1, sizeof(*f->have));
	f->byhash = calloc(n ? n : 1, sizeof(*f->byhash));
	uint64_t at = 0;
	int k;

	if (!f->gets || !f->paths || !f->names || !f->ready || !f->have || !f->byhash || (f->oci && !f->digests))
		return fatelf_diag_oom(d);
	f->spool = openat(f->cache, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (f->spool < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot make the download's spool file: %s",
				       fatelf_strerror(-errno));
	for (size_t i = 0; i < n; i++) {
		const struct oci_blob_ref *b;
		char *path = f->paths + i * f->plen;

		k = rf_path(f, objs[i].sha256, path, &b, d);
		if (k < 0)
			return k;
		cache_name(objs[i].sha256, f->names[i]);
		f->gets[i].path = path;
		/* a registry's layer says its blob's size, as a pack list does */
		f->gets[i].size = b ? b->size : objs[i].csize;
		/* unknown: at most what zstd makes of incompressible bytes */
		f->gets[i].max = objs[i].size + (objs[i].size >> 7) + 1024;
		f->gets[i].fd = f->spool;
		f->gets[i].base = at;
		at += f->gets[i].size ? f->gets[i].size : f->gets[i].max;
		if (b)
			f->digests[i] = b->digest;
		memcpy(f->byhash[i].sha, objs[i].sha256, 32);
		f->byhash[i].i = i;
	}
	if (n > 1)
		qsort(f->byhash, n, sizeof(*f->byhash), digest_cmp);
	f->n = n;
	return 0;
}

static int rf_fetch(void *ctx, const fatelf_repo_object *objs, size_t n, fatelf_diag *d)
{
	struct rfetch *f = ctx;
	int k;

	if (f->gets) {
		/* one more (a local copy that changed): after the first batch,
		 * on its own */
		struct repo_get g = { .size = objs[0].csize, .max = objs[0].size + (objs[0].size >> 7) + 1024,
				      .fd = -1, .dirfd = f->cache };
		const struct oci_blob_ref *b;
		_cleanup_free_ char *path = malloc(f->plen);
		char name[80];

		if (!path)
			return fatelf_diag_oom(d);
		/* beside the download, which goes on */
		k = rf_path(f, objs[0].sha256, path, &b, d);
		if (k < 0)
			return k;
		if (b)
			g.size = b->size;
		cache_name(objs[0].sha256, name);
		g.path = path;
		g.name = name;
		k = repo_fetch(f->cfg, f->r, &g, n ? 1 : 0, &f->w->cancel, &f->w->fetch_pid, d);
		f->bytes += g.len;
		if (g.fd >= 0)
			close(g.fd);
		if (k == 0 && b)
			k = cache_digest_check(f->cache, name, b->digest, path, d);
		return k;
	}
	k = rf_prepare(f, objs, n, d);
	if (k < 0)
		return k;
	k = pthread_create(&f->thread, NULL, rf_main, f);
	if (k != 0)
		return fatelf_diag_set(d, -k, -1, "cannot start the download: %s", fatelf_strerror(-k));
	f->running = true;
	return 0;
}

/* The download's error, once it has ended without object i whole. */
static int rf_failed(struct rfetch *f, fatelf_diag *d)
{
	int k = f->result < 0 ? f->result : -EIO;

	if (f->verdict < 0) {
		if (d)
			*d = f->vdiag;
		return f->verdict;
	}
	if (d)
		*d = f->diag;
	if (k == -EIO && d && !d->msg[0])
		k = fatelf_diag_set(d, -EIO, -1, "repository %s: the download ended early", f->r->name);
	return k;
}

/* Waits, under f->lock, until more than pos bytes of object i are in,
 * or it is whole: 1, 0 (whole, nothing past pos), or the download's
 * error. */
static int rf_wait_locked(struct rfetch *f, size_t i, uint64_t pos, fatelf_diag *d)
{
	while (f->have[i] <= pos && !f->ready[i] && !f->finished && !f->verdict) {
		struct timespec ts;

		if (atomic_load(&f->w->cancel))
			atomic_store(&f->stop, 1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	}
	if (f->have[i] > pos)
		return 1;
	return f->ready[i] ? 0 : rf_failed(f, d);
}

/* An object's cache file as the download writes it: each read waits for
 * bytes past what was read, and the end is the end once it is whole. */
struct growing {
	struct rfetch *f;
	size_t i;
	int fd;
	uint64_t base;          /* where the object starts in fd */
	uint64_t pos;
	int err;
	fatelf_diag diag;
	uint8_t buf[128 << 10];
};

static ssize_t growing_read(void *ctx, const void **ret_buf)
{
	struct growing *g = ctx;
	struct rfetch *f = g->f;
	uint64_t have;
	ssize_t n;
	int k;

	pthread_mutex_lock(&f->lock);
	k = rf_wait_locked(f, g->i, g->pos, &g->diag);
	have = f->have[g->i];
	pthread_mutex_unlock(&f->lock);
	if (k <= 0) {
		g->err = k;
		return k;
	}
	do
		n = pread(g->fd, g->buf, (size_t)MIN((uint64_t)sizeof(g->buf), have - g->pos),
			  (off_t)(g->base + g->pos));
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		g->err = n < 0 ? -errno : -EIO;
		return g->err;
	}
	g->pos += (uint64_t)n;
	*ret_buf = g->buf;
	return n;
}

static int rf_object(void *ctx, const uint8_t sha[32], uint64_t size, int (*data)(void *, const void *, size_t),
		     void *dctx, fatelf_diag *d)
{
	struct rfetch *f = ctx;
	const struct byhash *b = f->n ? bsearch(sha, f->byhash, f->n, sizeof(*f->byhash), digest_cmp) : NULL;
	char name[80], shown[FATELF_REPO_OBJECT_PATH_MAX];
	fatelf_reader rd;
	int fd, k;

	fatelf_repo_object_path(sha, shown);
	if (b) {
		/* one of the download running beside: from its first bytes */
		_cleanup_free_ struct growing *g = calloc(1, sizeof(*g));
		const struct repo_get *get = &f->gets[b->i];

		if (!g)
			return fatelf_diag_oom(d);
		*g = (struct growing){ .f = f, .i = b->i, .fd = f->spool, .base = get->base };
		rd = (fatelf_reader){ .read = growing_read, .ctx = g, .fd = -1 };
		k = fatelf_repo_object_read(&rd, sha, size, shown, data, dctx, d);
		/* the download's own reason, not the short frame it left */
		if (k < 0 && g->err < 0 && g->diag.code) {
			*d = g->diag;
			k = g->err;
		}
		return k;
	}
	/* fetched on its own (a local copy that changed) */
	cache_name(sha, name);
	fd = openat(f->cache, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_set(d, -FATELF_E_REPO_MISSING, -1, "repository %s: object %s was not fetched",
				       f->r->name, name);
	k = fatelf_reader_fd(&rd, fd, NULL);
	if (k == 0) {
		k = fatelf_repo_object_read(&rd, sha, size, shown, data, dctx, d);
		fatelf_reader_close(&rd);
	}
	close(fd);
	return k;
}

/* The download cache under the state directory, emptied of what an
 * earlier install left. */
static int open_cache(const engine_config *cfg, fatelf_diag *d)
{
	_cleanup_free_ char *dir = path_join(cfg->state_dir, "cache");
	_cleanup_close_ int pfd = -1;
	int fd;

	if (!dir)
		return fatelf_diag_oom(d);
	/* Through the state directory's descriptor, never its name. */
	pfd = mkdir_p_open(repo_state_fd(), "cache", 0700, 0700, MKDIR_BENEATH, NULL);
	if (pfd < 0)
		return fatelf_diag_set(d, pfd, -1, "%s: %s", dir, fatelf_strerror(pfd));
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", dir, fatelf_strerror(-errno));
	return fd;
}

static void clear_cache(int fd)
{
	DIR *dh;
	struct dirent *de;
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (dup < 0 || !(dh = fdopendir(dup))) {
		if (dup >= 0)
			close(dup);
		return;
	}
	/* The dup shares the directory's offset with fd: from the start. */
	rewinddir(dh);
	while ((de = readdir(dh)))
		if (de->d_name[0] != '.')
			(void)unlinkat(fd, de->d_name, 0);
	closedir(dh);
}

/* A registry's blob's size, for the object it holds. */
static uint64_t rf_csize(void *ctx, const uint8_t sha[32])
{
	struct rfetch *f = ctx;
	const struct oci_blob_ref *b = oci_blobs_find(f->oci, sha);

	return b ? b->size : 0;
}

int repo_install_pieces(worker *w, const struct repo_conf *rc, const struct oci_blobs *oci, struct repo_helper *pre,
			const engine_repo_version *rv, const engine_install_opts *o, engine_result *res,
			struct job_fetch *fs, fatelf_diag *d)
{
	const engine_config *cfg = engine_get_config(w->rw);
	struct rfetch f = { .cfg = cfg, .r = rc, .w = w, .cache = -1, .spool = -1, .oci = oci,
			    .plen = oci ? strlen(oci->prefix) + 65 : FATELF_REPO_OBJECT_PATH_MAX,
			    .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	engine_repo_fetch fe = { .fetch = rf_fetch, .object = rf_object, .csize = oci ? rf_csize : NULL, .ctx = &f };
	engine_repo_stats stats = { 0 };
	int k;

	f.pre = *pre;
	*pre = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	f.cache = open_cache(cfg, d);
	if (f.cache < 0) {
		k = f.cache;
		goto out;
	}
	clear_cache(f.cache);
	k = engine_install_repo(w->rw, rv, &fe, o, &stats, res, d);
	rf_free(&f);
	fs->objects = stats.objects;
	fs->local = stats.local;
	fs->cloned = stats.cloned;
	fs->fetched = stats.fetched;
	/* a dry run's: what the pack list or the layers say it would fetch */
	fs->bytes = rv->pack || (oci && o->dry_run) ? stats.fetch_bytes : f.bytes;
out:
	rf_free(&f);
	if (f.cache >= 0) {
		clear_cache(f.cache);
		close(f.cache);
	}
	return k;
}

