/*
 * The reader's constructors: a descriptor (with poll, silence timeout,
 * deadline and cancel), a mapped regular file, and memory; and the random
 * access that the seekable ones share.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "macro.h"
#include "reader.h"

#define FD_BUFSIZE ((size_t)128 << 10)
#define POLL_ROUND_MS 500

static uint64_t mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void free_ctx(void *ctx)
{
	free(ctx);
}

/* ------------------------------------------------------------ random access */

static ssize_t fd_pread(const fatelf_reader *r, void *buf, size_t len, uint64_t off)
{
	return pread_all(r->fd, buf, len, off);
}

static ssize_t mem_pread(const fatelf_reader *r, void *buf, size_t len, uint64_t off)
{
	if (off >= r->size)
		return 0;
	if (len > r->size - off)
		len = (size_t)(r->size - off);
	memcpy(buf, r->mem + off, len);
	return (ssize_t)len;
}

/* Gives ret the random access of fd when it has a fixed size; else none. */
static int seekable_fd(fatelf_reader *ret, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	ret->pread = fd_pread;
	ret->size = (uint64_t)st.st_size;
	ret->fd = fd;
	return 0;
}

int fatelf_reader_seekable_fd(fatelf_reader *ret, int fd)
{
	fatelf_reader r = { .fd = -1 };
	int q = seekable_fd(&r, fd);

	if (q < 0)
		return q;
	*ret = r;
	return 0;
}

void fatelf_reader_seekable_mem(fatelf_reader *ret, const void *mem, size_t len)
{
	*ret = (fatelf_reader){ .pread = mem_pread, .size = len, .fd = -1, .mem = mem };
}

