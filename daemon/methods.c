/*
 * fatelfd's methods: one table of every method the daemon serves, with
 * the parameter dispatch table of each and whether it changes the system.
 * The table is checked against schema/io.fatelf.Manager.varlink (the file
 * embedded as fatelfd_interface_text) by `fatelfd --check-interface`.
 *
 * Order of checks for a call: the method exists (else MethodNotFound or
 * InterfaceNotFound), the caller may call it (mutating methods need uid 0
 * or the admin group, else PermissionDenied), the parameters pass the
 * dispatch table (else InvalidParameter naming the field), a caller other
 * than root sets no root-only field (else RootRequired naming it), then
 * the handler runs. Read methods answer inline from the read-only store: each
 * is a few indexed queries. Mutating methods become jobs for the worker;
 * Verify, which reads every file, runs on a thread of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errmap.h"
#include "fatelfd.h"
#include "macro.h"
#include "text.h"

#define E(name) "io.fatelf.Manager." name

/* ------------------------------------------------------------ JSON helpers */

static void json_set(json_object *o, const char *key, json_object *v)
{
	/* json-c takes v (NULL is JSON null); on ENOMEM the reply is short a
	 * field, which the client sees as a protocol error, not a crash. */
	if (json_object_object_add(o, key, v) < 0)
		json_object_put(v);
}

static void json_set_str(json_object *o, const char *key, const char *s)
{
	json_set(o, key, s ? json_object_new_string(s) : NULL);
}

static void json_set_int(json_object *o, const char *key, int64_t v)
{
	json_set(o, key, json_object_new_int64(v));
}

static void json_set_bool(json_object *o, const char *key, bool v)
{
	json_set(o, key, json_object_new_boolean(v));
}

static json_object *json_strv(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

json_object *json_progress(const engine_progress *p)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_str(o, "phase", p->phase ? p->phase : "");
	json_set_int(o, "bytes_done", (int64_t)p->bytes_done);
	json_set_int(o, "bytes_total", (int64_t)p->bytes_total);
	json_set_int(o, "entries_done", (int64_t)p->entries_done);
	json_set_int(o, "entries_total", (int64_t)p->entries_total);
	json_set_str(o, "path", p->path);
	return o;
}

json_object *json_result(const engine_result *r)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_int(o, "id", r->txid);
	json_set_str(o, "kind", r->kind ? r->kind : "");
	json_set_str(o, "package", r->package);
	json_set_str(o, "old_version", r->old_version);
	json_set_str(o, "new_version", r->new_version);
	json_set_int(o, "files", (int64_t)r->files);
	json_set_int(o, "bytes_written", (int64_t)r->bytes_written);
	json_set_int(o, "bytes_saved", r->bytes_saved);
	json_set_bool(o, "dry_run", r->dry_run);
	json_set(o, "config_kept", json_strv((const char *const *)r->config_kept, r->nconfig_kept));
	if (r->signature) {
		json_set_str(o, "signature", r->signature);
		json_set_str(o, "signer", r->signer[0] ? r->signer : NULL);
	}
	if (r->change)
		json_set_str(o, "change", r->change);
	if (r->taken || r->warnings) {
		json_object *taken = json_object_new_array(), *warnings = json_object_new_array();

		for (size_t i = 0; taken && i < r->ntaken; i++) {
			json_object *t = json_object_new_object();

			json_set_str(t, "path", r->taken[i].path);
			json_set_str(t, "from", r->taken[i].from);
			json_object_array_add(taken, t);
		}
		for (size_t i = 0; warnings && i < r->nwarnings; i++) {
			json_object *w = json_object_new_object();

			json_set_str(w, "path", r->warnings[i].path);
			json_set_str(w, "reason", r->warnings[i].reason);
			json_object_array_add(warnings, w);
		}
		json_set(o, "taken", taken);
		json_set(o, "emptied", json_strv((const char *const *)r->emptied, r->nemptied));
		json_set(o, "warnings", warnings);
	}
	return o;
}

