/*
 * Install{package}: the worker fetches the version a repository offers
 * (doc/repository.md) and installs it with the engine's repository
 * install: the manifest, its signature and the pack list first, then, at
 * the end of the preflight, only the objects the install writes that no
 * installed file already has (daemon/repostage.c). A repository of type
 * oci is a registry's (daemon/ociinstall.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "macro.h"
#include "path.h"
#include "repos.h"
#include "worker_private.h"

/* One package, spec "NAME[=VERSION]": the version resolved, its
 * repository's name in *ret_repo, what it installed in *res (or staged,
 * with o->group), what it fetched in *fs. */
static int install_one(worker *w, job *j, const char *spec, const engine_install_opts *oo, engine_result *res,
		       struct job_fetch *fs, char **ret_repo)
{
	engine_install_opts so = *oo, *o = &so;
	const engine_config *cfg = engine_get_config(w->rw);
	struct repo_conf rc = { 0 };
	fatelf_repo_index *ix = NULL;
	const fatelf_repo_version *v = NULL;
	char mpath[FATELF_REPO_MANIFEST_PATH_MAX], spath[FATELF_REPO_MANIFEST_PATH_MAX],
		ppath[FATELF_REPO_OBJECT_PATH_MAX];
	struct repo_get gets[3] = { { .fd = -1 }, { .fd = -1 }, { .fd = -1 } };
	struct repo_get *gman = &gets[0], *gsig = NULL, *gpack = NULL;
	struct repo_membuf pack_text = { 0 };
	fatelf_repo_pack *pack = NULL;
	struct repo_helper pre = { .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	engine_repo_version rv = { 0 };
	uint8_t sha[32];
	fatelf_sha256 *h;
	size_t ngets;
	int k;

	k = repo_resolve(cfg, spec, &rc, &ix, &v, &j->diag);
	if (k < 0) {
		if (k == -ENOENT) {
			char name[256];
			const char *eq = strchr(spec, '=');

			snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - spec) : 255, spec);
			FATELF_DIAG_FACT(&j->diag, package, name);
			return -ENGINE_E_NOT_INSTALLED;
		}
		return k;
	}
	free(*ret_repo);
	*ret_repo = strdup(rc.name);
	so.source_type = STORE_SOURCE_REPOSITORY;
	so.source = rc.name;
	if (rc.oci) {
		/* a registry's: NAMESPACE/NAME:VERSION */
		char name[256];
		const char *eq = strchr(spec, '=');

		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - spec) : 255, spec);
		k = repo_install_oci(w, j, &rc, name, v->version, o, res, fs);
		goto out;
	}
	/* The objects' helper loads while the metadata is fetched and the
	 * preflight runs (without it, one is started then). */
	if (!o->dry_run && repo_helper_spawn(cfg, &rc, &pre, NULL) < 0)
		pre = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	fatelf_repo_manifest_path(v->manifest, false, mpath);
	fatelf_repo_manifest_path(v->manifest, true, spath);
	fatelf_repo_object_path(v->pack, ppath);
	/* The pack list is needed for the frames it lists, and for a dry
	 * run's compressed sizes; a version with no stored frame installs
	 * without it, so that an upgrade fetches the manifest and the objects
	 * that changed alone. */
	ngets = 1;
	gets[0] = (struct repo_get){ .path = mpath, .size = v->manifest_size, .fd = -1 };
	if (v->signed_manifest) {
		gsig = &gets[ngets++];
		*gsig = (struct repo_get){ .path = spath, .max = FATELF_REPO_SIG_MAX, .fd = -1 };
	}
	if (v->frames > 0 || o->dry_run) {
		gpack = &gets[ngets++];
		*gpack = (struct repo_get){ .path = ppath, .max = v->pack_size + (v->pack_size >> 4) + (1u << 16),
					    .fd = -1 };
	}
	k = repo_fetch(cfg, &rc, gets, ngets, &w->cancel, &w->fetch_pid, &j->diag);
	if (k < 0)
		goto out;
	fs->metadata = 0;
	for (size_t i = 0; i < ngets; i++)
		fs->metadata += gets[i].len;
	/* The manifest must be the one the signed index names. */
	h = fatelf_sha256_new();
	if (!h) {
		k = -ENOMEM;
		goto out;
	}
	fatelf_sha256_update(h, gman->buf, gman->len);
	fatelf_sha256_final(h, sha);
	fatelf_sha256_free(h);
	if (memcmp(sha, v->manifest, 32) != 0) {
		k = fatelf_diag_set(&j->diag, -FATELF_E_REPO_OBJECT, -1, "%s: does not hash to its name", mpath);
		goto out;
	}
	if (gpack) {
		fatelf_reader rd;

		fatelf_reader_mem(&rd, gpack->buf, gpack->len);
		pack_text.cap = (size_t)v->pack_size + 1;
		pack_text.p = malloc(pack_text.cap);
		if (!pack_text.p) {
			k = -ENOMEM;
			goto out;
		}
		k = fatelf_repo_object_read(&rd, v->pack, v->pack_size, ppath, repo_membuf_put, &pack_text, &j->diag);
		fatelf_reader_close(&rd);
		if (k == 0)
			k = fatelf_repo_pack_parse(pack_text.p, pack_text.len, &pack, &j->diag);
		if (k < 0)
			goto out;
	}
	rv.manifest = gman->buf;
	rv.manifest_len = gman->len;
	rv.sig = gsig ? gsig->buf : NULL;
	rv.sig_len = gsig ? gsig->len : 0;
	rv.pack = pack;
	k = repo_install_pieces(w, &rc, NULL, &pre, &rv, o, res, fs, &j->diag);
