/*
 * engine_remove: a package's files go, except config files the admin
 * changed, then the directories it owned that no other package owns and
 * that are empty by then. One transaction of the shared protocol: the
 * plan is journaled, the store rows go at the commit point, and the
 * unlinks and rmdirs follow (finished by recovery after a crash).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "array.h"
#include "engine_private.h"
#include "macro.h"
#include <limits.h>

struct rfile {
	char *path;
	bool config_kept;
	/* a kept config: the bytes shipped and installed there, for its
	 * kept_configs row */
	char *sha256, *installed_sha256;
	uint64_t installed_size;
};

struct remove {
	engine *e;
	store_package pkg;
	struct rfile *files;
	size_t nfiles, cap;
	store_dir *dirs;                /* deepest first */
	size_t ndirs, dirs_cap;
	size_t nkept;
	char **sidecars;                /* purge: the PATH.fatelf-new files beside configs */
	size_t nsidecars, sidecars_cap;
	bool purge;
	bool leftovers_only;            /* purge of a package no longer installed */
	eng_tx tx;
	bool started;
};

static int add_sidecar(struct remove *r, const char *path, fatelf_diag *d);

static int add_file(struct remove *r, const store_file *f)
{
	struct rfile *rf;

	if (GROW_ARRAY(r->files, r->cap, r->nfiles + 1) < 0)
		return -ENOMEM;
	rf = &r->files[r->nfiles];
	*rf = (struct rfile){ .path = strdup(f->path) };
	if (!rf->path)
		return -ENOMEM;
	r->nfiles++;
	if (f->config && r->purge) {
		int q = add_sidecar(r, f->path, NULL);
		if (q < 0)
			return q;
	}
	/* A config file the admin changed is kept (and no longer owned),
	 * unless the removal purges. */
	if (f->config && !r->purge && f->installed_sha256 && f->type == STORE_FILE_REGULAR) {
		char hex[65];
		if (eng_hash_file(r->e, f->path, hex, NULL, NULL) == 0 &&
		    strcmp(hex, f->installed_sha256) != 0) {
			rf->config_kept = true;
			r->nkept++;
			rf->installed_sha256 = strdup(f->installed_sha256);
			rf->sha256 = f->sha256 ? strdup(f->sha256) : NULL;
			rf->installed_size = f->installed_size;
			if (!rf->installed_sha256 || (f->sha256 && !rf->sha256))
				return -ENOMEM;
		}
	}
	return 0;
}

static int add_file_cb(const store_file *f, void *userdata)
{
	struct remove *r = userdata;

	return add_file(r, f);
}

static int rfile_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rfile *)a)->path, ((const struct rfile *)b)->path);
}

/* A directory of the package that a kept file stays in, and that no
 * other package owns: a kept row of its own, for the purge. */
static int keep_dir(engine *e, const struct remove *r, const store_dir *dir, int64_t now, fatelf_diag *d)
{
	size_t len = strlen(dir->path);
	uint64_t others = 0;
	bool holds = false;
	int q;

	for (size_t i = 0; i < r->nfiles && !holds; i++)
		holds = r->files[i].config_kept && strncmp(r->files[i].path, dir->path, len) == 0 &&
			r->files[i].path[len] == '/';
	if (!holds)
		return 0;
	q = store_dir_other_owners(e->st, dir->path, r->pkg.id, &others, d);
	if (q < 0 || others > 0)
		return q;
	store_kept k = { .path = dir->path, .package = r->pkg.name, .version = r->pkg.version, .dir = true };
	return store_kept_add(e->st, &k, now, d);
}

/* At the commit point: the package's rows go, each config file kept gets
 * its kept_configs row (purge: the package's kept rows go too). */
