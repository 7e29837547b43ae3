/*
 * Unit tests for thinning installed files and verifying them: bundles
 * built in-process are installed fat (policy keep) into a temporary root,
 * then thinned and verified, and the bytes on disk, the store's rows and
 * the history are checked against what the offline tools produce from the
 * shipped files.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "elfgen.h"
#include "engine.h"
#include "store.h"
#include "testutil.h"

#define EM_386 3
#define EM_X86_64 62
#define EM_AARCH64 183
#define EM_RISCV 243

/* ------------------------------------------------------------ fixtures */

static void make_elf(const char *path, uint16_t machine, uint8_t cls, uint64_t size, uint32_t seed)
{
	elfgen_opts o;
	size_t len;

	elfgen_defaults(&o, machine, cls, FATELF_DATA2LSB);
	o.size = size;
	o.seed = seed;
	uint8_t *buf = elfgen_make(&o, &len);
	ck_assert_ptr_nonnull(buf);
	tu_write_file(path, buf, len);
	free(buf);
}

static void glue(const char *out, const char *const *in, size_t n)
{
	fatelf_diag d;

	ck_assert_msg(fatelf_glue(out, in, n, NULL, &d) == 0, "glue %s: %s", out, d.msg);
}

/*
 * Package "app":
 *   opt/app/bin/prog      FatELF: x86_64, i386, aarch64
 *   opt/app/bin/tool      FatELF: x86_64, aarch64
 *   opt/app/share/data    data, 0644
 *   opt/app/lib/libx.so   symlink -> libx.so.1
 *   etc/app.conf          config, 0640
 * Package "shared":
 *   opt/shared/bin/prog2  FatELF: x86_64, riscv64
 */
static void make_trees(void)
{
	const char *prog[] = { "x.elf", "i.elf", "a.elf" };
	const char *tool[] = { "x2.elf", "a2.elf" };
	const char *prog2[] = { "x3.elf", "r3.elf" };

	make_elf("x.elf", EM_X86_64, FATELF_CLASS64, 20000, 1);
	make_elf("i.elf", EM_386, FATELF_CLASS32, 15000, 2);
	make_elf("a.elf", EM_AARCH64, FATELF_CLASS64, 30000, 3);
	make_elf("x2.elf", EM_X86_64, FATELF_CLASS64, 9000, 4);
	make_elf("a2.elf", EM_AARCH64, FATELF_CLASS64, 11000, 5);
	make_elf("x3.elf", EM_X86_64, FATELF_CLASS64, 7000, 6);
	make_elf("r3.elf", EM_RISCV, FATELF_CLASS64, 8000, 7);

	const char *dirs[] = { "app", "app/opt", "app/opt/app", "app/opt/app/bin",
			       "app/opt/app/share", "app/opt/app/lib", "app/etc", "shared",
			       "shared/opt", "shared/opt/shared", "shared/opt/shared/bin" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		ck_assert_int_eq(mkdir(dirs[i], 0755), 0);
	glue("app/opt/app/bin/prog", prog, 3);
	glue("app/opt/app/bin/tool", tool, 2);
	ck_assert_int_eq(chmod("app/opt/app/bin/prog", 0755), 0);
	ck_assert_int_eq(chmod("app/opt/app/bin/tool", 0755), 0);
	tu_write_file("app/opt/app/share/data", "some data\n", 10);
	ck_assert_int_eq(chmod("app/opt/app/share/data", 0644), 0);
	ck_assert_int_eq(symlink("libx.so.1", "app/opt/app/lib/libx.so"), 0);
	tu_write_file("app/etc/app.conf", "volume=3\n", 9);
	ck_assert_int_eq(chmod("app/etc/app.conf", 0640), 0);
	glue("shared/opt/shared/bin/prog2", prog2, 2);
	ck_assert_int_eq(chmod("shared/opt/shared/bin/prog2", 0755), 0);
}

static void make_bundle(const char *tree, const char *name, const char *out)
{
	fatelf_bundle_create_opts o = {
		.name = name,
		.version = "1.0-1",
		.compression = FATELF_COMPRESS_NONE,
	};
	fatelf_diag d;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create(tree, fd, &o, &d) == 0, "bundle %s: %s", name, d.msg);
	close(fd);
}

static const engine_policy_spec keep_spec = { .policy = ENGINE_POLICY_KEEP };
static const engine_policy_spec native_spec = { .policy = ENGINE_POLICY_NATIVE };

