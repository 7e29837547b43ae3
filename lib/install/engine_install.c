/*
 * engine_install: one pass over a fat bundle into the root. The bundle
 * reader's manifest callback is the preflight (version order, setid,
 * conflicts with other packages and with unowned files, the policy of
 * every fat file, disk space) and plans the transaction; each entry is
 * then staged under its temp name as its bytes stream past, already
 * thinned; only when the reader has returned 0 - every SHA-256 verdict in
 * - does the transaction commit. Any failure rolls the staged files back.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "engine_private.h"
#include "hashset.h"
#include "io.h"
#include "run.h"
#include "macro.h"
#include "path.h"

#define PROGRESS_STEP (1u << 20)
#define CONFIG_NEW_SUFFIX ".fatelf-new"
/* Returned by the manifest callback of a dry run to stop the reader. */
#define DRY_RUN_STOP (-ECANCELED)

/*
 * The plan for one manifest entry, x->ents[i] for the manifest's
 * entries[i] (ent_of): the install keeps the reader's manifest until it
 * is done rather than a copy of each entry. A package of 200,000 entries
 * holds one of these per entry, so it is kept small: the paths live in
 * one block (x->paths), flags are bits, and what only a kept config file
 * or a taken-over directory needs is allocated for those alone.
 */
struct ient_rare {
	char *op_path;                  /* keep_admin: PATH.fatelf-new */
	char *old_installed_sha256;     /* keep_admin: what the row keeps */
	uint64_t old_installed_size;
	dev_t take_dev;                 /* take_dir: the directory the preflight saw */
	ino_t take_ino;
};

struct ient {
	char *path;                     /* "/" + entry path, in x->paths */
	struct ient_rare *rare;         /* keep_admin or take_dir, else NULL */
	int op;                         /* its transaction op, -1 for none */
	int8_t op_kind;                 /* planned op kind, -1 for none */
	int8_t form;
	uint16_t dir_mode;              /* a directory's mode once installed */
	bool keep_admin : 1;            /* a config file the admin changed */
	bool take_dir : 1;              /* force: an unsafe existing directory to take over */
	bool thinned : 1;
	bool staged : 1;
	/* An upgrade's file whose bytes do not change, left in place: no op,
	 * nothing staged; its row moves to the new version. */
	bool unchanged : 1;
	bool disk_fresh : 1;            /* ... its lstat was taken now (the file was hashed) */
	fatelf_keepset keep;
	uint64_t installed_size;        /* planned, then what was written */
	char sha[65];                   /* installed SHA-256 */
	store_disk disk;                /* unchanged: its lstat, for the row */
	/* written: the staged file as closed, to tell it after the rename */
	uint64_t staged_ino, staged_size;
	int64_t staged_mtime_ns;
};

struct strv {
	char **v;
	size_t n, cap;
};

struct install {
	engine *e;
	const engine_install_opts *o;   /* &opts */
	engine_install_opts opts;       /* the caller's, kept for a group's commit */
	engine_result *ret;             /* filled at the commit */
	const engine_policy_spec *policy;
	/* The reader's while it runs; then, after a read that succeeded,
	 * handed over (kept) and freed with the install. */
	const fatelf_manifest *m;
	fatelf_manifest *kept_m;
	/* What this install takes of the reader's manifest (rm): every entry
	 * but the per-arch ones its policy does not select, in the same
	 * order, as a manifest of its own (the entries are shallow copies);
	 * m points at it. view_of maps rm's entries to it (SIZE_MAX: not
	 * taken, its member is skipped). When every entry is taken there is
	 * no copy: m is rm, and view_of NULL. */
	const fatelf_manifest *rm;
	fatelf_manifest view;
	size_t *view_of;
	bool skipping;
	char *paths;                    /* every ient path, one after another */
	uint64_t written;               /* totals(), for the result */
	int64_t saved;
	char *name, *version, *summary, *vendor;
	/* the manifest's license and homepage (NULL: none), its targets
	 * (comma-separated), and the caller's source, for the package row */
	char *license, *homepage, *targets, *source;
	char signer[17];
	bool is_signed;
	char unverified[17];            /* signed by this key, not trusted: read as unsigned */
	store_package old;
	bool have_old;
	int64_t pkg_id;                 /* the package's row, once the commit wrote it */
	const char *kind;
	struct ient *ents;
	size_t nents;
	struct strv taken;              /* rows taken over from other packages (force) */
	struct strv forced, forced_from; /* every path force takes, and its owner ("" for none) */
	/* and, for a config file a removed package left behind (a kept_configs
	 * row), that package and its version ("" for none) */
	struct strv forced_kept_by, forced_kept_version;
	store_tx_kind change;           /* install, upgrade, reinstall or downgrade */
	struct strv emptied;            /* owners force leaves with no file */
	engine_warning *warnings;       /* fat files this machine cannot load as installed */
	size_t nwarnings;
	struct strv removes;            /* files of the old version the new one lacks */
	struct strv rmdirs;             /* directories of the old version the new one lacks */
	struct strv kept;               /* config files whose admin copy stays */
	struct strv adopted;            /* paths whose kept_configs row this install ends */
	store_kept *orphans;            /* the old version's changed configs the new one */
	size_t norphans;                /* no longer ships: their kept_configs rows */
	eng_parent_cache preflight_dir; /* the preflight's last directory */
	struct prestat_pipe *pre;       /* the lstat thread, while the preflight plans */
	struct strv old_rows;           /* the old version's rows the new one does not ship */
	/* The old version's file rows by path, read in one query before the
	 * preflight looks at each entry, until plan_stale is done. */
	store_file *old_files;          /* strings in old_text */
	size_t nold_files, old_cap;
	struct strv old_text;           /* blocks of the rows' strings */
	char *old_pos;                  /* ... the free bytes of the last */
	size_t old_text_left;
	/* For each entry, how its row is written: ROW_ADD, or a row of the
	 * old version rewritten in place (ROW_REPLACE, ROW_REPLACE_RECORDS
	 * when it has records to drop) */
	uint8_t *row_op;
	uid_t euid;
	eng_tx tx;
	bool tx_started;
	bool dry_done;
	bool cancelled;
	uint64_t files, bytes_total, bytes_done, entries_done, last_report;
	uint64_t files_unchanged, bytes_unchanged;
	/* the file being staged */
	int fd;
	struct ient *cur;
	fatelf_sha256 *h;
	bool hashing;                   /* the current file's installed hash is computed */
	int werr;                       /* a write into a temp failed ... */
	struct ient *werr_ent;          /* ... for this entry */
	/* the manifest's depends: names, and constraints ("OP VERSION", "") */
	struct strv dep_names, dep_constraints;
};

static int strv_push(struct strv *s, const char *v)
{
	if (GROW_ARRAY(s->v, s->cap, s->n + 1) < 0)
		return -ENOMEM;
	s->v[s->n] = strdup(v);
	if (!s->v[s->n])
		return -ENOMEM;
	s->n++;
	return 0;
}

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The manifest entry ie plans. */
static const fatelf_bundle_entry *ent_of(const struct install *x, const struct ient *ie)
{
	return &x->m->entries[ie - x->ents];
}

/* The group an install belongs to (engine_install_opts.group). */
static int group_claim(engine_group *g, const struct install *x, fatelf_diag *d);
static int depends_check(engine *e, engine_group *g, const char *package, const fatelf_depend *deps,
			 size_t ndeps, fatelf_diag *d);
static int breaks_check(engine *e, engine_group *g, const char *package, const char *version, fatelf_diag *d);
static int group_park(engine_group *g, struct install *x, fatelf_diag *d);

/* Where ie lands: its path, or a kept config file's PATH.fatelf-new. */
static const char *op_path_of(const struct ient *ie)
{
	return ie->rare && ie->rare->op_path ? ie->rare->op_path : ie->path;
}

static struct ient_rare *rare_of(struct ient *ie)
{
	if (!ie->rare)
		ie->rare = calloc(1, sizeof(*ie->rare));
	return ie->rare;
}

/* Sets d with subject path; the message names the path too, since it is
 * what a user acts on. */
static int __attribute__((format(printf, 4, 5)))
path_fail(fatelf_diag *d, int code, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return code;
	d->code = code;
	d->record = -1;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	fatelf_diag_names(d, path);
	return d->code;
}

/* The package that owns a conflicting path, when one does, as a fact. */
static void conflict_owner(engine *e, fatelf_diag *d)
{
	_cleanup_free_ char *owner = NULL;

	if (d && d->subject[0] && !d->owner[0] &&
	    store_file_owner(e->st, d->subject, &owner, NULL) >= 0 && owner)
		FATELF_DIAG_FACT(d, owner, owner);
}

/* Makes path the subject, named once in the message a lower layer wrote. */
static int prefix_path(fatelf_diag *d, int code, const char *path)
{
	return eng_diag_name(d, code, path);
}

/* Puts "entry 'PATH': " in front of a rule the manifest's own data broke,
 * and makes the entry the subject, as the bundle reader does. */
static int prefix_entry(fatelf_diag *d, int code, const fatelf_bundle_entry *be)
{
	char msg[sizeof(d->msg)];

	if (!d)
		return code;
	if (snprintf(msg, sizeof(msg), "entry '%s': %s", be->path,
		     fatelf_diag_text(d, code)) < 0)
		return code;
	memcpy(d->msg, msg, sizeof(msg));
	fatelf_diag_names(d, be->path);
	d->code = code;
	return code;
}

static int progress(struct install *x, const char *phase, const char *path)
{
	int q = eng_progress(x->o->progress, x->o->userdata, x->name, phase, x->bytes_done, x->bytes_total,
			     x->entries_done, x->nents, path);
	if (q < 0)
		x->cancelled = true;
	return q;
}

/* ------------------------------------------------------------ preflight */

enum { ROW_ADD, ROW_REPLACE, ROW_REPLACE_RECORDS };

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const store_file *)a)->path, ((const store_file *)b)->path);
}

static int row_key_cmp(const void *key, const void *row)
{
	return strcmp(key, ((const store_file *)row)->path);
}

#define OLD_TEXT_BLOCK (64u * 1024)

/* A copy of s (NULL: NULL) in the old rows' text blocks: one malloc for
 * many rows, all freed at once. */
static const char *old_text(struct install *x, const char *s, int *q)
{
	size_t len;
	char *p;

	if (!s)
		return NULL;
	len = strlen(s) + 1;
	if (len > x->old_text_left) {
		size_t size = MAX((size_t)OLD_TEXT_BLOCK, len);
		if (GROW_ARRAY(x->old_text.v, x->old_text.cap, x->old_text.n + 1) < 0 ||
		    !(x->old_text.v[x->old_text.n] = malloc(size))) {
			*q = -ENOMEM;
			return NULL;
		}
		x->old_pos = x->old_text.v[x->old_text.n++];
		x->old_text_left = size;
	}
	p = x->old_pos;
	memcpy(p, s, len);
	x->old_pos += len;
	x->old_text_left -= len;
	return p;
}

