/*
 * Inside the install engine: the engine object and the transaction
 * protocol that every mutating operation (install, upgrade, remove, thin)
 * shares, implemented in lib/install/engine_tx.c (recovery in
 * lib/install/engine_recover.c).
 *
 * The protocol, and why it is crash-safe:
 *   1. eng_tx_start writes a pending history row (its id names the temp
 *      files, so they never collide).
 *   2. The operation plans every file operation with eng_tx_add, and
 *      eng_tx_journal writes the whole plan to the journal in one store
 *      commit, before any file is touched.
 *   3. Files are staged under their hidden temp names
 *      ("DIR/.fatelf.<txid>.<seq>.<random>", unguessable,
 *      made with O_EXCL); directories are created (mkdir ops).
 *      Nothing visible has changed yet.
 *   4. eng_tx_commit: each file to remove is checked (its directory
 *      writable, the file not immutable or append-only), so a root that
 *      cannot take the unlinks fails here, before the commit point; syncfs
 *      (durable), then one store transaction that applies the new rows
 *      and marks the history row committed - the commit point - then the
 *      renames and unlinks (each directory's in plan order, directories
 *      in parallel), the rmdirs and the rest in plan order, then the
 *      directories are synced and the journal cleared (waiting for the
 *      disk when files were removed by name).
 *   5. A crash before the commit point is rolled back at the next start
 *      (temps unlinked, created directories removed; files to remove
 *      were not touched); a crash after it is
 *      rolled forward (the remaining renames and unlinks done). Both are
 *      idempotent, so a crash during recovery is fine too.
 */
#ifndef FATELF_ENGINE_PRIVATE_H
#define FATELF_ENGINE_PRIVATE_H

#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine.h"
#include "stage.h"
#include "store.h"

struct engine {
	engine_config cfg;              /* a deep copy */
	fatelf_ms_pubkey *keys;
	size_t nkeys;
	fatelf_host host;
	store *st;
	int rootfd;                     /* O_PATH|O_DIRECTORY of cfg.root */
	int lockfd;                     /* flock'ed STATE_DIR/lock, -1 read-only */
	int statefd;                    /* the state directory, as checked */
	char *db_path;                  /* the database through statefd */
	unsigned flags;
};

typedef struct eng_op {
	const char *path;       /* absolute inside the root: "/opt/x/bin/x"; the
				 * caller's (eng_tx_add_ref) or a copy (owned) */
	uint64_t rnd;           /* create/replace: the random part of the temp name,
				 * "/opt/x/bin/.fatelf.<txid>.<seq>.<rnd>" (eng_tx_temp) */
	mode_t mode;            /* create/replace: final permission bits; mkdir: mode */
	int dirslot;            /* eng_tx.dirs slot of its directory, -1 for none */
	uint8_t kind;           /* store_jop, as journaled */
	bool staged;            /* the temp (or directory) exists; remove: checked */
	bool owned;             /* path is the transaction's copy */
} eng_op;

/* A directory the transaction staged in, held open so that a rollback can
 * still find its temps after the directory was moved away. */
typedef struct eng_dir {
	char *path;
	int fd;
} eng_dir;

typedef struct eng_tx {
	engine *e;
	int64_t id;             /* history row */
	store_tx_kind kind;
	bool finished;          /* aborted: a second abort does nothing */
	eng_op *ops;
	size_t nops, cap;
	bool journaled;
	bool committed;
	eng_dir *dirs;
	size_t ndirs;
} eng_tx;

/* Operations that stage a new file under a temp name. */
static inline bool eng_op_has_temp(int kind)
{
	return kind == STORE_JOP_CREATE || kind == STORE_JOP_REPLACE;
}

/* Operations on one file (not a directory). */
static inline bool eng_op_is_file(int kind)
{
	return eng_op_has_temp(kind) || kind == STORE_JOP_REMOVE;
}

/* The last component of path. */
static inline const char *eng_base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The file operations of a plan (lib/install/engine_fileop.c). */
/* Does one operation after the commit point. With tolerant (at recovery)
 * a temp that is gone was renamed already, and a parent that is gone
 * means nothing is left to do. */
