/*
 * Unit tests for the installed-file database (lib/install/store.c): migrations on
 * PRAGMA user_version and the connection settings, refusing a newer schema
 * without touching the file, path conflicts between packages, owner
 * lookups, cascading removal, history rows, the upgrade/thin/remove
 * updates of the engine (package update, usage sums, installed forms, kept
 * records, owned directories deepest first), the history queries and the
 * crash journal, the closed sets of column values and their texts (an
 * unknown text refused), list arrays with typed targets, and owner
 * lookups on a store of 100,000 files. The database is inspected with
 * SQLite directly, the way an admin would see it.
 */
#include <check.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* The result code of one statement, run on its own. */
static int sql_try(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int rc;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
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
		.path = path, .package_id = pkg, .type = STORE_FILE_REGULAR, .mode = 0755, .size = 10,
		.sha256 = "00", .kind = STORE_KIND_FATELF, .installed_size = 10, .installed_sha256 = "00",
	};
	int r = store_file_add(s, &f, &d);

	ck_assert_msg(r == 0, "file_add %s: %d %s", path, r, d.msg);
}

/*
 * The list calls return arrays; these walk one with a callback, so that a
 * check reads the rows as text. Each returns the number of rows, or the
 * call's error.
 */
#define WALK(v, n, cb, ud, free_fn) \
	do { \
		for (size_t i_ = 0; i_ < (n); i_++) \
			ck_assert_int_eq((cb)(&(v)[i_], (ud)), 0); \
		free_fn((v), (n)); \
	} while (0)

static int files_of(store *s, const char *package, int (*cb)(const store_file *, void *), void *ud,
		    fatelf_diag *d)
{
	store_file *v = NULL;
	size_t n = 0;
	int r = store_files_of(s, package, &v, &n, d);

	if (r < 0)
		return r;
	WALK(v, n, cb, ud, store_files_free);
	return (int)n;
}

static int package_list(store *s, int (*cb)(const store_package *, void *), void *ud, fatelf_diag *d)
{
	store_package *v = NULL;
	size_t n = 0;
	int r = store_package_list(s, &v, &n, d);

	if (r < 0)
		return r;
	WALK(v, n, cb, ud, store_packages_free);
	return (int)n;
}

static int records_of(store *s, const char *path, int (*cb)(const store_record *, void *), void *ud,
		      fatelf_diag *d)
{
	store_record *v = NULL;
	size_t n = 0;
	int r = store_records_of(s, path, &v, &n, d);

	if (r < 0)
		return r;
	WALK(v, n, cb, ud, store_records_free);
	return (int)n;
}

static int dirs_of(store *s, int64_t id, int (*cb)(const char *, void *), void *ud, fatelf_diag *d)
{
	store_dir *v = NULL;
	size_t n = 0;
	int r = store_dirs_of(s, id, &v, &n, d);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(cb(v[i].path, ud), 0);
	store_dirs_free(v, n);
	return (int)n;
}

static int dirs_with_modes(store *s, int64_t id, int (*cb)(const store_dir *, void *), void *ud,
			   fatelf_diag *d)
{
	store_dir *v = NULL;
	size_t n = 0;
	int r = store_dirs_with_modes(s, id, &v, &n, d);

	if (r < 0)
		return r;
	WALK(v, n, cb, ud, store_dirs_free);
	return (int)n;
}

typedef int (*tx_fn)(const store_tx *, void *);

static int tx_walk(int r, store_tx *v, size_t n, tx_fn cb, void *ud)
{
	if (r < 0)
		return r;
	WALK(v, n, cb, ud, store_txs_free);
	return (int)n;
}

static int tx_list(store *s, tx_fn cb, void *ud, fatelf_diag *d)
{
	store_tx *v = NULL;
	size_t n = 0;
	int r = store_tx_list(s, &v, &n, d);

	return tx_walk(r, v, n, cb, ud);
}

static int tx_history(store *s, const char *package, uint64_t limit, tx_fn cb, void *ud,
		      fatelf_diag *d)
{
	store_tx *v = NULL;
	size_t n = 0;
	int r = store_tx_history(s, package, limit, &v, &n, d);

	return tx_walk(r, v, n, cb, ud);
}

static int tx_pending(store *s, tx_fn cb, void *ud, fatelf_diag *d)
{
	store_tx *v = NULL;
	size_t n = 0;
	int r = store_tx_pending(s, &v, &n, d);

	return tx_walk(r, v, n, cb, ud);
}

static int journal_of(store *s, int64_t txid, int (*cb)(const store_journal_op *, void *), void *ud,
		      fatelf_diag *d)
{
	store_journal_op *v = NULL;
	size_t n = 0;
	int r = store_journal_of(s, txid, &v, &n, d);

	if (r < 0)
		return r;
	WALK(v, n, cb, ud, store_journal_free);
	return (int)n;
}

static int journal_txids(store *s, int (*cb)(int64_t, void *), void *ud, fatelf_diag *d)
{
	int64_t *v = NULL;
	size_t n = 0;
	int r = store_journal_txids(s, &v, &n, d);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(cb(v[i], ud), 0);
	free(v);
	return (int)n;
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
	ck_assert_int_eq(sql_int(DB, "PRAGMA page_size"), STORE_PAGE_SIZE);
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
	store_file f = { .path = "/usr/bin/x", .package_id = 42, .type = STORE_FILE_REGULAR, .mode = 0644 };
	ck_assert_int_eq(store_file_add(s, &f, &d), -ENOENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "/usr/bin/x"));
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files"), 0);
}
END_TEST

/* A database made before keeps its page size: the store's is set only
 * on an empty file, and the schema is applied all the same. */
START_TEST(test_older_page_size_kept)
{
	tu_tmpdir();
	sql_exec(DB, "PRAGMA page_size = 4096; CREATE TABLE older (x); INSERT INTO older VALUES (1);");
	store *s = open_ok();
	add_package(s, "hello", "1.0");
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "PRAGMA page_size"), 4096);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages WHERE name = 'hello' AND disk_settled_ns IS NULL"), 1);
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

	store_file f = { .path = "/usr/bin/tool", .package_id = b, .type = STORE_FILE_REGULAR, .mode = 0755 };
	ck_assert_int_eq(store_file_add(s, &f, &d), -EEXIST);
	ck_assert_int_eq(d.code, -EEXIST);
	ck_assert_str_eq(d.msg, "/usr/bin/tool is owned by package alpha, so package beta cannot install it");

	ck_assert_int_eq(store_file_owner(s, "/usr/bin/tool", &owner, &d), 1);
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

	snprintf(buf + len, 256 - len, "%s[%s,%o];", f->path, store_file_kind_to_text(f->kind),
		 (unsigned)f->mode);
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

	ck_assert_int_eq(store_file_owner(s, "/usr/bin/none", &owner, &d), 0);
	ck_assert_str_eq(owner, "untouched");
	ck_assert_ptr_null(strstr(d.msg, "/usr/bin/none"));

	ck_assert_int_eq(files_of(s, "zeta", collect_path, buf, &d), 2);
	ck_assert_str_eq(buf, "/usr/bin/z[fatelf,755];/usr/lib/libz.so[fatelf,755];");
	buf[0] = '\0';
	ck_assert_int_eq(files_of(s, "alpha", collect_path, buf, &d), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(files_of(s, "nosuch", collect_path, buf, &d), -ENOENT);

	ck_assert_int_eq(package_list(s, collect_package, buf, &d), 2);
	ck_assert_str_eq(buf, "alpha=1.0;zeta=3.1;");

	ck_assert_int_eq(store_package_get(s, "zeta", &p, &d), 1);
	ck_assert_int_eq(p.id, a);
	ck_assert_str_eq(p.version, "3.1");
	ck_assert_str_eq(p.vendor, "Example");
	ck_assert_str_eq(p.policy, "native");
	ck_assert_ptr_null(p.signer_keyid);
	ck_assert_int_eq(p.installed_at, 1700000000);
	store_package_done(&p);
	/* not installed is an answer to a lookup, and an error to a call
	 * that needs the package */
	fatelf_diag_clear(&d);
	ck_assert_int_eq(store_package_get(s, "nosuch", &p, &d), 0);
	ck_assert_str_eq(d.msg, "");
	{
		store_file *files = NULL;
		size_t n = 0;
		bool held;

		ck_assert_int_eq(store_files_of(s, "nosuch", &files, &n, &d), -ENOENT);
		ck_assert_str_eq(d.msg, "package nosuch is not installed");
		ck_assert_int_eq(store_hold_get(s, "nosuch", &held, &d), -ENOENT);
	}
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
			.path = "/usr/bin/fat", .idx = i,
			.target = { .machine = 62, .word_size = 2, .byte_order = 1 }, .offset = 4096 * (i + 1), .size = 100,
			.sha256 = "ab", .kept = i == 0,
		};
		ck_assert_int_eq(store_record_add(s, &rec, &d), 0);
	}
	store_record dup = { .path = "/usr/bin/fat", .idx = 1,
			     .target = { .word_size = 1, .byte_order = 1 }, .sha256 = "ab" };
	ck_assert_int_eq(store_record_add(s, &dup, &d), -EEXIST);
	store_record orphan = { .path = "/nope", .idx = 0,
				.target = { .word_size = 1, .byte_order = 1 }, .sha256 = "ab" };
	ck_assert_int_eq(store_record_add(s, &orphan, &d), -ENOENT);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 3);

	ck_assert_int_eq(store_begin(s, &d), 0);
	ck_assert_int_eq(store_package_remove(s, "fat", &d), 0);
	ck_assert_int_eq(store_commit(s, &d), 0);
	ck_assert_int_eq(store_package_remove(s, "fat", &d), -ENOENT);
	ck_assert_int_eq(store_file_owner(s, "/usr/bin/fat", &owner, &d), 0);
	ck_assert_int_eq(store_file_owner(s, "/usr/bin/other", &owner, &d), 1);
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

/* A commit that does not wait for the disk still survives the process:
 * a child that commits so and dies without closing leaves the row for
 * the next connection. Inside a transaction the durability stays. */
