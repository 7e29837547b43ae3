/*
 * The one error space of every layer, and the diagnostic that carries a
 * failure. Functions return 0 (or a count) on success and a negative code
 * on failure: -errno, -FATELF_E_* or -ENGINE_E_*. Codes are always passed
 * around negated, fatelf_diag_set and fatelf_diag.code included; only the
 * enum below spells them positive. A failure's facts travel in the
 * diag's typed fields, never in its message: the message is for people.
 */
#ifndef FATELF_DIAG_H
#define FATELF_DIAG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "errors.h"

/*
 * The other layers' codes, after the format's (errors.h). Functions
 * return them negated.
 */
enum fatelf_error_more {
	FATELF_E_AFTER_FORMAT = FATELF_E_INVALID,
	/* minisign keys and signatures (lib/bundle/minisign.c) */
	FATELF_E_KEY_FORMAT,            /* not a minisign Ed25519 key */
	FATELF_E_KEY_PASSWORD,          /* wrong password (secret key checksum) */
	FATELF_E_SIG_FORMAT,            /* not a minisign signature */
	FATELF_E_SIG_ALGORITHM,         /* legacy non-prehashed signature */
	FATELF_E_SIG_KEY,               /* signed by a key that is not trusted */
	FATELF_E_SIG_INVALID,           /* signature does not match the data */
	FATELF_E_SIG_COMMENT,           /* trusted comment signature does not match */
	FATELF_E_SIG_MISSING,           /* a signature is required and there is none */
	/* bundle manifest (lib/bundle/manifest.c) */
	FATELF_E_MANIFEST_JSON,         /* not JSON, or nested too deep */
	FATELF_E_MANIFEST_TOO_BIG,      /* larger than the limit (4 MiB) */
	FATELF_E_MANIFEST_SCHEMA,       /* a field missing, unknown or of the wrong type */
	FATELF_E_MANIFEST_FORMAT,       /* unsupported bundle format version */
	FATELF_E_PKG_NAME,              /* package name breaks [a-z0-9][a-z0-9+.-]* */
	FATELF_E_PKG_VERSION,           /* package version breaks the dpkg rules */
	FATELF_E_PATH_ABSOLUTE,         /* an absolute path */
	FATELF_E_PATH_DOTDOT,           /* a path with a ".." component */
	FATELF_E_PATH_INVALID,          /* empty, ".", "//", trailing "/", control bytes, invalid UTF-8 */
	FATELF_E_PATH_DUPLICATE,        /* two entries with one path */
	FATELF_E_PATH_SYMLINK,          /* a path through a symlink the bundle creates */
	FATELF_E_PATH_PARENT,           /* an entry whose parent directory is not in the bundle */
	FATELF_E_MODE,                  /* setuid/setgid not declared, or bits beyond 07777 */
	FATELF_E_LIMIT,                 /* path length, entry count or total size limit */
	FATELF_E_RECORDS,               /* a FatELF entry's records disagree with its file */
	/* bundle archives (lib/bundle/bundle_read.c) */
	FATELF_E_ARCHIVE,               /* the archive is damaged or truncated */
	FATELF_E_MEMBER_ORDER,          /* fatbundle.json is not the first member */
	FATELF_E_MEMBER_UNKNOWN,        /* a member the manifest does not list */
	FATELF_E_MEMBER_MISSING,        /* a listed entry with no member */
	FATELF_E_MEMBER_DUPLICATE,      /* two members for one entry */
	FATELF_E_MEMBER_TYPE,           /* hard link, device, FIFO, socket, or type differs */
	FATELF_E_MEMBER_SIZE,           /* member size differs from the manifest (or inflates past it) */
	FATELF_E_HASH,                  /* a file's SHA-256 differs from the manifest */
	FATELF_E_RECORD_HASH,           /* a FatELF record's SHA-256 differs from the manifest */
	/* Debian packages as sources of a bundle (lib/unify/deb.c) */
	FATELF_E_DEB_FORMAT,            /* not a .deb: ar container, member order, debian-binary, member archive */
	FATELF_E_DEB_CONTROL,           /* a .deb's control file or conffiles breaks its syntax */
	/* one bundle of several architectures' builds (lib/unify/unify.c) */
	FATELF_E_UNIFY_TYPE,            /* a path's entry types differ across sources */
	FATELF_E_UNIFY_MISSING,         /* a path in some sources only, not allowed per-arch */
	FATELF_E_UNIFY_MODE,            /* a path's permission bits differ across sources */
	FATELF_E_UNIFY_SYMLINK,         /* a symlink's targets differ across sources */
	FATELF_E_UNIFY_DIFFERS,         /* different bytes, not all ELF, not allowed per-arch */
	FATELF_E_UNIFY_TARGET,          /* two sources give ELF files of one target */
	FATELF_E_UNIFY_ARCH,            /* an ELF file's target is not its source's ARCH */
	FATELF_E_UNIFY_FIELD,           /* two .deb sources disagree on a control field */
	FATELF_E_UNIFY_SCRIPTS,         /* a .deb source has maintainer scripts */
	/* the install engine (lib/install); their names keep the ENGINE_E_
	 * prefix, which replies carry */
	ENGINE_E_CONFLICT,              /* path owned by another package, or unowned on disk */
	ENGINE_E_DOWNGRADE,             /* offered version older than installed, no allow_downgrade */
	ENGINE_E_NOT_INSTALLED,         /* no such package */
	ENGINE_E_DISK_FULL,             /* preflight: not enough free space */
	ENGINE_E_POLICY,                /* a bad policy or target list */
	ENGINE_E_SETID,                 /* setuid/setgid file and the caller may not install it */
	ENGINE_E_LOCKED,                /* another process holds the state directory */
	ENGINE_E_DIR_UNSAFE,            /* an existing directory another uid owns or may write in */
	ENGINE_E_NAME_RESERVED,         /* a bundle entry named like the engine's temp files */
	ENGINE_E_HELD,                  /* another version of a held package, without force */
	ENGINE_E_DEPENDENCY_MISSING,    /* a dependency neither installed nor in the transaction */
	ENGINE_E_DEPENDENCY_BROKEN,     /* removing a package installed ones depend on */
	/* repositories (lib/repo/repo*.c, doc/repository.md) */
	FATELF_E_REPO_FORMAT,           /* not a repository, or its pointer file is broken */
	FATELF_E_REPO_INDEX,            /* the index breaks its syntax or schema */
	FATELF_E_REPO_ROLLBACK,         /* the index is older than one already accepted */
	FATELF_E_REPO_EXPIRED,          /* the index's expiry has passed */
	FATELF_E_REPO_PACK,             /* a pack list breaks its syntax or misses an object */
	FATELF_E_REPO_OBJECT,           /* an object is corrupt: not zstd, wrong size or hash */
	FATELF_E_REPO_MISSING,          /* a file of the repository is not there */
	FATELF_E_REPO_OCI,              /* a registry's index or manifest is not a fatelf artifact's */
	FATELF_E_REPO_LIMIT,            /* a registry's reply, or what an update takes of it, past its bound */
	FATELF_E_REPO_MISMATCH,         /* the index names another repository than the one pinned */
	FATELF_E_MAX
};


