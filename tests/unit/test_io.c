/*
 * Unit tests for the basic layer's I/O (lib/basic/io.c): whole writes over
 * a pipe that signals keep cutting short, the limits of small whole-file
 * reads, and byte ranges copied exactly, whatever their alignment, on one
 * file system or across two, cloned where the file system shares extents
 * (a loop-mounted XFS or btrfs image, when the test runs as root and the
 * mkfs is there) and copied where it cannot.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "testutil.h"

#define BS 4096u
/* Source bytes: large enough for a clone of several blocks, with a tail
 * that is not a whole block. */
#define SRC_LEN (64u * BS + 1234u)

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 31u + (i >> 12) + 7u);
}

static int make_source(const char *path)
{
	uint8_t *buf = malloc(SRC_LEN);
	int fd;

	ck_assert_ptr_nonnull(buf);
	for (uint64_t i = 0; i < SRC_LEN; i++)
		buf[i] = pattern(i);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, buf, SRC_LEN), 0);
	free(buf);
	return fd;
}

/* ------------------------------------------------------------ write_all */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

START_TEST(write_all_pipe_cut_short)
{
	const size_t len = 2u << 20;
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	int pfd[2], status;
	uint8_t *buf = malloc(len);
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(i);
	ck_assert_int_eq(pipe(pfd), 0);
	/* A small pipe, a slow reader and a signal every 200 µs without
	 * SA_RESTART: writes return short counts and EINTR. */
	(void)fcntl(pfd[1], F_SETPIPE_SZ, 4096);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint8_t got[1000];
		size_t at = 0;
		ssize_t n;

		close(pfd[1]);
		while ((n = read(pfd[0], got, sizeof(got))) != 0) {
			if (n < 0) {
				if (errno == EINTR)
					continue;
				_exit(2);
			}
			for (ssize_t i = 0; i < n; i++)
				if (got[i] != pattern(at + (size_t)i))
					_exit(3);
			at += (size_t)n;
		}
		_exit(at == len ? 0 : 4);
	}
	close(pfd[0]);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	ck_assert_int_eq(write_all(pfd[1], buf, len), 0);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	close(pfd[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_gt(alarms, 0);
	free(buf);
}
END_TEST

START_TEST(write_all_reader_gone)
{
	int pfd[2];

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(pipe(pfd), 0);
	close(pfd[0]);
	ck_assert_int_eq(write_all(pfd[1], "x", 1), -EPIPE);
	close(pfd[1]);
}
END_TEST

START_TEST(pwrite_all_at_offset)
{
	uint8_t got[8];
	int fd;

	tu_tmpdir();
	fd = open("f", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite_all(fd, "abcd", 4, 4), 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), 0), 8);
	ck_assert_int_eq(memcmp(got, "\0\0\0\0abcd", 8), 0);
	close(fd);
}
END_TEST

/* pread_all: the whole range, short only at the end, and a pipe's
 * error as it is. */