START_TEST(test_lazy_commit_survives_exit)
{
	fatelf_diag d = { 0 };
	pid_t pid;
	int status;

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_begin(s, &d), 0);
	ck_assert_int_eq(store_set_durable(s, false, &d), -EBUSY);
	ck_assert_int_eq(store_rollback(s, &d), 0);
	store_close(s);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		store *c = NULL;
		fatelf_diag cd = { 0 };
		if (store_open(DB, 0, &c, &cd) < 0 || store_set_durable(c, false, &cd) < 0)
			_exit(2);
		store_package p = { .name = "lazy", .version = "1", .installed_at = 1, .policy = "native" };
		int64_t id;
		if (store_package_add(c, &p, &id, &cd) < 0)
			_exit(3);
		_exit(0); /* no close, no checkpoint: as a kill -9 */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages WHERE name = 'lazy'"), 1);

	/* Back to durable: commits go on as before. */
	s = open_ok();
	ck_assert_int_eq(store_set_durable(s, false, &d), 0);
	ck_assert_int_eq(store_set_durable(s, true, &d), 0);
	add_package(s, "durable", "1");
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages"), 2);
}
END_TEST

static int collect_tx(const store_tx *t, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%lld %s %s %s->%s %s %lld..%lld w=%llu s=%lld e=%s;",
		 (long long)t->id, store_tx_kind_to_text(t->kind), t->package, t->old_version ? t->old_version : "-",
		 t->new_version ? t->new_version : "-", store_tx_state_to_text(t->state), (long long)t->started_at,
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
	store_tx a = { .kind = STORE_TX_INSTALL, .package = "hello", .new_version = "1.0", .started_at = 100 };
	store_tx b = { .kind = STORE_TX_UPGRADE, .package = "hello", .old_version = "1.0",
		       .new_version = "2.0", .started_at = 200 };
	ck_assert_int_eq(store_tx_begin(s, &a, &t1, &d), 0);
	ck_assert_int_eq(store_tx_begin(s, &b, &t2, &d), 0);
	ck_assert_int_ne(t1, t2);
	ck_assert_int_eq(store_tx_finish(s, t1, STORE_TX_COMMITTED, 110, 4096, 512, NULL, &d), 0);
	ck_assert_int_eq(store_tx_finish(s, t2, STORE_TX_FAILED, 210, 10, 0, "no space", &d), 0);
	/* A finished row is closed for good. */
	ck_assert_int_eq(store_tx_finish(s, t1, STORE_TX_FAILED, 120, 0, 0, NULL, &d), -ENOENT);
	/* The schema refuses a state it does not know. */
	store_tx bad = { .kind = (store_tx_kind)99, .package = "x", .started_at = 1 };
	ck_assert_int_eq(store_tx_begin(s, &bad, NULL, &d), -EINVAL);

	ck_assert_int_eq(tx_list(s, collect_tx, buf, &d), 2);
	char want[512];
	snprintf(want, sizeof(want),
		 "%lld install hello -->1.0 committed 100..110 w=4096 s=512 e=-;"
		 "%lld upgrade hello 1.0->2.0 failed 200..210 w=10 s=0 e=no space;",
		 (long long)t1, (long long)t2);
	ck_assert_str_eq(buf, want);
	store_close(s);
}
END_TEST

/* A file row with every field the caller chooses. */
static void add_file_full(store *s, int64_t pkg, const char *path, const char *kind,
			  const char *form, uint64_t size, uint64_t installed_size)
{
	fatelf_diag d = { 0 };
	store_file f = {
		.path = path, .package_id = pkg, .type = STORE_FILE_REGULAR, .mode = 0644, .size = size,
		.sha256 = "aa", .installed_size = installed_size, .installed_sha256 = "bb",
	};
	int r;

	ck_assert_int_eq(store_file_kind_from_text(kind, &f.kind, &d), 0);
	ck_assert_int_eq(store_form_from_text(form, &f.installed_form, &d), 0);
	r = store_file_add(s, &f, &d);

	ck_assert_msg(r == 0, "file_add %s: %d %s", path, r, d.msg);
}

static void add_records(store *s, const char *path, unsigned n)
{
	fatelf_diag d = { 0 };

	for (unsigned i = 0; i < n; i++) {
		store_record rec = {
			.path = path, .idx = i,
			.target = { .machine = i == 0 ? 62 : 183, .osabi = 3, .osabi_version = (uint8_t)i,
				    .word_size = 2, .byte_order = 1 },
			.offset = 65536 * (i + 1),
			.size = 1000 + i, .sha256 = "cd", .kept = 1,
		};
		int r = store_record_add(s, &rec, &d);

		ck_assert_msg(r == 0, "record_add %s %u: %d %s", path, i, r, d.msg);
	}
}

START_TEST(test_package_update_keeps_id)
{
	fatelf_diag d = { 0 };
	store_package p;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "hello", "1.0");
	add_package(s, "other", "5");
	add_file(s, a, "/usr/bin/hello");

	store_package up = {
		.name = "ignored", .version = "2.0", .vendor = "New Vendor",
		.signer_keyid = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3",
		.installed_at = 1800000000, .policy = "keep",
	};
	ck_assert_int_eq(store_package_update(s, a, &up, &d), 0);
	ck_assert_int_eq(store_package_get(s, "hello", &p, &d), 1);
	ck_assert_int_eq(p.id, a);
	ck_assert_str_eq(p.name, "hello");
	ck_assert_str_eq(p.version, "2.0");
	ck_assert_str_eq(p.summary, "");
	ck_assert_str_eq(p.vendor, "New Vendor");
	ck_assert_str_eq(p.signer_keyid, up.signer_keyid);
	ck_assert_int_eq(p.installed_at, 1800000000);
	ck_assert_str_eq(p.policy, "keep");
	store_package_done(&p);
	/* The files still belong to the same package row. */
	char *owner = NULL;
	ck_assert_int_eq(store_file_owner(s, "/usr/bin/hello", &owner, &d), 1);
	ck_assert_str_eq(owner, "hello");
	free(owner);

	ck_assert_int_eq(store_package_update(s, 9999, &up, &d), -ENOENT);
	ck_assert_str_eq(d.msg, "no package has id 9999");
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages WHERE name = 'ignored'"), 0);
	store_close(s);
}
END_TEST

