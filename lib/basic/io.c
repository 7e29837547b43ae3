/*
 * Plain file-descriptor I/O: whole writes, small whole files, and byte
 * ranges copied by the cheapest means the two files allow.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "io.h"
#include "macro.h"

/* All of buf at off, or at fd's position for COPY_AT_POSITION. */
static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = off == COPY_AT_POSITION ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		if (off != COPY_AT_POSITION)
			off += (uint64_t)n;
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	return write_at(fd, buf, len, COPY_AT_POSITION);
}

int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return write_at(fd, buf, len, off);
}

ssize_t pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (off > (uint64_t)INT64_MAX || len > (size_t)SSIZE_MAX)
		return -EINVAL;
	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

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

/* ------------------------------------------------------------ small files */

int read_fd_max(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0, cap;

	if (max >= SIZE_MAX / 2)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	/* A regular file says its size (procfs says 0 and is read like a
	 * pipe); one byte more leaves room to see its end in one read. */
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > max)
			return -EFBIG;
		cap = (size_t)st.st_size + 1;
	} else {
		cap = MIN(max + 1, (size_t)4096);
	}
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap <= max / 2 ? cap * 2 : max + 1;
			char *grown;

			if (len > max)
				return -EFBIG;
			grown = realloc(buf, ncap + 1);
			if (!grown)
				return -ENOMEM;
			buf = grown;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return -EFBIG;
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

int read_file_max(int dirfd, const char *path, unsigned flags, size_t max, char **ret_buf,
		  size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY;

	if (flags & READ_FILE_NOFOLLOW)
		oflags |= O_NOFOLLOW;
	/* A FIFO would block the open; it is refused after it anyway. */
	if (flags & READ_FILE_REGULAR)
		oflags |= O_NONBLOCK;
	fd = openat(dirfd, path, oflags);
	if (fd < 0)
		return -errno;
	if (flags & READ_FILE_REGULAR) {
		struct stat st;

		if (fstat(fd, &st) < 0)
			return -errno;
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
	}
	return read_fd_max(fd, max, ret_buf, ret_len);
}

/* ------------------------------------------------------------ byte ranges */

#define COPY_BUFSIZE ((size_t)1 << 20)

