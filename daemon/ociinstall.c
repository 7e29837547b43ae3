/*
 * Install{url: "oci://HOST[:PORT]/NAME[:TAG|@sha256:HEX]"}: a package
 * version from an OCI registry (doc/repository.md §10). The worker fetches
 * the image index, then the one manifest this install needs (its target's
 * under policy native, else the fat one), then that manifest's config (the
 * signed fat manifest) and pack list, each checked against the digest that
 * names it. Then the repository install takes over: only the objects that
 * no installed file already has are fetched, each blob checked against its
 * digest once whole and each object against its hash as it is staged.
 * Every request goes through the unprivileged helper, which also answers
 * the registry's auth challenges.
 *
 * A registry's settings are SYSCONFDIR/fatelf/registries.d/HOST[:PORT].conf
 * (Registries=), an INI file (lib/basic/ini.h):
 *
 *   [Registry]
 *   PlainHTTP=yes            plain HTTP to a registry that is not on a
 *                            loopback address (which always is)
 *   Credentials=/abs/path    USER:PASSWORD on one line, in a regular file
 *                            of root's that no one else may read
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hashset.h"
#include "hex.h"
#include "ini.h"
#include "io.h"
#include "macro.h"
#include "oci.h"
#include "path.h"
#include "repos.h"
#include "worker_private.h"

#define CREDENTIALS_MAX 1024

static char *base64(const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *s = malloc(4 * ((n + 2) / 3) + 1), *o = s;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);

		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		*o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*o = '\0';
	return s;
}

/* USER:PASSWORD from path, as base64 for the helper. The file must be
 * root's, regular, and read by no one else. */
static int read_credentials(const char *conf, const char *path, char **ret, fatelf_diag *d)
{
	char buf[CREDENTIALS_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), k = 0;

	if (fd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: Credentials: %s: %s", conf, path, fatelf_strerror(-errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0) {
		close(fd);
		return fatelf_diag_set(d, -EPERM, -1,
				       "%s: Credentials: %s must be a regular file of root's that no one else may "
				       "read (mode 0600)", conf, path);
	}
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", path, fatelf_strerror(-errno));
	len = (size_t)n;
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > CREDENTIALS_MAX || !memchr(buf, ':', len) || buf[0] == ':')
		k = -EINVAL;
	for (size_t i = 0; i < len && k == 0; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			k = -EINVAL;
	if (k == 0 && !(*ret = base64((unsigned char *)buf, len)))
		k = -ENOMEM;
	explicit_bzero(buf, sizeof(buf));
	if (k == -EINVAL)
		return fatelf_diag_set(d, k, -1, "%s: Credentials: %s must hold USER:PASSWORD on one line", conf,
				       path);
	return k;
}

/* The settings of the registry host (HOST[:PORT]), when there are any. */
static int registry_settings(const engine_config *cfg, const char *host, bool *ret_plain, char **ret_basic,
			     fatelf_diag *d);

int oci_conf_for(const engine_config *cfg, const char *host, struct repo_conf *rc, fatelf_diag *d)
{
	fatelf_oci_ref ref;
	char url[300];
	bool plain = false;
	int k;

	snprintf(url, sizeof(url), "oci://%s/x", host);
	if (fatelf_oci_ref_parse(url, false, &ref) < 0)
		return fatelf_diag_set(d, -EINVAL, -1, "%s: not a registry's host", host);
	k = registry_settings(cfg, host, &plain, &rc->basic, d);
	if (k < 0)
		return k;
	snprintf(url, sizeof(url), "%s://%s/", plain ? "http" : ref.scheme, host);
	rc->urls[0] = strdup(url);
	if (!rc->urls[0])
		return fatelf_diag_oom(d);
	rc->nurls = 1;
	rc->oci = true;
	return 0;
}

/* What a repository of type oci asks of the version it resolved: its
 * name and version, signed by the repository's key. */
