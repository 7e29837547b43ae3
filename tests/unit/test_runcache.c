/*
 * Unit tests for fatelf-run's cache (lib/run/runcache.c): where it lives, the
 * safety rules a cache directory must pass before anything in it is run,
 * what an entry holds (the record's exact bytes, under the fat file's
 * name), when a new entry is made and old ones go, and the $ORIGIN view
 * that makes $ORIGIN/../lib the real ../lib.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fatelf.h"
#include "io.h"
#include "run.h"
#include "testutil.h"

#define REC_OFF 4096u
#define REC_LEN 10000u

/* A file whose bytes at [REC_OFF, REC_OFF + REC_LEN) are the "record". */
static int make_fat(const char *path, uint8_t seed)
{
	uint8_t *buf = malloc(REC_OFF + REC_LEN + 100);
	int fd;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < REC_OFF + REC_LEN + 100; i++)
		buf[i] = (uint8_t)(i * 7u + seed);
	tu_write_file(path, buf, REC_OFF + REC_LEN + 100);
	free(buf);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void expect_record_bytes(const char *path, uint8_t seed)
{
	size_t len = 0;
	uint8_t *got = tu_read_file(path, &len);

	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(len, REC_LEN);
	for (size_t i = 0; i < REC_LEN; i++)
		ck_assert_uint_eq(got[i], (uint8_t)((REC_OFF + i) * 7u + seed));
	free(got);
}

static void request(fatelf_run_request *req, int fd, const char *dir, const char *name,
		    int depth)
{
	memset(req, 0, sizeof(*req));
	req->fd = fd;
	ck_assert_int_eq(fstat(fd, &req->st), 0);
	req->dir = dir;
	req->name = name;
	req->record = 1;
	req->offset = REC_OFF;
	req->size = REC_LEN;
	req->origin_depth = depth;
}

static void append(char *buf, size_t cap, const char *tail)
{
	size_t len = strlen(buf);

	ck_assert_uint_lt(len + strlen(tail), cap);
	memcpy(buf + len, tail, strlen(tail) + 1);
}

static char *abs_path(const char *rel)
{
	char *p = realpath(rel, NULL);

	ck_assert_ptr_nonnull(p);
	return p;
}

