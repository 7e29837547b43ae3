/*
 * Unit tests for fatelfd's error table (daemon/errmap.c): which Varlink
 * error each code and its facts become, and which typed parameter each
 * fact fills. The message is carried as it is and never read.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "errmap.h"
#include "testutil.h"

static const char *const host[] = { "x86_64:64bits:le", "i386:32bits:le" };
static const errmap_ctx ctx = {
	.root = "/",
	.keys_dir = "/etc/fatelf/keys.d",
	.keys = 2,
	.host = host,
	.nhost = 2,
};

static fatelf_diag diag(int code, const char *subject, const char *msg)
{
	fatelf_diag d;

	fatelf_diag_clear(&d);
	fatelf_diag_set(&d, code, -1, "%s", msg);
	snprintf(d.subject, sizeof(d.subject), "%s", subject);
	return d;
}

/* The reply's parameters, checked to be exactly the names given. */
static json_object *params(int code, const fatelf_diag *d, const errmap_ctx *c, const char *want_error,
			   const char *const *names)
{
	const char *error = NULL;
	json_object *p = errmap_params(code, d, c, &error);
	size_t n = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(error, want_error);
	ck_assert_str_eq(errmap_error(code, d, c), want_error);
	for (; names[n]; n++)
		ck_assert_msg(json_object_object_get_ex(p, names[n], NULL), "%s lacks %s", want_error, names[n]);
	ck_assert_int_eq(json_object_object_length(p), (int)n);
	return p;
}

static const char *str(json_object *p, const char *key)
{
	json_object *v = json_object_object_get(p, key);

	return v ? json_object_get_string(v) : NULL;
}

static int64_t num(json_object *p, const char *key)
{
	json_object *v = json_object_object_get(p, key);

	ck_assert_msg(v && json_object_is_type(v, json_type_int), "%s is not an int", key);
	return json_object_get_int64(v);
}

START_TEST(test_conflict)
{
	static const char *const names[] = { "path", "owner", "message", NULL };
	fatelf_diag d = diag(-ENGINE_E_CONFLICT, "/opt/x/f", "/opt/x/f belongs to package base");
	json_object *p;

	snprintf(d.owner, sizeof(d.owner), "base");
	p = params(-ENGINE_E_CONFLICT, &d, &ctx, "Conflict", names);
	ck_assert_str_eq(str(p, "path"), "/opt/x/f");
	ck_assert_str_eq(str(p, "owner"), "base");
	ck_assert_str_eq(str(p, "message"), "/opt/x/f belongs to package base");
	json_object_put(p);

	d.owner[0] = '\0';
	p = params(-ENGINE_E_CONFLICT, &d, &ctx, "Conflict", names);
	ck_assert_ptr_null(json_object_object_get(p, "owner"));
	json_object_put(p);
}
END_TEST

START_TEST(test_downgrade)
{
	static const char *const names[] = { "package", "installed", "offered", NULL };
	fatelf_diag d = diag(-ENGINE_E_DOWNGRADE, "app", "the words do not matter");
	json_object *p;

	FATELF_DIAG_FACT(&d, package, "app");
	FATELF_DIAG_FACT(&d, installed, "2.0-1");
	FATELF_DIAG_FACT(&d, offered, "1.9~rc1-3");
	p = params(-ENGINE_E_DOWNGRADE, &d, &ctx, "Downgrade", names);
	ck_assert_str_eq(str(p, "package"), "app");
	ck_assert_str_eq(str(p, "installed"), "2.0-1");
	ck_assert_str_eq(str(p, "offered"), "1.9~rc1-3");
	json_object_put(p);
}
END_TEST

START_TEST(test_not_installed)
{
	static const char *const names[] = { "package", NULL };
	fatelf_diag d = diag(-ENGINE_E_NOT_INSTALLED, "", "package ghost is not installed");
	json_object *p;

	FATELF_DIAG_FACT(&d, package, "ghost");
	p = params(-ENGINE_E_NOT_INSTALLED, &d, &ctx, "PackageNotFound", names);
	ck_assert_str_eq(str(p, "package"), "ghost");
	json_object_put(p);
}
END_TEST

