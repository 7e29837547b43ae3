/*
 * The install engine of libfatelf: what fatelfd does to a root directory.
 * It installs, upgrades and removes packages from fat bundles, thins
 * installed fat files later, verifies files against the store, and
 * recovers a transaction cut off by a crash. Every file lands through a
 * hidden temp name in its own directory; the store's journal says, after
 * a crash, whether a transaction is rolled forward (its store commit
 * happened) or back (it did not), so every package is either wholly as it
 * was or wholly as it became.
 *
 * The engine never logs, prints or exits. It is not thread-safe: one
 * engine (one store connection) per thread; fatelfd runs mutating
 * transactions on one engine in its worker thread and answers queries on
 * another store connection. Only one mutating transaction runs at a time
 * across processes too: the engine holds an exclusive flock on
 * STATE_DIR/lock while it is open for writing.
 *
 * Errors are negative codes of the one error space (diag.h: -errno,
 * -FATELF_E_* or -ENGINE_E_*), with a fatelf_diag whose subject names the
 * path (inside the root) or package concerned and whose facts say what a
 * caller needs to act: the owner of a conflicting path, the versions of a
 * refused downgrade, the bytes a full disk lacks.
 */
#ifndef FATELF_ENGINE_H
#define FATELF_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "fatelf.h"
#include "macro.h"
#include "netrange.h"
#include "repo.h"

/* ------------------------------------------------------------ policy */
enum engine_policy {
	ENGINE_POLICY_NATIVE = 0,       /* the one record the kernel would pick, as an ELF */
	ENGINE_POLICY_COMPATIBLE,       /* every record this host runs */
	ENGINE_POLICY_KEEP,             /* the fat file as shipped */
	ENGINE_POLICY_TARGETS,          /* the records an explicit target list names */
};
const char *engine_policy_name(int policy);  /* "native", ... */
int engine_policy_from_name(const char *name, int *ret);   /* -ENGINE_E_POLICY */

#define ENGINE_TARGETS_MAX 16
typedef struct engine_policy_spec {
	int policy;                             /* enum engine_policy */
	size_t ntargets;                        /* ENGINE_POLICY_TARGETS */
	char *targets[ENGINE_TARGETS_MAX];      /* target names (fatelf_pattern syntax), malloc'd */
} engine_policy_spec;
void engine_policy_spec_done(engine_policy_spec *p);
#define _cleanup_policy_spec_ _cleanup_(engine_policy_spec_done)
/* "native", "compatible", "keep", or "targets:x86_64,i386" as stored in the
 * packages table, and back. */
int engine_policy_spec_format(const engine_policy_spec *p, char *buf, size_t size);
int engine_policy_spec_parse(const char *text, engine_policy_spec *ret, fatelf_diag *d);

/*
 * What a fat file becomes (lib/install/policy.c, pure: no I/O). path is the
 * installed absolute path inside the root ("/opt/x/bin/x"); a path that
 * matches one of keep_fat (fnmatch, FNM_PATHNAME off, so "/opt/shared/ *"
 * covers the whole tree) is kept as shipped whatever the policy.
 * Returns 1 and fills *ret_keep and *ret_form when the file is thinned,
 * 0 when it is kept as shipped, or a negative code:
 * -FATELF_E_NO_HOST_RECORD (message lists the file's targets and the
 * host's) when no record fits; FATELF_E_NO_MATCH for a target list that
 * names nothing in the file.
 */
/* true when a KeepFat glob matches path: the file stays as shipped. */
bool engine_policy_keep_fat(const char *const *keep_fat, size_t nkeep_fat, const char *path);
int engine_policy_select(const engine_policy_spec *p, const char *const *keep_fat, size_t nkeep_fat,
			 const fatelf_host *host, const char *path, const fatelf_header *hdr,
			 fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d);
/*
 * A fat file's header rebuilt from its manifest entry (records with their
 * targets, offsets and sizes), so the installed size is known before any
 * byte is read.
 */
int engine_entry_header(const fatelf_bundle_entry *e, fatelf_header *ret, fatelf_diag *d);
/* The size of a file once installed under the selection (the shipped size
 * when kept as shipped). */
int engine_installed_size(const fatelf_bundle_entry *e, int thinned, const fatelf_keepset *keep,
			  int form, uint64_t *ret, fatelf_diag *d);

/* ------------------------------------------------------------ config */
/*
 * The daemon's settings (lib/conf.c parses fatelfd.conf and its drop-ins
 * into this). Strings are malloc'd and freed by engine_config_done.
 */
#define ENGINE_PROXY_MAX 256