static int old_row_add(const store_file *f, void *userdata)
{
	struct install *x = userdata;
	store_file *c;
	int q = 0;

	if (x->nold_files == x->old_cap) {
		size_t cap = x->old_cap ? x->old_cap * 2 : 1024;
		store_file *v = reallocarray(x->old_files, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		x->old_files = v;
		x->old_cap = cap;
	}
	c = &x->old_files[x->nold_files];
	*c = *f;
	c->path = old_text(x, f->path, &q);
	c->sha256 = old_text(x, f->sha256, &q);
	c->link_target = old_text(x, f->link_target, &q);
	/* Most files are installed as shipped: one copy of the hash. */
	if (f->installed_sha256 && f->sha256 && c->sha256 && strcmp(f->installed_sha256, f->sha256) == 0)
		c->installed_sha256 = c->sha256;
	else
		c->installed_sha256 = old_text(x, f->installed_sha256, &q);
	if (q < 0)
		return q;
	x->nold_files++;
	return 0;
}

static void old_rows_free(struct install *x)
{
	free(x->old_files);
	x->old_files = NULL;
	x->nold_files = x->old_cap = 0;
	strv_free(&x->old_text);
	x->old_pos = NULL;
	x->old_text_left = 0;
}

/* An upgrade: the old version's file rows, in one query rather than one
 * a path, sorted by path for old_row (they mostly come sorted: as the
 * manifest listed them). */
static int load_old_rows(struct install *x, fatelf_diag *d)
{
	bool sorted = true;
	int q = store_files_of_id(x->e->st, x->old.id, old_row_add, x, d);

	if (q < 0)
		return q == -ENOMEM ? fatelf_diag_oom(d) : q;
	for (size_t i = 1; i < x->nold_files && sorted; i++)
		sorted = strcmp(x->old_files[i - 1].path, x->old_files[i].path) < 0;
	if (!sorted)
		qsort(x->old_files, x->nold_files, sizeof(*x->old_files), row_cmp);
	return 0;
}

/* The old version's row of path, or NULL. */
static const store_file *old_row(const struct install *x, const char *path)
{
	if (x->nold_files == 0)
		return NULL;
	return bsearch(path, x->old_files, x->nold_files, sizeof(*x->old_files), row_key_cmp);
}

static const uint8_t *kept_record_sha(const fatelf_bundle_entry *be, const fatelf_keepset *keep);
static void totals(const struct install *x, uint64_t *ret_written, int64_t *ret_saved);

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static store_disk disk_of(const struct stat *st)
{
	return (store_disk) {
		.known = true,
		.size = (uint64_t)st->st_size,
		.ino = (uint64_t)st->st_ino,
		.mtime_ns = ns_of(&st->st_mtim),
		.ctime_ns = ns_of(&st->st_ctim),
	};
}

/*
 * Whether an lstat of st may be recorded: a file changed later, within
 * the same tick of the clock the file system stamps times with, would
 * keep its size and times. So only a file whose change time is older
 * than the current tick is recorded (the racy-clean rule); any change
 * after now gets a later time. One not recorded is hashed next time.
 */
static bool disk_settled(const struct stat *st)
{
	struct timespec now;

	return clock_gettime(CLOCK_REALTIME_COARSE, &now) == 0 && ns_of(&st->st_ctim) < ns_of(&now);
}

/* Whether st is still the file of row k: its lstat as recorded, or (by
 * its package) as staged, changed last no later than settled, when every
 * rename of the transaction that put it there was done. */
static bool disk_matches(const store_disk *k, const struct stat *st, int64_t settled)
{
	if (!k->known || k->size != (uint64_t)st->st_size || k->ino != (uint64_t)st->st_ino ||
	    k->mtime_ns != ns_of(&st->st_mtim))
		return false;
	return k->by_package ? settled > 0 && ns_of(&st->st_ctim) <= settled : k->ctime_ns == ns_of(&st->st_ctim);
}

/*
 * An upgrade (or downgrade; a reinstall of the same version writes all)
 * leaves a file of the old version in place when the new
 * version would write the same bytes the same way - the manifest's hash
 * and size, the mode, and the installed form's hash where the policy
 * thins - and the file on disk (st, its lstat) is still the one the
 * engine installed: the lstat recorded after it was put there still
 * matches, or else its hash does. A FatELF that is not thinned to one
 * ELF is written again: what it becomes (and whether it gets a warning)
 * is only known once it is staged.
 */
static int plan_unchanged(struct install *x, struct ient *ie, const store_file *row,
			  const struct stat *st)
{
	const fatelf_bundle_entry *be = ent_of(x, ie);
	store_form form = STORE_FORM_AS_SHIPPED;
	char shipped[65], want[65], hex[65];
	mode_t mode = be->mode & 07777;
	struct stat hst;
	uint64_t size;

	if (row->type != STORE_FILE_REGULAR || !S_ISREG(st->st_mode) || !row->sha256 ||
	    !row->installed_sha256)
		return 0;
	if (be->kind == FATELF_KIND_FATELF) {
		if (!ie->thinned || ie->form != FATELF_FORM_ELF || fatelf_keep_count(&ie->keep) != 1)
			return 0;
		form = STORE_FORM_THINNED;
		fatelf_hex(kept_record_sha(be, &ie->keep), sizeof(be->sha256), want);
	} else {
		fatelf_hex(be->sha256, sizeof(be->sha256), want);
	}
	fatelf_hex(be->sha256, sizeof(be->sha256), shipped);
	if (strcmp(row->sha256, shipped) != 0 || row->size != be->size || row->mode != mode ||
	    !row->config != !be->config ||
	    row->installed_form != form || row->installed_size != ie->installed_size ||
	    strcmp(row->installed_sha256, want) != 0)
		return 0;
	/* As the engine leaves a file it writes: its mode, its owner. */
	if ((st->st_mode & 07777) != mode || st->st_uid != x->euid)
		return 0;
	if (disk_matches(&row->disk, st, x->old.disk_settled_ns)) {
		ie->disk = row->disk;
	} else {
		if (eng_hash_file_stat(x->e, ie->path, hex, &size, &hst, NULL) < 0)
			return 0;
		if (strcmp(hex, want) != 0 || size != ie->installed_size || hst.st_ino != st->st_ino ||
		    (hst.st_mode & 07777) != mode || hst.st_uid != x->euid)
			return 0;
		/* as it was before it was read: changed while hashed, it
		 * will not match the next time */
		if (disk_settled(&hst)) {
			ie->disk = disk_of(&hst);
			ie->disk_fresh = true;
		}
	}
	ie->unchanged = true;
	memcpy(ie->sha, want, sizeof(ie->sha));
	return 0;
}

struct oldfile_walk {
	struct install *x;
	struct strv paths;
	const store_file **configs;     /* the config files among them */
	size_t nconfigs;
};

static int old_file(struct oldfile_walk *w, const store_file *f)
{
	const fatelf_bundle_entry *be;

	be = fatelf_manifest_find(w->x->m, f->path + 1);
	if (be && be->type != FATELF_ENTRY_DIR)
		return 0; /* still shipped: the entry's own op replaces it */
	if (f->config && f->installed_sha256 && f->type == STORE_FILE_REGULAR) {
		const store_file **v = reallocarray(w->configs, w->nconfigs + 1, sizeof(*v));
		if (!v)
			return -ENOMEM;
		w->configs = v;
		w->configs[w->nconfigs++] = f;
		return 0;
	}
	return strv_push(&w->paths, f->path);
}

static int old_dir(struct oldfile_walk *w, const char *path)
{
	const fatelf_bundle_entry *be = fatelf_manifest_find(w->x->m, path + 1);

	if (be && be->type == FATELF_ENTRY_DIR)
		return 0;
	return strv_push(&w->paths, path);
}

/* true when the file at path is not the one the engine installed. */
static bool admin_changed(engine *e, const char *path, const char *installed_sha256)
{
	char hex[65];

	if (!installed_sha256 || eng_hash_file(e, path, hex, NULL, NULL) < 0)
		return false;
	return strcmp(hex, installed_sha256) != 0;
}

/* An admin's change to a config file that the new version must not
 * overwrite: the file differs from what was installed there, and is not
 * already what be ships (a plain file's bytes are installed as shipped).
 * dpkg does the same: a conffile already as the new version has it needs
 * nothing kept aside. */
static bool admin_kept(engine *e, const fatelf_bundle_entry *be, const char *path,
		       const char *installed_sha256)
{
	char hex[65], shipped[65];

	if (!installed_sha256 || eng_hash_file(e, path, hex, NULL, NULL) < 0 ||
	    strcmp(hex, installed_sha256) == 0)
		return false;
	if (be->kind == FATELF_KIND_FATELF)
		return true;
	fatelf_hex(be->sha256, sizeof(be->sha256), shipped);
	return strcmp(hex, shipped) != 0;
}

/* true when path is a regular file whose SHA-256 is sha256. */
static bool file_is(engine *e, const char *path, const char *sha256)
{
	char hex[65];

	return sha256 && eng_hash_file(e, path, hex, NULL, NULL) == 0 && strcmp(hex, sha256) == 0;
}

/* A kept_configs row for f, a changed config file the new version no
 * longer ships: what the old version shipped and installed there, so
 * that a later install of the package takes it back as its own, with the
 * sidecar an earlier upgrade may have left beside it. */
static int add_orphan(struct install *x, const store_file *f)
{
	store_kept *v = reallocarray(x->orphans, x->norphans + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	x->orphans = v;
	v[x->norphans] = (store_kept){
		.path = strdup(f->path),
		.sha256 = f->sha256 ? strdup(f->sha256) : NULL,
		.installed_sha256 = strdup(f->installed_sha256),
		.installed_size = f->installed_size,
	};
	if (!v[x->norphans].path || (f->sha256 && !v[x->norphans].sha256) ||
	    !v[x->norphans].installed_sha256) {
		free((char *)v[x->norphans].path);
		free((char *)v[x->norphans].sha256);
		free((char *)v[x->norphans].installed_sha256);
		return -ENOMEM;
	}
	x->norphans++;
	return 0;
}

static void orphans_free(struct install *x)
{
	for (size_t i = 0; i < x->norphans; i++) {
		free((char *)x->orphans[i].path);
		free((char *)x->orphans[i].sha256);
		free((char *)x->orphans[i].installed_sha256);
	}
	free(x->orphans);
	x->orphans = NULL;
	x->norphans = 0;
}

/* The old version's files and directories that the new one no longer has. */
static int plan_stale(struct install *x, fatelf_diag *d)
{
	struct oldfile_walk w = { .x = x };
	const store_file *files = x->old_files;
	store_dir *dirs = NULL;
	size_t nfiles = x->nold_files, ndirs = 0;
	int q;

	x->row_op = calloc(x->nents ? x->nents : 1, sizeof(*x->row_op));
	if (!x->row_op)
		return fatelf_diag_oom(d);
	for (size_t i = 0; i < nfiles; i++) {
		const fatelf_bundle_entry *be = fatelf_manifest_find(x->m, files[i].path + 1);

		/* An unchanged file's row stays as it is (the package keeps
		 * its id), and the row of a file the new version ships again
		 * is rewritten where it is; only the rows of the paths it no
		 * longer ships as files are deleted. */
		if (be && be->type != FATELF_ENTRY_DIR) {
			size_t k = (size_t)(be - x->m->entries);
			if (!x->ents[k].unchanged)
				x->row_op[k] = files[i].kind == STORE_KIND_FATELF ? ROW_REPLACE_RECORDS :
										  ROW_REPLACE;
		} else if ((q = strv_push(&x->old_rows, files[i].path)) < 0) {
			goto out;
		}
		if ((q = old_file(&w, &files[i])) < 0)
			goto out;
	}
	for (size_t i = 0; i < w.paths.n; i++)
		if ((q = strv_push(&x->removes, w.paths.v[i])) < 0)
			goto out;
	for (size_t i = 0; i < w.nconfigs; i++) {
		const store_file *f = w.configs[i];
		if (admin_changed(x->e, f->path, f->installed_sha256)) {
			/* kept, and no longer owned: a kept_configs row */
			q = strv_push(&x->kept, f->path);
			if (q >= 0)
				q = add_orphan(x, f);
		} else
			q = strv_push(&x->removes, f->path);
		if (q < 0)
			goto out;
	}
	strv_free(&w.paths);

	/* Directories deepest first; only those no other package owns. */
	q = store_dirs_of(x->e->st, x->old.id, &dirs, &ndirs, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < ndirs; i++)
		if ((q = old_dir(&w, dirs[i].path)) < 0)
			goto out;
	for (size_t i = 0; i < w.paths.n; i++) {
		uint64_t others = 0;
		q = store_dir_other_owners(x->e->st, w.paths.v[i], x->old.id, &others, d);
		if (q < 0)
			goto out;
		if (others == 0 && (q = strv_push(&x->rmdirs, w.paths.v[i])) < 0)
			goto out;
	}
	q = 0;
out:
	/* The preflight is done with them. */
	old_rows_free(x);
	store_dirs_free(dirs, ndirs);
	strv_free(&w.paths);
	free(w.configs);
	return q;
}

/* The packages that force takes every file from: as dpkg says of them,
 * they are left installed with no files. */
static int plan_emptied(struct install *x, fatelf_diag *d)
{
	for (size_t i = 0; i < x->forced_from.n; i++) {
		const char *owner = x->forced_from.v[i];
		store_file *files = NULL;
		size_t total = 0;
		uint64_t taken = 0;
		bool seen = false;
		int q;

		if (!owner[0])
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(x->forced_from.v[j], owner) == 0;
		if (seen)
			continue;
		for (size_t j = i; j < x->forced_from.n; j++)
			taken += strcmp(x->forced_from.v[j], owner) == 0;
		q = store_files_of(x->e->st, owner, &files, &total, d);
		if (q < 0 && q != -ENOENT)
			return q;
		store_files_free(files, total);
		if (total <= taken && (q = strv_push(&x->emptied, owner)) < 0)
			return q;
	}
	return 0;
}

/* A path force takes over, and from whom (owner NULL: no package;
 * kept NULL: no kept config file of a removed package). */
static int forced_add(struct install *x, const char *path, const char *owner, const store_kept *kept)
{
	int q = strv_push(&x->forced, path);

	if (q >= 0)
		q = strv_push(&x->forced_from, owner ? owner : "");
	if (q >= 0)
		q = strv_push(&x->forced_kept_by, kept ? kept->package : "");
	return q < 0 ? q : strv_push(&x->forced_kept_version, kept ? kept->version : "");
}

static int plan_dir(struct install *x, const fatelf_bundle_entry *be, struct ient *ie,
		    fatelf_diag *d)
{
	struct stat st;
	int q = eng_lstat(x->e, ie->path, &st, d);

	ie->dir_mode = (uint16_t)(be->mode & 07777);
	if (q == -ENOENT) {
		ie->op_kind = STORE_JOP_MKDIR;
		return 0;
	}
	if (q < 0) {
		if (q == -ENOTDIR || q == -ELOOP)
			return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
					 "%s: a parent on disk is a symlink or not a directory", ie->path);
		return prefix_path(d, q, ie->path);
	}
	if (S_ISLNK(st.st_mode))
		return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
				 "%s is a symlink on disk; the bundle needs a directory there", ie->path);
	if (!S_ISDIR(st.st_mode))
		return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
				 "%s exists on disk and is not a directory", ie->path);
	/* A directory someone else made, or may write in, would let them
	 * swap root's files inside it: refused unless it is taken over. A
	 * directory of root's that a package already owns keeps its mode. */
	/* A directory that stays as it is is recorded as it is. */
	ie->dir_mode = (uint16_t)(st.st_mode & 07777);
	if (st.st_uid == geteuid()) {
		uint64_t owners = 0;
		q = store_dir_other_owners(x->e->st, ie->path, 0, &owners, d);
		if (q < 0)
			return q;
		if (owners > 0)
			return 0;
	}
	q = eng_dir_check(ie->path, &st, be->mode & 07777, d);
	if (q < 0 && !x->o->force)
		return q;
	ie->take_dir = q < 0;
	if (ie->take_dir) {
		if (!rare_of(ie))
			return fatelf_diag_oom(d);
		ie->dir_mode = (uint16_t)(be->mode & 07777);
		ie->rare->take_dev = st.st_dev;
		ie->rare->take_ino = st.st_ino;
	}
	return 0;
}

