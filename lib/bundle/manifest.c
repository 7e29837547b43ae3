/*
 * The bundle manifest (fatbundle.json): its in-memory model (new, free,
 * add, find by path, the sorted order of the entries and the union of
 * their targets) and a strict parser that checks every rule of
 * doc/fatbundle.md before any payload byte is looked at. The manifest is
 * hostile input: its bytes pass the pre-scan and the grammar check of
 * lib/bundle/jsonscan.c, and are then read in place by its pull reader,
 * with no tree of JSON values at any time, straight into the compact
 * model (one allocation per entry, its path). Every field is checked
 * against a dispatch table, and every name a message shows is quoted by
 * lib/basic/text.c. The package and path rules are lib/bundle/pkgrules.c's, the
 * canonical form lib/bundle/manifest_write.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "bundle.h"
#include "jsonscan.h"
#include "macro.h"
#include "manifest_private.h"
#include "text.h"

/* Model */

fatelf_manifest *fatelf_manifest_new(void)
{
	fatelf_manifest *m = calloc(1, sizeof(*m));

	if (m)
		m->format = FATELF_BUNDLE_FORMAT;
	return m;
}

static void entry_clear(fatelf_bundle_entry *e)
{
	free(e->path);
	free(e->link_target);
	free(e->records);
	free(e->targets);
}

fatelf_manifest *fatelf_manifest_free(fatelf_manifest *m)
{
	if (!m)
		return NULL;
	free(m->name);
	free(m->version);
	free(m->summary);
	free(m->vendor);
	free(m->license);
	free(m->homepage);
	free(m->targets);
	for (size_t i = 0; i < m->ndepends; i++)
		fatelf_depend_clear(&m->depends[i]);
	free(m->depends);
	for (size_t i = 0; i < m->nentries; i++)
		entry_clear(&m->entries[i]);
	free(m->entries);
	free(m);
	return NULL;
}

fatelf_bundle_entry *fatelf_manifest_add(fatelf_manifest *m, const char *path, int type)
{
	fatelf_bundle_entry *e;
	char *p;

	if (GROW_ARRAY(m->entries, m->entries_cap, m->nentries + 1) < 0)
		return NULL;
	p = strdup(path);
	if (!p)
		return NULL;
	e = &m->entries[m->nentries++];
	*e = (fatelf_bundle_entry) { .path = p, .type = type };
	/* A symlink has no mode of its own; this is what parse gives it. */
	if (type == FATELF_ENTRY_SYMLINK)
		e->mode = 0777;
	return e;
}

static int target_cmp(const void *pa, const void *pb);

/* By path, then (per-arch entries that share it) by first target. */
static int entry_order(const fatelf_bundle_entry *a, const fatelf_bundle_entry *b)
{
	int r = strcmp(a->path, b->path);

	if (r != 0)
		return r;
	if (!a->ntargets || !b->ntargets)
		return a->ntargets ? 1 : b->ntargets ? -1 : 0;
	return target_cmp(&a->targets[0], &b->targets[0]);
}

static int entry_cmp(const void *a, const void *b)
{
	return entry_order(a, b);
}

/* By path, byte by byte, then first target: the order of "entries". */
void fatelf_manifest_entries_sort(fatelf_manifest *m)
{
	for (size_t i = 0; i < m->nentries; i++)
		if (m->entries[i].ntargets > 1)
			qsort(m->entries[i].targets, m->entries[i].ntargets, sizeof(*m->entries[i].targets),
			      target_cmp);
	if (m->nentries > 1)
		qsort(m->entries, m->nentries, sizeof(*m->entries), entry_cmp);
}

/* The entry whose path is the first n bytes of s. */
static const fatelf_bundle_entry *manifest_find_n(const fatelf_manifest *m, const char *s, size_t n)
{
	size_t lo = 0, hi = m->nentries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *p = m->entries[mid].path;
		int r = strncmp(p, s, n);

		if (r == 0)
			r = p[n] ? 1 : 0;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The first entry of the path: per-arch ones that share it follow. */
	if (lo < m->nentries && strncmp(m->entries[lo].path, s, n) == 0 && !m->entries[lo].path[n])
		return &m->entries[lo];
	return NULL;
}

const fatelf_bundle_entry *fatelf_manifest_find(const fatelf_manifest *m, const char *path)
{
	return manifest_find_n(m, path, strlen(path));
}

size_t fatelf_manifest_path_count(const fatelf_manifest *m, const fatelf_bundle_entry *e)
{
	size_t i = (size_t)(e - m->entries), k = i + 1;

	while (k < m->nentries && strcmp(m->entries[k].path, e->path) == 0)
		k++;
	return k - i;
}

bool fatelf_entry_for_target(const fatelf_bundle_entry *e, const fatelf_target *t)
{
	if (!e->ntargets)
		return true;
	for (unsigned i = 0; i < e->ntargets; i++)
		if (fatelf_target_equal(&e->targets[i], t))
			return true;
	return false;
}

bool fatelf_entry_for_pattern(const fatelf_bundle_entry *e, const fatelf_pattern *p)
{
	if (!e->ntargets)
		return true;
	for (unsigned i = 0; i < e->ntargets; i++)
		if (fatelf_pattern_match(p, &e->targets[i], -1))
			return true;
	return false;
}

/* The order of the "targets" list. */
static int target_cmp(const void *pa, const void *pb)
{
	const fatelf_target *a = pa, *b = pb;

	if (a->machine != b->machine)
		return a->machine < b->machine ? -1 : 1;
	if (a->word_size != b->word_size)
		return a->word_size < b->word_size ? -1 : 1;
	if (a->byte_order != b->byte_order)
		return a->byte_order < b->byte_order ? -1 : 1;
	if (a->osabi != b->osabi)
		return a->osabi < b->osabi ? -1 : 1;
	if (a->osabi_version != b->osabi_version)
		return a->osabi_version < b->osabi_version ? -1 : 1;
	return 0;
}

int fatelf_manifest_target_cmp(const fatelf_target *a, const fatelf_target *b)
{
	return target_cmp(a, b);
}

int fatelf_manifest_per_arch_header(const fatelf_manifest *m, const fatelf_host *prefer, fatelf_header *ret,
				    fatelf_diag *d)
{
	_cleanup_free_ bool *used = NULL;

	memset(ret, 0, sizeof(*ret));
	ret->magic = FATELF_MAGIC;
	ret->version = FATELF_FORMAT_VERSION;
	/* Which of the (sorted) targets a per-arch entry has: one pass. */
	used = calloc(m->ntargets ? m->ntargets : 1, sizeof(*used));
	if (!used)
		return fatelf_diag_oom(d);
	for (size_t k = 0; k < m->nentries; k++)
		for (unsigned j = 0; j < m->entries[k].ntargets; j++) {
			const fatelf_target *t = bsearch(&m->entries[k].targets[j], m->targets, m->ntargets,
							 sizeof(*m->targets), target_cmp);

			if (t)
				used[t - m->targets] = true;
		}
	/* With prefer: native targets, then compatible ones, then the rest;
	 * each pass adds in target order. */
	for (int pass = prefer ? 2 : 0; pass >= 0; pass--)
		for (size_t i = 0; i < m->ntargets; i++) {
			if (!used[i] || (prefer && fatelf_host_runs(prefer, &m->targets[i]) != pass))
				continue;
			if (ret->nrecords == FATELF_MAX_RECORDS)
				return fatelf_diag_set(d, -FATELF_E_LIMIT, -1,
						       "the per-arch entries have more than %d targets", FATELF_MAX_RECORDS);
			ret->records[ret->nrecords++].target = m->targets[i];
		}
	return 0;
}

