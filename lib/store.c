/*
 * The installed-file database (see store.h). All SQL of the program lives
 * here: the schema in the embedded migrations, applied in order on PRAGMA
 * user_version, and each statement in stmt_sql[], indexed by enum stmt_id
 * and prepared the first time it is used. SQLite errors become negative
 * errno codes with sqlite's message in the diagnostic.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "store.h"

enum stmt_id {
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_PACKAGE_ADD,
	STMT_PACKAGE_GET,
	STMT_PACKAGE_LIST,
	STMT_PACKAGE_NAME,
	STMT_PACKAGE_REMOVE,
	STMT_FILE_ADD,
	STMT_FILE_OWNER,
	STMT_FILES_OF,
	STMT_RECORD_ADD,
	STMT_TX_BEGIN,
	STMT_TX_FINISH,
	STMT_TX_LIST,
	_STMT_MAX,
};

#define PACKAGE_COLUMNS "id, name, version, summary, vendor, signer_keyid, installed_at, policy"
#define FILE_COLUMNS \
	"f.path, f.package_id, f.type, f.mode, f.size, f.sha256, f.link_target, f.config, " \
	"f.kind, f.installed_form, f.installed_size, f.installed_sha256"
#define TX_COLUMNS \
	"id, kind, package, old_version, new_version, state, started_at, finished_at, " \
	"bytes_written, bytes_saved, error"

static const char *const stmt_sql[_STMT_MAX] = {
	[STMT_BEGIN] = "BEGIN IMMEDIATE",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_PACKAGE_ADD] =
		"INSERT INTO packages (name, version, summary, vendor, signer_keyid, installed_at, policy) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[STMT_PACKAGE_GET] = "SELECT " PACKAGE_COLUMNS " FROM packages WHERE name = ?1",
	[STMT_PACKAGE_LIST] = "SELECT " PACKAGE_COLUMNS " FROM packages ORDER BY name",
	[STMT_PACKAGE_NAME] = "SELECT name FROM packages WHERE id = ?1",
	[STMT_PACKAGE_REMOVE] = "DELETE FROM packages WHERE name = ?1",
	[STMT_FILE_ADD] =
		"INSERT INTO files (path, package_id, type, mode, size, sha256, link_target, config, "
		"kind, installed_form, installed_size, installed_sha256) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[STMT_FILE_OWNER] =
		"SELECT p.name FROM files f JOIN packages p ON p.id = f.package_id WHERE f.path = ?1",
	[STMT_FILES_OF] =
		"SELECT " FILE_COLUMNS " FROM files f JOIN packages p ON p.id = f.package_id "
		"WHERE p.name = ?1 ORDER BY f.path",
	[STMT_RECORD_ADD] =
		"INSERT INTO records (path, idx, target, machine, osabi, osabi_version, word_size, "
		"byte_order, offset, size, sha256, kept) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[STMT_TX_BEGIN] =
		"INSERT INTO transactions (kind, package, old_version, new_version, state, started_at) "
		"VALUES (?1, ?2, ?3, ?4, 'pending', ?5)",
	[STMT_TX_FINISH] =
		"UPDATE transactions SET state = ?2, finished_at = ?3, bytes_written = ?4, "
		"bytes_saved = ?5, error = ?6 WHERE id = ?1 AND state = 'pending'",
	[STMT_TX_LIST] = "SELECT " TX_COLUMNS " FROM transactions ORDER BY id",
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmt[_STMT_MAX];
};

/* Leaves a cached statement ready for its next use and drops its read
 * lock, whichever way the caller returns. */
static void stmt_resetp(sqlite3_stmt **st)
{
	if (*st) {
		sqlite3_reset(*st);
		sqlite3_clear_bindings(*st);
	}
}
#define _cleanup_stmt_ _cleanup_(stmt_resetp)

static void sqlite_closep(sqlite3 **db)
{
	sqlite3_close_v2(*db);
}

static int sqlite_to_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -EBADMSG;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return -EINVAL;
	case SQLITE_TOOBIG:
		return -E2BIG;
	default:
		return -EIO;
	}
}

static int sqlite_fail(sqlite3 *db, int rc, const char *what, fatelf_diag *d)
{
	return fatelf_diag_set(d, sqlite_to_errno(rc), -1, "%s: %s", what,
			       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* The cached statement for id, prepared on first use. */
static int stmt_get(store *s, enum stmt_id id, sqlite3_stmt **ret, fatelf_diag *d)
{
	if (!s->stmt[id]) {
		int rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					    &s->stmt[id], NULL);
		if (rc != SQLITE_OK)
			return sqlite_fail(s->db, rc, "preparing a statement", d);
	}
	*ret = s->stmt[id];
	return 0;
}

/* Steps a statement that returns no rows. */
static int stmt_done(store *s, sqlite3_stmt *st, const char *what, fatelf_diag *d)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, what, d);
	return 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static const char *column_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* Runs one PRAGMA (or other statement) and reads its integer result. */
