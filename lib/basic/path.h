/*
 * Paths: directories created along a path without following symlinks,
 * and two path pieces joined. mkdir_p walks from a directory descriptor
 * one component at a time (openat with O_NOFOLLOW, mkdirat), so a
 * symlink planted anywhere on the way is refused instead of leading the
 * walk elsewhere.
 */
#ifndef FATELF_PATH_H
#define FATELF_PATH_H

#include <sys/types.h>

/* mkdir_p's flags. */
enum {
	MKDIR_PARENTS_ONLY = 1 << 0,    /* stop before path's last component */
	/* Existing directories may be reached through symlinks: for paths an
	 * admin configures (a state directory, a socket), whose parents only
	 * root may change. New directories are still made one by one. */
	MKDIR_FOLLOW = 1 << 1,
	/* A symlink is followed only on the way (never path's last
	 * component), and only inside a directory that root or we own and
	 * nobody else may write: one that another user could have planted
	 * is refused (-ELOOP). For a state directory an admin named. */
	MKDIR_FOLLOW_TRUSTED = 1 << 2,
	/* Kept beneath dirfd: an absolute path or a ".." component is
	 * -EXDEV. With neither FOLLOW flag, no symlink is ever followed, so
	 * nothing outside dirfd is reached. */
	MKDIR_BENEATH = 1 << 3,
	/* Create nothing: a missing component is -ENOENT. */
	MKDIR_NOCREATE = 1 << 4,
};

/*
 * Creates each missing directory of path, relative to dirfd (AT_FDCWD,
 * or ignored when path is absolute): the directories on the way with
 * parent_mode, path itself with mode (both through the umask). Existing
 * directories are kept as they are. 0, or -errno: -ELOOP for a symlink
 * on the way, -ENOTDIR for another non-directory, -ENAMETOOLONG for a
 * component over NAME_MAX. The last component may exist as anything when
 * MKDIR_PARENTS_ONLY is given; without it, it must be a directory.
 */
int mkdir_p(int dirfd, const char *path, mode_t parent_mode, mode_t mode, unsigned flags);
/* The same, returning an O_PATH descriptor of the last directory reached
 * (path itself, or its parent with MKDIR_PARENTS_ONLY). On failure,
 * *ret_failed (when given) is the length of path's prefix that names the
 * component that failed. */
int mkdir_p_open(int dirfd, const char *path, mode_t parent_mode, mode_t mode, unsigned flags,
		 size_t *ret_failed);

/* a and b joined by one '/' (a slash a ends with or b starts with is not
 * doubled; an empty a gives b). malloc'd; NULL when out of memory. */
char *path_join(const char *a, const char *b);

/* Where a program finds the helper NAME that the build puts in fetch/: in
 * the build tree (the caller runs from a folder beside fetch/), the helper
 * just built there; else INSTALLED_DIR/NAME. */
void helper_program_path(const char *name, const char *installed_dir, char *buf, size_t size);

#endif
