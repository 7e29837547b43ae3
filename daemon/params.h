/*
 * The parameters of fatelfd's Varlink methods: one C struct per method
 * shape, and the dispatch table that vl_dispatch checks a call's
 * "parameters" against (names, types, mandatory flags, ranges), with
 * who may call the method and how it runs, and which
 * fields only root may set (PARAMS_ROOT_ONLY). The daemon's
 * handlers and the fuzz_dispatch target share these tables, so the fuzzer
 * checks exactly what the daemon accepts. Depends on lib/varlink/varlink.h alone.
 */
#ifndef FATELFD_PARAMS_H
#define FATELFD_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "varlink.h"

/* Passed fds a connection holds at once: Install's fd is an index below it. */
#define PARAMS_FDS_MAX 16

/* A vl_field flag of these tables (vl_dispatch ignores it): only uid 0 may
 * set the field (a true bool, any string or list). The admin group may
 * call the method, but not with this field. */
#define PARAMS_ROOT_ONLY 0x100u

struct p_install {
	int64_t fd;
	const char *url, *path, *policy, *package;
	const char *source_path;
	const char **targets;
	const char **packages;
	json_object *fds;               /* several bundles, one transaction: fd indexes */
	const char **source_paths;      /* with fds: the file each one is */
	bool allow_unsigned, force, allow_downgrade, dry_run;
	bool keep_automatic;            /* an upgrade or a repair: marks stay */
};
struct p_remove {
	const char *package;
	const char **packages;          /* several, one transaction */
	bool dry_run, purge;
	bool autoremove;                /* no package(s): the automatic ones nothing needs */
};
struct p_thin {
	const char **packages, **targets;
	bool dry_run;
};
struct p_cancel {
	int64_t id;
};
struct p_package {
	const char *package;
};
struct p_owner {
	const char *path;
	const char *pattern;
};
struct p_files {
	const char *package;
	bool dirs;
};
struct p_history {
	const char *package;
	int64_t limit;
};
struct p_interface {
	const char *interface;
};
struct p_repo_add {
	const char *name;
	const char **urls;
	const char *key;
	const char *id;
};
struct p_repo_name {
	const char *name;
};
struct p_update {
	const char *repository;
};
struct p_search {
	const char *pattern;
	bool upgradable;
};
struct p_key_add {
	const char *key;
};
struct p_key_remove {
	const char *id;
};
struct p_status {
	bool prometheus;
};

union method_params {
	struct p_install install;
	struct p_remove remove;
	struct p_thin thin;
	struct p_cancel cancel;
	struct p_package package;
	struct p_owner owner;
	struct p_files files;
	struct p_history history;
	struct p_interface interface;
	struct p_repo_add repo_add;
	struct p_repo_name repo_name;
	struct p_update update;
	struct p_search search;
	struct p_key_add key_add;
	struct p_key_remove key_remove;
	struct p_status status;
};

/* Who may call a method. */
enum params_who {
	PARAMS_ANYONE,
	PARAMS_ADMIN,                   /* uid 0 or the admin group only */
	PARAMS_ROOT,                    /* uid 0 only (the admin group too is refused) */
};

/* How a method runs. */
enum params_runs {
	PARAMS_INLINE,                  /* answered on the main thread */
	PARAMS_QUEUED,                  /* a job of the worker, one at a time */
	PARAMS_THREAD,                  /* a job on a thread of its own */
};

typedef struct params_method {
	const char *name;               /* fully qualified */
	const vl_field *fields;
	enum params_who who;
	enum params_runs runs;
} params_method;

/* Every method the daemon serves (daemon/methodset.h), ended by { NULL }. */
extern const params_method params_methods[];
/* The entry for a method, or NULL. */
const params_method *params_lookup(const char *name);
/* Frees what vl_dispatch allocated in p (the STRV arrays) for fields. */
void params_done(const vl_field *fields, union method_params *p);
/* The first PARAMS_ROOT_ONLY field of fields that p sets, or NULL. */
const char *params_root_only_set(const vl_field *fields, const union method_params *p);

#endif