/*
 * force: makes an existing directory root's, with the bundle's mode,
 * through a descriptor (whoever could write in it may have swapped it for
 * a symlink since the preflight). Only the directory the preflight saw
 * and the admin forced: one moved in since (a private directory of
 * root's from beside it) is refused. Done before anything is made or
 * staged in it, and not undone by a rollback.
 */
static int take_dir(struct install *x, const struct ient *ie, fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1, fd = -1;
	const char *base;
	struct stat st;

	dirfd = eng_open_parent(x->e, ie->path, &base, d);
	if (dirfd < 0)
		return prefix_path(d, dirfd, ie->path);
	fd = openat(dirfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return path_fail(d, errno == ELOOP || errno == ENOTDIR ? -ENGINE_E_CONFLICT : -errno,
				 ie->path, "%s: cannot open the directory to take it over: %s",
				 ie->path, fatelf_strerror(-errno));
	if (fstat(fd, &st) < 0)
		return path_fail(d, -errno, ie->path, "%s: %s", ie->path, fatelf_strerror(-errno));
	if (st.st_dev != ie->rare->take_dev || st.st_ino != ie->rare->take_ino)
		return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
				 "%s: the directory was replaced since the preflight; not taking it over",
				 ie->path);
	if (fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, ent_of(x, ie)->mode & 07777) < 0)
		return path_fail(d, -errno, ie->path, "%s: cannot take the directory over: %s",
				 ie->path, fatelf_strerror(-errno));
	return 0;
}

/*
 * The sidecar a kept config file's new version goes to (PATH.fatelf-new)
 * is a path the engine writes like any entry, so it meets the same
 * conflict rules: another package's file is taken only with force, an
 * unowned file on disk is overwritten only with force (unless it is the
 * sidecar an earlier upgrade wrote, unchanged: last_shipped is its hash),
 * and a path the bundle ships itself is never the sidecar's.
 */
static int plan_sidecar(struct install *x, struct ient *ie, const char *last_shipped,
			fatelf_diag *d)
{
	const char *op_path = ie->rare->op_path;
	_cleanup_store_file_ store_file row = { 0 };
	_cleanup_free_ char *owner = NULL;
	struct stat st;
	bool on_disk;
	int q;

	if (fatelf_manifest_find(x->m, op_path + 1))
		return path_fail(d, -ENGINE_E_CONFLICT, op_path,
				 "%s: the bundle ships this path, where the new version of the kept "
				 "%s would go", op_path, ie->path);
	q = eng_lstat(x->e, op_path, &st, d);
	if (q < 0 && q != -ENOENT)
		return prefix_path(d, q, op_path);
	on_disk = q == 0;
	if (on_disk && S_ISDIR(st.st_mode))
		return path_fail(d, -ENGINE_E_CONFLICT, op_path,
				 "%s exists on disk as a directory", op_path);
	q = store_file_get(x->e->st, op_path, &row, &owner, d);
	if (q < 0)
		return q;
	if (q > 0) {
		bool mine = owner && strcmp(owner, x->m->name) == 0;

		/* This package's own file there is planned for removal, and one
		 * path cannot be both. */
		if (mine || !x->o->force)
			return path_fail(d, -ENGINE_E_CONFLICT, op_path,
					 "%s belongs to package %s; the new version of the kept %s "
					 "cannot go there", op_path, owner ? owner : "?", ie->path);
		q = strv_push(&x->taken, op_path);
		if (q < 0)
			return q;
	} else if (on_disk && !x->o->force && !file_is(x->e, op_path, last_shipped)) {
		/* The one exception: the new version an earlier upgrade put
		 * there, untouched since (the bytes it last shipped). */
		return path_fail(d, -ENGINE_E_CONFLICT, op_path,
				 "%s exists on disk and belongs to no package; the new version of the "
				 "kept %s would overwrite it (move it away, or --force)", op_path,
				 ie->path);
	}
	ie->op_kind = on_disk ? STORE_JOP_REPLACE : STORE_JOP_CREATE;
	return 0;
}

/*
 * The preflight's lstat of each file, beneath the root, costs more than
 * the rest of its plan. Two threads take them ahead, in chunks of
 * PRESTAT_CHUNK entries in the manifest's order (thread k the chunks
 * k, k + 2, ...), each through its own cache of the last directory,
 * while this one reads the old version's rows and then plans each entry:
 * a ring of PRESTAT_SLOTS chunks of results. A result that is an error
 * other than -ENOENT is not kept: plan_file asks again, for its message.
 */
#define PRESTAT_CHUNK 256
#define PRESTAT_SLOTS 16
#define PRESTAT_THREADS 2
#define PRESTAT_MIN 256

struct prestat {
	struct stat st;
	int q;
	bool done;
};

struct prestat_pipe {
	struct install *x;
	pthread_t thread[PRESTAT_THREADS];
	unsigned nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t ready[PRESTAT_SLOTS];    /* the chunk each slot holds, or SIZE_MAX */
	size_t consumed;                /* entries [0, consumed) are planned */
	bool stop;
	struct prestat ring[PRESTAT_SLOTS][PRESTAT_CHUNK];
};

struct prestat_worker {
	struct prestat_pipe *p;
	unsigned k;
};

static void *prestat_run(void *userdata)
{
	struct prestat_worker *wk = userdata;
	struct prestat_pipe *p = wk->p;
	struct install *x = p->x;
	size_t n = x->m->nentries;
	eng_parent_cache dir = { .fd = -1 };

	for (size_t c = wk->k; c * PRESTAT_CHUNK < n; c += PRESTAT_THREADS) {
		size_t lo = c * PRESTAT_CHUNK, hi = MIN(lo + PRESTAT_CHUNK, n);
		struct prestat *slot = p->ring[c % PRESTAT_SLOTS];

		/* The slot is free once the chunk it held is planned. */
		pthread_mutex_lock(&p->lock);
		while (!p->stop && (c + 1) * PRESTAT_CHUNK > p->consumed + PRESTAT_SLOTS * PRESTAT_CHUNK)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
		if (p->stop)
			break;
		for (size_t i = lo; i < hi; i++) {
			struct prestat *r = &slot[i - lo];

			r->done = false;
			if (x->m->entries[i].type == FATELF_ENTRY_DIR)
				continue;
			r->q = eng_lstat_in(x->e, &dir, x->ents[i].path, &r->st, NULL);
			r->done = r->q == 0 || r->q == -ENOENT;
		}
		pthread_mutex_lock(&p->lock);
		__atomic_store_n(&p->ready[c % PRESTAT_SLOTS], c, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	eng_parent_cache_clear(&dir);
	free(wk);
	return NULL;
}

static void prestat_stop(struct install *x);

/* Starts the lstat threads when there are two cores and entries enough
 * (otherwise plan_file takes each lstat itself). */
static int prestat_start(struct install *x)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct prestat_pipe *p;

	if (ncpu < 2 || x->m->nentries < PRESTAT_MIN)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->x = x;
	for (size_t i = 0; i < PRESTAT_SLOTS; i++)
		p->ready[i] = SIZE_MAX;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	x->pre = p;
	for (unsigned k = 0; k < PRESTAT_THREADS; k++) {
		struct prestat_worker *wk = malloc(sizeof(*wk));

		if (wk)
			*wk = (struct prestat_worker) { .p = p, .k = k };
		if (!wk || pthread_create(&p->thread[k], NULL, prestat_run, wk) != 0) {
			free(wk);
			break;
		}
		p->nthreads++;
	}
	/* Every chunk has its thread, or none is taken ahead. */
	if (p->nthreads < PRESTAT_THREADS) {
		prestat_stop(x);
		return 0;
	}
	return 0;
}

/* The lstat of entry i taken ahead, or NULL (then plan_file takes it).
 * Entries are asked for in order. */
static const struct prestat *prestat_get(struct install *x, size_t i)
{
	struct prestat_pipe *p = x->pre;
	size_t c = i / PRESTAT_CHUNK;
	const struct prestat *r;

	if (!p)
		return NULL;
	/* consumed is this thread's own; ready[] is read without the lock
	 * only to skip it while a chunk is there. */
	if (c * PRESTAT_CHUNK > p->consumed ||
	    __atomic_load_n(&p->ready[c % PRESTAT_SLOTS], __ATOMIC_ACQUIRE) != c) {
		pthread_mutex_lock(&p->lock);
		if (c * PRESTAT_CHUNK > p->consumed) {
			p->consumed = c * PRESTAT_CHUNK;
			pthread_cond_broadcast(&p->cond);
		}
		while (p->ready[c % PRESTAT_SLOTS] != c)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
	}
	r = &p->ring[c % PRESTAT_SLOTS][i % PRESTAT_CHUNK];
	return r->done ? r : NULL;
}

static void prestat_stop(struct install *x)
{
	struct prestat_pipe *p = x->pre;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned k = 0; k < p->nthreads; k++)
		pthread_join(p->thread[k], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
	x->pre = NULL;
}

/*
 * A path on disk that no package owns. A config file that this package
 * left behind at its removal (a kept_configs row) is its own again: 1,
 * with *ret holding what it had shipped and installed there. Anything
 * else is a conflict unless forced; the kept row, if any, goes with the
 * commit either way.
 */
static int plan_unowned(struct install *x, const fatelf_bundle_entry *be, const struct ient *ie,
			const struct stat *st, store_file *ret, fatelf_diag *d)
{
	_cleanup_store_kept_ store_kept k = { 0 };
	bool have = false;
	int q = store_kept_get(x->e->st, ie->path, &k, d);

	if (q < 0)
		return q;
	have = q > 0 && !k.dir;
	if (have && strcmp(k.package, x->m->name) == 0 && be->config && S_ISREG(st->st_mode)) {
		*ret = (store_file){
			.sha256 = k.sha256,
			.installed_sha256 = k.installed_sha256,
			.installed_size = k.installed_size,
		};
		k.sha256 = k.installed_sha256 = NULL;
		q = strv_push(&x->adopted, ie->path);
		return q < 0 ? q : 1;
	}
	if (!x->o->force) {
		if (have)
			q = path_fail(d, -ENGINE_E_CONFLICT, ie->path,
				      "%s exists on disk: a config file package %s %s left behind "
				      "(remove --purge %s deletes it)", ie->path, k.package, k.version,
				      k.package);
		else
			q = path_fail(d, -ENGINE_E_CONFLICT, ie->path,
				      "%s exists on disk and belongs to no package", ie->path);
		return q;
	}
	/* As dpkg's --force-overwrite names the package the file is also
	 * in: the one that left it is named in the result. */
	q = forced_add(x, ie->path, NULL, have ? &k : NULL);
	if (q >= 0 && have)
		q = strv_push(&x->adopted, ie->path);
	return q < 0 ? q : 0;
}

/* What the file becomes, and so how many bytes it will take. ROW: the
 * store's row of a file this package already has on disk (NULL for
 * any other), which may leave the file as it is. */
static int plan_bytes(struct install *x, const fatelf_bundle_entry *be, struct ient *ie, const store_file *row,
		      const struct stat *st, fatelf_diag *d)
{
	int q;

	if (be->type == FATELF_ENTRY_FILE && be->kind == FATELF_KIND_FATELF) {
		fatelf_header hdr;
		int form = 0;

		q = engine_entry_header(be, &hdr, d);
		if (q < 0)
			return prefix_entry(d, q, be);
		q = engine_policy_select(x->policy, (const char *const *)x->e->cfg.keep_fat,
						 x->e->cfg.nkeep_fat, &x->e->host, ie->path, &hdr,
						 &ie->keep, &form, d);
		if (q < 0)
			return prefix_path(d, q, ie->path);
		ie->form = (int8_t)form;
		ie->thinned = q == 1;
	}
	if (be->type == FATELF_ENTRY_FILE) {
		q = engine_installed_size(be, ie->thinned, &ie->keep, ie->form, &ie->installed_size, d);
		if (q < 0)
			return prefix_entry(d, q, be);
		/* A reinstall of the same version writes every file again,
		 * as dpkg's does: it is how an admin repairs a package. */
		if (row && !ie->keep_admin && x->change != STORE_TX_REINSTALL)
			plan_unchanged(x, ie, row, st);
		if (ie->unchanged) {
			ie->op_kind = -1;
			x->files_unchanged++;
			x->bytes_unchanged += ie->installed_size;
		} else {
			x->bytes_total += ie->installed_size;
		}
	}
	return 0;
}

static int plan_file(struct install *x, const fatelf_bundle_entry *be, struct ient *ie,
		     fatelf_diag *d)
{
	_cleanup_store_file_ store_file got = { 0 };
	const store_file *row = NULL;
	_cleanup_free_ char *owner = NULL;
	struct stat st;
	bool on_disk, owned_here = false, adopted = false;
	int q;

	const struct prestat *pre = prestat_get(x, (size_t)(be - x->m->entries));
	if (pre) {
		q = pre->q;
		st = pre->st;
	} else {
		q = eng_lstat_in(x->e, &x->preflight_dir, ie->path, &st, d);
	}
	if (q < 0 && q != -ENOENT) {
		if (q == -ENOTDIR || q == -ELOOP)
			return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
					 "%s: a parent on disk is a symlink or not a directory", ie->path);
		return q;
	}
	on_disk = q == 0;
	if (on_disk && S_ISDIR(st.st_mode))
		return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
				 "%s exists on disk as a directory", ie->path);

	/* The old version's row, read with all the others; a path it does
	 * not have is looked up on its own (another package's, or none). */
	row = old_row(x, ie->path);
	if (row) {
		owned_here = true;
	} else {
		q = store_file_get(x->e->st, ie->path, &got, &owner, d);
		if (q < 0)
			return q;
		if (q > 0)
			row = &got;
	}
	if (row) {
		if (!owned_here)
			owned_here = owner && strcmp(owner, x->m->name) == 0;
		if (!owned_here) {
			if (!x->o->force)
				return path_fail(d, -ENGINE_E_CONFLICT, ie->path,
						 "%s belongs to package %s", ie->path, owner ? owner : "?");
			q = strv_push(&x->taken, ie->path);
			if (q >= 0)
				q = forced_add(x, ie->path, owner, NULL);
			if (q < 0)
				return q;
		}
	} else if (on_disk) {
		q = plan_unowned(x, be, ie, &st, &got, d);
		if (q < 0)
			return q;
		if (q == 1) {
			/* this package's own config, kept at its removal: taken
			 * back as an upgrade takes its own */
			row = &got;
			owned_here = adopted = true;
		}
	}

	/* A config file the admin changed stays; the new one goes beside it. */
	if (owned_here && be->config && on_disk && S_ISREG(st.st_mode) &&
	    admin_kept(x->e, be, ie->path, row->installed_sha256)) {
		struct ient_rare *r = rare_of(ie);

		ie->keep_admin = true;
		if (r) {
			r->old_installed_sha256 = strdup(row->installed_sha256);
			r->old_installed_size = row->installed_size;
			if (asprintf(&r->op_path, "%s%s", ie->path, CONFIG_NEW_SUFFIX) < 0)
				r->op_path = NULL;
		}
		if (!r || !r->old_installed_sha256 || !r->op_path)
			return fatelf_diag_oom(d);
		q = plan_sidecar(x, ie, row->sha256, d);
		if (q < 0)
			return q;
		q = strv_push(&x->kept, ie->path);
		if (q < 0)
			return q;
	} else {
		ie->op_kind = on_disk ? STORE_JOP_REPLACE : STORE_JOP_CREATE;
	}

	q = plan_bytes(x, be, ie, owned_here && on_disk && !adopted ? row : NULL, &st, d);
	if (q < 0)
		return q;
	if (!ie->unchanged)
		x->files++;
	return 0;
}

