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
 * (Registries=):
 *
 *   [Registry]
 *   PlainHTTP=yes            plain HTTP to a registry that is not on a
 *                            loopback address (which always is)
 *   Credentials=/abs/path    USER:PASSWORD on one line, in a regular file
 *                            of root's that no one else may read
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hashset.h"
#include "hex.h"
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
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
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
static int registry_settings(const engine_config *cfg, const char *host, bool *ret_plain, char **ret_basic,
			     fatelf_diag *d)
{
	char base[300];
	_cleanup_free_ char *file = NULL, *text = NULL;
	size_t len = 0;
	unsigned line = 0;
	bool in_section = false;
	char *save = NULL;
	int k;

	*ret_plain = false;
	*ret_basic = NULL;
	if (!cfg->registries_dir)
		return 0;
	snprintf(base, sizeof(base), "%s.conf", host);
	file = path_join(cfg->registries_dir, base);
	if (!file)
		return -ENOMEM;
	k = read_file_max(AT_FDCWD, file, READ_FILE_REGULAR, 64 << 10, &text, &len);
	if (k == -ENOENT)
		return 0;
	if (k < 0)
		return fatelf_diag_set(d, k, -1, "%s: %s", file, fatelf_strerror(k));
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *eq;

		line++;
		while (*l == ' ' || *l == '\t')
			l++;
		if (!*l || *l == '#' || *l == ';')
			continue;
		if (strcmp(l, "[Registry]") == 0) {
			in_section = true;
			continue;
		}
		eq = strchr(l, '=');
		if (!in_section || !eq)
			return fatelf_diag_set(d, -EINVAL, -1, "%s:%u: expected [Registry], then PlainHTTP= or "
					       "Credentials=", file, line);
		*eq = '\0';
		if (strcmp(l, "PlainHTTP") == 0) {
			if (strcmp(eq + 1, "yes") == 0 || strcmp(eq + 1, "true") == 0)
				*ret_plain = true;
			else if (strcmp(eq + 1, "no") == 0 || strcmp(eq + 1, "false") == 0)
				*ret_plain = false;
			else
				return fatelf_diag_set(d, -EINVAL, -1, "%s:%u: PlainHTTP: yes or no", file, line);
		} else if (strcmp(l, "Credentials") == 0) {
			if (eq[1] != '/')
				return fatelf_diag_set(d, -EINVAL, -1, "%s:%u: Credentials: an absolute path", file,
						       line);
			free(*ret_basic);
			*ret_basic = NULL;
			k = read_credentials(file, eq + 1, ret_basic, d);
			if (k < 0)
				return k;
		} else {
			return fatelf_diag_set(d, -EINVAL, -1, "%s:%u: unknown key '%s'", file, line, l);
		}
	}
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

/* The version of the image index at refstr (shown: the same without
 * credentials), installed with o; res, fs and *ret_repo are the job's or
 * a member's. */
