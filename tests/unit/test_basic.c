/*
 * Unit tests for the small helpers of the basic layer (lib/basic): mkdir_p
 * and path_join (path.c), as a user sees them on disk; hex encoding and
 * decoding (hex.c); growing arrays (array.c); temp files renamed into
 * place (atomic.c); the diag's fillers and its one reader of a failure's
 * text (diag.c); the hash set and the digest comparison (hashset.c).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "atomic.h"
#include "diag.h"
#include "hashset.h"
#include "hex.h"
#include "path.h"
#include "text.h"
#include "testutil.h"

/* ------------------------------------------------------------ path */

static mode_t mode_of(const char *path)
{
	struct stat st;

	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	return st.st_mode & 07777;
}

START_TEST(mkdir_p_modes)
{
	tu_tmpdir();
	umask(022);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "a/b/c", 0755, 0700, 0), 0);
	ck_assert_uint_eq(mode_of("a"), 0755);
	ck_assert_uint_eq(mode_of("a/b"), 0755);
	ck_assert_uint_eq(mode_of("a/b/c"), 0700);
	/* Existing directories stay as they are. */
	ck_assert_int_eq(chmod("a/b", 0750), 0);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "a//b/c/", 0755, 0755, 0), 0);
	ck_assert_uint_eq(mode_of("a/b"), 0750);
	ck_assert_uint_eq(mode_of("a/b/c"), 0700);
	/* The umask applies. */
	umask(077);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "u", 0755, 0755, 0), 0);
	ck_assert_uint_eq(mode_of("u"), 0700);
	umask(022);
}
END_TEST

START_TEST(mkdir_p_dirfd_and_absolute)
{
	const char *tmp = tu_tmpdir();
	char *abs = path_join(tmp, "x/y");
	int fd;

	ck_assert_int_eq(mkdir("base", 0755), 0);
	fd = open("base", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mkdir_p(fd, "p/q", 0755, 0755, 0), 0);
	mode_of("base/p/q");
	/* An absolute path ignores the descriptor. */
	ck_assert_int_eq(mkdir_p(fd, abs, 0755, 0755, 0), 0);
	mode_of("x/y");
	close(fd);
	free(abs);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "", 0755, 0755, 0), -EINVAL);
}
END_TEST

START_TEST(mkdir_p_parents_only)
{
	tu_tmpdir();
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "run/d/sock", 0755, 0755, MKDIR_PARENTS_ONLY), 0);
	mode_of("run/d");
	ck_assert_int_eq(access("run/d/sock", F_OK), -1);
	/* The last component may already be anything. */
	tu_write_file("run/d/sock", "x", 1);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "run/d/sock", 0755, 0755, MKDIR_PARENTS_ONLY), 0);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "sock", 0755, 0755, MKDIR_PARENTS_ONLY), 0);
}
END_TEST

START_TEST(mkdir_p_refuses_symlinks)
{
	tu_tmpdir();
	ck_assert_int_eq(mkdir("outside", 0755), 0);
	ck_assert_int_eq(mkdir("in", 0755), 0);
	ck_assert_int_eq(symlink("../outside", "in/link"), 0);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/link/new", 0755, 0755, 0), -ELOOP);
	ck_assert_int_eq(access("outside/new", F_OK), -1);
	/* A symlink as the last component is not a directory either. */
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/link", 0755, 0755, 0), -ELOOP);
	/* A dangling one is not followed to create its target. */
	ck_assert_int_eq(symlink("../outside/made", "in/dangling"), 0);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/dangling/x", 0755, 0755, 0), -ELOOP);
	ck_assert_int_eq(access("outside/made", F_OK), -1);
	/* A file on the way. */
	tu_write_file("in/file", "x", 1);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/file/x", 0755, 0755, 0), -ENOTDIR);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/file", 0755, 0755, 0), -ENOTDIR);
	/* MKDIR_FOLLOW goes through an existing symlink, and no further. */
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/link/new/sub", 0755, 0700, MKDIR_FOLLOW), 0);
	ck_assert_int_eq(access("outside/new/sub", F_OK), 0);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/dangling/x", 0755, 0755, MKDIR_FOLLOW), -ENOENT);
	ck_assert_int_eq(access("outside/made", F_OK), -1);
	ck_assert_int_eq(mkdir_p(AT_FDCWD, "in/file/x", 0755, 0755, MKDIR_FOLLOW), -ENOTDIR);
}
END_TEST