static int db_query_int(sqlite3 *db, const char *sql, int64_t *ret, fatelf_diag *d)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, sql, d);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		*ret = 0;
	else {
		int r = sqlite_fail(db, rc, sql, d);
		sqlite3_finalize(st);
		return r;
	}
	sqlite3_finalize(st);
	return 0;
}

static int db_exec(sqlite3 *db, const char *sql, const char *what, fatelf_diag *d)
{
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, what, d);
	return 0;
}

int store_schema_version(void)
{
	return (int)store_migrations_count;
}

/* Applies each migration newer than the database in its own transaction.
 * The version is read again under the write lock, so two processes that
 * open a fresh file at once do not both apply a migration. */
static int db_migrate(sqlite3 *db, fatelf_diag *d)
{
	for (size_t i = 0; i < store_migrations_count; i++) {
		const struct store_migration *m = &store_migrations[i];
		char what[128], sql[64];
		int64_t v;
		int r;

		r = db_exec(db, "BEGIN IMMEDIATE", "starting a migration", d);
		if (r < 0)
			return r;
		r = db_query_int(db, "PRAGMA user_version", &v, d);
		if (r < 0)
			goto fail;
		if (v >= m->version) {
			r = db_exec(db, "COMMIT", "ending a migration", d);
			if (r < 0)
				goto fail;
			continue;
		}
		snprintf(what, sizeof(what), "migration %s", m->name);
		r = db_exec(db, m->sql, what, d);
		if (r < 0)
			goto fail;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", m->version);
		r = db_exec(db, sql, what, d);
		if (r < 0)
			goto fail;
		r = db_exec(db, "COMMIT", what, d);
		if (r < 0)
			goto fail;
		continue;
	fail:
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return r;
	}
	return 0;
}

int store_open(const char *path, unsigned flags, store **ret, fatelf_diag *d)
{
	_cleanup_(sqlite_closep) sqlite3 *db = NULL;
	int open_flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
	int64_t v, fk;
	int rc, r;

	if (flags & ~(unsigned)STORE_OPEN_NOCREATE)
		return fatelf_diag_set(d, -EINVAL, -1, "unknown store open flags 0x%x", flags);
	if (!(flags & STORE_OPEN_NOCREATE))
		open_flags |= SQLITE_OPEN_CREATE;

	rc = sqlite3_open_v2(path, &db, open_flags, NULL);
	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, "opening the database", d);
	sqlite3_extended_result_codes(db, 1);
	rc = sqlite3_busy_timeout(db, 10000);
	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, "setting the busy timeout", d);

	/* Read the version before anything writes: setting WAL mode alone
	 * rewrites the header of a database we must not touch. */
	r = db_query_int(db, "PRAGMA user_version", &v, d);
	if (r < 0)
		return r;
	if (v > (int64_t)store_migrations_count)
		return fatelf_diag_set(d, -EPROTONOSUPPORT, -1,
				       "database schema version %lld is newer than this program's %zu",
				       (long long)v, store_migrations_count);

	r = db_exec(db, "PRAGMA journal_mode = WAL", "setting WAL mode", d);
	if (r < 0)
		return r;
	r = db_exec(db, "PRAGMA synchronous = FULL", "setting durable commits", d);
	if (r < 0)
		return r;
	r = db_exec(db, "PRAGMA foreign_keys = ON", "enabling foreign keys", d);
	if (r < 0)
		return r;
	r = db_query_int(db, "PRAGMA foreign_keys", &fk, d);
	if (r < 0)
		return r;
	if (fk != 1)
		return fatelf_diag_set(d, -ENOTSUP, -1, "this SQLite cannot enforce foreign keys");

	r = db_migrate(db, d);
	if (r < 0)
		return r;

	store *s = calloc(1, sizeof(*s));
	if (!s)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	s->db = TAKE_PTR(db);
	*ret = s;
	return 0;
}

store *store_close(store *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(s->stmt); i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close_v2(s->db);
	free(s);
	return NULL;
}

/* Transactions */
static int store_run(store *s, enum stmt_id id, const char *what, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, id, &st, d);

	if (r < 0)
		return r;
	return stmt_done(s, st, what, d);
}

int store_begin(store *s, fatelf_diag *d)
{
	return store_run(s, STMT_BEGIN, "beginning a transaction", d);
}

int store_commit(store *s, fatelf_diag *d)
{
	return store_run(s, STMT_COMMIT, "committing", d);
}

