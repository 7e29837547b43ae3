/*
 * Unit tests for the bundle writer, the one-pass reader, extraction (and
 * the staging and target rules it shares with the install engine) and
 * the safe root walk: round trips byte for byte, reproducibility,
 * thinning while reading, signatures, and the hostile corpus.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "elfgen.h"
#include "hostile.h"
#include "stage.h"
#include "testutil.h"

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img make_img(uint16_t machine, uint8_t cls, uint8_t order, uint64_t p_align,
			   size_t size, uint32_t seed)
{
	elfgen_opts o;
	struct img im;

	elfgen_defaults(&o, machine, cls, order);
	o.p_align = p_align;
	o.size = size;
	o.seed = seed;
	im.buf = elfgen_make(&o, &im.len);
	return im;
}

/* The images of the fat program in the test tree, by target. */
static struct img prog[3];

/*
 * tree/opt/game/bin/game      FatELF: x86_64, aarch64, riscv64
 * tree/opt/game/bin/helper    plain x86_64 ELF
 * tree/opt/game/share/data    data
 * tree/opt/game/lib/libg.so   symlink -> libg.so.1
 * tree/etc/game.conf          config (under etc/)
 */
static void make_tree(void)
{
	fatelf_diag d;
	const char *in[] = { "x.elf", "a.elf", "r.elf" };

	prog[0] = make_img(62, FATELF_CLASS64, FATELF_DATA2LSB, 0x1000, 20000, 1);
	prog[1] = make_img(183, FATELF_CLASS64, FATELF_DATA2LSB, 0x10000, 30000, 2);
	prog[2] = make_img(243, FATELF_CLASS64, FATELF_DATA2LSB, 0x1000, 25000, 3);
	for (int i = 0; i < 3; i++)
		tu_write_file(in[i], prog[i].buf, prog[i].len);
	ck_assert_int_eq(mkdir("tree", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/game", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/game/bin", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/game/share", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/game/lib", 0755), 0);
	ck_assert_int_eq(mkdir("tree/etc", 0755), 0);
	ck_assert_msg(fatelf_glue("tree/opt/game/bin/game", in, 3, NULL, &d) == 0, "%s", d.msg);
	tu_write_file("tree/opt/game/bin/helper", prog[0].buf, prog[0].len);
	tu_write_file("tree/opt/game/share/data", "some data\n", 10);
	ck_assert_int_eq(chmod("tree/opt/game/share/data", 0644), 0);
	tu_write_file("tree/etc/game.conf", "volume=3\n", 9);
	ck_assert_int_eq(chmod("tree/etc/game.conf", 0640), 0);
	ck_assert_int_eq(symlink("libg.so.1", "tree/opt/game/lib/libg.so"), 0);
}

static void free_tree(void)
{
	for (int i = 0; i < 3; i++)
		free(prog[i].buf);
}

static int create(const char *out, int compression, const fatelf_ms_seckey *key, fatelf_diag *d)
{
	fatelf_bundle_create_opts o = {
		.name = "game",
		.version = "1.2-1",
		.summary = "A game",
		.compression = compression,
		.sign_key = key,
	};
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	int r = fatelf_bundle_create("tree", fd, &o, d);
	close(fd);
	return r;
}

/* A consumer that records what it was handed. */
struct got {
	size_t nentries;
	char paths[16][64];
	int types[16];
	struct img data[16];
	bool manifest_seen;
	bool signed_by_key;
	int thin_to;    /* >= 0: keep this record index of every FatELF */
	const char *skip;       /* this file's bytes are not wanted */
};

static int got_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
			fatelf_diag *d)
{
	struct got *g = ctx;

	g->manifest_seen = true;
	g->signed_by_key = signer != NULL;
	ck_assert_str_eq(m->name, "game");
	ck_assert_str_eq(m->version, "1.2-1");
	return 0;
}

static int got_select(void *ctx, const fatelf_bundle_entry *e, const fatelf_header *hdr,
		      fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d)
{
	struct got *g = ctx;

	if (g->thin_to >= 0)
		fatelf_keep_add(ret_keep, (unsigned)g->thin_to);
	return 0;
}