/* mkdir_p_open: the descriptor of what it reached; MKDIR_BENEATH keeps
 * the walk inside dirfd, MKDIR_NOCREATE makes nothing, and the prefix
 * that failed is told. */
START_TEST(mkdir_p_open_beneath)
{
	struct stat a, b;
	size_t failed = 0;
	int root, fd;

	tu_tmpdir();
	ck_assert_int_eq(mkdir("root", 0755), 0);
	ck_assert_int_eq(mkdir("outside", 0755), 0);
	root = open("root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root, 0);
	ck_assert_int_eq(mkdir_p_open(root, "var/lib", 0, 0, MKDIR_BENEATH | MKDIR_NOCREATE, &failed), -ENOENT);
	ck_assert_uint_eq(failed, 3);
	ck_assert_int_eq(access("root/var", F_OK), -1);
	fd = mkdir_p_open(root, "var/lib/x", 0755, 0700, MKDIR_BENEATH, NULL);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq(stat("root/var/lib/x", &b), 0);
	ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	ck_assert_uint_eq(mode_of("root/var/lib/x"), 0700);
	close(fd);
	/* A symlink anywhere on the way, even one that stays inside. */
	ck_assert_int_eq(symlink("../../outside", "root/var/lib/y"), 0);
	ck_assert_int_eq(mkdir_p_open(root, "var/lib/y/z", 0755, 0755, MKDIR_BENEATH, &failed), -ELOOP);
	ck_assert_uint_eq(failed, strlen("var/lib/y"));
	ck_assert_int_eq(access("outside/z", F_OK), -1);
	ck_assert_int_eq(symlink("lib", "root/var/in"), 0);
	ck_assert_int_eq(mkdir_p_open(root, "var/in/x", 0755, 0755, MKDIR_BENEATH, NULL), -ELOOP);
	/* Nothing climbs out, and nothing absolute gets in. */
	ck_assert_int_eq(mkdir_p_open(root, "var/../../outside", 0755, 0755, MKDIR_BENEATH, NULL), -EXDEV);
	ck_assert_int_eq(mkdir_p_open(root, "/tmp", 0755, 0755, MKDIR_BENEATH, NULL), -EXDEV);
	close(root);
}
END_TEST

/* MKDIR_FOLLOW_TRUSTED follows a symlink only where nobody but root or
 * us could have made it, and never as the last component. */
START_TEST(mkdir_p_open_follow_trusted)
{
	int fd;

	tu_tmpdir();
	ck_assert_int_eq(mkdir("target", 0755), 0);
	ck_assert_int_eq(mkdir("safe", 0755), 0);
	ck_assert_int_eq(symlink("../target", "safe/link"), 0);
	fd = mkdir_p_open(AT_FDCWD, "safe/link/state", 0755, 0700, MKDIR_FOLLOW_TRUSTED, NULL);
	ck_assert_int_ge(fd, 0);
	close(fd);
	mode_of("target/state");
	ck_assert_int_eq(symlink("../target/state", "safe/last"), 0);
	ck_assert_int_eq(mkdir_p_open(AT_FDCWD, "safe/last", 0755, 0700, MKDIR_FOLLOW_TRUSTED, NULL), -ELOOP);
	/* Planted in a directory others may write. */
	ck_assert_int_eq(mkdir("open", 0755), 0);
	ck_assert_int_eq(chmod("open", 0777), 0);
	ck_assert_int_eq(symlink("../target", "open/link"), 0);
	ck_assert_int_eq(mkdir_p_open(AT_FDCWD, "open/link/other", 0755, 0700, MKDIR_FOLLOW_TRUSTED, NULL),
			 -ELOOP);
	ck_assert_int_eq(access("target/other", F_OK), -1);
}
END_TEST

START_TEST(mkdir_p_long_component)
{
	char name[300];

	tu_tmpdir();
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ck_assert_int_eq(mkdir_p(AT_FDCWD, name, 0755, 0755, 0), -ENAMETOOLONG);
}
END_TEST

static void join_is(const char *a, const char *b, const char *want)
{
	char *r = path_join(a, b);

	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r, want);
	free(r);
}