START_TEST(test_usage_and_count)
{
	fatelf_diag d = { 0 };
	store_usage u = { .files = 77 };
	uint64_t n = 99;

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_package_count(s, &n, &d), 0);
	ck_assert_uint_eq(n, 0);
	int64_t a = add_package(s, "app", "1");
	int64_t b = add_package(s, "lib", "1");
	int64_t e = add_package(s, "empty", "1");
	add_file_full(s, a, "/opt/app/bin/fat", "fatelf", "as-shipped", 3000, 3000);
	add_file_full(s, a, "/opt/app/bin/thin", "fatelf", "thinned", 5000, 1200);
	add_file_full(s, a, "/opt/app/bin/elf", "elf", "as-shipped", 700, 700);
	add_file_full(s, a, "/opt/app/README", "data", "as-shipped", 40, 40);
	add_file_full(s, b, "/opt/lib/libx.so", "fatelf", "thinned", 9000, 4000);
	add_file_full(s, b, "/opt/lib/odd", "data", "as-shipped", 100, 60);

	ck_assert_int_eq(store_usage_get(s, a, &u, &d), 0);
	ck_assert_uint_eq(u.files, 4);
	ck_assert_uint_eq(u.fat_files, 2);
	ck_assert_uint_eq(u.fat_files_fat, 1);
	ck_assert_uint_eq(u.shipped_size, 3000 + 5000 + 700 + 40);
	ck_assert_uint_eq(u.installed_size, 3000 + 1200 + 700 + 40);
	ck_assert_int_eq(u.bytes_saved, 3800);

	/* All packages; an as-shipped file smaller on disk saves nothing. */
	ck_assert_int_eq(store_usage_get(s, 0, &u, &d), 0);
	ck_assert_uint_eq(u.files, 6);
	ck_assert_uint_eq(u.fat_files, 3);
	ck_assert_uint_eq(u.fat_files_fat, 1);
	ck_assert_uint_eq(u.shipped_size, 3000 + 5000 + 700 + 40 + 9000 + 100);
	ck_assert_uint_eq(u.installed_size, 3000 + 1200 + 700 + 40 + 4000 + 60);
	ck_assert_int_eq(u.bytes_saved, 3800 + 5000);

	ck_assert_int_eq(store_usage_get(s, e, &u, &d), 0);
	ck_assert_uint_eq(u.files, 0);
	ck_assert_uint_eq(u.shipped_size, 0);
	ck_assert_int_eq(u.bytes_saved, 0);
	u.files = 77;
	ck_assert_int_eq(store_usage_get(s, 4242, &u, &d), -ENOENT);
	ck_assert_uint_eq(u.files, 77);

	ck_assert_int_eq(store_package_count(s, &n, &d), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(store_package_remove(s, "empty", &d), 0);
	ck_assert_int_eq(store_package_count(s, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	store_close(s);
}
END_TEST

START_TEST(test_file_get)
{
	fatelf_diag d = { 0 };
	store_kept k = { 0 };
	store_file f;
	char *owner = NULL;

	tu_tmpdir();
	store *s = open_ok();
	add_package(s, "first", "1");
	int64_t a = add_package(s, "tools", "1");
	add_file_full(s, a, "/usr/bin/tool", "elf", "as-shipped", 123, 123);
	store_file link = { .path = "/usr/bin/t", .package_id = a, .type = STORE_FILE_SYMLINK,
			    .mode = 0777, .link_target = "tool" };
	ck_assert_int_eq(store_file_add(s, &link, &d), 0);

	ck_assert_int_eq(store_file_get(s, "/usr/bin/tool", &f, &owner, &d), 1);
	ck_assert_str_eq(owner, "tools");
	ck_assert_str_eq(f.path, "/usr/bin/tool");
	ck_assert_int_eq(f.package_id, a);
	ck_assert_int_eq(f.type, STORE_FILE_REGULAR);
	ck_assert_uint_eq(f.mode, 0644);
	ck_assert_uint_eq(f.size, 123);
	ck_assert_str_eq(f.sha256, "aa");
	ck_assert_ptr_null(f.link_target);
	ck_assert_int_eq(f.config, 0);
	ck_assert_int_eq(f.kind, STORE_KIND_ELF);
	ck_assert_int_eq(f.installed_form, STORE_FORM_AS_SHIPPED);
	ck_assert_uint_eq(f.installed_size, 123);
	ck_assert_str_eq(f.installed_sha256, "bb");
	store_file_done(&f);
	free(owner);

	/* The owner's name is optional. */
	ck_assert_int_eq(store_file_get(s, "/usr/bin/t", &f, NULL, &d), 1);
	ck_assert_int_eq(f.type, STORE_FILE_SYMLINK);
	ck_assert_str_eq(f.link_target, "tool");
	ck_assert_ptr_null(f.sha256);
	ck_assert_uint_eq(f.mode, 0777);
	store_file_done(&f);

	owner = (char *)"untouched";
	f.path = "untouched";
	/* an unowned path is an answer: the diag keeps what it held */
	fatelf_diag_set(&d, -EIO, -1, "an earlier failure");
	fatelf_diag_names(&d, "/earlier");
	ck_assert_int_eq(store_file_get(s, "/usr/bin/none", &f, &owner, &d), 0);
	ck_assert_int_eq(d.code, -EIO);
	ck_assert_str_eq(d.msg, "an earlier failure");
	ck_assert_str_eq(d.subject, "/earlier");
	ck_assert_int_eq(store_file_owner(s, "/usr/bin/none", &owner, &d), 0);
	ck_assert_int_eq(store_kept_get(s, "/usr/bin/none", &k, &d), 0);
	ck_assert_str_eq(d.subject, "/earlier");
	ck_assert_str_eq(d.msg, "an earlier failure");
	ck_assert_str_eq(owner, "untouched");
	ck_assert_str_eq(f.path, "untouched");
	store_close(s);
}
END_TEST

static int collect_installed(const store_file *f, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%s:%s:%llu:%s;", f->path, store_form_to_text(f->installed_form),
		 (unsigned long long)f->installed_size,
		 f->installed_sha256 ? f->installed_sha256 : "-");
	return 0;
}

static int collect_record(const store_record *r, void *userdata)
{
	char *buf = userdata, name[FATELF_TARGET_NAME_MAX];
	size_t len = strlen(buf);

	fatelf_target_format(&r->target, name);
	snprintf(buf + len, 512 - len, "%s#%u %s m=%u abi=%u/%u w=%u o=%llu s=%llu k=%d;", r->path,
		 r->idx, name, r->target.machine, r->target.osabi, r->target.osabi_version,
		 r->target.word_size,
		 (unsigned long long)r->offset, (unsigned long long)r->size, r->kept);
	return 0;
}

START_TEST(test_thin_updates)
{
	fatelf_diag d = { 0 };
	char buf[512] = "";

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "fat", "1");
	add_file_full(s, a, "/bin/fat", "fatelf", "as-shipped", 200000, 200000);
	add_file_full(s, a, "/bin/plain", "data", "as-shipped", 10, 10);
	add_records(s, "/bin/fat", 2);

	ck_assert_int_eq(store_file_set_installed(s, "/bin/fat", STORE_FORM_THINNED, 70000, "beef", &d), 0);
	ck_assert_int_eq(store_record_set_kept(s, "/bin/fat", 1, 0, &d), 0);

	ck_assert_int_eq(files_of(s, "fat", collect_installed, buf, &d), 2);
	ck_assert_str_eq(buf, "/bin/fat:thinned:70000:beef;/bin/plain:as-shipped:10:bb;");
	buf[0] = '\0';
	ck_assert_int_eq(records_of(s, "/bin/fat", collect_record, buf, &d), 2);
	/* The targets come back typed, from their fields. */
	ck_assert_str_eq(buf, "/bin/fat#0 x86_64:64bits:le:linux:osabiver0 m=62 abi=3/0 w=2 o=65536 s=1000 k=1;"
			      "/bin/fat#1 aarch64:64bits:le:linux:osabiver1 m=183 abi=3/1 w=2 o=131072 s=1001 k=0;");
	store_usage u;
	ck_assert_int_eq(store_usage_get(s, a, &u, &d), 0);
	ck_assert_int_eq(u.bytes_saved, 130000);
	ck_assert_uint_eq(u.fat_files_fat, 0);

	/* A file that is not fat has no records; a path nobody owns is an error. */
	buf[0] = '\0';
	ck_assert_int_eq(records_of(s, "/bin/plain", collect_record, buf, &d), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(records_of(s, "/bin/none", collect_record, buf, &d), -ENOENT);
	ck_assert_str_eq(d.msg, "/bin/none: no package owns this path");

	ck_assert_int_eq(store_record_set_kept(s, "/bin/fat", 5, 0, &d), -ENOENT);
	ck_assert_str_eq(d.msg, "/bin/fat: record 5 is not stored");
	ck_assert_int_eq(store_file_set_installed(s, "/bin/none", STORE_FORM_THINNED, 1, "x", &d), -ENOENT);
	ck_assert_str_eq(d.msg, "/bin/none: no package owns this path");
	/* The schema knows two forms only. */
	ck_assert_int_eq(store_file_set_installed(s, "/bin/fat", (store_form)7, 1, "x", &d), -EINVAL);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT installed_size FROM files WHERE path = '/bin/fat'"), 70000);
}
END_TEST

START_TEST(test_file_delete_cascades)
{
	fatelf_diag d = { 0 };
	char buf[512] = "";
	char *owner = NULL;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	int64_t b = add_package(s, "b", "1");
	add_file(s, a, "/a/one");
	add_file(s, a, "/a/two");
	add_file(s, a, "/a/three");
	add_file(s, b, "/b/one");
	add_records(s, "/a/one", 3);
	add_records(s, "/a/two", 2);
	add_records(s, "/b/one", 2);

	ck_assert_int_eq(store_file_delete(s, "/a/one", &d), 0);
	ck_assert_int_eq(store_file_owner(s, "/a/one", &owner, &d), 0);
	ck_assert_int_eq(store_file_delete(s, "/a/one", &d), -ENOENT);
	ck_assert_str_eq(d.msg, "/a/one: no package owns this path");
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records WHERE path = '/a/one'"), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 4);

	ck_assert_int_eq(store_files_delete_package(s, a, &d), 0);
	/* The package row stays (an upgrade writes new files for it). */
	ck_assert_int_eq(files_of(s, "a", collect_path, buf, &d), 0);
	ck_assert_int_eq(store_file_owner(s, "/b/one", &owner, &d), 1);
	ck_assert_str_eq(owner, "b");
	free(owner);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 2);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records WHERE path = '/b/one'"), 2);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM packages"), 2);
}
END_TEST

static int collect_target(const store_file *f, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%s:%s;", f->path,
		 f->type == STORE_FILE_SYMLINK ? f->link_target : f->sha256);
	return 0;
}

static int stop_at_first(const store_file *f, void *userdata)
{
	(void)f;
	(void)userdata;
	return -ECANCELED;
}

/* An upgrade rewrites the row of a file it keeps owning in place: every
 * column but the path and the package, the row's id (its place) the
 * same; a path of another package is not rewritten. Records go only with
 * store_records_delete. The rows of a package by id come unsorted and
 * whole. */
START_TEST(test_file_replace)
{
	fatelf_diag d = { 0 };
	store_file f;
	char buf[512] = "";

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	int64_t b = add_package(s, "b", "1");
	add_file(s, a, "/a/fat");
	add_file(s, a, "/a/two");
	add_file(s, b, "/b/one");
	add_records(s, "/a/fat", 2);
	ck_assert_int_eq(store_file_set_disk(s, "/a/fat", &(store_disk) { .known = true, .size = 10,
		.ino = 7, .mtime_ns = 1, .ctime_ns = 2 }, &d), 0);
	int64_t rowid = sql_int(DB, "SELECT rowid FROM files WHERE path = '/a/fat'");

	store_file g = {
		.path = "/a/fat", .package_id = a, .type = STORE_FILE_REGULAR, .mode = 0600,
		.size = 20, .sha256 = "11", .config = 1, .kind = STORE_KIND_DATA,
		.installed_form = STORE_FORM_AS_SHIPPED, .installed_size = 20, .installed_sha256 = "22",
	};
	ck_assert_int_eq(store_records_delete(s, "/a/fat", &d), 0);
	ck_assert_int_eq(store_file_replace(s, &g, &d), 0);
	ck_assert_int_eq(store_file_get(s, "/a/fat", &f, NULL, &d), 1);
	ck_assert_int_eq(f.package_id, a);
	ck_assert_uint_eq(f.mode, 0600);
	ck_assert_uint_eq(f.size, 20);
	ck_assert_str_eq(f.sha256, "11");
	ck_assert_int_eq(f.config, 1);
	ck_assert_int_eq(f.kind, STORE_KIND_DATA);
	ck_assert_str_eq(f.installed_sha256, "22");
	/* what it looked like on disk is not known for the new bytes */
	ck_assert(!f.disk.known);
	store_file_done(&f);
	/* a symlink now */
	store_file l = { .path = "/a/two", .package_id = a, .type = STORE_FILE_SYMLINK, .mode = 0777,
			 .link_target = "fat" };
	ck_assert_int_eq(store_file_replace(s, &l, &d), 0);
	/* another package's path, or none, is not rewritten */
	g.path = "/b/one";
	ck_assert_int_eq(store_file_replace(s, &g, &d), -ENOENT);
	ck_assert_str_eq(d.subject, "/b/one");
	g.path = "/a/none";
	ck_assert_int_eq(store_file_replace(s, &g, &d), -ENOENT);
	ck_assert_int_eq(store_records_delete(s, "/a/none", &d), 0);

	ck_assert_int_eq(store_files_of_id(s, a, collect_target, buf, &d), 2);
	ck_assert(strcmp(buf, "/a/fat:11;/a/two:fat;") == 0 || strcmp(buf, "/a/two:fat;/a/fat:11;") == 0);
	ck_assert_int_eq(store_files_of_id(s, 12345, collect_target, buf, &d), 0);
	/* the callback's error stops the walk */
	ck_assert_int_eq(store_files_of_id(s, a, stop_at_first, NULL, &d), -ECANCELED);
	ck_assert_int_eq(store_file_get(s, "/b/one", &f, NULL, &d), 1);
	ck_assert_int_eq(f.package_id, b);
	ck_assert_str_eq(f.sha256, "00");
	store_file_done(&f);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT rowid FROM files WHERE path = '/a/fat'"), rowid);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 0);
}
END_TEST

/* A commit that need not wait for the disk (a cache's rows): taken like
 * any, and the commits after it sync again; not inside a transaction. */