int eng_op_forward(engine *e, int kind, const char *path, const char *temp, bool tolerant,
		   fatelf_diag *d);
/* Undoes one operation before the commit point; held (or -1) is the
 * directory its temp was made in, held open. */
void eng_op_backward(engine *e, int kind, const char *path, const char *temp, int held);
/* Flushes every file system write of the root's file system. */
int eng_sync_root(engine *e, fatelf_diag *d);

/* Adds the pending history row. */
int eng_tx_start(engine *e, store_tx_kind kind, const char *package, const char *old_version,
		 const char *new_version, eng_tx *ret, fatelf_diag *d);
/* Plans an operation; returns its index (the temp name is made here). */
int eng_tx_add(eng_tx *t, int kind, const char *path, mode_t mode, fatelf_diag *d);
/* The same without a copy of path, which the caller keeps unchanged until
 * eng_tx_done: a plan of many entries holds each path once. */
int eng_tx_add_ref(eng_tx *t, int kind, const char *path, mode_t mode, fatelf_diag *d);
/* Sizes the plan for n more operations at once. */
int eng_tx_reserve(eng_tx *t, size_t n);
/* op's temp path, made from its path, the transaction and the op's number
 * and random part (not stored: one a plan of many files would hold per
 * file); NULL when out of memory. The caller frees it. */
char *eng_tx_temp(const eng_tx *t, size_t op);
/* Writes the plan to the journal (one store commit). Call once, before
 * any eng_tx_stage_* or eng_tx_mkdirs. */
int eng_tx_journal(eng_tx *t, fatelf_diag *d);
/* Creates the directories of the MKDIR ops, in plan order (parents are
 * planned before children). */
int eng_tx_mkdirs(eng_tx *t, fatelf_diag *d);
/* Opens op's temp file read-write, so a writer may read its output back
 * (O_CREAT|O_EXCL, mode 0600, beneath the root without following
 * symlinks). Returns the fd. */
int eng_tx_stage_open(eng_tx *t, size_t op, fatelf_diag *d);
/* Sets the final mode and closes fd (fd < 0 is fine after a failure);
 * with cfg.durable, the write-back of a file of size bytes starts first
 * when it is large (engine_tx.c; UINT64_MAX: a size not known). */
int eng_tx_stage_close(eng_tx *t, size_t op, int fd, uint64_t size, fatelf_diag *d);
/* Stages a symlink as op's temp. */
int eng_tx_stage_symlink(eng_tx *t, size_t op, const char *target, fatelf_diag *d);

/* The store changes of a transaction: called inside the commit's store
 * transaction (store_begin has run); a negative return aborts. */
typedef int (*eng_apply_fn)(engine *e, void *userdata, fatelf_diag *d);
/* Steps 4 above. On failure before the commit point the transaction is
 * aborted (as eng_tx_abort) and the error returned; after it, the error
 * of a rename is returned but recovery at the next start finishes it. */
int eng_tx_commit(eng_tx *t, eng_apply_fn apply, void *userdata, uint64_t bytes_written,
		  int64_t bytes_saved, fatelf_diag *d);
/* eng_tx_commit of n transactions at one commit point (one store
 * transaction applies them all, apply called with each userdata[i]):
 * all of them commit, or none. Before the commit point every one is
 * aborted on failure; after it each is rolled forward. */
int eng_tx_commit_many(eng_tx *const *t, size_t n, eng_apply_fn apply, void *const *userdata,
		       const uint64_t *bytes_written, const int64_t *bytes_saved, fatelf_diag *d);
/* Fires failpoint step and KIND.step (engine_tx.c lists the steps). */
void eng_tx_failpoint(const eng_tx *t, const char *step);
/* Rolls back: unlinks staged temps, removes created directories (deepest
 * first, only when empty), marks the history row cancelled (code ==
 * -ECANCELED) or failed with the error text of why. Clears the
 * journal. Safe to call at any point before the commit point. After it
 * returns, t->finished is set and a second abort is a no-op. */
