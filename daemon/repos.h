/*
 * fatelfd's repositories (doc/repository.md): their configuration, one
 * file a repository in the Repositories= directory (RepoAdd writes it),
 * the index each accepted last (kept under the state directory, with the
 * serial that blocks a rollback), the downloads of a repository's files
 * through the unprivileged helper's batch mode, and the resolution of
 * "NAME[=VERSION]" to the version a repository offers.
 */
#ifndef FATELFD_REPOS_H
#define FATELFD_REPOS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "fetchchild.h"
#include "repo.h"

#define REPO_NAME_MAX    64
#define REPO_MIRRORS_MAX 16
#define REPO_URL_MAX     2048

struct repo_conf {
	char name[REPO_NAME_MAX];
	char *urls[REPO_MIRRORS_MAX];
	size_t nurls;
	fatelf_ms_pubkey key;
	/* ID=: the identity its index must name from the first update on
	 * (RepoAdd's id); "" when the first update pins it. */
	char id[FATELF_REPO_ID_LEN + 1];
	/* A registry's (doc/repository.md §10): the helper asks for the OCI
	 * media types and answers its auth challenges, with basic (base64
	 * USER:PASSWORD, malloc'd; NULL: anonymous) when it has them. */
	bool oci;
	char *basic;
};

void repo_conf_done(struct repo_conf *r);
/* [a-z0-9][a-z0-9_.-]*, at most 63 bytes. */
bool repo_name_valid(const char *name);
/* An http, https or file URL of at most REPO_URL_MAX bytes with no
 * control character or space; NULL, else the rule it breaks. */
const char *repo_url_problem(const char *url);

/* dir/NAME.conf, an INI file (lib/basic/ini.h): "[Repository]", then
 * URL= lines (in order), Key= and optionally ID=. A refusal is -EINVAL
 * naming FILE:LINE: and the key. */
int repo_conf_load(const char *dir, const char *name, struct repo_conf *ret, fatelf_diag *d);
/* Every repository of dir, by name. */
int repo_conf_list(const char *dir, struct repo_conf **ret, size_t *ret_n, fatelf_diag *d);
void repo_conf_list_free(struct repo_conf *v, size_t n);
/* Writes dir/NAME.conf atomically (dir made when missing). */
int repo_conf_write(const char *dir, const struct repo_conf *r, fatelf_diag *d);
/* Removes dir/NAME.conf and the state kept for it: -ENOENT when none. */
int repo_conf_remove(const char *dir, const char *state_dir, const char *name, fatelf_diag *d);

/*
 * The state directory, for every file the daemon keeps under it (repos/,
 * cache/, last-verify.json): opened once at start, through the engine's
 * checked descriptor (a copy is taken), and never again by name, since
 * in an offline --root the directories above it may belong to a user
 * who could swap them for a symlink while the daemon runs. The name
 * (state_dir below) only names files in messages.
 */
int repo_state_fd_set(int fd);
int repo_state_fd(void);

/* The index accepted last from a repository: -ENOENT when none. */
int repo_state_load(const char *state_dir, const char *name, fatelf_repo_index **ret, fatelf_diag *d);
/* The same, for a verb that trusts what it says (install NAME, upgrade,
 * search): an index whose expiry has passed at now is trusted for
 * nothing, -FATELF_E_REPO_EXPIRED with the facts repository and expires. */
int repo_state_load_fresh(const char *state_dir, const char *name, int64_t now, fatelf_repo_index **ret,
			  fatelf_diag *d);
/*
 * A fetched index, taken only when r's key signed it, it parses, it names
 * the repository pinned (the identity of the index accepted before, when
 * that one had one: FATELF_E_REPO_MISMATCH, checked before the serial),
 * its serial is not below the one accepted before and it has not expired
 * at now; then kept (index.json and its signature, written atomically) and
 * returned. The refusals are FATELF_E_SIG_*, FATELF_E_REPO_*.
 */
int repo_state_accept(const struct repo_conf *r, const char *state_dir, const char *json, size_t len,
		      const char *sig, size_t slen, int64_t now, fatelf_repo_index **ret, fatelf_diag *d);

/* Keeps ix as the repository's index (a repository of type oci, whose
 * index is made here from its registry's tags, not signed). */
int repo_state_keep(const char *state_dir, const char *name, const fatelf_repo_index *ix, fatelf_diag *d);

/* A download of some of a repository's files through the helper. */
struct repo_get {
	const char *path;               /* relative to a mirror's URL */
	uint64_t size;                  /* expected bytes; 0: unknown (then max bounds it) */
	uint64_t max;
	int fd;                         /* written at base + offset (pwrite); -1: into buf */
	uint64_t base;
	/* name set (and fd -1): the bytes go to dirfd/name instead,
	 * opened at their first frame and closed when they are whole, so
	 * that a download of many objects holds few descriptors */
	int dirfd;
	const char *name;
	char *buf;                      /* malloc'd, NUL-terminated */
	size_t len;                     /* bytes received */
	bool done;
	long code;                      /* when it failed: the last HTTP status (0: none) */
	bool too_big;                   /* it failed for more bytes than size, or max */
};