START_TEST(path_join_seams)
{
	join_is("/etc/fatelfd.conf.d", "10-a.conf", "/etc/fatelfd.conf.d/10-a.conf");
	join_is("/", "opt/x", "/opt/x");
	join_is("keys/", "a.pub", "keys/a.pub");
	join_is("keys", "/a.pub", "keys/a.pub");
	join_is("keys//", "//a.pub", "keys//a.pub");
	join_is("", "rel", "rel");
	join_is("dir", "", "dir/");
}
END_TEST

/* ------------------------------------------------------------ hex */

START_TEST(hex_round_trip)
{
	uint8_t in[256], back[256];
	char text[513];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;
	fatelf_hex(in, sizeof(in), text);
	ck_assert_uint_eq(strlen(text), 512);
	ck_assert(strncmp(text, "000102", 6) == 0);
	ck_assert_str_eq(text + 500, "fafbfcfdfeff");
	ck_assert_int_eq(fatelf_unhex(text, back, sizeof(back)), 0);
	ck_assert_mem_eq(in, back, sizeof(in));
	ck_assert_int_eq(fatelf_unhex_lower(text, back, sizeof(back)), 0);
	fatelf_hex(in, 0, text);
	ck_assert_str_eq(text, "");
}
END_TEST

START_TEST(hex_refusals)
{
	uint8_t b[4];

	ck_assert_int_eq(fatelf_unhex("0aFf", b, 2), 0);
	ck_assert_uint_eq(b[0], 0x0a);
	ck_assert_uint_eq(b[1], 0xff);
	ck_assert_int_eq(fatelf_unhex_lower("0aFf", b, 2), -EINVAL);
	ck_assert_int_eq(fatelf_unhex_lower("0aff", b, 2), 0);
	ck_assert_int_eq(fatelf_unhex("0g", b, 1), -EINVAL);
	ck_assert_int_eq(fatelf_unhex("abc", b, 2), -EINVAL);
	ck_assert_int_eq(fatelf_unhex("", b, 1), -EINVAL);
	ck_assert_int_eq(fatelf_unhex(" 1", b, 1), -EINVAL);
	ck_assert_int_eq(fatelf_unhex("", b, 0), 0);
	ck_assert_int_eq(fatelf_hex_digit('7'), 7);
	ck_assert_int_eq(fatelf_hex_digit('B'), 11);
	ck_assert_int_eq(fatelf_hex_digit('g'), -1);
	ck_assert_int_eq(fatelf_hex_digit('\0'), -1);
}
END_TEST

/* ------------------------------------------------------------ array */

START_TEST(grow_appends)
{
	uint32_t *v = NULL;
	size_t cap = 0, reallocs = 0;

	for (uint32_t i = 0; i < 100000; i++) {
		size_t before = cap;

		ck_assert_int_eq(GROW_ARRAY(v, cap, (size_t)i + 1), 0);
		ck_assert_uint_ge(cap, (size_t)i + 1);
		if (cap != before)
			reallocs++;
		v[i] = i * 7u;
	}
	/* Doubling: a handful of reallocations, not one per element. */
	ck_assert_uint_le(reallocs, 20);
	for (uint32_t i = 0; i < 100000; i++)
		ck_assert_uint_eq(v[i], i * 7u);
	/* Enough room already: nothing changes. */
	{
		uint32_t *same = v;
		size_t c = cap;

		ck_assert_int_eq(GROW_ARRAY(v, cap, 5), 0);
		ck_assert_ptr_eq(v, same);
		ck_assert_uint_eq(cap, c);
	}
	/* A jump past twice the capacity gets at least what was asked. */
	ck_assert_int_eq(GROW_ARRAY(v, cap, cap * 3 + 1), 0);
	free(v);
}
END_TEST

START_TEST(grow_overflow_keeps_array)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	uint64_t *kept;

	ck_assert_int_eq(GROW_ARRAY(v, cap, 3), 0);
	v[0] = 42;
	kept = v;
	ck_assert_int_eq(GROW_ARRAY(v, cap, SIZE_MAX / 4), -ENOMEM);
	ck_assert_int_eq(GROW_ARRAY(v, cap, SIZE_MAX), -ENOMEM);
	ck_assert_ptr_eq(v, kept);
	ck_assert_uint_eq(cap, 8);
	ck_assert_uint_eq(v[0], 42);
	free(v);
}
END_TEST

