/*
 * fatelf repo verify and gc (doc/repository.md, "Checking a repository"
 * and "Garbage"). Verify reads everything the index reaches, as a
 * machine would: each manifest by its hash, each pack list, each object
 * once (zstd, size, SHA-256, compressed size), and rebuilds every FatELF
 * file's bytes from its frame and records to the SHA-256 its manifest
 * pins, as an install under policy keep does. gc drops what the index no
 * longer reaches, under the writers' lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "atomic.h"
#include "hashset.h"
#include "hex.h"
#include "macro.h"
#include "reader.h"
#include "repo.h"
#include "text.h"

static int hash_of(const void *buf, size_t len, uint8_t out[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();

	if (!h)
		return -ENOMEM;
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, out);
	fatelf_sha256_free(h);
	return 0;
}

struct membuf {
	uint8_t *p;
	size_t len, cap;
};

static int to_mem(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (GROW_ARRAY(m->p, m->cap, m->len + len + 1) < 0)
		return -ENOMEM;
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	m->p[m->len] = 0;
	return 0;
}

static int to_hash(void *ctx, const void *buf, size_t len)
{
	fatelf_sha256_update(ctx, buf, len);
	return 0;
}

int fatelf_repo_read_object(const fatelf_repo_dir *r, const uint8_t sha[32], uint64_t size,
			    int (*data)(void *ctx, const void *buf, size_t len), void *ctx, uint64_t *ret_csize,
			    fatelf_diag *d)
{
	char rel[FATELF_REPO_OBJECT_PATH_MAX];
	fatelf_reader rd;
	struct stat st;
	int fd, k;

	fatelf_repo_object_path(sha, rel);
	fd = openat(r->fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		k = -errno;
		if (k == -ENOENT)
			return fatelf_diag_at(d, -FATELF_E_REPO_MISSING, -1, rel, "not in the repository");
		return fatelf_diag_at(d, k, -1, rel, "%s", fatelf_strerror(k));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fatelf_diag_at(d, -FATELF_E_REPO_OBJECT, -1, rel, "not a regular file");
	}
	if (ret_csize)
		*ret_csize = (uint64_t)st.st_size;
	k = fatelf_reader_fd(&rd, fd, NULL);
	if (k < 0) {
		close(fd);
		return fatelf_diag_set(d, k, -1, "%s", fatelf_strerror(k));
	}
	k = fatelf_repo_object_read(&rd, sha, size, rel, data, ctx, d);
	fatelf_reader_close(&rd);
	close(fd);
	return k;
}

/* The bytes of FatELF entry e as shipped, from its frame and records. */
int fatelf_repo_rebuild(const fatelf_repo_dir *r, const fatelf_bundle_entry *e, const fatelf_repo_frame *frame,
			int (*data)(void *ctx, const void *buf, size_t len), void *ctx, fatelf_diag *d)
{
	struct membuf fb = { 0 };
	unsigned order[FATELF_MAX_RECORDS];
	uint64_t at = 0, fat = 0;
	int k;

	if (frame)
		k = fatelf_repo_read_object(r, frame->sha256, fatelf_repo_frame_size(e), to_mem, &fb, NULL, d);
	else
		k = fatelf_repo_frame_canonical(e, to_mem, &fb);
	if (k < 0)
		goto out;
	for (unsigned i = 0; i < e->nrecords; i++) {
		unsigned j = i;

		while (j > 0 && e->records[order[j - 1]].offset > e->records[i].offset) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (unsigned i = 0; i <= e->nrecords; i++) {
		const fatelf_bundle_record *rec = i < e->nrecords ? &e->records[order[i]] : NULL;
		uint64_t gap = (rec ? rec->offset : e->size) - at;

		if (gap > fb.len - fat) {
			k = fatelf_diag_set(d, -FATELF_E_REPO_OBJECT, -1, "the frame is shorter than the file's gaps");
			goto out;
		}
		if (gap > 0 && (k = data(ctx, fb.p + fat, (size_t)gap)) < 0)
			goto out;
		fat += gap;
		at += gap;
		if (!rec)
			break;
		k = fatelf_repo_read_object(r, rec->sha256, rec->size, data, ctx, NULL, d);
		if (k < 0)
			goto out;
		at += rec->size;
	}
	k = 0;
out:
	free(fb.p);
	return k;
}

int fatelf_repo_load_pack(const fatelf_repo_dir *r, const fatelf_repo_version *v, const fatelf_manifest *m,
			  fatelf_repo_pack **ret, fatelf_diag *d)
{
	struct membuf mb = { 0 };
	int k = fatelf_repo_read_object(r, v->pack, v->pack_size, to_mem, &mb, NULL, d);

	if (k == 0)
		k = fatelf_repo_pack_parse(mb.p ? (const char *)mb.p : "", mb.len, ret, d);
	free(mb.p);
	if (k == 0 && m) {
		k = fatelf_repo_pack_check(*ret, m, d);
		if (k < 0)
			*ret = fatelf_repo_pack_free(*ret);
	}
	return k;
}

/* The manifest of version v, by its hash and size. */
static int load_manifest(const fatelf_repo_dir *r, const fatelf_repo_version *v, fatelf_manifest **ret,
			 fatelf_diag *d)
{
	_cleanup_free_ char *json = NULL;
	char rel[FATELF_REPO_MANIFEST_PATH_MAX];
	uint8_t sha[32];
	size_t len;
	int k;

	fatelf_repo_manifest_path(v->manifest, false, rel);
	k = fatelf_repo_read_file(r, rel, FATELF_MANIFEST_MAX, &json, &len, d);
	if (k < 0)
		return k;
	k = hash_of(json, len, sha);
	if (k < 0)
		return k;
	if (memcmp(sha, v->manifest, 32) != 0 || len != v->manifest_size)
		return fatelf_diag_at(d, -FATELF_E_HASH, -1, rel, "its SHA-256 or size is not the index's");
	return fatelf_manifest_parse(json, len, NULL, ret, d);
}

int fatelf_repo_verify(const fatelf_repo_dir *r, const fatelf_ms_pubkey *vendor_keys, size_t nvendor,
		       fatelf_repo_verify_result *res, fatelf_diag *d)
{
	uint8_t (*seen)[32] = NULL;
	size_t nseen = 0, seen_cap = 0;
	int k = 0;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < r->index->npackages && k == 0; i++) {
		const fatelf_repo_package *p = &r->index->packages[i];

		res->packages++;
		for (size_t j = 0; j < p->nversions && k == 0; j++) {
			const fatelf_repo_version *v = &p->versions[j];
			fatelf_manifest *m = NULL;
			fatelf_repo_pack *pk = NULL;

			res->versions++;
			snprintf(res->package, sizeof(res->package), "%s", p->name);
			snprintf(res->version, sizeof(res->version), "%s", v->version);
			k = load_manifest(r, v, &m, d);
			if (k == 0 && (strcmp(m->name, p->name) != 0 || fatelf_pkg_version_compare(m->version,
												  v->version) != 0))
				k = fatelf_diag_set(d, -FATELF_E_REPO_INDEX, -1,
						    "the index lists %s %s, its manifest is of %s %s", p->name,
						    v->version, m->name, m->version);
			if (k == 0 && v->signed_manifest) {
				_cleanup_free_ char *sig = NULL, *json = NULL;
				char rel[FATELF_REPO_MANIFEST_PATH_MAX];
				size_t slen, jlen;

				fatelf_repo_manifest_path(v->manifest, true, rel);
				k = fatelf_repo_read_file(r, rel, FATELF_REPO_SIG_MAX, &sig, &slen, d);
				if (k == 0 && nvendor > 0) {
					fatelf_repo_manifest_path(v->manifest, false, rel);
					k = fatelf_repo_read_file(r, rel, FATELF_MANIFEST_MAX, &json, &jlen, d);
					if (k == 0)
						k = fatelf_ms_verify(vendor_keys, nvendor, json, jlen, sig, slen, NULL, d);
				} else if (k == 0) {
					fatelf_ms_signature s;

					k = fatelf_ms_sig_parse(sig, slen, &s, d);
				}
			} else if (k == 0 && nvendor > 0)
				k = fatelf_diag_set(d, -FATELF_E_SIG_MISSING, -1, "%s %s: the manifest is not signed",
						    p->name, v->version);
			if (k == 0)
				k = fatelf_repo_load_pack(r, v, m, &pk, d);
			for (size_t o = 0; k == 0 && o < pk->nobjects; o++) {
				const fatelf_repo_object *ob = &pk->objects[o];
				uint64_t csize;

				if (nseen && bsearch(ob->sha256, seen, nseen, 32, digest_cmp))
					continue;
				k = fatelf_repo_read_object(r, ob->sha256, ob->size, NULL, NULL, &csize, d);
				if (k == 0 && csize != ob->csize) {
					char rel[FATELF_REPO_OBJECT_PATH_MAX];

					fatelf_repo_object_path(ob->sha256, rel);
					k = fatelf_diag_at(d, -FATELF_E_REPO_PACK, -1, rel,
							   "%llu bytes, the pack list says %llu",
							   (unsigned long long)csize, (unsigned long long)ob->csize);
				}
				if (k == 0) {
					if (GROW_ARRAY(seen, seen_cap, nseen + 1) < 0) {
						k = -ENOMEM;
						break;
					}
					/* kept sorted: insertion */
					size_t at = nseen;

					while (at > 0 && memcmp(seen[at - 1], ob->sha256, 32) > 0) {
						memcpy(seen[at], seen[at - 1], 32);
						at--;
					}
					memcpy(seen[at], ob->sha256, 32);
					nseen++;
					res->objects++;
					res->bytes += ob->csize;
				}
			}
			for (size_t e = 0; k == 0 && e < m->nentries; e++) {
				const fatelf_bundle_entry *en = &m->entries[e];
				fatelf_sha256 *h;
				uint8_t out[32];

				if (en->type != FATELF_ENTRY_FILE || en->kind != FATELF_KIND_FATELF)
					continue;
				h = fatelf_sha256_new();
				if (!h) {
					k = -ENOMEM;
					break;
				}
				k = fatelf_repo_rebuild(r, en, fatelf_repo_pack_frame(pk, (uint32_t)e), to_hash, h, d);
				fatelf_sha256_final(h, out);
				fatelf_sha256_free(h);
				if (k == 0 && memcmp(out, en->sha256, 32) != 0) {
					char q[FATELF_TEXT_QUOTE_BUF];

					k = fatelf_diag_set(d, -FATELF_E_HASH, -1,
							    "entry '%s': its frame and records do not rebuild the file",
							    fatelf_text_quote(en->path, q));
				}
				res->rebuilt += k == 0;
			}
			fatelf_repo_pack_free(pk);
			fatelf_manifest_free(m);
		}
	}
	free(seen);
	return k;
}