int fatelf_manifest_select(const fatelf_manifest *m, const fatelf_header *hdr, const fatelf_keepset *keep,
			   bool *ret)
{
	_cleanup_free_ unsigned *rank = NULL;
	const unsigned none = FATELF_MAX_RECORDS;

	/* The kept rank (hdr index) of each of m's sorted targets, or none. */
	rank = malloc((m->ntargets ? m->ntargets : 1) * sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	for (size_t i = 0; i < m->ntargets; i++)
		rank[i] = none;
	for (unsigned i = 0; i < hdr->nrecords; i++) {
		const fatelf_target *t = bsearch(&hdr->records[i].target, m->targets, m->ntargets,
						 sizeof(*m->targets), target_cmp);

		if (t && fatelf_keep_has(keep, i))
			rank[t - m->targets] = i;
	}
	for (size_t i = 0; i < m->nentries; ) {
		size_t n = 1, best_at = SIZE_MAX;
		unsigned best = none;

		while (i + n < m->nentries && strcmp(m->entries[i + n].path, m->entries[i].path) == 0)
			n++;
		for (size_t k = i; k < i + n; k++) {
			const fatelf_bundle_entry *e = &m->entries[k];

			ret[k] = !e->ntargets;
			for (unsigned j = 0; j < e->ntargets; j++) {
				const fatelf_target *t = bsearch(&e->targets[j], m->targets, m->ntargets,
								 sizeof(*m->targets), target_cmp);
				unsigned r = t ? rank[t - m->targets] : none;

				if (r < best) {
					best = r;
					best_at = k;
				}
				if (r != none)
					ret[k] = true;
			}
		}
		/* A path several entries share: the one with the first kept target. */
		if (n > 1)
			for (size_t k = i; k < i + n; k++)
				ret[k] = k == best_at;
		i += n;
	}
	return 0;
}

/* Every ELF's, every record's and every per-arch entry's target, sorted,
 * once each. */
int fatelf_manifest_targets_union(const fatelf_manifest *m, fatelf_target **ret, size_t *ret_n)
{
	_cleanup_free_ fatelf_target *t = NULL;
	size_t n = 0, cap = 0, k = 0;

	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		cap += e->ntargets;
		if (e->type != FATELF_ENTRY_FILE)
			continue;
		cap += e->kind == FATELF_KIND_ELF ? 1 : e->kind == FATELF_KIND_FATELF ? e->nrecords : 0;
	}
	t = calloc(cap ? cap : 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		for (unsigned j = 0; j < e->ntargets; j++)
			t[n++] = e->targets[j];
		if (e->type != FATELF_ENTRY_FILE)
			continue;
		if (e->kind == FATELF_KIND_ELF)
			t[n++] = e->target;
		else if (e->kind == FATELF_KIND_FATELF)
			for (unsigned r = 0; r < e->nrecords; r++)
				t[n++] = e->records[r].target;
	}
	if (n > 1)
		qsort(t, n, sizeof(*t), target_cmp);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || target_cmp(&t[k - 1], &t[i]) != 0)
			t[k++] = t[i];
	*ret = TAKE_PTR(t);
	*ret_n = k;
	return 0;
}

/* Parser */

/* 64 lower-case hex digits only: the one form the serializer writes. */
static bool sha256_from_hex(const char *s, size_t len, uint8_t out[32])
{
	return len == 64 && fatelf_unhex_lower(s, out, 32) == 0;
}

struct pctx {
	const fatelf_bundle_limits *lim;
	fatelf_diag *d;
	fatelf_manifest *m;
	fatelf_json_doc *doc;
	/* What messages are about; formatted only when one is written. */
	enum { AT_TOP, AT_PACKAGE, AT_ENTRY_INDEX, AT_ENTRY } at;
	size_t entry_index;
	const char *entry_path;
};

static int fail(struct pctx *c, int code, int record, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct pctx *c, int code, int record, const char *fmt, ...)
{
	char msg[2 * sizeof(((fatelf_diag *)0)->msg)];
	char full[3 * sizeof(((fatelf_diag *)0)->msg)];
	size_t len, cap = sizeof(((fatelf_diag *)0)->msg);
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	switch (c->at) {
	case AT_PACKAGE:
		n = snprintf(full, sizeof(full), "package: %s", msg);
		break;
	case AT_ENTRY_INDEX:
		n = snprintf(full, sizeof(full), "entry %zu: %s", c->entry_index, msg);
		break;
	case AT_ENTRY: {
		char q[FATELF_TEXT_QUOTE_BUF];

		n = snprintf(full, sizeof(full), "entry '%s': %s",
			     fatelf_text_quote(c->entry_path, q), msg);
		break;
	}
	default:
		n = snprintf(full, sizeof(full), "%s", msg);
		break;
	}
	/* A message cut to fit must not end inside a UTF-8 sequence. */
	len = n < 0 ? 0 : MIN((size_t)n, sizeof(full) - 1);
	if (len >= cap) {
		len = cap - 1;
		while (len > 0 && ((uint8_t)full[len] & 0xc0) == 0x80)
			len--;
		full[len] = '\0';
	}
	code = fatelf_diag_set(c->d, code, record, "%s", full);
	if (c->d && c->at == AT_ENTRY) {
		char q[FATELF_TEXT_QUOTE_BUF];

		fatelf_diag_names(c->d, fatelf_text_quote(c->entry_path, q));
	}
	return code;
}

/* An error about entry path found by a check over the whole list. */
static int __attribute__((format(printf, 4, 5)))
entry_list_fail(struct pctx *c, int code, const char *path, const char *fmt, ...)
{
	char rule[sizeof(((fatelf_diag *)0)->msg)];
	char q[FATELF_TEXT_QUOTE_BUF];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	code = fatelf_diag_set(c->d, code, -1, "entry '%s': %s", fatelf_text_quote(path, q), rule);
	fatelf_diag_names(c->d, q);
	return code;
}

/* The pull reader over the validated document: only memory can fail
 * it, and that failure goes in the diag too. */
static int json_read(struct pctx *c, size_t at, fatelf_json_value *ret)
{
	int r = fatelf_json_read(c->doc, at, ret);

	return r == -ENOMEM ? fatelf_diag_oom(c->d) : r;
}

static int json_next_member(struct pctx *c, size_t *pos, const char **ret_key, size_t *ret_value)
{
	int r = fatelf_json_next_member(c->doc, pos, ret_key, ret_value);

	return r == -ENOMEM ? fatelf_diag_oom(c->d) : r;
}

static int json_find(struct pctx *c, size_t at, const char *key, size_t *ret_value)
{
	int r = fatelf_json_find(c->doc, at, key, ret_value);

	return r == -ENOMEM ? fatelf_diag_oom(c->d) : r;
}

struct field;
typedef int (*field_parser)(struct pctx *c, const struct field *f, const fatelf_json_value *v,
			    void *dst);

