/*
 * Unit tests for the bundle manifest: the canonical bytes the serializer
 * writes, round trips both ways, one rejection per rule with its own
 * error code, limits enforced before memory is spent, dpkg's version
 * order (checked against dpkg itself when it is installed), and the
 * package name and path rules.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle.h"
#include "manifest_private.h"
#include "testutil.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "3333333333333333333333333333333333333333333333333333333333333333"
#define H4 "4444444444444444444444444444444444444444444444444444444444444444"
#define H5 "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
#define H6 "6666666666666666666666666666666666666666666666666666666666666666"
#define H7 "7777777777777777777777777777777777777777777777777777777777777777"

#define T_X86 "x86_64:64bits:le:sysv:osabiver0"
#define T_ARM "aarch64:64bits:le:sysv:osabiver0"

/* A manifest in canonical form: what the serializer must write for it. */
static const char canonical[] =
	"{\n"
	"  \"format\": 1,\n"
	"  \"package\": {\n"
	"    \"name\": \"game\",\n"
	"    \"version\": \"1:1.2~rc1-1\",\n"
	"    \"summary\": \"A game / for everyone \\\"quoted\\\" \\\\ caf\xc3\xa9\",\n"
	"    \"vendor\": \"Example Games\",\n"
	"    \"license\": \"MIT\",\n"
	"    \"homepage\": \"https://example.org/game\"\n"
	"  },\n"
	"  \"targets\": [\n"
	"    \"" T_X86 "\",\n"
	"    \"" T_ARM "\"\n"
	"  ],\n"
	"  \"entries\": [\n"
	"    {\n"
	"      \"path\": \"etc\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"etc/game.conf\",\n"
	"      \"type\": \"file\",\n"
	"      \"mode\": \"0640\",\n"
	"      \"size\": 9,\n"
	"      \"sha256\": \"" H1 "\",\n"
	"      \"config\": true\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"2775\",\n"
	"      \"setid\": true\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/bin\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/bin/game\",\n"
	"      \"type\": \"file\",\n"
	"      \"mode\": \"0755\",\n"
	"      \"size\": 20000,\n"
	"      \"sha256\": \"" H2 "\",\n"
	"      \"elf\": {\n"
	"        \"kind\": \"fatelf\",\n"
	"        \"header_size\": 56,\n"
	"        \"records\": [\n"
	"          {\n"
	"            \"target\": \"" T_X86 "\",\n"
	"            \"machine\": 62,\n"
	"            \"osabi\": 0,\n"
	"            \"osabi_version\": 0,\n"
	"            \"word_size\": 64,\n"
	"            \"byte_order\": \"le\",\n"
	"            \"offset\": 4096,\n"
	"            \"size\": 5000,\n"
	"            \"sha256\": \"" H3 "\"\n"
	"          },\n"
	"          {\n"
	"            \"target\": \"" T_ARM "\",\n"
	"            \"machine\": 183,\n"
	"            \"osabi\": 0,\n"
	"            \"osabi_version\": 0,\n"
	"            \"word_size\": 64,\n"
	"            \"byte_order\": \"le\",\n"
	"            \"offset\": 12288,\n"
	"            \"size\": 6000,\n"
	"            \"sha256\": \"" H4 "\"\n"
	"          }\n"
	"        ]\n"
	"      }\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/bin/helper\",\n"
	"      \"type\": \"file\",\n"
	"      \"mode\": \"0755\",\n"
	"      \"size\": 9000,\n"
	"      \"sha256\": \"" H5 "\",\n"
	"      \"elf\": {\n"
	"        \"kind\": \"elf\",\n"
	"        \"target\": \"" T_X86 "\"\n"
	"      }\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/bin/su2\",\n"
	"      \"type\": \"file\",\n"
	"      \"mode\": \"4755\",\n"
	"      \"setid\": true,\n"
	"      \"size\": 10,\n"
	"      \"sha256\": \"" H6 "\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/lib\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"1777\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/lib/libg.so\",\n"
	"      \"type\": \"symlink\",\n"
	"      \"target\": \"libg.so.1\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"opt/game/lib/libg.so.1\",\n"
	"      \"type\": \"file\",\n"
	"      \"mode\": \"0644\",\n"
	"      \"size\": 0,\n"
	"      \"sha256\": \"" H7 "\"\n"
	"    }\n"
	"  ]\n"
	"}\n";

/* A format-2 manifest: per-arch entries, two of them sharing a path. */
static const char canonical2[] =
	"{\n"
	"  \"format\": 2,\n"
	"  \"package\": {\n"
	"    \"name\": \"libx\",\n"
	"    \"version\": \"1.0-1\"\n"
	"  },\n"
	"  \"targets\": [\n"
	"    \"" T_X86 "\",\n"
	"    \"" T_ARM "\"\n"
	"  ],\n"
	"  \"entries\": [\n"
	"    {\n"
	"      \"path\": \"usr\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/include\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/include/cfg.h\",\n"
	"      \"type\": \"file\",\n"
	"      \"targets\": [\n"
	"        \"" T_X86 "\"\n"
	"      ],\n"
	"      \"mode\": \"0644\",\n"
	"      \"size\": 3,\n"
	"      \"sha256\": \"" H1 "\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/include/cfg.h\",\n"
	"      \"type\": \"file\",\n"
	"      \"targets\": [\n"
	"        \"" T_ARM "\"\n"
	"      ],\n"
	"      \"mode\": \"0644\",\n"
	"      \"size\": 4,\n"
	"      \"sha256\": \"" H2 "\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/lib\",\n"
	"      \"type\": \"dir\",\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/lib/aarch64-linux-gnu\",\n"
	"      \"type\": \"dir\",\n"
	"      \"targets\": [\n"
	"        \"" T_ARM "\"\n"
	"      ],\n"
	"      \"mode\": \"0755\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/lib/aarch64-linux-gnu/libx.so\",\n"
	"      \"type\": \"symlink\",\n"
	"      \"targets\": [\n"
	"        \"" T_ARM "\"\n"
	"      ],\n"
	"      \"target\": \"libx.so.1\"\n"
	"    },\n"
	"    {\n"
	"      \"path\": \"usr/lib/aarch64-linux-gnu/libx.so.1\",\n"
	"      \"type\": \"file\",\n"
	"      \"targets\": [\n"
	"        \"" T_ARM "\"\n"
	"      ],\n"
	"      \"mode\": \"0644\",\n"
	"      \"size\": 100,\n"
	"      \"sha256\": \"" H3 "\",\n"
	"      \"elf\": {\n"
	"        \"kind\": \"elf\",\n"
	"        \"target\": \"" T_ARM "\"\n"
	"      }\n"
	"    }\n"
	"  ]\n"
	"}\n";

/* text with the first occurrence of from replaced by to. */
static char *mutate_text(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t pre, flen = strlen(from), tlen = strlen(to), len = strlen(text);
	char *s;

	ck_assert_msg(at != NULL, "'%s' is not in the manifest", from);
	pre = (size_t)(at - text);
	s = malloc(len - flen + tlen + 1);
	ck_assert_ptr_nonnull(s);
	memcpy(s, text, pre);
	memcpy(s + pre, to, tlen);
	memcpy(s + pre + tlen, at + flen, len - pre - flen + 1);
	return s;
}

/* canonical with the first occurrence of from replaced by to. */
static char *mutate(const char *from, const char *to)
{
	const char *at = strstr(canonical, from);
	size_t pre, flen = strlen(from), tlen = strlen(to), len = strlen(canonical);
	char *s;

	ck_assert_msg(at != NULL, "'%s' is not in the manifest", from);
	pre = (size_t)(at - canonical);
	s = malloc(len - flen + tlen + 1);
	ck_assert_ptr_nonnull(s);
	memcpy(s, canonical, pre);
	memcpy(s + pre, to, tlen);
	memcpy(s + pre + tlen, at + flen, len - pre - flen + 1);
	return s;
}

/* Parses text; returns the code; the diag is kept for message checks. */
static fatelf_diag last;

static int parse_lim(const char *text, size_t len, const fatelf_bundle_limits *lim)
{
	fatelf_manifest *m = NULL;
	int r;

	memset(&last, 0, sizeof(last));
	r = fatelf_manifest_parse(text, len, lim, &m, &last);
	if (r == 0)
		ck_assert_ptr_nonnull(m);
	else
		ck_assert_ptr_null(m);
	fatelf_manifest_free(m);
	return r;
}

static int parse_text(const char *text)
{
	return parse_lim(text, strlen(text), NULL);
}

/* Asserts that canonical with from -> to is refused with code. */
#define REJECT(from, to, code) do { \
		char *_s = mutate(from, to); \
		int _r = parse_text(_s); \
		ck_assert_msg(_r == (code), "%s -> %s: got %s (%s), want %s", from, to, \
			      fatelf_error_name(_r), last.msg, fatelf_error_name(code)); \
		free(_s); \
	} while (0)

/* The same, and the message must contain want. */
#define REJECT_MSG(from, to, code, want) do { \
		REJECT(from, to, code); \
		ck_assert_msg(strstr(last.msg, want) != NULL, "message '%s' lacks '%s'", last.msg, want); \
	} while (0)

/* The same over canonical2. */
#define REJECT2(from, to, code, want) do { \
		char *_s = mutate_text(canonical2, from, to); \
		int _r = parse_text(_s); \
		ck_assert_msg(_r == (code), "%s -> %s: got %s (%s), want %s", from, to, \
			      fatelf_error_name(_r), last.msg, fatelf_error_name(code)); \
		ck_assert_msg(strstr(last.msg, want) != NULL, "message '%s' lacks '%s'", last.msg, want); \
		free(_s); \
	} while (0)

static void entries_equal(const fatelf_bundle_entry *a, const fatelf_bundle_entry *b)
{
	ck_assert_str_eq(a->path, b->path);
	ck_assert_int_eq(a->type, b->type);
	ck_assert_uint_eq(a->mode, b->mode);
	ck_assert_int_eq(a->setid, b->setid);
	ck_assert_int_eq(a->config, b->config);
	ck_assert_uint_eq(a->size, b->size);
	ck_assert_mem_eq(a->sha256, b->sha256, 32);
	if (a->link_target || b->link_target)
		ck_assert_str_eq(a->link_target, b->link_target);
	ck_assert_int_eq(a->kind, b->kind);
	if (a->kind == FATELF_KIND_ELF)
		ck_assert(fatelf_target_equal(&a->target, &b->target));
	ck_assert_uint_eq(a->ntargets, b->ntargets);
	for (unsigned i = 0; i < a->ntargets; i++)
		ck_assert(fatelf_target_equal(&a->targets[i], &b->targets[i]));
	ck_assert_uint_eq(a->header_size, b->header_size);
	ck_assert_uint_eq(a->nrecords, b->nrecords);
	for (unsigned i = 0; i < a->nrecords; i++) {
		ck_assert(fatelf_target_equal(&a->records[i].target, &b->records[i].target));
		ck_assert_uint_eq(a->records[i].offset, b->records[i].offset);
		ck_assert_uint_eq(a->records[i].size, b->records[i].size);
		ck_assert_mem_eq(a->records[i].sha256, b->records[i].sha256, 32);
	}
}

static void manifests_equal(const fatelf_manifest *a, const fatelf_manifest *b)
{
	ck_assert_uint_eq(a->format, b->format);
	ck_assert_str_eq(a->name, b->name);
	ck_assert_str_eq(a->version, b->version);
	ck_assert_str_eq(a->summary ? a->summary : "", b->summary ? b->summary : "");
	ck_assert_str_eq(a->vendor ? a->vendor : "", b->vendor ? b->vendor : "");
	ck_assert_str_eq(a->license ? a->license : "", b->license ? b->license : "");
	ck_assert_str_eq(a->homepage ? a->homepage : "", b->homepage ? b->homepage : "");
	ck_assert_uint_eq(a->ntargets, b->ntargets);
	for (size_t i = 0; i < a->ntargets; i++)
		ck_assert(fatelf_target_equal(&a->targets[i], &b->targets[i]));
	ck_assert_uint_eq(a->nentries, b->nentries);
	for (size_t i = 0; i < a->nentries; i++)
		entries_equal(&a->entries[i], &b->entries[i]);
	ck_assert_uint_eq(a->total_size, b->total_size);
}

