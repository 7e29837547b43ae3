/*
 * Minisign-compatible keys and signatures, and the SHA-256 helpers of the
 * bundle layer. This is the one place libfatelf touches OpenSSL libcrypto:
 * Ed25519 signatures, BLAKE2b-512 prehashing, scrypt to decrypt secret
 * keys, SHA-256 for manifests. Every parser here reads untrusted text (a
 * key or a signature shipped in a bundle) as a pointer and a length, never
 * assumes a NUL, and checks each field's size before using it.
 *
 * The formats (all base64 fields in the standard alphabet, with padding):
 *   public key  "Ed" | key id (8) | Ed25519 public key (32)
 *   secret key  "Ed" | kdf ("Sc" scrypt, or two NULs: unencrypted) | "B2"
 *               | salt (32) | opslimit (8, LE) | memlimit (8, LE)
 *               | [key id (8) | seed+pk (64) | checksum (32)], the bracket
 *               XORed with scrypt output when the kdf is "Sc"
 *   signature   "ED" | key id (8) | Ed25519(BLAKE2b-512(message)) (64),
 *               then a trusted comment line and the global signature
 *               Ed25519(signature || trusted comment text) (64).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "bundle.h"
#include "io.h"
#include "macro.h"

#define ALG_ED25519     "Ed"    /* keys, and legacy (non-prehashed) signatures */
#define ALG_PREHASHED   "ED"
#define KDF_SCRYPT      "Sc"
#define CHK_BLAKE2B     "B2"

#define PUBKEY_BYTES    (2 + FATELF_MS_KEYID_SIZE + 32)
#define SIG_BYTES       (2 + FATELF_MS_KEYID_SIZE + 64)
#define SECKEY_HEAD     (2 + 2 + 2 + 32 + 8 + 8)
#define SECKEY_SECRET   (FATELF_MS_KEYID_SIZE + 64 + 32)
#define SECKEY_BYTES    (SECKEY_HEAD + SECKEY_SECRET)

#define UNTRUSTED_PREFIX "untrusted comment:"
#define TRUSTED_PREFIX  "trusted comment: "

/* A .pub file is two short lines; anything far larger is not one. */
#define PUBKEY_FILE_MAX 4096

/*
 * Scrypt work we agree to do for a secret key file. minisign writes
 * N = 2^20, r = 8, p = 1 (1 GiB); a hostile file must not make us
 * allocate or spin far beyond that.
 */
#define SCRYPT_MAX_MEM  (UINT64_C(1) << 31)
#define SCRYPT_MAX_WORK (UINT64_C(1) << 26)     /* N * r * p */

/* ------------------------------------------------------------ text helpers */

struct cursor {
	const char *p;
	const char *end;
};

/* The next line without its "\n" (and a "\r" before it); false at the end. */
static bool line_next(struct cursor *c, const char **ret_line, size_t *ret_len)
{
	const char *nl;
	size_t n;

	if (c->p >= c->end)
		return false;
	nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	n = (size_t)((nl ? nl : c->end) - c->p);
	*ret_line = c->p;
	c->p = nl ? nl + 1 : c->end;
	if (n > 0 && (*ret_line)[n - 1] == '\r')
		n--;
	*ret_len = n;
	return true;
}

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* true when only blank lines are left. */
static bool rest_blank(struct cursor *c)
{
	const char *l;
	size_t n;

	while (line_next(c, &l, &n))
		if (!is_blank(l, n))
			return false;
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t pl = strlen(prefix);

	return n >= pl && memcmp(s, prefix, pl) == 0;
}

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/*
 * Strict base64 of exactly want bytes: the canonical length with padding,
 * no stray characters, unused bits zero. Surrounding blanks are ignored
 * (hand-edited files). Returns 0, or a short reason in *ret_why.
 */
static int b64_decode_exact(const char *s, size_t n, uint8_t *out, size_t want,
			    const char **ret_why)
{
	size_t enc = (want + 2) / 3 * 4, pad = (3 - want % 3) % 3, o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;

	while (n > 0 && (s[0] == ' ' || s[0] == '\t'))
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n != enc) {
		/* Tell a wrong length from a bad alphabet, for the message. */
		for (size_t i = 0; i < n; i++)
			if (b64_value(s[i]) < 0 && s[i] != '=') {
				*ret_why = "is not valid base64";
				return -1;
			}
		*ret_why = "has the wrong length";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		int v = b64_value(s[i]);

		if (i >= n - pad) {
			if (s[i] != '=') {
				*ret_why = "is not valid base64 (padding)";
				return -1;
			}
			continue;
		}
		if (v < 0) {
			*ret_why = "is not valid base64";
			return -1;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) {
		*ret_why = "is not valid base64 (trailing bits)";
		return -1;
	}
	return 0;
}

