/*
 * The methods that become jobs: Install, Remove and Thin are queued for
 * the worker, Verify runs on a thread of its own, and Cancel stops a
 * queued or running one. Each checks what the dispatch table cannot (one
 * source, a policy override, a passed fd that is a stream) and replies at
 * once when it refuses; otherwise the worker answers when the job ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "results.h"
#include "oci.h"
#include "macro.h"
#include "methods.h"
#include "reply.h"
#include "text.h"
#include "worker.h"

#define E(name) "io.fatelf.Manager." name
/* The packages one Install may name (one transaction). */
#define INSTALL_PACKAGES_MAX 1000

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
		reply_error_str(c, E("InvalidPolicy"), "message", fatelf_diag_text(&d, r));
		return false;
	}
	return true;
}

void method_verify(conn *c, const vl_call *call, union method_params *p)
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
		r = store_package_get(method_store(c), p->package.package, &pk, NULL);
		store_package_done(&pk);
		if (r == 0) {
			job_free(j);
			reply_package_not_found(c, p->package.package);
			return;
		}
		j->package = strdup(p->package.package);
		if (!j->package) {
			job_free(j);
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
	}
	job_start_thread(c, call, j);
}

void job_start_thread(conn *c, const vl_call *call, job *j)
{
	int r;

	j->oneway = c->oneway;
	j->more = (call->flags & VL_CALL_MORE) != 0;
	j->conn = c;
	c->job = j;
	r = worker_verify(c->srv->worker, j);
	if (r < 0) {
		c->job = NULL;
		job_free(j);
		if (r == -EBUSY)
			reply_error_str(c, E("Busy"), "message", "too many Verify and Update calls run at once");
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

/* "NAME" or "NAME=VERSION" */
static bool package_spec_valid(const char *spec)
{
	const char *eq = strchr(spec, '=');
	char name[256];

	snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - spec) : 255, spec);
	return fatelf_pkg_name_valid(name) && (!eq || fatelf_pkg_version_valid(eq + 1));
}

/* The packages of one Install, one transaction: one alone is an Install
 * of package; several are the job's members, named together in
 * repo_spec ("a, b=2.0, c") for the logs. */
static int job_take_members(job *j, const char *const *specs, size_t n)
{
	size_t len = 1;

	if (n == 1)
		return (j->repo_spec = strdup(specs[0])) ? 0 : -ENOMEM;
	j->members = calloc(n, sizeof(*j->members));
	if (!j->members)
		return -ENOMEM;
	j->nmembers = n;
	for (size_t i = 0; i < n; i++) {
		if (!(j->members[i].spec = strdup(specs[i])))
			return -ENOMEM;
		len += strlen(specs[i]) + 2;
	}
	j->repo_spec = malloc(len);
	if (!j->repo_spec)
		return -ENOMEM;
	len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(specs[i]);

		if (i > 0) {
			memcpy(j->repo_spec + len, ", ", 2);
			len += 2;
		}
		memcpy(j->repo_spec + len, specs[i], k);
		len += k;
	}
	j->repo_spec[len] = '\0';
	return 0;
}

static bool source_path_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n >= 4096 || s[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/*
 * The bundles of one Install{fds}, one transaction: each index names a
 * passed fd (each once) that reads a file, a pipe or a socket; source_paths,
 * when given, names each one's file ("" for none). The job's members take
 * the fds. Returns NULL, or the parameter at fault ("" when out of memory).
 */
static const char *job_take_fds(conn *c, job *j, json_object *fds, const char *const *source_paths)
{
	size_t n = json_object_array_length(fds), npaths = 0;
	int64_t idx[PARAMS_FDS_MAX];
	bool taken[PARAMS_FDS_MAX] = { false };

	if (n == 0 || n > PARAMS_FDS_MAX)
		return "fds";
	while (source_paths && source_paths[npaths])
		npaths++;
	if (source_paths && npaths != n)
		return "source_paths";
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(fds, i);

		if (!json_object_is_type(v, json_type_int))
			return "fds";
		idx[i] = json_object_get_int64(v);
		if (idx[i] < 0 || idx[i] >= PARAMS_FDS_MAX)
			return "fds";
		for (size_t k = 0; k < i; k++)
			if (idx[k] == idx[i])
				return "fds";
		if (source_paths && source_paths[i][0] && !source_path_valid(source_paths[i]))
			return "source_paths";
	}
	j->members = calloc(n, sizeof(*j->members));
	if (!j->members)
		return "";
	j->nmembers = n;
	for (size_t i = 0; i < n; i++) {
		j->members[i].fd = -1;
		j->members[i].has_fd = true;
		if (source_paths && source_paths[i][0] &&
		    !(j->members[i].source_path = strdup(source_paths[i])))
			return "";
	}
	/* Highest index first: taking one moves those above it down. */
	for (size_t done = 0; done < n; done++) {
		size_t top = n;

		for (size_t i = 0; i < n; i++)
			if (!taken[i] && (top == n || idx[i] > idx[top]))
				top = i;
		taken[top] = true;
		j->members[top].fd = conn_take_fd(c, idx[top]);
	}
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int fd = j->members[i].fd;

		if (fd < 0 || fstat(fd, &st) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
			return "fds";
	}
	return NULL;
}

