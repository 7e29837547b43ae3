/*
 * The installed-file database (see store.h). All SQL of the program lives
 * here: the schema in the embedded migrations, applied in order on PRAGMA
 * user_version, and each statement in stmt_sql[], indexed by enum stmt_id
 * and prepared the first time it is used. SQLite errors become negative
 * errno codes with sqlite's message in the diagnostic.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "store.h"

enum stmt_id {
	STMT_BEGIN,
	STMT_BEGIN_READ,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_PACKAGE_ADD,
	STMT_PACKAGE_GET,
	STMT_PACKAGE_LIST,
	STMT_PACKAGE_NAME,
	STMT_PACKAGE_REMOVE,
	STMT_PACKAGE_UPDATE,
	STMT_PACKAGE_COUNT,
	STMT_PACKAGE_EXISTS,
	STMT_PACKAGE_SET_POLICY_OF,
	STMT_PACKAGE_FORMS,
	STMT_USAGE_ALL,
	STMT_USAGE_OF,
	STMT_FILE_ADD,
	STMT_FILE_OWNER,
	STMT_FILES_OF,
	STMT_FILES_OF_ID,
	STMT_FILES_PAGE,
	STMT_FILE_GET,
	STMT_FILE_EXISTS,
	STMT_FILE_DELETE,
	STMT_FILE_REPLACE,
	STMT_FILES_DELETE_PACKAGE,
	STMT_FILE_SET_INSTALLED,
	STMT_FILE_SET_DISK,
	STMT_PACKAGE_SET_SETTLED,
	STMT_FILES_ALL,
	STMT_FILES_HASHES,
	STMT_RECORD_ADD,
	STMT_RECORDS_OF,
	STMT_RECORDS_OF_PACKAGE,
	STMT_RECORDS_DELETE,
	STMT_RECORD_SET_KEPT,
	STMT_DIR_ADD,
	STMT_DIRS_OF,
	STMT_DIRS_MODES_OF,
	STMT_DIRS_MODES_ALL,
	STMT_DIRS_PAGE,
	STMT_PATHS_MATCH,
	STMT_DIR_OTHER_OWNERS,
	STMT_DIRS_DELETE_PACKAGE,
	STMT_TX_BEGIN,
	STMT_TX_FINISH,
	STMT_TX_QUEUE,
	STMT_TX_ADOPT,
	STMT_TX_DEQUEUE,
	STMT_TX_DELETE_QUEUED,
	STMT_TX_CANCEL_QUEUED,
	STMT_TX_LIST,
	STMT_TX_GET,
	STMT_TX_HISTORY_ALL,
	STMT_TX_HISTORY_OF,
	STMT_TX_PENDING,
	STMT_JOURNAL_ADD,
	STMT_JOURNAL_OF,
	STMT_JOURNAL_SET_STATE,
	STMT_JOURNAL_SET_TEMP,
	STMT_JOURNAL_CLEAR,
	STMT_JOURNAL_TXIDS,
	STMT_HOLD_ADD,
	STMT_HOLD_DELETE,
	STMT_HOLD_OF,
	STMT_HOLD_LIST,
	STMT_DEPENDS_CLEAR,
	STMT_DEPENDS_ADD,
	STMT_DEPENDENTS,
	STMT_KEPT_ADD,
	STMT_KEPT_GET,
	STMT_KEPT_OF,
	STMT_KEPT_PACKAGES,
	STMT_KEPT_DELETE,
	STMT_KEPT_DELETE_PACKAGE,
	STMT_KEPT_DELETE_DIRS,
	STMT_DEPENDENTS_CONSTRAINTS,
	STMT_PACKAGE_SET_AUTOMATIC,
	STMT_PACKAGE_AUTOMATIC,
	_STMT_MAX,
};

#define PACKAGE_COLUMNS \
	"id, name, version, summary, vendor, signer_keyid, installed_at, policy, disk_settled_ns, " \
	"license, homepage, targets, source_type, source"
#define FILE_COLUMNS \
	"f.path, f.package_id, f.type, f.mode, f.size, f.sha256, f.link_target, f.config, " \
	"f.kind, f.installed_form, f.installed_size, f.installed_sha256, " \
	"f.disk_size, f.disk_ino, f.disk_mtime_ns, f.disk_ctime_ns"
#define TX_COLUMNS \
	"id, kind, package, old_version, new_version, state, started_at, finished_at, " \
	"bytes_written, bytes_saved, error"
#define RECORD_COLUMNS \
	"path, idx, target, machine, osabi, osabi_version, word_size, byte_order, offset, size, " \
	"sha256, kept"
/* One pass over the files of the WHERE clause that follows. */
#define USAGE_SELECT \
	"SELECT count(*), " \
	"coalesce(sum(kind = 'fatelf'), 0), " \
	"coalesce(sum(kind = 'fatelf' AND installed_form = 'as-shipped'), 0), " \
	"coalesce(sum(size), 0), " \
	"coalesce(sum(installed_size), 0), " \
	"coalesce(sum(CASE WHEN installed_form = 'thinned' THEN size - installed_size ELSE 0 END), 0) " \
	"FROM files"