out:
	repo_helper_discard(&pre);
	for (size_t i = 0; i < 3; i++)
		free(gets[i].buf);
	free(pack_text.p);
	fatelf_repo_pack_free(pack);
	fatelf_repo_index_free(ix);
	repo_conf_done(&rc);
	return k;
}

/* The package name of spec "NAME[=VERSION]". */
static void spec_name(const char *spec, char name[256])
{
	const char *eq = strchr(spec, '=');

	snprintf(name, 256, "%.*s", eq ? (int)(eq - spec) : 255, spec);
}

#define PULL_MAX 256

/* What pull_depends works through: each package of the transaction and
 * its dependencies. */
struct pull {
	char *spec;
	bool automatic;
	fatelf_depend *deps;
	size_t ndeps;
};

static void pulls_free(struct pull *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].spec);
		repo_depends_free(v[i].deps, v[i].ndeps);
	}
	free(v);
}

/*
 * The packages the job names need, from the repositories: a dependency
 * that neither a package of the transaction nor an installed package at
 * a version its constraint allows meets is added to the transaction, at
 * the newest version a repository offers that meets it, marked
 * automatic, and its own dependencies are looked at in turn. A name
 * already in the transaction is not added again, so cycles end there
 * (the group's check at the commit sees whether its version fits). A
 * package the repositories do not offer is left to the install, which
 * says so. The job's members become the whole transaction when anything
 * is added.
 */
