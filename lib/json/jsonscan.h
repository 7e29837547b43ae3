/*
 * The strict JSON reader of manifests (private to libfatelf): no tree.
 *
 * A manifest passes three times over its bytes, none of which builds a
 * node per value: the lexical pre-scan (fatelf_json_prescan: single
 * quotes, NaN, raw control bytes, lone surrogates, the nesting limit, a
 * NUL in a key, and the count of entries, so that the entry limit is
 * enforced before anything is allocated for them); the grammar check
 * (fatelf_json_validate: the grammar, numbers as json-c's strict mode
 * reads them, duplicate keys); and the pull reader, which walks the now
 * valid text in place for the schema parser (lib/bundle/manifest.c) to
 * fill the compact model directly. The only memory in use besides the
 * model is one scratch buffer for the string being read.
 */
#ifndef FATELF_JSONSCAN_H
#define FATELF_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "fatelf.h"
#include "macro.h"

/* Nesting a manifest needs is 6; anything far deeper is an attack. */
#define FATELF_JSON_DEPTH 64

typedef struct fatelf_json_scan {
	size_t keys;            /* object keys in the text */
	size_t entries;         /* elements of the top-level "entries" array */
} fatelf_json_scan;

/* 0, or -FATELF_E_MANIFEST_JSON (or _SCHEMA for a NUL in a key) with d
 * naming the byte. */
int fatelf_json_prescan(const char *s, size_t len, fatelf_json_scan *ret, fatelf_diag *d);

typedef enum fatelf_json_type {
	FATELF_JSON_NULL,
	FATELF_JSON_BOOL,
	FATELF_JSON_INT,
	FATELF_JSON_DOUBLE,
	FATELF_JSON_STRING,
	FATELF_JSON_OBJECT,
	FATELF_JSON_ARRAY,
} fatelf_json_type;

/*
 * The grammar over text that passed the pre-scan: one value with only
 * white space around it, no value nested deeper than FATELF_JSON_DEPTH - 1
 * below the top, numbers as json-c's strict mode reads them (no leading
 * zero on a positive integer, a fraction or exponent with digits), and
 * no object with the same key twice (after escapes are decoded). 0 with
 * the type of the top value, or -FATELF_E_MANIFEST_JSON with d naming the
 * byte; -ENOMEM. Its pass also notes, in doc, where each object and array
 * of the top FATELF_JSON_INDEX_DEPTH levels ends and how many members it
 * has, so that the pull reader skips and counts them without a scan.
 */
typedef struct fatelf_json_doc fatelf_json_doc;
int fatelf_json_validate(fatelf_json_doc *doc, fatelf_json_type *ret_top, fatelf_diag *d);

/* The levels indexed: the manifest, its "entries" array and each entry. */
#define FATELF_JSON_INDEX_DEPTH 3

/* An indexed object or array: offsets of its first byte and just past its
 * last, and its number of members. */
typedef struct fatelf_json_span {
	uint32_t start, end, count;
} fatelf_json_span;

/* The pull reader over validated text. */
struct fatelf_json_doc {
	const char *s;
	size_t len;
	char *kbuf, *vbuf;      /* the decoded key and string value */
	size_t kcap, vcap;
	fatelf_json_span *spans;        /* by start; none for text over 4 GiB */
	size_t nspans, spans_cap;
};

typedef struct fatelf_json_value {
	fatelf_json_type type;
	size_t at;              /* the value's first byte */
	const char *str;        /* strings: decoded, NUL-terminated, valid until the next read */
	size_t len;             /* (a \u0000 makes strlen(str) < len) */
	int64_t i64;            /* integers: json-c's two views, each saturated */
	uint64_t u64;
	bool b;
} fatelf_json_value;

void fatelf_json_doc_init(fatelf_json_doc *doc, const char *s, size_t len);
void fatelf_json_doc_done(fatelf_json_doc *doc);
#define _cleanup_json_doc_ _cleanup_(fatelf_json_doc_done)

/* The value at offset at (white space before it skipped); -ENOMEM. */
int fatelf_json_read(fatelf_json_doc *doc, size_t at, fatelf_json_value *ret);
/* The offset just past the value at offset at. */
size_t fatelf_json_skip(const fatelf_json_doc *doc, size_t at);

/*
 * Iteration over the object or array whose first byte is at *pos: each
 * call moves *pos on and gives the next member's key (objects; decoded,
 * valid until the next key is read) and the offset of its value; 0 after
 * the last, 1 for a member, -ENOMEM.
 */
int fatelf_json_next_member(fatelf_json_doc *doc, size_t *pos, const char **ret_key,
			    size_t *ret_value);
/* The number of members of the object or array at offset at. */
size_t fatelf_json_count(const fatelf_json_doc *doc, size_t at);
/* The offset of key's value in the object at offset at: 1, 0 when it has
 * no such key, -ENOMEM. */
int fatelf_json_find(fatelf_json_doc *doc, size_t at, const char *key, size_t *ret_value);

#endif