struct field {
	const char *name;
	fatelf_json_type type;
	bool mandatory;
	field_parser parse;
	size_t offset;                  /* of the destination in the object parsed into */
	uint64_t max;                   /* for p_uint */
};

static const char *type_text(fatelf_json_type t)
{
	switch (t) {
	case FATELF_JSON_BOOL: return "a boolean";
	case FATELF_JSON_INT: return "an integer";
	case FATELF_JSON_STRING: return "a string";
	case FATELF_JSON_OBJECT: return "an object";
	case FATELF_JSON_ARRAY: return "an array";
	default: return "a value";
	}
}

/* Checks every key of the object at offset obj, in the order of the
 * text, against the table and parses it into base. */
static int dispatch(struct pctx *c, size_t obj, const struct field *fields, size_t n,
		    void *base)
{
	bool seen[16] = { false };
	char q[FATELF_TEXT_QUOTE_BUF];
	size_t pos = obj, at;
	const char *key;
	int r;

	while ((r = json_next_member(c, &pos, &key, &at)) > 0) {
		fatelf_json_value val;
		size_t i;

		for (i = 0; i < n && strcmp(fields[i].name, key) != 0; i++)
			;
		if (i == n)
			return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "unknown field '%s'",
				    fatelf_text_quote(key, q));
		/* A string read already (an entry's path and type): its type
		 * is its first byte, with no need to decode it again. */
		if (!fields[i].parse && fields[i].type == FATELF_JSON_STRING && c->doc->s[at] == '"') {
			seen[i] = true;
			continue;
		}
		r = json_read(c, at, &val);
		if (r < 0)
			return r;
		if (val.type != fields[i].type)
			return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field '%s' must be %s", key,
				    type_text(fields[i].type));
		seen[i] = true;
		if (fields[i].parse) {
			r = fields[i].parse(c, &fields[i], &val, (char *)base + fields[i].offset);
			if (r < 0)
				return r;
		}
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (fields[i].mandatory && !seen[i])
			return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "missing field '%s'", fields[i].name);
	return 0;
}

/* A string field with no NUL that keeps the text rule (lib/basic/text.c):
 * the rule the serializer checks too, so what it writes parses. */
static int get_text(struct pctx *c, const struct field *f, const fatelf_json_value *v, int code,
		    const char **ret, size_t *ret_len)
{
	const char *s = v->str, *why;
	size_t len = v->len;
	char q[FATELF_TEXT_QUOTE_BUF], why_buf[FATELF_TEXT_PROBLEM_MAX];

	if (strlen(s) != len)
		return fail(c, code, -1, "field '%s' ('%s') holds a NUL byte", f->name,
			    fatelf_text_quote_n(s, len, q));
	why = fatelf_text_problem(s, len, why_buf);
	if (why)
		return fail(c, code, -1, "field '%s' ('%s') %s", f->name, fatelf_text_quote_n(s, len, q), why);
	*ret = s;
	*ret_len = len;
	return 0;
}

/* An optional text: absent is "", and present is never empty, so that a
 * manifest has one canonical form. */
static int p_text(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	const char *s;
	size_t len;
	int r = get_text(c, f, v, -FATELF_E_MANIFEST_SCHEMA, &s, &len);

	if (r < 0)
		return r;
	if (len == 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "field '%s' is empty (leave it out instead)", f->name);
	*(char **)dst = strdup(s);
	return *(char **)dst ? 0 : fatelf_diag_oom(c->d);
}

static int p_name(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	const char *s = v->str;
	size_t len = v->len;
	char q[FATELF_TEXT_QUOTE_BUF], why_buf[160];
	const char *why = fatelf_pkg_name_problem(s, len, why_buf, sizeof(why_buf));

	if (why)
		return fail(c, -FATELF_E_PKG_NAME, -1, "name '%s' %s",
			    fatelf_text_quote_n(s, len, q), why);
	(void)f;
	*(char **)dst = strdup(s);
	return *(char **)dst ? 0 : fatelf_diag_oom(c->d);
}

static int p_version(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	const char *s = v->str;
	size_t len = v->len;
	char q[FATELF_TEXT_QUOTE_BUF];

	if (strlen(s) != len || !fatelf_pkg_version_valid(s))
		return fail(c, -FATELF_E_PKG_VERSION, -1,
			    "version '%s' is not a dpkg version ([epoch:]upstream[-revision])",
			    fatelf_text_quote_n(s, len, q));
	(void)f;
	*(char **)dst = strdup(s);
	return *(char **)dst ? 0 : fatelf_diag_oom(c->d);
}

/* Sizes and offsets: the reader gives json-c's two saturated views of an
 * integer, and anything past 2^63-1 is clamped in the signed one, so the
 * unsigned view tells. */
static int p_uint(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	int64_t s = v->i64;
	uint64_t u = v->u64;

	if (s < 0 || u > (uint64_t)INT64_MAX || u > f->max)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "field '%s' must be an integer from 0 to %llu", f->name,
			    (unsigned long long)f->max);
	*(uint64_t *)dst = u;
	return 0;
}

static int p_bool(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	(void)c;
	(void)f;
	*(bool *)dst = v->b;
	return 0;
}

static int p_sha256(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	if (!sha256_from_hex(v->str, v->len, dst))
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "field '%s' must be 64 lower-case hex digits", f->name);
	return 0;
}

static int p_mode(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	const char *s = v->str;
	size_t len = v->len;
	uint32_t mode = 0;
	char q[FATELF_TEXT_QUOTE_BUF];

	for (size_t i = 0; i < len; i++) {
		if (len != 4 || s[i] < '0' || s[i] > '7')
			return fail(c, -FATELF_E_MODE, -1,
				    "mode '%s' is not 4 octal digits",
				    fatelf_text_quote_n(s, len, q));
		mode = mode * 8 + (uint32_t)(s[i] - '0');
	}
	if (len != 4)
		return fail(c, -FATELF_E_MODE, -1, "mode '%s' is not 4 octal digits",
			    fatelf_text_quote_n(s, len, q));
	(void)f;
	*(uint32_t *)dst = mode;
	return 0;
}

static int p_link_target(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	const char *s;
	size_t len;
	int r = get_text(c, f, v, -FATELF_E_PATH_INVALID, &s, &len);

	if (r < 0)
		return r;
	if (len == 0)
		return fail(c, -FATELF_E_PATH_INVALID, -1, "symlink target is empty");
	if (len > c->lim->max_path)
		return fail(c, -FATELF_E_LIMIT, -1, "symlink target is %zu bytes long, the limit is %zu",
			    len, c->lim->max_path);
	*(char **)dst = strdup(s);
	return *(char **)dst ? 0 : fatelf_diag_oom(c->d);
}

/* A target in a manifest is written as its full canonical name, so that
 * it reads the same everywhere and compares as a string. */