int fatelf_reader_read_at(const fatelf_reader *r, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (!r->pread)
		return -ESPIPE;
	n = r->pread(r, buf, len, off);
	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

/* ------------------------------------------------------------ descriptor */

struct fd_reader {
	int fd;
	bool poll;
	bool eof;
	unsigned silence_sec;
	uint64_t deadline_usec;         /* mono_usec() past which a read fails; 0: none */
	const atomic_int *cancel;
	size_t bufsize;
	uint8_t buf[];
};

static bool cancelled(const struct fd_reader *s)
{
	return s->cancel && atomic_load(s->cancel);
}

static ssize_t fd_read(void *ctx, const void **ret_buf)
{
	struct fd_reader *s = ctx;
	uint64_t silent_since = mono_usec();

	for (;;) {
		ssize_t n;

		if (cancelled(s))
			return -ECANCELED;
		if (s->deadline_usec && mono_usec() >= s->deadline_usec)
			return -ETIME;
		if (s->poll) {
			struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
			int r = poll(&pfd, 1, POLL_ROUND_MS);

			if (r < 0 && errno != EINTR)
				return -errno;
			if (r <= 0) {
				if (s->silence_sec &&
				    mono_usec() - silent_since >= (uint64_t)s->silence_sec * 1000000u)
					return -ETIMEDOUT;
				continue;
			}
		}
		n = read(s->fd, s->buf, s->bufsize);
		if (n > 0) {
			*ret_buf = s->buf;
			return n;
		}
		if (n == 0) {
			s->eof = true;
			/* A cancel may be what closed the other end (a killed
			 * download): that end is the cancel, not a short input. */
			if (cancelled(s))
				return -ECANCELED;
			*ret_buf = s->buf;
			return 0;
		}
		if (errno == EINTR || (errno == EAGAIN && s->poll))
			continue;
		return -errno;
	}
}

int fatelf_reader_fd(fatelf_reader *ret, int fd, const fatelf_reader_fd_opts *o)
{
	static const fatelf_reader_fd_opts none;
	struct fd_reader *s;
	size_t bufsize;

	if (!o)
		o = &none;
	bufsize = o->bufsize ? o->bufsize : FD_BUFSIZE;
	s = malloc(sizeof(*s) + bufsize);
	if (!s)
		return -ENOMEM;
	*s = (struct fd_reader){
		.fd = fd,
		.poll = o->poll,
		.silence_sec = o->silence_sec,
		.deadline_usec = o->deadline_sec ? mono_usec() + (uint64_t)o->deadline_sec * 1000000u : 0,
		.cancel = o->cancel,
		.bufsize = bufsize,
	};
	*ret = (fatelf_reader){ .read = fd_read, .ctx = s, .close = free_ctx, .fd = -1 };
	(void)seekable_fd(ret, fd);     /* a pipe or a socket: sequential only */
	return 0;
}

bool fatelf_reader_at_eof(const fatelf_reader *r)
{
	return r->read == fd_read && ((const struct fd_reader *)r->ctx)->eof;
}

/* ------------------------------------------------------------ mapped file */

/*
 * One window mapped at a time, so the pages of a file of any size never
 * pile up in the resident set; the contract that a buffer stays valid
 * until the next read is what lets the window move on then.
 */
#define MAP_WINDOW ((size_t)16 << 20)

struct map_reader {
	int fd;
	uint64_t size;
	uint64_t off;
	void *win;
	size_t winlen;
};

static void map_unmap(struct map_reader *s)
{
	if (s->win) {
		munmap(s->win, s->winlen);
		s->win = NULL;
	}
}

static ssize_t map_read(void *ctx, const void **ret_buf)
{
	struct map_reader *s = ctx;
	size_t len;
	void *win;

	map_unmap(s);
	if (s->off >= s->size)
		return 0;
	len = s->size - s->off < MAP_WINDOW ? (size_t)(s->size - s->off) : MAP_WINDOW;
	win = mmap(NULL, len, PROT_READ, MAP_PRIVATE, s->fd, (off_t)s->off);
	if (win == MAP_FAILED)
		return -errno;
	(void)madvise(win, len, MADV_SEQUENTIAL);
	(void)madvise(win, len, MADV_WILLNEED);
	s->win = win;
	s->winlen = len;
	s->off += len;
	*ret_buf = win;
	return (ssize_t)len;
}

static void map_close(void *ctx)
{
	map_unmap(ctx);
	free(ctx);
}

int fatelf_reader_map(fatelf_reader *ret, int fd)
{
	struct map_reader *s;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = fd;
	s->size = (uint64_t)st.st_size;
	/* random access reads the descriptor, not the window */
	*ret = (fatelf_reader){ .read = map_read, .pread = fd_pread, .size = s->size, .ctx = s,
				.close = map_close, .fd = fd };
	return 0;
}

int fatelf_reader_file(fatelf_reader *ret, int fd)
{
	static const fatelf_reader_fd_opts big = { .bufsize = (size_t)1 << 20 };
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && lseek(fd, 0, SEEK_CUR) == 0)
		return fatelf_reader_map(ret, fd);
	return fatelf_reader_fd(ret, fd, &big);
}

/* ------------------------------------------------------------ memory */

struct mem_reader {
	const uint8_t *buf;
	size_t len;
	size_t off;
};

static ssize_t mem_read(void *ctx, const void **ret_buf)
{
	struct mem_reader *s = ctx;
	size_t n = MIN(s->len - s->off, (size_t)SSIZE_MAX);

	*ret_buf = s->buf + s->off;
	s->off += n;
	return (ssize_t)n;
}

int fatelf_reader_mem(fatelf_reader *ret, const void *buf, size_t len)
{
	struct mem_reader *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->buf = buf;
	s->len = len;
	*ret = (fatelf_reader){ .read = mem_read, .pread = mem_pread, .size = len, .ctx = s,
				.close = free_ctx, .fd = -1, .mem = buf };
	return 0;
}

/* ------------------------------------------------------------ */

void fatelf_reader_close(fatelf_reader *r)
{
	if (r->close && r->ctx)
		r->close(r->ctx);
	*r = (fatelf_reader){ 0 };
}

ssize_t fatelf_reader_drain(const fatelf_reader *r, void *buf, size_t cap)
{
	size_t have = 0;

	if (!r->read)
		return -ESPIPE;
	for (;;) {
		const void *p = NULL;
		ssize_t n = r->read(r->ctx, &p);

		if (n < 0)
			return n;
		if (n == 0)
			return (ssize_t)have;
		if ((size_t)n > cap - have)
			return -EFBIG;
		memcpy((uint8_t *)buf + have, p, (size_t)n);
		have += (size_t)n;
	}
}
