/*
 * Unit tests for lib/bundle/minisign.c: keys and signatures checked against the
 * real minisign CLI in both directions (it signs, we verify; we sign, it
 * verifies), encrypted keys, every rejection code, hostile text, and the
 * SHA-256 and hex helpers. The minisign binary is required: without it
 * the interop tests fail rather than skip.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "bundle.h"
#include "testutil.h"

/* ------------------------------------------------------------ helpers */

/*
 * Runs argv (looked up in PATH) in the current directory with stdin_text
 * on its stdin; returns its exit status (127 when it could not be run) and
 * its stdout (malloc'd, NUL-terminated) when ret_out is not NULL.
 */
static int run(const char *stdin_text, char **ret_out, const char *const argv[])
{
	int in[2], out[2], status;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(devnull, 2);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (stdin_text)
		ck_assert_int_eq(write(in[1], stdin_text, strlen(stdin_text)),
				 (ssize_t)strlen(stdin_text));
	close(in[1]);
	for (;;) {
		if (len + 1 >= cap) {
			cap = cap ? 2 * cap : 4096;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		ssize_t n = read(out[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(out[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (ret_out)
		*ret_out = buf;
	else
		free(buf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Reads a whole file as text (NUL-terminated; *ret_len excludes it). */
static char *slurp(const char *path, size_t *ret_len)
{
	size_t n;
	uint8_t *b = tu_read_file(path, &n);
	char *s;

	ck_assert_msg(b != NULL, "cannot read %s", path);
	s = realloc(b, n + 1);
	ck_assert_ptr_nonnull(s);
	s[n] = '\0';
	if (ret_len)
		*ret_len = n;
	return s;
}

/* Copies text into a buffer of exactly its length, so that any read past
 * the end is caught by ASan: parsers must not expect a NUL. */
static char *exact(const char *text, size_t len)
{
	char *b = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, text, len);
	return b;
}

/* minisign -G -W: an unencrypted key pair, loaded through our parsers. */
static void gen_key(const char *name, fatelf_ms_seckey *sk, fatelf_ms_pubkey *pk)
{
	char pub[64], sec[64];
	fatelf_diag d;
	size_t len;

	snprintf(pub, sizeof(pub), "%s.pub", name);
	snprintf(sec, sizeof(sec), "%s.key", name);
	const char *argv[] = { "minisign", "-G", "-W", "-p", pub, "-s", sec, NULL };
	ck_assert_int_eq(run(NULL, NULL, argv), 0);

	char *text = slurp(sec, &len);
	char *buf = exact(text, len);
	ck_assert(!fatelf_ms_seckey_encrypted(buf, len));
	ck_assert_msg(fatelf_ms_seckey_parse(buf, len, NULL, sk, &d) == 0, "%s", d.msg);
	free(buf);
	free(text);
	if (pk)
		ck_assert_msg(fatelf_ms_pubkey_load(pub, pk, &d) == 0, "%s", d.msg);
}

static char *sign_text(const fatelf_ms_seckey *sk, const char *msg, const char *tc)
{
	fatelf_diag d;
	char *sig = NULL;

	ck_assert_msg(fatelf_ms_sign(sk, msg, strlen(msg), NULL, tc, &sig, &d) == 0, "%s", d.msg);
	return sig;
}

static int verify_text(const fatelf_ms_pubkey *keys, size_t n, const char *msg, const char *sig,
		       fatelf_diag *d)
{
	char *b = exact(sig, strlen(sig));
	int r = fatelf_ms_verify(keys, n, msg, strlen(msg), b, strlen(sig), NULL, d);

	free(b);
	return r;
}

static void write_text(const char *path, const char *text)
{
	tu_write_file(path, text, strlen(text));
}

/* Line n (0-based) of text, without its newline (malloc'd). */
static char *line_of(const char *text, int n)
{
	for (int i = 0; i < n; i++) {
		text = strchr(text, '\n');
		ck_assert_ptr_nonnull(text);
		text++;
	}
	return strndup(text, strcspn(text, "\n"));
}

/* text with line n (0-based) replaced by repl (malloc'd). */
static char *with_line(const char *text, int n, const char *repl)
{
	const char *start = text, *end;
	char *out = NULL;

	for (int i = 0; i < n; i++) {
		start = strchr(start, '\n');
		ck_assert_ptr_nonnull(start);
		start++;
	}
	end = start + strcspn(start, "\n");
	ck_assert_int_ge(asprintf(&out, "%.*s%s%s", (int)(start - text), text, repl, end), 0);
	return out;
}

/* ------------------------------------------------------------ interop */

START_TEST(test_we_sign_minisign_verifies)
{
	fatelf_ms_seckey sk;
	fatelf_ms_pubkey pk;
	char id[17], b64[64], *out = NULL;

	tu_tmpdir();
	gen_key("k", &sk, &pk);

	/* The same key as the pub file shows it: id in its comment, base64. */
	char *pubtext = slurp("k.pub", NULL);
	fatelf_ms_keyid_format(pk.keyid, id);
	fatelf_ms_pubkey_format(&pk, b64);
	char want[128];
	snprintf(want, sizeof(want), "untrusted comment: minisign public key %s\n", id);
	ck_assert_msg(strncmp(pubtext, want, strlen(want)) == 0, "%s is not %s", pubtext, want);
	ck_assert_msg(strstr(pubtext, b64) != NULL, "%s not in %s", b64, pubtext);
	ck_assert_int_eq(memcmp(sk.keyid, pk.keyid, 8), 0);
	ck_assert_int_eq(memcmp(sk.sk + 32, pk.pk, 32), 0);
	free(pubtext);

	const char *msg = "the manifest\nwith two lines\n";
	write_text("m", msg);
	char *sig = sign_text(&sk, msg, "fatbundle game 1.0");
	write_text("m.minisig", sig);

	/* -H: minisign insists on the prehashed form; -Q prints the trusted comment. */
	const char *v[] = { "minisign", "-V", "-H", "-Q", "-m", "m", "-p", "k.pub", NULL };
	ck_assert_int_eq(run(NULL, &out, v), 0);
	ck_assert_str_eq(out, "fatbundle game 1.0\n");
	free(out);

	/* Default comments verify too, with the key given as a string. */
	free(sig);
	sig = sign_text(&sk, msg, NULL);
	write_text("m.minisig", sig);
	const char *vp[] = { "minisign", "-V", "-q", "-m", "m", "-P", b64, NULL };
	ck_assert_int_eq(run(NULL, NULL, vp), 0);

	/* The longest untrusted comment minisign takes; one more is refused. */
	char ucomment[1005], *out2 = NULL;
	fatelf_diag d;
	memset(ucomment, 'u', 1004);
	ucomment[1004] = '\0';
	ck_assert_int_eq(fatelf_ms_sign(&sk, msg, strlen(msg), ucomment, NULL, &out2, &d),
			 -FATELF_E_INVALID);
	ucomment[1003] = '\0';
	ck_assert_int_eq(fatelf_ms_sign(&sk, msg, strlen(msg), ucomment, NULL, &out2, &d), 0);
	write_text("m.minisig", out2);
	ck_assert_int_eq(run(NULL, NULL, vp), 0);
	free(out2);
	write_text("m.minisig", sig);

	/* One flipped byte of the message: minisign refuses. */
	char *bad = strdup(msg);
	bad[4] ^= 1;
	write_text("m", bad);
	ck_assert_int_ne(run(NULL, NULL, v), 0);
	write_text("m", msg);
	ck_assert_int_eq(run(NULL, NULL, vp), 0);

	/* A changed trusted comment: minisign refuses. */
	char *tc = strstr(sig, "\ntrusted comment: ") + strlen("\ntrusted comment: ");
	tc[0] ^= 0x20;
	write_text("m.minisig", sig);
	ck_assert_int_ne(run(NULL, NULL, vp), 0);
	free(bad);
	free(sig);
}
END_TEST

START_TEST(test_minisign_signs_we_verify)
{
	fatelf_ms_seckey sk, other_sk;
	fatelf_ms_pubkey keys[2];
	const fatelf_ms_pubkey *signer = NULL;
	fatelf_ms_signature s;
	fatelf_diag d;
	size_t len;

	tu_tmpdir();
	gen_key("other", &other_sk, &keys[0]);
	gen_key("k", &sk, &keys[1]);
	const char *msg = "{\"format\": 1}\n";
	write_text("m", msg);

	const char *sign[] = { "minisign", "-S", "-s", "k.key", "-t", "signed by the vendor", "-m",
			       "m", NULL };
	ck_assert_int_eq(run(NULL, NULL, sign), 0);
	char *sig = slurp("m.minisig", &len);
	char *b = exact(sig, len);
	ck_assert_msg(fatelf_ms_verify(keys, 2, msg, strlen(msg), b, len, &signer, &d) == 0, "%s",
		      d.msg);
	ck_assert_ptr_eq(signer, &keys[1]);
	ck_assert_int_eq(fatelf_ms_sig_parse(b, len, &s, &d), 0);
	ck_assert_str_eq(s.algorithm, "ED");
	ck_assert_str_eq(s.trusted_comment, "signed by the vendor");
	ck_assert_int_eq(memcmp(s.keyid, keys[1].keyid, 8), 0);
	free(b);
	free(sig);

	/* minisign's default trusted comment (with tabs) verifies as well. */
	const char *sign_default[] = { "minisign", "-S", "-s", "k.key", "-x", "d.minisig", "-m", "m",
				       NULL };
	ck_assert_int_eq(run(NULL, NULL, sign_default), 0);
	sig = slurp("d.minisig", &len);
	ck_assert_msg(verify_text(keys, 2, msg, sig, &d) == 0, "%s", d.msg);
	free(sig);

	/* The legacy, non-prehashed form is refused by name. */
	const char *legacy[] = { "minisign", "-S", "-l", "-s", "k.key", "-x", "l.minisig", "-m", "m",
				 NULL };
	ck_assert_int_eq(run(NULL, NULL, legacy), 0);
	sig = slurp("l.minisig", &len);
	ck_assert_int_eq(verify_text(keys, 2, msg, sig, &d), -FATELF_E_SIG_ALGORITHM);
	ck_assert_int_eq(d.code, -FATELF_E_SIG_ALGORITHM);
	ck_assert_ptr_nonnull(strstr(d.msg, "\"Ed\""));
	ck_assert_int_eq(fatelf_ms_sig_parse(sig, len, &s, &d), 0);
	ck_assert_str_eq(s.algorithm, "Ed");
	free(sig);

	/* A signature whose file has CRLF line ends and no final newline. */
	sig = slurp("m.minisig", &len);
	char crlf[2048];
	size_t o = 0;
	for (size_t i = 0; i + 1 < len; i++) {  /* drops the last "\n" */
		if (sig[i] == '\n')
			crlf[o++] = '\r';
		crlf[o++] = sig[i];
	}
	crlf[o] = '\0';
	ck_assert_msg(verify_text(keys, 2, msg, crlf, &d) == 0, "%s", d.msg);
	free(sig);
}
END_TEST

START_TEST(test_encrypted_key)
{
	fatelf_ms_seckey sk;
	fatelf_ms_pubkey pk;
	fatelf_diag d;
	size_t len;

	tu_tmpdir();
	/* minisign reads the password twice from stdin when it is not a tty. */
	const char *gen[] = { "minisign", "-G", "-p", "e.pub", "-s", "e.key", NULL };
	ck_assert_int_eq(run("correct horse\ncorrect horse\n", NULL, gen), 0);
	ck_assert_int_eq(fatelf_ms_pubkey_load("e.pub", &pk, &d), 0);

	char *text = slurp("e.key", &len);
	char *b = exact(text, len);
	ck_assert(fatelf_ms_seckey_encrypted(b, len));
	ck_assert_int_eq(fatelf_ms_seckey_parse(b, len, NULL, &sk, &d), -FATELF_E_KEY_PASSWORD);
	ck_assert_int_eq(fatelf_ms_seckey_parse(b, len, "correct horsf", &sk, &d),
			 -FATELF_E_KEY_PASSWORD);
	ck_assert_ptr_nonnull(strstr(d.msg, "wrong password"));
	ck_assert_msg(fatelf_ms_seckey_parse(b, len, "correct horse", &sk, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(memcmp(sk.keyid, pk.keyid, 8), 0);
	ck_assert_int_eq(memcmp(sk.sk + 32, pk.pk, 32), 0);
	free(b);
	free(text);

	const char *msg = "signed with a decrypted key\n";
	write_text("m", msg);
	char *sig = sign_text(&sk, msg, "enc");
	write_text("m.minisig", sig);
	const char *v[] = { "minisign", "-V", "-H", "-q", "-m", "m", "-p", "e.pub", NULL };
	ck_assert_int_eq(run(NULL, NULL, v), 0);
	ck_assert_int_eq(verify_text(&pk, 1, msg, sig, &d), 0);
	free(sig);
}
END_TEST

/* Our key pairs: parsed back by us, and used by minisign itself. */
START_TEST(test_keygen)
{
	char *pub = NULL, *sec = NULL, *pub2 = NULL, *sec2 = NULL, id[17], line[64];
	fatelf_ms_pubkey pk, parsed, pk2;
	fatelf_ms_seckey sk;
	fatelf_diag d;

	tu_tmpdir();
	ck_assert_msg(fatelf_ms_keygen("open sesame", &pub, &sec, &pk, &d) == 0, "%s", d.msg);
	fatelf_ms_keyid_format(pk.keyid, id);
	char want[128];
	snprintf(want, sizeof(want), "untrusted comment: minisign public key %s\n", id);
	ck_assert_int_eq(strncmp(pub, want, strlen(want)), 0);
	ck_assert_int_eq(fatelf_ms_pubkey_parse(pub, strlen(pub), &parsed, &d), 0);
	ck_assert_int_eq(memcmp(&parsed, &pk, sizeof(pk)), 0);
	fatelf_ms_pubkey_format(&pk, line);
	ck_assert_ptr_nonnull(strstr(pub, line));

	/* Encrypted: no password or a wrong one fails the checksum. */
	ck_assert(fatelf_ms_seckey_encrypted(sec, strlen(sec)));
	ck_assert_int_eq(fatelf_ms_seckey_parse(sec, strlen(sec), NULL, &sk, &d), -FATELF_E_KEY_PASSWORD);
	ck_assert_int_eq(fatelf_ms_seckey_parse(sec, strlen(sec), "open sesamE", &sk, &d),
			 -FATELF_E_KEY_PASSWORD);
	ck_assert_msg(fatelf_ms_seckey_parse(sec, strlen(sec), "open sesame", &sk, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(memcmp(sk.keyid, pk.keyid, 8), 0);
	ck_assert_int_eq(memcmp(sk.sk + 32, pk.pk, 32), 0);

	/* minisign signs with it (the password on stdin); we verify. */
	write_text("k.pub", pub);
	write_text("k.key", sec);
	const char *msg = "signed by minisign with our key\n";
	write_text("m", msg);
	const char *s[] = { "minisign", "-S", "-s", "k.key", "-m", "m", NULL };
	ck_assert_int_eq(run("open sesame\n", NULL, s), 0);
	size_t siglen;
	char *sig = slurp("m.minisig", &siglen);
	ck_assert_int_eq(verify_text(&pk, 1, msg, sig, &d), 0);
	free(sig);
	const char *v[] = { "minisign", "-V", "-q", "-m", "m", "-p", "k.pub", NULL };
	ck_assert_int_eq(run(NULL, NULL, v), 0);

	/* Unencrypted: no password needed, by us or by minisign. */
	ck_assert_int_eq(fatelf_ms_keygen(NULL, &pub2, &sec2, &pk2, &d), 0);
	ck_assert(!fatelf_ms_seckey_encrypted(sec2, strlen(sec2)));
	ck_assert_int_ne(memcmp(pk2.keyid, pk.keyid, 8), 0);
	ck_assert_int_eq(fatelf_ms_seckey_parse(sec2, strlen(sec2), NULL, &sk, &d), 0);
	ck_assert_int_eq(memcmp(sk.sk + 32, pk2.pk, 32), 0);
	write_text("u.pub", pub2);
	write_text("u.key", sec2);
	const char *s2[] = { "minisign", "-S", "-s", "u.key", "-m", "m", "-x", "u.minisig", NULL };
	ck_assert_int_eq(run(NULL, NULL, s2), 0);
	const char *v2[] = { "minisign", "-V", "-q", "-m", "m", "-x", "u.minisig", "-p", "u.pub", NULL };
	ck_assert_int_eq(run(NULL, NULL, v2), 0);
	free(pub);
	free(sec);
	free(pub2);
	free(sec2);
}
END_TEST

/* ------------------------------------------------------------ rejections */

START_TEST(test_verify_rejections)
{
	fatelf_ms_seckey sk, other_sk;
	fatelf_ms_pubkey pk, other_pk;
	fatelf_diag d;
	char id[17];

	tu_tmpdir();
	gen_key("k", &sk, &pk);
	gen_key("o", &other_sk, &other_pk);
	const char *msg = "manifest bytes";

	char *sig = sign_text(&sk, msg, "tc");
	ck_assert_int_eq(verify_text(&pk, 1, msg, sig, &d), 0);

	/* Not among the trusted keys: the message names the signer's id. */
	ck_assert_int_eq(verify_text(&other_pk, 1, msg, sig, &d), -FATELF_E_SIG_KEY);
	fatelf_ms_keyid_format(pk.keyid, id);
	ck_assert_msg(strstr(d.msg, id) != NULL, "%s", d.msg);
	ck_assert_int_eq(verify_text(NULL, 0, msg, sig, &d), -FATELF_E_SIG_KEY);

	/* Same key id, other public key: the signature does not check out. */
	fatelf_ms_pubkey impostor = other_pk;
	memcpy(impostor.keyid, pk.keyid, 8);
	ck_assert_int_eq(verify_text(&impostor, 1, msg, sig, &d), -FATELF_E_SIG_INVALID);

	/* A signature of another message. */
	ck_assert_int_eq(verify_text(&pk, 1, "manifest byteS", sig, &d), -FATELF_E_SIG_INVALID);
	ck_assert_int_eq(verify_text(&pk, 1, "", sig, &d), -FATELF_E_SIG_INVALID);

	/* The trusted comment changed after signing. */
	char *t = with_line(sig, 2, "trusted comment: tC");
	ck_assert_int_eq(verify_text(&pk, 1, msg, t, &d), -FATELF_E_SIG_COMMENT);
	free(t);
	/* ...or the global signature of another trusted comment put in. */
	char *sig2 = sign_text(&sk, msg, "tc");  /* Ed25519 is deterministic */
	ck_assert_str_eq(sig, sig2);
	char *sig3 = sign_text(&sk, msg, "td");
	char *g3 = line_of(sig3, 3);
	t = with_line(sig, 3, g3);
	ck_assert_int_eq(verify_text(&pk, 1, msg, t, &d), -FATELF_E_SIG_COMMENT);
	/* ...and with both swapped, it is the other comment, signed. */
	char *t2 = with_line(t, 2, "trusted comment: td");
	ck_assert_int_eq(verify_text(&pk, 1, msg, t2, &d), 0);
	free(t2);
	free(t);
	free(g3);
	free(sig2);
	free(sig3);
	free(sig);
}
END_TEST

struct bad_text {
	const char *name;
	const char *text;
	const char *in_msg;     /* a word the message must hold */
};

START_TEST(test_malformed_signatures)
{
	const char *sig_b64 = "RURiS1kff2E3Tj0iBgpF7So8037yBe2El1uM0slktYfbRh679AgU0Mcaglsi8dN/"
			      "GcZ8dKpqL9QQy8NRvXD+TK9lnS5iWop1vws=";
	const char *glob = "lz4hlh8crTfFxp6Mlv1UjF6w6YW2UHwmo5qPhvouFpugdShna7opmvEPVnhIWqIfP/"
			   "HaIDsQh85GaacqbQEkBQ==";
	char good[1024], cases[16][1024], longtc[4096];
	fatelf_ms_signature s;
	fatelf_diag d;

	snprintf(good, sizeof(good), "untrusted comment: x\n%s\ntrusted comment: t\n%s\n", sig_b64,
		 glob);
	ck_assert_msg(fatelf_ms_sig_parse(good, strlen(good), &s, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(s.trusted_comment, "t");

	const struct bad_text bad[] = {
		{ "empty", "", "untrusted comment" },
		{ "no untrusted comment", "RURiS1kff2E3\n", "untrusted comment" },
		{ "signature line missing", "untrusted comment: x\n", "signature line is missing" },
		{ "bad base64", "untrusted comment: x\nRURiS1kff2E3Tj0iBgpF7So8037yBe2El1uM0slktYfbRh679AgU0Mcaglsi8dN/GcZ8dKpqL9QQy8NRvXD+TK9lnS5iWop1v*s=\n",
		  "not valid base64" },
		{ "short signature", "untrusted comment: x\nRURiS1kff2E3Tj0i\n", "wrong length" },
		{ "bad padding", "untrusted comment: x\nRURiS1kff2E3Tj0iBgpF7So8037yBe2El1uM0slktYfbRh679AgU0Mcaglsi8dN/GcZ8dKpqL9QQy8NRvXD+TK9lnS5iWop1vwsA\n",
		  "padding" },
		{ "unknown algorithm", "untrusted comment: x\nWFhiS1kff2E3Tj0iBgpF7So8037yBe2El1uM0slktYfbRh679AgU0Mcaglsi8dN/GcZ8dKpqL9QQy8NRvXD+TK9lnS5iWop1vws=\n",
		  "unknown algorithm" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *b = exact(bad[i].text, strlen(bad[i].text));
		int r = fatelf_ms_sig_parse(b, strlen(bad[i].text), &s, &d);
		ck_assert_msg(r == -FATELF_E_SIG_FORMAT, "%s: got %d", bad[i].name, r);
		ck_assert_msg(strstr(d.msg, bad[i].in_msg) != NULL, "%s: %s", bad[i].name, d.msg);
		free(b);
	}

	/* Variations of the good file, one line broken at a time. */
	int n = 0;
	snprintf(cases[n++], 1024, "untrusted comment: x\n%s\n", sig_b64);
	snprintf(cases[n++], 1024, "untrusted comment: x\n%s\ntrusted comment:t\n%s\n", sig_b64, glob);
	snprintf(cases[n++], 1024, "untrusted comment: x\n%s\ntrusted comment: t\n", sig_b64);
	snprintf(cases[n++], 1024, "untrusted comment: x\n%s\ntrusted comment: t\n%.40s\n", sig_b64, glob);
	snprintf(cases[n++], 1024, "untrusted comment: x\n%s\ntrusted comment: t\n%s\nmore\n", sig_b64, glob);
	snprintf(cases[n++], 1024, "untrusted comment: x\n%s\n%s\ntrusted comment: t\n", sig_b64, glob);
	const char *want[] = { "trusted comment line is missing", "not a trusted comment",
			       "global signature line is missing", "wrong length",
			       "unexpected text", "not a trusted comment" };
	for (int i = 0; i < n; i++) {
		size_t l = strlen(cases[i]);
		char *b = exact(cases[i], l);
		int r = fatelf_ms_sig_parse(b, l, &s, &d);
		ck_assert_msg(r == -FATELF_E_SIG_FORMAT, "case %d: got %d", i, r);
		ck_assert_msg(strstr(d.msg, want[i]) != NULL, "case %d: %s", i, d.msg);
		free(b);
	}

	/* A trusted comment too long for the parsed form, or holding a NUL. */
	memset(longtc, 'c', 2000);
	longtc[2000] = '\0';
	char *big = NULL;
	ck_assert_int_ge(asprintf(&big, "untrusted comment: x\n%s\ntrusted comment: %s\n%s\n", sig_b64,
				  longtc, glob), 0);
	ck_assert_int_eq(fatelf_ms_sig_parse(big, strlen(big), &s, &d), -FATELF_E_SIG_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "longer than 1023"));
	/* 1023 bytes is the longest that fits. */
	free(big);
	longtc[1023] = '\0';
	ck_assert_int_ge(asprintf(&big, "untrusted comment: x\n%s\ntrusted comment: %s\n%s\n", sig_b64,
				  longtc, glob), 0);
	ck_assert_msg(fatelf_ms_sig_parse(big, strlen(big), &s, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(strlen(s.trusted_comment), 1023);
	longtc[1023] = 'c';
	longtc[1024] = '\0';
	free(big);

	char withnul[1024];
	int wl = snprintf(withnul, sizeof(withnul), "untrusted comment: x\n%s\ntrusted comment: a#b\n%s\n",
			  sig_b64, glob);
	*strchr(withnul, '#') = '\0';
	ck_assert_int_eq(fatelf_ms_sig_parse(withnul, (size_t)wl, &s, &d), -FATELF_E_SIG_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "NUL"));

	/* A line of a megabyte, and no newline anywhere. */
	size_t hl = 1 << 20;
	char *huge = malloc(hl);
	memset(huge, 'A', hl);
	memcpy(huge, "untrusted comment: ", 19);
	ck_assert_int_eq(fatelf_ms_sig_parse(huge, hl, &s, &d), -FATELF_E_SIG_FORMAT);
	huge[100] = '\n';
	ck_assert_int_eq(fatelf_ms_sig_parse(huge, hl, &s, &d), -FATELF_E_SIG_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "wrong length"));
	free(huge);

	/* Refused by sign: comments that would not come back as one line. */
	fatelf_ms_seckey sk = { { 0 }, { 0 } };
	char *out = NULL;
	ck_assert_int_eq(fatelf_ms_sign(&sk, "m", 1, NULL, "two\nlines", &out, &d), -FATELF_E_INVALID);
	ck_assert_int_eq(fatelf_ms_sign(&sk, "m", 1, "a\rb", NULL, &out, &d), -FATELF_E_INVALID);
	ck_assert_int_eq(fatelf_ms_sign(&sk, "m", 1, NULL, longtc, &out, &d), -FATELF_E_INVALID);
	ck_assert_ptr_null(out);
}
END_TEST

START_TEST(test_keys)
{
	fatelf_ms_seckey sk;
	fatelf_ms_pubkey pk, from_string, from_text;
	fatelf_diag d;
	char b64[64];
	size_t len;

	tu_tmpdir();
	gen_key("k", &sk, &pk);

	/* File, "RW..." string and bare text give the same key. */
	fatelf_ms_pubkey_format(&pk, b64);
	ck_assert_uint_eq(strlen(b64), 56);
	ck_assert_int_eq(strncmp(b64, "RW", 2), 0);
	ck_assert_msg(fatelf_ms_pubkey_load(b64, &from_string, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(memcmp(&pk, &from_string, sizeof(pk)), 0);
	char *b = exact(b64, 56);
	ck_assert_int_eq(fatelf_ms_pubkey_parse(b, 56, &from_text, &d), 0);
	ck_assert_int_eq(memcmp(&pk, &from_text, sizeof(pk)), 0);
	free(b);

	ck_assert_int_eq(fatelf_ms_pubkey_load("missing.pub", &from_string, &d), -ENOENT);
	ck_assert_int_eq(fatelf_ms_pubkey_load(".", &from_string, &d), -EISDIR);
	char mangled[64];
	memcpy(mangled, b64, 57);
	mangled[10] = '*';
	ck_assert_int_eq(fatelf_ms_pubkey_load(mangled, &from_string, &d), -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "base64"));

	/* Public keys that are not Ed25519 keys. */
	const struct bad_text badpub[] = {
		{ "empty", "", "empty" },
		{ "comment only", "untrusted comment: x\n", "missing" },
		{ "short", "untrusted comment: x\nRWRiS1kff2E3\n", "wrong length" },
		{ "other algorithm", "untrusted comment: x\nWFhiS1kff2E3TrP5xj7akRWAFaO2S50HDHJPFNpjBVjOTXzVmPePVxqa\n",
		  "not Ed25519" },
		{ "garbage after", "untrusted comment: x\nRWRiS1kff2E3TrP5xj7akRWAFaO2S50HDHJPFNpjBVjOTXzVmPePVxqa\nmore\n",
		  "unexpected text" },
	};
	for (size_t i = 0; i < sizeof(badpub) / sizeof(badpub[0]); i++) {
		char *t = exact(badpub[i].text, strlen(badpub[i].text));
		int r = fatelf_ms_pubkey_parse(t, strlen(badpub[i].text), &from_text, &d);
		ck_assert_msg(r == -FATELF_E_KEY_FORMAT, "%s: got %d", badpub[i].name, r);
		ck_assert_msg(strstr(d.msg, badpub[i].in_msg) != NULL, "%s: %s", badpub[i].name, d.msg);
		free(t);
	}
	/* The same file with CRLF line ends and no final newline. */
	const char *crlf = "untrusted comment: x\r\nRWRiS1kff2E3TrP5xj7akRWAFaO2S50HDHJPFNpjBVjOTXzVmPePVxqa";
	ck_assert_int_eq(fatelf_ms_pubkey_parse(crlf, strlen(crlf), &from_text, &d), 0);
	fatelf_ms_pubkey_format(&from_text, b64);
	ck_assert_str_eq(b64, "RWRiS1kff2E3TrP5xj7akRWAFaO2S50HDHJPFNpjBVjOTXzVmPePVxqa");
	char id[17];
	fatelf_ms_keyid_format(from_text.keyid, id);
	ck_assert_str_eq(id, "4E37617F1F594B62");
	/* minisign drops leading zeros: this key's pub file says
	 * "minisign public key 908D04D0A1D9BB8". */
	const char *lead0 = "RWS4mx0KTdAICS/y07E0TZu6lBQQ8W+8gYteTXZACQYaCytRGsm2+o04";
	ck_assert_int_eq(fatelf_ms_pubkey_parse(lead0, strlen(lead0), &from_text, &d), 0);
	fatelf_ms_keyid_format(from_text.keyid, id);
	ck_assert_str_eq(id, "908D04D0A1D9BB8");
	memset(from_text.keyid, 0, 8);
	fatelf_ms_keyid_format(from_text.keyid, id);
	ck_assert_str_eq(id, "0");
	memset(from_text.keyid, 0xff, 8);
	fatelf_ms_keyid_format(from_text.keyid, id);
	ck_assert_str_eq(id, "FFFFFFFFFFFFFFFF");

	/* Secret keys: broken on purpose, each refused as a key format error. */
	char *text = slurp("k.key", &len);
	char *nl = strchr(text, '\n') + 1;
	ck_assert_int_eq(fatelf_ms_seckey_parse(text, (size_t)(nl - text), NULL, &sk, &d),
			 -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "missing"));
	ck_assert_int_eq(fatelf_ms_seckey_parse(text, len - 10, NULL, &sk, &d), -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "wrong length"));
	ck_assert(!fatelf_ms_seckey_encrypted(text, len - 10));
	/* Byte 2-3 of the key (base64 chars 2..5 hold bytes 1..3): "Ed\0\0B2" -> "EdZZB2". */
	char *k = strdup(text);
	char *line2 = k + (nl - text);
	ck_assert_int_eq(strncmp(line2, "RWQAAEIy", 8), 0);      /* "Ed", none, "B2" */
	memcpy(line2, "RWRaWkIy", 8);                           /* "Ed", "ZZ", "B2" */
	ck_assert_int_eq(fatelf_ms_seckey_parse(k, len, NULL, &sk, &d), -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "key derivation"));
	memcpy(line2, "RWQAAEIz", 8);                           /* "Ed", none, "B3" */
	ck_assert_int_eq(fatelf_ms_seckey_parse(k, len, NULL, &sk, &d), -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "checksum algorithm"));
	free(k);

	/* The checksum (last 32 bytes, zero in a -W key) set to garbage. */
	k = strdup(text);
	line2 = k + (nl - text);
	char *tail = line2 + strlen(line2) - 1 - 20;    /* inside the checksum */
	ck_assert_int_eq(*tail, 'A');
	*tail = 'B';
	ck_assert_int_eq(fatelf_ms_seckey_parse(k, len, NULL, &sk, &d), -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "checksum mismatch"));
	free(k);

	/* The public half no longer matching the seed (base64 char 120 sits
	 * in bytes 90..92: the public half, bytes 94..125, starts just after;
	 * char 128 holds bytes 96..98). */
	k = strdup(text);
	line2 = k + (nl - text);
	line2[128] = line2[128] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(fatelf_ms_seckey_parse(k, len, NULL, &sk, &d), -FATELF_E_KEY_FORMAT);
	ck_assert_ptr_nonnull(strstr(d.msg, "public half"));
	free(k);
	free(text);

	/* Hostile scrypt limits are refused before any work is done. */
	const uint64_t limits[][2] = { { 1ull << 40, 1ull << 40 }, { 1ull << 40, 1ull << 30 } };
	for (size_t i = 0; i < 2; i++) {
		uint8_t raw[158] = "EdScB2";
		char line[300], file[400];

		for (int j = 0; j < 8; j++) {
			raw[38 + j] = (uint8_t)(limits[i][0] >> (8 * j));
			raw[46 + j] = (uint8_t)(limits[i][1] >> (8 * j));
		}
		EVP_EncodeBlock((unsigned char *)line, raw, sizeof(raw));
		int fl = snprintf(file, sizeof(file), "untrusted comment: x\n%s\n", line);
		ck_assert(fatelf_ms_seckey_encrypted(file, (size_t)fl));
		ck_assert_int_eq(fatelf_ms_seckey_parse(file, (size_t)fl, "pw", &sk, &d),
				 -FATELF_E_KEY_FORMAT);
		ck_assert_msg(strstr(d.msg, "scrypt limits") != NULL, "%s", d.msg);
	}
}
END_TEST

/* ------------------------------------------------------------ SHA-256, hex */

START_TEST(test_sha256_and_hex)
{
	/* FIPS 180-2 examples. */
	const char *abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	const char *empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	const char *two = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
	const char *msg2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	fatelf_sha256 *h = fatelf_sha256_new();
	uint8_t out[32], back[32];
	char hex[65];

	ck_assert_ptr_nonnull(h);
	fatelf_sha256_update(h, "a", 1);
	fatelf_sha256_update(h, "bc", 2);
	fatelf_sha256_final(h, out);
	fatelf_hex(out, 32, hex);
	ck_assert_str_eq(hex, abc);
	/* final resets: the context is reused from scratch. */
	fatelf_sha256_final(h, out);
	fatelf_hex(out, 32, hex);
	ck_assert_str_eq(hex, empty);
	for (size_t i = 0; i < strlen(msg2); i++)
		fatelf_sha256_update(h, msg2 + i, 1);
	fatelf_sha256_final(h, out);
	fatelf_hex(out, 32, hex);
	ck_assert_str_eq(hex, two);
	ck_assert_ptr_null(fatelf_sha256_free(h));
	ck_assert_ptr_null(fatelf_sha256_free(NULL));

	ck_assert_int_eq(fatelf_unhex(two, back, 32), 0);
	ck_assert_int_eq(memcmp(back, out, 32), 0);
	ck_assert_int_eq(fatelf_unhex("0aFf", back, 2), 0);
	ck_assert_uint_eq(back[0], 0x0a);
	ck_assert_uint_eq(back[1], 0xff);
	ck_assert_int_eq(fatelf_unhex("0g", back, 1), -EINVAL);
	ck_assert_int_eq(fatelf_unhex("abc", back, 2), -EINVAL);    /* too short */
	ck_assert_int_eq(fatelf_unhex("", back, 1), -EINVAL);
	ck_assert_int_eq(fatelf_unhex(" 1", back, 1), -EINVAL);
}
END_TEST

static Suite *minisign_suite(void)
{
	Suite *s = suite_create("minisign");
	TCase *tc = tcase_create("core");

	/* Key generation and scrypt (about 1 GiB, seconds) run for real. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_we_sign_minisign_verifies);
	tcase_add_test(tc, test_minisign_signs_we_verify);
	tcase_add_test(tc, test_encrypted_key);
	tcase_add_test(tc, test_keygen);
	tcase_add_test(tc, test_verify_rejections);
	tcase_add_test(tc, test_malformed_signatures);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_sha256_and_hex);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(minisign_suite());
}