START_TEST(default_dir)
{
	char buf[PATH_MAX];

	setenv("FATELF_RUN_CACHE_DIR", "/somewhere/cache", 1);
	ck_assert_int_eq(fatelf_run_cache_default(false, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/somewhere/cache");
	/* a relative override is not a cache directory */
	setenv("FATELF_RUN_CACHE_DIR", "cache", 1);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	ck_assert_int_eq(fatelf_run_cache_default(false, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, geteuid() == 0 ? "/var/cache/fatelf" : "/xdg/fatelf");
	/* a secure run (setuid caller) ignores the environment */
	setenv("FATELF_RUN_CACHE_DIR", "/somewhere/cache", 1);
	ck_assert_int_eq(fatelf_run_cache_default(true, buf, sizeof(buf)), 0);
	ck_assert_str_ne(buf, "/somewhere/cache");
	unsetenv("FATELF_RUN_CACHE_DIR");
	unsetenv("XDG_CACHE_HOME");
	/* too small a buffer is an error, not a cut path */
	ck_assert_int_eq(fatelf_run_cache_default(false, buf, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(open_creates_private_dirs)
{
	const char *tmp = tu_tmpdir();
	char path[PATH_MAX];
	fatelf_run_cache c;
	fatelf_diag d;
	struct stat st;

	fatelf_diag_clear(&d);
	snprintf(path, sizeof(path), "%s/a/b/cache/", tmp);
	ck_assert_int_eq(fatelf_run_cache_open(path, geteuid(), &c, &d), 0);
	ck_assert_int_ge(c.fd, 0);
	/* stored without the trailing slash */
	ck_assert_uint_eq(c.path[strlen(c.path) - 1] != '/', 1);
	ck_assert_int_eq(stat("a/b/cache", &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	fatelf_run_cache_close(&c);
	ck_assert_int_eq(c.fd, -1);
	/* opening it again finds it */
	ck_assert_int_eq(fatelf_run_cache_open(path, geteuid(), &c, &d), 0);
	fatelf_run_cache_close(&c);
}
END_TEST

START_TEST(open_refuses_unsafe_dirs)
{
	const char *tmp = tu_tmpdir();
	char path[PATH_MAX];
	fatelf_run_cache c;
	fatelf_diag d;

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_run_cache_open("relative/cache", geteuid(), &c, &d), -EINVAL);

	/* the cache directory itself open to others */
	snprintf(path, sizeof(path), "%s/open", tmp);
	ck_assert_int_eq(mkdir("open", 0700), 0);
	ck_assert_int_eq(chmod("open", 0777), 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_run_cache_open(path, geteuid(), &c, &d), -EPERM);
	ck_assert_ptr_nonnull(strstr(d.msg, "writable by group or others"));
	ck_assert_int_eq(c.fd, -1);

	/* a parent open to others, not sticky */
	snprintf(path, sizeof(path), "%s/shared/cache", tmp);
	ck_assert_int_eq(mkdir("shared", 0700), 0);
	ck_assert_int_eq(chmod("shared", 0777), 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_run_cache_open(path, geteuid(), &c, &d), -EPERM);
	ck_assert_ptr_nonnull(strstr(d.msg, "parent directory is writable"));
	/* ... but sticky (like /tmp) is fine: others cannot touch our entry */
	ck_assert_int_eq(chmod("shared", 01777), 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_run_cache_open(path, geteuid(), &c, &d), 0);
	fatelf_run_cache_close(&c);

	/* a symlink on the way is not followed */
	ck_assert_int_eq(mkdir("real", 0700), 0);
	ck_assert_int_eq(symlink("real", "link"), 0);
	snprintf(path, sizeof(path), "%s/link/cache", tmp);
	fatelf_diag_clear(&d);
	ck_assert_int_lt(fatelf_run_cache_open(path, geteuid(), &c, &d), 0);
	ck_assert_ptr_nonnull(strstr(d.msg, "symlink"));
	ck_assert_int_eq(access("real/cache", F_OK), -1);

	/* a '..' component */
	snprintf(path, sizeof(path), "%s/real/../cache", tmp);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_run_cache_open(path, geteuid(), &c, &d), -EINVAL);

	/* owned by someone else (root can make one to show it) */
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/theirs", tmp);
		ck_assert_int_eq(mkdir("theirs", 0700), 0);
		ck_assert_int_eq(chown("theirs", 65534, 65534), 0);
		fatelf_diag_clear(&d);
		ck_assert_int_eq(fatelf_run_cache_open(path, 0, &c, &d), -EPERM);
		ck_assert_ptr_nonnull(strstr(d.msg, "owned by uid 65534"));
		/* and a user's cache below a directory another user owns */
		snprintf(path, sizeof(path), "%s/theirs/mine", tmp);
		ck_assert_int_eq(mkdir("theirs/mine", 0700), 0);
		fatelf_diag_clear(&d);
		ck_assert_int_eq(fatelf_run_cache_open(path, 0, &c, &d), -EPERM);
	}
}
END_TEST

START_TEST(entry_created_then_reused)
{
	const char *tmp = tu_tmpdir();
	char cdir[PATH_MAX], first[4096];
	fatelf_run_cache c;
	fatelf_run_request req;
	fatelf_run_entry e;
	fatelf_diag d;
	struct stat st1, st2;
	char *dir;
	int fd;

	fatelf_diag_clear(&d);
	ck_assert_int_eq(mkdir("app", 0755), 0);
	fd = make_fat("app/prog", 1);
	dir = abs_path("app");
	snprintf(cdir, sizeof(cdir), "%s/cache", tmp);
	ck_assert_int_eq(fatelf_run_cache_open(cdir, geteuid(), &c, &d), 0);
	request(&req, fd, dir, "prog", -1);

	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	ck_assert_int_eq(strncmp(e.path, cdir, strlen(cdir)), 0);
	/* named like the fat file, so /proc/self/exe ends in its name */
	ck_assert_str_eq(strrchr(e.path, '/'), "/prog");
	expect_record_bytes(e.path, 1);
	ck_assert_int_eq(stat(e.path, &st1), 0);
	ck_assert_uint_eq(st1.st_mode & 07777, 0700);
	snprintf(first, sizeof(first), "%s", e.path);

	/* second run: found, not written */
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(!e.created);
	ck_assert_str_eq(e.path, first);
	ck_assert_int_eq(stat(e.path, &st2), 0);
	ck_assert_uint_eq(st1.st_ino, st2.st_ino);

	/* a damaged entry (wrong size) is written again */
	ck_assert_int_eq(truncate(e.path, 10), 0);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	expect_record_bytes(e.path, 1);

	/* another record of the same file is another entry */
	req.record = 2;
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	ck_assert_str_ne(e.path, first);

	fatelf_run_cache_close(&c);
	close(fd);
	free(dir);
}
END_TEST

START_TEST(changed_file_new_entry_old_pruned)
{
	const char *tmp = tu_tmpdir();
	char cdir[PATH_MAX], first[4096], keydir[4096];
	fatelf_run_cache c;
	fatelf_run_request req;
	fatelf_run_entry e;
	fatelf_diag d;
	struct timespec ts[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	char *dir;
	int fd;

	fatelf_diag_clear(&d);
	fd = make_fat("prog", 3);
	dir = abs_path(".");
	snprintf(cdir, sizeof(cdir), "%s/cache", tmp);
	ck_assert_int_eq(fatelf_run_cache_open(cdir, geteuid(), &c, &d), 0);
	request(&req, fd, dir, "prog", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	snprintf(first, sizeof(first), "%s", e.path);

	/* new bytes and a new mtime: a new entry, with the new bytes */
	close(fd);
	fd = make_fat("prog", 9);
	ck_assert_int_eq(futimens(fd, ts), 0);
	request(&req, fd, dir, "prog", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	ck_assert_str_ne(e.path, first);
	expect_record_bytes(e.path, 9);
	/* the old entry (its key directory) is gone */
	snprintf(keydir, sizeof(keydir), "%s", first);
	*strrchr(keydir, '/') = '\0';
	ck_assert_int_eq(access(keydir, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);

	fatelf_run_cache_close(&c);
	close(fd);
	free(dir);
}
END_TEST

START_TEST(origin_view)
{
	const char *tmp = tu_tmpdir();
	char cdir[PATH_MAX], p[PATH_MAX + 64], first[4096];
	fatelf_run_cache c;
	fatelf_run_request req;
	fatelf_run_entry e;
	fatelf_diag d;
	struct stat st;
	char *bindir, *libdir, *real;
	int fd;

	fatelf_diag_clear(&d);
	ck_assert_int_eq(mkdir("app", 0755), 0);
	ck_assert_int_eq(mkdir("app/bin", 0755), 0);
	ck_assert_int_eq(mkdir("app/lib", 0755), 0);
	tu_write_file("app/lib/libx.so", "lib", 3);
	tu_write_file("app/bin/helper", "helper", 6);
	fd = make_fat("app/bin/prog", 5);
	bindir = abs_path("app/bin");
	libdir = abs_path("app/lib");
	snprintf(cdir, sizeof(cdir), "%s/cache", tmp);
	ck_assert_int_eq(fatelf_run_cache_open(cdir, geteuid(), &c, &d), 0);

	/* $ORIGIN/../lib: one level up */
	request(&req, fd, bindir, "prog", 1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	snprintf(first, sizeof(first), "%s", e.path);
	/* the binary sits in a mirror of bin/, named prog */
	ck_assert_ptr_nonnull(strstr(e.path, "/bin/prog"));
	ck_assert_int_eq(lstat(e.path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	expect_record_bytes(e.path, 5);
	/* $ORIGIN/../lib from the entry is the real lib directory */
	snprintf(p, sizeof(p), "%s", e.path);
	*strrchr(p, '/') = '\0';
	append(p, sizeof(p), "/../lib");
	real = realpath(p, NULL);
	ck_assert_ptr_nonnull(real);
	ck_assert_str_eq(real, libdir);
	free(real);
	/* and a sibling of the fat file is there too */
	snprintf(p, sizeof(p), "%s", e.path);
	*strrchr(p, '/') = '\0';
	append(p, sizeof(p), "/helper");
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert(tu_file_equals(p, "helper", 6));

	/* same again: reused */
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(!e.created);
	ck_assert_str_eq(e.path, first);

	/* a new file next to the program changes the view */
	tu_write_file("app/bin/newer", "n", 1);
	{
		struct timespec ts[2] = { { .tv_sec = 2000000000 }, { .tv_sec = 2000000000 } };

		ck_assert_int_eq(utimensat(AT_FDCWD, "app/bin", ts, 0), 0);
	}
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	ck_assert_str_ne(e.path, first);
	snprintf(p, sizeof(p), "%s", e.path);
	*strrchr(p, '/') = '\0';
	append(p, sizeof(p), "/newer");
	ck_assert(tu_file_equals(p, "n", 1));

	/* $ORIGIN alone: the entry's own directory mirrors bin/ */
	request(&req, fd, bindir, "prog", 0);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	snprintf(p, sizeof(p), "%s", e.path);
	*strrchr(p, '/') = '\0';
	append(p, sizeof(p), "/helper");
	ck_assert(tu_file_equals(p, "helper", 6));
	ck_assert_str_eq(strrchr(e.path, '/'), "/prog");

	fatelf_run_cache_close(&c);
	close(fd);
	free(bindir);
	free(libdir);
}
END_TEST

/* The file directory of an entry: CACHE/<dev>-<ino>-<hash> */
static void file_dir_of(const char *entry, const char *cdir, char *buf, size_t cap)
{
	const char *rest = entry + strlen(cdir) + 1;
	const char *slash = strchr(rest, '/');

	ck_assert_ptr_nonnull(slash);
	ck_assert_int_lt((int)(slash - entry), (int)cap);
	memcpy(buf, entry, (size_t)(slash - entry));
	buf[slash - entry] = '\0';
}

START_TEST(replaced_and_removed_files_collected)
{
	const char *tmp = tu_tmpdir();
	char cdir[PATH_MAX], olddir[4096], gonedir[4096], keptdir[4096];
	fatelf_run_cache c;
	fatelf_run_request req;
	fatelf_run_entry e;
	fatelf_diag d;
	char *dir;
	int fd, fd2;

	fatelf_diag_clear(&d);
	dir = abs_path(".");
	snprintf(cdir, sizeof(cdir), "%s/cache", tmp);
	ck_assert_int_eq(fatelf_run_cache_open(cdir, geteuid(), &c, &d), 0);

	/* prog, then gone, and kept (a file that stays) are cached */
	fd = make_fat("prog", 1);
	request(&req, fd, dir, "prog", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	file_dir_of(e.path, cdir, olddir, sizeof(olddir));
	close(fd);
	fd = make_fat("gone", 2);
	request(&req, fd, dir, "gone", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	file_dir_of(e.path, cdir, gonedir, sizeof(gonedir));
	close(fd);
	fd = make_fat("kept", 4);
	request(&req, fd, dir, "kept", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	file_dir_of(e.path, cdir, keptdir, sizeof(keptdir));
	close(fd);
	ck_assert_int_eq(access(olddir, F_OK), 0);
	ck_assert_int_eq(access(gonedir, F_OK), 0);

	/* an upgrade renames a new file over prog; gone is deleted */
	fd2 = make_fat("prog.new", 3);
	ck_assert_int_eq(rename("prog.new", "prog"), 0);
	ck_assert_int_eq(unlink("gone"), 0);
	/* the next first run collects both, and leaves the live one */
	request(&req, fd2, dir, "prog", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	expect_record_bytes(e.path, 3);
	ck_assert_int_eq(access(olddir, F_OK), -1);
	ck_assert_int_eq(access(gonedir, F_OK), -1);
	ck_assert_int_eq(access(keptdir, F_OK), 0);
	/* a plain run (no new entry) does not scan at all: nothing to see,
	 * but the live entries are all still there */
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(!e.created);
	ck_assert_int_eq(access(e.path, X_OK), 0);

	fatelf_run_cache_close(&c);
	close(fd2);
	free(dir);
}
END_TEST

/* A run killed while writing its entry leaves a temp directory with a
 * partial binary: it is never run (the entry appears only by rename), the
 * next run writes a whole entry, and the leftover goes once it is old. */
START_TEST(killed_run_leftovers)
{
	const char *tmp = tu_tmpdir();
	char cdir[PATH_MAX], fdir[4096], stale[4200], fresh[4200], part[4300];
	struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	fatelf_run_cache c;
	fatelf_run_request req;
	fatelf_run_entry e;
	fatelf_diag d;
	char *dir;
	int fd;

	fatelf_diag_clear(&d);
	dir = abs_path(".");
	snprintf(cdir, sizeof(cdir), "%s/cache", tmp);
	ck_assert_int_eq(fatelf_run_cache_open(cdir, geteuid(), &c, &d), 0);
	fd = make_fat("prog", 6);
	request(&req, fd, dir, "prog", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	file_dir_of(e.path, cdir, fdir, sizeof(fdir));

	/* what two killed runs left: one long ago, one just now (named as an
	 * earlier version named them) */
	snprintf(stale, sizeof(stale), "%s/.fatelf.k.4242", fdir);
	snprintf(fresh, sizeof(fresh), "%s/.tmp.4343.2", fdir);
	ck_assert_int_eq(mkdir(stale, 0700), 0);
	ck_assert_int_eq(mkdir(fresh, 0700), 0);
	snprintf(part, sizeof(part), "%s/prog", stale);
	tu_write_file(part, "\x7f" "ELF partial", 12);
	ck_assert_int_eq(utimensat(AT_FDCWD, stale, old, 0), 0);

	/* the file changes: the next run writes a whole new entry */
	close(fd);
	fd = make_fat("prog", 8);
	ck_assert_int_eq(futimens(fd, old), 0);
	request(&req, fd, dir, "prog", -1);
	ck_assert_int_eq(fatelf_run_cache_get(&c, &req, &e, &d), 0);
	ck_assert(e.created);
	expect_record_bytes(e.path, 8);
	ck_assert_ptr_null(strstr(e.path, "/.fatelf."));
	/* the old leftover is gone; a recent one may be a live run's */
	ck_assert_int_eq(access(stale, F_OK), -1);
	ck_assert_int_eq(access(fresh, F_OK), 0);

	fatelf_run_cache_close(&c);
	close(fd);
	free(dir);
}
END_TEST

START_TEST(copy_exact_bytes)
{
	int fd, out;
	uint8_t got[REC_LEN];

	tu_tmpdir();
	fd = make_fat("prog", 11);
	/* a memfd takes copy_file_range; a pipe forces the read/write path */
	out = memfd_create("copy", MFD_CLOEXEC);
	ck_assert_int_ge(out, 0);
	ck_assert_int_eq(copy_range(fd, REC_OFF, out, COPY_AT_POSITION, REC_LEN), 0);
	ck_assert_int_eq(pread(out, got, sizeof(got), 0), (ssize_t)REC_LEN);
	for (size_t i = 0; i < REC_LEN; i++)
		ck_assert_uint_eq(got[i], (uint8_t)((REC_OFF + i) * 7u + 11));
	close(out);
	{
		int pfd[2];

		ck_assert_int_eq(pipe(pfd), 0);
		ck_assert_int_eq(copy_range(fd, REC_OFF, pfd[1], COPY_AT_POSITION, 1000), 0);
		ck_assert_int_eq(read(pfd[0], got, sizeof(got)), 1000);
		ck_assert_uint_eq(got[0], (uint8_t)(REC_OFF * 7u + 11));
		ck_assert_uint_eq(got[999], (uint8_t)((REC_OFF + 999) * 7u + 11));
		close(pfd[0]);
		close(pfd[1]);
	}
	/* past the end of the file: an error, not a short copy */
	out = memfd_create("copy2", MFD_CLOEXEC);
	ck_assert_int_lt(copy_range(fd, REC_OFF, out, COPY_AT_POSITION, REC_LEN + 1000), 0);
	close(out);
	close(fd);
}
END_TEST

static Suite *runcache_suite(void)
{
	Suite *s = suite_create("runcache");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, default_dir);
	tcase_add_test(tc, open_creates_private_dirs);
	tcase_add_test(tc, open_refuses_unsafe_dirs);
	tcase_add_test(tc, entry_created_then_reused);
	tcase_add_test(tc, changed_file_new_entry_old_pruned);
	tcase_add_test(tc, origin_view);
	tcase_add_test(tc, replaced_and_removed_files_collected);
	tcase_add_test(tc, killed_run_leftovers);
	tcase_add_test(tc, copy_exact_bytes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(runcache_suite());
}