int store_rollback(store *s, fatelf_diag *d)
{
	return store_run(s, STMT_ROLLBACK, "rolling back", d);
}

/* Packages */
int store_package_add(store *s, const store_package *p, int64_t *ret_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_PACKAGE_ADD, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, p->name);
	bind_text(st, 2, p->version);
	bind_text(st, 3, p->summary ? p->summary : "");
	bind_text(st, 4, p->vendor ? p->vendor : "");
	bind_text(st, 5, p->signer_keyid);
	sqlite3_bind_int64(st, 6, p->installed_at);
	bind_text(st, 7, p->policy);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_UNIQUE)
		return fatelf_diag_set(d, -EEXIST, -1, "package %s is already installed", p->name);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "adding a package", d);
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

static char *strdup_or_null(const char *v)
{
	return v ? strdup(v) : NULL;
}

void store_package_done(store_package *p)
{
	if (!p)
		return;
	free((char *)p->name);
	free((char *)p->version);
	free((char *)p->summary);
	free((char *)p->vendor);
	free((char *)p->signer_keyid);
	free((char *)p->policy);
	memset(p, 0, sizeof(*p));
}

/* The row's strings point into the statement: valid until the next step. */
static void package_from_row(sqlite3_stmt *st, store_package *p)
{
	*p = (store_package) {
		.id = sqlite3_column_int64(st, 0),
		.name = column_text(st, 1),
		.version = column_text(st, 2),
		.summary = column_text(st, 3),
		.vendor = column_text(st, 4),
		.signer_keyid = column_text(st, 5),
		.installed_at = sqlite3_column_int64(st, 6),
		.policy = column_text(st, 7),
	};
}

int store_package_get(store *s, const char *name, store_package *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_package row, copy;
	int r, rc;

	r = stmt_get(s, STMT_PACKAGE_GET, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return fatelf_diag_set(d, -ENOENT, -1, "package %s is not installed", name);
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "reading a package", d);
	package_from_row(st, &row);
	copy = (store_package) {
		.id = row.id,
		.name = strdup_or_null(row.name),
		.version = strdup_or_null(row.version),
		.summary = strdup_or_null(row.summary),
		.vendor = strdup_or_null(row.vendor),
		.signer_keyid = strdup_or_null(row.signer_keyid),
		.installed_at = row.installed_at,
		.policy = strdup_or_null(row.policy),
	};
	if (!copy.name || !copy.version || !copy.summary || !copy.vendor || !copy.policy ||
	    (row.signer_keyid && !copy.signer_keyid)) {
		store_package_done(&copy);
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	}
	*ret = copy;
	return 0;
}

int store_package_list(store *s, store_package_cb cb, void *userdata, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc, n = 0;

	r = stmt_get(s, STMT_PACKAGE_LIST, &st, d);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_package p;

		package_from_row(st, &p);
		r = cb(&p, userdata);
		if (r < 0)
			return r;
		n++;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "listing packages", d);
	return n;
}

int store_package_remove(store *s, const char *name, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_PACKAGE_REMOVE, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, name);
	r = stmt_done(s, st, "removing a package", d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_set(d, -ENOENT, -1, "package %s is not installed", name);
	return 0;
}

/* Files */

/* The name of package id, for messages; "?" when it cannot be read. */
static int package_name_of(store *s, int64_t id, char *buf, size_t size)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;

	snprintf(buf, size, "#%lld", (long long)id);
	if (stmt_get(s, STMT_PACKAGE_NAME, &st, NULL) < 0)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		return -ENOENT;
	snprintf(buf, size, "%s", column_text(st, 0));
	return 0;
}

int store_file_add(store *s, const store_file *f, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_FILE_ADD, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, f->path);
	sqlite3_bind_int64(st, 2, f->package_id);
	bind_text(st, 3, f->type);
	sqlite3_bind_int64(st, 4, f->mode);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)f->size);
	bind_text(st, 6, f->sha256);
	bind_text(st, 7, f->link_target);
	sqlite3_bind_int(st, 8, f->config ? 1 : 0);
	bind_text(st, 9, f->kind ? f->kind : "data");
	bind_text(st, 10, f->installed_form ? f->installed_form : "as-shipped");
	sqlite3_bind_int64(st, 11, (sqlite3_int64)f->installed_size);
	bind_text(st, 12, f->installed_sha256);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
		_cleanup_free_ char *owner = NULL;
		char claimant[256];

		sqlite3_reset(st);
		package_name_of(s, f->package_id, claimant, sizeof(claimant));
		if (store_file_owner(s, f->path, &owner, NULL) < 0)
			return fatelf_diag_set(d, -EEXIST, -1, "%s: already owned (claimed by %s)",
					       f->path, claimant);
		return fatelf_diag_set(d, -EEXIST, -1,
				       "%s is owned by package %s, so package %s cannot install it",
				       f->path, owner, claimant);
	}
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return fatelf_diag_set(d, -ENOENT, -1, "%s: no package has id %lld", f->path,
				       (long long)f->package_id);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, f->path, d);
	return 0;
}

