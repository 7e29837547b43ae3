/*
 * Helpers shared by the Check unit tests (see testutil.h).
 */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "bundle.h"
#include "elfgen.h"
#include "testutil.h"

const char *tu_tmpdir(void)
{
	static char path[4096];
	const char *base = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/fatelf-test.XXXXXX", base && *base ? base : "/tmp");
	ck_assert_msg(mkdtemp(path) != NULL, "mkdtemp: %s", strerror(errno));
	ck_assert_int_eq(chdir(path), 0);
	return path;
}

uint8_t *tu_read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	*ret_len = len;
	return buf;
}

void tu_write_file(const char *path, const void *buf, size_t len)
{
	int r = elfgen_write_file(path, buf, len);
	ck_assert_msg(r == 0, "writing %s: %s", path, strerror(-r));
}

int tu_file_equals(const char *path, const void *buf, size_t len)
{
	size_t n;
	uint8_t *got = tu_read_file(path, &n);
	int eq = got && n == len && memcmp(got, buf, len) == 0;

	free(got);
	return eq;
}

int tu_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

void tu_key_from_seed(uint8_t seed_byte, uint8_t step, uint8_t id_byte, struct fatelf_ms_seckey *ret_sk,
		      struct fatelf_ms_pubkey *ret_pk)
{
	uint8_t seed[32], pub[32];
	size_t len = sizeof(pub);
	EVP_PKEY *k;

	for (unsigned i = 0; i < 32; i++)
		seed[i] = (uint8_t)(seed_byte + step * i);
	k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof(seed));
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(EVP_PKEY_get_raw_public_key(k, pub, &len), 1);
	EVP_PKEY_free(k);
	for (unsigned i = 0; i < FATELF_MS_KEYID_SIZE; i++)
		ret_sk->keyid[i] = ret_pk->keyid[i] = (uint8_t)(id_byte + i);
	memcpy(ret_sk->sk, seed, 32);
	memcpy(ret_sk->sk + 32, pub, 32);
	memcpy(ret_pk->pk, pub, 32);
}

/* Every from in buf (n bytes) spelt to, in place (same length). */
static void respell(char *buf, size_t n, const char *from, const char *to)
{
	size_t k = strlen(from);

	ck_assert_uint_eq(k, strlen(to));
	for (size_t i = 0; k && i + k <= n; i++)
		if (memcmp(buf + i, from, k) == 0)
			memcpy(buf + i, to, k);
}

void tu_bundle_respell(const char *in, const char *out, const char *from, const char *to,
		       const struct fatelf_ms_seckey *key)
{
	struct archive *r = archive_read_new(), *w = archive_write_new();
	struct archive_entry *e;
	fatelf_diag d;

	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_nonnull(w);
	archive_read_support_format_all(r);
	archive_read_support_filter_all(r);
	ck_assert_int_eq(archive_read_open_filename(r, in, 65536), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_set_format_pax_restricted(w), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_add_filter_zstd(w), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_filename(w, out), ARCHIVE_OK);
	while (archive_read_next_header(r, &e) == ARCHIVE_OK) {
		char name[4096];
		size_t size = (size_t)archive_entry_size(e), got = 0;
		char *data = malloc(size ? size : 1);
		char *sig = NULL;
		bool manifest;

		ck_assert_ptr_nonnull(data);
		while (got < size) {
			la_ssize_t n = archive_read_data(r, data + got, size - got);

			ck_assert_int_gt(n, 0);
			got += (size_t)n;
		}
		snprintf(name, sizeof(name), "%s", archive_entry_pathname(e));
		manifest = strcmp(name, "fatbundle.json") == 0;
		if (strcmp(name, "fatbundle.json.minisig") == 0) {
			free(data);
			continue;       /* made again below */
		}
		respell(name, strlen(name), from, to);
		archive_entry_set_pathname(e, name);
		if (manifest)
			respell(data, size, from, to);
		ck_assert_int_eq(archive_write_header(w, e), ARCHIVE_OK);
		ck_assert_int_eq(archive_write_data(w, data, size), (la_ssize_t)size);
		if (manifest && key) {
			struct archive_entry *se = archive_entry_clone(e);

			ck_assert_int_eq(fatelf_ms_sign(key, data, size, NULL, "respelt", &sig, &d), 0);
			archive_entry_set_pathname(se, "fatbundle.json.minisig");
			archive_entry_set_size(se, (la_int64_t)strlen(sig));
			ck_assert_int_eq(archive_write_header(w, se), ARCHIVE_OK);
			ck_assert_int_eq(archive_write_data(w, sig, strlen(sig)), (la_ssize_t)strlen(sig));
			archive_entry_free(se);
			free(sig);
		}
		free(data);
	}
	ck_assert_int_eq(archive_write_close(w), ARCHIVE_OK);
	archive_write_free(w);
	archive_read_free(r);
}