/*
 * Fetches every get from r's mirrors (failover, resume and parallel
 * transfers are the helper's) with cfg's limits; cancel, when set, stops
 * it. 0 when all arrived whole, else -EIO with d naming the file and why
 * (the helper's message), -ECANCELED, -ENOMEM.
 */
int repo_fetch(const engine_config *cfg, const struct repo_conf *r, struct repo_get *gets, size_t n,
	       const atomic_int *cancel, pid_t *pid_slot, fatelf_diag *d);
/* A helper started ahead of its requests (its start, a few milliseconds
 * of loading, then overlaps other work): repo_fetch_each with it as pre
 * hands it the requests and takes it over; repo_helper_discard stops one
 * that was not used. */
struct repo_helper {
	struct fetch_child c;
	int in;                         /* its stdin's write end */
};
int repo_helper_spawn(const engine_config *cfg, const struct repo_conf *r, struct repo_helper *h, fatelf_diag *d);
void repo_helper_discard(struct repo_helper *h);
/* The same, telling event(ctx, i, false) each time bytes of gets[i]
 * arrived (gets[i].len is then how many are in, from its start) and
 * event(ctx, i, true) once it is whole, from the calling thread, so that
 * a consumer may read it as it comes, before the rest. */
int repo_fetch_each(const engine_config *cfg, const struct repo_conf *r, struct repo_get *gets, size_t n,
		    struct repo_helper *pre, const atomic_int *cancel, pid_t *pid_slot,
		    void (*event)(void *ctx, size_t i, bool whole), void *ctx, fatelf_diag *d);

/*
 * "NAME" (its newest version in any repository) or "NAME=VERSION": the
 * repository that offers it and the version. *ret_ix is that repository's
 * index (free it), *ret_v points into it. -ENOENT (PackageNotFound) when
 * no repository offers it.
 */
int repo_resolve(const engine_config *cfg, const char *spec, struct repo_conf *ret_conf,
		 fatelf_repo_index **ret_ix, const fatelf_repo_version **ret_v, fatelf_diag *d);
/* The newest version any repository offers of dep's package that meets
 * its constraint: "NAME=VERSION" in *ret_spec (free it), its depends
 * copied in *ret_deps (free with repo_depends_free). -ENOENT when none. */
int repo_resolve_depend(const engine_config *cfg, const fatelf_depend *dep, char **ret_spec,
			fatelf_depend **ret_deps, size_t *ret_ndeps, fatelf_diag *d);
void repo_depends_free(fatelf_depend *deps, size_t n);
/* A version's depends, copied. */
int repo_depends_copy(const fatelf_repo_version *v, fatelf_depend **ret, size_t *ret_n);

/* A bounded buffer that bytes are appended to (repo_membuf_put, a data
 * callback of fatelf_repo_object_read): -EFBIG past cap. */
struct repo_membuf {
	char *p;
	size_t len, cap;
};
int repo_membuf_put(void *ctx, const void *buf, size_t len);

/* The objects of a registry's manifest: each object's blob, by the
 * object's name (sorted by it), under prefix ("v2/NAME/blobs/sha256:"). */
struct oci_blob_ref {
	uint8_t object[32];
	uint8_t digest[32];
	uint64_t size;
};
struct oci_blobs {
	char prefix[300];
	struct oci_blob_ref *v;
	size_t n;
};
const struct oci_blob_ref *oci_blobs_find(const struct oci_blobs *b, const uint8_t object[32]);

/*
 * The shared half of an install from a repository or a registry: the
 * version rv (its manifest, signature and pack list, fetched and checked
 * by the caller) installed with the engine's repository install, its
 * objects from r's mirrors (oci: where a registry's blobs are, each
 * checked against its digest as it arrives) through pre (taken over; may
 * be unstarted). fs gets what was fetched, but for its metadata.
 */
struct worker;
struct job_fetch;
int repo_install_pieces(struct worker *w, const struct repo_conf *r, const struct oci_blobs *oci,
			struct repo_helper *pre, const engine_repo_version *rv, const engine_install_opts *o,
			engine_result *res, struct job_fetch *fs, fatelf_diag *d);

/* A registry's host (HOST[:PORT]) as a mirror for the helper: http on
 * a loopback address or with PlainHTTP=yes in its registries.d file,
 * else https; its credentials from there (daemon/ociinstall.c). */
int oci_conf_for(const engine_config *cfg, const char *host, struct repo_conf *rc, fatelf_diag *d);
/* The version a repository of type oci (URL=oci://HOST/NAMESPACE)
 * resolved: NAMESPACE/name:version from its registry, signed by its key. */
struct job;
int repo_install_oci(struct worker *w, struct job *j, const struct repo_conf *r, const char *name,
		     const char *version, const engine_install_opts *o, engine_result *res, struct job_fetch *fs);
/* Update of a repository of type oci: the registry's catalog, the tags
 * of each package under NAMESPACE, kept as the repository's index. */
int oci_update(const engine_config *cfg, const struct repo_conf *r, fatelf_repo_index **ret, fatelf_diag *d);

/* A Repository of the interface: r, and what ix (may be NULL) says. */
#include <json-c/json.h>
json_object *json_repository(const struct repo_conf *r, const fatelf_repo_index *ix);

/* Update's thread (daemon/repomethods.c): every repository's index, or
 * j->package's; j->reply on success. */
struct job;
int repo_update_job(struct job *j);

#endif
