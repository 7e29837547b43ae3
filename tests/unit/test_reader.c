/*
 * The pull reader (lib/basic/reader.c): the bytes each constructor hands
 * out, end of file, and the silence timeout, deadline and cancel of a
 * polled descriptor.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "reader.h"
#include "testutil.h"

static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
	return p;
}

static double mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(test_mem)
{
	size_t len = 100000;
	_cleanup_free_ uint8_t *src = pattern(len, 1);
	_cleanup_free_ uint8_t *out = malloc(len);
	fatelf_reader r;
	const void *p;

	ck_assert_int_eq(fatelf_reader_mem(&r, src, len), 0);
	ck_assert_int_eq(fatelf_reader_drain(&r, out, len), (ssize_t)len);
	ck_assert_mem_eq(out, src, len);
	ck_assert_int_eq(r.read(r.ctx, &p), 0);
	ck_assert(!fatelf_reader_at_eof(&r));
	fatelf_reader_close(&r);
	ck_assert_ptr_null(r.ctx);

	/* Empty memory ends at once; a cap smaller than the bytes refuses. */
	ck_assert_int_eq(fatelf_reader_mem(&r, src, 0), 0);
	ck_assert_int_eq(r.read(r.ctx, &p), 0);
	fatelf_reader_close(&r);
	ck_assert_int_eq(fatelf_reader_mem(&r, src, len), 0);
	ck_assert_int_eq(fatelf_reader_drain(&r, out, len - 1), -EFBIG);
	fatelf_reader_close(&r);
}
END_TEST

/* A file larger than one map window (16 MiB), read whole, mapped. */
START_TEST(test_map_and_file)
{
	size_t len = ((size_t)17 << 20) + 123;
	_cleanup_free_ uint8_t *src = pattern(len, 2);
	_cleanup_free_ uint8_t *out = malloc(len);
	fatelf_reader r;
	int fd;

	tu_tmpdir();
	tu_write_file("big", src, len);
	fd = open("big", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_reader_map(&r, fd), 0);
	ck_assert_int_eq(fatelf_reader_drain(&r, out, len), (ssize_t)len);
	ck_assert_mem_eq(out, src, len);
	fatelf_reader_close(&r);

	/* file(): mapped from offset 0 (so it reads no descriptor's end)... */
	ck_assert_int_eq(fatelf_reader_file(&r, fd), 0);
	memset(out, 0, len);
	ck_assert_int_eq(fatelf_reader_drain(&r, out, len), (ssize_t)len);
	ck_assert_mem_eq(out, src, len);
	ck_assert(!fatelf_reader_at_eof(&r));
	fatelf_reader_close(&r);

	/* ... and read from where the descriptor stands otherwise. */
	ck_assert_int_eq(lseek(fd, 1000, SEEK_SET), 1000);
	ck_assert_int_eq(fatelf_reader_file(&r, fd), 0);
	ck_assert_int_eq(fatelf_reader_drain(&r, out, len), (ssize_t)(len - 1000));
	ck_assert_mem_eq(out, src + 1000, len - 1000);
	ck_assert(fatelf_reader_at_eof(&r));
	fatelf_reader_close(&r);

	/* A map of something that is not a regular file is refused. */
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(fatelf_reader_map(&r, pfd[0]), -EINVAL);
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
}
END_TEST

/* Random access: every constructor over bytes of a fixed size offers it,
 * at any offset and in any order, beside the sequential read; a pipe
 * does not, and read_at says so instead of reading at the wrong place. */
