/*
 * The installed-file database of fatelfd: one SQLite file that records
 * every installed package, each file it owns (the path is the primary key,
 * so two packages cannot own one path), the FatELF records of fat files,
 * the directories a package owns, and the history and journal of mutating
 * transactions. This module owns all the SQL: the schema comes from the
 * migrations in schema/db/, embedded by the build, and every statement is
 * one entry of a table in store.c, prepared once.
 *
 * Columns that hold one of a closed set of texts ("file" or "symlink",
 * "pending" or "committed", ...) are enums here; store.c has one table of
 * texts for each, the texts the database holds. A text the table does not
 * know is refused when read (-EBADMSG, naming the column and the text).
 * List calls return arrays that the caller owns (each with its free
 * function); only the walk over every file of the store streams through a
 * callback, whose strings are valid only during the call.
 */
#ifndef FATELF_STORE_H
#define FATELF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fatelf.h"
#include "macro.h"

/* The migrations embedded by schema/embed.sh (lib/store_migrations.c). */
struct store_migration {
	int version;            /* 1, 2, ... in order */
	const char *name;       /* file name without .sql, e.g. "0001-initial" */
	const char *sql;
};
extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

typedef struct store store;

/* The closed sets of column values, and their texts in the database. */
typedef enum store_file_type {
	STORE_FILE_REGULAR,             /* "file" */
	STORE_FILE_SYMLINK,             /* "symlink" */
	_STORE_FILE_TYPE_MAX,
} store_file_type;
typedef enum store_file_kind {
	STORE_KIND_DATA,                /* "data" */
	STORE_KIND_ELF,                 /* "elf" */
	STORE_KIND_FATELF,              /* "fatelf" */
	_STORE_KIND_MAX,
} store_file_kind;
typedef enum store_form {
	STORE_FORM_AS_SHIPPED,          /* "as-shipped" */
	STORE_FORM_THINNED,             /* "thinned" */
	_STORE_FORM_MAX,
} store_form;
typedef enum store_tx_kind {
	STORE_TX_INSTALL,               /* "install" */
	STORE_TX_UPGRADE,               /* "upgrade" */
	STORE_TX_REINSTALL,             /* "reinstall" */
	STORE_TX_DOWNGRADE,             /* "downgrade" */
	STORE_TX_REMOVE,                /* "remove" */
	STORE_TX_THIN,                  /* "thin" */
	_STORE_TX_KIND_MAX,
} store_tx_kind;
typedef enum store_tx_state {
	STORE_TX_QUEUED,                /* "queued" */
	STORE_TX_PENDING,               /* "pending" */
	STORE_TX_COMMITTED,             /* "committed" */
	STORE_TX_ROLLED_BACK,           /* "rolled-back" */
	STORE_TX_FAILED,                /* "failed" */
	STORE_TX_CANCELLED,             /* "cancelled" */
	_STORE_TX_STATE_MAX,
} store_tx_state;
/* Where a package was installed from (packages.source_type). */
typedef enum store_source {
	STORE_SOURCE_UNKNOWN,           /* NULL: installed before schema 10, or not told */
	STORE_SOURCE_FILE,              /* "file": a bundle file, by its path */
	STORE_SOURCE_URL,               /* "url": without user:password@ */
	STORE_SOURCE_REPOSITORY,        /* "repository": the repository's name */
	STORE_SOURCE_REGISTRY,          /* "registry": an OCI reference */
	STORE_SOURCE_FD,                /* "fd": a descriptor passed without a name */
	_STORE_SOURCE_MAX,
} store_source;
typedef enum store_jop {
	STORE_JOP_CREATE,               /* "create": temp -> path; path did not exist */
	STORE_JOP_REPLACE,              /* "replace": temp -> path over the old file */
	STORE_JOP_REMOVE,               /* "remove": unlink path (moved to temp first) */
	STORE_JOP_MKDIR,                /* "mkdir": path created while staging */
	STORE_JOP_RMDIR,                /* "rmdir": rmdir path after commit, if empty */
	_STORE_JOP_MAX,
} store_jop;
typedef enum store_jstate {
	STORE_JSTATE_STAGED,            /* "staged" */
	STORE_JSTATE_DONE,              /* "done" */
	STORE_JSTATE_UNDONE,            /* "undone" */
	_STORE_JSTATE_MAX,
} store_jstate;
/* X_to_text: the database's text of a value (NULL when out of range).
 * X_from_text: the value of a text; -EBADMSG, naming it, for a text that
 * is not one of the set. */
