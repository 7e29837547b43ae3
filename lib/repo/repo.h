/*
 * Repositories of fat packages (doc/repository.md): content-addressed
 * objects on any static file server, and a signed index. This header is
 * the repository's data and its files, shared by the vendor's commands
 * (fatelf repo) and the machines that read a repository:
 *   - object names, and the one object codec (zstd frames of one
 *     object's bytes, read back bounded, sized and hashed);
 *   - the pack list of a package version (which objects its manifest
 *     needs, their sizes, and the frames of FatELF files that the
 *     manifest alone does not rebuild);
 *   - the index (every package and version, with a serial number and an
 *     optional expiry) and the pointer file that names the current one;
 *   - a repository directory: its lock, its objects and the publication
 *     of a new index, each step atomic for a reader.
 * Everything read from a repository is untrusted: the parsers are
 * bounds-checked, strict and have fuzz targets (tests/fuzz/fuzz_repo.c).
 */
#ifndef FATELF_REPO_H
#define FATELF_REPO_H

#include <stdbool.h>
#include <stdint.h>

#include "bundle.h"

#define FATELF_REPO_FORMAT          1
/* The pointer file at the repository's top, the folders beneath it. */
#define FATELF_REPO_POINTER         "index"
#define FATELF_REPO_INDEXES         "indexes"
#define FATELF_REPO_OBJECTS         "objects"
#define FATELF_REPO_MANIFESTS       "manifests"
#define FATELF_REPO_LOCK            ".lock"
/* Limits of what a reader takes from a repository. */
#define FATELF_REPO_INDEX_MAX       (64u << 20)
#define FATELF_REPO_POINTER_MAX     256
#define FATELF_REPO_SIG_MAX         4096
#define FATELF_REPO_PACK_MAX        (64u << 20)
#define FATELF_REPO_PACKAGES_MAX    100000
#define FATELF_REPO_VERSIONS_MAX    10000
/* A repository's identity: 128 random bits, 32 lower-case hex digits. */
#define FATELF_REPO_ID_LEN          32
/* "objects/ab/<64 hex>.zst" and a NUL */
#define FATELF_REPO_OBJECT_PATH_MAX 96
/* "manifests/<64 hex>/fatbundle.json.minisig" and a NUL */
#define FATELF_REPO_MANIFEST_PATH_MAX 128

/* Names */
/* The path of the object whose bytes hash to sha, relative to the top. */
void fatelf_repo_object_path(const uint8_t sha[32], char buf[FATELF_REPO_OBJECT_PATH_MAX]);
/* The paths of a manifest stored by its hash, and of its signature. */
void fatelf_repo_manifest_path(const uint8_t sha[32], bool signature, char buf[FATELF_REPO_MANIFEST_PATH_MAX]);
/* "indexes/<64 hex>.json" (or ".json.minisig") */
void fatelf_repo_index_path(const uint8_t sha[32], bool signature, char buf[FATELF_REPO_MANIFEST_PATH_MAX]);

/* Objects: each one zstd frame of its bytes. */
typedef struct fatelf_repo_owriter fatelf_repo_owriter;
/* Compresses what is written into fd (the caller's to close). */
int fatelf_repo_owriter_open(int fd, fatelf_repo_owriter **ret, fatelf_diag *d);
int fatelf_repo_owriter_write(fatelf_repo_owriter *w, const void *buf, size_t len, fatelf_diag *d);
/* Ends the frame; *ret_sha is the SHA-256 of the bytes written (not of
 * the compressed ones), *ret_size their count. Frees w. */
int fatelf_repo_owriter_close(fatelf_repo_owriter *w, uint8_t ret_sha[32], uint64_t *ret_size, fatelf_diag *d);
/* Frees w without finishing it (after an error). */
void fatelf_repo_owriter_abort(fatelf_repo_owriter *w);

/*
 * Reads the object of src (compressed bytes) and hands its bytes to
 * data in order. They must be exactly size bytes (more is refused as
 * soon as it shows, before it is handed on) hashing to sha, else
 * FATELF_E_REPO_OBJECT naming what differs (name names the object in
 * messages). Only a return of 0 says the bytes handed on are the
 * object's: a consumer stages them and commits nothing before. data
 * may be NULL (a check).
 */
