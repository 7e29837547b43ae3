/*
 * The objects of io.fatelf.Manager that fatelfd's replies and fatelf
 * --root --json both send, each built in one place: a job's Progress and
 * Result, a transaction row (Transaction), and the small setters every
 * reply is built with.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

void json_set(json_object *o, const char *key, json_object *v)
{
	/* json-c takes v (NULL is JSON null); on ENOMEM the reply is short a
	 * field, which the client sees as a protocol error, not a crash. */
	if (json_object_object_add(o, key, v) < 0)
		json_object_put(v);
}

void json_set_str(json_object *o, const char *key, const char *s)
{
	json_set(o, key, s ? json_object_new_string(s) : NULL);
}

void json_set_int(json_object *o, const char *key, int64_t v)
{
	json_set(o, key, json_object_new_int64(v));
}

void json_set_bool(json_object *o, const char *key, bool v)
{
	json_set(o, key, json_object_new_boolean(v));
}

json_object *json_strv(const char *const *v, size_t n)
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
	json_set_str(o, "package", p->package);
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
	json_set_int(o, "files_unchanged", (int64_t)r->files_unchanged);
	json_set_int(o, "bytes_unchanged", (int64_t)r->bytes_unchanged);
	json_set_bool(o, "dry_run", r->dry_run);
	json_set(o, "config_kept", json_strv((const char *const *)r->config_kept, r->nconfig_kept));
	if (r->signature) {
		json_set_str(o, "signature", r->signature);
		json_set_str(o, "signer", r->signer[0] ? r->signer : NULL);
	}
	if (r->change)
		json_set_str(o, "change", r->change);
	if (r->purge)
		json_set_bool(o, "purge", true);
	if (r->config_files_only)
		json_set_bool(o, "config_files_only", true);
	if (r->taken || r->warnings) {
		json_object *taken = json_object_new_array(), *warnings = json_object_new_array();

		for (size_t i = 0; taken && i < r->ntaken; i++) {
			json_object *t = json_object_new_object();

			json_set_str(t, "path", r->taken[i].path);
			json_set_str(t, "from", r->taken[i].from);
			json_set_str(t, "kept_by", r->taken[i].kept_by);
			json_set_str(t, "kept_version", r->taken[i].kept_version);
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

json_object *json_tx(const store_tx *t)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_int(o, "id", t->id);
	json_set_str(o, "kind", store_tx_kind_to_text(t->kind));
	json_set_str(o, "package", t->package);
	json_set_str(o, "old_version", t->old_version);
	json_set_str(o, "new_version", t->new_version);
	json_set_str(o, "state", store_tx_state_to_text(t->state));
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

json_object *json_fetch(const char *repository, uint64_t objects, uint64_t local, uint64_t cloned, uint64_t fetched,
			uint64_t bytes, uint64_t metadata)
{
	json_object *o = json_object_new_object();

	json_set_str(o, "repository", repository ? repository : "");
	json_set_int(o, "objects", (int64_t)objects);
	json_set_int(o, "local", (int64_t)local);
	json_set_int(o, "cloned", (int64_t)cloned);
	json_set_int(o, "fetched", (int64_t)fetched);
	json_set_int(o, "bytes", (int64_t)bytes);
	json_set_int(o, "metadata_bytes", (int64_t)metadata);
	return o;
}

/* ---- the store's rows: Package, File, Record, ConfigFilesPackage */

static int record_json(const store_record *r, json_object *a)
{
	json_object *o = json_object_new_object();
	char target[FATELF_TARGET_NAME_MAX];

	if (!o)
		return -ENOMEM;
	fatelf_target_format(&r->target, target);
	json_set_int(o, "index", r->idx);
	json_set_str(o, "target", target);
	json_set_int(o, "offset", (int64_t)r->offset);
	json_set_int(o, "size", (int64_t)r->size);
	json_set_str(o, "sha256", r->sha256);
	json_set_bool(o, "kept", r->kept);
	json_object_array_add(a, o);
	return 0;
}

json_object *json_file(store *st, const store_file *f, const char *package)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_str(o, "path", f->path);
	json_set_str(o, "package", package);
	json_set_str(o, "type", store_file_type_to_text(f->type));
	json_set_int(o, "mode", f->mode);
	json_set_int(o, "size", (int64_t)f->size);
	json_set_str(o, "sha256", f->sha256);
	json_set_str(o, "link_target", f->link_target);
	json_set_bool(o, "config", f->config);
	json_set_str(o, "kind", store_file_kind_to_text(f->kind));
	json_set_str(o, "installed_form", store_form_to_text(f->installed_form));
	json_set_int(o, "installed_size", (int64_t)f->installed_size);
	json_set_str(o, "installed_sha256", f->installed_sha256);
	if (f->kind == STORE_KIND_FATELF) {
		json_object *a = json_object_new_array();
		store_record *recs = NULL;
		size_t n = 0;
		int r = a ? store_records_of(st, f->path, &recs, &n, NULL) : -ENOMEM;

		for (size_t i = 0; i < n && r >= 0; i++)
			r = record_json(&recs[i], a);
		store_records_free(recs, n);
		if (r < 0) {
			json_object_put(a);
			a = NULL;
		}
		json_set(o, "records", a);
	} else {
		json_set(o, "records", NULL);
	}
	return o;
}

/* A directory of a package as a File entry: type "dir", the mode it was
 * installed with (0: not recorded), no content. */
json_object *json_dir(const store_dir *dir, const char *package)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_set_str(o, "path", dir->path);
	json_set_str(o, "package", package);
	json_set_str(o, "type", "dir");
	json_set_int(o, "mode", dir->mode >= 0 ? dir->mode : 0);
	json_set_int(o, "size", 0);
	json_set_str(o, "sha256", NULL);
	json_set_str(o, "link_target", NULL);
	json_set_bool(o, "config", false);
	json_set_str(o, "kind", "data");
	json_set_str(o, "installed_form", "as-shipped");
	json_set_int(o, "installed_size", 0);
	json_set_str(o, "installed_sha256", NULL);
	json_set(o, "records", NULL);
	return o;
}

