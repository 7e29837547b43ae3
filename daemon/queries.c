/*
 * The read methods about packages and files: List, Info, Files, Owner,
 * History and GetPolicy. Each answers inline on the main thread from the
 * read-only store with a few indexed queries. Called with "more", List
 * and Files answer in chunks of REPLY_CHUNK entries: Files reads each
 * chunk's rows from the store when the peer has taken the one before, so
 * neither side holds more than a chunk or two of a long package.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "methods.h"
#include "reply.h"
#include "results.h"

#define E(name) "io.fatelf.Manager." name

/* o's config_files: the packages no longer installed that left config
 * files behind (dpkg's "config-files" state); omitted when none did. */
static int list_config_files(conn *c, json_object *o)
{
	store_kept_package *v = NULL;
	json_object *a;
	fatelf_diag d = { 0 };
	size_t n = 0;
	int r = store_kept_packages(method_store(c), &v, &n, &d);

	if (r < 0) {
		reply_failed(c, r, d.msg);
		return r;
	}
	if (n == 0)
		return 0;
	a = json_config_files(v, n);
	store_kept_packages_free(v, n);
	json_set(o, "config_files", a);
	return 0;
}

void method_list(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	store_package *pkgs = NULL;
	size_t n = 0;
	fatelf_diag d = { 0 };
	int r;

	if (!o || !a) {
		json_putp(&a);
		return;
	}
	json_set(o, "packages", a);
	r = store_package_list(method_store(c), &pkgs, &n, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_package(method_store(c), &pkgs[i]);

		if (!x) {
			store_packages_free(pkgs, n);
			return;
		}
		json_object_array_add(a, x);
	}
	store_packages_free(pkgs, n);
	if (list_config_files(c, o) < 0)
		return;
	if (call->flags & VL_CALL_MORE)
		reply_array_stream(c, json_object_get(o), "packages");
	else
		reply(c, o);
}

