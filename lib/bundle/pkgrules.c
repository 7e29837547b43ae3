/*
 * The package and path rules of a bundle: dpkg's package names and
 * versions (validity and dpkg's ordering), the rules a path in a manifest
 * must keep to be created safely beneath a root, and the default limits
 * those rules are checked against, and a package's dependencies
 * (manifest format 2, doc/fatbundle.md section 2.9): the one text form
 * of an entry, "NAME" or "NAME (OP VERSION)" with dpkg's operators,
 * parsed strictly and bounds-checked, written back the same way, and
 * checked against a version by dpkg's ordering. The manifest parser and
 * serializer enforce them; the bundle writer checks paths with them too,
 * so that no writer makes what a reader refuses. A path also keeps
 * lib/basic/text.c's text rule, and stays out of the temp names'
 * namespace (lib/basic/atomic.h), which the install engine reserves.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "bundle.h"
#include "manifest_private.h"
#include "text.h"

/* A path component longer than this cannot be created (NAME_MAX). */
#define COMPONENT_MAX 255

void fatelf_bundle_limits_default(fatelf_bundle_limits *ret)
{
	ret->max_path = 4095;
	ret->max_entries = 200000;
	ret->max_manifest = FATELF_MANIFEST_MAX;
	ret->max_total = 64ull << 30;
	ret->max_format = FATELF_BUNDLE_FORMAT_MAX;
}

size_t fatelf_bundle_manifest_max(const fatelf_bundle_limits *lim)
{
	return lim && lim->max_manifest ? lim->max_manifest : FATELF_MANIFEST_MAX;
}

/* Package rules */

/* The whole rule, as every message states it. */
_Static_assert(PKG_NAME_MAX == 255, "the package name rule states 255");
#define PKG_NAME_RULE "2 to 255 characters: lowercase letters, digits, and + . - after the first"

const char *fatelf_pkg_name_problem(const char *name, size_t len, char *buf, size_t size)
{
	/* Debian policy: at least two characters, starting alphanumeric. */
	if (!name || len == 0)
		return "is empty; a package name has " PKG_NAME_RULE;
	if (len < 2) {
		snprintf(buf, size, "is 1 character long; a package name has " PKG_NAME_RULE);
		return buf;
	}
	if (len > PKG_NAME_MAX) {
		snprintf(buf, size, "is %zu characters long; a package name has " PKG_NAME_RULE, len);
		return buf;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if ((c >= 'a' && c <= 'z') || fatelf_text_is_digit((char)c))
			continue;
		if (i > 0 && (c == '+' || c == '.' || c == '-'))
			continue;
		if (i == 0 && (c == '+' || c == '.' || c == '-'))
			snprintf(buf, size, "starts with '%c'; a package name has " PKG_NAME_RULE, c);
		else if (c >= 0x21 && c < 0x7f)
			snprintf(buf, size, "has '%c' at position %zu; a package name has " PKG_NAME_RULE,
				 c, i + 1);
		else
			snprintf(buf, size, "has byte 0x%02x at position %zu; a package name has "
				 PKG_NAME_RULE, c, i + 1);
		return buf;
	}
	return NULL;
}

bool fatelf_pkg_name_valid(const char *name)
{
	char why[160];

	return name && !fatelf_pkg_name_problem(name, strlen(name), why, sizeof(why));
}

/* A version cut into its parts; the parts are not NUL-terminated. */
struct pkgver {
	unsigned long long epoch;
	bool has_epoch, epoch_ok;
	const char *up, *up_end;
	const char *rev, *rev_end;      /* empty when there is no revision */
	bool has_rev;
};

/* dpkg's split: the epoch ends at the first ':', the revision starts
 * after the last '-'. */
static void pkgver_split(const char *v, struct pkgver *ret)
{
	const char *colon = strchr(v, ':'), *hyphen;

	*ret = (struct pkgver) { .epoch_ok = true };
	ret->up = v;
	if (colon) {
		ret->has_epoch = true;
		ret->epoch_ok = colon > v;
		for (const char *p = v; p < colon; p++) {
			if (!fatelf_text_is_digit(*p) || ret->epoch > 0x7fffffff) {
				ret->epoch_ok = false;
				break;
			}
			ret->epoch = ret->epoch * 10 + (unsigned)(*p - '0');
		}
		/* dpkg keeps epochs in an int. */
		if (ret->epoch > 0x7fffffff)
			ret->epoch_ok = false;
		ret->up = colon + 1;
	}
	hyphen = strrchr(ret->up, '-');
	ret->up_end = hyphen ? hyphen : ret->up + strlen(ret->up);
	ret->has_rev = hyphen != NULL;
	ret->rev = hyphen ? hyphen + 1 : ret->up_end;
	ret->rev_end = ret->rev + strlen(ret->rev);
}

