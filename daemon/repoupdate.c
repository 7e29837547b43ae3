/*
 * Update's thread: each repository's index fetched through the helper
 * and accepted by the rules of repo_state_accept (daemon/repos.c), or, for
 * a repository of type oci, made from its registry's catalog and tags
 * (daemon/ociinstall.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hex.h"
#include "results.h"
#include "job.h"
#include "macro.h"
#include "repos.h"

/* One repository's index: the pointer, then the index and signature it
 * names, accepted by the rules of repo_state_accept. */
static int update_one(const engine_config *cfg, const struct repo_conf *r, fatelf_repo_index **ret, fatelf_diag *d)
{
	struct repo_get ptr = { .path = FATELF_REPO_POINTER, .max = FATELF_REPO_POINTER_MAX, .fd = -1 };
	struct repo_get gets[2] = { { .fd = -1 }, { .fd = -1 } };
	char ipath[FATELF_REPO_MANIFEST_PATH_MAX], spath[FATELF_REPO_MANIFEST_PATH_MAX];
	uint8_t sha[32], got[32];
	uint64_t size;
	fatelf_sha256 *h;
	int k;

	if (r->oci)
		return oci_update(cfg, r, ret, d);
	k = repo_fetch(cfg, r, &ptr, 1, NULL, NULL, d);
	if (k == 0)
		k = fatelf_repo_pointer_parse(ptr.buf, ptr.len, sha, &size, d);
	free(ptr.buf);
	if (k < 0)
		return k;
	fatelf_repo_index_path(sha, false, ipath);
	fatelf_repo_index_path(sha, true, spath);
	gets[0].path = ipath;
	gets[0].size = size;
	gets[1].path = spath;
	gets[1].max = FATELF_REPO_SIG_MAX;
	k = repo_fetch(cfg, r, gets, 2, NULL, NULL, d);
	if (k == 0) {
		h = fatelf_sha256_new();
		if (!h) {
			k = fatelf_diag_oom(d);
		} else {
			fatelf_sha256_update(h, gets[0].buf, gets[0].len);
			fatelf_sha256_final(h, got);
			fatelf_sha256_free(h);
			if (memcmp(got, sha, 32) != 0)
				k = fatelf_diag_set(d, -FATELF_E_REPO_INDEX, -1,
						    "repository %s: %s does not hash to its name", r->name, ipath);
		}
	}
	if (k == 0)
		k = repo_state_accept(r, cfg->state_dir, gets[0].buf, gets[0].len, gets[1].buf, gets[1].len,
				      (int64_t)time(NULL), ret, d);
	free(gets[0].buf);
	free(gets[1].buf);
	return k;
}

int repo_update_job(job *j)
{
	struct repo_conf *confs = NULL;
	size_t n = 0;
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	int k;

	if (!o || !a) {
		json_putp(&o);
		json_putp(&a);
		return -ENOMEM;
	}
	json_object_object_add(o, "repositories", a);
	k = repo_conf_list(j->cfg.repos_dir, &confs, &n, &j->diag);
	for (size_t i = 0; k >= 0 && i < n; i++) {
		fatelf_repo_index *ix = NULL;

		if (j->package && strcmp(j->package, confs[i].name) != 0)
			continue;
		k = update_one(&j->cfg, &confs[i], &ix, &j->diag);
		if (k < 0) {
			free(j->repo_name);
			j->repo_name = strdup(confs[i].name);
			break;
		}
		daemon_log(6, "repository %s: index serial %" PRIu64 ", %zu packages", confs[i].name, ix->serial,
			   ix->npackages);
		json_object_array_add(a, json_repository(&confs[i], ix));
		fatelf_repo_index_free(ix);
	}
	repo_conf_list_free(confs, n);
	if (k < 0) {
		json_putp(&o);
		return k;
	}
	j->reply = o;
	return 0;
}

