/*
 * The transaction protocol every mutating engine operation shares (see
 * engine_private.h for the steps and why they are crash-safe): a pending
 * history row, the whole plan journaled before any file is touched,
 * staging under hidden temp names, one store commit as the commit point,
 * then renames, unlinks and rmdirs. Recovery at start reads the journal
 * and rolls each cut-off transaction forward or back; every step of it
 * tolerates having been done already, so a crash during recovery is
 * recovered the same way.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine_private.h"
#include "macro.h"
#include "text.h"

#define ROLLED_BACK_AT_START "interrupted: rolled back at start"

static const char *const op_names[] = {
	[ENG_OP_CREATE] = "create",
	[ENG_OP_REPLACE] = "replace",
	[ENG_OP_REMOVE] = "remove",
	[ENG_OP_MKDIR] = "mkdir",
	[ENG_OP_RMDIR] = "rmdir",
};

static int op_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(op_names); i++)
		if (name && strcmp(name, op_names[i]) == 0)
			return (int)i;
	return -1;
}

/* Operations that stage a new file under a temp name. */
static bool op_has_temp(int kind)
{
	return kind == ENG_OP_CREATE || kind == ENG_OP_REPLACE;
}

/* Operations whose journal row names a temp: a file to remove is moved
 * there before the commit point. */
static bool op_named(int kind)
{
	return op_has_temp(kind) || kind == ENG_OP_REMOVE;
}

/* Directories held open per transaction, at most: past this a rollback
 * finds temps by path alone. */
#define TX_DIRS_MAX 256

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * A temp name for path, in path's directory, as lib/bundle/stage.h makes
 * them (".fatelf.<txid>.<seq>.<16 random hex digits>"): hidden and
 * unguessable. Bundle entries in the ".fatelf." namespace are refused,
 * so no entry lands on a temp either.
 */
static char *temp_for(const char *path, int64_t txid, size_t seq)
{
	size_t dirlen = (size_t)(base_of(path) - path);
	char name[FATELF_STAGE_NAME_MAX];
	size_t n;
	char *temp;

	if (fatelf_stage_name(txid, seq, name) < 0)
		return NULL;
	n = strlen(name);
	temp = malloc(dirlen + n + 1);
	if (!temp)
		return NULL;
	memcpy(temp, path, dirlen);
	memcpy(temp + dirlen, name, n + 1);
	return temp;
}

/*
 * op's temp name was taken on disk: picks another and journals it before
 * anything is made under it, so a crash still leaves recovery a journal
 * that names every temp on disk.
 */
static int tx_retemp(eng_tx *t, size_t i, fatelf_diag *d)
{
	eng_op *op = &t->ops[i];
	char *temp = temp_for(op->path, t->id, i);
	int q;

	if (!temp)
		return fatelf_diag_set(d, -ENOMEM, -1, "%s: cannot make a temp name", op->path);
	if (t->journaled) {
		q = store_journal_set_temp(t->e->st, t->id, i, temp, d);
		if (q < 0) {
			free(temp);
			return q;
		}
	}
	free(op->temp);
	op->temp = temp;
	return 0;
}

/*
 * Failpoints (engine_failpoint; live only in --enable-failpoints builds):
 * each step of the protocol fires its generic name, e.g. "rename", and the
 * same name prefixed with the transaction's kind, e.g. "thin.rename", so a
 * crash test can aim at one operation when another runs first. The steps,
 * in order: tx-started (the pending history row is written),
 * tx-journaled, mkdirs, staged (once per staged file), before-sync,
 * after-sync, before-store-commit, after-store-commit, rename (once per
 * operation done after the commit point: rename, unlink or rmdir),
 * after-renames, after-final-sync, before-journal-clear,
 * after-journal-clear; at start recover, then recover-op (once per
 * operation redone or undone) and recovered.
 */