bool fatelf_pkg_version_valid(const char *version)
{
	struct pkgver v;

	if (!version || !*version || strlen(version) > PKG_VERSION_MAX)
		return false;
	pkgver_split(version, &v);
	if (!v.epoch_ok)
		return false;
	if (v.up == v.up_end || !fatelf_text_is_digit(*v.up))
		return false;
	/* ':' can only be here after an epoch and '-' only before a
	 * revision, which the split already guarantees. */
	for (const char *p = v.up; p < v.up_end; p++)
		if (!fatelf_text_is_digit(*p) && !fatelf_text_is_alpha(*p) && !strchr(".+~-:", *p))
			return false;
	if (v.has_rev && v.rev == v.rev_end)
		return false;
	for (const char *p = v.rev; p < v.rev_end; p++)
		if (!fatelf_text_is_digit(*p) && !fatelf_text_is_alpha(*p) && !strchr(".+~", *p))
			return false;
	return true;
}

/* Weight of a character in a non-digit run: '~' before the end of the
 * run, the end before letters, letters before everything else. */
static int ver_weight(const char *p, const char *end)
{
	if (p == end || fatelf_text_is_digit(*p))
		return 0;
	if (fatelf_text_is_alpha(*p))
		return (unsigned char)*p;
	if (*p == '~')
		return -1;
	return (unsigned char)*p + 256;
}

/* dpkg's comparison of one part: non-digit runs by weight, then digit
 * runs by value, alternately. */
static int ver_part_cmp(const char *a, const char *ae, const char *b, const char *be)
{
	while (a < ae || b < be) {
		int diff = 0;

		while ((a < ae && !fatelf_text_is_digit(*a)) ||
		       (b < be && !fatelf_text_is_digit(*b))) {
			int wa = ver_weight(a, ae), wb = ver_weight(b, be);

			if (wa != wb)
				return wa < wb ? -1 : 1;
			/* Equal weights here are both non-zero: both are
			 * non-digits, so both move on. */
			a++;
			b++;
		}
		while (a < ae && *a == '0')
			a++;
		while (b < be && *b == '0')
			b++;
		while (a < ae && b < be && fatelf_text_is_digit(*a) && fatelf_text_is_digit(*b)) {
			if (!diff)
				diff = *a - *b;
			a++;
			b++;
		}
		if (a < ae && fatelf_text_is_digit(*a))
			return 1;
		if (b < be && fatelf_text_is_digit(*b))
			return -1;
		if (diff)
			return diff < 0 ? -1 : 1;
	}
	return 0;
}

int fatelf_pkg_version_compare(const char *a, const char *b)
{
	struct pkgver va, vb;
	int r;

	pkgver_split(a, &va);
	pkgver_split(b, &vb);
	if (va.epoch != vb.epoch)
		return va.epoch < vb.epoch ? -1 : 1;
	r = ver_part_cmp(va.up, va.up_end, vb.up, vb.up_end);
	if (r)
		return r;
	return ver_part_cmp(va.rev, va.rev_end, vb.rev, vb.rev_end);
}

/* Path rules */

/* The rule a path breaks, for a message that names the path its own way. */
static int __attribute__((format(printf, 3, 4)))
rule_set(char rule[FATELF_PATH_RULE_MAX], int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, FATELF_PATH_RULE_MAX, fmt, ap);
	va_end(ap);
	return code;
}

