/*
 * Fat bundles: one signed archive that a vendor ships to every
 * architecture. This header is the public API of the bundle layer of
 * libfatelf, which sits on top of fatelf.h. It owns:
 *   - minisign keys and signatures (prehashed Ed25519, OpenSSL);
 *   - the manifest (fatbundle.json): its model, a strict parser with
 *     limits, a deterministic serializer, package name and version rules,
 *     and path rules;
 *   - the writer that makes a reproducible bundle from a staging tree;
 *   - the one-pass reader that checks a bundle from any byte source and
 *     hands each entry's (optionally thinned) bytes to a consumer;
 *   - safe file creation beneath a root directory.
 * The specification is doc/fatbundle.md; the manifest's JSON Schema is
 * schema/fatbundle.schema.json. Errors follow fatelf.h: negative codes
 * and a fatelf_diag whose message names the entry and the rule.
 */
#ifndef FATELF_BUNDLE_H
#define FATELF_BUNDLE_H

#include "fatelf.h"
#include "hex.h"
#include "macro.h"
#include "reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Minisign (lib/bundle/minisign.c) */
#define FATELF_MS_KEYID_SIZE 8

typedef struct fatelf_ms_pubkey {
	uint8_t keyid[FATELF_MS_KEYID_SIZE];    /* as stored (little endian) */
	uint8_t pk[32];
} fatelf_ms_pubkey;

typedef struct fatelf_ms_seckey {
	uint8_t keyid[FATELF_MS_KEYID_SIZE];
	uint8_t sk[64];                         /* Ed25519 seed (32) then public key (32) */
} fatelf_ms_seckey;

/*
 * Parses a public key: the contents of a minisign .pub file (an
 * "untrusted comment:" line, then the base64 line) or the bare base64
 * string ("RW..."). Only Ed25519 ("Ed") keys.
 */
int fatelf_ms_pubkey_parse(const char *text, size_t len, fatelf_ms_pubkey *ret, fatelf_diag *d);
/* A path to a .pub file, or an "RW..." string when no such file exists. */
int fatelf_ms_pubkey_load(const char *path_or_key, fatelf_ms_pubkey *ret, fatelf_diag *d);
/* "RW..." base64 form of a public key (NUL-terminated, at most 64 bytes). */
void fatelf_ms_pubkey_format(const fatelf_ms_pubkey *k, char buf[64]);
/* The key id as minisign prints it: upper-case hex of the little-endian 64-bit
 * id, without leading zeros (at most 16 digits). */
void fatelf_ms_keyid_format(const uint8_t keyid[FATELF_MS_KEYID_SIZE], char buf[17]);

/* true when a secret key file's text holds a scrypt-encrypted key. */
bool fatelf_ms_seckey_encrypted(const char *text, size_t len);
/*
 * Parses a minisign secret key file, decrypting it with password (scrypt,
 * parameters from the file) when it is encrypted; password is ignored
 * for an unencrypted key (minisign -G -W). A wrong password fails the
 * key's checksum: FATELF_E_KEY_PASSWORD.
 */
int fatelf_ms_seckey_parse(const char *text, size_t len, const char *password,
			   fatelf_ms_seckey *ret, fatelf_diag *d);

/*
 * A new key pair, as minisign -G makes it: a random key id and Ed25519
 * key. With a password the secret key is encrypted the way minisign
 * encrypts it (scrypt "Sc" with minisign's limits, N = 2^20, r = 8,
 * p = 1); with NULL it is stored unencrypted (minisign -G -W). *ret_pub
 * and *ret_sec get the texts of the .pub and the secret key file
 * (malloc'd: an "untrusted comment:" line, then the key line); *ret_key
 * (may be NULL) the public key.
 */
int fatelf_ms_keygen(const char *password, char **ret_pub, char **ret_sec, fatelf_ms_pubkey *ret_key,
		     fatelf_diag *d);

/*
 * Signs msg in the prehashed form (algorithm "ED": Ed25519 over the
 * BLAKE2b-512 of msg) and returns the text of a .minisig file (malloc'd,
 * NUL-terminated): untrusted comment, signature, trusted comment, global
 * signature. Comments are single lines (NULL: defaults).
 */