static void install(engine *e, const char *bundle)
{
	engine_install_opts o = { .policy = &keep_spec, .allow_unsigned = true };
	engine_result res = { 0 };
	fatelf_reader src;
	fatelf_diag d;
	int fd;

	fatelf_diag_clear(&d);
	fd = open(bundle, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_reader_fd(&src, fd, NULL), 0);
	int r = engine_install(e, &src, &o, &res, &d);
	ck_assert_msg(r == 0, "install %s: %s: %s: %s", bundle, fatelf_error_name(r), d.subject,
		      d.msg);
	fatelf_reader_close(&src);
	close(fd);
	engine_result_done(&res);
}

/* A fresh root with both packages installed fat; keep_fat: a KeepFat glob or NULL. */
static engine *setup(const char *keep_fat)
{
	engine_config c;
	engine *e = NULL;
	fatelf_diag d;
	char cwd[4096];

	tu_tmpdir();
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	make_trees();
	make_bundle("app", "app", "app.fatbundle");
	make_bundle("shared", "shared", "shared.fatbundle");
	ck_assert_int_eq(mkdir("root", 0755), 0);

	engine_config_init(&c);
	free(c.root);
	free(c.state_dir);
	ck_assert_int_gt(asprintf(&c.root, "%s/root", cwd), 0);
	ck_assert_int_gt(asprintf(&c.state_dir, "%s/state", cwd), 0);
	c.require_signature = false;
	c.durable = false;
	c.ldconfig = false;
	if (keep_fat) {
		c.keep_fat = calloc(1, sizeof(char *));
		ck_assert_ptr_nonnull(c.keep_fat);
		c.keep_fat[0] = strdup(keep_fat);
		c.nkeep_fat = 1;
	}
	fatelf_diag_clear(&d);
	int r = engine_open(&c, NULL, 0, 0, &e, NULL, &d);
	ck_assert_msg(r == 0, "engine_open: %s", d.msg);
	engine_config_done(&c);
	install(e, "app.fatbundle");
	install(e, "shared.fatbundle");
	return e;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int hidden_found;
static int look_hidden(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (strncmp(path + ftw->base, ".fatelf.", 8) == 0)
		hidden_found++;
	return 0;
}

/* Checks that no staged temp is left behind, then removes the test dir. */
static void teardown(engine *e)
{
	char cwd[4096];

	engine_close(e);
	hidden_found = 0;
	ck_assert_int_eq(nftw("root", look_hidden, 16, FTW_PHYS), 0);
	ck_assert_int_eq(hidden_found, 0);
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir("/"), 0);
	nftw(cwd, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ helpers */

static const char *const fat_files[] = { "/opt/app/bin/prog", "/opt/app/bin/tool",
					 "/opt/shared/bin/prog2" };
static const char *const shipped[] = { "app/opt/app/bin/prog", "app/opt/app/bin/tool",
				       "shared/opt/shared/bin/prog2" };

static char *in_root(const char *path)
{
	static char buf[8][4096];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "root%s", path);
	return buf[i];
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	ck_assert_msg(stat(path, &st) == 0, "stat %s", path);
	return (uint64_t)st.st_size;
}

static void sha256_of(const char *path, char hex[65])
{
	size_t len;
	uint8_t *buf = tu_read_file(path, &len), md[32];
	fatelf_sha256 *h = fatelf_sha256_new();

	ck_assert_ptr_nonnull(buf);
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, md);
	fatelf_sha256_free(h);
	fatelf_hex(md, 32, hex);
	free(buf);
}

/* The state of the newest history row, as the store spells it. */
static const char *last_state(engine *e)
{
	store_tx *v = NULL;
	size_t n = 0;
	fatelf_diag d;
	const char *state;

	ck_assert_int_eq(store_tx_list(engine_store(e), &v, &n, &d), 0);
	ck_assert_uint_ge(n, 1);
	state = store_tx_state_to_text(v[n - 1].state);
	store_txs_free(v, n);
	return state;
}

static int history_rows(engine *e)
{
	store_tx *v = NULL;
	size_t n = 0;
	fatelf_diag d;

	ck_assert_int_eq(store_tx_list(engine_store(e), &v, &n, &d), 0);
	store_txs_free(v, n);
	return (int)n;
}

/* The host's native record of a shipped file, extracted by the offline
 * tool: what thinning to native must produce. */
