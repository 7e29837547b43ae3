/*
 * The repository methods of io.fatelf.Manager: RepoAdd, RepoRemove and
 * RepoList (the Repositories= directory, root's to change), Update (each
 * repository's index fetched and checked on a thread of its own, as
 * Verify runs) and Search (the indexes accepted last). An Install of a
 * package from a repository is the worker's (daemon/repoinstall.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hex.h"
#include "results.h"
#include "macro.h"
#include "methods.h"
#include "path.h"
#include "reply.h"
#include "repos.h"
#include "worker_private.h"

#define E(name) "io.fatelf.Manager." name

void method_repo_add(conn *c, const vl_call *call, union method_params *p)
{
	const engine_config *cfg = &c->srv->cfg;
	struct p_repo_add *in = &p->repo_add;
	_cleanup_json_ json_object *o = json_object_new_object();
	struct repo_conf r = { 0 };
	fatelf_diag d = { 0 };
	const char *why;
	int k;

	(void)call;
	if (c->uid != 0) {
		reply_error_str(c, E("RootRequired"), "parameter", "name");
		return;
	}
	if (!repo_name_valid(in->name)) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "name");
		return;
	}
	snprintf(r.name, sizeof(r.name), "%s", in->name);
	for (size_t i = 0; in->urls[i]; i++) {
		if ((why = repo_url_problem(in->urls[i])) || r.nurls == REPO_MIRRORS_MAX) {
			repo_conf_done(&r);
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "urls");
			return;
		}
		r.urls[r.nurls] = strdup(in->urls[i]);
		if (!r.urls[r.nurls]) {
			repo_conf_done(&r);
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
		r.nurls++;
	}
	if (r.nurls == 0 || fatelf_ms_pubkey_parse(in->key, strlen(in->key), &r.key, &d) < 0) {
		repo_conf_done(&r);
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", r.nurls == 0 ? "urls" : "key");
		return;
	}
	if (in->id) {
		if (!fatelf_repo_id_valid(in->id)) {
			repo_conf_done(&r);
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "id");
			return;
		}
		memcpy(r.id, in->id, sizeof(r.id));
	}
	k = repo_conf_write(cfg->repos_dir, &r, &d);
	if (k < 0) {
		repo_conf_done(&r);
		reply_failed(c, k, d.msg);
		return;
	}
	daemon_log(6, "repository %s added (%zu mirror%s)", r.name, r.nurls, r.nurls == 1 ? "" : "s");
	json_object_object_add(o, "repository", json_repository(&r, NULL));
	repo_conf_done(&r);
	reply(c, o);
}

void method_repo_remove(conn *c, const vl_call *call, union method_params *p)
{
	const engine_config *cfg = &c->srv->cfg;
	fatelf_diag d = { 0 };
	int k;

	(void)call;
	if (c->uid != 0) {
		reply_error_str(c, E("RootRequired"), "parameter", "name");
		return;
	}
	k = repo_conf_remove(cfg->repos_dir, cfg->state_dir, p->repo_name.name, &d);
	if (k == -ENOENT) {
		reply_error_str(c, E("RepositoryNotFound"), "repository", p->repo_name.name);
		return;
	}
	if (k < 0) {
		reply_failed(c, k, d.msg);
		return;
	}
	daemon_log(6, "repository %s removed", p->repo_name.name);
	{
		_cleanup_json_ json_object *o = json_object_new_object();

		reply(c, o);
	}
}

void method_repo_list(conn *c, const vl_call *call, union method_params *p)
{
	const engine_config *cfg = &c->srv->cfg;
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	struct repo_conf *confs = NULL;
	size_t n = 0;
	fatelf_diag d = { 0 };
	int k;

	(void)call;
	(void)p;
	k = repo_conf_list(cfg->repos_dir, &confs, &n, &d);
	if (k < 0) {
		json_putp(&a);
		reply_failed(c, k, d.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		fatelf_repo_index *ix = NULL;

		(void)repo_state_load(cfg->state_dir, confs[i].name, &ix, NULL);
		json_object_array_add(a, json_repository(&confs[i], ix));
		fatelf_repo_index_free(ix);
	}
	repo_conf_list_free(confs, n);
	json_object_object_add(o, "repositories", a);
	reply(c, o);
}

/* Search */

