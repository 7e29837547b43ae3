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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "engine_private.h"
#include "macro.h"
#include "text.h"

/* Directories held open per transaction, at most: past this a rollback
 * finds temps by path alone. */
#define TX_DIRS_MAX 256

/*
 * A temp name for op i, in its path's directory, as lib/bundle/stage.h
 * makes them (".fatelf.<txid>.<seq>.<16 random hex digits>"): hidden and
 * unguessable. Bundle entries in the ".fatelf." namespace are refused,
 * so no entry lands on a temp either. Only the random part is kept (in
 * op->rnd); eng_tx_temp makes the name again from it.
 */
static int temp_pick(const eng_tx *t, size_t i, uint64_t *ret)
{
	char name[FATELF_STAGE_NAME_MAX];
	const char *dot;
	char *end;
	int q;

	q = fatelf_stage_name(t->id, i, name);
	if (q < 0)
		return q;
	dot = strrchr(name, '.');
	if (!dot)
		return -EINVAL;
	errno = 0;
	*ret = strtoull(dot + 1, &end, 16);
	return errno != 0 || *end != '\0' || end - dot != 17 ? -EINVAL : 0;
}

#define TEMP_FORMAT "%.*s" FATELF_STAGE_PREFIX "%lld.%zu.%016llx"

char *eng_tx_temp(const eng_tx *t, size_t i)
{
	const eng_op *op = &t->ops[i];
	int dirlen = (int)(eng_base_of(op->path) - op->path);
	char *temp;

	if (asprintf(&temp, TEMP_FORMAT, dirlen, op->path, (long long)t->id, i,
		     (unsigned long long)op->rnd) < 0)
		return NULL;
	return temp;
}

/* The same into buf, when it fits: a rollback still finds its temps when
 * memory runs out. */
static const char *temp_in(const eng_tx *t, size_t i, char *buf, size_t size)
{
	const eng_op *op = &t->ops[i];
	int dirlen = (int)(eng_base_of(op->path) - op->path);
	int n = snprintf(buf, size, TEMP_FORMAT, dirlen, op->path, (long long)t->id, i,
			 (unsigned long long)op->rnd);

	return n < 0 || (size_t)n >= size ? NULL : buf;
}

/*
 * op's temp name was taken on disk: picks another and journals it before
 * anything is made under it, so a crash still leaves recovery a journal
 * that names every temp on disk.
 */
