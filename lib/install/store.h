/*
 * The installed-file database of fatelfd: one SQLite file that records
 * every installed package, each file it owns (the path is the primary key,
 * so two packages cannot own one path), the FatELF records of fat files,
 * the directories a package owns, and the history and journal of mutating
 * transactions. This module owns all the SQL: the schema comes from the
 * migrations in schema/db/, embedded by the build, and every statement is
 * one entry of a table in store.c, prepared once. Strings handed to
 * callbacks are valid only during the call.
 */
#ifndef FATELF_STORE_H
#define FATELF_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "fatelf.h"

/* The migrations embedded by schema/embed.sh (lib/store_migrations.c). */
struct store_migration {
	int version;            /* 1, 2, ... in order */
	const char *name;       /* file name without .sql, e.g. "0001-initial" */
	const char *sql;
};
extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

typedef struct store store;

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
/* The schema version this program knows (the number of migrations). */
int store_schema_version(void);

/* Transactions (BEGIN IMMEDIATE: one writer at a time) */
int store_begin(store *s, fatelf_diag *d);
int store_commit(store *s, fatelf_diag *d);
int store_rollback(store *s, fatelf_diag *d);

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
} store_package;
typedef int (*store_package_cb)(const store_package *p, void *userdata);

/* -EEXIST when a package of that name is installed. */
int store_package_add(store *s, const store_package *p, int64_t *ret_id, fatelf_diag *d);
/* Fills ret with strdup'ed strings (free with store_package_done);
 * -ENOENT when not installed. */
int store_package_get(store *s, const char *name, store_package *ret, fatelf_diag *d);
void store_package_done(store_package *p);
/* Calls cb for each package by name; a negative return from cb stops the
 * walk and is returned. Returns the number of packages. */
int store_package_list(store *s, store_package_cb cb, void *userdata, fatelf_diag *d);
/* Removes the package with its files, records and dirs; -ENOENT if absent. */
int store_package_remove(store *s, const char *name, fatelf_diag *d);

/* Replaces the row's version, summary, vendor, signer, install time and
 * policy (an upgrade keeps the package's id); -ENOENT if no such id. */
int store_package_update(store *s, int64_t id, const store_package *p, fatelf_diag *d);
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
typedef struct store_file {
	const char *path;       /* absolute, inside the daemon's root */
	int64_t package_id;
	const char *type;       /* "file" or "symlink" */
	uint32_t mode;          /* permission bits, 07777 at most */
	uint64_t size;          /* as shipped */
	const char *sha256;     /* hex, as shipped; NULL for symlinks */
	const char *link_target;
	int config;
	const char *kind;       /* "data", "elf" or "fatelf" */
	const char *installed_form; /* "as-shipped" or "thinned" */
	uint64_t installed_size;
	const char *installed_sha256;
} store_file;
typedef int (*store_file_cb)(const store_file *f, void *userdata);

/* -EEXIST, naming the path and the owning package, when the path is owned. */
int store_file_add(store *s, const store_file *f, fatelf_diag *d);
/* The owning package's name (malloc'd); -ENOENT when the path is unowned. */
int store_file_owner(store *s, const char *path, char **ret_package, fatelf_diag *d);
/* Calls cb for each file of the package by path; -ENOENT when the package is
 * not installed. Returns the number of files. */
int store_files_of(store *s, const char *package, store_file_cb cb, void *userdata,
		   fatelf_diag *d);

/* Fills ret with the row (strdup'ed strings; free with store_file_done)
 * and *ret_package (may be NULL) with the owner's name; -ENOENT when unowned. */
int store_file_get(store *s, const char *path, store_file *ret, char **ret_package, fatelf_diag *d);
void store_file_done(store_file *f);
/* Deletes one file row (its records go with it); -ENOENT when unowned. */
int store_file_delete(store *s, const char *path, fatelf_diag *d);
/* Deletes every file row of a package (an upgrade rewrites them). */
int store_files_delete_package(store *s, int64_t package_id, fatelf_diag *d);
/* Sets the installed form, size and hash of a file (thin). */
int store_file_set_installed(store *s, const char *path, const char *installed_form,
			     uint64_t installed_size, const char *installed_sha256, fatelf_diag *d);
/* Calls cb for every file of every package, by path (verify all, thin all). */
int store_files_all(store *s, store_file_cb cb, void *userdata, fatelf_diag *d);

/* FatELF records of a fat file as shipped */
typedef struct store_record {
	const char *path;
	unsigned idx;
	const char *target;     /* the record's name, e.g. "x86_64:64bits:le:sysv:osabiver0" */
	uint16_t machine;
	uint8_t osabi;
	uint8_t osabi_version;
	uint8_t word_size;
	uint8_t byte_order;
	uint64_t offset;
	uint64_t size;
	const char *sha256;
	int kept;
} store_record;
int store_record_add(store *s, const store_record *r, fatelf_diag *d);

/* Calls cb for each record of a file, by idx; returns the count. */
typedef int (*store_record_cb)(const store_record *r, void *userdata);
int store_records_of(store *s, const char *path, store_record_cb cb, void *userdata,
		     fatelf_diag *d);
int store_record_set_kept(store *s, const char *path, unsigned idx, int kept, fatelf_diag *d);

/* Directories a package owns (several packages may own one directory) */
int store_dir_add(store *s, const char *path, int64_t package_id, fatelf_diag *d);
/* The same with the mode the directory had when installed (-1: unknown);
 * adding it again updates the mode. */
