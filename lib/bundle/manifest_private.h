/*
 * What the manifest's modules share and the public API does not show
 * (private to libfatelf): the package rules' length limits, which the
 * parser's and the serializer's messages quote, and the model's two
 * derived orders, which the serializer writes and the parser checks.
 */
#ifndef FATELF_MANIFEST_PRIVATE_H
#define FATELF_MANIFEST_PRIVATE_H

#include <stddef.h>

#include "bundle.h"

/* dpkg has no maximum; ours keeps "fatbundle NAME VERSION" in a trusted
 * comment and every message short. */
#define PKG_NAME_MAX 255
#define PKG_VERSION_MAX 255

/* The model (lib/bundle/manifest.c) */
void fatelf_manifest_entries_sort(fatelf_manifest *m);
/* The order of "targets" lists: machine, word size, byte order, osabi,
 * osabi version. */
int fatelf_manifest_target_cmp(const fatelf_target *a, const fatelf_target *b);
int fatelf_manifest_targets_union(const fatelf_manifest *m, fatelf_target **ret, size_t *ret_n);

/* The serializer (lib/bundle/manifest_write.c): the fewest bytes an
 * entry of this type, path and symlink target can take in the manifest,
 * whatever its mode, size, hash and records; bundle create refuses a tree
 * whose entries add up past the limit before it hashes a byte. */
size_t fatelf_manifest_entry_min_len(int type, size_t path_len, size_t target_len);

/* The writer (lib/bundle/bundle_write.c), shared with the unify writer:
 * the options' checks, the limits, the manifest serialized and signed,
 * and the archive written member by member. */
struct archive;
int fatelf_bundle_opts_check(const fatelf_bundle_create_opts *o, fatelf_diag *d);
/* The package's fields of m (name, version, summary, vendor, license,
 * homepage) from o; -ENOMEM. */
int fatelf_bundle_manifest_package(fatelf_manifest *m, const fatelf_bundle_create_opts *o);
void fatelf_bundle_limits_fill(fatelf_bundle_limits *lim, const fatelf_bundle_limits *given);
int fatelf_bundle_manifest_finish(fatelf_manifest *m, const fatelf_bundle_create_opts *o,
				  const fatelf_bundle_limits *lim, char **ret_json, size_t *ret_len,
				  char **ret_sig, fatelf_diag *d);
/* The manifest and signature members are written here already. */
int fatelf_bundle_archive_open(const fatelf_bundle_create_opts *o, bool non_ascii, int out_fd,
			       const char *json, size_t json_len, const char *sig, struct archive **ret,
			       fatelf_diag *d);
/* An entry's member header (a file's data follows through _data). */
int fatelf_bundle_archive_header(struct archive *a, const fatelf_bundle_create_opts *o, const fatelf_bundle_entry *e,
				 fatelf_diag *d);
int fatelf_bundle_archive_data(struct archive *a, const fatelf_bundle_entry *e, const void *buf, size_t len,
			       fatelf_diag *d);
/* Finishes and frees a. */
int fatelf_bundle_archive_close(struct archive *a, fatelf_diag *d);

#endif