START_TEST(grow_bytes)
{
	char *b = NULL;
	size_t cap = 0;

	ck_assert_int_eq(GROW_ARRAY(b, cap, 1), 0);
	ck_assert_uint_eq(cap, 8);
	ck_assert_int_eq(GROW_ARRAY(b, cap, 9), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(GROW_ARRAY(b, cap, 1000), 0);
	ck_assert_uint_eq(cap, 1024);
	ck_assert_int_eq(fatelf_grow(&b, &cap, 2000, 0), -EINVAL);
	free(b);
}
END_TEST

/* ------------------------------------------------------------ hashset */

static bool str_is(size_t i, const void *key, const void *userdata)
{
	char *const *v = userdata;

	return strcmp(v[i], key) == 0;
}

/* Ten thousand paths: each found at its own index, through every growth;
 * a path not added is not found; a clear forgets them all. */
START_TEST(hashset_finds_each)
{
	enum { N = 10000 };
	_cleanup_hashset_ hashset s = { 0 };
	char **v = calloc(N, sizeof(*v));
	char key[64];

	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(hashset_find(&s, hashset_hash_str("/none"), "/none", str_is, v), HASHSET_NONE);
	for (size_t i = 0; i < N; i++) {
		ck_assert_int_ge(asprintf(&v[i], "/usr/share/p%zu/file", i), 0);
		ck_assert_int_eq(hashset_add(&s, hashset_hash_str(v[i]), i), 0);
	}
	ck_assert_uint_eq(s.n, N);
	ck_assert_uint_ge(s.cap, 2 * N);
	for (size_t i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "/usr/share/p%zu/file", i);
		ck_assert_uint_eq(hashset_find(&s, hashset_hash_str(key), key, str_is, v), i);
	}
	ck_assert_uint_eq(hashset_find(&s, hashset_hash_str("/usr/share/p10000/file"), "/usr/share/p10000/file",
				       str_is, v), HASHSET_NONE);
	hashset_clear(&s);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_uint_eq(hashset_find(&s, hashset_hash_str(v[7]), v[7], str_is, v), HASHSET_NONE);
	ck_assert_int_eq(hashset_add(&s, hashset_hash_str(v[7]), 7), 0);
	ck_assert_uint_eq(hashset_find(&s, hashset_hash_str(v[7]), v[7], str_is, v), 7);
	for (size_t i = 0; i < N; i++)
		free(v[i]);
	free(v);
}
END_TEST

/* Items that share one hash are told apart by the caller's equality,
 * and a probe runs past them to the one asked for. */
START_TEST(hashset_same_hash)
{
	_cleanup_hashset_ hashset s = { 0 };
	char *v[] = { "a", "b", "c", "d", "e" };

	for (size_t i = 0; i < 5; i++)
		ck_assert_int_eq(hashset_add(&s, 42, i), 0);
	for (size_t i = 0; i < 5; i++)
		ck_assert_uint_eq(hashset_find(&s, 42, v[i], str_is, v), i);
	ck_assert_uint_eq(hashset_find(&s, 42, "f", str_is, v), HASHSET_NONE);
	/* the same key under another hash is another key */
	ck_assert_uint_eq(hashset_find(&s, 43, "a", str_is, v), HASHSET_NONE);
	ck_assert_int_eq(hashset_add(&s, 1, HASHSET_NONE), -EINVAL);
}
END_TEST

START_TEST(digest_cmp_orders)
{
	uint8_t v[3][32];

	memset(v[0], 0xff, 32);
	memset(v[1], 0x00, 32);
	memset(v[2], 0x00, 32);
	v[2][31] = 1;
	qsort(v, 3, 32, digest_cmp);
	ck_assert_int_eq(v[0][31], 0);
	ck_assert_int_eq(v[1][31], 1);
	ck_assert_int_eq(v[2][0], 0xff);
	ck_assert_ptr_eq(bsearch(v[1], v, 3, 32, digest_cmp), v[1]);
	ck_assert_int_eq(hashset_hash_digest(v[2]) != hashset_hash_digest(v[1]), 1);
}
END_TEST

/* ------------------------------------------------------------ atomic */