START_TEST(test_random_access)
{
	size_t len = ((size_t)1 << 20) + 77;
	_cleanup_free_ uint8_t *src = pattern(len, 3);
	uint8_t buf[4096];
	fatelf_reader r, copy;
	int fd, pfd[2], dfd;

	tu_tmpdir();
	tu_write_file("file", src, len);
	fd = open("file", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);

	for (int kind = 0; kind < 5; kind++) {
		switch (kind) {
		case 0: ck_assert_int_eq(fatelf_reader_fd(&r, fd, NULL), 0); break;
		case 1: ck_assert_int_eq(fatelf_reader_map(&r, fd), 0); break;
		case 2: ck_assert_int_eq(fatelf_reader_mem(&r, src, len), 0); break;
		case 3: ck_assert_int_eq(fatelf_reader_seekable_fd(&r, fd), 0); break;
		default: fatelf_reader_seekable_mem(&r, src, len); break;
		}
		ck_assert_msg(r.pread != NULL, "kind %d offers random access", kind);
		ck_assert_uint_eq(r.size, len);
		/* backwards, across the end of the first MiB */
		ck_assert_int_eq(fatelf_reader_read_at(&r, buf, sizeof(buf), len - sizeof(buf)), 0);
		ck_assert_mem_eq(buf, src + len - sizeof(buf), sizeof(buf));
		ck_assert_int_eq(fatelf_reader_read_at(&r, buf, 100, 1048550), 0);
		ck_assert_mem_eq(buf, src + 1048550, 100);
		ck_assert_int_eq(fatelf_reader_read_at(&r, buf, 10, 0), 0);
		ck_assert_mem_eq(buf, src, 10);
		/* past the end: short, so an exact read is -EIO; a plain pread is short */
		ck_assert_int_eq(fatelf_reader_read_at(&r, buf, 10, len - 5), -EIO);
		ck_assert_int_eq(r.pread(&r, buf, 10, len - 5), 5);
		ck_assert_int_eq(r.pread(&r, buf, 10, len + 5), 0);
		if (kind >= 3) {
			/* nothing allocated: no sequential read, a copy works alike */
			ck_assert_ptr_null(r.read);
			ck_assert_int_eq(fatelf_reader_drain(&r, buf, sizeof(buf)), -ESPIPE);
			copy = r;
			ck_assert_int_eq(fatelf_reader_read_at(&copy, buf, 10, 20), 0);
			ck_assert_mem_eq(buf, src + 20, 10);
		} else {
			/* random access leaves the sequential read where it was */
			const void *p;
			ck_assert_int_gt(r.read(r.ctx, &p), 0);
			ck_assert_int_eq(memcmp(p, src, 10), 0);
		}
		fatelf_reader_close(&r);
	}

	/* A pipe reads as it comes, with no random access. */
	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_eq(fatelf_reader_fd(&r, pfd[0], NULL), 0);
	ck_assert_ptr_null(r.pread);
	ck_assert_int_eq(fatelf_reader_read_at(&r, buf, 1, 0), -ESPIPE);
	fatelf_reader_close(&r);
	ck_assert_int_eq(fatelf_reader_seekable_fd(&r, pfd[0]), -ESPIPE);
	close(pfd[0]);
	close(pfd[1]);
	dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_eq(fatelf_reader_seekable_fd(&r, dfd), -EISDIR);
	close(dfd);
	close(fd);
}
END_TEST

/* A file that shrinks after the reader was made (a peer truncating what it
 * passed): random access reads the descriptor, never a mapping, so it sees
 * a short read (-EIO for an exact one), not SIGBUS; the size stays what it
 * was when the reader was made. */
START_TEST(test_random_access_shrunk)
{
	size_t len = (size_t)1 << 20;
	_cleanup_free_ uint8_t *src = pattern(len, 4);
	uint8_t buf[256];
	fatelf_reader r;
	int fd, wfd;

	tu_tmpdir();
	tu_write_file("shrinks", src, len);
	for (int kind = 0; kind < 3; kind++) {
		tu_write_file("shrinks", src, len);
		fd = open("shrinks", O_RDONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		if (kind == 0)
			ck_assert_int_eq(fatelf_reader_map(&r, fd), 0);
		else if (kind == 1)
			ck_assert_int_eq(fatelf_reader_fd(&r, fd, NULL), 0);
		else
			ck_assert_int_eq(fatelf_reader_seekable_fd(&r, fd), 0);
		wfd = open("shrinks", O_WRONLY | O_CLOEXEC);
		ck_assert_int_ge(wfd, 0);
		ck_assert_int_eq(ftruncate(wfd, 4096), 0);
		close(wfd);
		ck_assert_uint_eq(r.size, len);
		ck_assert_int_eq(fatelf_reader_read_at(&r, buf, sizeof(buf), 8192), -EIO);
		ck_assert_int_eq(r.pread(&r, buf, sizeof(buf), 4000), 96);
		ck_assert_mem_eq(buf, src + 4000, 96);
		ck_assert_int_eq(fatelf_reader_read_at(&r, buf, 100, 0), 0);
		ck_assert_mem_eq(buf, src, 100);
		fatelf_reader_close(&r);
		close(fd);
	}
}
END_TEST

struct writer {
	int fd;
	const uint8_t *buf;
	size_t len;
	unsigned delay_ms;              /* between single bytes; 0: all at once */
	bool keep_open;
};

static void *write_thread(void *arg)
{
	struct writer *w = arg;

	if (!w->delay_ms) {
		size_t off = 0;
		while (off < w->len) {
			ssize_t n = write(w->fd, w->buf + off, w->len - off);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
	} else {
		for (size_t i = 0; i < w->len; i++) {
			struct timespec ts = { 0, (long)w->delay_ms * 1000000L };
			if (write(w->fd, w->buf + i, 1) != 1)
				break;
			nanosleep(&ts, NULL);
		}
	}
	if (!w->keep_open)
		close(w->fd);
	return NULL;
}

/* A pipe, polled, with a small buffer so that it takes many reads. */
START_TEST(test_fd_pipe)
{
	size_t len = 300000;
	_cleanup_free_ uint8_t *src = pattern(len, 3);
	_cleanup_free_ uint8_t *out = malloc(len);
	fatelf_reader_fd_opts o = { .poll = true, .silence_sec = 5, .bufsize = 4096 };
	fatelf_reader r;
	pthread_t t;
	int pfd[2];

	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0);
	struct writer w = { .fd = pfd[1], .buf = src, .len = len };
	ck_assert_int_eq(fcntl(pfd[1], F_SETFL, 0), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, write_thread, &w), 0);
	ck_assert_int_eq(fatelf_reader_fd(&r, pfd[0], &o), 0);
	ck_assert(!fatelf_reader_at_eof(&r));
	ck_assert_int_eq(fatelf_reader_drain(&r, out, len), (ssize_t)len);
	ck_assert_mem_eq(out, src, len);
	ck_assert(fatelf_reader_at_eof(&r));
	pthread_join(t, NULL);
	fatelf_reader_close(&r);
	close(pfd[0]);
}
END_TEST