static int check_space(struct install *x, fatelf_diag *d)
{
	struct statvfs sv;
	uint64_t need = x->bytes_total + x->bytes_total / 100, avail;

	if (fstatvfs(x->e->rootfd, &sv) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot tell the free space of the root: %s",
				       fatelf_strerror(-errno));
	avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	if (need > avail && d) {
		d->needed = need;
		d->available = avail;
		d->has |= FATELF_DIAG_HAS_NEEDED | FATELF_DIAG_HAS_AVAILABLE;
	}
	if (need > avail)
		return fatelf_diag_set(d, -ENGINE_E_DISK_FULL, -1,
				       "not enough free space in the root: %llu bytes needed, %llu available",
				       (unsigned long long)need, (unsigned long long)avail);
	return 0;
}

/* Every op in an order that works: directories parents first, then the
 * files, then the stale files, then the stale directories deepest first. */
static int plan_tx(struct install *x, fatelf_diag *d)
{
	size_t n = x->removes.n + x->rmdirs.n;
	int q;

	for (size_t i = 0; i < x->nents; i++)
		n += x->ents[i].op_kind >= 0;
	if (eng_tx_reserve(&x->tx, n) < 0)
		return fatelf_diag_oom(d);
	/* The ops refer to the paths the install holds until eng_tx_done. */
	for (size_t i = 0; i < x->nents; i++) {
		struct ient *ie = &x->ents[i];
		if (ie->op_kind != STORE_JOP_MKDIR)
			continue;
		q = eng_tx_add_ref(&x->tx, STORE_JOP_MKDIR, op_path_of(ie), ent_of(x, ie)->mode & 07777, d);
		if (q < 0)
			return q;
		ie->op = q;
	}
	for (size_t i = 0; i < x->nents; i++) {
		struct ient *ie = &x->ents[i];
		if (ie->op_kind != STORE_JOP_CREATE && ie->op_kind != STORE_JOP_REPLACE)
			continue;
		q = eng_tx_add_ref(&x->tx, ie->op_kind, op_path_of(ie), ent_of(x, ie)->mode & 07777, d);
		if (q < 0)
			return q;
		ie->op = q;
	}
	for (size_t i = 0; i < x->removes.n; i++)
		if ((q = eng_tx_add_ref(&x->tx, STORE_JOP_REMOVE, x->removes.v[i], 0, d)) < 0)
			return q;
	for (size_t i = 0; i < x->rmdirs.n; i++)
		if ((q = eng_tx_add_ref(&x->tx, STORE_JOP_RMDIR, x->rmdirs.v[i], 0, d)) < 0)
			return q;
	return 0;
}

/*
 * The per-arch entries the policy selects: it picks among the bundle's
 * per-arch targets as among a fat file's records, once for the bundle.
 * Policy keep takes every per-arch entry with a path of its own and, where
 * several share a path, the one this host runs best. A policy that takes
 * no per-arch target takes no per-arch entry.
 */
static int make_view(struct install *x, const fatelf_manifest *m, fatelf_diag *d)
{
	_cleanup_free_ bool *take = NULL;
	fatelf_header pa;
	fatelf_keepset keep;
	int form = 0, q;

	x->rm = m;
	x->view = *m;
	x->view.entries = NULL;
	x->view.nentries = x->view.entries_cap = 0;
	q = fatelf_manifest_per_arch_header(m, &x->e->host, &pa, d);
	if (q < 0)
		return q;
	fatelf_keep_clear(&keep);
	if (pa.nrecords > 0) {
		fatelf_diag tmp;

		fatelf_diag_clear(&tmp);
		q = engine_policy_select(x->policy, NULL, 0, &x->e->host, "", &pa, &keep, &form, &tmp);
		if (q == 0) {
			for (unsigned i = 0; i < pa.nrecords; i++)
				fatelf_keep_add(&keep, i);
		} else if (q < 0 && q != -FATELF_E_NO_HOST_RECORD && q != -FATELF_E_NO_MATCH) {
			*d = tmp;
			return q;
		}
	}
	take = calloc(m->nentries ? m->nentries : 1, sizeof(*take));
	if (!take)
		return fatelf_diag_oom(d);
	q = fatelf_manifest_select(m, &pa, &keep, take);
	if (q < 0)
		return q;
	x->view_of = calloc(m->nentries ? m->nentries : 1, sizeof(*x->view_of));
	if (!x->view_of)
		return fatelf_diag_oom(d);
	size_t ntake = 0;
	for (size_t i = 0; i < m->nentries; i++)
		ntake += take[i];
	/* Every entry taken (no per-arch entry left out): the install works
	 * on the reader's manifest itself, with no copy of its entries. */
	if (ntake == m->nentries) {
		free(x->view_of);
		x->view_of = NULL;
		x->m = m;
		return 0;
	}
	x->view.entries = calloc(m->nentries ? m->nentries : 1, sizeof(*x->view.entries));
	if (!x->view.entries)
		return fatelf_diag_oom(d);
	for (size_t i = 0; i < m->nentries; i++) {
		x->view_of[i] = SIZE_MAX;
		if (take[i]) {
			x->view_of[i] = x->view.nentries;
			x->view.entries[x->view.nentries++] = m->entries[i];
		}
	}
	x->view.entries_cap = m->nentries;
	x->m = &x->view;
	return 0;
}

/* The plan of the reader's entry be, or NULL when the install skips it. */
static struct ient *ient_of(struct install *x, const fatelf_bundle_entry *be)
{
	size_t i = (size_t)(be - x->rm->entries);
	size_t k = x->view_of ? x->view_of[i] : i;

	return k == SIZE_MAX ? NULL : &x->ents[k];
}

/* The objects staging will read, for a source that fetches them first. */
static int report_needs(struct install *x, fatelf_diag *d)
{
	int q;

	for (size_t i = 0; i < x->nents; i++) {
		const struct ient *ie = &x->ents[i];
		const fatelf_bundle_entry *be = ent_of(x, ie);

		if (be->type != FATELF_ENTRY_FILE || ie->unchanged)
			continue;
		if (be->kind != FATELF_KIND_FATELF) {
			q = x->o->needs(x->o->needs_ctx, x->rm, be, be->sha256, be->size, d);
		} else if (ie->thinned) {
			q = 0;
			for (unsigned k = 0; k < be->nrecords && q >= 0; k++)
				if (fatelf_keep_has(&ie->keep, k))
					q = x->o->needs(x->o->needs_ctx, x->rm, be, be->records[k].sha256, be->records[k].size, d);
		} else {
			q = 0;
			for (unsigned k = 0; k < be->nrecords && q >= 0; k++)
				q = x->o->needs(x->o->needs_ctx, x->rm, be, be->records[k].sha256, be->records[k].size, d);
			if (q >= 0)
				q = x->o->needs(x->o->needs_ctx, x->rm, be, NULL, 0, d);
		}
		if (q < 0)
			return q;
	}
	return x->o->needs(x->o->needs_ctx, x->rm, NULL, NULL, 0, d);
}

/* What the package row records beside name and version: the manifest's
 * license, homepage and targets, and where the bundle came from. */
static int package_facts(struct install *x, const fatelf_manifest *m)
{
	size_t len = 1;

	if ((m->license && !(x->license = strdup(m->license))) ||
	    (m->homepage && !(x->homepage = strdup(m->homepage))) ||
	    (x->o->source && x->o->source_type != STORE_SOURCE_UNKNOWN && !(x->source = strdup(x->o->source))))
		return -ENOMEM;
	x->targets = malloc(m->ntargets * FATELF_TARGET_NAME_MAX + 1);
	if (!x->targets)
		return -ENOMEM;
	x->targets[0] = '\0';
	for (size_t i = 0; i < m->ntargets; i++) {
		char name[FATELF_TARGET_NAME_MAX];
		size_t k;

		fatelf_target_format(&m->targets[i], name);
		k = strlen(name);
		if (i > 0)
			x->targets[len++ - 1] = ',';
		memcpy(x->targets + len - 1, name, k + 1);
		len += k;
	}
	return 0;
}

/* A held package keeps its version: another one is refused unless forced
 * (the same version again, a repair, is not another). */