int store_file_owner(store *s, const char *path, char **ret_package, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char *name;
	int r, rc;

	r = stmt_get(s, STMT_FILE_OWNER, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return fatelf_diag_set(d, -ENOENT, -1, "%s: no package owns this path", path);
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "looking up an owner", d);
	name = strdup(column_text(st, 0));
	if (!name)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	*ret_package = name;
	return 0;
}

int store_files_of(store *s, const char *package, store_file_cb cb, void *userdata,
		   fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc, n = 0;

	r = stmt_get(s, STMT_FILES_OF, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, package);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_file f = {
			.path = column_text(st, 0),
			.package_id = sqlite3_column_int64(st, 1),
			.type = column_text(st, 2),
			.mode = (uint32_t)sqlite3_column_int64(st, 3),
			.size = (uint64_t)sqlite3_column_int64(st, 4),
			.sha256 = column_text(st, 5),
			.link_target = column_text(st, 6),
			.config = sqlite3_column_int(st, 7),
			.kind = column_text(st, 8),
			.installed_form = column_text(st, 9),
			.installed_size = (uint64_t)sqlite3_column_int64(st, 10),
			.installed_sha256 = column_text(st, 11),
		};

		r = cb(&f, userdata);
		if (r < 0)
			return r;
		n++;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "listing files", d);
	if (n == 0) {
		/* No rows: an empty package, or none at all. */
		store_package p;

		sqlite3_reset(st);
		r = store_package_get(s, package, &p, d);
		if (r < 0)
			return r;
		store_package_done(&p);
	}
	return n;
}

int store_record_add(store *s, const store_record *rec, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_RECORD_ADD, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, rec->path);
	sqlite3_bind_int64(st, 2, rec->idx);
	bind_text(st, 3, rec->target);
	sqlite3_bind_int(st, 4, rec->machine);
	sqlite3_bind_int(st, 5, rec->osabi);
	sqlite3_bind_int(st, 6, rec->osabi_version);
	sqlite3_bind_int(st, 7, rec->word_size);
	sqlite3_bind_int(st, 8, rec->byte_order);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)rec->offset);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)rec->size);
	bind_text(st, 11, rec->sha256);
	sqlite3_bind_int(st, 12, rec->kept ? 1 : 0);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return fatelf_diag_set(d, -EEXIST, (int)rec->idx, "%s: record %u is already stored",
				       rec->path, rec->idx);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return fatelf_diag_set(d, -ENOENT, (int)rec->idx,
				       "%s: record %u belongs to no stored file", rec->path, rec->idx);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, rec->path, d);
	return 0;
}

/* History */
int store_tx_begin(store *s, const store_tx *t, int64_t *ret_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_TX_BEGIN, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, t->kind);
	bind_text(st, 2, t->package);
	bind_text(st, 3, t->old_version);
	bind_text(st, 4, t->new_version);
	sqlite3_bind_int64(st, 5, t->started_at);
	r = stmt_done(s, st, "recording a transaction", d);
	if (r < 0)
		return r;
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_tx_finish(store *s, int64_t id, const char *state, int64_t finished_at,
		    uint64_t bytes_written, int64_t bytes_saved, const char *error,
		    fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_TX_FINISH, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	bind_text(st, 2, state);
	sqlite3_bind_int64(st, 3, finished_at);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)bytes_written);
	sqlite3_bind_int64(st, 5, bytes_saved);
	bind_text(st, 6, error);
	r = stmt_done(s, st, "finishing a transaction", d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_set(d, -ENOENT, -1, "transaction %lld is not pending",
				       (long long)id);
	return 0;
}

int store_tx_list(store *s, store_tx_cb cb, void *userdata, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc, n = 0;

	r = stmt_get(s, STMT_TX_LIST, &st, d);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_tx t = {
			.id = sqlite3_column_int64(st, 0),
			.kind = column_text(st, 1),
			.package = column_text(st, 2),
			.old_version = column_text(st, 3),
			.new_version = column_text(st, 4),
			.state = column_text(st, 5),
			.started_at = sqlite3_column_int64(st, 6),
			.finished_at = sqlite3_column_int64(st, 7),
			.bytes_written = (uint64_t)sqlite3_column_int64(st, 8),
			.bytes_saved = sqlite3_column_int64(st, 9),
			.error = column_text(st, 10),
		};

		r = cb(&t, userdata);
		if (r < 0)
			return r;
		n++;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "listing history", d);
	return n;
}