int fatelf_ms_sign(const fatelf_ms_seckey *k, const void *msg, size_t len,
		   const char *untrusted_comment, const char *trusted_comment,
		   char **ret_sigtext, fatelf_diag *d);

/* A parsed .minisig file. */
typedef struct fatelf_ms_signature {
	char algorithm[3];                      /* "ED" (prehashed) or "Ed" (legacy) */
	uint8_t keyid[FATELF_MS_KEYID_SIZE];
	uint8_t sig[64];
	char trusted_comment[1024];
	uint8_t global_sig[64];
} fatelf_ms_signature;

int fatelf_ms_sig_parse(const char *text, size_t len, fatelf_ms_signature *ret, fatelf_diag *d);
/*
 * Verifies sigtext over msg with one of keys (the one whose key id the
 * signature names). Only the prehashed form is accepted. Checks the
 * global signature over the trusted comment too. *ret_key (may be NULL)
 * points at the key that verified.
 */
int fatelf_ms_verify(const fatelf_ms_pubkey *keys, size_t nkeys, const void *msg, size_t len,
		     const char *sigtext, size_t siglen, const fatelf_ms_pubkey **ret_key,
		     fatelf_diag *d);

/* SHA-256 helpers (lib/bundle/minisign.c keeps all OpenSSL use in one place) */
typedef struct fatelf_sha256 fatelf_sha256;
fatelf_sha256 *fatelf_sha256_new(void);
void fatelf_sha256_update(fatelf_sha256 *h, const void *buf, size_t len);
/* Writes the digest and resets the context for reuse. */
void fatelf_sha256_final(fatelf_sha256 *h, uint8_t out[32]);
fatelf_sha256 *fatelf_sha256_free(fatelf_sha256 *h);
static inline void fatelf_sha256_freep(fatelf_sha256 **h)
{
	fatelf_sha256_free(*h);
}
#define _cleanup_sha256_ _cleanup_(fatelf_sha256_freep)

/* Manifest (lib/bundle/manifest.c) */
/* The format a manifest without per-arch entries is written in, and
 * the one with them (doc/fatbundle.md, section 2.1). */
#define FATELF_BUNDLE_FORMAT        1
#define FATELF_BUNDLE_FORMAT_PER_ARCH 2
#define FATELF_BUNDLE_FORMAT_MAX    2
#define FATELF_MANIFEST_NAME        "fatbundle.json"
#define FATELF_SIGNATURE_NAME       "fatbundle.json.minisig"
#define FATELF_PAYLOAD_PREFIX       "files/"
/* What 200 000 entries with long paths and FatELF records need, with
 * room to spare (doc/fatbundle.md, "Limits"). */
#define FATELF_MANIFEST_MAX         (128u << 20)
/* Components in a path: deeper trees are refused, so no walk beneath a
 * root (one fd per level) or recursive removal can be driven deep. */
#define FATELF_PATH_DEPTH_MAX       128

typedef struct fatelf_bundle_limits {
	size_t max_path;                /* bytes in a path; default 4095 */
	size_t max_entries;             /* default 200000 */
	uint64_t max_total;             /* sum of file sizes; default 64 GiB */
	size_t max_manifest;            /* bytes of fatbundle.json; 0 or default: FATELF_MANIFEST_MAX */
	unsigned max_format;            /* the newest format read (1: refuse per-arch entries); 0: FATELF_BUNDLE_FORMAT_MAX */
} fatelf_bundle_limits;

/* The one set of defaults that the writer and every reader share. */
void fatelf_bundle_limits_default(fatelf_bundle_limits *ret);
/* The manifest byte limit of lim (the default when it is 0). */
size_t fatelf_bundle_manifest_max(const fatelf_bundle_limits *lim);

enum fatelf_entry_type {
	FATELF_ENTRY_FILE = 1,
	FATELF_ENTRY_DIR,
	FATELF_ENTRY_SYMLINK,
};

enum fatelf_elf_kind {
	FATELF_KIND_DATA = 0,           /* not an ELF */
	FATELF_KIND_ELF,                /* a plain ELF: target is set */
	FATELF_KIND_FATELF,             /* a FatELF: records are set */
};

typedef struct fatelf_bundle_record {
	fatelf_target target;
	uint64_t offset;
	uint64_t size;
	uint8_t sha256[32];
} fatelf_bundle_record;