START_TEST(test_parse_canonical)
{
	fatelf_manifest *m = NULL;
	fatelf_diag d;
	const fatelf_bundle_entry *e;

	ck_assert_msg(fatelf_manifest_parse(canonical, strlen(canonical), NULL, &m, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(m->format, 1);
	ck_assert_str_eq(m->name, "game");
	ck_assert_str_eq(m->version, "1:1.2~rc1-1");
	ck_assert_str_eq(m->summary, "A game / for everyone \"quoted\" \\ caf\xc3\xa9");
	ck_assert_str_eq(m->homepage, "https://example.org/game");
	ck_assert_uint_eq(m->ntargets, 2);
	ck_assert_uint_eq(m->targets[0].machine, 62);
	ck_assert_uint_eq(m->targets[1].machine, 183);
	ck_assert_uint_eq(m->nentries, 11);
	ck_assert_uint_eq(m->total_size, 9 + 20000 + 9000 + 10 + 0);

	e = fatelf_manifest_find(m, "opt/game/bin/game");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->type, FATELF_ENTRY_FILE);
	ck_assert_int_eq(e->kind, FATELF_KIND_FATELF);
	ck_assert_uint_eq(e->mode, 0755);
	ck_assert_uint_eq(e->header_size, 56);
	ck_assert_uint_eq(e->nrecords, 2);
	ck_assert_uint_eq(e->records[1].target.machine, 183);
	ck_assert_uint_eq(e->records[1].target.word_size, FATELF_CLASS64);
	ck_assert_uint_eq(e->records[1].target.byte_order, FATELF_DATA2LSB);
	ck_assert_uint_eq(e->records[1].offset, 12288);
	ck_assert_uint_eq(e->records[1].size, 6000);
	ck_assert_uint_eq(e->records[1].sha256[0], 0x44);
	ck_assert_uint_eq(e->sha256[31], 0x22);

	e = fatelf_manifest_find(m, "opt/game/bin/helper");
	ck_assert_int_eq(e->kind, FATELF_KIND_ELF);
	ck_assert_uint_eq(e->target.machine, 62);
	ck_assert_uint_eq(e->sha256[0], 0xab);
	ck_assert_uint_eq(e->sha256[1], 0xcd);

	e = fatelf_manifest_find(m, "opt/game/bin/su2");
	ck_assert_uint_eq(e->mode, 04755);
	ck_assert(e->setid);
	ck_assert(!e->config);
	ck_assert_int_eq(e->kind, FATELF_KIND_DATA);

	e = fatelf_manifest_find(m, "opt/game/lib/libg.so");
	ck_assert_int_eq(e->type, FATELF_ENTRY_SYMLINK);
	ck_assert_str_eq(e->link_target, "libg.so.1");
	ck_assert_uint_eq(e->mode, 0777);

	e = fatelf_manifest_find(m, "etc/game.conf");
	ck_assert(e->config);
	ck_assert_uint_eq(e->mode, 0640);
	ck_assert_uint_eq(fatelf_manifest_find(m, "opt/game/lib")->mode, 01777);
	ck_assert_ptr_null(fatelf_manifest_find(m, "opt/game/bi"));
	ck_assert_ptr_null(fatelf_manifest_find(m, "zzz"));
	ck_assert_ptr_null(fatelf_manifest_find(m, ""));
	fatelf_manifest_free(m);
}
END_TEST

/* serialize(parse(x)) == x for the canonical x. */
START_TEST(test_serialize_canonical_bytes)
{
	fatelf_manifest *m = NULL;
	fatelf_diag d;
	char *out = NULL;
	size_t len = 0;

	ck_assert_int_eq(fatelf_manifest_parse(canonical, strlen(canonical), NULL, &m, &d), 0);
	ck_assert_msg(fatelf_manifest_serialize(m, &out, &len, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(len, strlen(canonical));
	ck_assert_str_eq(out, canonical);
	free(out);
	fatelf_manifest_free(m);
}
END_TEST

/* Key order and whitespace are not part of the meaning: a reordered,
 * compact manifest parses to the same model and serializes canonically. */
START_TEST(test_noncanonical_input)
{
	const char *compact =
		"{\"entries\":[{\"type\":\"dir\",\"mode\":\"0755\",\"path\":\"opt\"},"
		"{\"elf\":{\"target\":\"" T_X86 "\",\"kind\":\"elf\"},\"sha256\":\"" H1 "\",\"size\":64,"
		"\"config\":false,\"setid\":false,\"mode\":\"0700\",\"type\":\"file\",\"path\":\"opt/x\"}],"
		"\"targets\":[\"" T_X86 "\"],\"package\":{\"version\":\"2\",\"name\":\"xy\"},\"format\":1}";
	const char *want =
		"{\n  \"format\": 1,\n  \"package\": {\n    \"name\": \"xy\",\n    \"version\": \"2\"\n  },\n"
		"  \"targets\": [\n    \"" T_X86 "\"\n  ],\n  \"entries\": [\n"
		"    {\n      \"path\": \"opt\",\n      \"type\": \"dir\",\n      \"mode\": \"0755\"\n    },\n"
		"    {\n      \"path\": \"opt/x\",\n      \"type\": \"file\",\n      \"mode\": \"0700\",\n"
		"      \"size\": 64,\n      \"sha256\": \"" H1 "\",\n"
		"      \"elf\": {\n        \"kind\": \"elf\",\n        \"target\": \"" T_X86 "\"\n      }\n"
		"    }\n  ]\n}\n";
	fatelf_manifest *m = NULL;
	fatelf_diag d;
	char *out = NULL;
	size_t len;

	ck_assert_msg(fatelf_manifest_parse(compact, strlen(compact), NULL, &m, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(m->summary, "");
	ck_assert_int_eq(fatelf_manifest_serialize(m, &out, &len, &d), 0);
	ck_assert_str_eq(out, want);
	free(out);
	fatelf_manifest_free(m);
}
END_TEST

/* A model built through the API: serialize sorts, computes the targets
 * and the total; parse(serialize(m)) == m; serialize is stable. */
START_TEST(test_model_round_trip)
{
	fatelf_manifest *m = fatelf_manifest_new(), *back = NULL;
	fatelf_bundle_entry *e;
	fatelf_diag d;
	char *out = NULL, *out2 = NULL;
	size_t len, len2;

	m->name = strdup("libfoo2");
	m->version = strdup("0.9+dfsg-3");
	m->vendor = strdup("Vendor \xe2\x9c\x93");
	/* Deliberately unsorted. */
	e = fatelf_manifest_add(m, "usr/lib/libfoo.so.2", FATELF_ENTRY_FILE);
	e->mode = 0644;
	e->size = 70000;
	memset(e->sha256, 0x5a, 32);
	e->kind = FATELF_KIND_FATELF;
	e->nrecords = 3;
	e->header_size = (uint32_t)FATELF_TABLE_SIZE(3);
	e->records = calloc(3, sizeof(*e->records));
	e->records[0] = (fatelf_bundle_record) { { 22, 0, 0, FATELF_CLASS64, FATELF_DATA2MSB }, 4096, 10000, { 1 } };
	e->records[1] = (fatelf_bundle_record) { { 3, 3, 0, FATELF_CLASS32, FATELF_DATA2LSB }, 16384, 10000, { 2 } };
	e->records[2] = (fatelf_bundle_record) { { 62, 0, 1, FATELF_CLASS64, FATELF_DATA2LSB }, 32768, 30000, { 3 } };
	fatelf_manifest_add(m, "usr/lib", FATELF_ENTRY_DIR)->mode = 0755;
	e = fatelf_manifest_add(m, "usr/lib/libfoo.so", FATELF_ENTRY_SYMLINK);
	e->link_target = strdup("/usr/lib/libfoo.so.2");
	fatelf_manifest_add(m, "usr", FATELF_ENTRY_DIR)->mode = 0755;
	e = fatelf_manifest_add(m, "usr/lib/plain", FATELF_ENTRY_FILE);
	e->mode = 0755;
	e->size = 1;
	e->kind = FATELF_KIND_ELF;
	e->target = (fatelf_target) { 62, 0, 0, FATELF_CLASS64, FATELF_DATA2LSB };

	ck_assert_msg(fatelf_manifest_serialize(m, &out, &len, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(m->entries[0].path, "usr");
	ck_assert_str_eq(m->entries[4].path, "usr/lib/plain");
	ck_assert_uint_eq(m->total_size, 70001);
	/* i386 (3), x86_64 osabi 0 ver 0, x86_64 ver 1, s390x (22) sorts
	 * by machine: 3, 22, 62/0, 62/1. */
	ck_assert_uint_eq(m->ntargets, 4);
	ck_assert_uint_eq(m->targets[0].machine, 3);
	ck_assert_uint_eq(m->targets[1].machine, 22);
	ck_assert_uint_eq(m->targets[2].osabi_version, 0);
	ck_assert_uint_eq(m->targets[3].osabi_version, 1);
	ck_assert_ptr_nonnull(strstr(out, "\"word_size\": 32,\n            \"byte_order\": \"le\""));
	ck_assert_ptr_nonnull(strstr(out, "\"target\": \"/usr/lib/libfoo.so.2\""));
	ck_assert_ptr_null(strstr(out, "\\/"));

	ck_assert_msg(fatelf_manifest_parse(out, len, NULL, &back, &d) == 0, "%s", d.msg);
	manifests_equal(m, back);
	ck_assert_int_eq(fatelf_manifest_serialize(back, &out2, &len2, &d), 0);
	ck_assert_uint_eq(len, len2);
	ck_assert_mem_eq(out, out2, len);
	free(out);
	free(out2);
	fatelf_manifest_free(back);
	fatelf_manifest_free(m);
}
END_TEST

/* The fewest bytes bundle create counts an entry for before hashing are
 * exactly what the serializer writes for the shortest such entry, and no
 * more than any other. */
START_TEST(test_entry_min_len)
{
	fatelf_manifest *m = fatelf_manifest_new(), *one;
	fatelf_bundle_entry *e;
	fatelf_diag d;
	char *out = NULL;
	size_t empty, len, min = 0;

	m->name = strdup("pk");
	m->version = strdup("1");
	ck_assert_int_eq(fatelf_manifest_serialize(m, &out, &empty, &d), 0);
	free(out);
	fatelf_manifest_add(m, "a", FATELF_ENTRY_DIR);
	min += fatelf_manifest_entry_min_len(FATELF_ENTRY_DIR, 1, 0);
	fatelf_manifest_add(m, "a/f", FATELF_ENTRY_FILE);
	min += fatelf_manifest_entry_min_len(FATELF_ENTRY_FILE, 3, 0);
	e = fatelf_manifest_add(m, "a/l", FATELF_ENTRY_SYMLINK);
	e->link_target = strdup("f");
	min += fatelf_manifest_entry_min_len(FATELF_ENTRY_SYMLINK, 3, 1);
	ck_assert_int_eq(fatelf_manifest_serialize(m, &out, &len, &d), 0);
	/* "[]" becomes "[" ENTRIES "\n  ]", two commas between three. */
	ck_assert_uint_eq(len, empty + min + 3 + 2);
	free(out);
	fatelf_manifest_free(m);

	/* Anything more than the least only adds. */
	one = fatelf_manifest_new();
	one->name = strdup("pk");
	one->version = strdup("1");
	e = fatelf_manifest_add(one, "b/\"q\"", FATELF_ENTRY_FILE);
	e->mode = 04755;
	e->setid = true;
	e->size = 123456789;
	e->config = true;
	e->kind = FATELF_KIND_ELF;
	e->target = (fatelf_target) { 62, 0, 0, FATELF_CLASS64, FATELF_DATA2LSB };
	ck_assert_int_eq(fatelf_manifest_serialize(one, &out, &len, &d), 0);
	ck_assert_uint_gt(len, empty + fatelf_manifest_entry_min_len(FATELF_ENTRY_FILE, 5, 0) + 3);
	free(out);
	fatelf_manifest_free(one);
}
END_TEST

START_TEST(test_serialize_refuses_bad_package)
{
	fatelf_manifest *m = fatelf_manifest_new();
	fatelf_diag d;
	char *out = NULL;
	size_t len;

	m->name = strdup("Bad");
	m->version = strdup("1");
	ck_assert_int_eq(fatelf_manifest_serialize(m, &out, &len, &d), -FATELF_E_PKG_NAME);
	free(m->name);
	m->name = strdup("ok");
	free(m->version);
	m->version = strdup("x1");
	ck_assert_int_eq(fatelf_manifest_serialize(m, &out, &len, &d), -FATELF_E_PKG_VERSION);
	free(m->version);
	m->version = strdup("1");
	ck_assert_int_eq(fatelf_manifest_serialize(m, &out, &len, &d), 0);
	ck_assert_str_eq(out, "{\n  \"format\": 1,\n  \"package\": {\n    \"name\": \"ok\",\n"
			      "    \"version\": \"1\"\n  },\n  \"targets\": [],\n  \"entries\": []\n}\n");
	free(out);
	fatelf_manifest_free(m);
}
END_TEST

/* The writer keeps the readers' rules: what it would write and a reader
 * would refuse, it refuses, before writing, with the reader's code. */
START_TEST(test_serialize_refuses_what_parse_refuses)
{
	static const struct {
		const char *summary, *path, *link;
		int code;
		const char *msg;
	} cases[] = {
		{ "a\x1b[2Jb", "bin", NULL, -FATELF_E_MANIFEST_SCHEMA,
		  "package: field 'summary' ('a\\x1b[2Jb') holds the control character U+001B at byte 1" },
		{ "a\xc2\x85z", "bin", NULL, -FATELF_E_MANIFEST_SCHEMA,
		  "package: field 'summary' ('a\\xc2\\x85z') holds the control character U+0085 at byte 1" },
		{ "a\xe2\x81\xa6z", "bin", NULL, -FATELF_E_MANIFEST_SCHEMA,
		  "package: field 'summary' ('a\\u2066z') holds the bidirectional control character U+2066 at byte 1" },
		{ "ok", "bin/.fatelf.abc123", NULL, -ENGINE_E_NAME_RESERVED,
		  "entry 'bin/.fatelf.abc123': the path has a component starting with \".fatelf.\": such names are "
		  "reserved for the installer's temp files" },
		{ "ok", "bin/x\xe2\x80\xae" "fdp.exe", NULL, -FATELF_E_PATH_INVALID,
		  "entry 'bin/x\\u202efdp.exe': the path holds the bidirectional control character U+202E at byte 5" },
		{ "ok", "bin/l", "x\xe2\x80\xaey", -FATELF_E_PATH_INVALID,
		  "entry 'bin/l': field 'target' ('x\\u202ey') holds the bidirectional control character U+202E at byte 1" },
		{ "ok", "bin/a\nb", NULL, -FATELF_E_PATH_INVALID,
		  "entry 'bin/a\\x0ab': the path holds the control character U+000A at byte 5" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fatelf_manifest *m = fatelf_manifest_new();
		fatelf_bundle_entry *e;
		fatelf_diag d;
		char *out = (char *)"untouched";
		size_t len = 7;

		m->name = strdup("ok");
		m->version = strdup("1");
		m->summary = strdup(cases[i].summary);
		fatelf_manifest_add(m, "bin", FATELF_ENTRY_DIR)->mode = 0755;
		if (strcmp(cases[i].path, "bin") != 0) {
			e = fatelf_manifest_add(m, cases[i].path, cases[i].link ? FATELF_ENTRY_SYMLINK : FATELF_ENTRY_FILE);
			e->mode = 0644;
			if (cases[i].link)
				e->link_target = strdup(cases[i].link);
		}
		fatelf_diag_clear(&d);
		ck_assert_msg(fatelf_manifest_serialize(m, &out, &len, &d) == cases[i].code, "case %zu: %s", i, d.msg);
		ck_assert_str_eq(d.msg, cases[i].msg);
		ck_assert_str_eq(out, "untouched");
		ck_assert_uint_eq(len, 7);
		fatelf_manifest_free(m);
	}
}
END_TEST

START_TEST(test_add_and_find_many)
{
	fatelf_manifest *m = fatelf_manifest_new();
	char path[32];

	for (int i = 0; i < 5000; i++) {
		snprintf(path, sizeof(path), "f%05d", i);
		ck_assert_ptr_nonnull(fatelf_manifest_add(m, path, FATELF_ENTRY_DIR));
	}
	ck_assert_uint_eq(m->nentries, 5000);
	for (int i = 0; i < 5000; i++) {
		snprintf(path, sizeof(path), "f%05d", i);
		ck_assert_ptr_eq(fatelf_manifest_find(m, path), &m->entries[i]);
	}
	ck_assert_ptr_null(fatelf_manifest_find(m, "f0"));
	ck_assert_ptr_null(fatelf_manifest_find(m, "f050000"));
	fatelf_manifest_free(m);
}
END_TEST

/* Entries added to a parsed manifest land in room parse left for them. */
START_TEST(test_add_after_parse)
{
	fatelf_manifest *m = NULL;
	fatelf_diag d;

	ck_assert_int_eq(fatelf_manifest_parse(canonical, strlen(canonical), NULL, &m, &d), 0);
	for (int i = 0; i < 100; i++) {
		char path[32];

		snprintf(path, sizeof(path), "z%03d", i);
		ck_assert_ptr_nonnull(fatelf_manifest_add(m, path, FATELF_ENTRY_DIR));
	}
	ck_assert_uint_eq(m->nentries, 111);
	ck_assert_str_eq(m->entries[110].path, "z099");
	ck_assert_str_eq(m->entries[0].path, "etc");
	fatelf_manifest_free(m);
}
END_TEST

START_TEST(test_reject_json)
{
	char deep[300];
	size_t n = 0;

	ck_assert_int_eq(parse_text(""), -FATELF_E_MANIFEST_JSON);
	ck_assert_int_eq(parse_text("{\"format\": 1"), -FATELF_E_MANIFEST_JSON);
	ck_assert_int_eq(parse_text("{\"format\": 1,}"), -FATELF_E_MANIFEST_JSON);
	REJECT("\"format\": 1,", "'format': 1,", -FATELF_E_MANIFEST_JSON);
	REJECT("\"size\": 9,", "\"size\": NaN,", -FATELF_E_MANIFEST_JSON);
	REJECT("\"format\": 1,", "\"format\": 1, /* c */", -FATELF_E_MANIFEST_JSON);
	REJECT("\"MIT\"", "\"M\x01IT\"", -FATELF_E_MANIFEST_JSON);
	REJECT("\"MIT\"", "\"\\ud800\"", -FATELF_E_MANIFEST_JSON);
	REJECT("\"MIT\"", "\"\\x41\"", -FATELF_E_MANIFEST_JSON);
	REJECT("  ]\n}\n", "  ]\n}\n{}", -FATELF_E_MANIFEST_JSON);
	REJECT("  ]\n}\n", "  ]\n}\nx", -FATELF_E_MANIFEST_JSON);
	REJECT("\"size\": 9,", "\"size\": 09,", -FATELF_E_MANIFEST_JSON);
	/* An empty key, first of all keys (nothing stored for keys yet), and
	 * twice: a duplicate like any other. */
	ck_assert_int_eq(parse_text("{  \t\"\"\t-\n-}"), -FATELF_E_MANIFEST_JSON);
	ck_assert_int_eq(parse_text("{\"\": 1, \"\": 2}"), -FATELF_E_MANIFEST_JSON);
	/* Duplicate keys, at the top and deep inside. */
	REJECT_MSG("\"format\": 1,", "\"format\": 1, \"format\": 1,", -FATELF_E_MANIFEST_JSON, "twice");
	REJECT("\"size\": 9,", "\"size\": 9, \"size\": 9,", -FATELF_E_MANIFEST_JSON);
	REJECT("\"offset\": 4096,", "\"offset\": 4096, \"offset\": 4096,", -FATELF_E_MANIFEST_JSON);
	/* Nesting: 70 levels. */
	for (int i = 0; i < 70; i++)
		deep[n++] = '[';
	for (int i = 0; i < 70; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	ck_assert_int_eq(parse_text(deep), -FATELF_E_MANIFEST_JSON);
	ck_assert_ptr_nonnull(strstr(last.msg, "deeper"));
}
END_TEST

START_TEST(test_reject_too_big)
{
	size_t max = FATELF_MANIFEST_MAX;
	char *big = malloc(max + 1);

	/* Exactly the maximum is parsed (and then lacks a format). */
	memset(big, ' ', max + 1);
	big[0] = '{';
	big[max - 1] = '}';
	ck_assert_int_eq(parse_lim(big, max, NULL), -FATELF_E_MANIFEST_SCHEMA);
	ck_assert_ptr_nonnull(strstr(last.msg, "missing field 'format'"));
	/* One byte more is refused for its size alone. */
	big[max - 1] = ' ';
	big[max] = '}';
	ck_assert_int_eq(parse_lim(big, max + 1, NULL), -FATELF_E_MANIFEST_TOO_BIG);
	free(big);
}
END_TEST

START_TEST(test_reject_schema)
{
	/* Not an object. */
	ck_assert_int_eq(parse_text("[]"), -FATELF_E_MANIFEST_SCHEMA);
	ck_assert_int_eq(parse_text("\"x\""), -FATELF_E_MANIFEST_SCHEMA);
	/* Unknown fields at every level. */
	REJECT_MSG("\"format\": 1,", "\"format\": 1, \"extra\": 0,", -FATELF_E_MANIFEST_SCHEMA, "unknown field 'extra'");
	REJECT("\"license\": \"MIT\",", "\"license\": \"MIT\", \"maintainer\": \"x\",", -FATELF_E_MANIFEST_SCHEMA);
	REJECT_MSG("\"config\": true", "\"config\": true, \"owner\": \"root\"", -FATELF_E_MANIFEST_SCHEMA,
		   "entry 'etc/game.conf': unknown field 'owner'");
	REJECT("\"header_size\": 56,", "\"header_size\": 56, \"x\": 1,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"offset\": 4096,", "\"offset\": 4096, \"align\": 4096,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"kind\": \"elf\",", "\"kind\": \"elf\", \"header_size\": 56,", -FATELF_E_MANIFEST_SCHEMA);
	/* Fields that belong to another type of entry. */
	REJECT_MSG("\"target\": \"libg.so.1\"", "\"target\": \"libg.so.1\", \"mode\": \"0777\"",
		   -FATELF_E_MANIFEST_SCHEMA, "unknown field 'mode'");
	REJECT("\"path\": \"etc\",\n      \"type\": \"dir\",", "\"path\": \"etc\",\n      \"type\": \"dir\", \"size\": 0,",
	       -FATELF_E_MANIFEST_SCHEMA);
	/* Missing fields. */
	REJECT_MSG("\"name\": \"game\",", "", -FATELF_E_MANIFEST_SCHEMA, "missing field 'name'");
	REJECT_MSG("\"size\": 9,", "", -FATELF_E_MANIFEST_SCHEMA, "entry 'etc/game.conf': missing field 'size'");
	REJECT("\"sha256\": \"" H1 "\",", "", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"target\": \"libg.so.1\"", "\"x\": 1", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"path\": \"etc\",", "", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"format\": 1,", "", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"byte_order\": \"le\",", "", -FATELF_E_MANIFEST_SCHEMA);
	/* Wrong types and values. */
	REJECT_MSG("\"size\": 9,", "\"size\": \"9\",", -FATELF_E_MANIFEST_SCHEMA, "must be an integer");
	REJECT("\"size\": 9,", "\"size\": 9.0,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"size\": 9,", "\"size\": 9e0,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"size\": 9,", "\"size\": -9,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"size\": 9,", "\"size\": 9223372036854775808,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"size\": 9,", "\"size\": 99999999999999999999999,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"size\": 9,", "\"size\": null,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"format\": 1,", "\"format\": \"1\",", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"config\": true", "\"config\": 1", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"type\": \"dir\"", "\"type\": \"fifo\"", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"sha256\": \"" H1 "\"", "\"sha256\": \"" H1 "1\"", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"sha256\": \"" H5 "\"", "\"sha256\": \"ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789\"",
	       -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"word_size\": 64,", "\"word_size\": 2,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"byte_order\": \"le\",", "\"byte_order\": \"little\",", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"machine\": 62,", "\"machine\": 65536,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"osabi\": 0,", "\"osabi\": 256,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"kind\": \"elf\",", "\"kind\": \"coff\",", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"entries\": [", "\"entries\": [ 1,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"targets\": [", "\"targets\": [ 1,", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"package\": {", "\"package\": [], \"p\": {", -FATELF_E_MANIFEST_SCHEMA);
	/* Optional texts are left out, never empty; and never hold controls. */
	REJECT_MSG("\"vendor\": \"Example Games\"", "\"vendor\": \"\"", -FATELF_E_MANIFEST_SCHEMA, "empty");
	REJECT("\"vendor\": \"Example Games\"", "\"vendor\": \"Ex\\nample\"", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"vendor\": \"Example Games\"", "\"vendor\": \"Ex\\u0000ample\"", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"vendor\": \"Example Games\"", "\"vendor\": \"Ex\\u0085ample\"", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"vendor\": \"Example Games\"", "\"vendor\": \"Ex\xc3" "ample\"", -FATELF_E_MANIFEST_SCHEMA);
	/* Target names are the full canonical form. */
	REJECT_MSG("\"target\": \"" T_X86 "\"\n      }", "\"target\": \"amd64\"\n      }", -FATELF_E_MANIFEST_SCHEMA,
		   "does not fix");
	REJECT_MSG("\"target\": \"" T_X86 "\"\n      }", "\"target\": \"64bits:x86_64:le:sysv:osabiver0\"\n      }",
		   -FATELF_E_MANIFEST_SCHEMA, "canonical");
	REJECT("\"target\": \"" T_X86 "\"\n      }", "\"target\": \"bogus\"\n      }", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"target\": \"" T_X86 "\"\n      }", "\"target\": \"record0\"\n      }", -FATELF_E_MANIFEST_SCHEMA);
	REJECT("\"" T_X86 "\",\n    \"" T_ARM "\"", "\"" T_X86 "\",\n    \"arm64\"", -FATELF_E_MANIFEST_SCHEMA);
	/* Entries must be sorted (a duplicate is a different error). */
	REJECT_MSG("\"path\": \"opt/game/lib/libg.so.1\"", "\"path\": \"opt/game/lib/libf.so\"",
		   -FATELF_E_MANIFEST_SCHEMA, "comes after");
	/* A key holding NUL is not a field name. */
	REJECT("\"format\": 1,", "\"format\": 1, \"format\\u0000x\": 1,", -FATELF_E_MANIFEST_SCHEMA);
}
END_TEST

START_TEST(test_reject_format)
{
	REJECT_MSG("\"format\": 1,", "\"format\": 3,", -FATELF_E_MANIFEST_FORMAT, "format 3");
	REJECT("\"format\": 1,", "\"format\": 0,", -FATELF_E_MANIFEST_FORMAT);
	/* A later format may add fields: its version is what gets reported. */
	REJECT("\"format\": 1,", "\"format\": 3, \"new_field\": {},", -FATELF_E_MANIFEST_FORMAT);
	/* Format 2 is only for per-arch entries: one canonical form each. */
	REJECT_MSG("\"format\": 1,", "\"format\": 2,", -FATELF_E_MANIFEST_FORMAT, "without a per-arch entry");
}
END_TEST

/* Format 2: "depends" parses, serializes back to the same bytes, and
 * every rule of its entries is checked. */
#define HOMEPAGE "\"homepage\": \"https://example.org/game\""
static char *with_depends(const char *deps, const char *format)
{
	char *a = mutate("\"format\": 1,", format), *b;
	const char *at = strstr(a, HOMEPAGE);
	size_t pre = (size_t)(at - a) + strlen(HOMEPAGE);

	b = malloc(strlen(a) + strlen(deps) + 64);
	ck_assert_ptr_nonnull(b);
	memcpy(b, a, pre);
	snprintf(b + pre, strlen(a) + strlen(deps) + 64 - pre, ",\n    \"depends\": %s%s", deps, a + pre);
	free(a);
	return b;
}

static int parse_depends(const char *deps, const char *format)
{
	char *s = with_depends(deps, format);
	int r = parse_text(s);

	free(s);
	return r;
}

START_TEST(test_depends)
{
	char *text = with_depends("[\n      \"libfoo (>= 1.2)\",\n      \"zlib\"\n    ]", "\"format\": 2,");
	fatelf_manifest *m = NULL;
	fatelf_depend dep;
	char *out = NULL;
	size_t len = 0;
	fatelf_diag d;

	ck_assert_msg(fatelf_manifest_parse(text, strlen(text), NULL, &m, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(m->ndepends, 2);
	ck_assert_str_eq(m->depends[0].name, "libfoo");
	ck_assert_int_eq(m->depends[0].op, FATELF_DEP_GE);
	ck_assert_str_eq(m->depends[0].version, "1.2");
	ck_assert_str_eq(m->depends[1].name, "zlib");
	ck_assert_int_eq(m->depends[1].op, FATELF_DEP_ANY);
	ck_assert_ptr_null(m->depends[1].version);
	ck_assert_msg(fatelf_manifest_serialize(m, &out, &len, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(out, text);
	free(out);
	fatelf_manifest_free(m);
	free(text);

	/* A format-1 reader refuses the whole manifest by its format. */
	text = with_depends("[\"zlib\"]", "\"format\": 2,");
	fatelf_bundle_limits lim;
	fatelf_bundle_limits_default(&lim);
	lim.max_format = 1;
	ck_assert_int_eq(parse_lim(text, strlen(text), &lim), -FATELF_E_MANIFEST_FORMAT);
	free(text);

#define DEP_REJECT(deps, format, code, want) do { \
		int _r = parse_depends(deps, format); \
		ck_assert_msg(_r == (code), "%s: got %s (%s)", deps, fatelf_error_name(_r), last.msg); \
		ck_assert_msg(strstr(last.msg, want) != NULL, "message '%s' lacks '%s'", last.msg, want); \
	} while (0)
	DEP_REJECT("[\"zlib\"]", "\"format\": 1,", -FATELF_E_MANIFEST_FORMAT, "needs format 2");
	DEP_REJECT("[]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "is empty");
	DEP_REJECT("\"zlib\"", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "must be an array");
	DEP_REJECT("[1]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "depends[0] must be a string");
	DEP_REJECT("[\"zlib\", \"libfoo\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "out of order");
	DEP_REJECT("[\"zlib\", \"zlib (= 1)\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "named twice");
	DEP_REJECT("[\"game\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "the package itself");
	DEP_REJECT("[\"zlib (=> 1)\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "operator");
	DEP_REJECT("[\"zlib(>= 1)\"]", "\"format\": 2,", -FATELF_E_PKG_NAME, "depends[0]");
	DEP_REJECT("[\"zlib  (>= 1)\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "NAME (OP VERSION)");
	DEP_REJECT("[\"zlib (>= 1 )\"]", "\"format\": 2,", -FATELF_E_PKG_VERSION, "dpkg version");
	DEP_REJECT("[\"zlib (>= a1)\"]", "\"format\": 2,", -FATELF_E_PKG_VERSION, "dpkg version");
	DEP_REJECT("[\"zlib (>=)\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "NAME (OP VERSION)");
	DEP_REJECT("[\"Zlib\"]", "\"format\": 2,", -FATELF_E_PKG_NAME, "package name");
	DEP_REJECT("[\"zlib (>= 1)x\"]", "\"format\": 2,", -FATELF_E_MANIFEST_SCHEMA, "NAME (OP VERSION)");
#undef DEP_REJECT

	/* dpkg's operators by dpkg's ordering. */
	ck_assert_int_eq(fatelf_depend_parse("bb (<< 2)", 9, &dep, NULL, 0), 0);
	ck_assert(fatelf_depend_satisfied_by(&dep, "1.9"));
	ck_assert(!fatelf_depend_satisfied_by(&dep, "2"));
	ck_assert(fatelf_depend_satisfied_by(&dep, "2~rc1"));
	fatelf_depend_clear(&dep);
	ck_assert_int_eq(fatelf_depend_parse("bb (>= 1:0)", 11, &dep, NULL, 0), 0);
	ck_assert(!fatelf_depend_satisfied_by(&dep, "9.9"));
	ck_assert(fatelf_depend_satisfied_by(&dep, "1:0"));
	ck_assert(!fatelf_depend_satisfied_by(&dep, NULL));
	fatelf_depend_clear(&dep);
	ck_assert_int_eq(fatelf_depend_parse("bb (= 2-1)", 10, &dep, NULL, 0), 0);
	ck_assert(fatelf_depend_satisfied_by(&dep, "2-1"));
	ck_assert(!fatelf_depend_satisfied_by(&dep, "2-2"));
	fatelf_depend_clear(&dep);
	ck_assert_int_eq(fatelf_depend_parse("bb (>> 2)", 9, &dep, NULL, 0), 0);
	ck_assert(!fatelf_depend_satisfied_by(&dep, "2"));
	ck_assert(fatelf_depend_satisfied_by(&dep, "2.0.1"));
	fatelf_depend_clear(&dep);
	ck_assert_int_eq(fatelf_depend_parse("bb (<= 2)", 9, &dep, NULL, 0), 0);
	ck_assert(fatelf_depend_satisfied_by(&dep, "2"));
	ck_assert(!fatelf_depend_satisfied_by(&dep, "2.0.1"));
	fatelf_depend_clear(&dep);
}
END_TEST

/* Format 2: per-arch entries parse, and serialize back to the same bytes. */
START_TEST(test_per_arch_canonical)
{
	fatelf_manifest *m = NULL, *m2 = NULL;
	char *json = NULL;
	size_t len = 0;
	fatelf_diag d = { 0 };
	const fatelf_bundle_entry *e;
	fatelf_pattern p;

	ck_assert_int_eq(fatelf_manifest_parse(canonical2, strlen(canonical2), NULL, &m, &d), 0);
	ck_assert_uint_eq(m->format, 2);
	ck_assert_uint_eq(m->nentries, 8);
	e = fatelf_manifest_find(m, "usr/include/cfg.h");
	ck_assert_ptr_eq(e, &m->entries[2]);
	ck_assert_uint_eq(fatelf_manifest_path_count(m, e), 2);
	ck_assert_uint_eq(e[0].ntargets, 1);
	ck_assert_uint_eq(e[0].targets[0].machine, 62);
	ck_assert_uint_eq(e[1].targets[0].machine, 183);
	ck_assert_uint_eq(e[1].size, 4);
	ck_assert(!fatelf_entry_for_target(&e[0], &e[1].targets[0]));
	ck_assert(fatelf_entry_for_target(&e[1], &e[1].targets[0]));
	ck_assert(fatelf_entry_for_target(&m->entries[0], &e[1].targets[0]));
	ck_assert_int_eq(fatelf_pattern_parse("arm64", &p, &d), 0);
	ck_assert(fatelf_entry_for_pattern(&e[1], &p));
	ck_assert(!fatelf_entry_for_pattern(&e[0], &p));
	ck_assert_uint_eq(fatelf_manifest_path_count(m, &m->entries[0]), 1);
	ck_assert_int_eq(fatelf_manifest_serialize(m, &json, &len, &d), 0);
	ck_assert_uint_eq(len, strlen(canonical2));
	ck_assert_mem_eq(json, canonical2, len);
	ck_assert_int_eq(fatelf_manifest_parse(json, len, NULL, &m2, &d), 0);
	manifests_equal(m, m2);
	/* Without its per-arch entries the same model is format 1 again. */
	for (size_t i = 0; i < m->nentries; i++) {
		free(m->entries[i].targets);
		m->entries[i].targets = NULL;
		m->entries[i].ntargets = 0;
	}
	free(json);
	json = NULL;
	ck_assert_int_eq(fatelf_manifest_serialize(m, &json, &len, &d), 0);
	ck_assert(strncmp(json, "{\n  \"format\": 1,\n", 17) == 0);
	free(json);
	fatelf_manifest_free(m);
	fatelf_manifest_free(m2);
}
END_TEST

/* Which per-arch entries a rule over the bundle's per-arch targets takes. */
static bool selected(const fatelf_manifest *m, const fatelf_header *h, const fatelf_keepset *k,
		     const fatelf_bundle_entry *e)
{
	bool take[16];

	ck_assert_uint_le(m->nentries, 16);
	ck_assert_int_eq(fatelf_manifest_select(m, h, k, take), 0);
	return take[e - m->entries];
}
#define SEL(e) selected(m, &h, &k, (e))
START_TEST(test_per_arch_select)
{
	fatelf_manifest *m = NULL;
	fatelf_diag d = { 0 };
	fatelf_header h;
	fatelf_keepset k;
	fatelf_host arm;
	const fatelf_bundle_entry *cfg, *dir;

	ck_assert_int_eq(fatelf_manifest_parse(canonical2, strlen(canonical2), NULL, &m, &d), 0);
	cfg = fatelf_manifest_find(m, "usr/include/cfg.h");
	dir = fatelf_manifest_find(m, "usr/lib/aarch64-linux-gnu");
	ck_assert_int_eq(fatelf_manifest_per_arch_header(m, NULL, &h, &d), 0);
	ck_assert_uint_eq(h.nrecords, 2);
	ck_assert_uint_eq(h.records[0].target.machine, 62);
	ck_assert_uint_eq(h.records[1].target.machine, 183);
	/* aarch64 only */
	fatelf_keep_clear(&k);
	fatelf_keep_add(&k, 1);
	ck_assert(SEL(&m->entries[0]));
	ck_assert(!SEL(&cfg[0]));
	ck_assert(SEL(&cfg[1]));
	ck_assert(SEL(dir));
	/* x86_64 only: no aarch64 directory */
	fatelf_keep_clear(&k);
	fatelf_keep_add(&k, 0);
	ck_assert(SEL(&cfg[0]));
	ck_assert(!SEL(&cfg[1]));
	ck_assert(!SEL(dir));
	/* both: a path of its own is taken, a shared path once (the first) */
	fatelf_keep_add(&k, 1);
	ck_assert(SEL(&cfg[0]));
	ck_assert(!SEL(&cfg[1]));
	ck_assert(SEL(dir));
	/* an aarch64 host's order puts its own target first */
	ck_assert_int_eq(fatelf_host_from_uname("aarch64", 0, &arm), 0);
	ck_assert_int_eq(fatelf_manifest_per_arch_header(m, &arm, &h, &d), 0);
	ck_assert_uint_eq(h.nrecords, 2);
	ck_assert_uint_eq(h.records[0].target.machine, 183);
	ck_assert(!SEL(&cfg[0]));
	ck_assert(SEL(&cfg[1]));
	/* nothing kept: no per-arch entry, every plain one */
	fatelf_keep_clear(&k);
	ck_assert(!SEL(&cfg[0]));
	ck_assert(!SEL(&cfg[1]));
	ck_assert(!SEL(dir));
	ck_assert(SEL(&m->entries[1]));
	fatelf_manifest_free(m);
}
END_TEST

START_TEST(test_per_arch_format1_reader)
{
	fatelf_bundle_limits lim = { 0 };
	char *s;

	/* A reader of format 1 only refuses format 2 as a format. */
	fatelf_bundle_limits_default(&lim);
	lim.max_format = 1;
	ck_assert_int_eq(parse_lim(canonical2, strlen(canonical2), &lim), -FATELF_E_MANIFEST_FORMAT);
	ck_assert(strstr(last.msg, "format 2") != NULL);
	/* "targets" on an entry of a format-1 manifest. */
	s = mutate_text(canonical2, "\"format\": 2", "\"format\": 1");
	ck_assert_int_eq(parse_text(s), -FATELF_E_MANIFEST_FORMAT);
	ck_assert_msg(strstr(last.msg, "entry 'usr/include/cfg.h'") && strstr(last.msg, "needs format 2"),
		      "%s", last.msg);
	free(s);
}
END_TEST

START_TEST(test_per_arch_rules)
{
	/* Known, canonical target names, sorted, each once, at least one. */
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\n        \"bogus\"\n      ]",
		-FATELF_E_MANIFEST_SCHEMA, "entry 'usr/include/cfg.h': targets entry 'bogus' is not a target name");
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\"amd64\"]",
		-FATELF_E_MANIFEST_SCHEMA, "does not fix");
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": []",
		-FATELF_E_MANIFEST_SCHEMA, "entry 'usr/include/cfg.h': field 'targets' is empty");
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\"" T_X86 "\", \"" T_X86 "\"]",
		-FATELF_E_MANIFEST_SCHEMA, "listed twice");
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\"" T_ARM "\", \"" T_X86 "\"]",
		-FATELF_E_MANIFEST_SCHEMA, "out of order");
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [1]",
		-FATELF_E_MANIFEST_SCHEMA, "targets[0] must be a string");
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": \"" T_X86 "\"",
		-FATELF_E_MANIFEST_SCHEMA, "field 'targets' must be an array");
	/* Entries that share a path: disjoint targets, all per-arch, one type. */
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\"" T_X86 "\", \"" T_ARM "\"]",
		-FATELF_E_PATH_DUPLICATE, "entry 'usr/include/cfg.h': target '" T_ARM "' is in two of its per-arch entries");
	REJECT2("\"type\": \"file\",\n      \"targets\": [\n        \"" T_X86 "\"\n      ],",
		"\"type\": \"file\",", -FATELF_E_PATH_DUPLICATE, "entry 'usr/include/cfg.h': listed twice");
	REJECT2("\"type\": \"file\",\n      \"targets\": [\n        \"" T_X86 "\"\n      ],\n      \"mode\": \"0644\",\n      \"size\": 3,\n      \"sha256\": \"" H1 "\"",
		"\"type\": \"symlink\", \"targets\": [\"" T_X86 "\"], \"target\": \"x\"",
		-FATELF_E_PATH_DUPLICATE, "is a symlink in one per-arch entry and a file in another");
	/* Sorted by first target where they share a path. */
	REJECT2("\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\"" T_ARM "\"]",
		-FATELF_E_PATH_DUPLICATE, "in two of its per-arch entries");
	{
		char *a = mutate_text(canonical2, "\"size\": 3,\n      \"sha256\": \"" H1 "\"",
				      "\"size\": 3,\n      \"sha256\": \"" H4 "\"");
		char *b = mutate_text(a, "\"targets\": [\n        \"" T_X86 "\"\n      ]", "\"targets\": [\"ARMTMP\"]");
		char *c = mutate_text(b, "\"targets\": [\n        \"" T_ARM "\"\n      ],\n      \"mode\": \"0644\",\n      \"size\": 4",
				      "\"targets\": [\"" T_X86 "\"],\n      \"mode\": \"0644\",\n      \"size\": 4");
		char *e = mutate_text(c, "ARMTMP", T_ARM);

		ck_assert_int_eq(parse_text(e), -FATELF_E_MANIFEST_SCHEMA);
		ck_assert_msg(strstr(last.msg, "sorted by their first target"), "%s", last.msg);
		free(a);
		free(b);
		free(c);
		free(e);
	}
	/* A per-arch dir's children are for its targets only. */
	REJECT2("\"path\": \"usr/lib/aarch64-linux-gnu/libx.so\",\n      \"type\": \"symlink\",\n      \"targets\": [\n        \"" T_ARM "\"\n      ],",
		"\"path\": \"usr/lib/aarch64-linux-gnu/libx.so\",\n      \"type\": \"symlink\",",
		-FATELF_E_PATH_PARENT, "entry 'usr/lib/aarch64-linux-gnu/libx.so': parent 'usr/lib/aarch64-linux-gnu' is per-arch and has no entry for every target");
	REJECT2("\"path\": \"usr/lib/aarch64-linux-gnu/libx.so\",\n      \"type\": \"symlink\",\n      \"targets\": [\n        \"" T_ARM "\"\n      ],",
		"\"path\": \"usr/lib/aarch64-linux-gnu/libx.so\",\n      \"type\": \"symlink\",\n      \"targets\": [\"" T_X86 "\"],",
		-FATELF_E_PATH_PARENT, "has no entry for " T_X86);
	/* "targets" at the top is the union, entries' targets included. */
	REJECT2("\"targets\": [\n    \"" T_X86 "\",\n    \"" T_ARM "\"\n  ]", "\"targets\": [\n    \"" T_ARM "\"\n  ]",
		-FATELF_E_RECORDS, "does not list '" T_X86 "', a target of entry 'usr/include/cfg.h'");
}
END_TEST

START_TEST(test_reject_pkg_name)
{
	REJECT_MSG("\"name\": \"game\"", "\"name\": \"Game\"", -FATELF_E_PKG_NAME, "'Game'");
	REJECT("\"name\": \"game\"", "\"name\": \"g\"", -FATELF_E_PKG_NAME);
	REJECT("\"name\": \"game\"", "\"name\": \"-game\"", -FATELF_E_PKG_NAME);
	REJECT("\"name\": \"game\"", "\"name\": \"ga_me\"", -FATELF_E_PKG_NAME);
	REJECT("\"name\": \"game\"", "\"name\": \"ga\\u0000me\"", -FATELF_E_PKG_NAME);
	REJECT("\"name\": \"game\"", "\"name\": 7", -FATELF_E_MANIFEST_SCHEMA);
}
END_TEST

START_TEST(test_reject_pkg_version)
{
	REJECT_MSG("\"version\": \"1:1.2~rc1-1\"", "\"version\": \"1.0-\"", -FATELF_E_PKG_VERSION, "'1.0-'");
	REJECT("\"version\": \"1:1.2~rc1-1\"", "\"version\": \"a1\"", -FATELF_E_PKG_VERSION);
	REJECT("\"version\": \"1:1.2~rc1-1\"", "\"version\": \"\"", -FATELF_E_PKG_VERSION);
	REJECT("\"version\": \"1:1.2~rc1-1\"", "\"version\": \"1.0 1\"", -FATELF_E_PKG_VERSION);
}
END_TEST

START_TEST(test_reject_path_absolute)
{
	REJECT_MSG("\"path\": \"etc\"", "\"path\": \"/etc\"", -FATELF_E_PATH_ABSOLUTE, "'/etc'");
}
END_TEST

START_TEST(test_reject_path_dotdot)
{
	REJECT_MSG("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/../../../etc/shadow\"",
		   -FATELF_E_PATH_DOTDOT, "'..'");
	REJECT("\"path\": \"etc\"", "\"path\": \"..\"", -FATELF_E_PATH_DOTDOT);
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/..\"", -FATELF_E_PATH_DOTDOT);
}
END_TEST

START_TEST(test_reject_path_invalid)
{
	REJECT_MSG("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\\n2\"", -FATELF_E_PATH_INVALID,
		   "'opt/game/bin/su\\x0a2'");
	/* The message never carries the raw control byte. */
	ck_assert_ptr_null(strchr(last.msg, '\n'));
	REJECT_MSG("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\xff\"", -FATELF_E_PATH_INVALID,
		   "\\xff");
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\xc0\xaf\"", -FATELF_E_PATH_INVALID);
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\xed\xa0\x80\"", -FATELF_E_PATH_INVALID);
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\\u001b[31m\"", -FATELF_E_PATH_INVALID);
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\\u007f\"", -FATELF_E_PATH_INVALID);
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\\u0000x\"", -FATELF_E_PATH_INVALID);
	REJECT_MSG("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game//su2\"", -FATELF_E_PATH_INVALID, "empty");
	REJECT_MSG("\"path\": \"opt/game/lib\"", "\"path\": \"opt/game/lib/\"", -FATELF_E_PATH_INVALID, "ends with '/'");
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/./su2\"", -FATELF_E_PATH_INVALID);
	REJECT("\"path\": \"etc\"", "\"path\": \"\"", -FATELF_E_PATH_INVALID);
	/* A bidirectional control in a path, a symlink target or a text; a
	 * C1 control in a text. */
	REJECT_MSG("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\xe2\x80\xae" "2\"",
		   -FATELF_E_PATH_INVALID, "'opt/game/bin/su\\u202e2': the path holds the bidirectional control character U+202E");
	ck_assert_ptr_null(strstr(last.msg, "\xe2\x80\xae"));
	REJECT("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/su\\u2066\"", -FATELF_E_PATH_INVALID);
	REJECT("\"target\": \"libg.so.1\"", "\"target\": \"lib\\u202eg\"", -FATELF_E_PATH_INVALID);
	REJECT_MSG("\"summary\": \"A game", "\"summary\": \"A \xe2\x81\xa6game", -FATELF_E_MANIFEST_SCHEMA,
		   "field 'summary' ('A \\u2066game");
	REJECT_MSG("\"summary\": \"A game", "\"summary\": \"A \\u0085game", -FATELF_E_MANIFEST_SCHEMA,
		   "holds the control character U+0085");
	REJECT("\"vendor\": \"Example", "\"vendor\": \"\\u200fExample", -FATELF_E_MANIFEST_SCHEMA);
	/* An entry in the temp names' namespace: the rule the installer
	 * refuses it by, named as the entry. */
	REJECT_MSG("\"path\": \"opt/game/bin/su2\"", "\"path\": \"opt/game/bin/.fatelf.2.1\"",
		   -ENGINE_E_NAME_RESERVED, "entry 'opt/game/bin/.fatelf.2.1': the path has a component starting with \".fatelf.\"");
	ck_assert_str_eq(last.subject, "opt/game/bin/.fatelf.2.1");
	/* Symlink targets: anything but empty, NUL or control bytes. */
	REJECT("\"target\": \"libg.so.1\"", "\"target\": \"\"", -FATELF_E_PATH_INVALID);
	REJECT("\"target\": \"libg.so.1\"", "\"target\": \"lib\\u0000g\"", -FATELF_E_PATH_INVALID);
	REJECT("\"target\": \"libg.so.1\"", "\"target\": \"lib\\ng\"", -FATELF_E_PATH_INVALID);
	REJECT("\"target\": \"libg.so.1\"", "\"target\": \"lib\xfeg\"", -FATELF_E_PATH_INVALID);
	/* Absolute and '..' symlink targets are fine: never followed. */
	{
		char *s = mutate("\"target\": \"libg.so.1\"", "\"target\": \"../../../../etc/passwd\"");

		ck_assert_int_eq(parse_text(s), 0);
		free(s);
		s = mutate("\"target\": \"libg.so.1\"", "\"target\": \"/etc/passwd\"");
		ck_assert_int_eq(parse_text(s), 0);
		free(s);
	}
}
END_TEST

START_TEST(test_reject_path_duplicate)
{
	REJECT_MSG("\"path\": \"opt/game/lib/libg.so.1\"", "\"path\": \"opt/game/lib/libg.so\"",
		   -FATELF_E_PATH_DUPLICATE, "entry 'opt/game/lib/libg.so': listed twice");
	/* Unsorted and duplicated: the duplicate is what is reported. */
	REJECT("\"path\": \"opt/game/lib/libg.so.1\"", "\"path\": \"etc\"", -FATELF_E_PATH_DUPLICATE);
}
END_TEST

START_TEST(test_reject_path_symlink)
{
	/* An entry beneath the bundle's own symlink: the symlink could point
	 * anywhere, so writing through it is never allowed. */
	REJECT_MSG("\"path\": \"opt/game/lib/libg.so.1\"", "\"path\": \"opt/game/lib/libg.so/x\"",
		   -FATELF_E_PATH_SYMLINK, "entry 'opt/game/lib/libg.so/x': passes through symlink 'opt/game/lib/libg.so'");
	/* Deeper below it, with the parent missing too: the symlink is named. */
	REJECT("\"path\": \"opt/game/lib/libg.so.1\"", "\"path\": \"opt/game/lib/libg.so/a/b\"",
	       -FATELF_E_PATH_SYMLINK);
}
END_TEST

START_TEST(test_reject_path_parent)
{
	REJECT_MSG("{\n      \"path\": \"opt/game/lib\",\n      \"type\": \"dir\",\n      \"mode\": \"1777\"\n    },\n", "",
		   -FATELF_E_PATH_PARENT, "entry 'opt/game/lib/libg.so': parent 'opt/game/lib' is not listed");
	/* A file where a dir should be: make the symlink a file first. */
	{
		char *s1 = mutate("\"type\": \"symlink\",\n      \"target\": \"libg.so.1\"",
				  "\"type\": \"file\", \"mode\": \"0644\", \"size\": 0, \"sha256\": \"" H7 "\"");
		char *at = strstr(s1, "\"opt/game/lib/libg.so.1\"");

		ck_assert_ptr_nonnull(at);
		/* "libg.so.1" -> "libg.so/1": same length, now beneath the file. */
		at[strlen("\"opt/game/lib/libg.so")] = '/';
		ck_assert_int_eq(parse_text(s1), -FATELF_E_PATH_PARENT);
		ck_assert_ptr_nonnull(strstr(last.msg, "entry 'opt/game/lib/libg.so/1': parent 'opt/game/lib/libg.so' is a file"));
		free(s1);
	}
	/* Every ancestor counts, not only the nearest. */
	REJECT("{\n      \"path\": \"opt\",\n      \"type\": \"dir\",\n      \"mode\": \"0755\"\n    },\n", "",
	       -FATELF_E_PATH_PARENT);
}
END_TEST

START_TEST(test_reject_mode)
{
	REJECT_MSG("\"mode\": \"4755\",\n      \"setid\": true,", "\"mode\": \"4755\",", -FATELF_E_MODE,
		   "does not declare");
	REJECT("\"mode\": \"0640\"", "\"mode\": \"2640\"", -FATELF_E_MODE);
	REJECT("\"mode\": \"2775\",\n      \"setid\": true", "\"mode\": \"2775\"", -FATELF_E_MODE);
	REJECT_MSG("\"mode\": \"4755\"", "\"mode\": \"0755\"", -FATELF_E_MODE, "no setuid or setgid bit");
	REJECT("\"mode\": \"0640\"", "\"mode\": \"640\"", -FATELF_E_MODE);
	REJECT("\"mode\": \"0640\"", "\"mode\": \"10640\"", -FATELF_E_MODE);
	REJECT("\"mode\": \"0640\"", "\"mode\": \"0680\"", -FATELF_E_MODE);
	REJECT("\"mode\": \"0640\"", "\"mode\": \"\"", -FATELF_E_MODE);
	REJECT("\"mode\": \"0640\"", "\"mode\": 416", -FATELF_E_MANIFEST_SCHEMA);
}
END_TEST

START_TEST(test_reject_limits)
{
	fatelf_bundle_limits lim;
	char *s;

	fatelf_bundle_limits_default(&lim);
	ck_assert_uint_eq(lim.max_path, 4095);
	ck_assert_uint_eq(lim.max_entries, 200000);
	ck_assert_uint_eq(lim.max_total, 64ull << 30);
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), 0);

	/* Path length: "opt/game/lib/libg.so.1" is 22 bytes. */
	lim.max_path = 21;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), -FATELF_E_LIMIT);
	ck_assert_ptr_nonnull(strstr(last.msg, "the limit is 21"));
	lim.max_path = 22;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), 0);
	fatelf_bundle_limits_default(&lim);

	/* Entry count: 11 entries. */
	lim.max_entries = 10;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), -FATELF_E_LIMIT);
	ck_assert_ptr_nonnull(strstr(last.msg, "11 entries"));
	/* The same when the key is spelled with an escape the scanner does
	 * not decode: the parsed array is counted again. */
	s = mutate("\"entries\"", "\"entr\\u0069es\"");
	ck_assert_int_eq(parse_lim(s, strlen(s), &lim), -FATELF_E_LIMIT);
	free(s);
	lim.max_entries = 11;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), 0);
	fatelf_bundle_limits_default(&lim);

	/* Total size: 29019 bytes. */
	lim.max_total = 29018;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), -FATELF_E_LIMIT);
	lim.max_total = 29019;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), 0);
	/* One file past the default total of 64 GiB. */
	REJECT("\"size\": 9,", "\"size\": 9223372036854775807,", -FATELF_E_LIMIT);

	/* A component longer than 255 bytes. */
	{
		char from[] = "\"path\": \"opt/game/bin/su2\"";
		char to[400];

		snprintf(to, sizeof(to), "\"path\": \"opt/game/bin/%0256d\"", 0);
		REJECT(from, to, -FATELF_E_LIMIT);
	}
}
END_TEST