int fatelf_path_rule(const char *path, const fatelf_bundle_limits *lim, char rule[FATELF_PATH_RULE_MAX])
{
	char text_rule[FATELF_TEXT_PROBLEM_MAX];
	fatelf_bundle_limits def;
	const char *c;
	size_t len;
	int depth = 0;

	if (!lim) {
		fatelf_bundle_limits_default(&def);
		lim = &def;
	}
	if (!path || !*path)
		return rule_set(rule, -FATELF_E_PATH_INVALID, "is empty");
	len = strlen(path);
	if (path[0] == '/')
		return rule_set(rule, -FATELF_E_PATH_ABSOLUTE,
				       "is absolute (paths are relative to the root)");
	if (len > lim->max_path)
		return rule_set(rule, -FATELF_E_LIMIT,
				       "is %zu bytes long, the limit is %zu", len,
				       lim->max_path);
	if (fatelf_text_problem(path, len, text_rule))
		return rule_set(rule, -FATELF_E_PATH_INVALID, "%s", text_rule);
	for (c = path;; ) {
		const char *slash = strchr(c, '/');
		size_t n = slash ? (size_t)(slash - c) : strlen(c);

		if (++depth > FATELF_PATH_DEPTH_MAX)
			return rule_set(rule, -FATELF_E_LIMIT,
					       "is more than %d levels deep", FATELF_PATH_DEPTH_MAX);

		if (n == 0)
			return rule_set(rule, -FATELF_E_PATH_INVALID,
					       slash ? "has an empty component ('//')"
						     : "ends with '/'");
		if (n == 1 && c[0] == '.')
			return rule_set(rule, -FATELF_E_PATH_INVALID,
					       "has a '.' component");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return rule_set(rule, -FATELF_E_PATH_DOTDOT,
					       "has a '..' component");
		if (n > COMPONENT_MAX)
			return rule_set(rule, -FATELF_E_LIMIT,
					       "has a component of %zu bytes, the limit is %d", n, COMPONENT_MAX);
		/* Any component, not only the last: an entry beneath such a
		 * directory is an entry beneath a temp's name too. */
		if (n >= strlen(FATELF_TEMP_PREFIX) && memcmp(c, FATELF_TEMP_PREFIX, strlen(FATELF_TEMP_PREFIX)) == 0)
			return rule_set(rule, -ENGINE_E_NAME_RESERVED,
					       "has a component starting with \"" FATELF_TEMP_PREFIX
					       "\": such names are reserved for the installer's temp files");
		if (!slash)
			break;
		c = slash + 1;
	}
	return 0;
}

int fatelf_path_check(const char *path, const fatelf_bundle_limits *lim, fatelf_diag *d)
{
	char rule[FATELF_PATH_RULE_MAX], q[FATELF_TEXT_QUOTE_BUF];
	int r = fatelf_path_rule(path, lim, rule);

	if (r < 0)
		return fatelf_diag_set(d, r, -1, "path '%s' %s", path ? fatelf_text_quote(path, q) : "", rule);
	return 0;
}

/* Dependencies */

static const struct {
	const char *text;
	int op;
} ops[] = {
	{ "<<", FATELF_DEP_LT },
	{ "<=", FATELF_DEP_LE },
	{ "=", FATELF_DEP_EQ },
	{ ">=", FATELF_DEP_GE },
	{ ">>", FATELF_DEP_GT },
};

const char *fatelf_depend_op_text(int op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].op == op)
			return ops[i].text;
	return "";
}

void fatelf_depend_clear(fatelf_depend *dep)
{
	if (!dep)
		return;
	free(dep->name);
	free(dep->version);
	dep->name = dep->version = NULL;
	dep->op = FATELF_DEP_ANY;
}

static int why_set(char *why, size_t size, const char *rule)
{
	if (why && size)
		snprintf(why, size, "%s", rule);
	return 0;
}

