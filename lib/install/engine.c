/*
 * The install engine's object: opening a root and a state directory
 * (store, lock, host, recovery of a transaction a crash cut off), its
 * settings and keys, and closing it. The operations live in
 * engine_install.c, engine_remove.c, engine_thin.c and engine_verify.c;
 * the transaction protocol they share in engine_tx.c, its recovery in
 * engine_recover.c; lookups beneath the root in engine_root.c.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "engine_private.h"
#include "macro.h"
#include "path.h"

/* ------------------------------------------------------------ open/close */

/* "/proc/self/fd/N/fatelf.db" when /proc leads to the directory fd holds,
 * else the database's name under dir (no /proc mounted). */
static int db_path_through(int fd, const char *dir, char **ret)
{
	char via[64];
	struct stat a, b;
	int n;

	snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
	if (fstat(fd, &a) == 0 && stat(via, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		n = asprintf(ret, "%s/fatelf.db", via);
	else
		n = asprintf(ret, "%s/fatelf.db", dir);
	return n < 0 ? -ENOMEM : 0;
}

/* The state directory's path relative to the root when it lies inside a
 * root other than "/" (a --root install, a private fatelfd), else NULL. */
static const char *state_dir_beneath(const engine_config *c)
{
	size_t n = strlen(c->root);

	while (n > 0 && c->root[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(c->state_dir, c->root, n) != 0 || c->state_dir[n] != '/')
		return NULL;
	return c->state_dir + n + 1;
}

/*
 * Reaches the state directory without being led elsewhere, creating what
 * is missing (new parents 0755, the directory itself 0700). Inside a root
 * other than "/" it is walked from the root's descriptor and no symlink
 * is followed at all: whoever owns the root (an image a user unpacked)
 * could point var/lib/fatelf anywhere on the host, and root would then
 * change modes and create files there. Elsewhere (a path an admin named)
 * symlinks on the way are followed only where nobody but root could have
 * made them; the directory itself is never a symlink. Returns an O_PATH
 * descriptor.
 */
static int state_dir_walk(const engine_config *c, int rootfd, fatelf_diag *d)
{
	const char *rel = state_dir_beneath(c);
	const char *path = rel ? rel : c->state_dir;
	size_t failed = 0;
	int fd;

	if (rel)
		fd = mkdir_p_open(rootfd, rel, 0755, 0700, MKDIR_BENEATH, &failed);
	else
		fd = mkdir_p_open(AT_FDCWD, c->state_dir, 0755, 0700, MKDIR_FOLLOW_TRUSTED, &failed);
	if (fd >= 0)
		return fd;
	failed += (size_t)(path - c->state_dir);
	snprintf(d->subject, sizeof(d->subject), "%s", c->state_dir);
	if (fd == -ELOOP && rel)
		return fatelf_diag_set(d, fd, -1, "state directory %s: %.*s is a symbolic link inside the "
				       "root: refusing it", c->state_dir, (int)failed, c->state_dir);
	if (fd == -ELOOP && !c->state_dir[failed + strspn(c->state_dir + failed, "/")])
		return fatelf_diag_set(d, fd, -1, "state directory %s is a symbolic link: refusing it",
				       c->state_dir);
	if (fd == -ELOOP)
		return fatelf_diag_set(d, fd, -1, "state directory %s: %.*s is a symbolic link in a "
				       "directory others may write: refusing it", c->state_dir, (int)failed,
				       c->state_dir);
	if (fd == -EXDEV)
		return fatelf_diag_set(d, fd, -1, "state directory %s: leads out of the root %s: refusing it",
				       c->state_dir, c->root);
	return fatelf_diag_set(d, fd, -1, "cannot create the state directory: %s", fatelf_strerror(fd));
}

static int state_dir_unsafe(const char *path, const struct stat *st, fatelf_diag *d)
{
	d->uid = (unsigned)st->st_uid;
	d->mode = (unsigned)(st->st_mode & 07777);
	d->has |= FATELF_DIAG_HAS_UID | FATELF_DIAG_HAS_MODE;
	snprintf(d->subject, sizeof(d->subject), "%s", path);
	if (st->st_uid != geteuid())
		return fatelf_diag_set(d, -ENGINE_E_DIR_UNSAFE, -1,
				       "state directory %s is owned by uid %u, not by uid %u: refusing it",
				       path, (unsigned)st->st_uid, (unsigned)geteuid());
	return fatelf_diag_set(d, -ENGINE_E_DIR_UNSAFE, -1,
			       "state directory %s is writable by %s (mode %04o): refusing it",
			       path, st->st_mode & S_IWOTH ? "others" : "its group",
			       (unsigned)(st->st_mode & 07777));
}

/*
 * The state directory holds the store and the lock: whoever may open a
 * file there may also lock it, and block every transaction or the start
 * itself. So it must belong to us and be writable by nobody else; a mode
 * looser than 0700 (an older install's 0755) is tightened through the
 * descriptor. Returns that descriptor.
 */
static int state_dir_open(const engine_config *c, int rootfd, int *ret_fd, fatelf_diag *d)
{
	_cleanup_close_ int pfd = state_dir_walk(c, rootfd, d);
	_cleanup_close_ int fd = -1;
	const char *path = c->state_dir;
	struct stat st;
	int q;

	if (pfd < 0)
		return pfd;
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		q = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, q, -1, "state directory %s: %s", path, fatelf_strerror(q));
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return state_dir_unsafe(path, &st, d);
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
		q = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, q, -1, "state directory %s: cannot make it mode 0700: %s", path,
				       fatelf_strerror(q));
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/*
 * The files of the state directory that this program opens, modes it
 * changes or SQLite opens by name: each one that exists must be a plain
 * file of ours with one name. A symlink or a hard link there (an image
 * unpacked with its owners kept) would have root write, or chmod, a file
 * elsewhere on the host.
 */
static int state_files_check(int statefd, const char *dir, fatelf_diag *d)
{
	static const char *const names[] = {
		"lock", "fatelf.db", "fatelf.db-wal", "fatelf.db-shm", "fatelf.db-journal",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct stat st;
		int q = 0;

		if (fstatat(statefd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			q = -errno;
		}
		snprintf(d->subject, sizeof(d->subject), "%s/%s", dir, names[i]);
		if (q < 0)
			return fatelf_diag_set(d, q, -1, "%s/%s: %s", dir, names[i], fatelf_strerror(q));
		if (S_ISLNK(st.st_mode))
			return fatelf_diag_set(d, -ELOOP, -1, "%s/%s is a symbolic link: refusing it", dir,
					       names[i]);
		if (!S_ISREG(st.st_mode))
			return fatelf_diag_set(d, -EINVAL, -1, "%s/%s is not a regular file: refusing it",
					       dir, names[i]);
		if (st.st_nlink != 1)
			return fatelf_diag_set(d, -EMLINK, -1,
					       "%s/%s has %ju hard links, so it is also a file elsewhere: "
					       "refusing it", dir, names[i], (uintmax_t)st.st_nlink);
		if (st.st_uid != geteuid())
			return fatelf_diag_set(d, -EPERM, -1, "%s/%s is owned by uid %u, not by uid %u: "
					       "refusing it", dir, names[i], (unsigned)st.st_uid,
					       (unsigned)geteuid());
	}
	fatelf_diag_clear(d);
	return 0;
}

/* A new engine with its own copy of the config and the keys. */
static int engine_new(const engine_config *c, const fatelf_ms_pubkey *keys, size_t nkeys, unsigned flags,
		      engine **ret)
{
	_cleanup_engine_ engine *e = calloc(1, sizeof(*e));
	int q;

	if (!e)
		return -ENOMEM;
	e->rootfd = -1;
	e->lockfd = -1;
	e->statefd = -1;
	e->flags = flags;
	q = engine_config_copy(&e->cfg, c);
	if (q < 0)
		return q;
	if (nkeys > 0) {
		e->keys = calloc(nkeys, sizeof(*keys));
		if (!e->keys)
			return -ENOMEM;
		memcpy(e->keys, keys, nkeys * sizeof(*keys));
		e->nkeys = nkeys;
	}
	*ret = TAKE_PTR(e);
	return 0;
}

/* The root and the state directory opened, the state files checked, and
 * the store's path through the directory. */
static int engine_dirs_open(engine *e, fatelf_diag *d)
{
	int q;

	/* The root as named, not a symlink that the owner of a directory
	 * on the way put there since the caller resolved the name. */
	e->rootfd = mkdir_p_open(AT_FDCWD, e->cfg.root, 0, 0, MKDIR_NOCREATE | MKDIR_FOLLOW_TRUSTED, NULL);
	if (e->rootfd < 0) {
		q = e->rootfd;
		snprintf(d->subject, sizeof(d->subject), "%s", e->cfg.root);
		fatelf_diag_set(d, q, -1, "cannot open the root directory: %s", fatelf_strerror(q));
		return q;
	}
	q = state_dir_open(&e->cfg, e->rootfd, &e->statefd, d);
	if (q < 0)
		return q;
	q = state_files_check(e->statefd, e->cfg.state_dir, d);
	if (q < 0)
		return q;
	/* The store is opened through the directory just checked, not by
	 * its name again: whoever may write in its parent could have put
	 * another directory there since. SQLite finds -wal and -shm beside
	 * the database through the same path. */
	q = db_path_through(e->statefd, e->cfg.state_dir, &e->db_path);
	if (q < 0) {
		fatelf_diag_oom(d);
		return q;
	}
	return 0;
}

/* The lock file of the state directory, made a plain file of mode 0600,
 * locked; whoever holds it already is named. */
static int engine_lock(engine *e, fatelf_diag *d)
{
	char path[4096];
	struct stat st;
	int q;

	snprintf(path, sizeof(path), "%s/lock", e->cfg.state_dir);
	e->lockfd = openat(e->statefd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (e->lockfd < 0 || fstat(e->lockfd, &st) < 0) {
		q = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		fatelf_diag_set(d, q, -1, "cannot open the lock file: %s", fatelf_strerror(q));
		return q;
	}
	if (!S_ISREG(st.st_mode)) {
		q = -EINVAL;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		fatelf_diag_set(d, q, -1, "the lock file %s is not a regular file", path);
		return q;
	}
	if ((st.st_mode & 0777) != 0600 && fchmod(e->lockfd, 0600) < 0) {
		q = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		fatelf_diag_set(d, q, -1, "the lock file %s: cannot make it mode 0600: %s", path,
				fatelf_strerror(q));
		return q;
	}
	if (flock(e->lockfd, LOCK_EX | LOCK_NB) < 0) {
		q = errno == EWOULDBLOCK ? -ENGINE_E_LOCKED : -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		if (q == -ENGINE_E_LOCKED && (st.st_mode & 0077))
			/* Opened by anyone until now: the holder may be
			 * another user rather than a daemon. */
			fatelf_diag_set(d, q, -1,
					"another process holds the lock on the state directory, and "
					"%s was open to other users (mode %04o): if no fatelfd runs, "
					"remove it and start again", path,
					(unsigned)(st.st_mode & 07777));
		else
			fatelf_diag_set(d, q, -1, "%s", q == -ENGINE_E_LOCKED
					? "another process holds the lock on the state directory"
					: fatelf_strerror(q));
		return q;
	}
	return 0;
}

int engine_open(const engine_config *c, const fatelf_ms_pubkey *keys, size_t nkeys, unsigned flags,
		engine **ret, unsigned *ret_recovered, fatelf_diag *d)
{
	_cleanup_engine_ engine *e = NULL;
	char path[4096];
	unsigned recovered = 0;
	fatelf_diag local;
	int q;

	if (!d)
		d = &local;
	fatelf_diag_clear(d);
	q = engine_new(c, keys, nkeys, flags, &e);
	if (q < 0)
		return q;
	q = engine_dirs_open(e, d);
	if (q < 0)
		return q;
	/* The lock comes before the store, so that two daemons never both
	 * migrate or recover. */
	if (!(flags & ENGINE_OPEN_READONLY)) {
		q = engine_lock(e, d);
		if (q < 0)
			return q;
	}

	snprintf(path, sizeof(path), "%s/fatelf.db", e->cfg.state_dir);
	/* The daemon opens the write engine before any other connection to
	 * the store: the time to fix the files' modes. */
	q = store_open(e->db_path, flags & ENGINE_OPEN_READONLY ? 0 : STORE_OPEN_SECURE, &e->st, d);
	if (q < 0) {
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return q;
	}

	q = fatelf_host_detect(&e->host);
	if (q < 0) {
		fatelf_diag_set(d, q, -1, "cannot tell this host's targets: %s", fatelf_strerror(q));
		return q;
	}

	if (!(flags & ENGINE_OPEN_READONLY)) {
		q = eng_recover(e, &recovered, d);
		if (q < 0)
			return q;
	}
	if (ret_recovered)
		*ret_recovered = recovered;
	*ret = TAKE_PTR(e);
	return 0;
}

engine *engine_close(engine *e)
{
	if (!e)
		return NULL;
	store_close(e->st);
	if (e->statefd >= 0)
		close(e->statefd);
	free(e->db_path);
	if (e->rootfd >= 0)
		close(e->rootfd);
	if (e->lockfd >= 0)
		close(e->lockfd); /* releases the flock */
	engine_config_done(&e->cfg);
	free(e->keys);
	free(e);
	return NULL;
}

struct store *engine_store(engine *e)
{
	return e->st;
}

const char *engine_db_path(engine *e)
{
	return e->db_path;
}

int engine_state_fd(engine *e)
{
	return e->statefd;
}

const fatelf_host *engine_host(engine *e)
{
	return &e->host;
}

const engine_config *engine_get_config(engine *e)
{
	return &e->cfg;
}

int engine_reconfigure(engine *e, const engine_config *c, const fatelf_ms_pubkey *keys, size_t nkeys,
		       fatelf_diag *d)
{
	engine_config n = { 0 };
	fatelf_ms_pubkey *k = NULL;

	if (!c->root || !c->state_dir || strcmp(c->root, e->cfg.root) != 0 ||
	    strcmp(c->state_dir, e->cfg.state_dir) != 0)
		return fatelf_diag_set(d, -EINVAL, -1,
				       "the root and the state directory change only when the engine is opened again");
	if (engine_config_copy(&n, c) < 0) {
		engine_config_done(&n);
		return fatelf_diag_oom(d);
	}
	if (nkeys > 0) {
		k = calloc(nkeys, sizeof(*k));
		if (!k) {
			engine_config_done(&n);
			return fatelf_diag_oom(d);
		}
		memcpy(k, keys, nkeys * sizeof(*k));
	}
	engine_config_done(&e->cfg);
	e->cfg = n;
	free(e->keys);
	e->keys = k;
	e->nkeys = nkeys;
	return 0;
}

void engine_result_done(engine_result *r)
{
	if (!r)
		return;
	free(r->package);
	free(r->old_version);
	free(r->new_version);
	for (size_t i = 0; i < r->nconfig_kept; i++)
		free(r->config_kept[i]);
	free(r->config_kept);
	for (size_t i = 0; i < r->ntaken; i++) {
		free(r->taken[i].path);
		free(r->taken[i].from);
		free(r->taken[i].kept_by);
		free(r->taken[i].kept_version);
	}
	free(r->taken);
	for (size_t i = 0; i < r->nemptied; i++)
		free(r->emptied[i]);
	free(r->emptied);
	for (size_t i = 0; i < r->nwarnings; i++)
		free(r->warnings[i].path);
	free(r->warnings);
	memset(r, 0, sizeof(*r));
}

