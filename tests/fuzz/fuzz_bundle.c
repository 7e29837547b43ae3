/*
 * fuzz_bundle: libFuzzer target for the one-pass bundle reader, the path
 * every downloaded or local bundle takes: libarchive over memory, the
 * manifest and its signature (the hostile corpus's trusted key, so seeds
 * made by mkhostile get past the signature and into the members), every
 * member's checks, and the streaming thinner.
 *
 * Besides "no crash, no sanitizer report" it checks, aborting when one
 * does not hold:
 *   - a failure fills the diagnostic with the returned code and a message;
 *   - the consumer sees the manifest before any entry, begin and end in
 *     pairs, data only inside a file entry, and on success no more data
 *     than the entry's declared size;
 *   - reading as shipped and reading thinned to the first record of each
 *     FatELF give the same verdict: thinning changes what is handed out,
 *     never what is checked.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "hostile.h"
#include "fuzz.h"

struct watch {
	bool manifest_seen;
	bool in_entry;
	bool thin;
	uint64_t got;
	const fatelf_bundle_entry *e;
};

static int w_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
		      fatelf_diag *d)
{
	struct watch *w = ctx;

	fuzz_assert(!w->manifest_seen);
	fuzz_assert(m != NULL);
	w->manifest_seen = true;
	return 0;
}

static int w_select(void *ctx, const fatelf_bundle_entry *e, const fatelf_header *hdr,
		    fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d)
{
	struct watch *w = ctx;

	fuzz_assert(w->in_entry && e == w->e);
	if (w->thin && hdr->nrecords > 0)
		fatelf_keep_add(ret_keep, 0);
	return 0;
}

static int w_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct watch *w = ctx;

	fuzz_assert(w->manifest_seen);
	fuzz_assert(!w->in_entry);
	w->in_entry = true;
	w->e = e;
	w->got = 0;
	return 0;
}

static int w_data(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len)
{
	struct watch *w = ctx;

	fuzz_assert(w->in_entry && e == w->e);
	fuzz_assert(e->type == FATELF_ENTRY_FILE);
	w->got += len;
	fuzz_assert(w->got <= e->size);
	return 0;
}

static int w_end(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d)
{
	struct watch *w = ctx;

	fuzz_assert(w->in_entry && e == w->e);
	/* As shipped, a good file hands out exactly its declared bytes. */
	if (status == 0 && !w->thin && e->type == FATELF_ENTRY_FILE)
		fuzz_assert(w->got == e->size);
	w->in_entry = false;
	return 0;
}

static int read_once(const uint8_t *data, size_t size, const fatelf_ms_pubkey *pk, bool thin)
{
	struct watch w = { .thin = thin };
	fatelf_bundle_reader_ops ops = {
		.manifest = w_manifest,
		.select = w_select,
		.begin = w_begin,
		.data = w_data,
		.end = w_end,
		.ctx = &w,
	};
	fatelf_bundle_read_opts o = { .keys = pk, .nkeys = 1, .require_signature = true };
	fatelf_diag d;
	int r;

	r = fatelf_bundle_read_mem(data, size, &o, &ops, &d);
	if (r < 0) {
		fuzz_assert(d.code == r);
		fuzz_assert(d.msg[0] != '\0');
	} else {
		fuzz_assert(r == 0);
		fuzz_assert(w.manifest_seen);
		fuzz_assert(!w.in_entry);
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fatelf_ms_pubkey pk;
	static bool have_key;
	int r1, r2;

	if (!have_key) {
		hostile_key(NULL, &pk);
		have_key = true;
	}
	r1 = read_once(data, size, &pk, false);
	r2 = read_once(data, size, &pk, true);
	if (r1 != r2)
		fprintf(stderr, "as shipped: %s, thinned: %s\n", fatelf_error_name(r1),
			fatelf_error_name(r2));
	fuzz_assert(r1 == r2);
	return 0;
}
