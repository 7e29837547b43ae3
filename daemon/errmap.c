/*
 * The error table of fatelfd (see errmap.h). Rows are tried in order; the
 * first whose codes (and condition) match names the error.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/statvfs.h>

#include "errmap.h"
#include "macro.h"

/* Where a parameter's value comes from. */
enum fact {
	F_NONE,
	F_CODE,         /* string: the code's name, "FATELF_E_HASH" */
	F_MESSAGE,      /* string: the message, else the code's text */
	F_PATH,         /* string: the subject */
	F_ENTRY,        /* ?string: the subject, null when there is none */
	F_PACKAGE,      /* string: the package fact, else the subject */
	F_OWNER,        /* ?string */
	F_INSTALLED,    /* string */
	F_OFFERED,      /* string */
	F_TARGETS,      /* []string: what the file offers */
	F_HOST,         /* []string: the host's targets */
	F_NEEDED,       /* int: 0 when unknown */
	F_AVAILABLE,    /* int: the fact, else the root's free space now */
	F_KEYS_DIR,     /* string */
	F_KEYS,         /* int */
	F_KEY_ID,       /* ?string */
	F_UID,          /* int */
	F_MODE,         /* int */
	F_ID,           /* int: 0, the worker knows the transaction */
	F_URL,          /* string */
	F_REPOSITORY,   /* string: the repository (ctx) */
	F_DEPENDENCY,   /* string */
	F_CONSTRAINT,   /* string: "OP VERSION", "" for any version */
	F_DEPENDENTS,   /* []string: the packages that depend on the package */
	F_EXPECTED,     /* string: the repository identity this machine pinned */
	F_GOT,          /* ?string: the one the index names, null when none */
	F_EXPIRES,      /* int: when the index expired */
};

/* Beyond the code, what a row needs of the failure. */
enum when {
	W_ALWAYS,
	W_DOWNLOAD,     /* the download failed (ctx->url) */
	W_TARGETS,      /* the diag lists what the file offers */
	W_REPOSITORY,   /* about a repository (ctx->repository, else the diag's) */
};

#define PARAMS_MAX 5

struct row {
	int lo, hi;             /* codes, positive, inclusive */
	enum when when;
	const char *error;
	struct {
		const char *name;
		enum fact fact;
	} params[PARAMS_MAX];
};

#define ANY 0, INT_MAX
#define ONE(c) (c), (c)