typedef struct fatelf_bundle_entry {
	char *path;                     /* relative, normalized: "opt/game/bin/game" */
	int type;                       /* enum fatelf_entry_type */
	uint32_t mode;                  /* permission bits, 07777 at most */
	bool setid;                     /* the entry declares its setuid/setgid bits */
	bool config;                    /* a configuration file (kept if the admin changed it) */
	uint64_t size;                  /* files */
	uint8_t sha256[32];             /* files */
	char *link_target;              /* symlinks */
	int kind;                       /* enum fatelf_elf_kind, files */
	fatelf_target target;           /* FATELF_KIND_ELF */
	uint32_t header_size;           /* FATELF_KIND_FATELF: FATELF_TABLE_SIZE(nrecords) */
	unsigned nrecords;
	fatelf_bundle_record *records;
	/* A per-arch entry (format 2): the targets it is installed for,
	 * sorted, each once; 0: every target. Entries that share a path are
	 * all per-arch, of one type, with disjoint targets. */
	unsigned ntargets;
	fatelf_target *targets;
} fatelf_bundle_entry;

typedef struct fatelf_manifest {
	unsigned format;
	char *name;
	char *version;
	char *summary;                  /* optional fields are "" when absent */
	char *vendor;
	char *license;
	char *homepage;
	size_t ntargets;
	fatelf_target *targets;         /* union of every record's, ELF's and per-arch entry's target, sorted */
	size_t nentries;
	fatelf_bundle_entry *entries;   /* sorted by path (byte order), then first target */
	size_t entries_cap;             /* entries allocated */
	uint64_t total_size;            /* sum of file sizes */
	/* Format 2: the packages this one needs, sorted by name, each once
	 * (doc/fatbundle.md section 2.9). */
	size_t ndepends;
	struct fatelf_depend *depends;
} fatelf_manifest;

/*
 * Parses and checks a manifest: JSON syntax (depth-limited), the schema
 * (every field known, typed, present when mandatory), format version,
 * package name and version, every path rule (relative, normalized, no
 * "..", unique, parents listed as dirs, never through a symlink of the
 * bundle), modes (setuid/setgid only with "setid": true), limits, and the
 * consistency of FatELF records (table size, offsets inside the file,
 * sorted targets list equal to the union). lim NULL: defaults.
 */
int fatelf_manifest_parse(const void *json, size_t len, const fatelf_bundle_limits *lim,
			  fatelf_manifest **ret, fatelf_diag *d);
/*
 * Serializes m deterministically (fixed key order, entries sorted, no
 * floating point, two-space indent, final newline). Sorts m's entries and
 * recomputes targets and total_size first. The output parses back equal.
 */
int fatelf_manifest_serialize(fatelf_manifest *m, char **ret_json, size_t *ret_len,
			      fatelf_diag *d);
fatelf_manifest *fatelf_manifest_new(void);
fatelf_manifest *fatelf_manifest_free(fatelf_manifest *m);
static inline void fatelf_manifest_freep(fatelf_manifest **m)
{
	fatelf_manifest_free(*m);
}
#define _cleanup_manifest_ _cleanup_(fatelf_manifest_freep)
/* Appends a zeroed entry (path copied); returns it or NULL on ENOMEM. */
fatelf_bundle_entry *fatelf_manifest_add(fatelf_manifest *m, const char *path, int type);
/* Binary search by path (entries must be sorted): the first entry of
 * path (per-arch entries that share it follow it). */
const fatelf_bundle_entry *fatelf_manifest_find(const fatelf_manifest *m, const char *path);
/* The number of entries that share e's path, e and the ones after it. */
size_t fatelf_manifest_path_count(const fatelf_manifest *m, const fatelf_bundle_entry *e);
/* Whether entry e is installed for target t: a plain entry always, a
 * per-arch one when t is among its targets. */
bool fatelf_entry_for_target(const fatelf_bundle_entry *e, const fatelf_target *t);
/* Whether pattern p matches one of a per-arch entry's targets (a plain
 * entry: always). */
bool fatelf_entry_for_pattern(const fatelf_bundle_entry *e, const fatelf_pattern *p);

