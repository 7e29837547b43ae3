/*
 * Staging one file beside its target under a hidden temp name
 * (lib/bundle/stage.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage.h"

bool fatelf_stage_reserved(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, FATELF_STAGE_PREFIX, strlen(FATELF_STAGE_PREFIX)) == 0;
}

int fatelf_stage_name(int64_t tag, size_t seq, char name[FATELF_STAGE_NAME_MAX])
{
	char run[48];

	snprintf(run, sizeof(run), "%lld.%zu", (long long)tag, seq);
	return fatelf_temp_name(run, name);
}

int fatelf_stage_open(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int fatelf_stage_symlink(int dirfd, const char *name, const char *target)
{
	return symlinkat(target, dirfd, name) < 0 ? -errno : 0;
}

int fatelf_stage_close(int fd, mode_t mode, unsigned flags, const char *what, fatelf_diag *d)
{
	int q = 0;

	if (fd < 0)
		return 0;
	/* A hint: the syncfs before a commit then finds little left to write. */
	if (flags & FATELF_STAGE_WRITEBACK)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	if (fchmod(fd, mode & 07777) < 0)
		q = fatelf_diag_at(d, -errno, -1, what, "cannot set the mode: %s",
				    fatelf_strerror(-errno));
	if (close(fd) < 0 && q == 0)
		q = fatelf_diag_at(d, -errno, -1, what, "cannot write the staged file: %s",
				    fatelf_strerror(-errno));
	return q;
}

int fatelf_stage_commit(int dirfd, const char *name, const char *base)
{
	return renameat(dirfd, name, dirfd, base) < 0 ? -errno : 0;
}

void fatelf_stage_drop(int dirfd, const char *name)
{
	(void)unlinkat(dirfd, name, 0);
}