/* What libfatelf.so exports (include/fatelf/libfatelf.h declares these
 * four functions too, and installs errors.h with the format's codes). */
#ifndef FATELF_PUBLIC
#define FATELF_PUBLIC __attribute__((visibility("default")))
#endif

/* One static string per code, for -errno too (strerror wording). */
FATELF_PUBLIC const char *fatelf_strerror(int code);
/* The code's stable symbolic name, e.g. "FATELF_E_ALIGN",
 * "ENGINE_E_CONFLICT", "ENOENT". */
FATELF_PUBLIC const char *fatelf_error_name(int code);

/*
 * The diagnostic for a failure. msg never names the file (the caller knows
 * it and prefixes it); it does name the record and the rule, for example
 * "record 2 (aarch64:64bits:le:sysv:osabiver0): offset 0x3008 is not
 * aligned to 4096". subject is set by functions that deal with several
 * files (glue inputs, outputs) to the path the message is about; it is ""
 * otherwise.
 *
 * Beside the message, the facts of the failure as typed fields, filled
 * where the code that fails knows them: a caller that needs a fact (the
 * daemon's error replies) reads the field, never the message. A string
 * field is "" and a number field's FATELF_DIAG_HAS_* bit is clear when the
 * fact is unknown.
 */
#define FATELF_DIAG_NAME_MAX 256        /* package names, versions */
#define FATELF_DIAG_TARGET_MAX 96       /* one target name (FATELF_TARGET_NAME_MAX) */
#define FATELF_DIAG_TARGETS_MAX 16      /* offered targets kept; more are dropped */

