/*
 * The one byte source of the tree, in libarchive's style: one object with
 * a sequential pull callback and, where the bytes can be reached at any
 * offset, a random-access one beside it (as libarchive's read and seek
 * callbacks).
 *
 * read returns the number of bytes at *ret_buf (0 at the end) or -errno;
 * the buffer stays valid until the next call. Bundles, downloads and
 * passed descriptors all arrive through it.
 *
 * pread reads up to len bytes at off (short only at the end) or -errno,
 * over size bytes: the format layer's way into a fat file (its table,
 * then each record's ELF headers). A regular file, a block device, a
 * mapped file and memory offer it; a pipe or a socket does not (NULL).
 *
 * Constructors for a descriptor (any kind: file, pipe, socket, with poll,
 * a silence timeout, a deadline and a cancel flag for the ones a peer
 * controls), for memory, and for a mapped regular file; and two that
 * allocate nothing and offer only random access, for a descriptor and
 * for memory (such a reader may be copied by value and needs no close).
 * A caller with a source of its own (a download, a test) fills read or
 * pread and ctx itself and leaves close NULL.
 */
#ifndef FATELF_READER_H
#define FATELF_READER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct fatelf_reader {
	ssize_t (*read)(void *ctx, const void **ret_buf);       /* NULL: random access only */
	ssize_t (*pread)(const struct fatelf_reader *r, void *buf, size_t len, uint64_t off); /* NULL: sequential only */
	uint64_t size;                  /* with pread: how many bytes there are */
	void *ctx;
	void (*close)(void *ctx);       /* frees ctx; NULL: nothing to free */
	/* the built-in random access's state (no allocation behind it) */
	int fd;
	const uint8_t *mem;
} fatelf_reader;

typedef struct fatelf_reader_fd_opts {
	/* Wait for data with poll(2) in rounds of half a second (a pipe or
	 * a socket, which may be O_NONBLOCK): a stalled writer can then
	 * neither hold the reader past silence_sec nor delay a cancel. */
	bool poll;
	unsigned silence_sec;           /* poll: -ETIMEDOUT after this long without a byte; 0: never */
	unsigned deadline_sec;          /* -ETIME once this long has passed since the reader was made; 0: none */
	const atomic_int *cancel;       /* when it reads non-zero, a read returns -ECANCELED */
	size_t bufsize;                 /* 0: 128 KiB */
} fatelf_reader_fd_opts;

/* Reads fd as it comes (fd stays the caller's to close). o may be NULL.
 * A regular file or a block device also gets pread, at its size now. */
int fatelf_reader_fd(fatelf_reader *ret, int fd, const fatelf_reader_fd_opts *o);

/*
 * Reads a regular file through a moving mmap window from its start: the
 * page cache is read in place, one window mapped at a time. Only for a
 * file whose size nobody else can change while it is read: a file that
 * shrinks under a mapping faults (SIGBUS), so a daemon never maps what a
 * peer passed it.
 */
int fatelf_reader_map(fatelf_reader *ret, int fd);

/* A regular file at offset 0 that is not empty: mapped; anything else:
 * read as it comes. For a caller's own files (the tools). */
int fatelf_reader_file(fatelf_reader *ret, int fd);

/* Hands out buf in one piece (not copied: it must outlive the reader),
 * and offers pread over it. */
int fatelf_reader_mem(fatelf_reader *ret, const void *buf, size_t len);

/* Random access only, nothing allocated: a regular file or a block device
 * (fstat gives the size; -EISDIR for a directory, -ESPIPE for anything
 * else), or memory. fd and mem stay the caller's. */
int fatelf_reader_seekable_fd(fatelf_reader *ret, int fd);
void fatelf_reader_seekable_mem(fatelf_reader *ret, const void *mem, size_t len);

/* Reads exactly len bytes at off: -ESPIPE without pread, -EIO when the
 * source ends first, or the reader's error. */
int fatelf_reader_read_at(const fatelf_reader *r, void *buf, size_t len, uint64_t off);

/* Whether a descriptor reader saw its end of file (read returned 0);
 * false for the other kinds. */
bool fatelf_reader_at_eof(const fatelf_reader *r);

/* Frees what the constructor made (the descriptor stays open). */
void fatelf_reader_close(fatelf_reader *r);

/* Reads until the end, at most cap bytes: for tests and small sources
 * (-ESPIPE without read).
 * Returns the count, -EFBIG past cap, or the reader's error. */
ssize_t fatelf_reader_drain(const fatelf_reader *r, void *buf, size_t cap);

#endif
