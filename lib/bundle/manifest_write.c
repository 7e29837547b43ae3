/*
 * The manifest serializer: the one canonical form of a manifest, the
 * bytes a vendor signs. Entries are sorted by path and "targets" is
 * derived from the entries, so that the same model always gives the
 * same bytes; the layout is section 2.2 of doc/fatbundle.md.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "array.h"
#include "bundle.h"
#include "macro.h"
#include "manifest_private.h"
#include "text.h"

static const char *const type_names[] = {
	[FATELF_ENTRY_FILE] = "file",
	[FATELF_ENTRY_DIR] = "dir",
	[FATELF_ENTRY_SYMLINK] = "symlink",
};

struct jw {
	char *buf;
	size_t len, cap;
	bool oom;
	unsigned depth;
	bool first[8];
};

static void jw_raw(struct jw *w, const char *s, size_t n)
{
	if (w->oom)
		return;
	if (n + 1 > SIZE_MAX - w->len || GROW_ARRAY(w->buf, w->cap, w->len + n + 1) < 0) {
		w->oom = true;
		return;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void jw_puts(struct jw *w, const char *s)
{
	jw_raw(w, s, strlen(s));
}

/* A JSON string. Control bytes are escaped so the output stays JSON even
 * for a model that parse would refuse; '/' and non-ASCII stay as they are. */
static void jw_string(struct jw *w, const char *s)
{
	const char *run = s;

	jw_raw(w, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char esc[8];

		if (ch >= 0x20 && ch != '"' && ch != '\\' && ch != 0x7f)
			continue;
		jw_raw(w, run, (size_t)(s - run));
		if (ch == '"' || ch == '\\')
			snprintf(esc, sizeof(esc), "\\%c", ch);
		else
			snprintf(esc, sizeof(esc), "\\u%04x", ch);
		jw_puts(w, esc);
		run = s + 1;
	}
	jw_raw(w, run, (size_t)(s - run));
	jw_raw(w, "\"", 1);
}

/* Before a member or an element: the comma, the newline, the indent. */
static void jw_sep(struct jw *w)
{
	if (!w->first[w->depth])
		jw_raw(w, ",", 1);
	jw_raw(w, "\n", 1);
	for (unsigned i = 0; i < w->depth; i++)
		jw_raw(w, "  ", 2);
	w->first[w->depth] = false;
}

static void jw_key(struct jw *w, const char *key)
{
	jw_sep(w);
	jw_string(w, key);
	jw_raw(w, ": ", 2);
}

static void jw_open(struct jw *w, const char *bracket)
{
	jw_puts(w, bracket);
	w->depth++;
	w->first[w->depth] = true;
}

static void jw_close(struct jw *w, const char *bracket)
{
	bool empty = w->first[w->depth];

	w->depth--;
	if (!empty) {
		jw_raw(w, "\n", 1);
		for (unsigned i = 0; i < w->depth; i++)
			jw_raw(w, "  ", 2);
	}
	jw_puts(w, bracket);
}

static void jw_kv_string(struct jw *w, const char *key, const char *value)
{
	jw_key(w, key);
	jw_string(w, value);
}

static void jw_kv_uint(struct jw *w, const char *key, unsigned long long value)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", value);
	jw_key(w, key);
	jw_puts(w, num);
}

static void jw_kv_bool_true(struct jw *w, const char *key)
{
	jw_key(w, key);
	jw_puts(w, "true");
}

static void jw_kv_sha256(struct jw *w, const char *key, const uint8_t sha[32])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	jw_kv_string(w, key, hex);
}

static void jw_kv_target(struct jw *w, const char *key, const fatelf_target *t)
{
	char name[FATELF_TARGET_NAME_MAX];

	fatelf_target_format(t, name);
	jw_kv_string(w, key, name);
}

static void jw_record(struct jw *w, const fatelf_bundle_record *r)
{
	jw_sep(w);
	jw_open(w, "{");
	jw_kv_target(w, "target", &r->target);
	jw_kv_uint(w, "machine", r->target.machine);
	jw_kv_uint(w, "osabi", r->target.osabi);
	jw_kv_uint(w, "osabi_version", r->target.osabi_version);
	jw_kv_uint(w, "word_size", r->target.word_size == FATELF_CLASS32 ? 32 : 64);
	jw_kv_string(w, "byte_order", r->target.byte_order == FATELF_DATA2MSB ? "be" : "le");
	jw_kv_uint(w, "offset", r->offset);
	jw_kv_uint(w, "size", r->size);
	jw_kv_sha256(w, "sha256", r->sha256);
	jw_close(w, "}");
}