static int got_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct got *g = ctx;

	/* The manifest callback runs before any entry. */
	ck_assert(g->manifest_seen);
	ck_assert_uint_lt(g->nentries, 16);
	snprintf(g->paths[g->nentries], 64, "%s", e->path);
	g->types[g->nentries] = e->type;
	g->data[g->nentries].buf = NULL;
	g->data[g->nentries].len = 0;
	g->nentries++;
	return g->skip && strcmp(e->path, g->skip) == 0 ? FATELF_BUNDLE_SKIP : 0;
}

static int got_data(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len)
{
	struct got *g = ctx;
	struct img *im = &g->data[g->nentries - 1];

	im->buf = realloc(im->buf, im->len + len);
	memcpy(im->buf + im->len, buf, len);
	im->len += len;
	return 0;
}

static const fatelf_bundle_reader_ops got_ops = {
	.manifest = got_manifest,
	.select = got_select,
	.begin = got_begin,
	.data = got_data,
};

static const struct img *got_find(const struct got *g, const char *path)
{
	for (size_t i = 0; i < g->nentries; i++)
		if (strcmp(g->paths[i], path) == 0)
			return &g->data[i];
	return NULL;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->nentries; i++)
		free(g->data[i].buf);
}

static int read_file_bundle(const char *path, const fatelf_bundle_read_opts *o, struct got *g,
			    fatelf_diag *d)
{
	fatelf_bundle_reader_ops ops = got_ops;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ops.ctx = g;
	int r = fatelf_bundle_read_fd(fd, o, &ops, d);
	close(fd);
	return r;
}

