/*
 * The run cache: where fatelf-run keeps the thin copy of the record it
 * selected, so that every exec after the first costs a few stat calls and
 * one execve instead of a copy of the record.
 *
 * Two things matter here besides speed. First, nobody else may put a
 * binary where a user will run it: the cache directory and every
 * directory above it must be closed to other users, and it is checked on
 * every run, not only when created. Second, a fat program must see the
 * world as if it ran from where the fat file is: the entry is named like
 * the fat file (so /proc/self/exe ends in its name), and when the record
 * uses $ORIGIN the entry is a mirror of the fat file's directory (and as
 * many parents as its references climb), full of symlinks to the real
 * entries, so that $ORIGIN/../lib found from /proc/self/exe is the real
 * ../lib.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "fatelf.h"
#include "io.h"
#include "macro.h"
#include "run.h"

#define CACHE_ROOT_DIR "/var/cache/fatelf"
/* In each file's directory: a symlink to the fat file it caches, so that
 * a later first run can tell the file is gone or replaced. */
#define SOURCE_LINK ".source"
/* Temp directories older than this belong to a run that died. */
#define CACHE_STALE_TMP_SECONDS 3600

/* buf = a + b, or -ENAMETOOLONG rather than a cut path. */
static int path_set(char *buf, size_t cap, const char *a, const char *b)
{
	int n = snprintf(buf, cap, "%s%s", a, b);

	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int fatelf_run_cache_default(bool secure, char *buf, size_t cap)
{
	struct passwd *pw;
	const char *v;

	if (!secure) {
		v = getenv("FATELF_RUN_CACHE_DIR");
		if (v && v[0] == '/')
			return path_set(buf, cap, v, "");
	}
	if (geteuid() == 0)
		return path_set(buf, cap, CACHE_ROOT_DIR, "");
	if (!secure) {
		v = getenv("XDG_CACHE_HOME");
		if (v && v[0] == '/')
			return path_set(buf, cap, v, "/fatelf");
		v = getenv("HOME");
		if (v && v[0] == '/')
			return path_set(buf, cap, v, "/.cache/fatelf");
	}
	pw = getpwuid(geteuid());
	if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
		return -ENOENT;
	return path_set(buf, cap, pw->pw_dir, "/.cache/fatelf");
}

/* A directory on the way down: root's or uid's, and closed to others
 * unless it is sticky (then only its owners' entries are theirs). */
static int dir_check(const struct stat *st, uid_t uid, bool last, const char *path,
		     fatelf_diag *d)
{
	if (!S_ISDIR(st->st_mode))
		return fatelf_diag_set(d, -ENOTDIR, -1, "cache directory %s: not a directory",
				       path);
	if (last) {
		if (st->st_uid != uid)
			return fatelf_diag_set(d, -EPERM, -1,
					       "cache directory %s is owned by uid %u, not %u",
					       path, (unsigned)st->st_uid, (unsigned)uid);
		if (st->st_mode & (S_IWGRP | S_IWOTH))
			return fatelf_diag_set(d, -EPERM, -1,
					       "cache directory %s is writable by group or others",
					       path);
		return 0;
	}
	if (st->st_uid != 0 && st->st_uid != uid)
		return fatelf_diag_set(d, -EPERM, -1,
				       "cache directory %s: %s is owned by uid %u",
				       path, "a parent directory", (unsigned)st->st_uid);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return fatelf_diag_set(d, -EPERM, -1,
				       "cache directory %s: a parent directory is writable by "
				       "group or others", path);
	return 0;
}

int fatelf_run_cache_open(const char *path, uid_t uid, fatelf_run_cache *ret, fatelf_diag *d)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int fd = -1;
	char *p, *slash;
	size_t len;
	struct stat st;
	int r;

	ret->fd = -1;
	if (!path || path[0] != '/')
		return fatelf_diag_set(d, -EINVAL, -1, "cache directory %s is not absolute",
				       path ? path : "(none)");
	len = strlen(path);
	if (len >= sizeof(ret->path))
		return fatelf_diag_set(d, -ENAMETOOLONG, -1, "cache directory path too long");
	copy = strdup(path);
	if (!copy)
		return fatelf_diag_oom(d);

	/*
	 * Walk down from / one component at a time, never through a symlink,
	 * creating what is missing: what is checked is what is used.
	 */
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	r = dir_check(&st, uid, false, path, d);
	if (r < 0)
		return r;
	for (p = copy + 1; *p; p = slash ? slash + 1 : p + strlen(p)) {
		int nfd;
		bool last;

		slash = strchr(p, '/');
		if (slash)
			*slash = '\0';
		last = !slash || slash[1] == '\0';
		if (p[0] == '\0' || strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") == 0)
			return fatelf_diag_set(d, -EINVAL, -1,
					       "cache directory %s has a '..' component", path);
		nfd = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT) {
			if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST)
				return fatelf_diag_set(d, -errno, -1,
						       "cannot create cache directory %s: %s",
						       path, strerror(errno));
			nfd = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			r = -errno;
			if (r == -ELOOP || r == -ENOTDIR)
				return fatelf_diag_set(d, r, -1,
						       "cache directory %s: '%s' is a symlink or "
						       "not a directory", path, p);
			return fatelf_diag_set(d, r, -1, "cannot open cache directory %s: %s",
					       path, strerror(-r));
		}
		closep(&fd);
		fd = nfd;
		if (fstat(fd, &st) < 0)
			return -errno;
		r = dir_check(&st, uid, last, path, d);
		if (r < 0)
			return r;
		if (!slash)
			break;
	}
	ret->fd = TAKE_FD(fd);
	ret->uid = uid;
	memcpy(ret->path, path, len + 1);
	/* no trailing slash, so entry paths join cleanly */
	while (len > 1 && ret->path[len - 1] == '/')
		ret->path[--len] = '\0';
	return 0;
}