int fatelf_repo_object_read(const fatelf_reader *src, const uint8_t sha[32], uint64_t size,
			    const char *name, int (*data)(void *ctx, const void *buf, size_t len), void *ctx,
			    fatelf_diag *d);

/* Pack lists: the objects one package version's install may need. */
typedef struct fatelf_repo_object {
	uint8_t sha256[32];
	uint64_t size;          /* its bytes */
	uint64_t csize;         /* its compressed file's bytes */
} fatelf_repo_object;

/* The frame of a FatELF entry: every byte of the file outside its
 * records, in order. It is listed only when it is not the canonical
 * one (the header table the manifest's records give, then zeros). */
typedef struct fatelf_repo_frame {
	uint32_t entry;         /* index in the manifest */
	uint8_t sha256[32];
} fatelf_repo_frame;

typedef struct fatelf_repo_pack {
	size_t nobjects;
	fatelf_repo_object *objects;    /* sorted by sha256, each once */
	size_t nframes;
	fatelf_repo_frame *frames;      /* sorted by entry, each once */
} fatelf_repo_pack;

int fatelf_repo_pack_parse(const void *text, size_t len, fatelf_repo_pack **ret, fatelf_diag *d);
/* Sorts the lists, then writes the canonical text. */
int fatelf_repo_pack_serialize(fatelf_repo_pack *p, char **ret, size_t *ret_len, fatelf_diag *d);
fatelf_repo_pack *fatelf_repo_pack_free(fatelf_repo_pack *p);
static inline void fatelf_repo_pack_freep(fatelf_repo_pack **p)
{
	fatelf_repo_pack_free(*p);
}
#define _cleanup_repo_pack_ _cleanup_(fatelf_repo_pack_freep)
const fatelf_repo_object *fatelf_repo_pack_object(const fatelf_repo_pack *p, const uint8_t sha[32]);
const fatelf_repo_frame *fatelf_repo_pack_frame(const fatelf_repo_pack *p, uint32_t entry);
/* Checks p against the manifest it belongs to: every object the
 * manifest's files and records name is listed, and each frame names a
 * FatELF entry. FATELF_E_REPO_PACK naming the entry. */
int fatelf_repo_pack_check(const fatelf_repo_pack *p, const fatelf_manifest *m, fatelf_diag *d);

/* Frames */
/* The length of entry e's frame (e a FatELF file). */
uint64_t fatelf_repo_frame_size(const fatelf_bundle_entry *e);
/* Hands the canonical frame of e to data, in pieces. */
int fatelf_repo_frame_canonical(const fatelf_bundle_entry *e, int (*data)(void *ctx, const void *buf, size_t len),
				void *ctx);
/* The SHA-256 of e's canonical frame. */
int fatelf_repo_frame_canonical_sha(const fatelf_bundle_entry *e, uint8_t ret[32]);

/* The index */
typedef struct fatelf_repo_version {
	char *version;
	char *summary;                  /* "" when none */
	size_t ntargets;
	fatelf_target *targets;         /* the manifest's, sorted */
	uint64_t entries;               /* the manifest's entries */
	uint64_t size;                  /* the sum of its files' sizes */
	uint8_t manifest[32];           /* SHA-256 of fatbundle.json */
	uint64_t manifest_size;
	bool signed_manifest;           /* a signature is stored beside it */
	uint8_t pack[32];               /* the pack list's object */
	uint64_t pack_size;
	uint64_t frames;                /* frames the pack list lists (0: an install needs no pack list) */
	size_t ndepends;                /* the manifest's depends (optional), by name */
	fatelf_depend *depends;
} fatelf_repo_version;

typedef struct fatelf_repo_package {
	char *name;
	size_t nversions;
	fatelf_repo_version *versions;  /* oldest first, by dpkg's order, each once */
} fatelf_repo_package;