/* How many names in the working directory start with prefix. */
static int count_entries(const char *prefix)
{
	DIR *d = opendir(".");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

START_TEST(temp_name_scheme)
{
	char a[FATELF_TEMP_NAME_MAX], b[FATELF_TEMP_NAME_MAX], tag[300];

	ck_assert_int_eq(fatelf_temp_name("7.3", a), 0);
	ck_assert_int_eq(fatelf_temp_name("7.3", b), 0);
	ck_assert(strncmp(a, FATELF_TEMP_PREFIX "7.3.", 12) == 0);
	ck_assert_uint_eq(strlen(a), 12 + 16);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(fatelf_temp_name("a/b", a), -EINVAL);
	/* A long tag is cut; the name stays a valid file name. */
	memset(tag, 't', sizeof(tag) - 1);
	tag[sizeof(tag) - 1] = '\0';
	ck_assert_int_eq(fatelf_temp_name(tag, a), 0);
	ck_assert_uint_le(strlen(a), 255);
	ck_assert_int_eq(a[strlen(a) - 17], '.');
}
END_TEST

START_TEST(tmpfile_commit_replaces)
{
	fatelf_tmpfile t;
	int dfd;

	tu_tmpdir();
	tu_write_file("target", "old", 3);
	dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_eq(fatelf_tmpfile_open(dfd, "target", 0640, &t), 0);
	ck_assert_int_eq(count_entries(".fatelf.target."), 1);
	/* Until the commit, readers see the old bytes. */
	ck_assert(tu_file_equals("target", "old", 3));
	ck_assert_int_eq(write(t.fd, "new bytes", 9), 9);
	ck_assert_int_eq(fatelf_tmpfile_commit(&t, "target", true), 0);
	ck_assert(tu_file_equals("target", "new bytes", 9));
	ck_assert_int_eq(count_entries(FATELF_TEMP_PREFIX), 0);
	ck_assert_int_eq(t.fd, -1);
	/* Finished: an abort does nothing. */
	fatelf_tmpfile_abort(&t);
	ck_assert(tu_file_equals("target", "new bytes", 9));

	/* An abort removes the temp and leaves the target alone. */
	ck_assert_int_eq(fatelf_tmpfile_open(dfd, "target", 0600, &t), 0);
	ck_assert_int_eq(write(t.fd, "x", 1), 1);
	fatelf_tmpfile_abort(&t);
	ck_assert_int_eq(count_entries(FATELF_TEMP_PREFIX), 0);
	ck_assert(tu_file_equals("target", "new bytes", 9));

	/* A commit that cannot rename (a directory in the way) removes the temp. */
	ck_assert_int_eq(mkdir("dir", 0755), 0);
	ck_assert_int_eq(fatelf_tmpfile_open(dfd, "dir", 0600, &t), 0);
	ck_assert_int_eq(fatelf_tmpfile_commit(&t, "dir", false), -EISDIR);
	ck_assert_int_eq(count_entries(FATELF_TEMP_PREFIX), 0);
	close(dfd);
	ck_assert_int_eq(fatelf_tmpfile_open(-1, "x", 0600, &t), -EBADF);
	ck_assert_str_eq(t.name, "");
	fatelf_tmpfile_abort(&t);
}
END_TEST

/* Whether a message names its subject is a flag its writer sets. */
START_TEST(diag_named_flag)
{
	fatelf_diag d;

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_diag_at(&d, -EIO, 2, "/opt/a", "cannot read %s", "it"), -EIO);
	ck_assert_str_eq(d.msg, "/opt/a: cannot read it");
	ck_assert_str_eq(d.subject, "/opt/a");
	ck_assert_int_eq(d.record, 2);
	ck_assert(d.has & FATELF_DIAG_NAMED);
	/* a new message clears the flag and keeps the facts */
	d.has |= FATELF_DIAG_HAS_UID;
	fatelf_diag_set(&d, -EINVAL, -1, "something else");
	ck_assert(!(d.has & FATELF_DIAG_NAMED));
	ck_assert(d.has & FATELF_DIAG_HAS_UID);
	fatelf_diag_names(&d, "pkg");
	ck_assert_str_eq(d.subject, "pkg");
	ck_assert(d.has & FATELF_DIAG_NAMED);
	fatelf_diag_names(NULL, "x");
	ck_assert_int_eq(fatelf_diag_at(NULL, -EIO, -1, "x", "y"), -EIO);
}
END_TEST

/* Out of memory is one code and one wording, in the diag and in what
 * it returns; the facts a caller filled stay. */