static const struct row rows[] = {
	{ ONE(ECANCELED), W_ALWAYS, "Cancelled", { { "id", F_ID } } },
	{ ANY, W_DOWNLOAD, "FetchFailed", { { "url", F_URL }, { "message", F_MESSAGE } } },
	{ ONE(ENGINE_E_CONFLICT), W_ALWAYS, "Conflict",
	  { { "path", F_PATH }, { "owner", F_OWNER }, { "message", F_MESSAGE } } },
	{ ONE(ENGINE_E_DOWNGRADE), W_ALWAYS, "Downgrade",
	  { { "package", F_PACKAGE }, { "installed", F_INSTALLED }, { "offered", F_OFFERED } } },
	{ ONE(ENGINE_E_NOT_INSTALLED), W_ALWAYS, "PackageNotFound", { { "package", F_PACKAGE } } },
	{ ONE(ENGINE_E_HELD), W_ALWAYS, "PackageHeld",
	  { { "package", F_PACKAGE }, { "installed", F_INSTALLED }, { "offered", F_OFFERED } } },
	{ ONE(ENGINE_E_DEPENDENCY_MISSING), W_ALWAYS, "DependencyMissing",
	  { { "package", F_PACKAGE }, { "dependency", F_DEPENDENCY }, { "constraint", F_CONSTRAINT } } },
	{ ONE(ENGINE_E_DEPENDENCY_BROKEN), W_ALWAYS, "DependencyBroken",
	  { { "package", F_PACKAGE }, { "dependents", F_DEPENDENTS } } },
	{ ONE(FATELF_E_REPO_MISMATCH), W_REPOSITORY, "RepositoryMismatch",
	  { { "repository", F_REPOSITORY }, { "expected", F_EXPECTED }, { "got", F_GOT } } },
	{ ONE(FATELF_E_REPO_EXPIRED), W_REPOSITORY, "RepositoryExpired",
	  { { "repository", F_REPOSITORY }, { "expires", F_EXPIRES }, { "message", F_MESSAGE } } },
	{ FATELF_E_REPO_FORMAT, FATELF_E_REPO_MISMATCH, W_REPOSITORY, "RepositoryInvalid",
	  { { "repository", F_REPOSITORY }, { "code", F_CODE }, { "message", F_MESSAGE } } },
	{ FATELF_E_KEY_FORMAT, FATELF_E_SIG_COMMENT, W_REPOSITORY, "RepositoryInvalid",
	  { { "repository", F_REPOSITORY }, { "code", F_CODE }, { "message", F_MESSAGE } } },
	{ ONE(FATELF_E_NO_HOST_RECORD), W_ALWAYS, "NoHostRecord",
	  { { "path", F_PATH }, { "targets", F_TARGETS }, { "host", F_HOST } } },
	/* A target list that names no record of the file: the same refusal. */
	{ ONE(FATELF_E_NO_MATCH), W_TARGETS, "NoHostRecord",
	  { { "path", F_PATH }, { "targets", F_TARGETS }, { "host", F_HOST } } },
	{ ONE(ENGINE_E_DISK_FULL), W_ALWAYS, "DiskFull",
	  { { "needed", F_NEEDED }, { "available", F_AVAILABLE }, { "message", F_MESSAGE } } },
	{ ONE(ENOSPC), W_ALWAYS, "DiskFull",
	  { { "needed", F_NEEDED }, { "available", F_AVAILABLE }, { "message", F_MESSAGE } } },
	{ ONE(FATELF_E_SIG_MISSING), W_ALWAYS, "SignatureRequired",
	  { { "message", F_MESSAGE }, { "keys_dir", F_KEYS_DIR }, { "keys", F_KEYS }, { "key_id", F_KEY_ID } } },
	{ ONE(FATELF_E_SIG_KEY), W_ALWAYS, "SignatureRequired",
	  { { "message", F_MESSAGE }, { "keys_dir", F_KEYS_DIR }, { "keys", F_KEYS }, { "key_id", F_KEY_ID } } },
	{ FATELF_E_KEY_FORMAT, FATELF_E_SIG_COMMENT, W_ALWAYS, "SignatureInvalid",
	  { { "code", F_CODE }, { "message", F_MESSAGE } } },
	{ ONE(ENGINE_E_POLICY), W_ALWAYS, "InvalidPolicy", { { "message", F_MESSAGE } } },
	{ ONE(ENGINE_E_LOCKED), W_ALWAYS, "Busy", { { "message", F_MESSAGE } } },
	{ ONE(ENGINE_E_DIR_UNSAFE), W_ALWAYS, "DirectoryUnsafe",
	  { { "path", F_PATH }, { "uid", F_UID }, { "mode", F_MODE }, { "message", F_MESSAGE } } },
	{ FATELF_E_BASE, FATELF_E_RECORD_HASH, W_ALWAYS, "BundleInvalid",
	  { { "code", F_CODE }, { "entry", F_ENTRY }, { "message", F_MESSAGE } } },
	{ ONE(ENGINE_E_NAME_RESERVED), W_ALWAYS, "BundleInvalid",
	  { { "code", F_CODE }, { "entry", F_ENTRY }, { "message", F_MESSAGE } } },
	{ ANY, W_ALWAYS, "Failed", { { "code", F_CODE }, { "message", F_MESSAGE } } },
};

static bool row_matches(const struct row *r, int code, const fatelf_diag *d, const errmap_ctx *ctx)
{
	if (code < r->lo || code > r->hi)
		return false;
	switch (r->when) {
	case W_DOWNLOAD:
		return ctx && ctx->url;
	case W_TARGETS:
		return d && d->ntargets > 0;
	case W_REPOSITORY:
		return (ctx && ctx->repository) || (d && d->repository[0]);
	default:
		return true;
	}
}

static const struct row *find_row(int code, const fatelf_diag *d, const errmap_ctx *ctx)
{
	if (code < 0)
		code = -code;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		if (row_matches(&rows[i], code, d, ctx))
			return &rows[i];
	return &rows[ARRAY_SIZE(rows) - 1];
}

const char *errmap_error(int code, const fatelf_diag *d, const errmap_ctx *ctx)
{
	return find_row(code, d, ctx)->error;
}