typedef struct engine_config {
	char *root;                     /* default "/" */
	char *state_dir;                /* default "/var/lib/fatelf": fatelf.db, lock */
	engine_policy_spec policy;      /* Policy=, Targets= */
	char **keep_fat;                /* KeepFat= globs (repeatable, space-separated) */
	size_t nkeep_fat;
	bool require_signature;         /* RequireSignature=, default yes */
	char *trusted_keys;             /* TrustedKeys= directory of *.pub; default SYSCONFDIR/fatelf/keys.d */
	char *repos_dir;                /* Repositories= directory of NAME.conf; default SYSCONFDIR/fatelf/repos.d */
	/* Registries= directory of HOST[:PORT].conf (plain HTTP, credentials
	 * of an OCI registry); default SYSCONFDIR/fatelf/registries.d */
	char *registries_dir;
	char *admin_group;              /* AdminGroup=, default NULL (root only) */
	bool durable;                   /* Durable=, default yes: fsync/syncfs before each commit */
	bool ldconfig;                  /* RunLdconfig=, default yes */
	char *ldconfig_path;            /* default "/sbin/ldconfig" */
	fatelf_bundle_limits limits;    /* MaxEntries=, MaxPathLength=, MaxTotalSize= */
	uint64_t max_message;           /* MaxMessageSize= (Varlink), default 1 MiB */
	unsigned max_connections_per_uid; /* MaxConnectionsPerUser=, default 64 */
	/* Bytes the daemon holds for clients (unread replies, messages still
	 * arriving): MaxBufferedPerUser= (16 MiB) for one uid's connections
	 * together, MaxBufferedTotal= (32 MiB) for everyone's. */
	uint64_t max_buffered_per_uid;
	uint64_t max_buffered_total;
	unsigned fetch_timeout;         /* FetchTimeoutSec=: a source silent this long fails; default 60 */
	/* A download that cannot hold the worker, nor reach inside. */
	unsigned fetch_deadline;        /* FetchDeadlineSec=: the whole download; 0: none; default 3600 */
	uint64_t fetch_min_rate;        /* FetchMinRateBytes=: bytes a second, at least; 0: off; default 1024 */
	unsigned fetch_low_speed;       /* FetchLowSpeedSec=: ... over this long; default 30 */
	fatelf_netranges fetch_deny;    /* FetchDenyNetworks=: no hop into these; default FATELF_NETRANGES_DEFAULT */
	/* FetchProxy=: the one proxy downloads go through (scheme://host[:port],
	 * no credentials); empty: none, whatever the environment says. */
	char fetch_proxy[ENGINE_PROXY_MAX];
	/* MetricsFile=: the Prometheus text file fatelfd keeps for
	 * node_exporter's textfile collector; NULL: none (the default). */
	char *metrics_file;
} engine_config;

void engine_config_init(engine_config *c);      /* the defaults */
void engine_config_done(engine_config *c);
#define _cleanup_engine_config_ _cleanup_(engine_config_done)
/* A deep copy of src (engine_config_done frees it). */
int engine_config_copy(engine_config *dst, const engine_config *src);

/* ------------------------------------------------------------ engine */
typedef struct engine engine;

enum {
	ENGINE_OPEN_READONLY = 1 << 0,  /* queries and verify only: no lock, no recovery */
};
/*
 * Opens the store (STATE_DIR/fatelf.db, created with its directory when
 * missing), takes the lock, and recovers any transaction a crash cut off
 * (ret_recovered, may be NULL: how many). c is copied (deeply). keys are
 * copied too.
 */
int engine_open(const engine_config *c, const fatelf_ms_pubkey *keys, size_t nkeys, unsigned flags,
		engine **ret, unsigned *ret_recovered, fatelf_diag *d);
engine *engine_close(engine *e);
static inline void engine_closep(engine **e)
{
	engine_close(*e);
}
#define _cleanup_engine_ _cleanup_(engine_closep)
/* The store, for queries (lib/install/store.h). */
struct store *engine_store(engine *e);
/* The path that reaches the engine's database through the state directory
 * it checked ("/proc/self/fd/N/fatelf.db"), for another connection to the
 * same store; valid while the engine is open. */
const char *engine_db_path(engine *e);
/* The state directory as the engine walked and checked it at open (an
 * O_RDONLY descriptor, the engine's own: valid while it is open). */
int engine_state_fd(engine *e);
const fatelf_host *engine_host(engine *e);
const engine_config *engine_get_config(engine *e);
/* Replaces the engine's settings and trusted keys (both copied) between
 * two operations. The root and the state directory stay those it was
 * opened with: -EINVAL when c names others. */