START_TEST(diag_oom_agrees)
{
	fatelf_diag d;

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_diag_at(&d, -EIO, 3, "/opt/a", "cannot read"), -EIO);
	FATELF_DIAG_FACT(&d, package, "base");
	ck_assert_int_eq(fatelf_diag_oom(&d), -ENOMEM);
	ck_assert_int_eq(d.code, -ENOMEM);
	ck_assert_int_eq(d.record, -1);
	ck_assert_str_eq(d.msg, "out of memory");
	/* the message no longer names /opt/a */
	ck_assert(!(d.has & FATELF_DIAG_NAMED));
	ck_assert_str_eq(d.package, "base");
	ck_assert_int_eq(fatelf_diag_oom(NULL), -ENOMEM);
}
END_TEST

/* A failure's text is the diag's message only while the diag holds that
 * failure; a message left from another one is never shown. */
START_TEST(diag_text_only_its_failure)
{
	fatelf_diag d;

	fatelf_diag_clear(&d);
	/* an empty diag: the code's own wording */
	ck_assert_str_eq(fatelf_diag_text(&d, -EIO), fatelf_strerror(-EIO));
	ck_assert_str_eq(fatelf_diag_text(NULL, -FATELF_E_ALIGN), "record offset is not aligned");
	fatelf_diag_set(&d, -FATELF_E_ALIGN, 2, "record 2: offset 0x3008 is not aligned to 0x10000");
	ck_assert_str_eq(fatelf_diag_text(&d, -FATELF_E_ALIGN), "record 2: offset 0x3008 is not aligned to 0x10000");
	/* a stale message of another failure: ignored */
	ck_assert_str_eq(fatelf_diag_text(&d, -EIO), strerror(EIO));
	ck_assert_str_eq(fatelf_diag_text(&d, -ENOMEM), "out of memory");
	ck_assert_str_eq(fatelf_diag_text(&d, -FATELF_E_OVERLAP), "records overlap");
	/* the code without a message: the code's wording */
	d.msg[0] = '\0';
	ck_assert_str_eq(fatelf_diag_text(&d, -FATELF_E_ALIGN), "record offset is not aligned");
	/* out of memory reads the same with a diag and without one */
	fatelf_diag_oom(&d);
	ck_assert_str_eq(fatelf_diag_text(&d, -ENOMEM), fatelf_diag_text(NULL, -ENOMEM));
	ck_assert_str_eq(fatelf_diag_text(NULL, -ENOMEM), "out of memory");
}
END_TEST

/* The one text rule of names, summaries and paths: UTF-8, no C0, DEL or
 * C1 control, no bidirectional formatting character; and its wording. */
START_TEST(text_rule)
{
	static const struct {
		const char *s;
		int want;
		const char *problem;
	} cases[] = {
		{ "plain caf\xc3\xa9 \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d", FATELF_TEXT_OK, NULL },
		{ "a\x1b[2J", FATELF_TEXT_CONTROL, "holds the control character U+001B at byte 1" },
		{ "ab\x7f", FATELF_TEXT_CONTROL, "holds the control character U+007F at byte 2" },
		{ "a\xc2\x85z", FATELF_TEXT_CONTROL, "holds the control character U+0085 at byte 1" },
		{ "a\xc2\x9f", FATELF_TEXT_CONTROL, "holds the control character U+009F at byte 1" },
		{ "a\xff", FATELF_TEXT_UTF8, "is not valid UTF-8 (byte 1)" },
		{ "inv\xe2\x80\xae" "fdp.exe", FATELF_TEXT_BIDI,
		  "holds the bidirectional control character U+202E at byte 3" },
		{ "\xe2\x80\xaa", FATELF_TEXT_BIDI, "holds the bidirectional control character U+202A at byte 0" },
		{ "x\xe2\x81\xa6y", FATELF_TEXT_BIDI, "holds the bidirectional control character U+2066 at byte 1" },
		{ "x\xe2\x81\xa9", FATELF_TEXT_BIDI, "holds the bidirectional control character U+2069 at byte 1" },
		{ "x\xe2\x80\x8e", FATELF_TEXT_BIDI, "holds the bidirectional control character U+200E at byte 1" },
		{ "x\xe2\x80\x8f", FATELF_TEXT_BIDI, "holds the bidirectional control character U+200F at byte 1" },
		{ "x\xd8\x9c", FATELF_TEXT_BIDI, "holds the bidirectional control character U+061C at byte 1" },
		/* Their neighbours are text. */
		{ "x\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xe2\x80\x8d\xe2\x80\x90", FATELF_TEXT_OK, NULL },
	};
	char buf[FATELF_TEXT_PROBLEM_MAX];
	size_t at;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = fatelf_text_problem(cases[i].s, strlen(cases[i].s), buf);

		ck_assert_msg(fatelf_text_check(cases[i].s, strlen(cases[i].s), &at) == cases[i].want,
			      "case %zu", i);
		if (cases[i].problem)
			ck_assert_str_eq(p, cases[i].problem);
		else
			ck_assert_ptr_null(p);
	}
	ck_assert(fatelf_text_is_bidi(0x202e) && fatelf_text_is_bidi(0x2066) && !fatelf_text_is_bidi(0x202f));
}
END_TEST