struct oci_want {
	const char *name, *version;
	const fatelf_ms_pubkey *key;
	const char *repo;
};

/* The version a repository resolved: its name and version, signed by the
 * repository's key (beside the TrustedKeys check every install makes). */
static int oci_check_want(const engine_config *cfg, const struct oci_want *want, const char *shown,
			  const void *manifest, size_t mlen, const char *sig, size_t slen, fatelf_diag *d)
{
	fatelf_manifest *m = NULL;
	int k;

	if (!sig) {
		FATELF_DIAG_FACT(d, package, want->name);
		return fatelf_diag_set(d, -FATELF_E_SIG_MISSING, -1,
				       "%s: not signed, and repository %s takes only what its key signed", shown,
				       want->repo);
	}
	k = fatelf_ms_verify(want->key, 1, manifest, mlen, sig, slen, NULL, d);
	if (k < 0) {
		char msg[sizeof(d->msg)];

		snprintf(msg, sizeof(msg), "%s", d->msg);
		return fatelf_diag_set(d, k, -1, "%s: not signed by repository %s's key: %s", shown, want->repo, msg);
	}
	k = fatelf_manifest_parse(manifest, mlen, &cfg->limits, &m, d);
	if (k < 0)
		return k;
	if (strcmp(m->name, want->name) != 0 || strcmp(m->version, want->version) != 0)
		k = fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: the tag holds %s %s", shown, m->name, m->version);
	fatelf_manifest_free(m);
	return k;
}
/* A registry's settings, as registries.d/HOST[:PORT].conf gives them. */
struct registry_conf {
	bool plain;
	char *basic;
};

/* The file is read at once, so that its faults name this line. */
static int parse_credentials(ini_file *f, const ini_key *k, const char *value, void *field)
{
	char **basic = field, at[4200];

	if (value[0] != '/')
		return ini_error(f, -EINVAL, k->name, "an absolute path");
	if (*basic)
		explicit_bzero(*basic, strlen(*basic));
	free(*basic);
	*basic = NULL;
	snprintf(at, sizeof(at), "%s:%u", f->name, f->line);
	return read_credentials(at, value, basic, f->d);
}

static const ini_key registry_conf_keys[] = {
	{ .section = "Registry", .name = "PlainHTTP", .type = INI_BOOL,
	  .offset = offsetof(struct registry_conf, plain) },
	{ .section = "Registry", .name = "Credentials", .type = INI_CUSTOM,
	  .offset = offsetof(struct registry_conf, basic), .parse = parse_credentials },
};

static int registry_settings(const engine_config *cfg, const char *host, bool *ret_plain, char **ret_basic,
			     fatelf_diag *d)
{
	char base[300];
	_cleanup_free_ char *file = NULL, *text = NULL;
	struct registry_conf rc = { 0 };
	size_t len = 0;
	int k;

	*ret_plain = false;
	*ret_basic = NULL;
	if (!cfg->registries_dir)
		return 0;
	snprintf(base, sizeof(base), "%s.conf", host);
	file = path_join(cfg->registries_dir, base);
	if (!file)
		return fatelf_diag_oom(d);
	k = read_file_max(AT_FDCWD, file, READ_FILE_REGULAR, 64 << 10, &text, &len);
	if (k == -ENOENT)
		return 0;
	if (k < 0)
		return fatelf_diag_set(d, k, -1, "%s: %s", file, fatelf_strerror(k));
	k = ini_parse(&(const ini_table){ .keys = registry_conf_keys, .nkeys = ARRAY_SIZE(registry_conf_keys),
					  .base = &rc },
		      file, text, len, d);
	if (k < 0) {
		if (rc.basic)
			explicit_bzero(rc.basic, strlen(rc.basic));
		free(rc.basic);
		return k;
	}
	*ret_plain = rc.plain;
	*ret_basic = rc.basic;
	return 0;
}