START_TEST(test_reject_link_target_limit)
{
	fatelf_bundle_limits lim;

	fatelf_bundle_limits_default(&lim);
	/* Paths are at most 22 bytes; the symlink target 9. */
	lim.max_path = 22;
	ck_assert_int_eq(parse_lim(canonical, strlen(canonical), &lim), 0);
	{
		char *s = mutate("\"target\": \"libg.so.1\"", "\"target\": \"libg.so.1.0.0.0.0.0.0.0.0\"");

		ck_assert_int_eq(parse_lim(s, strlen(s), &lim), -FATELF_E_LIMIT);
		ck_assert_ptr_nonnull(strstr(last.msg, "symlink target"));
		free(s);
	}
}
END_TEST

START_TEST(test_reject_records)
{
	/* The message names the entry, the record and the rule. */
	REJECT_MSG("\"offset\": 12288,", "\"offset\": 4096,", -FATELF_E_RECORDS,
		   "entry 'opt/game/bin/game': record 1 (" T_ARM "): offset 0x1000 overlaps record 0");
	ck_assert_int_eq(last.record, 1);
	REJECT_MSG("\"offset\": 12288,", "\"offset\": 8000,", -FATELF_E_RECORDS, "overlaps record 0");
	REJECT_MSG("\"header_size\": 56,", "\"header_size\": 32,", -FATELF_E_RECORDS, "header_size is 32");
	REJECT("\"header_size\": 56,", "\"header_size\": 100000,", -FATELF_E_RECORDS);
	REJECT_MSG("\"offset\": 4096,", "\"offset\": 40,", -FATELF_E_RECORDS, "inside the 56-byte header table");
	REJECT_MSG("\"size\": 6000,", "\"size\": 7713,", -FATELF_E_RECORDS, "past the file's 20000 bytes");
	REJECT("\"size\": 6000,", "\"size\": 7712,", 0);
	REJECT("\"size\": 6000,", "\"size\": 9223372036854775807,", -FATELF_E_RECORDS);
	REJECT("\"size\": 5000,", "\"size\": 0,", -FATELF_E_RECORDS);
	/* Two records for one target. */
	REJECT_MSG("\"target\": \"" T_ARM "\",\n            \"machine\": 183,",
		   "\"target\": \"" T_X86 "\",\n            \"machine\": 62,", -FATELF_E_RECORDS, "same target as record 0");
	/* The numbers must agree with the name. */
	REJECT_MSG("\"machine\": 183,", "\"machine\": 62,", -FATELF_E_RECORDS, "disagree");
	REJECT("\"word_size\": 64,", "\"word_size\": 32,", -FATELF_E_RECORDS);
	REJECT("\"byte_order\": \"le\",", "\"byte_order\": \"be\",", -FATELF_E_RECORDS);
	REJECT("\"osabi_version\": 0,", "\"osabi_version\": 1,", -FATELF_E_RECORDS);
	REJECT("\"osabi\": 0,", "\"osabi\": 3,", -FATELF_E_RECORDS);
	/* Record counts. */
	REJECT("\"records\": [", "\"records\": [], \"r\": [", -FATELF_E_RECORDS);
	/* "targets" is exactly the union, sorted. */
	REJECT_MSG("\"" T_X86 "\",\n    \"" T_ARM "\"", "\"" T_X86 "\"", -FATELF_E_RECORDS,
		   "does not list '" T_ARM "', a target of entry 'opt/game/bin/game'");
	REJECT_MSG("\"" T_X86 "\",\n    \"" T_ARM "\"",
		   "\"" T_X86 "\",\n    \"" T_ARM "\",\n    \"riscv:64bits:le:sysv:osabiver0\"", -FATELF_E_RECORDS,
		   "which no entry has");
	REJECT_MSG("\"" T_X86 "\",\n    \"" T_ARM "\"", "\"" T_ARM "\",\n    \"" T_X86 "\"", -FATELF_E_RECORDS,
		   "out of order");
	REJECT_MSG("\"" T_X86 "\",\n    \"" T_ARM "\"", "\"" T_X86 "\",\n    \"" T_X86 "\",\n    \"" T_ARM "\"",
		   -FATELF_E_RECORDS, "twice");
}
END_TEST

