/*
 * A package version as an OCI artifact (doc/repository.md, "OCI
 * registries"): the repository's objects as blobs, one image manifest per
 * target the package serves (the objects a native install there reads)
 * and one for the whole fat content, all under one image index. The
 * config of every manifest is the signed fat manifest. This header makes
 * the JSON a registry stores; it reads nothing from the network.
 */
#ifndef FATELF_OCI_H
#define FATELF_OCI_H

#include <stdbool.h>
#include <stdint.h>

#include "repo.h"

#define FATELF_OCI_MT_INDEX     "application/vnd.oci.image.index.v1+json"
#define FATELF_OCI_MT_MANIFEST  "application/vnd.oci.image.manifest.v1+json"
#define FATELF_OCI_ARTIFACT     "application/vnd.fatelf.bundle.v1"
#define FATELF_OCI_MT_CONFIG    "application/vnd.fatelf.manifest.v1+json"
#define FATELF_OCI_MT_OBJECT    "application/vnd.fatelf.object.v1+zstd"
#define FATELF_OCI_MT_PACK      "application/vnd.fatelf.pack.v1+zstd"
/* Annotations */
#define FATELF_OCI_A_SIGNATURE  "io.fatelf.signature"   /* config: the minisign signature, as its text */
#define FATELF_OCI_A_OBJECT     "io.fatelf.object"      /* layer: the object's name (SHA-256 of its bytes) */
#define FATELF_OCI_A_SIZE       "io.fatelf.size"        /* layer: the object's bytes */
#define FATELF_OCI_A_TARGET     "io.fatelf.target"      /* manifest, index entry: the FatELF target */
#define FATELF_OCI_A_FORM       "io.fatelf.form"        /* manifest, index entry: "fat" for the whole content */
#define FATELF_OCI_A_PACKAGE    "io.fatelf.package"
#define FATELF_OCI_A_VERSION    "org.opencontainers.image.version"

/* The OCI platform of a FatELF target: GOARCH-style names ("amd64",
 * "arm64", "arm" + "v7", "386", "riscv64", "ppc64le", "s390x"); any other
 * machine by the same rule, from its familiar name. */
typedef struct fatelf_oci_platform {
	char os[24];
	char architecture[24];
	char variant[8];                /* "" for none */
} fatelf_oci_platform;
void fatelf_oci_platform_of(const fatelf_target *t, fatelf_oci_platform *ret);

/* A blob: the bytes a registry stores under digest. */
typedef struct fatelf_oci_blob {
	uint8_t digest[32];             /* SHA-256 of the stored bytes */
	uint64_t size;                  /* stored bytes */
	uint8_t object[32];             /* the object (or manifest) it holds */
	uint64_t object_size;
} fatelf_oci_blob;

/*
 * The objects an install on t reads of version m (pack: its pack list),
 * each once, to cb: every file's object that is not a FatELF file or a
 * per-arch entry of another target; of each FatELF file, t's record, or,
 * when it has none, every record and its frame (kept whole). t NULL: every
 * object of the version (the fat form, for any other policy).
 */
int fatelf_oci_objects_for(const fatelf_manifest *m, const fatelf_repo_pack *pack, const fatelf_target *t,
			   int (*cb)(void *ctx, const uint8_t sha[32], uint64_t size), void *ctx);

/*
 * An image manifest's JSON (malloc'd, *ret_len its length): config is
 * the fat manifest's blob, sig its signature's text (NULL: unsigned),
 * pack the pack list's blob (NULL: none), layers the objects' blobs in
 * order; t the target it serves (NULL: the fat form).
 */
int fatelf_oci_manifest_json(const fatelf_manifest *m, const fatelf_oci_blob *config, const char *sig,
			     const fatelf_oci_blob *pack, const fatelf_oci_blob *layers, size_t nlayers,
			     const fatelf_target *t, char **ret, size_t *ret_len);

/* An entry of the index: a manifest's digest and size, and its target
 * (NULL: the fat form, with no platform). */
typedef struct fatelf_oci_entry {
	uint8_t digest[32];
	uint64_t size;
	const fatelf_target *target;
} fatelf_oci_entry;
int fatelf_oci_index_json(const fatelf_manifest *m, const fatelf_oci_entry *e, size_t n, char **ret,
			  size_t *ret_len);

/* ------------------------------------------------------------ reading them back
 * A registry's index and manifests are untrusted: parsed strictly (the
 * manifests' JSON reader: no duplicate key, bounded depth), checked
 * against the mapping, fuzzed. Every failure is FATELF_E_REPO_OCI. */

#define FATELF_OCI_JSON_MAX     (16u << 20)
#define FATELF_OCI_LAYERS_MAX   1000000u
#define FATELF_OCI_MANIFESTS_MAX 1024u

/* A descriptor, with what the mapping puts in its annotations. */
typedef struct fatelf_oci_desc {
	char media_type[128];
	uint8_t digest[32];
	uint64_t size;
	bool has_platform;
	fatelf_oci_platform platform;
	char target[FATELF_TARGET_NAME_MAX];    /* io.fatelf.target, "" when none */
	bool fat;                               /* io.fatelf.form: fat */
	bool has_object;                        /* io.fatelf.object and io.fatelf.size */
	uint8_t object[32];
	uint64_t object_size;
	char *signature;                        /* io.fatelf.signature (config), or NULL */
} fatelf_oci_desc;