START_TEST(test_no_host_record)
{
	static const char *const names[] = { "path", "targets", "host", NULL };
	static const char *const bundle_names[] = { "code", "entry", "message", NULL };
	fatelf_diag d = diag(-FATELF_E_NO_HOST_RECORD, "/opt/x/bin/x", "no record runs on this host");
	json_object *p, *a;

	fatelf_diag_add_target(&d, "aarch64:64bits:le:sysv:osabiver0");
	fatelf_diag_add_target(&d, "riscv64:64bits:le:sysv:osabiver0");
	p = params(-FATELF_E_NO_HOST_RECORD, &d, &ctx, "NoHostRecord", names);
	a = json_object_object_get(p, "targets");
	ck_assert_int_eq(json_object_array_length(a), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(a, 1)),
			 "riscv64:64bits:le:sysv:osabiver0");
	a = json_object_object_get(p, "host");
	ck_assert_int_eq(json_object_array_length(a), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(a, 0)), "x86_64:64bits:le");
	json_object_put(p);

	/* A target list naming nothing the file offers is the same refusal;
	 * a NO_MATCH without the file's targets is about the bundle. */
	d.code = -FATELF_E_NO_MATCH;
	json_object_put(params(-FATELF_E_NO_MATCH, &d, &ctx, "NoHostRecord", names));
	d.ntargets = 0;
	json_object_put(params(-FATELF_E_NO_MATCH, &d, &ctx, "BundleInvalid", bundle_names));

	/* The list is bounded. */
	for (int i = 0; i < 40; i++)
		fatelf_diag_add_target(&d, "m68k:32bits:be:sysv:osabiver0");
	ck_assert_uint_eq(d.ntargets, FATELF_DIAG_TARGETS_MAX);
}
END_TEST

START_TEST(test_disk_full)
{
	static const char *const names[] = { "needed", "available", "message", NULL };
	fatelf_diag d = diag(-ENGINE_E_DISK_FULL, "", "not enough free space in the root");
	json_object *p;

	d.needed = 5ull << 30;
	d.available = 1ull << 20;
	d.has = FATELF_DIAG_HAS_NEEDED | FATELF_DIAG_HAS_AVAILABLE;
	p = params(-ENGINE_E_DISK_FULL, &d, &ctx, "DiskFull", names);
	ck_assert_int_eq(num(p, "needed"), 5ll << 30);
	ck_assert_int_eq(num(p, "available"), 1ll << 20);
	json_object_put(p);

	/* A write that ran out midway: nothing needed is known; what is
	 * free now is the root's. */
	d = diag(-ENOSPC, "/opt/x/big", "/opt/x/big: No space left on device");
	p = params(-ENOSPC, &d, &ctx, "DiskFull", names);
	ck_assert_int_eq(num(p, "needed"), 0);
	ck_assert_int_ge(num(p, "available"), 0);
	ck_assert_str_eq(str(p, "message"), "/opt/x/big: No space left on device");
	json_object_put(p);
}
END_TEST

START_TEST(test_signatures)
{
	static const char *const req[] = { "message", "keys_dir", "keys", "key_id", NULL };
	static const char *const inv[] = { "code", "message", NULL };
	fatelf_diag d = diag(-FATELF_E_SIG_MISSING, "", "the bundle is not signed");
	json_object *p;

	p = params(-FATELF_E_SIG_MISSING, &d, &ctx, "SignatureRequired", req);
	ck_assert_ptr_null(json_object_object_get(p, "key_id"));
	ck_assert_str_eq(str(p, "keys_dir"), "/etc/fatelf/keys.d");
	ck_assert_int_eq(num(p, "keys"), 2);
	json_object_put(p);

	d = diag(-FATELF_E_SIG_KEY, "", "signed by a key that is not trusted");
	FATELF_DIAG_FACT(&d, key_id, "0123456789ABCDEF");
	p = params(-FATELF_E_SIG_KEY, &d, &ctx, "SignatureRequired", req);
	ck_assert_str_eq(str(p, "key_id"), "0123456789ABCDEF");
	json_object_put(p);

	for (int code = FATELF_E_KEY_FORMAT; code <= FATELF_E_SIG_COMMENT; code++) {
		if (code == FATELF_E_SIG_KEY)
			continue;
		d = diag(-code, "", "bad");
		p = params(-code, &d, &ctx, "SignatureInvalid", inv);
		ck_assert_str_eq(str(p, "code"), fatelf_error_name(-code));
		json_object_put(p);
	}
}
END_TEST