/* 256 records: more than a FatELF can hold. */
START_TEST(test_reject_too_many_records)
{
	size_t cap = 256 * 400 + 4096, n = 0;
	char *s = malloc(cap);

	n += (size_t)snprintf(s + n, cap - n,
			      "{\"format\":1,\"package\":{\"name\":\"xx\",\"version\":\"1\"},\"targets\":[],"
			      "\"entries\":[{\"path\":\"f\",\"type\":\"file\",\"mode\":\"0755\",\"size\":99999999,"
			      "\"sha256\":\"" H1 "\",\"elf\":{\"kind\":\"fatelf\",\"header_size\":6128,\"records\":[");
	for (int i = 0; i < 256; i++)
		n += (size_t)snprintf(s + n, cap - n,
				      "%s{\"target\":\"em%d:64bits:le:sysv:osabiver0\",\"machine\":%d,\"osabi\":0,"
				      "\"osabi_version\":0,\"word_size\":64,\"byte_order\":\"le\",\"offset\":%d,"
				      "\"size\":4096,\"sha256\":\"" H1 "\"}", i ? "," : "", 1000 + i, 1000 + i,
				      8192 + 4096 * i);
	n += (size_t)snprintf(s + n, cap - n, "]}}]}");
	ck_assert_uint_lt(n, cap);
	ck_assert_int_eq(parse_text(s), -FATELF_E_RECORDS);
	ck_assert_msg(strstr(last.msg, "1 to 255 records") != NULL, "%s", last.msg);
	free(s);
}
END_TEST