static const char *const stmt_sql[_STMT_MAX] = {
	[STMT_BEGIN] = "BEGIN IMMEDIATE",
	[STMT_BEGIN_READ] = "BEGIN DEFERRED",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
	[STMT_PACKAGE_ADD] =
		"INSERT INTO packages (name, version, summary, vendor, signer_keyid, installed_at, policy, "
		"license, homepage, targets, source_type, source) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[STMT_PACKAGE_GET] = "SELECT " PACKAGE_COLUMNS " FROM packages WHERE name = ?1",
	[STMT_PACKAGE_LIST] = "SELECT " PACKAGE_COLUMNS " FROM packages ORDER BY name",
	[STMT_PACKAGE_NAME] = "SELECT name FROM packages WHERE id = ?1",
	[STMT_PACKAGE_REMOVE] = "DELETE FROM packages WHERE name = ?1",
	[STMT_PACKAGE_UPDATE] =
		"UPDATE packages SET version = ?2, summary = ?3, vendor = ?4, signer_keyid = ?5, "
		"installed_at = ?6, policy = ?7, license = ?8, homepage = ?9, targets = ?10, "
		"source_type = ?11, source = ?12 WHERE id = ?1",
	[STMT_PACKAGE_COUNT] = "SELECT count(*) FROM packages",
	[STMT_PACKAGE_EXISTS] = "SELECT 1 FROM packages WHERE id = ?1",
	[STMT_PACKAGE_SET_POLICY_OF] =
		"UPDATE packages SET policy = ?2 WHERE id = (SELECT package_id FROM files WHERE path = ?1)",
	/* Each fat file of the package: installed as shipped, or thinned to
	 * one record, or to several. */
	[STMT_PACKAGE_FORMS] =
		"SELECT coalesce(sum(installed_form = 'as-shipped'), 0), "
		"coalesce(sum(installed_form = 'thinned' AND k <= 1), 0), "
		"coalesce(sum(installed_form = 'thinned' AND k > 1), 0) FROM "
		"(SELECT f.installed_form, (SELECT coalesce(sum(r.kept), 0) FROM records r "
		"WHERE r.path = f.path) AS k FROM files f WHERE f.package_id = ?1 AND f.kind = 'fatelf')",
	/* Two statements rather than "?1 = 0 OR package_id = ?1", which
	 * would keep SQLite from using the files_package index. */
	[STMT_USAGE_ALL] = USAGE_SELECT,
	[STMT_USAGE_OF] = USAGE_SELECT " WHERE package_id = ?1",
	[STMT_FILE_ADD] =
		"INSERT INTO files (path, package_id, type, mode, size, sha256, link_target, config, "
		"kind, installed_form, installed_size, installed_sha256, disk_size, disk_ino, "
		"disk_mtime_ns, disk_ctime_ns) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
	[STMT_FILES_HASHES] =
		"SELECT path, COALESCE(installed_sha256, sha256) FROM files WHERE type = 'file' "
		"AND COALESCE(installed_sha256, sha256) IS NOT NULL",
	[STMT_FILE_OWNER] =
		"SELECT p.name FROM files f JOIN packages p ON p.id = f.package_id WHERE f.path = ?1",
	[STMT_FILES_OF] =
		"SELECT " FILE_COLUMNS " FROM files f JOIN packages p ON p.id = f.package_id "
		"WHERE p.name = ?1 ORDER BY f.path",
	/* By the files_package index, in no order: no sort, which for a
	 * large package spills to a temp file. */
	[STMT_FILES_OF_ID] = "SELECT " FILE_COLUMNS " FROM files f WHERE f.package_id = ?1",
	[STMT_FILES_PAGE] =
		"SELECT " FILE_COLUMNS " FROM files f JOIN packages p ON p.id = f.package_id "
		"WHERE p.name = ?1 AND f.path > ?2 ORDER BY f.path LIMIT ?3",
	[STMT_FILE_GET] =
		"SELECT " FILE_COLUMNS ", p.name FROM files f JOIN packages p ON p.id = f.package_id "
		"WHERE f.path = ?1",
	[STMT_FILE_EXISTS] = "SELECT 1 FROM files WHERE path = ?1",
	[STMT_FILE_DELETE] = "DELETE FROM files WHERE path = ?1",
	/* Neither the path nor the package changes: only the row's own page
	 * is written, none of the indexes'. */
	[STMT_FILE_REPLACE] =
		"UPDATE files SET type = ?3, mode = ?4, size = ?5, sha256 = ?6, link_target = ?7, "
		"config = ?8, kind = ?9, installed_form = ?10, installed_size = ?11, "
		"installed_sha256 = ?12, disk_size = ?13, disk_ino = ?14, disk_mtime_ns = ?15, "
		"disk_ctime_ns = ?16 WHERE path = ?1 AND package_id = ?2",
	[STMT_FILES_DELETE_PACKAGE] = "DELETE FROM files WHERE package_id = ?1",
	[STMT_FILE_SET_INSTALLED] =
		"UPDATE files SET installed_form = ?2, installed_size = ?3, installed_sha256 = ?4 "
		"WHERE path = ?1",
	[STMT_PACKAGE_SET_SETTLED] = "UPDATE packages SET disk_settled_ns = ?2 WHERE id = ?1",
	[STMT_FILE_SET_DISK] =
		"UPDATE files SET disk_size = ?2, disk_ino = ?3, disk_mtime_ns = ?4, disk_ctime_ns = ?5 "
		"WHERE path = ?1",
	[STMT_FILES_ALL] = "SELECT " FILE_COLUMNS " FROM files f ORDER BY f.path",
	[STMT_RECORD_ADD] =
		"INSERT INTO records (path, idx, target, machine, osabi, osabi_version, word_size, "
		"byte_order, offset, size, sha256, kept) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[STMT_RECORDS_OF] = "SELECT " RECORD_COLUMNS " FROM records WHERE path = ?1 ORDER BY idx",
	[STMT_RECORDS_OF_PACKAGE] =
		"SELECT " RECORD_COLUMNS " FROM records WHERE ?1 = 0 "
		"OR path IN (SELECT path FROM files WHERE package_id = ?1) ORDER BY path, idx",
	[STMT_RECORDS_DELETE] = "DELETE FROM records WHERE path = ?1",
	[STMT_RECORD_SET_KEPT] = "UPDATE records SET kept = ?3 WHERE path = ?1 AND idx = ?2",
	/* Adding a directory the package already owns changes nothing: an
	 * upgrade re-adds the directories it keeps. The upsert covers only
	 * the key, so the path CHECK and the foreign key still refuse. */
	[STMT_DIR_ADD] =
		"INSERT INTO dirs (path, package_id, mode) VALUES (?1, ?2, ?3) "
		"ON CONFLICT (path, package_id) DO UPDATE SET mode = excluded.mode",
	[STMT_DIRS_OF] =
		"SELECT path, package_id, mode FROM dirs WHERE package_id = ?1 ORDER BY path DESC",
	[STMT_DIRS_MODES_OF] =
		"SELECT path, package_id, mode FROM dirs WHERE package_id = ?1 ORDER BY path",
	[STMT_DIRS_MODES_ALL] = "SELECT path, package_id, mode FROM dirs ORDER BY path, package_id",
	[STMT_DIRS_PAGE] =
		"SELECT path, package_id, mode FROM dirs WHERE package_id = ?1 AND path > ?2 "
		"ORDER BY path LIMIT ?3",
	/* The paths of files and directories between ?2 and ?3 (the
	 * pattern's literal prefix, so that the primary keys narrow the scan)
	 * that the pattern ?1 matches, with their owners. */
	[STMT_PATHS_MATCH] =
		"SELECT f.path, p.name, 0, NULL FROM files f JOIN packages p ON p.id = f.package_id "
		"WHERE f.path >= ?2 AND f.path < ?3 AND fatelf_fnmatch(?1, f.path) "
		"UNION ALL "
		"SELECT d.path, p.name, 1, d.mode FROM dirs d JOIN packages p ON p.id = d.package_id "
		"WHERE d.path >= ?2 AND d.path < ?3 AND fatelf_fnmatch(?1, d.path) "
		"ORDER BY 1, 2",
	[STMT_DIR_OTHER_OWNERS] = "SELECT count(*) FROM dirs WHERE path = ?1 AND package_id <> ?2",
	[STMT_DIRS_DELETE_PACKAGE] = "DELETE FROM dirs WHERE package_id = ?1",
	[STMT_TX_BEGIN] =
		"INSERT INTO transactions (kind, package, old_version, new_version, state, started_at) "
		"VALUES (?1, ?2, ?3, ?4, 'pending', ?5)",
	[STMT_TX_FINISH] =
		"UPDATE transactions SET state = ?2, finished_at = ?3, bytes_written = ?4, "
		"bytes_saved = ?5, error = ?6 WHERE id = ?1 AND state = 'pending'",
	[STMT_TX_QUEUE] =
		"INSERT INTO transactions (kind, package, state, started_at) VALUES (?1, ?2, 'queued', ?3)",
	[STMT_TX_ADOPT] =
		"UPDATE transactions SET kind = ?2, package = ?3, old_version = ?4, new_version = ?5, "
		"state = 'pending', started_at = ?6 WHERE id = ?1 AND state = 'queued'",
	[STMT_TX_DEQUEUE] =
		"UPDATE transactions SET state = ?2, finished_at = ?3, error = ?4 "
		"WHERE id = ?1 AND state = 'queued'",
	[STMT_TX_DELETE_QUEUED] = "DELETE FROM transactions WHERE id = ?1 AND state = 'queued'",
	[STMT_TX_CANCEL_QUEUED] =
		"UPDATE transactions SET state = 'cancelled', finished_at = ?1, error = ?2 "
		"WHERE state = 'queued'",
	[STMT_TX_LIST] = "SELECT " TX_COLUMNS " FROM transactions ORDER BY id",
	[STMT_TX_GET] = "SELECT " TX_COLUMNS " FROM transactions WHERE id = ?1",
	/* A negative LIMIT means no limit. */
	[STMT_TX_HISTORY_ALL] = "SELECT " TX_COLUMNS " FROM transactions ORDER BY id DESC LIMIT ?1",
	[STMT_TX_HISTORY_OF] =
		"SELECT " TX_COLUMNS " FROM transactions WHERE package = ?1 ORDER BY id DESC LIMIT ?2",
	[STMT_TX_PENDING] =
		"SELECT " TX_COLUMNS " FROM transactions WHERE state = 'pending' ORDER BY id",
	[STMT_JOURNAL_ADD] =
		"INSERT INTO journal (txid, seq, op, path, temp_path, backup_path, state) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[STMT_JOURNAL_OF] =
		"SELECT txid, seq, op, path, temp_path, backup_path, state FROM journal "
		"WHERE txid = ?1 ORDER BY seq",
	[STMT_JOURNAL_SET_STATE] = "UPDATE journal SET state = ?3 WHERE txid = ?1 AND seq = ?2",
	[STMT_JOURNAL_SET_TEMP] = "UPDATE journal SET temp_path = ?3 WHERE txid = ?1 AND seq = ?2",
	[STMT_JOURNAL_CLEAR] = "DELETE FROM journal WHERE txid = ?1",
	[STMT_JOURNAL_TXIDS] = "SELECT DISTINCT txid FROM journal ORDER BY txid",
	[STMT_HOLD_ADD] =
		"INSERT OR IGNORE INTO holds (package_id, held_at) SELECT id, ?2 FROM packages WHERE name = ?1",
	[STMT_HOLD_DELETE] = "DELETE FROM holds WHERE package_id = (SELECT id FROM packages WHERE name = ?1)",
	[STMT_HOLD_OF] =
		"SELECT h.held_at FROM holds h JOIN packages p ON p.id = h.package_id WHERE p.name = ?1",
	[STMT_HOLD_LIST] =
		"SELECT p.name FROM holds h JOIN packages p ON p.id = h.package_id ORDER BY p.name",
	[STMT_DEPENDS_CLEAR] = "DELETE FROM depends WHERE package_id = ?1",
	[STMT_DEPENDS_ADD] = "INSERT INTO depends (package_id, name, constraint_text) VALUES (?1, ?2, ?3)",
	[STMT_PACKAGE_SET_AUTOMATIC] = "UPDATE packages SET automatic = ?2 WHERE id = ?1",
	[STMT_PACKAGE_AUTOMATIC] = "SELECT name FROM packages WHERE automatic = 1 ORDER BY name",
	[STMT_KEPT_ADD] = "INSERT OR REPLACE INTO kept_configs (path, package, version, sha256, "
		"installed_sha256, installed_size, kept_at, type) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[STMT_KEPT_GET] = "SELECT path, package, version, sha256, installed_sha256, installed_size, type "
		"FROM kept_configs WHERE path = ?1",
	[STMT_KEPT_OF] = "SELECT path, package, version, sha256, installed_sha256, installed_size, type "
		"FROM kept_configs WHERE package = ?1 ORDER BY path",
	/* the version of the newest row (SQLite takes the bare column from
	 * the row max() picked) */
	[STMT_KEPT_PACKAGES] = "SELECT package, version, max(kept_at), count(*) FROM kept_configs k "
		"WHERE type = 'file' AND NOT EXISTS (SELECT 1 FROM packages p WHERE p.name = k.package) "
		"GROUP BY package ORDER BY package",
	[STMT_KEPT_DELETE_DIRS] = "DELETE FROM kept_configs WHERE package = ?1 AND type = 'dir'",
	[STMT_KEPT_DELETE] = "DELETE FROM kept_configs WHERE path = ?1",
	[STMT_KEPT_DELETE_PACKAGE] = "DELETE FROM kept_configs WHERE package = ?1",
	[STMT_DEPENDENTS] =
		"SELECT p.name FROM depends d JOIN packages p ON p.id = d.package_id WHERE d.name = ?1 "
		"ORDER BY p.name",
	[STMT_DEPENDENTS_CONSTRAINTS] =
		"SELECT p.name, d.constraint_text FROM depends d JOIN packages p ON p.id = d.package_id "
		"WHERE d.name = ?1 ORDER BY p.name",
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmt[_STMT_MAX];
	int64_t adopt_id;       /* a queued row the next store_tx_begin fills, 0: none */
	bool lazy;              /* synchronous = NORMAL (store_set_durable) */
	bool reading;           /* in a store_read_begin transaction */
};

#define TEXT_OF_(x) #x
#define TEXT_OF(x) TEXT_OF_(x)

/* ------------------------------------------------------------ texts */

/* Each closed set of column values, as the database spells them. */
static const char *const file_type_text[_STORE_FILE_TYPE_MAX] = {
	[STORE_FILE_REGULAR] = "file",
	[STORE_FILE_SYMLINK] = "symlink",
};
static const char *const file_kind_text[_STORE_KIND_MAX] = {
	[STORE_KIND_DATA] = "data",
	[STORE_KIND_ELF] = "elf",
	[STORE_KIND_FATELF] = "fatelf",
};
static const char *const form_text[_STORE_FORM_MAX] = {
	[STORE_FORM_AS_SHIPPED] = "as-shipped",
	[STORE_FORM_THINNED] = "thinned",
};
static const char *const tx_kind_text[_STORE_TX_KIND_MAX] = {
	[STORE_TX_INSTALL] = "install",
	[STORE_TX_UPGRADE] = "upgrade",
	[STORE_TX_REINSTALL] = "reinstall",
	[STORE_TX_DOWNGRADE] = "downgrade",
	[STORE_TX_REMOVE] = "remove",
	[STORE_TX_THIN] = "thin",
};
static const char *const tx_state_text[_STORE_TX_STATE_MAX] = {
	[STORE_TX_QUEUED] = "queued",
	[STORE_TX_PENDING] = "pending",
	[STORE_TX_COMMITTED] = "committed",
	[STORE_TX_ROLLED_BACK] = "rolled-back",
	[STORE_TX_FAILED] = "failed",
	[STORE_TX_CANCELLED] = "cancelled",
};
static const char *const source_text[_STORE_SOURCE_MAX] = {
	[STORE_SOURCE_UNKNOWN] = "unknown",     /* NULL in the database */
	[STORE_SOURCE_FILE] = "file",
	[STORE_SOURCE_URL] = "url",
	[STORE_SOURCE_REPOSITORY] = "repository",
	[STORE_SOURCE_REGISTRY] = "registry",
	[STORE_SOURCE_FD] = "fd",
};
static const char *const jop_text[_STORE_JOP_MAX] = {
	[STORE_JOP_CREATE] = "create",
	[STORE_JOP_REPLACE] = "replace",
	[STORE_JOP_REMOVE] = "remove",
	[STORE_JOP_MKDIR] = "mkdir",
	[STORE_JOP_RMDIR] = "rmdir",
};
static const char *const jstate_text[_STORE_JSTATE_MAX] = {
	[STORE_JSTATE_STAGED] = "staged",
	[STORE_JSTATE_DONE] = "done",
	[STORE_JSTATE_UNDONE] = "undone",
};