/*
 * Per-arch entries and target rules. The targets of m's per-arch
 * entries as the table of a FatELF (records of no size), so that a rule
 * that picks records (fatelf_choose, an install policy) picks the
 * bundle's targets once for all its per-arch entries. The records are in
 * target order, except that with prefer those prefer runs natively come
 * first, then those it runs as compatible targets: the order a host rule
 * takes the first of. 0 records when m has no per-arch entry;
 * FATELF_E_LIMIT past FATELF_MAX_RECORDS.
 */
int fatelf_manifest_per_arch_header(const fatelf_manifest *m, const fatelf_host *prefer, fatelf_header *ret,
				    fatelf_diag *d);
/*
 * Which entries of m are installed when the records keep of hdr (made by
 * fatelf_manifest_per_arch_header for m) are kept: ret[i] for entry i. A
 * plain entry always; a per-arch entry with a path of its own when one of
 * its targets is kept; of the per-arch entries that share a path, the
 * one that has the first kept record (in hdr's order) any of them has.
 * O(targets log targets) an entry.
 */
int fatelf_manifest_select(const fatelf_manifest *m, const fatelf_header *hdr, const fatelf_keepset *keep,
			   bool *ret);

/* Package rules */
bool fatelf_pkg_name_valid(const char *name);
/* NULL when the len bytes of name are a valid package name; else which
 * rule they break and the whole rule, as a phrase that follows the name
 * ("is 1 character long; a package name has 2 to 255 ..."), in buf or a
 * constant. */
const char *fatelf_pkg_name_problem(const char *name, size_t len, char *buf, size_t size);
/* A version as dpkg accepts it: [epoch:]upstream[-revision]. */
bool fatelf_pkg_version_valid(const char *version);
/* dpkg's ordering: <0, 0, >0. */
int fatelf_pkg_version_compare(const char *a, const char *b);

/* Dependencies (lib/bundle/pkgrules.c): "NAME" or "NAME (OP VERSION)" */
enum fatelf_dep_op {
	FATELF_DEP_ANY = 0,             /* no version constraint */
	FATELF_DEP_LT,                  /* << */
	FATELF_DEP_LE,                  /* <= */
	FATELF_DEP_EQ,                  /* = */
	FATELF_DEP_GE,                  /* >= */
	FATELF_DEP_GT,                  /* >> */
};
#define FATELF_DEPENDS_MAX 256
/* Room for the longest entry: name, " (>= ", version, ")", NUL. */
#define FATELF_DEPEND_TEXT_MAX 520

typedef struct fatelf_depend {
	char *name;
	int op;                         /* enum fatelf_dep_op */
	char *version;                  /* NULL with FATELF_DEP_ANY */
} fatelf_depend;

/* Parses the len bytes of text, exactly one form: NAME, or NAME, one
 * space, "(", an operator, one space, a version, ")". On failure the
 * rule it breaks goes to why (a phrase after the entry) and the code is
 * FATELF_E_PKG_NAME, FATELF_E_PKG_VERSION or FATELF_E_INVALID (the
 * form); ret may be NULL to check only. */
int fatelf_depend_parse(const char *text, size_t len, fatelf_depend *ret, char *why, size_t why_size);
void fatelf_depend_clear(fatelf_depend *dep);
/* The text form into buf; its length, or -ENAMETOOLONG. */
int fatelf_depend_format(const fatelf_depend *dep, char *buf, size_t size);
/* "<<", "<=", "=", ">=", ">>"; "" for FATELF_DEP_ANY. */
const char *fatelf_depend_op_text(int op);
/* Whether version (NULL: none) meets dep's constraint. */
bool fatelf_depend_satisfied_by(const fatelf_depend *dep, const char *version);
/* Adds text's dependency to m, kept sorted; a name twice, the package
 * itself or more than FATELF_DEPENDS_MAX are refused. */
int fatelf_manifest_add_depend(fatelf_manifest *m, const char *text, fatelf_diag *d);

/* The path rules for one path on its own (not duplicates or parents).
 * fatelf_path_rule gives the rule that failed without naming the path
 * ("is absolute (...)"), for a caller that names it its own way. */