const char *store_file_type_to_text(store_file_type v);
int store_file_type_from_text(const char *text, store_file_type *ret, fatelf_diag *d);
const char *store_file_kind_to_text(store_file_kind v);
int store_file_kind_from_text(const char *text, store_file_kind *ret, fatelf_diag *d);
const char *store_form_to_text(store_form v);
int store_form_from_text(const char *text, store_form *ret, fatelf_diag *d);
const char *store_tx_kind_to_text(store_tx_kind v);
int store_tx_kind_from_text(const char *text, store_tx_kind *ret, fatelf_diag *d);
const char *store_tx_state_to_text(store_tx_state v);
int store_tx_state_from_text(const char *text, store_tx_state *ret, fatelf_diag *d);
/* STORE_SOURCE_UNKNOWN is NULL both ways. */
const char *store_source_to_text(store_source v);
int store_source_from_text(const char *text, store_source *ret, fatelf_diag *d);
const char *store_jop_to_text(store_jop v);
int store_jop_from_text(const char *text, store_jop *ret, fatelf_diag *d);
const char *store_jstate_to_text(store_jstate v);
int store_jstate_from_text(const char *text, store_jstate *ret, fatelf_diag *d);

/* Opening and closing */
enum {
	STORE_OPEN_NOCREATE = 1 << 0, /* -ENOENT when the file does not exist */
	/* Create the database 0600 and tighten looser modes of it and its
	 * -wal and -shm files. Only while no other connection of this process
	 * has them open: closing a descriptor drops every POSIX lock the
	 * process holds on the file, SQLite's included. */
	STORE_OPEN_SECURE = 1 << 1,
};
/* Opens (or creates) the database, sets WAL, foreign keys and durable
 * commits, and applies pending migrations, each in its own transaction.
 * A database newer than this program is refused with -EPROTONOSUPPORT and
 * left untouched. */
int store_open(const char *path, unsigned flags, store **ret, fatelf_diag *d);
/* Accepts NULL; returns NULL. */
store *store_close(store *s);
static inline void store_closep(store **p)
{
	store_close(*p);
}
#define _cleanup_store_ _cleanup_(store_closep)
/* The schema version this program knows (the number of migrations). */
int store_schema_version(void);

/* Transactions (BEGIN IMMEDIATE: one writer at a time) */
int store_begin(store *s, fatelf_diag *d);
int store_commit(store *s, fatelf_diag *d);
int store_rollback(store *s, fatelf_diag *d);
/*
 * A read transaction (BEGIN DEFERRED): the queries until store_read_end
 * see one snapshot, and take SQLite's WAL read lock once instead of once
 * each (two fcntl calls a query). Writes do not belong in it. Ending one
 * that is not open (or was ended otherwise) does nothing.
 */
int store_read_begin(store *s, fatelf_diag *d);
void store_read_end(store *s);
/*
 * Whether the commits from here on wait for the disk (the default, SQLite's
 * synchronous = FULL) or only reach the OS (NORMAL: a commit survives a
 * crash of the process, and a later durable commit makes it durable too,
 * as the WAL is written in order; a power cut may lose it). Only between
 * transactions. For records whose loss in a power cut is harmless: the
 * pending history row before the journal, the journal's clearing after
 * the final sync, caches.
 */
int store_set_durable(store *s, bool durable, fatelf_diag *d);

/* The page size of a new database, and the log's size, in pages (64 MiB),
 * past which a commit copies it into the database itself. */
#define STORE_PAGE_SIZE 1024
#define STORE_WAL_CHECKPOINT_PAGES 65536