static const char *text_of(const char *const *table, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? table[v] : NULL;
}

static int text_find(const char *const *table, size_t n, const char *what, const char *text, int *ret,
		     fatelf_diag *d)
{
	for (size_t i = 0; text && i < n; i++)
		if (strcmp(text, table[i]) == 0) {
			*ret = (int)i;
			return 0;
		}
	if (!text)
		return fatelf_diag_set(d, -EBADMSG, -1, "the store holds no %s where one is required", what);
	return fatelf_diag_set(d, -EBADMSG, -1, "the store holds the %s \"%s\", which this program does not know",
			       what, text);
}

#define STORE_TEXT_TABLE(name, type, table, what) \
	const char *name##_to_text(type v) \
	{ \
		return text_of(table, ARRAY_SIZE(table), (int)v); \
	} \
	int name##_from_text(const char *text, type *ret, fatelf_diag *d) \
	{ \
		int v = 0, r = text_find(table, ARRAY_SIZE(table), what, text, &v, d); \
		if (r >= 0) \
			*ret = (type)v; \
		return r; \
	}

STORE_TEXT_TABLE(store_file_type, store_file_type, file_type_text, "file type")
STORE_TEXT_TABLE(store_file_kind, store_file_kind, file_kind_text, "file kind")
STORE_TEXT_TABLE(store_form, store_form, form_text, "installed form")
STORE_TEXT_TABLE(store_tx_kind, store_tx_kind, tx_kind_text, "transaction kind")
STORE_TEXT_TABLE(store_tx_state, store_tx_state, tx_state_text, "transaction state")
STORE_TEXT_TABLE(store_jop, store_jop, jop_text, "journal operation")

const char *store_source_to_text(store_source v)
{
	return v == STORE_SOURCE_UNKNOWN ? NULL : text_of(source_text, ARRAY_SIZE(source_text), (int)v);
}

int store_source_from_text(const char *text, store_source *ret, fatelf_diag *d)
{
	int v = 0, r;

	if (!text) {
		*ret = STORE_SOURCE_UNKNOWN;
		return 0;
	}
	r = text_find(source_text + 1, ARRAY_SIZE(source_text) - 1, "package source", text, &v, d);
	if (r >= 0)
		*ret = (store_source)(v + 1);
	return r;
}
STORE_TEXT_TABLE(store_jstate, store_jstate, jstate_text, "journal state")

/* The text of an enum value for a statement; -EINVAL when out of range. */
static int enum_text(const char *text, const char *what, int v, const char **ret, fatelf_diag *d)
{
	*ret = text;
	if (!text)
		return fatelf_diag_set(d, -EINVAL, -1, "%d is not a %s", v, what);
	return 0;
}
#define ENUM_TEXT(name, v, what, ret, d) enum_text(name##_to_text(v), what, (int)(v), ret, d)

/* ------------------------------------------------------------ arrays */

/* Makes room for one more element of size sz in *v (n used, *cap held). */
static int grow(void **v, size_t n, size_t *cap, size_t sz, fatelf_diag *d)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	void *p = reallocarray(*v, c, sz);
	if (!p)
		return fatelf_diag_oom(d);
	*v = p;
	*cap = c;
	return 0;
}

static char *strdup_or_null(const char *v)
{
	return v ? strdup(v) : NULL;
}

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

/* Steps st to its end, each row read by from_row into an element of
 * size bytes of a growing array: the array and its length at *ret and
 * *ret_n, or, on an error, nothing (free_all frees the rows read). */
static int collect_rows(store *s, sqlite3_stmt *st, size_t size,
			int (*from_row)(sqlite3_stmt *st, void *elem, fatelf_diag *d),
			void (*free_all)(void *v, size_t n), const char *what, void **ret, size_t *ret_n,
			fatelf_diag *d)
{
	void *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = grow(&v, n, &cap, size, d);
		if (r >= 0) {
			void *elem = (char *)v + n * size;
			memset(elem, 0, size);
			r = from_row(st, elem, d);
			n++; /* freed with the rest even when half read */
		}
		if (r < 0) {
			free_all(v, n);
			return r;
		}
	}
	if (rc != SQLITE_DONE) {
		free_all(v, n);
		return sqlite_fail(s->db, rc, what, d);
	}
	*ret = v;
	*ret_n = n;
	return 0;
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
	/* A callback that calls the walk it is inside would rebind the
	 * statement under the outer loop. */
	if (sqlite3_stmt_busy(s->stmt[id]))
		return fatelf_diag_set(d, -EBUSY, -1,
				       "a store query was called again from its own callback");
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

/*
 * The store's files are their owner's alone: anyone who may open the
 * database or its -shm file, even read-only, may take SQLite's locks on
 * it and stall every writer. SQLite creates the -wal and -shm files with
 * the database's mode, so the database is created 0600 here, before
 * SQLite opens it; files an older version left readable by others are
 * tightened through their descriptor. A missing -wal or -shm is fine.
 * See STORE_OPEN_SECURE for when this may run.
 */
static int store_secure_file(const char *path, bool create, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int q;

	/* Right already (every start but the first): no descriptor opened,
	 * so none closed under SQLite's locks. */
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & 0077))
		return 0;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | (create ? O_CREAT : 0),
		  0600);
	if (fd < 0 && errno == ENOENT && !create)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		q = -errno;
		return fatelf_diag_at(d, q, -1, path, "%s", fatelf_strerror(q));
	}
	if (!S_ISREG(st.st_mode))
		return fatelf_diag_at(d, -EINVAL, -1, path, "not a regular file");
	if ((st.st_mode & 0077) && fchmod(fd, st.st_mode & 0600) < 0) {
		q = -errno;
		return fatelf_diag_at(d, q, -1, path, "cannot make it mode 0600: %s", fatelf_strerror(q));
	}
	return 0;
}

static int store_secure_files(const char *path, bool create, fatelf_diag *d)
{
	static const char *const suffix[] = { "-wal", "-shm" };
	char buf[4096];
	int r = store_secure_file(path, create, d);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(suffix); i++) {
		if ((size_t)snprintf(buf, sizeof(buf), "%s%s", path, suffix[i]) >= sizeof(buf))
			return fatelf_diag_at(d, -ENAMETOOLONG, -1, path, "path too long");
		r = store_secure_file(buf, false, d);
		if (r < 0)
			return r;
	}
	return 0;
}

/* SQL fatelf_fnmatch(pattern, path): fnmatch(3) without flags; NULL
 * when either is NULL. */
static void sql_fnmatch(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *pattern = (const char *)sqlite3_value_text(argv[0]);
	const char *path = (const char *)sqlite3_value_text(argv[1]);

	(void)argc;
	if (!pattern || !path)
		sqlite3_result_null(ctx);
	else
		sqlite3_result_int(ctx, fnmatch(pattern, path, 0) == 0);
}

/*
 * A database named "/proc/self/fd/N/fatelf.db" is reached through the
 * directory descriptor N that the engine checked. SQLite's own unix VFS
 * would undo that: its full pathname follows every symlink, /proc's
 * included, and opens the database, -wal, -shm and -journal by the
 * directory's name again, which whoever may write in a parent can point
 * elsewhere after the check. This VFS is the default one with the name
 * kept as given, so every file SQLite opens goes through the descriptor.
 */
#define STORE_FD_PREFIX "/proc/self/fd/"

static sqlite3_vfs store_fd_vfs;
static pthread_once_t store_fd_vfs_once = PTHREAD_ONCE_INIT;
static int store_fd_vfs_rc = SQLITE_ERROR;

static int store_fd_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	size_t len = strlen(name);

	(void)vfs;
	if (n <= 0 || len >= (size_t)n)
		return SQLITE_CANTOPEN;
	memcpy(out, name, len + 1);
	return SQLITE_OK;
}

static void store_fd_vfs_init(void)
{
	sqlite3_vfs *base;

	if (sqlite3_initialize() != SQLITE_OK || !(base = sqlite3_vfs_find(NULL)))
		return;
	store_fd_vfs = *base;
	store_fd_vfs.zName = "fatelf-fd";
	store_fd_vfs.pNext = NULL;
	store_fd_vfs.xFullPathname = store_fd_full_pathname;
	store_fd_vfs_rc = sqlite3_vfs_register(&store_fd_vfs, 0);
}

/* The VFS that opens path: NULL (the default) unless it is named through
 * a descriptor. */
static int store_vfs_for(const char *path, const char **ret)
{
	*ret = NULL;
	if (strncmp(path, STORE_FD_PREFIX, strlen(STORE_FD_PREFIX)) != 0)
		return 0;
	(void)pthread_once(&store_fd_vfs_once, store_fd_vfs_init);
	if (store_fd_vfs_rc != SQLITE_OK)
		return -ENOSYS;
	*ret = store_fd_vfs.zName;
	return 0;
}

