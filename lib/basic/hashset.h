/*
 * A set of the caller's items by hash: open addressing with linear
 * probing, kept at most half full. The set holds no keys, only the
 * items' indexes into the caller's own array and their hashes; the
 * caller says whether an item equals a key, so one set serves paths,
 * SHA-256 digests or anything else an array holds. An index stays valid
 * while the caller's array grows (a pointer would not).
 *
 * Also the one 32-byte digest comparison, for qsort and bsearch over
 * arrays of SHA-256 digests (or of structs that start with one).
 */
#ifndef FATELF_HASHSET_H
#define FATELF_HASHSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define HASHSET_NONE SIZE_MAX

typedef struct hashset {
	struct hashset_slot *v;         /* cap slots; NULL until the first add */
	size_t cap;                     /* 0, or a power of two */
	size_t n;
} hashset;

/* Whether the caller's item equals key. */
typedef bool (*hashset_eq_fn)(size_t item, const void *key, const void *userdata);

/* The item added under hash that equals key, or HASHSET_NONE. */
size_t hashset_find(const hashset *s, uint64_t hash, const void *key, hashset_eq_fn eq,
		    const void *userdata);
/* Adds item under hash (an equal item already there is the caller's to
 * look for first); -ENOMEM when the set cannot grow. */
int hashset_add(hashset *s, uint64_t hash, size_t item);
/* Forgets every item, keeping the memory for the next ones. */
void hashset_clear(hashset *s);
void hashset_done(hashset *s);
#define _cleanup_hashset_ _cleanup_(hashset_done)

/* FNV-1a of a string. */
uint64_t hashset_hash_str(const char *str);
/* A SHA-256 digest is its own good hash: its first eight bytes. */
uint64_t hashset_hash_digest(const uint8_t sha[32]);

/* memcmp of two 32-byte digests, for qsort and bsearch. */
int digest_cmp(const void *a, const void *b);

#endif