static int copy_by_hand(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len)
{
	_cleanup_free_ uint8_t *buf = malloc(COPY_BUFSIZE);

	if (!buf)
		return -ENOMEM;
	while (len > 0) {
		ssize_t n = pread(in_fd, buf, (size_t)MIN(len, (uint64_t)COPY_BUFSIZE), (off_t)in_off);
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* the input shrank under us */
		r = write_at(out_fd, buf, (size_t)n, out_off);
		if (r < 0)
			return r;
		in_off += (uint64_t)n;
		if (out_off != COPY_AT_POSITION)
			out_off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* The errors of a copy_file_range that these two files do not allow. */
static bool copy_unsupported(int e)
{
	return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EBADF ||
	       e == ETXTBSY;
}

/* copy_file_range, else by hand. out_off may be COPY_AT_POSITION for an
 * output that cannot seek. */
static int copy_data(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len)
{
	/*
	 * Each call ends on a 2 MiB boundary of the output. A record placed at
	 * 4 KiB in the output but at 0 in its source (every glue) otherwise
	 * copies about 35% slower: the page cache can only build small folios
	 * for writes that start misaligned, and splice writes in small pieces.
	 */
	const uint64_t chunk = (uint64_t)2 << 20;

	while (len > 0) {
		bool at_pos = out_off == COPY_AT_POSITION;
		loff_t io = (loff_t)in_off, oo = (loff_t)out_off;
		size_t want = (size_t)MIN(len, chunk - (at_pos ? 0 : out_off % chunk));
		ssize_t n = copy_file_range(in_fd, &io, out_fd, at_pos ? NULL : &oo, want, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (copy_unsupported(errno))
				return copy_by_hand(in_fd, in_off, out_fd, out_off, len);
			return -errno;
		}
		if (n == 0)
			return -EIO;
		in_off += (uint64_t)n;
		if (!at_pos)
			out_off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int clone_data(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len)
{
	struct file_clone_range fcr = {
		.src_fd = in_fd,
		.src_offset = in_off,
		.src_length = len,
		.dest_offset = out_off,
	};

	/* src_length 0 would mean "to the end of the source" */
	if (len == 0)
		return 0;
	while (ioctl(out_fd, FICLONERANGE, &fcr) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int clone_file_start(int in_fd, int out_fd, uint64_t len)
{
	struct stat st;

	if (len == 0 || len > (uint64_t)INT64_MAX)
		return -EINVAL;
	/* Only into an empty file: a clone replaces the range's blocks, and
	 * nothing that was there may survive beside the source's bytes. */
	if (fstat(out_fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size != 0)
		return -EINVAL;
	return clone_data(in_fd, 0, out_fd, 0, len);
}

/*
 * Clones the block-aligned part of the range and copies the rest: 1 when
 * done, 0 when the files cannot share extents here (nothing useful was
 * done: the caller copies the whole range), or -errno.
 */
static int copy_cloning(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len)
{
	struct stat in_st, out_st;
	struct statfs fs;
	uint64_t bs, head, mid, tail;
	int r;

	if (fstat(in_fd, &in_st) < 0 || fstat(out_fd, &out_st) < 0 ||
	    !S_ISREG(in_st.st_mode) || !S_ISREG(out_st.st_mode))
		return 0;
	if (fstatfs(out_fd, &fs) < 0 || fs.f_bsize <= 0 || (fs.f_bsize & (fs.f_bsize - 1)) != 0)
		return 0;
	bs = (uint64_t)fs.f_bsize;
	/* Blocks are shared whole: both ranges must start alike in a block. */
	if (in_off % bs != out_off % bs)
		return 0;
	head = (bs - in_off % bs) % bs;
	if (head >= len)
		return 0;
	mid = (len - head) / bs * bs;
	tail = len - head - mid;
	/*
	 * The source's last block may be shared though partly past its end,
	 * when nothing of the output after the range is lost with it: the
	 * range ends the output too.
	 */
	if (tail > 0 && in_off + len == (uint64_t)in_st.st_size &&
	    out_off + len >= (uint64_t)out_st.st_size &&
	    clone_data(in_fd, in_off + head, out_fd, out_off + head, mid + tail) == 0) {
		tail = 0;
	} else if (mid == 0 || clone_data(in_fd, in_off + head, out_fd, out_off + head, mid) < 0) {
		return 0;
	}
	r = copy_data(in_fd, in_off, out_fd, out_off, head);
	if (r == 0)
		r = copy_data(in_fd, in_off + len - tail, out_fd, out_off + len - tail, tail);
	return r < 0 ? r : 1;
}

static int copy_at_position(int in_fd, uint64_t in_off, int out_fd, uint64_t len)
{
	off_t pos = lseek(out_fd, 0, SEEK_CUR);
	int r;

	if (pos < 0)
		return errno == ESPIPE ? copy_data(in_fd, in_off, out_fd, COPY_AT_POSITION, len)
				       : -errno;
	r = copy_range(in_fd, in_off, out_fd, (uint64_t)pos, len);
	if (r < 0)
		return r;
	if (lseek(out_fd, pos + (off_t)len, SEEK_SET) < 0)
		return -errno;
	return 0;
}

int copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len)
{
	int r;

	if (out_off == COPY_AT_POSITION)
		return copy_at_position(in_fd, in_off, out_fd, len);
	if (len > (uint64_t)INT64_MAX || in_off > (uint64_t)INT64_MAX - len ||
	    out_off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	if (len == 0)
		return 0;
	r = copy_cloning(in_fd, in_off, out_fd, out_off, len);
	if (r != 0)
		return r < 0 ? r : 0;
	return copy_data(in_fd, in_off, out_fd, out_off, len);
}