/*
 * Copies what the write-ahead log holds into the database, as far as no
 * reader holds it back. Commits do that themselves only once the log
 * passes STORE_WAL_CHECKPOINT_PAGES; the daemon calls this when it is
 * idle, so that a transaction's reply does not wait for the copy of the
 * last one's pages. Returns 0, or a negative code with nothing lost (the
 * log is still there).
 */
int store_checkpoint(store *s, fatelf_diag *d);

/* Packages */
typedef struct store_package {
	int64_t id;             /* set by the store on reads */
	const char *name;
	const char *version;
	const char *summary;    /* NULL means "" */
	const char *vendor;     /* NULL means "" */
	const char *signer_keyid; /* NULL when unsigned */
	int64_t installed_at;   /* seconds since the epoch */
	const char *policy;
	int64_t disk_settled_ns; /* read only: 0 for NULL (store_disk.by_package) */
	const char *license;    /* NULL: the manifest declares none */
	const char *homepage;   /* NULL: the manifest declares none */
	const char *targets;    /* the manifest's targets, comma-separated; NULL: not known */
	store_source source_type;
	const char *source;     /* NULL exactly when source_type is unknown */
} store_package;

/* -EEXIST when a package of that name is installed. */
int store_package_add(store *s, const store_package *p, int64_t *ret_id, fatelf_diag *d);
/* Fills ret with strdup'ed strings (free with store_package_done): 1;
 * 0 when not installed (ret and d untouched). */
int store_package_get(store *s, const char *name, store_package *ret, fatelf_diag *d);
void store_package_done(store_package *p);
#define _cleanup_store_package_ _cleanup_(store_package_done)
/* Every package by name, in *ret (free with store_packages_free), their
 * number in *ret_n. */
int store_package_list(store *s, store_package **ret, size_t *ret_n, fatelf_diag *d);
void store_packages_free(store_package *v, size_t n);
/* Removes the package with its files, records and dirs; -ENOENT if absent. */
int store_package_remove(store *s, const char *name, fatelf_diag *d);

/* Replaces the row's version, summary, vendor, signer, install time,
 * policy, license, homepage, targets and source (an upgrade keeps the
 * package's id); -ENOENT if no such id. */
int store_package_update(store *s, int64_t id, const store_package *p, fatelf_diag *d);
/* Sets the policy of the package that owns path (a thin rewrote the file
 * to it); none: 0. */
int store_package_set_policy_of(store *s, const char *path, const char *policy, fatelf_diag *d);
/* The package's fat files by the form they are installed in now. */
typedef struct store_forms {
	uint64_t fat;                   /* as shipped: every record */
	uint64_t thinned;               /* thinned to one record */
	uint64_t several;               /* thinned to several records */
} store_forms;
int store_package_forms(store *s, int64_t package_id, store_forms *ret, fatelf_diag *d);
/* Sizes of a package (or of all packages when package_id is 0). */
typedef struct store_usage {
	uint64_t files;
	uint64_t fat_files;             /* kind fatelf */
	uint64_t fat_files_fat;         /* kind fatelf, installed as shipped */
	uint64_t shipped_size;          /* sum of size */
	uint64_t installed_size;        /* sum of installed_size */
	int64_t bytes_saved;            /* sum of size - installed_size over thinned files */
} store_usage;
int store_usage_get(store *s, int64_t package_id, store_usage *ret, fatelf_diag *d);
/* The number of packages installed. */
int store_package_count(store *s, uint64_t *ret, fatelf_diag *d);

/* Files */
/* What an installed file looked like on disk after the engine put it there
 * (lstat): an upgrade leaves a file in place when it still looks so. */
