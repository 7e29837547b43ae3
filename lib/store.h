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

/* History of mutating transactions */
typedef struct store_tx {
	int64_t id;             /* set by the store on reads */
	const char *kind;       /* install, upgrade, remove, thin */
	const char *package;
	const char *old_version;
	const char *new_version;
	const char *state;      /* pending, committed, rolled-back, failed */
	int64_t started_at;
	int64_t finished_at;    /* 0 while pending */
	uint64_t bytes_written;
	int64_t bytes_saved;
	const char *error;      /* NULL when none */
} store_tx;
typedef int (*store_tx_cb)(const store_tx *t, void *userdata);

/* Adds a pending history row (kind, package, versions, started_at). */
int store_tx_begin(store *s, const store_tx *t, int64_t *ret_id, fatelf_diag *d);
/* Closes a pending row with its final state, finish time, byte counts and
 * error; -ENOENT when no pending row has that id. */
int store_tx_finish(store *s, int64_t id, const char *state, int64_t finished_at,
		    uint64_t bytes_written, int64_t bytes_saved, const char *error,
		    fatelf_diag *d);
/* Calls cb for each history row, oldest first; returns the count. */
int store_tx_list(store *s, store_tx_cb cb, void *userdata, fatelf_diag *d);

#endif