static char *native_of(engine *e, const char *shipped_path, const char *out)
{
	fatelf_header hdr;
	fatelf_diag d;
	char name[FATELF_TARGET_NAME_MAX];
	int fd = fatelf_open_validated(shipped_path, &hdr, NULL, NULL, &d);

	ck_assert_int_ge(fd, 0);
	close(fd);
	int i = fatelf_host_select(engine_host(e), &hdr, &d);
	ck_assert_int_ge(i, 0);
	fatelf_target_format(&hdr.records[i].target, name);
	ck_assert_msg(fatelf_extract(out, shipped_path, name, &d) == 0, "%s", d.msg);
	return strdup(name);
}

struct kept {
	char target[8][FATELF_TARGET_NAME_MAX];
	int kept[8];
	uint64_t offset[8];
	unsigned n;
};

static void records_of(engine *e, const char *path, struct kept *k)
{
	store_record *v = NULL;
	size_t n = 0;
	fatelf_diag d;

	memset(k, 0, sizeof(*k));
	ck_assert_int_eq(store_records_of(engine_store(e), path, &v, &n, &d), 0);
	ck_assert_uint_ge(n, 1);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_lt(k->n, 8);
		fatelf_target_format(&v[i].target, k->target[k->n]);
		k->kept[k->n] = v[i].kept;
		k->offset[k->n] = v[i].offset;
		k->n++;
	}
	store_records_free(v, n);
}