typedef struct store_disk {
	bool known;             /* false: NULL columns, hash the file instead */
	/* the file as staged, its ctime NULL: it still looks so while its
	 * ctime is at most its package's disk_settled_ns */
	bool by_package;
	uint64_t size;
	uint64_t ino;
	int64_t mtime_ns;
	int64_t ctime_ns;
} store_disk;
typedef struct store_file {
	const char *path;       /* absolute, inside the daemon's root */
	int64_t package_id;
	store_file_type type;
	uint32_t mode;          /* permission bits, 07777 at most */
	uint64_t size;          /* as shipped */
	const char *sha256;     /* hex, as shipped; NULL for symlinks */
	const char *link_target;
	int config;
	store_file_kind kind;
	store_form installed_form;
	uint64_t installed_size;
	const char *installed_sha256;
	store_disk disk;
} store_file;
typedef int (*store_file_cb)(const store_file *f, void *userdata);

/* -EEXIST, naming the path and the owning package, when the path is owned. */
int store_file_add(store *s, const store_file *f, fatelf_diag *d);
/* Rewrites every column of the row of f->path but the path and the
 * package (an upgrade's new version of a file it keeps owning): the
 * row's page is written, no index's; -ENOENT unless f->package_id owns
 * the path. The file's records stay: store_records_delete. */
int store_file_replace(store *s, const store_file *f, fatelf_diag *d);
/* Lookups: 1 when found (the ret_* filled), 0 when not (the ret_* and d
 * untouched): an unowned path is an answer, not an error. */
/* The owning package's name (malloc'd). */
int store_file_owner(store *s, const char *path, char **ret_package, fatelf_diag *d);
/* The files of the package by path, in *ret (free with store_files_free);
 * -ENOENT when the package is not installed. */
int store_files_of(store *s, const char *package, store_file **ret, size_t *ret_n, fatelf_diag *d);
/* At most limit files of the package by path, those after the path after
 * (NULL: from the first); -ENOENT when the package is not installed. A
 * long list page by page, each page a query of its own. */
int store_files_page(store *s, const char *package, const char *after, size_t limit,
		     store_file **ret, size_t *ret_n, fatelf_diag *d);
void store_files_free(store_file *v, size_t n);

/* Fills ret with the row (strdup'ed strings; free with store_file_done)
 * and *ret_package (may be NULL) with the owner's name: 1; unowned: 0. */
int store_file_get(store *s, const char *path, store_file *ret, char **ret_package, fatelf_diag *d);
void store_file_done(store_file *f);
#define _cleanup_store_file_ _cleanup_(store_file_done)
/* Deletes one file row (its records go with it); -ENOENT when unowned. */
int store_file_delete(store *s, const char *path, fatelf_diag *d);
/* Deletes every file row of a package (an upgrade rewrites them). */
int store_files_delete_package(store *s, int64_t package_id, fatelf_diag *d);
/* Sets the installed form, size and hash of a file (thin). */
int store_file_set_installed(store *s, const char *path, store_form installed_form,
			     uint64_t installed_size, const char *installed_sha256, fatelf_diag *d);
/* Sets (or, with disk->known false, clears) what the file looked like on
 * disk; -ENOENT when unowned. */
int store_file_set_disk(store *s, const char *path, const store_disk *disk, fatelf_diag *d);
/* Records that every file the package's last transaction renamed into
 * place did so before ns (store_disk.by_package); -ENOENT when no
 * package has that id. */
int store_package_set_settled(store *s, int64_t package_id, int64_t ns, fatelf_diag *d);
/* Calls cb for every file of every package, by path (verify all, thin
 * all); a negative return from cb stops the walk and is returned. A
 * stream rather than an array: a store may hold millions of files, and
 * its callers keep only a few columns of each, or only some files. */
int store_files_all(store *s, store_file_cb cb, void *userdata, fatelf_diag *d);
/* Calls cb for every file of the package with this id, in no order (no
 * sort: a large package's would spill to a temp file; none for an
 * unknown id); the row's strings last until cb returns. Returns the
 * number of rows, or cb's negative return, which stops the walk. */
/* Every installed regular file's path and the SHA-256 of its bytes on
 * disk, as recorded (the installed form's, else the manifest's). */
int store_files_hashes(store *s, int (*cb)(void *ctx, const char *path, const char *sha256), void *ctx,
		       fatelf_diag *d);
