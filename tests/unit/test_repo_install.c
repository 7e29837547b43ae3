/*
 * Unit tests for installs from a repository's objects (fatelf_repo_read
 * driving the install engine): the installed tree equals a bundle
 * install of the same package under each policy, a native install asks
 * for one record of a two-record FatELF file and nothing else, an
 * upgrade asks only for the objects that changed, and a corrupt object
 * or a manifest signed by an untrusted key leaves nothing installed. The
 * reader's clone offer: a consumer's clone that holds other bytes is
 * dropped and the bytes come through data; one that holds the object's
 * is taken without reading the object.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "elfgen.h"
#include "engine_private.h"
#include "hex.h"
#include "macro.h"
#include "repo.h"
#include "testutil.h"

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img x86, arm, fat;
static fatelf_ms_seckey sk, other_sk;
static fatelf_ms_pubkey pk, other_pk;
static char top[PATH_MAX];

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

static void setup(void)
{
	elfgen_image imgs[2];

	snprintf(top, sizeof(top), "%s", tu_tmpdir());
	x86 = make_img(62, 9000, 1);
	arm = make_img(183, 12000, 2);
	imgs[0] = (elfgen_image){ .data = x86.buf, .len = x86.len };
	imgs[1] = (elfgen_image){ .data = arm.buf, .len = arm.len };
	fat.buf = elfgen_fat(imgs, 2, &fat.len, NULL);
	ck_assert_ptr_nonnull(fat.buf);
	tu_key_from_seed(0x31, 13, 0x50, &sk, &pk);
	tu_key_from_seed(0x66, 13, 0xa0, &other_sk, &other_pk);
}

static void teardown(void)
{
	free(x86.buf);
	free(arm.buf);
	free(fat.buf);
	x86.buf = arm.buf = fat.buf = NULL;
}

static void put(const char *tree, const char *rel, const void *buf, size_t len, mode_t mode)
{
	char path[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	tu_write_file(path, buf, len);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void dir(const char *tree, const char *rel)
{
	char path[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* Version v of "tool": a FatELF program, 40 data files (file 7 differs
 * in version 2), a symlink and a config file. */