static json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static uint64_t root_available(const errmap_ctx *ctx)
{
	struct statvfs sv;

	if (!ctx || !ctx->root || statvfs(ctx->root, &sv) < 0)
		return 0;
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

static json_object *fact_value(enum fact f, int code, const fatelf_diag *d, const errmap_ctx *ctx)
{
	static const fatelf_diag none = { .record = -1 };
	json_object *a;

	if (!d)
		d = &none;
	switch (f) {
	case F_CODE:
		return json_object_new_string(fatelf_error_name(code));
	case F_MESSAGE:
		return json_object_new_string(fatelf_diag_text(d, code));
	case F_PATH:
		return json_object_new_string(d->subject);
	case F_ENTRY:
		return str_or_null(d->subject);
	case F_PACKAGE:
		return json_object_new_string(d->package[0] ? d->package : d->subject);
	case F_OWNER:
		return str_or_null(d->owner);
	case F_INSTALLED:
		return json_object_new_string(d->installed);
	case F_OFFERED:
		return json_object_new_string(d->offered);
	case F_TARGETS:
		a = json_object_new_array();
		for (unsigned i = 0; a && i < d->ntargets && i < FATELF_DIAG_TARGETS_MAX; i++)
			json_object_array_add(a, json_object_new_string(d->targets[i]));
		return a;
	case F_HOST:
		a = json_object_new_array();
		for (size_t i = 0; a && ctx && i < ctx->nhost; i++)
			json_object_array_add(a, json_object_new_string(ctx->host[i]));
		return a;
	case F_NEEDED:
		return json_object_new_int64(d->has & FATELF_DIAG_HAS_NEEDED ? (int64_t)d->needed : 0);
	case F_AVAILABLE:
		return json_object_new_int64(d->has & FATELF_DIAG_HAS_AVAILABLE ? (int64_t)d->available
										: (int64_t)root_available(ctx));
	case F_KEYS_DIR:
		return json_object_new_string(ctx && ctx->keys_dir ? ctx->keys_dir : "");
	case F_KEYS:
		return json_object_new_int64(ctx ? ctx->keys : 0);
	case F_KEY_ID:
		return str_or_null(d->key_id);
	case F_UID:
		return json_object_new_int64(d->has & FATELF_DIAG_HAS_UID ? (int64_t)d->uid : 0);
	case F_MODE:
		return json_object_new_int64(d->has & FATELF_DIAG_HAS_MODE ? (int64_t)d->mode : 0);
	case F_ID:
		return json_object_new_int64(0);
	case F_URL:
		return json_object_new_string(ctx && ctx->url ? ctx->url : "");
	case F_REPOSITORY:
		return json_object_new_string(ctx && ctx->repository ? ctx->repository : d->repository);
	case F_EXPECTED:
		return json_object_new_string(d->expected);
	case F_GOT:
		return str_or_null(d->got);
	case F_EXPIRES:
		return json_object_new_int64(d->has & FATELF_DIAG_HAS_EXPIRES ? d->expires : 0);
	case F_DEPENDENCY:
		return json_object_new_string(d->dependency);
	case F_CONSTRAINT:
		return json_object_new_string(d->constraint);
	case F_DEPENDENTS:
		a = json_object_new_array();
		for (const char *p = d->dependents; a && *p;) {
			size_t l = strcspn(p, ",");

			json_object_array_add(a, json_object_new_string_len(p, (int)l));
			p += l + (p[l] == ',');
		}
		return a;
	case F_NONE:
		break;
	}
	return NULL;
}

static json_object *row_params(const struct row *r, int code, const fatelf_diag *d,
			       const errmap_ctx *ctx)
{
	json_object *p = json_object_new_object();

	if (!p)
		return NULL;
	for (size_t j = 0; j < PARAMS_MAX && r->params[j].name; j++) {
		json_object *v = fact_value(r->params[j].fact, code, d, ctx);

		if (json_object_object_add(p, r->params[j].name, v) < 0) {
			json_object_put(v);
			json_object_put(p);
			return NULL;
		}
	}
	return p;
}

json_object *errmap_params(int code, const fatelf_diag *d, const errmap_ctx *ctx,
			   const char **ret_error)
{
	const struct row *r = find_row(code, d, ctx);

	if (ret_error)
		*ret_error = r->error;
	return row_params(r, code, d, ctx);
}

json_object *errmap_params_of(const char *error, int code, const fatelf_diag *d,
			      const errmap_ctx *ctx)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		if (strcmp(rows[i].error, error) == 0)
			return row_params(&rows[i], code, d, ctx);
	return NULL;
}

const char *errmap_row_error(size_t i)
{
	return i < ARRAY_SIZE(rows) ? rows[i].error : NULL;
}

const char *errmap_row_param(size_t i, size_t j)
{
	return i < ARRAY_SIZE(rows) && j < PARAMS_MAX ? rows[i].params[j].name : NULL;
}