static long maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A text of n tiny dir entries (about 45 bytes each). */
static char *many_entries(size_t n, size_t *ret_len)
{
	size_t cap = 200 + n * 48, len = 0;
	char *s = malloc(cap);

	ck_assert_ptr_nonnull(s);
	len += (size_t)snprintf(s, cap, "{\"format\":1,\"package\":{\"name\":\"xx\",\"version\":\"1\"},"
				"\"targets\":[],\"entries\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s{\"path\":\"d%07zu\",\"type\":\"dir\",\"mode\":\"0755\"}",
					i ? "," : "", i);
	len += (size_t)snprintf(s + len, cap - len, "]}");
	ck_assert_uint_lt(len, cap);
	*ret_len = len;
	return s;
}

/* 3 million entries: 141 MB of text, refused by its size at once. */
START_TEST(test_million_entries_too_big)
{
	size_t len;
	char *s = many_entries(3000000, &len);
	long before = maxrss_kib();

	ck_assert_int_eq(parse_lim(s, len, NULL), -FATELF_E_MANIFEST_TOO_BIG);
	ck_assert_int_lt(maxrss_kib() - before, 4096);
	free(s);
}
END_TEST

/* The grammar as json-c's strict mode read it before the pull reader
 * replaced it: which text is broken JSON and which a value of the wrong
 * type or format decides the error. */