static int target_from_name(struct pctx *c, const fatelf_json_value *v, const char *what,
			    fatelf_target *ret)
{
	const char *s = v->str;
	size_t len = v->len;
	char q[FATELF_TEXT_QUOTE_BUF], canon[FATELF_TARGET_NAME_MAX];
	fatelf_pattern p;
	fatelf_diag tmp;

	fatelf_text_quote_n(s, len, q);
	if (strlen(s) != len || len >= FATELF_TARGET_NAME_MAX)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "%s '%s' is not a target name", what, q);
	/* The target module's message quotes the name raw: ours escapes it. */
	if (fatelf_pattern_parse(s, &p, &tmp) < 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "%s '%s' is not a target name", what, q);
	if (p.want != FATELF_WANT_ALL)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "%s '%s' does not fix machine, word size, byte order, osabi and osabi version",
			    what, q);
	fatelf_target_format(&p.target, canon);
	if (strcmp(canon, s) != 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "%s '%s' is not in canonical form ('%s')", what, q, canon);
	*ret = p.target;
	return 0;
}

static int p_elf_target(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	(void)f;
	return target_from_name(c, v, "target", dst);
}

/* A record as written: the name and the numeric fields, which must agree. */
struct record_json {
	fatelf_target named;
	uint64_t machine, osabi, osabi_version, word_size;
	uint8_t byte_order;
	uint64_t offset, size;
	uint8_t sha256[32];
};

static int p_word_size(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	int64_t w = v->i64;

	if (w != 32 && w != 64)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field '%s' must be 32 or 64", f->name);
	*(uint64_t *)dst = w == 32 ? FATELF_CLASS32 : FATELF_CLASS64;
	return 0;
}

static int p_byte_order(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	const char *s = v->str;

	if (strcmp(s, "le") == 0)
		*(uint8_t *)dst = FATELF_DATA2LSB;
	else if (strcmp(s, "be") == 0)
		*(uint8_t *)dst = FATELF_DATA2MSB;
	else
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field '%s' must be \"le\" or \"be\"",
			    f->name);
	return 0;
}

#define RF(n, t, p, field, mx) { n, t, true, p, offsetof(struct record_json, field), mx }
static const struct field record_fields[] = {
	RF("target", FATELF_JSON_STRING, p_elf_target, named, 0),
	RF("machine", FATELF_JSON_INT, p_uint, machine, 65535),
	RF("osabi", FATELF_JSON_INT, p_uint, osabi, 255),
	RF("osabi_version", FATELF_JSON_INT, p_uint, osabi_version, 255),
	RF("word_size", FATELF_JSON_INT, p_word_size, word_size, 0),
	RF("byte_order", FATELF_JSON_STRING, p_byte_order, byte_order, 0),
	RF("offset", FATELF_JSON_INT, p_uint, offset, INT64_MAX),
	RF("size", FATELF_JSON_INT, p_uint, size, INT64_MAX),
	RF("sha256", FATELF_JSON_STRING, p_sha256, sha256, 0),
};
#undef RF

static int p_records(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	fatelf_bundle_entry *e = dst;
	size_t n = fatelf_json_count(c->doc, v->at), pos = v->at, at;
	char name[FATELF_TARGET_NAME_MAX];
	int r;

	(void)f;
	if (n == 0 || n > FATELF_MAX_RECORDS)
		return fail(c, -FATELF_E_RECORDS, -1, "a FatELF has 1 to %d records, not %zu",
			    FATELF_MAX_RECORDS, n);
	e->records = calloc(n, sizeof(*e->records));
	if (!e->records)
		return fatelf_diag_oom(c->d);
	e->nrecords = (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		struct record_json rj = { 0 };
		fatelf_bundle_record *rec = &e->records[i];
		fatelf_json_value o;

		r = json_next_member(c, &pos, NULL, &at);
		if (r <= 0)
			return r < 0 ? r : -EINVAL;
		r = json_read(c, at, &o);
		if (r < 0)
			return r;
		if (o.type != FATELF_JSON_OBJECT)
			return fail(c, -FATELF_E_MANIFEST_SCHEMA, (int)i, "record %zu must be an object", i);
		r = dispatch(c, o.at, record_fields, ARRAY_SIZE(record_fields), &rj);
		if (r < 0) {
			if (c->d)
				c->d->record = (int)i;
			return r;
		}
		fatelf_target_format(&rj.named, name);
		if (rj.machine != rj.named.machine || rj.osabi != rj.named.osabi ||
		    rj.osabi_version != rj.named.osabi_version || rj.word_size != rj.named.word_size ||
		    rj.byte_order != rj.named.byte_order)
			return fail(c, -FATELF_E_RECORDS, (int)i,
				    "record %zu (%s): machine %llu, osabi %llu, osabi_version %llu, word_size %s, byte_order %s disagree with the target name",
				    i, name, (unsigned long long)rj.machine, (unsigned long long)rj.osabi,
				    (unsigned long long)rj.osabi_version,
				    rj.word_size == FATELF_CLASS32 ? "32" : "64",
				    rj.byte_order == FATELF_DATA2LSB ? "le" : "be");
		rec->target = rj.named;
		rec->offset = rj.offset;
		rec->size = rj.size;
		memcpy(rec->sha256, rj.sha256, 32);
	}
	return 0;
}

static int p_header_size(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	uint64_t u = 0;
	int r = p_uint(c, f, v, &u);

	if (r < 0)
		return r;
	if (u > FATELF_TABLE_SIZE(FATELF_MAX_RECORDS))
		return fail(c, -FATELF_E_RECORDS, -1,
			    "header_size %llu is larger than any record table",
			    (unsigned long long)u);
	*(uint32_t *)dst = (uint32_t)u;
	return 0;
}

static const struct field elf_fields[] = {
	{ "kind", FATELF_JSON_STRING, true, NULL, 0, 0 },
	{ "target", FATELF_JSON_STRING, true, p_elf_target, offsetof(fatelf_bundle_entry, target), 0 },
};

static const struct field fatelf_fields[] = {
	{ "kind", FATELF_JSON_STRING, true, NULL, 0, 0 },
	{ "header_size", FATELF_JSON_INT, true, p_header_size,
	  offsetof(fatelf_bundle_entry, header_size), INT64_MAX },
	{ "records", FATELF_JSON_ARRAY, true, p_records, 0, 0 },
};

static int p_elf(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	fatelf_bundle_entry *e = dst;
	fatelf_json_value k;
	size_t obj = v->at, at;
	int r;

	(void)f;
	r = json_find(c, obj, "kind", &at);
	if (r < 0)
		return r;
	if (r == 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'elf' has no 'kind'");
	r = json_read(c, at, &k);
	if (r < 0)
		return r;
	if (k.type != FATELF_JSON_STRING)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'kind' must be a string");
	if (strcmp(k.str, "elf") == 0) {
		e->kind = FATELF_KIND_ELF;
		return dispatch(c, obj, elf_fields, ARRAY_SIZE(elf_fields), e);
	}
	if (strcmp(k.str, "fatelf") == 0) {
		e->kind = FATELF_KIND_FATELF;
		return dispatch(c, obj, fatelf_fields, ARRAY_SIZE(fatelf_fields), e);
	}
	return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'kind' must be \"elf\" or \"fatelf\"");
}

/* The next item of the array walked at *pos, which must be a string:
 * field[i] in the error. */
static int next_string(struct pctx *c, size_t *pos, const char *field, size_t i, fatelf_json_value *ret)
{
	size_t at;
	int r = json_next_member(c, pos, NULL, &at);

	if (r <= 0)
		return r < 0 ? r : -EINVAL;
	r = json_read(c, at, ret);
	if (r < 0)
		return r;
	if (ret->type != FATELF_JSON_STRING)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "%s[%zu] must be a string", field, i);
	return 0;
}

