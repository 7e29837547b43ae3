/*
 * The fatelf bundle verbs' shared interface: the handler of each verb (one
 * cmd_bundle_VERB.c file each, dispatched by the table in cmd_bundle.c)
 * and the few helpers more than one verb uses (bundle_common.c): opening
 * a bundle and the --key options that name trusted public keys.
 */
#ifndef FATELF_TOOL_BUNDLE_CMD_H
#define FATELF_TOOL_BUNDLE_CMD_H

#include <stddef.h>

#include "bundle.h"
#include "cmd.h"
#include "unify.h"

/* Verbs: argv[0] is the verb's name. Each returns an exit status. */
int cmd_bundle_create(int argc, char **argv);
int cmd_bundle_inspect(int argc, char **argv);
int cmd_bundle_verify(int argc, char **argv);
int cmd_bundle_extract(int argc, char **argv);
int cmd_bundle_keygen(int argc, char **argv);

/* bundle create --from (bundle_unify.c): unifies uo's sources into out
 * through a, which open_output opens; prints the report. Returns the exit
 * status. */
int bundle_unify(const char *out, fatelf_unify_opts *uo, fatelf_atomic *a, const bool *open_failed, bool json,
		 fatelf_diag *d);
/* bundle create --from: the Depends of each .deb source mapped into
 * depends (text form, malloc'd, added after the *ndepends given, each
 * name once; a name given already wins). A relation whose package is
 * among fat (the names of --fat-packages) is kept; any other is left out
 * with a warning line naming it, or kept with keep (--keep-depends)
 * when it names one package. depends has room for cap. */
int bundle_deb_depends(const fatelf_unify_opts *uo, const char *const *fat, size_t nfat, bool keep,
		       char **depends, size_t *ndepends, size_t cap, fatelf_diag *d);
/* {"file": out, "error": {code, record, message, subject}} */
int bundle_create_json_error(const char *out, const fatelf_diag *d, int r);

/* Opens a bundle read-only; a negative code with d filled on failure. */
int bundle_open(const char *path, fatelf_diag *d);

/* Reports an error of reading the bundle at path: "fatelf: PATH: MESSAGE",
 * where the message names the entry. Returns the exit status. */
int bundle_report(const char *path, const fatelf_diag *d, int r);

/* A minisign secret key from path; an encrypted one is decrypted with
 * password_file's first line, else a password asked on the terminal. */
int bundle_load_seckey(const char *path, const char *password_file, fatelf_ms_seckey *ret, fatelf_diag *d);

/* fatelf repo (cmd_repo.c): the repository verbs. */
int cmd_repo(int argc, char **argv);
/* The repository at an http(s) URL copied into a new temporary
 * directory (its path in ret_dir) through the download helper: the
 * pointer, the index and its signature, and with everything every
 * manifest, signature, pack list and object (repo_remote.c). */
int repo_remote_copy(const char *url, bool everything, char *ret_dir, size_t cap, fatelf_diag *d);
/* The names of the packages the index of the repository at arg offers (a
 * directory, a file:// or an http(s) URL; the index is read for its
 * names alone, trusted for nothing else), malloc'd, in *ret
 * (cmd_repo.c). */
int repo_package_names(const char *arg, char ***ret, size_t *ret_n, fatelf_diag *d);
/* Removes such a directory. */
void repo_remote_remove(const char *dir);

/* Trusted public keys, one per --key option */
#define BUNDLE_MAX_KEYS 16

struct bundle_keys {
	fatelf_ms_pubkey v[BUNDLE_MAX_KEYS];
	size_t n;
};

/*
 * Adds the key arg names (a minisign .pub file or an RW... string).
 * Returns 0, or a negative code once the failure is reported (for
 * cmd_exit_code).
 */
int bundle_keys_add(struct bundle_keys *k, const char *arg);
/* Read options that trust k's keys and, when there are any, require a
 * signature by one of them. k must outlive the options. */
fatelf_bundle_read_opts bundle_keys_read_opts(const struct bundle_keys *k);

#endif
