/*
 * Safe paths beneath a root directory: opening the directory that holds a
 * relative path without ever following a symlink or leaving the root, and
 * creating the missing directories on the way. Extraction writes where a
 * bundle says, into trees that others may have prepared, so a symlink
 * planted at "opt" must not send "opt/game/bin/game" anywhere else.
 *
 * openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS does the whole
 * walk in one call when every directory exists. When it fails (a missing
 * directory, a symlink, a file in the way) or the kernel lacks it, the
 * walk goes one component at a time with O_NOFOLLOW, so that the error
 * can name the exact prefix that is wrong and missing directories can be
 * made.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "bundle.h"
#include "macro.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)

/*
 * openat2 confined beneath dirfd with no symlinks at all. Returns the fd,
 * -ENOSYS when the kernel (or a seccomp filter, which answers EPERM) does
 * not offer it, or -errno.
 */
static int open_beneath(int dirfd, const char *path)
{
	struct open_how how = {
		.flags = DIR_FLAGS | O_NOFOLLOW,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && (errno == EINTR || errno == EAGAIN));
	if (fd < 0)
		return errno == EPERM ? -ENOSYS : -errno;
	return (int)fd;
}

/* One component, no symlink followed: openat2 if it works, else O_NOFOLLOW. */
static int open_component(int dirfd, const char *name)
{
	int fd = open_beneath(dirfd, name);

	if (fd != -ENOSYS)
		return fd;
	fd = openat(dirfd, name, DIR_FLAGS | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

/*
 * Why name (the last component of prefix, in dirfd) could not be opened
 * as a directory: a symlink and a non-directory get their own wording, as
 * O_NOFOLLOW | O_DIRECTORY reports either as ELOOP or ENOTDIR.
 */
static int component_error(int dirfd, const char *name, const char *prefix, int err,
			   fatelf_diag *d)
{
	struct stat st;

	if (err == -ELOOP || err == -ENOTDIR || err == -EXDEV) {
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISLNK(st.st_mode))
				return fatelf_diag_set(d, -ELOOP, -1,
						       "%s: is a symlink; refusing to follow it", prefix);
			if (!S_ISDIR(st.st_mode))
				return fatelf_diag_set(d, -ENOTDIR, -1, "%s: is not a directory", prefix);
		}
	}
	if (err == -ENOENT)
		return fatelf_diag_set(d, err, -1, "%s: no such directory", prefix);
	return fatelf_diag_set(d, err, -1, "%s: cannot open the directory: %s", prefix,
			       fatelf_strerror(err));
}

/* The path rules this walk relies on, checked here again on purpose. */
static int check_path(const char *path, fatelf_diag *d)
{
	const char *p = path;

	if (!path || !*path)
		return fatelf_diag_set(d, -FATELF_E_PATH_INVALID, -1, "empty path");
	if (*path == '/')
		return fatelf_diag_set(d, -FATELF_E_PATH_ABSOLUTE, -1, "%s: absolute path", path);
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return fatelf_diag_set(d, -FATELF_E_PATH_DOTDOT, -1,
					       "%s: has a '..' component", path);
		if (n == 0 || (n == 1 && p[0] == '.'))
			return fatelf_diag_set(d, -FATELF_E_PATH_INVALID, -1,
					       "%s: has an empty or '.' component", path);
		if (n > 255)
			return fatelf_diag_set(d, -ENAMETOOLONG, -1, "%s: a component is too long",
					       path);
		p += n;
		if (*p == '/') {
			p++;
			if (!*p)
				return fatelf_diag_set(d, -FATELF_E_PATH_INVALID, -1,
						       "%s: ends with '/'", path);
		}
	}
	return 0;
}

int fatelf_root_open_parent(int rootfd, const char *path, bool mkdirs, const char **ret_base,
			    fatelf_diag *d)
{
	_cleanup_close_ int cur = -1;
	char prefix[4096];
	const char *base, *p;
	int q;

	q = check_path(path, d);
	if (q < 0)
		return q;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if ((size_t)(base - path) >= sizeof(prefix))
		return fatelf_diag_set(d, -ENAMETOOLONG, -1, "%.200s...: path too long", path);

	/* Fast path: every directory already there, nothing on the way is a symlink. */
	if (base > path) {
		memcpy(prefix, path, (size_t)(base - path - 1));
		prefix[base - path - 1] = '\0';
		q = open_beneath(rootfd, prefix);
		if (q >= 0) {
			*ret_base = base;
			return q;
		}
	}

	cur = openat(rootfd, ".", DIR_FLAGS);
	if (cur < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot open the root directory: %s",
				       fatelf_strerror(-errno));
	for (p = path; p < base;) {
		size_t n = strcspn(p, "/");
		char name[256];
		int next;

		memcpy(name, p, n);
		name[n] = '\0';
		/* prefix: the path up to and including this component */
		memcpy(prefix, path, (size_t)(p - path) + n);
		prefix[(p - path) + n] = '\0';

		next = open_component(cur, name);
		if (next == -ENOENT && mkdirs) {
			if (mkdirat(cur, name, 0755) < 0 && errno != EEXIST)
				return fatelf_diag_set(d, -errno, -1, "%s: cannot create the directory: %s",
						       prefix, fatelf_strerror(-errno));
			next = open_component(cur, name);
		}
		if (next < 0)
			return component_error(cur, name, prefix, next, d);
		closep(&cur);
		cur = next;
		p += n + 1;
	}
	*ret_base = base;
	return TAKE_FD(cur);
}

bool fatelf_dir_is_empty(int fd)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	struct dirent *de;
	bool empty = true;
	DIR *dir;

	if (dup < 0)
		return false;
	dir = fdopendir(dup);
	if (!dir) {
		close(dup);
		return false;
	}
	errno = 0;
	while (empty && (de = readdir(dir)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			empty = false;
	if (errno)
		empty = false;
	closedir(dir);
	return empty;
}