static void jw_entry(struct jw *w, const fatelf_bundle_entry *e)
{
	char mode[8];

	jw_sep(w);
	jw_open(w, "{");
	jw_kv_string(w, "path", e->path);
	jw_kv_string(w, "type", type_names[e->type]);
	if (e->ntargets) {
		jw_key(w, "targets");
		jw_open(w, "[");
		for (unsigned i = 0; i < e->ntargets; i++) {
			char name[FATELF_TARGET_NAME_MAX];

			fatelf_target_format(&e->targets[i], name);
			jw_sep(w);
			jw_string(w, name);
		}
		jw_close(w, "]");
	}
	if (e->type == FATELF_ENTRY_SYMLINK) {
		jw_kv_string(w, "target", e->link_target ? e->link_target : "");
		jw_close(w, "}");
		return;
	}
	snprintf(mode, sizeof(mode), "%04o", e->mode & 07777);
	jw_kv_string(w, "mode", mode);
	if (e->setid)
		jw_kv_bool_true(w, "setid");
	if (e->type == FATELF_ENTRY_FILE) {
		jw_kv_uint(w, "size", e->size);
		jw_kv_sha256(w, "sha256", e->sha256);
		if (e->config)
			jw_kv_bool_true(w, "config");
		if (e->kind == FATELF_KIND_ELF) {
			jw_key(w, "elf");
			jw_open(w, "{");
			jw_kv_string(w, "kind", "elf");
			jw_kv_target(w, "target", &e->target);
			jw_close(w, "}");
		} else if (e->kind == FATELF_KIND_FATELF) {
			jw_key(w, "elf");
			jw_open(w, "{");
			jw_kv_string(w, "kind", "fatelf");
			jw_kv_uint(w, "header_size", e->header_size);
			jw_key(w, "records");
			jw_open(w, "[");
			for (unsigned i = 0; i < e->nrecords; i++)
				jw_record(w, &e->records[i]);
			jw_close(w, "]");
			jw_close(w, "}");
		}
	}
	jw_close(w, "}");
}

/*
 * What jw_entry writes for the shortest such entry, at the depth of the
 * "entries" array: the separator without its comma ("\n" and 4 spaces),
 * the braces and the closing line, each member on its own line (",\n",
 * 6 spaces, the quoted key, ": ", the value), escapes left out (they
 * only add). Kept in step with jw_entry by a unit test.
 */
#define MEMBER_MIN(key, value_len) (2 + 6 + (sizeof(key) - 1 + 2) + 2 + (value_len))

size_t fatelf_manifest_entry_min_len(int type, size_t path_len, size_t target_len)
{
	size_t n = (1 + 4) + 1 + (1 + 4 + 1);   /* "\n    {" ... "\n    }" */

	n += MEMBER_MIN("path", path_len + 2) - 1;  /* the first member: no comma */
	switch (type) {
	case FATELF_ENTRY_SYMLINK:
		n += MEMBER_MIN("type", sizeof("\"symlink\"") - 1);
		n += MEMBER_MIN("target", target_len + 2);
		break;
	case FATELF_ENTRY_DIR:
		n += MEMBER_MIN("type", sizeof("\"dir\"") - 1);
		n += MEMBER_MIN("mode", sizeof("\"0000\"") - 1);
		break;
	default:
		n += MEMBER_MIN("type", sizeof("\"file\"") - 1);
		n += MEMBER_MIN("mode", sizeof("\"0000\"") - 1);
		n += MEMBER_MIN("size", 1);
		n += MEMBER_MIN("sha256", 64 + 2);
		break;
	}
	return n;
}

/*
 * The texts of m by the rules the parser holds them to (the text rule
 * of lib/basic/text.c, the path rules of pkgrules.c), with the parser's
 * codes and words: a manifest this writes is one every reader takes, and
 * what it refuses is refused before a byte of a bundle is written. The
 * limits are the reader's to set, so a path's length is not checked here.
 */
static int texts_check(const fatelf_manifest *m, fatelf_diag *d)
{
	const char *keys[] = { "summary", "vendor", "license", "homepage" };
	const char *texts[] = { m->summary, m->vendor, m->license, m->homepage };
	char q[FATELF_TEXT_QUOTE_BUF], why_buf[FATELF_TEXT_PROBLEM_MAX], rule[FATELF_PATH_RULE_MAX];
	fatelf_bundle_limits lim;
	const char *why;
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		if (!texts[i])
			continue;
		why = fatelf_text_problem(texts[i], strlen(texts[i]), why_buf);
		if (why)
			return fatelf_diag_set(d, -FATELF_E_MANIFEST_SCHEMA, -1, "package: field '%s' ('%s') %s",
					       keys[i], fatelf_text_quote(texts[i], q), why);
	}
	fatelf_bundle_limits_default(&lim);
	lim.max_path = SIZE_MAX;
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		if (!e->path || e->type < FATELF_ENTRY_FILE || e->type > FATELF_ENTRY_SYMLINK)
			return fatelf_diag_set(d, -FATELF_E_INVALID, -1,
					       "entry %zu has no path or an unknown type", i);
		r = fatelf_path_rule(e->path, &lim, rule);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "entry '%s': the path %s", fatelf_text_quote(e->path, q),
					       rule);
		if (e->type != FATELF_ENTRY_SYMLINK || !e->link_target)
			continue;
		why = fatelf_text_problem(e->link_target, strlen(e->link_target), why_buf);
		if (why) {
			char qt[FATELF_TEXT_QUOTE_BUF];

			return fatelf_diag_set(d, -FATELF_E_PATH_INVALID, -1, "entry '%s': field 'target' ('%s') %s",
					       fatelf_text_quote(e->path, q), fatelf_text_quote(e->link_target, qt),
					       why);
		}
	}
	return 0;
}