int store_files_of_id(store *s, int64_t package_id, store_file_cb cb, void *userdata,
		      fatelf_diag *d);

/* FatELF records of a fat file as shipped */
typedef struct store_record {
	const char *path;
	unsigned idx;
	/* The database also keeps its name (fatelf_target_format), for
	 * people who read it with sqlite3. */
	fatelf_target target;
	uint64_t offset;
	uint64_t size;
	const char *sha256;
	int kept;
} store_record;
int store_record_add(store *s, const store_record *r, fatelf_diag *d);
/* Deletes the records of a file (none: 0). */
int store_records_delete(store *s, const char *path, fatelf_diag *d);

/* The records of a file by idx, in *ret (free with store_records_free);
 * -ENOENT when no file row has path. */
int store_records_of(store *s, const char *path, store_record **ret, size_t *ret_n, fatelf_diag *d);
void store_records_free(store_record *v, size_t n);
typedef int (*store_record_cb)(const store_record *r, void *userdata);
/* Calls cb for every record of the package's files (of every package's
 * when package_id is 0), by path then idx, in one query; the strings are
 * valid during the call only. A negative return from cb stops the walk
 * and is returned; else the number of records. */
int store_records_all(store *s, int64_t package_id, store_record_cb cb, void *userdata,
		      fatelf_diag *d);
int store_record_set_kept(store *s, const char *path, unsigned idx, int kept, fatelf_diag *d);

/* Directories a package owns (several packages may own one directory) */
int store_dir_add(store *s, const char *path, int64_t package_id, fatelf_diag *d);
/* The same with the mode the directory had when installed (-1: unknown);
 * adding it again updates the mode. */
int store_dir_add_mode(store *s, const char *path, int64_t package_id, int mode, fatelf_diag *d);
typedef struct store_dir {
	const char *path;
	int64_t package_id;
	int mode;               /* as installed; -1 when not recorded */
} store_dir;
/* Each directory of package_id (0: of every package) with its mode, by
 * path, in *ret (free with store_dirs_free). */
int store_dirs_with_modes(store *s, int64_t package_id, store_dir **ret, size_t *ret_n,
			  fatelf_diag *d);
/* The directories of the package, deepest first (path descending), so a
 * caller can rmdir in that order. */
int store_dirs_of(store *s, int64_t package_id, store_dir **ret, size_t *ret_n, fatelf_diag *d);
void store_dirs_free(store_dir *v, size_t n);
/* At most limit directories of package_id by path, those after the path
 * after (NULL: from the first), in *ret (free with store_dirs_free). */
int store_dirs_page(store *s, int64_t package_id, const char *after, size_t limit, store_dir **ret,
		    size_t *ret_n, fatelf_diag *d);
/* Calls cb for every file, symlink and directory whose path the fnmatch(3)
 * pattern matches (no flags: '*' matches '/' too, as dpkg -S), by path,
 * then package (a directory several packages own comes once for each;
 * dir_mode: its mode as installed, -1 when not recorded or a file);
 * the strings are valid during the call only. A negative return from cb
 * stops the walk and is returned; else the number of matches. */
typedef int (*store_match_cb)(const char *path, const char *package, bool dir, int dir_mode, void *userdata);
int store_paths_match(store *s, const char *pattern, store_match_cb cb, void *userdata, fatelf_diag *d);
/* How many packages other than package_id own path. */
int store_dir_other_owners(store *s, const char *path, int64_t package_id, uint64_t *ret,
			   fatelf_diag *d);
int store_dirs_delete_package(store *s, int64_t package_id, fatelf_diag *d);

/* History of mutating transactions */
typedef struct store_tx {
	int64_t id;             /* set by the store on reads */
	store_tx_kind kind;
	const char *package;
	const char *old_version;
	const char *new_version;
	store_tx_state state;   /* ignored by store_tx_begin (a new row is pending) */
	int64_t started_at;
	int64_t finished_at;    /* 0 while pending */
	uint64_t bytes_written;
	int64_t bytes_saved;
	const char *error;      /* NULL when none */
} store_tx;

