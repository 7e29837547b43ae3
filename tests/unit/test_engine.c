/*
 * Unit tests for the install engine: install, upgrade, downgrade, config
 * files, conflicts, signatures, a payload that fails its hash, dry run,
 * cancel, remove, and crash recovery (by hand and, in failpoint builds,
 * by killing a child at every step of the protocol). Each test builds
 * bundles in-process from a staging tree and installs them into a temp
 * root; assertions are on the bytes in the root and the rows in the store.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfgen.h"
#include "engine_private.h"
#include "macro.h"
#include "testutil.h"

/* ------------------------------------------------------------ fixtures */

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img x86, arm, fat;        /* the program's images, and the fat file */
static fatelf_ms_seckey sk, other_sk;
static fatelf_ms_pubkey pk, other_pk;
static char top[PATH_MAX];              /* the test's temp directory */
static char rootdir[PATH_MAX + 16];
static char statedir[PATH_MAX + 16];

static struct img make_img(uint16_t machine, size_t size, uint32_t seed)
{
	elfgen_opts o;
	struct img im;

	elfgen_defaults(&o, machine, FATELF_CLASS64, FATELF_DATA2LSB);
	o.size = size;
	o.seed = seed;
	im.buf = elfgen_make(&o, &im.len);
	ck_assert_ptr_nonnull(im.buf);
	return im;
}

/* Called at the start of every test: a temp dir with root/ and state/. */
static void setup(void)
{
	elfgen_image imgs[2];

	snprintf(top, sizeof(top), "%s", tu_tmpdir());
	snprintf(rootdir, sizeof(rootdir), "%s/root", top);
	snprintf(statedir, sizeof(statedir), "%s/state", top);
	ck_assert_int_eq(mkdir(rootdir, 0755), 0);
	x86 = make_img(62, 9000, 1);
	arm = make_img(183, 12000, 2);
	imgs[0] = (elfgen_image) { .data = x86.buf, .len = x86.len };
	imgs[1] = (elfgen_image) { .data = arm.buf, .len = arm.len };
	fat.buf = elfgen_fat(imgs, 2, &fat.len, NULL);
	ck_assert_ptr_nonnull(fat.buf);
	tu_key_from_seed(0x21, 11, 0x40, &sk, &pk);
	tu_key_from_seed(0x77, 11, 0x90, &other_sk, &other_pk);
}

static void teardown(void)
{
	free(x86.buf);
	free(arm.buf);
	free(fat.buf);
	x86.buf = arm.buf = fat.buf = NULL;
}

