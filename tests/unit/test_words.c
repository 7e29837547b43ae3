/*
 * Unit tests for fatelfctl's words (client/words.c): each error of the
 * daemon, with its parameters, becomes one sentence and one exit status.
 */
#include <check.h>
#include <string.h>

#include <json-c/json.h>

#include "fatelfctl.h"
#include "testutil.h"

static char msg[2048];

/* The words and status for error (short names are io.fatelf.Manager's)
 * with params given as JSON text, as verb reports it. */
static int say_verb(const char *verb, const char *error, const char *params_json)
{
	char name[256];
	json_object *p = params_json ? json_tokener_parse(params_json) : NULL;
	int status;

	if (params_json)
		ck_assert_ptr_nonnull(p);
	snprintf(name, sizeof(name), "%s%s", strchr(error, '.') ? "" : CTL_INTERFACE ".", error);
	status = ctl_error_words(name, p, verb, "/run/test.sock", msg, sizeof(msg));
	json_object_put(p);
	return status;
}

static int say(const char *error, const char *params_json)
{
	return say_verb("install", error, params_json);
}

START_TEST(test_conflict)
{
	ck_assert_int_eq(say("Conflict", "{\"path\":\"/opt/x/f\",\"owner\":\"base\","
			     "\"message\":\"/opt/x/f belongs to package base\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "conflict: /opt/x/f belongs to package base");
	ck_assert_int_eq(say("Conflict", "{\"path\":\"/opt/x/f\",\"owner\":null,"
			     "\"message\":\"/opt/x/f exists on disk and belongs to no package\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "conflict: /opt/x/f exists on disk and belongs to no package");
}
END_TEST

START_TEST(test_install_refusals)
{
	say("Downgrade", "{\"package\":\"app\",\"installed\":\"2.0\",\"offered\":\"1.0\"}");
	ck_assert_str_eq(msg, "downgrade: app 2.0 is installed and the bundle has 1.0 (--allow-downgrade allows it)");
	say("NoHostRecord", "{\"path\":\"/opt/x/bin/x\",\"targets\":[\"aarch64\",\"riscv64\"],"
	    "\"host\":[\"x86_64:64bits:le\"]}");
	ck_assert_str_eq(msg, "no record for this machine: /opt/x/bin/x has aarch64, riscv64; "
			 "this host runs x86_64:64bits:le");
	say("DiskFull", "{\"needed\":1048576,\"available\":2048,\"message\":\"not enough\"}");
	ck_assert_str_eq(msg, "disk full: needs 1.0 MiB, 2.0 KiB available");
	say("DiskFull", "{\"needed\":0,\"available\":0,\"message\":\"/opt/x: No space left on device\"}");
	ck_assert_str_eq(msg, "disk full: /opt/x: No space left on device");
	say("DirectoryUnsafe", "{\"path\":\"/opt/hello\",\"uid\":65534,\"mode\":511,\"message\":\"m\"}");
	ck_assert_str_eq(msg, "unsafe directory: /opt/hello is owned by uid 65534 with mode 0777, so others "
			 "could replace what is installed in it (--force as root takes it over)");
	say("BundleInvalid", "{\"code\":\"FATELF_E_HASH\",\"entry\":\"opt/x\","
	    "\"message\":\"entry 'opt/x': SHA-256 mismatch\"}");
	ck_assert_str_eq(msg, "invalid bundle: entry 'opt/x': SHA-256 mismatch (FATELF_E_HASH)");
	say("FetchFailed", "{\"url\":\"http://h/x\",\"message\":\"http://h/x: the server answered HTTP 404\"}");
	ck_assert_str_eq(msg, "download failed: http://h/x: the server answered HTTP 404");
	say("Cancelled", "{\"id\":7}");
	ck_assert_str_eq(msg, "cancelled: transaction 7 was rolled back");
}
END_TEST

START_TEST(test_signatures)
{
	say("SignatureRequired", "{\"message\":\"m\",\"keys_dir\":\"/k\",\"keys\":0,\"key_id\":null}");
	ck_assert_str_eq(msg, "signature required: the bundle is not signed (root may install it with "
			 "--allow-unsigned)");
	say("SignatureRequired", "{\"message\":\"m\",\"keys_dir\":\"/k\",\"keys\":0,\"key_id\":\"ABCD\"}");
	ck_assert_msg(strstr(msg, "signed by key ABCD, but no trusted key is configured in /k"), "%s", msg);
	say("SignatureRequired", "{\"message\":\"m\",\"keys_dir\":\"/k\",\"keys\":3,\"key_id\":\"ABCD\"}");
	ck_assert_msg(strstr(msg, "not one of the 3 trusted keys in /k"), "%s", msg);
	say("SignatureInvalid", "{\"code\":\"FATELF_E_SIG_INVALID\",\"message\":\"bad\"}");
	ck_assert_str_eq(msg, "bad signature: bad (FATELF_E_SIG_INVALID)");
}
END_TEST

START_TEST(test_statuses)
{
	ck_assert_int_eq(say("RootRequired", "{\"parameter\":\"allow_unsigned\"}"), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: only root may use --allow-unsigned");
	ck_assert_int_eq(say("RootRequired", "{\"parameter\":\"url\"}"), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: only root may use a file URL");
	ck_assert_int_eq(say("org.varlink.service.PermissionDenied", NULL), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: installing needs root or the admin group (AdminGroup= in " CTL_CONFIG_PATH ")");
	ck_assert_int_eq(say("org.varlink.service.InterfaceNotFound", "{\"interface\":\"x.y\"}"), EXIT_SYSTEM);
	ck_assert_str_eq(msg, "the service at /run/test.sock does not offer x.y (is it fatelfd?)");
	ck_assert_int_eq(say("org.varlink.service.MethodNotImplemented", "{\"method\":\"a.B\"}"), EXIT_SYSTEM);
	ck_assert_int_eq(say("NoSuchTransaction", "{\"id\":4,\"state\":\"committed\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "transaction 4 has already ended (committed); nothing to cancel");
	ck_assert_int_eq(say("NoSuchTransaction", "{\"id\":null}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "no transaction is running");
	ck_assert_int_eq(say("Failed", "{\"code\":\"EIO\",\"message\":\"Input/output error\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "failed: Input/output error (EIO)");
	/* A newer daemon's error keeps its name and parameters. */
	ck_assert_int_eq(say("io.fatelf.Manager.Brand", "{\"x\":1}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "io.fatelf.Manager.Brand: {\"x\":1}");
}
END_TEST

START_TEST(test_repositories)
{
	ck_assert_int_eq(say_verb("update", "RepositoryNotFound", "{\"repository\":\"main\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "no repository named main (fatelfctl repo list)");
	/* Its own status, apart from every other refusal. */
	ck_assert_int_eq(EXIT_REPOSITORY, 5);
	ck_assert_int_eq(say_verb("update", "RepositoryInvalid", "{\"repository\":\"main\","
				  "\"code\":\"FATELF_E_REPO_ROLLBACK\",\"message\":\"index: serial 3 is "
				  "below 5, the serial accepted before\"}"), EXIT_REPOSITORY);
	ck_assert_str_eq(msg, "repository main: index: serial 3 is below 5, the serial accepted before "
			 "(FATELF_E_REPO_ROLLBACK)");
	ck_assert_int_eq(say("RepositoryInvalid", "{\"repository\":\"main\",\"code\":\"\","
			     "\"message\":\"objects/ab/cd.zst: not the object its name says\"}"), EXIT_REPOSITORY);
	ck_assert_str_eq(msg, "repository main: objects/ab/cd.zst: not the object its name says");
	ck_assert_int_eq(say("RepositoryInvalid", "{\"repository\":\"main\"}"), EXIT_REPOSITORY);
	ck_assert_str_eq(msg, "repository main: refused");
	/* Another repository's index: both identities, and the way out */
	ck_assert_int_eq(say_verb("update", "RepositoryMismatch", "{\"repository\":\"main\","
				  "\"expected\":\"0123456789abcdef0123456789abcdef\","
				  "\"got\":\"fedcba9876543210fedcba9876543210\"}"), EXIT_REPOSITORY);
	ck_assert_str_eq(msg, "repository main: a mirror served the index of another repository (id "
			 "fedcba9876543210fedcba9876543210; this machine pinned 0123456789abcdef0123456789abcdef): "
			 "refused, nothing changed. Check the repository's URLs (fatelfctl repo "
			 "list); if the vendor really replaced the repository, fatelfctl repo remove main, then repo "
			 "add it again");
	ck_assert_int_eq(say_verb("update", "RepositoryMismatch", "{\"repository\":\"main\","
				  "\"expected\":\"0123456789abcdef0123456789abcdef\",\"got\":null}"), EXIT_REPOSITORY);
	ck_assert_ptr_nonnull(strstr(msg, "(id none;"));
	/* An expired index: when, in UTC, and what to do */
	ck_assert_int_eq(say_verb("install", "RepositoryExpired", "{\"repository\":\"main\","
				  "\"expires\":1800000000,\"message\":\"x\"}"), EXIT_REPOSITORY);
	ck_assert_str_eq(msg, "repository main: its index expired at 2027-01-15 08:00:00 UTC, and nothing an "
			 "expired index says is trusted: once the vendor has re-signed it, fatelfctl update fetches "
			 "the new one (or fatelfctl repo remove main takes the repository out)");

	/* A package a repository install names is not "not installed". */
	ck_assert_int_eq(say("PackageNotFound", "{\"package\":\"hello=9.9\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "no such package: no repository offers hello=9.9, and no file of that name "
			 "exists ('fatelfctl search' lists what the repositories offer)");
	/* With the name fatelfctl found nearest among those offered. */
	ck_assert_int_eq(say("PackageNotFound", "{\"package\":\"Greeter\",\"suggestion\":\"greeter\"}"),
			 EXIT_FAILED);
	ck_assert_str_eq(msg, "no such package: no repository offers Greeter, and no file of that name "
			 "exists (did you mean greeter?)");
	ck_assert_int_eq(say_verb("info", "PackageNotFound", "{\"package\":\"nope\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "package not installed: nope");
	/* upgrade NAME asks Info first: a name that is not installed. */
	ck_assert_int_eq(say_verb("upgrade", "PackageNotFound", "{\"package\":\"nope\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "package not installed: nope");
	ck_assert_int_eq(say_verb("upgrade", "org.varlink.service.PermissionDenied", NULL), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: upgrading needs root or the admin group (AdminGroup= in " CTL_CONFIG_PATH ")");

	/* repo add and remove are root's: the admin group gets RootRequired. */
	ck_assert_int_eq(say_verb("repo add", "RootRequired", "{\"parameter\":\"name\"}"), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: adding a repository needs root");
	ck_assert_int_eq(say_verb("repo remove", "org.varlink.service.PermissionDenied", NULL), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: removing a repository needs root");
	ck_assert_int_eq(say_verb("update", "org.varlink.service.PermissionDenied", NULL), EXIT_DENIED);
	ck_assert_str_eq(msg, "permission denied: updating the repositories needs root or the admin group "
			 "(AdminGroup= in " CTL_CONFIG_PATH ")");
}
END_TEST

/* Every row speaks even when the parameters are missing or mistyped. */
/* PathNotOwned: plain, and for a config file a removed package left. */
START_TEST(test_path_not_owned)
{
	ck_assert_int_eq(say_verb("owner", "PathNotOwned", "{\"path\":\"/etc/x\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "no package owns /etc/x");
	say_verb("owner", "PathNotOwned", "{\"path\":\"/etc/x\",\"kept_by\":null,\"kept_version\":null}");
	ck_assert_str_eq(msg, "no package owns /etc/x");
	say_verb("owner", "PathNotOwned", "{\"path\":\"/etc/app/app.conf\",\"kept_by\":\"app\","
		 "\"kept_version\":\"1.0\"}");
	ck_assert_str_eq(msg, "no package owns /etc/app/app.conf: a config file app 1.0 left behind "
			 "(remove --purge app deletes it)");
}
END_TEST

/* PackageNotFound of a package in config-files state says what it left. */
START_TEST(test_package_not_found_kept)
{
	ck_assert_int_eq(say_verb("info", "PackageNotFound", "{\"package\":\"app\"}"), EXIT_FAILED);
	ck_assert_str_eq(msg, "package not installed: app");
	say_verb("info", "PackageNotFound", "{\"package\":\"app\",\"kept_version\":\"2.0\",\"kept_files\":1}");
	ck_assert_str_eq(msg, "package not installed: app (removed; 1 config file of app 2.0 kept: "
			 "remove --purge app deletes it)");
	say_verb("info", "PackageNotFound", "{\"package\":\"app\",\"kept_version\":\"2.0\",\"kept_files\":3}");
	ck_assert_str_eq(msg, "package not installed: app (removed; 3 config files of app 2.0 kept: "
			 "remove --purge app deletes them)");
}
END_TEST

START_TEST(test_every_row_without_params)
{
	size_t n = 0;

	for (const char *e; (e = ctl_words_error(n)); n++) {
		int status = say(e, NULL);

		ck_assert_msg(msg[0] && !strstr(msg, "(null)"), "%s: %s", e, msg);
		ck_assert_msg(status == EXIT_FAILED || status == EXIT_SYSTEM || status == EXIT_DENIED ||
			      status == EXIT_REPOSITORY, "%s", e);
		say(e, "{\"path\":1,\"message\":[],\"needed\":\"x\",\"targets\":{}}");
		ck_assert_msg(msg[0] && !strstr(msg, "(null)"), "%s: %s", e, msg);
	}
	ck_assert_uint_ge(n, 20);
}
END_TEST

static Suite *words_suite(void)
{
	Suite *s = suite_create("words");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_conflict);
	tcase_add_test(tc, test_install_refusals);
	tcase_add_test(tc, test_signatures);
	tcase_add_test(tc, test_statuses);
	tcase_add_test(tc, test_repositories);
	tcase_add_test(tc, test_path_not_owned);
	tcase_add_test(tc, test_package_not_found_kept);
	tcase_add_test(tc, test_every_row_without_params);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(words_suite());
}