static void tx_failpoint(const eng_tx *t, const char *step)
{
#ifdef FATELF_FAILPOINTS
	char name[64];

	engine_failpoint(step);
	if (t->kind) {
		snprintf(name, sizeof(name), "%s.%s", t->kind, step);
		engine_failpoint(name);
	}
#else
	(void)t;
	(void)step;
#endif
}

/* Flushes every file system write of the root's file system. */
static int sync_root(engine *e, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;

	/* syncfs refuses the O_PATH descriptor the engine keeps. */
	fd = openat(e->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syncfs(fd) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot sync the root file system: %s",
				       fatelf_strerror(-errno));
	return 0;
}

/*
 * Does one planned operation after the commit point. With tolerant (at
 * recovery) a temp that is gone was renamed already, and a parent that is
 * gone means nothing is left to do.
 */
static int op_forward(engine *e, int kind, const char *path, const char *temp, bool tolerant,
		      fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1;
	fatelf_diag tmp;
	const char *base;

	if (kind == ENG_OP_MKDIR)
		return 0;
	dirfd = eng_open_parent(e, path, &base, &tmp);
	if (dirfd < 0) {
		if (tolerant && dirfd == -ENOENT)
			return 0;
		if (d)
			*d = tmp;
		return dirfd;
	}
	switch (kind) {
	case ENG_OP_CREATE:
	case ENG_OP_REPLACE: {
		int q = fatelf_stage_commit(dirfd, base_of(temp), base);

		if (q == 0 || (tolerant && q == -ENOENT))
			return 0;
		return fatelf_diag_set(d, q, -1, "%s: cannot rename the staged file into place: %s",
				       path, fatelf_strerror(q));
	}
	case ENG_OP_REMOVE:
		/* The file was moved to its temp name before the commit point
		 * (a journal of an older program names no temp). */
		if (unlinkat(dirfd, temp ? base_of(temp) : base, 0) < 0 && errno != ENOENT)
			return fatelf_diag_set(d, -errno, -1, "%s: cannot remove it: %s", path,
					       fatelf_strerror(-errno));
		return 0;
	case ENG_OP_RMDIR:
		/* Only an empty directory goes: the admin's files keep theirs. */
		if (unlinkat(dirfd, base, AT_REMOVEDIR) < 0 && errno != ENOENT &&
		    errno != ENOTEMPTY && errno != EEXIST)
			return fatelf_diag_set(d, -errno, -1, "%s: cannot remove the directory: %s", path,
					       fatelf_strerror(-errno));
		return 0;
	}
	return 0;
}

/*
 * Undoes one operation before the commit point: drops its temp, moves a
 * file to remove back, or removes the directory it created when nothing
 * else landed in it. held (or -1) is the directory the temp was made in,
 * held open: when the path no longer leads there (the directory was
 * moved, or swapped for a symlink), the temp is still found through it.
 */
static void op_backward(engine *e, int kind, const char *path, const char *temp, int held)
{
	_cleanup_close_ int dirfd = -1;
	const char *base;
	int fd;

	if (!op_named(kind) && kind != ENG_OP_MKDIR)
		return;
	if (op_named(kind) && !temp)
		return;
	dirfd = eng_open_parent(e, path, &base, NULL);
	fd = dirfd >= 0 ? dirfd : held;
	if (fd < 0)
		return;
	if (dirfd < 0)
		base = base_of(path);
	if (op_has_temp(kind))
		fatelf_stage_drop(fd, base_of(temp));
	else if (kind == ENG_OP_REMOVE)
		(void)renameat(fd, base_of(temp), fd, base);
	else if (dirfd >= 0)
		(void)unlinkat(dirfd, base, AT_REMOVEDIR);
}