#define FATELF_PATH_RULE_MAX 128
int fatelf_path_check(const char *path, const fatelf_bundle_limits *lim, fatelf_diag *d);
int fatelf_path_rule(const char *path, const fatelf_bundle_limits *lim, char rule[FATELF_PATH_RULE_MAX]);

/* Safe files beneath a root (lib/bundle/fsroot.c) */
/*
 * Opens the directory that holds path (relative to rootfd), walking
 * component by component without following any symlink and never leaving
 * the root (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where available,
 * else O_NOFOLLOW per component). With mkdirs, missing directories are
 * created with mode 0755. Returns the directory fd and points
 * *ret_base at the last component of path.
 */
int fatelf_root_open_parent(int rootfd, const char *path, bool mkdirs, const char **ret_base,
			    fatelf_diag *d);
/* true when the directory fd holds no entry, as one just made does: a
 * directory someone moved in for it since holds something. */
bool fatelf_dir_is_empty(int fd);

/* Writer (lib/bundle/bundle_write.c) */
enum fatelf_compression {
	FATELF_COMPRESS_ZSTD = 0,       /* default */
	FATELF_COMPRESS_NONE,
	FATELF_COMPRESS_GZIP,
	FATELF_COMPRESS_XZ,
};

typedef struct fatelf_bundle_create_opts {
	const char *name;               /* required */
	const char *version;            /* required */
	const char *summary, *vendor, *license, *homepage;
	int compression;                /* enum fatelf_compression */
	const fatelf_ms_seckey *sign_key;   /* NULL: unsigned */
	const char *trusted_comment;    /* NULL: "fatbundle NAME VERSION" */
	int64_t mtime;                  /* every member's mtime (SOURCE_DATE_EPOCH, else 0) */
	/* Files matching any glob (fnmatch on the relative path) are config
	 * files; NULL/0: everything under etc/. */
	const char *const *config_globs;
	size_t nconfig_globs;
	bool allow_setid;               /* take setuid/setgid bits (else refused) */
	fatelf_bundle_limits limits;    /* zero: defaults */
	/* For out_fd -1: opens the output once the tree passed every check
	 * and the manifest is made, just before the first byte is written,
	 * so that a refused tree leaves no file at all. Returns the fd (the
	 * caller's to close) or a negative code with d set. */
	int (*open_output)(void *userdata, fatelf_diag *d);
	void *userdata;
	/* The package's dependencies in their text form ("NAME (>= 1.2)");
	 * with any, the bundle is format 2. */
	const char *const *depends;
	size_t ndepends;
} fatelf_bundle_create_opts;

/*
 * Makes a bundle of the staging tree at tree (laid out like the target
 * root) and writes it to out_fd. FatELF files are found by their magic and
 * validated (an invalid one is refused with the validator's message);
 * plain ELF files are recorded with their target; anything else is data.
 * Only regular files, directories and symlinks are allowed. The same tree
 * and options give a byte-identical bundle.
 */
int fatelf_bundle_create(const char *tree, int out_fd, const fatelf_bundle_create_opts *o,
			 fatelf_diag *d);

/* Reader (lib/bundle/bundle_read.c) */
/* begin's answer for a file whose bytes are not wanted. */
#define FATELF_BUNDLE_SKIP 1

