/*
 * Unit tests for the installed-file database (lib/store.c): migrations on
 * PRAGMA user_version and the connection settings, refusing a newer schema
 * without touching the file, path conflicts between packages, owner
 * lookups, cascading removal, and history rows. The database is inspected
 * with SQLite directly, the way an admin would see it.
 */
#include <check.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fatelf.h"
#include "store.h"
#include "testutil.h"

#define DB "fatelf.db"

static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static store *open_ok(void)
{
	fatelf_diag d = { 0 };
	store *s = NULL;
	int r = store_open(DB, 0, &s, &d);

	ck_assert_msg(r == 0, "store_open: %d %s", r, d.msg);
	ck_assert_ptr_nonnull(s);
	return s;
}

static int64_t add_package(store *s, const char *name, const char *version)
{
	fatelf_diag d = { 0 };
	int64_t id = -1;
	store_package p = {
		.name = name, .version = version, .summary = "test package",
		.vendor = "Example", .installed_at = 1700000000, .policy = "native",
	};
	int r = store_package_add(s, &p, &id, &d);

	ck_assert_msg(r == 0, "package_add %s: %d %s", name, r, d.msg);
	ck_assert_int_gt(id, 0);
	return id;
}

static void add_file(store *s, int64_t pkg, const char *path)
{
	fatelf_diag d = { 0 };
	store_file f = {
		.path = path, .package_id = pkg, .type = "file", .mode = 0755, .size = 10,
		.sha256 = "00", .kind = "fatelf", .installed_size = 10, .installed_sha256 = "00",
	};
	int r = store_file_add(s, &f, &d);

	ck_assert_msg(r == 0, "file_add %s: %d %s", path, r, d.msg);
}

START_TEST(test_fresh_database)
{
	tu_tmpdir();
	store *s = open_ok();
	s = store_close(s);
	ck_assert_ptr_null(s);

	ck_assert_int_eq(store_schema_version(), (int)store_migrations_count);
	ck_assert_int_ge(store_migrations_count, 1);
	ck_assert_int_eq(store_migrations[0].version, 1);
	ck_assert_str_eq(store_migrations[0].name, "0001-initial");
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	/* WAL is a property of the file, so a fresh connection sees it. */
	{
		sqlite3 *db = NULL;
		sqlite3_stmt *st = NULL;

		ck_assert_int_eq(sqlite3_open(DB, &db), SQLITE_OK);
		ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
				 "name IN ('packages', 'files', 'records', 'dirs', 'transactions', 'journal')"),
			 6);
}
END_TEST

/* foreign_keys is per connection: a file row for a package that does not
 * exist must be refused through the store's own connection. */
START_TEST(test_foreign_keys_on)
{
	fatelf_diag d = { 0 };

	tu_tmpdir();
	store *s = open_ok();
	store_file f = { .path = "/usr/bin/x", .package_id = 42, .type = "file", .mode = 0644 };
	ck_assert_int_eq(store_file_add(s, &f, &d), -ENOENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "/usr/bin/x"));
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files"), 0);
}
END_TEST

START_TEST(test_reopen_applies_nothing)
{
	tu_tmpdir();
	store *s = open_ok();
	add_package(s, "hello", "1.0");
	store_close(s);

	/* Reapplying 0001 would fail on CREATE TABLE, and the row must survive. */
	s = open_ok();
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages WHERE name = 'hello'"), 1);
}
END_TEST

START_TEST(test_newer_schema_refused_untouched)
{
	fatelf_diag d = { 0 };
	store *s = NULL;
	uint8_t *before, *after;
	size_t nb, na;
	char want[128];

	tu_tmpdir();
	sql_exec(DB, "CREATE TABLE future (x); INSERT INTO future VALUES (1); PRAGMA user_version = 99;");
	before = tu_read_file(DB, &nb);
	ck_assert_ptr_nonnull(before);

	ck_assert_int_eq(store_open(DB, 0, &s, &d), -EPROTONOSUPPORT);
	ck_assert_ptr_null(s);
	snprintf(want, sizeof(want), "database schema version 99 is newer than this program's %zu",
		 store_migrations_count);
	ck_assert_str_eq(d.msg, want);

	after = tu_read_file(DB, &na);
	ck_assert_ptr_nonnull(after);
	ck_assert_uint_eq(na, nb);
	ck_assert_mem_eq(after, before, nb);
	ck_assert_int_ne(access(DB "-wal", F_OK), 0);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), 99);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_nocreate)
{
	fatelf_diag d = { 0 };
	store *s = NULL;

	tu_tmpdir();
	ck_assert_int_eq(store_open(DB, STORE_OPEN_NOCREATE, &s, &d), -ENOENT);
	ck_assert_ptr_null(s);
	ck_assert_int_ne(access(DB, F_OK), 0);
}
END_TEST

