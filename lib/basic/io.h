/*
 * Plain file-descriptor I/O, written once for every layer: whole writes
 * over short writes and signals, small files read whole up to a limit,
 * and byte ranges copied between files, cloned where the file system
 * shares extents (FICLONERANGE), else copied in the kernel
 * (copy_file_range), else read and written. Every function returns 0 or
 * -errno, and reports nothing: the caller names the file.
 */
#ifndef FATELF_IO_H
#define FATELF_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Whole writes: all of buf, or -errno. */
int write_all(int fd, const void *buf, size_t len);
int pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
/* Reads len bytes at off, short only at the end of the file: the count,
 * or -errno. */
ssize_t pread_all(int fd, void *buf, size_t len, uint64_t off);

/* read_file_max's flags. */
enum {
	READ_FILE_NOFOLLOW = 1 << 0,    /* a symlink as the last component: -ELOOP */
	READ_FILE_REGULAR = 1 << 1,     /* anything but a regular file: -EINVAL */
};

/*
 * All of a small file, at most max bytes: malloc'd and NUL-terminated in
 * *ret_buf, its length in *ret_len. -EFBIG when it holds more than max
 * bytes, -EISDIR for a directory. read_fd_max reads from fd's position
 * to its end; a regular file whose size is over max is refused before
 * anything is read, anything else (procfs, a pipe) is read up to the
 * limit.
 */
int read_fd_max(int fd, size_t max, char **ret_buf, size_t *ret_len);
int read_file_max(int dirfd, const char *path, unsigned flags, size_t max, char **ret_buf,
		  size_t *ret_len);

/* out_off for copy_range: out_fd's own file position, which the copy
 * advances (a pipe, or a file being written from its start). */
#define COPY_AT_POSITION UINT64_MAX

/*
 * Copies len bytes of in_fd at in_off to out_fd at out_off. Where both
 * are on one file system that shares extents (XFS, btrfs) and the ranges
 * are aligned alike, the block-aligned middle is cloned, which costs no
 * data I/O whatever the length; the unaligned head and tail, and
 * everything elsewhere, are copied. A source shorter than the range is
 * -EIO, never a short copy. The output's length is not set: a caller
 * that leaves holes truncates it.
 */
int copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len);

/*
 * Makes the empty regular file out_fd share the first len bytes of in_fd
 * (FICLONERANGE), costing no data I/O. len must reach the source's end
 * or be a multiple of its block size. -EXDEV across file systems,
 * -EOPNOTSUPP (or -ENOTTY) where extents are not shared, -EINVAL for an
 * unaligned length or an out_fd that is not empty; the caller then
 * copies instead, after truncating out_fd (a clone that failed midway
 * may have shared part of the range).
 */
int clone_file_start(int in_fd, int out_fd, uint64_t len);

#endif