static void write_at(const char *tree, const char *rel, const void *buf, size_t len, mode_t mode)
{
	char path[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	tu_write_file(path, buf, len);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void mkdir_at(const char *tree, const char *rel)
{
	char path[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path,
		      strerror(errno));
}

/*
 * The "hello" package, version 1:
 *   opt/hello/bin/hello        FatELF (x86_64, aarch64)
 *   opt/hello/lib/libh.so      symlink -> libh.so.1
 *   opt/hello/share/data.txt   data
 *   opt/hello/old/old.txt      data (version 1 only)
 *   etc/hello.conf             config
 * Version 2 drops opt/hello/old, adds opt/hello/share/new.txt and
 * changes data.txt and the config file.
 */
static void make_hello_tree(const char *tree, int version)
{
	char conf[64], data[64];

	ck_assert_int_eq(mkdir(tree, 0755), 0);
	mkdir_at(tree, "opt");
	mkdir_at(tree, "opt/hello");
	mkdir_at(tree, "opt/hello/bin");
	mkdir_at(tree, "opt/hello/lib");
	mkdir_at(tree, "opt/hello/share");
	mkdir_at(tree, "etc");
	write_at(tree, "opt/hello/bin/hello", fat.buf, fat.len, 0755);
	snprintf(data, sizeof(data), "hello data version %d\n", version);
	write_at(tree, "opt/hello/share/data.txt", data, strlen(data), 0644);
	snprintf(conf, sizeof(conf), "greeting=hello%d\n", version);
	write_at(tree, "etc/hello.conf", conf, strlen(conf), 0640);
	char link[PATH_MAX + 64];
	snprintf(link, sizeof(link), "%s/opt/hello/lib/libh.so", tree);
	ck_assert_int_eq(symlink("libh.so.1", link), 0);
	if (version == 1) {
		mkdir_at(tree, "opt/hello/old");
		write_at(tree, "opt/hello/old/old.txt", "old\n", 4, 0644);
	} else {
		write_at(tree, "opt/hello/share/new.txt", "new\n", 4, 0644);
	}
}

/* Makes a bundle file of tree; returns its path (static per slot). */
static const char *make_bundle(const char *tree, const char *name, const char *version,
			       const fatelf_ms_seckey *key, int compression, const char *out)
{
	fatelf_bundle_create_opts o = {
		.name = name,
		.version = version,
		.summary = "Says hello",
		.vendor = "Test",
		.compression = compression,
		.sign_key = key,
		.allow_setid = true,
	};
	fatelf_diag d;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create(tree, fd, &o, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	return out;
}

static const char *hello_bundle(int version)
{
	static char out[2][64];
	char tree[32];

	snprintf(tree, sizeof(tree), "tree-hello-%d", version);
	snprintf(out[version - 1], sizeof(out[0]), "hello-%d.fatbundle", version);
	if (access(out[version - 1], F_OK) == 0)
		return out[version - 1];
	make_hello_tree(tree, version);
	return make_bundle(tree, "hello", version == 1 ? "1.0" : "2.0", &sk, FATELF_COMPRESS_ZSTD,
			   out[version - 1]);
}

/* ------------------------------------------------------------ engine helpers */

static engine_config base_cfg(void)
{
	engine_config c;

	engine_config_init(&c);
	free(c.root);
	free(c.state_dir);
	free(c.trusted_keys);
	c.trusted_keys = NULL;
	c.root = strdup(rootdir);
	c.state_dir = strdup(statedir);
	c.ldconfig = false;
	c.durable = false;
	return c;
}

static engine *open_engine_cfg(engine_config *c, unsigned *ret_recovered)
{
	engine *e = NULL;
	fatelf_diag d;
	int q = engine_open(c, &pk, 1, 0, &e, ret_recovered, &d);

	ck_assert_msg(q == 0, "engine_open: %s: %s", fatelf_error_name(q), d.msg);
	return e;
}

static engine *open_engine(unsigned *ret_recovered)
{
	engine_config c = base_cfg();
	engine *e = open_engine_cfg(&c, ret_recovered);

	engine_config_done(&c);
	return e;
}

static int install_file(engine *e, const char *bundle, const engine_install_opts *o,
			engine_result *res, fatelf_diag *d)
{
	fatelf_reader src;
	int fd, q;

	fd = open(bundle, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_reader_fd(&src, fd, &(fatelf_reader_fd_opts){ .bufsize = 16384 }), 0);
	memset(res, 0, sizeof(*res));
	q = engine_install(e, &src, o, res, d);
	fatelf_reader_close(&src);
	close(fd);
	if (q < 0 && getenv("TEST_VERBOSE"))
		fprintf(stderr, "install %s: %s [%s] %s\n", bundle, fatelf_error_name(q), d->subject,
			d->msg);
	return q;
}

static void install_ok(engine *e, const char *bundle, const engine_install_opts *o,
		       engine_result *res)
{
	fatelf_diag d;
	int q = install_file(e, bundle, o, res, &d);

	ck_assert_msg(q == 0, "install %s: %s: %s: %s", bundle, fatelf_error_name(q), d.subject,
		      d.msg);
}

static char *rpath(const char *p)
{
	static char buf[4][PATH_MAX + 512];
	static int slot;
	char *b = buf[slot++ % 4];

	snprintf(b, sizeof(buf[0]), "%s%s", rootdir, p);
	return b;
}

static bool exists(const char *p)
{
	struct stat st;

	return lstat(rpath(p), &st) == 0;
}

static bool root_file_is(const char *p, const void *buf, size_t len)
{
	return tu_file_equals(rpath(p), buf, len) == 1;
}

/* Counts what is under dir; fails on any hidden temp of the engine. */
static unsigned scan(const char *dir, unsigned *ret_dirs)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	ck_assert_ptr_nonnull(dp);
	while ((de = readdir(dp))) {
		char p[PATH_MAX + 512];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ck_assert_msg(strncmp(de->d_name, ".fatelf.", 8) != 0, "debris left: %s/%s", dir,
			      de->d_name);
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		ck_assert_int_eq(lstat(p, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			if (ret_dirs)
				(*ret_dirs)++;
			n += scan(p, ret_dirs);
		} else {
			n++;
		}
	}
	closedir(dp);
	return n;
}

/* The files (not directories) in the root; asserts there is no debris. */
static unsigned root_files(void)
{
	return scan(rootdir, NULL);
}

static unsigned root_entries(void)
{
	unsigned dirs = 0, files = scan(rootdir, &dirs);

	return files + dirs;
}

struct hist {
	char state[32];
	char error[512];
	char kind[16];
	unsigned n;
};

/* The newest history row, with its kind and state as the store spells
 * them, and the number of rows. */
static struct hist last_tx(engine *e)
{
	struct hist h = { 0 };
	store_tx *v = NULL;
	size_t n = 0;
	fatelf_diag d;

	ck_assert_int_eq(store_tx_history(engine_store(e), NULL, 0, &v, &n, &d), 0);
	h.n = (unsigned)n;
	if (n > 0) {
		snprintf(h.state, sizeof(h.state), "%s", store_tx_state_to_text(v[0].state));
		snprintf(h.error, sizeof(h.error), "%s", v[0].error ? v[0].error : "");
		snprintf(h.kind, sizeof(h.kind), "%s", store_tx_kind_to_text(v[0].kind));
	}
	store_txs_free(v, n);
	return h;
}

static unsigned tx_count(engine *e)
{
	return last_tx(e).n;
}

static char *owner_of(engine *e, const char *path)
{
	char *owner = NULL;
	fatelf_diag d;
	int q = store_file_owner(engine_store(e), path, &owner, &d);

	return q > 0 ? owner : NULL;
}

static void check_owner(engine *e, const char *path, const char *want)
{
	char *owner = owner_of(e, path);

	if (!want)
		ck_assert_msg(owner == NULL, "%s owned by %s", path, owner);
	else
		ck_assert_msg(owner && strcmp(owner, want) == 0, "%s owned by %s, want %s", path,
			      owner ? owner : "nobody", want);
	free(owner);
}

static void check_package(engine *e, const char *name, const char *version, int64_t *ret_id)
{
	store_package p;
	fatelf_diag d;

	ck_assert_int_eq(store_package_get(engine_store(e), name, &p, &d), 1);
	ck_assert_str_eq(p.version, version);
	if (ret_id)
		*ret_id = p.id;
	store_package_done(&p);
}

static bool package_installed(engine *e, const char *name)
{
	store_package p;
	fatelf_diag d;
	int q = store_package_get(engine_store(e), name, &p, &d);

	if (q > 0)
		store_package_done(&p);
	return q > 0;
}

/* ------------------------------------------------------------ install */

struct recs {
	unsigned n;
	int kept[4];
	char target[4][FATELF_TARGET_NAME_MAX];
};

/* The records of path, their targets formatted; returns their number. */
static int get_recs(engine *e, const char *path, struct recs *rs)
{
	store_record *v = NULL;
	size_t n = 0;
	fatelf_diag d;

	ck_assert_int_eq(store_records_of(engine_store(e), path, &v, &n, &d), 0);
	for (size_t i = 0; i < n; i++) {
		if (rs->n < 4) {
			rs->kept[rs->n] = v[i].kept;
			fatelf_target_format(&v[i].target, rs->target[rs->n]);
		}
		rs->n++;
	}
	store_records_free(v, n);
	return (int)n;
}

START_TEST(test_install_native)
{
	engine_result res;
	store_file f;
	char *owner = NULL;
	char link[64];
	struct stat st;
	struct recs rs = { 0 };
	fatelf_diag d;
	engine *e;

	setup();
	hello_bundle(1);
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);

	/* What landed: the host's record alone, byte for byte. */
	ck_assert(root_file_is("/opt/hello/bin/hello", x86.buf, x86.len));
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 1\n", 21));
	ck_assert(root_file_is("/etc/hello.conf", "greeting=hello1\n", 16));
	ck_assert_int_eq(readlink(rpath("/opt/hello/lib/libh.so"), link, sizeof(link)), 9);
	ck_assert(memcmp(link, "libh.so.1", 9) == 0);
	ck_assert_int_eq(stat(rpath("/opt/hello/bin/hello"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(stat(rpath("/etc/hello.conf"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_uint_eq(root_files(), 5);

	/* The result. */
	ck_assert_str_eq(res.kind, "install");
	ck_assert_str_eq(res.package, "hello");
	ck_assert_str_eq(res.new_version, "1.0");
	ck_assert_ptr_null(res.old_version);
	ck_assert_uint_eq(res.files, 5);
	ck_assert_uint_eq(res.bytes_written, x86.len + 21 + 16 + 4);
	ck_assert_int_eq(res.bytes_saved, (int64_t)(fat.len - x86.len));
	ck_assert_uint_eq(res.nconfig_kept, 0);
	ck_assert_int_gt(res.txid, 0);

	/* The store. */
	check_package(e, "hello", "1.0", NULL);
	ck_assert_int_eq(store_file_get(engine_store(e), "/opt/hello/bin/hello", &f, &owner, &d), 1);
	ck_assert_str_eq(owner, "hello");
	ck_assert_int_eq(f.kind, STORE_KIND_FATELF);
	ck_assert_int_eq(f.installed_form, STORE_FORM_THINNED);
	ck_assert_uint_eq(f.size, fat.len);
	ck_assert_uint_eq(f.installed_size, x86.len);
	ck_assert_uint_eq(f.mode, 0755);
	store_file_done(&f);
	free(owner);
	ck_assert_int_eq(get_recs(e, "/opt/hello/bin/hello", &rs), 2);
	ck_assert_int_eq(rs.kept[0], 1);
	ck_assert_int_eq(rs.kept[1], 0);
	ck_assert_str_eq(rs.target[0], "x86_64:64bits:le:sysv:osabiver0");
	ck_assert_int_eq(store_file_get(engine_store(e), "/opt/hello/lib/libh.so", &f, NULL, &d), 1);
	ck_assert_int_eq(f.type, STORE_FILE_SYMLINK);
	ck_assert_str_eq(f.link_target, "libh.so.1");
	store_file_done(&f);
	ck_assert_int_eq(store_file_get(engine_store(e), "/etc/hello.conf", &f, NULL, &d), 1);
	ck_assert_int_eq(f.config, 1);
	store_file_done(&f);
	check_owner(e, "/opt/hello/share/data.txt", "hello");
	struct hist h = last_tx(e);
	ck_assert_str_eq(h.state, "committed");
	ck_assert_str_eq(h.kind, "install");
	engine_result_done(&res);
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_install_keep_policy)
{
	engine_policy_spec keep = { .policy = ENGINE_POLICY_KEEP };
	engine_install_opts o = { .policy = &keep };
	engine_result res;
	store_package p;
	store_file f;
	fatelf_diag d;
	engine *e;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), &o, &res);
	ck_assert(root_file_is("/opt/hello/bin/hello", fat.buf, fat.len));
	ck_assert_int_eq(res.bytes_saved, 0);
	ck_assert_int_eq(store_file_get(engine_store(e), "/opt/hello/bin/hello", &f, NULL, &d), 1);
	ck_assert_int_eq(f.installed_form, STORE_FORM_AS_SHIPPED);
	ck_assert_uint_eq(f.installed_size, fat.len);
	store_file_done(&f);
	ck_assert_int_eq(store_package_get(engine_store(e), "hello", &p, &d), 1);
	ck_assert_str_eq(p.policy, "keep");
	ck_assert_ptr_nonnull(p.signer_keyid);
	store_package_done(&p);
	engine_result_done(&res);
	root_files();
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_upgrade_removes_stale)
{
	engine_result res;
	int64_t id1, id2;
	engine *e;

	setup();
	hello_bundle(1);
	hello_bundle(2);
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	check_package(e, "hello", "1.0", &id1);
	ck_assert(exists("/opt/hello/old/old.txt"));

	install_ok(e, hello_bundle(2), NULL, &res);
	ck_assert_str_eq(res.kind, "upgrade");
	ck_assert_str_eq(res.old_version, "1.0");
	ck_assert_str_eq(res.new_version, "2.0");
	engine_result_done(&res);
	check_package(e, "hello", "2.0", &id2);
	ck_assert_int_eq(id1, id2);
	/* The stale file and its directory are gone, the new file is there. */
	ck_assert(!exists("/opt/hello/old/old.txt"));
	ck_assert(!exists("/opt/hello/old"));
	check_owner(e, "/opt/hello/old/old.txt", NULL);
	ck_assert(root_file_is("/opt/hello/share/new.txt", "new\n", 4));
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 2\n", 21));
	/* The config file was not changed by the admin: it is replaced. */
	ck_assert(root_file_is("/etc/hello.conf", "greeting=hello2\n", 16));
	ck_assert(!exists("/etc/hello.conf.fatelf-new"));
	check_owner(e, "/opt/hello/share/new.txt", "hello");
	ck_assert_uint_eq(root_files(), 5);
	ck_assert_str_eq(last_tx(e).kind, "upgrade");
	engine_close(e);
	teardown();
}
END_TEST

static ino_t root_ino(const char *p)
{
	struct stat st;

	ck_assert_int_eq(lstat(rpath(p), &st), 0);
	return st.st_ino;
}

/* An upgrade leaves the files whose bytes do not change in place. */
START_TEST(test_upgrade_keeps_unchanged)
{
	engine_install_opts again = { .allow_downgrade = true };
	engine_result res;
	ino_t hello, data;
	engine *e;

	setup();
	hello_bundle(1);
	hello_bundle(2);
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	ck_assert_uint_eq(res.files_unchanged, 0);
	engine_result_done(&res);
	hello = root_ino("/opt/hello/bin/hello");
	data = root_ino("/opt/hello/share/data.txt");

	/* The program (thinned the same way) stays; data.txt, the config and
	 * new.txt are written. */
	install_ok(e, hello_bundle(2), NULL, &res);
	ck_assert_uint_eq(res.files_unchanged, 1);
	ck_assert_uint_eq(res.bytes_unchanged, x86.len);
	ck_assert_uint_eq(res.bytes_written, 21 + 16 + 4);
	engine_result_done(&res);
	ck_assert_uint_eq(root_ino("/opt/hello/bin/hello"), hello);
	ck_assert_uint_ne(root_ino("/opt/hello/share/data.txt"), data);
	check_owner(e, "/opt/hello/bin/hello", "hello");
	check_package(e, "hello", "2.0", NULL);

	/* A reinstall of the same version is a repair: every file is
	 * written again, the one changed on disk included. */
	tu_write_file(rpath("/opt/hello/share/new.txt"), "NEW\n", 4);
	install_ok(e, hello_bundle(2), &again, &res);
	ck_assert_uint_eq(res.files_unchanged, 0);
	ck_assert_uint_eq(res.bytes_unchanged, 0);
	engine_result_done(&res);
	ck_assert_uint_ne(root_ino("/opt/hello/bin/hello"), hello);
	ck_assert(root_file_is("/opt/hello/share/new.txt", "new\n", 4));
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_downgrade)
{
	engine_install_opts o = { .allow_downgrade = true };
	engine_result res;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	hello_bundle(1);
	hello_bundle(2);
	e = open_engine(NULL);
	install_ok(e, hello_bundle(2), NULL, &res);
	engine_result_done(&res);

	q = install_file(e, hello_bundle(1), NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_DOWNGRADE);
	ck_assert_msg(strstr(d.msg, "1.0") && strstr(d.msg, "2.0"), "%s", d.msg);
	check_package(e, "hello", "2.0", NULL);
	ck_assert(root_file_is("/opt/hello/share/new.txt", "new\n", 4));
	ck_assert_str_eq(last_tx(e).state, "failed");
	/* the message names the package, so the history names it once */
	ck_assert_str_eq(last_tx(e).error, "hello 1.0 is older than the installed 2.0");
	root_files();

	install_ok(e, hello_bundle(1), &o, &res);
	engine_result_done(&res);
	check_package(e, "hello", "1.0", NULL);
	ck_assert(!exists("/opt/hello/share/new.txt"));
	ck_assert(root_file_is("/opt/hello/old/old.txt", "old\n", 4));
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_config_kept_on_upgrade_and_remove)
{
	engine_result res;
	fatelf_diag d;
	engine *e;

	setup();
	hello_bundle(1);
	hello_bundle(2);
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	tu_write_file(rpath("/etc/hello.conf"), "greeting=mine\n", 14);

	install_ok(e, hello_bundle(2), NULL, &res);
	ck_assert_uint_eq(res.nconfig_kept, 1);
	ck_assert_str_eq(res.config_kept[0], "/etc/hello.conf");
	ck_assert_ptr_null(res.config_kept[1]);
	engine_result_done(&res);
	ck_assert(root_file_is("/etc/hello.conf", "greeting=mine\n", 14));
	ck_assert(root_file_is("/etc/hello.conf.fatelf-new", "greeting=hello2\n", 16));
	check_owner(e, "/etc/hello.conf", "hello");

	/* Remove keeps the admin's copy and takes the rest. */
	engine_remove_opts ro = { 0 };
	ck_assert_int_eq(engine_remove(e, "hello", &ro, &res, &d), 0);
	ck_assert_str_eq(res.kind, "remove");
	ck_assert_uint_eq(res.nconfig_kept, 1);
	ck_assert_str_eq(res.config_kept[0], "/etc/hello.conf");
	engine_result_done(&res);
	ck_assert(root_file_is("/etc/hello.conf", "greeting=mine\n", 14));
	ck_assert(!exists("/opt/hello"));
	ck_assert(!package_installed(e, "hello"));
	check_owner(e, "/etc/hello.conf", NULL);
	engine_close(e);
	teardown();
}
END_TEST

/* A second package "other" that ships /opt/hello/share/data.txt too. */
static const char *other_bundle(void)
{
	mkdir_at(".", "tree-other");
	mkdir_at("tree-other", "opt");
	mkdir_at("tree-other", "opt/hello");
	mkdir_at("tree-other", "opt/hello/share");
	mkdir_at("tree-other", "opt/other");
	write_at("tree-other", "opt/other/readme", "other\n", 6, 0644);
	write_at("tree-other", "opt/hello/share/data.txt", "other's data\n", 13, 0644);
	return make_bundle("tree-other", "other", "0.1", &sk, FATELF_COMPRESS_ZSTD,
			   "other.fatbundle");
}

START_TEST(test_conflict_with_package)
{
	engine_install_opts force = { .force = true };
	engine_result res;
	fatelf_diag d;
	engine *e;
	unsigned before;
	int q;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	before = root_entries();

	q = install_file(e, other_bundle(), NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_msg(strstr(d.msg, "/opt/hello/share/data.txt") && strstr(d.msg, "hello"),
		      "%s", d.msg);
	ck_assert_str_eq(d.subject, "/opt/hello/share/data.txt");
	/* Nothing changed: not a file, not a directory, not a row. */
	ck_assert_uint_eq(root_entries(), before);
	ck_assert(!exists("/opt/other"));
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 1\n", 21));
	ck_assert(!package_installed(e, "other"));
	check_owner(e, "/opt/hello/share/data.txt", "hello");
	struct hist h = last_tx(e);
	ck_assert_str_eq(h.state, "failed");
	ck_assert_msg(strstr(h.error, "/opt/hello/share/data.txt"), "%s", h.error);

	/* Forced: the path changes hands. */
	install_ok(e, "other.fatbundle", &force, &res);
	engine_result_done(&res);
	ck_assert(root_file_is("/opt/hello/share/data.txt", "other's data\n", 13));
	check_owner(e, "/opt/hello/share/data.txt", "other");
	check_owner(e, "/opt/hello/bin/hello", "hello");
	root_files();
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_conflict_unowned_file)
{
	engine_install_opts force = { .force = true };
	engine_result res;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	hello_bundle(1);
	mkdir_at(rootdir, "opt");
	mkdir_at(rootdir, "opt/hello");
	mkdir_at(rootdir, "opt/hello/share");
	tu_write_file(rpath("/opt/hello/share/data.txt"), "admin's\n", 8);
	e = open_engine(NULL);
	q = install_file(e, hello_bundle(1), NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_msg(strstr(d.msg, "/opt/hello/share/data.txt") &&
		      strstr(d.msg, "belongs to no package"), "%s", d.msg);
	ck_assert(root_file_is("/opt/hello/share/data.txt", "admin's\n", 8));
	ck_assert_uint_eq(root_files(), 1);
	ck_assert(!exists("/opt/hello/bin"));

	install_ok(e, hello_bundle(1), &force, &res);
	engine_result_done(&res);
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 1\n", 21));
	check_owner(e, "/opt/hello/share/data.txt", "hello");
	engine_close(e);
	teardown();
}
END_TEST

/* An entry named like the engine's temp files is refused before anything
 * is written, naming the entry and the rule. */
START_TEST(test_reserved_entry_name)
{
	engine_result res;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	ck_assert_int_eq(mkdir("tree-tname", 0755), 0);
	mkdir_at("tree-tname", "opt");
	write_at("tree-tname", "opt/a", "a\n", 2, 0644);
	write_at("tree-tname", "opt/_fatelf.2.1", "b\n", 2, 0644);
	/* No writer makes such a bundle (they keep the readers' rules). */
	make_bundle("tree-tname", "tname", "1", &sk, FATELF_COMPRESS_ZSTD, "tname-ok.fatbundle");
	tu_bundle_respell("tname-ok.fatbundle", "tname.fatbundle", "_fatelf.2.1", ".fatelf.2.1", &sk);
	e = open_engine(NULL);
	q = install_file(e, "tname.fatbundle", NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_NAME_RESERVED);
	ck_assert_str_eq(d.subject, "opt/.fatelf.2.1");
	ck_assert_msg(strstr(d.msg, "reserved"), "%s", d.msg);
	ck_assert_uint_eq(root_entries(), 0);
	ck_assert_str_eq(last_tx(e).state, "failed");
	engine_close(e);
	teardown();
}
END_TEST

/* A kept config file's PATH.fatelf-new where another package has a file
 * is a conflict naming that path; force takes it over. */
START_TEST(test_config_sidecar_conflict)
{
	engine_install_opts force = { .force = true };
	engine_result res;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	hello_bundle(1);
	hello_bundle(2);
	ck_assert_int_eq(mkdir("tree-side", 0755), 0);
	mkdir_at("tree-side", "etc");
	write_at("tree-side", "etc/hello.conf.fatelf-new", "side\n", 5, 0644);
	make_bundle("tree-side", "side", "1", &sk, FATELF_COMPRESS_ZSTD, "side.fatbundle");
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	install_ok(e, "side.fatbundle", NULL, &res);
	engine_result_done(&res);
	tu_write_file(rpath("/etc/hello.conf"), "greeting=mine\n", 14);

	q = install_file(e, hello_bundle(2), NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_str_eq(d.subject, "/etc/hello.conf.fatelf-new");
	ck_assert_msg(strstr(d.msg, "belongs to package side"), "%s", d.msg);
	ck_assert(root_file_is("/etc/hello.conf.fatelf-new", "side\n", 5));
	check_package(e, "hello", "1.0", NULL);

	install_ok(e, hello_bundle(2), &force, &res);
	engine_result_done(&res);
	ck_assert(root_file_is("/etc/hello.conf.fatelf-new", "greeting=hello2\n", 16));
	ck_assert(root_file_is("/etc/hello.conf", "greeting=mine\n", 14));
	check_owner(e, "/etc/hello.conf.fatelf-new", NULL);
	engine_close(e);
	teardown();
}
END_TEST

static int count_problem(const char *package, const char *path, int problem, const char *detail,
			 void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	(void)package;
	(void)detail;
	snprintf(buf + len, 512 - len, "%s %s;", path, engine_problem_name(problem));
	return 0;
}

/* A directory someone else made where the bundle declares one is refused
 * (its owner and mode named); force makes it root's with the bundle's
 * mode, and verify then watches its owner and mode. */
START_TEST(test_planted_directory)
{
	engine_install_opts force = { .force = true };
	engine_result res;
	uint64_t problems = 0;
	char found[512] = "";
	struct stat st;
	fatelf_diag d;
	engine *e;
	int q;

	if (geteuid() != 0)
		return;         /* a directory of another uid needs chown */
	setup();
	hello_bundle(1);
	mkdir_at(rootdir, "opt");
	mkdir_at(rootdir, "opt/hello");
	ck_assert_int_eq(chown(rpath("/opt/hello"), 65534, 65534), 0);
	ck_assert_int_eq(chmod(rpath("/opt/hello"), 0777), 0);
	e = open_engine(NULL);
	q = install_file(e, hello_bundle(1), NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_DIR_UNSAFE);
	ck_assert_str_eq(d.subject, "/opt/hello");
	ck_assert_msg(strstr(d.msg, "uid 65534") && strstr(d.msg, "0777"), "%s", d.msg);
	ck_assert_uint_eq(d.has & (FATELF_DIAG_HAS_UID | FATELF_DIAG_HAS_MODE),
			  FATELF_DIAG_HAS_UID | FATELF_DIAG_HAS_MODE);
	ck_assert_uint_eq(d.uid, 65534);
	ck_assert_uint_eq(d.mode, 0777);
	ck_assert_uint_eq(root_entries(), 2);

	install_ok(e, hello_bundle(1), &force, &res);
	engine_result_done(&res);
	ck_assert_int_eq(stat(rpath("/opt/hello"), &st), 0);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_ge(engine_verify(e, "hello", count_problem, found, &problems, &d), 0);
	ck_assert_msg(problems == 0, "%s", found);

	ck_assert_int_eq(chown(rpath("/opt/hello/share"), 65534, 0), 0);
	ck_assert_int_eq(chmod(rpath("/opt/hello/bin"), 0775), 0);
	ck_assert_int_ge(engine_verify(e, "hello", count_problem, found, &problems, &d), 0);
	ck_assert_str_eq(found, "/opt/hello/bin mode;/opt/hello/share owner;");
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_signatures)
{
	engine_install_opts unsigned_ok = { .allow_unsigned = true };
	engine_result res;
	store_package p;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	make_hello_tree("tree", 1);
	make_bundle("tree", "hello", "1.0", NULL, FATELF_COMPRESS_ZSTD, "unsigned.fatbundle");
	make_bundle("tree", "hello", "1.0", &other_sk, FATELF_COMPRESS_ZSTD, "wrongkey.fatbundle");
	e = open_engine(NULL);

	q = install_file(e, "unsigned.fatbundle", NULL, &res, &d);
	ck_assert_int_eq(q, -FATELF_E_SIG_MISSING);
	q = install_file(e, "wrongkey.fatbundle", NULL, &res, &d);
	ck_assert_int_eq(q, -FATELF_E_SIG_KEY);
	/* The key that signed is named as data: its id, in hex. */
	ck_assert_uint_gt(strlen(d.subject), 0);
	ck_assert_uint_eq(strspn(d.subject, "0123456789ABCDEF"), strlen(d.subject));
	ck_assert_uint_eq(root_entries(), 0);
	ck_assert(!package_installed(e, "hello"));
	ck_assert_str_eq(last_tx(e).state, "failed");

	/* allow_unsigned reads a signature by a key nobody trusts as none,
	 * and says so: the package has no signer. */
	install_ok(e, "wrongkey.fatbundle", &unsigned_ok, &res);
	ck_assert_str_eq(res.signature, "unverified");
	ck_assert_uint_gt(strlen(res.signer), 0);
	engine_result_done(&res);
	ck_assert_int_eq(store_package_get(engine_store(e), "hello", &p, &d), 1);
	ck_assert_ptr_null(p.signer_keyid);
	store_package_done(&p);
	ck_assert_int_eq(engine_remove(e, "hello", NULL, &res, &d), 0);
	engine_result_done(&res);

	install_ok(e, "unsigned.fatbundle", &unsigned_ok, &res);
	ck_assert_str_eq(res.signature, "none");
	engine_result_done(&res);
	ck_assert_int_eq(store_package_get(engine_store(e), "hello", &p, &d), 1);
	ck_assert_ptr_null(p.signer_keyid);
	store_package_done(&p);
	ck_assert(root_file_is("/opt/hello/bin/hello", x86.buf, x86.len));
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_payload_hash_failure)
{
	engine_result res;
	fatelf_diag d;
	size_t len;
	uint8_t *buf;
	engine *e;
	int q, hits = 0;

	setup();
	mkdir_at(".", "tree");
	mkdir_at("tree", "opt");
	mkdir_at("tree", "opt/pkg");
	write_at("tree", "opt/pkg/a-first", "first file\n", 11, 0644);
	write_at("tree", "opt/pkg/z-marker", "PAYLOAD-MARKER-0123456789\n", 26, 0644);
	make_bundle("tree", "pkg", "1", &sk, FATELF_COMPRESS_NONE, "bad.fatbundle");
	/* One byte of one member changes: the signed manifest still holds. */
	buf = tu_read_file("bad.fatbundle", &len);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i + 14 <= len; i++)
		if (memcmp(buf + i, "PAYLOAD-MARKER", 14) == 0) {
			buf[i] = 'X';
			hits++;
		}
	ck_assert_int_eq(hits, 1);
	tu_write_file("bad.fatbundle", buf, len);
	free(buf);

	e = open_engine(NULL);
	q = install_file(e, "bad.fatbundle", NULL, &res, &d);
	ck_assert_msg(q == -FATELF_E_HASH, "%s: %s", fatelf_error_name(q), d.msg);
	/* No file, no temp, no directory of the bundle. */
	ck_assert_uint_eq(root_entries(), 0);
	ck_assert(!package_installed(e, "pkg"));
	struct hist h = last_tx(e);
	ck_assert_str_eq(h.state, "failed");
	ck_assert_msg(strstr(h.error, "z-marker"), "%s", h.error);
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_dry_run)
{
	engine_install_opts o = { .dry_run = true };
	engine_result res;
	engine *e;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), &o, &res);
	ck_assert(res.dry_run);
	ck_assert_int_eq(res.txid, 0);
	ck_assert_str_eq(res.kind, "install");
	ck_assert_uint_eq(res.files, 5);
	ck_assert_uint_eq(res.bytes_written, x86.len + 21 + 16 + 4);
	ck_assert_int_eq(res.bytes_saved, (int64_t)(fat.len - x86.len));
	engine_result_done(&res);
	ck_assert_uint_eq(root_entries(), 0);
	ck_assert(!package_installed(e, "hello"));
	ck_assert_uint_eq(tx_count(e), 0);

	/* Remove's dry run leaves everything too. */
	engine_remove_opts ro = { .dry_run = true };
	fatelf_diag d;
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	unsigned before = root_entries();
	ck_assert_int_eq(engine_remove(e, "hello", &ro, &res, &d), 0);
	ck_assert(res.dry_run);
	ck_assert_uint_eq(res.files, 5);
	engine_result_done(&res);
	ck_assert_uint_eq(root_entries(), before);
	ck_assert(package_installed(e, "hello"));
	ck_assert_uint_eq(tx_count(e), 1);
	engine_close(e);
	teardown();
}
END_TEST

struct cancel_at {
	const char *phase;
	unsigned calls;
	unsigned after;
	bool saw_path;
};

static int cancel_cb(const engine_progress *p, void *userdata)
{
	struct cancel_at *c = userdata;

	if (p->path)
		c->saw_path = true;
	if (strcmp(p->phase, c->phase) == 0 && ++c->calls > c->after)
		return -1;
	return 0;
}

START_TEST(test_cancel_rolls_back)
{
	struct cancel_at c = { .phase = "staging", .after = 3 };
	engine_install_opts o = { .progress = cancel_cb, .userdata = &c };
	engine_result res;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	e = open_engine(NULL);
	q = install_file(e, hello_bundle(1), &o, &res, &d);
	ck_assert_int_eq(q, -ECANCELED);
	ck_assert(c.saw_path);
	ck_assert_uint_eq(root_entries(), 0);
	ck_assert(!package_installed(e, "hello"));
	ck_assert_str_eq(last_tx(e).state, "cancelled");

	/* Cancel while committing is still before the commit point. */
	struct cancel_at c2 = { .phase = "committing", .after = 0 };
	o.userdata = &c2;
	q = install_file(e, hello_bundle(1), &o, &res, &d);
	ck_assert_int_eq(q, -ECANCELED);
	ck_assert_uint_eq(root_entries(), 0);
	ck_assert_str_eq(last_tx(e).state, "cancelled");
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_remove)
{
	engine_result res;
	fatelf_diag d;
	engine *e;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	/* A file of the admin's keeps its directory. */
	tu_write_file(rpath("/opt/hello/share/notes"), "mine\n", 5);

	ck_assert_int_eq(engine_remove(e, "hello", NULL, &res, &d), 0);
	ck_assert_str_eq(res.package, "hello");
	ck_assert_str_eq(res.old_version, "1.0");
	ck_assert_uint_eq(res.files, 5);
	ck_assert_uint_eq(res.nconfig_kept, 0);
	engine_result_done(&res);
	ck_assert(!exists("/opt/hello/bin"));
	ck_assert(!exists("/opt/hello/old"));
	ck_assert(!exists("/etc/hello.conf"));
	ck_assert(root_file_is("/opt/hello/share/notes", "mine\n", 5));
	ck_assert_uint_eq(root_files(), 1);
	ck_assert(!package_installed(e, "hello"));
	ck_assert_str_eq(last_tx(e).kind, "remove");
	ck_assert_str_eq(last_tx(e).state, "committed");

	ck_assert_int_eq(engine_remove(e, "hello", NULL, &res, &d), -ENGINE_E_NOT_INSTALLED);
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_setid)
{
	engine_install_opts allow = { .allow_setid = true };
	engine_result res;
	struct stat st;
	fatelf_diag d;
	engine *e;

	setup();
	mkdir_at(".", "tree");
	mkdir_at("tree", "bin");
	write_at("tree", "bin/su", "#!/bin/sh\n", 10, 04755);
	make_bundle("tree", "su", "1", &sk, FATELF_COMPRESS_ZSTD, "su.fatbundle");
	e = open_engine(NULL);
	ck_assert_int_eq(install_file(e, "su.fatbundle", NULL, &res, &d), -ENGINE_E_SETID);
	ck_assert_msg(strstr(d.msg, "/bin/su"), "%s", d.msg);
	ck_assert_uint_eq(root_entries(), 0);
	install_ok(e, "su.fatbundle", &allow, &res);
	engine_result_done(&res);
	ck_assert_int_eq(stat(rpath("/bin/su"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 04755);
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_ldconfig_and_durable)
{
	engine_config c;
	engine_result res;
	char script[PATH_MAX + 64], log[PATH_MAX + 64], want[PATH_MAX + 64], body[PATH_MAX * 2];
	engine *e;

	setup();
	snprintf(log, sizeof(log), "%s/ldconfig.log", top);
	snprintf(script, sizeof(script), "%s/ldconfig.sh", top);
	snprintf(body, sizeof(body), "#!/bin/sh\necho \"$@\" >> '%s'\n", log);
	tu_write_file(script, body, strlen(body));
	mkdir_at(".", "tree");
	mkdir_at("tree", "usr");
	mkdir_at("tree", "usr/lib");
	mkdir_at("tree", "usr/lib/x86_64-linux-gnu");
	write_at("tree", "usr/lib/x86_64-linux-gnu/libh.so.1", x86.buf, x86.len, 0644);
	make_bundle("tree", "libh", "1", &sk, FATELF_COMPRESS_ZSTD, "libh.fatbundle");

	c = base_cfg();
	c.ldconfig = true;
	c.durable = true;
	free(c.ldconfig_path);
	c.ldconfig_path = strdup(script);
	e = open_engine_cfg(&c, NULL);
	engine_config_done(&c);

	/* No library in a loader directory: no ldconfig. */
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	ck_assert_int_ne(access(log, F_OK), 0);

	install_ok(e, "libh.fatbundle", NULL, &res);
	engine_result_done(&res);
	snprintf(want, sizeof(want), "-r %s\n", rootdir);
	ck_assert_msg(tu_file_equals(log, want, strlen(want)), "ldconfig was not run with -r ROOT");
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_lock_and_errors)
{
	engine_config c;
	engine *e, *e2 = NULL;
	fatelf_diag d;

	setup();
	e = open_engine(NULL);
	c = base_cfg();
	ck_assert_int_eq(engine_open(&c, NULL, 0, 0, &e2, NULL, &d), -ENGINE_E_LOCKED);
	/* A reader needs no lock. */
	ck_assert_int_eq(engine_open(&c, NULL, 0, ENGINE_OPEN_READONLY, &e2, NULL, &d), 0);
	engine_close(e2);
	engine_config_done(&c);
	engine_close(e);

	ck_assert_str_eq(fatelf_error_name(-ENGINE_E_CONFLICT), "ENGINE_E_CONFLICT");
	ck_assert_str_eq(fatelf_error_name(-ENGINE_E_LOCKED), "ENGINE_E_LOCKED");
	ck_assert_str_eq(fatelf_error_name(-FATELF_E_HASH), "FATELF_E_HASH");
	ck_assert_str_eq(fatelf_error_name(-ENOSPC), "ENOSPC");
	ck_assert_str_eq(fatelf_error_name(-ENGINE_E_NAME_RESERVED), "ENGINE_E_NAME_RESERVED");
	ck_assert_str_eq(fatelf_strerror(-ECANCELED), strerror(ECANCELED));
	ck_assert_str_eq(fatelf_strerror(-ENOENT), strerror(ENOENT));
	teardown();
}
END_TEST


START_TEST(test_reinstall_same_version)
{
	engine_result res;
	int64_t id1, id2;
	engine *e;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &res);
	engine_result_done(&res);
	check_package(e, "hello", "1.0", &id1);
	/* A file the admin deleted comes back. */
	ck_assert_int_eq(unlink(rpath("/opt/hello/share/data.txt")), 0);
	install_ok(e, hello_bundle(1), NULL, &res);
	ck_assert_str_eq(res.kind, "upgrade");
	ck_assert_str_eq(res.old_version, "1.0");
	ck_assert_str_eq(res.new_version, "1.0");
	engine_result_done(&res);
	check_package(e, "hello", "1.0", &id2);
	ck_assert_int_eq(id1, id2);
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 1\n", 21));
	ck_assert_uint_eq(root_files(), 5);
	engine_close(e);
	teardown();
}
END_TEST

/* A fat file with no record this host runs (aarch64 and riscv64 only). */
START_TEST(test_no_host_record_and_keep_fat)
{
	elfgen_image imgs[2];
	struct img rv = make_img(243, 8000, 3), foreign;
	engine_policy_spec keep = { .policy = ENGINE_POLICY_KEEP };
	engine_install_opts keep_opts = { .policy = &keep };
	engine_config c;
	engine_result res;
	fatelf_diag d;
	engine *e;
	int q;

	setup();
	imgs[0] = (elfgen_image) { .data = arm.buf, .len = arm.len };
	imgs[1] = (elfgen_image) { .data = rv.buf, .len = rv.len };
	foreign.buf = elfgen_fat(imgs, 2, &foreign.len, NULL);
	mkdir_at(".", "tree");
	mkdir_at("tree", "opt");
	mkdir_at("tree", "opt/arm");
	write_at("tree", "opt/arm/tool", foreign.buf, foreign.len, 0755);
	make_bundle("tree", "armtool", "1", &sk, FATELF_COMPRESS_ZSTD, "arm.fatbundle");

	e = open_engine(NULL);
	q = install_file(e, "arm.fatbundle", NULL, &res, &d);
	ck_assert_int_eq(q, -FATELF_E_NO_HOST_RECORD);
	ck_assert_msg(strstr(d.msg, "/opt/arm/tool") && strstr(d.msg, "aarch64"), "%s", d.msg);
	ck_assert_str_eq(d.subject, "/opt/arm/tool");
	ck_assert_uint_eq(root_entries(), 0);
	/* Policy keep takes it as shipped. */
	install_ok(e, "arm.fatbundle", &keep_opts, &res);
	engine_result_done(&res);
	ck_assert(root_file_is("/opt/arm/tool", foreign.buf, foreign.len));
	engine_close(e);

	/* A KeepFat glob does the same under native policy, for its tree only. */
	ck_assert_int_eq(system("rm -rf root state && mkdir root"), 0);
	c = base_cfg();
	c.keep_fat = calloc(1, sizeof(char *));
	c.keep_fat[0] = strdup("/opt/hello/bin/*");
	c.nkeep_fat = 1;
	e = open_engine_cfg(&c, NULL);
	engine_config_done(&c);
	install_ok(e, hello_bundle(1), NULL, &res);
	ck_assert_int_eq(res.bytes_saved, 0);
	engine_result_done(&res);
	ck_assert(root_file_is("/opt/hello/bin/hello", fat.buf, fat.len));
	engine_close(e);
	free(rv.buf);
	free(foreign.buf);
	teardown();
}
END_TEST

/* A symlink planted in the root must not carry a write outside it. */
static int print_problem(const char *package, const char *path, int problem, const char *detail,
			 void *userdata)
{
	(void)userdata;
	fprintf(stderr, "verify %s: %s: %d %s\n", package, path, problem, detail ? detail : "");
	return 0;
}

/* An x86_64 + i386 FatELF of images of type etype (elfgen's, no PT_INTERP). */
static struct img make_fat_pair(uint16_t etype, uint32_t seed, struct img *ret_x86)
{
	elfgen_opts o;
	elfgen_image imgs[2];
	struct img a, b, f;

	elfgen_defaults(&o, 62, FATELF_CLASS64, FATELF_DATA2LSB);
	o.type = etype;
	o.seed = seed;
	a.buf = elfgen_make(&o, &a.len);
	elfgen_defaults(&o, 3, FATELF_CLASS32, FATELF_DATA2LSB);
	o.type = etype;
	o.seed = seed + 1;
	b.buf = elfgen_make(&o, &b.len);
	ck_assert(a.buf && b.buf);
	imgs[0] = (elfgen_image) { .data = a.buf, .len = a.len };
	imgs[1] = (elfgen_image) { .data = b.buf, .len = b.len };
	f.buf = elfgen_fat(imgs, 2, &f.len, NULL);
	ck_assert_ptr_nonnull(f.buf);
	free(b.buf);
	*ret_x86 = a;
	return f;
}

/*
 * Policy compatible keeps every record the host runs, so that each can be
 * exec'd; no dynamic linker loads a fat shared library, so a library is
 * thinned to the record the kernel would pick. A fat file that stays fat
 * and that this machine cannot load as it is is named in the result's
 * warnings: an executable without the FatELF binfmt handler, a library
 * kept fat by policy keep.
 */
START_TEST(test_compatible_thins_fat_libraries)
{
	engine_policy_spec compat = { .policy = ENGINE_POLICY_COMPATIBLE };
	engine_policy_spec keep = { .policy = ENGINE_POLICY_KEEP };
	engine_install_opts o = { .policy = &compat };
	struct img so_x86, exe_x86, so, exe;
	fatelf_keepset k;
	fatelf_header hdr;
	engine_result res;
	struct recs rs = { 0 };
	store_file f;
	fatelf_diag d;
	engine *e;

	setup();
	so = make_fat_pair(ELFGEN_ET_DYN, 10, &so_x86);
	exe = make_fat_pair(ELFGEN_ET_EXEC, 20, &exe_x86);
	ck_assert_int_eq(mkdir("tree-lib", 0755), 0);
	mkdir_at("tree-lib", "opt");
	mkdir_at("tree-lib", "opt/lib");
	write_at("tree-lib", "opt/lib/libz.so", so.buf, so.len, 0755);
	write_at("tree-lib", "opt/lib/tool", exe.buf, exe.len, 0755);
	make_bundle("tree-lib", "libz", "1.0", &sk, FATELF_COMPRESS_ZSTD, "libz.fatbundle");
	e = open_engine(NULL);
	ck_assert_int_eq(fatelf_header_decode(exe.buf, exe.len, &hdr, &d), 0);
	if (fatelf_keep_from_host(&hdr, engine_host(e), &k, NULL) < 0 || fatelf_keep_count(&k) != 2) {
		fprintf(stderr, "# this host does not run both x86_64 and i386: compatible not tested\n");
		goto out;
	}

	install_ok(e, "libz.fatbundle", &o, &res);
	/* the library: its x86_64 record alone, a plain ELF */
	ck_assert(root_file_is("/opt/lib/libz.so", so_x86.buf, so_x86.len));
	/* the executable: both records, still fat */
	ck_assert(root_file_is("/opt/lib/tool", exe.buf, exe.len));
	ck_assert_int_eq(store_file_get(engine_store(e), "/opt/lib/libz.so", &f, NULL, &d), 1);
	ck_assert_int_eq(f.installed_form, STORE_FORM_THINNED);
	ck_assert_uint_eq(f.installed_size, so_x86.len);
	store_file_done(&f);
	ck_assert_int_eq(get_recs(e, "/opt/lib/libz.so", &rs), 2);
	ck_assert_int_eq(rs.kept[0], 1);
	ck_assert_int_eq(rs.kept[1], 0);
	ck_assert_int_eq(res.bytes_written, so_x86.len + exe.len);
	/* no binfmt handler: the fat executable is named */
	ck_assert_uint_eq(res.nwarnings, 1);
	ck_assert_str_eq(res.warnings[0].path, "/opt/lib/tool");
	ck_assert_str_eq(res.warnings[0].reason, ENGINE_WARN_NO_BINFMT);
	engine_result_done(&res);
	/* what the store says is what is on disk: verify finds nothing */
	uint64_t problems = 1;
	ck_assert_int_eq(engine_verify(e, "libz", print_problem, NULL, &problems, &d), 2);
	ck_assert_uint_eq(problems, 0);

	/* with the handler registered, a fat executable runs: no warning */
	o.fat_executables_run = true;
	install_ok(e, "libz.fatbundle", &o, &res);
	ck_assert_uint_eq(res.nwarnings, 0);
	engine_result_done(&res);

	/* policy keep: the library stays fat, and is named */
	o.policy = &keep;
	install_ok(e, "libz.fatbundle", &o, &res);
	ck_assert(root_file_is("/opt/lib/libz.so", so.buf, so.len));
	ck_assert_uint_eq(res.nwarnings, 1);
	ck_assert_str_eq(res.warnings[0].path, "/opt/lib/libz.so");
	ck_assert_str_eq(res.warnings[0].reason, ENGINE_WARN_FAT_LIBRARY);
	engine_result_done(&res);
out:
	free(so.buf);
	free(so_x86.buf);
	free(exe.buf);
	free(exe_x86.buf);
	engine_close(e);
	teardown();
}
END_TEST

START_TEST(test_symlink_in_root_refused)
{
	engine_result res;
	fatelf_diag d;
	char outside[PATH_MAX + 32];
	engine *e;
	int q;

	setup();
	snprintf(outside, sizeof(outside), "%s/outside", top);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	ck_assert_int_eq(symlink(outside, rpath("/opt")), 0);
	e = open_engine(NULL);
	q = install_file(e, hello_bundle(1), NULL, &res, &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_msg(strstr(d.msg, "/opt"), "%s", d.msg);
	ck_assert_uint_eq(scan(outside, NULL), 0);
	ck_assert(!package_installed(e, "hello"));
	engine_close(e);
	teardown();
}
END_TEST

/* A write that fails while staging (here: the file size limit, as a full
 * disk would) leaves nothing behind and names the file. */
START_TEST(test_write_failure_rolls_back)
{
	size_t big = 3u << 20;
	uint8_t *blob = malloc(big);
	engine *e;
	pid_t pid;
	int status;

	setup();
	ck_assert_ptr_nonnull(blob);
	for (size_t i = 0; i < big; i++)
		blob[i] = (uint8_t)(i * 2654435761u >> 13);
	mkdir_at(".", "tree");
	mkdir_at("tree", "opt");
	mkdir_at("tree", "opt/big");
	write_at("tree", "opt/big/blob", blob, big, 0644);
	free(blob);
	make_bundle("tree", "big", "1", &sk, FATELF_COMPRESS_ZSTD, "big.fatbundle");
	e = open_engine(NULL);
	engine_close(e);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 1u << 20, .rlim_max = 1u << 20 };
		engine_result res;
		fatelf_diag d;
		int q;

		signal(SIGXFSZ, SIG_IGN);
		e = open_engine(NULL);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(2);
		q = install_file(e, "big.fatbundle", NULL, &res, &d);
		if (q != -EFBIG)
			_exit(3);
		if (strcmp(d.subject, "/opt/big/blob") != 0 || !strstr(d.msg, "/opt/big/blob"))
			_exit(4);
		engine_close(e);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	e = open_engine(NULL);
	ck_assert_uint_eq(root_entries(), 0);
	struct hist h = last_tx(e);
	ck_assert_str_eq(h.state, "failed");
	ck_assert_msg(strstr(h.error, "/opt/big/blob"), "%s", h.error);
	engine_close(e);
	teardown();
}
END_TEST

/* ------------------------------------------------------------ recovery */

/* A transaction cut off after staging: the next open rolls it back. */
START_TEST(test_recover_rolls_back)
{
	eng_tx tx;
	fatelf_diag d;
	unsigned recovered = 0;
	engine *e;
	char *temp;
	int op, fd;

	setup();
	e = open_engine(NULL);
	ck_assert_int_eq(eng_tx_start(e, STORE_TX_INSTALL, "crash", NULL, "1", &tx, &d), 0);
	ck_assert_int_ge(eng_tx_add(&tx, STORE_JOP_MKDIR, "/opt", 0755, &d), 0);
	ck_assert_int_ge(eng_tx_add(&tx, STORE_JOP_MKDIR, "/opt/crash", 0755, &d), 0);
	op = eng_tx_add(&tx, STORE_JOP_CREATE, "/opt/crash/file", 0644, &d);
	ck_assert_int_ge(op, 0);
	/* Hidden, named for the transaction, and unguessable. */
	char want[64], first[256];
	snprintf(want, sizeof(want), "/opt/crash/.fatelf.%lld.%d.", (long long)tx.id, op);
	temp = eng_tx_temp(&tx, (size_t)op);
	ck_assert_ptr_nonnull(temp);
	ck_assert_uint_eq(strlen(temp), strlen(want) + 16);
	ck_assert_int_eq(strncmp(temp, want, strlen(want)), 0);
	ck_assert_uint_eq(strspn(temp + strlen(want), "0123456789abcdef"), 16);
	ck_assert_int_eq(eng_tx_journal(&tx, &d), 0);
	ck_assert_int_eq(eng_tx_mkdirs(&tx, &d), 0);
	/* A file planted under the temp's name is neither written through
	 * nor dropped: staging takes a new name, journaled before it is made. */
	snprintf(first, sizeof(first), "%s", temp);
	free(temp);
	tu_write_file(rpath(first), "planted\n", 8);
	fd = eng_tx_stage_open(&tx, (size_t)op, &d);
	ck_assert_msg(fd >= 0, "%s", d.msg);
	temp = eng_tx_temp(&tx, (size_t)op);
	ck_assert_ptr_nonnull(temp);
	ck_assert_str_ne(temp, first);
	ck_assert(root_file_is(first, "planted\n", 8));
	ck_assert_int_eq(write(fd, "x", 1), 1);
	ck_assert_int_eq(eng_tx_stage_close(&tx, (size_t)op, fd, 0, &d), 0);
	ck_assert(exists(temp));
	free(temp);
	/* The crash: no commit, no abort. */
	eng_tx_done(&tx);
	engine_close(e);

	e = open_engine(&recovered);
	ck_assert_uint_eq(recovered, 1);
	/* The temp it made is gone; the planted file is not the engine's. */
	ck_assert(root_file_is(first, "planted\n", 8));
	ck_assert_int_eq(unlink(rpath(first)), 0);
	ck_assert_int_eq(rmdir(rpath("/opt/crash")), 0);
	ck_assert_int_eq(rmdir(rpath("/opt")), 0);
	ck_assert_uint_eq(root_entries(), 0);
	struct hist h = last_tx(e);
	ck_assert_str_eq(h.state, "rolled-back");
	ck_assert_str_eq(h.error, "interrupted: rolled back at start");
	engine_close(e);
	/* Nothing left to recover. */
	e = open_engine(&recovered);
	ck_assert_uint_eq(recovered, 0);
	engine_close(e);
	teardown();
}
END_TEST

static int apply_package(engine *e, void *userdata, fatelf_diag *d)
{
	store_package p = { .name = "crash", .version = "1", .installed_at = 1, .policy = "native" };
	int64_t id;

	(void)userdata;
	return store_package_add(engine_store(e), &p, &id, d);
}

/* The store committed but the renames never ran: the next open finishes
 * them. Done by hand: the commit's store part, then a "crash". */
START_TEST(test_recover_rolls_forward)
{
	eng_tx tx;
	fatelf_diag d;
	unsigned recovered = 0;
	engine *e;
	int op, rm, fd;

	setup();
	mkdir_at(rootdir, "opt");
	tu_write_file(rpath("/opt/stale"), "stale\n", 6);
	e = open_engine(NULL);
	ck_assert_int_eq(eng_tx_start(e, STORE_TX_INSTALL, "crash", NULL, "1", &tx, &d), 0);
	op = eng_tx_add(&tx, STORE_JOP_CREATE, "/opt/new", 0640, &d);
	rm = eng_tx_add(&tx, STORE_JOP_REMOVE, "/opt/stale", 0, &d);
	ck_assert_int_ge(rm, 0);
	ck_assert_int_eq(eng_tx_journal(&tx, &d), 0);
	fd = eng_tx_stage_open(&tx, (size_t)op, &d);
	ck_assert_int_eq(write(fd, "new\n", 4), 4);
	ck_assert_int_eq(eng_tx_stage_close(&tx, (size_t)op, fd, 0, &d), 0);
	/* A file to remove stays where it is until after the commit point,
	 * and its journal row names no temp. */
	store_journal_op *jops = NULL;
	size_t njops = 0;
	ck_assert_int_eq(store_journal_of(engine_store(e), tx.id, &jops, &njops, &d), 0);
	ck_assert_uint_eq(njops, 2);
	ck_assert_int_eq(jops[rm].op, STORE_JOP_REMOVE);
	ck_assert_ptr_null(jops[rm].temp_path);
	store_journal_free(jops, njops);
	/* The commit point, as eng_tx_commit reaches it. */
	ck_assert_int_eq(store_begin(engine_store(e), &d), 0);
	ck_assert_int_eq(apply_package(e, NULL, &d), 0);
	ck_assert_int_eq(store_tx_mark_committed(engine_store(e), tx.id, 2, 4, 0, &d), 0);
	ck_assert_int_eq(store_commit(engine_store(e), &d), 0);
	eng_tx_done(&tx);
	engine_close(e);
	ck_assert(!exists("/opt/new"));
	ck_assert(root_file_is("/opt/stale", "stale\n", 6));

	e = open_engine(&recovered);
	ck_assert_uint_eq(recovered, 1);
	ck_assert(root_file_is("/opt/new", "new\n", 4));
	ck_assert(!exists("/opt/stale"));
	ck_assert_uint_eq(root_files(), 1);
	struct stat st;
	ck_assert_int_eq(stat(rpath("/opt/new"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_str_eq(last_tx(e).state, "committed");
	ck_assert(package_installed(e, "crash"));
	engine_close(e);
	teardown();
}
END_TEST

/* A journal written by an older program, which moved each file to remove
 * to a temp name before the commit point: cut off before it, the file is
 * moved back; cut off after it, the temp is unlinked. */
START_TEST(test_recover_older_remove)
{
	for (int committed = 0; committed <= 1; committed++) {
		eng_tx tx;
		fatelf_diag d;
		unsigned recovered = 0;
		char temp[64];
		engine *e;
		int rm;

		setup();
		mkdir_at(rootdir, "opt");
		tu_write_file(rpath("/opt/stale"), "stale\n", 6);
		e = open_engine(NULL);
		ck_assert_int_eq(eng_tx_start(e, STORE_TX_REMOVE, "crash", "1", NULL, &tx, &d), 0);
		rm = eng_tx_add(&tx, STORE_JOP_REMOVE, "/opt/stale", 0, &d);
		ck_assert_int_eq(rm, 0);
		ck_assert_int_eq(eng_tx_journal(&tx, &d), 0);
		snprintf(temp, sizeof(temp), "/opt/.fatelf.%lld.0.00000000000000ab", (long long)tx.id);
		ck_assert_int_eq(store_journal_set_temp(engine_store(e), tx.id, 0, temp, &d), 0);
		ck_assert_int_eq(rename(rpath("/opt/stale"), rpath(temp)), 0);
		if (committed)
			ck_assert_int_eq(store_tx_mark_committed(engine_store(e), tx.id, 2, 0, 0, &d), 0);
		eng_tx_done(&tx);
		engine_close(e);

		e = open_engine(&recovered);
		ck_assert_uint_eq(recovered, 1);
		if (committed) {
			ck_assert(!exists("/opt/stale"));
			ck_assert_uint_eq(root_files(), 0);
		} else {
			ck_assert(root_file_is("/opt/stale", "stale\n", 6));
			ck_assert_uint_eq(root_files(), 1);
		}
		engine_close(e);
		teardown();
	}
}
END_TEST

#ifdef FATELF_FAILPOINTS
/* Runs body (NULL: nothing) with a durable engine in a child whose
 * failpoint is fp; returns the wait status. */
static int in_crash_child(const char *fp, int (*body)(engine *e, const void *arg), const void *arg)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fatelf_diag d;
		engine_config c = base_cfg();
		engine *e = NULL;

		c.durable = true;
		setenv("FATELF_FAILPOINT", fp, 1);
		if (engine_open(&c, &pk, 1, 0, &e, NULL, &d) < 0)
			_exit(3);
		_exit(body ? body(e, arg) : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static int install_body(engine *e, const void *bundle)
{
	engine_result res;
	fatelf_diag d;

	return install_file(e, bundle, NULL, &res, &d) == 0 ? 0 : 4;
}

/* Installs bundle in a child killed at failpoint fp; returns the wait status. */
static int crash_child(const char *fp, const char *bundle)
{
	return in_crash_child(fp, bundle ? install_body : NULL, bundle);
}

/* Each step of the protocol: killed there, then reopened, the package is
 * either wholly as it was (version 1) or wholly as it became (version 2). */
START_TEST(test_failpoints)
{
	static const struct {
		const char *fp;
		bool forward;
	} steps[] = {
		{ "tx-journaled", false },
		{ "staged:1", false },
		{ "staged:3", false },
		{ "before-sync", false },
		{ "after-sync", false },
		{ "before-store-commit", false },
		{ "after-store-commit", true },
		{ "rename:1", true },
		{ "rename:4", true },
		{ "after-renames", true },
		{ "before-journal-clear", true },
	};
	engine_result res;

	setup();
	hello_bundle(1);
	hello_bundle(2);
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		unsigned recovered = 0;
		engine *e;
		int status;

		/* Start from version 1 installed. */
		e = open_engine(NULL);
		if (package_installed(e, "hello")) {
			fatelf_diag d;
			ck_assert_int_eq(engine_remove(e, "hello", NULL, &res, &d), 0);
			engine_result_done(&res);
		}
		install_ok(e, hello_bundle(1), NULL, &res);
		engine_result_done(&res);
		engine_close(e);

		status = crash_child(steps[i].fp, hello_bundle(2));
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			      "%s: the child was not killed (status %d)", steps[i].fp, status);

		/* A crash during recovery is recovered the same way. */
		status = crash_child("recover", NULL);
		ck_assert_msg(WIFSIGNALED(status), "%s: recover failpoint not hit", steps[i].fp);

		e = open_engine(&recovered);
		ck_assert_msg(recovered >= 1, "%s: nothing recovered", steps[i].fp);
		if (steps[i].forward) {
			check_package(e, "hello", "2.0", NULL);
			ck_assert_msg(root_file_is("/opt/hello/share/data.txt", "hello data version 2\n", 21),
				      "%s: not rolled forward", steps[i].fp);
			ck_assert(root_file_is("/opt/hello/share/new.txt", "new\n", 4));
			ck_assert(!exists("/opt/hello/old"));
			ck_assert(root_file_is("/etc/hello.conf", "greeting=hello2\n", 16));
		} else {
			check_package(e, "hello", "1.0", NULL);
			ck_assert_msg(root_file_is("/opt/hello/share/data.txt", "hello data version 1\n", 21),
				      "%s: not rolled back", steps[i].fp);
			ck_assert(!exists("/opt/hello/share/new.txt"));
			ck_assert(root_file_is("/opt/hello/old/old.txt", "old\n", 4));
			ck_assert_str_eq(last_tx(e).state, "rolled-back");
		}
		ck_assert(root_file_is("/opt/hello/bin/hello", x86.buf, x86.len));
		ck_assert_uint_eq(root_files(), 5);
		engine_close(e);
	}
	teardown();
}
END_TEST
#endif

/* ------------------------------------------------------------ groups */

/* Package NAME 1.0: opt/NAME/file ("NAME\n"), and opt/shared/x too when
 * shared. */
static const char *solo_bundle(const char *name, bool shared)
{
	static char outs[8][64];
	static unsigned next;
	char tree[64], dir[96], body[64];
	char *out = outs[next++ % 8];

	snprintf(tree, sizeof(tree), "tree-%s", name);
	snprintf(out, 64, "%s.fatbundle", name);
	if (access(out, F_OK) == 0)
		return out;
	ck_assert_int_eq(mkdir(tree, 0755), 0);
	mkdir_at(tree, "opt");
	snprintf(dir, sizeof(dir), "opt/%s", name);
	mkdir_at(tree, dir);
	snprintf(dir, sizeof(dir), "opt/%s/file", name);
	snprintf(body, sizeof(body), "%s\n", name);
	write_at(tree, dir, body, strlen(body), 0644);
	if (shared) {
		mkdir_at(tree, "opt/shared");
		write_at(tree, "opt/shared/x", body, strlen(body), 0644);
	}
	return make_bundle(tree, name, "1.0", &sk, FATELF_COMPRESS_ZSTD, out);
}

static int group_stage(engine *e, engine_group *g, const char *bundle, engine_result *res, fatelf_diag *d)
{
	engine_install_opts o = { .group = g };

	return install_file(e, bundle, &o, res, d);
}

static void check_hello_1(engine *e)
{
	check_package(e, "hello", "1.0", NULL);
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 1\n", 21));
	ck_assert(root_file_is("/opt/hello/old/old.txt", "old\n", 4));
	ck_assert(!exists("/opt/hello/share/new.txt"));
}

/* Staged installs wait for the group's commit, then land together. */
START_TEST(test_group_commits)
{
	engine_result res[2], one;
	fatelf_diag d;
	unsigned before;
	engine_group *g;
	engine *e;
	int q;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &one);
	engine_result_done(&one);
	before = tx_count(e);
	g = engine_group_new(e);
	ck_assert_ptr_nonnull(g);
	q = group_stage(e, g, hello_bundle(2), &res[0], &d);
	ck_assert_msg(q == 0, "%s", d.msg);
	q = group_stage(e, g, solo_bundle("alpha", false), &res[1], &d);
	ck_assert_msg(q == 0, "%s", d.msg);
	/* staged, not committed: nothing visible has changed */
	check_hello_1(e);
	ck_assert(!package_installed(e, "alpha"));
	ck_assert(!exists("/opt/alpha/file"));
	ck_assert_ptr_null(res[0].package);

	q = engine_group_commit(g, &d);
	ck_assert_msg(q == 0, "%s", d.msg);
	engine_group_free(g);
	ck_assert_str_eq(res[0].package, "hello");
	ck_assert_str_eq(res[0].new_version, "2.0");
	ck_assert_str_eq(res[0].old_version, "1.0");
	ck_assert_str_eq(res[1].package, "alpha");
	ck_assert_int_ne(res[0].txid, res[1].txid);
	check_package(e, "hello", "2.0", NULL);
	check_package(e, "alpha", "1.0", NULL);
	ck_assert(root_file_is("/opt/hello/share/data.txt", "hello data version 2\n", 21));
	ck_assert(root_file_is("/opt/hello/share/new.txt", "new\n", 4));
	ck_assert(!exists("/opt/hello/old"));
	ck_assert(root_file_is("/opt/alpha/file", "alpha\n", 6));
	check_owner(e, "/opt/alpha/file", "alpha");
	ck_assert_uint_eq(tx_count(e), before + 2);
	ck_assert_str_eq(last_tx(e).state, "committed");
	engine_result_done(&res[0]);
	engine_result_done(&res[1]);
	/* a group with nothing staged commits nothing */
	g = engine_group_new(e);
	ck_assert_int_eq(engine_group_commit(g, &d), 0);
	engine_group_free(g);
	ck_assert_uint_eq(tx_count(e), before + 2);
	engine_close(e);
	teardown();
}
END_TEST

/* One install of the group fails: the ones staged before it roll back. */
START_TEST(test_group_all_or_none)
{
	engine_result res[3], one;
	fatelf_diag d;
	unsigned before_entries, before_tx;
	engine_group *g;
	engine *e;
	int q;

	setup();
	e = open_engine(NULL);
	install_ok(e, hello_bundle(1), NULL, &one);
	engine_result_done(&one);
	before_entries = root_entries();
	before_tx = tx_count(e);
	g = engine_group_new(e);
	ck_assert_int_eq(group_stage(e, g, solo_bundle("alpha", false), &res[0], &d), 0);
	ck_assert_int_eq(group_stage(e, g, hello_bundle(2), &res[1], &d), 0);
	/* other's data.txt is hello's */
	q = group_stage(e, g, other_bundle(), &res[2], &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_str_eq(d.subject, "/opt/hello/share/data.txt");
	engine_group_abort(g, q, &d);
	engine_group_free(g);
	check_hello_1(e);
	ck_assert(!package_installed(e, "alpha"));
	ck_assert(!package_installed(e, "other"));
	/* no staged file, no directory made for alpha is left */
	ck_assert_uint_eq(root_entries(), before_entries);
	ck_assert_uint_eq(tx_count(e), before_tx + 3);
	{
		store_tx *v = NULL;
		size_t n = 0;

		ck_assert_int_eq(store_tx_history(engine_store(e), NULL, 0, &v, &n, &d), 0);
		for (size_t i = 0; i < 3; i++) {
			ck_assert_str_eq(store_tx_state_to_text(v[i].state), "failed");
			ck_assert_msg(v[i].error && strstr(v[i].error, "/opt/hello/share/data.txt"), "%s",
				      v[i].error ? v[i].error : "(none)");
		}
		store_txs_free(v, n);
	}
	engine_close(e);
	teardown();
}
END_TEST

/* Two installs of one group may not write one path, nor one package twice. */
START_TEST(test_group_conflicts_within)
{
	engine_result res[2];
	fatelf_diag d;
	engine_group *g;
	engine *e;
	int q;

	setup();
	e = open_engine(NULL);
	g = engine_group_new(e);
	ck_assert_int_eq(group_stage(e, g, solo_bundle("pa", true), &res[0], &d), 0);
	q = group_stage(e, g, solo_bundle("pb", true), &res[1], &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_str_eq(d.subject, "/opt/shared/x");
	ck_assert_msg(strstr(d.msg, "pa") && strstr(d.msg, "pb"), "%s", d.msg);
	ck_assert_str_eq(d.owner, "pa");
	engine_group_abort(g, q, &d);
	engine_group_free(g);
	ck_assert(!package_installed(e, "pa"));
	ck_assert(!package_installed(e, "pb"));
	ck_assert_uint_eq(root_entries(), 0);

	g = engine_group_new(e);
	ck_assert_int_eq(group_stage(e, g, solo_bundle("alpha", false), &res[0], &d), 0);
	q = group_stage(e, g, solo_bundle("alpha", false), &res[1], &d);
	ck_assert_int_eq(q, -ENGINE_E_CONFLICT);
	ck_assert_msg(strstr(d.msg, "named twice"), "%s", d.msg);
	/* freed without a commit: rolled back, as cancelled */
	engine_group_free(g);
	ck_assert(!package_installed(e, "alpha"));
	ck_assert_uint_eq(root_entries(), 0);
	{
		store_tx *v = NULL;
		size_t n = 0;

		/* newest first: the second alpha failed, the first was cancelled */
		ck_assert_int_eq(store_tx_history(engine_store(e), NULL, 0, &v, &n, &d), 0);
		ck_assert_uint_ge(n, 2);
		ck_assert_str_eq(store_tx_state_to_text(v[0].state), "failed");
		ck_assert_str_eq(store_tx_state_to_text(v[1].state), "cancelled");
		store_txs_free(v, n);
	}
	engine_close(e);
	teardown();
}
END_TEST

#ifdef FATELF_FAILPOINTS
/* hello 2.0 and alpha, committed in one group. */
static int group_body(engine *e, const void *arg)
{
	engine_result res[2];
	engine_group *g = engine_group_new(e);
	fatelf_diag d;

	(void)arg;
	if (!g)
		return 3;
	if (group_stage(e, g, hello_bundle(2), &res[0], &d) < 0 ||
	    group_stage(e, g, solo_bundle("alpha", false), &res[1], &d) < 0)
		return 4;
	return engine_group_commit(g, &d) == 0 ? 0 : 5;
}

/* Killed at fp while committing hello 2.0 and alpha in one group. */
static int group_crash_child(const char *fp)
{
	return in_crash_child(fp, group_body, NULL);
}

/* Killed anywhere in the commit, both roll back or both roll forward. */
START_TEST(test_group_failpoints)
{
	static const struct {
		const char *fp;
		bool forward;
	} steps[] = {
		{ "before-store-commit", false },
		{ "after-store-commit", true },
		{ "rename:3", true },
		{ "after-renames:1", true },
	};

	setup();
	hello_bundle(1);
	hello_bundle(2);
	solo_bundle("alpha", false);
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		engine_result res;
		unsigned recovered = 0;
		fatelf_diag d;
		engine *e = open_engine(NULL);
		int status;

		if (package_installed(e, "hello")) {
			ck_assert_int_eq(engine_remove(e, "hello", NULL, &res, &d), 0);
			engine_result_done(&res);
		}
		if (package_installed(e, "alpha")) {
			ck_assert_int_eq(engine_remove(e, "alpha", NULL, &res, &d), 0);
			engine_result_done(&res);
		}
		install_ok(e, hello_bundle(1), NULL, &res);
		engine_result_done(&res);
		engine_close(e);

		status = group_crash_child(steps[i].fp);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			      "%s: the child was not killed (status %d)", steps[i].fp, status);
		e = open_engine(&recovered);
		ck_assert_msg(recovered == 2, "%s: %u recovered", steps[i].fp, recovered);
		if (steps[i].forward) {
			check_package(e, "hello", "2.0", NULL);
			check_package(e, "alpha", "1.0", NULL);
			ck_assert(root_file_is("/opt/hello/share/new.txt", "new\n", 4));
			ck_assert(!exists("/opt/hello/old"));
			ck_assert(root_file_is("/opt/alpha/file", "alpha\n", 6));
		} else {
			check_hello_1(e);
			ck_assert(!package_installed(e, "alpha"));
			ck_assert(!exists("/opt/alpha"));
		}
		engine_close(e);
	}
	teardown();
}
END_TEST
#endif

/* A subject is put in front of a message unless its writer said that the
 * message names it already. */
START_TEST(test_diag_naming)
{
	fatelf_diag d;
	char text[600];

	fatelf_diag_clear(&d);
	fatelf_diag_at(&d, -EIO, -1, "/opt/a", "cannot read it");
	ck_assert_int_eq(eng_diag_name(&d, -EIO, "/opt/a"), -EIO);
	ck_assert_str_eq(d.msg, "/opt/a: cannot read it");
	/* named for another path: this one goes in front */
	ck_assert_int_eq(eng_diag_name(&d, -EIO, "/opt/b"), -EIO);
	ck_assert_str_eq(d.msg, "/opt/b: /opt/a: cannot read it");
	ck_assert_str_eq(d.subject, "/opt/b");
	/* a plain message */
	fatelf_diag_set(&d, -ENOSPC, -1, "no room");
	eng_diag_name(&d, -ENOSPC, "/opt/b");
	ck_assert_str_eq(d.msg, "/opt/b: no room");
	ck_assert_int_eq(d.code, -ENOSPC);
	/* and again: named once */
	eng_diag_name(&d, -ENOSPC, "/opt/b");
	ck_assert_str_eq(d.msg, "/opt/b: no room");
	/* no message: the code's text */
	fatelf_diag_clear(&d);
	eng_diag_name(&d, -ENOENT, "/x");
	ck_assert_str_eq(d.msg, "/x: No such file or directory");

	/* the history row's text */
	fatelf_diag_clear(&d);
	fatelf_diag_set(&d, -EIO, -1, "cannot read it");
	snprintf(d.subject, sizeof(d.subject), "/opt/c");
	eng_diag_text(-EIO, &d, text, sizeof(text));
	ck_assert_str_eq(text, "/opt/c: cannot read it");
	fatelf_diag_at(&d, -EIO, -1, "/opt/c", "cannot read it");
	eng_diag_text(-EIO, &d, text, sizeof(text));
	ck_assert_str_eq(text, "/opt/c: cannot read it");
	eng_diag_text(-EIO, NULL, text, sizeof(text));
	ck_assert_str_eq(text, fatelf_strerror(-EIO));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_diag_naming);
	tcase_add_test(tc, test_install_native);
	tcase_add_test(tc, test_install_keep_policy);
	tcase_add_test(tc, test_upgrade_removes_stale);
	tcase_add_test(tc, test_upgrade_keeps_unchanged);
	tcase_add_test(tc, test_downgrade);
	tcase_add_test(tc, test_config_kept_on_upgrade_and_remove);
	tcase_add_test(tc, test_conflict_with_package);
	tcase_add_test(tc, test_conflict_unowned_file);
	tcase_add_test(tc, test_reserved_entry_name);
	tcase_add_test(tc, test_config_sidecar_conflict);
	tcase_add_test(tc, test_planted_directory);
	tcase_add_test(tc, test_signatures);
	tcase_add_test(tc, test_payload_hash_failure);
	tcase_add_test(tc, test_dry_run);
	tcase_add_test(tc, test_cancel_rolls_back);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_setid);
	tcase_add_test(tc, test_ldconfig_and_durable);
	tcase_add_test(tc, test_lock_and_errors);
	tcase_add_test(tc, test_reinstall_same_version);
	tcase_add_test(tc, test_no_host_record_and_keep_fat);
	tcase_add_test(tc, test_compatible_thins_fat_libraries);
	tcase_add_test(tc, test_symlink_in_root_refused);
	tcase_add_test(tc, test_write_failure_rolls_back);
	tcase_add_test(tc, test_recover_rolls_back);
	tcase_add_test(tc, test_recover_rolls_forward);
	tcase_add_test(tc, test_recover_older_remove);
	tcase_add_test(tc, test_group_commits);
	tcase_add_test(tc, test_group_all_or_none);
	tcase_add_test(tc, test_group_conflicts_within);
#ifdef FATELF_FAILPOINTS
	tcase_add_test(tc, test_failpoints);
	tcase_add_test(tc, test_group_failpoints);
#endif
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