int store_open(const char *path, unsigned flags, store **ret, fatelf_diag *d)
{
	_cleanup_(sqlite_closep) sqlite3 *db = NULL;
	int open_flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
	const char *vfs;
	int64_t v, fk;
	int rc, r;

	if (flags & ~(unsigned)(STORE_OPEN_NOCREATE | STORE_OPEN_SECURE))
		return fatelf_diag_set(d, -EINVAL, -1, "unknown store open flags 0x%x", flags);
	if (!(flags & STORE_OPEN_NOCREATE))
		open_flags |= SQLITE_OPEN_CREATE;
	/* ":memory:" and "" (a temporary database) are not files. */
	if ((flags & STORE_OPEN_SECURE) && path[0] && strcmp(path, ":memory:") != 0) {
		r = store_secure_files(path, !(flags & STORE_OPEN_NOCREATE), d);
		if (r < 0)
			return r;
	}

	r = store_vfs_for(path, &vfs);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot register the store's file system layer");
	rc = sqlite3_open_v2(path, &db, open_flags, vfs);
	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, "opening the database", d);
	sqlite3_extended_result_codes(db, 1);
	rc = sqlite3_busy_timeout(db, 10000);
	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, "setting the busy timeout", d);
	rc = sqlite3_create_function_v2(db, "fatelf_fnmatch", 2,
					SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
					sql_fnmatch, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return sqlite_fail(db, rc, "adding the function fatelf_fnmatch", d);

	/* Read the version before anything writes: setting WAL mode alone
	 * rewrites the header of a database we must not touch. */
	r = db_query_int(db, "PRAGMA user_version", &v, d);
	if (r < 0)
		return r;
	if (v > (int64_t)store_migrations_count)
		return fatelf_diag_set(d, -EPROTONOSUPPORT, -1,
				       "database schema version %lld is newer than this program's %zu",
				       (long long)v, store_migrations_count);

	/* A new database gets pages of 1 KiB (SQLite's default is 4 KiB):
	 * an upgrade rewrites the page of each file row it changes, and the
	 * rows of the files that change are spread over the whole table, so
	 * the log and its checkpoint write a page per changed file. Only
	 * before the first table is made does this take effect. */
	if (v == 0) {
		r = db_exec(db, "PRAGMA page_size = " TEXT_OF(STORE_PAGE_SIZE), "setting the page size", d);
		if (r < 0)
			return r;
	}
	r = db_exec(db, "PRAGMA journal_mode = WAL", "setting WAL mode", d);
	if (r < 0)
		return r;
	r = db_exec(db, "PRAGMA synchronous = FULL", "setting durable commits", d);
	if (r < 0)
		return r;
	/* A commit copies the log into the database only past this; below
	 * it the daemon does it when idle (store_checkpoint). */
	r = db_exec(db, "PRAGMA wal_autocheckpoint = " TEXT_OF(STORE_WAL_CHECKPOINT_PAGES),
		    "setting the log's size", d);
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
		return fatelf_diag_oom(d);
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

int store_read_begin(store *s, fatelf_diag *d)
{
	int r = store_run(s, STMT_BEGIN_READ, "beginning a read transaction", d);

	if (r >= 0)
		s->reading = true;
	return r;
}

void store_read_end(store *s)
{
	if (!s->reading)
		return;
	s->reading = false;
	if (!sqlite3_get_autocommit(s->db))
		(void)store_run(s, STMT_ROLLBACK, "ending a read transaction", NULL);
}

int store_checkpoint(store *s, fatelf_diag *d)
{
	int rc;

	if (!sqlite3_get_autocommit(s->db))
		return fatelf_diag_set(d, -EBUSY, -1, "a checkpoint inside a transaction");
	rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		return sqlite_fail(s->db, rc, "copying the log into the database", d);
	return 0;
}

int store_set_durable(store *s, bool durable, fatelf_diag *d)
{
	int r;

	if (s->lazy == !durable)
		return 0;
	if (!sqlite3_get_autocommit(s->db))
		return fatelf_diag_set(d, -EBUSY, -1, "the commits' durability changed inside a transaction");
	r = db_exec(s->db, durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
		    "setting the commits' durability", d);
	if (r < 0)
		return r;
	s->lazy = !durable;
	return 0;
}

/* Packages */

/* Binds ?8 to ?12 of STMT_PACKAGE_ADD and _UPDATE: license, homepage,
 * targets and source. */
static void bind_package_more(sqlite3_stmt *st, const store_package *p)
{
	const char *type = store_source_to_text(p->source_type);

	bind_text(st, 8, p->license);
	bind_text(st, 9, p->homepage);
	bind_text(st, 10, p->targets);
	bind_text(st, 11, type && p->source ? type : NULL);
	bind_text(st, 12, type && p->source ? p->source : NULL);
}

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
	bind_package_more(st, p);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_UNIQUE)
		return fatelf_diag_set(d, -EEXIST, -1, "package %s is already installed", p->name);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "adding a package", d);
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(s->db);
	return 0;
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
	free((char *)p->license);
	free((char *)p->homepage);
	free((char *)p->targets);
	free((char *)p->source);
	memset(p, 0, sizeof(*p));
}

/* The row's strings point into the statement: valid until the next step.
 * A source type this program does not know reads as unknown. */
static void package_from_row(sqlite3_stmt *st, store_package *p)
{
	store_source source = STORE_SOURCE_UNKNOWN;

	if (store_source_from_text(column_text(st, 12), &source, NULL) < 0)
		source = STORE_SOURCE_UNKNOWN;
	*p = (store_package) {
		.id = sqlite3_column_int64(st, 0),
		.name = column_text(st, 1),
		.version = column_text(st, 2),
		.summary = column_text(st, 3),
		.vendor = column_text(st, 4),
		.signer_keyid = column_text(st, 5),
		.installed_at = sqlite3_column_int64(st, 6),
		.policy = column_text(st, 7),
		.disk_settled_ns = sqlite3_column_int64(st, 8),
		.license = column_text(st, 9),
		.homepage = column_text(st, 10),
		.targets = column_text(st, 11),
		.source_type = source,
		.source = source == STORE_SOURCE_UNKNOWN ? NULL : column_text(st, 13),
	};
}

/* Copies a row read from a statement into ret with its own strings. */
static int package_copy(const store_package *row, store_package *ret, fatelf_diag *d)
{
	store_package copy = {
		.id = row->id,
		.name = strdup_or_null(row->name),
		.version = strdup_or_null(row->version),
		.summary = strdup_or_null(row->summary),
		.vendor = strdup_or_null(row->vendor),
		.signer_keyid = strdup_or_null(row->signer_keyid),
		.installed_at = row->installed_at,
		.policy = strdup_or_null(row->policy),
		.disk_settled_ns = row->disk_settled_ns,
		.license = strdup_or_null(row->license),
		.homepage = strdup_or_null(row->homepage),
		.targets = strdup_or_null(row->targets),
		.source_type = row->source_type,
		.source = strdup_or_null(row->source),
	};

	if (!copy.name || !copy.version || !copy.summary || !copy.vendor || !copy.policy ||
	    (row->signer_keyid && !copy.signer_keyid) || (row->license && !copy.license) ||
	    (row->homepage && !copy.homepage) || (row->targets && !copy.targets) ||
	    (row->source && !copy.source)) {
		store_package_done(&copy);
		return fatelf_diag_oom(d);
	}
	*ret = copy;
	return 0;
}

int store_package_get(store *s, const char *name, store_package *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_package row;
	int r, rc;

	r = stmt_get(s, STMT_PACKAGE_GET, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "reading a package", d);
	package_from_row(st, &row);
	r = package_copy(&row, ret, d);
	return r < 0 ? r : 1;
}

/* -ENOENT, naming the package, for the calls that need it installed. */
static int package_missing(const char *name, fatelf_diag *d)
{
	return fatelf_diag_set(d, -ENOENT, -1, "package %s is not installed", name);
}

void store_packages_free(store_package *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_package_done(&v[i]);
	free(v);
}

/* The rows of st, copied; on a failure none. */
static int package_rows(store *s, sqlite3_stmt *st, store_package **ret, size_t *ret_n, fatelf_diag *d)
{
	store_package *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_package p;

		package_from_row(st, &p);
		r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r >= 0)
			r = package_copy(&p, &v[n], d);
		if (r < 0)
			goto fail;
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = sqlite_fail(s->db, rc, "listing packages", d);
		goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	store_packages_free(v, n);
	return r;
}

int store_package_list(store *s, store_package **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_PACKAGE_LIST, &st, d);
	if (r < 0)
		return r;
	return package_rows(s, st, ret, ret_n, d);
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

/* -ENOENT, naming the id, when no package has it. */
static int package_check(store *s, int64_t id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_PACKAGE_EXISTS, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc == SQLITE_DONE)
		return fatelf_diag_set(d, -ENOENT, -1, "no package has id %lld", (long long)id);
	return sqlite_fail(s->db, rc, "looking up a package", d);
}

int store_package_update(store *s, int64_t id, const store_package *p, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_PACKAGE_UPDATE, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	bind_text(st, 2, p->version);
	bind_text(st, 3, p->summary ? p->summary : "");
	bind_text(st, 4, p->vendor ? p->vendor : "");
	bind_text(st, 5, p->signer_keyid);
	sqlite3_bind_int64(st, 6, p->installed_at);
	bind_text(st, 7, p->policy);
	bind_package_more(st, p);
	r = stmt_done(s, st, "updating a package", d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_set(d, -ENOENT, -1, "no package has id %lld", (long long)id);
	return 0;
}

int store_package_set_policy_of(store *s, const char *path, const char *policy, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_PACKAGE_SET_POLICY_OF, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	bind_text(st, 2, policy);
	return stmt_done(s, st, "recording a package's policy", d);
}

int store_package_forms(store *s, int64_t package_id, store_forms *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_PACKAGE_FORMS, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "reading the forms of a package's fat files", d);
	*ret = (store_forms) {
		.fat = (uint64_t)sqlite3_column_int64(st, 0),
		.thinned = (uint64_t)sqlite3_column_int64(st, 1),
		.several = (uint64_t)sqlite3_column_int64(st, 2),
	};
	return 0;
}

int store_usage_get(store *s, int64_t package_id, store_usage *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_usage u;
	int r, rc;

	r = stmt_get(s, package_id == 0 ? STMT_USAGE_ALL : STMT_USAGE_OF, &st, d);
	if (r < 0)
		return r;
	if (package_id != 0)
		sqlite3_bind_int64(st, 1, package_id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "summing file sizes", d);
	u = (store_usage) {
		.files = (uint64_t)sqlite3_column_int64(st, 0),
		.fat_files = (uint64_t)sqlite3_column_int64(st, 1),
		.fat_files_fat = (uint64_t)sqlite3_column_int64(st, 2),
		.shipped_size = (uint64_t)sqlite3_column_int64(st, 3),
		.installed_size = (uint64_t)sqlite3_column_int64(st, 4),
		.bytes_saved = sqlite3_column_int64(st, 5),
	};
	/* No files: an empty package, or none at all. */
	if (u.files == 0 && package_id != 0) {
		r = package_check(s, package_id, d);
		if (r < 0)
			return r;
	}
	*ret = u;
	return 0;
}

int store_package_count(store *s, uint64_t *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_PACKAGE_COUNT, &st, d);
	if (r < 0)
		return r;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "counting packages", d);
	*ret = (uint64_t)sqlite3_column_int64(st, 0);
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

/* The four disk columns from n on: NULL when not known. */
static void bind_disk(sqlite3_stmt *st, int n, const store_disk *k)
{
	for (int i = 0; i < 4; i++)
		sqlite3_bind_null(st, n + i);
	if (!k->known)
		return;
	sqlite3_bind_int64(st, n, (sqlite3_int64)k->size);
	sqlite3_bind_int64(st, n + 1, (sqlite3_int64)k->ino);
	sqlite3_bind_int64(st, n + 2, k->mtime_ns);
	if (!k->by_package)
		sqlite3_bind_int64(st, n + 3, k->ctime_ns);
}