/* The form a package's fat files are installed in now, all together:
 * "fat" (every record), "thinned" (one record each), "compatible"
 * (several records of some, none fat), "mixed" (some fat, some not), or
 * "none" (the package has no fat file). */
static const char *package_form(store *st, int64_t id)
{
	store_forms f = { 0 };

	if (store_package_forms(st, id, &f, NULL) < 0)
		return NULL;
	if (f.fat + f.thinned + f.several == 0)
		return "none";
	if (f.fat > 0)
		return f.thinned + f.several > 0 ? "mixed" : "fat";
	return f.several > 0 ? "compatible" : "thinned";
}

/* "a,b,c" as ["a", "b", "c"]; "" as []. */
static json_object *json_split(const char *s)
{
	json_object *a = json_object_new_array();

	while (a && s && *s) {
		size_t n = strcspn(s, ",");

		json_object_array_add(a, json_object_new_string_len(s, (int)n));
		s += n + (s[n] == ',');
	}
	return a;
}

json_object *json_package(store *st, const store_package *pk)
{
	json_object *o = json_object_new_object();
	store_usage u = { 0 };
	bool held = false;

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
	json_set_bool(o, "held", store_hold_get(st, pk->name, &held, NULL) >= 0 && held);
	json_set_int(o, "files", (int64_t)u.files);
	json_set_int(o, "shipped_size", (int64_t)u.shipped_size);
	json_set_int(o, "installed_size", (int64_t)u.installed_size);
	json_set_str(o, "license", pk->license);
	json_set_str(o, "homepage", pk->homepage);
	json_set(o, "targets", pk->targets ? json_split(pk->targets) : NULL);
	json_set_str(o, "form", package_form(st, pk->id));
	json_set_str(o, "source_type", store_source_to_text(pk->source_type));
	json_set_str(o, "source", pk->source);
	return o;
}

json_object *json_config_files(const store_kept_package *v, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		json_object *x = json_object_new_object();

		if (!x)
			break;
		json_set_str(x, "name", v[i].name);
		json_set_str(x, "version", v[i].version);
		json_set_int(x, "files", (int64_t)v[i].files);
		json_object_array_add(a, x);
	}
	return a;
}

int json_entries_add(store *st, json_object *a, const char *package, const store_file *files, size_t nf,
		       const store_dir *dirs, size_t nd, size_t max, const char **ret_last)
{
	size_t i = 0, k = 0;

	*ret_last = NULL;
	while ((i < nf || k < nd) && i + k < max) {
		bool dir = k < nd && (i >= nf || strcmp(dirs[k].path, files[i].path) < 0);
		json_object *x = dir ? json_dir(&dirs[k], package) : json_file(st, &files[i], package);

		if (!x)
			return -ENOMEM;
		json_object_array_add(a, x);
		*ret_last = dir ? dirs[k++].path : files[i++].path;
	}
	return 0;
}

/* ---- Owner{pattern} and Verify */

/* The matches of a pattern, collected before any File is read (the
 * walk's statement is busy while it calls back). */
struct owner_match {
	char *path, *package;
	bool dir;
	int mode;
};
struct owner_matches {
	struct owner_match *v;
	size_t n, cap;
};

static int owner_collect(const char *path, const char *package, bool dir, int mode, void *userdata)
{
	struct owner_matches *m = userdata;

	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct owner_match *v = reallocarray(m->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n] = (struct owner_match){ strdup(path), strdup(package), dir, mode };
	if (!m->v[m->n].path || !m->v[m->n].package) {
		free(m->v[m->n].path);
		free(m->v[m->n].package);
		return -ENOMEM;
	}
	m->n++;
	return 0;
}

static json_object *owner_match_json(store *st, const struct owner_match *m)
{
	store_file f = { 0 };
	json_object *x;

	if (m->dir) {
		store_dir dir = { .path = m->path, .mode = m->mode };

		return json_dir(&dir, m->package);
	}
	/* Gone since the walk: no File to show. */
	if (store_file_get(st, m->path, &f, NULL, NULL) <= 0)
		return json_object_new_object();
	x = json_file(st, &f, m->package);
	store_file_done(&f);
	return x;
}

int json_owner_matches(store *st, const char *pattern, json_object *a, fatelf_diag *d)
{
	struct owner_matches m = { 0 };
	int r = store_paths_match(st, pattern, owner_collect, &m, d);

	for (size_t i = 0; r >= 0 && i < m.n; i++) {
		json_object *x = owner_match_json(st, &m.v[i]);

		if (!x)
			r = -ENOMEM;
		else if (json_object_object_length(x) == 0)
			json_object_put(x);
		else
			json_object_array_add(a, x);
	}
	for (size_t i = 0; i < m.n; i++) {
		free(m.v[i].path);
		free(m.v[i].package);
	}
	free(m.v);
	return r;
}

int json_problem_add(const char *package, const char *path, int problem, const char *detail, void *userdata)
{
	json_object *o = json_object_new_object();

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "package", json_object_new_string(package ? package : ""));
	json_object_object_add(o, "path", json_object_new_string(path ? path : ""));
	json_object_object_add(o, "problem", json_object_new_string(engine_problem_name(problem)));
	json_object_object_add(o, "detail", json_object_new_string(detail ? detail : ""));
	json_object_array_add(userdata, o);
	return 0;
}
