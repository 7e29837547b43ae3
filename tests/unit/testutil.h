/*
 * Helpers shared by the Check unit tests: a fresh temporary directory per
 * test, and whole-file reads for asserting bytes on disk.
 */
#ifndef FATELF_TESTUTIL_H
#define FATELF_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Creates a fresh directory under $TMPDIR (or /tmp) and chdirs into it.
 * Returns its path (static buffer). Aborts the test on failure. */
const char *tu_tmpdir(void);
/* Reads a whole file; NULL if it cannot be read. Malloc'd. */
uint8_t *tu_read_file(const char *path, size_t *ret_len);
/* Writes a whole file with mode 0755; aborts the test on failure. */
void tu_write_file(const char *path, const void *buf, size_t len);
/* 1 when the file holds exactly buf. */
int tu_file_equals(const char *path, const void *buf, size_t len);
/* A minisign key pair made from a seed (deterministic, for tests): the
 * Ed25519 seed is seed_byte + step * i, the key id id_byte + i. */
struct fatelf_ms_seckey;
struct fatelf_ms_pubkey;
void tu_key_from_seed(uint8_t seed_byte, uint8_t step, uint8_t id_byte, struct fatelf_ms_seckey *ret_sk,
		      struct fatelf_ms_pubkey *ret_pk);
/*
 * A bundle no writer makes, for the readers' refusals: in's members with
 * every from in the manifest and in member names spelt to (same length,
 * so sizes and order hold), the manifest signed again with key (NULL:
 * unsigned), written to out (pax, zstd). Aborts the test on failure.
 */
void tu_bundle_respell(const char *in, const char *out, const char *from, const char *to,
		       const struct fatelf_ms_seckey *key);
/* Runs a Check suite and returns the process exit status. */
struct Suite;
int tu_run_suite(struct Suite *s);

#endif
