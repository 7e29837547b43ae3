/*
 * A registry's image index and image manifests read back (oci.h,
 * doc/repository.md §10), untrusted: the manifests' strict JSON reader
 * (lib/json/jsonscan.h: no duplicate key, bounded depth, no tree), then
 * every field the mapping uses checked for its type and form. Unknown
 * fields are left alone, as OCI asks of readers; the ones read must be
 * right. Every failure is FATELF_E_REPO_OCI, naming the field.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "jsonscan.h"
#include "macro.h"
#include "oci.h"
#include "text.h"

struct octx {
	fatelf_json_doc *doc;
	fatelf_diag *d;
	const char *what;       /* "index", "manifest" */
};

static int __attribute__((format(printf, 2, 3))) ofail(struct octx *c, const char *fmt, ...)
{
	char rule[sizeof(((fatelf_diag *)0)->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	return fatelf_diag_set(c->d, -FATELF_E_REPO_OCI, -1, "OCI %s: %s", c->what, rule);
}

static int get(struct octx *c, size_t at, const char *key, fatelf_json_type t, fatelf_json_value *v)
{
	int r = fatelf_json_read(c->doc, at, v);

	if (r < 0)
		return r;
	if (v->type != t)
		return ofail(c, "field '%s' has the wrong type", key);
	return 0;
}

/* A string of printable ASCII, at most cap - 1 bytes, into buf. */
static int get_ascii(struct octx *c, size_t at, const char *key, char *buf, size_t cap)
{
	fatelf_json_value v;
	int r = get(c, at, key, FATELF_JSON_STRING, &v);

	if (r < 0)
		return r;
	if (v.len >= cap || strlen(v.str) != v.len)
		return ofail(c, "field '%s' is longer than %zu bytes", key, cap - 1);
	for (size_t i = 0; i < v.len; i++)
		if ((unsigned char)v.str[i] < 0x20 || (unsigned char)v.str[i] > 0x7e)
			return ofail(c, "field '%s' is not printable ASCII", key);
	memcpy(buf, v.str, v.len + 1);
	return 0;
}

static int get_digest(struct octx *c, size_t at, const char *key, uint8_t out[32])
{
	char text[80];
	int r = get_ascii(c, at, key, text, sizeof(text));

	if (r < 0)
		return r;
	if (strncmp(text, "sha256:", 7) != 0 || strlen(text) != 71 || fatelf_unhex_lower(text + 7, out, 32) < 0)
		return ofail(c, "field '%s' is not sha256: and 64 lower-case hex digits", key);
	return 0;
}

static int get_size(struct octx *c, size_t at, const char *key, uint64_t *ret)
{
	fatelf_json_value v;
	int r = get(c, at, key, FATELF_JSON_INT, &v);

	if (r < 0)
		return r;
	if (v.i64 < 0)
		return ofail(c, "field '%s' is negative", key);
	*ret = (uint64_t)v.i64;
	return 0;
}

/* A decimal without leading zeros, at most INT64_MAX. */
static bool decimal(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]) || strlen(s) > 19)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > INT64_MAX)
		return false;
	*ret = v;
	return true;
}