int store_dir_add_mode(store *s, const char *path, int64_t package_id, int mode, fatelf_diag *d);
typedef int (*store_dir_cb)(const char *path, void *userdata);
typedef struct store_dir {
	const char *path;
	int64_t package_id;
	int mode;               /* as installed; -1 when not recorded */
} store_dir;
typedef int (*store_dir_mode_cb)(const store_dir *dir, void *userdata);
/* Each directory of package_id (0: of every package) with its mode, by
 * path; returns the count. */
int store_dirs_with_modes(store *s, int64_t package_id, store_dir_mode_cb cb, void *userdata,
			  fatelf_diag *d);
/* Calls cb for each directory of the package, deepest first (path
 * descending), so a caller can rmdir in that order. */
int store_dirs_of(store *s, int64_t package_id, store_dir_cb cb, void *userdata, fatelf_diag *d);
/* How many packages other than package_id own path. */
int store_dir_other_owners(store *s, const char *path, int64_t package_id, uint64_t *ret,
			   fatelf_diag *d);
int store_dirs_delete_package(store *s, int64_t package_id, fatelf_diag *d);

/* History of mutating transactions */
typedef struct store_tx {
	int64_t id;             /* set by the store on reads */
	const char *kind;       /* install, upgrade, reinstall, downgrade, remove, thin */
	const char *package;
	const char *old_version;
	const char *new_version;
	const char *state;      /* queued, pending, committed, rolled-back, failed, cancelled */
	int64_t started_at;
	int64_t finished_at;    /* 0 while pending */
	uint64_t bytes_written;
	int64_t bytes_saved;
	const char *error;      /* NULL when none */
} store_tx;
typedef int (*store_tx_cb)(const store_tx *t, void *userdata);

/* Adds a pending history row (kind, package, versions, started_at), or
 * fills the queued row that store_tx_adopt named, when it is still queued. */
int store_tx_begin(store *s, const store_tx *t, int64_t *ret_id, fatelf_diag *d);
/*
 * Queued rows: a job the daemon accepted and has not started. Its id is
 * the transaction's id from then on: store_tx_adopt(s, id) makes the next
 * store_tx_begin on s take that row over (0: none), so the job's first
 * transaction keeps it. store_tx_dequeue closes a row still queued with
 * state (with finished_at and error) or, with state NULL, deletes it (a
 * job that opened no transaction): 1 when it did, 0 when the row was not
 * queued (any more). store_tx_cancel_queued closes every queued row as
 * cancelled (a start after a stop that left some) and returns how many.
 */
int store_tx_queue(store *s, const char *kind, const char *package, int64_t queued_at,
		   int64_t *ret_id, fatelf_diag *d);
void store_tx_adopt(store *s, int64_t id);
int store_tx_dequeue(store *s, int64_t id, const char *state, int64_t finished_at, const char *error,
		     fatelf_diag *d);
int store_tx_cancel_queued(store *s, int64_t finished_at, const char *error, fatelf_diag *d);
/* Closes a pending row with its final state, finish time, byte counts and
 * error; -ENOENT when no pending row has that id. */
int store_tx_finish(store *s, int64_t id, const char *state, int64_t finished_at,
		    uint64_t bytes_written, int64_t bytes_saved, const char *error,
		    fatelf_diag *d);
/* Calls cb for each history row, oldest first; returns the count. */
int store_tx_list(store *s, store_tx_cb cb, void *userdata, fatelf_diag *d);

/* Fills ret (strdup'ed strings; store_tx_done); -ENOENT when no row. */
int store_tx_get(store *s, int64_t id, store_tx *ret, fatelf_diag *d);
void store_tx_done(store_tx *t);
/* Newest first: the rows of package (NULL: all), at most limit (0: all). */
int store_tx_history(store *s, const char *package, uint64_t limit, store_tx_cb cb,
		     void *userdata, fatelf_diag *d);
/* Calls cb for every row still pending (a crash cut them off), oldest first. */
int store_tx_pending(store *s, store_tx_cb cb, void *userdata, fatelf_diag *d);
/* Marks a pending row committed (finish time, byte counts) but keeps its
 * journal: the renames still to do are rolled forward after a crash. */
#define store_tx_mark_committed(s, id, at, written, saved, d) \
	store_tx_finish((s), (id), "committed", (at), (written), (saved), NULL, (d))

/* Journal: the file operations of a transaction, written before any file
 * is touched, so recovery knows every temp name and target. */
typedef struct store_journal_op {
	int64_t txid;
	uint64_t seq;
	const char *op;             /* create, replace, remove, mkdir, rmdir */
	const char *path;           /* absolute inside the root */
	const char *temp_path;      /* create/replace: the hidden temp name */
	const char *backup_path;    /* unused (NULL) unless an op needs one */
	const char *state;          /* staged, done, undone */
} store_journal_op;
typedef int (*store_journal_cb)(const store_journal_op *op, void *userdata);
int store_journal_add(store *s, const store_journal_op *op, fatelf_diag *d);
/* By seq ascending; returns the count. */
int store_journal_of(store *s, int64_t txid, store_journal_cb cb, void *userdata,
		     fatelf_diag *d);
int store_journal_set_state(store *s, int64_t txid, uint64_t seq, const char *state,
			    fatelf_diag *d);
/* Names another temp for one entry (its first name was taken on disk). */
int store_journal_set_temp(store *s, int64_t txid, uint64_t seq, const char *temp_path,
			   fatelf_diag *d);
/* Deletes a transaction's journal rows. */
int store_journal_clear(store *s, int64_t txid, fatelf_diag *d);
/* Calls cb(txid) for each transaction that has journal rows, ascending. */
typedef int (*store_txid_cb)(int64_t txid, void *userdata);
int store_journal_txids(store *s, store_txid_cb cb, void *userdata, fatelf_diag *d);

#endif