/* Binds the 16 columns of STMT_FILE_ADD and STMT_FILE_REPLACE. */
static int bind_file(sqlite3_stmt *st, const store_file *f, fatelf_diag *d)
{
	const char *type, *kind, *form;
	int r;

	r = ENUM_TEXT(store_file_type, f->type, "file type", &type, d);
	if (r >= 0)
		r = ENUM_TEXT(store_file_kind, f->kind, "file kind", &kind, d);
	if (r >= 0)
		r = ENUM_TEXT(store_form, f->installed_form, "installed form", &form, d);
	if (r < 0)
		return r;
	bind_text(st, 1, f->path);
	sqlite3_bind_int64(st, 2, f->package_id);
	bind_text(st, 3, type);
	sqlite3_bind_int64(st, 4, f->mode);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)f->size);
	bind_text(st, 6, f->sha256);
	bind_text(st, 7, f->link_target);
	sqlite3_bind_int(st, 8, f->config ? 1 : 0);
	bind_text(st, 9, kind);
	bind_text(st, 10, form);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)f->installed_size);
	bind_text(st, 12, f->installed_sha256);
	bind_disk(st, 13, &f->disk);
	return 0;
}

int store_file_add(store *s, const store_file *f, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_FILE_ADD, &st, d);
	if (r < 0)
		return r;
	r = bind_file(st, f, d);
	if (r < 0)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
		_cleanup_free_ char *owner = NULL;
		char claimant[256];

		sqlite3_reset(st);
		package_name_of(s, f->package_id, claimant, sizeof(claimant));
		if (store_file_owner(s, f->path, &owner, NULL) <= 0)
			return fatelf_diag_at(d, -EEXIST, -1, f->path, "already owned (claimed by %s)", claimant);
		return fatelf_diag_set(d, -EEXIST, -1,
				       "%s is owned by package %s, so package %s cannot install it",
				       f->path, owner, claimant);
	}
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return fatelf_diag_at(d, -ENOENT, -1, f->path, "no package has id %lld",
				       (long long)f->package_id);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, f->path, d);
	return 0;
}

int store_file_replace(store *s, const store_file *f, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_FILE_REPLACE, &st, d);
	if (r < 0)
		return r;
	r = bind_file(st, f, d);
	if (r < 0)
		return r;
	r = stmt_done(s, st, f->path, d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_at(d, -ENOENT, -1, f->path, "package %lld does not own this path",
				       (long long)f->package_id);
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
		return 0;
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "looking up an owner", d);
	name = strdup(column_text(st, 0));
	if (!name)
		return fatelf_diag_oom(d);
	*ret_package = name;
	return 1;
}

/* The row's strings point into the statement: valid until the next step.
 * A type, kind or form this program does not know is refused, naming
 * the path. */
static int file_from_row(sqlite3_stmt *st, store_file *f, fatelf_diag *d)
{
	const char *path = column_text(st, 0);
	int r;

	*f = (store_file) {
		.path = path,
		.package_id = sqlite3_column_int64(st, 1),
		.mode = (uint32_t)sqlite3_column_int64(st, 3),
		.size = (uint64_t)sqlite3_column_int64(st, 4),
		.sha256 = column_text(st, 5),
		.link_target = column_text(st, 6),
		.config = sqlite3_column_int(st, 7),
		.installed_size = (uint64_t)sqlite3_column_int64(st, 10),
		.installed_sha256 = column_text(st, 11),
	};
	/* All four, or the first three (by_package): a row with any other
	 * of them NULL is not known. */
	if (sqlite3_column_type(st, 12) != SQLITE_NULL && sqlite3_column_type(st, 13) != SQLITE_NULL &&
	    sqlite3_column_type(st, 14) != SQLITE_NULL) {
		f->disk.known = true;
		f->disk.by_package = sqlite3_column_type(st, 15) == SQLITE_NULL;
		f->disk.size = (uint64_t)sqlite3_column_int64(st, 12);
		f->disk.ino = (uint64_t)sqlite3_column_int64(st, 13);
		f->disk.mtime_ns = sqlite3_column_int64(st, 14);
		f->disk.ctime_ns = sqlite3_column_int64(st, 15);
	}
	r = store_file_type_from_text(column_text(st, 2), &f->type, d);
	if (r >= 0)
		r = store_file_kind_from_text(column_text(st, 8), &f->kind, d);
	if (r >= 0)
		r = store_form_from_text(column_text(st, 9), &f->installed_form, d);
	if (r < 0 && d)
		snprintf(d->subject, sizeof(d->subject), "%s", path ? path : "");
	return r;
}

/* Copies a row read from a statement into ret with its own strings. */
static int file_copy(const store_file *row, store_file *ret, fatelf_diag *d)
{
	store_file copy = *row;

	copy.path = strdup_or_null(row->path);
	copy.sha256 = strdup_or_null(row->sha256);
	copy.link_target = strdup_or_null(row->link_target);
	copy.installed_sha256 = strdup_or_null(row->installed_sha256);
	if (!copy.path || (row->sha256 && !copy.sha256) || (row->link_target && !copy.link_target) ||
	    (row->installed_sha256 && !copy.installed_sha256)) {
		store_file_done(&copy);
		return fatelf_diag_oom(d);
	}
	*ret = copy;
	return 0;
}

void store_files_free(store_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_file_done(&v[i]);
	free(v);
}

/* The rows of st, copied; on a failure none. */
static int file_rows(store *s, sqlite3_stmt *st, store_file **ret, size_t *ret_n, fatelf_diag *d)
{
	store_file *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_file f;

		r = file_from_row(st, &f, d);
		if (r >= 0)
			r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r >= 0)
			r = file_copy(&f, &v[n], d);
		if (r < 0)
			goto fail;
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = sqlite_fail(s->db, rc, "listing files", d);
		goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	store_files_free(v, n);
	return r;
}

/* The files of a package by path: all of them (limit 0), or at most limit
 * after the path after. */
static int files_query(store *s, const char *package, const char *after, size_t limit,
		       store_file **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_file *v = NULL;
	size_t n = 0;
	int r;

	r = stmt_get(s, limit ? STMT_FILES_PAGE : STMT_FILES_OF, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, package);
	if (limit) {
		bind_text(st, 2, after ? after : "");
		sqlite3_bind_int64(st, 3, (sqlite3_int64)MIN(limit, (size_t)INT64_MAX));
	}
	r = file_rows(s, st, &v, &n, d);
	if (r < 0)
		return r;
	if (n == 0) {
		/* No rows: an empty package, or none at all. */
		_cleanup_store_package_ store_package p = { 0 };

		sqlite3_reset(st);
		r = store_package_get(s, package, &p, d);
		if (r == 0)
			r = package_missing(package, d);
		if (r < 0)
			return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Calls cb with each row of statement id (bound to package_id when it is
 * not 0); the number of rows, or the first negative return. */
static int files_each(store *s, enum stmt_id id, int64_t package_id, store_file_cb cb, void *userdata,
		      fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc, n = 0;

	r = stmt_get(s, id, &st, d);
	if (r < 0)
		return r;
	if (package_id)
		sqlite3_bind_int64(st, 1, package_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_file f;

		r = file_from_row(st, &f, d);
		if (r < 0)
			return r;
		r = cb(&f, userdata);
		if (r < 0)
			return r;
		n++;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "listing files", d);
	return n;
}

int store_files_hashes(store *s, int (*cb)(void *ctx, const char *path, const char *sha256), void *ctx,
		       fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_FILES_HASHES, &st, d);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = cb(ctx, column_text(st, 0), column_text(st, 1));
		if (r < 0)
			return r;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "listing installed hashes", d);
	return 0;
}

int store_files_of_id(store *s, int64_t package_id, store_file_cb cb, void *userdata,
		      fatelf_diag *d)
{
	return files_each(s, STMT_FILES_OF_ID, package_id, cb, userdata, d);
}

int store_files_of(store *s, const char *package, store_file **ret, size_t *ret_n, fatelf_diag *d)
{
	return files_query(s, package, NULL, 0, ret, ret_n, d);
}

int store_files_page(store *s, const char *package, const char *after, size_t limit,
		     store_file **ret, size_t *ret_n, fatelf_diag *d)
{
	return files_query(s, package, after, limit ? limit : 1, ret, ret_n, d);
}

void store_file_done(store_file *f)
{
	if (!f)
		return;
	free((char *)f->path);
	free((char *)f->sha256);
	free((char *)f->link_target);
	free((char *)f->installed_sha256);
	memset(f, 0, sizeof(*f));
}

int store_file_get(store *s, const char *path, store_file *ret, char **ret_package, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *package = NULL;
	store_file row, copy;
	int r, rc;

	r = stmt_get(s, STMT_FILE_GET, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "reading a file", d);
	r = file_from_row(st, &row, d);
	if (r < 0)
		return r;
	r = file_copy(&row, &copy, d);
	if (r < 0)
		return r;
	if (ret_package) {
		package = strdup_or_null(column_text(st, 16));
		if (!package) {
			store_file_done(&copy);
			return fatelf_diag_oom(d);
		}
	}
	*ret = copy;
	if (ret_package)
		*ret_package = TAKE_PTR(package);
	return 1;
}

int store_file_delete(store *s, const char *path, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_FILE_DELETE, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	r = stmt_done(s, st, path, d);
	if (r < 0)
		return r;
	/* Counts the file row alone, not the records that cascade. */
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_at(d, -ENOENT, -1, path, "no package owns this path");
	return 0;
}

int store_files_delete_package(store *s, int64_t package_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_FILES_DELETE_PACKAGE, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	return stmt_done(s, st, "deleting a package's files", d);
}

int store_file_set_installed(store *s, const char *path, store_form installed_form,
			     uint64_t installed_size, const char *installed_sha256, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	const char *form;
	int r;

	r = ENUM_TEXT(store_form, installed_form, "installed form", &form, d);
	if (r < 0)
		return r;
	r = stmt_get(s, STMT_FILE_SET_INSTALLED, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	bind_text(st, 2, form);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)installed_size);
	bind_text(st, 4, installed_sha256);
	r = stmt_done(s, st, path, d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_at(d, -ENOENT, -1, path, "no package owns this path");
	return 0;
}

