/*
 * From a failure to a Varlink error of io.fatelf.Manager: one table that
 * maps an error code (and, where the interface asks for it, a fact of the
 * diag) to an error name, and names which fact of the diag becomes which
 * typed parameter. schema/io.fatelf.Manager.varlink declares the same
 * parameters; tests/integration/errors.sh holds the two together. Nothing
 * here reads a message's text: the message travels as it is.
 */
#ifndef FATELFD_ERRMAP_H
#define FATELFD_ERRMAP_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "diag.h"

/* What the daemon adds to the diag's facts: its own state. */
typedef struct errmap_ctx {
	const char *url;                /* the download's URL as shown, when the download failed */
	const char *repository;         /* the repository a failure is about */
	const char *root;               /* the root, whose free space a write lacked */
	const char *keys_dir;           /* TrustedKeys= */
	int64_t keys;                   /* trusted keys loaded */
	const char *const *host;        /* the host's targets, native first */
	size_t nhost;
} errmap_ctx;

/* The error's name without the interface ("Conflict") for code (negative)
 * and d (may be NULL). */
const char *errmap_error(int code, const fatelf_diag *d, const errmap_ctx *ctx);
/* The parameters of that error, from d's facts and ctx; NULL on ENOMEM.
 * *ret_error gets the name as errmap_error gives it. */
json_object *errmap_params(int code, const fatelf_diag *d, const errmap_ctx *ctx,
			   const char **ret_error);

/* The parameters of the error named error (a row of the table), whatever
 * code is: for a failure the interface has no name for (Failed). */
json_object *errmap_params_of(const char *error, int code, const fatelf_diag *d,
			      const errmap_ctx *ctx);

/* The table, for tests: the i-th row's error name and the name of its
 * j-th parameter (NULL past the end). */
const char *errmap_row_error(size_t i);
const char *errmap_row_param(size_t i, size_t j);

#endif
