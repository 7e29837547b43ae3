/*
 * The repository index (doc/repository.md, "The index"): its model, its
 * strict parser (the manifest's JSON reader, so duplicate keys, depth
 * and strings follow the same rules), its canonical text, and the
 * pointer file that names the current index by its hash.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "hex.h"
#include "jsonscan.h"
#include "macro.h"
#include "manifest_private.h"
#include "repo.h"
#include "text.h"

static void version_clear(fatelf_repo_version *v)
{
	free(v->version);
	free(v->summary);
	free(v->targets);
	for (size_t i = 0; i < v->ndepends; i++)
		fatelf_depend_clear(&v->depends[i]);
	free(v->depends);
}

static void package_clear(fatelf_repo_package *p)
{
	for (size_t i = 0; i < p->nversions; i++)
		version_clear(&p->versions[i]);
	free(p->versions);
	free(p->name);
}

fatelf_repo_index *fatelf_repo_index_new(void)
{
	fatelf_repo_index *ix = calloc(1, sizeof(*ix));

	if (ix)
		ix->format = FATELF_REPO_FORMAT;
	return ix;
}

fatelf_repo_index *fatelf_repo_index_free(fatelf_repo_index *ix)
{
	if (!ix)
		return NULL;
	for (size_t i = 0; i < ix->npackages; i++)
		package_clear(&ix->packages[i]);
	free(ix->packages);
	free(ix);
	return NULL;
}

/* Where the first package with a name not below name is. */
static size_t package_slot(const fatelf_repo_index *ix, const char *name)
{
	size_t lo = 0, hi = ix->npackages;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ix->packages[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

fatelf_repo_package *fatelf_repo_index_find(const fatelf_repo_index *ix, const char *name)
{
	size_t i = package_slot(ix, name);

	return i < ix->npackages && strcmp(ix->packages[i].name, name) == 0 ? &ix->packages[i] : NULL;
}

fatelf_repo_version *fatelf_repo_package_version(const fatelf_repo_package *pkg, const char *version)
{
	for (size_t i = 0; i < pkg->nversions; i++)
		if (fatelf_pkg_version_compare(pkg->versions[i].version, version) == 0)
			return &pkg->versions[i];
	return NULL;
}

fatelf_repo_package *fatelf_repo_index_add_package(fatelf_repo_index *ix, const char *name)
{
	size_t i = package_slot(ix, name);
	fatelf_repo_package *p;
	char *copy;

	if (i < ix->npackages && strcmp(ix->packages[i].name, name) == 0)
		return &ix->packages[i];
	copy = strdup(name);
	if (!copy)
		return NULL;
	p = realloc(ix->packages, (ix->npackages + 1) * sizeof(*p));
	if (!p) {
		free(copy);
		return NULL;
	}
	ix->packages = p;
	memmove(&p[i + 1], &p[i], (ix->npackages - i) * sizeof(*p));
	memset(&p[i], 0, sizeof(*p));
	p[i].name = copy;
	ix->npackages++;
	return &p[i];
}

fatelf_repo_version *fatelf_repo_package_add_version(fatelf_repo_package *pkg, const char *version)
{
	size_t i = 0;
	fatelf_repo_version *v;
	char *copy = strdup(version), *summary = strdup("");

	if (!copy || !summary) {
		free(copy);
		free(summary);
		return NULL;
	}
	while (i < pkg->nversions && fatelf_pkg_version_compare(pkg->versions[i].version, version) < 0)
		i++;
	v = realloc(pkg->versions, (pkg->nversions + 1) * sizeof(*v));
	if (!v) {
		free(copy);
		free(summary);
		return NULL;
	}
	pkg->versions = v;
	memmove(&v[i + 1], &v[i], (pkg->nversions - i) * sizeof(*v));
	memset(&v[i], 0, sizeof(*v));
	v[i].version = copy;
	v[i].summary = summary;
	pkg->nversions++;
	return &v[i];
}

size_t fatelf_repo_index_remove(fatelf_repo_index *ix, const char *name, const char *version)
{
	fatelf_repo_package *p = fatelf_repo_index_find(ix, name);
	size_t removed = 0, k = 0;

	if (!p)
		return 0;
	for (size_t i = 0; i < p->nversions; i++) {
		if (!version || fatelf_pkg_version_compare(p->versions[i].version, version) == 0) {
			version_clear(&p->versions[i]);
			removed++;
		} else
			p->versions[k++] = p->versions[i];
	}
	p->nversions = k;
	if (k == 0) {
		size_t i = (size_t)(p - ix->packages);

		package_clear(p);
		memmove(&ix->packages[i], &ix->packages[i + 1], (ix->npackages - i - 1) * sizeof(*p));
		ix->npackages--;
	}
	return removed;
}

int fatelf_repo_index_check(const fatelf_repo_index *ix, uint64_t min_serial, int64_t now, fatelf_diag *d)
{
	if (ix->serial < min_serial)
		return fatelf_diag_set(d, -FATELF_E_REPO_ROLLBACK, -1,
				       "index serial %" PRIu64 " is lower than %" PRIu64
				       ", which this machine already accepted: an older index replayed",
				       ix->serial, min_serial);
	if (ix->expires != 0 && now >= ix->expires) {
		if (d) {
			d->expires = ix->expires;
			d->has |= FATELF_DIAG_HAS_EXPIRES;
		}
		return fatelf_diag_set(d, -FATELF_E_REPO_EXPIRED, -1,
				       "index serial %" PRIu64 " expired at %" PRId64 " (now %" PRId64 ")",
				       ix->serial, ix->expires, now);
	}
	return 0;
}

int fatelf_repo_index_check_identity(const fatelf_repo_index *ix, const char *pinned, fatelf_diag *d)
{
	if (!pinned || !pinned[0] || strcmp(ix->repository, pinned) == 0)
		return 0;
	FATELF_DIAG_FACT(d, expected, pinned);
	FATELF_DIAG_FACT(d, got, ix->repository);
	if (!ix->repository[0])
		return fatelf_diag_set(d, -FATELF_E_REPO_MISMATCH, -1,
				       "index serial %" PRIu64 " names no repository, and this machine pinned "
				       "repository %s: another repository's index, or an old one replayed",
				       ix->serial, pinned);
	return fatelf_diag_set(d, -FATELF_E_REPO_MISMATCH, -1,
			       "index serial %" PRIu64 " is repository %s's, and this machine pinned repository "
			       "%s: another repository's index, signed by the same key",
			       ix->serial, ix->repository, pinned);
}

bool fatelf_repo_id_valid(const char *s)
{
	uint8_t raw[FATELF_REPO_ID_LEN / 2];

	return strlen(s) == FATELF_REPO_ID_LEN && fatelf_unhex_lower(s, raw, sizeof(raw)) == 0;
}

int fatelf_repo_id_new(char ret[FATELF_REPO_ID_LEN + 1])
{
	uint8_t raw[FATELF_REPO_ID_LEN / 2];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t k = getrandom(raw + got, sizeof(raw) - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		got += (size_t)k;
	}
	fatelf_hex(raw, sizeof(raw), ret);
	return 0;
}

/* Parser */

struct ictx {
	fatelf_json_doc *doc;
	fatelf_diag *d;
	const char *pkg;        /* what messages are about, when set */
	const char *ver;
};

static int __attribute__((format(printf, 2, 3))) ifail(struct ictx *c, const char *fmt, ...)
{
	char rule[sizeof(((fatelf_diag *)0)->msg)];
	char q1[FATELF_TEXT_QUOTE_BUF], q2[FATELF_TEXT_QUOTE_BUF];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	if (c->pkg && c->ver)
		return fatelf_diag_set(c->d, -FATELF_E_REPO_INDEX, -1, "index: package '%s' version '%s': %s",
				       fatelf_text_quote(c->pkg, q1), fatelf_text_quote(c->ver, q2), rule);
	if (c->pkg)
		return fatelf_diag_set(c->d, -FATELF_E_REPO_INDEX, -1, "index: package '%s': %s",
				       fatelf_text_quote(c->pkg, q1), rule);
	return fatelf_diag_set(c->d, -FATELF_E_REPO_INDEX, -1, "index: %s", rule);
}

/* The value of a field, of type t. */
static int get(struct ictx *c, size_t at, const char *key, fatelf_json_type t, fatelf_json_value *v)
{
	static const char *const names[] = {
		[FATELF_JSON_BOOL] = "a boolean", [FATELF_JSON_INT] = "an integer",
		[FATELF_JSON_STRING] = "a string", [FATELF_JSON_OBJECT] = "an object",
		[FATELF_JSON_ARRAY] = "an array",
	};
	int r = fatelf_json_read(c->doc, at, v);

	if (r < 0)
		return r;
	if (v->type != t)
		return ifail(c, "field '%s' must be %s", key, names[t]);
	return 0;
}

static int get_uint(struct ictx *c, size_t at, const char *key, uint64_t max, uint64_t *ret)
{
	fatelf_json_value v;
	int r = get(c, at, key, FATELF_JSON_INT, &v);

	if (r < 0)
		return r;
	if (v.i64 < 0 || v.u64 > max)
		return ifail(c, "field '%s' must be an integer from 0 to %" PRIu64, key, max);
	*ret = (uint64_t)v.i64;
	return 0;
}

static int get_sha(struct ictx *c, size_t at, const char *key, uint8_t out[32])
{
	fatelf_json_value v;
	int r = get(c, at, key, FATELF_JSON_STRING, &v);

	if (r < 0)
		return r;
	if (v.len != 64 || fatelf_unhex_lower(v.str, out, 32) < 0)
		return ifail(c, "field '%s' must be 64 lower-case hex digits", key);
	return 0;
}

/* Text with no control character and valid UTF-8, at most max bytes. */
static int get_text(struct ictx *c, size_t at, const char *key, size_t max, char **ret)
{
	fatelf_json_value v;
	int r = get(c, at, key, FATELF_JSON_STRING, &v);

	if (r < 0)
		return r;
	char why_buf[FATELF_TEXT_PROBLEM_MAX];
	const char *why = strlen(v.str) != v.len ? "holds a NUL byte" : fatelf_text_problem(v.str, v.len, why_buf);

	if (why || v.len > max)
		return ifail(c, "field '%s' must be printable UTF-8 of at most %zu bytes%s%s", key, max,
			     why ? ": it " : "", why ? why : "");
	free(*ret);
	*ret = strdup(v.str);
	return *ret ? 0 : -ENOMEM;
}

static int get_targets(struct ictx *c, size_t at, fatelf_repo_version *ver)
{
	size_t n = fatelf_json_count(c->doc, at), pos = at, vat;
	fatelf_json_value v;
	int r;

	r = get(c, at, "targets", FATELF_JSON_ARRAY, &v);
	if (r < 0)
		return r;
	if (n > 1024)
		return ifail(c, "more than 1024 targets");
	ver->targets = calloc(n ? n : 1, sizeof(*ver->targets));
	if (!ver->targets)
		return -ENOMEM;
	while ((r = fatelf_json_next_member(c->doc, &pos, NULL, &vat)) > 0) {
		fatelf_pattern p;
		fatelf_diag tmp;
		char canon[FATELF_TARGET_NAME_MAX];

		r = get(c, vat, "targets", FATELF_JSON_STRING, &v);
		if (r < 0)
			return ifail(c, "every target must be a string");
		if (strlen(v.str) != v.len || v.len >= FATELF_TARGET_NAME_MAX ||
		    fatelf_pattern_parse(v.str, &p, &tmp) < 0 || p.want != FATELF_WANT_ALL)
			return ifail(c, "target %zu is not a full target name", ver->ntargets);
		fatelf_target_format(&p.target, canon);
		if (strcmp(canon, v.str) != 0)
			return ifail(c, "target %zu is not in canonical form", ver->ntargets);
		if (ver->ntargets > 0 &&
		    fatelf_manifest_target_cmp(&ver->targets[ver->ntargets - 1], &p.target) >= 0)
			return ifail(c, "targets are not sorted, each once");
		ver->targets[ver->ntargets++] = p.target;
	}
	return r;
}

/* "depends": the manifest's, in its canonical form (NAME or NAME (OP
 * VERSION)), sorted by name, each name once, not empty. */
static int get_depends(struct ictx *c, size_t at, fatelf_repo_version *ver)
{
	size_t n = fatelf_json_count(c->doc, at), pos = at, vat;
	fatelf_json_value v;
	int r;

	r = get(c, at, "depends", FATELF_JSON_ARRAY, &v);
	if (r < 0)
		return r;
	if (n == 0)
		return ifail(c, "field 'depends' is empty (leave it out instead)");
	if (n > FATELF_DEPENDS_MAX)
		return ifail(c, "more than %d depends", FATELF_DEPENDS_MAX);
	ver->depends = calloc(n, sizeof(*ver->depends));
	if (!ver->depends)
		return -ENOMEM;
	while ((r = fatelf_json_next_member(c->doc, &pos, NULL, &vat)) > 0) {
		fatelf_depend *dep = &ver->depends[ver->ndepends];
		char why[128], canon[FATELF_DEPEND_TEXT_MAX];

		r = get(c, vat, "depends", FATELF_JSON_STRING, &v);
		if (r < 0)
			return ifail(c, "depends[%zu] must be a string", ver->ndepends);
		if (strlen(v.str) != v.len || fatelf_depend_parse(v.str, v.len, dep, why, sizeof(why)) < 0)
			return ifail(c, "depends[%zu] is not NAME or NAME (OP VERSION)", ver->ndepends);
		ver->ndepends++;
		if (fatelf_depend_format(dep, canon, sizeof(canon)) < 0 || strcmp(canon, v.str) != 0)
			return ifail(c, "depends[%zu] is not in canonical form", ver->ndepends - 1);
		if (ver->ndepends > 1 && strcmp(ver->depends[ver->ndepends - 2].name, dep->name) >= 0)
			return ifail(c, "depends are not sorted by name, each once");
	}
	return r;
}

enum { F_VERSION, F_SUMMARY, F_TARGETS, F_ENTRIES, F_SIZE, F_MANIFEST, F_MANIFEST_SIZE, F_SIGNED, F_PACK,
       F_PACK_SIZE, F_FRAMES, F_DEPENDS, F_NVERSION };

static const char *const version_keys[F_NVERSION] = {
	"version", "summary", "targets", "entries", "size", "manifest", "manifest_size", "signed", "pack",
	"pack_size", "frames", "depends",
};

static int parse_version(struct ictx *c, size_t at, fatelf_repo_version *ver)
{
	size_t pos = at, vat;
	const char *key;
	bool seen[F_NVERSION] = { false };
	fatelf_json_value v;
	int r;

	r = get(c, at, "versions", FATELF_JSON_OBJECT, &v);
	if (r < 0)
		return ifail(c, "every version must be an object");
	r = fatelf_json_find(c->doc, at, "version", &vat);
	if (r < 0)
		return r;
	if (r == 0)
		return ifail(c, "a version has no field 'version'");
	r = get_text(c, vat, "version", 255, &ver->version);
	if (r < 0)
		return r;
	if (!fatelf_pkg_version_valid(ver->version))
		return ifail(c, "version '%s' breaks the version rules (doc/fatbundle.md, section 3)",
			     ver->version);
	c->ver = ver->version;
	while ((r = fatelf_json_next_member(c->doc, &pos, &key, &vat)) > 0) {
		size_t i;

		for (i = 0; i < F_NVERSION && strcmp(key, version_keys[i]) != 0; i++)
			;
		if (i == F_NVERSION) {
			char q[FATELF_TEXT_QUOTE_BUF];

			return ifail(c, "unknown field '%s'", fatelf_text_quote(key, q));
		}
		seen[i] = true;
		switch (i) {
		case F_VERSION:
			r = 0;
			break;
		case F_SUMMARY:
			r = get_text(c, vat, "summary", 4096, &ver->summary);
			break;
		case F_TARGETS:
			r = get_targets(c, vat, ver);
			break;
		case F_ENTRIES:
			r = get_uint(c, vat, "entries", UINT32_MAX, &ver->entries);
			break;
		case F_SIZE:
			r = get_uint(c, vat, "size", INT64_MAX, &ver->size);
			break;
		case F_MANIFEST:
			r = get_sha(c, vat, "manifest", ver->manifest);
			break;
		case F_MANIFEST_SIZE:
			r = get_uint(c, vat, "manifest_size", FATELF_MANIFEST_MAX, &ver->manifest_size);
			break;
		case F_SIGNED:
			r = get(c, vat, "signed", FATELF_JSON_BOOL, &v);
			ver->signed_manifest = v.b;
			break;
		case F_PACK:
			r = get_sha(c, vat, "pack", ver->pack);
			break;
		case F_PACK_SIZE:
			r = get_uint(c, vat, "pack_size", FATELF_REPO_PACK_MAX, &ver->pack_size);
			break;
		case F_FRAMES:
			r = get_uint(c, vat, "frames", UINT32_MAX, &ver->frames);
			if (r == 0 && ver->frames == 0)
				r = ifail(c, "field 'frames' is 0 (leave it out instead)");
			break;
		case F_DEPENDS:
			r = get_depends(c, vat, ver);
			break;
		}
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < F_NVERSION; i++)
		if (!seen[i] && i != F_SUMMARY && i != F_FRAMES && i != F_DEPENDS)
			return ifail(c, "missing field '%s'", version_keys[i]);
	if (!ver->summary && !(ver->summary = strdup("")))
		return -ENOMEM;
	c->ver = NULL;
	return 0;
}

static int parse_package(struct ictx *c, size_t at, fatelf_repo_package *pkg)
{
	size_t pos = at, vat, vpos, n;
	const char *key;
	bool have_versions = false;
	fatelf_json_value v;
	int r;

	r = get(c, at, "packages", FATELF_JSON_OBJECT, &v);
	if (r < 0)
		return ifail(c, "every package must be an object");
	r = fatelf_json_find(c->doc, at, "name", &vat);
	if (r < 0)
		return r;
	if (r == 0)
		return ifail(c, "a package has no field 'name'");
	r = get_text(c, vat, "name", 255, &pkg->name);
	if (r < 0)
		return r;
	if (!fatelf_pkg_name_valid(pkg->name))
		return ifail(c, "package name '%s' breaks the name rules", pkg->name);
	c->pkg = pkg->name;
	while ((r = fatelf_json_next_member(c->doc, &pos, &key, &vat)) > 0) {
		if (strcmp(key, "name") == 0)
			continue;
		if (strcmp(key, "versions") != 0) {
			char q[FATELF_TEXT_QUOTE_BUF];

			return ifail(c, "unknown field '%s'", fatelf_text_quote(key, q));
		}
		r = get(c, vat, "versions", FATELF_JSON_ARRAY, &v);
		if (r < 0)
			return r;
		n = fatelf_json_count(c->doc, vat);
		if (n == 0 || n > FATELF_REPO_VERSIONS_MAX)
			return ifail(c, "a package has 1 to %d versions", FATELF_REPO_VERSIONS_MAX);
		pkg->versions = calloc(n, sizeof(*pkg->versions));
		if (!pkg->versions)
			return -ENOMEM;
		vpos = vat;
		while ((r = fatelf_json_next_member(c->doc, &vpos, NULL, &vat)) > 0) {
			fatelf_repo_version *ver = &pkg->versions[pkg->nversions];

			pkg->nversions++;
			r = parse_version(c, vat, ver);
			if (r < 0)
				return r;
			if (pkg->nversions > 1 &&
			    fatelf_pkg_version_compare(ver[-1].version, ver->version) >= 0)
				return ifail(c, "versions are not sorted oldest first, each once");
		}
		if (r < 0)
			return r;
		have_versions = true;
	}
	if (r < 0)
		return r;
	if (!have_versions)
		return ifail(c, "missing field 'versions'");
	c->pkg = NULL;
	return 0;
}

int fatelf_repo_index_parse(const void *json, size_t len, fatelf_repo_index **ret, fatelf_diag *d)
{
	_cleanup_json_doc_ fatelf_json_doc doc = { 0 };
	_cleanup_repo_index_ fatelf_repo_index *ix = NULL;
	struct ictx c = { .doc = &doc, .d = d };
	fatelf_json_scan sc = { 0 };
	fatelf_json_type top;
	fatelf_json_value v;
	bool seen_format = false, seen_serial = false, seen_created = false, seen_packages = false;
	size_t pos = 0, at;
	const char *key;
	int r;

	if (len > FATELF_REPO_INDEX_MAX)
		return fatelf_diag_set(d, -FATELF_E_REPO_INDEX, -1, "index: %zu bytes, the limit is %u", len,
				       FATELF_REPO_INDEX_MAX);
	r = fatelf_json_prescan(json, len, &sc, d);
	if (r == 0) {
		fatelf_json_doc_init(&doc, json, len);
		r = fatelf_json_validate(&doc, &top, d);
	}
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		char msg[sizeof(d->msg)];

		snprintf(msg, sizeof(msg), "%s", d ? d->msg : "");
		return fatelf_diag_set(d, -FATELF_E_REPO_INDEX, -1, "index: %s", msg);
	}
	if (top != FATELF_JSON_OBJECT)
		return ifail(&c, "not an object");
	ix = fatelf_repo_index_new();
	if (!ix)
		return fatelf_diag_oom(d);
	r = fatelf_json_find(&doc, 0, "format", &at);
	if (r < 0)
		return r;
	if (r == 0)
		return ifail(&c, "missing field 'format'");
	r = get(&c, at, "format", FATELF_JSON_INT, &v);
	if (r < 0)
		return r;
	if (v.i64 != FATELF_REPO_FORMAT)
		return fatelf_diag_set(d, -FATELF_E_REPO_FORMAT, -1,
				       "index: format %lld is not supported (this reader knows format %d)",
				       (long long)v.i64, FATELF_REPO_FORMAT);
	while ((r = fatelf_json_next_member(&doc, &pos, &key, &at)) > 0) {
		uint64_t u;

		if (strcmp(key, "format") == 0) {
			seen_format = true;
		} else if (strcmp(key, "repository") == 0) {
			r = get(&c, at, "repository", FATELF_JSON_STRING, &v);
			if (r == 0 && (strlen(v.str) != v.len || !fatelf_repo_id_valid(v.str)))
				r = ifail(&c, "field 'repository' must be %d lower-case hex digits",
					  FATELF_REPO_ID_LEN);
			if (r == 0)
				memcpy(ix->repository, v.str, FATELF_REPO_ID_LEN + 1);
		} else if (strcmp(key, "serial") == 0) {
			r = get_uint(&c, at, "serial", INT64_MAX, &ix->serial);
			if (r == 0 && ix->serial == 0)
				r = ifail(&c, "field 'serial' starts at 1");
			seen_serial = true;
		} else if (strcmp(key, "created") == 0) {
			r = get_uint(&c, at, "created", INT64_MAX, &u);
			ix->created = (int64_t)u;
			seen_created = true;
		} else if (strcmp(key, "expires") == 0) {
			r = get_uint(&c, at, "expires", INT64_MAX, &u);
			ix->expires = (int64_t)u;
			if (r == 0 && u == 0)
				r = ifail(&c, "field 'expires' must be a time after the epoch");
		} else if (strcmp(key, "packages") == 0) {
			size_t n, ppos;

			r = get(&c, at, "packages", FATELF_JSON_ARRAY, &v);
			if (r < 0)
				return r;
			n = fatelf_json_count(&doc, at);
			if (n > FATELF_REPO_PACKAGES_MAX)
				return ifail(&c, "more than %d packages", FATELF_REPO_PACKAGES_MAX);
			ix->packages = calloc(n ? n : 1, sizeof(*ix->packages));
			if (!ix->packages)
				return fatelf_diag_oom(d);
			ppos = at;
			while ((r = fatelf_json_next_member(&doc, &ppos, NULL, &at)) > 0) {
				fatelf_repo_package *p = &ix->packages[ix->npackages];

				ix->npackages++;
				r = parse_package(&c, at, p);
				if (r < 0)
					return r;
				if (ix->npackages > 1 && strcmp(p[-1].name, p->name) >= 0)
					return ifail(&c, "packages are not sorted by name, each once");
			}
			seen_packages = true;
		} else {
			char q[FATELF_TEXT_QUOTE_BUF];

			return ifail(&c, "unknown field '%s'", fatelf_text_quote(key, q));
		}
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (!seen_format || !seen_serial || !seen_created || !seen_packages)
		return ifail(&c, "missing field '%s'",
			     !seen_serial ? "serial" : !seen_created ? "created" : "packages");
	*ret = TAKE_PTR(ix);
	return 0;
}

/* Serializer: json-c's objects keep the order members are added in. */

static json_object *jsha(const uint8_t sha[32])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	return json_object_new_string(hex);
}

static json_object *version_json(const fatelf_repo_version *v)
{
	json_object *o = json_object_new_object(), *t = json_object_new_array();

	json_object_object_add(o, "version", json_object_new_string(v->version));
	if (v->summary && v->summary[0])
		json_object_object_add(o, "summary", json_object_new_string(v->summary));
	for (size_t i = 0; i < v->ntargets; i++) {
		char name[FATELF_TARGET_NAME_MAX];

		fatelf_target_format(&v->targets[i], name);
		json_object_array_add(t, json_object_new_string(name));
	}
	json_object_object_add(o, "targets", t);
	json_object_object_add(o, "entries", json_object_new_int64((int64_t)v->entries));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)v->size));
	json_object_object_add(o, "manifest", jsha(v->manifest));
	json_object_object_add(o, "manifest_size", json_object_new_int64((int64_t)v->manifest_size));
	json_object_object_add(o, "signed", json_object_new_boolean(v->signed_manifest));
	json_object_object_add(o, "pack", jsha(v->pack));
	json_object_object_add(o, "pack_size", json_object_new_int64((int64_t)v->pack_size));
	if (v->frames)
		json_object_object_add(o, "frames", json_object_new_int64((int64_t)v->frames));
	if (v->ndepends) {
		json_object *a = json_object_new_array();

		for (size_t i = 0; a && i < v->ndepends; i++) {
			char text[FATELF_DEPEND_TEXT_MAX];

			if (fatelf_depend_format(&v->depends[i], text, sizeof(text)) >= 0)
				json_object_array_add(a, json_object_new_string(text));
		}
		json_object_object_add(o, "depends", a);
	}
	return o;
}

