/*
 * The file operations of a transaction's plan, one at a time: done after
 * the commit point (a rename into place, an unlink, an rmdir) or undone
 * before it (a temp dropped, a file to remove moved back, a new directory
 * removed). The transaction (engine_tx.c) and recovery at start
 * (engine_recover.c) both run them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "engine_private.h"
#include "macro.h"

/* Flushes every file system write of the root's file system. */
int eng_sync_root(engine *e, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;

	/* syncfs refuses the O_PATH descriptor the engine keeps. */
	fd = openat(e->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syncfs(fd) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot sync the root file system: %s",
				       fatelf_strerror(-errno));
	return 0;
}

/*
 * Does one planned operation after the commit point. With tolerant (at
 * recovery) a temp that is gone was renamed already, and a parent that is
 * gone means nothing is left to do.
 */
int eng_op_forward(engine *e, int kind, const char *path, const char *temp, bool tolerant,
		      fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1;
	fatelf_diag tmp;
	const char *base;

	if (kind == STORE_JOP_MKDIR)
		return 0;
	dirfd = eng_open_parent(e, path, &base, &tmp);
	if (dirfd < 0) {
		if (tolerant && dirfd == -ENOENT)
			return 0;
		if (d)
			*d = tmp;
		return dirfd;
	}
	switch (kind) {
	case STORE_JOP_CREATE:
	case STORE_JOP_REPLACE: {
		int q = fatelf_stage_commit(dirfd, eng_base_of(temp), base);

		if (q == 0 || (tolerant && q == -ENOENT))
			return 0;
		return fatelf_diag_at(d, q, -1, path, "cannot rename the staged file into place: %s", fatelf_strerror(q));
	}
	case STORE_JOP_REMOVE:
		/* Unlinked by its name; a journal of an older program names
		 * the temp it was moved to before the commit point. */
		if (unlinkat(dirfd, temp ? eng_base_of(temp) : base, 0) < 0 && errno != ENOENT)
			return fatelf_diag_at(d, -errno, -1, path, "cannot remove it: %s",
					       fatelf_strerror(-errno));
		return 0;
	case STORE_JOP_RMDIR:
		/* Only an empty directory goes: the admin's files keep theirs. */
		if (unlinkat(dirfd, base, AT_REMOVEDIR) < 0 && errno != ENOENT &&
		    errno != ENOTEMPTY && errno != EEXIST)
			return fatelf_diag_at(d, -errno, -1, path, "cannot remove the directory: %s",
					       fatelf_strerror(-errno));
		return 0;
	}
	return 0;
}

/*
 * Undoes one operation before the commit point: drops its temp, moves a
 * file to remove back, or removes the directory it created when nothing
 * else landed in it. held (or -1) is the directory the temp was made in,
 * held open: when the path no longer leads there (the directory was
 * moved, or swapped for a symlink), the temp is still found through it.
 */
void eng_op_backward(engine *e, int kind, const char *path, const char *temp, int held)
{
	_cleanup_close_ int dirfd = -1;
	const char *base;
	int fd;

	/* A file to remove is not moved before the commit point, so there is
	 * nothing to undo; a journal of an older program, which moved it to
	 * its temp name, has it moved back. */
	if (!eng_op_has_temp(kind) && kind != STORE_JOP_MKDIR && kind != STORE_JOP_REMOVE)
		return;
	if ((eng_op_has_temp(kind) || kind == STORE_JOP_REMOVE) && !temp)
		return;
	dirfd = eng_open_parent(e, path, &base, NULL);
	fd = dirfd >= 0 ? dirfd : held;
	if (fd < 0)
		return;
	if (dirfd < 0)
		base = eng_base_of(path);
	if (eng_op_has_temp(kind))
		fatelf_stage_drop(fd, eng_base_of(temp));
	else if (kind == STORE_JOP_REMOVE)
		(void)renameat(fd, eng_base_of(temp), fd, base);
	else if (dirfd >= 0)
		(void)unlinkat(dirfd, base, AT_REMOVEDIR);
}