static int tx_retemp(eng_tx *t, size_t i, fatelf_diag *d)
{
	eng_op *op = &t->ops[i];
	uint64_t old = op->rnd, rnd;
	_cleanup_free_ char *temp = NULL;
	int q;

	if (temp_pick(t, i, &rnd) < 0)
		return fatelf_diag_at(d, -ENOMEM, -1, op->path, "cannot make a temp name");
	op->rnd = rnd;
	temp = eng_tx_temp(t, i);
	if (!temp) {
		op->rnd = old;
		return fatelf_diag_at(d, -ENOMEM, -1, op->path, "cannot make a temp name");
	}
	if (t->journaled) {
		q = store_journal_set_temp(t->e->st, t->id, i, temp, d);
		if (q < 0) {
			op->rnd = old;
			return q;
		}
	}
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
void eng_tx_failpoint(const eng_tx *t, const char *step)
{
#ifdef FATELF_FAILPOINTS
	char name[64];

	engine_failpoint(step);
	snprintf(name, sizeof(name), "%s.%s", store_tx_kind_to_text(t->kind), step);
	engine_failpoint(name);
#else
	(void)t;
	(void)step;
#endif
}

/* Holds op's directory open (once per directory) for a rollback. */
static void tx_hold_dir(eng_tx *t, eng_op *op, int dirfd)
{
	size_t dirlen = (size_t)(eng_base_of(op->path) - op->path);

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

/*
 * The directory of op's path when the transaction holds it open already
 * (a file staged there before), or -1. Staging the next file of a
 * directory through it saves walking the path again: it is the directory
 * that walk found, and the one a rollback drops the temps from.
 */
static int tx_held_parent(eng_tx *t, eng_op *op)
{
	size_t dirlen = (size_t)(eng_base_of(op->path) - op->path);

	for (size_t i = t->ndirs; i-- > 0;) {
		if (strlen(t->dirs[i].path) == dirlen && memcmp(t->dirs[i].path, op->path, dirlen) == 0) {
			op->dirslot = (int)i;
			return t->dirs[i].fd;
		}
	}
	return -1;
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

/*
 * Runs fn on every operation of the plan that pick selects. Those on a
 * file of a held directory go first: the operations of one directory in
 * plan order on one thread, the directories shared out between up to
 * TX_THREADS threads, so that work on two directories' files does not
 * wait on each other in the file system. The others follow on this
 * thread, in plan order, once those are done. A plan this small runs on
 * this thread alone. Every selected operation is run; the first failure
 * is returned, its diag in d.
 */
#define TX_THREADS 4
#define TX_PARALLEL_MIN 256

typedef bool (*tx_pick_fn)(const eng_op *op);
typedef int (*tx_op_fn)(eng_tx *t, size_t i, fatelf_diag *d);

struct tx_run {
	eng_tx *t;
	tx_op_fn fn;
	uint32_t *order;        /* op indexes, grouped by directory slot */
	size_t *start;          /* slot s: order[start[s]] .. order[start[s + 1]] */
	size_t nslots;
	size_t next;            /* the next slot to take (atomic) */
	pthread_mutex_t lock;
	int first;              /* the first failure, and its diag */
	fatelf_diag d;
};

static void tx_run_note(struct tx_run *r, int q, const fatelf_diag *d)
{
	pthread_mutex_lock(&r->lock);
	if (r->first == 0) {
		r->first = q;
		r->d = *d;
	}
	pthread_mutex_unlock(&r->lock);
}

static void *tx_run_main(void *userdata)
{
	struct tx_run *r = userdata;
	size_t s;

	while ((s = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED)) < r->nslots) {
		for (size_t k = r->start[s]; k < r->start[s + 1]; k++) {
			fatelf_diag tmp;
			int q = r->fn(r->t, r->order[k], &tmp);

			if (q < 0)
				tx_run_note(r, q, &tmp);
		}
	}
	return NULL;
}

static bool tx_run_held(const eng_tx *t, const eng_op *op)
{
	return op_held(t, op) >= 0 && eng_op_is_file(op->kind);
}

static int tx_run_by_dir(eng_tx *t, tx_pick_fn pick, tx_op_fn fn, fatelf_diag *d)
{
	struct tx_run r = { .t = t, .fn = fn, .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t threads[TX_THREADS - 1];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthreads = 0, npar = 0;
	_cleanup_free_ size_t *fill = NULL;
	bool parallel;

	for (size_t i = 0; i < t->nops; i++)
		npar += pick(&t->ops[i]) && tx_run_held(t, &t->ops[i]);
	parallel = ncpu > 1 && t->ndirs > 1 && npar >= TX_PARALLEL_MIN && t->nops <= UINT32_MAX;
	if (parallel) {
		r.order = malloc(npar * sizeof(*r.order));
		r.start = calloc(t->ndirs + 1, sizeof(*r.start));
		fill = malloc(t->ndirs * sizeof(*fill));
		parallel = r.order && r.start && fill;
	}
	if (parallel) {
		/* A counting sort of the operations by slot, in plan order in each. */
		for (size_t i = 0; i < t->nops; i++)
			if (pick(&t->ops[i]) && tx_run_held(t, &t->ops[i]))
				r.start[t->ops[i].dirslot + 1]++;
		for (size_t s = 0; s < t->ndirs; s++)
			r.start[s + 1] += r.start[s];
		memcpy(fill, r.start, t->ndirs * sizeof(*fill));
		for (size_t i = 0; i < t->nops; i++)
			if (pick(&t->ops[i]) && tx_run_held(t, &t->ops[i]))
				r.order[fill[t->ops[i].dirslot]++] = (uint32_t)i;
		r.nslots = t->ndirs;
		size_t want = (size_t)MIN(ncpu, (long)TX_THREADS) - 1;
		while (nthreads < want && nthreads + 1 < r.nslots &&
		       pthread_create(&threads[nthreads], NULL, tx_run_main, &r) == 0)
			nthreads++;
		tx_run_main(&r);
		for (size_t k = 0; k < nthreads; k++)
			pthread_join(threads[k], NULL);
	}
	for (size_t i = 0; i < t->nops; i++) {
		fatelf_diag tmp;
		int q;

		if (!pick(&t->ops[i]) || (parallel && tx_run_held(t, &t->ops[i])))
			continue;
		q = fn(t, i, &tmp);
		if (q < 0)
			tx_run_note(&r, q, &tmp);
	}
	free(r.order);
	free(r.start);
	pthread_mutex_destroy(&r.lock);
	if (r.first < 0 && d)
		*d = r.d;
	return r.first;
}

/* A directory must take unlinks: a read-only mount, or an immutable or
 * append-only directory, refuse them. */
static int tx_check_dir_writable(int dirfd, const char *path, const char *base, fatelf_diag *d)
{
	struct statx stx;
	int q = 0;

	if (faccessat(dirfd, ".", W_OK, AT_EACCESS) < 0)
		q = -errno;
	else if (statx(dirfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
		q = -errno;
	else if (stx.stx_attributes & (STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND))
		q = -EPERM;
	if (q < 0) {
		size_t len = (size_t)(base - path);
		_cleanup_free_ char *dir = strndup(path, len > 1 ? len - 1 : len);

		return fatelf_diag_at(d, q, -1, dir ? dir : path, "cannot remove files from it: %s",
				       q == -EPERM ? "it is immutable or append-only" : fatelf_strerror(q));
	}
	return 0;
}

static bool tx_is_remove(const eng_op *op)
{
	return op->kind == STORE_JOP_REMOVE;
}

/* One file to remove, checked (tx_check_removes). */
static int tx_check_remove(eng_tx *t, size_t i, fatelf_diag *d)
{
	eng_op *op = &t->ops[i];
	_cleanup_close_ int opened = -1;
	const char *base = eng_base_of(op->path);
	struct statx stx;
	int dirfd = op_held(t, op);

	if (dirfd < 0) {
		/* A directory not held: opened and checked for this file alone. */
		dirfd = opened = eng_open_parent(t->e, op->path, &base, d);
		if (dirfd == -ENOENT)
			return 0;
		if (dirfd < 0)
			return dirfd;
		int q = tx_check_dir_writable(dirfd, op->path, base, d);
		if (q < 0)
			return q;
	}
	if (statx(dirfd, base, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0) {
		if (errno == ENOENT)
			return 0;
		return fatelf_diag_at(d, -errno, -1, op->path, "cannot remove it: %s",
				       fatelf_strerror(-errno));
	}
	if (stx.stx_attributes & (STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND))
		return fatelf_diag_at(d, -EPERM, -1, op->path,
				       "cannot remove it: it is immutable or append-only");
	op->staged = true;
	return 0;
}

/*
 * Checks every file to remove before the commit point, without touching
 * it, so that a root that cannot take the remove fails the transaction
 * while it can still be rolled back: the file is there (one already gone
 * is fine: nothing is left to do), its directory takes an unlink, and the
 * file is not immutable or append-only. Each directory is opened and
 * checked once and held (one path walk per directory); tx_check_dirs then
 * makes sure each is still the one its path leads to, and the unlinks
 * after the commit point go through it. Nothing is moved, so a rollback
 * has nothing to undo for a remove.
 */
static int tx_check_removes(eng_tx *t, fatelf_diag *d)
{
	bool checked[TX_DIRS_MAX] = { false };

	for (size_t i = 0; i < t->nops; i++) {
		eng_op *op = &t->ops[i];
		const char *base;
		int dirfd, q;

		if (op->kind != STORE_JOP_REMOVE)
			continue;
		dirfd = tx_held_parent(t, op);
		if (dirfd >= 0) {
			/* Held since a file was staged there: checked once. */
			if (checked[op->dirslot])
				continue;
			q = tx_check_dir_writable(dirfd, op->path, eng_base_of(op->path), d);
			if (q < 0)
				return q;
			checked[op->dirslot] = true;
			continue;
		}
		dirfd = eng_open_parent(t->e, op->path, &base, d);
		if (dirfd == -ENOENT)
			continue;
		if (dirfd < 0)
			return dirfd;
		q = tx_check_dir_writable(dirfd, op->path, base, d);
		if (q >= 0)
			tx_hold_dir(t, op, dirfd);
		closep(&dirfd);
		if (q < 0)
			return q;
		if (op_held(t, op) >= 0)
			checked[op->dirslot] = true;
	}
	return tx_run_by_dir(t, tx_is_remove, tx_check_remove, d);
}
int eng_tx_start(engine *e, store_tx_kind kind, const char *package, const char *old_version,
		 const char *new_version, eng_tx *ret, fatelf_diag *d)
{
	store_tx row = {
		.kind = kind,
		.package = package,
		.old_version = old_version,
		.new_version = new_version,
		.state = STORE_TX_PENDING,
		.started_at = (int64_t)time(NULL),
	};
	int64_t id;
	int q, r;

	/* The row need not reach the disk on its own: until the journal's
	 * commit, which waits for the disk (and so for this row before it in
	 * the WAL), no file is touched, and a start after a power cut that
	 * lost the row finds nothing to recover. */
	q = store_set_durable(e->st, false, d);
	if (q < 0)
		return q;
	q = store_tx_begin(e->st, &row, &id, d);
	r = store_set_durable(e->st, true, q < 0 ? NULL : d);
	if (q < 0)
		return q;
	if (r < 0)
		return r;
	*ret = (eng_tx) { .e = e, .id = id, .kind = kind };
	eng_tx_failpoint(ret, "tx-started");
	return 0;
}

int eng_tx_reserve(eng_tx *t, size_t n)
{
	return GROW_ARRAY(t->ops, t->cap, t->nops + n) < 0 ? -ENOMEM : 0;
}

static int tx_add(eng_tx *t, int kind, const char *path, bool copy, mode_t mode, fatelf_diag *d)
{
	eng_op *op;

	if (t->journaled)
		return fatelf_diag_at(d, -EINVAL, -1, path ? path : "(null)", "planned after the journal was written");
	if (!path || path[0] != '/')
		return fatelf_diag_at(d, -EINVAL, -1, path ? path : "(null)", "not an absolute path inside the root");
	if (GROW_ARRAY(t->ops, t->cap, t->nops + 1) < 0)
		return fatelf_diag_oom(d);
	op = &t->ops[t->nops];
	*op = (eng_op) { .kind = (uint8_t)kind, .mode = mode, .dirslot = -1, .path = path };
	if (eng_op_has_temp(kind) && temp_pick(t, t->nops, &op->rnd) < 0)
		return fatelf_diag_oom(d);
	if (copy) {
		op->path = strdup(path);
		if (!op->path)
			return fatelf_diag_oom(d);
		op->owned = true;
	}
	return (int)t->nops++;
}

int eng_tx_add(eng_tx *t, int kind, const char *path, mode_t mode, fatelf_diag *d)
{
	return tx_add(t, kind, path, true, mode, d);
}

int eng_tx_add_ref(eng_tx *t, int kind, const char *path, mode_t mode, fatelf_diag *d)
{
	return tx_add(t, kind, path, false, mode, d);
}

int eng_tx_journal(eng_tx *t, fatelf_diag *d)
{
	store *s = t->e->st;
	int q;

	q = store_begin(s, d);
	if (q < 0)
		return q;
	for (size_t i = 0; i < t->nops; i++) {
		_cleanup_free_ char *temp = NULL;

		if (eng_op_has_temp(t->ops[i].kind) && !(temp = eng_tx_temp(t, i))) {
			store_rollback(s, NULL);
			return fatelf_diag_oom(d);
		}
		store_journal_op j = {
			.txid = t->id,
			.seq = i,
			.op = t->ops[i].kind,
			.path = t->ops[i].path,
			.temp_path = temp,
			.state = STORE_JSTATE_STAGED,
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
	eng_tx_failpoint(t, "tx-journaled");
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
		return fatelf_diag_at(d, q, -1, op->path, "cannot open the new directory: %s",
				       fatelf_strerror(q));
	}
	if (fstat(fd, &st) < 0)
		return fatelf_diag_at(d, -errno, -1, op->path, "%s", fatelf_strerror(-errno));
	if (st.st_uid != geteuid() || !fatelf_dir_is_empty(fd))
		return fatelf_diag_set(d, -EPERM, -1,
				       "%s: the new directory was replaced before its mode was set",
				       op->path);
	/* mkdirat's mode goes through the umask; the bundle's does not. */
	if (fchmod(fd, op->mode & 07777) < 0)
		return fatelf_diag_at(d, -errno, -1, op->path, "cannot set the directory's mode: %s", fatelf_strerror(-errno));
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

		if (op->kind != STORE_JOP_MKDIR)
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
			return fatelf_diag_at(d, -errno, -1, op->path, "cannot create the directory: %s", fatelf_strerror(-errno));
		/* Someone made it since the preflight: fine if it is a directory
		 * that only root can write in (it is not ours to remove on
		 * rollback), refused as the preflight refuses one otherwise. */
		if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			return fatelf_diag_at(d, -ENOTDIR, -1, op->path, "exists and is not a directory");
		q = eng_dir_check(op->path, &st, op->mode, d);
		if (q < 0)
			return q;
	}
	eng_tx_failpoint(t, "mkdirs");
	return 0;
}

int eng_tx_stage_open(eng_tx *t, size_t op, fatelf_diag *d)
{
	_cleanup_close_ int opened = -1;
	const char *base;
	eng_op *o;
	int fd, dirfd;

	if (op >= t->nops || !eng_op_has_temp(t->ops[op].kind))
		return fatelf_diag_set(d, -EINVAL, -1, "operation %zu stages no file", op);
	o = &t->ops[op];
	dirfd = tx_held_parent(t, o);
	if (dirfd < 0) {
		dirfd = opened = eng_open_parent(t->e, o->path, &base, d);
		if (dirfd < 0)
			return dirfd;
	}
	/* Read-write: a writer may read its output back to check it. */
	for (int tries = 1;; tries++) {
		_cleanup_free_ char *temp = eng_tx_temp(t, op);
		if (!temp)
			return fatelf_diag_oom(d);
		fd = fatelf_stage_open(dirfd, eng_base_of(temp));
		if (fd != -EEXIST || tries == FATELF_STAGE_TRIES)
			break;
		int q = tx_retemp(t, op, d);
		if (q < 0)
			return q;
	}
	if (fd < 0)
		return fatelf_diag_at(d, fd, -1, o->path, "cannot create the staged file: %s",
				       fatelf_strerror(fd));
	o->staged = true;
	if (opened >= 0)
		tx_hold_dir(t, o, opened);
	return fd;
}

/* Staged files smaller than this are not written back one by one: a
 * sync_file_range per file costs more than the write-back itself, and the
 * syncfs before the commit writes them all at once. */
#define ENG_WRITEBACK_MIN (256u * 1024)

int eng_tx_stage_close(eng_tx *t, size_t op, int fd, uint64_t size, fatelf_diag *d)
{
	eng_op *o = &t->ops[op];
	int q;

	if (fd < 0)
		return 0;
	/* A large file's write-back starts now, while the next files are
	 * staged: the syncfs before the commit then finds little left to
	 * write. */
	q = fatelf_stage_close(fd, o->mode,
			       t->e->cfg.durable && size >= ENG_WRITEBACK_MIN ? FATELF_STAGE_WRITEBACK : 0,
			       o->path, d);
	if (q == 0)
		eng_tx_failpoint(t, "staged");
	return q;
}

int eng_tx_stage_symlink(eng_tx *t, size_t op, const char *target, fatelf_diag *d)
{
	_cleanup_close_ int opened = -1;
	eng_op *o;
	const char *base;
	int dirfd;

	if (op >= t->nops || !eng_op_has_temp(t->ops[op].kind))
		return fatelf_diag_set(d, -EINVAL, -1, "operation %zu stages no file", op);
	o = &t->ops[op];
	dirfd = tx_held_parent(t, o);
	if (dirfd < 0) {
		dirfd = opened = eng_open_parent(t->e, o->path, &base, d);
		if (dirfd < 0)
			return dirfd;
	}
	int r;
	for (int tries = 1;; tries++) {
		_cleanup_free_ char *temp = eng_tx_temp(t, op);
		if (!temp)
			return fatelf_diag_oom(d);
		r = fatelf_stage_symlink(dirfd, eng_base_of(temp), target);
		if (r != -EEXIST || tries == FATELF_STAGE_TRIES)
			break;
		int q = tx_retemp(t, op, d);
		if (q < 0)
			return q;
	}
	if (r < 0)
		return fatelf_diag_at(d, r, -1, o->path, "cannot create the staged symlink: %s", fatelf_strerror(r));
	o->staged = true;
	if (opened >= 0)
		tx_hold_dir(t, o, opened);
	eng_tx_failpoint(t, "staged");
	return 0;
}

/*
 * Each directory files were staged in through a held descriptor must
 * still be the one its path leads to, checked before the commit point:
 * one swapped (for a symlink, or another directory) since the first file
 * was staged there fails the transaction, as a walk of its path would
 * have, and the rollback drops the temps through the held descriptors.
 */
static int tx_check_dirs(eng_tx *t, fatelf_diag *d)
{
	for (size_t i = 0; i < t->ndirs; i++) {
		const char *path = t->dirs[i].path;
		size_t len = strlen(path);
		struct stat held, now;
		int q;

		if (len <= 1)
			continue; /* the root itself */
		_cleanup_free_ char *dir = strndup(path, len - 1);
		if (!dir)
			return fatelf_diag_oom(d);
		if (fstat(t->dirs[i].fd, &held) < 0)
			return fatelf_diag_at(d, -errno, -1, dir, "%s", fatelf_strerror(-errno));
		q = eng_lstat(t->e, dir, &now, d);
		if (q < 0 && q != -ENOENT)
			return q;
		if (q == -ENOENT || !S_ISDIR(now.st_mode) || now.st_dev != held.st_dev ||
		    now.st_ino != held.st_ino)
			return fatelf_diag_at(d, -ELOOP, -1, dir,
					       "the directory was replaced while files were staged in it");
	}
	return 0;
}

/* Does op after the commit point: a staged file is renamed into place, and
 * a file to remove (moved to its temp name before the commit point) is
 * unlinked, in the directory held open since it was staged there (that
 * walk is not made again); anything else as recovery would do it. */
static int tx_forward(eng_tx *t, size_t i, fatelf_diag *d)
{
	eng_op *op = &t->ops[i];
	int held = op_held(t, op);
	_cleanup_free_ char *temp = NULL;

	if (op->kind == STORE_JOP_REMOVE) {
		/* Not there when it was checked: whatever is there now is not
		 * the package's. */
		if (!op->staged)
			return 0;
		if (held < 0)
			return eng_op_forward(t->e, op->kind, op->path, NULL, false, d);
		if (unlinkat(held, eng_base_of(op->path), 0) < 0 && errno != ENOENT)
			return fatelf_diag_at(d, -errno, -1, op->path, "cannot remove it: %s",
					       fatelf_strerror(-errno));
		return 0;
	}
	if (eng_op_has_temp(op->kind) && !(temp = eng_tx_temp(t, i)))
		return fatelf_diag_at(d, -ENOMEM, -1, op->path, "cannot make a temp name");
	if (held < 0 || (op->kind != STORE_JOP_CREATE && op->kind != STORE_JOP_REPLACE))
		return eng_op_forward(t->e, op->kind, op->path, temp, false, d);
	int q = fatelf_stage_commit(held, eng_base_of(temp), eng_base_of(op->path));
	if (q < 0)
		return fatelf_diag_at(d, q, -1, op->path, "cannot rename the staged file into place: %s",
				       fatelf_strerror(q));
	return 0;
}

static bool tx_removes_files(const eng_tx *t)
{
	for (size_t i = 0; i < t->nops; i++)
		if (t->ops[i].kind == STORE_JOP_REMOVE)
			return true;
	return false;
}

static bool tx_any(const eng_op *op)
{
	(void)op;
	return true;
}

static int tx_forward_one(eng_tx *t, size_t i, fatelf_diag *d)
{
	int q = tx_forward(t, i, d);

	if (t->ops[i].kind != STORE_JOP_MKDIR)
		eng_tx_failpoint(t, "rename");
	return q;
}

/* After the commit point: t's renames, unlinks and rmdirs. */
static int tx_roll_forward(eng_tx *t, fatelf_diag *d)
{
	int first = tx_run_by_dir(t, tx_any, tx_forward_one, d);

	eng_tx_failpoint(t, "after-renames");
	return first;
}

/* The journal of a transaction done. A journal that cannot be cleared is
 * replayed at the next start; the transaction itself is done. Renames of
 * temps are harmless to replay, so then the clearing need not wait for
 * the disk: a power cut that loses it leaves such a journal, and the next
 * durable commit takes it along. An unlink by name is not harmless once
 * someone has put a new file there, so a plan that removes files has its
 * clearing wait for the disk. */
static void tx_clear_journal(eng_tx *t)
{
	engine *e = t->e;

	eng_tx_failpoint(t, "before-journal-clear");
	if (tx_removes_files(t)) {
		(void)store_journal_clear(e->st, t->id, NULL);
	} else if (store_set_durable(e->st, false, NULL) == 0) {
		(void)store_journal_clear(e->st, t->id, NULL);
		(void)store_set_durable(e->st, true, NULL);
	}
	t->journaled = false;
	eng_tx_failpoint(t, "after-journal-clear");
}

int eng_tx_commit(eng_tx *t, eng_apply_fn apply, void *userdata, uint64_t bytes_written,
		  int64_t bytes_saved, fatelf_diag *d)
{
	return eng_tx_commit_many(&t, 1, apply, &userdata, &bytes_written, &bytes_saved, d);
}

int eng_tx_commit_many(eng_tx *const *t, size_t n, eng_apply_fn apply, void *const *userdata,
		       const uint64_t *bytes_written, const int64_t *bytes_saved, fatelf_diag *d)
{
	engine *e;
	int q = 0, first = 0;

	if (n == 0)
		return 0;
	e = t[0]->e;
	for (size_t i = 0; i < n; i++)
		if (!t[i]->journaled)
			return fatelf_diag_set(d, -EINVAL, -1, "the plan was never journaled");

	for (size_t i = 0; i < n && q >= 0; i++) {
		q = tx_check_removes(t[i], d);
		if (q >= 0)
			q = tx_check_dirs(t[i], d);
	}
	if (q < 0)
		goto abort;
	eng_tx_failpoint(t[0], "before-sync");
	if (e->cfg.durable) {
		q = eng_sync_root(e, d);
		if (q < 0)
			goto abort;
	}
	eng_tx_failpoint(t[0], "after-sync");

	/* One store transaction for all of them: its commit is the commit
	 * point of each, so that they happen all or none. */
	q = store_begin(e->st, d);
	if (q < 0)
		goto abort;
	for (size_t i = 0; i < n && q >= 0; i++) {
		q = apply ? apply(e, userdata[i], d) : 0;
		if (q >= 0)
			q = store_tx_mark_committed(e->st, t[i]->id, (int64_t)time(NULL), bytes_written[i],
						    bytes_saved[i], d);
	}
	if (q < 0) {
		store_rollback(e->st, NULL);
		goto abort;
	}
	eng_tx_failpoint(t[0], "before-store-commit");
	q = store_commit(e->st, d);
	if (q < 0) {
		store_rollback(e->st, NULL);
		goto abort;
	}
	/* The commit point: from here on every one of them is rolled forward. */
	for (size_t i = 0; i < n; i++)
		t[i]->committed = true;
	eng_tx_failpoint(t[0], "after-store-commit");

	for (size_t i = 0; i < n; i++) {
		int k = tx_roll_forward(t[i], first == 0 ? d : NULL);

		if (k < 0 && first == 0)
			first = k;
	}
	if (e->cfg.durable) {
		q = eng_sync_root(e, first == 0 ? d : NULL);
		if (q < 0 && first == 0)
			first = q;
	}
	eng_tx_failpoint(t[0], "after-final-sync");
	/* An operation that failed stays journaled: the next start retries
	 * it (every journal is kept then, which is harmless to replay). */
	if (first < 0)
		return first;
	for (size_t i = 0; i < n; i++)
		tx_clear_journal(t[i]);
	return 0;

abort:
	for (size_t i = n; i-- > 0;)
		eng_tx_abort(t[i], q, d);
	return q;
}

int eng_tx_abort(eng_tx *t, int code, const fatelf_diag *why)
{
	engine *e = t->e;
	char text[sizeof(why->subject) + sizeof(why->msg) + 2];

	/* An abort after an abort does nothing. */
	if (t->committed || t->finished)
		return code;
	for (size_t i = t->nops; i-- > 0;) {
		eng_op *op = &t->ops[i];
		if (eng_op_has_temp(op->kind) && op->staged) {
			_cleanup_free_ char *temp = eng_tx_temp(t, i);
			char buf[PATH_MAX + FATELF_STAGE_NAME_MAX];
			const char *p = temp ? temp : temp_in(t, i, buf, sizeof(buf));

			if (p)
				eng_op_backward(e, op->kind, op->path, p, op_held(t, op));
		}
		else if (op->kind == STORE_JOP_MKDIR && op->staged)
			eng_op_backward(e, op->kind, op->path, NULL, -1);
		op->staged = false;
	}
	tx_release_dirs(t);
	eng_diag_text(code, why, text, sizeof(text));
	(void)store_tx_finish(e->st, t->id,
			      code == -ECANCELED ? STORE_TX_CANCELLED : STORE_TX_FAILED,
			      (int64_t)time(NULL), 0, 0, text, NULL);
	if (t->journaled)
		(void)store_journal_clear(e->st, t->id, NULL);
	t->journaled = false;
	t->finished = true;
	return code;
}

void eng_tx_done(eng_tx *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nops; i++)
		if (t->ops[i].owned)
			free((char *)t->ops[i].path);
	free(t->ops);
	t->ops = NULL;
	t->nops = t->cap = 0;
	tx_release_dirs(t);
}