int store_file_set_disk(store *s, const char *path, const store_disk *disk, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_FILE_SET_DISK, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	bind_disk(st, 2, disk);
	r = stmt_done(s, st, path, d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_at(d, -ENOENT, -1, path, "no package owns this path");
	return 0;
}

int store_package_set_settled(store *s, int64_t package_id, int64_t ns, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_PACKAGE_SET_SETTLED, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	sqlite3_bind_int64(st, 2, ns);
	r = stmt_done(s, st, "recording when the files settled", d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_set(d, -ENOENT, -1, "no package has id %lld", (long long)package_id);
	return 0;
}

int store_files_all(store *s, store_file_cb cb, void *userdata, fatelf_diag *d)
{
	return files_each(s, STMT_FILES_ALL, 0, cb, userdata, d);
}

int store_records_delete(store *s, const char *path, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_RECORDS_DELETE, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	return stmt_done(s, st, path, d);
}

int store_record_add(store *s, const store_record *rec, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char name[FATELF_TARGET_NAME_MAX];
	int r, rc;

	r = stmt_get(s, STMT_RECORD_ADD, &st, d);
	if (r < 0)
		return r;
	fatelf_target_format(&rec->target, name);
	bind_text(st, 1, rec->path);
	sqlite3_bind_int64(st, 2, rec->idx);
	bind_text(st, 3, name);
	sqlite3_bind_int(st, 4, rec->target.machine);
	sqlite3_bind_int(st, 5, rec->target.osabi);
	sqlite3_bind_int(st, 6, rec->target.osabi_version);
	sqlite3_bind_int(st, 7, rec->target.word_size);
	sqlite3_bind_int(st, 8, rec->target.byte_order);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)rec->offset);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)rec->size);
	bind_text(st, 11, rec->sha256);
	sqlite3_bind_int(st, 12, rec->kept ? 1 : 0);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return fatelf_diag_at(d, -EEXIST, (int)rec->idx, rec->path, "record %u is already stored", rec->idx);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return fatelf_diag_set(d, -ENOENT, (int)rec->idx,
				       "%s: record %u belongs to no stored file", rec->path, rec->idx);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, rec->path, d);
	return 0;
}

/* -ENOENT, naming the path, when no file row has it. */
static int file_check(store *s, const char *path, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_FILE_EXISTS, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc == SQLITE_DONE)
		return fatelf_diag_at(d, -ENOENT, -1, path, "no package owns this path");
	return sqlite_fail(s->db, rc, path, d);
}

void store_records_free(store_record *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)v[i].path);
		free((char *)v[i].sha256);
	}
	free(v);
}

/* A row of STMT_RECORDS_OF or STMT_RECORDS_OF_PACKAGE; its texts are the
 * statement's until its next step. The target is read from its fields:
 * the name column is for people. */
static store_record record_from_row(sqlite3_stmt *st)
{
	return (store_record) {
		.path = column_text(st, 0),
		.idx = (unsigned)sqlite3_column_int64(st, 1),
		.target = {
			.machine = (uint16_t)sqlite3_column_int(st, 3),
			.osabi = (uint8_t)sqlite3_column_int(st, 4),
			.osabi_version = (uint8_t)sqlite3_column_int(st, 5),
			.word_size = (uint8_t)sqlite3_column_int(st, 6),
			.byte_order = (uint8_t)sqlite3_column_int(st, 7),
		},
		.offset = (uint64_t)sqlite3_column_int64(st, 8),
		.size = (uint64_t)sqlite3_column_int64(st, 9),
		.sha256 = column_text(st, 10),
		.kept = sqlite3_column_int(st, 11),
	};
}

/* The rows of st, copied; on a failure none. */
static int record_rows(store *s, sqlite3_stmt *st, const char *path, store_record **ret, size_t *ret_n,
		       fatelf_diag *d)
{
	store_record *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_record row = record_from_row(st);

		r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r < 0)
			goto fail;
		v[n] = row;
		v[n].path = strdup_or_null(row.path);
		v[n].sha256 = strdup_or_null(row.sha256);
		n++;
		if (!v[n - 1].path || (row.sha256 && !v[n - 1].sha256)) {
			r = fatelf_diag_oom(d);
			goto fail;
		}
	}
	if (rc != SQLITE_DONE) {
		r = sqlite_fail(s->db, rc, path, d);
		goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	store_records_free(v, n);
	return r;
}

int store_records_of(store *s, const char *path, store_record **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_record *v = NULL;
	size_t n = 0;
	int r;

	r = stmt_get(s, STMT_RECORDS_OF, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	r = record_rows(s, st, path, &v, &n, d);
	if (r < 0)
		return r;
	/* No records: a file that is not fat, or no file at all. */
	if (n == 0) {
		sqlite3_reset(st);
		r = file_check(s, path, d);
		if (r < 0)
			return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int store_records_all(store *s, int64_t package_id, store_record_cb cb, void *userdata,
		      fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc, n = 0;

	r = stmt_get(s, STMT_RECORDS_OF_PACKAGE, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const store_record rec = record_from_row(st);

		if (!rec.path)
			continue;
		r = cb(&rec, userdata);
		if (r < 0)
			return r;
		n++;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "listing records", d);
	return n;
}

int store_record_set_kept(store *s, const char *path, unsigned idx, int kept, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_RECORD_SET_KEPT, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	sqlite3_bind_int64(st, 2, idx);
	sqlite3_bind_int(st, 3, kept ? 1 : 0);
	r = stmt_done(s, st, path, d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_at(d, -ENOENT, (int)idx, path, "record %u is not stored", idx);
	return 0;
}

/* Directories */
int store_dir_add(store *s, const char *path, int64_t package_id, fatelf_diag *d)
{
	return store_dir_add_mode(s, path, package_id, -1, d);
}

int store_dir_add_mode(store *s, const char *path, int64_t package_id, int mode, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_DIR_ADD, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	sqlite3_bind_int64(st, 2, package_id);
	if (mode >= 0)
		sqlite3_bind_int(st, 3, mode & 07777);
	else
		sqlite3_bind_null(st, 3);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return fatelf_diag_at(d, -ENOENT, -1, path, "no package has id %lld",
				       (long long)package_id);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, path, d);
	return 0;
}

void store_dirs_free(store_dir *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].path);
	free(v);
}

/* The rows of a statement that selects path, package_id, mode. */
static int dirs_read(store *s, sqlite3_stmt *st, store_dir **ret, size_t *ret_n, fatelf_diag *d)
{
	store_dir *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r < 0)
			goto fail;
		v[n] = (store_dir) {
			.path = strdup_or_null(column_text(st, 0)),
			.package_id = sqlite3_column_int64(st, 1),
			.mode = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 2),
		};
		if (!v[n++].path) {
			r = fatelf_diag_oom(d);
			goto fail;
		}
	}
	if (rc != SQLITE_DONE) {
		r = sqlite_fail(s->db, rc, "listing directories", d);
		goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	store_dirs_free(v, n);
	return r;
}

int store_dirs_of(store *s, int64_t package_id, store_dir **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_DIRS_OF, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	return dirs_read(s, st, ret, ret_n, d);
}

int store_dirs_with_modes(store *s, int64_t package_id, store_dir **ret, size_t *ret_n,
			  fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, package_id > 0 ? STMT_DIRS_MODES_OF : STMT_DIRS_MODES_ALL, &st, d);
	if (r < 0)
		return r;
	if (package_id > 0)
		sqlite3_bind_int64(st, 1, package_id);
	return dirs_read(s, st, ret, ret_n, d);
}

int store_dirs_page(store *s, int64_t package_id, const char *after, size_t limit, store_dir **ret,
		    size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_DIRS_PAGE, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	/* "" sorts before every path, which begins with '/'. */
	bind_text(st, 2, after ? after : "");
	sqlite3_bind_int64(st, 3, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
	return dirs_read(s, st, ret, ret_n, d);
}

/* The range of paths that can match pattern: its literal prefix (up to
 * the first character fnmatch treats specially) in lo, and in hi the
 * first text after every text with that prefix; without a prefix, hi
 * is above every UTF-8 text. Returns -ENOMEM. */
static int match_range(const char *pattern, char **ret_lo, char **ret_hi)
{
	size_t n = strcspn(pattern, "*?[\\");
	char *lo = strndup(pattern, n), *hi = NULL;

	if (!lo)
		return -ENOMEM;
	/* The successor of the prefix: its last byte below 0xff raised by
	 * one, the bytes after it dropped. */
	while (n > 0 && (unsigned char)lo[n - 1] == 0xff)
		n--;
	if (n == 0) {
		hi = strdup("\xff");
	} else {
		hi = strndup(lo, n);
		if (hi)
			hi[n - 1] = (char)((unsigned char)hi[n - 1] + 1);
	}
	if (!hi) {
		free(lo);
		return -ENOMEM;
	}
	*ret_lo = lo;
	*ret_hi = hi;
	return 0;
}

int store_paths_match(store *s, const char *pattern, store_match_cb cb, void *userdata, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *lo = NULL, *hi = NULL;
	int r, rc, n = 0;

	if (match_range(pattern, &lo, &hi) < 0)
		return fatelf_diag_oom(d);
	r = stmt_get(s, STMT_PATHS_MATCH, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, pattern);
	bind_text(st, 2, lo);
	bind_text(st, 3, hi);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = cb(column_text(st, 0), column_text(st, 1), sqlite3_column_int(st, 2) != 0,
		       sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 3), userdata);
		if (r < 0)
			return r;
		if (n < INT_MAX)
			n++;
	}
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "matching paths", d);
	return n;
}

int store_dir_other_owners(store *s, const char *path, int64_t package_id, uint64_t *ret,
			   fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r, rc;

	r = stmt_get(s, STMT_DIR_OTHER_OWNERS, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, path);
	sqlite3_bind_int64(st, 2, package_id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, path, d);
	*ret = (uint64_t)sqlite3_column_int64(st, 0);
	return 0;
}

int store_dirs_delete_package(store *s, int64_t package_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_DIRS_DELETE_PACKAGE, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	return stmt_done(s, st, "deleting a package's directories", d);
}

/* History */

/* The row's strings point into the statement: valid until the next step.
 * A kind or state this program does not know is refused. */
static int tx_from_row(sqlite3_stmt *st, store_tx *t, fatelf_diag *d)
{
	int r;

	*t = (store_tx) {
		.id = sqlite3_column_int64(st, 0),
		.package = column_text(st, 2),
		.old_version = column_text(st, 3),
		.new_version = column_text(st, 4),
		.started_at = sqlite3_column_int64(st, 6),
		.finished_at = sqlite3_column_int64(st, 7),
		.bytes_written = (uint64_t)sqlite3_column_int64(st, 8),
		.bytes_saved = sqlite3_column_int64(st, 9),
		.error = column_text(st, 10),
	};
	r = store_tx_kind_from_text(column_text(st, 1), &t->kind, d);
	if (r >= 0)
		r = store_tx_state_from_text(column_text(st, 5), &t->state, d);
	if (r < 0 && d)
		snprintf(d->subject, sizeof(d->subject), "transaction %lld", (long long)t->id);
	return r;
}