/* The index's entry this install reads: under policy native (and no
 * KeepFat), the target native thinning picks among the index's targets,
 * a native one before a compatible one (x86_64 before i386); else, or
 * when none runs here, the fat one. */
static int pick_manifest(const engine_config *cfg, const engine_install_opts *o, const fatelf_host *host,
			 const fatelf_oci_index *ix, const char *shown, size_t *ret, fatelf_diag *d)
{
	const engine_policy_spec *p = o->policy ? o->policy : &cfg->policy;
	size_t fat = SIZE_MAX, best = SIZE_MAX;
	int best_rank = 0;

	for (size_t i = 0; i < ix->n; i++) {
		const fatelf_oci_desc *e = &ix->manifests[i];
		fatelf_pattern pat;
		fatelf_diag tmp = { 0 };
		int rank;

		if (e->fat) {
			if (fat == SIZE_MAX)
				fat = i;
			continue;
		}
		if (!e->target[0] || fatelf_pattern_parse(e->target, &pat, &tmp) < 0)
			continue;
		/* the kernel's rule: a Linux ABI, version 0 */
		if ((pat.target.osabi != 0 && pat.target.osabi != 3) || pat.target.osabi_version != 0)
			continue;
		rank = fatelf_host_runs(host, &pat.target);
		if (rank > best_rank) {
			best_rank = rank;
			best = i;
		}
	}
	if (p->policy == ENGINE_POLICY_NATIVE && cfg->nkeep_fat == 0 && best != SIZE_MAX) {
		*ret = best;
		return 0;
	}
	if (fat == SIZE_MAX)
		return fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1,
				       "%s: the image index has no manifest for this machine and none of the fat "
				       "form (io.fatelf.form: fat)", shown);
	*ret = fat;
	return 0;
}

/* d's message, about what. */
static int name_it(fatelf_diag *d, int k, const char *what)
{
	char msg[sizeof(d->msg)];

	snprintf(msg, sizeof(msg), "%s", d->msg);
	return fatelf_diag_set(d, k, d->record, "%s: %s", what, msg);
}

static bool digest_is(const void *buf, size_t len, const uint8_t digest[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();
	uint8_t sha[32];

	if (!h)
		return false;
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, sha);
	fatelf_sha256_free(h);
	return memcmp(sha, digest, 32) == 0;
}

static void blob_path(const char *name, const char *kind, const uint8_t digest[32], char *buf, size_t size)
{
	char hex[65];

	fatelf_hex(digest, 32, hex);
	snprintf(buf, size, "v2/%s/%s/sha256:%s", name, kind, hex);
}

/* What an install from a registry holds while it runs; oci_run_done
 * frees it. */
struct oci_run {
	const engine_config *cfg;
	fatelf_oci_ref ref;
	struct repo_conf rc;
	struct repo_helper pre;
	struct repo_get gi, gm, gb[2];
	size_t nb;
	char ipath[600], mpath[600], cpath[600], ppath[600], shown[700];
	fatelf_oci_index *ix;
	fatelf_oci_manifest *om;
	const fatelf_oci_desc *entry;
	struct repo_membuf pack_text;
	fatelf_repo_pack *pack;
	struct oci_blobs blobs;
};

#define OCI_RUN_INIT \
	{ .pre = { .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 }, .gi = { .fd = -1 }, .gm = { .fd = -1 }, \
	  .gb = { { .fd = -1 }, { .fd = -1 } }, .nb = 1 }

static void oci_run_done(struct oci_run *r)
{
	repo_helper_discard(&r->pre);
	free(r->gi.buf);
	free(r->gm.buf);
	free(r->gb[0].buf);
	free(r->gb[1].buf);
	free(r->pack_text.p);
	free(r->blobs.v);
	fatelf_repo_pack_free(r->pack);
	fatelf_oci_manifest_free(r->om);
	fatelf_oci_index_free(r->ix);
	repo_conf_done(&r->rc);
}

#define _cleanup_oci_run_ _cleanup_(oci_run_done)

