/*
 * Paths: mkdir -p relative to a directory descriptor, one component at a
 * time and never through a symlink (unless asked), and joining two pieces.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "path.h"

/* The directory name beneath dirfd, opened without following a symlink
 * unless follow (O_PATH: a directory we may search but not read still
 * works). */
static int dir_open(int dirfd, const char *name, bool follow)
{
	int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | (follow ? 0 : O_NOFOLLOW) | O_CLOEXEC);
	struct stat st;

	if (fd >= 0)
		return fd;
	if (!follow && errno == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	return -errno;
}

/* May a symlink inside the directory fd be followed under
 * MKDIR_FOLLOW_TRUSTED? Only when nobody but us and root could have put
 * it there. */
static bool dir_trusted(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return false;
	return !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int mkdir_p_open(int dirfd, const char *path, mode_t parent_mode, mode_t mode, unsigned flags,
		 size_t *ret_failed)
{
	_cleanup_close_ int cur = -1;
	const char *p = path;
	bool beneath = flags & MKDIR_BENEATH;

	if (!path || !*path)
		return -EINVAL;
	if (*p == '/') {
		if (beneath)
			return -EXDEV;
		cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cur < 0)
			return -errno;
		while (*p == '/')
			p++;
	}
	while (*p) {
		char name[NAME_MAX + 1];
		size_t len = strcspn(p, "/");
		const char *next = p + len;
		int at = cur >= 0 ? cur : dirfd;
		bool last, follow;
		int fd;

		while (*next == '/')
			next++;
		last = *next == '\0';
		if (last && (flags & MKDIR_PARENTS_ONLY))
			break;
		if (ret_failed)
			*ret_failed = (size_t)(p + len - path);
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, len);
		name[len] = '\0';
		/* ".." would climb out of the directory the walk is kept in. */
		if (beneath && strcmp(name, "..") == 0)
			return -EXDEV;
		follow = flags & MKDIR_FOLLOW;
		if (flags & MKDIR_FOLLOW_TRUSTED)
			follow = !last && dir_trusted(at);
		fd = dir_open(at, name, follow);
		if (fd == -ENOENT && !(flags & MKDIR_NOCREATE)) {
			/* Somebody may create it between the two calls: that is fine. */
			if (mkdirat(at, name, last ? mode : parent_mode) < 0 && errno != EEXIST)
				return -errno;
			fd = dir_open(at, name, follow);
		}
		if (fd < 0)
			return fd;
		closep(&cur);
		cur = fd;
		p = next;
	}
	if (cur < 0) {
		/* Nothing walked ("/", or only the parents of one component). */
		cur = openat(*path == '/' ? AT_FDCWD : dirfd, *path == '/' ? "/" : ".",
			     O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cur < 0)
			return -errno;
	}
	return TAKE_FD(cur);
}

int mkdir_p(int dirfd, const char *path, mode_t parent_mode, mode_t mode, unsigned flags)
{
	int fd = mkdir_p_open(dirfd, path, parent_mode, mode, flags, NULL);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

char *path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb;
	bool slash;
	char *r;

	while (la > 0 && a[la - 1] == '/' && *b == '/')
		b++;
	lb = strlen(b);
	slash = la > 0 && a[la - 1] != '/' && *b != '/';
	r = malloc(la + slash + lb + 1);
	if (!r)
		return NULL;
	memcpy(r, a, la);
	if (slash)
		r[la] = '/';
	memcpy(r + la + slash, b, lb + 1);
	return r;
}

void helper_program_path(const char *name, const char *installed_dir, char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if ((size_t)snprintf(buf, size, "%s/../fetch/%s", self, name) < size &&
			    access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, size, "%s/%s", installed_dir, name);
}