static int check_held(struct install *x, const fatelf_manifest *m, fatelf_diag *d)
{
	bool held = false;
	int q;

	if (!x->have_old || x->o->force || x->change == STORE_TX_REINSTALL)
		return 0;
	q = store_hold_get(x->e->st, m->name, &held, d);
	if (q < 0 || !held)
		return q;
	q = fatelf_diag_set(d, -ENGINE_E_HELD, -1, "%s is held at %s (%s offered; force installs it)",
			    m->name, x->old.version, m->version);
	fatelf_diag_names(d, m->name);
	FATELF_DIAG_FACT(d, package, m->name);
	FATELF_DIAG_FACT(d, installed, x->old.version);
	FATELF_DIAG_FACT(d, offered, m->version);
	return q;
}

/* What the package is and says (its names, dependencies, signer), and
 * what the install does to the one installed, if any. */
static int inst_identity(struct install *x, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
			 fatelf_diag *d)
{
	int q;

	for (size_t i = 0; i < m->ndepends; i++) {
		const fatelf_depend *dep = &m->depends[i];
		char c[FATELF_DEPEND_TEXT_MAX] = "";

		if (dep->op != FATELF_DEP_ANY && dep->version)
			snprintf(c, sizeof(c), "%s %s", fatelf_depend_op_text(dep->op), dep->version);
		if (strv_push(&x->dep_names, dep->name) < 0 || strv_push(&x->dep_constraints, c) < 0)
			return fatelf_diag_oom(d);
	}
	x->name = strdup(m->name);
	x->version = strdup(m->version);
	x->summary = strdup(m->summary ? m->summary : "");
	x->vendor = strdup(m->vendor ? m->vendor : "");
	if (!x->name || !x->version || !x->summary || !x->vendor)
		return fatelf_diag_oom(d);
	if (signer) {
		x->is_signed = true;
		fatelf_ms_keyid_format(signer->keyid, x->signer);
	}
	q = store_package_get(x->e->st, m->name, &x->old, d);
	if (q < 0)
		return q;
	x->have_old = q > 0;
	x->kind = store_tx_kind_to_text(x->have_old ? STORE_TX_UPGRADE : STORE_TX_INSTALL);
	if (!x->have_old)
		x->change = STORE_TX_INSTALL;
	else {
		int cmp = fatelf_pkg_version_compare(m->version, x->old.version);
		x->change = cmp > 0 ? STORE_TX_UPGRADE : cmp == 0 ? STORE_TX_REINSTALL : STORE_TX_DOWNGRADE;
	}
	return 0;
}

/* The history row started, then the rules on the version: no downgrade
 * unless allowed, none past a hold, dependencies and breaks met. */
static int inst_admit(struct install *x, const fatelf_manifest *m, fatelf_diag *d)
{
	int q;

	/* The history row says what the install does to the package; the
	 * result's kind stays install or upgrade, with the change beside it. */
	if (!x->o->dry_run) {
		q = eng_tx_start(x->e, x->change, m->name, x->have_old ? x->old.version : NULL,
				 m->version, &x->tx, d);
		if (q < 0)
			return q;
		x->tx_started = true;
	}
	if (x->have_old && !x->o->allow_downgrade &&
	    fatelf_pkg_version_compare(m->version, x->old.version) < 0) {
		q = fatelf_diag_set(d, -ENGINE_E_DOWNGRADE, -1,
				    "%s %s is older than the installed %s", m->name, m->version,
				    x->old.version);
		fatelf_diag_names(d, m->name);
		FATELF_DIAG_FACT(d, package, m->name);
		FATELF_DIAG_FACT(d, installed, x->old.version);
		FATELF_DIAG_FACT(d, offered, m->version);
		return q;
	}
	q = check_held(x, m, d);
	if (q < 0)
		return q;
	/* Alone, its dependencies are installed already; in a group, the
	 * other members may bring them: engine_group_commit checks. */
	if (!x->o->group) {
		q = depends_check(x->e, NULL, m->name, m->depends, m->ndepends, d);
		if (q == 0)
			q = breaks_check(x->e, NULL, m->name, m->version, d);
		if (q < 0)
			return q;
	}
	return 0;
}

/* One ient an entry, each with its path ("/" + the entry's); every path
 * once, in one block. */
static int ents_make(struct install *x, const fatelf_manifest *m)
{
	size_t plen = 1;
	char *pp;

	x->ents = calloc(m->nentries ? m->nentries : 1, sizeof(*x->ents));
	if (!x->ents)
		return -ENOMEM;
	x->nents = m->nentries;
	for (size_t i = 0; i < m->nentries; i++)
		plen += strlen(m->entries[i].path) + 2;
	x->paths = malloc(plen);
	if (!x->paths)
		return -ENOMEM;
	pp = x->paths;
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *be = &m->entries[i];
		struct ient *ie = &x->ents[i];
		size_t len = strlen(be->path);

		ie->op = -1;
		ie->op_kind = -1;
		ie->path = pp;
		*pp++ = '/';
		memcpy(pp, be->path, len + 1);
		pp += len + 1;
	}
	return 0;
}

/* Each entry planned (a reserved name or a set-id file refused), then
 * what the old version leaves behind, the space, and emptied folders. */
static int plan_entries(struct install *x, const fatelf_manifest *m, fatelf_diag *d)
{
	int q;

	q = prestat_start(x);
	if (q < 0)
		return q;
	if (x->have_old) {
		q = load_old_rows(x, d);
		if (q < 0)
			return q;
	}
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *be = &m->entries[i];
		struct ient *ie = &x->ents[i];

		if (fatelf_stage_reserved(ie->path))
			return path_fail(d, -ENGINE_E_NAME_RESERVED, be->path,
					 "%s: names starting with \"" ENGINE_TEMP_PREFIX "\" are reserved "
					 "for the installer's temp files", be->path);
		if (be->setid && !x->o->allow_setid)
			return path_fail(d, -ENGINE_E_SETID, ie->path,
					 "%s is setuid or setgid, and only root may install such a file",
					 ie->path);
		q = be->type == FATELF_ENTRY_DIR ? plan_dir(x, be, ie, d) : plan_file(x, be, ie, d);
		if (q < 0)
			return q;
	}
	prestat_stop(x);
	if (x->have_old) {
		q = plan_stale(x, d);
		if (q < 0)
			return q;
	}
	q = check_space(x, d);
	if (q < 0)
		return q;
	return plan_emptied(x, d);
}

/* The preflight: the plan of every entry, made in one read transaction
 * of the store (its queries are one or two a file; ended here, or by
 * engine_install on a failure). */
static int inst_preflight(struct install *x, const fatelf_manifest *m, fatelf_diag *d)
{
	int q;

	q = progress(x, "preflight", NULL);
	if (q < 0)
		return q;
	q = store_read_begin(x->e->st, d);
	if (q < 0)
		return q;
	q = ents_make(x, m);
	if (q < 0)
		return q;
	q = plan_entries(x, m, d);
	if (q < 0)
		return q;
	if (x->o->group) {
		q = group_claim(x->o->group, x, d);
		if (q < 0)
			return q;
	}
	store_read_end(x->e->st);
	return progress(x, "preflight", NULL);     /* now with the totals */
}

/* The transaction's plan journaled, its folders taken over and made. */
static int inst_tx_prepare(struct install *x, fatelf_diag *d)
{
	int q;

	q = plan_tx(x, d);
	if (q < 0)
		return q;
	q = eng_tx_journal(&x->tx, d);
	if (q < 0)
		return q;
	/* Taken over before anything is made in them, parents first (the
	 * manifest's order): from then on only root writes there. */
	for (size_t i = 0; i < x->nents; i++) {
		if (!x->ents[i].take_dir)
			continue;
		q = take_dir(x, &x->ents[i], d);
		if (q < 0)
			return q;
	}
	return eng_tx_mkdirs(&x->tx, d);
}

static int inst_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
			 fatelf_diag *d)
{
	struct install *x = ctx;
	int q;

	q = make_view(x, m, d);
	if (q < 0)
		return q;
	q = package_facts(x, m);
	if (q < 0)
		return q;
	m = x->m;
	q = inst_identity(x, m, signer, d);
	if (q < 0)
		return q;
	q = inst_admit(x, m, d);
	if (q < 0)
		return q;
	q = inst_preflight(x, m, d);
	if (q < 0)
		return q;
	if (x->o->needs) {
		q = report_needs(x, d);
		if (q < 0)
			return q;
	}
	if (x->o->dry_run) {
		/* The reader frees the manifest as it stops. */
		totals(x, &x->written, &x->saved);
		x->dry_done = true;
		return DRY_RUN_STOP;
	}
	return inst_tx_prepare(x, d);
}

/* ------------------------------------------------------------ staging */

static int inst_select(void *ctx, const fatelf_bundle_entry *be, const fatelf_header *hdr,
		       fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d)
{
	struct install *x = ctx;
	struct ient *ie = ient_of(x, be);

	if (ie && ie->thinned) {
		*ret_keep = ie->keep;
		*ret_form = ie->form;
	}
	return 0;
}

static int inst_begin(void *ctx, const fatelf_bundle_entry *be, fatelf_diag *d)
{
	struct install *x = ctx;
	struct ient *ie = ient_of(x, be);
	int q;

	/* A per-arch entry of a target the install does not take. */
	x->skipping = !ie;
	if (!ie)
		return FATELF_BUNDLE_SKIP;
	be = ent_of(x, ie);
	if (be->type == FATELF_ENTRY_SYMLINK) {
		q = eng_tx_stage_symlink(&x->tx, (size_t)ie->op, be->link_target, d);
		if (q < 0)
			return q;
		ie->staged = true;
	} else if (be->type == FATELF_ENTRY_FILE && ie->unchanged) {
		/* Left in place: its bytes are not needed, so the reader skips
		 * them unhashed. The file on disk is the one installed, whose
		 * bytes have the hash the signed manifest gives (its lstat
		 * record or its hash said so in the preflight). */
		x->cur = ie;
		x->hashing = false;
		return FATELF_BUNDLE_SKIP;
	} else if (be->type == FATELF_ENTRY_FILE) {
		q = eng_tx_stage_open(&x->tx, (size_t)ie->op, d);
		if (q < 0)
			return q;
		x->fd = q;
		x->cur = ie;
		ie->installed_size = 0;
		x->werr = 0;
		/* The installed bytes' hash is known without hashing them again
		 * on this (the decompressing) core, unless the file becomes a
		 * new FatELF of several records: a file as shipped has the
		 * manifest's hash, and a file thinned to one ELF has its
		 * record's. The reader proves both before anything commits. */
		x->hashing = ie->thinned &&
			     (ie->form == FATELF_FORM_FAT || fatelf_keep_count(&ie->keep) > 1);
	}
	return 0;
}

static int inst_data(void *ctx, const fatelf_bundle_entry *be, const void *buf, size_t len)
{
	struct install *x = ctx;
	int r;

	if (x->cur->unchanged)
		return 0;
	r = write_all(x->fd, buf, len);
	if (r < 0) {
		x->werr = r;
		x->werr_ent = x->cur;
		return r;
	}
	if (x->hashing)
		fatelf_sha256_update(x->h, buf, len);
	x->cur->installed_size += len;
	x->bytes_done += len;
	if (x->bytes_done - x->last_report >= PROGRESS_STEP) {
		x->last_report = x->bytes_done;
		if (progress(x, "staging", x->cur->path) < 0)
			return -ECANCELED;
	}
	return 0;
}

/*
 * The entry's bytes as a clone of fd, a file on the machine said to hold
 * them: the staged file, opened empty in begin, shares fd's extents, and
 * the reader gets an fd of its own on the staged file to check the copy
 * by its hash (fd itself may change after the clone; the copy cannot).
 * Declined while the file's hash is being computed (its bytes must pass
 * by) or once anything was written to it. fd -1 drops the last clone.
 */
static int inst_clone(void *ctx, const fatelf_bundle_entry *be, int fd, uint64_t len, fatelf_diag *d)
{
	struct install *x = ctx;
	struct ient *ie = x->cur;
	int q, copy = -1;

	(void)be;
	if (!ie || ie->unchanged || x->fd < 0)
		return -EINVAL;
	if (fd < 0) {
		x->bytes_done -= ie->installed_size;
		ie->installed_size = 0;
		if (ftruncate(x->fd, 0) < 0 || lseek(x->fd, 0, SEEK_SET) < 0)
			return path_fail(d, -errno, ie->path, "%s: cannot empty the staged file: %s", ie->path,
					 fatelf_strerror(-errno));
		return 0;
	}
	if (x->hashing || ie->installed_size != 0)
		return -EOPNOTSUPP;
	q = clone_file_start(fd, x->fd, len);
	if (q == 0 && (copy = fcntl(x->fd, F_DUPFD_CLOEXEC, 3)) < 0)
		q = -errno;
	if (q < 0) {
		/* A clone that failed midway may have shared part of the
		 * range; data then writes all of it from offset 0 anyway. */
		(void)ftruncate(x->fd, 0);
		return q;
	}
	ie->installed_size = len;
	x->bytes_done += len;
	if (x->bytes_done - x->last_report >= PROGRESS_STEP) {
		x->last_report = x->bytes_done;
		/* a cancel shows at the entry's end */
		(void)progress(x, "staging", ie->path);
	}
	return copy;
}

