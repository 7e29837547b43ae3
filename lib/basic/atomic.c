/*
 * Temp files beside their targets, renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "atomic.h"

/* Random words drawn 32 at a time: a transaction names thousands of
 * temps, and one getrandom each cost more than the rest of the name. Each
 * word is used once; a child forked with words left may use the same ones
 * as its parent, which O_EXCL and the tries catch. */
#define RANDOM_POOL 32

static int random64(uint64_t *ret)
{
	static __thread uint64_t pool[RANDOM_POOL];
	static __thread size_t left;

	if (left == 0) {
		for (size_t got = 0; got < sizeof(pool);) {
			ssize_t k = getrandom((char *)pool + got, sizeof(pool) - got, 0);

			if (k < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			got += (size_t)k;
		}
		left = RANDOM_POOL;
	}
	*ret = pool[--left];
	pool[left] = 0;
	return 0;
}

int fatelf_temp_name(const char *tag, char buf[FATELF_TEMP_NAME_MAX])
{
	uint64_t rnd = 0;
	int r;

	if (strchr(tag, '/'))
		return -EINVAL;
	r = random64(&rnd);
	if (r < 0)
		return r;
	/* prefix, '.', 16 digits and the NUL leave 200 bytes for the tag */
	snprintf(buf, FATELF_TEMP_NAME_MAX, FATELF_TEMP_PREFIX "%.200s.%016llx", tag,
		 (unsigned long long)rnd);
	return 0;
}

int fatelf_tmpfile_open(int dirfd, const char *tag, mode_t mode, fatelf_tmpfile *ret)
{
	int r = -EEXIST;

	*ret = (fatelf_tmpfile){ .dirfd = dirfd, .fd = -1 };
	for (int i = 0; i < FATELF_TEMP_TRIES && r == -EEXIST; i++) {
		r = fatelf_temp_name(tag, ret->name);
		if (r < 0)
			break;
		ret->fd = openat(dirfd, ret->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				 mode);
		if (ret->fd >= 0)
			return 0;
		r = -errno;
	}
	ret->name[0] = '\0';
	return r;
}

int fatelf_tmpfile_commit(fatelf_tmpfile *t, const char *name, bool durable)
{
	int r = 0;

	if (durable && fsync(t->fd) < 0)
		r = -errno;
	if (close(t->fd) < 0 && r == 0)
		r = -errno;
	t->fd = -1;
	if (r == 0 && renameat(t->dirfd, t->name, t->dirfd, name) < 0)
		r = -errno;
	if (r < 0) {
		fatelf_tmpfile_abort(t);
		return r;
	}
	t->name[0] = '\0';
	if (durable && fsync(t->dirfd) < 0)
		return -errno;
	return 0;
}

void fatelf_tmpfile_abort(fatelf_tmpfile *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->name[0])
		unlinkat(t->dirfd, t->name, 0);
	t->name[0] = '\0';
}