/*
 * A "targets" array of n target names into *ret (calloc'd), *ret_n
 * counting those read; sorted: each must come after the one before it (a
 * per-arch entry's canonical list).
 */
static int read_targets(struct pctx *c, const fatelf_json_value *v, size_t n, bool sorted,
			fatelf_target **ret, size_t *ret_n)
{
	size_t pos = v->at;
	char name[FATELF_TARGET_NAME_MAX];
	fatelf_target *t;
	int r;

	t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return fatelf_diag_oom(c->d);
	*ret = t;
	for (size_t i = 0; i < n; i++) {
		fatelf_json_value s;

		r = next_string(c, &pos, "targets", i, &s);
		if (r < 0)
			return r;
		r = target_from_name(c, &s, "targets entry", &t[i]);
		if (r < 0)
			return r;
		(*ret_n)++;
		if (sorted && i > 0) {
			int cmp = target_cmp(&t[i - 1], &t[i]);

			fatelf_target_format(&t[i], name);
			if (cmp == 0)
				return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "targets: '%s' is listed twice", name);
			if (cmp > 0)
				return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
					    "targets: '%s' is out of order (sorted by machine, word size, byte order, osabi, osabi version)",
					    name);
		}
	}
	return 0;
}

/* A per-arch entry's "targets" (format 2): canonical target names,
 * sorted, each once, at least one. */
static int p_entry_targets(struct pctx *c, const struct field *f, const fatelf_json_value *v,
			   void *dst)
{
	fatelf_bundle_entry *e = dst;
	size_t n = fatelf_json_count(c->doc, v->at), k = 0;
	int r;

	(void)f;
	if (c->m->format < FATELF_BUNDLE_FORMAT_PER_ARCH)
		return fail(c, -FATELF_E_MANIFEST_FORMAT, -1,
			    "field 'targets' (a per-arch entry) needs format %d, the manifest is format %u",
			    FATELF_BUNDLE_FORMAT_PER_ARCH, c->m->format);
	if (n == 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "field 'targets' is empty (an entry for every target leaves it out)");
	if (n > FATELF_MAX_RECORDS)
		return fail(c, -FATELF_E_LIMIT, -1, "field 'targets' lists %zu targets, the limit is %d", n,
			    FATELF_MAX_RECORDS);
	r = read_targets(c, v, n, true, &e->targets, &k);
	e->ntargets = (unsigned)k;
	return r;
}

#define EF(n, t, m, p, field) { n, t, m, p, offsetof(fatelf_bundle_entry, field), INT64_MAX }
static const struct field file_fields[] = {
	EF("path", FATELF_JSON_STRING, true, NULL, path),
	EF("type", FATELF_JSON_STRING, true, NULL, type),
	{ "targets", FATELF_JSON_ARRAY, false, p_entry_targets, 0, 0 },
	EF("mode", FATELF_JSON_STRING, true, p_mode, mode),
	EF("setid", FATELF_JSON_BOOL, false, p_bool, setid),
	EF("size", FATELF_JSON_INT, true, p_uint, size),
	EF("sha256", FATELF_JSON_STRING, true, p_sha256, sha256),
	EF("config", FATELF_JSON_BOOL, false, p_bool, config),
	{ "elf", FATELF_JSON_OBJECT, false, p_elf, 0, 0 },
};

static const struct field dir_fields[] = {
	EF("path", FATELF_JSON_STRING, true, NULL, path),
	EF("type", FATELF_JSON_STRING, true, NULL, type),
	{ "targets", FATELF_JSON_ARRAY, false, p_entry_targets, 0, 0 },
	EF("mode", FATELF_JSON_STRING, true, p_mode, mode),
	EF("setid", FATELF_JSON_BOOL, false, p_bool, setid),
};

static const struct field symlink_fields[] = {
	EF("path", FATELF_JSON_STRING, true, NULL, path),
	EF("type", FATELF_JSON_STRING, true, NULL, type),
	{ "targets", FATELF_JSON_ARRAY, false, p_entry_targets, 0, 0 },
	EF("target", FATELF_JSON_STRING, true, p_link_target, link_target),
};
#undef EF

/* A FatELF entry's records against its file: the table, each record
 * inside the file after the table, no overlap, no repeated target. */
static int records_check(struct pctx *c, const fatelf_bundle_entry *e)
{
	char name[FATELF_TARGET_NAME_MAX], other[FATELF_TARGET_NAME_MAX];

	if (e->header_size != FATELF_TABLE_SIZE(e->nrecords))
		return fail(c, -FATELF_E_RECORDS, -1,
			    "header_size is %u, a table of %u records is %llu bytes", e->header_size,
			    e->nrecords, (unsigned long long)FATELF_TABLE_SIZE(e->nrecords));
	for (unsigned i = 0; i < e->nrecords; i++) {
		const fatelf_bundle_record *r = &e->records[i];

		fatelf_target_format(&r->target, name);
		if (r->offset < e->header_size)
			return fail(c, -FATELF_E_RECORDS, (int)i,
				    "record %u (%s): offset 0x%llx lies inside the %u-byte header table",
				    i, name, (unsigned long long)r->offset, e->header_size);
		if (r->size == 0)
			return fail(c, -FATELF_E_RECORDS, (int)i, "record %u (%s): size is 0", i, name);
		/* Both are at most 2^63-1, so the sum cannot wrap. */
		if (r->offset + r->size > e->size)
			return fail(c, -FATELF_E_RECORDS, (int)i,
				    "record %u (%s): ends at 0x%llx, past the file's %llu bytes", i, name,
				    (unsigned long long)(r->offset + r->size), (unsigned long long)e->size);
		for (unsigned j = 0; j < i; j++) {
			const fatelf_bundle_record *o = &e->records[j];

			fatelf_target_format(&o->target, other);
			if (r->offset < o->offset + o->size && o->offset < r->offset + r->size)
				return fail(c, -FATELF_E_RECORDS, (int)i,
					    "record %u (%s): offset 0x%llx overlaps record %u (%s)", i, name,
					    (unsigned long long)r->offset, j, other);
			if (fatelf_target_equal(&r->target, &o->target))
				return fail(c, -FATELF_E_RECORDS, (int)i,
					    "record %u (%s): same target as record %u", i, name, j);
		}
	}
	return 0;
}