static int oci_install(worker *w, job *j, const char *refstr, const char *shown_ref, const struct oci_want *want,
		       const engine_install_opts *o, engine_result *res, struct job_fetch *fs, char **ret_repo)
{
	const engine_config *cfg = engine_get_config(w->rw);
	fatelf_diag *d = &j->diag;
	fatelf_oci_ref ref;
	struct repo_conf rc = { 0 };
	struct repo_helper pre = { .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	struct repo_get gi = { .fd = -1 }, gm = { .fd = -1 }, gb[2] = { { .fd = -1 }, { .fd = -1 } };
	char ipath[600], mpath[600], cpath[600], ppath[600], shown[700], hex[65];
	fatelf_oci_index *ix = NULL;
	fatelf_oci_manifest *om = NULL;
	const fatelf_oci_desc *entry;
	struct oci_blobs blobs = { 0 };
	struct repo_membuf pack_text = { 0 };
	fatelf_repo_pack *pack = NULL;
	engine_repo_version rv = { 0 };
	size_t pick = 0, nb = 1;
	int k;

	if (fatelf_oci_ref_parse(refstr, false, &ref) < 0 || (!ref.tag[0] && !ref.has_digest))
		return fatelf_diag_set(d, -EINVAL, -1, "%s: not a registry reference "
				       "(oci://HOST[:PORT]/NAME:TAG or oci://HOST[:PORT]/NAME@sha256:HEX)",
				       shown_ref);
	k = oci_conf_for(cfg, ref.host, &rc, d);
	if (k < 0)
		goto out;
	/* what errors and the fetch report name */
	free(*ret_repo);
	if (want && want->repo)
		*ret_repo = strdup(want->repo);
	else if (asprintf(ret_repo, "oci://%s/%s", ref.host, ref.name) < 0)
		*ret_repo = NULL;
	if (!*ret_repo) {
		k = -ENOMEM;
		goto out;
	}
	if (!want)
		snprintf(rc.name, sizeof(rc.name), "%.*s", (int)sizeof(rc.name) - 1, *ret_repo + 6);
	else
		snprintf(rc.name, sizeof(rc.name), "%s", want->repo);
	if (ref.has_digest) {
		fatelf_hex(ref.digest, 32, hex);
		snprintf(ipath, sizeof(ipath), "v2/%s/manifests/sha256:%s", ref.name, hex);
	} else {
		snprintf(ipath, sizeof(ipath), "v2/%s/manifests/%s", ref.name, ref.tag);
	}
	snprintf(shown, sizeof(shown), "%s", shown_ref);
	/* The objects' helper loads while the metadata is fetched. */
	if (!o->dry_run && repo_helper_spawn(cfg, &rc, &pre, NULL) < 0)
		pre = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };

	/* 1. The image index, by tag or digest. */
	gi = (struct repo_get){ .path = ipath, .max = FATELF_OCI_JSON_MAX, .fd = -1 };
	k = repo_fetch(cfg, &rc, &gi, 1, &w->cancel, &w->fetch_pid, d);
	if (k == -EIO && gi.code == 404) {
		FATELF_DIAG_FACT(d, package, shown);
		k = fatelf_diag_set(d, -ENGINE_E_NOT_INSTALLED, -1, "%s: the registry has no such %s (HTTP 404)", shown,
				    ref.has_digest ? "digest" : "tag");
		goto out;
	}
	if (k < 0)
		goto fetch_out;
	if (ref.has_digest && !digest_is(gi.buf, gi.len, ref.digest)) {
		k = fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "%s: the image index does not hash to that digest",
				    shown);
		goto out;
	}
	k = fatelf_oci_index_parse(gi.buf, gi.len, &ix, d);
	if (k < 0) {
		k = name_it(d, k, shown);
		goto out;
	}
	k = pick_manifest(cfg, o, engine_host(w->rw), ix, shown, &pick, d);
	if (k < 0)
		goto out;
	entry = &ix->manifests[pick];

	/* 2. That one manifest, by digest. */
	blob_path(ref.name, "manifests", entry->digest, mpath, sizeof(mpath));
	gm = (struct repo_get){ .path = mpath, .size = entry->size, .fd = -1 };
	if (entry->size == 0 || entry->size > FATELF_OCI_JSON_MAX) {
		k = fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: a manifest of %" PRIu64 " bytes", mpath,
				    entry->size);
		goto out;
	}
	k = repo_fetch(cfg, &rc, &gm, 1, &w->cancel, &w->fetch_pid, d);
	if (k < 0)
		goto fetch_out;
	if (!digest_is(gm.buf, gm.len, entry->digest)) {
		k = fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "%s: does not hash to its digest", mpath);
		goto out;
	}
	k = fatelf_oci_manifest_parse(gm.buf, gm.len, &om, d);
	if (k < 0) {
		k = name_it(d, k, mpath);
		goto out;
	}
	if (om->fat != entry->fat || strcmp(om->target, entry->target) != 0) {
		k = fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: serves %s, the index says %s", mpath,
				    om->fat ? "the fat form" : om->target, entry->fat ? "the fat form" : entry->target);
		goto out;
	}

	/* 3. Its config (the signed fat manifest) and pack list. */
	blob_path(ref.name, "blobs", om->config.digest, cpath, sizeof(cpath));
	if (om->config.size == 0 || om->config.size > FATELF_MANIFEST_MAX) {
		k = fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: a config of %" PRIu64 " bytes", cpath,
				    om->config.size);
		goto out;
	}
	gb[0] = (struct repo_get){ .path = cpath, .size = om->config.size, .fd = -1 };
	if (om->has_pack) {
		blob_path(ref.name, "blobs", om->pack.digest, ppath, sizeof(ppath));
		if (om->pack.size == 0 || om->pack.size > FATELF_REPO_PACK_MAX || !om->pack.has_object ||
		    om->pack.object_size > FATELF_REPO_PACK_MAX) {
			k = fatelf_diag_set(d, -FATELF_E_REPO_OCI, -1, "%s: a pack list of %" PRIu64 " bytes", ppath,
					    om->pack.size);
			goto out;
		}
		gb[1] = (struct repo_get){ .path = ppath, .size = om->pack.size, .fd = -1 };
		nb = 2;
	}
	k = repo_fetch(cfg, &rc, gb, nb, &w->cancel, &w->fetch_pid, d);
	if (k < 0)
		goto fetch_out;
	for (size_t i = 0; i < nb; i++)
		if (!digest_is(gb[i].buf, gb[i].len, i == 0 ? om->config.digest : om->pack.digest)) {
			k = fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "%s: does not hash to its digest", gb[i].path);
			goto out;
		}
	fs->metadata = gi.len + gm.len + gb[0].len + (nb > 1 ? gb[1].len : 0);
	if (om->has_pack) {
		fatelf_reader rd;

		pack_text.cap = (size_t)om->pack.object_size + 1;
		pack_text.p = malloc(pack_text.cap);
		if (!pack_text.p) {
			k = -ENOMEM;
			goto out;
		}
		fatelf_reader_mem(&rd, gb[1].buf, gb[1].len);
		k = fatelf_repo_object_read(&rd, om->pack.object, om->pack.object_size, ppath, repo_membuf_put, &pack_text,
					    d);
		fatelf_reader_close(&rd);
		if (k == 0)
			k = fatelf_repo_pack_parse(pack_text.p, pack_text.len, &pack, d);
		if (k < 0)
			goto out;
	}

	/* 4. The objects: where each one's blob is. */
	snprintf(blobs.prefix, sizeof(blobs.prefix), "v2/%s/blobs/sha256:", ref.name);
	blobs.v = calloc(om->nlayers ? om->nlayers : 1, sizeof(*blobs.v));
	if (!blobs.v) {
		k = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < om->nlayers; i++) {
		memcpy(blobs.v[i].object, om->layers[i].object, 32);
		memcpy(blobs.v[i].digest, om->layers[i].digest, 32);
		blobs.v[i].size = om->layers[i].size;
	}
	blobs.n = om->nlayers;
	if (blobs.n > 1)
		qsort(blobs.v, blobs.n, sizeof(*blobs.v), digest_cmp);
	rv.manifest = gb[0].buf;
	rv.manifest_len = gb[0].len;
	rv.sig = om->config.signature;
	rv.sig_len = om->config.signature ? strlen(om->config.signature) : 0;
	rv.pack = pack;
	if (want) {
		k = oci_check_want(cfg, want, shown, rv.manifest, rv.manifest_len, rv.sig, rv.sig_len, d);
		if (k < 0)
			goto out;
	}
	k = repo_install_pieces(w, &rc, &blobs, &pre, &rv, o, res, fs, d);
fetch_out:
	/* the registry's failure (or gone): a download that failed */
	if (k == -EIO)
		j->fetch_failed = true;
out:
	repo_helper_discard(&pre);
	free(gi.buf);
	free(gm.buf);
	free(gb[0].buf);
	free(gb[1].buf);
	free(pack_text.p);
	free(blobs.v);
	fatelf_repo_pack_free(pack);
	fatelf_oci_manifest_free(om);
	fatelf_oci_index_free(ix);
	repo_conf_done(&rc);
	return k;
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
		return fatelf_diag_set(&j->diag, -ENOMEM, -1, "out of memory");
	}
	k = oci_install(w, j, ref, ref, &want, o, res, fs, &repo);
	return k;
}