int engine_reconfigure(engine *e, const engine_config *c, const fatelf_ms_pubkey *keys, size_t nkeys,
		       fatelf_diag *d);

/* Progress of a long operation. Return negative from the callback to
 * cancel: the engine rolls back and returns -ECANCELED. */
typedef struct engine_progress {
	const char *phase;              /* as in io.fatelf.Manager Progress */
	uint64_t bytes_done, bytes_total;
	uint64_t entries_done, entries_total;
	const char *path;               /* NULL when none */
	const char *package;            /* the package worked on; NULL when none (yet) */
} engine_progress;
typedef int (*engine_progress_cb)(const engine_progress *p, void *userdata);

/* A path an install took over with force, and the package that owned it
 * (NULL: a file on disk that no package owned). A config file that a
 * removed package left behind (its kept_configs row) is owned by none:
 * kept_by and kept_version name that package (else NULL). */
typedef struct engine_taken {
	char *path;
	char *from;
	char *kept_by;
	char *kept_version;
} engine_taken;

/* A file installed fat that this machine cannot load as it is. */
typedef struct engine_warning {
	char *path;
	const char *reason;             /* static: ENGINE_WARN_* */
} engine_warning;

/* The reasons of engine_warning, as they travel in replies. */
#define ENGINE_WARN_FAT_LIBRARY "fat-shared-library"   /* no dynamic linker loads it */
#define ENGINE_WARN_NO_BINFMT   "no-binfmt-handler"    /* the FatELF handler is not registered */

typedef struct engine_result {
	int64_t txid;                   /* history row (0 for a dry run) */
	const char *kind;               /* "install", "upgrade", "remove", "thin" (static) */
	/* for an install, what it did to the package: "install", "upgrade",
	 * "reinstall" (the same version) or "downgrade" (static) */
	const char *change;
	engine_taken *taken;            /* paths taken over with force */
	size_t ntaken;
	char **emptied;                 /* other packages that --force left owning no file */
	size_t nemptied;
	engine_warning *warnings;
	size_t nwarnings;
	char *package;                  /* malloc'd; NULL for a thin of several */
	char *old_version;
	char *new_version;
	uint64_t files;                 /* files written, thinned or removed */
	uint64_t bytes_written;
	int64_t bytes_saved;            /* against the files as shipped */
	/* Install: files of the old version that the new one ships with the
	 * same bytes, left in place (not counted in files or bytes_written) */
	uint64_t files_unchanged;
	uint64_t bytes_unchanged;
	bool dry_run;
	/* Remove: the package's config files went too (purge), or only they
	 * did: the package was no longer installed, and what its removal had
	 * kept was purged (config_files_only) */
	bool purge;
	bool config_files_only;
	char **config_kept;             /* paths whose admin copy was kept (NULL-terminated) */
	size_t nconfig_kept;
	/* Install: "verified" (signer is the trusted key), "unverified" (signed
	 * by signer, a key that is not trusted, and installed as unsigned
	 * because no signature was required) or "none"; NULL otherwise. */
	const char *signature;
	char signer[17];
} engine_result;
void engine_result_done(engine_result *r);
#define _cleanup_engine_result_ _cleanup_(engine_result_done)

typedef struct engine_install_opts {
	const engine_policy_spec *policy;   /* NULL: the configured policy */
	bool allow_unsigned;            /* accept an unsigned bundle even with RequireSignature,
					 * or one signed by a key that is not trusted (read as
					 * unsigned); a signature that a trusted key does not
					 * verify is refused all the same */
	bool force;                     /* take over conflicting paths */
	bool allow_downgrade;
	bool allow_setid;               /* install setuid/setgid files (root callers) */
	bool dry_run;                   /* preflight only: report, write nothing */
	/* the FatELF binfmt_misc handler is registered and enabled, so a fat
	 * executable runs as it is (else one installed fat gets a warning) */
	bool fat_executables_run;
	engine_progress_cb progress;
	void *userdata;
	/* When the read fails, before the history row is written: a byte
	 * source that knows better why it ended (a download whose helper
	 * failed, so the archive only looked short) may replace d and return
	 * its own error; it returns r to leave the read's error standing. */
	int (*source_failed)(void *source_ctx, int r, fatelf_diag *d);
	void *source_ctx;
	/* Another source than a bundle (src is then unused): drives ops as
	 * fatelf_bundle_read does, with ro's keys, limits and handover; a
	 * repository's objects (fatelf_repo_read) are read this way. */
	int (*drive)(void *drive_ctx, const fatelf_bundle_read_opts *ro, const fatelf_bundle_reader_ops *ops,
		     fatelf_diag *d);
	void *drive_ctx;
	/* Told, at the end of the preflight, of every object the staging
	 * will read (dry runs too): a file's (e, its sha256, its size), each
	 * record a thinned FatELF file keeps, or every record of one kept
	 * whole and then (e, NULL, 0) for its frame; then once (NULL, NULL,
	 * 0). m is the reader's manifest (e may be a copy of one of its
	 * entries). A repository's source fetches them then. */
	int (*needs)(void *needs_ctx, const fatelf_manifest *m, const fatelf_bundle_entry *e, const uint8_t *sha,
		     uint64_t size, fatelf_diag *d);
	void *needs_ctx;
	/* One transaction with other installs (engine_group_new): the
	 * install stages and waits for engine_group_commit. */
	struct engine_group *group;
	/* Where the bundle comes from, recorded with the package (copied:
	 * valid during the call only); unknown: not recorded. */
	int source_type;                /* a store_source (store.h) */
	const char *source;
	/* Installed only because another package depends on it: a package
	 * not installed before is recorded automatic (autoremove may remove
	 * it); an installed one keeps its mark. */
	bool automatic;
	/* Asked for by name or file (not an upgrade or a repair): an
	 * installed package marked automatic is no longer. */
	bool manual;
} engine_install_opts;