/* Holds op's directory open (once per directory) for a rollback. */
static void tx_hold_dir(eng_tx *t, eng_op *op, int dirfd)
{
	size_t dirlen = (size_t)(base_of(op->path) - op->path);

	for (size_t i = t->ndirs; i-- > 0;) {
		if (strlen(t->dirs[i].path) == dirlen && memcmp(t->dirs[i].path, op->path, dirlen) == 0) {
			op->dirslot = (int)i;
			return;
		}
	}
	if (t->ndirs == TX_DIRS_MAX)
		return;
	if (!t->dirs) {
		t->dirs = calloc(TX_DIRS_MAX, sizeof(*t->dirs));
		if (!t->dirs)
			return;
	}
	eng_dir *slot = &t->dirs[t->ndirs];
	slot->path = strndup(op->path, dirlen);
	slot->fd = slot->path ? fcntl(dirfd, F_DUPFD_CLOEXEC, 3) : -1;
	if (slot->fd < 0) {
		free(slot->path);
		slot->path = NULL;
		return;
	}
	op->dirslot = (int)t->ndirs++;
}

static int op_held(const eng_tx *t, const eng_op *op)
{
	return op->dirslot >= 0 && (size_t)op->dirslot < t->ndirs ? t->dirs[op->dirslot].fd : -1;
}

static void tx_release_dirs(eng_tx *t)
{
	for (size_t i = 0; i < t->ndirs; i++) {
		free(t->dirs[i].path);
		closep(&t->dirs[i].fd);
	}
	free(t->dirs);
	t->dirs = NULL;
	t->ndirs = 0;
}

/* Moves every file to remove to its temp name: the step that proves the
 * root writable before the commit point. A file already gone is fine. */
static int tx_stage_removes(eng_tx *t, fatelf_diag *d)
{
	for (size_t i = 0; i < t->nops; i++) {
		eng_op *op = &t->ops[i];
		_cleanup_close_ int dirfd = -1;
		const char *base;

		if (op->kind != ENG_OP_REMOVE)
			continue;
		dirfd = eng_open_parent(t->e, op->path, &base, d);
		if (dirfd == -ENOENT)
			continue;
		if (dirfd < 0)
			return dirfd;
		int r, q, tries = 0;
		/* Never over a name someone else made: that one is not ours to drop. */
		while ((r = renameat2(dirfd, base, dirfd, base_of(op->temp), RENAME_NOREPLACE)) < 0 &&
		       errno == EEXIST && ++tries < FATELF_STAGE_TRIES) {
			q = tx_retemp(t, i, d);
			if (q < 0)
				return q;
		}
		if (r < 0 && errno == EINVAL) /* a file system without RENAME_NOREPLACE */
			r = renameat(dirfd, base, dirfd, base_of(op->temp));
		if (r < 0) {
			if (errno == ENOENT)
				continue;
			return fatelf_diag_set(d, -errno, -1, "%s: cannot remove it: %s", op->path,
					       fatelf_strerror(-errno));
		}
		op->staged = true;
		tx_hold_dir(t, op, dirfd);
	}
	return 0;
}

void eng_diag_text(int code, const fatelf_diag *why, char *buf, size_t size)
{
	const char *msg = why && why->msg[0] ? why->msg : fatelf_strerror(code);

	if (why && why->subject[0] && !fatelf_text_names(msg, why->subject))
		snprintf(buf, size, "%s: %s", why->subject, msg);
	else
		snprintf(buf, size, "%s", msg);
}

int eng_diag_name(fatelf_diag *d, int code, const char *subject)
{
	char msg[sizeof(d->msg)];

	if (!d || !subject)
		return code;
	if (!d->msg[0] || !fatelf_text_names(d->msg, subject)) {
		/* a long message loses its tail, never its subject */
		if (snprintf(msg, sizeof(msg), "%s: %s", subject,
			     d->msg[0] ? d->msg : fatelf_strerror(code)) < 0)
			return code;
		memcpy(d->msg, msg, sizeof(msg));
	}
	snprintf(d->subject, sizeof(d->subject), "%s", subject);
	d->code = code;
	return code;
}