static void flip_byte(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

/* ------------------------------------------------------------ thin */

START_TEST(test_thin_dry_run)
{
	engine *e = setup(NULL);
	engine_thin_opts o = { .policy = &native_spec, .dry_run = true };
	engine_result res = { 0 };
	uint8_t *before[3];
	size_t len[3];
	int64_t expect = 0;
	fatelf_diag d;

	for (int i = 0; i < 3; i++) {
		char out[64];
		snprintf(out, sizeof(out), "native%d", i);
		free(native_of(e, shipped[i], out));
		before[i] = tu_read_file(in_root(fat_files[i]), &len[i]);
		ck_assert_ptr_nonnull(before[i]);
		expect += (int64_t)len[i] - (int64_t)file_size(out);
	}
	int rows = history_rows(e);

	ck_assert_int_eq(engine_thin(e, &o, &res, &d), 0);
	ck_assert(res.dry_run);
	ck_assert_int_eq(res.txid, 0);
	ck_assert_str_eq(res.kind, "thin");
	ck_assert_uint_eq(res.files, 3);
	ck_assert_int_gt(expect, 0);
	ck_assert_int_eq(res.bytes_saved, expect);
	engine_result_done(&res);

	for (int i = 0; i < 3; i++) {
		store_file f;
		ck_assert(tu_file_equals(in_root(fat_files[i]), before[i], len[i]));
		ck_assert_int_eq(store_file_get(engine_store(e), fat_files[i], &f, NULL, &d), 1);
		ck_assert_int_eq(f.installed_form, STORE_FORM_AS_SHIPPED);
		ck_assert_uint_eq(f.installed_size, len[i]);
		store_file_done(&f);
		free(before[i]);
	}
	ck_assert_int_eq(history_rows(e), rows);
	teardown(e);
}
END_TEST

START_TEST(test_thin_native)
{
	engine *e = setup(NULL);
	engine_thin_opts o = { .policy = &native_spec };
	engine_result res = { 0 };
	int64_t expect = 0;
	uint64_t written = 0;
	char *host_target[3];
	fatelf_diag d;

	for (int i = 0; i < 3; i++) {
		char out[64];
		snprintf(out, sizeof(out), "native%d", i);
		host_target[i] = native_of(e, shipped[i], out);
		expect += (int64_t)file_size(in_root(fat_files[i])) - (int64_t)file_size(out);
		written += file_size(out);
	}
	int rows = history_rows(e);

	fatelf_diag_clear(&d);
	int r = engine_thin(e, &o, &res, &d);
	ck_assert_msg(r == 0, "%s: %s: %s", fatelf_error_name(r), d.subject, d.msg);
	ck_assert(!res.dry_run);
	ck_assert_int_gt(res.txid, 0);
	ck_assert_ptr_null(res.package);
	ck_assert_uint_eq(res.files, 3);
	ck_assert_int_eq(res.bytes_saved, expect);
	ck_assert_uint_eq(res.bytes_written, written);
	ck_assert_int_eq(history_rows(e), rows + 1);

	store_tx t;
	ck_assert_int_eq(store_tx_get(engine_store(e), res.txid, &t, &d), 1);
	ck_assert_int_eq(t.kind, STORE_TX_THIN);
	ck_assert_int_eq(t.state, STORE_TX_COMMITTED);
	ck_assert_int_eq(t.bytes_saved, expect);
	ck_assert_uint_eq(t.bytes_written, written);
	store_tx_done(&t);
	engine_result_done(&res);

	for (int i = 0; i < 3; i++) {
		char out[64], hex[65];
		struct stat st;
		store_file f;
		struct kept k;
		size_t len;

		snprintf(out, sizeof(out), "native%d", i);
		uint8_t *want = tu_read_file(out, &len);
		ck_assert(tu_file_equals(in_root(fat_files[i]), want, len));
		free(want);
		ck_assert_int_eq(lstat(in_root(fat_files[i]), &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0755);

		ck_assert_int_eq(store_file_get(engine_store(e), fat_files[i], &f, NULL, &d), 1);
		ck_assert_int_eq(f.installed_form, STORE_FORM_THINNED);
		ck_assert_uint_eq(f.installed_size, len);
		sha256_of(in_root(fat_files[i]), hex);
		ck_assert_str_eq(f.installed_sha256, hex);
		store_file_done(&f);

		/* The vendor's offsets stay; only the kept flags change. */
		records_of(e, fat_files[i], &k);
		for (unsigned j = 0; j < k.n; j++) {
			ck_assert_int_eq(k.kept[j], strcmp(k.target[j], host_target[i]) == 0);
			ck_assert_uint_ne(k.offset[j], 0);
		}
		free(host_target[i]);
	}
	/* Untouched: the data file. */
	ck_assert(tu_file_equals(in_root("/opt/app/share/data"), "some data\n", 10));

	/* verify agrees with the new hashes. */
	uint64_t problems = 99;
	ck_assert_int_eq(engine_verify(e, NULL, NULL, NULL, &problems, &d), 6);
	ck_assert_uint_eq(problems, 0);
	teardown(e);
}
END_TEST

START_TEST(test_thin_again_saves_nothing)
{
	engine *e = setup(NULL);
	engine_thin_opts o = { .policy = &native_spec };
	engine_result res = { 0 };
	struct stat before[3];
	fatelf_diag d;

	ck_assert_int_eq(engine_thin(e, &o, &res, &d), 0);
	engine_result_done(&res);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(lstat(in_root(fat_files[i]), &before[i]), 0);
	int rows = history_rows(e);

	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(engine_thin(e, &o, &res, &d), 0);
	ck_assert_uint_eq(res.files, 0);
	ck_assert_int_eq(res.bytes_saved, 0);
	ck_assert_uint_eq(res.bytes_written, 0);
	ck_assert_int_eq(res.txid, 0);
	engine_result_done(&res);
	ck_assert_int_eq(history_rows(e), rows);
	for (int i = 0; i < 3; i++) {
		struct stat st;
		ck_assert_int_eq(lstat(in_root(fat_files[i]), &st), 0);
		ck_assert_uint_eq(st.st_ino, before[i].st_ino);
	}
	teardown(e);
}
END_TEST

/* A package installed with policy keep whose program has no record this
 * host runs (aarch64 and riscv64; a per-arch entry of other architectures
 * is such a file): thinning the packages leaves it as it is, with its
 * rows, and thins the others' files; targets that name none of its
 * records leave it alone too. */
START_TEST(test_thin_no_record_left_as_installed)
{
	engine *e = setup(NULL);
	const char *in[] = { "fa.elf", "fr.elf" };
	const char *dirs[] = { "foreign", "foreign/opt", "foreign/opt/foreign",
			       "foreign/opt/foreign/bin" };
	char *targets[] = { "i386" };
	engine_policy_spec i386_spec = { .policy = ENGINE_POLICY_TARGETS, .ntargets = 1 };
	const char *pkgs[] = { "foreign", NULL };
	engine_thin_opts o = { .policy = &i386_spec, .packages = pkgs };
	engine_result res = { 0 };
	struct stat before, after;
	struct kept k;
	fatelf_diag d;
	uint8_t *tool;
	size_t len;
	int r;

	make_elf("fa.elf", EM_AARCH64, FATELF_CLASS64, 12000, 11);
	make_elf("fr.elf", EM_RISCV, FATELF_CLASS64, 13000, 12);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		ck_assert_int_eq(mkdir(dirs[i], 0755), 0);
	glue("foreign/opt/foreign/bin/tool", in, 2);
	ck_assert_int_eq(chmod("foreign/opt/foreign/bin/tool", 0755), 0);
	make_bundle("foreign", "foreign", "foreign.fatbundle");
	install(e, "foreign.fatbundle");
	tool = tu_read_file("foreign/opt/foreign/bin/tool", &len);
	ck_assert_ptr_nonnull(tool);
	ck_assert_int_eq(lstat(in_root("/opt/foreign/bin/tool"), &before), 0);
	int rows = history_rows(e);

	i386_spec.targets[0] = targets[0];
	fatelf_diag_clear(&d);
	r = engine_thin(e, &o, &res, &d);
	ck_assert_msg(r == 0, "%s: %s: %s", fatelf_error_name(r), d.subject, d.msg);
	ck_assert_uint_eq(res.files, 0);
	ck_assert_int_eq(res.txid, 0);
	engine_result_done(&res);
	ck_assert_int_eq(history_rows(e), rows);

	memset(&res, 0, sizeof(res));
	o = (engine_thin_opts) { .policy = &native_spec };
	fatelf_diag_clear(&d);
	r = engine_thin(e, &o, &res, &d);
	ck_assert_msg(r == 0, "%s: %s: %s", fatelf_error_name(r), d.subject, d.msg);
	ck_assert_uint_eq(res.files, 3);
	engine_result_done(&res);

	ck_assert(tu_file_equals(in_root("/opt/foreign/bin/tool"), tool, len));
	ck_assert_int_eq(lstat(in_root("/opt/foreign/bin/tool"), &after), 0);
	ck_assert_uint_eq(after.st_ino, before.st_ino);
	free(tool);
	records_of(e, "/opt/foreign/bin/tool", &k);
	ck_assert_uint_eq(k.n, 2);
	ck_assert_int_eq(k.kept[0] + k.kept[1], 2);
	uint64_t problems = 99;
	ck_assert_int_eq(engine_verify(e, NULL, NULL, NULL, &problems, &d), 7);
	ck_assert_uint_eq(problems, 0);
	teardown(e);
}
END_TEST

START_TEST(test_thin_targets_one_package)
{
	engine *e = setup(NULL);
	char *targets[] = { "x86_64", "i386" };
	engine_policy_spec spec = { .policy = ENGINE_POLICY_TARGETS, .ntargets = 2 };
	const char *pkgs[] = { "app", NULL };
	engine_thin_opts o = { .policy = &spec, .packages = pkgs };
	engine_result res = { 0 };
	fatelf_keepset keep;
	fatelf_header hdr;
	fatelf_diag d;
	size_t len, len2;

	spec.targets[0] = targets[0];
	spec.targets[1] = targets[1];
	uint8_t *prog2 = tu_read_file(in_root("/opt/shared/bin/prog2"), &len2);
	ck_assert_ptr_nonnull(prog2);

	fatelf_diag_clear(&d);
	int r = engine_thin(e, &o, &res, &d);
	ck_assert_msg(r == 0, "%s: %s: %s", fatelf_error_name(r), d.subject, d.msg);
	ck_assert_str_eq(res.package, "app");
	ck_assert_uint_eq(res.files, 2);
	engine_result_done(&res);

	/* prog keeps x86_64 and i386 as a 2-record FatELF, exactly what the
	 * offline thinner makes of the shipped file. */
	fatelf_keep_clear(&keep);
	fatelf_keep_add(&keep, 0);
	fatelf_keep_add(&keep, 1);
	ck_assert_msg(fatelf_thin("want-prog", shipped[0], &keep, FATELF_FORM_AUTO, &d) == 0, "%s",
		      d.msg);
	uint8_t *want = tu_read_file("want-prog", &len);
	ck_assert(tu_file_equals(in_root("/opt/app/bin/prog"), want, len));
	free(want);
	int fd = fatelf_open_validated(in_root("/opt/app/bin/prog"), &hdr, NULL, NULL, &d);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_eq(hdr.nrecords, 2);
	struct kept k;
	records_of(e, "/opt/app/bin/prog", &k);
	ck_assert_uint_eq(k.n, 3);
	ck_assert_int_eq(k.kept[0] + k.kept[1] + k.kept[2], 2);
	ck_assert_int_eq(k.kept[2], 0); /* aarch64 */

	/* tool had only x86_64 of the two: an ELF of that record. */
	ck_assert_msg(fatelf_extract("want-tool", shipped[1], "x86_64", &d) == 0, "%s", d.msg);
	want = tu_read_file("want-tool", &len);
	ck_assert(tu_file_equals(in_root("/opt/app/bin/tool"), want, len));
	free(want);

	/* The other package was not named. */
	ck_assert(tu_file_equals(in_root("/opt/shared/bin/prog2"), prog2, len2));
	free(prog2);

	uint64_t problems = 99;
	ck_assert_int_eq(engine_verify(e, "app", NULL, NULL, &problems, &d), 5);
	ck_assert_uint_eq(problems, 0);

	/* The same targets again: prog already holds exactly them, so it is
	 * left alone (same inode), and no history row is written. */
	struct stat before, after;
	int rows = history_rows(e);
	ck_assert_int_eq(lstat(in_root("/opt/app/bin/prog"), &before), 0);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(engine_thin(e, &o, &res, &d), 0);
	ck_assert_uint_eq(res.files, 0);
	ck_assert_int_eq(res.bytes_saved, 0);
	engine_result_done(&res);
	ck_assert_int_eq(lstat(in_root("/opt/app/bin/prog"), &after), 0);
	ck_assert_uint_eq(before.st_ino, after.st_ino);
	ck_assert_int_eq(history_rows(e), rows);
	teardown(e);
}
END_TEST

START_TEST(test_thin_keep_fat)
{
	engine *e = setup("/opt/shared/*");
	engine_thin_opts o = { .policy = &native_spec };
	engine_result res = { 0 };
	fatelf_diag d;
	store_file f;
	size_t len;

	ck_assert_int_eq(engine_thin(e, &o, &res, &d), 0);
	ck_assert_uint_eq(res.files, 2);
	engine_result_done(&res);
	uint8_t *want = tu_read_file(shipped[2], &len);
	ck_assert(tu_file_equals(in_root("/opt/shared/bin/prog2"), want, len));
	free(want);
	ck_assert_int_eq(store_file_get(engine_store(e), "/opt/shared/bin/prog2", &f, NULL, &d), 1);
	ck_assert_int_eq(f.installed_form, STORE_FORM_AS_SHIPPED);
	store_file_done(&f);
	ck_assert_int_eq(store_file_get(engine_store(e), "/opt/app/bin/prog", &f, NULL, &d), 1);
	ck_assert_int_eq(f.installed_form, STORE_FORM_THINNED);
	store_file_done(&f);
	teardown(e);
}
END_TEST

START_TEST(test_thin_tampered_record)
{
	engine *e = setup(NULL);
	engine_thin_opts o = { .policy = &native_spec };
	engine_result res = { 0 };
	fatelf_header hdr;
	fatelf_diag d;
	size_t len, tlen;

	/* Flip a byte near the end of the host's record of the installed prog. */
	int fd = fatelf_open_validated(in_root("/opt/app/bin/prog"), &hdr, NULL, NULL, &d);
	ck_assert_int_ge(fd, 0);
	close(fd);
	int i = fatelf_host_select(engine_host(e), &hdr, &d);
	ck_assert_int_ge(i, 0);
	flip_byte(in_root("/opt/app/bin/prog"), hdr.records[i].offset + hdr.records[i].size - 10);
	uint8_t *before = tu_read_file(in_root("/opt/app/bin/prog"), &len);
	uint8_t *tool = tu_read_file(in_root("/opt/app/bin/tool"), &tlen);
	int rows = history_rows(e);

	fatelf_diag_clear(&d);
	int r = engine_thin(e, &o, &res, &d);
	ck_assert_msg(r == -FATELF_E_RECORD_HASH, "%s: %s", fatelf_error_name(r), d.msg);
	ck_assert_str_eq(d.subject, "/opt/app/bin/prog");
	ck_assert_msg(strstr(d.msg, "vendor") != NULL, "%s", d.msg);

	/* Nothing changed: not the tampered file, not the other files of the
	 * transaction, not the store; the history says it failed. */
	ck_assert(tu_file_equals(in_root("/opt/app/bin/prog"), before, len));
	ck_assert(tu_file_equals(in_root("/opt/app/bin/tool"), tool, tlen));
	free(before);
	free(tool);
	for (int j = 0; j < 3; j++) {
		store_file f;
		ck_assert_int_eq(store_file_get(engine_store(e), fat_files[j], &f, NULL, &d), 1);
		ck_assert_int_eq(f.installed_form, STORE_FORM_AS_SHIPPED);
		store_file_done(&f);
	}
	ck_assert_int_eq(history_rows(e), rows + 1);
	ck_assert_str_eq(last_state(e), "failed");
	teardown(e);
}
END_TEST

static int cancel_at_second(const engine_progress *p, void *userdata)
{
	ck_assert_str_eq(p->phase, "thinning");
	return p->entries_done >= 1 ? -1 : 0;
}

START_TEST(test_thin_cancelled)
{
	engine *e = setup(NULL);
	engine_thin_opts o = { .policy = &native_spec, .progress = cancel_at_second };
	engine_result res = { 0 };
	uint8_t *before[3];
	size_t len[3];
	fatelf_diag d;

	for (int i = 0; i < 3; i++)
		before[i] = tu_read_file(in_root(fat_files[i]), &len[i]);
	ck_assert_int_eq(engine_thin(e, &o, &res, &d), -ECANCELED);
	ck_assert_str_eq(last_state(e), "cancelled");
	for (int i = 0; i < 3; i++) {
		ck_assert(tu_file_equals(in_root(fat_files[i]), before[i], len[i]));
		free(before[i]);
	}
	uint64_t problems = 99;
	ck_assert_int_eq(engine_verify(e, NULL, NULL, NULL, &problems, &d), 6);
	ck_assert_uint_eq(problems, 0);
	teardown(e);
}
END_TEST

/* ------------------------------------------------------------ verify */

struct problems {
	unsigned n;
	char path[16][128];
	char kind[16][16];
	char detail[16][256];
};

static int got_problem(const char *package, const char *path, int problem, const char *detail,
		       void *userdata)
{
	struct problems *p = userdata;

	ck_assert_uint_lt(p->n, 16);
	ck_assert(strcmp(package, "app") == 0 || strcmp(package, "shared") == 0);
	snprintf(p->path[p->n], sizeof(p->path[0]), "%s", path);
	snprintf(p->kind[p->n], sizeof(p->kind[0]), "%s", engine_problem_name(problem));
	snprintf(p->detail[p->n], sizeof(p->detail[0]), "%s", detail);
	p->n++;
	return 0;
}

/* The detail of the problem of that kind about path, or NULL. */
static const char *find_problem(const struct problems *p, const char *path, const char *kind)
{
	for (unsigned i = 0; i < p->n; i++)
		if (strcmp(p->path[i], path) == 0 && strcmp(p->kind[i], kind) == 0)
			return p->detail[i];
	return NULL;
}

START_TEST(test_verify_detects)
{
	engine *e = setup(NULL);
	struct problems p = { 0 };
	uint64_t problems = 99;
	fatelf_diag d;

	ck_assert_int_eq(engine_verify(e, NULL, got_problem, &p, &problems, &d), 6);
	ck_assert_uint_eq(problems, 0);
	ck_assert_uint_eq(p.n, 0);

	flip_byte(in_root("/opt/app/share/data"), 3);
	ck_assert_int_eq(unlink(in_root("/opt/app/bin/tool")), 0);
	ck_assert_int_eq(chmod(in_root("/opt/app/bin/prog"), 0700), 0);
	ck_assert_int_eq(unlink(in_root("/opt/app/lib/libx.so")), 0);
	ck_assert_int_eq(symlink("elsewhere", in_root("/opt/app/lib/libx.so")), 0);
	/* An admin's change to a config file is no problem. */
	tu_write_file(in_root("/etc/app.conf"), "volume=11\n", 10);
	ck_assert_int_eq(chmod(in_root("/etc/app.conf"), 0640), 0);

	/* Read-only, as a query connection next to the writer. */
	engine_config c;
	engine *ro = NULL;
	char cwd[4096];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	engine_config_init(&c);
	free(c.root);
	free(c.state_dir);
	ck_assert_int_gt(asprintf(&c.root, "%s/root", cwd), 0);
	ck_assert_int_gt(asprintf(&c.state_dir, "%s/state", cwd), 0);
	ck_assert_int_eq(engine_open(&c, NULL, 0, ENGINE_OPEN_READONLY, &ro, NULL, &d), 0);
	engine_config_done(&c);

	ck_assert_int_eq(engine_verify(ro, NULL, got_problem, &p, &problems, &d), 6);
	ck_assert_uint_eq(problems, 4);
	ck_assert_uint_eq(p.n, 4);
	ck_assert_str_eq(find_problem(&p, "/opt/app/share/data", "content"), "sha256 differs");
	ck_assert_str_eq(find_problem(&p, "/opt/app/bin/tool", "missing"), "no such file");
	ck_assert_str_eq(find_problem(&p, "/opt/app/bin/prog", "mode"),
			 "expected mode 0755, found 0700");
	ck_assert_str_eq(find_problem(&p, "/opt/app/lib/libx.so", "type"),
			 "expected a symlink to libx.so.1, found one to elsewhere");

	/* One package only. */
	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(engine_verify(ro, "shared", got_problem, &p, &problems, &d), 1);
	ck_assert_uint_eq(problems, 0);
	ck_assert_int_eq(engine_verify(ro, "nosuch", got_problem, &p, &problems, &d),
			 -ENGINE_E_NOT_INSTALLED);
	engine_close(ro);

	ck_assert_str_eq(engine_problem_name(ENGINE_PROBLEM_RECORD), "record");
	teardown(e);
}
END_TEST

START_TEST(test_verify_thinned_record)
{
	engine *e = setup(NULL);
	char *targets[] = { "x86_64", "i386" };
	engine_policy_spec spec = { .policy = ENGINE_POLICY_TARGETS, .ntargets = 2 };
	engine_thin_opts o = { .policy = &spec };
	engine_result res = { 0 };
	struct problems p = { 0 };
	uint64_t problems = 99;
	fatelf_header hdr;
	fatelf_diag d;

	spec.targets[0] = targets[0];
	spec.targets[1] = targets[1];
	ck_assert_int_eq(engine_thin(e, &o, &res, &d), 0);
	ck_assert_uint_eq(res.files, 3);
	engine_result_done(&res);
	ck_assert_int_eq(engine_verify(e, NULL, got_problem, &p, &problems, &d), 6);
	ck_assert_uint_eq(problems, 0);

	/* The i386 record of the thinned 2-record prog, and the thinned ELF tool. */
	int fd = fatelf_open_validated(in_root("/opt/app/bin/prog"), &hdr, NULL, NULL, &d);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_eq(hdr.nrecords, 2);
	ck_assert_uint_eq(hdr.records[1].target.machine, EM_386);
	flip_byte(in_root("/opt/app/bin/prog"), hdr.records[1].offset + hdr.records[1].size - 5);
	flip_byte(in_root("/opt/app/bin/tool"), file_size(in_root("/opt/app/bin/tool")) - 5);

	ck_assert_int_eq(engine_verify(e, NULL, got_problem, &p, &problems, &d), 6);
	ck_assert_uint_eq(problems, 4);
	ck_assert_str_eq(find_problem(&p, "/opt/app/bin/prog", "content"), "sha256 differs");
	ck_assert_str_eq(find_problem(&p, "/opt/app/bin/prog", "record"),
			 "record i386:32bits:le:sysv:osabiver0 differs from the vendor's");
	ck_assert_ptr_nonnull(find_problem(&p, "/opt/app/bin/tool", "content"));
	ck_assert_str_eq(find_problem(&p, "/opt/app/bin/tool", "record"),
			 "record x86_64:64bits:le:sysv:osabiver0 differs from the vendor's");
	teardown(e);
}
END_TEST

static Suite *engine_thin_suite(void)
{
	Suite *s = suite_create("engine_thin");
	TCase *tc = tcase_create("thin");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_thin_dry_run);
	tcase_add_test(tc, test_thin_native);
	tcase_add_test(tc, test_thin_again_saves_nothing);
	tcase_add_test(tc, test_thin_targets_one_package);
	tcase_add_test(tc, test_thin_no_record_left_as_installed);
	tcase_add_test(tc, test_thin_keep_fat);
	tcase_add_test(tc, test_thin_tampered_record);
	tcase_add_test(tc, test_thin_cancelled);
	suite_add_tcase(s, tc);

	tc = tcase_create("verify");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_verify_detects);
	tcase_add_test(tc, test_verify_thinned_record);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(engine_thin_suite());
}