START_TEST(test_lazy_commit_applies)
{
	fatelf_diag d = { 0 };

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	add_file(s, a, "/a/one");
	ck_assert_int_eq(store_set_durable(s, false, &d), 0);
	ck_assert_int_eq(store_begin(s, &d), 0);
	ck_assert_int_eq(store_file_set_disk(s, "/a/one", &(store_disk) { .known = true, .size = 10,
		.ino = 7, .mtime_ns = 1, .ctime_ns = 2 }, &d), 0);
	ck_assert_int_lt(store_set_durable(s, true, &d), 0);
	ck_assert_int_eq(store_commit(s, &d), 0);
	ck_assert_int_eq(store_set_durable(s, true, &d), 0);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT disk_ino FROM files WHERE path = '/a/one'"), 7);
}
END_TEST

/* A file's disk columns as staged (by_package: no change time) read back
 * so, and the package's settled time is one row, 0 until it is set. */
START_TEST(test_disk_by_package)
{
	fatelf_diag d = { 0 };
	store_package p;
	store_file f;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	add_file(s, a, "/a/one");
	ck_assert_int_eq(store_package_get(s, "a", &p, &d), 1);
	ck_assert_int_eq(p.disk_settled_ns, 0);
	store_package_done(&p);
	ck_assert_int_eq(store_file_set_disk(s, "/a/one", &(store_disk) { .known = true, .by_package = true,
		.size = 10, .ino = 7, .mtime_ns = 1, .ctime_ns = 99 }, &d), 0);
	ck_assert_int_eq(store_package_set_settled(s, a, 12345, &d), 0);
	ck_assert_int_eq(store_package_set_settled(s, a + 100, 1, &d), -ENOENT);
	ck_assert_int_eq(store_file_get(s, "/a/one", &f, NULL, &d), 1);
	ck_assert(f.disk.known && f.disk.by_package);
	ck_assert_uint_eq(f.disk.size, 10);
	ck_assert_uint_eq(f.disk.ino, 7);
	ck_assert_int_eq(f.disk.mtime_ns, 1);
	store_file_done(&f);
	ck_assert_int_eq(store_package_get(s, "a", &p, &d), 1);
	ck_assert_int_eq(p.disk_settled_ns, 12345);
	store_package_done(&p);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files WHERE path = '/a/one' AND disk_ctime_ns IS NULL "
				     "AND disk_ino = 7"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT disk_settled_ns FROM packages WHERE name = 'a'"), 12345);
}
END_TEST

static int stop_at_second(const store_file *f, void *userdata)
{
	int *seen = userdata;

	(void)f;
	return ++*seen == 2 ? -ECANCELED : 0;
}

START_TEST(test_files_all)
{
	fatelf_diag d = { 0 };
	char buf[512] = "";
	int seen = 0;

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_files_all(s, collect_installed, buf, &d), 0);
	int64_t a = add_package(s, "a", "1");
	int64_t b = add_package(s, "b", "1");
	add_file_full(s, b, "/usr/b", "data", "as-shipped", 1, 1);
	add_file_full(s, a, "/usr/c", "data", "as-shipped", 2, 2);
	add_file_full(s, a, "/usr/a", "fatelf", "thinned", 9, 3);

	ck_assert_int_eq(store_files_all(s, collect_installed, buf, &d), 3);
	ck_assert_str_eq(buf, "/usr/a:thinned:3:bb;/usr/b:as-shipped:1:bb;/usr/c:as-shipped:2:bb;");
	ck_assert_int_eq(store_files_all(s, stop_at_second, &seen, &d), -ECANCELED);
	ck_assert_int_eq(seen, 2);
	/* The walk's statement was released: a new walk starts from the top. */
	buf[0] = '\0';
	ck_assert_int_eq(store_files_all(s, collect_installed, buf, &d), 3);
	store_close(s);
}
END_TEST

static int collect_dir(const char *path, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%s;", path);
	return 0;
}

