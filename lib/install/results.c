/*
 * The objects of io.fatelf.Manager that fatelfd's replies and fatelf
 * --root --json both send, each built in one place: a job's Progress and
 * Result, a transaction row (Transaction), and the small setters every
 * reply is built with.
 */
#include <errno.h>
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