/* What a terminal is handed: no raw control or bidirectional character,
 * whole, and text quoted already unchanged. */
START_TEST(text_display)
{
	char q[FATELF_TEXT_QUOTE_BUF];
	char *s;

	s = fatelf_text_display("opt/x\xe2\x80\xaey \x1b[2J\xc2\x85 \xff caf\xc3\xa9 a\\b");
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "opt/x\\u202ey \\x1b[2J\\xc2\\x85 \\xff caf\xc3\xa9 a\\b");
	ck_assert_ptr_null(strstr(s, "\xe2\x80\xae"));
	free(s);
	s = fatelf_text_display("\xe2\x81\xa6\xe2\x81\xa9\xe2\x80\x8f\xd8\x9c\n");
	ck_assert_str_eq(s, "\\u2066\\u2069\\u200f\\u061c\\x0a");
	free(s);
	s = fatelf_text_display("");
	ck_assert_str_eq(s, "");
	free(s);
	/* Quoting for messages escapes them the same way. */
	ck_assert_str_eq(fatelf_text_quote("a\xe2\x80\xae\\b", q), "a\\u202e\\x5cb");
	s = fatelf_text_display(q);
	ck_assert_str_eq(s, q);
	free(s);
	/* A quote cut to fit never cuts an escape. */
	char big[200];
	for (size_t i = 0; i + 3 <= 198; i += 3)
		memcpy(big + i, "\xe2\x80\xae", 3);
	big[198] = '\0';
	fatelf_text_quote(big, q);
	ck_assert_uint_le(strlen(q), FATELF_TEXT_QUOTE_MAX + 3);
	ck_assert_str_eq(q + strlen(q) - 9, "\\u202e...");
}
END_TEST

static Suite *basic_suite(void)
{
	Suite *s = suite_create("basic");
	TCase *tc = tcase_create("path");

	tcase_add_test(tc, mkdir_p_modes);
	tcase_add_test(tc, mkdir_p_dirfd_and_absolute);
	tcase_add_test(tc, mkdir_p_parents_only);
	tcase_add_test(tc, mkdir_p_refuses_symlinks);
	tcase_add_test(tc, mkdir_p_long_component);
	tcase_add_test(tc, mkdir_p_open_beneath);
	tcase_add_test(tc, mkdir_p_open_follow_trusted);
	tcase_add_test(tc, path_join_seams);
	suite_add_tcase(s, tc);
	tc = tcase_create("text");
	tcase_add_test(tc, text_rule);
	tcase_add_test(tc, text_display);
	suite_add_tcase(s, tc);
	tc = tcase_create("hex");
	tcase_add_test(tc, hex_round_trip);
	tcase_add_test(tc, hex_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("array");
	tcase_add_test(tc, grow_appends);
	tcase_add_test(tc, grow_overflow_keeps_array);
	tcase_add_test(tc, grow_bytes);
	suite_add_tcase(s, tc);
	tc = tcase_create("hashset");
	tcase_add_test(tc, hashset_finds_each);
	tcase_add_test(tc, hashset_same_hash);
	tcase_add_test(tc, digest_cmp_orders);
	suite_add_tcase(s, tc);
	tc = tcase_create("atomic");
	tcase_add_test(tc, temp_name_scheme);
	tcase_add_test(tc, tmpfile_commit_replaces);
	suite_add_tcase(s, tc);
	tc = tcase_create("diag");
	tcase_add_test(tc, diag_named_flag);
	tcase_add_test(tc, diag_oom_agrees);
	tcase_add_test(tc, diag_text_only_its_failure);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(basic_suite());
}