START_TEST(test_json_grammar_verdicts)
{
	static const struct {
		const char *text;
		int code;
	} t[] = {
		{ "5", FATELF_E_MANIFEST_JSON },        /* a number must be followed */
		{ "5 ", FATELF_E_MANIFEST_SCHEMA },
		{ "true ", FATELF_E_MANIFEST_SCHEMA },
		{ "null ", FATELF_E_MANIFEST_JSON },
		{ "\"x\"", FATELF_E_MANIFEST_SCHEMA },
		{ "[]", FATELF_E_MANIFEST_SCHEMA },
		{ "{\"format\":01}", FATELF_E_MANIFEST_JSON },
		{ "{\"format\":-01}", FATELF_E_MANIFEST_FORMAT },
		{ "{\"format\":00}", FATELF_E_MANIFEST_FORMAT },
		{ "{\"format\":1.}", FATELF_E_MANIFEST_SCHEMA },
		{ "{\"format\":1.e5}", FATELF_E_MANIFEST_SCHEMA },
		{ "{\"format\":-.5}", FATELF_E_MANIFEST_SCHEMA },
		{ "{\"format\":1e}", FATELF_E_MANIFEST_JSON },
		{ "{\"format\":18446744073709551616}", FATELF_E_MANIFEST_FORMAT },
		{ "{\"format\":1,\"format\":1}", FATELF_E_MANIFEST_JSON },
		{ "{\"format\":1,\"\\u0066ormat\":1}", FATELF_E_MANIFEST_JSON },
		{ "[[1],]", FATELF_E_MANIFEST_JSON },
		{ "{\"a\":[1 2]}", FATELF_E_MANIFEST_JSON },
	};
	char deep[300];
	size_t n;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(parse_text(t[i].text) == -t[i].code, "%s: got %s", t[i].text,
			      fatelf_error_name(parse_text(t[i].text)));
	/* 64 nested arrays are a value 63 levels down: still JSON; a value
	 * inside the innermost one is too deep. */
	for (int v = 0; v < 2; v++) {
		n = 0;
		for (int k = 0; k < 64; k++)
			deep[n++] = '[';
		if (v)
			deep[n++] = '1';
		for (int k = 0; k < 64; k++)
			deep[n++] = ']';
		ck_assert_int_eq(parse_lim(deep, n, NULL),
				 v ? -FATELF_E_MANIFEST_JSON : -FATELF_E_MANIFEST_SCHEMA);
	}
}
END_TEST