/* Standard base64 with padding and a NUL; out holds 4*ceil(n/3)+1 bytes. */
static void b64_encode(const uint8_t *in, size_t n, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* ------------------------------------------------------------- BLAKE2b-256 */

/*
 * The secret key checksum is the unkeyed BLAKE2b with a 32-byte output,
 * which is not a truncated BLAKE2b-512 (the length is hashed into the
 * state), and OpenSSL 3.0 exposes BLAKE2b only at 512 bits. So this is a
 * small BLAKE2b after RFC 7693, used for that 74-byte checksum alone.
 */
static const uint64_t b2_iv[8] = {
	UINT64_C(0x6a09e667f3bcc908), UINT64_C(0xbb67ae8584caa73b),
	UINT64_C(0x3c6ef372fe94f82b), UINT64_C(0xa54ff53a5f1d36f1),
	UINT64_C(0x510e527fade682d1), UINT64_C(0x9b05688c2b3e6c1f),
	UINT64_C(0x1f83d9abfb41bd6b), UINT64_C(0x5be0cd19137e2179),
};

static const uint8_t b2_sigma[10][16] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
	{ 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
	{ 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
	{ 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
	{ 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
	{ 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
	{ 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
	{ 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
	{ 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
	{ 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 },
};

static inline uint64_t rotr64(uint64_t x, unsigned n)
{
	return (x >> n) | (x << (64 - n));
}

static void b2_mix(uint64_t v[16], int a, int b, int c, int d, uint64_t x, uint64_t y)
{
	v[a] = v[a] + v[b] + x;
	v[d] = rotr64(v[d] ^ v[a], 32);
	v[c] = v[c] + v[d];
	v[b] = rotr64(v[b] ^ v[c], 24);
	v[a] = v[a] + v[b] + y;
	v[d] = rotr64(v[d] ^ v[a], 16);
	v[c] = v[c] + v[d];
	v[b] = rotr64(v[b] ^ v[c], 63);
}

static void b2_compress(uint64_t h[8], const uint8_t block[128], uint64_t counter, bool last)
{
	uint64_t v[16], m[16];

	for (int i = 0; i < 16; i++)
		m[i] = get_le64(block + 8 * i);
	for (int i = 0; i < 8; i++) {
		v[i] = h[i];
		v[i + 8] = b2_iv[i];
	}
	v[12] ^= counter;       /* inputs here are far below 2^64 bytes */
	if (last)
		v[14] = ~v[14];
	for (int r = 0; r < 12; r++) {
		const uint8_t *s = b2_sigma[r % 10];

		b2_mix(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
		b2_mix(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
		b2_mix(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
		b2_mix(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
		b2_mix(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
		b2_mix(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
		b2_mix(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
		b2_mix(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
	}
	for (int i = 0; i < 8; i++)
		h[i] ^= v[i] ^ v[i + 8];
	OPENSSL_cleanse(v, sizeof(v));
	OPENSSL_cleanse(m, sizeof(m));
}

/* Unkeyed BLAKE2b with a 32-byte digest. */
static void blake2b_256(const uint8_t *in, size_t len, uint8_t out[32])
{
	uint64_t h[8];
	uint8_t block[128];
	size_t done = 0;

	memcpy(h, b2_iv, sizeof(h));
	h[0] ^= UINT64_C(0x01010000) ^ 32;
	/* Every full block but the last; the last (maybe empty) is flagged. */
	while (len - done > 128) {
		b2_compress(h, in + done, done + 128, false);
		done += 128;
	}
	memset(block, 0, sizeof(block));
	if (len > done)
		memcpy(block, in + done, len - done);
	b2_compress(h, block, len, true);
	for (int i = 0; i < 4; i++)
		put_le64(out + 8 * i, h[i]);
	OPENSSL_cleanse(h, sizeof(h));
	OPENSSL_cleanse(block, sizeof(block));
}

/* ---------------------------------------------------------- OpenSSL pieces */

static int blake2b_512(const void *msg, size_t len, uint8_t out[64])
{
	unsigned outlen = 0;
	int ok;

	ok = EVP_Digest(msg, len, out, &outlen, EVP_blake2b512(), NULL);
	return ok == 1 && outlen == 64 ? 0 : -ENOMEM;
}

static int ed25519_sign(const uint8_t seed[32], const uint8_t *msg, size_t len, uint8_t sig[64])
{
	EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = 64;
	int r = -ENOMEM;

	if (key && ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 && siglen == 64)
		r = 0;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	return r;
}

/* 1 valid, 0 invalid, <0 error. */
static int ed25519_verify(const uint8_t pk[32], const uint8_t *msg, size_t len,
			  const uint8_t sig[64])
{
	EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pk, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int r = -ENOMEM;

	if (key && ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1)
		r = EVP_DigestVerify(ctx, sig, 64, msg, len) == 1;
	else if (!key && ctx)
		r = 0;  /* not a point OpenSSL accepts: nothing verifies with it */
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	return r;
}

static int ed25519_public_from_seed(const uint8_t seed[32], uint8_t pk[32])
{
	EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	size_t n = 32;
	int r = -ENOMEM;

	if (key && EVP_PKEY_get_raw_public_key(key, pk, &n) == 1 && n == 32)
		r = 0;
	EVP_PKEY_free(key);
	return r;
}

/* ------------------------------------------------------------ public keys */

/* Whether a key line of the wrong length is the other kind of key, which
 * is what a mixed-up --sign or --key argument most often is. */
static bool key_line_is(const char *line, size_t n, size_t want)
{
	uint8_t raw[SECKEY_BYTES];
	const char *why;

	return want <= sizeof(raw) && b64_decode_exact(line, n, raw, want, &why) == 0 &&
	       memcmp(raw, ALG_ED25519, 2) == 0;
}


void fatelf_ms_keyid_format(const uint8_t keyid[FATELF_MS_KEYID_SIZE], char buf[17])
{
	/* Exactly as minisign shows ids, so that users can match them: a
	 * little-endian 64-bit number in upper-case hex, without leading
	 * zeros ("908D04D0A1D9BB8" is a 15-digit id). */
	snprintf(buf, 17, "%" PRIX64, get_le64(keyid));
}

void fatelf_ms_pubkey_format(const fatelf_ms_pubkey *k, char buf[64])
{
	uint8_t raw[PUBKEY_BYTES];

	memcpy(raw, ALG_ED25519, 2);
	memcpy(raw + 2, k->keyid, FATELF_MS_KEYID_SIZE);
	memcpy(raw + 2 + FATELF_MS_KEYID_SIZE, k->pk, 32);
	b64_encode(raw, sizeof(raw), buf);
}

int fatelf_ms_pubkey_parse(const char *text, size_t len, fatelf_ms_pubkey *ret, fatelf_diag *d)
{
	struct cursor c = { text, text + len };
	uint8_t raw[PUBKEY_BYTES];
	const char *line, *why;
	size_t n;

	if (!line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1, "public key: empty");
	if (has_prefix(line, n, UNTRUSTED_PREFIX) && !line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "public key: the key line after the comment is missing");
	if (b64_decode_exact(line, n, raw, sizeof(raw), &why) < 0 &&
	    key_line_is(line, n, SECKEY_BYTES))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "this is a minisign secret key, not a public key (trust "
				       "the public key file, minisign's .pub)");
	if (b64_decode_exact(line, n, raw, sizeof(raw), &why) < 0)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "public key: the key line %s (want %zu bytes)", why,
				       sizeof(raw));
	if (memcmp(raw, ALG_ED25519, 2) != 0)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "public key: algorithm is not Ed25519 (\"Ed\")");
	if (!rest_blank(&c))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "public key: unexpected text after the key line");
	memcpy(ret->keyid, raw + 2, FATELF_MS_KEYID_SIZE);
	memcpy(ret->pk, raw + 2 + FATELF_MS_KEYID_SIZE, 32);
	return 0;
}

int fatelf_ms_pubkey_load(const char *path_or_key, fatelf_ms_pubkey *ret, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int r;

	fd = open(path_or_key, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		size_t sl = strlen(path_or_key);

		if (e != ENOENT)
			return fatelf_diag_set(d, -e, -1, "public key: cannot open: %s", strerror(e));
		/* No such file: the argument may be the key itself. Base64 has
		 * '/', so only the key's length tells a mangled key string (whose
		 * own error says more) from a mistyped path. */
		r = fatelf_ms_pubkey_parse(path_or_key, sl, ret, d);
		if (r == 0 || sl == 4 * ((PUBKEY_BYTES + 2) / 3))
			return r;
		return fatelf_diag_set(d, -ENOENT, -1,
				       "public key: no such file, and not a key string either");
	}
	if (fstat(fd, &st) < 0)
		return fatelf_diag_set(d, -errno, -1, "public key: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fatelf_diag_set(d, -EISDIR, -1, "public key: is a directory");
	r = read_fd_max(fd, PUBKEY_FILE_MAX, &buf, &len);
	if (r == -EFBIG)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "public key: file is larger than %d bytes", PUBKEY_FILE_MAX);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "public key: read: %s", strerror(-r));
	return fatelf_ms_pubkey_parse(buf, len, ret, d);
}

/* ------------------------------------------------------------ secret keys */

/* Decodes the base64 line of a secret key file into raw. */
static int seckey_decode(const char *text, size_t len, uint8_t raw[SECKEY_BYTES], fatelf_diag *d)
{
	struct cursor c = { text, text + len };
	const char *line, *why;
	size_t n;

	if (!line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1, "secret key: empty");
	if (has_prefix(line, n, UNTRUSTED_PREFIX) && !line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: the key line after the comment is missing");
	if (b64_decode_exact(line, n, raw, SECKEY_BYTES, &why) < 0 &&
	    key_line_is(line, n, PUBKEY_BYTES))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "this is a minisign public key, not a secret key (sign with "
				       "the secret key file, minisign's .key)");
	if (b64_decode_exact(line, n, raw, SECKEY_BYTES, &why) < 0)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: the key line %s (want %d bytes)", why,
				       SECKEY_BYTES);
	if (memcmp(raw, ALG_ED25519, 2) != 0)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: algorithm is not Ed25519 (\"Ed\")");
	if (memcmp(raw + 2, KDF_SCRYPT, 2) != 0 && memcmp(raw + 2, "\0\0", 2) != 0)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: unknown key derivation (not scrypt \"Sc\" nor none)");
	if (memcmp(raw + 4, CHK_BLAKE2B, 2) != 0)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: checksum algorithm is not BLAKE2b (\"B2\")");
	if (!rest_blank(&c))
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: unexpected text after the key line");
	return 0;
}

bool fatelf_ms_seckey_encrypted(const char *text, size_t len)
{
	uint8_t raw[SECKEY_BYTES];
	bool enc;

	enc = seckey_decode(text, len, raw, NULL) == 0 && memcmp(raw + 2, KDF_SCRYPT, 2) == 0;
	OPENSSL_cleanse(raw, sizeof(raw));
	return enc;
}

/*
 * scrypt's N, r, p from the file's opslimit and memlimit, the way
 * libsodium's crypto_pwhash_scryptsalsa208sha256 picks them (which is
 * what minisign calls): r = 8; a small opslimit bounds N with p = 1,
 * otherwise memlimit bounds N and the rest of opslimit goes to p.
 */
static void scrypt_params(uint64_t opslimit, uint64_t memlimit, uint64_t *ret_n,
			  uint64_t *ret_r, uint64_t *ret_p)
{
	const uint64_t r = 8;
	bool ops_bound;
	uint64_t max_n, n_log2, p = 1;

	if (opslimit < 32768)
		opslimit = 32768;
	ops_bound = opslimit < memlimit / 32;
	max_n = ops_bound ? opslimit / (r * 4) : memlimit / (r * 128);
	for (n_log2 = 1; n_log2 < 63; n_log2++)
		if ((UINT64_C(1) << n_log2) > max_n / 2)
			break;
	if (!ops_bound) {
		uint64_t max_rp = (opslimit / 4) / (UINT64_C(1) << n_log2);

		if (max_rp > 0x3fffffff)
			max_rp = 0x3fffffff;
		p = max_rp / r;
	}
	*ret_n = UINT64_C(1) << n_log2;
	*ret_r = r;
	*ret_p = p;
}

static int seckey_decrypt(uint8_t raw[SECKEY_BYTES], const char *password, fatelf_diag *d)
{
	uint64_t opslimit = get_le64(raw + 38), memlimit = get_le64(raw + 46);
	uint64_t n, r, p;
	uint8_t stream[SECKEY_SECRET];
	int ok;

	if (!password)
		return fatelf_diag_set(d, -FATELF_E_KEY_PASSWORD, -1,
				       "secret key: the key is encrypted and no password was given");
	scrypt_params(opslimit, memlimit, &n, &r, &p);
	if (p == 0 || n > SCRYPT_MAX_MEM / (128 * r) || n * r > SCRYPT_MAX_WORK / p)
		return fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				       "secret key: scrypt limits (opslimit %llu, memlimit %llu) "
				       "are outside what is accepted",
				       (unsigned long long)opslimit, (unsigned long long)memlimit);
	ok = EVP_PBE_scrypt(password, strlen(password), raw + 6, 32, n, r, p,
			    128 * r * (n + p) + (UINT64_C(1) << 20), stream, sizeof(stream));
	if (ok != 1) {
		OPENSSL_cleanse(stream, sizeof(stream));
		return fatelf_diag_set(d, -ENOMEM, -1, "secret key: scrypt failed (N=%llu r=%llu p=%llu)",
				       (unsigned long long)n, (unsigned long long)r,
				       (unsigned long long)p);
	}
	for (size_t i = 0; i < SECKEY_SECRET; i++)
		raw[SECKEY_HEAD + i] ^= stream[i];
	OPENSSL_cleanse(stream, sizeof(stream));
	return 0;
}

int fatelf_ms_seckey_parse(const char *text, size_t len, const char *password,
			   fatelf_ms_seckey *ret, fatelf_diag *d)
{
	uint8_t raw[SECKEY_BYTES], sum_in[2 + FATELF_MS_KEYID_SIZE + 64], sum[32], pk[32];
	const uint8_t *keyid = raw + SECKEY_HEAD, *sk = keyid + FATELF_MS_KEYID_SIZE,
		      *chk = sk + 64;
	static const uint8_t zero[32];
	bool encrypted;
	int r;

	r = seckey_decode(text, len, raw, d);
	if (r < 0)
		goto out;
	encrypted = memcmp(raw + 2, KDF_SCRYPT, 2) == 0;
	if (encrypted) {
		r = seckey_decrypt(raw, password, d);
		if (r < 0)
			goto out;
	}

	memcpy(sum_in, ALG_ED25519, 2);
	memcpy(sum_in + 2, keyid, FATELF_MS_KEYID_SIZE);
	memcpy(sum_in + 2 + FATELF_MS_KEYID_SIZE, sk, 64);
	blake2b_256(sum_in, sizeof(sum_in), sum);
	/* minisign -W leaves the checksum of an unencrypted key zero. */
	if (CRYPTO_memcmp(sum, chk, 32) != 0 &&
	    (encrypted || CRYPTO_memcmp(chk, zero, 32) != 0)) {
		r = encrypted ? fatelf_diag_set(d, -FATELF_E_KEY_PASSWORD, -1,
						"secret key: wrong password (checksum mismatch)")
			      : fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
						"secret key: checksum mismatch");
		goto out;
	}
	r = ed25519_public_from_seed(sk, pk);
	if (r < 0) {
		fatelf_diag_set(d, r, -1, "secret key: cannot load the Ed25519 seed");
		goto out;
	}
	if (memcmp(pk, sk + 32, 32) != 0) {
		r = fatelf_diag_set(d, -FATELF_E_KEY_FORMAT, -1,
				    "secret key: its public half does not match its seed");
		goto out;
	}
	memcpy(ret->keyid, keyid, FATELF_MS_KEYID_SIZE);
	memcpy(ret->sk, sk, 64);
	r = 0;
out:
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(sum_in, sizeof(sum_in));
	OPENSSL_cleanse(sum, sizeof(sum));
	return r;
}

/* ------------------------------------------------------------ key pairs */

/* What minisign -G writes: libsodium's "sensitive" scrypt limits, which
 * scrypt_params turns into N = 2^20, r = 8, p = 1 (1 GiB, a few seconds). */
#define KEYGEN_OPSLIMIT (UINT64_C(1) << 25)
#define KEYGEN_MEMLIMIT (UINT64_C(1) << 30)

static int random_bytes(uint8_t *buf, size_t n)
{
	return RAND_bytes(buf, (int)n) == 1 ? 0 : -EIO;
}

int fatelf_ms_keygen(const char *password, char **ret_pub, char **ret_sec, fatelf_ms_pubkey *ret_key,
		     fatelf_diag *d)
{
	uint8_t raw[SECKEY_BYTES], pub[PUBKEY_BYTES], sum_in[2 + FATELF_MS_KEYID_SIZE + 64];
	uint8_t *keyid = raw + SECKEY_HEAD, *sk = keyid + FATELF_MS_KEYID_SIZE, *chk = sk + 64;
	char sec64[4 * ((SECKEY_BYTES + 2) / 3) + 1], pub64[4 * ((PUBKEY_BYTES + 2) / 3) + 1], id[17];
	char *pubtext = NULL, *sectext = NULL;
	int r;

	memset(raw, 0, sizeof(raw));
	memcpy(raw, ALG_ED25519, 2);
	memcpy(raw + 2, password ? KDF_SCRYPT : "\0\0", 2);
	memcpy(raw + 4, CHK_BLAKE2B, 2);
	r = random_bytes(raw + 6, 32);                          /* salt */
	if (r >= 0)
		r = random_bytes(keyid, FATELF_MS_KEYID_SIZE);
	if (r >= 0)
		r = random_bytes(sk, 32);                       /* seed */
	if (r < 0) {
		r = fatelf_diag_set(d, r, -1, "key pair: no random bytes from libcrypto");
		goto out;
	}
	r = ed25519_public_from_seed(sk, sk + 32);
	if (r < 0) {
		fatelf_diag_set(d, r, -1, "key pair: cannot derive the Ed25519 public key");
		goto out;
	}
	memcpy(sum_in, ALG_ED25519, 2);
	memcpy(sum_in + 2, keyid, FATELF_MS_KEYID_SIZE);
	memcpy(sum_in + 2 + FATELF_MS_KEYID_SIZE, sk, 64);
	blake2b_256(sum_in, sizeof(sum_in), chk);

	memcpy(pub, ALG_ED25519, 2);
	memcpy(pub + 2, keyid, FATELF_MS_KEYID_SIZE);
	memcpy(pub + 2 + FATELF_MS_KEYID_SIZE, sk + 32, 32);
	if (ret_key) {
		memcpy(ret_key->keyid, keyid, FATELF_MS_KEYID_SIZE);
		memcpy(ret_key->pk, sk + 32, 32);
	}
	fatelf_ms_keyid_format(keyid, id);

	if (password) {
		put_le64(raw + 38, KEYGEN_OPSLIMIT);
		put_le64(raw + 46, KEYGEN_MEMLIMIT);
		/* Encrypting is the same XOR with the same stream. */
		r = seckey_decrypt(raw, password, d);
		if (r < 0)
			goto out;
	}
	b64_encode(raw, sizeof(raw), sec64);
	b64_encode(pub, sizeof(pub), pub64);
	if (asprintf(&pubtext, UNTRUSTED_PREFIX " minisign public key %s\n%s\n", id, pub64) < 0) {
		pubtext = NULL;
		r = fatelf_diag_oom(d);
		goto out;
	}
	if (asprintf(&sectext, UNTRUSTED_PREFIX " minisign %ssecret key\n%s\n",
		     password ? "encrypted " : "", sec64) < 0) {
		sectext = NULL;
		r = fatelf_diag_oom(d);
		goto out;
	}
	*ret_pub = TAKE_PTR(pubtext);
	*ret_sec = TAKE_PTR(sectext);
	r = 0;
out:
	free(pubtext);
	if (sectext) {
		explicit_bzero(sectext, strlen(sectext));
		free(sectext);
	}
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(sum_in, sizeof(sum_in));
	OPENSSL_cleanse(sec64, sizeof(sec64));
	return r;
}

/* ------------------------------------------------------------- signatures */

static int comment_check(const char *what, const char *s, size_t max, fatelf_diag *d)
{
	size_t n = strlen(s);

	if (memchr(s, '\n', n) || memchr(s, '\r', n))
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "%s comment is not a single line",
				       what);
	if (n > max)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1,
				       "%s comment is longer than %zu bytes", what, max);
	return 0;
}

/* Ed25519 over signature || trusted comment. */
static int global_message(const uint8_t sig[64], const char *tc, uint8_t **ret, size_t *ret_len)
{
	size_t tl = strlen(tc);
	uint8_t *m = malloc(64 + tl);

	if (!m)
		return -ENOMEM;
	memcpy(m, sig, 64);
	memcpy(m + 64, tc, tl);
	*ret = m;
	*ret_len = 64 + tl;
	return 0;
}

int fatelf_ms_sign(const fatelf_ms_seckey *k, const void *msg, size_t len,
		   const char *untrusted_comment, const char *trusted_comment,
		   char **ret_sigtext, fatelf_diag *d)
{
	uint8_t raw[SIG_BYTES], hash[64], global[64];
	char sig64[4 * (SIG_BYTES + 2) / 3 + 1], global64[4 * (64 + 2) / 3 + 1];
	_cleanup_free_ uint8_t *gm = NULL;
	size_t gmlen;
	char *text;
	int r;

	if (!untrusted_comment)
		untrusted_comment = "signature from fatelf secret key";
	if (!trusted_comment)
		trusted_comment = "fatelf signature";
	/* minisign reads the untrusted comment line into a 1024-byte buffer:
	 * its prefix, 1003 bytes of text, the newline and a NUL fill it. */
	r = comment_check("untrusted", untrusted_comment, 1003, d);
	if (r < 0)
		return r;
	/* What fatelf_ms_sig_parse takes back. */
	r = comment_check("trusted", trusted_comment,
			  sizeof(((fatelf_ms_signature *)0)->trusted_comment) - 1, d);
	if (r < 0)
		return r;

	memcpy(raw, ALG_PREHASHED, 2);
	memcpy(raw + 2, k->keyid, FATELF_MS_KEYID_SIZE);
	r = blake2b_512(msg, len, hash);
	if (r >= 0)
		r = ed25519_sign(k->sk, hash, sizeof(hash), raw + 2 + FATELF_MS_KEYID_SIZE);
	if (r >= 0)
		r = global_message(raw + 2 + FATELF_MS_KEYID_SIZE, trusted_comment, &gm, &gmlen);
	if (r >= 0)
		r = ed25519_sign(k->sk, gm, gmlen, global);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "signing failed in libcrypto");

	b64_encode(raw, sizeof(raw), sig64);
	b64_encode(global, sizeof(global), global64);
	if (asprintf(&text, UNTRUSTED_PREFIX " %s\n%s\n" TRUSTED_PREFIX "%s\n%s\n",
		     untrusted_comment, sig64, trusted_comment, global64) < 0)
		return fatelf_diag_oom(d);
	*ret_sigtext = text;
	return 0;
}

int fatelf_ms_sig_parse(const char *text, size_t len, fatelf_ms_signature *ret, fatelf_diag *d)
{
	struct cursor c = { text, text + len };
	uint8_t raw[SIG_BYTES], global[64];
	size_t n, tl, tmax = sizeof(ret->trusted_comment) - 1;
	const char *line, *why, *tc;

	if (!line_next(&c, &line, &n) || !has_prefix(line, n, UNTRUSTED_PREFIX))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the first line is not an untrusted comment");
	if (!line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the signature line is missing");
	if (b64_decode_exact(line, n, raw, sizeof(raw), &why) < 0)
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the signature line %s (want %zu bytes)", why,
				       sizeof(raw));
	if (memcmp(raw, ALG_PREHASHED, 2) != 0 && memcmp(raw, ALG_ED25519, 2) != 0)
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: unknown algorithm (not \"ED\" nor \"Ed\")");
	if (!line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the trusted comment line is missing");
	if (!has_prefix(line, n, TRUSTED_PREFIX))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the third line is not a trusted comment");
	tc = line + strlen(TRUSTED_PREFIX);
	tl = n - strlen(TRUSTED_PREFIX);
	if (tl > tmax)
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the trusted comment is longer than %zu bytes", tmax);
	if (memchr(tc, '\0', tl))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the trusted comment holds a NUL byte");
	if (!line_next(&c, &line, &n))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the global signature line is missing");
	if (b64_decode_exact(line, n, global, sizeof(global), &why) < 0)
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: the global signature line %s (want %zu bytes)",
				       why, sizeof(global));
	if (!rest_blank(&c))
		return fatelf_diag_set(d, -FATELF_E_SIG_FORMAT, -1,
				       "signature: unexpected text after the global signature");

	memcpy(ret->algorithm, raw, 2);
	ret->algorithm[2] = '\0';
	memcpy(ret->keyid, raw + 2, FATELF_MS_KEYID_SIZE);
	memcpy(ret->sig, raw + 2 + FATELF_MS_KEYID_SIZE, 64);
	memcpy(ret->trusted_comment, tc, tl);
	ret->trusted_comment[tl] = '\0';
	memcpy(ret->global_sig, global, 64);
	return 0;
}

int fatelf_ms_verify(const fatelf_ms_pubkey *keys, size_t nkeys, const void *msg, size_t len,
		     const char *sigtext, size_t siglen, const fatelf_ms_pubkey **ret_key,
		     fatelf_diag *d)
{
	fatelf_ms_signature s;
	const fatelf_ms_pubkey *key = NULL;
	_cleanup_free_ uint8_t *gm = NULL;
	uint8_t hash[64];
	char id[17];
	size_t gmlen;
	int r;

	r = fatelf_ms_sig_parse(sigtext, siglen, &s, d);
	if (r < 0)
		return r;
	if (strcmp(s.algorithm, ALG_PREHASHED) != 0)
		return fatelf_diag_set(d, -FATELF_E_SIG_ALGORITHM, -1,
				       "signature: legacy algorithm \"%s\"; only prehashed \"ED\" "
				       "signatures are accepted", s.algorithm);
	for (size_t i = 0; i < nkeys && !key; i++)
		if (memcmp(keys[i].keyid, s.keyid, FATELF_MS_KEYID_SIZE) == 0)
			key = &keys[i];
	if (!key) {
		fatelf_ms_keyid_format(s.keyid, id);
		return fatelf_diag_set(d, -FATELF_E_SIG_KEY, -1,
				       "signature: made by key %s, which is not a trusted key", id);
	}

	r = blake2b_512(msg, len, hash);
	if (r >= 0)
		r = ed25519_verify(key->pk, hash, sizeof(hash), s.sig);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "signature: libcrypto failed");
	fatelf_ms_keyid_format(key->keyid, id);
	if (r == 0)
		return fatelf_diag_set(d, -FATELF_E_SIG_INVALID, -1,
				       "signature: does not match the data (key %s)", id);

	r = global_message(s.sig, s.trusted_comment, &gm, &gmlen);
	if (r >= 0)
		r = ed25519_verify(key->pk, gm, gmlen, s.global_sig);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "signature: libcrypto failed");
	if (r == 0)
		return fatelf_diag_set(d, -FATELF_E_SIG_COMMENT, -1,
				       "signature: the trusted comment's signature does not match "
				       "(key %s)", id);
	if (ret_key)
		*ret_key = key;
	return 0;
}

/* ---------------------------------------------------------------- SHA-256 */

struct fatelf_sha256 {
	EVP_MD_CTX *ctx;
	EVP_MD *md;     /* fetched once: the implicit fetch per init is slow */
};

fatelf_sha256 *fatelf_sha256_new(void)
{
	fatelf_sha256 *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	h->ctx = EVP_MD_CTX_new();
	if (!h->md || !h->ctx || EVP_DigestInit_ex2(h->ctx, h->md, NULL) != 1)
		return fatelf_sha256_free(h);
	return h;
}

void fatelf_sha256_update(fatelf_sha256 *h, const void *buf, size_t len)
{
	EVP_DigestUpdate(h->ctx, buf, len);
}

void fatelf_sha256_final(fatelf_sha256 *h, uint8_t out[32])
{
	unsigned n = 32;

	EVP_DigestFinal_ex(h->ctx, out, &n);
	EVP_DigestInit_ex2(h->ctx, h->md, NULL);
}

fatelf_sha256 *fatelf_sha256_free(fatelf_sha256 *h)
{
	if (h) {
		EVP_MD_CTX_free(h->ctx);
		EVP_MD_free(h->md);
		free(h);
	}
	return NULL;
}