int fatelf_repo_index_serialize(const fatelf_repo_index *ix, char **ret, size_t *ret_len, fatelf_diag *d)
{
	json_object *top = json_object_new_object(), *pkgs = json_object_new_array();
	const char *s;
	size_t len;

	if (!top || !pkgs) {
		json_object_put(top);
		json_object_put(pkgs);
		return fatelf_diag_oom(d);
	}
	/* The reader's text rule, so that an index this writes is one it reads. */
	for (size_t i = 0; i < ix->npackages; i++) {
		const fatelf_repo_package *p = &ix->packages[i];
		char q[FATELF_TEXT_QUOTE_BUF], why_buf[FATELF_TEXT_PROBLEM_MAX];
		const char *why = fatelf_text_problem(p->name, strlen(p->name), why_buf);

		for (size_t k = 0; !why && k < p->nversions; k++) {
			const char *sum = p->versions[k].summary;

			why = sum ? fatelf_text_problem(sum, strlen(sum), why_buf) : NULL;
			if (why) {
				json_object_put(top);
				json_object_put(pkgs);
				return fatelf_diag_set(d, -FATELF_E_REPO_INDEX, -1,
						       "package '%s' version %s: the summary %s",
						       fatelf_text_quote(p->name, q),
						       p->versions[k].version ? p->versions[k].version : "", why);
			}
		}
		if (why) {
			json_object_put(top);
			json_object_put(pkgs);
			return fatelf_diag_set(d, -FATELF_E_REPO_INDEX, -1, "package '%s': the name %s",
					       fatelf_text_quote(p->name, q), why);
		}
	}
	json_object_object_add(top, "format", json_object_new_int(FATELF_REPO_FORMAT));
	if (ix->repository[0])
		json_object_object_add(top, "repository", json_object_new_string(ix->repository));
	json_object_object_add(top, "serial", json_object_new_int64((int64_t)ix->serial));
	json_object_object_add(top, "created", json_object_new_int64(ix->created));
	if (ix->expires)
		json_object_object_add(top, "expires", json_object_new_int64(ix->expires));
	for (size_t i = 0; i < ix->npackages; i++) {
		const fatelf_repo_package *p = &ix->packages[i];
		json_object *po = json_object_new_object(), *vs = json_object_new_array();

		json_object_object_add(po, "name", json_object_new_string(p->name));
		for (size_t k = 0; k < p->nversions; k++)
			json_object_array_add(vs, version_json(&p->versions[k]));
		json_object_object_add(po, "versions", vs);
		json_object_array_add(pkgs, po);
	}
	json_object_object_add(top, "packages", pkgs);
	s = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s) {
		json_object_put(top);
		return fatelf_diag_oom(d);
	}
	len = strlen(s);
	*ret = malloc(len + 2);
	if (!*ret) {
		json_object_put(top);
		return fatelf_diag_oom(d);
	}
	memcpy(*ret, s, len);
	(*ret)[len++] = '\n';
	(*ret)[len] = '\0';
	*ret_len = len;
	json_object_put(top);
	return 0;
}