static int entry_parse(struct pctx *c, size_t idx, size_t at, fatelf_bundle_entry *e)
{
	const struct field *fields;
	size_t nfields, obj, vat;
	fatelf_json_value o, v;
	const char *s;
	size_t len;
	char q[FATELF_TEXT_QUOTE_BUF];
	int r;

	c->at = AT_ENTRY_INDEX;
	c->entry_index = idx;
	r = json_read(c, at, &o);
	if (r < 0)
		return r;
	if (o.type != FATELF_JSON_OBJECT)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "must be an object");
	obj = o.at;
	r = json_find(c, obj, "path", &vat);
	if (r < 0)
		return r;
	if (r == 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "missing field 'path'");
	r = json_read(c, vat, &v);
	if (r < 0)
		return r;
	if (v.type != FATELF_JSON_STRING)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'path' must be a string");
	s = v.str;
	len = v.len;
	if (strlen(s) != len)
		return fail(c, -FATELF_E_PATH_INVALID, -1, "path '%s' holds a NUL byte",
			    fatelf_text_quote_n(s, len, q));
	e->path = strdup(s);
	if (!e->path)
		return fatelf_diag_oom(c->d);
	c->at = AT_ENTRY;
	c->entry_path = e->path;
	/* A bad path is still the entry's name: the error names it as the
	 * entry, like every other error about one entry. */
	{
		char rule[FATELF_PATH_RULE_MAX];

		r = fatelf_path_rule(s, c->lim, rule);
		if (r < 0)
			return fail(c, r, -1, "the path %s", rule);
	}

	r = json_find(c, obj, "type", &vat);
	if (r < 0)
		return r;
	if (r == 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "missing field 'type'");
	r = json_read(c, vat, &v);
	if (r < 0)
		return r;
	if (v.type != FATELF_JSON_STRING)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'type' must be a string");
	s = v.str;
	if (strcmp(s, "file") == 0) {
		e->type = FATELF_ENTRY_FILE;
		fields = file_fields, nfields = ARRAY_SIZE(file_fields);
	} else if (strcmp(s, "dir") == 0) {
		e->type = FATELF_ENTRY_DIR;
		fields = dir_fields, nfields = ARRAY_SIZE(dir_fields);
	} else if (strcmp(s, "symlink") == 0) {
		e->type = FATELF_ENTRY_SYMLINK;
		fields = symlink_fields, nfields = ARRAY_SIZE(symlink_fields);
	} else {
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
			    "type '%s' is not \"file\", \"dir\" or \"symlink\"",
			    fatelf_text_quote(s, q));
	}
	r = dispatch(c, obj, fields, nfields, e);
	if (r < 0)
		return r;

	if (e->type == FATELF_ENTRY_SYMLINK) {
		e->mode = 0777;
		return 0;
	}
	if ((e->mode & 06000) && !e->setid)
		return fail(c, -FATELF_E_MODE, -1,
			    "mode %04o has a setuid or setgid bit and the entry does not declare \"setid\": true",
			    e->mode);
	if (e->setid && !(e->mode & 06000))
		return fail(c, -FATELF_E_MODE, -1,
			    "declares \"setid\": true but mode %04o has no setuid or setgid bit", e->mode);
	if (e->type == FATELF_ENTRY_FILE && e->kind == FATELF_KIND_FATELF)
		return records_check(c, e);
	return 0;
}

static int p_entries(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	fatelf_manifest *m = c->m;
	size_t n = fatelf_json_count(c->doc, v->at), pos = v->at, at;
	int r;

	(void)f;
	(void)dst;
	if (n > c->lim->max_entries)
		return fail(c, -FATELF_E_LIMIT, -1, "%zu entries, the limit is %zu", n,
			    c->lim->max_entries);
	m->entries = calloc(n ? n : 1, sizeof(*m->entries));
	if (!m->entries)
		return fatelf_diag_oom(c->d);
	m->entries_cap = n ? n : 1;
	for (size_t i = 0; i < n; i++) {
		fatelf_bundle_entry *e = &m->entries[i];

		/* Counted first, so that free() sees what is half-parsed. */
		m->nentries++;
		r = json_next_member(c, &pos, NULL, &at);
		if (r <= 0)
			return r < 0 ? r : -EINVAL;
		r = entry_parse(c, i, at, e);
		if (r < 0)
			return r;
		if (e->type != FATELF_ENTRY_FILE)
			continue;
		/* total_size never exceeds max_total, so this cannot wrap. */
		if (e->size > c->lim->max_total - m->total_size)
			return fail(c, -FATELF_E_LIMIT, -1,
				    "file sizes add up to more than the limit of %llu bytes",
				    (unsigned long long)c->lim->max_total);
		m->total_size += e->size;
	}
	c->at = AT_TOP;
	return 0;
}

static int p_targets(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	(void)f;
	(void)dst;
	return read_targets(c, v, fatelf_json_count(c->doc, v->at), false, &c->m->targets,
			    &c->m->ntargets);
}

/* "depends" (format 2): NAME or NAME (OP VERSION) each, sorted by
 * name, each name once, never the package itself. */
static int p_depends(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		     void *dst)
{
	fatelf_manifest *m = c->m;
	size_t n = fatelf_json_count(c->doc, v->at), pos = v->at;
	char q[FATELF_TEXT_QUOTE_BUF], why[200];
	int r;

	(void)f;
	(void)dst;
	if (m->format < 2)
		return fail(c, -FATELF_E_MANIFEST_FORMAT, -1,
			    "field 'depends' needs format 2, the manifest is format %u", m->format);
	if (n == 0)
		return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'depends' is empty (leave it out instead)");
	if (n > FATELF_DEPENDS_MAX)
		return fail(c, -FATELF_E_LIMIT, -1, "%zu dependencies, the limit is %d", n, FATELF_DEPENDS_MAX);
	m->depends = calloc(n, sizeof(*m->depends));
	if (!m->depends)
		return fatelf_diag_oom(c->d);
	for (size_t i = 0; i < n; i++) {
		fatelf_json_value s;

		r = next_string(c, &pos, "depends", i, &s);
		if (r < 0)
			return r;
		r = fatelf_depend_parse(s.str, s.len, &m->depends[i], why, sizeof(why));
		if (r == -ENOMEM)
			return fatelf_diag_oom(c->d);
		if (r < 0)
			return fail(c, r == -FATELF_E_INVALID ? -FATELF_E_MANIFEST_SCHEMA : r, -1,
				    "depends[%zu] '%s' %s%s", i, fatelf_text_quote_n(s.str, s.len, q), why,
				    r == -FATELF_E_INVALID ? " (NAME or NAME (OP VERSION), one space each)" : "");
		m->ndepends++;
		if (i > 0 && strcmp(m->depends[i - 1].name, m->depends[i].name) >= 0)
			return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1,
				    strcmp(m->depends[i - 1].name, m->depends[i].name) == 0
				    ? "depends: package '%s' is named twice"
				    : "depends: '%s' is out of order (sorted by name, byte by byte)",
				    fatelf_text_quote(m->depends[i].name, q));
	}
	return 0;
}

#define PF(n, m, p, field) { n, FATELF_JSON_STRING, m, p, offsetof(fatelf_manifest, field), 0 }
static const struct field package_fields[] = {
	PF("name", true, p_name, name),
	PF("version", true, p_version, version),
	PF("summary", false, p_text, summary),
	PF("vendor", false, p_text, vendor),
	PF("license", false, p_text, license),
	PF("homepage", false, p_text, homepage),
	{ "depends", FATELF_JSON_ARRAY, false, p_depends, 0, 0 },
};
#undef PF

static int p_package(struct pctx *c, const struct field *f, const fatelf_json_value *v,
		   void *dst)
{
	int r;

	(void)f;
	c->at = AT_PACKAGE;
	r = dispatch(c, v->at, package_fields, ARRAY_SIZE(package_fields), dst);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->m->ndepends; i++)
		if (c->m->name && strcmp(c->m->depends[i].name, c->m->name) == 0)
			return fail(c, -FATELF_E_MANIFEST_SCHEMA, -1, "depends[%zu] names the package itself", i);
	c->at = AT_TOP;
	return 0;
}