int eng_tx_start(engine *e, const char *kind, const char *package, const char *old_version,
		 const char *new_version, eng_tx *ret, fatelf_diag *d)
{
	store_tx row = {
		.kind = kind,
		.package = package,
		.old_version = old_version,
		.new_version = new_version,
		.state = "pending",
		.started_at = (int64_t)time(NULL),
	};
	int64_t id;
	int q;

	q = store_tx_begin(e->st, &row, &id, d);
	if (q < 0)
		return q;
	*ret = (eng_tx) { .e = e, .id = id, .kind = kind };
	tx_failpoint(ret, "tx-started");
	return 0;
}

int eng_tx_add(eng_tx *t, int kind, const char *path, mode_t mode, fatelf_diag *d)
{
	eng_op *op;

	if (t->journaled)
		return fatelf_diag_set(d, -EINVAL, -1, "%s: planned after the journal was written", path);
	if (!path || path[0] != '/')
		return fatelf_diag_set(d, -EINVAL, -1, "%s: not an absolute path inside the root",
				       path ? path : "(null)");
	if (t->nops == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		eng_op *n = realloc(t->ops, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->ops = n;
		t->cap = cap;
	}
	op = &t->ops[t->nops];
	*op = (eng_op) { .kind = kind, .mode = mode, .dirslot = -1 };
	op->path = strdup(path);
	if (!op->path)
		return -ENOMEM;
	if (op_named(kind)) {
		op->temp = temp_for(path, t->id, t->nops);
		if (!op->temp) {
			free(op->path);
			return -ENOMEM;
		}
	}
	return (int)t->nops++;
}

int eng_tx_journal(eng_tx *t, fatelf_diag *d)
{
	store *s = t->e->st;
	int q;

	q = store_begin(s, d);
	if (q < 0)
		return q;
	for (size_t i = 0; i < t->nops; i++) {
		store_journal_op j = {
			.txid = t->id,
			.seq = i,
			.op = op_names[t->ops[i].kind],
			.path = t->ops[i].path,
			.temp_path = t->ops[i].temp,
			.state = "staged",
		};
		q = store_journal_add(s, &j, d);
		if (q < 0) {
			store_rollback(s, NULL);
			return q;
		}
	}
	q = store_commit(s, d);
	if (q < 0) {
		store_rollback(s, NULL);
		return q;
	}
	t->journaled = true;
	tx_failpoint(t, "tx-journaled");
	return 0;
}

/*
 * Gives a directory just made (mode 0700) the bundle's mode. Through a
 * descriptor, never the name: whoever can write in the parent can swap
 * the new directory for a symlink, and a chmod by name would follow it
 * to any file on the system. What the descriptor holds must be an empty
 * directory of the engine's uid: a stand-in that someone else made in its
 * place is theirs, and one of root's that holds something (a private
 * directory moved in from beside it) must not get the bundle's mode.
 * Both are refused.
 */
static int set_new_dir_mode(int dirfd, const char *base, const eng_op *op, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = openat(dirfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int q = -errno;
		if (q == -ELOOP || q == -ENOTDIR || q == -ENOENT)
			return fatelf_diag_set(d, q, -1,
					       "%s: the new directory was replaced before its mode was set",
					       op->path);
		return fatelf_diag_set(d, q, -1, "%s: cannot open the new directory: %s", op->path,
				       fatelf_strerror(q));
	}
	if (fstat(fd, &st) < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", op->path, fatelf_strerror(-errno));
	if (st.st_uid != geteuid() || !fatelf_dir_is_empty(fd))
		return fatelf_diag_set(d, -EPERM, -1,
				       "%s: the new directory was replaced before its mode was set",
				       op->path);
	/* mkdirat's mode goes through the umask; the bundle's does not. */
	if (fchmod(fd, op->mode & 07777) < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: cannot set the directory's mode: %s",
				       op->path, fatelf_strerror(-errno));
	return 0;
}

int eng_tx_mkdirs(eng_tx *t, fatelf_diag *d)
{
	for (size_t i = 0; i < t->nops; i++) {
		eng_op *op = &t->ops[i];
		_cleanup_close_ int dirfd = -1;
		const char *base;
		struct stat st;
		int q;

		if (op->kind != ENG_OP_MKDIR)
			continue;
		dirfd = eng_open_parent(t->e, op->path, &base, d);
		if (dirfd < 0)
			return dirfd;
		if (mkdirat(dirfd, base, 0700) == 0) {
			op->staged = true;
			q = set_new_dir_mode(dirfd, base, op, d);
			if (q < 0)
				return q;
			continue;
		}
		if (errno != EEXIST)
			return fatelf_diag_set(d, -errno, -1, "%s: cannot create the directory: %s",
					       op->path, fatelf_strerror(-errno));
		/* Someone made it since the preflight: fine if it is a directory
		 * that only root can write in (it is not ours to remove on
		 * rollback), refused as the preflight refuses one otherwise. */
		if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			return fatelf_diag_set(d, -ENOTDIR, -1, "%s: exists and is not a directory",
					       op->path);
		q = eng_dir_check(op->path, &st, op->mode, d);
		if (q < 0)
			return q;
	}
	tx_failpoint(t, "mkdirs");
	return 0;
}

int eng_tx_stage_open(eng_tx *t, size_t op, fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1;
	const char *base;
	eng_op *o;
	int fd;

	if (op >= t->nops || !op_has_temp(t->ops[op].kind))
		return fatelf_diag_set(d, -EINVAL, -1, "operation %zu stages no file", op);
	o = &t->ops[op];
	dirfd = eng_open_parent(t->e, o->path, &base, d);
	if (dirfd < 0)
		return dirfd;
	/* Read-write: a writer may read its output back to check it. */
	for (int tries = 1;; tries++) {
		fd = fatelf_stage_open(dirfd, base_of(o->temp));
		if (fd != -EEXIST || tries == FATELF_STAGE_TRIES)
			break;
		int q = tx_retemp(t, op, d);
		if (q < 0)
			return q;
	}
	if (fd < 0)
		return fatelf_diag_set(d, fd, -1, "%s: cannot create the staged file: %s", o->path,
				       fatelf_strerror(fd));
	o->staged = true;
	tx_hold_dir(t, o, dirfd);
	return fd;
}

int eng_tx_stage_close(eng_tx *t, size_t op, int fd, fatelf_diag *d)
{
	eng_op *o = &t->ops[op];
	int q;

	if (fd < 0)
		return 0;
	/* Writing back starts now, while the next files are staged: the
	 * syncfs before the commit then finds little left to write. */
	q = fatelf_stage_close(fd, o->mode, t->e->cfg.durable ? FATELF_STAGE_WRITEBACK : 0, o->path,
			       d);
	if (q == 0)
		tx_failpoint(t, "staged");
	return q;
}

int eng_tx_stage_symlink(eng_tx *t, size_t op, const char *target, fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1;
	eng_op *o;
	const char *base;

	if (op >= t->nops || !op_has_temp(t->ops[op].kind))
		return fatelf_diag_set(d, -EINVAL, -1, "operation %zu stages no file", op);
	o = &t->ops[op];
	dirfd = eng_open_parent(t->e, o->path, &base, d);
	if (dirfd < 0)
		return dirfd;
	int r;
	for (int tries = 1;; tries++) {
		r = fatelf_stage_symlink(dirfd, base_of(o->temp), target);
		if (r != -EEXIST || tries == FATELF_STAGE_TRIES)
			break;
		int q = tx_retemp(t, op, d);
		if (q < 0)
			return q;
	}
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "%s: cannot create the staged symlink: %s",
				       o->path, fatelf_strerror(r));
	o->staged = true;
	tx_hold_dir(t, o, dirfd);
	tx_failpoint(t, "staged");
	return 0;
}

int eng_tx_commit(eng_tx *t, eng_apply_fn apply, void *userdata, uint64_t bytes_written,
		  int64_t bytes_saved, fatelf_diag *d)
{
	engine *e = t->e;
	int q, first = 0;

	if (!t->journaled)
		return fatelf_diag_set(d, -EINVAL, -1, "the plan was never journaled");

	q = tx_stage_removes(t, d);
	if (q < 0)
		goto abort;
	tx_failpoint(t, "before-sync");
	if (e->cfg.durable) {
		q = sync_root(e, d);
		if (q < 0)
			goto abort;
	}
	tx_failpoint(t, "after-sync");

	q = store_begin(e->st, d);
	if (q < 0)
		goto abort;
	q = apply ? apply(e, userdata, d) : 0;
	if (q >= 0)
		q = store_tx_mark_committed(e->st, t->id, (int64_t)time(NULL), bytes_written,
					    bytes_saved, d);
	if (q < 0) {
		store_rollback(e->st, NULL);
		goto abort;
	}
	tx_failpoint(t, "before-store-commit");
	q = store_commit(e->st, d);
	if (q < 0) {
		store_rollback(e->st, NULL);
		goto abort;
	}
	/* The commit point: from here on the transaction is rolled forward. */
	t->committed = true;
	tx_failpoint(t, "after-store-commit");

	for (size_t i = 0; i < t->nops; i++) {
		eng_op *op = &t->ops[i];
		fatelf_diag tmp;

		q = op_forward(e, op->kind, op->path, op->temp, false, &tmp);
		if (q < 0 && first == 0) {
			first = q;
			if (d)
				*d = tmp;
		}
		if (op->kind != ENG_OP_MKDIR)
			tx_failpoint(t, "rename");
	}
	tx_failpoint(t, "after-renames");
	if (e->cfg.durable) {
		q = sync_root(e, first == 0 ? d : NULL);
		if (q < 0 && first == 0)
			first = q;
	}
	tx_failpoint(t, "after-final-sync");
	/* An operation that failed stays journaled: the next start retries it. */
	if (first < 0)
		return first;
	tx_failpoint(t, "before-journal-clear");
	/* A journal that cannot be cleared is replayed harmlessly at the
	 * next start; the transaction itself is done. */
	(void)store_journal_clear(e->st, t->id, NULL);
	t->journaled = false;
	tx_failpoint(t, "after-journal-clear");
	return 0;

abort:
	eng_tx_abort(t, q, d);
	return q;
}

int eng_tx_abort(eng_tx *t, int code, const fatelf_diag *why)
{
	engine *e = t->e;
	char text[sizeof(why->subject) + sizeof(why->msg) + 2];

	/* kind == NULL: already finished (an abort after an abort). */
	if (t->committed || !t->kind)
		return code;
	for (size_t i = t->nops; i-- > 0;) {
		eng_op *op = &t->ops[i];
		if (op_named(op->kind) && op->staged)
			op_backward(e, op->kind, op->path, op->temp, op_held(t, op));
		else if (op->kind == ENG_OP_MKDIR && op->staged)
			op_backward(e, op->kind, op->path, NULL, -1);
		op->staged = false;
	}
	tx_release_dirs(t);
	eng_diag_text(code, why, text, sizeof(text));
	(void)store_tx_finish(e->st, t->id,
			      code == -ECANCELED ? "cancelled" : "failed",
			      (int64_t)time(NULL), 0, 0, text, NULL);
	if (t->journaled)
		(void)store_journal_clear(e->st, t->id, NULL);
	t->journaled = false;
	t->kind = NULL;
	return code;
}

void eng_tx_done(eng_tx *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nops; i++) {
		free(t->ops[i].path);
		free(t->ops[i].temp);
	}
	free(t->ops);
	t->ops = NULL;
	t->nops = t->cap = 0;
	tx_release_dirs(t);
}