void method_install(conn *c, const vl_call *call, union method_params *p)
{
	struct p_install *in = &p->install;
	json_object *v = NULL;
	bool has_fd = json_object_object_get_ex(call->parameters, "fd", &v) && v;
	unsigned nsrc = has_fd + !!in->url + !!in->path + !!in->package + !!in->packages + !!in->fds;
	size_t npackages = 0;
	job *j;

	if (nsrc != 1) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter",
				nsrc == 0 ? "fd" : in->fds ? "fds" : in->packages ? "packages" : in->package ? "package" :
				(has_fd ? (in->url ? "url" : "path") : "path"));
		return;
	}
	if (in->packages) {
		while (in->packages[npackages])
			npackages++;
		if (npackages == 0 || npackages > INSTALL_PACKAGES_MAX) {
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "packages");
			return;
		}
		for (size_t i = 0; i < npackages; i++)
			if (!package_spec_valid(in->packages[i])) {
				reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "packages");
				return;
			}
	}
	if (in->source_paths && !in->fds) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "source_paths");
		return;
	}
	if (in->package && !package_spec_valid(in->package)) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "package");
		return;
	}
	/* Only root names files on the daemon's machine, by path (refused by
	 * the dispatch table) or file://. */
	if (in->url && strncasecmp(in->url, "file:", 5) == 0 && c->uid != 0) {
		reply_error_str(c, E("RootRequired"), "parameter", "url");
		return;
	}
	/* A registry's reference is checked here, so that a bad one is the
	 * caller's error at once. */
	if (in->url && strncmp(in->url, "oci://", 6) == 0) {
		fatelf_oci_ref ref;

		if (fatelf_oci_ref_parse(in->url, false, &ref) < 0 || (!ref.tag[0] && !ref.has_digest)) {
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "url");
			return;
		}
	}
	if (in->path && in->path[0] != '/') {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "path");
		return;
	}
	/* A name for the passed fd, recorded as the package's source: an
	 * absolute path of printable characters, with fd alone. */
	if (in->source_path && (!has_fd || !source_path_valid(in->source_path))) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "source_path");
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
	if (in->fds) {
		const char *bad = job_take_fds(c, j, in->fds, in->source_paths);

		if (bad) {
			job_free(j);
			if (bad[0])
				reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", bad);
			else
				reply_failed(c, -ENOMEM, NULL);
			return;
		}
	}
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
	    (in->path && !(j->path = strdup(in->path))) ||
	    (in->source_path && !(j->source_path = strdup(in->source_path))) ||
	    (in->package && !(j->repo_spec = strdup(in->package))) ||
	    (in->packages && job_take_members(j, in->packages, npackages) < 0)) {
		job_free(j);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	j->allow_unsigned = in->allow_unsigned;
	j->force = in->force;
	j->allow_downgrade = in->allow_downgrade;
	j->dry_run = in->dry_run;
	j->keep_automatic = in->keep_automatic;
	j->allow_setid = c->uid == 0;
	j->allow_file_url = c->uid == 0;
	job_start(c, call, j);
}

void method_remove(conn *c, const vl_call *call, union method_params *p)
{
	const char *const *names = p->remove.packages;
	size_t n = 0;
	job *j;

	/* package, or packages (one transaction): exactly one of them */
	while (names && names[n])
		n++;
	if (p->remove.autoremove && (p->remove.package || names)) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "autoremove");
		return;
	}
	if ((!p->remove.autoremove && !p->remove.package == !names) ||
	    (names && (n == 0 || n > INSTALL_PACKAGES_MAX))) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", names ? "packages" : "package");
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (!fatelf_pkg_name_valid(names[i])) {
			reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", "packages");
			return;
		}
	j = job_new(JOB_REMOVE);
	if (!j || (p->remove.package && !(j->package = strdup(p->remove.package)))) {
		job_free(j);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	if (n > 0) {
		j->members = calloc(n, sizeof(*j->members));
		if (!j->members) {
			job_free(j);
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
		j->nmembers = n;
		for (size_t i = 0; i < n; i++)
			if (!(j->members[i].spec = strdup(names[i]))) {
				job_free(j);
				reply_failed(c, -ENOMEM, NULL);
				return;
			}
	}
	j->purge = p->remove.purge;
	j->dry_run = p->remove.dry_run;
	j->autoremove = p->remove.autoremove;
	job_start(c, call, j);
}

void method_thin(conn *c, const vl_call *call, union method_params *p)
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

void method_cancel(conn *c, const vl_call *call, union method_params *p)
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
		if (store_tx_get(method_store(c), p->cancel.id, &t, NULL) > 0) {
			if (t.state != STORE_TX_QUEUED && t.state != STORE_TX_PENDING)
				json_set_str(o, "state", store_tx_state_to_text(t.state));
			store_tx_done(&t);
		}
	} else
		json_set(o, "id", NULL);
	reply_error(c, E("NoSuchTransaction"), o);
}
