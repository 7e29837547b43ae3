/*
 * The strict JSON pre-scan (private to libfatelf). A manifest's bytes
 * pass here before json-c sees them: json-c's strict mode still takes
 * single quotes, NaN and raw control bytes, and silently keeps the last
 * of two equal keys. The scan rejects the former and counts keys, so
 * that a duplicate shows up as a difference against the parsed tree
 * (fatelf_json_count_keys); it also counts the entries, so that an entry
 * limit is enforced before json-c builds a tree for them.
 */
#ifndef FATELF_JSONSCAN_H
#define FATELF_JSONSCAN_H

#include <json-c/json.h>
#include <stddef.h>

#include "fatelf.h"

/* Nesting a manifest needs is 6; anything far deeper is an attack. */
#define FATELF_JSON_DEPTH 64

typedef struct fatelf_json_scan {
	size_t keys;            /* object keys in the text */
	size_t entries;         /* elements of the top-level "entries" array */
} fatelf_json_scan;

/* 0, or -FATELF_E_MANIFEST_JSON (or _SCHEMA for a NUL in a key) with d
 * naming the byte. */
int fatelf_json_prescan(const char *s, size_t len, fatelf_json_scan *ret, fatelf_diag *d);
/* Every object key in the tree, nested ones included. */
size_t fatelf_json_count_keys(json_object *o);

#endif