/* ------------------------------------------------------------ recovery */

struct id_list {
	int64_t *ids;
	size_t n, cap;
};

static int id_push(struct id_list *l, int64_t id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		int64_t *n = realloc(l->ids, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->ids = n;
		l->cap = cap;
	}
	l->ids[l->n++] = id;
	return 0;
}

static int collect_txid(int64_t txid, void *userdata)
{
	return id_push(userdata, txid);
}

static int collect_pending(const store_tx *row, void *userdata)
{
	return id_push(userdata, row->id);
}

struct jop {
	int kind;
	char *path;
	char *temp;
};

struct jop_list {
	struct jop *ops;
	size_t n, cap;
};

static int collect_jop(const store_journal_op *j, void *userdata)
{
	struct jop_list *l = userdata;
	int kind = op_from_name(j->op);

	if (kind < 0 || !j->path || j->path[0] != '/')
		return 0; /* nothing this program knows how to do or undo */
	if (op_has_temp(kind) && !j->temp_path)
		return 0;	/* a remove without a temp (an older journal) unlinks its path */
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct jop *n = realloc(l->ops, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->ops = n;
		l->cap = cap;
	}
	struct jop *o = &l->ops[l->n];
	o->kind = kind;
	o->path = strdup(j->path);
	o->temp = j->temp_path ? strdup(j->temp_path) : NULL;
	if (!o->path || (j->temp_path && !o->temp)) {
		free(o->path);
		free(o->temp);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void jop_list_free(struct jop_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->ops[i].path);
		free(l->ops[i].temp);
	}
	free(l->ops);
	l->ops = NULL;
	l->n = l->cap = 0;
}

