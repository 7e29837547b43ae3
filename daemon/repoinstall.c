/*
 * Install{package}: the worker fetches the version a repository offers
 * (doc/repository.md) and installs it with the engine's repository
 * install: the manifest, its signature and the pack list first, then, at
 * the end of the preflight, only the objects the install writes that no
 * installed file already has, into a download cache under the state
 * directory that is emptied before and after. Every byte is checked
 * against its hash as it is staged.
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

#include "hex.h"
#include "macro.h"
#include "path.h"
#include "repos.h"
#include "worker_private.h"

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
	 * object as soon as it is whole, in the order the helper was given
	 * (the manifest's), while the next ones arrive. */
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct repo_get *gets;
	char (*paths)[FATELF_REPO_OBJECT_PATH_MAX];
	char (*names)[80];
	bool *ready;
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

static int byhash_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

static void rf_done(void *ctx, size_t i)
{
	struct rfetch *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->ready[i] = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static void *rf_main(void *arg)
{
	struct rfetch *f = arg;
	fatelf_diag d = { 0 };
	int k = repo_fetch_each(f->cfg, f->r, f->gets, f->n, &f->stop, &f->w->fetch_pid, rf_done, f, &d);

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
	for (size_t i = 0; i < f->n; i++) {
		f->bytes += f->gets[i].len;
		if (f->gets[i].fd >= 0)
			close(f->gets[i].fd);
	}
}

static void rf_free(struct rfetch *f)
{
	rf_finish(f);
	free(f->gets);
	free(f->paths);
	free(f->names);
	free(f->ready);
	free(f->byhash);
	f->gets = NULL;
	f->paths = NULL;
	f->names = NULL;
	f->ready = NULL;
	f->byhash = NULL;
	f->n = 0;
}

/* gets for objs into the cache, each file opened at its first bytes. */
static int rf_prepare(struct rfetch *f, const fatelf_repo_object *objs, size_t n, fatelf_diag *d)
{
	f->gets = calloc(n ? n : 1, sizeof(*f->gets));
	f->paths = calloc(n ? n : 1, sizeof(*f->paths));
	f->names = calloc(n ? n : 1, sizeof(*f->names));
	f->ready = calloc(n ? n : 1, sizeof(*f->ready));
	f->byhash = calloc(n ? n : 1, sizeof(*f->byhash));
	if (!f->gets || !f->paths || !f->names || !f->ready || !f->byhash)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	for (size_t i = 0; i < n; i++) {
		fatelf_repo_object_path(objs[i].sha256, f->paths[i]);
		cache_name(objs[i].sha256, f->names[i]);
		f->gets[i].path = f->paths[i];
		f->gets[i].size = objs[i].csize;
		/* unknown: at most what zstd makes of incompressible bytes */
		f->gets[i].max = objs[i].size + (objs[i].size >> 7) + 1024;
		f->gets[i].fd = -1;
		f->gets[i].dirfd = f->cache;
		f->gets[i].name = f->names[i];
		memcpy(f->byhash[i].sha, objs[i].sha256, 32);
		f->byhash[i].i = i;
	}
	if (n > 1)
		qsort(f->byhash, n, sizeof(*f->byhash), byhash_cmp);
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
		char path[FATELF_REPO_OBJECT_PATH_MAX], name[80];

		rf_finish(f);
		fatelf_repo_object_path(objs[0].sha256, path);
		cache_name(objs[0].sha256, name);
		g.path = path;
		g.name = name;
		k = repo_fetch(f->cfg, f->r, &g, n ? 1 : 0, &f->w->cancel, &f->w->fetch_pid, d);
		f->bytes += g.len;
		if (g.fd >= 0)
			close(g.fd);
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

/* Waits until object sha is whole in the cache, when it is one the
 * download running beside the staging fetches. */
static int rf_wait(struct rfetch *f, const uint8_t sha[32], fatelf_diag *d)
{
	const struct byhash *b = f->n ? bsearch(sha, f->byhash, f->n, sizeof(*f->byhash), byhash_cmp) : NULL;
	int k = 0;

	if (!b || !f->running)
		return 0;
	pthread_mutex_lock(&f->lock);
	while (!f->ready[b->i] && !f->finished) {
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
	if (!f->ready[b->i]) {
		k = f->result < 0 ? f->result : -EIO;
		if (d)
			*d = f->diag;
		if (k == -EIO && d && !d->msg[0])
			k = fatelf_diag_set(d, -EIO, -1, "repository %s: the download ended early", f->r->name);
	}
	pthread_mutex_unlock(&f->lock);
	return k;
}

static int rf_object(void *ctx, const uint8_t sha[32], uint64_t size, int (*data)(void *, const void *, size_t),
		     void *dctx, fatelf_diag *d)
{
	struct rfetch *f = ctx;
	char name[80];
	fatelf_reader rd;
	int fd, k;

	k = rf_wait(f, sha, d);
	if (k < 0)
		return k;
	cache_name(sha, name);
	fd = openat(f->cache, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_set(d, -FATELF_E_REPO_MISSING, -1, "repository %s: object %s was not fetched",
				       f->r->name, name);
	k = fatelf_reader_fd(&rd, fd, NULL);
	if (k == 0) {
		char shown[FATELF_REPO_OBJECT_PATH_MAX];

		fatelf_repo_object_path(sha, shown);
		k = fatelf_repo_object_read(&rd, sha, size, shown, data, dctx, d);
		fatelf_reader_close(&rd);
	}
	close(fd);
	return k;
}

struct membuf {
	char *p;
	size_t len, cap;
};

static int membuf_put(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (len > m->cap - m->len)
		return -EFBIG;
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

/* The download cache under the state directory, emptied of what an
 * earlier install left. */
static int open_cache(const engine_config *cfg, fatelf_diag *d)
{
	_cleanup_free_ char *dir = path_join(cfg->state_dir, "cache");
	int k, fd;

	if (!dir)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	k = mkdir_p(AT_FDCWD, dir, 0700, 0700, MKDIR_FOLLOW);
	if (k < 0)
		return fatelf_diag_set(d, k, -1, "%s: %s", dir, fatelf_strerror(k));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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

int job_install_repo(worker *w, job *j, const engine_install_opts *o)
{
	const engine_config *cfg = engine_get_config(w->rw);
	struct repo_conf rc = { 0 };
	fatelf_repo_index *ix = NULL;
	const fatelf_repo_version *v = NULL;
	char mpath[FATELF_REPO_MANIFEST_PATH_MAX], spath[FATELF_REPO_MANIFEST_PATH_MAX],
		ppath[FATELF_REPO_OBJECT_PATH_MAX];
	struct repo_get gets[3] = { { .fd = -1 }, { .fd = -1 }, { .fd = -1 } };
	struct repo_get *gman = &gets[0], *gsig = NULL, *gpack = NULL;
	struct membuf pack_text = { 0 };
	fatelf_repo_pack *pack = NULL;
	struct rfetch f = { .cfg = cfg, .w = w, .cache = -1, .lock = PTHREAD_MUTEX_INITIALIZER,
			    .cond = PTHREAD_COND_INITIALIZER };
	engine_repo_fetch fe = { .fetch = rf_fetch, .object = rf_object, .ctx = &f };
	engine_repo_version rv = { 0 };
	engine_repo_stats stats = { 0 };
	uint8_t sha[32];
	fatelf_sha256 *h;
	size_t ngets;
	int k;

	k = repo_resolve(cfg, j->repo_spec, &rc, &ix, &v, &j->diag);
	if (k < 0) {
		if (k == -ENOENT) {
			char name[256];
			const char *eq = strchr(j->repo_spec, '=');

			snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - j->repo_spec) : 255, j->repo_spec);
			FATELF_DIAG_FACT(&j->diag, package, name);
			return -ENGINE_E_NOT_INSTALLED;
		}
		return k;
	}
	j->repo_name = strdup(rc.name);
	f.r = &rc;
	fatelf_repo_manifest_path(v->manifest, false, mpath);
	fatelf_repo_manifest_path(v->manifest, true, spath);
	fatelf_repo_object_path(v->pack, ppath);
	/* The pack list is needed for the frames it lists, and for a dry
	 * run's compressed sizes; a version with no stored frame installs
	 * without it, so that an upgrade fetches the manifest and the objects
	 * that changed alone. */
	ngets = 1;
	gets[0] = (struct repo_get){ .path = mpath, .size = v->manifest_size, .fd = -1 };
	if (v->signed_manifest) {
		gsig = &gets[ngets++];
		*gsig = (struct repo_get){ .path = spath, .max = FATELF_REPO_SIG_MAX, .fd = -1 };
	}
	if (v->frames > 0 || o->dry_run) {
		gpack = &gets[ngets++];
		*gpack = (struct repo_get){ .path = ppath, .max = v->pack_size + (v->pack_size >> 4) + (1u << 16),
					    .fd = -1 };
	}
	k = repo_fetch(cfg, &rc, gets, ngets, &w->cancel, &w->fetch_pid, &j->diag);
	if (k < 0)
		goto out;
	j->fetch.metadata = 0;
	for (size_t i = 0; i < ngets; i++)
		j->fetch.metadata += gets[i].len;
	/* The manifest must be the one the signed index names. */
	h = fatelf_sha256_new();
	if (!h) {
		k = -ENOMEM;
		goto out;
	}
	fatelf_sha256_update(h, gman->buf, gman->len);
	fatelf_sha256_final(h, sha);
	fatelf_sha256_free(h);
	if (memcmp(sha, v->manifest, 32) != 0) {
		k = fatelf_diag_set(&j->diag, -FATELF_E_REPO_OBJECT, -1, "%s: does not hash to its name", mpath);
		goto out;
	}
	if (gpack) {
		fatelf_reader rd;

		fatelf_reader_mem(&rd, gpack->buf, gpack->len);
		pack_text.cap = (size_t)v->pack_size + 1;
		pack_text.p = malloc(pack_text.cap);
		if (!pack_text.p) {
			k = -ENOMEM;
			goto out;
		}
		k = fatelf_repo_object_read(&rd, v->pack, v->pack_size, ppath, membuf_put, &pack_text, &j->diag);
		fatelf_reader_close(&rd);
		if (k == 0)
			k = fatelf_repo_pack_parse(pack_text.p, pack_text.len, &pack, &j->diag);
		if (k < 0)
			goto out;
	}
	f.cache = open_cache(cfg, &j->diag);
	if (f.cache < 0) {
		k = f.cache;
		goto out;
	}
	clear_cache(f.cache);
	rv.manifest = gman->buf;
	rv.manifest_len = gman->len;
	rv.sig = gsig ? gsig->buf : NULL;
	rv.sig_len = gsig ? gsig->len : 0;
	rv.pack = pack;
	k = engine_install_repo(w->rw, &rv, &fe, o, &stats, &j->result, &j->diag);
	rf_free(&f);
	j->has_fetch = true;
	j->fetch.objects = stats.objects;
	j->fetch.local = stats.local;
	j->fetch.cloned = stats.cloned;
	j->fetch.fetched = stats.fetched;
	j->fetch.bytes = pack ? stats.fetch_bytes : f.bytes;
out:
	rf_free(&f);
	if (f.cache >= 0) {
		clear_cache(f.cache);
		close(f.cache);
	}
	for (size_t i = 0; i < 3; i++)
		free(gets[i].buf);
	free(pack_text.p);
	fatelf_repo_pack_free(pack);
	fatelf_repo_index_free(ix);
	repo_conf_done(&rc);
	return k;
}