int eng_tx_abort(eng_tx *t, int code, const fatelf_diag *why);
/* Texts of errors (lib/install/engine_diag.c) */
/* The text of a failed transaction's history row: the error's message,
 * which names its path or package; a message that does not gets its
 * subject in front, so the row names it exactly once. */
void eng_diag_text(int code, const fatelf_diag *why, char *buf, size_t size);

/* Makes subject (a path or a package) the subject of d, and puts it in
 * front of a message a lower layer wrote that does not name it yet;
 * returns code. */
int eng_diag_name(fatelf_diag *d, int code, const char *subject);
/* Only frees memory; it never aborts (a transaction dropped without
 * commit or abort is what a crash looks like, and is recovered at the
 * next open). */
void eng_tx_done(eng_tx *t);
#define _cleanup_eng_tx_ _cleanup_(eng_tx_done)

/* At open (lib/install/engine_recover.c): finishes or undoes every
 * transaction the journal still holds, and marks pending rows without a
 * journal rolled-back. */
int eng_recover(engine *e, unsigned *ret_count, fatelf_diag *d);

/* Helpers shared by the operations: lookups beneath the root
 * (lib/install/engine_root.c), hashing (engine_hash.c), ldconfig
 * (engine_ldconfig.c), progress (engine_progress.c). */
/* Opens the directory holding path (absolute inside the root) beneath the
 * root, without following symlinks; *ret_base is the last component. */
int eng_open_parent(engine *e, const char *path, const char **ret_base, fatelf_diag *d);
/* fstatat of path beneath the root, never following symlinks: 0, -ENOENT,
 * or another -errno. */
int eng_lstat(engine *e, const char *path, struct stat *ret, fatelf_diag *d);
/* The directory of the last path eng_lstat_in looked at, held open (or
 * known missing) for the next path in it: a preflight of many files in
 * few directories walks each directory once. Zeroed is empty. */
typedef struct eng_parent_cache {
	char *dir;                      /* the path up to and with its last '/' */
	size_t len;
	int fd;                         /* -1 while err is set */
	int err;                        /* 0, or -ENOENT: the directory is missing */
} eng_parent_cache;
/* eng_lstat through c, which must only be used while the engine makes
 * nothing beneath the root (a preflight). */
int eng_lstat_in(engine *e, eng_parent_cache *c, const char *path, struct stat *ret,
		 fatelf_diag *d);
void eng_parent_cache_clear(eng_parent_cache *c);
/* The name every temp file starts with; no bundle entry may
 * (lib/bundle/stage.h, which a bundle extract stages with too). */
#define ENGINE_TEMP_PREFIX FATELF_STAGE_PREFIX
/* An existing directory the bundle declares with mode want: refused
 * (-ENGINE_E_DIR_UNSAFE, naming it, its owner and mode) unless the
 * engine's uid owns it and nobody else may write in it. */
int eng_dir_check(const char *path, const struct stat *st, mode_t want, fatelf_diag *d);
/* SHA-256 of a file beneath the root, as 64 hex digits. */
int eng_hash_file(engine *e, const char *path, char hex[65], uint64_t *ret_size, fatelf_diag *d);
/* The same, with the fstat of the file hashed, taken before reading it. */
int eng_hash_file_stat(engine *e, const char *path, char hex[65], uint64_t *ret_size,
		       struct stat *ret_st, fatelf_diag *d);
/* Runs ldconfig (with -r ROOT for another root) when any path is a shared
 * library in a directory the loader searches. A failure is returned but
 * does not undo the transaction. */
int eng_ldconfig(engine *e, const char *const *paths, size_t n, fatelf_diag *d);
/* The first record of the FatELF file fd (header hdr, already read) is a
 * shared library, which no dynamic linker loads fat
 * (lib/install/engine_install.c). */
bool eng_fat_is_shared_library(int fd, const fatelf_header *hdr);

/* Calls the progress callback; returns -ECANCELED if it asked to stop. */
int eng_progress(engine_progress_cb cb, void *userdata, const char *package, const char *phase, uint64_t bytes_done,
		 uint64_t bytes_total, uint64_t entries_done, uint64_t entries_total,
		 const char *path);

#endif