/* Binds a transaction's start (kind, package, versions, time) from column
 * first on, in that order: the statements that begin and adopt rows share it. */
static int bind_tx_start(sqlite3_stmt *st, int first, const store_tx *t, fatelf_diag *d)
{
	const char *kind;
	int r = ENUM_TEXT(store_tx_kind, t->kind, "transaction kind", &kind, d);

	if (r < 0)
		return r;
	bind_text(st, first, kind);
	bind_text(st, first + 1, t->package);
	bind_text(st, first + 2, t->old_version);
	bind_text(st, first + 3, t->new_version);
	sqlite3_bind_int64(st, first + 4, t->started_at);
	return 0;
}

/* The queued row store_tx_adopt named becomes the pending one; false when
 * there is none (any more). */
static int tx_adopt(store *s, const store_tx *t, int64_t *ret_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int64_t id = s->adopt_id;
	int r;

	s->adopt_id = 0;
	r = stmt_get(s, STMT_TX_ADOPT, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	r = bind_tx_start(st, 2, t, d);
	if (r < 0)
		return r;
	r = stmt_done(s, st, "starting a queued transaction", d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return 0;
	if (ret_id)
		*ret_id = id;
	return 1;
}

int store_tx_begin(store *s, const store_tx *t, int64_t *ret_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	if (s->adopt_id) {
		r = tx_adopt(s, t, ret_id, d);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	r = stmt_get(s, STMT_TX_BEGIN, &st, d);
	if (r < 0)
		return r;
	r = bind_tx_start(st, 1, t, d);
	if (r < 0)
		return r;
	r = stmt_done(s, st, "recording a transaction", d);
	if (r < 0)
		return r;
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_tx_finish(store *s, int64_t id, store_tx_state state, int64_t finished_at,
		    uint64_t bytes_written, int64_t bytes_saved, const char *error,
		    fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	const char *text;
	int r;

	r = ENUM_TEXT(store_tx_state, state, "transaction state", &text, d);
	if (r < 0)
		return r;
	r = stmt_get(s, STMT_TX_FINISH, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	bind_text(st, 2, text);
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

int store_tx_queue(store *s, store_tx_kind kind, const char *package, int64_t queued_at,
		   int64_t *ret_id, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	const char *text;
	int r;

	r = ENUM_TEXT(store_tx_kind, kind, "transaction kind", &text, d);
	if (r < 0)
		return r;
	r = stmt_get(s, STMT_TX_QUEUE, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, text);
	bind_text(st, 2, package);
	sqlite3_bind_int64(st, 3, queued_at);
	r = stmt_done(s, st, "queueing a transaction", d);
	if (r < 0)
		return r;
	*ret_id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

void store_tx_adopt(store *s, int64_t id)
{
	s->adopt_id = id;
}

/* Closes (with state's text) or, with text NULL, deletes a queued row. */
static int tx_unqueue(store *s, int64_t id, const char *text, int64_t finished_at, const char *error,
		      fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	if (s->adopt_id == id)
		s->adopt_id = 0;
	r = stmt_get(s, text ? STMT_TX_DEQUEUE : STMT_TX_DELETE_QUEUED, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	if (text) {
		bind_text(st, 2, text);
		sqlite3_bind_int64(st, 3, finished_at);
		bind_text(st, 4, error);
	}
	r = stmt_done(s, st, "closing a queued transaction", d);
	if (r < 0)
		return r;
	return sqlite3_changes(s->db) > 0;
}

int store_tx_dequeue(store *s, int64_t id, store_tx_state state, int64_t finished_at,
		     const char *error, fatelf_diag *d)
{
	const char *text;
	int r = ENUM_TEXT(store_tx_state, state, "transaction state", &text, d);

	if (r < 0)
		return r;
	return tx_unqueue(s, id, text, finished_at, error, d);
}

int store_tx_drop_queued(store *s, int64_t id, fatelf_diag *d)
{
	return tx_unqueue(s, id, NULL, 0, NULL, d);
}

int store_tx_cancel_queued(store *s, int64_t finished_at, const char *error, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_TX_CANCEL_QUEUED, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, finished_at);
	bind_text(st, 2, error);
	r = stmt_done(s, st, "cancelling queued transactions", d);
	if (r < 0)
		return r;
	return sqlite3_changes(s->db);
}

void store_tx_done(store_tx *t)
{
	if (!t)
		return;
	free((char *)t->package);
	free((char *)t->old_version);
	free((char *)t->new_version);
	free((char *)t->error);
	memset(t, 0, sizeof(*t));
}

/* Copies a row read from a statement into ret with its own strings. */
static int tx_copy(const store_tx *row, store_tx *ret, fatelf_diag *d)
{
	store_tx copy = *row;

	copy.package = strdup_or_null(row->package);
	copy.old_version = strdup_or_null(row->old_version);
	copy.new_version = strdup_or_null(row->new_version);
	copy.error = strdup_or_null(row->error);
	if ((row->package && !copy.package) ||
	    (row->old_version && !copy.old_version) || (row->new_version && !copy.new_version) ||
	    (row->error && !copy.error)) {
		store_tx_done(&copy);
		return fatelf_diag_oom(d);
	}
	*ret = copy;
	return 0;
}

int store_tx_get(store *s, int64_t id, store_tx *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_tx row;
	int r, rc;

	r = stmt_get(s, STMT_TX_GET, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "reading a transaction", d);
	r = tx_from_row(st, &row, d);
	if (r >= 0)
		r = tx_copy(&row, ret, d);
	return r < 0 ? r : 1;
}

void store_txs_free(store_tx *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_tx_done(&v[i]);
	free(v);
}

/* The rows of a statement that selects TX_COLUMNS. */
static int txs_read(store *s, sqlite3_stmt *st, store_tx **ret, size_t *ret_n, fatelf_diag *d)
{
	store_tx *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_tx t;

		r = tx_from_row(st, &t, d);
		if (r >= 0)
			r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r >= 0)
			r = tx_copy(&t, &v[n], d);
		if (r < 0)
			goto fail;
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = sqlite_fail(s->db, rc, "listing history", d);
		goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	store_txs_free(v, n);
	return r;
}

int store_tx_list(store *s, store_tx **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_TX_LIST, &st, d);

	if (r < 0)
		return r;
	return txs_read(s, st, ret, ret_n, d);
}

int store_tx_history(store *s, const char *package, uint64_t limit, store_tx **ret, size_t *ret_n,
		     fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	sqlite3_int64 max = limit == 0 || limit > INT64_MAX ? -1 : (sqlite3_int64)limit;
	int r;

	r = stmt_get(s, package ? STMT_TX_HISTORY_OF : STMT_TX_HISTORY_ALL, &st, d);
	if (r < 0)
		return r;
	if (package) {
		bind_text(st, 1, package);
		sqlite3_bind_int64(st, 2, max);
	} else
		sqlite3_bind_int64(st, 1, max);
	return txs_read(s, st, ret, ret_n, d);
}

/* Read whole before the caller sees a row, so recovery may finish each
 * row (and commit) while it goes through them. */
int store_tx_pending(store *s, store_tx **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_TX_PENDING, &st, d);

	if (r < 0)
		return r;
	return txs_read(s, st, ret, ret_n, d);
}

/* Journal */
int store_journal_add(store *s, const store_journal_op *op, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	const char *optext, *statetext;
	int r, rc;

	r = ENUM_TEXT(store_jop, op->op, "journal operation", &optext, d);
	if (r >= 0)
		r = ENUM_TEXT(store_jstate, op->state, "journal state", &statetext, d);
	if (r < 0)
		return r;
	r = stmt_get(s, STMT_JOURNAL_ADD, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, op->txid);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)op->seq);
	bind_text(st, 3, optext);
	bind_text(st, 4, op->path);
	bind_text(st, 5, op->temp_path);
	bind_text(st, 6, op->backup_path);
	bind_text(st, 7, statetext);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return fatelf_diag_set(d, -EEXIST, -1,
				       "transaction %lld: journal entry %llu is already stored",
				       (long long)op->txid, (unsigned long long)op->seq);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return fatelf_diag_set(d, -ENOENT, -1,
				       "journal entry %llu: transaction %lld is not recorded",
				       (unsigned long long)op->seq, (long long)op->txid);
	if (rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "adding a journal entry", d);
	return 0;
}

void store_journal_free(store_journal_op *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)v[i].path);
		free((char *)v[i].temp_path);
		free((char *)v[i].backup_path);
	}
	free(v);
}

/* The journal's rows of transaction txid in st, copied; on a failure
 * none. */
static int journal_rows(store *s, sqlite3_stmt *st, int64_t txid, store_journal_op **ret, size_t *ret_n,
			fatelf_diag *d)
{
	store_journal_op *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *path = column_text(st, 3), *temp = column_text(st, 4),
			   *backup = column_text(st, 5);
		store_journal_op *o;

		r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r < 0)
			goto fail;
		o = &v[n++];
		*o = (store_journal_op) {
			.txid = sqlite3_column_int64(st, 0),
			.seq = (uint64_t)sqlite3_column_int64(st, 1),
			.path = strdup_or_null(path),
			.temp_path = strdup_or_null(temp),
			.backup_path = strdup_or_null(backup),
		};
		if ((path && !o->path) || (temp && !o->temp_path) || (backup && !o->backup_path)) {
			r = fatelf_diag_oom(d);
			goto fail;
		}
		r = store_jop_from_text(column_text(st, 2), &o->op, d);
		if (r >= 0)
			r = store_jstate_from_text(column_text(st, 6), &o->state, d);
		if (r < 0) {
			if (d)
				snprintf(d->subject, sizeof(d->subject), "transaction %lld", (long long)txid);
			goto fail;
		}
	}
	if (rc != SQLITE_DONE) {
		r = sqlite_fail(s->db, rc, "reading the journal", d);
		goto fail;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	store_journal_free(v, n);
	return r;
}

int store_journal_of(store *s, int64_t txid, store_journal_op **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_JOURNAL_OF, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, txid);
	return journal_rows(s, st, txid, ret, ret_n, d);
}

/* Sets one text column of one journal entry (its state or its temp). */
static int journal_entry_update(store *s, enum stmt_id id, int64_t txid, uint64_t seq, const char *text,
				const char *what, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, id, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, txid);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)seq);
	bind_text(st, 3, text);
	r = stmt_done(s, st, what, d);
	if (r < 0)
		return r;
	if (sqlite3_changes(s->db) == 0)
		return fatelf_diag_set(d, -ENOENT, -1,
				       "transaction %lld: journal entry %llu is not stored",
				       (long long)txid, (unsigned long long)seq);
	return 0;
}