typedef struct fatelf_repo_index {
	unsigned format;
	/* The repository it belongs to, fixed when it was made (fatelf repo
	 * init): a machine pins it and refuses another's index. "" in an
	 * index older than the field. */
	char repository[FATELF_REPO_ID_LEN + 1];
	uint64_t serial;                /* 1 and up; each new index has a higher one */
	int64_t created;                /* seconds since the epoch */
	int64_t expires;                /* 0: never */
	size_t npackages;
	fatelf_repo_package *packages;  /* by name, each once */
} fatelf_repo_index;

fatelf_repo_index *fatelf_repo_index_new(void);
fatelf_repo_index *fatelf_repo_index_free(fatelf_repo_index *ix);
static inline void fatelf_repo_index_freep(fatelf_repo_index **ix)
{
	fatelf_repo_index_free(*ix);
}
#define _cleanup_repo_index_ _cleanup_(fatelf_repo_index_freep)
/* Strict JSON (the manifest's reader: duplicate keys, depth, strings),
 * every field known and typed, names and versions by the package rules,
 * packages and versions sorted and unique. FATELF_E_REPO_INDEX. */
int fatelf_repo_index_parse(const void *json, size_t len, fatelf_repo_index **ret, fatelf_diag *d);
/* The canonical text (sorted, fixed key order, final newline). */
int fatelf_repo_index_serialize(const fatelf_repo_index *ix, char **ret, size_t *ret_len, fatelf_diag *d);
/* The package named name, or NULL. */
fatelf_repo_package *fatelf_repo_index_find(const fatelf_repo_index *ix, const char *name);
/* The version of pkg, or NULL. */
fatelf_repo_version *fatelf_repo_package_version(const fatelf_repo_package *pkg, const char *version);
/* Adds or finds name's package, keeping the order; NULL on ENOMEM. */
fatelf_repo_package *fatelf_repo_index_add_package(fatelf_repo_index *ix, const char *name);
/* Adds a zeroed version (strings copied) in order; NULL on ENOMEM.
 * The version must not be there yet. */
fatelf_repo_version *fatelf_repo_package_add_version(fatelf_repo_package *pkg, const char *version);
/* Removes a version (NULL: every version) of name; empties drop the
 * package. Returns the versions removed. */
size_t fatelf_repo_index_remove(fatelf_repo_index *ix, const char *name, const char *version);
/* An index a machine may take after one of serial min_serial (0: none
 * yet): its serial not lower (FATELF_E_REPO_ROLLBACK) and not expired at
 * now (FATELF_E_REPO_EXPIRED). */
int fatelf_repo_index_check(const fatelf_repo_index *ix, uint64_t min_serial, int64_t now, fatelf_diag *d);
/* An index of the repository pinned (its identity; "" or NULL: none
 * pinned yet, any index is taken): FATELF_E_REPO_MISMATCH otherwise,
 * with the facts expected and got. A machine checks this before the
 * serial, so another repository's index never moves its floor. */
int fatelf_repo_index_check_identity(const fatelf_repo_index *ix, const char *pinned, fatelf_diag *d);
/* Whether s is a repository identity (FATELF_REPO_ID_LEN lower-case hex). */
bool fatelf_repo_id_valid(const char *s);
/* A new identity, from the kernel's random bytes. */
int fatelf_repo_id_new(char ret[FATELF_REPO_ID_LEN + 1]);

/* The pointer: "fatelf-repo 1 <sha256 of the index> <its size>\n". */
int fatelf_repo_pointer_parse(const void *text, size_t len, uint8_t ret_sha[32], uint64_t *ret_size,
			      fatelf_diag *d);
void fatelf_repo_pointer_format(const uint8_t sha[32], uint64_t size, char buf[FATELF_REPO_POINTER_MAX]);

/* What an add did. */
typedef struct fatelf_repo_result_counts {
	uint64_t objects_new;           /* objects written */
	uint64_t objects_shared;        /* objects the repository had (files or records) */
} fatelf_repo_result_counts;

typedef struct fatelf_repo_add_result {
	char name[256], version[256];
	bool unchanged;                 /* that very manifest was there: nothing done */
	fatelf_repo_result_counts counts;
	size_t pack_objects;            /* objects the version needs */
} fatelf_repo_add_result;

