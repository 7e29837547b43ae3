/*
 * Update of a repository of type oci (URL=oci://HOST[:PORT]/NAMESPACE):
 * the registry's catalog, then the tags of each package under NAMESPACE,
 * kept as the repository's index (doc/repository.md §10).
 *
 * Neither list is signed, so both are read in small bounded steps: pages
 * of FATELF_OCI_PAGE_N names (?n=, then &last= the page's last name, as
 * the distribution API paginates), each reply at most FATELF_OCI_LIST_MAX
 * bytes, read as it is parsed and freed before the next round; of each
 * page only what the index needs is kept (the packages under NAMESPACE,
 * the tags that are versions), and one update takes at most
 * UPDATE_PACKAGES_MAX packages, UPDATE_VERSIONS_MAX versions and
 * UPDATE_PAGES_MAX pages. Past any bound the update fails with
 * FATELF_E_REPO_LIMIT, naming the URL or the registry and the bound, and
 * the index kept before stays.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "macro.h"
#include "oci.h"
#include "repos.h"

#define UPDATE_PACKAGES_MAX 4096u       /* packages under the namespace */
#define UPDATE_VERSIONS_MAX 32768u      /* versions, all packages together */
#define UPDATE_PAGES_MAX    4096u       /* requests of one update */
#define UPDATE_ROUND        8u          /* tag lists fetched at once */

/* One update's state: the registry as a mirror, what was taken, and the
 * counts the bounds hold. */
struct upd {
	const engine_config *cfg;
	struct repo_conf fc;
	fatelf_oci_ref base;
	size_t plen;                    /* strlen(base.name) */
	char **names;                   /* the packages, as the catalog gives them */
	size_t nnames, cap_names;
	size_t nversions, npages;
	fatelf_diag *d;
};

/* A page's walk: its names counted, the last one kept for &last=. */
struct page {
	struct upd *u;
	fatelf_repo_package *pkg;       /* NULL: the catalog */
	size_t cap_versions;
	size_t n;
	char last[256];
	bool more;                      /* a full page, past the last: ask again */
};

static int limit_fail(struct upd *u, const char *what, unsigned max)
{
	return fatelf_diag_set(u->d, -FATELF_E_REPO_LIMIT, -1,
			       "registry %s: more than %u %s, the limit of one update (repository %s)", u->fc.urls[0],
			       max, what, u->fc.name);
}

static int take_name(void *ctx, const char *name)
{
	struct page *pg = ctx;
	struct upd *u = pg->u;
	const char *rest;

	snprintf(pg->last, sizeof(pg->last), "%s", name);
	if (strncmp(name, u->base.name, u->plen) != 0 || name[u->plen] != '/')
		return 0;
	rest = name + u->plen + 1;
	if (strchr(rest, '/') || !fatelf_pkg_name_valid(rest))
		return 0;
	if (u->nnames >= UPDATE_PACKAGES_MAX)
		return limit_fail(u, "packages", UPDATE_PACKAGES_MAX);
	if (GROW_ARRAY(u->names, u->cap_names, u->nnames + 1) < 0)
		return -ENOMEM;
	u->names[u->nnames] = strdup(rest);
	if (!u->names[u->nnames])
		return -ENOMEM;
	u->nnames++;
	return 0;
}

static int take_tag(void *ctx, const char *tag)
{
	struct page *pg = ctx;
	struct upd *u = pg->u;
	fatelf_repo_package *p = pg->pkg;
	fatelf_repo_version *v;

	snprintf(pg->last, sizeof(pg->last), "%s", tag);
	if (!fatelf_pkg_version_valid(tag))
		return 0;
	if (u->nversions >= UPDATE_VERSIONS_MAX)
		return limit_fail(u, "versions", UPDATE_VERSIONS_MAX);
	if (GROW_ARRAY(p->versions, pg->cap_versions, p->nversions + 1) < 0)
		return -ENOMEM;
	v = &p->versions[p->nversions];
	memset(v, 0, sizeof(*v));
	v->version = strdup(tag);
	v->summary = strdup("");
	if (!v->version || !v->summary) {
		free(v->version);
		free(v->summary);
		return -ENOMEM;
	}
	p->nversions++;
	u->nversions++;
	return 0;
}

/* prefix?n=N, then &last=LAST once a page was read. A prefix of two
 * names (255 bytes each at most) and a last one fit in buf's 1000. */
static void page_path(char *buf, size_t size, const char *prefix, const char *last)
{
	int n = snprintf(buf, size, "%s?n=%u%s%s", prefix, FATELF_OCI_PAGE_N, last[0] ? "&last=" : "", last);

	assert(n > 0 && (size_t)n < size);
}