static json_object *json_tx(const store_tx *t)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_int(o, "id", t->id);
	json_set_str(o, "kind", t->kind);
	json_set_str(o, "package", t->package);
	json_set_str(o, "old_version", t->old_version);
	json_set_str(o, "new_version", t->new_version);
	json_set_str(o, "state", t->state);
	json_set_int(o, "started_at", t->started_at);
	if (t->finished_at)
		json_set_int(o, "finished_at", t->finished_at);
	else
		json_set(o, "finished_at", NULL);
	json_set_int(o, "bytes_written", (int64_t)t->bytes_written);
	json_set_int(o, "bytes_saved", t->bytes_saved);
	json_set_str(o, "error", t->error);
	return o;
}

static int record_cb(const store_record *r, void *userdata)
{
	json_object *a = userdata, *o = json_object_new_object();

	if (!o)
		return -ENOMEM;
	json_set_int(o, "index", r->idx);
	json_set_str(o, "target", r->target);
	json_set_int(o, "offset", (int64_t)r->offset);
	json_set_int(o, "size", (int64_t)r->size);
	json_set_str(o, "sha256", r->sha256);
	json_set_bool(o, "kept", r->kept);
	json_object_array_add(a, o);
	return 0;
}

static json_object *json_file(store *st, const store_file *f, const char *package)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_str(o, "path", f->path);
	json_set_str(o, "package", package);
	json_set_str(o, "type", f->type);
	json_set_int(o, "mode", f->mode);
	json_set_int(o, "size", (int64_t)f->size);
	json_set_str(o, "sha256", f->sha256);
	json_set_str(o, "link_target", f->link_target);
	json_set_bool(o, "config", f->config);
	json_set_str(o, "kind", f->kind);
	json_set_str(o, "installed_form", f->installed_form);
	json_set_int(o, "installed_size", (int64_t)f->installed_size);
	json_set_str(o, "installed_sha256", f->installed_sha256);
	if (f->kind && strcmp(f->kind, "fatelf") == 0) {
		json_object *a = json_object_new_array();

		if (a && store_records_of(st, f->path, record_cb, a, NULL) < 0) {
			json_object_put(a);
			a = NULL;
		}
		json_set(o, "records", a);
	} else {
		json_set(o, "records", NULL);
	}
	return o;
}

/* ------------------------------------------------------------ replies */

/* Replies to the call being handled on c, unless it was oneway. */
static void reply(conn *c, json_object *params)
{
	if (!c->oneway)
		conn_reply(c, params, false);
}

static void reply_error(conn *c, const char *name, json_object *params)
{
	if (!c->oneway)
		conn_error(c, name, params);
}

static void reply_error_str(conn *c, const char *name, const char *key, const char *value)
{
	if (!c->oneway)
		conn_error_str(c, name, key, value);
}

static void reply_mapped(conn *c, const char *forced, int r, const fatelf_diag *d, const char *url);

/* Failed {code, message}: an error the interface has no name for. */
static void reply_failed(conn *c, int r, const char *message)
{
	fatelf_diag d;

	fatelf_diag_clear(&d);
	if (message)
		snprintf(d.msg, sizeof(d.msg), "%s", message);
	reply_mapped(c, "Failed", r, &d, NULL);
}

/* The host's targets, native first: "x86_64:64bits:le", "i386:32bits:le". */
struct host_names {
	char v[2 * FATELF_HOST_MAX][FATELF_TARGET_NAME_MAX];
	const char *p[2 * FATELF_HOST_MAX];
	size_t n;
};

static void host_names(const fatelf_host *h, struct host_names *ret)
{
	unsigned nnative = MIN(h->nnative, (unsigned)FATELF_HOST_MAX);
	unsigned ncompat = MIN(h->ncompat, (unsigned)FATELF_HOST_MAX);

	ret->n = 0;
	for (unsigned i = 0; i < nnative + ncompat; i++) {
		const fatelf_target *t = i < nnative ? &h->native[i] : &h->compat[i - nnative];

		fatelf_target_format_fields(t, FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE |
					    FATELF_WANT_BYTEORDER, ret->v[ret->n]);
		ret->p[ret->n] = ret->v[ret->n];
		ret->n++;
	}
}

static json_object *host_targets(const fatelf_host *h)
{
	struct host_names host;
	json_object *a = json_object_new_array();

	host_names(h, &host);
	for (size_t i = 0; a && i < host.n; i++)
		json_object_array_add(a, json_object_new_string(host.p[i]));
	return a;
}

/* The error of a failure and its parameters, through the one table; a
 * forced error name (Failed) skips the table's choice but not its
 * parameters. */