typedef struct fatelf_bundle_reader_ops {
	/*
	 * After the manifest (and its signature, if any) checked out, before
	 * any payload byte is looked at. signer is the key that verified, or
	 * NULL for an unsigned bundle (allowed only without
	 * require_signature). A negative return stops the read (preflight).
	 */
	int (*manifest)(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
			fatelf_diag *d);
	/*
	 * For each FatELF entry: which records to keep, and in what form. NULL,
	 * or leaving the keep set empty: the file as shipped.
	 */
	int (*select)(void *ctx, const fatelf_bundle_entry *e, const fatelf_header *hdr,
		      fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d);
	/* Each entry in archive order: begin, data (files only; the thinned
	 * bytes for a thinned FatELF), end. status < 0 at end means the entry
	 * failed a check and its bytes must be thrown away; the read then
	 * stops with that error. The SHA-256 checks finish later, on another
	 * core: only fatelf_bundle_read returning 0 says every byte is the
	 * vendor's, so a consumer stages entries and commits none before
	 * that. May be NULL. begin may return FATELF_BUNDLE_SKIP for a file
	 * whose bytes the consumer does not want (an upgrade that leaves the
	 * file in place): its bytes are skipped unread, neither handed out
	 * nor hashed, and its end comes with status 0; the member must still
	 * be there, of the manifest's type and size. */
	int (*begin)(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d);
	int (*data)(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len);
	int (*end)(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d);
	/*
	 * Optional, between begin and end, in place of data: e's whole
	 * output is said to be the first len bytes of fd (a file already on
	 * the machine). The consumer may make what it stages share fd's
	 * extents (clone_file_start) and return a new fd, open for reading,
	 * on its own staged copy; the reader then hashes that copy, not fd,
	 * which anyone may change at any time. A negative errno says it did
	 * not clone, and left nothing staged: the bytes then come through
	 * data. Called with fd -1 it drops what its last clone staged (the
	 * copy failed the reader's check), so that data starts afresh.
	 * Only a source that can say where the bytes lie calls it (a
	 * repository's installed copies); a bundle's reader never does.
	 */
	int (*clone)(void *ctx, const fatelf_bundle_entry *e, int fd, uint64_t len, fatelf_diag *d);
	void *ctx;
} fatelf_bundle_reader_ops;

typedef struct fatelf_bundle_read_opts {
	const fatelf_ms_pubkey *keys;   /* trusted keys */
	size_t nkeys;
	bool require_signature;
	/* When not NULL, the id of a key that made the signature and is not
	 * among keys is written here (FATELF_MS_KEYID_SIZE * 2 + 1 bytes, left
	 * alone otherwise); without require_signature such a signature then
	 * reads as none (signer NULL). A signature that does not parse, or
	 * that a trusted key does not verify, is refused whatever this says. */
	char *untrusted_keyid;
	fatelf_bundle_limits limits;    /* zero: defaults */
	/* When not NULL, a read that succeeds hands its manifest over here
	 * (the caller frees it with fatelf_manifest_free). */
	fatelf_manifest **ret_manifest;
} fatelf_bundle_read_opts;

/*
 * Reads a whole bundle in one pass with O(1) memory (beyond the manifest):
 * the manifest first and its signature checked before any payload byte is
 * trusted, then every member hashed as it streams, each FatELF validated
 * and thinned on the fly, sizes enforced (a member that inflates past its
 * declared size is cut off), every listed entry required exactly once.
 * Returns 0 when every check passed.
 */
int fatelf_bundle_read(const fatelf_reader *src, const fatelf_bundle_read_opts *o,
		       const fatelf_bundle_reader_ops *ops, fatelf_diag *d);
/*
 * The reader's first step on its own, for a source that holds a
 * manifest and its signature apart (a repository): the signature
 * checked by o's rules (keys, require_signature, untrusted_keyid)
 * before the manifest is parsed with o's limits. *ret_signer is the key
 * that verified, or NULL.
 */
int fatelf_bundle_check_manifest(const fatelf_bundle_read_opts *o, const void *manifest, size_t mlen,
				 const char *sig, size_t slen, fatelf_manifest **ret,
				 const fatelf_ms_pubkey **ret_signer, fatelf_diag *d);
/* The same over an fd (any kind: file, pipe, socket; a regular file at
 * offset 0 is mapped, see fatelf_reader_file). */
int fatelf_bundle_read_fd(int fd, const fatelf_bundle_read_opts *o,
			  const fatelf_bundle_reader_ops *ops, fatelf_diag *d);
/* The same over memory. */
int fatelf_bundle_read_mem(const void *buf, size_t len, const fatelf_bundle_read_opts *o,
			   const fatelf_bundle_reader_ops *ops, fatelf_diag *d);

/*
 * Unpacks a bundle into dir (an entry "opt/x" lands at dir/opt/x), thinned
 * to target when target is not NULL (a target name as fatelf.h parses it,
 * or "host"); each file is written under a hidden temp name and renamed
 * when it checked out. Writes never follow symlinks or leave dir.
 */
int fatelf_bundle_extract(int bundle_fd, const char *dir, const char *target,
			  const fatelf_bundle_read_opts *o, fatelf_diag *d);

#ifdef __cplusplus
}
#endif
#endif /* FATELF_BUNDLE_H */