enum {
	FATELF_DIAG_HAS_NEEDED = 1 << 0,
	FATELF_DIAG_HAS_AVAILABLE = 1 << 1,
	FATELF_DIAG_HAS_UID = 1 << 2,
	FATELF_DIAG_HAS_MODE = 1 << 3,
	/* msg already names subject ("SUBJECT: ..."): whoever adds the
	 * subject in front of msg leaves it as it is */
	FATELF_DIAG_NAMED = 1 << 4,
	FATELF_DIAG_HAS_EXPIRES = 1 << 5,
};

typedef struct fatelf_diag {
	int code;           /* the negative code returned, 0 if none */
	int record;         /* record index the message is about, -1 if none */
	char subject[4096]; /* the path or entry it is about */
	char msg[512];
	/* facts */
	unsigned has;                           /* FATELF_DIAG_HAS_* */
	char package[FATELF_DIAG_NAME_MAX];     /* the package it is about */
	char owner[FATELF_DIAG_NAME_MAX];       /* the package that owns subject */
	char installed[FATELF_DIAG_NAME_MAX];   /* the installed version */
	char offered[FATELF_DIAG_NAME_MAX];     /* the version a bundle offers */
	char target[FATELF_DIAG_TARGET_MAX];    /* the target asked for */
	char key_id[17];                        /* a minisign key id, 16 hex digits */
	char dependency[FATELF_DIAG_NAME_MAX];  /* the package a dependency names */
	char constraint[FATELF_DIAG_NAME_MAX];  /* its constraint, "OP VERSION" ("" for any) */
	char dependents[1024];                  /* packages that depend on package, comma-separated */
	char repository[64];                    /* the repository (of a machine's configuration) */
	char expected[64], got[64];             /* a repository's identity: pinned, and in the index */
	long long expires;                      /* when an index expired, seconds since the epoch */
	unsigned long long needed, available;   /* bytes */
	unsigned uid, mode;                     /* of an existing path */
	unsigned ntargets;                      /* the targets a file offers */
	char targets[FATELF_DIAG_TARGETS_MAX][FATELF_DIAG_TARGET_MAX];
} fatelf_diag;

/* The version string of the libraries ("0.1.0"). */
FATELF_PUBLIC const char *fatelf_version(void);

/* Clears code, message and every fact. */
FATELF_PUBLIC void fatelf_diag_clear(fatelf_diag *d);
/*
 * Sets code, record and message of d (if not NULL) and returns code.
 * code is negative, as returned (-EIO, -FATELF_E_ALIGN): the one
 * convention of every caller. The facts are left as they are, so a
 * function may fill them before or after. printf-style.
 */
int fatelf_diag_set(fatelf_diag *d, int code, int record, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * fatelf_diag_set for a message about one path or entry: the message is
 * "SUBJECT: " and the formatted rest, subject becomes SUBJECT, and
 * FATELF_DIAG_NAMED says the message names it. Returns code.
 */
int fatelf_diag_at(fatelf_diag *d, int code, int record, const char *subject, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/*
 * Running out of memory, said one way: sets d (if not NULL) to -ENOMEM
 * and the one wording, and returns -ENOMEM. Every function with a diag
 * at hand returns its out-of-memory failures through this, so that the
 * code returned and the diag agree; one without a diag returns -ENOMEM.
 */
int fatelf_diag_oom(fatelf_diag *d);
/*
 * The text of failure r, the one way to read it: d's message when d
 * holds that failure (d->code is r and a message is set), else r's own
 * wording (fatelf_strerror, and fatelf_diag_oom's for -ENOMEM). A
 * message d keeps from another failure is never shown for r. d may be
 * NULL.
 */
const char *fatelf_diag_text(const fatelf_diag *d, int r);
/* Makes subject d's subject and says that d's message, already set,
 * names it (FATELF_DIAG_NAMED): for a message such as "entry 'x': ..."
 * or "package x is not installed". d may be NULL. */
void fatelf_diag_names(fatelf_diag *d, const char *subject);
/* Copies s into one of d's string facts, by its offset (cut to fit); d
 * may be NULL. FATELF_DIAG_FACT(d, owner, "base") names the field. */
void fatelf_diag_fact(fatelf_diag *d, size_t offset, size_t size, const char *s);
#define FATELF_DIAG_FACT(d, field, s) \
	fatelf_diag_fact((d), offsetof(fatelf_diag, field), sizeof(((fatelf_diag *)0)->field), (s))
/* Adds a target the file offers (beyond FATELF_DIAG_TARGETS_MAX: dropped). */
void fatelf_diag_add_target(fatelf_diag *d, const char *target);

#ifdef __cplusplus
}
#endif

#endif