int fatelf_manifest_serialize(fatelf_manifest *m, char **ret_json, size_t *ret_len,
			      fatelf_diag *d)
{
	const char *opt_keys[] = { "summary", "vendor", "license", "homepage" };
	const char *opt[] = { m->summary, m->vendor, m->license, m->homepage };
	_cleanup_free_ fatelf_target *targets = NULL;
	struct jw w = { 0 };
	size_t ntargets;
	uint64_t total = 0;
	char q[FATELF_TEXT_QUOTE_BUF], why_buf[160];
	int r;

	const char *why = fatelf_pkg_name_problem(m->name, m->name ? strlen(m->name) : 0, why_buf,
						  sizeof(why_buf));
	if (why)
		return fatelf_diag_set(d, -FATELF_E_PKG_NAME, -1, "name '%s' %s",
				       m->name ? fatelf_text_quote(m->name, q) : "", why);
	if (!fatelf_pkg_version_valid(m->version))
		return fatelf_diag_set(d, -FATELF_E_PKG_VERSION, -1,
				       "version '%s' is not a dpkg version ([epoch:]upstream[-revision])",
				       m->version ? fatelf_text_quote(m->version, q) : "");
	r = texts_check(m, d);
	if (r < 0)
		return r;
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];

		if (e->type == FATELF_ENTRY_FILE)
			total += e->size;
	}

	fatelf_manifest_entries_sort(m);
	r = fatelf_manifest_targets_union(m, &targets, &ntargets);
	if (r < 0)
		return fatelf_diag_oom(d);
	free(m->targets);
	m->targets = TAKE_PTR(targets);
	m->ntargets = ntargets;
	m->total_size = total;

	/* Format 2 only when it is needed: a bundle without per-arch
	 * entries is the format-1 bundle it always was, byte for byte. */
	m->format = FATELF_BUNDLE_FORMAT;
	for (size_t i = 0; i < m->nentries; i++)
		if (m->entries[i].ntargets)
			m->format = FATELF_BUNDLE_FORMAT_PER_ARCH;
	if (m->ndepends)
		m->format = FATELF_BUNDLE_FORMAT_PER_ARCH;
	jw_open(&w, "{");
	jw_kv_uint(&w, "format", m->format);
	jw_key(&w, "package");
	jw_open(&w, "{");
	jw_kv_string(&w, "name", m->name);
	jw_kv_string(&w, "version", m->version);
	for (size_t i = 0; i < ARRAY_SIZE(opt); i++)
		if (opt[i] && *opt[i])
			jw_kv_string(&w, opt_keys[i], opt[i]);
	if (m->ndepends) {
		jw_key(&w, "depends");
		jw_open(&w, "[");
		for (size_t i = 0; i < m->ndepends; i++) {
			char text[FATELF_DEPEND_TEXT_MAX];

			if (fatelf_depend_format(&m->depends[i], text, sizeof(text)) < 0) {
				free(w.buf);
				return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "dependency %zu is too long", i);
			}
			jw_sep(&w);
			jw_string(&w, text);
		}
		jw_close(&w, "]");
	}
	jw_close(&w, "}");
	jw_key(&w, "targets");
	jw_open(&w, "[");
	for (size_t i = 0; i < m->ntargets; i++) {
		char name[FATELF_TARGET_NAME_MAX];

		fatelf_target_format(&m->targets[i], name);
		jw_sep(&w);
		jw_string(&w, name);
	}
	jw_close(&w, "]");
	jw_key(&w, "entries");
	jw_open(&w, "[");
	for (size_t i = 0; i < m->nentries; i++)
		jw_entry(&w, &m->entries[i]);
	jw_close(&w, "]");
	jw_close(&w, "}");
	jw_raw(&w, "\n", 1);
	if (w.oom) {
		free(w.buf);
		return fatelf_diag_oom(d);
	}
	*ret_json = w.buf;
	*ret_len = w.len;
	return 0;
}