START_TEST(pread_all_short_at_end)
{
	uint8_t got[16];
	int fd, pfd[2];

	tu_tmpdir();
	tu_write_file("f", "0123456789", 10);
	fd = open("f", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread_all(fd, got, 4, 3), 4);
	ck_assert_int_eq(memcmp(got, "3456", 4), 0);
	ck_assert_int_eq(pread_all(fd, got, sizeof(got), 7), 3);
	ck_assert_int_eq(memcmp(got, "789", 3), 0);
	ck_assert_int_eq(pread_all(fd, got, sizeof(got), 10), 0);
	ck_assert_int_eq(pread_all(fd, got, sizeof(got), (uint64_t)1 << 63), -EINVAL);
	close(fd);
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(pread_all(pfd[0], got, 1, 0), -ESPIPE);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/* ------------------------------------------------------------ read_file_max */

START_TEST(read_file_max_limits)
{
	char big[101];
	char *buf = NULL;
	size_t len = 0;

	tu_tmpdir();
	memset(big, 'a', sizeof(big));
	tu_write_file("exact", big, 100);
	tu_write_file("over", big, 101);
	tu_write_file("empty", big, 0);

	ck_assert_int_eq(read_file_max(AT_FDCWD, "exact", 0, 100, &buf, &len), 0);
	ck_assert_uint_eq(len, 100);
	ck_assert_int_eq(buf[100], '\0');
	ck_assert_int_eq(memcmp(buf, big, 100), 0);
	free(buf);
	buf = NULL;

	/* too big: an error, and nothing handed back */
	ck_assert_int_eq(read_file_max(AT_FDCWD, "over", 0, 100, &buf, &len), -EFBIG);
	ck_assert_ptr_null(buf);
	ck_assert_int_eq(read_file_max(AT_FDCWD, "exact", 0, 99, &buf, &len), -EFBIG);
	ck_assert_ptr_null(buf);

	ck_assert_int_eq(read_file_max(AT_FDCWD, "empty", 0, 100, &buf, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(buf, "");
	free(buf);
	buf = NULL;

	ck_assert_int_eq(read_file_max(AT_FDCWD, "missing", 0, 100, &buf, &len), -ENOENT);
	ck_assert_int_eq(read_file_max(AT_FDCWD, ".", 0, 100, &buf, &len), -EISDIR);
	ck_assert_int_eq(symlink("exact", "link"), 0);
	ck_assert_int_eq(read_file_max(AT_FDCWD, "link", READ_FILE_NOFOLLOW, 100, &buf, &len),
			 -ELOOP);
	ck_assert_int_eq(read_file_max(AT_FDCWD, "link", 0, 100, &buf, &len), 0);
	free(buf);
	buf = NULL;
	/* a FIFO with no writer would block an open; REGULAR refuses it at once */
	ck_assert_int_eq(mkfifo("fifo", 0600), 0);
	ck_assert_int_eq(read_file_max(AT_FDCWD, "fifo", READ_FILE_REGULAR, 100, &buf, &len),
			 -EINVAL);
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(read_fd_max_unsized)
{
	char *buf = NULL;
	size_t len = 0;
	int pfd[2];

	/* procfs says size 0: read to the end, still within the limit */
	ck_assert_int_eq(read_file_max(AT_FDCWD, "/proc/self/status", 0, 16, &buf, &len), -EFBIG);
	ck_assert_int_eq(read_file_max(AT_FDCWD, "/proc/self/status", 0, 1 << 20, &buf, &len), 0);
	ck_assert_uint_gt(len, 16);
	ck_assert_ptr_nonnull(strstr(buf, "Pid:"));
	free(buf);
	buf = NULL;

	/* a pipe: exactly max, then one byte more */
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(write_all(pfd[1], "0123456789", 10), 0);
	close(pfd[1]);
	ck_assert_int_eq(read_fd_max(pfd[0], 10, &buf, &len), 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_str_eq(buf, "0123456789");
	free(buf);
	buf = NULL;
	close(pfd[0]);
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(write_all(pfd[1], "0123456789", 10), 0);
	close(pfd[1]);
	ck_assert_int_eq(read_fd_max(pfd[0], 9, &buf, &len), -EFBIG);
	ck_assert_ptr_null(buf);
	close(pfd[0]);
}
END_TEST

/* ------------------------------------------------------------ copy_range */

/* The ranges every file system is tried with: aligned and not, at the
 * source's end and short of it, and alike or unlike in a block. */
static const struct {
	uint64_t in_off, out_off, len;
} ranges[] = {
	{ 0, 0, SRC_LEN },                        /* a whole file, tail at the end */
	{ 4 * BS, 0, 16 * BS },                   /* whole blocks */
	{ 4 * BS, 8 * BS, SRC_LEN - 4 * BS },     /* to the end of the source */
	{ 4 * BS + 100, 100, 20 * BS },           /* alike in a block, unaligned head */
	{ 100, 2 * BS + 100, 20 * BS + 5 },       /* unaligned head and tail */
	{ 3 * BS, BS + 7, 10 * BS },              /* unlike in a block: no clone */
	{ 5, 9, 100 },                            /* less than a block */
	{ BS, BS, BS - 1 },                       /* a block but one byte */
};

/* Bytes of fd's [off, off + len) in extents the file system marks shared. */
static uint64_t shared_bytes(int fd, uint64_t off, uint64_t len)
{
	const unsigned max = 64;
	struct fiemap *fm = calloc(1, sizeof(*fm) + max * sizeof(struct fiemap_extent));
	uint64_t shared = 0;

	ck_assert_ptr_nonnull(fm);
	fm->fm_start = off;
	fm->fm_length = len;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = max;
	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
		free(fm);
		return 0;
	}
	for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
		const struct fiemap_extent *e = &fm->fm_extents[i];
		uint64_t a = e->fe_logical > off ? e->fe_logical : off;
		uint64_t b = e->fe_logical + e->fe_length < off + len ? e->fe_logical + e->fe_length
								       : off + len;

		if ((e->fe_flags & FIEMAP_EXTENT_SHARED) && b > a)
			shared += b - a;
	}
	free(fm);
	return shared;
}

/*
 * Copies every range of the table from src (the pattern) into a fresh
 * file made by open_out, over 0xEE bytes, and checks the output byte for
 * byte, before, inside and after the range. Returns the bytes of the
 * outputs that ended up shared with the source.
 */
static uint64_t check_ranges(int src, int (*open_out)(const char *), const char *dir)
{
	uint64_t shared = 0;

	for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
		uint64_t in_off = ranges[k].in_off, out_off = ranges[k].out_off, len = ranges[k].len;
		uint64_t out_len = out_off + len + 3 * BS;
		uint8_t *got = malloc(out_len), *fill = malloc(out_len);
		char name[4096];
		int out;

		ck_assert_ptr_nonnull(got);
		ck_assert_ptr_nonnull(fill);
		snprintf(name, sizeof(name), "%s/out%zu", dir, k);
		out = open_out(name);
		ck_assert_int_ge(out, 0);
		memset(fill, 0xEE, out_len);
		ck_assert_int_eq(pwrite_all(out, fill, out_len, 0), 0);
		ck_assert_msg(copy_range(src, in_off, out, out_off, len) == 0, "range %zu", k);
		ck_assert_int_eq(pread(out, got, out_len, 0), (ssize_t)out_len);
		for (uint64_t i = 0; i < out_len; i++) {
			uint8_t want = i >= out_off && i < out_off + len ? pattern(in_off + i - out_off)
									   : 0xEE;
			ck_assert_msg(got[i] == want, "range %zu: byte %llu is %02x, not %02x", k,
				      (unsigned long long)i, got[i], want);
		}
		shared += shared_bytes(out, out_off, len);
		close(out);
		free(got);
		free(fill);
	}
	return shared;
}

static int open_file(const char *name)
{
	return open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

static int open_memfd(const char *name)
{
	(void)name;
	return memfd_create("out", MFD_CLOEXEC);
}

START_TEST(copy_range_exact_bytes)
{
	const char *dir = tu_tmpdir();
	int src = make_source("src");
	int mem = memfd_create("src", MFD_CLOEXEC);
	uint8_t *buf = malloc(SRC_LEN);

	/* one file system, whatever it is */
	check_ranges(src, open_file, dir);
	/* across two: a file into memory, and out of memory (tmpfs cannot
	 * clone, nor copy_file_range to another file system) */
	check_ranges(src, open_memfd, dir);
	ck_assert_int_ge(mem, 0);
	ck_assert_int_eq(pread(src, buf, SRC_LEN, 0), (ssize_t)SRC_LEN);
	ck_assert_int_eq(write_all(mem, buf, SRC_LEN), 0);
	ck_assert_uint_eq(check_ranges(mem, open_file, dir), 0);
	close(mem);
	close(src);
	free(buf);
}
END_TEST

START_TEST(copy_range_edges)
{
	uint8_t got[2 * BS];
	int src, out, pfd[2];

	tu_tmpdir();
	src = make_source("src");
	out = open_file("out");
	/* past the source's end: an error, never a short copy */
	ck_assert_int_eq(copy_range(src, SRC_LEN - 10, out, 0, 20), -EIO);
	ck_assert_int_eq(copy_range(src, 0, out, 0, 0), 0);
	ck_assert_int_eq(copy_range(src, 0, out, UINT64_MAX - 10, 5), -EINVAL);

	/* at the output's position: it advances, seekable or not */
	ck_assert_int_eq(ftruncate(out, 0), 0);
	ck_assert_int_eq(lseek(out, 10, SEEK_SET), 10);
	ck_assert_int_eq(copy_range(src, BS, out, COPY_AT_POSITION, 100), 0);
	ck_assert_int_eq(lseek(out, 0, SEEK_CUR), 110);
	ck_assert_int_eq(pread(out, got, 100, 10), 100);
	for (unsigned i = 0; i < 100; i++)
		ck_assert_uint_eq(got[i], pattern(BS + i));
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(copy_range(src, 3, pfd[1], COPY_AT_POSITION, 1000), 0);
	ck_assert_int_eq(read(pfd[0], got, sizeof(got)), 1000);
	for (unsigned i = 0; i < 1000; i++)
		ck_assert_uint_eq(got[i], pattern(3 + i));
	close(pfd[0]);
	close(pfd[1]);

	/* within one file, towards its start over itself (a thinned record
	 * moved to offset 0): refused by clone and copy_file_range alike,
	 * copied forwards by hand */
	ck_assert_int_eq(copy_range(src, BS, src, 0, SRC_LEN - BS), 0);
	for (unsigned i = 0; i < sizeof(got); i++)
		ck_assert_int_eq(pread(src, got + i, 1, i), 1);
	for (unsigned i = 0; i < sizeof(got); i++)
		ck_assert_uint_eq(got[i], pattern(BS + i));
	close(out);
	close(src);
}
END_TEST

/* ------------------------------------------------------------ on a file system that clones */

/* Runs a shell command made from fmt; its exit status. */
static int sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	r = system(cmd);
	return r == -1 || !WIFEXITED(r) ? -1 : WEXITSTATUS(r);
}

/* Where the images go, made by the parent: its teardown unmounts and
 * removes them even when a test fails half-way with an image mounted. */
static char clone_base[4096];

static void clone_setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(clone_base, sizeof(clone_base), "%s/fatelf-io-clone.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(clone_base))
		clone_base[0] = '\0';
}

static void clone_teardown(void)
{
	if (!clone_base[0])
		return;
	(void)sh("umount %s/xfs 2>/dev/null; umount %s/btrfs 2>/dev/null", clone_base, clone_base);
	(void)sh("rm -rf %s", clone_base);
}

/*
 * Makes a loop-mounted image of fstype, runs the table there, and checks
 * that clones share extents while a range unlike in its blocks does not.
 * Says why and passes when this machine cannot: not root, no mkfs, no
 * loop device.
 */
static void clone_on(const char *fstype)
{
	char img[4096 + 16], mnt[4096 + 16], path[4096 + 32];
	uint64_t shared, unlike, whole, tail;
	int src, out;
	bool ok;

	if (geteuid() != 0 || !clone_base[0]) {
		fprintf(stderr, "test_io: %s clone: skipped (not root)\n", fstype);
		return;
	}
	if (sh("command -v mkfs.%s >/dev/null 2>&1", fstype) != 0) {
		fprintf(stderr, "test_io: %s clone: skipped (no mkfs.%s)\n", fstype, fstype);
		return;
	}
	snprintf(img, sizeof(img), "%s/%s.img", clone_base, fstype);
	snprintf(mnt, sizeof(mnt), "%s/%s", clone_base, fstype);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	/* sparse: the image costs what is written to it */
	ck_assert_int_eq(sh("truncate -s 512M %s", img), 0);
	ok = sh("mkfs.%s -q -f %s >/dev/null 2>&1", fstype, img) == 0;
	if (!ok || sh("mount -o loop %s %s 2>/dev/null", img, mnt) != 0) {
		fprintf(stderr, "test_io: %s clone: skipped (cannot make or mount a loop image)\n",
			fstype);
		return;
	}
	snprintf(path, sizeof(path), "%s/src", mnt);
	src = make_source(path);
	shared = check_ranges(src, open_file, mnt);
	/* a range unlike in its blocks: nothing to share */
	snprintf(path, sizeof(path), "%s/unlike", mnt);
	out = open_file(path);
	ck_assert_int_eq(copy_range(src, 3 * BS, out, BS + 7, 10 * BS), 0);
	unlike = shared_bytes(out, 0, 11 * BS + 7);
	close(out);
	/* a whole aligned range: every block shared */
	snprintf(path, sizeof(path), "%s/whole", mnt);
	out = open_file(path);
	ck_assert_int_eq(copy_range(src, 4 * BS, out, 0, 16 * BS), 0);
	whole = shared_bytes(out, 0, 16 * BS);
	close(out);
	/* the source's partial last block, into the end of a new file (a
	 * glued record): shared too, and the file grown after it reads zeros
	 * past the range, not what the block held past the source's end */
	snprintf(path, sizeof(path), "%s/tail", mnt);
	out = open_file(path);
	ck_assert_int_eq(copy_range(src, 0, out, 2 * BS, SRC_LEN), 0);
	ck_assert_int_eq(ftruncate(out, 2 * BS + SRC_LEN + 2 * BS), 0);
	tail = shared_bytes(out, 2 * BS, SRC_LEN);
	{
		uint8_t *got = malloc(SRC_LEN + 4 * BS);

		ck_assert_ptr_nonnull(got);
		ck_assert_int_eq(pread(out, got, SRC_LEN + 4 * BS, 0), (ssize_t)(SRC_LEN + 4 * BS));
		for (uint64_t i = 0; i < SRC_LEN + 4 * BS; i++) {
			uint8_t want = i >= 2 * BS && i < 2 * BS + SRC_LEN ? pattern(i - 2 * BS) : 0;

			ck_assert_msg(got[i] == want, "tail: byte %llu", (unsigned long long)i);
		}
		free(got);
	}
	close(out);
	close(src);
	ck_assert_int_eq(sh("umount %s", mnt), 0);
	ck_assert_msg(shared > 0, "%s: nothing was cloned", fstype);
	ck_assert_uint_eq(whole, 16 * BS);
	ck_assert_uint_ge(tail, SRC_LEN / BS * BS);
	ck_assert_uint_eq(unlike, 0);
}

START_TEST(copy_range_clones_on_xfs)
{
	clone_on("xfs");
}
END_TEST

START_TEST(copy_range_clones_on_btrfs)
{
	clone_on("btrfs");
}
END_TEST

static Suite *io_suite(void)
{
	Suite *s = suite_create("io");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, write_all_pipe_cut_short);
	tcase_add_test(tc, write_all_reader_gone);
	tcase_add_test(tc, pwrite_all_at_offset);
	tcase_add_test(tc, pread_all_short_at_end);
	tcase_add_test(tc, read_file_max_limits);
	tcase_add_test(tc, read_fd_max_unsized);
	tcase_add_test(tc, copy_range_exact_bytes);
	tcase_add_test(tc, copy_range_edges);
	suite_add_tcase(s, tc);
	tc = tcase_create("clone");
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, clone_setup, clone_teardown);
	tcase_add_test(tc, copy_range_clones_on_xfs);
	tcase_add_test(tc, copy_range_clones_on_btrfs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(io_suite());
}
