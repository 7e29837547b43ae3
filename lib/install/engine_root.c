/*
 * Lookups beneath the engine's root: every path the engine touches is
 * reached from the root's descriptor without following symlinks, and a
 * directory the bundle declares is checked before anything lands in it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_private.h"
#include "macro.h"

int eng_open_parent(engine *e, const char *path, const char **ret_base, fatelf_diag *d)
{
	if (!path || path[0] != '/' || path[1] == '\0')
		return fatelf_diag_at(d, -EINVAL, -1, path ? path : "(null)", "not an absolute path inside the root");
	return fatelf_root_open_parent(e->rootfd, path + 1, false, ret_base, d);
}

int eng_lstat(engine *e, const char *path, struct stat *ret, fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1;
	const char *base;
	fatelf_diag tmp;

	/* A missing parent is a missing path, and not worth a message. */
	dirfd = eng_open_parent(e, path, &base, &tmp);
	if (dirfd == -ENOENT)
		return -ENOENT;
	if (dirfd < 0) {
		if (d)
			*d = tmp;
		return dirfd;
	}
	if (fstatat(dirfd, base, ret, AT_SYMLINK_NOFOLLOW) < 0) {
		int q = -errno;
		if (q == -ENOENT)
			return q;
		return fatelf_diag_at(d, q, -1, path, "%s", fatelf_strerror(q));
	}
	return 0;
}

void eng_parent_cache_clear(eng_parent_cache *c)
{
	if (c->dir && c->fd >= 0)
		close(c->fd);
	free(c->dir);
	*c = (eng_parent_cache){ .fd = -1 };
}

int eng_lstat_in(engine *e, eng_parent_cache *c, const char *path, struct stat *ret,
		 fatelf_diag *d)
{
	const char *base;
	size_t len;
	int fd;

	if (!path || path[0] != '/' || path[1] == '\0')
		return eng_lstat(e, path, ret, d);
	len = (size_t)(eng_base_of(path) - path);
	if (!c->dir || c->len != len || memcmp(c->dir, path, len) != 0) {
		fatelf_diag tmp;
		char *dir = strndup(path, len);

		if (!dir)
			return fatelf_diag_oom(d);
		fd = eng_open_parent(e, path, &base, &tmp);
		if (fd < 0 && fd != -ENOENT) {
			free(dir);
			if (d)
				*d = tmp;
			return fd;
		}
		eng_parent_cache_clear(c);
		*c = (eng_parent_cache){ .dir = dir, .len = len, .fd = fd < 0 ? -1 : fd,
					 .err = fd < 0 ? fd : 0 };
	}
	/* A missing parent is a missing path, and not worth a message. */
	if (c->err < 0)
		return c->err;
	if (fstatat(c->fd, path + len, ret, AT_SYMLINK_NOFOLLOW) < 0) {
		int q = -errno;
		if (q == -ENOENT)
			return q;
		return fatelf_diag_at(d, q, -1, path, "%s", fatelf_strerror(q));
	}
	return 0;
}

int eng_dir_check(const char *path, const struct stat *st, mode_t want, fatelf_diag *d)
{
	/* Write bits the bundle does not give are what let someone else swap
	 * root's files inside; a sticky directory (/tmp) keeps them out. */
	mode_t extra = st->st_mode & ~want & (S_IWGRP | S_IWOTH);

	if (st->st_mode & S_ISVTX)
		extra = 0;
	if (st->st_uid == geteuid() && !extra)
		return 0;
	if (d) {
		d->uid = (unsigned)st->st_uid;
		d->mode = (unsigned)(st->st_mode & 07777);
		d->has |= FATELF_DIAG_HAS_UID | FATELF_DIAG_HAS_MODE;
		fatelf_diag_at(d, -ENGINE_E_DIR_UNSAFE, -1, path,
			       "the directory exists, owned by uid %u with mode %04o; the bundle "
			       "declares mode %04o owned by root (--force takes it over)",
			       (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
			       (unsigned)(want & 07777));
	}
	return -ENGINE_E_DIR_UNSAFE;
}
