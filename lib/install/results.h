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

/* The store's rows: a Package (with its usage, hold and form), a File
 * (a fat file with its Records), a directory of package as a File of type
 * "dir", and config_files' []ConfigFilesPackage of v[0..n). */
json_object *json_package(store *st, const store_package *pk);
json_object *json_file(store *st, const store_file *f, const char *package);
json_object *json_dir(const store_dir *dir, const char *package);
json_object *json_config_files(const store_kept_package *v, size_t n);
/* Adds the Files of files and dirs (each sorted by path) to a in path
 * order, at most max of them; *ret_last: the last path added (NULL: none). */
int json_entries_add(store *st, json_object *a, const char *package, const store_file *files, size_t nf,
		     const store_dir *dirs, size_t nd, size_t max, const char **ret_last);

/* Owner{pattern}: a File for every file, symlink and directory pattern
 * matches (a directory once for each package that owns it), added to a
 * by path. */
int json_owner_matches(store *st, const char *pattern, json_object *a, fatelf_diag *d);
/* An engine_problem_cb for engine_verify: adds the Problem to the array
 * userdata. */
int json_problem_add(const char *package, const char *path, int problem, const char *detail, void *userdata);

#endif