/* A repository directory (vendor side) */
typedef struct fatelf_repo_dir {
	int fd;                         /* the top directory */
	int lock_fd;
	fatelf_repo_index *index;       /* the current one; empty after init */
	char *index_sig;                /* its signature's text, NULL when unsigned */
	uint8_t index_sha[32];
	uint64_t index_size;
} fatelf_repo_dir;

/* Makes path a repository: the folders and a first, empty index
 * (serial 1) with a new identity, signed with key when not NULL. FATELF_E_REPO_FORMAT when
 * it is one already; path may exist, empty. */
int fatelf_repo_init(const char *path, const fatelf_ms_seckey *key, int64_t now, fatelf_diag *d);
/* Opens a repository, takes its lock (exclusive when write, else
 * shared) and reads the current index; keys, when given, must have
 * signed it (FATELF_E_SIG_*). */
int fatelf_repo_open(const char *path, bool write, const fatelf_ms_pubkey *keys, size_t nkeys,
		     fatelf_repo_dir **ret, fatelf_diag *d);
fatelf_repo_dir *fatelf_repo_close(fatelf_repo_dir *r);
static inline void fatelf_repo_closep(fatelf_repo_dir **p)
{
	fatelf_repo_close(*p);
}
#define _cleanup_repo_dir_ _cleanup_(fatelf_repo_closep)
/* Reads a file of the repository (relative path), at most max bytes:
 * FATELF_E_REPO_MISSING when it is not there. */
int fatelf_repo_read_file(const fatelf_repo_dir *r, const char *rel, size_t max, char **ret, size_t *ret_len,
			  fatelf_diag *d);
/* Writes a file under rel atomically (a hidden temp name, fsync,
 * rename), making its folder; an existing file of that name is left
 * alone when keep (content-addressed names never change). */
int fatelf_repo_write_file(const fatelf_repo_dir *r, const char *rel, const void *buf, size_t len, bool keep,
			   fatelf_diag *d);
/* Whether the object sha is present. */
bool fatelf_repo_has_object(const fatelf_repo_dir *r, const uint8_t sha[32]);
/* Publishes ix as the new index: its serial one above the current one,
 * of the current one's identity (a new one when neither has one: a
 * repository made before identities), created at now, expiring after expire_secs (0: never); written and
 * signed under its hash, then the pointer renamed over the old one, so
 * a reader sees the old index or the new one. key NULL: unsigned. On
 * success ix becomes r->index (r frees the one it had, when ix is
 * another), so the next publish counts on from it. */
int fatelf_repo_publish(fatelf_repo_dir *r, fatelf_repo_index *ix, const fatelf_ms_seckey *key, int64_t now,
			int64_t expire_secs, fatelf_diag *d);

/*
 * Adds the bundle of fd (a regular file: it is read twice, the head,
 * then every byte through the bundle reader with ro's keys and limits)
 * to r: its missing objects, its manifest, signature and pack list, and
 * its version to ix (r's index, to publish after). The same manifest
 * again changes nothing (res->unchanged); another manifest of a version
 * already there is -EEXIST. Objects are named only once every byte
 * checked out, so a refused bundle leaves at most hidden temp files
 * (which gc drops).
 */
int fatelf_repo_add_bundle(fatelf_repo_dir *r, fatelf_repo_index *ix, int fd, const fatelf_bundle_read_opts *ro,
			   fatelf_repo_add_result *res, fatelf_diag *d);

/* Reads object sha of the repository (its bytes to data, checked as
 * fatelf_repo_object_read does); *ret_csize (may be NULL) gets its
 * compressed file's size. FATELF_E_REPO_MISSING when it is not there. */
int fatelf_repo_read_object(const fatelf_repo_dir *r, const uint8_t sha[32], uint64_t size,
			    int (*data)(void *ctx, const void *buf, size_t len), void *ctx, uint64_t *ret_csize,
			    fatelf_diag *d);
/* The pack list of version v, read by its hash and parsed; checked
 * against m when it is not NULL. */
