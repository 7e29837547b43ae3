/*
 * libFuzzer target for the words of an OCI registry that fatelf reads
 * (lib/repo/oci.c), all untrusted. The input's first byte picks the
 * parser, the rest (NUL-terminated here) is its input:
 *
 *   0  a reference (oci://HOST[:PORT]/NAME[:TAG][@sha256:HEX]): what parses has a host,
 *      a valid name and a valid or empty tag, and "oci://HOST/NAME[:TAG]"
 *      made of them parses back to the same fields;
 *   1  a WWW-Authenticate challenge: Basic, or Bearer with a realm, and
 *      every field NUL-terminated within its buffer, printable ASCII;
 *   2  a token reply: a token is non-empty printable ASCII with no space,
 *      so it cannot break the header it goes into;
 *   5  a tag list, 6  a catalog: each name handed on valid, their count
 *      returned, or FATELF_E_REPO_OCI;
 *   3  an image index, 4  an image manifest: what parses has every field
 *      the mapping reads in its form (each manifest an image manifest,
 *      each layer an object with its name, the config of our media type);
 *      a failure is FATELF_E_REPO_OCI (or ENOMEM), the same in the diag,
 *      with a clean message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "oci.h"

static bool printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static void reference(const char *s)
{
	fatelf_oci_ref r, again;
	char text[800], hex[65];
	int q = fatelf_oci_ref_parse(s, false, &r);

	if (q < 0) {
		fuzz_assert(q == -EINVAL);
		return;
	}
	fuzz_assert(printable(r.host, sizeof(r.host)) && r.host[0]);
	fuzz_assert(fatelf_oci_name_valid(r.name));
	fuzz_assert(!r.tag[0] || fatelf_oci_tag_valid(r.tag));
	fuzz_assert(strcmp(r.scheme, "http") == 0 || strcmp(r.scheme, "https") == 0);
	for (size_t i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", r.digest[i]);
	snprintf(text, sizeof(text), "oci://%s/%s%s%s%s%s", r.host, r.name, r.tag[0] ? ":" : "", r.tag,
		 r.has_digest ? "@sha256:" : "", r.has_digest ? hex : "");
	fuzz_assert(fatelf_oci_ref_parse(text, false, &again) == 0);
	fuzz_assert(memcmp(&r, &again, sizeof(r)) == 0);
}

static void challenge(const char *s)
{
	fatelf_oci_challenge c;
	int q = fatelf_oci_challenge_parse(s, &c);

	if (q < 0) {
		fuzz_assert(q == -EINVAL);
		return;
	}
	fuzz_assert(c.scheme == FATELF_OCI_AUTH_BASIC || c.scheme == FATELF_OCI_AUTH_BEARER);
	if (c.scheme == FATELF_OCI_AUTH_BEARER)
		fuzz_assert(c.realm[0] != '\0');
	fuzz_assert(printable(c.realm, sizeof(c.realm)) && printable(c.service, sizeof(c.service)) &&
		    printable(c.scope, sizeof(c.scope)));
}

static void token(const char *s, size_t len)
{
	char *tok = NULL;
	int q = fatelf_oci_token_parse(s, len, &tok);

	if (q < 0) {
		fuzz_assert(q == -EPROTO || q == -ENOMEM);
		fuzz_assert(tok == NULL);
		return;
	}
	fuzz_assert(tok && tok[0]);
	for (const char *p = tok; *p; p++)
		fuzz_assert((unsigned char)*p > 0x20 && (unsigned char)*p <= 0x7e);
	free(tok);
}

static void failed(int r, const fatelf_diag *d)
{
	fuzz_assert(r == -FATELF_E_REPO_OCI || r == -ENOMEM);
	fuzz_assert(r == -ENOMEM || d->code == r);
	fuzz_assert(fuzz_text_clean(d->msg));
}

static void index_input(const char *s, size_t len)
{
	fatelf_oci_index *ix = NULL;
	fatelf_diag d = { 0 };
	int r = fatelf_oci_index_parse(s, len, &ix, &d);

	if (r < 0) {
		failed(r, &d);
		fuzz_assert(ix == NULL);
		return;
	}
	fuzz_assert(ix->n <= FATELF_OCI_MANIFESTS_MAX);
	for (size_t i = 0; i < ix->n; i++) {
		fuzz_assert(strcmp(ix->manifests[i].media_type, FATELF_OCI_MT_MANIFEST) == 0);
		fuzz_assert(printable(ix->manifests[i].target, sizeof(ix->manifests[i].target)));
		if (ix->manifests[i].has_platform)
			fuzz_assert(ix->manifests[i].platform.os[0] && ix->manifests[i].platform.architecture[0]);
	}
	fatelf_oci_index_free(ix);
}

static void manifest_input(const char *s, size_t len)
{
	fatelf_oci_manifest *m = NULL;
	fatelf_diag d = { 0 };
	int r = fatelf_oci_manifest_parse(s, len, &m, &d);

	if (r < 0) {
		failed(r, &d);
		fuzz_assert(m == NULL);
		return;
	}
	fuzz_assert(strcmp(m->config.media_type, FATELF_OCI_MT_CONFIG) == 0);
	fuzz_assert(m->target[0] || m->fat);
	fuzz_assert(!m->has_pack || (m->pack.has_object && strcmp(m->pack.media_type, FATELF_OCI_MT_PACK) == 0));
	for (size_t i = 0; i < m->nlayers; i++)
		fuzz_assert(m->layers[i].has_object && strcmp(m->layers[i].media_type, FATELF_OCI_MT_OBJECT) == 0 &&
			    m->layers[i].object_size <= INT64_MAX);
	if (m->config.signature)
		fuzz_assert(strlen(m->config.signature) <= FATELF_REPO_SIG_MAX);
	fatelf_oci_manifest_free(m);
}

struct names_seen {
	bool tags;
	size_t n;
};

static int name_seen(void *ctx, const char *name)
{
	struct names_seen *ns = ctx;

	fuzz_assert(ns->tags ? fatelf_oci_tag_valid(name) : fatelf_oci_name_valid(name));
	ns->n++;
	return 0;
}

static void names_input(const char *s, size_t len, bool tags)
{
	struct names_seen ns = { .tags = tags };
	fatelf_diag d = { 0 };
	int r = fatelf_oci_names_each(s, len, tags, name_seen, &ns, &d);

	if (r < 0) {
		failed(r, &d);
		return;
	}
	fuzz_assert((size_t)r == ns.n && ns.n <= FATELF_OCI_NAMES_MAX && len <= FATELF_OCI_LIST_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size == 0 || size > (1u << 20))
		return 0;
	s = malloc(size);
	fuzz_assert(s != NULL);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 7) {
	case 0:
		reference(s);
		break;
	case 1:
		challenge(s);
		break;
	case 2:
		token(s, size - 1);
		break;
	case 3:
		index_input(s, size - 1);
		break;
	case 4:
		manifest_input(s, size - 1);
		break;
	case 5:
		names_input(s, size - 1, true);
		break;
	default:
		names_input(s, size - 1, false);
		break;
	}
	free(s);
	return 0;
}