/* k, having marked the job's download as failed when it is the
 * registry's failure (or the registry gone). */
static int fetch_result(job *j, int k)
{
	if (k == -EIO)
		j->fetch_failed = true;
	return k;
}

/* The reference parsed, the registry's settings, the names that errors
 * and the fetch report use, and the objects' helper started (it loads
 * while the metadata is fetched). */
static int oci_run_begin(struct oci_run *r, const char *refstr, const char *shown_ref, const struct oci_want *want,
			 const engine_install_opts *o, char **ret_repo, fatelf_diag *d)
{
	char hex[65];
	int k;

	if (fatelf_oci_ref_parse(refstr, false, &r->ref) < 0 || (!r->ref.tag[0] && !r->ref.has_digest))
		return fatelf_diag_set(d, -EINVAL, -1, "%s: not a registry reference "
				       "(oci://HOST[:PORT]/NAME:TAG or oci://HOST[:PORT]/NAME@sha256:HEX)",
				       shown_ref);
	k = oci_conf_for(r->cfg, r->ref.host, &r->rc, d);
	if (k < 0)
		return k;
	free(*ret_repo);
	if (want && want->repo)
		*ret_repo = strdup(want->repo);
	else if (asprintf(ret_repo, "oci://%s/%s", r->ref.host, r->ref.name) < 0)
		*ret_repo = NULL;
	if (!*ret_repo)
		return fatelf_diag_oom(d);
	if (!want)
		snprintf(r->rc.name, sizeof(r->rc.name), "%.*s", (int)sizeof(r->rc.name) - 1, *ret_repo + 6);
	else
		snprintf(r->rc.name, sizeof(r->rc.name), "%s", want->repo);
	if (r->ref.has_digest) {
		fatelf_hex(r->ref.digest, 32, hex);
		snprintf(r->ipath, sizeof(r->ipath), "v2/%s/manifests/sha256:%s", r->ref.name, hex);
	} else {
		snprintf(r->ipath, sizeof(r->ipath), "v2/%s/manifests/%s", r->ref.name, r->ref.tag);
	}
	snprintf(r->shown, sizeof(r->shown), "%s", shown_ref);
	if (!o->dry_run && repo_helper_spawn(r->cfg, &r->rc, &r->pre, NULL) < 0)
		r->pre = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	return 0;
}

/* 1. The image index, by tag or digest, and the entry this install
 * takes from it. */
static int oci_fetch_index(worker *w, job *j, struct oci_run *r, const engine_install_opts *o)
{
	fatelf_diag *d = &j->diag;
	size_t pick = 0;
	int k;

	r->gi = (struct repo_get){ .path = r->ipath, .max = FATELF_OCI_JSON_MAX, .fd = -1 };
	k = repo_fetch(r->cfg, &r->rc, &r->gi, 1, &w->cancel, &w->fetch_pid, d);
	if (k == -EIO && r->gi.code == 404) {
		FATELF_DIAG_FACT(d, package, r->shown);
		return fatelf_diag_set(d, -ENGINE_E_NOT_INSTALLED, -1, "%s: the registry has no such %s (HTTP 404)",
				       r->shown, r->ref.has_digest ? "digest" : "tag");
	}
	if (k < 0)
		return fetch_result(j, k);
	if (r->ref.has_digest && !digest_is(r->gi.buf, r->gi.len, r->ref.digest))
		return fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "%s: the image index does not hash to that digest",
				       r->shown);
	k = fatelf_oci_index_parse(r->gi.buf, r->gi.len, &r->ix, d);
	if (k < 0)
		return name_it(d, k, r->shown);
	k = pick_manifest(r->cfg, o, engine_host(w->rw), r->ix, r->shown, &pick, d);
	if (k < 0)
		return k;
	r->entry = &r->ix->manifests[pick];
	return 0;
}