static json_object *json_available(const fatelf_repo_package *p, const fatelf_repo_version *v, const char *repo,
				   const char *installed)
{
	json_object *o = json_object_new_object(), *t = json_object_new_array();

	json_set_str(o, "name", p->name);
	json_set_str(o, "version", v->version);
	json_set_str(o, "summary", v->summary);
	json_set_str(o, "repository", repo);
	for (size_t i = 0; i < v->ntargets; i++) {
		char name[FATELF_TARGET_NAME_MAX];

		fatelf_target_format(&v->targets[i], name);
		json_object_array_add(t, json_object_new_string(name));
	}
	json_object_object_add(o, "targets", t);
	json_set_int(o, "size", (int64_t)v->size);
	if (installed)
		json_set_str(o, "installed", installed);
	return o;
}

void method_search(conn *c, const vl_call *call, union method_params *p)
{
	const engine_config *cfg = &c->srv->cfg;
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	struct repo_conf *confs = NULL;
	size_t n = 0;
	fatelf_diag d = { 0 };
	int k;

	(void)call;
	k = repo_conf_list(cfg->repos_dir, &confs, &n, &d);
	if (k < 0) {
		json_putp(&a);
		reply_failed(c, k, d.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		fatelf_repo_index *ix = NULL;

		/* An expired index offers nothing, and hides nothing: the
		 * whole search is refused, naming it. */
		k = repo_state_load_fresh(cfg->state_dir, confs[i].name, (int64_t)time(NULL), &ix, &d);
		if (k == -FATELF_E_REPO_EXPIRED) {
			json_putp(&a);
			repo_conf_list_free(confs, n);
			reply_failure_repo(c, k, &d, NULL, NULL);
			return;
		}
		if (k < 0)
			continue;
		for (size_t k2 = 0; k2 < ix->npackages; k2++) {
			const fatelf_repo_package *pk = &ix->packages[k2];
			store_package sp = { 0 };
			bool have = false;

			if (p->search.pattern && !strstr(pk->name, p->search.pattern))
				continue;
			have = store_package_get(method_store(c), pk->name, &sp, NULL) > 0;
			for (size_t v = pk->nversions; v-- > 0;) {
				const fatelf_repo_version *ver = &pk->versions[v];

				/* upgradable: the newest version, newer than the installed one */
				if (p->search.upgradable &&
				    (!have || v + 1 != pk->nversions ||
				     fatelf_pkg_version_compare(ver->version, sp.version) <= 0))
					continue;
				json_object_array_add(a, json_available(pk, ver, confs[i].name, have ? sp.version : NULL));
			}
			if (have)
				store_package_done(&sp);
		}
		fatelf_repo_index_free(ix);
	}
	repo_conf_list_free(confs, n);
	json_object_object_add(o, "packages", a);
	reply(c, o);
}

/* Update */

void method_update(conn *c, const vl_call *call, union method_params *p)
{
	job *j = job_new(JOB_UPDATE);

	if (!j) {
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	if (p->update.repository) {
		struct repo_conf rc;
		fatelf_diag d = { 0 };

		if (repo_conf_load(c->srv->cfg.repos_dir, p->update.repository, &rc, &d) < 0) {
			job_free(j);
			reply_error_str(c, E("RepositoryNotFound"), "repository", p->update.repository);
			return;
		}
		repo_conf_done(&rc);
		j->package = strdup(p->update.repository);
		if (!j->package) {
			job_free(j);
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
	}
	job_start_thread(c, call, j);
}