void fatelf_run_cache_close(fatelf_run_cache *c)
{
	if (c && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

/* FNV-1a, 64 bits: names a file's entries; not a security boundary (the
 * directory is the user's own), only a way to keep paths short. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define HASH_INIT 0xcbf29ce484222325ull

static uint64_t hash_stat(uint64_t h, const struct stat *st)
{
	uint64_t v[6] = {
		(uint64_t)st->st_dev, (uint64_t)st->st_ino,
		(uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
		(uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
	};

	return hash_bytes(h, v, sizeof(v));
}

/* The directories an $ORIGIN view mirrors: dir and its `depth` parents
 * (fewer at the top of the tree). anc[0] = dir. */
#define VIEW_MAX (FATELF_ORIGIN_DEPTH_MAX + 1)
struct view {
	int levels;                     /* entries in anc */
	char anc[VIEW_MAX][PATH_MAX];
};

static int view_init(struct view *v, const char *dir, int depth)
{
	int n;

	v->levels = 0;
	n = snprintf(v->anc[0], PATH_MAX, "%s", dir);
	if (n < 0 || n >= PATH_MAX)
		return -ENAMETOOLONG;
	v->levels = 1;
	for (int j = 1; j <= depth && j < VIEW_MAX; j++) {
		const char *prev = v->anc[j - 1];
		const char *slash = strrchr(prev, '/');
		size_t len;

		if (strcmp(prev, "/") == 0)
			break;
		len = slash && slash != prev ? (size_t)(slash - prev) : 1;
		memcpy(v->anc[j], prev, len);
		v->anc[j][len] = '\0';
		v->levels = j + 1;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* The key directory's name: everything that, when it changes, must give a
 * new entry. */
static int entry_key(const fatelf_run_request *req, const struct view *v, char *buf,
		     size_t cap)
{
	int n = snprintf(buf, cap, "%llx.%09ld-%llx.%09ld-%llx-r%u",
			 (unsigned long long)req->st.st_mtim.tv_sec, req->st.st_mtim.tv_nsec,
			 (unsigned long long)req->st.st_ctim.tv_sec, req->st.st_ctim.tv_nsec,
			 (unsigned long long)req->size, req->record);

	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	if (v) {
		uint64_t h = HASH_INIT;

		for (int j = 0; j < v->levels; j++) {
			struct stat st;

			if (stat(v->anc[j], &st) < 0)
				return -errno;
			h = hash_bytes(h, v->anc[j], strlen(v->anc[j]) + 1);
			h = hash_stat(h, &st);
		}
		n += snprintf(buf + n, cap - (size_t)n, "-o%d-%016llx", v->levels - 1,
			      (unsigned long long)h);
		if ((size_t)n >= cap)
			return -ENAMETOOLONG;
	}
	return 0;
}

/* The entry's path below the key directory: the mirrored directories
 * from the top down, then the fat file's name. */
static int entry_subpath(const fatelf_run_request *req, const struct view *v, char *buf,
			 size_t cap)
{
	size_t len = 0;
	int n;

	buf[0] = '\0';
	if (v) {
		for (int j = v->levels - 2; j >= 0; j--) {
			n = snprintf(buf + len, cap - len, "%s/", base_name(v->anc[j]));
			if (n < 0 || (size_t)n >= cap - len)
				return -ENAMETOOLONG;
			len += (size_t)n;
		}
	}
	n = snprintf(buf + len, cap - len, "%s", req->name);
	if (n < 0 || (size_t)n >= cap - len)
		return -ENAMETOOLONG;
	return 0;
}

static int rm_rf_at(int parent, const char *name, int depth)
{
	struct stat st;

	if (depth > VIEW_MAX + 2)
		return -ELOOP;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *dir;
		struct dirent *de;

		if (fd < 0)
			return -errno;
		dir = fdopendir(fd);
		if (!dir) {
			close(fd);
			return -ENOMEM;
		}
		while ((de = readdir(dir))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			rm_rf_at(dirfd(dir), de->d_name, depth + 1);
		}
		closedir(dir);
		if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	if (unlinkat(parent, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * Fills the mirror of v->anc[level] inside dfd: a symlink for every entry
 * of the real directory, except the one that leads down to the fat file
 * (a real directory, filled the same way) or, at level 0, the fat file
 * itself (left for the caller to write).
 */
static int view_fill(int dfd, const struct view *v, int level, const char *name,
		     fatelf_diag *d)
{
	const char *real = v->anc[level];
	const char *skip = level > 0 ? base_name(v->anc[level - 1]) : name;
	DIR *dir = opendir(real);
	struct dirent *de;
	int r = 0;

	if (!dir)
		return fatelf_diag_set(d, -errno, -1, "cannot read directory %s for the $ORIGIN "
				       "view: %s", real, strerror(errno));
	while ((de = readdir(dir))) {
		char target[PATH_MAX];
		int n;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, skip) == 0)
			continue;
		n = snprintf(target, sizeof(target), "%s%s%s", real,
			     strcmp(real, "/") == 0 ? "" : "/", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(target))
			continue;
		if (symlinkat(target, dfd, de->d_name) < 0 && errno != EEXIST) {
			r = fatelf_diag_set(d, -errno, -1, "cannot build the $ORIGIN view of %s: %s",
					    real, strerror(errno));
			break;
		}
	}
	closedir(dir);
	if (r < 0 || level == 0)
		return r;
	if (mkdirat(dfd, skip, 0700) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot build the $ORIGIN view: %s",
				       strerror(errno));
	{
		_cleanup_close_ int sub = openat(dfd, skip, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);

		if (sub < 0)
			return -errno;
		return view_fill(sub, v, level - 1, name, d);
	}
}

/* Checks the entry at sub (relative to kfd): uid's regular file, closed
 * to others, executable, of the record's size. 1 when good, 0 when
 * missing, negative when something else is there. */
static int entry_check(int kfd, const char *sub, const fatelf_run_cache *c,
		       const fatelf_run_request *req)
{
	struct stat st;

	if (fstatat(kfd, sub, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != c->uid || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    !(st.st_mode & S_IXUSR) || (uint64_t)st.st_size != req->size)
		return -EBADMSG;
	return 1;
}

/* A directory stream of the directory fd refers to (which may be an
 * O_PATH descriptor), leaving fd open. */
static DIR *dir_open_at(int fd)
{
	int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;

	if (rfd < 0)
		return NULL;
	dir = fdopendir(rfd);
	if (!dir)
		close(rfd);
	return dir;
}

/* Removes the file's other entries: an older version of it (or of its
 * directory) that nothing will look up again. A process already running
 * one keeps its inode. */
static void entry_prune(int ffd, const char *keep)
{
	DIR *dir = dir_open_at(ffd);
	struct dirent *de;
	time_t now = time(NULL);

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, keep) == 0 || strcmp(de->d_name, SOURCE_LINK) == 0)
			continue;
		/* ".tmp." is what earlier versions named their temps */
		if (strncmp(de->d_name, FATELF_TEMP_PREFIX, strlen(FATELF_TEMP_PREFIX)) == 0 ||
		    strncmp(de->d_name, ".tmp.", 5) == 0) {
			/* another run may be writing it right now */
			if (fstatat(ffd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    now - st.st_mtime < CACHE_STALE_TMP_SECONDS)
				continue;
		}
		rm_rf_at(ffd, de->d_name, 0);
	}
	closedir(dir);
}

/* Records which file a file directory caches (atomically replaced). */
static void source_link_write(int ffd, const fatelf_run_request *req)
{
	char target[PATH_MAX];
	int n;

	if (!req->dir)
		return;
	n = snprintf(target, sizeof(target), "%s%s%s", req->dir,
		     strcmp(req->dir, "/") == 0 ? "" : "/", req->name);
	if (n < 0 || (size_t)n >= sizeof(target))
		return;
	unlinkat(ffd, SOURCE_LINK ".new", 0);
	if (symlinkat(target, ffd, SOURCE_LINK ".new") == 0 &&
	    renameat(ffd, SOURCE_LINK ".new", ffd, SOURCE_LINK) < 0)
		unlinkat(ffd, SOURCE_LINK ".new", 0);
}

/* true when the file directory `name` still caches a file that exists:
 * its .source names a file with the device and inode in its name. */
static bool file_dir_live(int cfd, const char *name, time_t now)
{
	char link[PATH_MAX], target[PATH_MAX];
	unsigned long long dev, ino, h;
	struct stat st;
	ssize_t n;
	int len = snprintf(link, sizeof(link), "%s/%s", name, SOURCE_LINK);

	if (len < 0 || (size_t)len >= sizeof(link))
		return true;
	if (sscanf(name, "%llx-%llx-%16llx", &dev, &ino, &h) != 3)
		return true; /* not ours to judge */
	n = readlinkat(cfd, link, target, sizeof(target) - 1);
	if (n <= 0) {
		/* no source known (an unlinked file): keep it a while */
		return fstatat(cfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       now - st.st_mtime < CACHE_STALE_TMP_SECONDS;
	}
	target[n] = '\0';
	if (stat(target, &st) < 0)
		return !(errno == ENOENT || errno == ENOTDIR);
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/*
 * Removes the entries of files that are gone or were replaced (an upgrade
 * renames a new file over the old one: a new inode, so a new file
 * directory, and the old one would stay forever). Runs only when a run
 * has just written an entry, so the fast path never pays for it.
 */
static void cache_gc(const fatelf_run_cache *c, const char *keep)
{
	DIR *dir = dir_open_at(c->fd);
	time_t now = time(NULL);
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, keep) == 0)
			continue;
		if (!file_dir_live(dirfd(dir), de->d_name, now))
			rm_rf_at(dirfd(dir), de->d_name, 0);
	}
	closedir(dir);
}

static int entry_create(int ffd, const char *key, const char *sub, const fatelf_run_cache *c,
			const fatelf_run_request *req, const struct view *v, fatelf_diag *d)
{
	char tmp[FATELF_TEMP_NAME_MAX];
	_cleanup_close_ int tfd = -1;
	_cleanup_close_ int bdir = -1;
	_cleanup_close_ int out = -1;
	int r;

	r = fatelf_temp_name(key, tmp);
	if (r < 0 || mkdirat(ffd, tmp, 0700) < 0) {
		r = r < 0 ? r : -errno;
		return fatelf_diag_set(d, r, -1, "cannot create a cache entry in %s: %s",
				       c->path, strerror(-r));
	}
	tfd = openat(ffd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0) {
		r = -errno;
		goto fail;
	}
	if (v) {
		r = view_fill(tfd, v, v->levels - 1, req->name, d);
		if (r < 0)
			goto fail;
		/* the directory the binary goes in: the bottom of the mirror */
		{
			char dirpart[PATH_MAX];
			const char *slash = strrchr(sub, '/');
			size_t len = slash ? (size_t)(slash - sub) : 0;

			if (len == 0) {
				bdir = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
			} else {
				memcpy(dirpart, sub, len);
				dirpart[len] = '\0';
				bdir = openat(tfd, dirpart, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					      O_CLOEXEC);
			}
			if (bdir < 0) {
				r = -errno;
				goto fail;
			}
		}
	} else {
		bdir = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
		if (bdir < 0) {
			r = -errno;
			goto fail;
		}
	}
	out = openat(bdir, req->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
	if (out < 0) {
		r = -errno;
		goto fail;
	}
	r = copy_range(req->fd, req->offset, out, 0, req->size);
	if (r < 0)
		goto fail;
	/* durable before it has its name: a crash never leaves a short
	 * binary where the next run would exec it */
	if (fdatasync(out) < 0) {
		r = -errno;
		goto fail;
	}
	closep(&out);
	if (renameat(ffd, tmp, ffd, key) < 0) {
		r = -errno;
		rm_rf_at(ffd, tmp, 0);
		/* another run got there first: theirs is as good as ours */
		if (r == -EEXIST || r == -ENOTEMPTY) {
			_cleanup_close_ int kfd = openat(ffd, key, O_PATH | O_DIRECTORY |
							 O_NOFOLLOW | O_CLOEXEC);

			if (kfd >= 0 && entry_check(kfd, sub, c, req) == 1)
				return 0;
		}
		return fatelf_diag_set(d, r, -1, "cannot store the cache entry in %s: %s",
				       c->path, strerror(-r));
	}
	entry_prune(ffd, key);
	source_link_write(ffd, req);
	return 1;
fail:
	rm_rf_at(ffd, tmp, 0);
	if (d && d->code == 0)
		fatelf_diag_set(d, r, -1, "cannot write the cache entry in %s: %s", c->path,
				strerror(-r));
	return r;
}

int fatelf_run_cache_get(fatelf_run_cache *c, const fatelf_run_request *req,
			 fatelf_run_entry *ret, fatelf_diag *d)
{
	_cleanup_free_ struct view *v = NULL;
	char fname[96], key[160], sub[PATH_MAX];
	_cleanup_close_ int ffd = -1;
	_cleanup_close_ int kfd = -1;
	uint64_t h;
	int r, n;

	ret->path[0] = '\0';
	ret->created = false;
	if (req->origin_depth >= 0 && req->dir) {
		v = malloc(sizeof(*v));
		if (!v)
			return fatelf_diag_oom(d);
		r = view_init(v, req->dir, req->origin_depth);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "path too long for an $ORIGIN view");
	}
	/* One directory per file and the name it runs under: hard links in
	 * two directories are two different views. */
	h = hash_bytes(HASH_INIT, req->dir ? req->dir : "", req->dir ? strlen(req->dir) : 0);
	h = hash_bytes(h, "/", 1);
	h = hash_bytes(h, req->name, strlen(req->name));
	snprintf(fname, sizeof(fname), "%llx-%llx-%016llx", (unsigned long long)req->st.st_dev,
		 (unsigned long long)req->st.st_ino, (unsigned long long)h);
	r = entry_key(req, v, key, sizeof(key));
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot name the cache entry: %s", strerror(-r));
	r = entry_subpath(req, v, sub, sizeof(sub));
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "path too long for a cache entry");
	n = snprintf(ret->path, sizeof(ret->path), "%s/%s/%s/%s", c->path, fname, key, sub);
	if (n < 0 || (size_t)n >= sizeof(ret->path)) {
		ret->path[0] = '\0';
		return fatelf_diag_set(d, -ENAMETOOLONG, -1, "path too long for a cache entry");
	}

	ffd = openat(c->fd, fname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ffd < 0 && errno == ENOENT) {
		if (mkdirat(c->fd, fname, 0700) < 0 && errno != EEXIST)
			return fatelf_diag_set(d, -errno, -1, "cannot create a cache entry in %s: %s",
					       c->path, strerror(errno));
		ffd = openat(c->fd, fname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (ffd < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot open the cache entry in %s: %s",
				       c->path, strerror(errno));

	kfd = openat(ffd, key, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (kfd >= 0) {
		r = entry_check(kfd, sub, c, req);
		if (r == 1)
			return 0;
		/* damaged or foreign: start over */
		closep(&kfd);
		rm_rf_at(ffd, key, 0);
	}
	r = entry_create(ffd, key, sub, c, req, v, d);
	if (r < 0) {
		ret->path[0] = '\0';
		return r;
	}
	ret->created = r == 1;
	if (ret->created)
		cache_gc(c, fname);
	return 0;
}