int store_journal_set_state(store *s, int64_t txid, uint64_t seq, store_jstate state,
			    fatelf_diag *d)
{
	const char *text;
	int r = ENUM_TEXT(store_jstate, state, "journal state", &text, d);

	if (r < 0)
		return r;
	return journal_entry_update(s, STMT_JOURNAL_SET_STATE, txid, seq, text, "updating a journal entry", d);
}

int store_journal_set_temp(store *s, int64_t txid, uint64_t seq, const char *temp_path,
			   fatelf_diag *d)
{
	return journal_entry_update(s, STMT_JOURNAL_SET_TEMP, txid, seq, temp_path,
				    "renaming a journal entry's temp", d);
}

int store_journal_clear(store *s, int64_t txid, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_JOURNAL_CLEAR, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, txid);
	return stmt_done(s, st, "clearing a journal", d);
}

int store_journal_txids(store *s, int64_t **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int64_t *v = NULL;
	size_t n = 0, cap = 0;
	int r, rc;

	r = stmt_get(s, STMT_JOURNAL_TXIDS, &st, d);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r < 0) {
			free(v);
			return r;
		}
		v[n++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE) {
		free(v);
		return sqlite_fail(s->db, rc, "reading the journal", d);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Holds */

int store_hold_set(store *s, const char *name, bool held, int64_t now, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	bool was;
	int r;

	r = store_hold_get(s, name, &was, d);
	if (r < 0)
		return r;
	r = stmt_get(s, held ? STMT_HOLD_ADD : STMT_HOLD_DELETE, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, name);
	if (held)
		sqlite3_bind_int64(st, 2, now);
	r = stmt_done(s, st, held ? "holding a package" : "releasing a hold", d);
	if (r < 0)
		return r;
	return was != held;
}

int store_hold_get(store *s, const char *name, bool *ret_held, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	store_package p;
	int r, rc;

	r = store_package_get(s, name, &p, d);
	if (r == 0)
		r = package_missing(name, d);
	if (r < 0)
		return r;
	store_package_done(&p);
	r = stmt_get(s, STMT_HOLD_OF, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sqlite_fail(s->db, rc, "reading a hold", d);
	*ret_held = rc == SQLITE_ROW;
	return 0;
}

/* The first column of each row of statement id (bound to arg when it is
 * not NULL), as strdup'ed texts (free with store_holds_free). */
static int name_from_row(sqlite3_stmt *st, void *elem, fatelf_diag *d)
{
	char **name = elem;

	*name = strdup_or_null(column_text(st, 0));
	return *name ? 0 : fatelf_diag_oom(d);
}

static void names_free(void *v, size_t n)
{
	store_holds_free(v, n);
}

static int list_names(store *s, enum stmt_id id, const char *arg, const char *what, char ***ret,
		      size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, id, &st, d);

	if (r < 0)
		return r;
	if (arg)
		bind_text(st, 1, arg);
	return collect_rows(s, st, sizeof(char *), name_from_row, names_free, what, (void **)ret, ret_n, d);
}

int store_holds(store *s, char ***ret, size_t *ret_n, fatelf_diag *d)
{
	return list_names(s, STMT_HOLD_LIST, NULL, "listing holds", ret, ret_n, d);
}

void store_holds_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int store_depends_set(store *s, int64_t package_id, const char *const *names, const char *const *constraints,
		      size_t n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_DEPENDS_CLEAR, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	r = stmt_done(s, st, "clearing a package's dependencies", d);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		_cleanup_stmt_ sqlite3_stmt *ad = NULL;

		r = stmt_get(s, STMT_DEPENDS_ADD, &ad, d);
		if (r < 0)
			return r;
		sqlite3_bind_int64(ad, 1, package_id);
		bind_text(ad, 2, names[i]);
		bind_text(ad, 3, constraints[i] ? constraints[i] : "");
		r = stmt_done(s, ad, "recording a dependency", d);
		if (r < 0)
			return r;
	}
	return 0;
}

int store_dependents(store *s, const char *name, char ***ret, size_t *ret_n, fatelf_diag *d)
{
	return list_names(s, STMT_DEPENDENTS, name, "listing a package's dependents", ret, ret_n, d);
}

int store_dependents_constraints(store *s, const char *name, char ***ret_names, char ***ret_constraints,
				 size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char **v = NULL, **c = NULL;
	size_t n = 0, cap = 0, ccap = 0;
	int r, rc;

	r = stmt_get(s, STMT_DEPENDENTS_CONSTRAINTS, &st, d);
	if (r < 0)
		return r;
	bind_text(st, 1, name);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *ct = sqlite3_column_text(st, 1);

		r = grow((void **)&v, n, &cap, sizeof(*v), d);
		if (r >= 0)
			r = grow((void **)&c, n, &ccap, sizeof(*c), d);
		if (r >= 0) {
			v[n] = strdup((const char *)sqlite3_column_text(st, 0));
			c[n] = strdup(ct ? (const char *)ct : "");
			r = v[n] && c[n] ? 0 : fatelf_diag_oom(d);
			if (r < 0) {
				free(v[n]);
				free(c[n]);
			}
		}
		if (r < 0) {
			store_holds_free(v, n);
			store_holds_free(c, n);
			return r;
		}
		n++;
	}
	if (rc != SQLITE_DONE) {
		store_holds_free(v, n);
		store_holds_free(c, n);
		return sqlite_fail(s->db, rc, "listing a package's dependents", d);
	}
	*ret_names = v;
	*ret_constraints = c;
	*ret_n = n;
	return 0;
}

int store_package_set_automatic(store *s, int64_t package_id, bool automatic, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	r = stmt_get(s, STMT_PACKAGE_SET_AUTOMATIC, &st, d);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, package_id);
	sqlite3_bind_int(st, 2, automatic ? 1 : 0);
	return stmt_done(s, st, "marking a package automatic", d);
}

int store_packages_automatic(store *s, char ***ret, size_t *ret_n, fatelf_diag *d)
{
	return list_names(s, STMT_PACKAGE_AUTOMATIC, NULL, "listing automatic packages", ret, ret_n, d);
}

/* ------------------------------------------------------------ kept configs */

void store_kept_done(store_kept *k)
{
	if (!k)
		return;
	free((char *)k->path);
	free((char *)k->package);
	free((char *)k->version);
	free((char *)k->sha256);
	free((char *)k->installed_sha256);
	*k = (store_kept){ 0 };
}

void store_kept_free(store_kept *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_kept_done(&v[i]);
	free(v);
}

static int kept_from_row(sqlite3_stmt *st, store_kept *ret, fatelf_diag *d)
{
	store_kept k = {
		.path = strdup_or_null(column_text(st, 0)),
		.package = strdup_or_null(column_text(st, 1)),
		.version = strdup_or_null(column_text(st, 2)),
		.sha256 = strdup_or_null(column_text(st, 3)),
		.installed_sha256 = strdup_or_null(column_text(st, 4)),
		.installed_size = (uint64_t)sqlite3_column_int64(st, 5),
		.dir = sqlite3_column_text(st, 6) && strcmp(column_text(st, 6), "dir") == 0,
	};

	if (!k.path || !k.package || !k.version ||
	    (!k.installed_sha256 && sqlite3_column_type(st, 4) != SQLITE_NULL) ||
	    (!k.sha256 && sqlite3_column_type(st, 3) != SQLITE_NULL)) {
		store_kept_done(&k);
		return fatelf_diag_oom(d);
	}
	*ret = k;
	return 0;
}

int store_kept_add(store *s, const store_kept *k, int64_t now, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_KEPT_ADD, &st, d);

	if (r < 0)
		return r;
	bind_text(st, 1, k->path);
	bind_text(st, 2, k->package);
	bind_text(st, 3, k->version ? k->version : "");
	bind_text(st, 4, k->sha256);
	bind_text(st, 5, k->installed_sha256);
	sqlite3_bind_int64(st, 6, (int64_t)k->installed_size);
	sqlite3_bind_int64(st, 7, now);
	bind_text(st, 8, k->dir ? "dir" : "file");
	return stmt_done(s, st, k->path, d);
}

int store_kept_get(store *s, const char *path, store_kept *ret, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_KEPT_GET, &st, d), rc;

	if (r < 0)
		return r;
	bind_text(st, 1, path);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return sqlite_fail(s->db, rc, "reading a kept config file", d);
	r = kept_from_row(st, ret, d);
	return r < 0 ? r : 1;
}

static int kept_elem_from_row(sqlite3_stmt *st, void *elem, fatelf_diag *d)
{
	return kept_from_row(st, elem, d);
}

static void kept_free_all(void *v, size_t n)
{
	store_kept_free(v, n);
}

int store_kept_of(store *s, const char *package, store_kept **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_KEPT_OF, &st, d);

	if (r < 0)
		return r;
	bind_text(st, 1, package);
	return collect_rows(s, st, sizeof(store_kept), kept_elem_from_row, kept_free_all,
			    "listing kept config files", (void **)ret, ret_n, d);
}

void store_kept_packages_free(store_kept_package *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].version);
	}
	free(v);
}

static int kept_package_from_row(sqlite3_stmt *st, void *elem, fatelf_diag *d)
{
	store_kept_package *p = elem;

	*p = (store_kept_package){
		.name = strdup_or_null(column_text(st, 0)),
		.version = strdup_or_null(column_text(st, 1)),
		.files = (uint64_t)sqlite3_column_int64(st, 3),
	};
	return p->name && p->version ? 0 : fatelf_diag_oom(d);
}

static void kept_packages_free_all(void *v, size_t n)
{
	store_kept_packages_free(v, n);
}

int store_kept_packages(store *s, store_kept_package **ret, size_t *ret_n, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_KEPT_PACKAGES, &st, d);

	if (r < 0)
		return r;
	return collect_rows(s, st, sizeof(store_kept_package), kept_package_from_row, kept_packages_free_all,
			    "listing the packages that left config files", (void **)ret, ret_n, d);
}

int store_kept_delete(store *s, const char *path, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, STMT_KEPT_DELETE, &st, d);

	if (r < 0)
		return r;
	bind_text(st, 1, path);
	return stmt_done(s, st, path, d);
}

int store_kept_delete_package(store *s, const char *package, bool dirs_only, fatelf_diag *d)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = stmt_get(s, dirs_only ? STMT_KEPT_DELETE_DIRS : STMT_KEPT_DELETE_PACKAGE, &st, d);

	if (r < 0)
		return r;
	bind_text(st, 1, package);
	return stmt_done(s, st, "forgetting kept config files", d);
}