/* The vendor's hash of the one record a thinned ELF keeps. */
static const uint8_t *kept_record_sha(const fatelf_bundle_entry *be, const fatelf_keepset *keep)
{
	for (unsigned i = 0; i < be->nrecords; i++)
		if (fatelf_keep_has(keep, i))
			return be->records[i].sha256;
	return be->sha256;
}

static int warn_add(struct install *x, const char *path, const char *reason)
{
	engine_warning *w = realloc(x->warnings, (x->nwarnings + 1) * sizeof(*w));

	if (!w)
		return -ENOMEM;
	x->warnings = w;
	w[x->nwarnings].path = strdup(path);
	w[x->nwarnings].reason = reason;
	if (!w[x->nwarnings].path)
		return -ENOMEM;
	x->nwarnings++;
	return 0;
}

/*
 * An ET_DYN record is a library unless it is a position-independent
 * executable: one with a PT_INTERP and no DT_SONAME. Neither PT_INTERP
 * nor DF_1_PIE alone tells: glibc's libc.so.6 has both, and keeping it
 * fat would stop every program on the machine.
 */
bool eng_fat_is_shared_library(int fd, const fatelf_header *hdr)
{
	fatelf_reader src;
	fatelf_elfinfo info;
	bool soname = false, pie = false;

	(void)pie;
	if (hdr->nrecords == 0 || fatelf_reader_seekable_fd(&src, fd) < 0 ||
	    fatelf_record_check_elf(&src, hdr->records[0].offset, &hdr->records[0], 0, &info, NULL) < 0 ||
	    info.type != 3)
		return false;
	if (!info.has_interp)
		return true;
	if (fatelf_elf_dyn_library(&src, hdr->records[0].offset, hdr->records[0].size, &soname, &pie,
				   NULL) < 0)
		return false;
	return soname;
}

/* Moves record rec of the staged fat file fd to its start, as a plain ELF:
 * the bytes only move towards the start, so one forward copy does it (a
 * clone or copy_file_range refuses the overlap, and copy_range copies by
 * hand, forwards). */
static int thin_staged(int fd, const fatelf_record *rec)
{
	int r = copy_range(fd, rec->offset, fd, 0, rec->size);

	if (r < 0)
		return r;
	return ftruncate(fd, (off_t)rec->size) < 0 ? -errno : 0;
}

/*
 * A file staged as a FatELF: no stock dynamic linker loads a fat shared
 * library, so policy compatible (which keeps several records only so that
 * each can be exec'd) thins one to the record the kernel would pick; any
 * other fat file that this machine cannot load as it is, a library kept
 * fat or an executable without the FatELF binfmt_misc handler, gets a
 * warning in the result. The ELF type is read from the staged file's
 * first record, which the reader has checked already.
 */
static int settle_fat(struct install *x, struct ient *ie, const fatelf_bundle_entry *be, int fd,
		      fatelf_diag *d)
{
	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	fatelf_header hdr;
	fatelf_reader src;
	fatelf_elfinfo info;
	ssize_t n;

	if (be->kind != FATELF_KIND_FATELF)
		return 0;
	n = pread(fd, table, FATELF_HEADER_SIZE, 0);
	if (n != FATELF_HEADER_SIZE || !fatelf_is_fatelf(table, (size_t)n))
		return 0; /* thinned to a plain ELF */
	n = pread(fd, table, FATELF_TABLE_SIZE(table[6]), 0);
	if (n < 0 || fatelf_header_decode(table, (size_t)n, &hdr, NULL) < 0 || hdr.nrecords == 0 ||
	    fatelf_reader_seekable_fd(&src, fd) < 0 ||
	    fatelf_record_check_elf(&src, hdr.records[0].offset, &hdr.records[0], 0, &info, NULL) < 0)
		return 0;

	if (eng_fat_is_shared_library(fd, &hdr)) {
		const engine_config *cfg = &x->e->cfg;
		int native;

		if (x->policy->policy != ENGINE_POLICY_COMPATIBLE ||
		    engine_policy_keep_fat((const char *const *)cfg->keep_fat, cfg->nkeep_fat, ie->path))
			return warn_add(x, ie->path, ENGINE_WARN_FAT_LIBRARY);
		native = fatelf_host_select(&x->e->host, &hdr, NULL);
		if (native < 0)
			return warn_add(x, ie->path, ENGINE_WARN_FAT_LIBRARY);
		for (unsigned k = 0; k < be->nrecords; k++) {
			int q;

			if (!fatelf_target_equal(&be->records[k].target, &hdr.records[native].target))
				continue;
			q = thin_staged(fd, &hdr.records[native]);
			if (q < 0)
				return path_fail(d, q, ie->path, "%s: cannot thin the staged library: %s",
						 ie->path, fatelf_strerror(q));
			ie->thinned = true;
			fatelf_keep_clear(&ie->keep);
			fatelf_keep_add(&ie->keep, k);
			ie->form = FATELF_FORM_ELF;
			ie->installed_size = hdr.records[native].size;
			if (x->hashing) {
				/* the digest of the fat form is not the file's any more */
				uint8_t unused[32];
				fatelf_sha256_final(x->h, unused);
				x->hashing = false;
			}
			return 0;
		}
		return warn_add(x, ie->path, ENGINE_WARN_FAT_LIBRARY);
	}
	if ((info.type == 2 || info.type == 3) && !x->o->fat_executables_run)
		return warn_add(x, ie->path, ENGINE_WARN_NO_BINFMT);
	return 0;
}

static int inst_end(void *ctx, const fatelf_bundle_entry *be, int status, fatelf_diag *d)
{
	struct install *x = ctx;
	struct ient *ie;
	int q = 0;

	if (x->skipping) {
		x->skipping = false;
		return 0;
	}
	ie = ient_of(x, be);
	be = ent_of(x, ie);
	if (x->fd >= 0) {
		int fd = TAKE_FD(x->fd);
		uint8_t md[32];

		if (status == 0)
			status = q = settle_fat(x, ie, be, fd, d);
		if (x->hashing)
			fatelf_sha256_final(x->h, md);
		else if (ie->thinned)
			memcpy(md, kept_record_sha(be, &ie->keep), sizeof(md));
		else
			memcpy(md, be->sha256, sizeof(md));
		x->hashing = false;
		if (status == 0) {
			struct stat st;

			/* to tell the file after its rename (by_package rows) */
			if (fstat(fd, &st) == 0) {
				ie->staged_ino = (uint64_t)st.st_ino;
				ie->staged_size = (uint64_t)st.st_size;
				ie->staged_mtime_ns = ns_of(&st.st_mtim);
			}
			/* eng_tx_stage_close starts a large file's write-back (cfg.durable) */
			q = eng_tx_stage_close(&x->tx, (size_t)ie->op, fd, ie->installed_size, d);
			fatelf_hex(md, sizeof(md), ie->sha);
			ie->staged = q == 0;
		} else {
			close(fd);
		}
		x->cur = NULL;
	} else if (ie->unchanged) {
		x->cur = NULL;
		if (status == 0)
			eng_tx_failpoint(&x->tx, "kept");
	}
	if (status < 0 || q < 0)
		return q;
	x->entries_done++;
	if (progress(x, "staging", ie->path) < 0)
		return fatelf_diag_set(d, -ECANCELED, -1, "cancelled");
	return 0;
}

/* ------------------------------------------------------------ commit */

static store_file_kind file_kind(int kind)
{
	switch (kind) {
	case FATELF_KIND_ELF:
		return STORE_KIND_ELF;
	case FATELF_KIND_FATELF:
		return STORE_KIND_FATELF;
	}
	return STORE_KIND_DATA;
}

/* row_op: a new row, or the old version's rewritten in place. */
static int add_file_row(struct install *x, int64_t id, const fatelf_bundle_entry *be,
			const struct ient *ie, int row_op, fatelf_diag *d)
{
	char shipped[65];
	store_file f = {
		.path = ie->path,
		.package_id = id,
		.mode = be->mode & 07777,
		.size = be->size,
		.config = be->config,
	};
	int q;

	if (be->type == FATELF_ENTRY_SYMLINK) {
		f.type = STORE_FILE_SYMLINK;
		f.link_target = be->link_target;
		f.kind = STORE_KIND_DATA;
		f.installed_form = STORE_FORM_AS_SHIPPED;
		if (row_op == ROW_REPLACE_RECORDS && (q = store_records_delete(x->e->st, ie->path, d)) < 0)
			return q;
		return row_op == ROW_ADD ? store_file_add(x->e->st, &f, d) :
					   store_file_replace(x->e->st, &f, d);
	}
	fatelf_hex(be->sha256, sizeof(be->sha256), shipped);
	f.type = STORE_FILE_REGULAR;
	f.sha256 = shipped;
	f.kind = file_kind(be->kind);
	f.installed_form = ie->thinned ? STORE_FORM_THINNED : STORE_FORM_AS_SHIPPED;
	f.installed_size = ie->installed_size;
	f.installed_sha256 = ie->sha;
	if (ie->keep_admin) {
		/* The row describes what the engine installed, which the admin's
		 * copy on disk differs from. */
		f.installed_form = STORE_FORM_AS_SHIPPED;
		f.installed_size = ie->rare->old_installed_size;
		f.installed_sha256 = ie->rare->old_installed_sha256;
	}
	else if (ie->staged && ie->staged_ino)
		/* as staged: its rename changes only its ctime, which the
		 * package's disk_settled_ns bounds (record_settled) */
		f.disk = (store_disk) {
			.known = true,
			.by_package = true,
			.size = ie->staged_size,
			.ino = ie->staged_ino,
			.mtime_ns = ie->staged_mtime_ns,
		};
	if (row_op == ROW_REPLACE_RECORDS && (q = store_records_delete(x->e->st, ie->path, d)) < 0)
		return q;
	q = row_op == ROW_ADD ? store_file_add(x->e->st, &f, d) : store_file_replace(x->e->st, &f, d);
	if (q < 0 || be->kind != FATELF_KIND_FATELF)
		return q;
	for (unsigned i = 0; i < be->nrecords; i++) {
		const fatelf_bundle_record *br = &be->records[i];
		char hex[65];
		store_record r = {
			.path = ie->path,
			.idx = i,
			.target = br->target,
			.offset = br->offset,
			.size = br->size,
			.sha256 = hex,
			.kept = !ie->thinned || ie->keep_admin || fatelf_keep_has(&ie->keep, i),
		};
		fatelf_hex(br->sha256, sizeof(br->sha256), hex);
		q = store_record_add(x->e->st, &r, d);
		if (q < 0)
			return q;
	}
	return 0;
}

static int inst_apply(engine *e, void *userdata, fatelf_diag *d)
{
	struct install *x = userdata;
	char policy[512];
	store_package p = {
		.name = x->name,
		.version = x->version,
		.summary = x->summary,
		.vendor = x->vendor,
		.signer_keyid = x->is_signed ? x->signer : NULL,
		.installed_at = (int64_t)time(NULL),
		.policy = policy,
		.license = x->license,
		.homepage = x->homepage,
		.targets = x->targets,
		.source_type = x->source ? (store_source)x->o->source_type : STORE_SOURCE_UNKNOWN,
		.source = x->source,
	};
	int64_t id;
	int q;

	q = engine_policy_spec_format(x->policy, policy, sizeof(policy));
	if (q < 0)
		return fatelf_diag_set(d, q, -1, "cannot record the policy");
	if (x->have_old) {
		id = x->old.id;
		q = store_package_update(e->st, id, &p, d);
		for (size_t i = 0; i < x->old_rows.n && q >= 0; i++) {
			q = store_file_delete(e->st, x->old_rows.v[i], d);
			if (q == -ENOENT)
				q = 0;
		}
		if (q >= 0)
			q = store_dirs_delete_package(e->st, id, d);
	} else {
		q = store_package_add(e->st, &p, &id, d);
	}
	if (q >= 0)
		q = store_depends_set(e->st, id, (const char *const *)x->dep_names.v,
				      (const char *const *)x->dep_constraints.v, x->dep_names.n, d);
	if (q >= 0 && !x->have_old && x->o->automatic)
		q = store_package_set_automatic(e->st, id, true, d);
	else if (q >= 0 && x->have_old && x->o->manual && !x->o->automatic)
		q = store_package_set_automatic(e->st, id, false, d);
	if (q < 0)
		return q;
	x->pkg_id = id;
	for (size_t i = 0; i < x->taken.n; i++) {
		q = store_file_delete(e->st, x->taken.v[i], d);
		if (q < 0 && q != -ENOENT)
			return q;
	}
	for (size_t i = 0; i < x->adopted.n; i++)
		if ((q = store_kept_delete(e->st, x->adopted.v[i], d)) < 0)
			return q;
	/* its directories are its own again, or not: a removal says anew */
	if ((q = store_kept_delete_package(e->st, x->name, true, d)) < 0)
		return q;
	for (size_t i = 0; i < x->norphans; i++) {
		x->orphans[i].package = x->name;
		x->orphans[i].version = x->old.version;
		if ((q = store_kept_add(e->st, &x->orphans[i], p.installed_at, d)) < 0)
			return q;
	}
	for (size_t i = 0; i < x->nents; i++) {
		const struct ient *ie = &x->ents[i];
		const fatelf_bundle_entry *be = ent_of(x, ie);

		if (be->type == FATELF_ENTRY_DIR)
			q = store_dir_add_mode(e->st, ie->path, id, ie->dir_mode, d);
		else if (ie->unchanged)
			/* its row is the new version's as it stands */
			q = ie->disk_fresh ? store_file_set_disk(e->st, ie->path, &ie->disk, d) : 0;
		else
			q = add_file_row(x, id, be, ie, x->row_op ? x->row_op[i] : ROW_ADD, d);
		if (q < 0)
			return prefix_path(d, q, ie->path);
	}
	/* Every row of the new version is in, the unchanged files' moved to
	 * it; the store has not committed. */
	eng_tx_failpoint(&x->tx, "rows-moved");
	return 0;
}