START_TEST(test_dirs)
{
	fatelf_diag d = { 0 };
	char buf[512] = "";
	uint64_t n = 99;

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	int64_t b = add_package(s, "b", "1");
	/* Added in no particular order. */
	const char *adirs[] = { "/opt/a/bin", "/opt", "/opt/a/lib/x", "/opt/a", "/opt/a/lib",
				"/opt/a.d", "/usr/share/a" };
	for (size_t i = 0; i < sizeof(adirs) / sizeof(adirs[0]); i++)
		ck_assert_int_eq(store_dir_add(s, adirs[i], a, &d), 0);
	ck_assert_int_eq(store_dir_add(s, "/opt", b, &d), 0);
	ck_assert_int_eq(store_dir_add(s, "/opt/b", b, &d), 0);
	ck_assert_int_eq(store_dir_add(s, "/usr/share/a", b, &d), 0);
	/* Owning a directory twice changes nothing. */
	ck_assert_int_eq(store_dir_add(s, "/opt/a", a, &d), 0);
	ck_assert_int_eq(store_dir_add(s, "relative/dir", a, &d), -EINVAL);
	ck_assert_int_eq(store_dir_add(s, "/opt/z", 777, &d), -ENOENT);
	ck_assert_str_eq(d.msg, "/opt/z: no package has id 777");

	ck_assert_int_eq(dirs_of(s, a, collect_dir, buf, &d), 7);
	/* Every directory comes before its parent, so rmdir in this order works. */
	ck_assert_str_eq(buf, "/usr/share/a;/opt/a/lib/x;/opt/a/lib;/opt/a/bin;/opt/a.d;/opt/a;/opt;");

	ck_assert_int_eq(store_dir_other_owners(s, "/opt", a, &n, &d), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(store_dir_other_owners(s, "/opt/a", a, &n, &d), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(store_dir_other_owners(s, "/opt", 0, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(store_dir_other_owners(s, "/nowhere", a, &n, &d), 0);
	ck_assert_uint_eq(n, 0);

	ck_assert_int_eq(store_dirs_delete_package(s, a, &d), 0);
	buf[0] = '\0';
	ck_assert_int_eq(dirs_of(s, a, collect_dir, buf, &d), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(store_dir_other_owners(s, "/opt", b, &n, &d), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(dirs_of(s, b, collect_dir, buf, &d), 3);
	ck_assert_str_eq(buf, "/usr/share/a;/opt/b;/opt;");
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM dirs"), 3);
}
END_TEST

static int collect_dir_mode(const store_dir *dir, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%s %lld %d;", dir->path, (long long)dir->package_id,
		 dir->mode);
	return 0;
}

/* Each directory keeps the mode it was installed with; one recorded
 * without (an older program) reads back as -1. */
START_TEST(test_dir_modes)
{
	fatelf_diag d = { 0 };
	char buf[512] = "";

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	int64_t b = add_package(s, "b", "1");
	ck_assert_int_eq(store_dir_add_mode(s, "/opt", a, 0755, &d), 0);
	ck_assert_int_eq(store_dir_add_mode(s, "/opt/a", a, 01777, &d), 0);
	ck_assert_int_eq(store_dir_add(s, "/opt", b, &d), 0);
	ck_assert_int_eq(dirs_with_modes(s, a, collect_dir_mode, buf, &d), 2);
	ck_assert_str_eq(buf, "/opt 1 493;/opt/a 1 1023;");
	/* Adding it again records the new mode. */
	ck_assert_int_eq(store_dir_add_mode(s, "/opt/a", a, 0700, &d), 0);
	buf[0] = '\0';
	ck_assert_int_eq(dirs_with_modes(s, 0, collect_dir_mode, buf, &d), 3);
	ck_assert_str_eq(buf, "/opt 1 493;/opt 2 -1;/opt/a 1 448;");
	(void)b;
	store_close(s);
}
END_TEST

struct nested {
	store *s;
	int inner;
	char msg[sizeof(((fatelf_diag *)0)->msg)];
};

static int nested_file(const store_file *f, void *userdata)
{
	struct nested *n = userdata;
	fatelf_diag d = { 0 };

	(void)f;
	n->inner = store_files_all(n->s, collect_installed, (char[512]) { "" }, &d);
	snprintf(n->msg, sizeof(n->msg), "%s", d.msg);
	return 0;
}

/* The walk over every file, called from its own callback, would rebind the
 * statement under the outer loop; it is refused instead. A list call made
 * from it reads another statement, and is fine. */
START_TEST(test_walk_not_reentrant)
{
	fatelf_diag d = { 0 };
	struct nested n = { .inner = 1 };
	char buf[512] = "";

	tu_tmpdir();
	n.s = open_ok();
	int64_t a = add_package(n.s, "a", "1");
	ck_assert_int_eq(a, 1);
	add_file_full(n.s, a, "/x", "data", "as-shipped", 1, 1);
	ck_assert_int_eq(store_files_all(n.s, nested_file, &n, &d), 1);
	ck_assert_int_eq(n.inner, -EBUSY);
	ck_assert_str_eq(n.msg, "a store query was called again from its own callback");
	/* Afterwards the statement works again. */
	ck_assert_int_eq(store_files_all(n.s, collect_installed, buf, &d), 1);
	ck_assert_str_eq(buf, "/x:as-shipped:1:bb;");
	store_close(n.s);
}
END_TEST

START_TEST(test_tx_get_history_pending)
{
	fatelf_diag d = { 0 };
	int64_t t[6] = { 0 };
	char buf[512] = "", want[512];
	store_tx x;

	tu_tmpdir();
	store *s = open_ok();
	store_tx rows[] = {
		{ .kind = STORE_TX_INSTALL, .package = "hello", .new_version = "1.0", .started_at = 10 },
		{ .kind = STORE_TX_INSTALL, .package = "world", .new_version = "3", .started_at = 20 },
		{ .kind = STORE_TX_UPGRADE, .package = "hello", .old_version = "1.0", .new_version = "2.0",
		  .started_at = 30 },
		{ .kind = STORE_TX_REMOVE, .package = "world", .old_version = "3", .started_at = 40 },
		{ .kind = STORE_TX_THIN, .package = "hello", .started_at = 50 },
	};
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(store_tx_begin(s, &rows[i], &t[i], &d), 0);
	ck_assert_int_eq(store_tx_finish(s, t[0], STORE_TX_COMMITTED, 11, 100, 0, NULL, &d), 0);
	ck_assert_int_eq(store_tx_mark_committed(s, t[2], 31, 300, 7, &d), 0);
	ck_assert_int_eq(store_tx_finish(s, t[3], STORE_TX_FAILED, 41, 0, 0, "disk full", &d), 0);
	/* t[1] and t[4] stay pending, as after a crash. */

	ck_assert_int_eq(store_tx_get(s, t[3], &x, &d), 1);
	ck_assert_int_eq(x.id, t[3]);
	ck_assert_int_eq(x.kind, STORE_TX_REMOVE);
	ck_assert_str_eq(x.package, "world");
	ck_assert_str_eq(x.old_version, "3");
	ck_assert_ptr_null(x.new_version);
	ck_assert_int_eq(x.state, STORE_TX_FAILED);
	ck_assert_int_eq(x.started_at, 40);
	ck_assert_int_eq(x.finished_at, 41);
	ck_assert_str_eq(x.error, "disk full");
	store_tx_done(&x);
	ck_assert_int_eq(store_tx_get(s, t[1], &x, &d), 1);
	ck_assert_int_eq(x.state, STORE_TX_PENDING);
	ck_assert_int_eq(x.finished_at, 0);
	ck_assert_ptr_null(x.error);
	store_tx_done(&x);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(store_tx_get(s, 4242, &x, &d), 0);
	ck_assert_str_eq(d.msg, "");

	/* Newest first, all packages. */
	ck_assert_int_eq(tx_history(s, NULL, 0, collect_tx, buf, &d), 5);
	snprintf(want, sizeof(want),
		 "%lld thin hello -->- pending 50..0 w=0 s=0 e=-;"
		 "%lld remove world 3->- failed 40..41 w=0 s=0 e=disk full;"
		 "%lld upgrade hello 1.0->2.0 committed 30..31 w=300 s=7 e=-;"
		 "%lld install world -->3 pending 20..0 w=0 s=0 e=-;"
		 "%lld install hello -->1.0 committed 10..11 w=100 s=0 e=-;",
		 (long long)t[4], (long long)t[3], (long long)t[2], (long long)t[1],
		 (long long)t[0]);
	ck_assert_str_eq(buf, want);
	buf[0] = '\0';
	ck_assert_int_eq(tx_history(s, NULL, 2, collect_tx, buf, &d), 2);
	ck_assert_ptr_nonnull(strstr(buf, "thin hello"));
	ck_assert_ptr_nonnull(strstr(buf, "remove world"));
	ck_assert_ptr_null(strstr(buf, "upgrade"));

	/* One package, with and without a limit. */
	buf[0] = '\0';
	ck_assert_int_eq(tx_history(s, "hello", 0, collect_tx, buf, &d), 3);
	snprintf(want, sizeof(want),
		 "%lld thin hello -->- pending 50..0 w=0 s=0 e=-;"
		 "%lld upgrade hello 1.0->2.0 committed 30..31 w=300 s=7 e=-;"
		 "%lld install hello -->1.0 committed 10..11 w=100 s=0 e=-;",
		 (long long)t[4], (long long)t[2], (long long)t[0]);
	ck_assert_str_eq(buf, want);
	buf[0] = '\0';
	ck_assert_int_eq(tx_history(s, "hello", 2, collect_tx, buf, &d), 2);
	ck_assert_ptr_null(strstr(buf, "install"));
	ck_assert_int_eq(tx_history(s, "nosuch", 0, collect_tx, buf, &d), 0);

	/* Pending rows, oldest first. */
	buf[0] = '\0';
	ck_assert_int_eq(tx_pending(s, collect_tx, buf, &d), 2);
	snprintf(want, sizeof(want),
		 "%lld install world -->3 pending 20..0 w=0 s=0 e=-;"
		 "%lld thin hello -->- pending 50..0 w=0 s=0 e=-;",
		 (long long)t[1], (long long)t[4]);
	ck_assert_str_eq(buf, want);
	store_close(s);
}
END_TEST

struct recover {
	store *s;
	int seen;
};

/* What recovery does: close each pending row in its own store transaction
 * from inside the walk. */
static int recover_tx(const store_tx *t, void *userdata)
{
	struct recover *rc = userdata;
	fatelf_diag d = { 0 };

	rc->seen++;
	ck_assert_int_eq(t->state, STORE_TX_PENDING);
	ck_assert_int_eq(store_begin(rc->s, &d), 0);
	ck_assert_int_eq(store_tx_finish(rc->s, t->id, STORE_TX_ROLLED_BACK, 99, 0, 0, "interrupted", &d), 0);
	ck_assert_int_eq(store_journal_clear(rc->s, t->id, &d), 0);
	ck_assert_int_eq(store_commit(rc->s, &d), 0);
	return 0;
}

static int recover_txid(int64_t txid, void *userdata)
{
	struct recover *rc = userdata;
	fatelf_diag d = { 0 };

	rc->seen++;
	ck_assert_int_eq(store_journal_clear(rc->s, txid, &d), 0);
	return 0;
}

START_TEST(test_recovery_walks)
{
	fatelf_diag d = { 0 };
	int64_t t[4];
	struct recover rc = { 0 };

	tu_tmpdir();
	store *s = open_ok();
	rc.s = s;
	for (int i = 0; i < 4; i++) {
		store_tx x = { .kind = STORE_TX_INSTALL, .package = "p", .started_at = i };
		ck_assert_int_eq(store_tx_begin(s, &x, &t[i], &d), 0);
		for (unsigned k = 0; k < 3; k++) {
			store_journal_op op = { .txid = t[i], .seq = k, .op = STORE_JOP_CREATE, .path = "/p",
						.temp_path = "/.p.tmp" };
			ck_assert_int_eq(store_journal_add(s, &op, &d), 0);
		}
	}
	ck_assert_int_eq(store_tx_finish(s, t[1], STORE_TX_COMMITTED, 5, 0, 0, NULL, &d), 0);

	ck_assert_int_eq(tx_pending(s, recover_tx, &rc, &d), 3);
	ck_assert_int_eq(rc.seen, 3);
	ck_assert_int_eq(tx_pending(s, recover_tx, &rc, &d), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM transactions WHERE state = 'rolled-back' "
				 "AND error = 'interrupted' AND finished_at = 99"), 3);
	/* The committed row kept its journal (roll forward); clear it too. */
	ck_assert_int_eq(sql_int(DB, "SELECT count(DISTINCT txid) FROM journal"), 1);
	rc.seen = 0;
	ck_assert_int_eq(journal_txids(s, recover_txid, &rc, &d), 1);
	ck_assert_int_eq(rc.seen, 1);
	ck_assert_int_eq(journal_txids(s, recover_txid, &rc, &d), 0);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM journal"), 0);
}
END_TEST

static int collect_op(const store_journal_op *op, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%lld.%llu %s %s t=%s b=%s %s;", (long long)op->txid,
		 (unsigned long long)op->seq, store_jop_to_text(op->op), op->path,
		 op->temp_path ? op->temp_path : "-", op->backup_path ? op->backup_path : "-",
		 store_jstate_to_text(op->state));
	return 0;
}

static int collect_txid(int64_t txid, void *userdata)
{
	char *buf = userdata;
	size_t len = strlen(buf);

	snprintf(buf + len, 512 - len, "%lld;", (long long)txid);
	return 0;
}

START_TEST(test_journal)
{
	fatelf_diag d = { 0 };
	int64_t t1 = 0, t2 = 0, t3 = 0;
	char buf[512] = "", want[512];

	tu_tmpdir();
	store *s = open_ok();
	store_tx x = { .kind = STORE_TX_INSTALL, .package = "p", .started_at = 1 };
	ck_assert_int_eq(store_tx_begin(s, &x, &t1, &d), 0);
	ck_assert_int_eq(store_tx_begin(s, &x, &t2, &d), 0);
	ck_assert_int_eq(store_tx_begin(s, &x, &t3, &d), 0);

	buf[0] = '\0';
	ck_assert_int_eq(journal_txids(s, collect_txid, buf, &d), 0);

	/* Added out of order, across two transactions. */
	store_journal_op ops[] = {
		{ .txid = t2, .seq = 0, .op = STORE_JOP_MKDIR, .path = "/opt/q" },
		{ .txid = t1, .seq = 2, .op = STORE_JOP_REMOVE, .path = "/opt/p/old" },
		{ .txid = t1, .seq = 0, .op = STORE_JOP_CREATE, .path = "/opt/p/new",
		  .temp_path = "/opt/p/.new.fatelf-tmp" },
		{ .txid = t1, .seq = 1, .op = STORE_JOP_REPLACE, .path = "/opt/p/bin",
		  .temp_path = "/opt/p/.bin.fatelf-tmp", .backup_path = "/opt/p/.bin.bak",
		  .state = STORE_JSTATE_DONE },
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		ck_assert_int_eq(store_journal_add(s, &ops[i], &d), 0);
	ck_assert_int_eq(store_journal_add(s, &ops[0], &d), -EEXIST);
	snprintf(want, sizeof(want), "transaction %lld: journal entry 0 is already stored",
		 (long long)t2);
	ck_assert_str_eq(d.msg, want);
	store_journal_op orphan = { .txid = 9999, .seq = 0, .op = STORE_JOP_CREATE, .path = "/x" };
	ck_assert_int_eq(store_journal_add(s, &orphan, &d), -ENOENT);
	ck_assert_str_eq(d.msg, "journal entry 0: transaction 9999 is not recorded");
	store_journal_op bad = { .txid = t3, .seq = 0, .op = (store_jop)42, .path = "/x" };
	ck_assert_int_eq(store_journal_add(s, &bad, &d), -EINVAL);

	ck_assert_int_eq(journal_of(s, t1, collect_op, buf, &d), 3);
	snprintf(want, sizeof(want),
		 "%lld.0 create /opt/p/new t=/opt/p/.new.fatelf-tmp b=- staged;"
		 "%lld.1 replace /opt/p/bin t=/opt/p/.bin.fatelf-tmp b=/opt/p/.bin.bak done;"
		 "%lld.2 remove /opt/p/old t=- b=- staged;",
		 (long long)t1, (long long)t1, (long long)t1);
	ck_assert_str_eq(buf, want);

	ck_assert_int_eq(store_journal_set_state(s, t1, 0, STORE_JSTATE_DONE, &d), 0);
	ck_assert_int_eq(store_journal_set_state(s, t1, 2, STORE_JSTATE_UNDONE, &d), 0);
	ck_assert_int_eq(store_journal_set_state(s, t1, 7, STORE_JSTATE_DONE, &d), -ENOENT);
	snprintf(want, sizeof(want), "transaction %lld: journal entry 7 is not stored", (long long)t1);
	ck_assert_str_eq(d.msg, want);
	ck_assert_int_eq(store_journal_set_state(s, t1, 1, (store_jstate)9, &d), -EINVAL);
	buf[0] = '\0';
	ck_assert_int_eq(journal_of(s, t1, collect_op, buf, &d), 3);
	ck_assert_ptr_nonnull(strstr(buf, ".0 create /opt/p/new t=/opt/p/.new.fatelf-tmp b=- done;"));
	ck_assert_ptr_nonnull(strstr(buf, ".1 replace /opt/p/bin t=/opt/p/.bin.fatelf-tmp b=/opt/p/.bin.bak done;"));
	ck_assert_ptr_nonnull(strstr(buf, ".2 remove /opt/p/old t=- b=- undone;"));

	buf[0] = '\0';
	ck_assert_int_eq(journal_txids(s, collect_txid, buf, &d), 2);
	snprintf(want, sizeof(want), "%lld;%lld;", (long long)t1, (long long)t2);
	ck_assert_str_eq(buf, want);

	ck_assert_int_eq(store_journal_clear(s, t1, &d), 0);
	buf[0] = '\0';
	ck_assert_int_eq(journal_of(s, t1, collect_op, buf, &d), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(journal_txids(s, collect_txid, buf, &d), 1);
	snprintf(want, sizeof(want), "%lld;", (long long)t2);
	ck_assert_str_eq(buf, want);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM journal"), 1);
}
END_TEST

/* A database made by a program that knew schema 1 only gains the history
 * indexes of schema 2 and keeps its rows. */
START_TEST(test_migrate_from_1)
{
	char buf[512] = "";
	fatelf_diag d = { 0 };

	tu_tmpdir();
	ck_assert_int_ge(store_migrations_count, 2);
	ck_assert_str_eq(store_migrations[1].name, "0002-history-indexes");
	sql_exec(DB, store_migrations[0].sql);
	sql_exec(DB, "PRAGMA user_version = 1; INSERT INTO transactions (kind, package, state, "
		 "started_at) VALUES ('install', 'old', 'pending', 5);");
	store *s = open_ok();
	ck_assert_int_eq(tx_pending(s, collect_tx, buf, &d), 1);
	ck_assert_ptr_nonnull(strstr(buf, "install old"));
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
				 "name IN ('transactions_package', 'transactions_pending')"), 2);
}
END_TEST

static int count_tx(const store_tx *t, void *userdata)
{
	return 0;
}

static int count_op(const store_journal_op *op, void *userdata)
{
	return 0;
}

/* Schema 3 builds the history table again: its rows and a pending
 * transaction's journal survive, and the new states are allowed. */
START_TEST(test_migrate_from_2)
{
	fatelf_diag d = { 0 };
	store_tx t = { 0 };

	tu_tmpdir();
	ck_assert_int_ge(store_migrations_count, 3);
	ck_assert_str_eq(store_migrations[2].name, "0003-queued-cancelled");
	sql_exec(DB, store_migrations[0].sql);
	sql_exec(DB, store_migrations[1].sql);
	sql_exec(DB, "PRAGMA user_version = 2; "
		 "INSERT INTO transactions (id, kind, package, state, started_at, finished_at, error) "
		 "VALUES (1, 'install', 'a', 'rolled-back', 5, 6, 'cancelled'); "
		 "INSERT INTO transactions (id, kind, package, state, started_at) "
		 "VALUES (2, 'upgrade', 'b', 'pending', 7); "
		 "INSERT INTO journal (txid, seq, op, path, temp_path) "
		 "VALUES (2, 0, 'create', '/opt/b/x', '/opt/b/.fatelf.2.0');");
	store *s = open_ok();
	ck_assert_int_eq(store_tx_get(s, 1, &t, &d), 1);
	ck_assert_int_eq(t.state, STORE_TX_ROLLED_BACK);
	ck_assert_str_eq(t.error, "cancelled");
	store_tx_done(&t);
	ck_assert_int_eq(journal_of(s, 2, count_op, NULL, &d), 1);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'transactions%'"), 4);
	ck_assert_int_eq(sql_int(DB, "PRAGMA foreign_key_check"), -1);
	/* The journal still belongs to its transaction. */
	sql_exec(DB, "PRAGMA foreign_keys = ON; DELETE FROM transactions WHERE id = 2;");
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM journal"), 0);
}
END_TEST

/* Schema 5 lets an install's history row say reinstall or downgrade: the
 * rows and a pending journal survive, an old "upgrade" between two equal
 * versions becomes a reinstall, and the new kinds are accepted. */
START_TEST(test_migrate_from_4)
{
	fatelf_diag d = { 0 };
	store_tx t = { 0 };
	store_tx down = { .kind = STORE_TX_DOWNGRADE, .package = "c", .old_version = "2", .new_version = "1",
			  .state = STORE_TX_PENDING, .started_at = 30 };
	int64_t id;

	tu_tmpdir();
	ck_assert_int_ge(store_migrations_count, 5);
	ck_assert_str_eq(store_migrations[4].name, "0005-reinstall-downgrade");
	for (size_t i = 0; i < 4; i++)
		sql_exec(DB, store_migrations[i].sql);
	sql_exec(DB, "PRAGMA user_version = 4; "
		 "INSERT INTO transactions (id, kind, package, old_version, new_version, state, "
		 "started_at, finished_at) VALUES (1, 'upgrade', 'a', '1.0', '1.0', 'committed', 5, 6); "
		 "INSERT INTO transactions (id, kind, package, old_version, new_version, state, "
		 "started_at, finished_at) VALUES (2, 'upgrade', 'a', '1.0', '2.0', 'committed', 7, 8); "
		 "INSERT INTO transactions (id, kind, package, state, started_at) "
		 "VALUES (3, 'install', 'b', 'pending', 9); "
		 "INSERT INTO journal (txid, seq, op, path, temp_path) "
		 "VALUES (3, 0, 'create', '/opt/b/x', '/opt/b/.fatelf-x');");
	store *s = open_ok();
	ck_assert_int_eq(store_tx_get(s, 1, &t, &d), 1);
	ck_assert_int_eq(t.kind, STORE_TX_REINSTALL);
	ck_assert_int_eq(t.state, STORE_TX_COMMITTED);
	store_tx_done(&t);
	ck_assert_int_eq(store_tx_get(s, 2, &t, &d), 1);
	ck_assert_int_eq(t.kind, STORE_TX_UPGRADE);
	store_tx_done(&t);
	ck_assert_int_eq(journal_of(s, 3, count_op, NULL, &d), 1);
	ck_assert_int_eq(store_tx_begin(s, &down, &id, &d), 0);
	ck_assert_int_eq(store_tx_get(s, id, &t, &d), 1);
	ck_assert_int_eq(t.kind, STORE_TX_DOWNGRADE);
	store_tx_done(&t);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'transactions%'"), 4);
	ck_assert_int_eq(sql_int(DB, "PRAGMA foreign_key_check"), -1);
	sql_exec(DB, "PRAGMA foreign_keys = ON; DELETE FROM transactions WHERE id = 3;");
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM journal"), 0);
}
END_TEST

/* Schema 7 builds files, records and the journal again with plain
 * comparisons for their closed sets: every row survives with every
 * column, the records still belong to their file and the journal to its
 * transaction, and each set still refuses a value outside it. */
START_TEST(test_migrate_from_6)
{
	fatelf_diag d = { 0 };

	tu_tmpdir();
	ck_assert_int_ge(store_migrations_count, 7);
	ck_assert_str_eq(store_migrations[6].name, "0007-plain-checks");
	for (size_t i = 0; i < 6; i++)
		sql_exec(DB, store_migrations[i].sql);
	sql_exec(DB, "PRAGMA user_version = 6; "
		 "INSERT INTO packages (id, name, version, installed_at, policy) VALUES (1, 'a', '1', 5, 'native'); "
		 "INSERT INTO files (path, package_id, type, mode, size, sha256, config, kind, installed_form, "
		 "installed_size, installed_sha256, disk_size, disk_ino, disk_mtime_ns, disk_ctime_ns) VALUES "
		 "('/opt/a/bin/a', 1, 'file', 493, 10, 'aa', 0, 'fatelf', 'thinned', 6, 'bb', 6, 77, 88, 99); "
		 "INSERT INTO files (path, package_id, type, mode, link_target, config) VALUES "
		 "('/opt/a/l', 1, 'symlink', 511, 'bin/a', 0); "
		 "INSERT INTO records (path, idx, target, machine, osabi, osabi_version, word_size, byte_order, "
		 "offset, size, sha256, kept) VALUES ('/opt/a/bin/a', 0, 'x86_64', 62, 0, 0, 2, 1, 4096, 6, 'cc', 1); "
		 "INSERT INTO transactions (id, kind, package, state, started_at) VALUES (2, 'remove', 'a', 'pending', 9); "
		 "INSERT INTO journal (txid, seq, op, path) VALUES (2, 0, 'remove', '/opt/a/l');");
	store *s = open_ok();
	ck_assert_int_eq(journal_of(s, 2, count_op, NULL, &d), 1);
	store_close(s);
	ck_assert_int_eq(sql_int(DB, "PRAGMA user_version"), (int64_t)store_migrations_count);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files WHERE path = '/opt/a/bin/a' AND package_id = 1 "
				 "AND type = 'file' AND mode = 493 AND size = 10 AND sha256 = 'aa' AND kind = 'fatelf' "
				 "AND installed_form = 'thinned' AND installed_size = 6 AND installed_sha256 = 'bb' "
				 "AND disk_size = 6 AND disk_ino = 77 AND disk_mtime_ns = 88 AND disk_ctime_ns = 99"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files WHERE link_target = 'bin/a'"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records WHERE path = '/opt/a/bin/a' AND offset = 4096"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM sqlite_master WHERE name = 'files_package'"), 1);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%saved%' OR name = 'files_6'"), 0);
	ck_assert_int_eq(sql_int(DB, "PRAGMA foreign_key_check"), -1);
	/* Each closed set still refuses what it refused. */
	ck_assert_int_ne(sql_try(DB, "UPDATE files SET type = 'dir' WHERE path = '/opt/a/l'"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE files SET kind = 'blob' WHERE path = '/opt/a/l'"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE files SET config = 2 WHERE path = '/opt/a/l'"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE files SET installed_form = 'fat' WHERE path = '/opt/a/l'"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE records SET word_size = 3"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE records SET kept = 2"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE journal SET op = 'move'"), SQLITE_OK);
	ck_assert_int_ne(sql_try(DB, "UPDATE journal SET state = 'lost'"), SQLITE_OK);
	ck_assert_int_eq(sql_try(DB, "UPDATE journal SET state = 'done'"), SQLITE_OK);
	/* The records go with their file, the files with their package, and
	 * the journal with its transaction. */
	sql_exec(DB, "PRAGMA foreign_keys = ON; DELETE FROM packages WHERE id = 1; DELETE FROM transactions WHERE id = 2;");
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM files"), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records"), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM journal"), 0);
}
END_TEST

