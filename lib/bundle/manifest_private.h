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
int fatelf_manifest_targets_union(const fatelf_manifest *m, fatelf_target **ret, size_t *ret_n);

/* The serializer (lib/bundle/manifest_write.c): the fewest bytes an
 * entry of this type, path and symlink target can take in the manifest,
 * whatever its mode, size, hash and records; bundle create refuses a tree
 * whose entries add up past the limit before it hashes a byte. */
size_t fatelf_manifest_entry_min_len(int type, size_t path_len, size_t target_len);

#endif
