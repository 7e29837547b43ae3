/*
 * The replies to the call being handled on a connection: each one is
 * dropped when the call was oneway. A failure becomes the interface's
 * error through the one table of daemon/errmap.c, with the daemon's own
 * facts (the root, the trusted keys, the host's targets) added.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmap.h"
#include "results.h"
#include "macro.h"
#include "reply.h"

/* Replies to the call being handled on c, unless it was oneway. */
void reply(conn *c, json_object *params)
{
	if (!c->oneway)
		conn_reply(c, params, false);
}

void reply_error(conn *c, const char *name, json_object *params)
{
	if (!c->oneway)
		conn_error(c, name, params);
}

void reply_error_str(conn *c, const char *name, const char *key, const char *value)
{
	if (!c->oneway)
		conn_error_str(c, name, key, value);
}

static void reply_mapped(conn *c, const char *forced, int r, const fatelf_diag *d, const char *url,
			 const char *repository);

/* Failed {code, message}: an error the interface has no name for. */
void reply_failed(conn *c, int r, const char *message)
{
	fatelf_diag d;

	fatelf_diag_clear(&d);
	if (message && message[0])      /* the text of this failure */
		fatelf_diag_set(&d, r, -1, "%s", message);
	reply_mapped(c, "Failed", r, &d, NULL, NULL);
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

json_object *host_targets(const fatelf_host *h)
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
void reply_kept_facts(store *st, json_object *p)
{
	json_object *pkg = NULL;
	store_kept_package *v = NULL;
	size_t n = 0;

	if (!p || !json_object_object_get_ex(p, "package", &pkg) || !json_object_is_type(pkg, json_type_string))
		return;
	if (store_kept_packages(st, &v, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, json_object_get_string(pkg)) == 0) {
			json_set_str(p, "kept_version", v[i].version);
			json_set_int(p, "kept_files", (int64_t)v[i].files);
		}
	store_kept_packages_free(v, n);
}

void reply_package_not_found(conn *c, const char *package)
{
	json_object *e = json_object_new_object();

	if (!e)
		return;
	json_set_str(e, "package", package);
	reply_kept_facts(engine_store(c->srv->ro), e);
	reply_error(c, FATELFD_INTERFACE ".PackageNotFound", e);
	json_object_put(e);
}

static void reply_mapped(conn *c, const char *forced, int r, const fatelf_diag *d, const char *url,
			 const char *repository)
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
		.repository = repository,
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
	if (strcmp(error, "PackageNotFound") == 0)
		reply_kept_facts(engine_store(s->ro), p);
	snprintf(name, sizeof(name), "%s.%s", FATELFD_INTERFACE, error);
	reply_error(c, name, p);
}

void reply_failure(conn *c, int r, const fatelf_diag *d, const char *url)
{
	reply_mapped(c, NULL, r, d, url, NULL);
}

void reply_failure_repo(conn *c, int r, const fatelf_diag *d, const char *url, const char *repository)
{
	reply_mapped(c, NULL, r, d, url, repository);
}

struct array_stream {
	conn_stream st;
	json_object *o;
	json_object *a;         /* o's member key */
	char *key;
	size_t at, n;
};

static int array_stream_next(conn *c, conn_stream *st)
{
	struct array_stream *x = (struct array_stream *)st;
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	size_t end = MIN(x->at + REPLY_CHUNK, x->n);
	bool more;

	if (!o || !a) {
		json_putp(&a);
		reply_failed(c, -ENOMEM, NULL);
		return 0;
	}
	json_object_object_foreach(x->o, k, val)
		if (strcmp(k, x->key) != 0)
			json_object_object_add(o, k, json_object_get(val));
	for (; x->at < end; x->at++)
		json_object_array_add(a, json_object_get(json_object_array_get_idx(x->a, x->at)));
	json_object_object_add(o, x->key, a);
	more = x->at < x->n;
	conn_reply(c, o, more);
	return more;
}

static void array_stream_free(conn_stream *st)
{
	struct array_stream *x = (struct array_stream *)st;

	json_object_put(x->o);
	free(x->key);
	free(x);
}

void reply_array_stream(conn *c, json_object *o, const char *key)
{
	struct array_stream *x;

	if (c->oneway) {
		json_object_put(o);
		return;
	}
	x = calloc(1, sizeof(*x));
	if (!x || !(x->key = strdup(key)) || !json_object_object_get_ex(o, key, &x->a) ||
	    !json_object_is_type(x->a, json_type_array)) {
		if (x)
			free(x->key);
		free(x);
		json_object_put(o);
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	x->st = (conn_stream) { .next = array_stream_next, .free = array_stream_free };
	x->o = o;
	x->n = json_object_array_length(x->a);
	conn_stream_start(c, &x->st);
}
