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

#include "array.h"
#include "engine_private.h"
#include "macro.h"

struct rfile {
	char *path;
	bool config_kept;
};

struct remove {
	engine *e;
	store_package pkg;
	struct rfile *files;
	size_t nfiles, cap;
	store_dir *dirs;                /* deepest first */
	size_t ndirs;
	size_t nkept;
	int err;
};

static int add_file(struct remove *r, const store_file *f)
{
	struct rfile *rf;

	if (GROW_ARRAY(r->files, r->cap, r->nfiles + 1) < 0)
		return -ENOMEM;
	rf = &r->files[r->nfiles];
	rf->path = strdup(f->path);
	if (!rf->path)
		return -ENOMEM;
	rf->config_kept = false;
	r->nfiles++;
	/* A config file the admin changed is kept (and no longer owned). */
	if (f->config && f->installed_sha256 && f->type == STORE_FILE_REGULAR) {
		char hex[65];
		if (eng_hash_file(r->e, f->path, hex, NULL, NULL) == 0 &&
		    strcmp(hex, f->installed_sha256) != 0) {
			rf->config_kept = true;
			r->nkept++;
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

static int remove_apply(engine *e, void *userdata, fatelf_diag *d)
{
	struct remove *r = userdata;

	return store_package_remove(e->st, r->pkg.name, d);
}

static int fill_result(struct remove *r, int64_t txid, bool dry_run, engine_result *ret)
{
	engine_result res = {
		.txid = txid,
		.kind = store_tx_kind_to_text(STORE_TX_REMOVE),
		.files = r->nfiles - r->nkept,
		.dry_run = dry_run,
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

int engine_remove(engine *e, const char *package, const engine_remove_opts *o,
		  engine_result *ret, fatelf_diag *d)
{
	static const engine_remove_opts no_opts;
	struct remove r = { .e = e };
	eng_tx tx = { 0 };
	bool started = false;
	fatelf_diag local;
	uint64_t done = 0;
	int q;

	if (!d)
		d = &local;
	if (!o)
		o = &no_opts;
	fatelf_diag_clear(d);
	q = store_package_get(e->st, package, &r.pkg, d);
	if (q == -ENOENT) {
		snprintf(d->subject, sizeof(d->subject), "%s", package);
		FATELF_DIAG_FACT(d, package, package);
		return fatelf_diag_set(d, -ENGINE_E_NOT_INSTALLED, -1, "package %s is not installed",
				       package);
	}
	if (q < 0)
		return q;

	q = eng_progress(o->progress, o->userdata, "removing", 0, 0, 0, 0, NULL);
	if (q < 0) {
		fatelf_diag_set(d, q, -1, "cancelled");
		goto out;
	}
	/* By the package's index, in the order they were installed: no sort. */
	q = store_files_of_id(e->st, r.pkg.id, add_file_cb, &r, d);
	/* Progress and the kept configs come in path order, as listed. */
	if (q >= 0 && r.nfiles > 1)
		qsort(r.files, r.nfiles, sizeof(*r.files), rfile_cmp);
	if (q >= 0)
		q = store_dirs_of(e->st, r.pkg.id, &r.dirs, &r.ndirs, d);
	if (q < 0)
		goto out;

	if (o->dry_run) {
		q = fill_result(&r, 0, true, ret);
		goto out;
	}

	q = eng_tx_start(e, STORE_TX_REMOVE, r.pkg.name, r.pkg.version, NULL, &tx, d);
	if (q < 0)
		goto out;
	started = true;
	for (size_t i = 0; i < r.nfiles && q >= 0; i++)
		if (!r.files[i].config_kept)
			q = eng_tx_add(&tx, STORE_JOP_REMOVE, r.files[i].path, 0, d);
	/* Deepest first (the store's order); a directory that another package
	 * also owns stays. */
	for (size_t i = 0; i < r.ndirs && q >= 0; i++) {
		uint64_t others = 0;
		q = store_dir_other_owners(e->st, r.dirs[i].path, r.pkg.id, &others, d);
		if (q >= 0 && others == 0)
			q = eng_tx_add(&tx, STORE_JOP_RMDIR, r.dirs[i].path, 0, d);
	}
	if (q >= 0)
		q = eng_tx_journal(&tx, d);
	for (size_t i = 0; i < r.nfiles && q >= 0; i++) {
		done++;
		q = eng_progress(o->progress, o->userdata, "removing", 0, 0, done, r.nfiles,
				 r.files[i].path);
		if (q < 0)
			fatelf_diag_set(d, q, -1, "cancelled");
	}
	if (q < 0) {
		eng_tx_abort(&tx, q, d);
		goto out;
	}
	q = eng_tx_commit(&tx, remove_apply, &r, 0, 0, d);
	if (q < 0)
		goto out;
	q = fill_result(&r, tx.id, false, ret);
	if (q == 0) {
		const char **paths = calloc(r.nfiles ? r.nfiles : 1, sizeof(char *));
		if (paths) {
			for (size_t i = 0; i < r.nfiles; i++)
				paths[i] = r.files[i].path;
			/* The loader cache must forget a removed library; a failure
			 * here does not bring the package back. */
			(void)eng_ldconfig(e, paths, r.nfiles, NULL);
			free(paths);
		}
	}
out:
	if (started)
		eng_tx_done(&tx);
	for (size_t i = 0; i < r.nfiles; i++)
		free(r.files[i].path);
	free(r.files);
	store_dirs_free(r.dirs, r.ndirs);
	store_package_done(&r.pkg);
	return q;
}