/* Bytes written and saved: planned for a dry run, as staged otherwise. */
static void totals(const struct install *x, uint64_t *ret_written, int64_t *ret_saved)
{
	uint64_t written = 0;
	int64_t saved = 0;

	for (size_t i = 0; i < x->nents; i++) {
		const fatelf_bundle_entry *be = &x->m->entries[i];
		if (be->type != FATELF_ENTRY_FILE)
			continue;
		if (!x->ents[i].unchanged)
			written += x->ents[i].installed_size;
		if (x->ents[i].thinned)
			saved += (int64_t)be->size - (int64_t)x->ents[i].installed_size;
	}
	*ret_written = written;
	*ret_saved = saved;
}

static int finish_result(struct install *x, engine_result *ret)
{
	engine_result r = {
		.txid = x->o->dry_run ? 0 : x->tx.id,
		.kind = x->kind,
		.files = x->files,
		.bytes_written = 0,
		.bytes_saved = 0,
		.files_unchanged = x->files_unchanged,
		.bytes_unchanged = x->bytes_unchanged,
		.dry_run = x->o->dry_run,
		.signature = x->is_signed ? "verified" : x->unverified[0] ? "unverified" : "none",
	};

	snprintf(r.signer, sizeof(r.signer), "%s", x->is_signed ? x->signer : x->unverified);
	r.bytes_written = x->written;
	r.bytes_saved = x->saved;
	r.package = strdup(x->name);
	r.new_version = strdup(x->version);
	r.old_version = x->have_old ? strdup(x->old.version) : NULL;
	r.config_kept = calloc(x->kept.n + 1, sizeof(char *));
	if (!r.package || !r.new_version || (x->have_old && !r.old_version) || !r.config_kept) {
		engine_result_done(&r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->kept.n; i++)
		r.config_kept[i] = TAKE_PTR(x->kept.v[i]);
	r.nconfig_kept = x->kept.n;
	r.change = store_tx_kind_to_text(x->change);
	r.taken = calloc(x->forced.n + 1, sizeof(*r.taken));
	r.emptied = calloc(x->emptied.n + 1, sizeof(char *));
	if (!r.taken || !r.emptied) {
		engine_result_done(&r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->forced.n; i++) {
		r.taken[i].path = TAKE_PTR(x->forced.v[i]);
		if (x->forced_from.v[i][0])
			r.taken[i].from = TAKE_PTR(x->forced_from.v[i]);
		if (x->forced_kept_by.v[i][0]) {
			r.taken[i].kept_by = TAKE_PTR(x->forced_kept_by.v[i]);
			r.taken[i].kept_version = TAKE_PTR(x->forced_kept_version.v[i]);
		}
		r.ntaken++;
	}
	for (size_t i = 0; i < x->emptied.n; i++)
		r.emptied[r.nemptied++] = TAKE_PTR(x->emptied.v[i]);
	r.warnings = TAKE_PTR(x->warnings);
	r.nwarnings = x->nwarnings;
	x->nwarnings = 0;
	*ret = r;
	return 0;
}

/*
 * After the commit and every rename: the time before which they all
 * happened, on the package row (disk_settled_ns), so that the files'
 * rows, written at the commit with what each staged file looked like,
 * tell the renamed files (store_disk.by_package): one row for the whole
 * transaction, however many files it wrote. It waits (one clock tick at
 * most) until the file system's clock has passed that time, so that any
 * later change of a file gets a later change time. Best effort: a package
 * whose time is not recorded has its files hashed by the next upgrade
 * instead, so the transaction is not synced.
 */
static void record_settled(struct install *x)
{
	engine *e = x->e;
	struct timespec t0, now = { 0 };

	if (x->pkg_id <= 0 || clock_gettime(CLOCK_REALTIME, &t0) < 0)
		return;
	for (int i = 0; i < 100; i++) {
		if (clock_gettime(CLOCK_REALTIME_COARSE, &now) < 0 || ns_of(&now) > ns_of(&t0))
			break;
		(void)nanosleep(&(struct timespec) { .tv_nsec = 1000000 }, NULL);
	}
	if (ns_of(&now) <= ns_of(&t0))
		return;
	/* A cache: a power cut that loses it costs the next upgrade a hash
	 * of each file, so its commit does not wait for the disk. */
	if (store_set_durable(e->st, false, NULL) < 0)
		return;
	if (store_begin(e->st, NULL) < 0) {
		(void)store_set_durable(e->st, true, NULL);
		return;
	}
	if (store_package_set_settled(e->st, x->pkg_id, ns_of(&t0), NULL) < 0 || store_commit(e->st, NULL) < 0)
		store_rollback(e->st, NULL);
	(void)store_set_durable(e->st, true, NULL);
}

/* A failure before the manifest named a package still gets a history row. */
static void record_failure(engine *e, const char *package, int code, const fatelf_diag *d)
{
	char text[sizeof(d->subject) + sizeof(d->msg) + 2];
	store_tx row = {
		.kind = STORE_TX_INSTALL,
		.package = package,
		.state = STORE_TX_PENDING,
		.started_at = (int64_t)time(NULL),
	};
	int64_t id;

	eng_diag_text(code, d, text, sizeof(text));
	if (store_tx_begin(e->st, &row, &id, NULL) < 0)
		return;
	(void)store_tx_finish(e->st, id, code == -ECANCELED ? STORE_TX_CANCELLED : STORE_TX_FAILED,
			      (int64_t)time(NULL), 0, 0, text, NULL);
}

static void install_free(struct install *x)
{
	/* first: the ops refer to the ents' paths and x->removes, x->rmdirs */
	eng_tx_done(&x->tx);
	for (size_t i = 0; i < x->nents; i++) {
		struct ient_rare *r = x->ents[i].rare;
		if (r) {
			free(r->op_path);
			free(r->old_installed_sha256);
			free(r);
		}
	}
	free(x->name);
	free(x->version);
	free(x->summary);
	free(x->vendor);
	free(x->license);
	free(x->homepage);
	free(x->targets);
	free(x->source);
	eng_parent_cache_clear(&x->preflight_dir);
	prestat_stop(x);
	strv_free(&x->taken);
	strv_free(&x->forced);
	strv_free(&x->forced_from);
	strv_free(&x->forced_kept_by);
	strv_free(&x->forced_kept_version);
	strv_free(&x->emptied);
	for (size_t i = 0; i < x->nwarnings; i++)
		free(x->warnings[i].path);
	free(x->warnings);
	strv_free(&x->removes);
	strv_free(&x->rmdirs);
	strv_free(&x->kept);
	strv_free(&x->adopted);
	orphans_free(x);
	strv_free(&x->dep_names);
	strv_free(&x->dep_constraints);
	strv_free(&x->old_rows);
	old_rows_free(x);
	free(x->row_op);
	if (x->have_old)
		store_package_done(&x->old);
	if (x->fd >= 0)
		close(x->fd);
	fatelf_sha256_free(x->h);
	free(x->ents);
	free(x->paths);
	free(x->view.entries);
	free(x->view_of);
	fatelf_manifest_free(x->kept_m);
}

/* Every path of the install into the ldconfig check (a failed ldconfig
 * does not undo an install that committed). */
static void install_ldconfig(struct install *x)
{
	size_t n = x->nents + x->removes.n, k = 0;
	const char **paths = calloc(n ? n : 1, sizeof(char *));

	if (!paths)
		return;
	for (size_t i = 0; i < x->nents; i++)
		paths[k++] = x->ents[i].path;
	for (size_t i = 0; i < x->removes.n; i++)
		paths[k++] = x->removes.v[i];
	(void)eng_ldconfig(x->e, paths, k, NULL);
	free(paths);
}

/* After the commit point: the settled time, the result, ldconfig. */
static int install_finish(struct install *x)
{
	int q;

	eng_tx_failpoint(&x->tx, "before-disk-record");
	record_settled(x);
	eng_tx_failpoint(&x->tx, "after-disk-record");
	q = finish_result(x, x->ret);
	if (q == 0)
		install_ldconfig(x);
	return q;
}

int engine_install(engine *e, const fatelf_reader *src, const engine_install_opts *o,
		   engine_result *ret, fatelf_diag *d)
{
	static const engine_install_opts no_opts;
	struct install *x = calloc(1, sizeof(*x));
	fatelf_bundle_read_opts ro = {
		.keys = e->keys,
		.nkeys = e->nkeys,
		.limits = e->cfg.limits,
	};
	fatelf_bundle_reader_ops ops = {
		.manifest = inst_manifest,
		.select = inst_select,
		.begin = inst_begin,
		.data = inst_data,
		.end = inst_end,
		.clone = inst_clone,
		.ctx = x,
	};
	fatelf_diag local;
	int q;

	if (!d)
		d = &local;
	fatelf_diag_clear(d);
	if (!x)
		return fatelf_diag_oom(d);
	*x = (struct install){ .e = e, .opts = o ? *o : no_opts, .fd = -1, .euid = geteuid(), .ret = ret };
	x->o = &x->opts;
	x->policy = x->o->policy ? x->o->policy : &e->cfg.policy;
	ro.require_signature = e->cfg.require_signature && !x->o->allow_unsigned;
	/* Where no signature is required, a key we do not trust is no
	 * signature; the result says that it was not verified. */
	ro.untrusted_keyid = x->unverified;
	/* The plan refers to the manifest's entries until the install is done. */
	ro.ret_manifest = &x->kept_m;
	x->h = fatelf_sha256_new();
	if (!x->h) {
		free(x);
		return fatelf_diag_oom(d);
	}

	q = x->o->drive ? x->o->drive(x->o->drive_ctx, &ro, &ops, d) : fatelf_bundle_read(src, &ro, &ops, d);
	store_read_end(e->st);  /* a preflight that failed */
	/* NULL unless the read succeeded */
	x->m = !x->kept_m ? NULL : x->view_of ? &x->view : x->kept_m;
	if (x->dry_done) {
		fatelf_diag_clear(d);
		q = finish_result(x, ret);
		goto out;
	}
	/* The row and the caller get the source's own reason, not the
	 * short archive it left behind. */
	if (q < 0 && x->o->source_failed)
		q = x->o->source_failed(x->o->source_ctx, q, d);
	/* A byte source says -ECANCELED when it was told to stop. */
	if (q < 0 && (x->cancelled || q == -ECANCELED)) {
		q = fatelf_diag_set(d, -ECANCELED, -1, "cancelled");
	} else if (q < 0 && x->werr < 0 && x->werr_ent) {
		q = path_fail(d, x->werr, x->werr_ent->path, "%s: cannot write the staged file: %s",
			      x->werr_ent->path, fatelf_strerror(x->werr));
	}
	if (q == 0 && progress(x, "committing", NULL) < 0)
		q = fatelf_diag_set(d, -ECANCELED, -1, "cancelled");
	if (q < 0) {
		if (x->fd >= 0)
			close(TAKE_FD(x->fd));
		if (x->tx_started)
			eng_tx_abort(&x->tx, q, d);
		else if (!x->o->dry_run)
			record_failure(e, x->name, q, d);
		/* The key that signed, not trusted, is named as data. */
		if (q == -FATELF_E_SIG_KEY) {
			snprintf(d->subject, sizeof(d->subject), "%s", x->unverified);
			FATELF_DIAG_FACT(d, key_id, x->unverified);
		}
		if (q == -ENGINE_E_CONFLICT)
			conflict_owner(e, d);
		goto out;
	}

	totals(x, &x->written, &x->saved);
	if (x->o->group) {
		/* staged: it commits with the rest of the group */
		q = group_park(x->o->group, x, d);
		if (q == 0)
			return 0;
		eng_tx_abort(&x->tx, q, d);
		goto out;
	}
	/* After the commit point a failed rename is returned, and finished by
	 * recovery at the next start. */
	q = eng_tx_commit(&x->tx, inst_apply, x, x->written, x->saved, d);
	if (q == 0)
		q = install_finish(x);
out:
	install_free(x);
	free(x);
	return q;
}

/* ------------------------------------------------------------ groups */

/* A path one install of the group writes, and the install's package. */
struct claim {
	char *path;
	const char *package;    /* the group's copy */
};

/* A package the group has seen: its version and dependencies. */
struct member {
	char *version;
	fatelf_depend *deps;
	size_t ndeps;
};

struct engine_group {
	engine *e;
	struct install **staged;        /* waiting for the commit, in order */
	size_t nstaged, staged_cap;
	char **names;                   /* every package the group has seen */
	size_t nnames, names_cap;
	struct member *members;         /* ... and each one's version and depends */
	size_t members_cap;
	struct claim *claims;
	size_t nclaims, claims_cap;
	hashset claimed;                /* claims by path */
};

engine_group *engine_group_new(engine *e)
{
	engine_group *g = calloc(1, sizeof(*g));

	if (g)
		g->e = e;
	return g;
}

static bool claim_is(size_t i, const void *path, const void *userdata)
{
	const engine_group *g = userdata;

	return strcmp(g->claims[i].path, path) == 0;
}

/* Claims path for package: the package that claimed it first, or NULL. */
static const char *claim(engine_group *g, const char *path, const char *package, int *ret_err)
{
	uint64_t h = hashset_hash_str(path);
	size_t i = hashset_find(&g->claimed, h, path, claim_is, g);
	char *copy;

	*ret_err = 0;
	if (i != HASHSET_NONE)
		return strcmp(g->claims[i].package, package) == 0 ? NULL : g->claims[i].package;
	if (GROW_ARRAY(g->claims, g->claims_cap, g->nclaims + 1) < 0 || !(copy = strdup(path))) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	if ((*ret_err = hashset_add(&g->claimed, h, g->nclaims)) < 0) {
		free(copy);
		return NULL;
	}
	g->claims[g->nclaims++] = (struct claim){ .path = copy, .package = package };
	return NULL;
}

/*
 * At the end of x's preflight: x's package is not already in the group,
 * and no file or symlink x installs or removes is one another install of
 * the group installs or removes (directories are shared). The store does
 * not know the others' new files before their common commit, so without
 * this two packages could both write one path.
 */
static int group_claim(engine_group *g, const struct install *x, fatelf_diag *d)
{
	struct member *mb;
	const char *pkg;
	int err;

	for (size_t i = 0; i < g->nnames; i++)
		if (strcmp(g->names[i], x->name) == 0) {
			fatelf_diag_set(d, -ENGINE_E_CONFLICT, -1,
					"%s is named twice in one transaction", x->name);
			FATELF_DIAG_FACT(d, package, x->name);
			return -ENGINE_E_CONFLICT;
		}
	if (GROW_ARRAY(g->names, g->names_cap, g->nnames + 1) < 0 ||
	    GROW_ARRAY(g->members, g->members_cap, g->nnames + 1) < 0 ||
	    !(g->names[g->nnames] = strdup(x->name)))
		return fatelf_diag_oom(d);
	mb = &g->members[g->nnames];
	memset(mb, 0, sizeof(*mb));
	pkg = g->names[g->nnames++];
	mb->version = strdup(x->version);
	mb->deps = calloc(x->m->ndepends ? x->m->ndepends : 1, sizeof(*mb->deps));
	if (!mb->version || !mb->deps)
		return fatelf_diag_oom(d);
	for (size_t i = 0; i < x->m->ndepends; i++) {
		const fatelf_depend *dep = &x->m->depends[i];

		mb->deps[i].op = dep->op;
		mb->deps[i].name = strdup(dep->name);
		mb->deps[i].version = dep->version ? strdup(dep->version) : NULL;
		mb->ndeps++;
		if (!mb->deps[i].name || (dep->version && !mb->deps[i].version))
			return fatelf_diag_oom(d);
	}
	for (size_t i = 0; i < x->nents + x->removes.n; i++) {
		const char *path, *other;

		if (i < x->nents) {
			if (x->m->entries[i].type == FATELF_ENTRY_DIR)
				continue;
			path = x->ents[i].path;
		} else {
			path = x->removes.v[i - x->nents];
		}
		other = claim(g, path, pkg, &err);
		if (err < 0)
			return fatelf_diag_oom(d);
		if (other) {
			path_fail(d, -ENGINE_E_CONFLICT, path, "%s: both %s and %s, in one transaction, write it",
				  path, other, pkg);
			FATELF_DIAG_FACT(d, owner, other);
			return -ENGINE_E_CONFLICT;
		}
	}
	return 0;
}

static int group_park(engine_group *g, struct install *x, fatelf_diag *d)
{
	if (GROW_ARRAY(g->staged, g->staged_cap, g->nstaged + 1) < 0)
		return fatelf_diag_oom(d);
	g->staged[g->nstaged++] = x;
	return 0;
}

static int group_apply(engine *e, void *userdata, fatelf_diag *d)
{
	struct install *x = userdata;
	int q = inst_apply(e, x, d);

	/* which package's rows failed */
	return q < 0 ? eng_diag_name(d, q, x->name) : q;
}

static void group_release(engine_group *g)
{
	for (size_t i = 0; i < g->nstaged; i++) {
		install_free(g->staged[i]);
		free(g->staged[i]);
	}
	g->nstaged = 0;
}

/*
 * Each of deps (package's) is met: by the group's member of its name,
 * at that member's version, else by the installed package. The failure
 * names package, the dependency and its constraint.
 */
static int depends_check(engine *e, engine_group *g, const char *package, const fatelf_depend *deps,
			 size_t ndeps, fatelf_diag *d)
{
	for (size_t i = 0; i < ndeps; i++) {
		const fatelf_depend *dep = &deps[i];
		store_package p = { 0 };
		char have[FATELF_DIAG_NAME_MAX] = "";
		bool found = false, ok;
		int q;

		for (size_t k = 0; g && k < g->nnames; k++)
			if (strcmp(g->names[k], dep->name) == 0) {
				snprintf(have, sizeof(have), "%s", g->members[k].version);
				found = true;
			}
		if (!found) {
			q = store_package_get(e->st, dep->name, &p, d);
			if (q < 0)
				return q;
			if (q > 0) {
				snprintf(have, sizeof(have), "%s", p.version);
				found = true;
				store_package_done(&p);
			}
		}
		ok = found && fatelf_depend_satisfied_by(dep, have);
		if (ok)
			continue;
		char constraint[FATELF_DIAG_NAME_MAX] = "";
		if (dep->op != FATELF_DEP_ANY && dep->version)
			snprintf(constraint, sizeof(constraint), "%s %s", fatelf_depend_op_text(dep->op),
				 dep->version);
		if (found)
			q = fatelf_diag_set(d, -ENGINE_E_DEPENDENCY_MISSING, -1,
					    "%s depends on %s (%s), and %s %s is not that version", package,
					    dep->name, constraint, dep->name, have);
		else
			q = fatelf_diag_set(d, -ENGINE_E_DEPENDENCY_MISSING, -1,
					    "%s depends on %s%s%s%s, which is neither installed nor in the transaction",
					    package, dep->name, constraint[0] ? " (" : "", constraint,
					    constraint[0] ? ")" : "");
		fatelf_diag_names(d, package);
		FATELF_DIAG_FACT(d, package, package);
		FATELF_DIAG_FACT(d, dependency, dep->name);
		FATELF_DIAG_FACT(d, constraint, constraint);
		FATELF_DIAG_FACT(d, installed, have);
		return q;
	}
	return 0;
}

/*
 * package at version breaks no installed package that depends on it and
 * stays as it is (a member of g brings its own version, which its own
 * depends_check checks): DependencyBroken naming the ones it would break.
 */
static int breaks_check(engine *e, engine_group *g, const char *package, const char *version, fatelf_diag *d)
{
	char **names = NULL, **constraints = NULL, list[FATELF_DIAG_NAME_MAX * 2] = "", shown[256] = "";
	size_t n = 0, len = 0, nbroken = 0;
	int q = store_dependents_constraints(e->st, package, &names, &constraints, &n, d);

	if (q < 0)
		return q;
	for (size_t i = 0; i < n && q == 0; i++) {
		char text[FATELF_DIAG_NAME_MAX * 2], why[128];
		fatelf_depend dep = { 0 };
		bool member = false;

		for (size_t k = 0; g && k < g->nnames; k++)
			member |= strcmp(g->names[k], names[i]) == 0;
		if (member || strcmp(names[i], package) == 0 || !constraints[i][0])
			continue;
		snprintf(text, sizeof(text), "%s (%s)", package, constraints[i]);
		if (fatelf_depend_parse(text, strlen(text), &dep, why, sizeof(why)) < 0)
			continue;       /* written by a commit of ours: parses */
		if (!fatelf_depend_satisfied_by(&dep, version)) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s", nbroken ? "," : "", names[i]);

			if (w > 0 && (size_t)w < sizeof(list) - len)
				len += (size_t)w;
			if (!nbroken)
				snprintf(shown, sizeof(shown), "%s, which depends on %s (%s)", names[i], package,
					 constraints[i]);
			nbroken++;
		}
		fatelf_depend_clear(&dep);
	}
	store_holds_free(names, n);
	store_holds_free(constraints, n);
	if (nbroken == 0)
		return 0;
	q = fatelf_diag_set(d, -ENGINE_E_DEPENDENCY_BROKEN, -1, "%s %s would break %s%s", package, version, shown,
			    nbroken > 1 ? ", and more" : "");
	fatelf_diag_names(d, package);
	FATELF_DIAG_FACT(d, package, package);
	FATELF_DIAG_FACT(d, dependents, list);
	return q;
}

int engine_group_check(engine_group *g, fatelf_diag *d)
{
	for (size_t i = 0; i < g->nnames; i++) {
		int q = depends_check(g->e, g, g->names[i], g->members[i].deps, g->members[i].ndeps, d);

		if (q == 0)
			q = breaks_check(g->e, g, g->names[i], g->members[i].version, d);
		if (q < 0)
			return q;
	}
	return 0;
}

int engine_group_commit(engine_group *g, fatelf_diag *d)
{
	size_t n = g->nstaged;
	eng_tx **t = calloc(n ? n : 1, sizeof(*t));
	void **ud = calloc(n ? n : 1, sizeof(*ud));
	uint64_t *written = calloc(n ? n : 1, sizeof(*written));
	int64_t *saved = calloc(n ? n : 1, sizeof(*saved));
	int q, k;

	if (!t || !ud || !written || !saved) {
		q = fatelf_diag_oom(d);
		engine_group_abort(g, q, d);
		goto out;
	}
	/* the members' dependencies, now that the group is complete */
	q = engine_group_check(g, d);
	if (q < 0) {
		engine_group_abort(g, q, d);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		t[i] = &g->staged[i]->tx;
		ud[i] = g->staged[i];
		written[i] = g->staged[i]->written;
		saved[i] = g->staged[i]->saved;
	}
	/* every one aborted on a failure before the commit point */
	q = eng_tx_commit_many(t, n, group_apply, ud, written, saved, d);
	if (q < 0 && !(n > 0 && t[0]->committed))
		goto out;
	for (size_t i = 0; i < n; i++) {
		k = install_finish(g->staged[i]);
		if (k < 0 && q == 0)
			q = fatelf_diag_oom(d);
	}
out:
	group_release(g);
	free(t);
	free(ud);
	free(written);
	free(saved);
	return q;
}

void engine_group_abort(engine_group *g, int code, const fatelf_diag *why)
{
	for (size_t i = g->nstaged; i-- > 0;)
		eng_tx_abort(&g->staged[i]->tx, code, why);
	group_release(g);
}

void engine_group_free(engine_group *g)
{
	fatelf_diag d = { 0 };

	if (!g)
		return;
	if (g->nstaged > 0) {
		fatelf_diag_set(&d, -ECANCELED, -1, "cancelled");
		engine_group_abort(g, -ECANCELED, &d);
	}
	for (size_t i = 0; i < g->nclaims; i++)
		free(g->claims[i].path);
	free(g->claims);
	hashset_done(&g->claimed);
	for (size_t i = 0; i < g->nnames; i++) {
		free(g->names[i]);
		free(g->members[i].version);
		for (size_t k = 0; k < g->members[i].ndeps; k++)
			fatelf_depend_clear(&g->members[i].deps[k]);
		free(g->members[i].deps);
	}
	free(g->names);
	free(g->members);
	free(g->staged);
	free(g);
}