START_TEST(test_path_conflict)
{
	fatelf_diag d = { 0 };
	char *owner = NULL;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "alpha", "1.0");
	int64_t b = add_package(s, "beta", "2.0");
	add_file(s, a, "/usr/bin/tool");

	store_file f = { .path = "/usr/bin/tool", .package_id = b, .type = "file", .mode = 0755 };
	ck_assert_int_eq(store_file_add(s, &f, &d), -EEXIST);
	ck_assert_int_eq(d.code, -EEXIST);
	ck_assert_str_eq(d.msg, "/usr/bin/tool is owned by package alpha, so package beta cannot install it");

	ck_assert_int_eq(store_file_owner(s, "/usr/bin/tool", &owner, &d), 0);
	ck_assert_str_eq(owner, "alpha");
	free(owner);

	/* The same name twice is a conflict too. */
	store_package p = { .name = "alpha", .version = "9", .installed_at = 1, .policy = "keep" };
	ck_assert_int_eq(store_package_add(s, &p, NULL, &d), -EEXIST);
	ck_assert_ptr_nonnull(strstr(d.msg, "alpha"));
	store_close(s);
}
END_TEST

static int collect_path(const store_file *f, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 256 - len, "%s[%s,%o];", f->path, f->kind, (unsigned)f->mode);
	return 0;
}

static int collect_package(const store_package *p, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 256 - len, "%s=%s;", p->name, p->version);
	return 0;
}

START_TEST(test_owner_and_lists)
{
	fatelf_diag d = { 0 };
	char *owner = (char *)"untouched";
	char buf[256] = "";
	store_package p;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "zeta", "3.1");
	add_package(s, "alpha", "1.0");
	add_file(s, a, "/usr/lib/libz.so");
	add_file(s, a, "/usr/bin/z");

	ck_assert_int_eq(store_file_owner(s, "/usr/bin/none", &owner, &d), -ENOENT);
	ck_assert_str_eq(owner, "untouched");
	ck_assert_ptr_nonnull(strstr(d.msg, "/usr/bin/none"));

	ck_assert_int_eq(store_files_of(s, "zeta", collect_path, buf, &d), 2);
	ck_assert_str_eq(buf, "/usr/bin/z[fatelf,755];/usr/lib/libz.so[fatelf,755];");
	buf[0] = '\0';
	ck_assert_int_eq(store_files_of(s, "alpha", collect_path, buf, &d), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(store_files_of(s, "nosuch", collect_path, buf, &d), -ENOENT);

	ck_assert_int_eq(store_package_list(s, collect_package, buf, &d), 2);
	ck_assert_str_eq(buf, "alpha=1.0;zeta=3.1;");

	ck_assert_int_eq(store_package_get(s, "zeta", &p, &d), 0);
	ck_assert_int_eq(p.id, a);
	ck_assert_str_eq(p.version, "3.1");
	ck_assert_str_eq(p.vendor, "Example");
	ck_assert_str_eq(p.policy, "native");
	ck_assert_ptr_null(p.signer_keyid);
	ck_assert_int_eq(p.installed_at, 1700000000);
	store_package_done(&p);
	ck_assert_int_eq(store_package_get(s, "nosuch", &p, &d), -ENOENT);
	store_close(s);
}
END_TEST