int fatelf_depend_parse(const char *text, size_t len, fatelf_depend *ret, char *why, size_t why_size)
{
	const char *sp, *open, *vstart, *end = text + len;
	char name_why[160];
	const char *nw;
	size_t nlen, vlen;
	int op = FATELF_DEP_ANY;

	if (!text || memchr(text, '\0', len)) {
		why_set(why, why_size, "holds a NUL byte");
		return -FATELF_E_INVALID;
	}
	sp = memchr(text, ' ', len);
	nlen = sp ? (size_t)(sp - text) : len;
	nw = fatelf_pkg_name_problem(text, nlen, name_why, sizeof(name_why));
	if (nw) {
		if (why && why_size)
			snprintf(why, why_size, "names a package whose name %s", nw);
		return -FATELF_E_PKG_NAME;
	}
	if (sp) {
		size_t olen;

		/* " (" OP " " VERSION ")": one space each, nothing more. */
		open = sp + 1;
		if (open >= end || *open != '(' || end[-1] != ')' || end - open < 3) {
			why_set(why, why_size, "is not NAME or NAME (OP VERSION)");
			return -FATELF_E_INVALID;
		}
		open++;
		vstart = memchr(open, ' ', (size_t)(end - 1 - open));
		if (!vstart) {
			why_set(why, why_size, "is not NAME or NAME (OP VERSION)");
			return -FATELF_E_INVALID;
		}
		olen = (size_t)(vstart - open);
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (strlen(ops[i].text) == olen && memcmp(ops[i].text, open, olen) == 0)
				op = ops[i].op;
		if (op == FATELF_DEP_ANY) {
			why_set(why, why_size, "has an operator that is not one of <<, <=, =, >=, >>");
			return -FATELF_E_INVALID;
		}
		vstart++;
		vlen = (size_t)(end - 1 - vstart);
		if (vlen == 0 || vlen > PKG_VERSION_MAX || memchr(vstart, ' ', vlen)) {
			why_set(why, why_size, "has a version that is not a dpkg version ([epoch:]upstream[-revision])");
			return -FATELF_E_PKG_VERSION;
		}
	}
	if (!ret)
		return 0;
	fatelf_depend dep = { .op = op };
	dep.name = strndup(text, nlen);
	if (!dep.name)
		return -ENOMEM;
	if (op != FATELF_DEP_ANY) {
		dep.version = strndup(vstart, vlen);
		if (!dep.version) {
			free(dep.name);
			return -ENOMEM;
		}
		if (!fatelf_pkg_version_valid(dep.version)) {
			fatelf_depend_clear(&dep);
			why_set(why, why_size, "has a version that is not a dpkg version ([epoch:]upstream[-revision])");
			return -FATELF_E_PKG_VERSION;
		}
	}
	*ret = dep;
	return 0;
}

int fatelf_depend_format(const fatelf_depend *dep, char *buf, size_t size)
{
	int n;

	if (dep->op == FATELF_DEP_ANY || !dep->version)
		n = snprintf(buf, size, "%s", dep->name);
	else
		n = snprintf(buf, size, "%s (%s %s)", dep->name, fatelf_depend_op_text(dep->op), dep->version);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

bool fatelf_depend_satisfied_by(const fatelf_depend *dep, const char *version)
{
	int cmp;

	if (dep->op == FATELF_DEP_ANY || !dep->version)
		return true;
	if (!version)
		return false;
	cmp = fatelf_pkg_version_compare(version, dep->version);
	switch (dep->op) {
	case FATELF_DEP_LT: return cmp < 0;
	case FATELF_DEP_LE: return cmp <= 0;
	case FATELF_DEP_EQ: return cmp == 0;
	case FATELF_DEP_GE: return cmp >= 0;
	case FATELF_DEP_GT: return cmp > 0;
	default: return false;
	}
}

static int depend_cmp(const void *a, const void *b)
{
	return strcmp(((const fatelf_depend *)a)->name, ((const fatelf_depend *)b)->name);
}

int fatelf_manifest_add_depend(fatelf_manifest *m, const char *text, fatelf_diag *d)
{
	char why[200];
	fatelf_depend dep, *grown;
	int r;

	r = fatelf_depend_parse(text, strlen(text), &dep, why, sizeof(why));
	if (r == -ENOMEM)
		return fatelf_diag_oom(d);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "dependency '%.300s' %s", text, why);
	for (size_t i = 0; i < m->ndepends; i++)
		if (strcmp(m->depends[i].name, dep.name) == 0) {
			r = fatelf_diag_set(d, -FATELF_E_INVALID, -1,
					    "dependency '%.300s': package '%s' is named twice (one entry a package)",
					    text, dep.name);
			fatelf_depend_clear(&dep);
			return r;
		}
	if (m->name && strcmp(m->name, dep.name) == 0) {
		r = fatelf_diag_set(d, -FATELF_E_INVALID, -1, "dependency '%.300s' names the package itself",
				    text);
		fatelf_depend_clear(&dep);
		return r;
	}
	if (m->ndepends >= FATELF_DEPENDS_MAX) {
		fatelf_depend_clear(&dep);
		return fatelf_diag_set(d, -FATELF_E_LIMIT, -1, "more than %d dependencies", FATELF_DEPENDS_MAX);
	}
	grown = realloc(m->depends, (m->ndepends + 1) * sizeof(*grown));
	if (!grown) {
		fatelf_depend_clear(&dep);
		return fatelf_diag_oom(d);
	}
	m->depends = grown;
	m->depends[m->ndepends++] = dep;
	qsort(m->depends, m->ndepends, sizeof(*m->depends), depend_cmp);
	return 0;
}