/* A queued row: its id is the one the job's first transaction takes. */
START_TEST(test_queued_rows)
{
	fatelf_diag d = { 0 };
	store_tx t = { 0 };
	store_tx row = { .kind = STORE_TX_UPGRADE, .package = "hello", .old_version = "1", .new_version = "2",
			 .state = STORE_TX_PENDING, .started_at = 20 };
	int64_t q1, q2, q3, q4, id;

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_tx_queue(s, STORE_TX_INSTALL, NULL, 10, &q1, &d), 0);
	ck_assert_int_eq(store_tx_queue(s, STORE_TX_REMOVE, "x", 11, &q2, &d), 0);
	ck_assert_int_eq(store_tx_queue(s, STORE_TX_THIN, NULL, 12, &q3, &d), 0);
	ck_assert_int_eq(store_tx_queue(s, STORE_TX_INSTALL, NULL, 13, &q4, &d), 0);
	ck_assert_int_eq(store_tx_get(s, q1, &t, &d), 1);
	ck_assert_int_eq(t.state, STORE_TX_QUEUED);
	ck_assert_int_eq(t.finished_at, 0);
	store_tx_done(&t);

	/* The adopted row becomes the pending one, with the job's fields. */
	store_tx_adopt(s, q1);
	ck_assert_int_eq(store_tx_begin(s, &row, &id, &d), 0);
	ck_assert_int_eq(id, q1);
	ck_assert_int_eq(store_tx_get(s, q1, &t, &d), 1);
	ck_assert_int_eq(t.state, STORE_TX_PENDING);
	ck_assert_int_eq(t.kind, STORE_TX_UPGRADE);
	ck_assert_str_eq(t.package, "hello");
	ck_assert_int_eq(t.started_at, 20);
	store_tx_done(&t);
	/* Only once: the next begin is a row of its own. */
	ck_assert_int_eq(store_tx_begin(s, &row, &id, &d), 0);
	ck_assert_int_gt(id, q4);
	ck_assert_int_eq(store_tx_dequeue(s, q1, STORE_TX_CANCELLED, 30, "late", &d), 0);

	ck_assert_int_eq(store_tx_dequeue(s, q2, STORE_TX_CANCELLED, 30, "cancelled before it started", &d), 1);
	ck_assert_int_eq(store_tx_get(s, q2, &t, &d), 1);
	ck_assert_int_eq(t.state, STORE_TX_CANCELLED);
	ck_assert_int_eq(t.finished_at, 30);
	store_tx_done(&t);
	ck_assert_int_eq(store_tx_drop_queued(s, q3, &d), 1);
	ck_assert_int_eq(store_tx_get(s, q3, &t, &d), 0);
	/* A queued row is not a pending one: recovery leaves it alone. */
	ck_assert_int_eq(tx_pending(s, count_tx, NULL, &d), 2);
	ck_assert_int_eq(store_tx_cancel_queued(s, 40, "stopped", &d), 1);
	ck_assert_int_eq(store_tx_get(s, q4, &t, &d), 1);
	ck_assert_int_eq(t.state, STORE_TX_CANCELLED);
	ck_assert_str_eq(t.error, "stopped");
	store_tx_done(&t);
	store_close(s);
}
END_TEST