void method_info(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	store_package pk = { 0 };
	fatelf_diag d = { 0 };
	int r;

	if (!o)
		return;
	r = store_package_get(method_store(c), p->package.package, &pk, &d);
	if (r == 0) {
		reply_package_not_found(c, p->package.package);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	json_set(o, "package", json_package(method_store(c), &pk));
	store_package_done(&pk);
	reply(c, o);
}

/* The directories of package by path, those after after, at most limit
 * (SIZE_MAX: all). */
static int dirs_of(store *st, const char *package, const char *after, size_t limit, store_dir **ret,
		   size_t *ret_n, fatelf_diag *d)
{
	store_package pk = { 0 };
	int r = store_package_get(st, package, &pk, d);

	if (r <= 0)
		return r < 0 ? r : -ENOENT;     /* the callers' "not installed" */
	r = store_dirs_page(st, pk.id, after, limit, ret, ret_n, d);
	store_package_done(&pk);
	return r;
}

/* Files with more: a page of the store per reply, after the last path sent. */
struct files_stream {
	conn_stream st;
	char *package;
	char *after;            /* the last path sent; NULL before the first reply */
	bool dirs;              /* the package's directories too */
};

static int files_stream_next(conn *c, conn_stream *st)
{
	struct files_stream *x = (struct files_stream *)st;
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	store_file *files = NULL;
	store_dir *dirs = NULL;
	size_t n = 0, nd = 0;
	fatelf_diag d = { 0 };
	int r;

	if (!o || !a) {
		json_putp(&a);
		reply_failed(c, -ENOMEM, NULL);
		return 0;
	}
	json_set(o, "files", a);
	/* One more than a chunk says whether another reply follows. */
	r = store_files_page(method_store(c), x->package, x->after, REPLY_CHUNK + 1, &files, &n, &d);
	if (r >= 0 && x->dirs)
		r = dirs_of(method_store(c), x->package, x->after, REPLY_CHUNK + 1, &dirs, &nd, &d);
	if (r == -ENOENT) {
		/* Removed since the first reply: an error in either case. */
		store_files_free(files, n);
		reply_package_not_found(c, x->package);
		return 0;
	}
	if (r < 0) {
		store_files_free(files, n);
		reply_failed(c, r, d.msg);
		return 0;
	}
	bool more = n + nd > REPLY_CHUNK;
	const char *last = NULL;

	r = json_entries_add(method_store(c), a, x->package, files, n, dirs, nd, REPLY_CHUNK, &last);
	if (r >= 0 && last) {
		free(x->after);
		x->after = strdup(last);
		if (!x->after)
			r = -ENOMEM;
	}
	store_files_free(files, n);
	store_dirs_free(dirs, nd);
	if (r < 0) {
		reply_failed(c, r, NULL);
		return 0;
	}
	conn_reply(c, o, more);
	return more;
}

static void files_stream_free(conn_stream *st)
{
	struct files_stream *x = (struct files_stream *)st;

	free(x->package);
	free(x->after);
	free(x);
}

static void files_stream(conn *c, const char *package, bool dirs)
{
	struct files_stream *x = calloc(1, sizeof(*x));

	if (!x || !(x->package = strdup(package))) {
		free(x);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	x->dirs = dirs;
	x->st = (conn_stream) { .next = files_stream_next, .free = files_stream_free };
	conn_stream_start(c, &x->st);
}

void method_files(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	const char *package = p->files.package;
	store_file *files = NULL;
	store_dir *dirs = NULL;
	size_t n = 0, nd = 0;
	const char *last;
	fatelf_diag d = { 0 };
	int r;

	if (!o || !a) {
		json_putp(&a);
		return;
	}
	if ((call->flags & VL_CALL_MORE) && !c->oneway) {
		json_putp(&a);
		/* An unknown package is answered at once, as without more. */
		r = store_files_page(method_store(c), package, NULL, 1, &files, &n, &d);
		store_files_free(files, n);
		if (r == -ENOENT)
			reply_package_not_found(c, package);
		else if (r < 0)
			reply_failed(c, r, d.msg);
		else
			files_stream(c, package, p->files.dirs);
		return;
	}
	json_set(o, "files", a);
	r = store_files_of(method_store(c), package, &files, &n, &d);
	if (r >= 0 && p->files.dirs)
		r = dirs_of(method_store(c), package, NULL, SIZE_MAX, &dirs, &nd, &d);
	if (r < 0)
		store_files_free(files, n);
	if (r == -ENOENT) {
		reply_package_not_found(c, package);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	r = json_entries_add(method_store(c), a, package, files, n, dirs, nd, SIZE_MAX, &last);
	store_files_free(files, n);
	store_dirs_free(dirs, nd);
	if (r < 0) {
		reply_failed(c, r, NULL);
		return;
	}
	reply(c, o);
}

static void owner_pattern(conn *c, const vl_call *call, const char *pattern)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	fatelf_diag d = { 0 };
	int r;

	if (!o || !a) {
		json_putp(&a);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	json_set(o, "files", a);
	r = json_owner_matches(method_store(c), pattern, a, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	if (json_object_array_length(a) == 0) {
		reply_error_str(c, E("PathNotOwned"), "path", pattern);
		return;
	}
	if (call->flags & VL_CALL_MORE)
		reply_array_stream(c, json_object_get(o), "files");
	else
		reply(c, o);
}

/* PathNotOwned; for a config file that a package left behind (kept at
 * its removal, store_kept), also which package and version. */
static void owner_none(conn *c, const char *path)
{
	json_object *e = json_object_new_object();
	store_kept k = { 0 };

	if (!e)
		return;
	json_set_str(e, "path", path);
	if (store_kept_get(method_store(c), path, &k, NULL) > 0 && !k.dir) {
		json_set_str(e, "kept_by", k.package);
		json_set_str(e, "kept_version", k.version);
	}
	store_kept_done(&k);
	reply_error(c, E("PathNotOwned"), e);
	json_object_put(e);
}

void method_owner(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	_cleanup_free_ char *package = NULL;
	store_file f = { 0 };
	fatelf_diag d = { 0 };
	int r;

	if (!o)
		return;
	/* Exactly one of path and pattern. */
	if (!p->owner.path == !p->owner.pattern) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", p->owner.path ? "pattern" : "path");
		return;
	}
	if (p->owner.pattern) {
		size_t n = strlen(p->owner.pattern);

		if (n == 0 || n > 4096) {
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "pattern");
			return;
		}
		owner_pattern(c, call, p->owner.pattern);
		return;
	}
	r = store_file_get(method_store(c), p->owner.path, &f, &package, &d);
	if (r == 0) {
		owner_none(c, p->owner.path);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	json_set_str(o, "package", package);
	json_set(o, "file", json_file(method_store(c), &f, package));
	store_file_done(&f);
	reply(c, o);
}

void method_history(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	store_tx *txs = NULL;
	size_t n = 0;
	fatelf_diag d = { 0 };
	int r;

	if (!o || !a) {
		json_putp(&a);
		return;
	}
	json_set(o, "transactions", a);
	r = store_tx_history(method_store(c), p->history.package, (uint64_t)p->history.limit,
			     &txs, &n, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_tx(&txs[i]);

		if (!x) {
			store_txs_free(txs, n);
			return;
		}
		json_object_array_add(a, x);
	}
	store_txs_free(txs, n);
	reply(c, o);
}

void method_get_policy(conn *c, const vl_call *call, union method_params *p)
{
	const engine_config *cfg = &c->srv->cfg;
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *pol = json_object_new_object();

	if (!o || !pol) {
		json_putp(&pol);
		return;
	}
	json_set_str(pol, "policy", engine_policy_name(cfg->policy.policy));
	json_set(pol, "targets", json_strv((const char *const *)cfg->policy.targets, cfg->policy.ntargets));
	json_set(pol, "keep_fat", json_strv((const char *const *)cfg->keep_fat, cfg->nkeep_fat));
	json_set_bool(pol, "require_signature", cfg->require_signature);
	json_set_str(pol, "trusted_keys", cfg->trusted_keys ? cfg->trusted_keys : "");
	json_set_str(pol, "admin_group", cfg->admin_group);
	json_set(o, "policy", pol);
	reply(c, o);
}
