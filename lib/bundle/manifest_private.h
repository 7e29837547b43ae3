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

#endif