/* Adds a pending history row (kind, package, versions, started_at), or
 * fills the queued row that store_tx_adopt named, when it is still queued. */
int store_tx_begin(store *s, const store_tx *t, int64_t *ret_id, fatelf_diag *d);
/*
 * Queued rows: a job the daemon accepted and has not started. Its id is
 * the transaction's id from then on: store_tx_adopt(s, id) makes the next
 * store_tx_begin on s take that row over (0: none), so the job's first
 * transaction keeps it. store_tx_dequeue closes a row still queued with
 * state (with finished_at and error), store_tx_drop_queued deletes it (a
 * job that opened no transaction): 1 when it did, 0 when the row was not
 * queued (any more). store_tx_cancel_queued closes every queued row as
 * cancelled (a start after a stop that left some) and returns how many.
 */
int store_tx_queue(store *s, store_tx_kind kind, const char *package, int64_t queued_at,
		   int64_t *ret_id, fatelf_diag *d);
void store_tx_adopt(store *s, int64_t id);
int store_tx_dequeue(store *s, int64_t id, store_tx_state state, int64_t finished_at,
		     const char *error, fatelf_diag *d);
int store_tx_drop_queued(store *s, int64_t id, fatelf_diag *d);
int store_tx_cancel_queued(store *s, int64_t finished_at, const char *error, fatelf_diag *d);
/* Closes a pending row with its final state, finish time, byte counts and
 * error; -ENOENT when no pending row has that id. */
int store_tx_finish(store *s, int64_t id, store_tx_state state, int64_t finished_at,
		    uint64_t bytes_written, int64_t bytes_saved, const char *error,
		    fatelf_diag *d);
/* Every history row, oldest first, in *ret (free with store_txs_free). */
int store_tx_list(store *s, store_tx **ret, size_t *ret_n, fatelf_diag *d);
void store_txs_free(store_tx *v, size_t n);

/* Fills ret (strdup'ed strings; store_tx_done): 1; 0 when no row. */
int store_tx_get(store *s, int64_t id, store_tx *ret, fatelf_diag *d);
void store_tx_done(store_tx *t);
#define _cleanup_store_tx_ _cleanup_(store_tx_done)
/* Newest first: the rows of package (NULL: all), at most limit (0: all). */
int store_tx_history(store *s, const char *package, uint64_t limit, store_tx **ret, size_t *ret_n,
		     fatelf_diag *d);
/* Every row still pending (a crash cut them off), oldest first. */
int store_tx_pending(store *s, store_tx **ret, size_t *ret_n, fatelf_diag *d);
/* Marks a pending row committed (finish time, byte counts) but keeps its
 * journal: the renames still to do are rolled forward after a crash. */
#define store_tx_mark_committed(s, id, at, written, saved, d) \
	store_tx_finish((s), (id), STORE_TX_COMMITTED, (at), (written), (saved), NULL, (d))

/* Journal: the file operations of a transaction, written before any file
 * is touched, so recovery knows every temp name and target. */
typedef struct store_journal_op {
	int64_t txid;
	uint64_t seq;
	store_jop op;
	const char *path;           /* absolute inside the root */
	const char *temp_path;      /* create/replace: the hidden temp name */
	const char *backup_path;    /* unused (NULL) unless an op needs one */
	store_jstate state;
} store_journal_op;
int store_journal_add(store *s, const store_journal_op *op, fatelf_diag *d);
/* A transaction's entries by seq ascending, in *ret (free with
 * store_journal_free). */
int store_journal_of(store *s, int64_t txid, store_journal_op **ret, size_t *ret_n, fatelf_diag *d);
void store_journal_free(store_journal_op *v, size_t n);
int store_journal_set_state(store *s, int64_t txid, uint64_t seq, store_jstate state,
			    fatelf_diag *d);
/* Names another temp for one entry (its first name was taken on disk). */
int store_journal_set_temp(store *s, int64_t txid, uint64_t seq, const char *temp_path,
			   fatelf_diag *d);