/* The pointer */

#define POINTER_MAGIC "fatelf-repo 1 "

int fatelf_repo_pointer_parse(const void *text, size_t len, uint8_t ret_sha[32], uint64_t *ret_size,
			      fatelf_diag *d)
{
	const char *s = text, *p;
	size_t m = strlen(POINTER_MAGIC);
	uint64_t size = 0;

	if (len > FATELF_REPO_POINTER_MAX || len < m + 64 + 3 || memcmp(s, POINTER_MAGIC, m) != 0 ||
	    s[len - 1] != '\n')
		return fatelf_diag_set(d, -FATELF_E_REPO_FORMAT, -1,
				       "the pointer file '" FATELF_REPO_POINTER "' is not 'fatelf-repo 1 SHA256 SIZE'");
	if (fatelf_unhex_lower(s + m, ret_sha, 32) < 0 || s[m + 64] != ' ')
		return fatelf_diag_set(d, -FATELF_E_REPO_FORMAT, -1,
				       "the pointer file '" FATELF_REPO_POINTER "' does not name an index by its SHA-256");
	p = s + m + 65;
	if (p[0] == '0' && p[1] != '\n')
		goto bad_size;
	for (; *p != '\n'; p++) {
		if (*p < '0' || *p > '9' || size > (FATELF_REPO_INDEX_MAX - (uint64_t)(*p - '0')) / 10)
			goto bad_size;
		size = size * 10 + (uint64_t)(*p - '0');
	}
	if (p == s + m + 65 || p != s + len - 1)
		goto bad_size;
	*ret_size = size;
	return 0;
bad_size:
	return fatelf_diag_set(d, -FATELF_E_REPO_FORMAT, -1,
			       "the pointer file '" FATELF_REPO_POINTER "' gives no index size up to %u bytes",
			       FATELF_REPO_INDEX_MAX);
}

void fatelf_repo_pointer_format(const uint8_t sha[32], uint64_t size, char buf[FATELF_REPO_POINTER_MAX])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	snprintf(buf, FATELF_REPO_POINTER_MAX, POINTER_MAGIC "%s %" PRIu64 "\n", hex, size);
}
