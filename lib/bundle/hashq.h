/*
 * Hashing on a second thread (private to libfatelf). A reader that
 * decompresses on one core hands each file's bytes here, in order, and
 * SHA-256 of the whole file and of given byte ranges (FatELF records) is
 * computed on the other core. Bytes are copied into a ring of buffers, so
 * the caller's buffer may be reused at once, and the caller never waits
 * for a file's digests at its end: results are collected later, in file
 * order, which keeps both cores busy across many small files. Small files
 * share a buffer, which goes to the other core when full or when the
 * caller waits for a result (fatelf_hashq_collect with wait): a result
 * collected without waiting may come only some files later.
 */
#ifndef FATELF_HASHQ_H
#define FATELF_HASHQ_H

#include <stddef.h>
#include <stdint.h>

#include "fatelf.h"
#include "macro.h"

typedef struct fatelf_hashq fatelf_hashq;

typedef struct fatelf_hash_range {
	uint64_t offset;
	uint64_t size;
} fatelf_hash_range;

typedef struct fatelf_hash_result {
	uint8_t file[32];
	unsigned nranges;
	uint8_t ranges[FATELF_MAX_RECORDS][32];   /* zeros for a range not inside the file */
} fatelf_hash_result;

/* Files that may be ended and not yet collected. */
#define FATELF_HASHQ_PENDING 128

int fatelf_hashq_new(fatelf_hashq **ret);
/* Starts a file. ranges (sorted by offset, disjoint, at most
 * FATELF_MAX_RECORDS) are hashed apart as well. */
int fatelf_hashq_begin(fatelf_hashq *q, const fatelf_hash_range *ranges, unsigned n);
/* Queues the next bytes of the file; blocks while the ring is full. */
int fatelf_hashq_feed(fatelf_hashq *q, const void *buf, size_t len);
/* Ends the file. Fails with -EBUSY when FATELF_HASHQ_PENDING files
 * are waiting to be collected: collect one first. */
int fatelf_hashq_end(fatelf_hashq *q);
/* Files ended and not collected yet. */
unsigned fatelf_hashq_pending(const fatelf_hashq *q);
/* The oldest ended file's digests: 1 when there was one ready (with
 * wait, waits for it), 0 when none is ready or pending. */
int fatelf_hashq_collect(fatelf_hashq *q, bool wait, fatelf_hash_result *ret);
fatelf_hashq *fatelf_hashq_free(fatelf_hashq *q);
static inline void fatelf_hashq_freep(fatelf_hashq **q)
{
	fatelf_hashq_free(*q);
}
#define _cleanup_hashq_ _cleanup_(fatelf_hashq_freep)

#endif