/* Deletes a transaction's journal rows. */
int store_journal_clear(store *s, int64_t txid, fatelf_diag *d);
/* The transactions that have journal rows, ascending, in *ret (free()). */
int store_journal_txids(store *s, int64_t **ret, size_t *ret_n, fatelf_diag *d);

/* Holds (schema 9): a held package keeps its version; they go with the
 * package. */
/* Holds (held) or releases name: 1 when that changed something, 0 when it
 * already was so, -ENOENT when the package is not installed. */
int store_hold_set(store *s, const char *name, bool held, int64_t now, fatelf_diag *d);
/* Whether name is held; -ENOENT when it is not installed. */
int store_hold_get(store *s, const char *name, bool *ret_held, fatelf_diag *d);
/* The names of the held packages, sorted, in *ret (free with
 * store_holds_free). */
int store_holds(store *s, char ***ret, size_t *ret_n, fatelf_diag *d);
void store_holds_free(char **v, size_t n);

/* Replaces the dependencies recorded for the package (schema 11): n
 * names, each with its constraint ("OP VERSION", "" or NULL for any). */
int store_depends_set(store *s, int64_t package_id, const char *const *names, const char *const *constraints,
		      size_t n, fatelf_diag *d);
/* The installed packages that depend on name, sorted (free with
 * store_holds_free). */
int store_dependents(store *s, const char *name, char ***ret, size_t *ret_n, fatelf_diag *d);
/* The same, each with its constraint on name ("OP VERSION", "" for any),
 * in *ret_constraints (both freed with store_holds_free). */
int store_dependents_constraints(store *s, const char *name, char ***ret_names, char ***ret_constraints,
				 size_t *ret_n, fatelf_diag *d);
/* Marks the package automatic (installed only as another's dependency)
 * or not. */
int store_package_set_automatic(store *s, int64_t package_id, bool automatic, fatelf_diag *d);
/* The automatic packages' names, sorted (free with store_holds_free). */
int store_packages_automatic(store *s, char ***ret, size_t *ret_n, fatelf_diag *d);

/* Config files kept on disk that no package owns any more (schema 12):
 * a removal without purge kept them changed, or an upgrade whose new
 * version no longer ships them did. What dpkg calls "config-files". */
typedef struct store_kept {
	const char *path;             /* absolute, inside the daemon's root */
	const char *package;          /* the package that had installed it */
	const char *version;          /* ... at that version */
	const char *sha256;           /* hex, the bytes it last shipped; NULL if unknown */
	const char *installed_sha256; /* hex, the bytes it had put on disk; NULL for a dir */
	uint64_t installed_size;
	bool dir;               /* a directory of the package left for a kept file in it */
} store_kept;
/* Records path as kept (replacing a row of the same path). */
int store_kept_add(store *s, const store_kept *k, int64_t now, fatelf_diag *d);
/* The row of path: 1; 0 when it has none (ret untouched). */
int store_kept_get(store *s, const char *path, store_kept *ret, fatelf_diag *d);
/* The package's rows by path (free with store_kept_free). */
int store_kept_of(store *s, const char *package, store_kept **ret, size_t *ret_n, fatelf_diag *d);
int store_kept_delete(store *s, const char *path, fatelf_diag *d);
/* The package's rows (dirs_only: its directories' rows alone). */
int store_kept_delete_package(store *s, const char *package, bool dirs_only, fatelf_diag *d);
void store_kept_done(store_kept *k);
#define _cleanup_store_kept_ _cleanup_(store_kept_done)
void store_kept_free(store_kept *v, size_t n);

/* A package no longer installed that left config files behind (dpkg's
 * "config-files" state): the version of its latest kept row, and how
 * many files it kept. */
typedef struct store_kept_package {
	char *name;
	char *version;
	uint64_t files;
} store_kept_package;
/* Such packages by name (free with store_kept_packages_free). */
int store_kept_packages(store *s, store_kept_package **ret, size_t *ret_n, fatelf_diag *d);
void store_kept_packages_free(store_kept_package *v, size_t n);

#endif