/*
 * Several installs as one transaction, all or none. Each engine_install
 * given the group in its opts runs its preflight and stages its files,
 * then returns 0 with its *ret not yet filled (ret must stay valid);
 * engine_group_commit then commits all of them at one commit point and
 * fills each one's *ret. A package named twice, or a file or symlink that
 * two of the installs write or remove, is ENGINE_E_CONFLICT in the
 * preflight of the second. A failure of one install leaves the others
 * staged: the caller then calls engine_group_abort, which rolls every one
 * back with the failure's code and text in its history row. A dry run's
 * installs finish at once (nothing to commit), checked against each other
 * all the same.
 */
typedef struct engine_group engine_group;
engine_group *engine_group_new(engine *e);
int engine_group_commit(engine_group *g, fatelf_diag *d);
/* Whether every member's dependencies are met by the group's members or
 * the installed packages (ENGINE_E_DEPENDENCY_MISSING): what
 * engine_group_commit checks first, for a dry run's group too. */
int engine_group_check(engine_group *g, fatelf_diag *d);
void engine_group_abort(engine_group *g, int code, const fatelf_diag *why);
/* Rolls back (cancelled) whatever is staged and not committed. */
void engine_group_free(engine_group *g);
static inline void engine_group_freep(engine_group **p)
{
	engine_group_free(*p);
}
#define _cleanup_engine_group_ _cleanup_(engine_group_freep)

/* A repository install (lib/install/engine_repo.c). */
typedef struct engine_repo_version {
	const void *manifest;           /* fatbundle.json's bytes */
	size_t manifest_len;
	const char *sig;                /* its signature's, or NULL */
	size_t sig_len;
	const fatelf_repo_pack *pack;
} engine_repo_version;

typedef struct engine_repo_fetch {
	/* Fetches objs (none of which is on the machine) so that object
	 * can read them; called once with all an install needs, before the
	 * first file is staged, and again for one whose local copy changed.
	 * An object's csize is 0 when there is no pack list to say it. */
	int (*fetch)(void *ctx, const fatelf_repo_object *objs, size_t n, fatelf_diag *d);
	/* A fetched object's bytes, checked (fatelf_repo_source.object). */
	int (*object)(void *ctx, const uint8_t sha[32], uint64_t size,
		      int (*data)(void *dctx, const void *buf, size_t len), void *dctx, fatelf_diag *d);
	/* Optional: an object's compressed size when there is no pack list
	 * (a registry's layer says it), 0 when not known. */
	uint64_t (*csize)(void *ctx, const uint8_t sha[32]);
	void *ctx;
} engine_repo_fetch;

typedef struct engine_repo_stats {
	uint64_t objects;               /* distinct objects the install reads */
	uint64_t local;                 /* ... read from files already installed */
	uint64_t cloned;                /* ... of those, cloned (sharing their extents) */
	uint64_t fetched;               /* ... fetched */
	uint64_t fetch_bytes;           /* their compressed bytes (a dry run: what it would fetch); 0
					 * without a pack list or csize, which alone say them beforehand */
} engine_repo_stats;

/*
 * engine_install of the version v describes, its objects from files
 * already installed with the same bytes, else from f. o's drive and
 * needs are the function's own. stats is filled on success and on
 * failure alike (a dry run: what the install would fetch).
 */