/* The failure of a round of requests: a reply past its bound is the
 * registry's, named by its URL and the bound. */
static int fetch_failed(struct upd *u, const struct repo_get *gets, size_t n, int k)
{
	for (size_t i = 0; i < n; i++)
		if (gets[i].too_big) {
			char url[4096];

			snprintf(url, sizeof(url), "%s%s", u->fc.urls[0], gets[i].path);
			return fatelf_diag_at(u->d, -FATELF_E_REPO_LIMIT, -1, url,
					      "a reply larger than %u bytes, the bound of a catalog page or tag "
					      "list (repository %s)", FATELF_OCI_LIST_MAX, u->fc.name);
		}
	return k;
}

/* One reply read: its names to take, then whether to ask for more. */
static int page_read(struct upd *u, struct page *pg, struct repo_get *g, const char *asked_last)
{
	char msg[sizeof(u->d->msg)];
	int k;

	pg->n = 0;
	pg->more = false;
	k = fatelf_oci_names_each(g->buf, g->len, pg->pkg != NULL, pg->pkg ? take_tag : take_name, pg, u->d);
	free(g->buf);
	g->buf = NULL;
	if (k == -FATELF_E_REPO_OCI) {
		snprintf(msg, sizeof(msg), "%s", u->d->msg);
		return fatelf_diag_set(u->d, k, -1, "%s%s: %s", u->fc.urls[0], g->path, msg);
	}
	if (k < 0)
		return k == -ENOMEM ? fatelf_diag_oom(u->d) : k;
	pg->n = (size_t)k;
	/* A registry that pages gives FATELF_OCI_PAGE_N names past last
	 * while there are more; one that does not gives all it has (fewer,
	 * more, or the same page again). */
	pg->more = pg->n == FATELF_OCI_PAGE_N && strcmp(pg->last, asked_last) > 0;
	return 0;
}