/* Under the byte limit but over the entry limit: refused by the scan,
 * before anything is allocated for the entries. */
START_TEST(test_entry_limit_before_memory)
{
	fatelf_bundle_limits lim;
	size_t len;
	char *s = many_entries(85000, &len);
	long before;

	ck_assert_uint_le(len, FATELF_MANIFEST_MAX);
	fatelf_bundle_limits_default(&lim);
	lim.max_entries = 1000;
	before = maxrss_kib();
	ck_assert_int_eq(parse_lim(s, len, &lim), -FATELF_E_LIMIT);
	ck_assert_ptr_nonnull(strstr(last.msg, "85000 entries, the limit is 1000"));
	ck_assert_int_lt(maxrss_kib() - before, 4096);
	/* Within the limits the same text parses. */
	lim.max_entries = 85000;
	ck_assert_int_eq(parse_lim(s, len, &lim), 0);
	free(s);
}
END_TEST

/* dpkg's order. Each sign was checked with dpkg --compare-versions on
 * Debian 12 (dpkg 1.21.22); test_version_table_matches_dpkg asks dpkg
 * again when it is installed. */
static const struct {
	const char *a, *b;
	int cmp;
} versions[] = {
	{ "1.0", "1.1", -1 },
	{ "1.0", "1.0.1", -1 },
	{ "1.0~rc1", "1.0", -1 },
	{ "1.0~rc1", "1.0~rc2", -1 },
	{ "1.0~~", "1.0~", -1 },
	{ "1.0~~a", "1.0~", -1 },
	{ "1.0~", "1.0", -1 },
	{ "1.0", "1.0", 0 },
	{ "1:1.0", "2.0", 1 },
	{ "0:1.0", "1.0", 0 },
	{ "1.0-1", "1.0-2", -1 },
	{ "1.0-1", "1.0", 1 },
	{ "1.0", "1.0-0", 0 },
	{ "1.0a", "1.0", 1 },
	{ "1.0a", "1.0b", -1 },
	{ "1.0+b1", "1.0", 1 },
	{ "1.0+1", "1.0a", 1 },
	{ "1.0.1", "1.0a", 1 },
	{ "1.0A", "1.0a", -1 },
	{ "1.0", "1.0+", -1 },
	{ "1.01", "1.1", 0 },
	{ "1.001", "1.1", 0 },
	{ "10", "9", 1 },
	{ "1.10", "1.9", 1 },
	{ "2:0.1", "1:9.9", 1 },
	{ "10:1", "9:1", 1 },
	{ "1:0", "0:9999", 1 },
	{ "1.0-1ubuntu1", "1.0-1", 1 },
	{ "1.0-1~bpo1", "1.0-1", -1 },
	{ "1.2.3-4+deb12u1", "1.2.3-4", 1 },
	{ "1.0-1.1", "1.0-1", 1 },
	{ "1.0-a", "1.0-1", 1 },
	{ "0.0", "0", 1 },
	{ "1-1-1", "1-1", 1 },
	{ "7.6p2-4", "7.6-0", 1 },
	{ "1.0~rc1-1", "1.0-1", -1 },
	{ "2.0~", "1.9", 1 },
	{ "1.2~b1", "1.2~a2", 1 },
	{ "1:2:3", "1:2:3", 0 },
	{ "1:2:3", "1:2.3", 1 },
	{ "1.0+dfsg-1", "1.0-1", 1 },
	{ "1.0~", "1.0~~", 1 },
	{ "2147483647:1", "1:99", 1 },
	{ "1.0.0", "1.0", 1 },
	{ "4.19.0-21", "4.19.0-9", 1 },
};

START_TEST(test_version_compare)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		int c = fatelf_pkg_version_compare(versions[i].a, versions[i].b);
		int r = fatelf_pkg_version_compare(versions[i].b, versions[i].a);

		ck_assert_msg(c == versions[i].cmp, "%s vs %s: %d, want %d", versions[i].a, versions[i].b, c,
			      versions[i].cmp);
		ck_assert_msg(r == -versions[i].cmp, "%s vs %s reversed: %d", versions[i].b, versions[i].a, r);
		ck_assert(fatelf_pkg_version_valid(versions[i].a));
		ck_assert(fatelf_pkg_version_valid(versions[i].b));
	}
}
END_TEST

static bool have_dpkg(void)
{
	return access("/usr/bin/dpkg", X_OK) == 0;
}

/* dpkg --compare-versions A OP B, without a shell. */
static bool dpkg_says(const char *a, const char *op, const char *b)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/usr/bin/dpkg", "dpkg", "--compare-versions", a, op, b, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_ne(WEXITSTATUS(status), 127);
	return WEXITSTATUS(status) == 0;
}