/* gc */

struct refs {
	uint8_t (*v)[32];
	size_t n, cap;
};

static int ref_add(struct refs *s, const uint8_t sha[32])
{
	if (GROW_ARRAY(s->v, s->cap, s->n + 1) < 0)
		return -ENOMEM;
	memcpy(s->v[s->n++], sha, 32);
	return 0;
}

static bool ref_has(const struct refs *s, const uint8_t sha[32])
{
	return s->n && bsearch(sha, s->v, s->n, 32, digest_cmp) != NULL;
}

/* A name "<64 hex>" + suffix: its hash, or false. */
static bool name_sha(const char *name, const char *suffix, uint8_t out[32])
{
	return strlen(name) == 64 + strlen(suffix) && strcmp(name + 64, suffix) == 0 &&
	       fatelf_unhex_lower(name, out, 32) == 0;
}

static int drop(int dfd, const char *name, bool dir, fatelf_repo_gc_result *res)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !dir)
		res->bytes += (uint64_t)st.st_size;
	if (unlinkat(dfd, name, dir ? AT_REMOVEDIR : 0) < 0)
		return -errno;
	res->files++;
	return 0;
}

/* Drops each entry of folder rel that keep() refuses. */
static int sweep(const fatelf_repo_dir *r, const char *rel, bool (*keep)(const char *name, void *ctx), void *ctx,
		 fatelf_repo_gc_result *res, fatelf_diag *d)
{
	int dfd = openat(r->fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dir;
	struct dirent *de;
	int k = 0;

	if (dfd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : fatelf_diag_at(d, -errno, -1, rel, "%s", fatelf_strerror(-errno));
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return fatelf_diag_oom(d);
	}
	while ((de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || keep(de->d_name, ctx))
			continue;
		k = drop(dirfd(dir), de->d_name, false, res);
		if (k < 0) {
			k = fatelf_diag_at(d, k, -1, rel, "%s: %s", de->d_name, fatelf_strerror(k));
			break;
		}
	}
	closedir(dir);
	return k;
}

static bool keep_object(const char *name, void *ctx)
{
	uint8_t sha[32];

	return name_sha(name, ".zst", sha) && ref_has(ctx, sha);
}

struct keep_index {
	const uint8_t *sha;
};

static bool keep_index(const char *name, void *ctx)
{
	uint8_t sha[32];
	const struct keep_index *ki = ctx;

	return (name_sha(name, ".json", sha) || name_sha(name, ".json.minisig", sha)) &&
	       memcmp(sha, ki->sha, 32) == 0;
}

static bool keep_manifest_file(const char *name, void *ctx)
{
	(void)ctx;
	return strcmp(name, FATELF_MANIFEST_NAME) == 0 || strcmp(name, FATELF_SIGNATURE_NAME) == 0;
}

static bool keep_not_temp(const char *name, void *ctx)
{
	(void)ctx;
	return strncmp(name, FATELF_TEMP_PREFIX, strlen(FATELF_TEMP_PREFIX)) != 0;
}

static bool keep_none(const char *name, void *ctx)
{
	(void)name;
	(void)ctx;
	return false;
}

int fatelf_repo_gc(const fatelf_repo_dir *r, fatelf_repo_gc_result *res, fatelf_diag *d)
{
	struct refs objs = { 0 }, mans = { 0 };
	struct keep_index ki = { .sha = r->index_sha };
	DIR *dir = NULL;
	struct dirent *de;
	int k = 0, dfd;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < r->index->npackages && k == 0; i++)
		for (size_t j = 0; j < r->index->packages[i].nversions && k == 0; j++) {
			const fatelf_repo_version *v = &r->index->packages[i].versions[j];
			fatelf_repo_pack *pk = NULL;

			k = fatelf_repo_load_pack(r, v, NULL, &pk, d);
			if (k < 0)
				break;
			if ((k = ref_add(&objs, v->pack)) == 0 && (k = ref_add(&mans, v->manifest)) == 0)
				for (size_t o = 0; o < pk->nobjects && k == 0; o++)
					k = ref_add(&objs, pk->objects[o].sha256);
			fatelf_repo_pack_free(pk);
		}
	if (k < 0)
		goto out;
	if (objs.n > 1)
		qsort(objs.v, objs.n, 32, digest_cmp);
	if (mans.n > 1)
		qsort(mans.v, mans.n, 32, digest_cmp);
	for (unsigned b = 0; b < 256 && k == 0; b++) {
		char rel[32];

		snprintf(rel, sizeof(rel), FATELF_REPO_OBJECTS "/%02x", b);
		k = sweep(r, rel, keep_object, &objs, res, d);
	}
	if (k == 0)
		k = sweep(r, FATELF_REPO_INDEXES, keep_index, &ki, res, d);
	if (k == 0)
		k = sweep(r, ".", keep_not_temp, NULL, res, d);
	if (k < 0)
		goto out;
	dfd = openat(r->fd, FATELF_REPO_MANIFESTS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0 && !(dir = fdopendir(dfd)))
		close(dfd);
	while (dir && (de = readdir(dir))) {
		char rel[sizeof(FATELF_REPO_MANIFESTS) + 1 + sizeof(de->d_name)];
		uint8_t sha[32];
		bool keep;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		keep = name_sha(de->d_name, "", sha) && ref_has(&mans, sha);
		snprintf(rel, sizeof(rel), FATELF_REPO_MANIFESTS "/%s", de->d_name);
		/* inside a kept folder, only the two files; a dropped one empties */
		k = sweep(r, rel, keep ? keep_manifest_file : keep_none, NULL, res, d);
		if (k == 0 && !keep) {
			k = drop(dirfd(dir), de->d_name, true, res);
			if (k == -ENOTDIR)
				k = drop(dirfd(dir), de->d_name, false, res);
			if (k < 0)
				k = fatelf_diag_at(d, k, -1, rel, "%s", fatelf_strerror(k));
		}
		if (k < 0)
			break;
	}
out:
	if (dir)
		closedir(dir);
	free(objs.v);
	free(mans.v);
	return k;
}
