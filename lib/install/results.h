/*
 * The engine's results and the store's rows as JSON, in the shapes
 * schema/io.fatelf.Manager.varlink defines (lib/install/results.c):
 * fatelfd's replies and fatelf --root --json are built here, so the two
 * cannot drift apart. Also the setters that keep an object whole on
 * ENOMEM. Depends on json-c and lib/install's types alone.
 */
#ifndef FATELF_INSTALL_RESULTS_H
#define FATELF_INSTALL_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "engine.h"
#include "store.h"

/* Adds v (taken; NULL is JSON null) to o as key. */
void json_set(json_object *o, const char *key, json_object *v);
void json_set_str(json_object *o, const char *key, const char *s);
void json_set_int(json_object *o, const char *key, int64_t v);
void json_set_bool(json_object *o, const char *key, bool v);
/* A []string of v[0..n). */
json_object *json_strv(const char *const *v, size_t n);

/* Progress, Result and Transaction of io.fatelf.Manager. */
json_object *json_progress(const engine_progress *p);
json_object *json_result(const engine_result *r);
json_object *json_tx(const store_tx *t);

/* A repository install's Fetch: what it fetched (a dry run: would). */
json_object *json_fetch(const char *repository, uint64_t objects, uint64_t local, uint64_t cloned, uint64_t fetched,
			uint64_t bytes, uint64_t metadata);

#endif
