/*
 * Unit tests for repositories of fat packages (lib/repo/repo*.c): the
 * pack list's and the index's canonical text and every strict refusal of
 * their parsers, the pointer file, the object codec (zstd, size and
 * SHA-256 checked), the frames of FatELF files, and a repository
 * directory through its whole life: init, add, publish, verify, damage,
 * remove and gc.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "elfgen.h"
#include "hex.h"
#include "hostile.h"
#include "manifest_private.h"
#include "oci.h"
#include "reader.h"
#include "repo.h"
#include "testutil.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "3333333333333333333333333333333333333333333333333333333333333333"
#define HA "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
#define HA_UPPER "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

#define T_X86 "x86_64:64bits:le:sysv:osabiver0"
#define T_ARM "aarch64:64bits:le:sysv:osabiver0"

static void sha_of(const void *buf, size_t len, uint8_t out[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();

	ck_assert_ptr_nonnull(h);
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, out);
	fatelf_sha256_free(h);
}

static void unhex(const char *hex, uint8_t out[32])
{
	ck_assert_int_eq(fatelf_unhex_lower(hex, out, 32), 0);
}

/* Bytes handed out by a reader, in one growing buffer. */
struct sink {
	uint8_t *buf;
	size_t len;
	int fail_with;          /* < 0: the callback returns it */
};

static int to_sink(void *ctx, const void *buf, size_t len)
{
	struct sink *s = ctx;

	if (s->fail_with < 0)
		return s->fail_with;
	s->buf = realloc(s->buf, s->len + len + 1);
	ck_assert_ptr_nonnull(s->buf);
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

static void sink_free(struct sink *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = 0;
}

/* A copy of text with its one occurrence of from replaced by to. */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t n = strlen(text), f = strlen(from), t = strlen(to);
	char *out;

	ck_assert_msg(at != NULL, "'%s' is not in the text", from);
	ck_assert_msg(strstr(at + 1, from) == NULL, "'%s' is in the text more than once", from);
	out = malloc(n - f + t + 1);
	ck_assert_ptr_nonnull(out);
	memcpy(out, text, (size_t)(at - text));
	memcpy(out + (at - text), to, t);
	memcpy(out + (at - text) + t, at + f, n - (size_t)(at - text) - f + 1);
	return out;
}