static void reply_mapped(conn *c, const char *forced, int r, const fatelf_diag *d, const char *url)
{
	server *s = c->srv;
	struct host_names host;
	const char *error = NULL;
	char name[VL_NAME_MAX + 1];
	_cleanup_json_ json_object *p = NULL;
	errmap_ctx ctx;

	if (c->oneway)
		return;
	host_names(engine_host(s->ro), &host);
	ctx = (errmap_ctx){
		.url = url,
		.root = s->cfg.root,
		.keys_dir = s->cfg.trusted_keys ? s->cfg.trusted_keys : "",
		.keys = (int64_t)s->nkeys,
		.host = host.p,
		.nhost = host.n,
	};
	p = forced ? errmap_params_of(forced, r, d, &ctx) : errmap_params(r, d, &ctx, &error);
	if (!p)
		return;
	if (forced)
		error = forced;
	snprintf(name, sizeof(name), "%s.%s", FATELFD_INTERFACE, error);
	reply_error(c, name, p);
}

void methods_reply_failure(conn *c, int r, const fatelf_diag *d, const char *url)
{
	reply_mapped(c, NULL, r, d, url);
}

/* ------------------------------------------------------------ authorization */

static bool caller_is_admin(const conn *c)
{
	const char *group = c->srv->cfg.admin_group;
	struct group gr, *grp = NULL;
	struct passwd pw, *pwp = NULL;
	char buf[16384];
	gid_t groups[256];
	int ngroups = (int)ARRAY_SIZE(groups);
	gid_t admin;

	if (c->uid == 0)
		return true;
	if (!group || !*group)
		return false;
	if (getgrnam_r(group, &gr, buf, sizeof(buf), &grp) != 0 || !grp)
		return false;
	admin = grp->gr_gid;
	if (c->gid == admin)
		return true;
	/* Supplementary groups: the peer's are not in SO_PEERCRED, so ask
	 * the group database about the uid's user. */
	if (getpwuid_r(c->uid, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return false;
	if (getgrouplist(pwp->pw_name, pwp->pw_gid, groups, &ngroups) < 0)
		ngroups = (int)ARRAY_SIZE(groups);
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == admin)
			return true;
	return false;
}

/* The parameters of each method: daemon/params.{h,c}. */


/* ------------------------------------------------------------ policy overrides */

/* Builds the policy of an Install or Thin override. Replies and returns
 * false when it is bad. */
static bool policy_from_params(conn *c, const char *policy, const char *const *targets,
			       engine_policy_spec *ret)
{
	char text[4096];
	size_t len;
	fatelf_diag d = { 0 };
	int r;

	if (targets && (!policy || strcmp(policy, "targets") == 0)) {
		if (!targets[0]) {
			reply_error_str(c, E("InvalidPolicy"), "message", "targets: the list is empty");
			return false;
		}
		len = (size_t)snprintf(text, sizeof(text), "targets:");
		for (size_t i = 0; targets[i]; i++) {
			if (strchr(targets[i], ',') || !*targets[i]) {
				reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "targets");
				return false;
			}
			len += (size_t)snprintf(text + MIN(len, sizeof(text)), sizeof(text) - MIN(len, sizeof(text)),
						"%s%s", i ? "," : "", targets[i]);
		}
		if (len >= sizeof(text)) {
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "targets");
			return false;
		}
	} else if (policy) {
		if (targets || strchr(policy, ':')) {
			reply_error_str(c, E("InvalidPolicy"), "message",
					"targets are given with policy \"targets\" only");
			return false;
		}
		snprintf(text, sizeof(text), "%s", policy);
	} else {
		return true;
	}
	r = engine_policy_spec_parse(text, ret, &d);
	if (r < 0) {
		reply_error_str(c, E("InvalidPolicy"), "message", d.msg[0] ? d.msg : fatelf_strerror(r));
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ org.varlink.service */

/* The standard description of org.varlink.service (the Varlink spec's
 * interface, which every service implements). */
static const char varlink_service_text[] =
	"# The Varlink Service Interface is provided by every varlink service. It\n"
	"# describes the service and the interfaces it implements.\n"
	"interface org.varlink.service\n"
	"\n"
	"# Get a list of all the interfaces a service provides and information\n"
	"# about the implementation.\n"
	"method GetInfo() -> (\n"
	"  vendor: string,\n"
	"  product: string,\n"
	"  version: string,\n"
	"  url: string,\n"
	"  interfaces: []string\n"
	")\n"
	"\n"
	"# Get the description of an interface that is implemented by this service.\n"
	"method GetInterfaceDescription(interface: string) -> (description: string)\n"
	"\n"
	"# The requested interface was not found.\n"
	"error InterfaceNotFound (interface: string)\n"
	"\n"
	"# The requested method was not found\n"
	"error MethodNotFound (method: string)\n"
	"\n"
	"# The interface defines the requested method, but the service does not\n"
	"# implement it.\n"
	"error MethodNotImplemented (method: string)\n"
	"\n"
	"# One of the passed parameters is invalid.\n"
	"error InvalidParameter (parameter: string)\n"
	"\n"
	"# Client is denied access\n"
	"error PermissionDenied ()\n"
	"\n"
	"# Method is expected to be called with 'more' set to true, but wasn't\n"
	"error ExpectedMore ()\n";

static void m_get_info(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	static const char *const ifaces[] = { "org.varlink.service", FATELFD_INTERFACE };

	if (!o)
		return;
	json_set_str(o, "vendor", "fatelf");
	json_set_str(o, "product", "fatelfd");
	json_set_str(o, "version", PACKAGE_VERSION);
	json_set_str(o, "url", FATELFD_URL);
	json_set(o, "interfaces", json_strv(ifaces, ARRAY_SIZE(ifaces)));
	reply(c, o);
}

static void m_get_interface_description(conn *c, const vl_call *call, union method_params *p)
{
	const char *name = p->interface.interface;
	const char *text;
	_cleanup_json_ json_object *o = NULL;

	if (strcmp(name, FATELFD_INTERFACE) == 0)
		text = fatelfd_interface_text;
	else if (strcmp(name, "org.varlink.service") == 0)
		text = varlink_service_text;
	else {
		reply_error_str(c, VL_ERROR_INTERFACE_NOT_FOUND, "interface", name);
		return;
	}
	o = json_object_new_object();
	if (!o)
		return;
	json_set_str(o, "description", text);
	reply(c, o);
}

/* ------------------------------------------------------------ read methods */

static store *ro_store(conn *c)
{
	return engine_store(c->srv->ro);
}

static void m_status(conn *c, const vl_call *call, union method_params *p)
{
	server *s = c->srv;
	_cleanup_json_ json_object *o = json_object_new_object();
	job_info ji;
	store_usage u = { 0 };
	uint64_t npkg = 0, gen = atomic_load(&s->store_gen);
	fatelf_diag d = { 0 };
	char policy[4096];
	int r;

	if (!o)
		return;
	if (!s->usage_valid || s->usage_gen != gen) {
		r = store_package_count(ro_store(c), &npkg, &d);
		if (r >= 0)
			r = store_usage_get(ro_store(c), 0, &u, &d);
		if (r < 0) {
			reply_failed(c, r, d.msg);
			return;
		}
		s->usage = u;
		s->usage_packages = npkg;
		s->usage_gen = gen;
		s->usage_valid = true;
	}
	u = s->usage;
	npkg = s->usage_packages;
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
	if (worker_running(s->worker, &ji)) {
		store_tx t = { 0 };
		int64_t id = worker_pending_txid(s);

		/* The history row the transaction opened, when it has one
		 * already; else what the worker knows. */
		if (id && store_tx_get(ro_store(c), id, &t, NULL) >= 0) {
			json_set(o, "running", json_tx(&t));
			store_tx_done(&t);
		} else {
			t = (store_tx){ .kind = ji.kind, .package = ji.package[0] ? ji.package : NULL,
					.state = "pending", .started_at = ji.started_at };
			json_set(o, "running", json_tx(&t));
		}
		json_set(o, "progress", json_progress(&ji.progress));
	} else {
		json_set(o, "running", NULL);
		json_set(o, "progress", NULL);
	}
	json_set(o, "jobs", worker_jobs(s->worker));
	reply(c, o);
}

static json_object *json_package(store *st, const store_package *pk)
{
	json_object *o = json_object_new_object();
	store_usage u = { 0 };

	if (!o)
		return NULL;
	(void)store_usage_get(st, pk->id, &u, NULL);
	json_set_str(o, "name", pk->name);
	json_set_str(o, "version", pk->version);
	json_set_str(o, "summary", pk->summary ? pk->summary : "");
	json_set_str(o, "vendor", pk->vendor ? pk->vendor : "");
	json_set_str(o, "signer", pk->signer_keyid);
	json_set_int(o, "installed_at", pk->installed_at);
	json_set_str(o, "policy", pk->policy ? pk->policy : "");
	json_set_int(o, "files", (int64_t)u.files);
	json_set_int(o, "shipped_size", (int64_t)u.shipped_size);
	json_set_int(o, "installed_size", (int64_t)u.installed_size);
	return o;
}

struct list_ctx {
	store *st;
	json_object *a;
};

static int list_cb(const store_package *pk, void *userdata)
{
	struct list_ctx *l = userdata;
	json_object *o = json_package(l->st, pk);

	if (!o)
		return -ENOMEM;
	json_object_array_add(l->a, o);
	return 0;
}

static void m_list(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	struct list_ctx l = { ro_store(c), json_object_new_array() };
	fatelf_diag d = { 0 };
	int r;

	if (!o || !l.a) {
		json_putp(&l.a);
		return;
	}
	json_set(o, "packages", l.a);
	r = store_package_list(l.st, list_cb, &l, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	reply(c, o);
}

static void m_info(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	store_package pk = { 0 };
	fatelf_diag d = { 0 };
	int r;

	if (!o)
		return;
	r = store_package_get(ro_store(c), p->package.package, &pk, &d);
	if (r == -ENOENT) {
		reply_error_str(c, E("PackageNotFound"), "package", p->package.package);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	json_set(o, "package", json_package(ro_store(c), &pk));
	store_package_done(&pk);
	reply(c, o);
}

struct files_ctx {
	store *st;
	const char *package;
	json_object *a;
};

static int files_cb(const store_file *f, void *userdata)
{
	struct files_ctx *fc = userdata;
	json_object *o = json_file(fc->st, f, fc->package);

	if (!o)
		return -ENOMEM;
	json_object_array_add(fc->a, o);
	return 0;
}

static void m_files(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	struct files_ctx fc = { ro_store(c), p->package.package, json_object_new_array() };
	fatelf_diag d = { 0 };
	int r;

	if (!o || !fc.a) {
		json_putp(&fc.a);
		return;
	}
	json_set(o, "files", fc.a);
	r = store_files_of(fc.st, fc.package, files_cb, &fc, &d);
	if (r == -ENOENT) {
		reply_error_str(c, E("PackageNotFound"), "package", fc.package);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	reply(c, o);
}

static void m_owner(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	_cleanup_free_ char *package = NULL;
	store_file f = { 0 };
	fatelf_diag d = { 0 };
	int r;

	if (!o)
		return;
	r = store_file_get(ro_store(c), p->owner.path, &f, &package, &d);
	if (r == -ENOENT) {
		reply_error_str(c, E("PathNotOwned"), "path", p->owner.path);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	json_set_str(o, "package", package);
	json_set(o, "file", json_file(ro_store(c), &f, package));
	store_file_done(&f);
	reply(c, o);
}

static int history_cb(const store_tx *t, void *userdata)
{
	json_object *o = json_tx(t);

	if (!o)
		return -ENOMEM;
	json_object_array_add(userdata, o);
	return 0;
}

static void m_history(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	fatelf_diag d = { 0 };
	int r;

	if (!o || !a) {
		json_putp(&a);
		return;
	}
	json_set(o, "transactions", a);
	r = store_tx_history(ro_store(c), p->history.package, (uint64_t)p->history.limit,
			     history_cb, a, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	reply(c, o);
}

static void m_get_policy(conn *c, const vl_call *call, union method_params *p)
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

static void m_verify(conn *c, const vl_call *call, union method_params *p)
{
	job *j = job_new(JOB_VERIFY);
	int r;

	if (!j) {
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	if (p->package.package) {
		store_package pk = { 0 };

		/* An unknown package is answered at once. */
		r = store_package_get(ro_store(c), p->package.package, &pk, NULL);
		store_package_done(&pk);
		if (r == -ENOENT) {
			job_free(j);
			reply_error_str(c, E("PackageNotFound"), "package", p->package.package);
			return;
		}
		j->package = strdup(p->package.package);
		if (!j->package) {
			job_free(j);
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
	}
	j->oneway = c->oneway;
	j->conn = c;
	c->job = j;
	r = worker_verify(c->srv->worker, j);
	if (r < 0) {
		c->job = NULL;
		job_free(j);
		if (r == -EBUSY)
			reply_error_str(c, E("Busy"), "message", "too many Verify calls run at once");
		else
			reply_failed(c, r, NULL);
	}
}

/* ------------------------------------------------------------ mutating methods */

static void job_start(conn *c, const vl_call *call, job *j)
{
	int r;

	j->more = (call->flags & VL_CALL_MORE) != 0;
	j->oneway = c->oneway;
	j->conn = c;
	c->job = j;
	r = worker_submit(c->srv->worker, j);
	if (r < 0) {
		c->job = NULL;
		job_free(j);
		reply_failed(c, r, "cannot record the transaction in the store");
	}
}

static void m_install(conn *c, const vl_call *call, union method_params *p)
{
	struct p_install *in = &p->install;
	json_object *v = NULL;
	bool has_fd = json_object_object_get_ex(call->parameters, "fd", &v) && v;
	unsigned nsrc = has_fd + !!in->url + !!in->path;
	job *j;

	if (nsrc != 1) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter",
				nsrc == 0 ? "fd" : (has_fd ? (in->url ? "url" : "path") : "path"));
		return;
	}
	/* Only root names files on the daemon's machine, by path (refused by
	 * the dispatch table) or file://. */
	if (in->url && strncasecmp(in->url, "file:", 5) == 0 && c->uid != 0) {
		reply_error_str(c, E("RootRequired"), "parameter", "url");
		return;
	}
	if (in->path && in->path[0] != '/') {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "path");
		return;
	}
	j = job_new(JOB_INSTALL);
	if (!j) {
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	if (!policy_from_params(c, in->policy, in->targets, &j->policy)) {
		job_free(j);
		return;
	}
	j->has_policy = in->policy || in->targets;
	if (has_fd) {
		struct stat st;

		j->fd = conn_take_fd(c, in->fd);
		/* A bundle streams from a file, a pipe or a socket; nothing
		 * else (a directory, a device) is a bundle. */
		if (j->fd < 0 || fstat(j->fd, &st) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
			job_free(j);
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "fd");
			return;
		}
	}
	if ((in->url && (!(j->url = strdup(in->url)) || !(j->url_shown = fatelf_text_url_redact(in->url)))) ||
	    (in->path && !(j->path = strdup(in->path)))) {
		job_free(j);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	j->allow_unsigned = in->allow_unsigned;
	j->force = in->force;
	j->allow_downgrade = in->allow_downgrade;
	j->dry_run = in->dry_run;
	j->allow_setid = c->uid == 0;
	j->allow_file_url = c->uid == 0;
	job_start(c, call, j);
}

static void m_remove(conn *c, const vl_call *call, union method_params *p)
{
	job *j = job_new(JOB_REMOVE);

	if (!j || !(j->package = strdup(p->remove.package))) {
		job_free(j);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	j->dry_run = p->remove.dry_run;
	job_start(c, call, j);
}

static void m_thin(conn *c, const vl_call *call, union method_params *p)
{
	job *j = job_new(JOB_THIN);

	if (!j) {
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	if (!policy_from_params(c, NULL, p->thin.targets, &j->policy)) {
		job_free(j);
		return;
	}
	j->has_policy = p->thin.targets != NULL;
	if (p->thin.packages) {
		size_t n = 0;

		while (p->thin.packages[n])
			n++;
		j->packages = calloc(n + 1, sizeof(char *));
		for (size_t i = 0; j->packages && i < n; i++)
			if (!(j->packages[i] = strdup(p->thin.packages[i]))) {
				job_free(j);
				reply_failed(c, -ENOMEM, NULL);
				return;
			}
		if (!j->packages) {
			job_free(j);
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
	}
	j->dry_run = p->thin.dry_run;
	job_start(c, call, j);
}

static void m_cancel(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = NULL;

	/* Replied to by the worker: at once for a queued job, once the
	 * rollback is done for the running one. */
	if (worker_cancel(c->srv->worker, p->cancel.id, c, (call->flags & VL_CALL_MORE) != 0) == 0)
		return;
	o = json_object_new_object();
	if (!o)
		return;
	if (p->cancel.id) {
		store_tx t;

		json_set_int(o, "id", p->cancel.id);
		/* One that has already ended says how. */
		if (store_tx_get(ro_store(c), p->cancel.id, &t, NULL) >= 0) {
			if (t.state && strcmp(t.state, "queued") != 0 && strcmp(t.state, "pending") != 0)
				json_set_str(o, "state", t.state);
			store_tx_done(&t);
		}
	} else
		json_set(o, "id", NULL);
	reply_error(c, E("NoSuchTransaction"), o);
}

/* ------------------------------------------------------------ the table */

typedef struct method {
	const char *name;
	void (*handler)(conn *c, const vl_call *call, union method_params *p);
} method;

/* The handlers; each one's parameters and whether it mutates come from
 * params_methods[] (daemon/params.c), which the fuzzer shares. */
static const method methods[] = {
	{ "org.varlink.service.GetInfo", m_get_info },
	{ "org.varlink.service.GetInterfaceDescription", m_get_interface_description },
	{ E("Status"), m_status },
	{ E("Install"), m_install },
	{ E("Remove"), m_remove },
	{ E("Thin"), m_thin },
	{ E("Cancel"), m_cancel },
	{ E("List"), m_list },
	{ E("Info"), m_info },
	{ E("Files"), m_files },
	{ E("Owner"), m_owner },
	{ E("Verify"), m_verify },
	{ E("History"), m_history },
	{ E("GetPolicy"), m_get_policy },
};

const char *methods_name(size_t i)
{
	return i < ARRAY_SIZE(methods) ? methods[i].name : NULL;
}

static void params_free(const vl_field *fields, union method_params *p)
{
	for (const vl_field *f = fields; f->name; f++)
		if (f->type == VL_STRV) {
			void *v;

			memcpy(&v, (char *)p + f->offset, sizeof(v));
			free(v);
		}
}

void methods_dispatch(conn *c, const char *msg, size_t len)
{
	vl_call call = { 0 };
	const method *m = NULL;
	const params_method *pm = NULL;
	union method_params p;
	const char *bad = NULL;
	fatelf_diag d = { 0 };
	size_t ilen;

	if (vl_call_parse(msg, len, &call, &d) < 0) {
		/* Not a Varlink call: the protocol has no answer for it. */
		conn_close(c);
		return;
	}
	c->oneway = (call.flags & VL_CALL_ONEWAY) != 0;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (strcmp(methods[i].name, call.method) == 0)
			m = &methods[i];
	if (m)
		pm = params_lookup(m->name);
	if (!m || !pm) {
		char iface[VL_NAME_MAX + 1];

		ilen = vl_name_interface_len(call.method);
		snprintf(iface, sizeof(iface), "%.*s", (int)ilen, call.method);
		if (strcmp(iface, FATELFD_INTERFACE) == 0 || strcmp(iface, "org.varlink.service") == 0)
			reply_error_str(c, VL_ERROR_METHOD_NOT_FOUND, "method", call.method);
		else
			reply_error_str(c, VL_ERROR_INTERFACE_NOT_FOUND, "interface", iface);
		goto out;
	}
	if (call.flags & VL_CALL_UPGRADE) {
		reply_error_str(c, VL_ERROR_METHOD_NOT_IMPLEMENTED, "method", call.method);
		goto out;
	}
	if (pm->mutating && !caller_is_admin(c)) {
		reply_error(c, VL_ERROR_PERMISSION_DENIED, NULL);
		goto out;
	}
	memset(&p, 0, sizeof(p));
	if (vl_dispatch(call.parameters, pm->fields, &p, &bad) < 0) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", bad ? bad : "parameters");
		goto out;
	}
	/* The admin group may call the method, but the options that lift a
	 * safety check (a signature, a conflict, a downgrade, the policy) or
	 * name the daemon's own files are root's. */
	if (c->uid != 0 && (bad = params_root_only_set(pm->fields, &p))) {
		reply_error_str(c, E("RootRequired"), "parameter", bad);
		params_free(pm->fields, &p);
		goto out;
	}
	m->handler(c, &call, &p);
	params_free(pm->fields, &p);
out:
	c->oneway = false;
	vl_call_done(&call);
}