typedef struct fatelf_oci_index {
	size_t n;
	fatelf_oci_desc *manifests;
} fatelf_oci_index;

typedef struct fatelf_oci_manifest {
	fatelf_oci_desc config;                 /* FATELF_OCI_MT_CONFIG */
	bool has_pack;
	fatelf_oci_desc pack;                   /* FATELF_OCI_MT_PACK */
	size_t nlayers;
	fatelf_oci_desc *layers;                /* FATELF_OCI_MT_OBJECT, each with its object */
	char target[FATELF_TARGET_NAME_MAX];
	bool fat;
} fatelf_oci_manifest;

/* An image index: schemaVersion 2, the index media type, manifests of the
 * image manifest media type (at most FATELF_OCI_MANIFESTS_MAX). */
int fatelf_oci_index_parse(const void *json, size_t len, fatelf_oci_index **ret, fatelf_diag *d);
void fatelf_oci_index_free(fatelf_oci_index *ix);
static inline void fatelf_oci_index_freep(fatelf_oci_index **p)
{
	fatelf_oci_index_free(*p);
}
#define _cleanup_oci_index_ _cleanup_(fatelf_oci_index_freep)
/* An image manifest of the fatelf artifact type: its config, the pack
 * list's layer when there is one, and every other layer an object. */
int fatelf_oci_manifest_parse(const void *json, size_t len, fatelf_oci_manifest **ret, fatelf_diag *d);
void fatelf_oci_manifest_free(fatelf_oci_manifest *m);
static inline void fatelf_oci_manifest_freep(fatelf_oci_manifest **p)
{
	fatelf_oci_manifest_free(*p);
}
#define _cleanup_oci_manifest_ _cleanup_(fatelf_oci_manifest_freep)

/* A tag list ({"name": ..., "tags": [...]}, tags true; "tags": null is
 * none) or a catalog ({"repositories": [...]}), one page of it: at most
 * FATELF_OCI_LIST_MAX bytes (a registry's lists are not signed, so a
 * page is small and asked for by FATELF_OCI_PAGE_N names: ?n=, &last=),
 * each a valid tag or repository name, at most FATELF_OCI_NAMES_MAX.
 * Each name is handed to take, in order, as the page is read, and is
 * not kept: take keeps what it wants; a negative return from take stops
 * the reading and is returned. A failure of the page is
 * FATELF_E_REPO_OCI. Returns the count of names read. */
#define FATELF_OCI_NAMES_MAX    100000u
#define FATELF_OCI_LIST_MAX     (1u << 20)
#define FATELF_OCI_PAGE_N       1000u
int fatelf_oci_names_each(const void *json, size_t len, bool tags, int (*take)(void *ctx, const char *name),
			  void *ctx, fatelf_diag *d);

/* ------------------------------------------------------------ the registry's words
 * Untrusted (a reference from the command line, a registry's reply
 * headers and token replies): bounded, strict, fuzzed (tests/fuzz/fuzz_oci.c). */

/* A repository name: lower-case [a-z0-9] runs joined by '.', '_', '__'
 * or '-' runs, in '/'-separated components, at most 255 bytes. */
bool fatelf_oci_name_valid(const char *s);
/* A tag: [A-Za-z0-9_][A-Za-z0-9._-]*, at most 128 bytes. */
bool fatelf_oci_tag_valid(const char *s);

typedef struct fatelf_oci_ref {
	char scheme[8];                 /* "http" on a loopback host or with plain_http, else "https" */
	char host[256];                 /* HOST[:PORT] */
	char name[256];
	char tag[129];                  /* "" when none was given */
	bool has_digest;                /* @sha256:HEX was given: the index's digest */
	uint8_t digest[32];
} fatelf_oci_ref;
/* oci://HOST[:PORT]/NAME[:TAG][@sha256:HEX] (64 lower-case hex digits):
 * 0, or -EINVAL. */
int fatelf_oci_ref_parse(const char *s, bool plain_http, fatelf_oci_ref *ret);

/* A WWW-Authenticate challenge: Basic, or Bearer with its parameters. */
enum { FATELF_OCI_AUTH_BASIC = 1, FATELF_OCI_AUTH_BEARER };
typedef struct fatelf_oci_challenge {
	int scheme;
	char realm[1024];
	char service[256];
	char scope[512];                /* "" when the challenge gives none */
} fatelf_oci_challenge;
/* 0, or -EINVAL for a scheme other than those two, a Bearer challenge
 * without a realm, or a parameter too long or badly quoted. */
int fatelf_oci_challenge_parse(const char *header, fatelf_oci_challenge *ret);

/* A token service's reply ({"token": ...} or {"access_token": ...}, at
 * most len bytes): the token, malloc'd, printable ASCII only. -EPROTO
 * when there is none. */
int fatelf_oci_token_parse(const char *body, size_t len, char **ret);

#endif