static int annotations(struct octx *c, size_t at, fatelf_oci_desc *o, bool config)
{
	fatelf_json_value v;
	size_t pos = at, vat;
	const char *key;
	bool has_hex = false, has_size = false;
	int r = get(c, at, "annotations", FATELF_JSON_OBJECT, &v);

	if (r < 0)
		return r;
	while ((r = fatelf_json_next_member(c->doc, &pos, &key, &vat)) > 0) {
		if (strcmp(key, FATELF_OCI_A_TARGET) == 0) {
			r = get_ascii(c, vat, key, o->target, sizeof(o->target));
		} else if (strcmp(key, FATELF_OCI_A_FORM) == 0) {
			char form[8];

			r = get_ascii(c, vat, key, form, sizeof(form));
			if (r == 0 && strcmp(form, "fat") != 0)
				r = ofail(c, "field '%s' is not \"fat\"", key);
			o->fat = true;
		} else if (strcmp(key, FATELF_OCI_A_OBJECT) == 0) {
			char hex[72];

			r = get_ascii(c, vat, key, hex, sizeof(hex));
			if (r == 0 && (strlen(hex) != 64 || fatelf_unhex_lower(hex, o->object, 32) < 0))
				r = ofail(c, "field '%s' is not 64 lower-case hex digits", key);
			has_hex = true;
		} else if (strcmp(key, FATELF_OCI_A_SIZE) == 0) {
			char dec[24];

			r = get_ascii(c, vat, key, dec, sizeof(dec));
			if (r == 0 && !decimal(dec, &o->object_size))
				r = ofail(c, "field '%s' is not a decimal size", key);
			has_size = true;
		} else if (config && strcmp(key, FATELF_OCI_A_SIGNATURE) == 0) {
			r = get(c, vat, key, FATELF_JSON_STRING, &v);
			if (r == 0 && (v.len > FATELF_REPO_SIG_MAX || strlen(v.str) != v.len))
				r = ofail(c, "field '%s' is not a signature of at most %u bytes", key,
					  FATELF_REPO_SIG_MAX);
			if (r == 0) {
				free(o->signature);
				o->signature = strdup(v.str);
				if (!o->signature)
					r = -ENOMEM;
			}
		}
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (has_hex != has_size)
		return ofail(c, "'%s' and '%s' go together", FATELF_OCI_A_OBJECT, FATELF_OCI_A_SIZE);
	o->has_object = has_hex;
	return 0;
}

static int platform(struct octx *c, size_t at, fatelf_oci_desc *o)
{
	fatelf_json_value v;
	size_t pos = at, vat;
	const char *key;
	bool arch = false, os = false;
	int r = get(c, at, "platform", FATELF_JSON_OBJECT, &v);

	if (r < 0)
		return r;
	while ((r = fatelf_json_next_member(c->doc, &pos, &key, &vat)) > 0) {
		if (strcmp(key, "architecture") == 0) {
			r = get_ascii(c, vat, key, o->platform.architecture, sizeof(o->platform.architecture));
			arch = true;
		} else if (strcmp(key, "os") == 0) {
			r = get_ascii(c, vat, key, o->platform.os, sizeof(o->platform.os));
			os = true;
		} else if (strcmp(key, "variant") == 0) {
			r = get_ascii(c, vat, key, o->platform.variant, sizeof(o->platform.variant));
		}
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (!arch || !os)
		return ofail(c, "a platform without its architecture or os");
	o->has_platform = true;
	return 0;
}

/* A descriptor: mediaType, digest and size are required. */
static int descriptor(struct octx *c, size_t at, fatelf_oci_desc *o, bool config)
{
	fatelf_json_value v;
	size_t pos = at, vat;
	const char *key;
	bool mt = false, dg = false, sz = false;
	int r = get(c, at, "a descriptor", FATELF_JSON_OBJECT, &v);

	if (r < 0)
		return r;
	while ((r = fatelf_json_next_member(c->doc, &pos, &key, &vat)) > 0) {
		if (strcmp(key, "mediaType") == 0) {
			r = get_ascii(c, vat, key, o->media_type, sizeof(o->media_type));
			mt = true;
		} else if (strcmp(key, "digest") == 0) {
			r = get_digest(c, vat, key, o->digest);
			dg = true;
		} else if (strcmp(key, "size") == 0) {
			r = get_size(c, vat, key, &o->size);
			sz = true;
		} else if (strcmp(key, "platform") == 0) {
			r = platform(c, vat, o);
		} else if (strcmp(key, "annotations") == 0) {
			r = annotations(c, vat, o, config);
		}
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (!mt || !dg || !sz)
		return ofail(c, "a descriptor without its %s", !mt ? "mediaType" : !dg ? "digest" : "size");
	return 0;
}

static void desc_done(fatelf_oci_desc *o)
{
	free(o->signature);
	o->signature = NULL;
}

/* Checks and validates the text; the top value's type in *ret_top. */
static int open_doc(struct octx *c, const void *json, size_t len, fatelf_json_doc *doc)
{
	fatelf_json_scan sc = { 0 };
	fatelf_json_type top;
	int r;

	if (len > FATELF_OCI_JSON_MAX)
		return ofail(c, "%zu bytes, the limit is %u", len, FATELF_OCI_JSON_MAX);
	r = fatelf_json_prescan(json, len, &sc, c->d);
	if (r == 0) {
		fatelf_json_doc_init(doc, json, len);
		r = fatelf_json_validate(doc, &top, c->d);
	}
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		char msg[sizeof(c->d->msg)];

		snprintf(msg, sizeof(msg), "%s", c->d ? c->d->msg : "");
		return ofail(c, "%s", msg);
	}
	return top == FATELF_JSON_OBJECT ? 0 : ofail(c, "not an object");
}

/* schemaVersion 2 and mediaType mt at the top. */
static int top_fields(struct octx *c, const char *mt)
{
	fatelf_json_value v;
	char got[128];
	size_t at;
	int r = fatelf_json_find(c->doc, 0, "schemaVersion", &at);

	if (r <= 0)
		return r < 0 ? r : ofail(c, "no schemaVersion");
	r = get(c, at, "schemaVersion", FATELF_JSON_INT, &v);
	if (r < 0)
		return r;
	if (v.i64 != 2)
		return ofail(c, "schemaVersion %lld, not 2", (long long)v.i64);
	r = fatelf_json_find(c->doc, 0, "mediaType", &at);
	if (r <= 0)
		return r < 0 ? r : ofail(c, "no mediaType");
	r = get_ascii(c, at, "mediaType", got, sizeof(got));
	if (r < 0)
		return r;
	return strcmp(got, mt) == 0 ? 0 : ofail(c, "mediaType %s, not %s", got, mt);
}

/* The array under key at the top: its offset in *ret_at. */
static int top_array(struct octx *c, const char *key, size_t *ret_at)
{
	fatelf_json_value v;
	int r = fatelf_json_find(c->doc, 0, key, ret_at);

	if (r == 0)
		return ofail(c, "no %s", key);
	if (r < 0)
		return r;
	return get(c, *ret_at, key, FATELF_JSON_ARRAY, &v);
}

void fatelf_oci_index_free(fatelf_oci_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++)
		desc_done(&ix->manifests[i]);
	free(ix->manifests);
	free(ix);
}

int fatelf_oci_index_parse(const void *json, size_t len, fatelf_oci_index **ret, fatelf_diag *d)
{
	fatelf_json_doc doc = { 0 };
	struct octx c = { .doc = &doc, .d = d, .what = "index" };
	fatelf_oci_index *ix = NULL;
	size_t at, pos, vat, n;
	int r;

	*ret = NULL;
	r = open_doc(&c, json, len, &doc);
	if (r == 0)
		r = top_fields(&c, FATELF_OCI_MT_INDEX);
	if (r == 0)
		r = top_array(&c, "manifests", &at);
	if (r < 0)
		goto out;
	n = fatelf_json_count(&doc, at);
	if (n > FATELF_OCI_MANIFESTS_MAX) {
		r = ofail(&c, "%zu manifests, the limit is %u", n, FATELF_OCI_MANIFESTS_MAX);
		goto out;
	}
	ix = calloc(1, sizeof(*ix));
	if (!ix || !(ix->manifests = calloc(n ? n : 1, sizeof(*ix->manifests)))) {
		r = -ENOMEM;
		goto out;
	}
	pos = at;
	while ((r = fatelf_json_next_member(&doc, &pos, NULL, &vat)) > 0) {
		fatelf_oci_desc *o = &ix->manifests[ix->n++];

		r = descriptor(&c, vat, o, false);
		if (r < 0)
			goto out;
		if (strcmp(o->media_type, FATELF_OCI_MT_MANIFEST) != 0) {
			r = ofail(&c, "manifest %zu is a %s, not an image manifest", ix->n - 1, o->media_type);
			goto out;
		}
	}
out:
	fatelf_json_doc_done(&doc);
	if (r < 0) {
		fatelf_oci_index_free(ix);
		return r;
	}
	*ret = ix;
	return 0;
}

void fatelf_oci_manifest_free(fatelf_oci_manifest *m)
{
	if (!m)
		return;
	desc_done(&m->config);
	desc_done(&m->pack);
	for (size_t i = 0; i < m->nlayers; i++)
		desc_done(&m->layers[i]);
	free(m->layers);
	free(m);
}

int fatelf_oci_manifest_parse(const void *json, size_t len, fatelf_oci_manifest **ret, fatelf_diag *d)
{
	fatelf_json_doc doc = { 0 };
	struct octx c = { .doc = &doc, .d = d, .what = "manifest" };
	fatelf_oci_manifest *m = NULL;
	char at_type[128];
	size_t at, pos, vat, n;
	int r;

	*ret = NULL;
	r = open_doc(&c, json, len, &doc);
	if (r == 0)
		r = top_fields(&c, FATELF_OCI_MT_MANIFEST);
	if (r == 0) {
		r = fatelf_json_find(&doc, 0, "artifactType", &at);
		if (r == 0)
			r = ofail(&c, "no artifactType");
		else if (r > 0 && (r = get_ascii(&c, at, "artifactType", at_type, sizeof(at_type))) == 0 &&
			 strcmp(at_type, FATELF_OCI_ARTIFACT) != 0)
			r = ofail(&c, "artifactType %s, not %s", at_type, FATELF_OCI_ARTIFACT);
	}
	if (r < 0)
		goto out;
	m = calloc(1, sizeof(*m));
	if (!m) {
		r = -ENOMEM;
		goto out;
	}
	r = fatelf_json_find(&doc, 0, "config", &at);
	if (r == 0)
		r = ofail(&c, "no config");
	if (r > 0)
		r = descriptor(&c, at, &m->config, true);
	if (r == 0 && strcmp(m->config.media_type, FATELF_OCI_MT_CONFIG) != 0)
		r = ofail(&c, "the config is a %s, not %s", m->config.media_type, FATELF_OCI_MT_CONFIG);
	if (r == 0) {
		r = fatelf_json_find(&doc, 0, "annotations", &at);
		if (r > 0) {
			fatelf_oci_desc top = { 0 };

			r = annotations(&c, at, &top, false);
			memcpy(m->target, top.target, sizeof(m->target));
			m->fat = top.fat;
			desc_done(&top);
		}
	}
	if (r == 0 && !m->target[0] && !m->fat)
		r = ofail(&c, "neither a target nor the fat form");
	if (r == 0)
		r = top_array(&c, "layers", &at);
	if (r < 0)
		goto out;
	n = fatelf_json_count(&doc, at);
	if (n > FATELF_OCI_LAYERS_MAX) {
		r = ofail(&c, "%zu layers, the limit is %u", n, FATELF_OCI_LAYERS_MAX);
		goto out;
	}
	m->layers = calloc(n ? n : 1, sizeof(*m->layers));
	if (!m->layers) {
		r = -ENOMEM;
		goto out;
	}
	pos = at;
	while ((r = fatelf_json_next_member(&doc, &pos, NULL, &vat)) > 0) {
		fatelf_oci_desc o = { 0 };

		r = descriptor(&c, vat, &o, false);
		if (r == 0 && !o.has_object)
			r = ofail(&c, "layer %zu names no object", m->nlayers + m->has_pack);
		if (r == 0 && strcmp(o.media_type, FATELF_OCI_MT_PACK) == 0 && !m->has_pack) {
			m->pack = o;
			m->has_pack = true;
			continue;
		}
		if (r == 0 && strcmp(o.media_type, FATELF_OCI_MT_PACK) == 0)
			r = ofail(&c, "two pack lists");
		if (r == 0 && strcmp(o.media_type, FATELF_OCI_MT_OBJECT) != 0)
			r = ofail(&c, "layer %zu is a %s, not an object", m->nlayers + m->has_pack, o.media_type);
		if (r < 0) {
			desc_done(&o);
			goto out;
		}
		m->layers[m->nlayers++] = o;
	}
out:
	fatelf_json_doc_done(&doc);
	if (r < 0) {
		fatelf_oci_manifest_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

int fatelf_oci_names_each(const void *json, size_t len, bool tags, int (*take)(void *ctx, const char *name),
			  void *ctx, fatelf_diag *d)
{
	fatelf_json_doc doc = { 0 };
	const char *key = tags ? "tags" : "repositories";
	struct octx c = { .doc = &doc, .d = d, .what = tags ? "tag list" : "catalog" };
	fatelf_json_value v;
	size_t at, pos, vat, n = 0, count = 0;
	int r;

	if (len > FATELF_OCI_LIST_MAX)
		return ofail(&c, "%zu bytes, the limit of a page is %u", len, FATELF_OCI_LIST_MAX);
	r = open_doc(&c, json, len, &doc);
	if (r < 0)
		goto out;
	r = fatelf_json_find(&doc, 0, key, &at);
	if (r == 0) {
		r = ofail(&c, "no %s", key);
		goto out;
	}
	if (r < 0 || (r = fatelf_json_read(&doc, at, &v)) < 0)
		goto out;
	/* a repository whose tags were all deleted: "tags": null */
	if (v.type == FATELF_JSON_NULL && tags) {
		r = 0;
		goto out;
	}
	if (v.type != FATELF_JSON_ARRAY) {
		r = ofail(&c, "field '%s' has the wrong type", key);
		goto out;
	}
	count = fatelf_json_count(&doc, at);
	if (count > FATELF_OCI_NAMES_MAX) {
		r = ofail(&c, "%zu names, the limit is %u", count, FATELF_OCI_NAMES_MAX);
		goto out;
	}
	pos = at;
	while ((r = fatelf_json_next_member(&doc, &pos, NULL, &vat)) > 0) {
		char name[256];

		r = get_ascii(&c, vat, key, name, sizeof(name));
		if (r < 0)
			goto out;
		if (tags ? !fatelf_oci_tag_valid(name) : !fatelf_oci_name_valid(name)) {
			r = ofail(&c, "'%s' is not a valid %s", name, tags ? "tag" : "repository name");
			goto out;
		}
		if (n == count) {
			r = ofail(&c, "more names than counted");
			goto out;
		}
		n++;
		r = take(ctx, name);
		if (r < 0)
			goto out;
	}
out:
	fatelf_json_doc_done(&doc);
	return r < 0 ? r : (int)n;
}
