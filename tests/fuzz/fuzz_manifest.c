/*
 * libFuzzer target for the manifest parser: any bytes either fail with a
 * manifest error code, or parse into a model whose serialization parses
 * again and serializes to the very same bytes (the canonical form is a
 * fixed point). Sanitizers catch the memory errors; the asserts here catch
 * a parser that accepts what its own serializer cannot reproduce.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "fuzz.h"

static void check(bool ok, const char *what, const fatelf_diag *d)
{
	if (!ok) {
		fprintf(stderr, "fuzz_manifest: %s (%s)\n", what, d ? d->msg : "");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fatelf_bundle_limits lim;
	fatelf_manifest *m = NULL, *again = NULL;
	char *out = NULL, *out2 = NULL;
	size_t len = 0, len2 = 0;
	fatelf_diag d;
	int r;

	/* Small limits, so that the limit paths are reached too. */
	fatelf_bundle_limits_default(&lim);
	lim.max_entries = 1000;
	lim.max_path = 200;
	lim.max_total = 1ull << 40;

	r = fatelf_manifest_parse(data, size, &lim, &m, &d);
	if (r < 0) {
		check(m == NULL, "a failed parse returned a manifest", &d);
		check(d.code == r, "the diag code differs from the return", &d);
		check((r <= -FATELF_E_BASE && r > -FATELF_E_MAX) || r == -ENOMEM,
		      "an unexpected error code", &d);
		check(fuzz_text_clean(d.msg), "a message holds raw control or non-UTF-8 bytes", NULL);
		return 0;
	}
	r = fatelf_manifest_serialize(m, &out, &len, &d);
	check(r == 0, "a parsed manifest does not serialize", &d);
	check(strlen(out) == len, "serialized length", &d);
	r = fatelf_manifest_parse(out, len, &lim, &again, &d);
	check(r == 0, "the serialization does not parse", &d);
	r = fatelf_manifest_serialize(again, &out2, &len2, &d);
	check(r == 0, "the second serialization failed", &d);
	check(len == len2 && memcmp(out, out2, len) == 0, "serialization is not a fixed point", &d);
	check(m->nentries == again->nentries && m->ntargets == again->ntargets &&
	      m->total_size == again->total_size, "the model changed", &d);
	/* Whatever parsed was already canonical in everything but layout:
	 * parse does not sort, it requires sorted entries. */
	for (size_t i = 0; i < m->nentries; i++)
		check(strcmp(m->entries[i].path, again->entries[i].path) == 0, "entry order changed", &d);
	free(out);
	free(out2);
	fatelf_manifest_free(m);
	fatelf_manifest_free(again);
	return 0;
}