int fatelf_repo_load_pack(const fatelf_repo_dir *r, const fatelf_repo_version *v, const fatelf_manifest *m,
			  fatelf_repo_pack **ret, fatelf_diag *d);
/* The bytes of FatELF entry e as shipped, in order: its frame (the
 * frame object, or the canonical one when frame is NULL) around its
 * records' objects. The caller checks them against e's SHA-256. */
int fatelf_repo_rebuild(const fatelf_repo_dir *r, const fatelf_bundle_entry *e, const fatelf_repo_frame *frame,
			int (*data)(void *ctx, const void *buf, size_t len), void *ctx, fatelf_diag *d);

typedef struct fatelf_repo_verify_result {
	size_t packages, versions;
	uint64_t objects;               /* distinct objects read and checked */
	uint64_t bytes;                 /* their compressed bytes */
	uint64_t rebuilt;               /* FatELF files rebuilt to their hash */
	char package[256], version[256];        /* the one at hand (the failing one on error) */
} fatelf_repo_verify_result;

/*
 * Reads everything r's index reaches: each manifest (by its hash and
 * size; with vendor keys, its signature by one of them), each pack list
 * (checked against its manifest), each object once (zstd, size, hash,
 * compressed size), and each FatELF file rebuilt from frame and records
 * to its manifest's hash. The first problem is returned, res naming the
 * package and version.
 */
int fatelf_repo_verify(const fatelf_repo_dir *r, const fatelf_ms_pubkey *vendor_keys, size_t nvendor,
		       fatelf_repo_verify_result *res, fatelf_diag *d);

typedef struct fatelf_repo_gc_result {
	uint64_t files;                 /* files and folders removed */
	uint64_t bytes;                 /* their bytes */
} fatelf_repo_gc_result;

/* Removes every object, manifest and index file r's current index does
 * not reach, and any temp file an interrupted add left. r must have been
 * opened for writing (the lock keeps adds out). */
int fatelf_repo_gc(const fatelf_repo_dir *r, fatelf_repo_gc_result *res, fatelf_diag *d);

/* Where a read from a repository gets its objects. */
typedef struct fatelf_repo_source {
	/* Hands the size bytes of object sha to data, in order, and returns
	 * 0 only when they are exactly those bytes (fatelf_repo_object_read's
	 * promise): a repository's file, a download, or a file already on
	 * the machine with that hash. */
	int (*object)(void *ctx, const uint8_t sha[32], uint64_t size,
		      int (*data)(void *dctx, const void *buf, size_t len), void *dctx, fatelf_diag *d);
	/* Optional: an fd open for reading on a file on the machine said
	 * to hold object sha's size bytes (the caller closes it), or a
	 * negative errno (-ENOENT: none). Nothing is taken on its word:
	 * what a consumer cloned from it is hashed before it counts. */
	int (*local)(void *ctx, const uint8_t sha[32], uint64_t size);
	/* Optional: told of each object whose clone checked out (its bytes
	 * then never went through object). */
	void (*cloned)(void *ctx, const uint8_t sha[32], uint64_t size);
	void *ctx;
} fatelf_repo_source;

/*
 * fatelf_bundle_read's contract over a repository's pieces instead of a
 * bundle: the manifest's bytes and its signature's (sig NULL: none),
 * checked by o's rules before it is trusted; the version's pack list
 * (its frames; NULL: every frame canonical); then each entry in manifest
 * order to ops (begin, data, end; select for each FatELF file), with a
 * file's bytes from src: only the objects the form select chose needs.
 * When an entry's whole output is one object (a file, or a FatELF file
 * thinned to one ELF) and both ops->clone and src->local are there, the
 * consumer is first offered the local copy to clone; its staged copy
 * is hashed, and one that is not the object's bytes is dropped and the
 * object read from src after all.
 * Returns 0 when every byte handed on was checked against its hash.
 */
int fatelf_repo_read(const void *manifest, size_t mlen, const char *sig, size_t slen, const fatelf_repo_pack *pack,
		     const fatelf_repo_source *src, const fatelf_bundle_read_opts *o,
		     const fatelf_bundle_reader_ops *ops, fatelf_diag *d);

#endif