START_TEST(test_remove_cascades)
{
	fatelf_diag d = { 0 };
	char *owner = NULL;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "fat", "1");
	int64_t b = add_package(s, "other", "1");
	add_file(s, a, "/usr/bin/fat");
	add_file(s, b, "/usr/bin/other");
	for (unsigned i = 0; i < 3; i++) {
		store_record rec = {
			.path = "/usr/bin/fat", .idx = i, .target = "x86_64", .machine = 62,
			.word_size = 2, .byte_order = 1, .offset = 4096 * (i + 1), .size = 100,
			.sha256 = "ab", .kept = i == 0,
		};
		ck_assert_int_eq(store_record_add(s, &rec, &d), 0);
	}
	store_record dup = { .path = "/usr/bin/fat", .idx = 1, .target = "x", .word_size = 1,
			     .byte_order = 1, .sha256 = "ab" };
	ck_assert_int_eq(store_record_add(s, &dup, &d), -EEXIST);
	store_record orphan = { .path = "/nope", .idx = 0, .target = "x", .word_size = 1,
				.byte_order = 1, .sha256 = "ab" };
	ck_assert_int_eq(store_record_add(s, &orphan, &d), -ENOENT);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 3);

	ck_assert_int_eq(store_begin(s, &d), 0);
	ck_assert_int_eq(store_package_remove(s, "fat", &d), 0);
	ck_assert_int_eq(store_commit(s, &d), 0);
	ck_assert_int_eq(store_package_remove(s, "fat", &d), -ENOENT);
	ck_assert_int_eq(store_file_owner(s, "/usr/bin/fat", &owner, &d), -ENOENT);
	ck_assert_int_eq(store_file_owner(s, "/usr/bin/other", &owner, &d), 0);
	ck_assert_str_eq(owner, "other");
	free(owner);
	store_close(s);

	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages"), 1);
}
END_TEST

START_TEST(test_rollback)
{
	fatelf_diag d = { 0 };

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_begin(s, &d), 0);
	int64_t a = add_package(s, "gone", "1");
	add_file(s, a, "/usr/bin/gone");
	ck_assert_int_eq(store_rollback(s, &d), 0);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages"), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files"), 0);
}
END_TEST

static int collect_tx(const store_tx *t, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%lld %s %s %s->%s %s %lld..%lld w=%llu s=%lld e=%s;",
		 (long long)t->id, t->kind, t->package, t->old_version ? t->old_version : "-",
		 t->new_version ? t->new_version : "-", t->state, (long long)t->started_at,
		 (long long)t->finished_at, (unsigned long long)t->bytes_written,
		 (long long)t->bytes_saved, t->error ? t->error : "-");
	return 0;
}

START_TEST(test_history)
{
	fatelf_diag d = { 0 };
	int64_t t1 = 0, t2 = 0;
	char buf[512] = "";

	tu_tmpdir();
	store *s = open_ok();
	store_tx a = { .kind = "install", .package = "hello", .new_version = "1.0", .started_at = 100 };
	store_tx b = { .kind = "upgrade", .package = "hello", .old_version = "1.0",
		       .new_version = "2.0", .started_at = 200 };
	ck_assert_int_eq(store_tx_begin(s, &a, &t1, &d), 0);
	ck_assert_int_eq(store_tx_begin(s, &b, &t2, &d), 0);
	ck_assert_int_ne(t1, t2);
	ck_assert_int_eq(store_tx_finish(s, t1, "committed", 110, 4096, 512, NULL, &d), 0);
	ck_assert_int_eq(store_tx_finish(s, t2, "failed", 210, 10, 0, "no space", &d), 0);
	/* A finished row is closed for good. */
	ck_assert_int_eq(store_tx_finish(s, t1, "failed", 120, 0, 0, NULL, &d), -ENOENT);
	/* The schema refuses a state it does not know. */
	store_tx bad = { .kind = "explode", .package = "x", .started_at = 1 };
	ck_assert_int_eq(store_tx_begin(s, &bad, NULL, &d), -EINVAL);

	ck_assert_int_eq(store_tx_list(s, collect_tx, buf, &d), 2);
	char want[512];
	snprintf(want, sizeof(want),
		 "%lld install hello -->1.0 committed 100..110 w=4096 s=512 e=-;"
		 "%lld upgrade hello 1.0->2.0 failed 200..210 w=10 s=0 e=no space;",
		 (long long)t1, (long long)t2);
	ck_assert_str_eq(buf, want);
	store_close(s);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fresh_database);
	tcase_add_test(tc, test_foreign_keys_on);
	tcase_add_test(tc, test_reopen_applies_nothing);
	tcase_add_test(tc, test_newer_schema_refused_untouched);
	tcase_add_test(tc, test_nocreate);
	tcase_add_test(tc, test_path_conflict);
	tcase_add_test(tc, test_owner_and_lists);
	tcase_add_test(tc, test_remove_cascades);
	tcase_add_test(tc, test_rollback);
	tcase_add_test(tc, test_history);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(store_suite());
}