static const struct field top_fields[] = {
	{ "format", FATELF_JSON_INT, true, NULL, 0, 0 },
	{ "package", FATELF_JSON_OBJECT, true, p_package, 0, 0 },
	{ "targets", FATELF_JSON_ARRAY, true, p_targets, 0, 0 },
	{ "entries", FATELF_JSON_ARRAY, true, p_entries, 0, 0 },
};

static int entry_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const fatelf_bundle_entry *const *)a)->path,
		      (*(const fatelf_bundle_entry *const *)b)->path);
}

static const char *type_word(int type)
{
	return type == FATELF_ENTRY_DIR ? "dir" : type == FATELF_ENTRY_SYMLINK ? "symlink" : "file";
}

/* The entries that share one path (sorted[lo..hi), hi - lo > 1): each
 * per-arch, all of one type, their targets disjoint and at most
 * FATELF_MAX_RECORDS in all. */
static int shared_path_check(struct pctx *c, const fatelf_bundle_entry **sorted, size_t lo, size_t hi)
{
	_cleanup_free_ fatelf_target *all = NULL;
	char name[FATELF_TARGET_NAME_MAX];
	size_t n = 0;

	for (size_t i = lo; i < hi; i++) {
		const fatelf_bundle_entry *e = sorted[i];

		if (!e->ntargets)
			return entry_list_fail(c, -FATELF_E_PATH_DUPLICATE, e->path,
					       "listed twice (only per-arch entries, each with its own \"targets\", share a path)");
		if (e->type != sorted[lo]->type)
			return entry_list_fail(c, -FATELF_E_PATH_DUPLICATE, e->path,
					       "is a %s in one per-arch entry and a %s in another (entries that share a path are of one type)",
					       type_word(sorted[lo]->type), type_word(e->type));
		if (n + e->ntargets > FATELF_MAX_RECORDS)
			return entry_list_fail(c, -FATELF_E_LIMIT, e->path,
					       "its per-arch entries list more than %d targets", FATELF_MAX_RECORDS);
		n += e->ntargets;
	}
	all = calloc(n, sizeof(*all));
	if (!all)
		return fatelf_diag_oom(c->d);
	n = 0;
	for (size_t i = lo; i < hi; i++)
		for (unsigned j = 0; j < sorted[i]->ntargets; j++)
			all[n++] = sorted[i]->targets[j];
	if (n > 1)
		qsort(all, n, sizeof(*all), target_cmp);
	for (size_t i = 1; i < n; i++)
		if (target_cmp(&all[i - 1], &all[i]) == 0) {
			fatelf_target_format(&all[i], name);
			return entry_list_fail(c, -FATELF_E_PATH_DUPLICATE, sorted[lo]->path,
					       "target '%s' is in two of its per-arch entries (their targets must be disjoint)",
					       name);
		}
	return 0;
}

/* Whether every target e is installed for is one that an entry of the
 * path at p (the first of them) is installed for too. */
static bool parent_covers(const fatelf_manifest *m, const fatelf_bundle_entry *p,
			  const fatelf_bundle_entry *e, char missing[FATELF_TARGET_NAME_MAX])
{
	size_t np;

	if (!p->ntargets)
		return true;
	if (!e->ntargets) {
		snprintf(missing, FATELF_TARGET_NAME_MAX, "every target");
		return false;
	}
	np = fatelf_manifest_path_count(m, p);
	for (unsigned j = 0; j < e->ntargets; j++) {
		bool found = false;

		for (size_t k = 0; k < np && !found; k++)
			found = fatelf_entry_for_target(&p[k], &e->targets[j]);
		if (!found) {
			fatelf_target_format(&e->targets[j], missing);
			return false;
		}
	}
	return true;
}

/* Sorted by path (then first target), each path once but for per-arch
 * entries, each parent a dir of the bundle for every target the entry is. */
static int entries_check(struct pctx *c)
{
	const fatelf_manifest *m = c->m;
	_cleanup_free_ const fatelf_bundle_entry **sorted = NULL;
	char q2[FATELF_TEXT_QUOTE_BUF], name[FATELF_TARGET_NAME_MAX];
	bool per_arch = false;
	int r;

	c->at = AT_TOP;
	/* Duplicates first, so that a repeated path is named as such even
	 * when the list is not sorted either. */
	sorted = calloc(m->nentries ? m->nentries : 1, sizeof(*sorted));
	if (!sorted)
		return fatelf_diag_oom(c->d);
	for (size_t i = 0; i < m->nentries; i++) {
		sorted[i] = &m->entries[i];
		per_arch = per_arch || m->entries[i].ntargets;
	}
	if (m->format >= FATELF_BUNDLE_FORMAT_PER_ARCH && !per_arch && !m->ndepends)
		return fatelf_diag_set(c->d, -FATELF_E_MANIFEST_FORMAT, -1,
				       "format %u without a per-arch entry or 'depends' (such a manifest is format %d)",
				       m->format, FATELF_BUNDLE_FORMAT);
	/* In the order the format asks for (the rule checked below), the
	 * entries of one path are already next to each other. */
	for (size_t i = 1; i < m->nentries; i++)
		if (entry_order(&m->entries[i - 1], &m->entries[i]) > 0) {
			qsort(sorted, m->nentries, sizeof(*sorted), entry_ptr_cmp);
			break;
		}
	for (size_t i = 0; i < m->nentries; ) {
		size_t k = i + 1;

		while (k < m->nentries && strcmp(sorted[i]->path, sorted[k]->path) == 0)
			k++;
		if (k - i > 1) {
			r = shared_path_check(c, sorted, i, k);
			if (r < 0)
				return r;
		}
		i = k;
	}
	for (size_t i = 1; i < m->nentries; i++)
		if (entry_order(&m->entries[i - 1], &m->entries[i]) > 0)
			return entry_list_fail(c, -FATELF_E_MANIFEST_SCHEMA, m->entries[i].path,
					       strcmp(m->entries[i - 1].path, m->entries[i].path) == 0
					       ? "comes after its per-arch entry for '%s' (entries that share a path are sorted by their first target)"
					       : "comes after '%s' (entries are sorted by path, byte by byte)",
					       strcmp(m->entries[i - 1].path, m->entries[i].path) == 0
					       ? (fatelf_target_format(&m->entries[i - 1].targets[0], name), name)
					       : fatelf_text_quote(m->entries[i - 1].path, q2));

	/* The last entry's parent: entries in order come a directory at a
	 * time, and the ancestors an entry shares with the one before it
	 * were checked for that one. */
	const char *prev_dir = NULL;
	size_t prev_n = 0;
	const fatelf_bundle_entry *prev_parent = NULL;

	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		const char *path = e->path;
		const char *last = strrchr(path, '/');

		if (last && prev_parent && (size_t)(last - path) == prev_n &&
		    memcmp(path, prev_dir, prev_n) == 0) {
			if (!parent_covers(m, prev_parent, e, name))
				return entry_list_fail(c, -FATELF_E_PATH_PARENT, path,
						       "parent '%s' is per-arch and has no entry for %s",
						       fatelf_text_quote(prev_parent->path, q2), name);
			continue;
		}
		prev_parent = NULL;
		/* Every ancestor from the top down, so that the first symlink
		 * on the way is the one named. */
		for (const char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
			size_t n = (size_t)(slash - path);
			const fatelf_bundle_entry *p = manifest_find_n(m, path, n);

			if (p && p->type == FATELF_ENTRY_SYMLINK)
				return entry_list_fail(c, -FATELF_E_PATH_SYMLINK, path,
						       "passes through symlink '%s' of the bundle",
						       fatelf_text_quote(p->path, q2));
			if (!p)
				return entry_list_fail(c, -FATELF_E_PATH_PARENT, path,
						       "parent '%s' is not listed as a dir",
						       fatelf_text_quote_n(path, n, q2));
			if (p->type != FATELF_ENTRY_DIR)
				return entry_list_fail(c, -FATELF_E_PATH_PARENT, path,
						       "parent '%s' is a file, not a dir",
						       fatelf_text_quote(p->path, q2));
			/* The parent's own parents were checked for it. */
			if (slash == last && !parent_covers(m, p, e, name))
				return entry_list_fail(c, -FATELF_E_PATH_PARENT, path,
						       "parent '%s' is per-arch and has no entry for %s",
						       fatelf_text_quote(p->path, q2), name);
			if (slash == last) {
				prev_dir = path;
				prev_n = n;
				prev_parent = p;
			}
		}
	}
	return 0;
}