static int remove_apply(engine *e, void *userdata, fatelf_diag *d)
{
	struct remove *r = userdata;
	int64_t now = (int64_t)time(NULL);
	int q = 0;

	if (!r->leftovers_only)
		q = store_package_remove(e->st, r->pkg.name, d);
	if (q >= 0 && r->purge)
		q = store_kept_delete_package(e->st, r->pkg.name, false, d);
	for (size_t i = 0; i < r->ndirs && q >= 0 && r->nkept > 0 && !r->leftovers_only; i++)
		q = keep_dir(e, r, &r->dirs[i], now, d);
	for (size_t i = 0; i < r->nfiles && q >= 0; i++) {
		const struct rfile *f = &r->files[i];
		store_kept k = {
			.path = f->path,
			.package = r->pkg.name,
			.version = r->pkg.version,
			.sha256 = f->sha256,
			.installed_sha256 = f->installed_sha256,
			.installed_size = f->installed_size,
		};

		if (f->config_kept)
			q = store_kept_add(e->st, &k, now, d);
	}
	return q;
}

static int fill_result(struct remove *r, int64_t txid, bool dry_run, engine_result *ret)
{
	engine_result res = {
		.txid = txid,
		.kind = store_tx_kind_to_text(STORE_TX_REMOVE),
		.files = r->nfiles - r->nkept + r->nsidecars, /* purge: PATH.fatelf-new too */
		.dry_run = dry_run,
		.purge = r->purge,
		.config_files_only = r->leftovers_only,
	};
	size_t k = 0;

	res.package = strdup(r->pkg.name);
	res.old_version = strdup(r->pkg.version);
	res.config_kept = calloc(r->nkept + 1, sizeof(char *));
	if (!res.package || !res.old_version || !res.config_kept) {
		engine_result_done(&res);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->nfiles; i++) {
		if (!r->files[i].config_kept)
			continue;
		res.config_kept[k] = strdup(r->files[i].path);
		if (!res.config_kept[k]) {
			engine_result_done(&res);
			return -ENOMEM;
		}
		res.nconfig_kept = ++k;
	}
	*ret = res;
	return 0;
}

/* ------------------------------------------------------------ planning */

/* The sidecar an upgrade left beside a kept config file (PATH.fatelf-new),
 * when it is a file on disk that no package owns: purge removes it too. */
