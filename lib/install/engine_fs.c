/*
 * The engine's safe lookups beneath the root: opening a path's parent
 * through descriptors without following symlinks, lstat of a path, the
 * check that a directory is what it must be, and hashing a file of the
 * root; plus progress reporting to the caller.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_private.h"
#include "macro.h"

int eng_open_parent(engine *e, const char *path, const char **ret_base, fatelf_diag *d)
{
	if (!path || path[0] != '/' || path[1] == '\0')
		return fatelf_diag_set(d, -EINVAL, -1, "%s: not an absolute path inside the root",
				       path ? path : "(null)");
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
		return fatelf_diag_set(d, q, -1, "%s: %s", path, fatelf_strerror(q));
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
		fatelf_diag_set(d, -ENGINE_E_DIR_UNSAFE, -1,
				"%s: the directory exists, owned by uid %u with mode %04o; the bundle "
				"declares mode %04o owned by root (--force takes it over)",
				path, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
				(unsigned)(want & 07777));
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	}
	return -ENGINE_E_DIR_UNSAFE;
}

int eng_hash_file(engine *e, const char *path, char hex[65], uint64_t *ret_size, fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1, fd = -1;
	fatelf_sha256 *h;
	const char *base;
	uint8_t buf[65536], md[32];
	uint64_t size = 0;
	struct stat st;

	dirfd = eng_open_parent(e, path, &base, d);
	if (dirfd < 0)
		return dirfd;
	fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: cannot open it: %s", path,
				       fatelf_strerror(-errno));
	if (fstat(fd, &st) < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", path, fatelf_strerror(-errno));
	if (!S_ISREG(st.st_mode))
		return fatelf_diag_set(d, -EINVAL, -1, "%s: not a regular file", path);
	h = fatelf_sha256_new();
	if (!h)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int q = -errno;
			fatelf_sha256_free(h);
			return fatelf_diag_set(d, q, -1, "%s: cannot read it: %s", path,
					       fatelf_strerror(q));
		}
		if (n == 0)
			break;
		fatelf_sha256_update(h, buf, (size_t)n);
		size += (uint64_t)n;
	}
	fatelf_sha256_final(h, md);
	fatelf_sha256_free(h);
	fatelf_hex(md, sizeof(md), hex);
	if (ret_size)
		*ret_size = size;
	return 0;
}

int eng_progress(engine_progress_cb cb, void *userdata, const char *phase, uint64_t bytes_done,
		 uint64_t bytes_total, uint64_t entries_done, uint64_t entries_total,
		 const char *path)
{
	engine_progress p = {
		.phase = phase,
		.bytes_done = bytes_done,
		.bytes_total = bytes_total,
		.entries_done = entries_done,
		.entries_total = entries_total,
		.path = path,
	};

	if (!cb)
		return 0;
	return cb(&p, userdata) < 0 ? -ECANCELED : 0;
}
