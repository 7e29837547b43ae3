/*
 * libFuzzer target for what a machine reads from a repository
 * (lib/repo/repo*.c, doc/repository.md), all of it untrusted. The
 * input's first byte picks the reader, the rest is its input:
 *
 *   0  the index: what parses serializes, parses again and serializes to
 *      the very same bytes (the canonical text is a fixed point);
 *   1  a pack list: what parses is canonical already (it serializes to
 *      the input's bytes), and a fixed point as the index is;
 *   2  the pointer file: what parses is formatted back to the input;
 *   3  an object: a size (8 bytes, little-endian) and a SHA-256 (32
 *      bytes), then the compressed bytes. No more bytes than the size are
 *      handed on, and a read that returns 0 handed on exactly the size
 *      in bytes hashing to the SHA-256. The bytes are then read again
 *      with the size and hash of what the first read handed on: that
 *      read must agree with itself.
 *
 * Any failure has a code of the repository's (or ENOMEM), the same in
 * the diag, and a message with no raw control or non-UTF-8 byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "reader.h"
#include "repo.h"

static void failed(int r, const fatelf_diag *d, int code1, int code2)
{
	fuzz_assert(d->code == r);
	fuzz_assert(r == code1 || r == code2 || r == -ENOMEM);
	fuzz_assert(fuzz_text_clean(d->msg));
}

static void index_input(const uint8_t *data, size_t size)
{
	fatelf_repo_index *ix = NULL, *again = NULL;
	char *out = NULL, *out2 = NULL;
	size_t len = 0, len2 = 0;
	fatelf_diag d;
	int r;

	fatelf_diag_clear(&d);
	r = fatelf_repo_index_parse(data, size, &ix, &d);
	if (r < 0) {
		fuzz_assert(ix == NULL);
		failed(r, &d, -FATELF_E_REPO_INDEX, -FATELF_E_REPO_FORMAT);
		return;
	}
	fuzz_assert(ix->format == FATELF_REPO_FORMAT && ix->serial >= 1);
	for (size_t i = 0; i < ix->npackages; i++) {
		fuzz_assert(ix->packages[i].nversions >= 1);
		fuzz_assert(i == 0 || strcmp(ix->packages[i - 1].name, ix->packages[i].name) < 0);
		fuzz_assert(fatelf_repo_index_find(ix, ix->packages[i].name) == &ix->packages[i]);
	}
	r = fatelf_repo_index_serialize(ix, &out, &len, &d);
	fuzz_assert(r == 0 && strlen(out) == len);
	r = fatelf_repo_index_parse(out, len, &again, &d);
	if (r < 0)
		fprintf(stderr, "fuzz_repo: the index's serialization does not parse: %s\n", d.msg);
	fuzz_assert(r == 0);
	fuzz_assert(again->serial == ix->serial && again->created == ix->created && again->expires == ix->expires &&
		    again->npackages == ix->npackages && strcmp(again->repository, ix->repository) == 0);
	fuzz_assert(!ix->repository[0] || fatelf_repo_id_valid(ix->repository));
	r = fatelf_repo_index_serialize(again, &out2, &len2, &d);
	fuzz_assert(r == 0);
	fuzz_assert(len == len2 && memcmp(out, out2, len) == 0);
	free(out);
	free(out2);
	fatelf_repo_index_free(ix);
	fatelf_repo_index_free(again);
}

static void pack_input(const uint8_t *data, size_t size)
{
	fatelf_repo_pack *p = NULL, *again = NULL;
	char *out = NULL, *out2 = NULL;
	size_t len = 0, len2 = 0;
	fatelf_diag d;
	int r;

	fatelf_diag_clear(&d);
	r = fatelf_repo_pack_parse(data, size, &p, &d);
	if (r < 0) {
		fuzz_assert(p == NULL);
		failed(r, &d, -FATELF_E_REPO_PACK, -FATELF_E_REPO_PACK);
		return;
	}
	for (size_t i = 0; i < p->nobjects; i++)
		fuzz_assert(fatelf_repo_pack_object(p, p->objects[i].sha256) == &p->objects[i]);
	for (size_t i = 0; i < p->nframes; i++)
		fuzz_assert(fatelf_repo_pack_frame(p, p->frames[i].entry) == &p->frames[i]);
	r = fatelf_repo_pack_serialize(p, &out, &len, &d);
	fuzz_assert(r == 0 && strlen(out) == len);
	/* one canonical form: what parses is it */
	fuzz_assert(len == size && memcmp(out, data, size) == 0);
	r = fatelf_repo_pack_parse(out, len, &again, &d);
	fuzz_assert(r == 0);
	fuzz_assert(again->nobjects == p->nobjects && again->nframes == p->nframes);
	r = fatelf_repo_pack_serialize(again, &out2, &len2, &d);
	fuzz_assert(r == 0);
	fuzz_assert(len == len2 && memcmp(out, out2, len) == 0);
	free(out);
	free(out2);
	fatelf_repo_pack_free(p);
	fatelf_repo_pack_free(again);
}