static int pull_depends(worker *w, job *j)
{
	const engine_config *cfg = engine_get_config(w->rw);
	struct pull *v = NULL;
	size_t n = 0, first, cap = 0;
	int k = 0;

	first = j->nmembers ? j->nmembers : 1;
	v = calloc(PULL_MAX, sizeof(*v));
	if (!v)
		return fatelf_diag_oom(&j->diag);
	cap = PULL_MAX;
	for (; n < first; n++) {
		struct repo_conf rc = { 0 };
		fatelf_repo_index *ix = NULL;
		const fatelf_repo_version *rv = NULL;
		fatelf_diag rd = { .record = -1 };

		v[n].spec = strdup(j->nmembers ? j->members[n].spec : j->repo_spec);
		if (!v[n].spec) {
			k = -ENOMEM;
			goto out;
		}
		k = repo_resolve(cfg, v[n].spec, &rc, &ix, &rv, &rd);
		if (k == 0) {
			k = repo_depends_copy(rv, &v[n].deps, &v[n].ndeps);
			fatelf_repo_index_free(ix);
			repo_conf_done(&rc);
			if (k < 0)
				goto out;
		} else if (k == -FATELF_E_REPO_EXPIRED) {
			j->diag = rd;
			n++;    /* its spec is freed with the rest */
			goto out;
		} else {
			k = 0;  /* the install says what it cannot find */
		}
	}
	for (size_t i = 0; i < n; i++)
		for (size_t e = 0; e < v[i].ndeps; e++) {
			const fatelf_depend *dep = &v[i].deps[e];
			char name[256], constraint[FATELF_DIAG_NAME_MAX] = "";
			store_package p = { 0 };
			bool have = false;

			for (size_t m = 0; m < n && !have; m++) {
				spec_name(v[m].spec, name);
				have = strcmp(name, dep->name) == 0;
			}
			if (have)
				continue;
			k = store_package_get(engine_store(w->rw), dep->name, &p, NULL);
			if (k > 0) {
				have = fatelf_depend_satisfied_by(dep, p.version);
				store_package_done(&p);
			}
			k = 0;
			if (have)
				continue;
			if (n == cap) {
				k = fatelf_diag_set(&j->diag, -E2BIG, -1,
						    "more than %d packages in one transaction with their dependencies",
						    PULL_MAX);
				goto out;
			}
			k = repo_resolve_depend(cfg, dep, &v[n].spec, &v[n].deps, &v[n].ndeps, &j->diag);
			if (k == -ENOENT) {
				spec_name(v[i].spec, name);
				if (dep->op != FATELF_DEP_ANY && dep->version)
					snprintf(constraint, sizeof(constraint), "%s %s",
						 fatelf_depend_op_text(dep->op), dep->version);
				k = fatelf_diag_set(&j->diag, -ENGINE_E_DEPENDENCY_MISSING, -1,
						    "%s depends on %s%s%s%s: not installed, and no repository offers "
						    "a version that meets it", name, dep->name, constraint[0] ? " (" : "",
						    constraint, constraint[0] ? ")" : "");
				fatelf_diag_names(&j->diag, name);
				FATELF_DIAG_FACT(&j->diag, package, name);
				FATELF_DIAG_FACT(&j->diag, dependency, dep->name);
				FATELF_DIAG_FACT(&j->diag, constraint, constraint);
				goto out;
			}
			if (k < 0) {
				if (k != -FATELF_E_REPO_EXPIRED)
					fatelf_diag_set(&j->diag, k, -1, "resolving %s's dependencies", v[i].spec);
				goto out;
			}
			v[n++].automatic = true;
		}
	if (n == first)
		goto out;
	/* something pulled in: the members are the whole transaction */
	struct job_member *mm = realloc(j->members, n * sizeof(*mm));

	if (!mm) {
		k = fatelf_diag_oom(&j->diag);
		goto out;
	}
	j->members = mm;
	memset(mm + j->nmembers, 0, (n - j->nmembers) * sizeof(*mm));
	for (size_t i = j->nmembers; i < n; i++) {
		mm[i].fd = -1;
		mm[i].spec = v[i].spec;
		mm[i].automatic = v[i].automatic;
		v[i].spec = NULL;
	}
	j->nmembers = n;
out:
	pulls_free(v, n);
	return k;
}

int job_install_repo(worker *w, job *j, const engine_install_opts *o)
{
	engine_install_opts mo = *o;
	engine_group *g;
	int k = 0;

	k = pull_depends(w, j);
	if (k < 0)
		return k;
	if (j->nmembers == 0) {
		k = install_one(w, j, j->repo_spec, o, &j->result, &j->fetch, &j->repo_name);
		/* also when it failed: what it fetched until then */
		j->has_fetch = true;
		return k;
	}
	/* Several packages: each staged in turn, then one commit for all. */
	g = engine_group_new(w->rw);
	if (!g)
		return fatelf_diag_oom(&j->diag);
	mo.group = g;
	for (size_t i = 0; i < j->nmembers && k == 0; i++) {
		struct job_member *m = &j->members[i];

		mo.automatic = m->automatic;
		mo.manual = !m->automatic && o->manual;
		k = install_one(w, j, m->spec, &mo, &m->result, &m->fetch, &m->repo_name);
		/* the one that failed names the repository in the error */
		free(j->repo_name);
		j->repo_name = m->repo_name ? strdup(m->repo_name) : NULL;
		if (k < 0 && !j->diag.package[0]) {
			char name[256];
			const char *eq = strchr(m->spec, '=');

			snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - m->spec) : 255, m->spec);
			FATELF_DIAG_FACT(&j->diag, package, name);
		}
	}
	if (k < 0)
		engine_group_abort(g, k, &j->diag);
	else if (!o->dry_run)
		k = engine_group_commit(g, &j->diag);
	else
		k = engine_group_check(g, &j->diag);
	engine_group_free(g);
	j->has_fetch = true;
	return k;
}