START_TEST(test_version_table_matches_dpkg)
{
	if (!have_dpkg())
		return;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		const char *op = versions[i].cmp < 0 ? "lt" : versions[i].cmp > 0 ? "gt" : "eq";

		ck_assert_msg(dpkg_says(versions[i].a, op, versions[i].b), "dpkg disagrees: %s %s %s",
			      versions[i].a, op, versions[i].b);
	}
}
END_TEST

static const char *const valid_versions[] = {
	"0", "1", "1.0", "1:1.0", "1.0-1", "1:1.0-1", "1.0~rc1", "1.0+dfsg-1", "1:2:3", "1-2-3",
	"1.0-1~bpo", "2.0-a", "0:0", "2147483647:1", "1.0-1+b2", "3a", "1.0.0.0.0",
};
static const char *const invalid_versions[] = {
	"", "a1", "1.0-", ":1.0", "a:1.0", "1:", "1.0:1", "1.0 1", "1.0_1", "1.0-1:2",
	"99999999999:1", "2147483648:1", "1:a", "1.0-1_2", "1.0-1-", "~1", "1.0\n", "1.0-1 ",
	"1/2",
};

START_TEST(test_version_valid)
{
	for (size_t i = 0; i < sizeof(valid_versions) / sizeof(valid_versions[0]); i++)
		ck_assert_msg(fatelf_pkg_version_valid(valid_versions[i]), "'%s' refused", valid_versions[i]);
	for (size_t i = 0; i < sizeof(invalid_versions) / sizeof(invalid_versions[0]); i++)
		ck_assert_msg(!fatelf_pkg_version_valid(invalid_versions[i]), "'%s' accepted", invalid_versions[i]);
	ck_assert(!fatelf_pkg_version_valid(NULL));
}
END_TEST

/* dpkg takes a version silently only when it is valid by our rules (it
 * warns about some it still takes: we refuse those). */
START_TEST(test_version_valid_matches_dpkg)
{
	if (!have_dpkg())
		return;
	for (size_t i = 0; i < sizeof(valid_versions) / sizeof(valid_versions[0]); i++) {
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "dpkg --compare-versions '%s' eq '%s' 2>&1 | grep -q .",
			 valid_versions[i], valid_versions[i]);
		/* grep finds output: dpkg complained. */
		ck_assert_msg(system(cmd) != 0, "dpkg complains about '%s'", valid_versions[i]);
	}
	for (size_t i = 0; i < sizeof(invalid_versions) / sizeof(invalid_versions[0]); i++) {
		char cmd[256];

		/* dpkg strips surrounding blanks before it checks; skip those. */
		if (!*invalid_versions[i] || strpbrk(invalid_versions[i], "\n ") ||
		    invalid_versions[i][0] == '-')
			continue;
		snprintf(cmd, sizeof(cmd), "dpkg --compare-versions '%s' eq '%s' 2>&1 | grep -q .",
			 invalid_versions[i], invalid_versions[i]);
		ck_assert_msg(system(cmd) == 0, "dpkg takes '%s' silently", invalid_versions[i]);
	}
}
END_TEST

START_TEST(test_pkg_names)
{
	static const char *const good[] = { "game", "g2", "lib32-foo", "libstdc++6", "a.b", "0ad", "xx", "9p" };
	static const char *const bad[] = { "", "a", "Game", "-game", "+g", ".g", "ga_me", "ga me", "g\xc3\xa4me",
					   "game/", "game\n", "GAME" };
	char longest[300];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(fatelf_pkg_name_valid(good[i]), "'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!fatelf_pkg_name_valid(bad[i]), "'%s' accepted", bad[i]);
	ck_assert(!fatelf_pkg_name_valid(NULL));
	memset(longest, 'a', 255);
	longest[255] = '\0';
	ck_assert(fatelf_pkg_name_valid(longest));
	longest[255] = 'a';
	longest[256] = '\0';
	ck_assert(!fatelf_pkg_name_valid(longest));
}
END_TEST

START_TEST(test_path_check)
{
	static const struct {
		const char *path;
		int code;
	} cases[] = {
		{ "opt", 0 },
		{ "opt/game/bin/game", 0 },
		{ "opt/.hidden/..x/x..", 0 },
		{ "opt/caf\xc3\xa9", 0 },
		{ "opt/with space", 0 },
		{ "opt/back\\slash", 0 },
		{ "", -FATELF_E_PATH_INVALID },
		{ "/opt", -FATELF_E_PATH_ABSOLUTE },
		{ "/", -FATELF_E_PATH_ABSOLUTE },
		{ "..", -FATELF_E_PATH_DOTDOT },
		{ "a/../b", -FATELF_E_PATH_DOTDOT },
		{ "a/..", -FATELF_E_PATH_DOTDOT },
		{ ".", -FATELF_E_PATH_INVALID },
		{ "a/./b", -FATELF_E_PATH_INVALID },
		{ "a//b", -FATELF_E_PATH_INVALID },
		{ "a/", -FATELF_E_PATH_INVALID },
		{ "a\nb", -FATELF_E_PATH_INVALID },
		{ "a\tb", -FATELF_E_PATH_INVALID },
		{ "a\x7f", -FATELF_E_PATH_INVALID },
		{ "a\xc2\x85", -FATELF_E_PATH_INVALID },
		{ "a\xff", -FATELF_E_PATH_INVALID },
		{ "a\xc3", -FATELF_E_PATH_INVALID },
		{ "a\xe0\x80\xaf", -FATELF_E_PATH_INVALID },
		{ "a\xf4\x90\x80\x80", -FATELF_E_PATH_INVALID },
		/* Bidirectional formatting characters, anywhere. */
		{ "opt/x\xe2\x80\xaey", -FATELF_E_PATH_INVALID },
		{ "opt/\xe2\x81\xa6x", -FATELF_E_PATH_INVALID },
		{ "\xe2\x80\x8f/x", -FATELF_E_PATH_INVALID },
		/* The temp names' namespace, in any component. */
		{ ".fatelf.abc123", -ENGINE_E_NAME_RESERVED },
		{ "opt/t/.fatelf.2.1", -ENGINE_E_NAME_RESERVED },
		{ "opt/.fatelf.d/x", -ENGINE_E_NAME_RESERVED },
		{ "opt/.fatelf.", -ENGINE_E_NAME_RESERVED },
		{ "opt/.fatelfx", 0 },
		{ "opt/.fatelf", 0 },
		{ "opt/x.fatelf.1", 0 },
		{ "opt/.fatelf-new", 0 },
	};
	fatelf_bundle_limits lim;
	fatelf_diag d;
	char big[5000];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = fatelf_path_check(cases[i].path, NULL, &d);

		ck_assert_msg(r == cases[i].code, "case %zu: %s, want %s (%s)", i, fatelf_error_name(r),
			      fatelf_error_name(cases[i].code), d.msg);
	}
	/* max_path is in bytes, inclusive. */
	memset(big, 'a', sizeof(big));
	for (size_t i = 100; i < 4095; i += 100)
		big[i] = '/';
	big[4095] = '\0';
	ck_assert_int_eq(fatelf_path_check(big, NULL, &d), 0);
	big[4095] = 'a';
	big[4096] = '\0';
	ck_assert_int_eq(fatelf_path_check(big, NULL, &d), -FATELF_E_LIMIT);
	fatelf_bundle_limits_default(&lim);
	lim.max_path = 3;
	ck_assert_int_eq(fatelf_path_check("abc", &lim, &d), 0);
	ck_assert_int_eq(fatelf_path_check("abcd", &lim, &d), -FATELF_E_LIMIT);
	/* At most FATELF_PATH_DEPTH_MAX components: "a/a/.../a". */
	for (int depth = FATELF_PATH_DEPTH_MAX; depth <= FATELF_PATH_DEPTH_MAX + 1; depth++) {
		for (int i = 0; i < depth; i++) {
			big[2 * i] = 'a';
			big[2 * i + 1] = '/';
		}
		big[2 * depth - 1] = '\0';
		ck_assert_int_eq(fatelf_path_check(big, NULL, &d),
				 depth <= FATELF_PATH_DEPTH_MAX ? 0 : -FATELF_E_LIMIT);
	}
	ck_assert_msg(strstr(d.msg, "levels deep") != NULL, "%s", d.msg);
	/* Messages quote hostile names escaped, and stay short. */
	ck_assert_int_eq(fatelf_path_check("x\x1b[2J\\", NULL, &d), -FATELF_E_PATH_INVALID);
	ck_assert_str_eq(d.msg, "path 'x\\x1b[2J\\x5c' holds the control character U+001B at byte 1");
	memset(big, '\x01', 1000);
	big[1000] = '\0';
	ck_assert_int_eq(fatelf_path_check(big, NULL, &d), -FATELF_E_PATH_INVALID);
	ck_assert_ptr_nonnull(strstr(d.msg, "\\x01\\x01..."));
	ck_assert_ptr_null(strchr(d.msg, '\x01'));
	ck_assert_int_eq(fatelf_path_check("ok", NULL, NULL), 0);
	ck_assert_int_eq(fatelf_path_check("/x", NULL, NULL), -FATELF_E_PATH_ABSOLUTE);
}
END_TEST

/* Every error path frees what it built (run under valgrind/ASan by the
 * fuzz target; here each mutation at least has to come back cleanly). */
START_TEST(test_every_truncation_fails_cleanly)
{
	size_t len = strlen(canonical);

	for (size_t n = 0; n < len - 1; n++) {
		int r = parse_lim(canonical, n, NULL);

		ck_assert_msg(r < 0, "a prefix of %zu bytes parsed", n);
	}
	ck_assert_int_eq(parse_lim(canonical, len - 1, NULL), 0);
}
END_TEST

static Suite *manifest_suite(void)
{
	Suite *s = suite_create("manifest");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_parse_canonical);
	tcase_add_test(tc, test_serialize_canonical_bytes);
	tcase_add_test(tc, test_noncanonical_input);
	tcase_add_test(tc, test_model_round_trip);
	tcase_add_test(tc, test_serialize_refuses_bad_package);
	tcase_add_test(tc, test_serialize_refuses_what_parse_refuses);
	tcase_add_test(tc, test_entry_min_len);
	tcase_add_test(tc, test_add_and_find_many);
	tcase_add_test(tc, test_add_after_parse);
	tcase_add_test(tc, test_reject_json);
	tcase_add_test(tc, test_reject_too_big);
	tcase_add_test(tc, test_reject_schema);
	tcase_add_test(tc, test_reject_format);
	tcase_add_test(tc, test_depends);
	tcase_add_test(tc, test_per_arch_canonical);
	tcase_add_test(tc, test_per_arch_format1_reader);
	tcase_add_test(tc, test_per_arch_select);
	tcase_add_test(tc, test_per_arch_rules);
	tcase_add_test(tc, test_reject_pkg_name);
	tcase_add_test(tc, test_reject_pkg_version);
	tcase_add_test(tc, test_reject_path_absolute);
	tcase_add_test(tc, test_reject_path_dotdot);
	tcase_add_test(tc, test_reject_path_invalid);
	tcase_add_test(tc, test_reject_path_duplicate);
	tcase_add_test(tc, test_reject_path_symlink);
	tcase_add_test(tc, test_reject_path_parent);
	tcase_add_test(tc, test_reject_mode);
	tcase_add_test(tc, test_reject_limits);
	tcase_add_test(tc, test_reject_link_target_limit);
	tcase_add_test(tc, test_reject_records);
	tcase_add_test(tc, test_reject_too_many_records);
	tcase_add_test(tc, test_million_entries_too_big);
	tcase_add_test(tc, test_json_grammar_verdicts);
	tcase_add_test(tc, test_entry_limit_before_memory);
	tcase_add_test(tc, test_version_compare);
	tcase_add_test(tc, test_version_table_matches_dpkg);
	tcase_add_test(tc, test_version_valid);
	tcase_add_test(tc, test_version_valid_matches_dpkg);
	tcase_add_test(tc, test_pkg_names);
	tcase_add_test(tc, test_path_check);
	tcase_add_test(tc, test_every_truncation_fails_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(manifest_suite());
}