START_TEST(test_fd_silence)
{
	fatelf_reader_fd_opts o = { .poll = true, .silence_sec = 1 };
	fatelf_reader r;
	const void *p;
	double t0;
	int pfd[2];

	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(fatelf_reader_fd(&r, pfd[0], &o), 0);
	t0 = mono_sec();
	ck_assert_int_eq(r.read(r.ctx, &p), -ETIMEDOUT);
	ck_assert(mono_sec() - t0 >= 0.99);
	ck_assert(mono_sec() - t0 < 3.0);
	ck_assert(!fatelf_reader_at_eof(&r));
	fatelf_reader_close(&r);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/* A writer that drips a byte every 100 ms never trips the silence
 * timeout, but the deadline ends it. */
START_TEST(test_fd_deadline)
{
	size_t len = 100;
	_cleanup_free_ uint8_t *src = pattern(len, 4);
	uint8_t out[100];
	fatelf_reader_fd_opts o = { .poll = true, .silence_sec = 1, .deadline_sec = 1 };
	fatelf_reader r;
	pthread_t t;
	double t0;
	int pfd[2];

	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	struct writer w = { .fd = pfd[1], .buf = src, .len = len, .delay_ms = 100 };
	ck_assert_int_eq(pthread_create(&t, NULL, write_thread, &w), 0);
	ck_assert_int_eq(fatelf_reader_fd(&r, pfd[0], &o), 0);
	t0 = mono_sec();
	ck_assert_int_eq(fatelf_reader_drain(&r, out, sizeof(out)), -ETIME);
	ck_assert(mono_sec() - t0 >= 0.95);
	ck_assert(mono_sec() - t0 < 4.0);
	fatelf_reader_close(&r);
	close(pfd[0]);
	pthread_join(t, NULL);
}
END_TEST

static atomic_int cancel_flag;

static void *cancel_thread(void *arg)
{
	struct timespec ts = { 0, 300 * 1000000L };

	(void)arg;
	nanosleep(&ts, NULL);
	atomic_store(&cancel_flag, 1);
	return NULL;
}

/* A cancel ends a read that waits on a silent pipe within a poll round,
 * and an end of file seen after a cancel is the cancel. */
START_TEST(test_fd_cancel)
{
	fatelf_reader_fd_opts o = { .poll = true, .silence_sec = 30, .cancel = &cancel_flag };
	fatelf_reader r;
	const void *p;
	pthread_t t;
	double t0;
	int pfd[2];

	atomic_store(&cancel_flag, 0);
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(fatelf_reader_fd(&r, pfd[0], &o), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, cancel_thread, NULL), 0);
	t0 = mono_sec();
	ck_assert_int_eq(r.read(r.ctx, &p), -ECANCELED);
	ck_assert(mono_sec() - t0 < 2.0);
	pthread_join(t, NULL);

	/* Data waiting is not read once cancelled. */
	ck_assert_int_eq(write(pfd[1], "abc", 3), 3);
	ck_assert_int_eq(r.read(r.ctx, &p), -ECANCELED);
	fatelf_reader_close(&r);

	/* Not polled: the end of file after a cancel is the cancel. */
	atomic_store(&cancel_flag, 0);
	o.poll = false;
	ck_assert_int_eq(fatelf_reader_fd(&r, pfd[0], &o), 0);
	ck_assert_int_eq(r.read(r.ctx, &p), 3);
	ck_assert_mem_eq(p, "abc", 3);
	close(pfd[1]);
	atomic_store(&cancel_flag, 1);
	ck_assert_int_eq(r.read(r.ctx, &p), -ECANCELED);
	fatelf_reader_close(&r);
	close(pfd[0]);
}
END_TEST

/* A read error is the errno, negated. */
START_TEST(test_fd_error)
{
	fatelf_reader r;
	const void *p;
	int fd;

	tu_tmpdir();
	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_reader_fd(&r, fd, NULL), 0);
	ck_assert_int_eq(r.read(r.ctx, &p), -EISDIR);
	fatelf_reader_close(&r);
	close(fd);
}
END_TEST

static Suite *reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_mem);
	tcase_add_test(tc, test_map_and_file);
	tcase_add_test(tc, test_random_access);
	tcase_add_test(tc, test_random_access_shrunk);
	tcase_add_test(tc, test_fd_pipe);
	tcase_add_test(tc, test_fd_silence);
	tcase_add_test(tc, test_fd_deadline);
	tcase_add_test(tc, test_fd_cancel);
	tcase_add_test(tc, test_fd_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* The writers of the pipe tests outlive their readers. */
	signal(SIGPIPE, SIG_IGN);
	return tu_run_suite(reader_suite());
}