#define SCALE_FILES 100000
#define SCALE_PACKAGES 10

static void scale_path(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, "/usr/share/pkg%u/d%03u/file%06u", i % SCALE_PACKAGES, (i / 7) % 1000, i);
}

/* An install writes all its rows in one store transaction; owner lookups
 * on a big store go through the path's primary key. */
START_TEST(test_scale_owner)
{
	fatelf_diag d = { 0 };
	int64_t ids[SCALE_PACKAGES];
	char path[128], name[32];
	store_usage u;

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_begin(s, &d), 0);
	for (unsigned p = 0; p < SCALE_PACKAGES; p++) {
		snprintf(name, sizeof(name), "pkg%u", p);
		ids[p] = add_package(s, name, "1");
	}
	for (unsigned i = 0; i < SCALE_FILES; i++) {
		scale_path(path, sizeof(path), i);
		store_file f = { .path = path, .package_id = ids[i % SCALE_PACKAGES], .type = STORE_FILE_REGULAR,
				 .mode = 0644, .size = 10, .sha256 = "aa", .installed_size = 10 };
		int r = store_file_add(s, &f, &d);
		ck_assert_msg(r == 0, "file %u: %d %s", i, r, d.msg);
	}
	ck_assert_int_eq(store_commit(s, &d), 0);

	for (unsigned k = 0; k < 1000; k++) {
		unsigned i = (unsigned)(((uint64_t)k * 7919 + 13) % SCALE_FILES);
		char *owner = NULL;

		scale_path(path, sizeof(path), i);
		snprintf(name, sizeof(name), "pkg%u", i % SCALE_PACKAGES);
		ck_assert_int_eq(store_file_owner(s, path, &owner, &d), 1);
		ck_assert_str_eq(owner, name);
		free(owner);
	}
	char *owner = NULL;
	ck_assert_int_eq(store_file_owner(s, "/usr/share/pkg1/d000/file999999", &owner, &d), 0);
	ck_assert_int_eq(store_usage_get(s, 0, &u, &d), 0);
	ck_assert_uint_eq(u.files, SCALE_FILES);
	ck_assert_uint_eq(u.shipped_size, 10 * SCALE_FILES);
	ck_assert_int_eq(store_usage_get(s, ids[3], &u, &d), 0);
	ck_assert_uint_eq(u.files, SCALE_FILES / SCALE_PACKAGES);
	store_close(s);
}
END_TEST

/* Every value of each closed set has a text, and the text reads back as
 * the value; past the end there is none. */
