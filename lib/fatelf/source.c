/*
 * Byte sources: the one way readers get at a file's bytes, whether it is
 * an fd or a buffer in memory (a fuzz input, a test fixture).
 */
#include <string.h>
#include <sys/stat.h>

#include "fatelf.h"
#include "macro.h"

static ssize_t fd_pread(const fatelf_source *s, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(s->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t mem_pread(const fatelf_source *s, void *buf, size_t len, uint64_t off)
{

	if (off >= s->size)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	memcpy(buf, s->mem + off, len);
	return (ssize_t)len;
}

int fatelf_source_fd(fatelf_source *ret, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	memset(ret, 0, sizeof(*ret));
	ret->pread = fd_pread;
	ret->size = (uint64_t)st.st_size;
	ret->fd = fd;
	return 0;
}

void fatelf_source_mem(fatelf_source *ret, const void *mem, size_t len)
{
	memset(ret, 0, sizeof(*ret));
	ret->pread = mem_pread;
	ret->size = len;
	ret->fd = -1;
	ret->mem = mem;
}

int fatelf_source_read(const fatelf_source *src, void *buf, size_t len, uint64_t off)
{
	ssize_t n = src->pread(src, buf, len, off);

	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}