START_TEST(test_download_and_cancel)
{
	static const char *const fetch[] = { "url", "message", NULL };
	static const char *const cancelled[] = { "id", NULL };
	errmap_ctx c = ctx;
	fatelf_diag d = diag(-EIO, "", "http://h/x.fatbundle: the server answered HTTP 404 Not Found");
	json_object *p;

	c.url = "http://h/x.fatbundle";
	p = params(-EIO, &d, &c, "FetchFailed", fetch);
	ck_assert_str_eq(str(p, "url"), "http://h/x.fatbundle");
	json_object_put(p);
	/* Whatever failed while downloading is the download's failure... */
	d = diag(-FATELF_E_HASH, "opt/x", "entry 'opt/x': SHA-256 mismatch");
	json_object_put(params(-FATELF_E_HASH, &d, &c, "FetchFailed", fetch));
	/* ... but a cancel is a cancel. */
	d = diag(-ECANCELED, "", "cancelled");
	p = params(-ECANCELED, &d, &c, "Cancelled", cancelled);
	ck_assert_int_eq(num(p, "id"), 0);
	json_object_put(p);
	json_object_put(params(-ECANCELED, NULL, &ctx, "Cancelled", cancelled));
}
END_TEST

START_TEST(test_engine_refusals)
{
	static const char *const msg_only[] = { "message", NULL };
	static const char *const unsafe[] = { "path", "uid", "mode", "message", NULL };
	fatelf_diag d = diag(-ENGINE_E_LOCKED, "/var/lib/fatelf/lock", "another process holds the lock");
	json_object *p;

	json_object_put(params(-ENGINE_E_LOCKED, &d, &ctx, "Busy", msg_only));
	d = diag(-ENGINE_E_POLICY, "", "unknown policy 'fat'");
	p = params(-ENGINE_E_POLICY, &d, &ctx, "InvalidPolicy", msg_only);
	ck_assert_str_eq(str(p, "message"), "unknown policy 'fat'");
	json_object_put(p);

	d = diag(-ENGINE_E_DIR_UNSAFE, "/opt/hello", "/opt/hello: the directory exists");
	d.uid = 65534;
	d.mode = 0777;
	d.has = FATELF_DIAG_HAS_UID | FATELF_DIAG_HAS_MODE;
	p = params(-ENGINE_E_DIR_UNSAFE, &d, &ctx, "DirectoryUnsafe", unsafe);
	ck_assert_str_eq(str(p, "path"), "/opt/hello");
	ck_assert_int_eq(num(p, "uid"), 65534);
	ck_assert_int_eq(num(p, "mode"), 0777);
	json_object_put(p);
}
END_TEST

START_TEST(test_bundle_and_failed)
{
	static const char *const bundle[] = { "code", "entry", "message", NULL };
	static const char *const failed[] = { "code", "message", NULL };
	fatelf_diag d = diag(-FATELF_E_HASH, "opt/x/f", "entry 'opt/x/f': SHA-256 mismatch");
	json_object *p;

	p = params(-FATELF_E_HASH, &d, &ctx, "BundleInvalid", bundle);
	ck_assert_str_eq(str(p, "code"), "FATELF_E_HASH");
	ck_assert_str_eq(str(p, "entry"), "opt/x/f");
	json_object_put(p);
	d = diag(-FATELF_E_MANIFEST_JSON, "", "not JSON");
	p = params(-FATELF_E_MANIFEST_JSON, &d, &ctx, "BundleInvalid", bundle);
	ck_assert_ptr_null(json_object_object_get(p, "entry"));
	json_object_put(p);
	d = diag(-ENGINE_E_NAME_RESERVED, "opt/.fatelf.x", "opt/.fatelf.x: reserved");
	p = params(-ENGINE_E_NAME_RESERVED, &d, &ctx, "BundleInvalid", bundle);
	ck_assert_str_eq(str(p, "code"), "ENGINE_E_NAME_RESERVED");
	json_object_put(p);

	d = diag(-ENGINE_E_SETID, "/opt/x/su", "/opt/x/su is setuid");
	p = params(-ENGINE_E_SETID, &d, &ctx, "Failed", failed);
	ck_assert_str_eq(str(p, "code"), "ENGINE_E_SETID");
	json_object_put(p);
	/* No message: the code's text. */
	p = params(-EIO, NULL, &ctx, "Failed", failed);
	ck_assert_str_eq(str(p, "code"), "EIO");
	ck_assert_str_eq(str(p, "message"), strerror(EIO));
	json_object_put(p);
	/* Failed by name, whatever the code would map to. */
	p = errmap_params_of("Failed", -ENOSPC, NULL, &ctx);
	ck_assert_str_eq(str(p, "code"), "ENOSPC");
	json_object_put(p);
	ck_assert_ptr_null(errmap_params_of("NoSuchError", -EIO, NULL, &ctx));
}
END_TEST