static int page_budget(struct upd *u, size_t n)
{
	if (u->npages + n > UPDATE_PAGES_MAX)
		return limit_fail(u, "pages of lists", UPDATE_PAGES_MAX);
	u->npages += n;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int read_catalog(struct upd *u)
{
	char path[1000], last[256] = "";
	struct page pg = { .u = u };
	size_t w = 0;
	int k;

	do {
		struct repo_get g = { .path = path, .max = FATELF_OCI_LIST_MAX, .fd = -1 };

		k = page_budget(u, 1);
		if (k < 0)
			return k;
		page_path(path, sizeof(path), "v2/_catalog", last);
		k = repo_fetch(u->cfg, &u->fc, &g, 1, NULL, NULL, u->d);
		if (k < 0) {
			free(g.buf);
			return fetch_failed(u, &g, 1, k);
		}
		k = page_read(u, &pg, &g, last);
		if (k < 0)
			return k;
		snprintf(last, sizeof(last), "%s", pg.last);
	} while (pg.more);
	/* by name, each once */
	if (u->nnames > 1)
		qsort(u->names, u->nnames, sizeof(*u->names), str_cmp);
	for (size_t i = 0; i < u->nnames; i++) {
		if (w > 0 && strcmp(u->names[w - 1], u->names[i]) == 0) {
			free(u->names[i]);
			continue;
		}
		u->names[w++] = u->names[i];
	}
	u->nnames = w;
	return 0;
}

static int version_cmp(const void *a, const void *b)
{
	return fatelf_pkg_version_compare(((const fatelf_repo_version *)a)->version,
					  ((const fatelf_repo_version *)b)->version);
}

/* A package's versions by dpkg's order, each once. */
static void versions_settle(fatelf_repo_package *p)
{
	size_t w = 0;

	if (p->nversions > 1)
		qsort(p->versions, p->nversions, sizeof(*p->versions), version_cmp);
	for (size_t i = 0; i < p->nversions; i++) {
		if (w > 0 && version_cmp(&p->versions[w - 1], &p->versions[i]) == 0) {
			free(p->versions[i].version);
			free(p->versions[i].summary);
			continue;
		}
		p->versions[w++] = p->versions[i];
	}
	p->nversions = w;
}

/* The tag lists of every package, UPDATE_ROUND at a time, each package
 * paged until its list ends. ix->packages[i] is names[i]'s. */
static int read_tags(struct upd *u, fatelf_repo_index *ix)
{
	struct page pages[UPDATE_ROUND];
	struct repo_get gets[UPDATE_ROUND];
	char paths[UPDATE_ROUND][1000], asked[UPDATE_ROUND][256];
	size_t caps_len = u->nnames ? u->nnames : 1;
	_cleanup_free_ size_t *caps = calloc(caps_len, sizeof(*caps));
	_cleanup_free_ char (*lasts)[256] = calloc(caps_len, sizeof(*lasts));
	_cleanup_free_ bool *going = calloc(caps_len, sizeof(*going));
	size_t next = 0, ngoing = 0;
	int k;

	ix->packages = calloc(caps_len, sizeof(*ix->packages));
	if (!caps || !lasts || !going || !ix->packages)
		return fatelf_diag_oom(u->d);
	for (size_t i = 0; i < u->nnames; i++) {
		ix->packages[i].name = strdup(u->names[i]);
		if (!ix->packages[i].name)
			return fatelf_diag_oom(u->d);
		ix->npackages++;
		going[i] = true;
	}
	ngoing = u->nnames;
	while (ngoing > 0) {
		size_t idx[UPDATE_ROUND], n = 0;

		/* the next UPDATE_ROUND packages whose list goes on, round robin */
		for (size_t seen = 0; seen < u->nnames && n < UPDATE_ROUND; seen++, next = (next + 1) % u->nnames)
			if (going[next])
				idx[n++] = next;
		k = page_budget(u, n);
		if (k < 0)
			return k;
		for (size_t j = 0; j < n; j++) {
			char prefix[600];

			snprintf(prefix, sizeof(prefix), "v2/%s/%s/tags/list", u->base.name, u->names[idx[j]]);
			snprintf(asked[j], sizeof(asked[j]), "%s", lasts[idx[j]]);
			page_path(paths[j], sizeof(paths[j]), prefix, asked[j]);
			gets[j] = (struct repo_get){ .path = paths[j], .max = FATELF_OCI_LIST_MAX, .fd = -1 };
		}
		k = repo_fetch(u->cfg, &u->fc, gets, n, NULL, NULL, u->d);
		if (k < 0) {
			k = fetch_failed(u, gets, n, k);
			for (size_t j = 0; j < n; j++)
				free(gets[j].buf);
			return k;
		}
		for (size_t j = 0; j < n; j++) {
			size_t i = idx[j];

			pages[j] = (struct page){ .u = u, .pkg = &ix->packages[i], .cap_versions = caps[i] };
			k = page_read(u, &pages[j], &gets[j], asked[j]);
			caps[i] = pages[j].cap_versions;
			if (k < 0) {
				for (size_t m = j + 1; m < n; m++)
					free(gets[m].buf);
				return k;
			}
			snprintf(lasts[i], sizeof(lasts[i]), "%s", pages[j].last);
			if (!pages[j].more) {
				going[i] = false;
				ngoing--;
			}
		}
	}
	return 0;
}

/* The packages with at least one version, each's versions settled. */
static void index_settle(fatelf_repo_index *ix)
{
	size_t w = 0;

	for (size_t i = 0; i < ix->npackages; i++) {
		fatelf_repo_package *p = &ix->packages[i];

		if (p->nversions == 0) {
			/* no tag is a version: not a package of ours */
			free(p->versions);
			free(p->name);
			continue;
		}
		versions_settle(p);
		ix->packages[w++] = *p;
	}
	ix->npackages = w;
}

int oci_update(const engine_config *cfg, const struct repo_conf *r, fatelf_repo_index **ret, fatelf_diag *d)
{
	struct upd u = { .cfg = cfg, .d = d };
	fatelf_repo_index *ix = NULL, *old = NULL;
	int k;

	if (fatelf_oci_ref_parse(r->urls[0], false, &u.base) < 0)
		return fatelf_diag_set(d, -EINVAL, -1, "repository %s: %s is not oci://HOST[:PORT]/NAMESPACE", r->name,
				       r->urls[0]);
	u.plen = strlen(u.base.name);
	k = oci_conf_for(cfg, u.base.host, &u.fc, d);
	if (k < 0)
		goto out;
	snprintf(u.fc.name, sizeof(u.fc.name), "%s", r->name);
	k = read_catalog(&u);
	if (k < 0)
		goto out;
	ix = fatelf_repo_index_new();
	if (!ix) {
		k = fatelf_diag_oom(d);
		goto out;
	}
	k = read_tags(&u, ix);
	if (k < 0)
		goto out;
	index_settle(ix);
	ix->format = FATELF_REPO_FORMAT;
	ix->created = (int64_t)time(NULL);
	ix->serial = 1;
	if (repo_state_load(cfg->state_dir, r->name, &old, NULL) == 0 && old)
		ix->serial = old->serial + 1;
	k = repo_state_keep(cfg->state_dir, r->name, ix, d);
	if (k == 0) {
		*ret = ix;
		ix = NULL;
	}
out:
	fatelf_repo_index_free(old);
	fatelf_repo_index_free(ix);
	for (size_t i = 0; i < u.nnames; i++)
		free(u.names[i]);
	free(u.names);
	repo_conf_done(&u.fc);
	return k;
}