static int add_sidecar(struct remove *r, const char *path, fatelf_diag *d)
{
	char side[PATH_MAX];
	_cleanup_free_ char *owner = NULL;
	struct stat st;
	int q;

	if ((size_t)snprintf(side, sizeof(side), "%s.fatelf-new", path) >= sizeof(side))
		return 0;
	q = eng_lstat(r->e, side, &st, NULL);
	if (q < 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return 0;
	q = store_file_owner(r->e->st, side, &owner, d);
	if (q < 0)
		return q;
	if (q > 0)      /* a package's own file: not a sidecar */
		return 0;
	if (GROW_ARRAY(r->sidecars, r->sidecars_cap, r->nsidecars + 1) < 0 ||
	    !(r->sidecars[r->nsidecars] = strdup(side)))
		return fatelf_diag_oom(d);
	r->nsidecars++;
	return 0;
}

static int not_installed(fatelf_diag *d, const char *package)
{
	snprintf(d->subject, sizeof(d->subject), "%s", package);
	FATELF_DIAG_FACT(d, package, package);
	return fatelf_diag_set(d, -ENGINE_E_NOT_INSTALLED, -1, "package %s is not installed", package);
}

/* Purge: the config files the package left behind earlier (at a removal,
 * or an upgrade that stopped shipping them) go too, each while it is on
 * disk and no package owns it; their rows go at the commit in any case. */
static int add_leftovers(struct remove *r, fatelf_diag *d)
{
	store_kept *v = NULL;
	size_t n = 0;
	int q = store_kept_of(r->e->st, r->pkg.name, &v, &n, d);

	/* its directories, deepest first (a descendant sorts after its
	 * parent), when it is no longer installed */
	for (size_t i = n; i-- > 0 && q >= 0 && r->leftovers_only;) {
		if (!v[i].dir)
			continue;
		if (GROW_ARRAY(r->dirs, r->dirs_cap, r->ndirs + 1) < 0)
			q = -ENOMEM;
		else if (!(r->dirs[r->ndirs] = (store_dir){ .path = strdup(v[i].path), .mode = -1 }).path)
			q = -ENOMEM;
		else
			r->ndirs++;
	}
	for (size_t i = 0; i < n && q >= 0; i++) {
		_cleanup_free_ char *owner = NULL;
		struct stat st;

		if (v[i].dir)
			continue;
		if (eng_lstat(r->e, v[i].path, &st, NULL) < 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
			continue;
		q = store_file_owner(r->e->st, v[i].path, &owner, d);
		if (q < 0)
			break;
		if (q > 0) {
			q = 0;
			continue;
		}
		if (GROW_ARRAY(r->files, r->cap, r->nfiles + 1) < 0)
			q = -ENOMEM;
		else if (!(r->files[r->nfiles] = (struct rfile){ .path = strdup(v[i].path) }).path)
			q = -ENOMEM;
		else
			r->nfiles++;
		if (q >= 0)
			q = add_sidecar(r, v[i].path, d);
	}
	store_kept_free(v, n);
	return q;
}

/* Purge of a package that is no longer installed: only what it left
 * behind, if it left anything (else it is not installed). */
static int plan_leftovers(struct remove *r, const char *package, fatelf_diag *d)
{
	store_kept *v = NULL;
	size_t n = 0;
	int q = store_kept_of(r->e->st, package, &v, &n, d);

	if (q < 0)
		return q;
	if (n == 0) {
		store_kept_free(v, n);
		return not_installed(d, package);
	}
	r->leftovers_only = true;
	r->pkg.name = strdup(package);
	r->pkg.version = strdup(v[0].version);
	store_kept_free(v, n);
	if (!r->pkg.name || !r->pkg.version)
		return fatelf_diag_oom(d);
	return add_leftovers(r, d);
}

/* What removing package takes: its files (the kept configs marked, or
 * planned too with purge), its directories. */
static int remove_plan(struct remove *r, const char *package, const engine_remove_opts *o, fatelf_diag *d)
{
	int q = store_package_get(r->e->st, package, &r->pkg, d);

	r->purge = o->purge;
	if (q < 0)
		return q;
	if (q == 0 && o->purge)
		return plan_leftovers(r, package, d);
	if (q == 0)
		return not_installed(d, package);
	/* By the package's index, in the order they were installed: no sort. */
	q = store_files_of_id(r->e->st, r->pkg.id, add_file_cb, r, d);
	if (q >= 0 && r->purge)
		q = add_leftovers(r, d);
	/* Progress and the kept configs come in path order, as listed. */
	if (q >= 0 && r->nfiles > 1)
		qsort(r->files, r->nfiles, sizeof(*r->files), rfile_cmp);
	if (q >= 0)
		q = store_dirs_of(r->e->st, r->pkg.id, &r->dirs, &r->ndirs, d);
	return q;
}

/* Its transaction, started and journaled. */
static int remove_stage(struct remove *r, fatelf_diag *d)
{
	int q = eng_tx_start(r->e, STORE_TX_REMOVE, r->pkg.name, r->pkg.version, NULL, &r->tx, d);

	if (q < 0)
		return q;
	r->started = true;
	for (size_t i = 0; i < r->nfiles && q >= 0; i++)
		if (!r->files[i].config_kept)
			q = eng_tx_add(&r->tx, STORE_JOP_REMOVE, r->files[i].path, 0, d);
	for (size_t i = 0; i < r->nsidecars && q >= 0; i++)
		q = eng_tx_add(&r->tx, STORE_JOP_REMOVE, r->sidecars[i], 0, d);
	/* Deepest first (the store's order); a directory that another package
	 * also owns stays. */
	for (size_t i = 0; i < r->ndirs && q >= 0; i++) {
		uint64_t others = 0;
		q = store_dir_other_owners(r->e->st, r->dirs[i].path, r->pkg.id, &others, d);
		if (q >= 0 && others == 0)
			q = eng_tx_add(&r->tx, STORE_JOP_RMDIR, r->dirs[i].path, 0, d);
	}
	if (q >= 0)
		q = eng_tx_journal(&r->tx, d);
	return q;
}

static void remove_free(struct remove *r)
{
	if (r->started)
		eng_tx_done(&r->tx);
	for (size_t i = 0; i < r->nfiles; i++) {
		free(r->files[i].path);
		free(r->files[i].sha256);
		free(r->files[i].installed_sha256);
	}
	free(r->files);
	for (size_t i = 0; i < r->nsidecars; i++)
		free(r->sidecars[i]);
	free(r->sidecars);
	store_dirs_free(r->dirs, r->ndirs);
	store_package_done(&r->pkg);
}

static void remove_ldconfig(engine *e, struct remove *r)
{
	const char **paths = calloc(r->nfiles ? r->nfiles : 1, sizeof(char *));

	if (!paths)
		return;
	for (size_t i = 0; i < r->nfiles; i++)
		paths[i] = r->files[i].path;
	/* The loader cache must forget a removed library; a failure here does
	 * not bring the package back. */
	(void)eng_ldconfig(e, paths, r->nfiles, NULL);
	free(paths);
}

/*
 * No installed package that stays depends on one of packages: the first
 * package that one does is refused, naming each package that needs it
 * (the rest of the transaction's packages left out).
 */
static int check_dependents(engine *e, const struct remove *rs, const char *const *packages, size_t n,
			    fatelf_diag *d)
{
	for (size_t i = 0; i < n; i++) {
		char **v = NULL, list[sizeof(d->dependents)] = "";
		size_t nv = 0, len = 0, kept = 0;
		int q;

		/* what a package no longer installed left behind breaks nothing */
		if (rs[i].leftovers_only)
			continue;
		q = store_dependents(e->st, packages[i], &v, &nv, d);
		if (q < 0)
			return q;
		for (size_t k = 0; k < nv; k++) {
			bool going = false;

			for (size_t j = 0; j < n; j++)
				going = going || strcmp(v[k], packages[j]) == 0;
			if (going)
				continue;
			size_t l = strlen(v[k]);
			if (len + l + 2 < sizeof(list)) {
				if (len > 0)
					list[len++] = ',';
				memcpy(list + len, v[k], l + 1);
				len += l;
			}
			kept++;
		}
		store_holds_free(v, nv);
		if (kept == 0)
			continue;
		q = fatelf_diag_set(d, -ENGINE_E_DEPENDENCY_BROKEN, -1,
				    "%s is needed by %s (remove %s with it, or first)", packages[i], list,
				    kept == 1 ? "that one" : "those");
		fatelf_diag_names(d, packages[i]);
		FATELF_DIAG_FACT(d, package, packages[i]);
		FATELF_DIAG_FACT(d, dependents, list);
		return q;
	}
	return 0;
}

int engine_autoremove_list(engine *e, char ***ret, size_t *ret_n, fatelf_diag *d)
{
	char **v = NULL;
	size_t n = 0;
	bool changed = true;
	int q = store_packages_automatic(e->st, &v, &n, d);

	if (q < 0)
		return q;
	/* Drop, until none is, every candidate that a package which stays
	 * depends on. */
	while (changed && q >= 0) {
		changed = false;
		for (size_t i = 0; i < n && q >= 0; i++) {
			char **deps = NULL;
			size_t nd = 0;
			bool needed = false;

			q = store_dependents(e->st, v[i], &deps, &nd, d);
			for (size_t k = 0; q >= 0 && k < nd && !needed; k++) {
				bool candidate = false;

				for (size_t j = 0; j < n && !candidate; j++)
					candidate = strcmp(deps[k], v[j]) == 0;
				needed = !candidate;
			}
			store_holds_free(deps, nd);
			if (q >= 0 && needed) {
				free(v[i]);
				memmove(v + i, v + i + 1, (n - i - 1) * sizeof(*v));
				n--;
				i--;
				changed = true;
			}
		}
	}
	if (q < 0) {
		store_holds_free(v, n);
		return q;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int engine_remove(engine *e, const char *package, const engine_remove_opts *o,
		  engine_result *ret, fatelf_diag *d)
{
	return engine_remove_many(e, &package, 1, o, ret, d);
}

int engine_remove_many(engine *e, const char *const *packages, size_t n, const engine_remove_opts *o,
		       engine_result *rets, fatelf_diag *d)
{
	static const engine_remove_opts no_opts;
	struct remove *rs = NULL;
	eng_tx **txs = NULL;
	void **uds = NULL;
	uint64_t *written = NULL;
	int64_t *saved = NULL;
	fatelf_diag local;
	uint64_t done = 0, total = 0;
	size_t filled = 0;
	int q = 0;

	if (!d)
		d = &local;
	if (!o)
		o = &no_opts;
	fatelf_diag_clear(d);
	if (n == 0)
		return fatelf_diag_set(d, -EINVAL, -1, "no package to remove");
	rs = calloc(n, sizeof(*rs));
	txs = calloc(n, sizeof(*txs));
	uds = calloc(n, sizeof(*uds));
	written = calloc(n, sizeof(*written));
	saved = calloc(n, sizeof(*saved));
	if (!rs || !txs || !uds || !written || !saved) {
		q = fatelf_diag_oom(d);
		goto out;
	}
	/* Every package is found and planned before anything is touched: one
	 * that is not installed, or named twice, removes none. */
	for (size_t i = 0; i < n && q >= 0; i++) {
		for (size_t k = 0; k < i; k++)
			if (strcmp(packages[k], packages[i]) == 0) {
				q = fatelf_diag_set(d, -ENGINE_E_CONFLICT, -1,
						    "%s is named twice in one transaction", packages[i]);
				FATELF_DIAG_FACT(d, package, packages[i]);
				snprintf(d->subject, sizeof(d->subject), "%s", packages[i]);
			}
		rs[i].e = e;
		if (q >= 0)
			q = eng_progress(o->progress, o->userdata, packages[i], "removing", 0, 0, 0, 0, NULL);
		if (q == -ECANCELED)
			fatelf_diag_set(d, q, -1, "cancelled");
		if (q >= 0)
			q = remove_plan(&rs[i], packages[i], o, d);
		if (q >= 0)
			total += rs[i].nfiles;
	}
	if (q < 0)
		goto out;
	q = check_dependents(e, rs, packages, n, d);
	if (q < 0)
		goto out;
	if (o->dry_run) {
		for (size_t i = 0; i < n && q >= 0; i++)
			if ((q = fill_result(&rs[i], 0, true, &rets[i])) >= 0)
				filled++;
		goto out;
	}
	for (size_t i = 0; i < n && q >= 0; i++) {
		q = remove_stage(&rs[i], d);
		if (q < 0)
			eng_diag_name(d, q, rs[i].pkg.name);
	}
	for (size_t i = 0; i < n && q >= 0; i++)
		for (size_t k = 0; k < rs[i].nfiles && q >= 0; k++) {
			done++;
			q = eng_progress(o->progress, o->userdata, rs[i].pkg.name, "removing", 0, 0, done, total,
					 rs[i].files[k].path);
			if (q < 0)
				fatelf_diag_set(d, q, -1, "cancelled");
		}
	if (q < 0) {
		for (size_t i = n; i-- > 0;)
			if (rs[i].started)
				eng_tx_abort(&rs[i].tx, q, d);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		txs[i] = &rs[i].tx;
		uds[i] = &rs[i];
	}
	/* One commit point for all of them (every one aborted on a failure
	 * before it). */
	q = eng_tx_commit_many(txs, n, remove_apply, uds, written, saved, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < n && q >= 0; i++)
		if ((q = fill_result(&rs[i], rs[i].tx.id, false, &rets[i])) >= 0)
			filled++;
	for (size_t i = 0; i < n && q >= 0; i++)
		remove_ldconfig(e, &rs[i]);
out:
	if (q < 0)
		for (size_t i = 0; i < filled; i++)
			engine_result_done(&rets[i]);
	for (size_t i = 0; rs && i < n; i++)
		remove_free(&rs[i]);
	free(rs);
	free(txs);
	free(uds);
	free(written);
	free(saved);
	return q;
}