/* Finishes or undoes one journaled transaction. */
static int recover_one(engine *e, int64_t txid, fatelf_diag *d)
{
	struct jop_list l = { 0 };
	store_tx row;
	bool forward = false, pending = false;
	int q;

	q = store_tx_get(e->st, txid, &row, d);
	if (q == 0) {
		forward = row.state && strcmp(row.state, "committed") == 0;
		pending = row.state && strcmp(row.state, "pending") == 0;
		store_tx_done(&row);
	} else if (q != -ENOENT) {
		return q;
	}
	q = store_journal_of(e->st, txid, collect_jop, &l, d);
	if (q < 0)
		goto out;

	if (forward) {
		for (size_t i = 0; i < l.n; i++) {
			fatelf_diag tmp;
			/* One path that cannot be finished must not keep every
			 * later start from opening: it is left as it is. */
			(void)op_forward(e, l.ops[i].kind, l.ops[i].path, l.ops[i].temp, true, &tmp);
			engine_failpoint("recover-op");
		}
		if (e->cfg.durable)
			(void)sync_root(e, NULL);
	} else {
		for (size_t i = l.n; i-- > 0;) {
			op_backward(e, l.ops[i].kind, l.ops[i].path, l.ops[i].temp, -1);
			engine_failpoint("recover-op");
		}
		if (pending) {
			q = store_tx_finish(e->st, txid, "rolled-back", (int64_t)time(NULL), 0, 0,
					    ROLLED_BACK_AT_START, d);
			if (q < 0 && q != -ENOENT)
				goto out;
		}
	}
	q = store_journal_clear(e->st, txid, d);
out:
	jop_list_free(&l);
	return q;
}

int eng_recover(engine *e, unsigned *ret_count, fatelf_diag *d)
{
	struct id_list txids = { 0 }, pending = { 0 };
	unsigned count = 0;
	int q;

	engine_failpoint("recover");
	q = store_journal_txids(e->st, collect_txid, &txids, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < txids.n; i++) {
		q = recover_one(e, txids.ids[i], d);
		if (q < 0)
			goto out;
		count++;
	}
	/* Rows cut off before their journal was written touched no file. */
	q = store_tx_pending(e->st, collect_pending, &pending, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < pending.n; i++) {
		q = store_tx_finish(e->st, pending.ids[i], "rolled-back", (int64_t)time(NULL), 0, 0,
				    ROLLED_BACK_AT_START, d);
		if (q < 0 && q != -ENOENT)
			goto out;
		count++;
	}
	q = 0;
	engine_failpoint("recovered");
	if (ret_count)
		*ret_count = count;
out:
	free(txids.ids);
	free(pending.ids);
	return q;
}