#define ROUND_TRIP(name, type, max) \
	do { \
		for (int v_ = 0; v_ < (int)(max); v_++) { \
			type back_ = (type)-1; \
			const char *t_ = name##_to_text((type)v_); \
			ck_assert_ptr_nonnull(t_); \
			ck_assert_int_eq(name##_from_text(t_, &back_, &d), 0); \
			ck_assert_int_eq(back_, v_); \
		} \
		ck_assert_ptr_null(name##_to_text((type)(max))); \
		ck_assert_ptr_null(name##_to_text((type)-1)); \
	} while (0)

START_TEST(test_enum_texts)
{
	fatelf_diag d = { 0 };
	store_tx_state st = STORE_TX_QUEUED;

	ROUND_TRIP(store_file_type, store_file_type, _STORE_FILE_TYPE_MAX);
	ROUND_TRIP(store_file_kind, store_file_kind, _STORE_KIND_MAX);
	ROUND_TRIP(store_form, store_form, _STORE_FORM_MAX);
	ROUND_TRIP(store_tx_kind, store_tx_kind, _STORE_TX_KIND_MAX);
	ROUND_TRIP(store_tx_state, store_tx_state, _STORE_TX_STATE_MAX);
	ROUND_TRIP(store_jop, store_jop, _STORE_JOP_MAX);
	ROUND_TRIP(store_jstate, store_jstate, _STORE_JSTATE_MAX);
	/* The texts the schema's CHECKs name. */
	ck_assert_str_eq(store_file_type_to_text(STORE_FILE_REGULAR), "file");
	ck_assert_str_eq(store_form_to_text(STORE_FORM_AS_SHIPPED), "as-shipped");
	ck_assert_str_eq(store_tx_state_to_text(STORE_TX_ROLLED_BACK), "rolled-back");
	ck_assert_str_eq(store_jop_to_text(STORE_JOP_RMDIR), "rmdir");

	/* A text that is not one of the set is refused, never read as a default. */
	ck_assert_int_eq(store_tx_state_from_text("exploded", &st, &d), -EBADMSG);
	ck_assert_int_eq(st, STORE_TX_QUEUED);
	ck_assert_str_eq(d.msg, "the store holds the transaction state \"exploded\", which this program "
			 "does not know");
	ck_assert_int_eq(store_tx_state_from_text(NULL, &st, &d), -EBADMSG);
	ck_assert_int_eq(store_tx_state_from_text("Pending", &st, &d), -EBADMSG);
}
END_TEST

/* A row whose text this program does not know (a newer program's, written
 * past the CHECKs) fails the read that meets it, naming the row. */
START_TEST(test_unknown_text_refused)
{
	fatelf_diag d = { 0 };
	store_file *files = NULL;
	store_tx *txs = NULL;
	store_tx t;
	size_t n = 7;
	int64_t id;

	tu_tmpdir();
	store *s = open_ok();
	id = add_package(s, "p", "1");
	add_file(s, id, "/usr/bin/p");
	store_close(s);
	sql_exec(DB, "PRAGMA ignore_check_constraints = ON; "
		 "UPDATE files SET kind = 'hologram' WHERE path = '/usr/bin/p'; "
		 "INSERT INTO transactions (id, kind, package, state, started_at) "
		 "VALUES (7, 'teleport', 'p', 'pending', 1);");
	s = open_ok();
	ck_assert_int_eq(store_files_of(s, "p", &files, &n, &d), -EBADMSG);
	ck_assert_ptr_null(files);
	ck_assert_uint_eq(n, 7);
	ck_assert_str_eq(d.subject, "/usr/bin/p");
	ck_assert_ptr_nonnull(strstr(d.msg, "file kind \"hologram\""));
	ck_assert_int_eq(store_tx_get(s, 7, &t, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "transaction kind \"teleport\""));
	ck_assert_str_eq(d.subject, "transaction 7");
	ck_assert_int_eq(store_tx_pending(s, &txs, &n, &d), -EBADMSG);
	ck_assert_ptr_null(txs);
	/* A value out of range is not written either. */
	store_file bad = { .path = "/usr/bin/q", .package_id = id, .kind = (store_file_kind)9 };
	ck_assert_int_eq(store_file_add(s, &bad, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "9 is not a file kind");
	store_close(s);
}
END_TEST

/* The list calls hand back arrays the caller owns, and records their
 * targets as fatelf_target. */
/* Kept config files (schema 12): a row per path, replaced by a second
 * add, read by path and by package, deleted one by one or by package;
 * an unknown path is -ENOENT. */
START_TEST(test_kept_configs)
{
	fatelf_diag d = { 0 };
	store_kept k = { 0 }, *v = NULL;
	size_t n = 0;
	store_kept a = { .path = "/etc/a/a.conf", .package = "a", .version = "1",
			 .sha256 = "11", .installed_sha256 = "22", .installed_size = 7 };
	store_kept b = { .path = "/etc/a/b.conf", .package = "a", .version = "0.9",
			 .installed_sha256 = "33" };
	store_kept_package *kp = NULL;
	store_kept c = { .path = "/etc/c.conf", .package = "c", .version = "3", .installed_sha256 = "44" };
	store_kept dir = { .path = "/etc/a", .package = "a", .version = "1", .dir = true };

	tu_tmpdir();
	store *s = open_ok();
	ck_assert_int_eq(store_kept_get(s, "/etc/a/a.conf", &k, &d), 0);
	ck_assert_int_eq(store_kept_add(s, &b, 10, &d), 0);
	ck_assert_int_eq(store_kept_add(s, &c, 10, &d), 0);
	a.version = "0";
	ck_assert_int_eq(store_kept_add(s, &a, 10, &d), 0);
	a.version = "1";
	ck_assert_int_eq(store_kept_add(s, &a, 11, &d), 0);
	ck_assert_int_eq(store_kept_add(s, &dir, 11, &d), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM kept_configs"), 4);

	ck_assert_int_eq(store_kept_get(s, "/etc/a/a.conf", &k, &d), 1);
	ck_assert_str_eq(k.package, "a");
	ck_assert_str_eq(k.version, "1");
	ck_assert_str_eq(k.sha256, "11");
	ck_assert_str_eq(k.installed_sha256, "22");
	ck_assert_uint_eq(k.installed_size, 7);
	store_kept_done(&k);
	ck_assert_int_eq(store_kept_get(s, "/etc/a/b.conf", &k, &d), 1);
	ck_assert_ptr_null(k.sha256);
	store_kept_done(&k);

	ck_assert_int_eq(store_kept_of(s, "a", &v, &n, &d), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].path, "/etc/a");
	ck_assert(v[0].dir);
	ck_assert_ptr_null(v[0].installed_sha256);
	ck_assert_str_eq(v[1].path, "/etc/a/a.conf");
	ck_assert(!v[1].dir);
	ck_assert_str_eq(v[2].path, "/etc/a/b.conf");
	store_kept_free(v, n);

	/* the packages in config-files state: by name, the version of the
	 * newest row, files only; an installed package is not one */
	ck_assert_int_eq(store_kept_packages(s, &kp, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(kp[0].name, "a");
	ck_assert_str_eq(kp[0].version, "1");
	ck_assert_uint_eq(kp[0].files, 2);
	ck_assert_str_eq(kp[1].name, "c");
	ck_assert_str_eq(kp[1].version, "3");
	ck_assert_uint_eq(kp[1].files, 1);
	store_kept_packages_free(kp, n);
	add_package(s, "c", "4");
	ck_assert_int_eq(store_kept_packages(s, &kp, &n, &d), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(kp[0].name, "a");
	store_kept_packages_free(kp, n);
	/* a file row needs its installed bytes, a dir row has none */
	b.installed_sha256 = NULL;
	ck_assert_int_lt(store_kept_add(s, &b, 10, &d), 0);
	b.installed_sha256 = "33";

	ck_assert_int_eq(store_kept_delete(s, "/etc/a/b.conf", &d), 0);
	ck_assert_int_eq(store_kept_delete_package(s, "a", true, &d), 0);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM kept_configs WHERE package = 'a'"), 1);
	ck_assert_int_eq(store_kept_delete_package(s, "a", false, &d), 0);
	ck_assert_int_eq(store_kept_of(s, "a", &v, &n, &d), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM kept_configs WHERE package = 'c'"), 1);
	/* a relative path is refused by the table */
	c.path = "etc/c.conf";
	ck_assert_int_lt(store_kept_add(s, &c, 10, &d), 0);
	store_close(s);
}
END_TEST

START_TEST(test_list_arrays)
{
	fatelf_diag d = { 0 };
	store_file *files = NULL;
	store_record *recs = NULL;
	store_journal_op *ops = NULL;
	store_package *pkgs = NULL;
	int64_t *txids = NULL, tx;
	size_t n = 0;
	fatelf_target x86 = { .machine = 62, .osabi = 3, .osabi_version = 0, .word_size = 2, .byte_order = 1 };
	fatelf_target arm = { .machine = 183, .osabi = 3, .osabi_version = 1, .word_size = 2, .byte_order = 1 };

	tu_tmpdir();
	store *s = open_ok();
	int64_t a = add_package(s, "a", "1");
	add_package(s, "b", "2");
	add_file_full(s, a, "/opt/a/fat", "fatelf", "thinned", 100, 40);
	add_file_full(s, a, "/opt/a/doc", "data", "as-shipped", 5, 5);
	add_records(s, "/opt/a/fat", 2);

	ck_assert_int_eq(store_files_of(s, "a", &files, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(files[0].path, "/opt/a/doc");
	ck_assert_int_eq(files[0].kind, STORE_KIND_DATA);
	ck_assert_str_eq(files[1].path, "/opt/a/fat");
	ck_assert_int_eq(files[1].type, STORE_FILE_REGULAR);
	ck_assert_int_eq(files[1].kind, STORE_KIND_FATELF);
	ck_assert_int_eq(files[1].installed_form, STORE_FORM_THINNED);
	ck_assert_uint_eq(files[1].installed_size, 40);
	store_files_free(files, n);
	ck_assert_int_eq(store_files_of(s, "b", &files, &n, &d), 0);
	ck_assert_uint_eq(n, 0);
	store_files_free(files, n);

	ck_assert_int_eq(store_records_of(s, "/opt/a/fat", &recs, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(fatelf_target_equal(&recs[0].target, &x86));
	ck_assert(fatelf_target_equal(&recs[1].target, &arm));
	ck_assert_uint_eq(recs[1].idx, 1);
	ck_assert_str_eq(recs[1].sha256, "cd");
	store_records_free(recs, n);
	/* The name column holds the formatted target, for people. */
	ck_assert_int_eq(sql_int(DB, "SELECT count(*) FROM records WHERE target = "
				 "'aarch64:64bits:le:linux:osabiver1'"), 1);

	ck_assert_int_eq(store_package_list(s, &pkgs, &n, &d), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(pkgs[0].name, "a");
	ck_assert_str_eq(pkgs[1].version, "2");
	store_packages_free(pkgs, n);

	store_tx t = { .kind = STORE_TX_REMOVE, .package = "a", .started_at = 3 };
	ck_assert_int_eq(store_tx_begin(s, &t, &tx, &d), 0);
	store_journal_op op = { .txid = tx, .seq = 0, .op = STORE_JOP_RMDIR, .path = "/opt/a" };
	ck_assert_int_eq(store_journal_add(s, &op, &d), 0);
	ck_assert_int_eq(store_journal_of(s, tx, &ops, &n, &d), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(ops[0].op, STORE_JOP_RMDIR);
	ck_assert_int_eq(ops[0].state, STORE_JSTATE_STAGED);
	ck_assert_ptr_null(ops[0].temp_path);
	store_journal_free(ops, n);
	ck_assert_int_eq(store_journal_txids(s, &txids, &n, &d), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(txids[0], tx);
	free(txids);
	store_close(s);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fresh_database);
	tcase_add_test(tc, test_foreign_keys_on);
	tcase_add_test(tc, test_lazy_commit_survives_exit);
	tcase_add_test(tc, test_reopen_applies_nothing);
	tcase_add_test(tc, test_newer_schema_refused_untouched);
	tcase_add_test(tc, test_nocreate);
	tcase_add_test(tc, test_path_conflict);
	tcase_add_test(tc, test_owner_and_lists);
	tcase_add_test(tc, test_remove_cascades);
	tcase_add_test(tc, test_rollback);
	tcase_add_test(tc, test_history);
	tcase_add_test(tc, test_package_update_keeps_id);
	tcase_add_test(tc, test_usage_and_count);
	tcase_add_test(tc, test_file_get);
	tcase_add_test(tc, test_thin_updates);
	tcase_add_test(tc, test_file_delete_cascades);
	tcase_add_test(tc, test_file_replace);
	tcase_add_test(tc, test_lazy_commit_applies);
	tcase_add_test(tc, test_disk_by_package);
	tcase_add_test(tc, test_older_page_size_kept);
	tcase_add_test(tc, test_files_all);
	tcase_add_test(tc, test_dirs);
	tcase_add_test(tc, test_dir_modes);
	tcase_add_test(tc, test_walk_not_reentrant);
	tcase_add_test(tc, test_tx_get_history_pending);
	tcase_add_test(tc, test_recovery_walks);
	tcase_add_test(tc, test_journal);
	tcase_add_test(tc, test_migrate_from_1);
	tcase_add_test(tc, test_migrate_from_2);
	tcase_add_test(tc, test_migrate_from_4);
	tcase_add_test(tc, test_migrate_from_6);
	tcase_add_test(tc, test_queued_rows);
	tcase_add_test(tc, test_enum_texts);
	tcase_add_test(tc, test_unknown_text_refused);
	tcase_add_test(tc, test_list_arrays);
	tcase_add_test(tc, test_kept_configs);
	suite_add_tcase(s, tc);

	/* 100,000 rows take a second or two under a sanitizer. */
	TCase *scale = tcase_create("scale");
	tcase_set_timeout(scale, 120);
	tcase_add_test(scale, test_scale_owner);
	suite_add_tcase(s, scale);
	return s;
}

int main(void)
{
	return tu_run_suite(store_suite());
}