/* 2. That one manifest, by digest. */
static int oci_fetch_manifest(worker *w, job *j, struct oci_run *r)
{
	const fatelf_oci_desc *e = r->entry;
	fatelf_diag *d = &j->diag;
	int k;

	blob_path(r->ref.name, "manifests", e->digest, r->mpath, sizeof(r->mpath));
	r->gm = (struct repo_get){ .path = r->mpath, .size = e->size, .fd = -1 };
	if (e->size == 0 || e->size > FATELF_OCI_JSON_MAX)
		return fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: a manifest of %" PRIu64 " bytes", r->mpath,
				       e->size);
	k = repo_fetch(r->cfg, &r->rc, &r->gm, 1, &w->cancel, &w->fetch_pid, d);
	if (k < 0)
		return fetch_result(j, k);
	if (!digest_is(r->gm.buf, r->gm.len, e->digest))
		return fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "%s: does not hash to its digest", r->mpath);
	k = fatelf_oci_manifest_parse(r->gm.buf, r->gm.len, &r->om, d);
	if (k < 0)
		return name_it(d, k, r->mpath);
	if (r->om->fat != e->fat || strcmp(r->om->target, e->target) != 0)
		return fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: serves %s, the index says %s", r->mpath,
				       r->om->fat ? "the fat form" : r->om->target,
				       e->fat ? "the fat form" : e->target);
	return 0;
}

/* 3. Its config (the signed fat manifest) and pack list, each checked
 * against its digest. */
static int oci_fetch_config(worker *w, job *j, struct oci_run *r)
{
	const fatelf_oci_manifest *om = r->om;
	fatelf_diag *d = &j->diag;
	int k;

	blob_path(r->ref.name, "blobs", om->config.digest, r->cpath, sizeof(r->cpath));
	if (om->config.size == 0 || om->config.size > FATELF_MANIFEST_MAX)
		return fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: a config of %" PRIu64 " bytes", r->cpath,
				       om->config.size);
	r->gb[0] = (struct repo_get){ .path = r->cpath, .size = om->config.size, .fd = -1 };
	if (om->has_pack) {
		blob_path(r->ref.name, "blobs", om->pack.digest, r->ppath, sizeof(r->ppath));
		if (om->pack.size == 0 || om->pack.size > FATELF_REPO_PACK_MAX || !om->pack.has_object ||
		    om->pack.object_size > FATELF_REPO_PACK_MAX)
			return fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: a pack list of %" PRIu64 " bytes",
					       r->ppath, om->pack.size);
		r->gb[1] = (struct repo_get){ .path = r->ppath, .size = om->pack.size, .fd = -1 };
		r->nb = 2;
	}
	k = repo_fetch(r->cfg, &r->rc, r->gb, r->nb, &w->cancel, &w->fetch_pid, d);
	if (k < 0)
		return fetch_result(j, k);
	for (size_t i = 0; i < r->nb; i++)
		if (!digest_is(r->gb[i].buf, r->gb[i].len, i == 0 ? om->config.digest : om->pack.digest))
			return fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "%s: does not hash to its digest",
					       r->gb[i].path);
	return 0;
}

/* The pack list's object read out of its blob and parsed. */
static int oci_read_pack(struct oci_run *r, fatelf_diag *d)
{
	const fatelf_oci_manifest *om = r->om;
	fatelf_reader rd;
	int k;

	r->pack_text.cap = (size_t)om->pack.object_size + 1;
	r->pack_text.p = malloc(r->pack_text.cap);
	if (!r->pack_text.p)
		return fatelf_diag_oom(d);
	fatelf_reader_mem(&rd, r->gb[1].buf, r->gb[1].len);
	k = fatelf_repo_object_read(&rd, om->pack.object, om->pack.object_size, r->ppath, repo_membuf_put,
				    &r->pack_text, d);
	fatelf_reader_close(&rd);
	if (k == 0)
		k = fatelf_repo_pack_parse(r->pack_text.p, r->pack_text.len, &r->pack, d);
	return k;
}