START_TEST(test_create_read_round_trip)
{
	fatelf_diag d;
	struct got g = { .thin_to = -1 };
	size_t fat_len;

	tu_tmpdir();
	make_tree();
	ck_assert_msg(create("b.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d) == 0, "%s", d.msg);
	ck_assert_msg(read_file_bundle("b.fatbundle", NULL, &g, &d) == 0, "%s", d.msg);
	ck_assert(!g.signed_by_key);
	/* dirs: etc, opt, opt/game, bin, lib, share; files: 4; symlink: 1 */
	ck_assert_uint_eq(g.nentries, 11);
	/* Entries come sorted by path. */
	for (size_t i = 1; i < g.nentries; i++)
		ck_assert_int_lt(strcmp(g.paths[i - 1], g.paths[i]), 0);

	uint8_t *fat = tu_read_file("tree/opt/game/bin/game", &fat_len);
	const struct img *im = got_find(&g, "opt/game/bin/game");
	ck_assert_ptr_nonnull(im);
	ck_assert_uint_eq(im->len, fat_len);
	ck_assert(memcmp(im->buf, fat, fat_len) == 0);
	im = got_find(&g, "opt/game/bin/helper");
	ck_assert_uint_eq(im->len, prog[0].len);
	ck_assert(memcmp(im->buf, prog[0].buf, prog[0].len) == 0);
	im = got_find(&g, "etc/game.conf");
	ck_assert_uint_eq(im->len, 9);
	ck_assert(memcmp(im->buf, "volume=3\n", 9) == 0);
	ck_assert_ptr_nonnull(got_find(&g, "opt/game/lib/libg.so"));
	free(fat);
	got_free(&g);
	free_tree();
}
END_TEST

/* A file the consumer does not want is skipped unread: none of its bytes
 * are handed out or hashed, so one whose bytes differ from the manifest's
 * (same size) passes, while the same bundle read whole is refused; the
 * member must still be there, and one cut short is still an error. */
START_TEST(test_skip_member)
{
	fatelf_diag d;
	struct got g = { .thin_to = -1, .skip = "etc/game.conf" };
	uint8_t *b;
	size_t len;

	tu_tmpdir();
	make_tree();
	ck_assert_msg(create("b.fatbundle", FATELF_COMPRESS_NONE, NULL, &d) == 0, "%s", d.msg);
	b = tu_read_file("b.fatbundle", &len);
	uint8_t *at = memmem(b, len, "volume=3\n", 9);
	ck_assert_ptr_nonnull(at);
	at[7] = '4';
	tu_write_file("changed.fatbundle", b, len);

	ck_assert_msg(read_file_bundle("changed.fatbundle", NULL, &g, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(g.nentries, 11);
	ck_assert_uint_eq(got_find(&g, "etc/game.conf")->len, 0);
	ck_assert_uint_eq(got_find(&g, "opt/game/bin/helper")->len, prog[0].len);
	got_free(&g);

	struct got whole = { .thin_to = -1 };
	ck_assert_int_lt(read_file_bundle("changed.fatbundle", NULL, &whole, &d), 0);
	ck_assert_ptr_nonnull(strstr(d.msg, "etc/game.conf"));
	got_free(&whole);

	/* Cut in the middle of the skipped member's bytes. */
	tu_write_file("cut.fatbundle", b, (size_t)(at - b) + 4);
	struct got cut = { .thin_to = -1, .skip = "etc/game.conf" };
	ck_assert_int_lt(read_file_bundle("cut.fatbundle", NULL, &cut, &d), 0);
	got_free(&cut);
	free(b);
	free_tree();
}
END_TEST

START_TEST(test_thin_while_reading)
{
	fatelf_diag d;

	tu_tmpdir();
	make_tree();
	ck_assert_int_eq(create("b.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d), 0);
	for (int rec = 0; rec < 3; rec++) {
		struct got g = { .thin_to = rec };
		ck_assert_msg(read_file_bundle("b.fatbundle", NULL, &g, &d) == 0, "%s", d.msg);
		const struct img *im = got_find(&g, "opt/game/bin/game");
		ck_assert_uint_eq(im->len, prog[rec].len);
		ck_assert(memcmp(im->buf, prog[rec].buf, prog[rec].len) == 0);
		got_free(&g);
	}
	free_tree();
}
END_TEST

START_TEST(test_reproducible_and_compressions)
{
	fatelf_diag d;
	const int comps[] = { FATELF_COMPRESS_ZSTD, FATELF_COMPRESS_NONE, FATELF_COMPRESS_GZIP,
			      FATELF_COMPRESS_XZ };

	tu_tmpdir();
	make_tree();
	for (size_t c = 0; c < sizeof(comps) / sizeof(comps[0]); c++) {
		size_t l1, l2;
		struct got g = { .thin_to = -1 };

		ck_assert_msg(create("1.fatbundle", comps[c], NULL, &d) == 0, "%s", d.msg);
		/* Other times and modes of the tree's files do not matter. */
		ck_assert_int_eq(utimensat(AT_FDCWD, "tree/opt/game/share/data",
					   (struct timespec[]){ { 1, 0 }, { 1000, 5 } }, 0), 0);
		ck_assert_int_eq(utimensat(AT_FDCWD, "tree/opt",
					   (struct timespec[]){ { 7, 0 }, { 7000, 5 } }, 0), 0);
		ck_assert_int_eq(create("2.fatbundle", comps[c], NULL, &d), 0);
		uint8_t *b1 = tu_read_file("1.fatbundle", &l1);
		uint8_t *b2 = tu_read_file("2.fatbundle", &l2);
		ck_assert_uint_eq(l1, l2);
		ck_assert_msg(memcmp(b1, b2, l1) == 0, "compression %d: bundles differ", comps[c]);
		ck_assert_msg(read_file_bundle("1.fatbundle", NULL, &g, &d) == 0, "%s", d.msg);
		ck_assert_uint_eq(g.nentries, 11);
		got_free(&g);
		free(b1);
		free(b2);
	}
	free_tree();
}
END_TEST

START_TEST(test_signed_bundle)
{
	fatelf_ms_seckey sk, other_sk;
	fatelf_ms_pubkey pk, other_pk;
	fatelf_diag d;

	tu_tmpdir();
	make_tree();
	hostile_key(&sk, &pk);
	hostile_other_key(&other_sk, &other_pk);
	ck_assert_int_eq(create("s.fatbundle", FATELF_COMPRESS_ZSTD, &sk, &d), 0);
	ck_assert_int_eq(create("u.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d), 0);

	fatelf_bundle_read_opts o = { .keys = &pk, .nkeys = 1, .require_signature = true };
	struct got g = { .thin_to = -1 };
	ck_assert_msg(read_file_bundle("s.fatbundle", &o, &g, &d) == 0, "%s", d.msg);
	ck_assert(g.signed_by_key);
	got_free(&g);

	struct got g2 = { .thin_to = -1 };
	ck_assert_int_eq(read_file_bundle("u.fatbundle", &o, &g2, &d), -FATELF_E_SIG_MISSING);
	/* Refused before any entry was handed out. */
	ck_assert_uint_eq(g2.nentries, 0);

	fatelf_bundle_read_opts o2 = { .keys = &other_pk, .nkeys = 1, .require_signature = true };
	struct got g3 = { .thin_to = -1 };
	ck_assert_int_eq(read_file_bundle("s.fatbundle", &o2, &g3, &d), -FATELF_E_SIG_KEY);
	ck_assert_uint_eq(g3.nentries, 0);
	free_tree();
}
END_TEST

static unsigned count_files(const char *dir)
{
	unsigned n = 0;
	DIR *dp = opendir(dir);
	struct dirent *de;

	if (!dp)
		return 0;
	while ((de = readdir(dp))) {
		char p[4096];
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			n += count_files(p);
		else
			n++;
	}
	closedir(dp);
	return n;
}

START_TEST(test_extract_thinned)
{
	fatelf_diag d;
	struct stat st;
	char link[64];
	const char *targets[] = { "x86_64", "aarch64", "riscv64" };

	tu_tmpdir();
	make_tree();
	ck_assert_int_eq(create("b.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d), 0);
	for (int i = 0; i < 3; i++) {
		char dir[32];
		int fd = open("b.fatbundle", O_RDONLY);
		snprintf(dir, sizeof(dir), "out-%s", targets[i]);
		ck_assert_msg(fatelf_bundle_extract(fd, dir, targets[i], NULL, &d) == 0, "%s: %s",
			      targets[i], d.msg);
		close(fd);
		char p[64];
		snprintf(p, sizeof(p), "%s/opt/game/bin/game", dir);
		ck_assert_msg(tu_file_equals(p, prog[i].buf, prog[i].len), "%s: wrong bytes", p);
		ck_assert_int_eq(stat(p, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0755);
		snprintf(p, sizeof(p), "%s/etc/game.conf", dir);
		ck_assert_int_eq(stat(p, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0640);
		snprintf(p, sizeof(p), "%s/opt/game/lib/libg.so", dir);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		ck_assert_int_eq(n, 9);
		link[n] = '\0';
		ck_assert_str_eq(link, "libg.so.1");
		/* No temp files left: 4 files and a symlink. */
		ck_assert_uint_eq(count_files(dir), 5);
	}

	/* Without a target: the fat file as shipped. */
	size_t fat_len;
	uint8_t *fat = tu_read_file("tree/opt/game/bin/game", &fat_len);
	int fd = open("b.fatbundle", O_RDONLY);
	ck_assert_int_eq(fatelf_bundle_extract(fd, "out-fat", NULL, NULL, &d), 0);
	close(fd);
	ck_assert(tu_file_equals("out-fat/opt/game/bin/game", fat, fat_len));
	free(fat);

	/* A target no fat file has: refused, and nothing is left behind. */
	fd = open("b.fatbundle", O_RDONLY);
	ck_assert_int_eq(fatelf_bundle_extract(fd, "out-s390x", "s390x", NULL, &d),
			 -FATELF_E_NO_HOST_RECORD);
	close(fd);
	ck_assert_ptr_nonnull(strstr(d.msg, "opt/game/bin/game"));
	ck_assert_uint_eq(count_files("out-s390x") - 0, 0);
	free_tree();
}
END_TEST

START_TEST(test_extract_refuses_symlinked_dir)
{
	fatelf_diag d;

	tu_tmpdir();
	make_tree();
	ck_assert_int_eq(create("b.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d), 0);
	/* DIR/opt is a symlink to elsewhere: nothing may be written through it. */
	ck_assert_int_eq(mkdir("out", 0755), 0);
	ck_assert_int_eq(mkdir("elsewhere", 0755), 0);
	ck_assert_int_eq(symlink("../elsewhere", "out/opt"), 0);
	int fd = open("b.fatbundle", O_RDONLY);
	int r = fatelf_bundle_extract(fd, "out", "x86_64", NULL, &d);
	close(fd);
	ck_assert_msg(r == -ELOOP || r == -ENOTDIR, "got %s: %s", fatelf_error_name(r), d.msg);
	ck_assert_uint_eq(count_files("elsewhere"), 0);
	free_tree();
}
END_TEST

/* ---- the staging an extract shares with the install engine */

START_TEST(test_stage_names)
{
	char a[FATELF_STAGE_NAME_MAX], b[FATELF_STAGE_NAME_MAX];
	size_t n;

	ck_assert_int_eq(fatelf_stage_name(42, 7, a), 0);
	ck_assert_int_eq(fatelf_stage_name(42, 7, b), 0);
	/* ".fatelf.<tag>.<seq>." and 16 random hex digits */
	ck_assert_int_eq(strncmp(a, ".fatelf.42.7.", 13), 0);
	n = strlen(a);
	ck_assert_uint_eq(n, 13 + 16);
	ck_assert_uint_eq(strspn(a + 13, "0123456789abcdef"), 16);
	ck_assert_str_ne(a, b);
	/* Every temp name is in the reserved namespace, which is the
	 * engine's (its ENGINE_TEMP_PREFIX is this prefix). */
	ck_assert(fatelf_stage_reserved(a));
	ck_assert(fatelf_stage_reserved("opt/t/.fatelf.2.1"));
	ck_assert(fatelf_stage_reserved("/opt/t/.fatelf."));
	ck_assert(!fatelf_stage_reserved("opt/t/.fatelfx"));
	ck_assert(!fatelf_stage_reserved("opt/.fatelf.d/x"));
	ck_assert(!fatelf_stage_reserved("opt/t/x.fatelf.1"));
	ck_assert(!fatelf_stage_reserved("opt/t/a.fatelf-new"));
}
END_TEST

START_TEST(test_stage_file_and_symlink)
{
	char name[FATELF_STAGE_NAME_MAX], name2[FATELF_STAGE_NAME_MAX];
	fatelf_diag d;
	struct stat st;
	char link[16];
	int dirfd, fd;

	tu_tmpdir();
	ck_assert_int_eq(mkdir("dir", 0755), 0);
	dirfd = open("dir", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dirfd, 0);
	tu_write_file("dir/target", "old\n", 4);

	/* A file: 0600 while incomplete, its mode (setid bits too) last. */
	ck_assert_int_eq(fatelf_stage_name(1, 0, name), 0);
	fd = fatelf_stage_open(dirfd, name);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_stage_open(dirfd, name), -EEXIST);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(write(fd, "new\n", 4), 4);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_stage_close(fd, S_IFREG | 04750, 0, "dir/target", &d), 0);
	ck_assert_int_eq(fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 04750);
	/* The target is untouched until the rename. */
	ck_assert(tu_file_equals("dir/target", "old\n", 4));
	ck_assert_int_eq(fatelf_stage_commit(dirfd, name, "target"), 0);
	ck_assert(tu_file_equals("dir/target", "new\n", 4));
	ck_assert_int_eq(fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(stat("dir/target", &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 04750);

	/* A name someone planted, even as a symlink, is never opened or
	 * followed: staging picks another name. */
	ck_assert_int_eq(fatelf_stage_name(1, 1, name), 0);
	ck_assert_int_eq(symlinkat("../elsewhere", dirfd, name), 0);
	ck_assert_int_eq(fatelf_stage_open(dirfd, name), -EEXIST);
	ck_assert_int_eq(access("elsewhere", F_OK), -1);
	ck_assert_int_eq(fatelf_stage_symlink(dirfd, name, "x"), -EEXIST);
	fatelf_stage_drop(dirfd, name);

	/* A symlink, then a cancel: nothing is left. */
	ck_assert_int_eq(fatelf_stage_name(1, 2, name2), 0);
	ck_assert_int_eq(fatelf_stage_symlink(dirfd, name2, "target"), 0);
	ssize_t n = readlinkat(dirfd, name2, link, sizeof(link) - 1);
	ck_assert_int_eq(n, 6);
	fatelf_stage_drop(dirfd, name2);
	fatelf_stage_drop(dirfd, name2);         /* already gone: fine */
	ck_assert_uint_eq(count_files("dir"), 1);

	/* A rename whose temp is gone fails with the errno. */
	ck_assert_int_eq(fatelf_stage_commit(dirfd, name2, "target"), -ENOENT);
	/* A close of nothing is a no-op. */
	ck_assert_int_eq(fatelf_stage_close(-1, 0644, 0, "x", &d), 0);
	close(dirfd);
}
END_TEST

/* ---- the target rules an extract shares with the install policies */

static void add_rec(fatelf_header *h, uint16_t machine, uint8_t word_size)
{
	fatelf_record *r = &h->records[h->nrecords];

	memset(r, 0, sizeof(*r));
	r->target = (fatelf_target) {
		.machine = machine, .word_size = word_size, .byte_order = FATELF_DATA2LSB,
	};
	r->offset = 4096u * (h->nrecords + 1u);
	r->size = 4096;
	h->nrecords++;
}

static const char *kept(const fatelf_keepset *k)
{
	static char buf[64];
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < FATELF_MAX_RECORDS; i++)
		if (fatelf_keep_has(k, i))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%u", len ? " " : "", i);
	return buf;
}

START_TEST(test_choose)
{
	static const char *const arm[] = { "aarch64" };
	static const char *const two[] = { "riscv64", "i386" };
	static const char *const none[] = { "riscv64", "s390x" };
	static const char *const bad[] = { "vax11" };
	fatelf_header h;
	fatelf_host x86, mips;
	fatelf_keepset k;
	fatelf_diag d;
	int form;

	/* aarch64, x86_64, i386: the vendor's order */
	fatelf_header_init(&h);
	add_rec(&h, 183, FATELF_CLASS64);
	add_rec(&h, 62, FATELF_CLASS64);
	add_rec(&h, 3, FATELF_CLASS32);
	ck_assert_int_eq(fatelf_host_from_uname("x86_64", 0, &x86), 0);
	ck_assert_int_eq(fatelf_host_from_uname("mips64", 0, &mips), 0);

	/* keep: the file as it is, outputs untouched */
	fatelf_keep_clear(&k);
	form = -1;
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_KEEP }, &h, &k,
				       &form, NULL), 0);
	ck_assert_str_eq(kept(&k), "");
	ck_assert_int_eq(form, -1);

	/* native: the kernel's pick, as a plain ELF */
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_NATIVE, .host = &x86 },
				       &h, &k, &form, NULL), 1);
	ck_assert_str_eq(kept(&k), "1");
	ck_assert_int_eq(form, FATELF_FORM_ELF);

	/* compatible: everything the host runs */
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_COMPATIBLE,
							  .host = &x86 }, &h, &k, &form, NULL), 1);
	ck_assert_str_eq(kept(&k), "1 2");
	ck_assert_int_eq(form, FATELF_FORM_AUTO);

	/* targets: what the names match; one that matches nothing is fine */
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_TARGETS,
							  .targets = arm, .ntargets = 1 },
				       &h, &k, &form, NULL), 1);
	ck_assert_str_eq(kept(&k), "0");
	ck_assert_int_eq(form, FATELF_FORM_AUTO);
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_TARGETS,
							  .targets = two, .ntargets = 2 },
				       &h, &k, &form, NULL), 1);
	ck_assert_str_eq(kept(&k), "2");

	/* no name matches: the names and what the file offers */
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_TARGETS,
							  .targets = none, .ntargets = 2 },
				       &h, &k, &form, &d), -FATELF_E_NO_MATCH);
	ck_assert_str_eq(d.msg, "targets riscv64,s390x name no record; the file offers: "
			 "aarch64:64bits:le:sysv:osabiver0, x86_64:64bits:le:sysv:osabiver0, "
			 "i386:32bits:le:sysv:osabiver0");
	ck_assert_str_eq(d.target, "riscv64,s390x");
	ck_assert_uint_eq(d.ntargets, 3);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_TARGETS,
							  .targets = bad, .ntargets = 1 },
				       &h, &k, &form, &d), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_TARGETS },
				       &h, &k, &form, NULL), -FATELF_E_EMPTY_KEEP);

	/* no record for the host: this host's message lists both sides ... */
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_NATIVE,
							  .host = &mips }, &h, &k, &form, &d),
			 -FATELF_E_NO_HOST_RECORD);
	ck_assert_int_eq(strncmp(d.msg, "no record runs on this host (mips64:", 36), 0);
	ck_assert_uint_eq(d.ntargets, 3);
	/* ... and a machine named by the caller is named */
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_choose(&(fatelf_choice) { .rule = FATELF_CHOOSE_COMPATIBLE,
							  .host = &mips, .machine = "mips64" },
				       &h, &k, &form, &d), -FATELF_E_NO_HOST_RECORD);
	ck_assert_str_eq(d.msg, "no record runs on a mips64 machine; the file offers: "
			 "aarch64:64bits:le:sysv:osabiver0, x86_64:64bits:le:sysv:osabiver0, "
			 "i386:32bits:le:sysv:osabiver0");
	ck_assert_uint_eq(d.ntargets, 3);
	ck_assert_str_eq(kept(&k), "2");        /* untouched by the failures */
}
END_TEST