/* Every code of the space lands on a row, and the last row is Failed. */
START_TEST(test_repositories)
{
	static const char *const invalid[] = { "repository", "code", "message", NULL };
	static const char *const mismatch[] = { "repository", "expected", "got", NULL };
	static const char *const expired[] = { "repository", "expires", "message", NULL };
	errmap_ctx c = ctx;
	fatelf_diag d = diag(-FATELF_E_REPO_ROLLBACK, "", "index serial 3 is lower than 5");
	json_object *p;

	c.repository = "main";
	p = params(-FATELF_E_REPO_ROLLBACK, &d, &c, "RepositoryInvalid", invalid);
	ck_assert_str_eq(str(p, "code"), "FATELF_E_REPO_ROLLBACK");
	json_object_put(p);
	/* another repository's index: both identities */
	d = diag(-FATELF_E_REPO_MISMATCH, "", "the words do not matter");
	FATELF_DIAG_FACT(&d, expected, "0123456789abcdef0123456789abcdef");
	FATELF_DIAG_FACT(&d, got, "fedcba9876543210fedcba9876543210");
	p = params(-FATELF_E_REPO_MISMATCH, &d, &c, "RepositoryMismatch", mismatch);
	ck_assert_str_eq(str(p, "repository"), "main");
	ck_assert_str_eq(str(p, "expected"), "0123456789abcdef0123456789abcdef");
	ck_assert_str_eq(str(p, "got"), "fedcba9876543210fedcba9876543210");
	json_object_put(p);
	/* an index that names none: got is null */
	d.got[0] = '\0';
	p = params(-FATELF_E_REPO_MISMATCH, &d, &c, "RepositoryMismatch", mismatch);
	ck_assert_ptr_null(json_object_object_get(p, "got"));
	json_object_put(p);
	/* an expired index, the repository named by the diag (a verb that
	 * reads every repository's kept index names the one that expired) */
	d = diag(-FATELF_E_REPO_EXPIRED, "", "the words do not matter");
	FATELF_DIAG_FACT(&d, repository, "edge");
	d.expires = 1800000000;
	d.has |= FATELF_DIAG_HAS_EXPIRES;
	p = params(-FATELF_E_REPO_EXPIRED, &d, &ctx, "RepositoryExpired", expired);
	ck_assert_str_eq(str(p, "repository"), "edge");
	ck_assert_int_eq(num(p, "expires"), 1800000000);
	json_object_put(p);
	/* without a repository, it is no repository's error */
	d.repository[0] = '\0';
	ck_assert_str_eq(errmap_error(-FATELF_E_REPO_EXPIRED, &d, &ctx), "Failed");
}
END_TEST

START_TEST(test_every_code)
{
	size_t nrows = 0;

	while (errmap_row_error(nrows))
		nrows++;
	ck_assert_uint_gt(nrows, 10);
	ck_assert_str_eq(errmap_row_error(nrows - 1), "Failed");
	for (int code = 1; code < FATELF_E_MAX; code++) {
		json_object *p = errmap_params(-code, NULL, &ctx, NULL);

		ck_assert_ptr_nonnull(p);
		json_object_put(p);
	}
}
END_TEST

static Suite *errmap_suite(void)
{
	Suite *s = suite_create("errmap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_conflict);
	tcase_add_test(tc, test_downgrade);
	tcase_add_test(tc, test_not_installed);
	tcase_add_test(tc, test_no_host_record);
	tcase_add_test(tc, test_disk_full);
	tcase_add_test(tc, test_signatures);
	tcase_add_test(tc, test_download_and_cancel);
	tcase_add_test(tc, test_engine_refusals);
	tcase_add_test(tc, test_bundle_and_failed);
	tcase_add_test(tc, test_repositories);
	tcase_add_test(tc, test_every_code);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(errmap_suite());
}