int engine_install_repo(engine *e, const engine_repo_version *v, const engine_repo_fetch *f,
			const engine_install_opts *o, engine_repo_stats *stats, engine_result *ret, fatelf_diag *d);

/*
 * Installs (or upgrades) the package in the bundle that src yields, in one
 * pass: preflight (signature, paths, conflicts, setid, disk space for the
 * bytes written after thinning, version order), then every entry staged
 * under a hidden temp name, then one store commit and the renames, then
 * ldconfig if a shared library landed in a loader directory. On any
 * failure nothing in the root or the store changes, and a failed history
 * row records the error. *ret is filled only on success (free it with
 * engine_result_done); on failure it is left untouched.
 */
int engine_install(engine *e, const fatelf_reader *src, const engine_install_opts *o,
		   engine_result *ret, fatelf_diag *d);

typedef struct engine_remove_opts {
	bool dry_run;
	/* also the config files the admin changed, and the PATH.fatelf-new
	 * files an upgrade left beside config files (owned by no package) */
	bool purge;
	engine_progress_cb progress;
	void *userdata;
} engine_remove_opts;
/* Removes a package's files (keeping config files the admin changed), then
 * the directories it owned that are now empty and owned by no other
 * package. *ret is filled only on success. */
int engine_remove(engine *e, const char *package, const engine_remove_opts *o,
		  engine_result *ret, fatelf_diag *d);
/* Several packages removed as one transaction, all or none: every one is
 * found and planned first (one that is not installed, or named twice,
 * removes none: its name is the diag's package), then all commit at one
 * commit point. rets[i] (n of them) is filled only on success. */
int engine_remove_many(engine *e, const char *const *packages, size_t n, const engine_remove_opts *o,
		       engine_result *rets, fatelf_diag *d);
/* The automatic packages nothing needs any more: those no installed
 * package outside the list depends on (a cycle of them only needing each
 * other is in it), sorted by name, in *ret (free each and the array). */
int engine_autoremove_list(engine *e, char ***ret, size_t *ret_n, fatelf_diag *d);

typedef struct engine_thin_opts {
	const char *const *packages;    /* NULL-terminated; NULL: all packages */
	const engine_policy_spec *policy; /* NULL: the configured policy */
	bool dry_run;                   /* report what would be saved */
	engine_progress_cb progress;
	void *userdata;
} engine_thin_opts;
/*
 * Thins installed fat files to the policy: each file is rewritten under a
 * temp name, its kept records checked against the vendor's record hashes,
 * and replaced atomically; the store gets the new form, size and hash and
 * the records' kept flags. One transaction (one history row) for the
 * whole call. Files already as thin as the policy asks are left alone; a
 * call with nothing to thin writes nothing and no history row (txid 0).
 */
int engine_thin(engine *e, const engine_thin_opts *o, engine_result *ret, fatelf_diag *d);

/* Verify problems */
enum engine_problem {
	ENGINE_PROBLEM_MISSING = 1,
	ENGINE_PROBLEM_TYPE,            /* not a regular file / symlink, or link target differs */
	ENGINE_PROBLEM_MODE,
	ENGINE_PROBLEM_CONTENT,         /* sha256 differs from the installed hash */
	ENGINE_PROBLEM_RECORD,          /* a kept record's bytes differ from the vendor's */
	ENGINE_PROBLEM_OWNER,           /* a directory root does not own any more */
};
const char *engine_problem_name(int problem);   /* "missing", "type", ... */
typedef int (*engine_problem_cb)(const char *package, const char *path, int problem,
				 const char *detail, void *userdata);
/* Checks each file of package (NULL: all) against the store: existence,
 * type, mode, content, and for thinned fat files each kept record against
 * the vendor's record hash; then each of its directories: a directory
 * (not a symlink), owned by the engine's uid, with its mode as installed. cb gets each problem (a negative return stops
 * the walk and is returned); returns the number of files checked
 * (*ret_problems: problems found). Config files are not checked for
 * content: the admin may change them. */
int engine_verify(engine *e, const char *package, engine_problem_cb cb, void *userdata,
		  uint64_t *ret_problems, fatelf_diag *d);


/* ------------------------------------------------------------ test hooks */
/*
 * Failpoints: in builds configured with --enable-failpoints, the engine
 * calls engine_failpoint("name") at each step, and when the environment
 * variable FATELF_FAILPOINT equals that name (optionally "name:N" for the
 * Nth hit) the process is killed with SIGKILL there. A no-op otherwise.
 */
void engine_failpoint(const char *name);

#endif