/* Regular files under dir, recursively. */
static unsigned count_files(const char *dir)
{
	unsigned n = 0;
	DIR *dp = opendir(dir);
	struct dirent *de;

	if (!dp)
		return 0;
	while ((de = readdir(dp))) {
		char p[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			n += count_files(p);
		else
			n++;
	}
	closedir(dp);
	return n;
}

/* ---- pack lists */

static fatelf_repo_pack *pack_new(size_t nobjects, size_t nframes)
{
	fatelf_repo_pack *p = calloc(1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	p->objects = calloc(nobjects ? nobjects : 1, sizeof(*p->objects));
	p->frames = calloc(nframes ? nframes : 1, sizeof(*p->frames));
	ck_assert(p->objects && p->frames);
	p->nobjects = nobjects;
	p->nframes = nframes;
	return p;
}

static const char pack_text[] =
	"fatelf-pack 1\n"
	"object " H1 " 0 9\n"
	"object " H2 " 20000 123\n"
	"object " HA " 9223372036854775807 9223372036854775807\n"
	"frame 3 " H2 "\n"
	"frame 4294967295 " H1 "\n";

START_TEST(test_pack_round_trip)
{
	fatelf_repo_pack *p = pack_new(3, 2), *q = NULL;
	char *text = NULL, *text2 = NULL;
	size_t len, len2;
	uint8_t h1[32], h2[32], h3[32], ha[32];
	fatelf_diag d;

	unhex(H1, h1);
	unhex(H2, h2);
	unhex(H3, h3);
	unhex(HA, ha);
	/* Out of order: the serializer sorts. */
	memcpy(p->objects[0].sha256, ha, 32);
	p->objects[0].size = INT64_MAX;
	p->objects[0].csize = INT64_MAX;
	memcpy(p->objects[1].sha256, h2, 32);
	p->objects[1].size = 20000;
	p->objects[1].csize = 123;
	memcpy(p->objects[2].sha256, h1, 32);
	p->objects[2].size = 0;
	p->objects[2].csize = 9;
	p->frames[0].entry = UINT32_MAX;
	memcpy(p->frames[0].sha256, h1, 32);
	p->frames[1].entry = 3;
	memcpy(p->frames[1].sha256, h2, 32);

	ck_assert_msg(fatelf_repo_pack_serialize(p, &text, &len, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(len, strlen(pack_text));
	ck_assert_str_eq(text, pack_text);

	ck_assert_msg(fatelf_repo_pack_parse(text, len, &q, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(q->nobjects, 3);
	ck_assert_uint_eq(q->nframes, 2);
	for (size_t i = 0; i < 3; i++) {
		ck_assert(memcmp(q->objects[i].sha256, p->objects[i].sha256, 32) == 0);
		ck_assert_uint_eq(q->objects[i].size, p->objects[i].size);
		ck_assert_uint_eq(q->objects[i].csize, p->objects[i].csize);
	}
	for (size_t i = 0; i < 2; i++) {
		ck_assert_uint_eq(q->frames[i].entry, p->frames[i].entry);
		ck_assert(memcmp(q->frames[i].sha256, p->frames[i].sha256, 32) == 0);
	}
	ck_assert_msg(fatelf_repo_pack_serialize(q, &text2, &len2, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(len2, len);
	ck_assert(memcmp(text, text2, len) == 0);

	/* Lookups */
	const fatelf_repo_object *o = fatelf_repo_pack_object(q, h2);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->size, 20000);
	ck_assert_uint_eq(o->csize, 123);
	o = fatelf_repo_pack_object(q, ha);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->size, INT64_MAX);
	ck_assert_ptr_nonnull(fatelf_repo_pack_object(q, h1));
	ck_assert_ptr_null(fatelf_repo_pack_object(q, h3));
	const fatelf_repo_frame *f = fatelf_repo_pack_frame(q, 3);
	ck_assert_ptr_nonnull(f);
	ck_assert(memcmp(f->sha256, h2, 32) == 0);
	f = fatelf_repo_pack_frame(q, UINT32_MAX);
	ck_assert_ptr_nonnull(f);
	ck_assert(memcmp(f->sha256, h1, 32) == 0);
	ck_assert_ptr_null(fatelf_repo_pack_frame(q, 0));
	ck_assert_ptr_null(fatelf_repo_pack_frame(q, 4));

	/* A pack list of nothing */
	fatelf_repo_pack_free(q);
	q = NULL;
	ck_assert_int_eq(fatelf_repo_pack_parse("fatelf-pack 1\n", 14, &q, &d), 0);
	ck_assert_uint_eq(q->nobjects, 0);
	ck_assert_uint_eq(q->nframes, 0);
	ck_assert_ptr_null(fatelf_repo_pack_object(q, h1));
	ck_assert_ptr_null(fatelf_repo_pack_frame(q, 0));

	/* An object listed twice cannot be written. */
	ck_assert(memcmp(p->objects[0].sha256, h1, 32) == 0);
	memcpy(p->objects[1].sha256, h1, 32);
	free(text2);
	text2 = NULL;
	ck_assert_int_lt(fatelf_repo_pack_serialize(p, &text2, &len2, &d), 0);
	ck_assert_ptr_null(text2);

	free(text);
	fatelf_repo_pack_free(p);
	fatelf_repo_pack_free(q);
}
END_TEST

struct bad_text {
	const char *why;
	const char *text;
};

/* Each of these breaks one rule; its control, the same with the rule
 * kept, parses (below), so the refusal is the rule's. */
static const struct bad_text bad_packs[] = {
	{ "empty", "" },
	{ "no magic", "object " H1 " 1 1\n" },
	{ "magic of format 2", "fatelf-pack 2\n" },
	{ "magic upper-case", "FATELF-PACK 1\n" },
	{ "magic without its newline", "fatelf-pack 1" },
	{ "magic with a carriage return", "fatelf-pack 1\r\n" },
	{ "objects unsorted", "fatelf-pack 1\nobject " H2 " 1 1\nobject " H1 " 1 1\n" },
	{ "object twice", "fatelf-pack 1\nobject " H1 " 1 1\nobject " H1 " 1 1\n" },
	{ "object after a frame", "fatelf-pack 1\nframe 0 " H1 "\nobject " H2 " 1 1\n" },
	{ "frames unsorted", "fatelf-pack 1\nframe 2 " H1 "\nframe 1 " H1 "\n" },
	{ "frame twice", "fatelf-pack 1\nframe 1 " H1 "\nframe 1 " H2 "\n" },
	{ "size with a leading zero", "fatelf-pack 1\nobject " H1 " 01 1\n" },
	{ "csize with a leading zero", "fatelf-pack 1\nobject " H1 " 1 00\n" },
	{ "entry with a leading zero", "fatelf-pack 1\nframe 07 " H1 "\n" },
	{ "size over INT64_MAX", "fatelf-pack 1\nobject " H1 " 9223372036854775808 1\n" },
	{ "csize over INT64_MAX", "fatelf-pack 1\nobject " H1 " 1 18446744073709551615\n" },
	{ "size of 21 digits", "fatelf-pack 1\nobject " H1 " 100000000000000000000 1\n" },
	{ "entry over UINT32_MAX", "fatelf-pack 1\nframe 4294967296 " H1 "\n" },
	{ "size negative", "fatelf-pack 1\nobject " H1 " -1 1\n" },
	{ "size with a plus", "fatelf-pack 1\nobject " H1 " +1 1\n" },
	{ "size empty", "fatelf-pack 1\nobject " H1 "  1\n" },
	{ "object hex upper-case", "fatelf-pack 1\nobject " HA_UPPER " 1 1\n" },
	{ "frame hex upper-case", "fatelf-pack 1\nframe 1 " HA_UPPER "\n" },
	{ "hex of 63 digits", "fatelf-pack 1\nobject " "111111111111111111111111111111111111111111111111111111111111111" " 1 1\n" },
	{ "hex of 65 digits", "fatelf-pack 1\nobject " H1 "1 1 1\n" },
	{ "hex not hex", "fatelf-pack 1\nobject " "g111111111111111111111111111111111111111111111111111111111111111" " 1 1\n" },
	{ "object without its newline, cut in its hash", "fatelf-pack 1\nobject " H1 " 1 1\nobject " H2 },
	{ "keyword without its newline", "fatelf-pack 1\nobject" },
	{ "frame without the final newline", "fatelf-pack 1\nframe 1 " H1 "\nframe 2 " H1 },
	{ "object with an extra field", "fatelf-pack 1\nobject " H1 " 1 1 1\n" },
	{ "object with a trailing space", "fatelf-pack 1\nobject " H1 " 1 1 \n" },
	{ "frame with an extra field", "fatelf-pack 1\nframe 1 " H1 " x\n" },
	{ "object missing a field", "fatelf-pack 1\nobject " H1 " 1\n" },
	{ "frame missing a field", "fatelf-pack 1\nframe 1\n" },
	{ "object line with a carriage return", "fatelf-pack 1\nobject " H1 " 1 1\r\n" },
	{ "unknown keyword", "fatelf-pack 1\nobjects " H1 " 1 1\n" },
	{ "keyword upper-case", "fatelf-pack 1\nObject " H1 " 1 1\n" },
	{ "empty line", "fatelf-pack 1\n\n" },
	{ "two spaces", "fatelf-pack 1\nobject  " H1 " 1 1\n" },
	{ "a comment", "fatelf-pack 1\n# objects\n" },
};

/* Lines cut before their newline: refused before a slot is taken. */
static const struct bad_text bad_packs_last_line[] = {
	{ "object without the final newline", "fatelf-pack 1\nobject " H1 " 1 1" },
	{ "object without the final newline, after another", "fatelf-pack 1\nobject " H1 " 1 1\nobject " H2 " 1 1" },
	{ "object cut after its size", "fatelf-pack 1\nobject " H1 " 1 " },
	/* the slot is taken before the line is read: no array at all here */
	{ "object cut in its hash, the only line", "fatelf-pack 1\nobject " H1 },
	{ "frame without its newline, the only line", "fatelf-pack 1\nframe 1 " H1 },
};

static const char *const good_packs[] = {
	"fatelf-pack 1\n",
	"fatelf-pack 1\nobject " H1 " 1 1\nobject " H2 " 1 1\n",
	"fatelf-pack 1\nobject " H1 " 0 0\n",
	"fatelf-pack 1\nobject " H1 " 9223372036854775807 1\n",
	"fatelf-pack 1\nobject " HA " 10 20\nframe 0 " HA "\n",
	"fatelf-pack 1\nframe 1 " H1 "\nframe 2 " H1 "\n",
	"fatelf-pack 1\nframe 4294967295 " H1 "\n",
};

START_TEST(test_pack_refusals)
{
	for (size_t i = 0; i < sizeof(bad_packs) / sizeof(bad_packs[0]); i++) {
		fatelf_repo_pack *p = NULL;
		fatelf_diag d;
		int r;

		fatelf_diag_clear(&d);
		r = fatelf_repo_pack_parse(bad_packs[i].text, strlen(bad_packs[i].text), &p, &d);
		ck_assert_msg(r == -FATELF_E_REPO_PACK, "%s: got %s (%s)", bad_packs[i].why, fatelf_error_name(r),
			      d.msg);
		ck_assert_int_eq(d.code, r);
		ck_assert_msg(d.msg[0] != '\0', "%s: no message", bad_packs[i].why);
		ck_assert_ptr_null(p);
	}
	for (size_t i = 0; i < sizeof(bad_packs_last_line) / sizeof(bad_packs_last_line[0]); i++) {
		fatelf_repo_pack *p = NULL;
		fatelf_diag d;
		int r = fatelf_repo_pack_parse(bad_packs_last_line[i].text, strlen(bad_packs_last_line[i].text), &p, &d);

		ck_assert_msg(r == -FATELF_E_REPO_PACK, "%s: got %s", bad_packs_last_line[i].why, fatelf_error_name(r));
		ck_assert_ptr_null(p);
	}
	for (size_t i = 0; i < sizeof(good_packs) / sizeof(good_packs[0]); i++) {
		fatelf_repo_pack *p = NULL;
		fatelf_diag d;
		char *text;
		size_t len;

		ck_assert_msg(fatelf_repo_pack_parse(good_packs[i], strlen(good_packs[i]), &p, &d) == 0, "%s: %s",
			      good_packs[i], d.msg);
		/* what parses is canonical already */
		ck_assert_int_eq(fatelf_repo_pack_serialize(p, &text, &len, &d), 0);
		ck_assert_str_eq(text, good_packs[i]);
		free(text);
		fatelf_repo_pack_free(p);
	}
	/* The text is taken by its length, not up to a NUL. */
	fatelf_repo_pack *p = NULL;
	fatelf_diag d;
	ck_assert_int_eq(fatelf_repo_pack_parse(good_packs[5], strlen(good_packs[5]) - 1, &p, &d),
			 -FATELF_E_REPO_PACK);
	ck_assert_int_eq(fatelf_repo_pack_parse("fatelf-pack 1\n\0", 15, &p, &d), -FATELF_E_REPO_PACK);
	ck_assert_ptr_null(p);
}
END_TEST

/* ---- the index */

/* A repository's identity */
#define RID "0123456789abcdef0123456789abcdef"
#define RID2 "fedcba9876543210fedcba9876543210"

/* The text fatelf_repo_index_serialize must write for make_index(). */
static const char index_text[] =
	"{\n"
	"  \"format\": 1,\n"
	"  \"repository\": \"" RID "\",\n"
	"  \"serial\": 7,\n"
	"  \"created\": 1700000000,\n"
	"  \"expires\": 1800000000,\n"
	"  \"packages\": [\n"
	"    {\n"
	"      \"name\": \"alpha\",\n"
	"      \"versions\": [\n"
	"        {\n"
	"          \"version\": \"1.0-1\",\n"
	"          \"summary\": \"First \\\"one\\\" / caf\xc3\xa9\",\n"
	"          \"targets\": [\n"
	"            \"" T_X86 "\",\n"
	"            \"" T_ARM "\"\n"
	"          ],\n"
	"          \"entries\": 6,\n"
	"          \"size\": 12345,\n"
	"          \"manifest\": \"" H1 "\",\n"
	"          \"manifest_size\": 999,\n"
	"          \"signed\": true,\n"
	"          \"pack\": \"" H2 "\",\n"
	"          \"pack_size\": 300\n"
	"        },\n"
	"        {\n"
	"          \"version\": \"2.0-1\",\n"
	"          \"targets\": [\n"
	"          ],\n"
	"          \"entries\": 0,\n"
	"          \"size\": 0,\n"
	"          \"manifest\": \"" H3 "\",\n"
	"          \"manifest_size\": 1,\n"
	"          \"signed\": false,\n"
	"          \"pack\": \"" HA "\",\n"
	"          \"pack_size\": 14\n"
	"        },\n"
	"        {\n"
	"          \"version\": \"1:0.5-1\",\n"
	"          \"targets\": [\n"
	"            \"" T_ARM "\"\n"
	"          ],\n"
	"          \"entries\": 4294967295,\n"
	"          \"size\": 9223372036854775807,\n"
	"          \"manifest\": \"" HA "\",\n"
	"          \"manifest_size\": 2,\n"
	"          \"signed\": false,\n"
	"          \"pack\": \"" H3 "\",\n"
	"          \"pack_size\": 15\n"
	"        }\n"
	"      ]\n"
	"    },\n"
	"    {\n"
	"      \"name\": \"zeta\",\n"
	"      \"versions\": [\n"
	"        {\n"
	"          \"version\": \"0.1\",\n"
	"          \"targets\": [\n"
	"            \"" T_X86 "\"\n"
	"          ],\n"
	"          \"entries\": 1,\n"
	"          \"size\": 2,\n"
	"          \"manifest\": \"" H2 "\",\n"
	"          \"manifest_size\": 3,\n"
	"          \"signed\": true,\n"
	"          \"pack\": \"" H1 "\",\n"
	"          \"pack_size\": 4\n"
	"        }\n"
	"      ]\n"
	"    }\n"
	"  ]\n"
	"}\n";

static fatelf_target target_of(const char *name)
{
	fatelf_pattern p;
	fatelf_diag d;

	ck_assert_msg(fatelf_pattern_parse(name, &p, &d) == 0, "%s: %s", name, d.msg);
	ck_assert_uint_eq(p.want, FATELF_WANT_ALL);
	return p.target;
}

static void set_targets(fatelf_repo_version *v, const char *const *names, size_t n)
{
	v->targets = calloc(n ? n : 1, sizeof(*v->targets));
	ck_assert_ptr_nonnull(v->targets);
	for (size_t i = 0; i < n; i++)
		v->targets[i] = target_of(names[i]);
	v->ntargets = n;
}

static void fill(fatelf_repo_version *v, uint64_t entries, uint64_t size, const char *manifest,
		 uint64_t manifest_size, bool sig, const char *pack, uint64_t pack_size)
{
	v->entries = entries;
	v->size = size;
	unhex(manifest, v->manifest);
	v->manifest_size = manifest_size;
	v->signed_manifest = sig;
	unhex(pack, v->pack);
	v->pack_size = pack_size;
}

static fatelf_repo_index *make_index(void)
{
	static const char *const both[] = { T_X86, T_ARM }, *const x86[] = { T_X86 }, *const arm[] = { T_ARM };
	fatelf_repo_index *ix = fatelf_repo_index_new();
	fatelf_repo_package *zeta, *alpha;
	fatelf_repo_version *v;

	ck_assert_ptr_nonnull(ix);
	ck_assert_uint_eq(ix->format, FATELF_REPO_FORMAT);
	memcpy(ix->repository, RID, sizeof(RID));
	ix->serial = 7;
	ix->created = 1700000000;
	ix->expires = 1800000000;
	/* added out of order: the index keeps them sorted */
	zeta = fatelf_repo_index_add_package(ix, "zeta");
	ck_assert_ptr_nonnull(zeta);
	v = fatelf_repo_package_add_version(zeta, "0.1");
	ck_assert_ptr_nonnull(v);
	set_targets(v, x86, 1);
	fill(v, 1, 2, H2, 3, true, H1, 4);
	alpha = fatelf_repo_index_add_package(ix, "alpha");
	ck_assert_ptr_nonnull(alpha);
	/* the add moved zeta: find it again */
	ck_assert_ptr_eq(fatelf_repo_index_add_package(ix, "alpha"), alpha);
	ck_assert_uint_eq(ix->npackages, 2);
	v = fatelf_repo_package_add_version(alpha, "1:0.5-1");
	ck_assert_ptr_nonnull(v);
	set_targets(v, arm, 1);
	fill(v, UINT32_MAX, INT64_MAX, HA, 2, false, H3, 15);
	v = fatelf_repo_package_add_version(alpha, "2.0-1");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v->summary, "");
	set_targets(v, NULL, 0);
	fill(v, 0, 0, H3, 1, false, HA, 14);
	v = fatelf_repo_package_add_version(alpha, "1.0-1");
	ck_assert_ptr_nonnull(v);
	free(v->summary);
	v->summary = strdup("First \"one\" / caf\xc3\xa9");
	set_targets(v, both, 2);
	ck_assert_int_lt(fatelf_manifest_target_cmp(&v->targets[0], &v->targets[1]), 0);
	fill(v, 6, 12345, H1, 999, true, H2, 300);
	return ix;
}

static void assert_versions_equal(const fatelf_repo_version *a, const fatelf_repo_version *b)
{
	ck_assert_str_eq(a->version, b->version);
	ck_assert_str_eq(a->summary, b->summary);
	ck_assert_uint_eq(a->ntargets, b->ntargets);
	for (size_t i = 0; i < a->ntargets; i++)
		ck_assert_int_eq(fatelf_manifest_target_cmp(&a->targets[i], &b->targets[i]), 0);
	ck_assert_uint_eq(a->entries, b->entries);
	ck_assert_uint_eq(a->size, b->size);
	ck_assert(memcmp(a->manifest, b->manifest, 32) == 0);
	ck_assert_uint_eq(a->manifest_size, b->manifest_size);
	ck_assert_int_eq(a->signed_manifest, b->signed_manifest);
	ck_assert(memcmp(a->pack, b->pack, 32) == 0);
	ck_assert_uint_eq(a->pack_size, b->pack_size);
	ck_assert_uint_eq(a->ndepends, b->ndepends);
	for (size_t i = 0; i < a->ndepends; i++) {
		ck_assert_str_eq(a->depends[i].name, b->depends[i].name);
		ck_assert_int_eq(a->depends[i].op, b->depends[i].op);
		ck_assert_str_eq(a->depends[i].version ? a->depends[i].version : "-",
				 b->depends[i].version ? b->depends[i].version : "-");
	}
}

static void assert_indexes_equal(const fatelf_repo_index *a, const fatelf_repo_index *b)
{
	ck_assert_uint_eq(a->format, b->format);
	ck_assert_str_eq(a->repository, b->repository);
	ck_assert_uint_eq(a->serial, b->serial);
	ck_assert_int_eq(a->created, b->created);
	ck_assert_int_eq(a->expires, b->expires);
	ck_assert_uint_eq(a->npackages, b->npackages);
	for (size_t i = 0; i < a->npackages; i++) {
		ck_assert_str_eq(a->packages[i].name, b->packages[i].name);
		ck_assert_uint_eq(a->packages[i].nversions, b->packages[i].nversions);
		for (size_t k = 0; k < a->packages[i].nversions; k++)
			assert_versions_equal(&a->packages[i].versions[k], &b->packages[i].versions[k]);
	}
}

START_TEST(test_index_round_trip)
{
	fatelf_repo_index *ix = make_index(), *back = NULL;
	fatelf_repo_package *p;
	char *text = NULL, *text2 = NULL;
	size_t len, len2;
	fatelf_diag d;

	/* The model keeps names sorted, and versions in dpkg's order. */
	ck_assert_str_eq(ix->packages[0].name, "alpha");
	ck_assert_str_eq(ix->packages[1].name, "zeta");
	p = &ix->packages[0];
	ck_assert_uint_eq(p->nversions, 3);
	ck_assert_str_eq(p->versions[0].version, "1.0-1");
	ck_assert_str_eq(p->versions[1].version, "2.0-1");
	ck_assert_str_eq(p->versions[2].version, "1:0.5-1");

	ck_assert_msg(fatelf_repo_index_serialize(ix, &text, &len, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(strlen(text), len);
	ck_assert_str_eq(text, index_text);
	/* The writer keeps the reader's text rule: a summary with U+202E is
	 * refused, and nothing is written. */
	{
		char *keep = p->versions[0].summary, *none = NULL;
		size_t nlen = 0;

		p->versions[0].summary = (char *)"x\xe2\x80\xae" "y";
		ck_assert_int_eq(fatelf_repo_index_serialize(ix, &none, &nlen, &d), -FATELF_E_REPO_INDEX);
		ck_assert_str_eq(d.msg, "package 'alpha' version 1.0-1: the summary holds the bidirectional "
			      "control character U+202E at byte 1");
		ck_assert_ptr_null(none);
		p->versions[0].summary = keep;
	}

	ck_assert_msg(fatelf_repo_index_parse(text, len, &back, &d) == 0, "%s", d.msg);
	assert_indexes_equal(ix, back);
	ck_assert_msg(fatelf_repo_index_serialize(back, &text2, &len2, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(len2, len);
	ck_assert(memcmp(text, text2, len) == 0);

	/* Lookups */
	ck_assert_ptr_eq(fatelf_repo_index_find(back, "zeta"), &back->packages[1]);
	ck_assert_ptr_eq(fatelf_repo_index_find(back, "alpha"), &back->packages[0]);
	ck_assert_ptr_null(fatelf_repo_index_find(back, "beta"));
	ck_assert_ptr_null(fatelf_repo_index_find(back, "zzz"));
	ck_assert_ptr_null(fatelf_repo_index_find(back, ""));
	p = fatelf_repo_index_find(back, "alpha");
	ck_assert_ptr_eq(fatelf_repo_package_version(p, "2.0-1"), &p->versions[1]);
	/* by dpkg's equality */
	ck_assert_ptr_eq(fatelf_repo_package_version(p, "0:2.0-1"), &p->versions[1]);
	ck_assert_ptr_null(fatelf_repo_package_version(p, "2.0-2"));

	/* An empty index: what init publishes */
	fatelf_repo_index *empty = fatelf_repo_index_new(), *eback = NULL;
	empty->serial = 1;
	free(text);
	ck_assert_int_eq(fatelf_repo_index_serialize(empty, &text, &len, &d), 0);
	ck_assert_str_eq(text, "{\n  \"format\": 1,\n  \"serial\": 1,\n  \"created\": 0,\n  \"packages\": [\n  ]\n}\n");
	ck_assert_msg(fatelf_repo_index_parse(text, len, &eback, &d) == 0, "%s", d.msg);
	assert_indexes_equal(empty, eback);

	/* An explicit empty summary parses as none. */
	char *with_empty = replace(index_text, "\"version\": \"0.1\",\n",
				   "\"version\": \"0.1\",\n          \"summary\": \"\",\n");
	fatelf_repo_index *e2 = NULL;
	ck_assert_msg(fatelf_repo_index_parse(with_empty, strlen(with_empty), &e2, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(e2->packages[1].versions[0].summary, "");
	free(text2);
	ck_assert_int_eq(fatelf_repo_index_serialize(e2, &text2, &len2, &d), 0);
	ck_assert_str_eq(text2, index_text);

	free(with_empty);
	free(text);
	free(text2);
	fatelf_repo_index_free(e2);
	fatelf_repo_index_free(empty);
	fatelf_repo_index_free(eback);
	fatelf_repo_index_free(ix);
	fatelf_repo_index_free(back);
}
END_TEST

struct index_case {
	const char *why;
	const char *from, *to;  /* one replacement in index_text */
	int code;
};

static const struct index_case bad_indexes[] = {
	/* JSON and duplicate keys */
	{ "duplicate top-level key", "\"serial\": 7,", "\"serial\": 7, \"serial\": 8,", -FATELF_E_REPO_INDEX },
	{ "duplicate version key", "\"entries\": 6,", "\"entries\": 6, \"entries\": 6,", -FATELF_E_REPO_INDEX },
	{ "duplicate package key", "\"name\": \"zeta\",", "\"name\": \"zeta\", \"name\": \"zeta\",",
	  -FATELF_E_REPO_INDEX },
	{ "duplicate key by escape", "\"serial\": 7,", "\"serial\": 7, \"s\\u0065rial\": 7,", -FATELF_E_REPO_INDEX },
	{ "trailing comma", "\"pack_size\": 4\n", "\"pack_size\": 4,\n", -FATELF_E_REPO_INDEX },
	{ "trailing garbage", "  ]\n}\n", "  ]\n}\n}", -FATELF_E_REPO_INDEX },
	{ "single quotes", "\"name\": \"zeta\"", "\"name\": 'zeta'", -FATELF_E_REPO_INDEX },
	/* unknown fields */
	{ "unknown top-level field", "\"serial\": 7,", "\"serial\": 7, \"mirror\": \"x\",", -FATELF_E_REPO_INDEX },
	{ "unknown package field", "\"name\": \"zeta\",", "\"name\": \"zeta\", \"colour\": 1,",
	  -FATELF_E_REPO_INDEX },
	{ "unknown version field", "\"entries\": 6,", "\"entries\": 6, \"sha256\": \"" H1 "\",",
	  -FATELF_E_REPO_INDEX },
	/* hashes */
	{ "manifest hash upper-case", "\"manifest\": \"" HA "\"", "\"manifest\": \"" HA_UPPER "\"",
	  -FATELF_E_REPO_INDEX },
	{ "pack hash of 63 digits", "\"pack\": \"" H2 "\"",
	  "\"pack\": \"222222222222222222222222222222222222222222222222222222222222222\"", -FATELF_E_REPO_INDEX },
	{ "pack hash not hex", "\"pack\": \"" H2 "\"",
	  "\"pack\": \"z222222222222222222222222222222222222222222222222222222222222222\"", -FATELF_E_REPO_INDEX },
	{ "hash a number", "\"pack\": \"" H2 "\"", "\"pack\": 2", -FATELF_E_REPO_INDEX },
	/* order */
	{ "packages unsorted", "\"name\": \"alpha\"", "\"name\": \"zz\"", -FATELF_E_REPO_INDEX },
	{ "package twice", "\"name\": \"alpha\"", "\"name\": \"zeta\"", -FATELF_E_REPO_INDEX },
	{ "versions unsorted", "\"version\": \"2.0-1\"", "\"version\": \"0.9-1\"", -FATELF_E_REPO_INDEX },
	{ "version twice", "\"version\": \"2.0-1\"", "\"version\": \"1.0-1\"", -FATELF_E_REPO_INDEX },
	{ "version twice by dpkg's order", "\"version\": \"2.0-1\"", "\"version\": \"0:1.0-1\"",
	  -FATELF_E_REPO_INDEX },
	{ "targets unsorted", "\"" T_X86 "\",\n            \"" T_ARM "\"", "\"" T_ARM "\",\n            \"" T_X86 "\"",
	  -FATELF_E_REPO_INDEX },
	{ "target twice", "\"" T_X86 "\",\n            \"" T_ARM "\"", "\"" T_X86 "\",\n            \"" T_X86 "\"",
	  -FATELF_E_REPO_INDEX },
	/* names, versions and targets */
	{ "package name upper-case", "\"name\": \"zeta\"", "\"name\": \"Zeta\"", -FATELF_E_REPO_INDEX },
	{ "package name with a slash", "\"name\": \"zeta\"", "\"name\": \"ze/ta\"", -FATELF_E_REPO_INDEX },
	{ "package name empty", "\"name\": \"zeta\"", "\"name\": \"\"", -FATELF_E_REPO_INDEX },
	{ "package name a number", "\"name\": \"zeta\"", "\"name\": 5", -FATELF_E_REPO_INDEX },
	{ "version invalid", "\"version\": \"0.1\"", "\"version\": \"a b\"", -FATELF_E_REPO_INDEX },
	{ "version empty", "\"version\": \"0.1\"", "\"version\": \"\"", -FATELF_E_REPO_INDEX },
	{ "summary with a control byte", "\"summary\": \"First", "\"summary\": \"\\u0007First",
	  -FATELF_E_REPO_INDEX },
	{ "summary with a NUL", "\"summary\": \"First", "\"summary\": \"\\u0000First", -FATELF_E_REPO_INDEX },
	{ "summary with U+202E", "\"summary\": \"First", "\"summary\": \"\xe2\x80\xae" "First", -FATELF_E_REPO_INDEX },
	{ "summary with U+2066, escaped", "\"summary\": \"First", "\"summary\": \"\\u2066First", -FATELF_E_REPO_INDEX },
	{ "summary with U+0085", "\"summary\": \"First", "\"summary\": \"\\u0085First", -FATELF_E_REPO_INDEX },
	{ "target by its alias", "\"" T_X86 "\"\n          ],\n          \"entries\": 1,",
	  "\"amd64:64bits:le:sysv:osabiver0\"\n          ],\n          \"entries\": 1,", -FATELF_E_REPO_INDEX },
	{ "target upper-case", "\"" T_X86 "\"\n          ],\n          \"entries\": 1,",
	  "\"X86_64:64bits:le:sysv:osabiver0\"\n          ],\n          \"entries\": 1,", -FATELF_E_REPO_INDEX },
	{ "target fields reordered", "\"" T_X86 "\"\n          ],\n          \"entries\": 1,",
	  "\"64bits:x86_64:le:sysv:osabiver0\"\n          ],\n          \"entries\": 1,", -FATELF_E_REPO_INDEX },
	{ "target not full", "\"" T_X86 "\"\n          ],\n          \"entries\": 1,",
	  "\"x86_64\"\n          ],\n          \"entries\": 1,", -FATELF_E_REPO_INDEX },
	{ "target a number", "\"" T_X86 "\"\n          ],\n          \"entries\": 1,",
	  "62\n          ],\n          \"entries\": 1,", -FATELF_E_REPO_INDEX },
	/* types and ranges */
	{ "signed a number", "\"signed\": true,\n          \"pack\": \"" H1, "\"signed\": 1,\n          \"pack\": \"" H1,
	  -FATELF_E_REPO_INDEX },
	{ "entries a string", "\"entries\": 6,", "\"entries\": \"6\",", -FATELF_E_REPO_INDEX },
	{ "entries over UINT32_MAX", "\"entries\": 4294967295,", "\"entries\": 4294967296,", -FATELF_E_REPO_INDEX },
	{ "size negative", "\"size\": 12345,", "\"size\": -1,", -FATELF_E_REPO_INDEX },
	{ "size a fraction", "\"size\": 12345,", "\"size\": 12345.0,", -FATELF_E_REPO_INDEX },
	{ "serial 0", "\"serial\": 7,", "\"serial\": 0,", -FATELF_E_REPO_INDEX },
	{ "serial negative", "\"serial\": 7,", "\"serial\": -7,", -FATELF_E_REPO_INDEX },
	{ "expires 0", "\"expires\": 1800000000,", "\"expires\": 0,", -FATELF_E_REPO_INDEX },
	{ "pack_size over the limit", "\"pack_size\": 4\n", "\"pack_size\": 67108865\n", -FATELF_E_REPO_INDEX },
	/* missing fields */
	{ "missing serial", "\"serial\": 7,", "", -FATELF_E_REPO_INDEX },
	{ "missing created", "\"created\": 1700000000,", "", -FATELF_E_REPO_INDEX },
	{ "missing package name", "\"name\": \"zeta\",", "", -FATELF_E_REPO_INDEX },
	{ "missing version", "\"version\": \"0.1\",", "", -FATELF_E_REPO_INDEX },
	{ "missing targets", "\"targets\": [\n          ],", "", -FATELF_E_REPO_INDEX },
	{ "missing entries", "\"entries\": 6,", "", -FATELF_E_REPO_INDEX },
	{ "missing manifest", "\"manifest\": \"" H3 "\",", "", -FATELF_E_REPO_INDEX },
	{ "missing manifest_size", "\"manifest_size\": 999,", "", -FATELF_E_REPO_INDEX },
	{ "missing signed", "\"signed\": true,\n          \"pack\": \"" H2 "\",", "\"pack\": \"" H2 "\",",
	  -FATELF_E_REPO_INDEX },
	{ "missing pack", "\"pack\": \"" H2 "\",", "", -FATELF_E_REPO_INDEX },
	{ "missing pack_size", ",\n          \"pack_size\": 4\n", "\n", -FATELF_E_REPO_INDEX },
	/* the repository's identity: 32 lower-case hex digits */
	{ "repository upper-case", "\"" RID "\"", "\"0123456789ABCDEF0123456789abcdef\"", -FATELF_E_REPO_INDEX },
	{ "repository 31 digits", "\"" RID "\"", "\"0123456789abcdef0123456789abcde\"", -FATELF_E_REPO_INDEX },
	{ "repository 33 digits", "\"" RID "\"", "\"0123456789abcdef0123456789abcdef0\"", -FATELF_E_REPO_INDEX },
	{ "repository not hex", "\"" RID "\"", "\"0123456789abcdef0123456789abcdeg\"", -FATELF_E_REPO_INDEX },
	{ "repository empty", "\"" RID "\"", "\"\"", -FATELF_E_REPO_INDEX },
	{ "repository a number", "\"" RID "\"", "12", -FATELF_E_REPO_INDEX },
	{ "repository null", "\"" RID "\"", "null", -FATELF_E_REPO_INDEX },
	{ "repository with a NUL", "\"" RID "\"", "\"0123456789abcdef0123456789abcde\\u0000\"",
	  -FATELF_E_REPO_INDEX },
	{ "repository twice", "\"repository\": \"" RID "\",",
	  "\"repository\": \"" RID "\",\n  \"repository\": \"" RID "\",", -FATELF_E_REPO_INDEX },
	/* the format */
	{ "format 2", "\"format\": 1,", "\"format\": 2,", -FATELF_E_REPO_FORMAT },
	{ "format 0", "\"format\": 1,", "\"format\": 0,", -FATELF_E_REPO_FORMAT },
	{ "format a string", "\"format\": 1,", "\"format\": \"1\",", -FATELF_E_REPO_INDEX },
	{ "missing format", "\"format\": 1,", "", -FATELF_E_REPO_INDEX },
};

#define SMALL_HEAD "{\"format\": 1, \"serial\": 1, \"created\": 0"
#define SMALL_VERSION "{\"version\": \"1\", \"targets\": [], \"entries\": 0, \"size\": 0, " \
	"\"manifest\": \"" H1 "\", \"manifest_size\": 1, \"signed\": false, \"pack\": \"" H2 "\", " \
	"\"pack_size\": 14}"

#define SMALL_DEPENDS(list) "{\"version\": \"1\", \"targets\": [], \"entries\": 0, \"size\": 0, " \
	"\"manifest\": \"" H1 "\", \"manifest_size\": 1, \"signed\": false, \"pack\": \"" H2 "\", " \
	"\"pack_size\": 14, \"depends\": " list "}"
#define SMALL_WITH(version) SMALL_HEAD ", \"packages\": [{\"name\": \"ab\", \"versions\": [" version "]}]}"

/* Whole small indexes, for the shapes of the containers. */
static const struct bad_text bad_small_indexes[] = {
	{ "versions empty", SMALL_HEAD ", \"packages\": [{\"name\": \"ab\", \"versions\": []}]}" },
	{ "versions an object", SMALL_HEAD ", \"packages\": [{\"name\": \"ab\", \"versions\": {}}]}" },
	{ "version a string", SMALL_HEAD ", \"packages\": [{\"name\": \"ab\", \"versions\": [\"1\"]}]}" },
	{ "packages an object", SMALL_HEAD ", \"packages\": {}}" },
	{ "package a string", SMALL_HEAD ", \"packages\": [\"a\"]}" },
	{ "packages null", SMALL_HEAD ", \"packages\": null}" },
	{ "missing packages", SMALL_HEAD "}" },
	{ "missing versions", SMALL_HEAD ", \"packages\": [{\"name\": \"ab\"}]}" },
	/* depends: optional, but never empty, canonical, sorted, each name once */
	{ "depends empty", SMALL_WITH(SMALL_DEPENDS("[]")) },
	{ "depends a string", SMALL_WITH(SMALL_DEPENDS("\"lib\"")) },
	{ "depends entry a number", SMALL_WITH(SMALL_DEPENDS("[1]")) },
	{ "depends entry a bad name", SMALL_WITH(SMALL_DEPENDS("[\"Lib\"]")) },
	{ "depends entry a bad operator", SMALL_WITH(SMALL_DEPENDS("[\"lib (> 2)\"]")) },
	{ "depends entry not canonical", SMALL_WITH(SMALL_DEPENDS("[\"lib  (>= 2)\"]")) },
	{ "depends not sorted", SMALL_WITH(SMALL_DEPENDS("[\"zz\", \"lib\"]")) },
	{ "depends twice", SMALL_WITH(SMALL_DEPENDS("[\"lib\", \"lib (>= 2)\"]")) },
	{ "package empty", SMALL_HEAD ", \"packages\": [{}]}" },
	{ "nested too deep", SMALL_HEAD ", \"packages\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	  "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}" },
};

static const char *const good_small_indexes[] = {
	SMALL_HEAD ", \"packages\": []}",
	SMALL_HEAD ", \"packages\": [{\"name\": \"ab\", \"versions\": [" SMALL_VERSION "]}]}",
	/* the repository's identity, anywhere among the members */
	"{\"format\": 1, \"serial\": 1, \"packages\": [], \"repository\": \"" RID "\", \"created\": 0}",
	/* members in any order */
	"{\"packages\": [{\"versions\": [" SMALL_VERSION "], \"name\": \"ab\"}], \"created\": 0, \"serial\": 1, \"format\": 1}",
	SMALL_WITH(SMALL_DEPENDS("[\"lib (>= 2)\", \"other\", \"zz (<< 1:3.0-1)\"]")),
};

START_TEST(test_index_refusals)
{
	fatelf_repo_index *ix = NULL;
	fatelf_diag d;

	/* The control: the text itself parses. */
	ck_assert_msg(fatelf_repo_index_parse(index_text, strlen(index_text), &ix, &d) == 0, "%s", d.msg);
	fatelf_repo_index_free(ix);
	for (size_t i = 0; i < sizeof(bad_indexes) / sizeof(bad_indexes[0]); i++) {
		const struct index_case *c = &bad_indexes[i];
		char *text = replace(index_text, c->from, c->to);
		int r;

		ix = NULL;
		fatelf_diag_clear(&d);
		r = fatelf_repo_index_parse(text, strlen(text), &ix, &d);
		ck_assert_msg(r == c->code, "%s: got %s (%s), want %s", c->why, fatelf_error_name(r), d.msg,
			      fatelf_error_name(c->code));
		ck_assert_int_eq(d.code, r);
		ck_assert_ptr_null(ix);
		free(text);
	}
	for (size_t i = 0; i < sizeof(bad_small_indexes) / sizeof(bad_small_indexes[0]); i++) {
		int r = fatelf_repo_index_parse(bad_small_indexes[i].text, strlen(bad_small_indexes[i].text), &ix, &d);

		ck_assert_msg(r == -FATELF_E_REPO_INDEX, "%s: got %s (%s)", bad_small_indexes[i].why,
			      fatelf_error_name(r), d.msg);
		ck_assert_ptr_null(ix);
	}
	for (size_t i = 0; i < sizeof(good_small_indexes) / sizeof(good_small_indexes[0]); i++) {
		char *t1, *t2;
		size_t l1, l2;
		fatelf_repo_index *again = NULL;

		ck_assert_msg(fatelf_repo_index_parse(good_small_indexes[i], strlen(good_small_indexes[i]), &ix, &d) == 0,
			      "%zu: %s", i, d.msg);
		ck_assert_int_eq(fatelf_repo_index_serialize(ix, &t1, &l1, &d), 0);
		ck_assert_int_eq(fatelf_repo_index_parse(t1, l1, &again, &d), 0);
		assert_indexes_equal(ix, again);
		ck_assert_int_eq(fatelf_repo_index_serialize(again, &t2, &l2, &d), 0);
		ck_assert_str_eq(t1, t2);
		free(t1);
		free(t2);
		fatelf_repo_index_free(ix);
		fatelf_repo_index_free(again);
		ix = NULL;
	}
	/* Integers past INT64_MAX, where a field allows up to INT64_MAX */
	static const struct { const char *from, *to; } huge[] = {
		{ "\"size\": 9223372036854775807,", "\"size\": 9223372036854775808," },
		{ "\"serial\": 7,", "\"serial\": 99999999999999999999999," },
		{ "\"expires\": 1800000000,", "\"expires\": 18446744073709551615," },
	};
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		char *text = replace(index_text, huge[i].from, huge[i].to);
		int r = fatelf_repo_index_parse(text, strlen(text), &ix, &d);

		ck_assert_msg(r == -FATELF_E_REPO_INDEX, "'%s': got %s", huge[i].to, fatelf_error_name(r));
		ck_assert_ptr_null(ix);
		free(text);
	}
	/* Not an object, not JSON, empty */
	static const char *const junk[] = { "[]", "1", "\"index\"", "", "{", "{\"format\": 1,}", "null" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		int r = fatelf_repo_index_parse(junk[i], strlen(junk[i]), &ix, &d);

		ck_assert_msg(r == -FATELF_E_REPO_INDEX, "'%s': got %s", junk[i], fatelf_error_name(r));
		ck_assert_ptr_null(ix);
	}
}
END_TEST

START_TEST(test_index_check)
{
	fatelf_repo_index *ix = fatelf_repo_index_new();
	fatelf_diag d;

	ix->serial = 5;
	ix->expires = 0;
	ck_assert_int_eq(fatelf_repo_index_check(ix, 0, 1, &d), 0);
	ck_assert_int_eq(fatelf_repo_index_check(ix, 4, 1, &d), 0);
	ck_assert_int_eq(fatelf_repo_index_check(ix, 5, 1, &d), 0);
	ck_assert_int_eq(fatelf_repo_index_check(ix, 6, 1, &d), -FATELF_E_REPO_ROLLBACK);
	ck_assert_int_eq(d.code, -FATELF_E_REPO_ROLLBACK);
	ck_assert_int_eq(fatelf_repo_index_check(ix, UINT64_MAX, 1, &d), -FATELF_E_REPO_ROLLBACK);
	/* no expiry: never expired */
	ck_assert_int_eq(fatelf_repo_index_check(ix, 0, INT64_MAX, &d), 0);
	ix->expires = 1000;
	ck_assert_int_eq(fatelf_repo_index_check(ix, 0, 999, &d), 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_repo_index_check(ix, 0, 1000, &d), -FATELF_E_REPO_EXPIRED);
	ck_assert_int_eq(d.code, -FATELF_E_REPO_EXPIRED);
	ck_assert(d.has & FATELF_DIAG_HAS_EXPIRES);
	ck_assert_int_eq(d.expires, 1000);
	ck_assert_int_eq(fatelf_repo_index_check(ix, 0, 1001, &d), -FATELF_E_REPO_EXPIRED);
	/* a rollback is the first thing named */
	ck_assert_int_eq(fatelf_repo_index_check(ix, 6, 1001, &d), -FATELF_E_REPO_ROLLBACK);
	fatelf_repo_index_free(ix);
}
END_TEST

START_TEST(test_index_identity)
{
	fatelf_repo_index *ix = fatelf_repo_index_new(), *back = NULL;
	char id[FATELF_REPO_ID_LEN + 1], id2[FATELF_REPO_ID_LEN + 1];
	char *text = NULL;
	size_t len;
	fatelf_diag d;

	/* Nothing pinned yet: any index, with an identity or without */
	ck_assert_int_eq(fatelf_repo_index_check_identity(ix, NULL, &d), 0);
	ck_assert_int_eq(fatelf_repo_index_check_identity(ix, "", &d), 0);
	memcpy(ix->repository, RID, sizeof(RID));
	ck_assert_int_eq(fatelf_repo_index_check_identity(ix, "", &d), 0);
	/* pinned: that one alone */
	ck_assert_int_eq(fatelf_repo_index_check_identity(ix, RID, &d), 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_repo_index_check_identity(ix, RID2, &d), -FATELF_E_REPO_MISMATCH);
	ck_assert_int_eq(d.code, -FATELF_E_REPO_MISMATCH);
	ck_assert_str_eq(d.expected, RID2);
	ck_assert_str_eq(d.got, RID);
	/* an index without one, once one is pinned */
	ix->repository[0] = '\0';
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_repo_index_check_identity(ix, RID, &d), -FATELF_E_REPO_MISMATCH);
	ck_assert_str_eq(d.expected, RID);
	ck_assert_str_eq(d.got, "");
	/* an index without one has no field, and parses back without it */
	ix->serial = 1;
	ck_assert_int_eq(fatelf_repo_index_serialize(ix, &text, &len, &d), 0);
	ck_assert_ptr_null(strstr(text, "repository"));
	ck_assert_msg(fatelf_repo_index_parse(text, len, &back, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(back->repository, "");
	fatelf_repo_index_free(back);
	free(text);
	/* new identities: valid, and not twice the same */
	ck_assert_int_eq(fatelf_repo_id_new(id), 0);
	ck_assert_int_eq(fatelf_repo_id_new(id2), 0);
	ck_assert(fatelf_repo_id_valid(id));
	ck_assert(fatelf_repo_id_valid(id2));
	ck_assert_str_ne(id, id2);
	ck_assert(fatelf_repo_id_valid(RID));
	ck_assert(!fatelf_repo_id_valid(""));
	ck_assert(!fatelf_repo_id_valid("0123456789ABCDEF0123456789abcdef"));
	ck_assert(!fatelf_repo_id_valid(RID "0"));
	fatelf_repo_index_free(ix);
}
END_TEST

START_TEST(test_index_remove)
{
	fatelf_repo_index *ix = make_index();
	fatelf_repo_package *p;
	char *text;
	size_t len;
	fatelf_diag d;

	ck_assert_uint_eq(fatelf_repo_index_remove(ix, "beta", NULL), 0);
	ck_assert_uint_eq(fatelf_repo_index_remove(ix, "alpha", "9.9"), 0);
	ck_assert_uint_eq(ix->npackages, 2);
	/* one version, by dpkg's equality */
	ck_assert_uint_eq(fatelf_repo_index_remove(ix, "alpha", "0:2.0-1"), 1);
	p = fatelf_repo_index_find(ix, "alpha");
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->nversions, 2);
	ck_assert_str_eq(p->versions[0].version, "1.0-1");
	ck_assert_str_eq(p->versions[1].version, "1:0.5-1");
	ck_assert_ptr_null(fatelf_repo_package_version(p, "2.0-1"));
	/* the rest still serializes and parses */
	ck_assert_int_eq(fatelf_repo_index_serialize(ix, &text, &len, &d), 0);
	fatelf_repo_index *back = NULL;
	ck_assert_msg(fatelf_repo_index_parse(text, len, &back, &d) == 0, "%s", d.msg);
	assert_indexes_equal(ix, back);
	fatelf_repo_index_free(back);
	free(text);
	/* every version: the package goes */
	ck_assert_uint_eq(fatelf_repo_index_remove(ix, "alpha", NULL), 2);
	ck_assert_uint_eq(ix->npackages, 1);
	ck_assert_ptr_null(fatelf_repo_index_find(ix, "alpha"));
	ck_assert_str_eq(ix->packages[0].name, "zeta");
	ck_assert_uint_eq(ix->packages[0].versions[0].entries, 1);
	/* the last version: the package goes too */
	ck_assert_uint_eq(fatelf_repo_index_remove(ix, "zeta", "0.1"), 1);
	ck_assert_uint_eq(ix->npackages, 0);
	ck_assert_uint_eq(fatelf_repo_index_remove(ix, "zeta", NULL), 0);
	/* and the index takes packages again */
	p = fatelf_repo_index_add_package(ix, "new");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_eq(fatelf_repo_index_find(ix, "new"), p);
	fatelf_repo_index_free(ix);
}
END_TEST

/* ---- the pointer */

START_TEST(test_pointer)
{
	char buf[FATELF_REPO_POINTER_MAX], want[200];
	uint8_t sha[32], got[32];
	uint64_t size;
	fatelf_diag d;

	unhex(HA, sha);
	fatelf_repo_pointer_format(sha, 12345, buf);
	snprintf(want, sizeof(want), "fatelf-repo 1 %s 12345\n", HA);
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(fatelf_repo_pointer_parse(buf, strlen(buf), got, &size, &d), 0);
	ck_assert(memcmp(got, sha, 32) == 0);
	ck_assert_uint_eq(size, 12345);

	/* the edges of the size */
	fatelf_repo_pointer_format(sha, 0, buf);
	ck_assert_int_eq(fatelf_repo_pointer_parse(buf, strlen(buf), got, &size, &d), 0);
	ck_assert_uint_eq(size, 0);
	fatelf_repo_pointer_format(sha, FATELF_REPO_INDEX_MAX, buf);
	ck_assert_int_eq(fatelf_repo_pointer_parse(buf, strlen(buf), got, &size, &d), 0);
	ck_assert_uint_eq(size, FATELF_REPO_INDEX_MAX);

	static const struct bad_text bad[] = {
		{ "empty", "" },
		{ "bad magic", "fatelf-repo 2 " HA " 5\n" },
		{ "magic upper-case", "FATELF-REPO 1 " HA " 5\n" },
		{ "magic of a pack", "fatelf-pack 1 " HA " 5\n" },
		{ "no space after the magic", "fatelf-repo 1" HA " 5\n" },
		{ "hex upper-case", "fatelf-repo 1 " HA_UPPER " 5\n" },
		{ "hex of 63 digits", "fatelf-repo 1 " "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" " 5\n" },
		{ "hex of 65 digits", "fatelf-repo 1 " HA "a 5\n" },
		{ "size with a leading zero", "fatelf-repo 1 " HA " 05\n" },
		{ "size 00", "fatelf-repo 1 " HA " 00\n" },
		{ "size empty", "fatelf-repo 1 " HA " \n" },
		{ "size negative", "fatelf-repo 1 " HA " -5\n" },
		{ "size with a plus", "fatelf-repo 1 " HA " +5\n" },
		{ "size over the index limit", "fatelf-repo 1 " HA " 67108865\n" },
		{ "size of 20 digits", "fatelf-repo 1 " HA " 18446744073709551616\n" },
		{ "missing newline", "fatelf-repo 1 " HA " 5" },
		{ "carriage return", "fatelf-repo 1 " HA " 5\r\n" },
		{ "trailing space", "fatelf-repo 1 " HA " 5 \n" },
		{ "trailing junk", "fatelf-repo 1 " HA " 5x\n" },
		{ "a second line", "fatelf-repo 1 " HA " 5\nmore\n" },
		{ "two newlines", "fatelf-repo 1 " HA " 5\n\n" },
		{ "two spaces", "fatelf-repo 1 " HA "  5\n" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r;

		size = 77;
		r = fatelf_repo_pointer_parse(bad[i].text, strlen(bad[i].text), got, &size, &d);
		ck_assert_msg(r == -FATELF_E_REPO_FORMAT, "%s: got %s", bad[i].why, fatelf_error_name(r));
		ck_assert_int_eq(d.code, r);
		ck_assert_uint_eq(size, 77);
	}
	/* Longer than a pointer may be */
	char big[FATELF_REPO_POINTER_MAX + 40];
	int n = snprintf(big, sizeof(big), "fatelf-repo 1 %s 5", HA);
	memset(big + n, '0', sizeof(big) - (size_t)n);
	big[sizeof(big) - 1] = '\n';
	big[n] = '5';
	ck_assert_int_eq(fatelf_repo_pointer_parse(big, sizeof(big), got, &size, &d), -FATELF_E_REPO_FORMAT);
	/* Only len bytes are read: a pointer cut before its newline */
	fatelf_repo_pointer_format(sha, 12345, buf);
	ck_assert_int_eq(fatelf_repo_pointer_parse(buf, strlen(buf) - 1, got, &size, &d), -FATELF_E_REPO_FORMAT);
}
END_TEST

/* ---- the object codec */

/* Compresses buf as an object into memory (through a file). */
static uint8_t *make_object(const void *buf, size_t len, size_t chunk, size_t *ret_clen, uint8_t ret_sha[32],
			    uint64_t *ret_size)
{
	fatelf_repo_owriter *w = NULL;
	fatelf_diag d;
	uint8_t *out;
	int fd = open("object.zst", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_repo_owriter_open(fd, &w, &d) == 0, "%s", d.msg);
	for (size_t at = 0; at < len;) {
		size_t n = len - at < chunk ? len - at : chunk;

		ck_assert_msg(fatelf_repo_owriter_write(w, (const uint8_t *)buf + at, n, &d) == 0, "%s", d.msg);
		at += n;
	}
	ck_assert_msg(fatelf_repo_owriter_close(w, ret_sha, ret_size, &d) == 0, "%s", d.msg);
	close(fd);
	out = tu_read_file("object.zst", ret_clen);
	ck_assert_ptr_nonnull(out);
	return out;
}

static int read_object(const void *z, size_t zlen, const uint8_t sha[32], uint64_t size, struct sink *s,
		       fatelf_diag *d)
{
	fatelf_reader rd;
	int r;

	ck_assert_int_eq(fatelf_reader_mem(&rd, z, zlen), 0);
	fatelf_diag_clear(d);
	r = fatelf_repo_object_read(&rd, sha, size, "test-object", s ? to_sink : NULL, s, d);
	fatelf_reader_close(&rd);
	/* the codec's own errors are in d (a consumer's error is its own) */
	if (r < 0 && -r >= FATELF_E_BASE)
		ck_assert_int_eq(d->code, r);
	return r;
}

static const uint8_t gzip_hello[] = {
	0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0x48,
	0xcd, 0xc9, 0xc9, 0xe7, 0x02, 0x00, 0x20, 0x30, 0x3a, 0x36, 0x06, 0x00,
	0x00, 0x00,
};

START_TEST(test_object_codec)
{
	const size_t len = 300000;
	uint8_t *payload = malloc(len), sha[32], want[32], bad[32];
	uint64_t size;
	size_t zlen;
	struct sink s = { 0 };
	fatelf_diag d;
	uint32_t x = 12345;

	tu_tmpdir();
	ck_assert_ptr_nonnull(payload);
	/* half noise, half text: several blocks, some compressible */
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		payload[i] = i < len / 2 ? (uint8_t)(x >> 16) : (uint8_t)("repository "[i % 11]);
	}
	sha_of(payload, len, want);
	uint8_t *z = make_object(payload, len, 7001, &zlen, sha, &size);
	ck_assert(memcmp(sha, want, 32) == 0);
	ck_assert_uint_eq(size, len);
	/* a zstd frame, smaller than the bytes */
	ck_assert_uint_ge(zlen, 4);
	ck_assert(memcmp(z, "\x28\xb5\x2f\xfd", 4) == 0);
	ck_assert_uint_lt(zlen, len);

	ck_assert_msg(read_object(z, zlen, sha, size, &s, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(s.len, len);
	ck_assert(memcmp(s.buf, payload, len) == 0);
	sink_free(&s);
	/* a check alone */
	ck_assert_int_eq(read_object(z, zlen, sha, size, NULL, &d), 0);

	/* A size the manifest gives that is shorter: refused before more
	 * than that is handed on. */
	ck_assert_int_eq(read_object(z, zlen, sha, size - 1, &s, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_ptr_nonnull(strstr(d.msg, "more than"));
	ck_assert_uint_le(s.len, size - 1);
	sink_free(&s);
	ck_assert_int_eq(read_object(z, zlen, sha, 0, &s, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_uint_eq(s.len, 0);
	sink_free(&s);
	/* longer */
	ck_assert_int_eq(read_object(z, zlen, sha, size + 1, &s, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_int_eq(read_object(z, zlen, sha, UINT64_MAX, NULL, &d), -FATELF_E_REPO_OBJECT);
	sink_free(&s);
	/* another hash */
	memcpy(bad, sha, 32);
	bad[31] ^= 1;
	ck_assert_int_eq(read_object(z, zlen, bad, size, NULL, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_ptr_nonnull(strstr(d.msg, "SHA-256"));
	ck_assert_str_eq(d.subject, "test-object");

	/* Not zstd: the bytes themselves, with their right size and hash */
	uint8_t plain_sha[32];
	static const char plain[] = "plain bytes, not compressed at all\n";
	sha_of(plain, strlen(plain), plain_sha);
	ck_assert_int_eq(read_object(plain, strlen(plain), plain_sha, strlen(plain), &s, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_uint_eq(s.len, 0);
	sha_of(payload, len, plain_sha);
	ck_assert_int_eq(read_object(payload, len, plain_sha, len, NULL, &d), -FATELF_E_REPO_OBJECT);
	/* gzip of "hello\n", with its right size and hash */
	uint8_t hello_sha[32];
	sha_of("hello\n", 6, hello_sha);
	ck_assert_int_eq(read_object(gzip_hello, sizeof(gzip_hello), hello_sha, 6, &s, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_uint_eq(s.len, 0);
	/* nothing at all: not even the frame of an empty object */
	uint8_t empty_sha[32];
	sha_of("", 0, empty_sha);
	ck_assert_int_eq(read_object("", 0, empty_sha, 0, NULL, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_int_eq(read_object("", 0, hello_sha, 0, NULL, &d), -FATELF_E_REPO_OBJECT);

	/* Truncated frames */
	ck_assert_int_eq(read_object(z, zlen / 2, sha, size, NULL, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_int_eq(read_object(z, 4, sha, size, NULL, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_int_eq(read_object(z, zlen - 1, sha, size, NULL, &d), -FATELF_E_REPO_OBJECT);
	/* a byte changed inside the compressed blocks */
	uint8_t *zc = malloc(zlen);
	memcpy(zc, z, zlen);
	zc[zlen / 2] ^= 0x40;
	ck_assert_int_eq(read_object(zc, zlen, sha, size, NULL, &d), -FATELF_E_REPO_OBJECT);
	free(zc);
	/* two objects end to end */
	uint8_t *zz = malloc(2 * zlen);
	memcpy(zz, z, zlen);
	memcpy(zz + zlen, z, zlen);
	ck_assert_int_eq(read_object(zz, 2 * zlen, sha, size, NULL, &d), -FATELF_E_REPO_OBJECT);
	free(zz);

	/* The consumer's error is returned as it is. */
	s.fail_with = -ENOSPC;
	ck_assert_int_eq(read_object(z, zlen, sha, size, &s, &d), -ENOSPC);
	s.fail_with = 0;
	/* A reader must be sequential. */
	fatelf_reader rd;
	fatelf_reader_seekable_mem(&rd, z, zlen);
	ck_assert_int_eq(fatelf_repo_object_read(&rd, sha, size, "x", NULL, NULL, &d), -EINVAL);

	/* The empty object */
	free(z);
	z = make_object("", 0, 1, &zlen, sha, &size);
	sha_of("", 0, want);
	ck_assert(memcmp(sha, want, 32) == 0);
	ck_assert_uint_eq(size, 0);
	ck_assert(memcmp(z, "\x28\xb5\x2f\xfd", 4) == 0);
	int r = read_object(z, zlen, sha, 0, &s, &d);
	ck_assert_msg(r == 0, "%s", d.msg);
	ck_assert_uint_eq(s.len, 0);
	ck_assert_int_eq(read_object(z, zlen, sha, 1, &s, &d), -FATELF_E_REPO_OBJECT);

	/* An aborted writer leaves nothing to free. */
	fatelf_repo_owriter *w = NULL;
	int fd = open("aborted.zst", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_eq(fatelf_repo_owriter_open(fd, &w, &d), 0);
	ck_assert_int_eq(fatelf_repo_owriter_write(w, "abc", 3, &d), 0);
	fatelf_repo_owriter_abort(w);
	fatelf_repo_owriter_abort(NULL);
	close(fd);

	sink_free(&s);
	free(z);
	free(payload);
}
END_TEST

/* An object whose bytes are a zstd stream of their own. */
START_TEST(test_object_of_zstd_bytes)
{
	static const char inner_text[] = "a module, compressed by its vendor\n";
	uint8_t sha[32], sha2[32];
	uint64_t size, size2;
	size_t inner_len, zlen;
	struct sink s = { 0 };
	fatelf_diag d;
	int r;

	tu_tmpdir();
	uint8_t *inner = make_object(inner_text, strlen(inner_text), 64, &inner_len, sha, &size);
	uint8_t *z = make_object(inner, inner_len, 64, &zlen, sha2, &size2);
	ck_assert_uint_eq(size2, inner_len);
	r = read_object(z, zlen, sha2, size2, &s, &d);
	ck_assert_msg(r == 0, "%s", d.msg);
	ck_assert_uint_eq(s.len, inner_len);
	ck_assert(memcmp(s.buf, inner, inner_len) == 0);
	sink_free(&s);
	free(inner);
	free(z);
}
END_TEST

/* ---- trees, bundles and repositories */

struct img {
	uint8_t *buf;
	size_t len;
};

static struct img make_img(uint16_t machine, size_t size, uint32_t seed)
{
	elfgen_opts o;
	struct img im;

	elfgen_defaults(&o, machine, FATELF_CLASS64, FATELF_DATA2LSB);
	o.size = size;
	o.seed = seed;
	im.buf = elfgen_make(&o, &im.len);
	ck_assert_ptr_nonnull(im.buf);
	return im;
}

#define PROG "opt/demo/bin/prog"
#define DATA "opt/demo/share/data"

/*
 * dir/opt/demo/bin/prog       FatELF (x86_64, aarch64) made by fatelf_glue
 * dir/opt/demo/share/data     data
 * The ELF images are fixed: two trees share their records' objects.
 */
static void make_tree(const char *dir, const char *data)
{
	struct img x = make_img(62, 20000, 1), a = make_img(183, 30000, 2);
	const char *in[] = { "x.elf", "a.elf" };
	char path[4096];
	fatelf_diag d;

	tu_write_file("x.elf", x.buf, x.len);
	tu_write_file("a.elf", a.buf, a.len);
	static const char *const dirs[] = { "", "/opt", "/opt/demo", "/opt/demo/bin", "/opt/demo/share" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, dirs[i]);
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/" PROG, dir);
	ck_assert_msg(fatelf_glue(path, in, 2, NULL, &d) == 0, "%s", d.msg);
	snprintf(path, sizeof(path), "%s/" DATA, dir);
	tu_write_file(path, data, strlen(data));
	ck_assert_int_eq(chmod(path, 0644), 0);
	free(x.buf);
	free(a.buf);
}

static int create_bundle(const char *tree, const char *out, const char *version, const fatelf_ms_seckey *key,
			 fatelf_diag *d)
{
	fatelf_bundle_create_opts o = {
		.name = "demo",
		.version = version,
		.summary = "A demo",
		.compression = FATELF_COMPRESS_ZSTD,
		.sign_key = key,
	};
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int r;

	ck_assert_int_ge(fd, 0);
	r = fatelf_bundle_create(tree, fd, &o, d);
	close(fd);
	return r;
}

/* The manifest of a bundle, as its reader hands it over. */
static fatelf_manifest *bundle_manifest(const char *path)
{
	fatelf_manifest *m = NULL;
	fatelf_bundle_read_opts o = { .ret_manifest = &m };
	fatelf_diag d;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_read_fd(fd, &o, NULL, &d) == 0, "%s", d.msg);
	close(fd);
	ck_assert_ptr_nonnull(m);
	return m;
}

static const fatelf_bundle_entry *entry_of(const fatelf_manifest *m, const char *path, uint32_t *ret_index)
{
	const fatelf_bundle_entry *e = fatelf_manifest_find(m, path);

	ck_assert_msg(e != NULL, "%s is not in the manifest", path);
	if (ret_index)
		*ret_index = (uint32_t)(e - m->entries);
	return e;
}

/* The SHA-256 of the bytes of a FatELF file outside its records, read
 * from the file's own header table. */
static void frame_sha_of_file(const uint8_t *buf, size_t len, uint8_t out[32])
{
	fatelf_header h;
	fatelf_diag d;
	fatelf_sha256 *s = fatelf_sha256_new();
	uint64_t at = 0;

	ck_assert_msg(fatelf_header_decode(buf, len, &h, &d) == 0, "%s", d.msg);
	/* records are in offset order in a glued file */
	for (unsigned i = 0; i < h.nrecords; i++) {
		ck_assert_uint_ge(h.records[i].offset, at);
		fatelf_sha256_update(s, buf + at, (size_t)(h.records[i].offset - at));
		at = h.records[i].offset + h.records[i].size;
	}
	ck_assert_uint_le(at, len);
	fatelf_sha256_update(s, buf + at, len - (size_t)at);
	fatelf_sha256_final(s, out);
	fatelf_sha256_free(s);
}

START_TEST(test_frame_canonical)
{
	uint8_t want[32], got[32];
	size_t len;
	struct sink s = { 0 };

	tu_tmpdir();
	make_tree("tree", "some data\n");
	fatelf_diag d;
	ck_assert_msg(create_bundle("tree", "b.fatbundle", "1.0-1", NULL, &d) == 0, "%s", d.msg);
	fatelf_manifest *m = bundle_manifest("b.fatbundle");
	const fatelf_bundle_entry *e = entry_of(m, PROG, NULL);
	uint8_t *file = tu_read_file("tree/" PROG, &len);

	ck_assert_int_eq(e->kind, FATELF_KIND_FATELF);
	ck_assert_uint_eq(e->nrecords, 2);
	ck_assert_uint_eq(e->size, len);
	/* the glue writes zeros between the table and the records */
	frame_sha_of_file(file, len, want);
	ck_assert_int_eq(fatelf_repo_frame_canonical_sha(e, got), 0);
	ck_assert(memcmp(got, want, 32) == 0);
	/* the canonical frame: the file's table, then zeros, as long as the gaps */
	ck_assert_uint_eq(fatelf_repo_frame_size(e), len - e->records[0].size - e->records[1].size);
	ck_assert_int_eq(fatelf_repo_frame_canonical(e, to_sink, &s), 0);
	ck_assert_uint_eq(s.len, fatelf_repo_frame_size(e));
	ck_assert(memcmp(s.buf, file, FATELF_TABLE_SIZE(2)) == 0);
	for (size_t i = FATELF_TABLE_SIZE(2); i < s.len; i++)
		ck_assert_msg(s.buf[i] == 0, "byte %zu of the canonical frame is not zero", i);
	sink_free(&s);
	/* a consumer's error stops it */
	s.fail_with = -EIO;
	ck_assert_int_eq(fatelf_repo_frame_canonical(e, to_sink, &s), -EIO);
	free(file);
	fatelf_manifest_free(m);
}
END_TEST

START_TEST(test_pack_check)
{
	fatelf_diag d;

	tu_tmpdir();
	make_tree("tree", "some data\n");
	ck_assert_int_eq(create_bundle("tree", "b.fatbundle", "1.0-1", NULL, &d), 0);
	fatelf_manifest *m = bundle_manifest("b.fatbundle");
	uint32_t iprog, idata;
	const fatelf_bundle_entry *prog = entry_of(m, PROG, &iprog), *data = entry_of(m, DATA, &idata);
	fatelf_repo_pack *p = pack_new(4, 1);
	char *text;
	size_t len;

	memcpy(p->objects[0].sha256, prog->records[0].sha256, 32);
	memcpy(p->objects[1].sha256, prog->records[1].sha256, 32);
	memcpy(p->objects[2].sha256, data->sha256, 32);
	memset(p->objects[3].sha256, 0xee, 32);
	p->nframes = 0;
	/* sorted by the serializer */
	ck_assert_int_eq(fatelf_repo_pack_serialize(p, &text, &len, &d), 0);
	free(text);
	ck_assert_msg(fatelf_repo_pack_check(p, m, &d) == 0, "%s", d.msg);
	/* a frame of the FatELF entry, among the objects */
	p->nframes = 1;
	p->frames[0].entry = iprog;
	memset(p->frames[0].sha256, 0xee, 32);
	ck_assert_msg(fatelf_repo_pack_check(p, m, &d) == 0, "%s", d.msg);
	/* ... not among them */
	memset(p->frames[0].sha256, 0xdd, 32);
	ck_assert_int_eq(fatelf_repo_pack_check(p, m, &d), -FATELF_E_REPO_PACK);
	/* a frame of a data file, of a directory, past the entries */
	memset(p->frames[0].sha256, 0xee, 32);
	p->frames[0].entry = idata;
	ck_assert_int_eq(fatelf_repo_pack_check(p, m, &d), -FATELF_E_REPO_PACK);
	p->frames[0].entry = 0;
	ck_assert_int_eq(m->entries[0].type, FATELF_ENTRY_DIR);
	ck_assert_int_eq(fatelf_repo_pack_check(p, m, &d), -FATELF_E_REPO_PACK);
	p->frames[0].entry = (uint32_t)m->nentries;
	ck_assert_int_eq(fatelf_repo_pack_check(p, m, &d), -FATELF_E_REPO_PACK);
	p->nframes = 0;
	/* a record's object missing: the entry and the record are named */
	p->nobjects = 4;
	for (size_t i = 0; i < 4; i++)
		if (memcmp(p->objects[i].sha256, prog->records[1].sha256, 32) == 0)
			memset(p->objects[i].sha256, 0xcc, 32);
	ck_assert_int_eq(fatelf_repo_pack_serialize(p, &text, &len, &d), 0);
	free(text);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_repo_pack_check(p, m, &d), -FATELF_E_REPO_PACK);
	ck_assert_int_eq(d.record, 1);
	ck_assert_ptr_nonnull(strstr(d.msg, PROG));
	/* a data file's object missing */
	for (size_t i = 0; i < 4; i++)
		if (p->objects[i].sha256[0] == 0xcc)
			memcpy(p->objects[i].sha256, prog->records[1].sha256, 32);
	for (size_t i = 0; i < 4; i++)
		if (memcmp(p->objects[i].sha256, data->sha256, 32) == 0)
			memset(p->objects[i].sha256, 0xcc, 32);
	ck_assert_int_eq(fatelf_repo_pack_serialize(p, &text, &len, &d), 0);
	free(text);
	ck_assert_int_eq(fatelf_repo_pack_check(p, m, &d), -FATELF_E_REPO_PACK);
	ck_assert_ptr_nonnull(strstr(d.msg, DATA));
	fatelf_repo_pack_free(p);
	fatelf_manifest_free(m);
}
END_TEST

START_TEST(test_names)
{
	char obj[FATELF_REPO_OBJECT_PATH_MAX], man[FATELF_REPO_MANIFEST_PATH_MAX];
	uint8_t sha[32];

	unhex(HA, sha);
	fatelf_repo_object_path(sha, obj);
	ck_assert_str_eq(obj, "objects/ab/" HA ".zst");
	fatelf_repo_manifest_path(sha, false, man);
	ck_assert_str_eq(man, "manifests/" HA "/fatbundle.json");
	fatelf_repo_manifest_path(sha, true, man);
	ck_assert_str_eq(man, "manifests/" HA "/fatbundle.json.minisig");
	fatelf_repo_index_path(sha, false, man);
	ck_assert_str_eq(man, "indexes/" HA ".json");
	fatelf_repo_index_path(sha, true, man);
	ck_assert_str_eq(man, "indexes/" HA ".json.minisig");
}
END_TEST

static int add_file(fatelf_repo_dir *r, const char *bundle, const fatelf_bundle_read_opts *ro,
		    fatelf_repo_add_result *res, fatelf_diag *d)
{
	fatelf_bundle_read_opts none = { 0 };
	int fd = open(bundle, O_RDONLY | O_CLOEXEC);
	int k;

	ck_assert_int_ge(fd, 0);
	k = fatelf_repo_add_bundle(r, r->index, fd, ro ? ro : &none, res, d);
	close(fd);
	return k;
}

static fatelf_repo_dir *open_repo(const char *path, bool write)
{
	fatelf_repo_dir *r = NULL;
	fatelf_diag d;

	ck_assert_msg(fatelf_repo_open(path, write, NULL, 0, &r, &d) == 0, "%s", d.msg);
	return r;
}

/* The path (under repo/) of object sha. */
static void object_file(const uint8_t sha[32], char out[256])
{
	char rel[FATELF_REPO_OBJECT_PATH_MAX];

	fatelf_repo_object_path(sha, rel);
	snprintf(out, 256, "repo/%s", rel);
}

static void flip_byte(const char *path, size_t at_from_end)
{
	size_t len;
	uint8_t *b = tu_read_file(path, &len);

	ck_assert_ptr_nonnull(b);
	ck_assert_uint_gt(len, at_from_end);
	b[len - 1 - at_from_end] ^= 0x01;
	tu_write_file(path, b, len);
	free(b);
}

/* The pack list of a version, read from the repository. */
static fatelf_repo_pack *read_pack(const fatelf_repo_dir *r, const fatelf_repo_version *v)
{
	struct sink s = { 0 };
	fatelf_repo_pack *p = NULL;
	uint64_t csize = 0;
	fatelf_diag d;

	ck_assert_msg(fatelf_repo_read_object(r, v->pack, v->pack_size, to_sink, &s, &csize, &d) == 0, "%s", d.msg);
	ck_assert_uint_gt(csize, 0);
	ck_assert_uint_eq(s.len, v->pack_size);
	ck_assert_msg(fatelf_repo_pack_parse(s.buf, s.len, &p, &d) == 0, "%s", d.msg);
	sink_free(&s);
	return p;
}

/* ---- the OCI form (lib/repo/oci.c) */

START_TEST(test_oci_platforms)
{
	static const struct {
		const char *target, *os, *arch, *variant;
	} cases[] = {
		{ "x86_64:64bits:le:sysv:osabiver0", "linux", "amd64", "" },
		{ "x86_64:64bits:le:linux:osabiver0", "linux", "amd64", "" },
		{ "aarch64:64bits:le:sysv:osabiver0", "linux", "arm64", "" },
		{ "arm:32bits:le:sysv:osabiver0", "linux", "arm", "v7" },
		{ "i386:32bits:le:sysv:osabiver0", "linux", "386", "" },
		{ "riscv:64bits:le:sysv:osabiver0", "linux", "riscv64", "" },
		{ "ppc64:64bits:le:sysv:osabiver0", "linux", "ppc64le", "" },
		{ "ppc64:64bits:be:sysv:osabiver0", "linux", "ppc64", "" },
		{ "s390:64bits:be:sysv:osabiver0", "linux", "s390x", "" },
		{ "x86_64:64bits:le:freebsd:osabiver0", "freebsd", "amd64", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fatelf_target t = target_of(cases[i].target);
		fatelf_oci_platform p;

		fatelf_oci_platform_of(&t, &p);
		ck_assert_msg(strcmp(p.os, cases[i].os) == 0 && strcmp(p.architecture, cases[i].arch) == 0 &&
				      strcmp(p.variant, cases[i].variant) == 0,
			      "%s: %s/%s/%s", cases[i].target, p.os, p.architecture, p.variant);
	}
}
END_TEST

struct shas {
	uint8_t v[16][32];
	size_t n;
};

static int collect(void *ctx, const uint8_t sha[32], uint64_t size)
{
	struct shas *s = ctx;

	(void)size;
	ck_assert_uint_lt(s->n, 16);
	memcpy(s->v[s->n++], sha, 32);
	return 0;
}

static bool shas_have(const struct shas *s, const uint8_t sha[32])
{
	for (size_t i = 0; i < s->n; i++)
		if (memcmp(s->v[i], sha, 32) == 0)
			return true;
	return false;
}

START_TEST(test_oci_layers_and_json)
{
	fatelf_repo_dir *r;
	fatelf_repo_add_result res;
	fatelf_repo_pack *pack;
	const fatelf_repo_version *v;
	const fatelf_bundle_entry *prog, *data;
	fatelf_target x86 = target_of(T_X86), arm = target_of(T_ARM), other = target_of("riscv:64bits:le:sysv:osabiver0");
	struct shas sx = { 0 }, sa = { 0 }, so = { 0 }, sall = { 0 };
	fatelf_oci_blob config = { .size = 10 }, layers[2] = { { .size = 3 }, { .size = 4 } };
	fatelf_oci_entry entries[2] = { { .size = 100, .target = &x86 }, { .size = 200 } };
	char *j1 = NULL, *j2 = NULL;
	size_t l1, l2;
	fatelf_diag d;
	uint32_t pi;

	tu_tmpdir();
	make_tree("tree", "oci data\n");
	ck_assert_msg(create_bundle("tree", "b.fatbundle", "1.0", NULL, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(fatelf_repo_init("repo", NULL, 1, &d), 0);
	r = open_repo("repo", true);
	ck_assert_msg(add_file(r, "b.fatbundle", NULL, &res, &d) == 0, "%s", d.msg);
	v = &r->index->packages[0].versions[0];
	pack = read_pack(r, v);
	fatelf_manifest *m = bundle_manifest("b.fatbundle");
	prog = entry_of(m, PROG, &pi);
	data = entry_of(m, DATA, NULL);
	ck_assert_uint_eq(prog->nrecords, 2);

	/* x86_64: the data and the x86_64 record, nothing else */
	ck_assert_int_eq(fatelf_oci_objects_for(m, pack, &x86, collect, &sx), 0);
	ck_assert_uint_eq(sx.n, 2);
	ck_assert(shas_have(&sx, data->sha256));
	ck_assert(shas_have(&sx, prog->records[fatelf_target_equal(&prog->records[0].target, &x86) ? 0 : 1].sha256));
	ck_assert_int_eq(fatelf_oci_objects_for(m, pack, &arm, collect, &sa), 0);
	ck_assert_uint_eq(sa.n, 2);
	ck_assert(shas_have(&sa, prog->records[fatelf_target_equal(&prog->records[0].target, &arm) ? 0 : 1].sha256));
	/* a target the file lacks: it is kept whole, every record */
	ck_assert_int_eq(fatelf_oci_objects_for(m, pack, &other, collect, &so), 0);
	ck_assert(shas_have(&so, prog->records[0].sha256) && shas_have(&so, prog->records[1].sha256));
	ck_assert(shas_have(&so, data->sha256));
	/* the fat form: every object of the pack list, each once */
	ck_assert_int_eq(fatelf_oci_objects_for(m, pack, NULL, collect, &sall), 0);
	ck_assert_uint_eq(sall.n, pack->nobjects);
	for (size_t i = 0; i < pack->nobjects; i++)
		ck_assert(shas_have(&sall, pack->objects[i].sha256));

	/* JSON: the same input, the same bytes; the fields a registry reads */
	memcpy(config.digest, v->manifest, 32);
	memcpy(layers[0].object, data->sha256, 32);
	layers[0].object_size = data->size;
	ck_assert_int_eq(fatelf_oci_manifest_json(m, &config, "sig\ntext\n", NULL, layers, 2, &x86, &j1, &l1), 0);
	ck_assert_int_eq(fatelf_oci_manifest_json(m, &config, "sig\ntext\n", NULL, layers, 2, &x86, &j2, &l2), 0);
	ck_assert_uint_eq(l1, l2);
	ck_assert_str_eq(j1, j2);
	ck_assert_uint_eq(strlen(j1), l1);
	ck_assert_ptr_nonnull(strstr(j1, "\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\""));
	ck_assert_ptr_nonnull(strstr(j1, "\"artifactType\":\"application/vnd.fatelf.bundle.v1\""));
	ck_assert_ptr_nonnull(strstr(j1, "\"config\":{\"mediaType\":\"application/vnd.fatelf.manifest.v1+json\""));
	ck_assert_ptr_nonnull(strstr(j1, "\"io.fatelf.signature\":\"sig\\ntext\\n\""));
	ck_assert_ptr_nonnull(strstr(j1, "\"io.fatelf.target\":\"" T_X86 "\""));
	ck_assert_ptr_nonnull(strstr(j1, "\"io.fatelf.size\":\"9\""));
	ck_assert_ptr_null(strstr(j1, "\\/"));
	free(j1);
	free(j2);
	ck_assert_int_eq(fatelf_oci_index_json(m, entries, 2, &j1, &l1), 0);
	ck_assert_ptr_nonnull(strstr(j1, "\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}"));
	ck_assert_ptr_nonnull(strstr(j1, "\"annotations\":{\"io.fatelf.form\":\"fat\"}"));
	ck_assert_ptr_nonnull(strstr(j1, "\"io.fatelf.package\":\"demo\",\"org.opencontainers.image.version\":\"1.0\""));
	/* one platform only, for the x86_64 entry */
	ck_assert_ptr_null(strstr(strstr(j1, "\"platform\"") + 1, "\"platform\""));
	free(j1);
	fatelf_manifest_free(m);
	fatelf_repo_pack_free(pack);
	fatelf_repo_close(r);
	(void)pi;
}
END_TEST

/* A token reply's token, the reply being the whole string. */
static int token_of(const char *reply, char **ret)
{
	return fatelf_oci_token_parse(reply, strlen(reply), ret);
}

START_TEST(test_oci_words)
{
	fatelf_oci_ref r;
	fatelf_oci_challenge c;
	char *tok = NULL;

	ck_assert_int_eq(fatelf_oci_ref_parse("oci://127.0.0.1:5000/fatelf/hello:1.0", false, &r), 0);
	ck_assert_str_eq(r.scheme, "http");
	ck_assert_str_eq(r.host, "127.0.0.1:5000");
	ck_assert_str_eq(r.name, "fatelf/hello");
	ck_assert_str_eq(r.tag, "1.0");
	ck_assert_int_eq(fatelf_oci_ref_parse("oci://registry.example.org/a/b/c", false, &r), 0);
	ck_assert_str_eq(r.scheme, "https");
	ck_assert_str_eq(r.tag, "");
	ck_assert_int_eq(fatelf_oci_ref_parse("oci://registry.example.org/a", true, &r), 0);
	ck_assert_str_eq(r.scheme, "http");
	ck_assert_int_eq(fatelf_oci_ref_parse("oci://[::1]:5000/x:t", false, &r), 0);
	ck_assert_str_eq(r.scheme, "http");
	ck_assert_int_eq(fatelf_oci_ref_parse("oci://localhost/my__name/x-y.z:T_1", false, &r), 0);
	ck_assert(!r.has_digest);
	/* by digest, with or without a tag */
	ck_assert_int_eq(fatelf_oci_ref_parse("oci://h:1/a/b@sha256:00112233445566778899aabbccddeeff"
					      "00112233445566778899aabbccddeeff", false, &r), 0);
	ck_assert_str_eq(r.name, "a/b");
	ck_assert_str_eq(r.tag, "");
	ck_assert(r.has_digest);
	ck_assert_int_eq(r.digest[0], 0x00);
	ck_assert_int_eq(r.digest[15], 0xff);
	ck_assert_int_eq(fatelf_oci_ref_parse("oci://h:1/a:1.0@sha256:00112233445566778899aabbccddeeff"
					      "00112233445566778899aabbccddeeff", false, &r), 0);
	ck_assert_str_eq(r.name, "a");
	ck_assert_str_eq(r.tag, "1.0");
	ck_assert(r.has_digest);
	static const char *const bad[] = {
		"oci://h/x@sha256:00", "oci://h/x@sha512:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"oci://h/x@sha256:00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff",
		"oci://h/x@sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0",
		"oci://h/@sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"http://h/x", "oci://h", "oci:///x", "oci://h/", "oci://h/X", "oci://h/x/", "oci://h//x",
		"oci://h/-x", "oci://h/x.", "oci://h/x:", "oci://h/x:.t", "oci://h/x:t/u", "oci://h:0/x",
		"oci://h:65536/x", "oci://h:/x", "oci://h@e/x", "oci://[::1/x", "oci://h/x y",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(fatelf_oci_ref_parse(bad[i], false, &r) == -EINVAL, "%s was taken", bad[i]);

	ck_assert_int_eq(fatelf_oci_challenge_parse("Basic realm=\"Registry\"", &c), 0);
	ck_assert_int_eq(c.scheme, FATELF_OCI_AUTH_BASIC);
	ck_assert_int_eq(fatelf_oci_challenge_parse(
				 "Bearer realm=\"https://auth.example/token\",service=\"reg\",scope=\"repository:a/b:pull\","
				 "error=\"invalid_token\"", &c), 0);
	ck_assert_int_eq(c.scheme, FATELF_OCI_AUTH_BEARER);
	ck_assert_str_eq(c.realm, "https://auth.example/token");
	ck_assert_str_eq(c.service, "reg");
	ck_assert_str_eq(c.scope, "repository:a/b:pull");
	ck_assert_int_eq(fatelf_oci_challenge_parse("Negotiate abc", &c), -EINVAL);
	ck_assert_int_eq(fatelf_oci_challenge_parse("Bearer service=\"x\"", &c), -EINVAL);
	ck_assert_int_eq(fatelf_oci_challenge_parse("Bearer realm=\"a\",realm=\"b\"", &c), -EINVAL);
	ck_assert_int_eq(fatelf_oci_challenge_parse("Bearer realm=\"a", &c), -EINVAL);
	ck_assert_int_eq(fatelf_oci_challenge_parse("Bearer realm=\"a\x01\"", &c), -EINVAL);

	ck_assert_int_eq(token_of("{\"token\":\"abc.def\"}\n", &tok), 0);
	ck_assert_str_eq(tok, "abc.def");
	free(tok);
	ck_assert_int_eq(token_of("{\"access_token\":\"x\",\"expires_in\":60}", &tok), 0);
	ck_assert_str_eq(tok, "x");
	free(tok);
	ck_assert_int_eq(token_of("{\"token\":\"a\\r\\nX-Evil: 1\"}", &tok), -EPROTO);
	ck_assert_int_eq(token_of("{\"token\":\"\"}", &tok), -EPROTO);
	ck_assert_int_eq(token_of("{\"token\":1}", &tok), -EPROTO);
	ck_assert_int_eq(token_of("[\"token\"]", &tok), -EPROTO);
	ck_assert_int_eq(token_of("{\"token\":\"a\"} x", &tok), -EPROTO);
	ck_assert_int_eq(token_of("{\"token\":\"a\\u0000b\"}", &tok), -EPROTO);
	ck_assert_ptr_null(tok);
}
END_TEST

/* The index and manifests read back: what the writer makes parses to the
 * same fields; each rule broken is FATELF_E_REPO_OCI. */
START_TEST(test_oci_read)
{
	fatelf_manifest *m;
	fatelf_target x86 = target_of(T_X86);
	fatelf_oci_blob config = { .size = 10 }, pack = { .size = 7, .object_size = 70 },
			layers[2] = { { .size = 3, .object_size = 30 }, { .size = 4, .object_size = 40 } };
	fatelf_oci_entry entries[2] = { { .size = 100, .target = &x86 }, { .size = 200 } };
	fatelf_oci_manifest *om = NULL;
	fatelf_oci_index *oi = NULL;
	char *j = NULL, *bad;
	size_t l;
	fatelf_diag d;

	tu_tmpdir();
	make_tree("tree", "oci data\n");
	ck_assert_msg(create_bundle("tree", "b.fatbundle", "1.0", NULL, &d) == 0, "%s", d.msg);
	m = bundle_manifest("b.fatbundle");
	memset(config.digest, 0xc1, 32);
	memset(pack.digest, 0x9a, 32);
	memset(pack.object, 0x9b, 32);
	for (int i = 0; i < 2; i++) {
		memset(layers[i].digest, 0xd0 + i, 32);
		memset(layers[i].object, 0xe0 + i, 32);
	}
	memset(entries[0].digest, 0x11, 32);
	memset(entries[1].digest, 0x22, 32);

	ck_assert_int_eq(fatelf_oci_manifest_json(m, &config, "untrusted comment: x\nRW\n", &pack, layers, 2, &x86,
						  &j, &l), 0);
	ck_assert_msg(fatelf_oci_manifest_parse(j, l, &om, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(om->config.media_type, FATELF_OCI_MT_CONFIG);
	ck_assert_int_eq(memcmp(om->config.digest, config.digest, 32), 0);
	ck_assert_uint_eq(om->config.size, 10);
	ck_assert_str_eq(om->config.signature, "untrusted comment: x\nRW\n");
	ck_assert(om->has_pack);
	ck_assert_int_eq(memcmp(om->pack.object, pack.object, 32), 0);
	ck_assert_uint_eq(om->pack.object_size, 70);
	ck_assert_uint_eq(om->nlayers, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(memcmp(om->layers[i].digest, layers[i].digest, 32), 0);
		ck_assert_int_eq(memcmp(om->layers[i].object, layers[i].object, 32), 0);
		ck_assert_uint_eq(om->layers[i].size, layers[i].size);
		ck_assert_uint_eq(om->layers[i].object_size, layers[i].object_size);
	}
	ck_assert_str_eq(om->target, T_X86);
	ck_assert(!om->fat);
	fatelf_oci_manifest_free(om);

	/* each rule, broken once */
	static const struct {
		const char *from, *to, *why;
	} breaks[] = {
		{ "\"schemaVersion\":2", "\"schemaVersion\":1", "schemaVersion 1" },
		{ "\"artifactType\":\"application/vnd.fatelf.bundle.v1\"", "\"artifactType\":\"x/y\"", "artifactType" },
		{ "\"config\":{\"mediaType\":\"application/vnd.fatelf.manifest.v1+json\"",
		  "\"config\":{\"mediaType\":\"application/octet-stream\"", "the config is" },
		{ "\"size\":10", "\"size\":-10", "negative" },
		{ "\"size\":10", "\"size\":\"10\"", "wrong type" },
		{ "\"io.fatelf.size\":\"30\"", "\"io.fatelf.size\":\"030\"", "decimal" },
		{ "\"io.fatelf.size\":\"30\"", "\"io.fatelf.siz\":\"30\"", "go together" },
		{ "\"mediaType\":\"application/vnd.fatelf.pack.v1+zstd\"", "\"mediaType\":\"application/vnd.fatelf.object.v1+zstd\",\"mediaType\":\"x\"", "" },
		{ "\"io.fatelf.target\":\"" T_X86 "\"", "\"io.fatelf.tar\":\"x\"", "neither a target" },
		{ "\"schemaVersion\":2,", "", "no schemaVersion" },
	};
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		bad = replace(j, breaks[i].from, breaks[i].to);
		ck_assert_msg(fatelf_oci_manifest_parse(bad, strlen(bad), &om, &d) == -FATELF_E_REPO_OCI,
			      "break %zu was taken", i);
		ck_assert_ptr_null(om);
		ck_assert_msg(strstr(d.msg, breaks[i].why), "break %zu: %s", i, d.msg);
		free(bad);
	}
	/* a digest in upper case, and a second pack list */
	{
		char dg[80] = "sha256:", upper[80];

		fatelf_hex(layers[0].digest, 32, dg + 7);
		snprintf(upper, sizeof(upper), "%s", dg);
		for (char *p = upper + 7; *p; p++)
			if (*p >= 'a' && *p <= 'f')
				*p = (char)(*p - 32);
		bad = replace(j, dg, upper);
		ck_assert_int_eq(fatelf_oci_manifest_parse(bad, strlen(bad), &om, &d), -FATELF_E_REPO_OCI);
		free(bad);
		bad = replace(j, "application/vnd.fatelf.object.v1+zstd\",\"digest\":\"sha256:d1",
			      "application/vnd.fatelf.pack.v1+zstd\",\"digest\":\"sha256:d1");
		ck_assert_int_eq(fatelf_oci_manifest_parse(bad, strlen(bad), &om, &d), -FATELF_E_REPO_OCI);
		ck_assert_ptr_nonnull(strstr(d.msg, "two pack lists"));
		free(bad);
	}
	free(j);

	ck_assert_int_eq(fatelf_oci_index_json(m, entries, 2, &j, &l), 0);
	ck_assert_msg(fatelf_oci_index_parse(j, l, &oi, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(oi->n, 2);
	ck_assert(oi->manifests[0].has_platform);
	ck_assert_str_eq(oi->manifests[0].platform.architecture, "amd64");
	ck_assert_str_eq(oi->manifests[0].platform.os, "linux");
	ck_assert_str_eq(oi->manifests[0].target, T_X86);
	ck_assert_uint_eq(oi->manifests[0].size, 100);
	ck_assert(!oi->manifests[1].has_platform);
	ck_assert(oi->manifests[1].fat);
	ck_assert_int_eq(memcmp(oi->manifests[1].digest, entries[1].digest, 32), 0);
	fatelf_oci_index_free(oi);
	bad = replace(j, "\"os\":\"linux\"", "\"os\":\"linux\",\"os\":\"linux\"");
	ck_assert_int_eq(fatelf_oci_index_parse(bad, strlen(bad), &oi, &d), -FATELF_E_REPO_OCI);
	free(bad);
	bad = replace(j, "\"os\":\"linux\"", "\"oss\":\"linux\"");
	ck_assert_int_eq(fatelf_oci_index_parse(bad, strlen(bad), &oi, &d), -FATELF_E_REPO_OCI);
	free(bad);
	bad = replace(j, "application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json");
	ck_assert_int_eq(fatelf_oci_index_parse(bad, strlen(bad), &oi, &d), -FATELF_E_REPO_OCI);
	free(bad);
	ck_assert_int_eq(fatelf_oci_index_parse("[]", 2, &oi, &d), -FATELF_E_REPO_OCI);
	ck_assert_int_eq(fatelf_oci_index_parse("{\"schemaVersion\":2", 18, &oi, &d), -FATELF_E_REPO_OCI);
	free(j);
	fatelf_manifest_free(m);
}
END_TEST

/* What a names take sees: the names, joined by ' ', up to stop_after. */
struct names_taken {
	char seen[256];
	int stop_after;
	int n;
};

static int names_take(void *ctx, const char *name)
{
	struct names_taken *t = ctx;

	if (t->stop_after && t->n == t->stop_after)
		return -FATELF_E_REPO_LIMIT;
	snprintf(t->seen + strlen(t->seen), sizeof(t->seen) - strlen(t->seen), "%s%s", t->n ? " " : "", name);
	t->n++;
	return 0;
}

/* A page of a catalog or tag list: each name handed on as it is read and
 * counted; a page past FATELF_OCI_LIST_MAX is refused whole, however
 * valid; take's refusal stops the page and is its result. */
START_TEST(test_oci_names_pages)
{
	struct names_taken t = { 0 };
	fatelf_diag d = { 0 };
	const char *cat = "{\"repositories\":[\"fatelf/a\",\"other/b\",\"fatelf/c-d\"]}";
	const char *tags = "{\"name\":\"fatelf/a\",\"tags\":[\"1.0\",\"latest\",\"2.0\"]}";
	char *big;
	size_t len;

	ck_assert_int_eq(fatelf_oci_names_each(cat, strlen(cat), false, names_take, &t, &d), 3);
	ck_assert_str_eq(t.seen, "fatelf/a other/b fatelf/c-d");
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(fatelf_oci_names_each(tags, strlen(tags), true, names_take, &t, &d), 3);
	ck_assert_str_eq(t.seen, "1.0 latest 2.0");
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(fatelf_oci_names_each("{\"name\":\"a\",\"tags\":null}", 24, true, names_take, &t, &d), 0);
	ck_assert_int_eq(t.n, 0);
	/* take stops it */
	memset(&t, 0, sizeof(t));
	t.stop_after = 2;
	ck_assert_int_eq(fatelf_oci_names_each(tags, strlen(tags), true, names_take, &t, &d), -FATELF_E_REPO_LIMIT);
	ck_assert_str_eq(t.seen, "1.0 latest");
	/* a name that breaks its rule */
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(fatelf_oci_names_each("{\"repositories\":[\"a\",\"B\"]}", 26, false, names_take, &t, &d),
			 -FATELF_E_REPO_OCI);
	ck_assert_str_eq(d.msg, "OCI catalog: 'B' is not a valid repository name");

	/* one byte past the bound of a page: refused before any name is read */
	len = FATELF_OCI_LIST_MAX + 1;
	big = malloc(len + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', len);
	memcpy(big, tags, strlen(tags));
	big[len] = '\0';
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(fatelf_oci_names_each(big, len, true, names_take, &t, &d), -FATELF_E_REPO_OCI);
	ck_assert_int_eq(t.n, 0);
	ck_assert_str_eq(d.msg, "OCI tag list: 1048577 bytes, the limit of a page is 1048576");
	/* at the bound: read */
	ck_assert_int_eq(fatelf_oci_names_each(big, len - 1, true, names_take, &t, &d), 3);
	free(big);
}
END_TEST

START_TEST(test_repo_life)
{
	fatelf_repo_dir *r;
	fatelf_repo_add_result res;
	fatelf_repo_verify_result vr;
	fatelf_repo_gc_result gr;
	fatelf_diag d;
	char path[256];
	size_t len;

	tu_tmpdir();
	make_tree("tree", "some data\n");
	ck_assert_msg(create_bundle("tree", "b.fatbundle", "1.0-1", NULL, &d) == 0, "%s", d.msg);
	fatelf_manifest *m = bundle_manifest("b.fatbundle");
	uint32_t iprog;
	const fatelf_bundle_entry *prog = entry_of(m, PROG, &iprog), *data = entry_of(m, DATA, NULL);

	/* init: the folders, an empty index of serial 1; not twice */
	ck_assert_msg(fatelf_repo_init("repo", NULL, 1000, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(fatelf_repo_init("repo", NULL, 1000, &d), -FATELF_E_REPO_FORMAT);
	ck_assert_uint_eq(count_files("repo/indexes"), 1);
	ck_assert_uint_eq(count_files("repo/objects"), 0);
	/* not a repository */
	ck_assert_int_eq(mkdir("plain", 0755), 0);
	fatelf_repo_dir *none = NULL;
	ck_assert_int_eq(fatelf_repo_open("plain", false, NULL, 0, &none, &d), -FATELF_E_REPO_FORMAT);
	ck_assert_ptr_null(none);

	r = open_repo("repo", true);
	ck_assert_uint_eq(r->index->serial, 1);
	ck_assert_int_eq(r->index->created, 1000);
	/* init gives the repository its identity; every publish keeps it */
	char rid[FATELF_REPO_ID_LEN + 1];
	ck_assert(fatelf_repo_id_valid(r->index->repository));
	memcpy(rid, r->index->repository, sizeof(rid));
	ck_assert_uint_eq(r->index->npackages, 0);
	ck_assert_ptr_null(r->index_sig);

	/* add: two records and the data file, the pack list; the frame is
	 * canonical (the glue's zeros): no object */
	ck_assert_msg(add_file(r, "b.fatbundle", NULL, &res, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(res.name, "demo");
	ck_assert_str_eq(res.version, "1.0-1");
	ck_assert(!res.unchanged);
	ck_assert_uint_eq(res.counts.objects_new, 4);
	ck_assert_uint_eq(res.counts.objects_shared, 0);
	ck_assert_uint_eq(res.pack_objects, 3);
	ck_assert_uint_eq(count_files("repo/objects"), 4);
	for (int i = 0; i < 2; i++)
		ck_assert(fatelf_repo_has_object(r, prog->records[i].sha256));
	ck_assert(fatelf_repo_has_object(r, data->sha256));
	ck_assert(!fatelf_repo_has_object(r, prog->sha256));
	/* not published yet: the pointer still names the first index */
	char ptr[FATELF_REPO_POINTER_MAX];
	fatelf_repo_pointer_format(r->index_sha, r->index_size, ptr);
	ck_assert(tu_file_equals("repo/index", ptr, strlen(ptr)));
	ck_assert_uint_eq(count_files("repo/indexes"), 1);

	ck_assert_msg(fatelf_repo_publish(r, r->index, NULL, 2000, 0, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(r->index->serial, 2);
	ck_assert_str_eq(r->index->repository, rid);
	ck_assert_int_eq(r->index->created, 2000);
	ck_assert_int_eq(r->index->expires, 0);
	ck_assert(!tu_file_equals("repo/index", ptr, strlen(ptr)));
	fatelf_repo_pointer_format(r->index_sha, r->index_size, ptr);
	ck_assert(tu_file_equals("repo/index", ptr, strlen(ptr)));
	ck_assert_uint_eq(count_files("repo/indexes"), 2);
	r = fatelf_repo_close(r);

	/* re-open: the package is listed, as its manifest says */
	r = open_repo("repo", false);
	ck_assert_uint_eq(r->index->serial, 2);
	ck_assert_uint_eq(r->index->npackages, 1);
	fatelf_repo_package *p = fatelf_repo_index_find(r->index, "demo");
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->nversions, 1);
	fatelf_repo_version *v = fatelf_repo_package_version(p, "1.0-1");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v->summary, "A demo");
	ck_assert_uint_eq(v->entries, m->nentries);
	ck_assert_uint_eq(v->size, prog->size + data->size);
	ck_assert_uint_eq(v->ntargets, 2);
	ck_assert_int_eq(v->targets[0].machine, 62);
	ck_assert_int_eq(v->targets[1].machine, 183);
	ck_assert(!v->signed_manifest);
	char rel[FATELF_REPO_MANIFEST_PATH_MAX], *json = NULL;
	uint8_t sha[32];
	fatelf_repo_manifest_path(v->manifest, false, rel);
	ck_assert_msg(fatelf_repo_read_file(r, rel, FATELF_MANIFEST_MAX, &json, &len, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(len, v->manifest_size);
	sha_of(json, len, sha);
	ck_assert(memcmp(sha, v->manifest, 32) == 0);
	free(json);
	fatelf_repo_manifest_path(v->manifest, true, rel);
	ck_assert_int_eq(fatelf_repo_read_file(r, rel, 4096, &json, &len, &d), -FATELF_E_REPO_MISSING);
	/* its pack list: the three objects and no frame */
	fatelf_repo_pack *pk = read_pack(r, v);
	ck_assert_uint_eq(pk->nobjects, 3);
	ck_assert_uint_eq(pk->nframes, 0);
	const fatelf_repo_object *o = fatelf_repo_pack_object(pk, data->sha256);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->size, data->size);
	struct stat st;
	object_file(data->sha256, path);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(o->csize, (uint64_t)st.st_size);
	o = fatelf_repo_pack_object(pk, prog->records[1].sha256);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->size, prog->records[1].size);
	fatelf_repo_pack_free(pk);
	/* the FatELF file rebuilt from the canonical frame and its records */
	struct sink s = { 0 };
	uint8_t *file = tu_read_file("tree/" PROG, &len);
	ck_assert_msg(fatelf_repo_rebuild(r, prog, NULL, to_sink, &s, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(s.len, len);
	ck_assert(memcmp(s.buf, file, len) == 0);
	sink_free(&s);
	free(file);
	/* an object read back whole */
	ck_assert_int_eq(fatelf_repo_read_object(r, data->sha256, data->size, to_sink, &s, NULL, &d), 0);
	ck_assert_uint_eq(s.len, 10);
	ck_assert(memcmp(s.buf, "some data\n", 10) == 0);
	sink_free(&s);

	/* verify: everything reached, the FatELF file rebuilt */
	ck_assert_msg(fatelf_repo_verify(r, NULL, 0, &vr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(vr.packages, 1);
	ck_assert_uint_eq(vr.versions, 1);
	ck_assert_uint_eq(vr.objects, 3);
	ck_assert_uint_eq(vr.rebuilt, 1);
	ck_assert_uint_gt(vr.bytes, 0);
	r = fatelf_repo_close(r);

	/* the same bundle again: nothing done */
	r = open_repo("repo", true);
	ck_assert_msg(add_file(r, "b.fatbundle", NULL, &res, &d) == 0, "%s", d.msg);
	ck_assert(res.unchanged);
	ck_assert_uint_eq(res.counts.objects_new, 0);
	ck_assert_uint_eq(count_files("repo/objects"), 4);
	ck_assert_uint_eq(r->index->npackages, 1);
	/* another manifest of that version: refused */
	make_tree("tree2", "other data\n");
	ck_assert_int_eq(create_bundle("tree2", "b2.fatbundle", "1.0-1", NULL, &d), 0);
	ck_assert_int_eq(add_file(r, "b2.fatbundle", NULL, &res, &d), -EEXIST);
	ck_assert_uint_eq(count_files("repo/objects"), 4);
	r = fatelf_repo_close(r);

	/* a byte of an object changed on disk */
	r = open_repo("repo", false);
	object_file(prog->records[0].sha256, path);
	flip_byte(path, 100);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), -FATELF_E_REPO_OBJECT);
	ck_assert_str_eq(vr.package, "demo");
	ck_assert_str_eq(vr.version, "1.0-1");
	ck_assert_ptr_nonnull(strstr(d.subject, "objects/"));
	flip_byte(path, 100);
	ck_assert_msg(fatelf_repo_verify(r, NULL, 0, &vr, &d) == 0, "%s", d.msg);
	/* ... and its last byte */
	object_file(data->sha256, path);
	flip_byte(path, 0);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), -FATELF_E_REPO_OBJECT);
	flip_byte(path, 0);
	/* an object gone */
	ck_assert_int_eq(rename(path, "aside.zst"), 0);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), -FATELF_E_REPO_MISSING);
	ck_assert_str_eq(vr.package, "demo");
	ck_assert_int_eq(rename("aside.zst", path), 0);
	/* the pack list gone */
	v = &r->index->packages[0].versions[0];
	object_file(v->pack, path);
	ck_assert_int_eq(rename(path, "aside.zst"), 0);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), -FATELF_E_REPO_MISSING);
	ck_assert_int_eq(rename("aside.zst", path), 0);
	/* the manifest changed */
	fatelf_repo_manifest_path(v->manifest, false, rel);
	snprintf(path, sizeof(path), "repo/%s", rel);
	flip_byte(path, 3);
	ck_assert_int_lt(fatelf_repo_verify(r, NULL, 0, &vr, &d), 0);
	flip_byte(path, 3);
	ck_assert_msg(fatelf_repo_verify(r, NULL, 0, &vr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(vr.rebuilt, 1);
	r = fatelf_repo_close(r);

	/* remove, publish, gc: every object, the manifest, old indexes go */
	r = open_repo("repo", true);
	ck_assert_uint_eq(fatelf_repo_index_remove(r->index, "demo", NULL), 1);
	ck_assert_msg(fatelf_repo_publish(r, r->index, NULL, 3000, 0, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(r->index->serial, 3);
	/* a temp file an interrupted add left */
	ck_assert_int_eq(mkdir("repo/objects/00", 0755) == 0 || errno == EEXIST, 1);
	tu_write_file("repo/objects/00/.fatelf.object.0123456789abcdef", "x", 1);
	ck_assert_uint_eq(count_files("repo/objects"), 5);
	ck_assert_uint_eq(count_files("repo/manifests"), 1);
	ck_assert_uint_eq(count_files("repo/indexes"), 3);
	ck_assert_msg(fatelf_repo_gc(r, &gr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(count_files("repo/objects"), 0);
	ck_assert_uint_eq(count_files("repo/manifests"), 0);
	ck_assert_uint_eq(count_files("repo/indexes"), 1);
	/* 5 objects, the manifest and its folder, 2 indexes */
	ck_assert_uint_eq(gr.files, 9);
	ck_assert_uint_gt(gr.bytes, 0);
	/* again: nothing left to drop */
	ck_assert_int_eq(fatelf_repo_gc(r, &gr, &d), 0);
	ck_assert_uint_eq(gr.files, 0);
	r = fatelf_repo_close(r);
	r = open_repo("repo", false);
	ck_assert_uint_eq(r->index->serial, 3);
	ck_assert_uint_eq(r->index->npackages, 0);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), 0);
	ck_assert_uint_eq(vr.packages, 0);
	r = fatelf_repo_close(r);
	fatelf_manifest_free(m);
}
END_TEST

/* Two versions share the FatELF file's records: gc after one is removed
 * keeps what the other needs. */
START_TEST(test_repo_gc_shared)
{
	fatelf_repo_dir *r;
	fatelf_repo_add_result res;
	fatelf_repo_verify_result vr;
	fatelf_repo_gc_result gr;
	fatelf_diag d;
	char path[256];

	tu_tmpdir();
	make_tree("t1", "data of one\n");
	make_tree("t2", "data of two\n");
	ck_assert_int_eq(create_bundle("t1", "1.fatbundle", "1.0-1", NULL, &d), 0);
	ck_assert_int_eq(create_bundle("t2", "2.fatbundle", "2.0-1", NULL, &d), 0);
	fatelf_manifest *m1 = bundle_manifest("1.fatbundle"), *m2 = bundle_manifest("2.fatbundle");
	const fatelf_bundle_entry *p1 = entry_of(m1, PROG, NULL), *d1 = entry_of(m1, DATA, NULL);
	const fatelf_bundle_entry *p2 = entry_of(m2, PROG, NULL), *d2 = entry_of(m2, DATA, NULL);
	ck_assert(memcmp(p1->sha256, p2->sha256, 32) == 0);

	ck_assert_int_eq(fatelf_repo_init("repo", NULL, 1, &d), 0);
	r = open_repo("repo", true);
	ck_assert_msg(add_file(r, "2.fatbundle", NULL, &res, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(res.counts.objects_new, 4);
	ck_assert_msg(add_file(r, "1.fatbundle", NULL, &res, &d) == 0, "%s", d.msg);
	/* its data file and pack list are new, the records shared */
	ck_assert_uint_eq(res.counts.objects_new, 2);
	ck_assert_uint_eq(res.counts.objects_shared, 2);
	ck_assert_int_eq(fatelf_repo_publish(r, r->index, NULL, 2, 0, &d), 0);
	ck_assert_uint_eq(r->index->packages[0].nversions, 2);
	ck_assert_str_eq(r->index->packages[0].versions[0].version, "1.0-1");
	ck_assert_uint_eq(count_files("repo/objects"), 6);
	ck_assert_msg(fatelf_repo_verify(r, NULL, 0, &vr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(vr.versions, 2);
	/* distinct objects: 2 records, 2 data files */
	ck_assert_uint_eq(vr.objects, 4);
	ck_assert_uint_eq(vr.rebuilt, 2);

	ck_assert_uint_eq(fatelf_repo_index_remove(r->index, "demo", "1.0-1"), 1);
	ck_assert_int_eq(fatelf_repo_publish(r, r->index, NULL, 3, 0, &d), 0);
	ck_assert_msg(fatelf_repo_gc(r, &gr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(count_files("repo/objects"), 4);
	ck_assert(!fatelf_repo_has_object(r, d1->sha256));
	ck_assert(fatelf_repo_has_object(r, d2->sha256));
	ck_assert(fatelf_repo_has_object(r, p1->records[0].sha256));
	ck_assert(fatelf_repo_has_object(r, p1->records[1].sha256));
	ck_assert_uint_eq(count_files("repo/manifests"), 1);
	r = fatelf_repo_close(r);
	r = open_repo("repo", false);
	ck_assert_msg(fatelf_repo_verify(r, NULL, 0, &vr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(vr.versions, 1);
	ck_assert_uint_eq(vr.rebuilt, 1);
	r = fatelf_repo_close(r);
	object_file(d1->sha256, path);
	ck_assert_int_eq(access(path, F_OK), -1);
	fatelf_manifest_free(m1);
	fatelf_manifest_free(m2);
}
END_TEST

/* A FatELF file whose gap holds a byte that is not zero: its frame is an
 * object of its own, listed in the pack, and rebuilds the file. */
START_TEST(test_repo_nonzero_gap)
{
	fatelf_repo_dir *r;
	fatelf_repo_add_result res;
	fatelf_repo_verify_result vr;
	fatelf_diag d;
	fatelf_header h;
	char path[256];
	size_t len, glen;
	int k;

	tu_tmpdir();
	make_tree("tree", "some data\n");
	uint8_t *glued = tu_read_file("tree/" PROG, &glen);
	uint8_t *file = tu_read_file("tree/" PROG, &len);
	ck_assert_int_eq(fatelf_header_decode(file, len, &h, &d), 0);
	ck_assert_uint_eq(h.nrecords, 2);
	/* between the table (56 bytes) and the first record (4096) */
	ck_assert_uint_gt(h.records[0].offset, FATELF_TABLE_SIZE(2) + 100);
	ck_assert_int_eq(file[FATELF_TABLE_SIZE(2) + 44], 0);
	file[FATELF_TABLE_SIZE(2) + 44] = 0x5a;
	tu_write_file("tree/" PROG, file, len);

	k = create_bundle("tree", "b.fatbundle", "1.0-1", NULL, &d);
	if (k < 0) {
		/* The validator may refuse bytes in the gaps: then there is no
		 * such bundle to add. */
		fprintf(stderr, "test_repo_nonzero_gap: bundle create refused the file (%s): skipped\n", d.msg);
		free(file);
		free(glued);
		return;
	}
	fatelf_manifest *m = bundle_manifest("b.fatbundle");
	uint32_t iprog;
	const fatelf_bundle_entry *prog = entry_of(m, PROG, &iprog);
	uint8_t canon[32], frame[32];
	ck_assert_int_eq(fatelf_repo_frame_canonical_sha(prog, canon), 0);
	frame_sha_of_file(file, len, frame);
	ck_assert(memcmp(canon, frame, 32) != 0);

	ck_assert_int_eq(fatelf_repo_init("repo", NULL, 1, &d), 0);
	r = open_repo("repo", true);
	ck_assert_msg(add_file(r, "b.fatbundle", NULL, &res, &d) == 0, "%s", d.msg);
	/* two records, the data, the frame, the pack list */
	ck_assert_uint_eq(res.counts.objects_new, 5);
	ck_assert_uint_eq(res.pack_objects, 4);
	ck_assert_int_eq(fatelf_repo_publish(r, r->index, NULL, 2, 0, &d), 0);
	ck_assert(fatelf_repo_has_object(r, frame));
	/* no temp file left in the folder the frame was written in */
	ck_assert_uint_eq(count_files("repo/objects"), 5);

	fatelf_repo_version *v = &r->index->packages[0].versions[0];
	fatelf_repo_pack *pk = read_pack(r, v);
	ck_assert_uint_eq(pk->nframes, 1);
	ck_assert_uint_eq(pk->frames[0].entry, iprog);
	ck_assert(memcmp(pk->frames[0].sha256, frame, 32) == 0);
	const fatelf_repo_object *o = fatelf_repo_pack_object(pk, frame);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->size, fatelf_repo_frame_size(prog));

	/* rebuilt with the frame: the file as shipped; with the canonical
	 * one: the file as glued */
	struct sink s = { 0 };
	ck_assert_msg(fatelf_repo_rebuild(r, prog, fatelf_repo_pack_frame(pk, iprog), to_sink, &s, &d) == 0, "%s",
		      d.msg);
	ck_assert_uint_eq(s.len, len);
	ck_assert(memcmp(s.buf, file, len) == 0);
	sink_free(&s);
	ck_assert_int_eq(fatelf_repo_rebuild(r, prog, NULL, to_sink, &s, &d), 0);
	ck_assert_uint_eq(s.len, glen);
	ck_assert(memcmp(s.buf, glued, glen) == 0);
	sink_free(&s);

	ck_assert_msg(fatelf_repo_verify(r, NULL, 0, &vr, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(vr.objects, 4);
	ck_assert_uint_eq(vr.rebuilt, 1);
	/* the frame gone: verify misses it */
	object_file(frame, path);
	ck_assert_int_eq(rename(path, "aside.zst"), 0);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), -FATELF_E_REPO_MISSING);
	ck_assert_int_eq(rename("aside.zst", path), 0);
	ck_assert_int_eq(fatelf_repo_verify(r, NULL, 0, &vr, &d), 0);

	fatelf_repo_pack_free(pk);
	r = fatelf_repo_close(r);
	fatelf_manifest_free(m);
	free(file);
	free(glued);
}
END_TEST

/* Files whose objects the codec finds awkward: an empty file, and a file
 * that is itself a zstd stream. Each is added, then verified. */
START_TEST(test_repo_awkward_files)
{
	static const char *const names[] = { "empty", "zst" };
	fatelf_diag d;

	tu_tmpdir();
	for (int i = 0; i < 2; i++) {
		char dir[64], path[256], repo[64], bundle[64];
		fatelf_repo_dir *r = NULL;
		fatelf_repo_add_result res;
		fatelf_repo_verify_result vr;
		size_t zlen;
		uint8_t sha[32];
		uint64_t size;
		int k;

		snprintf(dir, sizeof(dir), "tree-%s", names[i]);
		make_tree(dir, "some data\n");
		snprintf(path, sizeof(path), "%s/opt/demo/share/%s", dir, names[i]);
		if (i == 0) {
			tu_write_file(path, "", 0);
		} else {
			uint8_t *z = make_object("compressed by its vendor\n", 25, 25, &zlen, sha, &size);

			tu_write_file(path, z, zlen);
			free(z);
		}
		snprintf(bundle, sizeof(bundle), "%s.fatbundle", names[i]);
		snprintf(repo, sizeof(repo), "repo-%s", names[i]);
		ck_assert_msg(create_bundle(dir, bundle, "1.0-1", NULL, &d) == 0, "%s", d.msg);
		ck_assert_int_eq(fatelf_repo_init(repo, NULL, 1, &d), 0);
		ck_assert_msg(fatelf_repo_open(repo, true, NULL, 0, &r, &d) == 0, "%s", d.msg);
		ck_assert_msg(add_file(r, bundle, NULL, &res, &d) == 0, "%s: %s", names[i], d.msg);
		ck_assert_uint_eq(res.pack_objects, 4);
		ck_assert_int_eq(fatelf_repo_publish(r, r->index, NULL, 2, 0, &d), 0);
		k = fatelf_repo_verify(r, NULL, 0, &vr, &d);
		ck_assert_msg(k == 0, "%s: %s", names[i], d.msg);
		r = fatelf_repo_close(r);
	}
}
END_TEST

/* Signed indexes and manifests; an index changed after publication. */
START_TEST(test_repo_signed)
{
	fatelf_ms_seckey sk, other_sk;
	fatelf_ms_pubkey pk, other_pk;
	fatelf_repo_dir *r = NULL;
	fatelf_repo_add_result res;
	fatelf_repo_verify_result vr;
	fatelf_diag d;
	int k;

	tu_tmpdir();
	hostile_key(&sk, &pk);
	hostile_other_key(&other_sk, &other_pk);
	make_tree("tree", "some data\n");
	ck_assert_int_eq(create_bundle("tree", "s.fatbundle", "1.0-1", &sk, &d), 0);
	ck_assert_int_eq(create_bundle("tree", "u.fatbundle", "2.0-1", NULL, &d), 0);

	ck_assert_msg(fatelf_repo_init("repo", &sk, 1, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(count_files("repo/indexes"), 2);
	ck_assert_msg(fatelf_repo_open("repo", true, &pk, 1, &r, &d) == 0, "%s", d.msg);
	ck_assert_ptr_nonnull(r->index_sig);
	/* bundles signed by pk only */
	fatelf_bundle_read_opts ro = { .keys = &pk, .nkeys = 1, .require_signature = true };
	ck_assert_msg(add_file(r, "s.fatbundle", &ro, &res, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(add_file(r, "u.fatbundle", &ro, &res, &d), -FATELF_E_SIG_MISSING);
	ck_assert_int_eq(fatelf_repo_publish(r, r->index, &sk, 10, 100, &d), 0);
	ck_assert_int_eq(r->index->expires, 110);
	ck_assert_int_eq(fatelf_repo_index_check(r->index, 2, 109, &d), 0);
	ck_assert_int_eq(fatelf_repo_index_check(r->index, 2, 110, &d), -FATELF_E_REPO_EXPIRED);
	ck_assert_int_eq(fatelf_repo_index_check(r->index, 3, 50, &d), -FATELF_E_REPO_ROLLBACK);
	r = fatelf_repo_close(r);

	ck_assert_msg(fatelf_repo_open("repo", false, &pk, 1, &r, &d) == 0, "%s", d.msg);
	ck_assert(r->index->packages[0].versions[0].signed_manifest);
	ck_assert_msg(fatelf_repo_verify(r, &pk, 1, &vr, &d) == 0, "%s", d.msg);
	k = fatelf_repo_verify(r, &other_pk, 1, &vr, &d);
	ck_assert_msg(k < 0, "a manifest verified with a key that did not sign it");
	r = fatelf_repo_close(r);
	/* an index by another key, or none */
	k = fatelf_repo_open("repo", false, &other_pk, 1, &r, &d);
	ck_assert_msg(k < 0, "an index verified with a key that did not sign it");
	ck_assert_ptr_null(r);

	/* the index changed under its name: its hash is not the pointer's */
	char rel[FATELF_REPO_MANIFEST_PATH_MAX], path[256];
	uint8_t sha[32];
	uint64_t size;
	size_t len, plen;
	uint8_t *ptr = tu_read_file("repo/index", &plen);
	ck_assert_ptr_nonnull(ptr);
	ck_assert_int_eq(fatelf_repo_pointer_parse(ptr, plen, sha, &size, &d), 0);
	fatelf_repo_index_path(sha, false, rel);
	snprintf(path, sizeof(path), "repo/%s", rel);
	uint8_t *json = tu_read_file(path, &len);
	ck_assert_uint_eq(len, size);
	uint8_t *at = memmem(json, len, "\"serial\": 2", 11);
	ck_assert_ptr_nonnull(at);
	at[10] = '9';
	tu_write_file(path, json, len);
	ck_assert_int_eq(fatelf_repo_open("repo", false, NULL, 0, &r, &d), -FATELF_E_REPO_INDEX);
	at[10] = '2';
	tu_write_file(path, json, len);
	free(json);
	/* the pointer broken */
	tu_write_file("repo/index", "fatelf-repo 1 x 1\n", 18);
	ck_assert_int_eq(fatelf_repo_open("repo", false, NULL, 0, &r, &d), -FATELF_E_REPO_FORMAT);
	unlink("repo/index");
	ck_assert_int_eq(fatelf_repo_open("repo", false, NULL, 0, &r, &d), -FATELF_E_REPO_FORMAT);
	tu_write_file("repo/index", ptr, plen);
	free(ptr);
	ck_assert_msg(fatelf_repo_open("repo", false, &pk, 1, &r, &d) == 0, "%s", d.msg);
	r = fatelf_repo_close(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("repo");
	TCase *tc = tcase_create("repo");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_pack_round_trip);
	tcase_add_test(tc, test_pack_refusals);
	tcase_add_test(tc, test_index_round_trip);
	tcase_add_test(tc, test_index_refusals);
	tcase_add_test(tc, test_index_check);
	tcase_add_test(tc, test_index_identity);
	tcase_add_test(tc, test_index_remove);
	tcase_add_test(tc, test_pointer);
	tcase_add_test(tc, test_object_codec);
	tcase_add_test(tc, test_object_of_zstd_bytes);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_frame_canonical);
	tcase_add_test(tc, test_pack_check);
	tcase_add_test(tc, test_repo_life);
	tcase_add_test(tc, test_repo_gc_shared);
	tcase_add_test(tc, test_repo_nonzero_gap);
	tcase_add_test(tc, test_repo_awkward_files);
	tcase_add_test(tc, test_repo_signed);
	tcase_add_test(tc, test_oci_platforms);
	tcase_add_test(tc, test_oci_layers_and_json);
	tcase_add_test(tc, test_oci_words);
	tcase_add_test(tc, test_oci_read);
	tcase_add_test(tc, test_oci_names_pages);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