/* The first entry that has target t, for messages. */
static const char *entry_with_target(const fatelf_manifest *m, const fatelf_target *t)
{
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		if (e->ntargets && fatelf_entry_for_target(e, t))
			return e->path;
		if (e->type != FATELF_ENTRY_FILE)
			continue;
		if (e->kind == FATELF_KIND_ELF && fatelf_target_equal(&e->target, t))
			return e->path;
		for (unsigned r = 0; e->kind == FATELF_KIND_FATELF && r < e->nrecords; r++)
			if (fatelf_target_equal(&e->records[r].target, t))
				return e->path;
	}
	return "";
}

/* "targets" must be exactly the sorted union of the entries' targets. */
static int targets_check(struct pctx *c)
{
	const fatelf_manifest *m = c->m;
	_cleanup_free_ fatelf_target *u = NULL;
	char name[FATELF_TARGET_NAME_MAX], q[FATELF_TEXT_QUOTE_BUF];
	size_t nu, i, j;
	int r;

	for (i = 1; i < m->ntargets; i++) {
		int cmp = target_cmp(&m->targets[i - 1], &m->targets[i]);

		if (cmp >= 0) {
			fatelf_target_format(&m->targets[i], name);
			return fatelf_diag_set(c->d, -FATELF_E_RECORDS, -1,
					       cmp == 0 ? "targets: '%s' is listed twice"
							: "targets: '%s' is out of order (sorted by machine, word size, byte order, osabi, osabi version)",
					       name);
		}
	}
	r = fatelf_manifest_targets_union(m, &u, &nu);
	if (r < 0)
		return fatelf_diag_oom(c->d);
	for (i = 0, j = 0; i < m->ntargets || j < nu; ) {
		int cmp = i == m->ntargets ? 1 : j == nu ? -1 : target_cmp(&m->targets[i], &u[j]);

		if (cmp < 0) {
			fatelf_target_format(&m->targets[i], name);
			return fatelf_diag_set(c->d, -FATELF_E_RECORDS, -1,
					       "targets: lists '%s', which no entry has", name);
		}
		if (cmp > 0) {
			fatelf_target_format(&u[j], name);
			return fatelf_diag_set(c->d, -FATELF_E_RECORDS, -1,
					       "targets: does not list '%s', a target of entry '%s'", name,
					       fatelf_text_quote(entry_with_target(m, &u[j]), q));
		}
		i++;
		j++;
	}
	return 0;
}

int fatelf_manifest_parse(const void *json, size_t len, const fatelf_bundle_limits *lim,
			  fatelf_manifest **ret, fatelf_diag *d)
{
	_cleanup_json_doc_ fatelf_json_doc doc = { 0 };
	fatelf_bundle_limits def;
	struct pctx c = { .d = d, .doc = &doc };
	fatelf_json_scan sc = { 0 };
	fatelf_json_type top;
	fatelf_json_value v;
	unsigned max_format;
	size_t at;
	int r;

	if (!lim) {
		fatelf_bundle_limits_default(&def);
		lim = &def;
	}
	c.lim = lim;
	if (len > fatelf_bundle_manifest_max(lim))
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_TOO_BIG, -1,
				       "the manifest is %zu bytes, the limit is %zu", len,
				       fatelf_bundle_manifest_max(lim));
	r = fatelf_json_prescan(json, len, &sc, d);
	if (r < 0)
		return r;
	if (sc.entries > lim->max_entries)
		return fatelf_diag_set(d, -FATELF_E_LIMIT, -1, "%zu entries, the limit is %zu",
				       sc.entries, lim->max_entries);
	/* The grammar and duplicate keys over the whole text first, so that
	 * a broken document is named as such whatever its fields say. */
	fatelf_json_doc_init(&doc, json, len);
	r = fatelf_json_validate(&doc, &top, d);
	if (r < 0)
		return r;
	if (top != FATELF_JSON_OBJECT)
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_SCHEMA, -1, "the manifest is not an object");
	at = 0;
	/* The format first: a later format may change everything else. */
	r = json_find(&c, 0, "format", &at);
	if (r < 0)
		return r;
	if (r == 0)
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_SCHEMA, -1, "missing field 'format'");
	r = json_read(&c, at, &v);
	if (r < 0)
		return r;
	if (v.type != FATELF_JSON_INT)
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_SCHEMA, -1, "field 'format' must be an integer");
	/* 0: every format this reader knows; never one it does not. */
	max_format = lim->max_format && lim->max_format < FATELF_BUNDLE_FORMAT_MAX ? lim->max_format
										 : FATELF_BUNDLE_FORMAT_MAX;
	if (v.i64 < FATELF_BUNDLE_FORMAT || v.i64 > (int64_t)max_format) {
		if (max_format == FATELF_BUNDLE_FORMAT)
			return fatelf_diag_set(d, -FATELF_E_MANIFEST_FORMAT, -1,
					       "format %lld is not supported (this reader knows format %d)",
					       (long long)v.i64, FATELF_BUNDLE_FORMAT);
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_FORMAT, -1,
				       "format %lld is not supported (this reader knows formats %d to %u)",
				       (long long)v.i64, FATELF_BUNDLE_FORMAT, max_format);
	}

	c.m = fatelf_manifest_new();
	if (!c.m)
		return fatelf_diag_oom(d);
	c.m->format = (unsigned)v.i64;
	r = dispatch(&c, 0, top_fields, ARRAY_SIZE(top_fields), c.m);
	if (r >= 0)
		r = entries_check(&c);
	if (r >= 0)
		r = targets_check(&c);
	if (r < 0) {
		fatelf_manifest_free(c.m);
		return r;
	}
	/* Optional texts are "" when absent. */
	char **opt[] = { &c.m->summary, &c.m->vendor, &c.m->license, &c.m->homepage };
	for (size_t i = 0; i < ARRAY_SIZE(opt); i++)
		if (!*opt[i] && !(*opt[i] = strdup(""))) {
			fatelf_manifest_free(c.m);
			return fatelf_diag_oom(d);
		}
	*ret = c.m;
	return 0;
}
