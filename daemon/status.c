/*
 * Status: the daemon's settings, the store's totals (recomputed once per
 * change of the store), the running job and its progress, and the queue;
 * with prometheus, the metrics too (daemon/metrics.c).
 */
#include <stdio.h>

#include "results.h"
#include "macro.h"
#include "methods.h"
#include "metrics.h"
#include "reply.h"
#include "worker.h"

/* The held packages' names: []string. */
static json_object *json_holds(store *st)
{
	json_object *a = json_object_new_array();
	char **names = NULL;
	size_t n = 0;

	if (a && store_holds(st, &names, &n, NULL) >= 0)
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, json_object_new_string(names[i]));
	store_holds_free(names, n);
	return a;
}

void method_status(conn *c, const vl_call *call, union method_params *p)
{
	server *s = c->srv;
	_cleanup_json_ json_object *o = json_object_new_object();
	job_info ji;
	store_usage u = { 0 };
	uint64_t npkg = 0;
	fatelf_diag d = { 0 };
	char policy[4096];
	int r;

	if (!o)
		return;
	r = server_usage(s, &npkg, &u, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	if (p->status.prometheus) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		r = metrics_render(s, &text, &len, &d);
		if (r < 0) {
			reply_failed(c, r, d.msg);
			return;
		}
		json_set_str(o, "metrics", text);
	}
	if (engine_policy_spec_format(&s->cfg.policy, policy, sizeof(policy)) < 0)
		snprintf(policy, sizeof(policy), "%s", engine_policy_name(s->cfg.policy.policy));
	json_set_str(o, "version", PACKAGE_VERSION);
	json_set_int(o, "uptime", (int64_t)((now_usec() - s->started_usec) / 1000000u));
	json_set_str(o, "socket", s->socket_path);
	json_set_str(o, "root", s->cfg.root);
	json_set_str(o, "database", s->db_path);
	json_set(o, "host_targets", host_targets(engine_host(s->ro)));
	json_set_str(o, "policy", policy);
	json_set_int(o, "packages", (int64_t)npkg);
	json_set_int(o, "files", (int64_t)u.files);
	json_set_int(o, "fat_files", (int64_t)u.fat_files);
	json_set_int(o, "fat_files_fat", (int64_t)u.fat_files_fat);
	json_set_int(o, "bytes_on_disk", (int64_t)u.installed_size);
	json_set_int(o, "bytes_saved", u.bytes_saved);
	json_set(o, "held", json_holds(method_store(c)));
	if (worker_running(s->worker, &ji)) {
		store_tx t = { 0 };
		int64_t id = worker_pending_txid(s);

		/* The history row the transaction opened, when it has one
		 * already; else what the worker knows. */
		if (id && store_tx_get(method_store(c), id, &t, NULL) > 0) {
			json_set(o, "running", json_tx(&t));
			store_tx_done(&t);
		} else {
			json_object *run;

			t = (store_tx){ .package = ji.package[0] ? ji.package : NULL,
					.state = STORE_TX_PENDING, .started_at = ji.started_at };
			run = json_tx(&t);
			/* The job's kind: a verify has no history row kind. */
			if (run)
				json_set_str(run, "kind", ji.kind);
			json_set(o, "running", run);
		}
		json_set(o, "progress", json_progress(&ji.progress));
	} else {
		json_set(o, "running", NULL);
		json_set(o, "progress", NULL);
	}
	json_set(o, "jobs", worker_jobs(s->worker));
	reply(c, o);
}