/* An entry in the temps' namespace is refused by the writer, which keeps
 * the rule every reader (extract, install) refuses it by: nothing is
 * written. */
START_TEST(test_create_reserved_name)
{
	fatelf_diag d;
	struct stat st;
	int fd, r;

	tu_tmpdir();
	make_tree();
	tu_write_file("tree/opt/game/bin/.fatelf.2.1", "planted\n", 8);
	ck_assert_int_eq(create("b.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d), -ENGINE_E_NAME_RESERVED);
	ck_assert_str_eq(d.msg, "path 'opt/game/bin/.fatelf.2.1' has a component starting with \".fatelf.\": "
			 "such names are reserved for the installer's temp files");
	ck_assert_int_eq(stat("b.fatbundle", &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	/* Such a bundle made by other means: extract refuses it by the same
	 * rule before anything is made. */
	ck_assert_int_eq(rename("tree/opt/game/bin/.fatelf.2.1", "tree/opt/game/bin/_fatelf.2.1"), 0);
	ck_assert_int_eq(create("ok.fatbundle", FATELF_COMPRESS_ZSTD, NULL, &d), 0);
	tu_bundle_respell("ok.fatbundle", "b.fatbundle", "_fatelf.2.1", ".fatelf.2.1", NULL);
	fd = open("b.fatbundle", O_RDONLY);
	r = fatelf_bundle_extract(fd, "out", "x86_64", NULL, &d);
	close(fd);
	ck_assert_int_eq(r, -ENGINE_E_NAME_RESERVED);
	ck_assert_str_eq(d.msg, "entry 'opt/game/bin/.fatelf.2.1': the path has a component starting with "
			 "\".fatelf.\": such names are reserved for the installer's temp files");
	ck_assert_int_eq(access("out", F_OK), -1);
	free_tree();
}
END_TEST

START_TEST(test_root_open_parent)
{
	fatelf_diag d;
	const char *base;

	tu_tmpdir();
	int root = open(".", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(mkdir("real", 0755), 0);
	ck_assert_int_eq(symlink("real", "link"), 0);
	tu_write_file("file", "x", 1);

	int fd = fatelf_root_open_parent(root, "a/b/c/name", true, &base, &d);
	ck_assert_int_ge(fd, 0);
	ck_assert_str_eq(base, "name");
	close(fd);
	struct stat st;
	ck_assert_int_eq(stat("a/b/c", &st), 0);
	ck_assert(S_ISDIR(st.st_mode));

	ck_assert_int_lt(fatelf_root_open_parent(root, "link/name", true, &base, &d), 0);
	ck_assert_int_lt(fatelf_root_open_parent(root, "file/name", true, &base, &d), 0);
	ck_assert_int_lt(fatelf_root_open_parent(root, "../name", true, &base, &d), 0);
	ck_assert_int_lt(fatelf_root_open_parent(root, "/etc/passwd", true, &base, &d), 0);
	ck_assert_int_lt(fatelf_root_open_parent(root, "a/../../name", true, &base, &d), 0);
	ck_assert_int_eq(fatelf_root_open_parent(root, "missing/name", false, &base, &d), -ENOENT);
	close(root);
}
END_TEST

START_TEST(test_hostile_corpus)
{
	fatelf_ms_seckey sk;
	fatelf_ms_pubkey pk;
	unsigned rejected = 0;

	tu_tmpdir();
	hostile_key(&sk, &pk);
	fatelf_bundle_read_opts o = { .keys = &pk, .nkeys = 1, .require_signature = true };
	for (size_t i = 0; i < hostile_count(); i++) {
		hostile_bundle b;
		fatelf_diag d;

		ck_assert_int_eq(hostile_make(i, &b), 0);
		int r = fatelf_bundle_read_mem(b.buf, b.len, &o, NULL, &d);
		ck_assert_msg(r == b.expected, "%s: got %s (%s), want %s", b.name,
			      fatelf_error_name(r), d.msg, fatelf_error_name(b.expected));

		/* Through extraction too: nothing but directories left behind. */
		if (b.expected != 0) {
			char dir[64];
			int fd = memfd_create("b", 0);
			ck_assert_int_eq(write(fd, b.buf, b.len), (ssize_t)b.len);
			lseek(fd, 0, SEEK_SET);
			snprintf(dir, sizeof(dir), "x%zu", i);
			r = fatelf_bundle_extract(fd, dir, "x86_64", &o, &d);
			close(fd);
			ck_assert_msg(r < 0, "%s: extract accepted it", b.name);
			ck_assert_msg(count_files(dir) == 0, "%s: extract left files", b.name);
			rejected++;
		}
		hostile_free(&b);
	}
	ck_assert_uint_ge(rejected, 20);
}
END_TEST


/* Inputs found by fuzz_bundle whose verdict once depended on how fast the
 * hashing core ran: several files fail, and the first failure in archive
 * order must win every time, thinned or not. */
START_TEST(test_verdict_is_deterministic)
{
	const char *names[] = { "bundle-verdict-order-1.fatbundle", "bundle-verdict-order-2.fatbundle" };
	const char *top = getenv("top_srcdir");
	fatelf_ms_seckey sk;
	fatelf_ms_pubkey pk;

	hostile_key(&sk, &pk);
	ck_assert_msg(top != NULL, "top_srcdir is not set (run through make check)");
	fatelf_bundle_read_opts o = { .keys = &pk, .nkeys = 1, .require_signature = true };
	for (size_t i = 0; i < 2; i++) {
		char path[4096];
		size_t len;
		snprintf(path, sizeof(path), "%s/tests/fuzz/regress/%s", top, names[i]);
		uint8_t *buf = tu_read_file(path, &len);
		ck_assert_ptr_nonnull(buf);
		int first = 0;
		for (int run = 0; run < 60; run++) {
			struct got g = { .thin_to = run % 2 ? 0 : -1 };
			fatelf_bundle_reader_ops ops = { .select = got_select, .ctx = &g };
			fatelf_diag d;
			int r = fatelf_bundle_read_mem(buf, len, &o, &ops, &d);
			if (run == 0)
				first = r;
			ck_assert_msg(r == first, "%s run %d: %s, then %s", names[i], run,
				      fatelf_error_name(first), fatelf_error_name(r));
		}
		ck_assert_int_lt(first, 0);
		free(buf);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bundle");
	TCase *tc = tcase_create("bundle");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_create_read_round_trip);
	tcase_add_test(tc, test_thin_while_reading);
	tcase_add_test(tc, test_skip_member);
	tcase_add_test(tc, test_reproducible_and_compressions);
	tcase_add_test(tc, test_signed_bundle);
	tcase_add_test(tc, test_extract_thinned);
	tcase_add_test(tc, test_extract_refuses_symlinked_dir);
	tcase_add_test(tc, test_stage_names);
	tcase_add_test(tc, test_stage_file_and_symlink);
	tcase_add_test(tc, test_choose);
	tcase_add_test(tc, test_create_reserved_name);
	tcase_add_test(tc, test_root_open_parent);
	tcase_add_test(tc, test_hostile_corpus);
	tcase_add_test(tc, test_verdict_is_deterministic);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