static void pointer_input(const uint8_t *data, size_t size)
{
	char buf[FATELF_REPO_POINTER_MAX];
	uint8_t sha[32];
	uint64_t isize;
	fatelf_diag d;
	int r;

	fatelf_diag_clear(&d);
	r = fatelf_repo_pointer_parse(data, size, sha, &isize, &d);
	if (r < 0) {
		failed(r, &d, -FATELF_E_REPO_FORMAT, -FATELF_E_REPO_FORMAT);
		return;
	}
	fuzz_assert(isize <= FATELF_REPO_INDEX_MAX);
	fatelf_repo_pointer_format(sha, isize, buf);
	fuzz_assert(strlen(buf) == size && memcmp(buf, data, size) == 0);
}

/* What an object read hands on: counted, hashed, and the first KEEP
 * bytes kept for the second read. */
#define KEEP (1u << 20)

struct seen {
	uint64_t size;          /* the size the read was given */
	uint64_t count;
	fatelf_sha256 *h;
	uint8_t *keep;
	size_t kept;
};

static int seen_data(void *ctx, const void *buf, size_t len)
{
	struct seen *s = ctx;

	fuzz_assert(len > 0);
	s->count += len;
	fuzz_assert(s->count <= s->size);
	fatelf_sha256_update(s->h, buf, len);
	if (s->keep && s->kept + len <= KEEP) {
		memcpy(s->keep + s->kept, buf, len);
		s->kept += len;
	}
	return 0;
}

static int read_once(const uint8_t *z, size_t zlen, const uint8_t sha[32], uint64_t size, struct seen *s)
{
	fatelf_reader rd;
	fatelf_diag d;
	uint8_t got[32];
	int r;

	s->size = size;
	s->count = 0;
	s->kept = 0;
	s->h = fatelf_sha256_new();
	fuzz_assert(s->h != NULL);
	fuzz_assert(fatelf_reader_mem(&rd, z, zlen) == 0);
	fatelf_diag_clear(&d);
	r = fatelf_repo_object_read(&rd, sha, size, "object", seen_data, s, &d);
	fatelf_reader_close(&rd);
	fatelf_sha256_final(s->h, got);
	fatelf_sha256_free(s->h);
	s->h = NULL;
	if (r < 0) {
		failed(r, &d, -FATELF_E_REPO_OBJECT, -FATELF_E_REPO_OBJECT);
		return r;
	}
	fuzz_assert(s->count == size);
	fuzz_assert(memcmp(got, sha, 32) == 0);
	return 0;
}

static void object_input(const uint8_t *data, size_t size)
{
	struct seen s = { 0 }, s2 = { 0 };
	uint8_t sha[32], sha2[32];
	uint64_t osize = 0;
	fatelf_sha256 *h;

	if (size < 40)
		return;
	for (int i = 7; i >= 0; i--)
		osize = osize << 8 | data[i];
	/* a bound on the work of a frame that expands a lot */
	if (osize > 64u << 20)
		osize = 64u << 20;
	memcpy(sha, data + 8, 32);
	data += 40;
	size -= 40;
	(void)read_once(data, size, sha, osize, &s);

	/* Again, with what a first read up to KEEP bytes hands on: when the
	 * read takes its own bytes back, it hands them on the same. */
	s.keep = malloc(KEEP);
	fuzz_assert(s.keep != NULL);
	(void)read_once(data, size, sha, KEEP, &s);
	if (s.count < KEEP && s.kept == s.count) {
		h = fatelf_sha256_new();
		fuzz_assert(h != NULL);
		fatelf_sha256_update(h, s.keep, s.kept);
		fatelf_sha256_final(h, sha2);
		fatelf_sha256_free(h);
		s2.keep = malloc(KEEP);
		fuzz_assert(s2.keep != NULL);
		if (read_once(data, size, sha2, s.kept, &s2) == 0)
			fuzz_assert(s2.kept == s.kept && memcmp(s2.keep, s.keep, s.kept) == 0);
		free(s2.keep);
	}
	free(s.keep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0:
		index_input(data + 1, size - 1);
		break;
	case 1:
		pack_input(data + 1, size - 1);
		break;
	case 2:
		pointer_input(data + 1, size - 1);
		break;
	default:
		object_input(data + 1, size - 1);
		break;
	}
	return 0;
}