/* 4. The objects: where each one's blob is, sorted by object. */
static int oci_blobs_fill(struct oci_run *r)
{
	const fatelf_oci_manifest *om = r->om;

	snprintf(r->blobs.prefix, sizeof(r->blobs.prefix), "v2/%s/blobs/sha256:", r->ref.name);
	r->blobs.v = calloc(om->nlayers ? om->nlayers : 1, sizeof(*r->blobs.v));
	if (!r->blobs.v)
		return -ENOMEM;
	for (size_t i = 0; i < om->nlayers; i++) {
		memcpy(r->blobs.v[i].object, om->layers[i].object, 32);
		memcpy(r->blobs.v[i].digest, om->layers[i].digest, 32);
		r->blobs.v[i].size = om->layers[i].size;
	}
	r->blobs.n = om->nlayers;
	if (r->blobs.n > 1)
		qsort(r->blobs.v, r->blobs.n, sizeof(*r->blobs.v), digest_cmp);
	return 0;
}

/* The version of the image index at refstr (shown: the same without
 * credentials), installed with o; res, fs and *ret_repo are the job's or
 * a member's. */
static int oci_install(worker *w, job *j, const char *refstr, const char *shown_ref, const struct oci_want *want,
		       const engine_install_opts *o, engine_result *res, struct job_fetch *fs, char **ret_repo)
{
	_cleanup_oci_run_ struct oci_run r = OCI_RUN_INIT;
	fatelf_diag *d = &j->diag;
	engine_repo_version rv = { 0 };
	int k;

	r.cfg = engine_get_config(w->rw);
	k = oci_run_begin(&r, refstr, shown_ref, want, o, ret_repo, d);
	if (k < 0)
		return k;
	k = oci_fetch_index(w, j, &r, o);
	if (k < 0)
		return k;
	k = oci_fetch_manifest(w, j, &r);
	if (k < 0)
		return k;
	k = oci_fetch_config(w, j, &r);
	if (k < 0)
		return k;
	fs->metadata = r.gi.len + r.gm.len + r.gb[0].len + (r.nb > 1 ? r.gb[1].len : 0);
	if (r.om->has_pack) {
		k = oci_read_pack(&r, d);
		if (k < 0)
			return k;
	}
	k = oci_blobs_fill(&r);
	if (k < 0)
		return k;
	rv.manifest = r.gb[0].buf;
	rv.manifest_len = r.gb[0].len;
	rv.sig = r.om->config.signature;
	rv.sig_len = r.om->config.signature ? strlen(r.om->config.signature) : 0;
	rv.pack = r.pack;
	if (want) {
		k = oci_check_want(r.cfg, want, r.shown, rv.manifest, rv.manifest_len, rv.sig, rv.sig_len, d);
		if (k < 0)
			return k;
	}
	k = repo_install_pieces(w, &r.rc, &r.blobs, &r.pre, &rv, o, res, fs, d);
	return fetch_result(j, k);
}

int job_install_oci(worker *w, job *j, const engine_install_opts *o)
{
	int k = oci_install(w, j, j->url, j->url_shown, NULL, o, &j->result, &j->fetch, &j->repo_name);

	/* also when it failed: what it fetched until then */
	j->has_fetch = true;
	return k;
}

int repo_install_oci(struct worker *w, struct job *j, const struct repo_conf *r, const char *name, const char *version,
		     const engine_install_opts *o, engine_result *res, struct job_fetch *fs)
{
	struct oci_want want = { .name = name, .version = version, .key = &r->key, .repo = r->name };
	_cleanup_free_ char *ref = NULL, *repo = NULL;
	int k;

	if (asprintf(&ref, "%s/%s:%s", r->urls[0], name, version) < 0) {
		ref = NULL;
		return fatelf_diag_oom(&j->diag);
	}
	k = oci_install(w, j, ref, ref, &want, o, res, fs, &repo);
	return k;
}