static const char *tool_bundle(int v, const fatelf_ms_seckey *key)
{
	static char out[4][64];
	char tree[64], name[160], text[128];
	fatelf_bundle_create_opts o = { .name = "tool", .version = v == 1 ? "1.0" : "2.0", .summary = "a tool",
					.sign_key = key };
	fatelf_diag d;
	int fd;

	snprintf(tree, sizeof(tree), "tree-%d-%s", v, key == &sk ? "sk" : "other");
	snprintf(out[v + (key == &sk ? 0 : 2) - 1], sizeof(out[0]), "tool-%d-%s.fatbundle", v,
		 key == &sk ? "sk" : "other");
	if (access(out[v + (key == &sk ? 0 : 2) - 1], F_OK) == 0)
		return out[v + (key == &sk ? 0 : 2) - 1];
	ck_assert_int_eq(mkdir(tree, 0755), 0);
	dir(tree, "opt");
	dir(tree, "opt/tool");
	dir(tree, "opt/tool/bin");
	dir(tree, "opt/tool/share");
	dir(tree, "etc");
	put(tree, "opt/tool/bin/tool", fat.buf, fat.len, 0755);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "opt/tool/share/f%02d", i);
		snprintf(text, sizeof(text), "file %d of the tool, version %d\n", i, i == 7 ? v : 1);
		put(tree, name, text, strlen(text), 0644);
	}
	put(tree, "etc/tool.conf", "a=1\n", 4, 0644);
	snprintf(name, sizeof(name), "%s/opt/tool/bin/t", tree);
	ck_assert_int_eq(symlink("tool", name), 0);
	fd = open(out[v + (key == &sk ? 0 : 2) - 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create(tree, fd, &o, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	return out[v + (key == &sk ? 0 : 2) - 1];
}

/* A repository "repo" holding the given bundles. */
static fatelf_repo_dir *make_repo(const char *const *bundles, size_t n)
{
	fatelf_repo_dir *r = NULL;
	fatelf_diag d;

	if (access("repo/index", F_OK) != 0)
		ck_assert_msg(fatelf_repo_init("repo", NULL, 1000, &d) == 0, "init: %s", d.msg);
	ck_assert_msg(fatelf_repo_open("repo", true, NULL, 0, &r, &d) == 0, "open: %s", d.msg);
	for (size_t i = 0; i < n; i++) {
		fatelf_bundle_read_opts ro = { 0 };
		fatelf_repo_add_result res;
		int fd = open(bundles[i], O_RDONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_msg(fatelf_repo_add_bundle(r, r->index, fd, &ro, &res, &d) == 0, "add: %s", d.msg);
		close(fd);
	}
	ck_assert_msg(fatelf_repo_publish(r, r->index, NULL, 2000, 0, &d) == 0, "publish: %s", d.msg);
	return r;
}

/* The object source over the repository, counting what it is asked. */
struct counting {
	const fatelf_repo_dir *r;
	unsigned calls, fetch_calls;
	uint64_t bytes;
	uint8_t asked[64][32];
};

static int count_object(void *ctx, const uint8_t sha[32], uint64_t size,
			int (*data)(void *dctx, const void *buf, size_t len), void *dctx, fatelf_diag *d)
{
	struct counting *c = ctx;

	if (c->calls < 64)
		memcpy(c->asked[c->calls], sha, 32);
	c->calls++;
	c->bytes += size;
	return fatelf_repo_read_object(c->r, sha, size, data, dctx, NULL, d);
}

static engine *open_engine(const char *name, const char *policy)
{
	engine_config c;
	engine *e = NULL;
	fatelf_diag d;
	char path[PATH_MAX + 64];
	int q;

	engine_config_init(&c);
	free(c.root);
	free(c.state_dir);
	free(c.trusted_keys);
	c.trusted_keys = NULL;
	snprintf(path, sizeof(path), "%s/%s-root", top, name);
	ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
	c.root = strdup(path);
	snprintf(path, sizeof(path), "%s/%s-state", top, name);
	c.state_dir = strdup(path);
	c.ldconfig = false;
	c.durable = false;
	c.require_signature = true;
	if (policy) {
		engine_policy_spec_done(&c.policy);
		ck_assert_int_eq(engine_policy_spec_parse(policy, &c.policy, &d), 0);
	}
	q = engine_open(&c, &pk, 1, 0, &e, NULL, &d);
	ck_assert_msg(q == 0, "engine_open: %s", d.msg);
	engine_config_done(&c);
	return e;
}

/* The fetcher over the repository: fetch marks objects as downloaded,
 * and object reads only those, so a plan that missed one fails. */
struct fetcher {
	const fatelf_repo_dir *r;
	struct counting *count;
	unsigned fetch_calls;
	uint8_t (*got)[32];
	size_t ngot;
};

static int f_fetch(void *ctx, const fatelf_repo_object *objs, size_t n, fatelf_diag *d)
{
	struct fetcher *f = ctx;

	(void)d;
	f->fetch_calls++;
	f->got = realloc(f->got, (f->ngot + n) * 32);
	ck_assert_ptr_nonnull(f->got);
	for (size_t i = 0; i < n; i++) {
		memcpy(f->got[f->ngot++], objs[i].sha256, 32);
		f->count->bytes += objs[i].csize;
	}
	return 0;
}

static int f_object(void *ctx, const uint8_t sha[32], uint64_t size, int (*data)(void *, const void *, size_t),
		    void *dctx, fatelf_diag *d)
{
	struct fetcher *f = ctx;
	bool got = false;

	for (size_t i = 0; i < f->ngot && !got; i++)
		got = memcmp(f->got[i], sha, 32) == 0;
	ck_assert_msg(got, "an object was read that was not fetched");
	return count_object(f->count, sha, size, data, dctx, d);
}

static int install_repo_opts(engine *e, const fatelf_repo_dir *r, const char *name, const char *version,
			     struct counting *count, engine_repo_stats *stats, const engine_install_opts *o,
			     fatelf_diag *d)
{
	const fatelf_repo_package *p = fatelf_repo_index_find(r->index, name);
	const fatelf_repo_version *v = p ? fatelf_repo_package_version(p, version) : NULL;
	struct fetcher f = { .r = r, .count = count };
	engine_repo_fetch fe = { .fetch = f_fetch, .object = f_object, .ctx = &f };
	engine_repo_version rv = { 0 };
	char rel[FATELF_REPO_MANIFEST_PATH_MAX];
	char *json = NULL, *sig = NULL;
	fatelf_repo_pack *pack = NULL;
	engine_result res;
	int q;

	ck_assert_ptr_nonnull(v);
	count->r = r;
	fatelf_repo_manifest_path(v->manifest, false, rel);
	ck_assert_int_eq(fatelf_repo_read_file(r, rel, FATELF_MANIFEST_MAX, &json, &rv.manifest_len, d), 0);
	if (v->signed_manifest) {
		fatelf_repo_manifest_path(v->manifest, true, rel);
		ck_assert_int_eq(fatelf_repo_read_file(r, rel, FATELF_REPO_SIG_MAX, &sig, &rv.sig_len, d), 0);
	}
	ck_assert_int_eq(fatelf_repo_load_pack(r, v, NULL, &pack, d), 0);
	rv.manifest = json;
	rv.sig = sig;
	rv.pack = pack;
	q = engine_install_repo(e, &rv, &fe, o, stats, &res, d);
	if (q == 0)
		engine_result_done(&res);
	count->fetch_calls = f.fetch_calls;
	free(f.got);
	fatelf_repo_pack_free(pack);
	free(json);
	free(sig);
	return q;
}

static int install_repo(engine *e, const fatelf_repo_dir *r, const char *version, struct counting *count,
			fatelf_diag *d)
{
	engine_repo_stats stats;

	return install_repo_opts(e, r, "tool", version, count, &stats, NULL, d);
}

static void install_bundle(engine *e, const char *bundle)
{
	fatelf_reader src;
	engine_result res;
	fatelf_diag d;
	int fd = open(bundle, O_RDONLY | O_CLOEXEC), q;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_reader_fd(&src, fd, NULL), 0);
	q = engine_install(e, &src, NULL, &res, &d);
	ck_assert_msg(q == 0, "install %s: %s", bundle, d.msg);
	engine_result_done(&res);
	fatelf_reader_close(&src);
	close(fd);
}

/* Every path under a and b: same type, mode and bytes (the state dirs
 * are elsewhere). */
static void same_tree(const char *a, const char *b)
{
	char cmd[10 * PATH_MAX];

	snprintf(cmd, sizeof(cmd),
		 "cd '%s/%s' && find . -printf '%%p %%y %%m %%l\\n' | sort > '%s/tree-a' && "
		 "cd '%s/%s' && find . -printf '%%p %%y %%m %%l\\n' | sort > '%s/tree-b' && "
		 "cmp -s '%s/tree-a' '%s/tree-b' && diff -r '%s/%s' '%s/%s' >/dev/null",
		 top, a, top, top, b, top, top, top, top, a, top, b);
	ck_assert_msg(system(cmd) == 0, "trees differ: %s %s", a, b);
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

static bool asked(const struct counting *c, const uint8_t sha[32])
{
	for (unsigned i = 0; i < c->calls && i < 64; i++)
		if (memcmp(c->asked[i], sha, 32) == 0)
			return true;
	return false;
}

static void sha_of(const void *buf, size_t len, uint8_t out[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();

	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, out);
	fatelf_sha256_free(h);
}

START_TEST(test_native_equals_bundle)
{
	const char *b1 = tool_bundle(1, &sk);
	fatelf_repo_dir *r = make_repo(&b1, 1);
	engine *viarepo = open_engine("repo", "native"), *viabundle = open_engine("bundle", "native");
	struct counting c = { 0 };
	uint8_t xs[32], as[32];
	fatelf_diag d;
	int q;

	install_bundle(viabundle, b1);
	q = install_repo(viarepo, r, "1.0", &c, &d);
	ck_assert_msg(q == 0, "repo install: %s: %s", fatelf_error_name(q), d.msg);
	same_tree("repo-root", "bundle-root");
	/* 40 data files, the config, and one record of the FatELF: the x86_64 one */
	ck_assert_uint_eq(c.calls, 42);
	sha_of(x86.buf, x86.len, xs);
	sha_of(arm.buf, arm.len, as);
	ck_assert(asked(&c, xs) || c.calls > 64);
	ck_assert(!asked(&c, as));
	ck_assert(tu_file_equals("repo-root/opt/tool/bin/tool", x86.buf, x86.len));
	engine_close(viarepo);
	engine_close(viabundle);
	fatelf_repo_close(r);
}
END_TEST

START_TEST(test_keep_rebuilds_fat)
{
	const char *b1 = tool_bundle(1, &sk);
	fatelf_repo_dir *r = make_repo(&b1, 1);
	engine *viarepo = open_engine("repo", "keep"), *viabundle = open_engine("bundle", "keep");
	struct counting c = { 0 };
	fatelf_diag d;
	int q;

	install_bundle(viabundle, b1);
	q = install_repo(viarepo, r, "1.0", &c, &d);
	ck_assert_msg(q == 0, "repo install: %s: %s", fatelf_error_name(q), d.msg);
	same_tree("repo-root", "bundle-root");
	ck_assert(tu_file_equals("repo-root/opt/tool/bin/tool", fat.buf, fat.len));
	/* both records, 41 other files, the frame is canonical */
	ck_assert_uint_eq(c.calls, 43);
	engine_close(viarepo);
	engine_close(viabundle);
	fatelf_repo_close(r);
}
END_TEST

START_TEST(test_upgrade_asks_changed_only)
{
	const char *b[2] = { tool_bundle(1, &sk), tool_bundle(2, &sk) };
	fatelf_repo_dir *r = make_repo(b, 2);
	engine *e = open_engine("repo", "native");
	struct counting c1 = { 0 }, c2 = { 0 };
	fatelf_diag d;
	int q;

	q = install_repo(e, r, "1.0", &c1, &d);
	ck_assert_msg(q == 0, "install: %s", d.msg);
	q = install_repo(e, r, "2.0", &c2, &d);
	ck_assert_msg(q == 0, "upgrade: %s: %s", fatelf_error_name(q), d.msg);
	/* only opt/tool/share/f07 changed */
	ck_assert_uint_eq(c2.calls, 1);
	ck_assert(tu_file_equals("repo-root/opt/tool/share/f07", "file 7 of the tool, version 2\n", 30));
	engine_close(e);
	fatelf_repo_close(r);
}
END_TEST

static void flip_object(const uint8_t sha[32])
{
	char rel[FATELF_REPO_OBJECT_PATH_MAX], path[PATH_MAX + 128];
	uint8_t *buf;
	size_t len;

	fatelf_repo_object_path(sha, rel);
	snprintf(path, sizeof(path), "repo/%s", rel);
	buf = tu_read_file(path, &len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_gt(len, 20);
	buf[len / 2] ^= 0x40;
	tu_write_file(path, buf, len);
	free(buf);
}

START_TEST(test_corrupt_object_installs_nothing)
{
	const char *b1 = tool_bundle(1, &sk);
	fatelf_repo_dir *r = make_repo(&b1, 1);
	engine *e = open_engine("repo", "native");
	struct counting c = { 0 };
	uint8_t xs[32];
	fatelf_diag d;
	struct stat st;
	int q;

	sha_of(x86.buf, x86.len, xs);
	flip_object(xs);
	q = install_repo(e, r, "1.0", &c, &d);
	ck_assert_int_eq(q, -FATELF_E_REPO_OBJECT);
	ck_assert_ptr_nonnull(strstr(d.msg, "objects/"));
	ck_assert_int_eq(lstat("repo-root/opt", &st), -1);
	ck_assert(!package_installed(e, "tool"));
	engine_close(e);
	fatelf_repo_close(r);
}
END_TEST

START_TEST(test_untrusted_signer_refused)
{
	const char *b1 = tool_bundle(1, &other_sk);
	fatelf_repo_dir *r = make_repo(&b1, 1);
	engine *e = open_engine("repo", "native");
	struct counting c = { 0 };
	fatelf_diag d;
	struct stat st;
	int q;

	q = install_repo(e, r, "1.0", &c, &d);
	ck_assert_int_eq(q, -FATELF_E_SIG_KEY);
	ck_assert_uint_eq(c.calls, 0);
	ck_assert_int_eq(lstat("repo-root/opt", &st), -1);
	engine_close(e);
	fatelf_repo_close(r);
}
END_TEST

START_TEST(test_local_copy_and_dry_run)
{
	const char *b1 = tool_bundle(1, &sk);
	fatelf_bundle_create_opts o = { .name = "copy", .version = "1", .sign_key = &sk };
	const char *bundles[2] = { b1, "copy.fatbundle" };
	fatelf_repo_dir *r;
	engine *e;
	struct counting c = { 0 }, c2 = { 0 };
	engine_repo_stats st, dry;
	engine_install_opts dry_opts = { .dry_run = true };
	fatelf_diag d;
	int fd, q;

	/* "copy" holds one file with the bytes of tool's f03, and one new */
	ck_assert_int_eq(mkdir("tree-copy", 0755), 0);
	dir("tree-copy", "srv");
	put("tree-copy", "srv/same", "file 3 of the tool, version 1\n", 30, 0644);
	put("tree-copy", "srv/new", "only here\n", 10, 0644);
	fd = open("copy.fatbundle", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create("tree-copy", fd, &o, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	r = make_repo(bundles, 2);
	e = open_engine("repo", "native");
	q = install_repo(e, r, "1.0", &c, &d);
	ck_assert_msg(q == 0, "install: %s", d.msg);
	/* dry run: what it would fetch, and nothing fetched */
	q = install_repo_opts(e, r, "copy", "1", &c2, &dry, &dry_opts, &d);
	ck_assert_msg(q == 0, "dry run: %s", d.msg);
	ck_assert_uint_eq(dry.objects, 2);
	ck_assert_uint_eq(dry.local, 1);
	ck_assert_uint_eq(dry.fetched, 1);
	ck_assert_uint_gt(dry.fetch_bytes, 0);
	ck_assert_uint_eq(c2.fetch_calls, 0);
	ck_assert_uint_eq(c2.calls, 0);
	ck_assert_int_eq(access("repo-root/srv", F_OK), -1);
	/* the install: the same figures, one fetch of one object */
	q = install_repo_opts(e, r, "copy", "1", &c2, &st, NULL, &d);
	ck_assert_msg(q == 0, "install copy: %s", d.msg);
	ck_assert_uint_eq(st.local, 1);
	ck_assert_uint_eq(st.fetched, 1);
	ck_assert_uint_eq(st.fetch_bytes, dry.fetch_bytes);
	ck_assert_uint_eq(c2.fetch_calls, 1);
	ck_assert_uint_eq(c2.bytes - 0, st.fetch_bytes + 10);
	ck_assert(tu_file_equals("repo-root/srv/same", "file 3 of the tool, version 1\n", 30));
	ck_assert(tu_file_equals("repo-root/srv/new", "only here\n", 10));
	engine_close(e);
	fatelf_repo_close(r);
}
END_TEST

START_TEST(test_changed_local_copy_is_fetched)
{
	const char *b1 = tool_bundle(1, &sk);
	fatelf_bundle_create_opts o = { .name = "copy", .version = "1", .sign_key = &sk };
	const char *bundles[2] = { b1, "copy.fatbundle" };
	fatelf_repo_dir *r;
	engine *e;
	struct counting c = { 0 }, c2 = { 0 };
	engine_repo_stats st;
	fatelf_diag d;
	int fd, q;

	ck_assert_int_eq(mkdir("tree-copy", 0755), 0);
	dir("tree-copy", "srv");
	put("tree-copy", "srv/same", "file 3 of the tool, version 1\n", 30, 0644);
	fd = open("copy.fatbundle", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create("tree-copy", fd, &o, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	r = make_repo(bundles, 2);
	e = open_engine("repo", "native");
	q = install_repo(e, r, "1.0", &c, &d);
	ck_assert_msg(q == 0, "install: %s", d.msg);
	/* the admin changed the installed copy (same size): it is not used */
	tu_write_file("repo-root/opt/tool/share/f03", "FILE 3 of the tool, version 1\n", 30);
	q = install_repo_opts(e, r, "copy", "1", &c2, &st, NULL, &d);
	ck_assert_msg(q == 0, "install copy: %s", d.msg);
	ck_assert_uint_eq(st.local, 0);
	ck_assert_uint_eq(st.fetched, 1);
	ck_assert(tu_file_equals("repo-root/srv/same", "file 3 of the tool, version 1\n", 30));
	engine_close(e);
	fatelf_repo_close(r);
}
END_TEST

/* Changes the installed copy once the second pass over it has handed on
 * its first MiB (the engine reports progress each MiB it stages). */
struct midway {
	const char *path;
	bool done;
};

static int change_midway(const engine_progress *p, void *userdata)
{
	struct midway *m = userdata;

	if (!m->done && p->bytes_done >= (1u << 20) && p->path && strcmp(p->path, "/srv/copy") == 0) {
		int fd = open(m->path, O_WRONLY | O_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, "X", 1, (3u << 20) - 10), 1);
		close(fd);
		m->done = true;
	}
	return 0;
}

START_TEST(test_local_copy_changed_midway_fails)
{
	fatelf_bundle_create_opts ob = { .name = "big", .version = "1", .sign_key = &sk };
	fatelf_bundle_create_opts oc = { .name = "copy", .version = "1", .sign_key = &sk };
	const char *bundles[2] = { "big.fatbundle", "copy.fatbundle" };
	struct midway m = { .path = "repo-root/srv/big" };
	engine_install_opts io = { .progress = change_midway, .userdata = &m };
	size_t len = 3u << 20;
	uint8_t *bytes = malloc(len);
	struct counting c = { 0 }, c2 = { 0 };
	engine_repo_stats st;
	fatelf_repo_dir *r;
	struct statfs fs;
	bool clones;
	engine *e;
	fatelf_diag d;
	int fd, q;

	ck_assert_ptr_nonnull(bytes);
	for (size_t i = 0; i < len; i++)
		bytes[i] = (uint8_t)(i * 2654435761u >> 13);
	ck_assert_int_eq(mkdir("tree-big", 0755), 0);
	dir("tree-big", "srv");
	put("tree-big", "srv/big", bytes, len, 0644);
	ck_assert_int_eq(mkdir("tree-copy", 0755), 0);
	dir("tree-copy", "srv");
	put("tree-copy", "srv/copy", bytes, len, 0644);
	fd = open("big.fatbundle", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fatelf_bundle_create("tree-big", fd, &ob, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	fd = open("copy.fatbundle", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fatelf_bundle_create("tree-copy", fd, &oc, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	r = make_repo(bundles, 2);
	e = open_engine("repo", "native");
	q = install_repo_opts(e, r, "big", "1", &c, &st, NULL, &d);
	ck_assert_msg(q == 0, "install big: %s", d.msg);
	ck_assert_int_eq(statfs("repo-root", &fs), 0);
	/* XFS and btrfs clone: the staged copy is not touched by the change */
	clones = fs.f_type == 0x58465342 || fs.f_type == 0x9123683e;
	q = install_repo_opts(e, r, "copy", "1", &c2, &st, &io, &d);
	if (clones) {
		ck_assert_msg(q == 0, "install copy: %s", d.msg);
		ck_assert_uint_eq(st.cloned, 1);
		ck_assert(tu_file_equals("repo-root/srv/copy", bytes, len));
	} else {
		/* bytes were handed on already: no fetch after them, a clear
		 * error and nothing installed */
		ck_assert(m.done);
		ck_assert_int_eq(q, -ESTALE);
		ck_assert_msg(strstr(d.msg, "/srv/big changed while it was read as object"), "%s", d.msg);
		ck_assert_uint_eq(c2.calls, 0);
		ck_assert_int_eq(access("repo-root/srv/copy", F_OK), -1);
		ck_assert(!package_installed(e, "copy"));
		ck_assert_uint_eq(st.cloned, 0);
	}
	free(bytes);
	engine_close(e);
	fatelf_repo_close(r);
}
END_TEST

/* A consumer that stages each file into memory, and takes a clone offer
 * by copying the offered file into a temp file of its own, corrupted
 * when told to (as a file changed after the clone would be). */
struct cloner {
	bool corrupt;
	unsigned offers, drops, begins;
	int staged;                     /* the temp file of the last clone */
	uint8_t *buf;                   /* the entry's bytes through data */
	size_t len;
	char path[64];                  /* the entry they belong to */
	uint8_t same[64];               /* srv/same as the reader gave it */
	size_t same_len;
};

static int cl_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct cloner *c = ctx;

	(void)d;
	c->begins++;
	c->len = 0;
	snprintf(c->path, sizeof(c->path), "%s", e->path);
	return 0;
}

static int cl_data(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len)
{
	struct cloner *c = ctx;

	(void)e;
	c->buf = realloc(c->buf, c->len + len);
	ck_assert_ptr_nonnull(c->buf);
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	return 0;
}

static int cl_end(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d)
{
	struct cloner *c = ctx;

	(void)d;
	if (c->staged >= 0) {
		/* a clone the reader kept: its bytes are the entry's */
		c->buf = realloc(c->buf, 256);
		ck_assert_ptr_nonnull(c->buf);
		c->len = (size_t)pread(c->staged, c->buf, 256, 0);
		close(c->staged);
		c->staged = -1;
	}
	if (status == 0 && strcmp(e->path, "srv/same") == 0 && c->len <= sizeof(c->same)) {
		memcpy(c->same, c->buf, c->len);
		c->same_len = c->len;
	}
	return 0;
}

static int cl_clone(void *ctx, const fatelf_bundle_entry *e, int fd, uint64_t len, fatelf_diag *d)
{
	struct cloner *c = ctx;
	uint8_t buf[256];
	ssize_t n;

	(void)e;
	(void)d;
	if (fd < 0) {
		c->drops++;
		ck_assert_int_ge(c->staged, 0);
		close(c->staged);
		c->staged = -1;
		return 0;
	}
	c->offers++;
	ck_assert_uint_le(len, sizeof(buf));
	n = pread(fd, buf, sizeof(buf), 0);
	ck_assert_int_eq(n, (ssize_t)len);
	if (c->corrupt)
		buf[0] ^= 0x20;
	c->staged = open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	ck_assert_int_ge(c->staged, 0);
	ck_assert_int_eq(pwrite(c->staged, buf, len, 0), (ssize_t)len);
	return fcntl(c->staged, F_DUPFD_CLOEXEC, 3);
}

/* The source: the repository's objects, and "installed" copies (files in
 * the test's directory named by their hash's hex). */
struct local_src {
	struct counting count;
	unsigned local_calls, cloned_calls;
};

static int ls_object(void *ctx, const uint8_t sha[32], uint64_t size,
		     int (*data)(void *dctx, const void *buf, size_t len), void *dctx, fatelf_diag *d)
{
	struct local_src *l = ctx;

	return count_object(&l->count, sha, size, data, dctx, d);
}

static int ls_local(void *ctx, const uint8_t sha[32], uint64_t size)
{
	struct local_src *l = ctx;
	char hex[65];
	int fd;

	(void)size;
	l->local_calls++;
	fatelf_hex(sha, 32, hex);
	fd = open(hex, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void ls_cloned(void *ctx, const uint8_t sha[32], uint64_t size)
{
	struct local_src *l = ctx;

	(void)sha;
	(void)size;
	l->cloned_calls++;
}

/* Reads version "1" of "copy" (srv/same, whose bytes a local file
 * holds, and srv/new, which none does) with the cloning consumer. */
static void read_copy_cloning(struct cloner *cl, struct local_src *ls)
{
	static const char same[] = "the same bytes as an installed file\n";
	fatelf_bundle_create_opts o = { .name = "copy", .version = "1", .sign_key = &sk };
	const char *bundles[1] = { "copy.fatbundle" };
	fatelf_bundle_reader_ops ops = { .begin = cl_begin, .data = cl_data, .end = cl_end, .clone = cl_clone,
					 .ctx = cl };
	fatelf_repo_source src = { .object = ls_object, .local = ls_local, .cloned = ls_cloned, .ctx = ls };
	fatelf_bundle_read_opts ro = { .keys = &pk, .nkeys = 1, .require_signature = true };
	const fatelf_repo_package *p;
	fatelf_repo_dir *r;
	char rel[FATELF_REPO_MANIFEST_PATH_MAX], hex[65];
	char *json = NULL, *sig = NULL;
	size_t jlen, slen;
	uint8_t sha[32];
	fatelf_diag d;
	int fd, q;

	ck_assert_int_eq(mkdir("tree-copy", 0755), 0);
	dir("tree-copy", "srv");
	put("tree-copy", "srv/same", same, strlen(same), 0644);
	put("tree-copy", "srv/new", "only here\n", 10, 0644);
	fd = open("copy.fatbundle", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create("tree-copy", fd, &o, &d) == 0, "bundle: %s", d.msg);
	close(fd);
	r = make_repo(bundles, 1);
	sha_of(same, strlen(same), sha);
	fatelf_hex(sha, 32, hex);
	put(".", hex, same, strlen(same), 0644);
	p = fatelf_repo_index_find(r->index, "copy");
	ck_assert_ptr_nonnull(p);
	fatelf_repo_manifest_path(p->versions[0].manifest, false, rel);
	ck_assert_int_eq(fatelf_repo_read_file(r, rel, FATELF_MANIFEST_MAX, &json, &jlen, &d), 0);
	fatelf_repo_manifest_path(p->versions[0].manifest, true, rel);
	ck_assert_int_eq(fatelf_repo_read_file(r, rel, FATELF_REPO_SIG_MAX, &sig, &slen, &d), 0);
	ls->count.r = r;
	cl->staged = -1;
	q = fatelf_repo_read(json, jlen, sig, slen, NULL, &src, &ro, &ops, &d);
	ck_assert_msg(q == 0, "read: %s: %s", fatelf_error_name(q), d.msg);
	ck_assert(cl->same_len == strlen(same) && memcmp(cl->same, same, strlen(same)) == 0);
	free(cl->buf);
	free(json);
	free(sig);
	fatelf_repo_close(r);
}

START_TEST(test_bad_clone_is_dropped)
{
	struct cloner cl = { .corrupt = true };
	struct local_src ls = { 0 };

	read_copy_cloning(&cl, &ls);
	/* both files were offered (srv/new has no local copy: no offer) */
	ck_assert_uint_eq(ls.local_calls, 2);
	ck_assert_uint_eq(cl.offers, 1);
	ck_assert_uint_eq(cl.drops, 1);
	ck_assert_uint_eq(ls.cloned_calls, 0);
	/* the bytes of both came from the repository, through data */
	ck_assert_uint_eq(ls.count.calls, 2);
}
END_TEST

START_TEST(test_good_clone_is_taken)
{
	struct cloner cl = { .corrupt = false };
	struct local_src ls = { 0 };

	read_copy_cloning(&cl, &ls);
	ck_assert_uint_eq(cl.offers, 1);
	ck_assert_uint_eq(cl.drops, 0);
	ck_assert_uint_eq(ls.cloned_calls, 1);
	/* srv/new alone was read from the repository */
	ck_assert_uint_eq(ls.count.calls, 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("repo_install");
	TCase *tc = tcase_create("install");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_native_equals_bundle);
	tcase_add_test(tc, test_keep_rebuilds_fat);
	tcase_add_test(tc, test_upgrade_asks_changed_only);
	tcase_add_test(tc, test_corrupt_object_installs_nothing);
	tcase_add_test(tc, test_untrusted_signer_refused);
	tcase_add_test(tc, test_local_copy_and_dry_run);
	tcase_add_test(tc, test_changed_local_copy_is_fetched);
	tcase_add_test(tc, test_bad_clone_is_dropped);
	tcase_add_test(tc, test_local_copy_changed_midway_fails);
	tcase_add_test(tc, test_good_clone_is_taken);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
