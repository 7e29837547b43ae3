/*
 * SHA-256 of an installed file, read beneath the engine's root.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_private.h"
#include "macro.h"

int eng_hash_file(engine *e, const char *path, char hex[65], uint64_t *ret_size, fatelf_diag *d)
{
	return eng_hash_file_stat(e, path, hex, ret_size, NULL, d);
}

int eng_hash_file_stat(engine *e, const char *path, char hex[65], uint64_t *ret_size,
		       struct stat *ret_st, fatelf_diag *d)
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
		return fatelf_diag_at(d, -errno, -1, path, "cannot open it: %s",
				       fatelf_strerror(-errno));
	if (fstat(fd, &st) < 0)
		return fatelf_diag_at(d, -errno, -1, path, "%s", fatelf_strerror(-errno));
	if (!S_ISREG(st.st_mode))
		return fatelf_diag_at(d, -EINVAL, -1, path, "not a regular file");
	h = fatelf_sha256_new();
	if (!h)
		return fatelf_diag_oom(d);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int q = -errno;
			fatelf_sha256_free(h);
			return fatelf_diag_at(d, q, -1, path, "cannot read it: %s",
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
	if (ret_st)
		*ret_st = st;
	return 0;
}

