/*
 * The OCI form of a package version (oci.h, doc/repository.md): which
 * objects each target's manifest lists, and the manifests' and index's
 * JSON, compact and in a fixed key order, so that the same version always
 * makes the same bytes (and digests) and a second push changes nothing.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hex.h"
#include "macro.h"
#include "oci.h"

/* Debian's architecture names that OCI (Go) spells otherwise. */
static const struct {
	const char *debian, *arch, *variant;
} goarch[] = {
	{ "amd64", "amd64", "" },
	{ "arm64", "arm64", "" },
	{ "armhf", "arm", "v7" },
	{ "armel", "arm", "v5" },
	{ "i386", "386", "" },
	{ "riscv64", "riscv64", "" },
	{ "ppc64el", "ppc64le", "" },
	{ "ppc64", "ppc64", "" },
	{ "s390x", "s390x", "" },
	{ "mips64el", "mips64le", "" },
	{ "mipsel", "mipsle", "" },
	{ "mips", "mips", "" },
	{ "loong64", "loong64", "" },
};

static const char *os_of(uint8_t osabi)
{
	switch (osabi) {
	case 0:         /* SYSV: what Linux toolchains write */
	case 3:         /* GNU (Linux) */
		return "linux";
	case 2:
		return "netbsd";
	case 6:
		return "solaris";
	case 9:
		return "freebsd";
	case 12:
		return "openbsd";
	}
	return NULL;
}

void fatelf_oci_platform_of(const fatelf_target *t, fatelf_oci_platform *ret)
{
	const char *deb = fatelf_target_debian_arch(t), *os = os_of(t->osabi);
	const char *name;

	memset(ret, 0, sizeof(*ret));
	if (os)
		snprintf(ret->os, sizeof(ret->os), "%s", os);
	else
		snprintf(ret->os, sizeof(ret->os), "osabi%u", t->osabi);
	for (size_t i = 0; deb && i < ARRAY_SIZE(goarch); i++)
		if (strcmp(deb, goarch[i].debian) == 0) {
			snprintf(ret->architecture, sizeof(ret->architecture), "%s", goarch[i].arch);
			snprintf(ret->variant, sizeof(ret->variant), "%s", goarch[i].variant);
			return;
		}
	/* the same rule for the rest: the familiar name, else the machine's */
	name = deb ? deb : fatelf_target_arch(t);
	if (!name)
		name = fatelf_machine_name(t->machine);
	if (name)
		snprintf(ret->architecture, sizeof(ret->architecture), "%s", name);
	else
		snprintf(ret->architecture, sizeof(ret->architecture), "em%u", t->machine);
}

/* ------------------------------------------------------------ objects */

struct obj {
	uint8_t sha[32];
	uint64_t size;
};

struct objs {
	struct obj *v;
	size_t n, cap;
};

static int objs_add(struct objs *o, const uint8_t sha[32], uint64_t size)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct obj *v = realloc(o->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	memcpy(o->v[o->n].sha, sha, 32);
	o->v[o->n].size = size;
	o->n++;
	return 0;
}

static int obj_cmp(const void *a, const void *b)
{
	return memcmp(((const struct obj *)a)->sha, ((const struct obj *)b)->sha, 32);
}

static bool has_target(const fatelf_bundle_entry *e, const fatelf_target *t)
{
	for (unsigned i = 0; i < e->ntargets; i++)
		if (fatelf_target_equal(&e->targets[i], t))
			return true;
	return false;
}

/* A FatELF file kept whole: every record, and its frame when stored. */
static int whole_file(struct objs *o, const fatelf_manifest *m, const fatelf_repo_pack *pack,
		      const fatelf_bundle_entry *e)
{
	const fatelf_repo_frame *fr = pack ? fatelf_repo_pack_frame(pack, (uint32_t)(e - m->entries)) : NULL;
	int q;

	for (unsigned i = 0; i < e->nrecords; i++)
		if ((q = objs_add(o, e->records[i].sha256, e->records[i].size)) < 0)
			return q;
	return fr ? objs_add(o, fr->sha256, fatelf_repo_frame_size(e)) : 0;
}

int fatelf_oci_objects_for(const fatelf_manifest *m, const fatelf_repo_pack *pack, const fatelf_target *t,
			   int (*cb)(void *ctx, const uint8_t sha[32], uint64_t size), void *ctx)
{
	struct objs o = { 0 };
	int q = 0;

	for (size_t i = 0; i < m->nentries && q == 0; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		const fatelf_bundle_record *rec = NULL;

		if (e->type != FATELF_ENTRY_FILE)
			continue;
		if (t && e->ntargets > 0 && !has_target(e, t))
			continue;
		if (e->kind != FATELF_KIND_FATELF) {
			q = objs_add(&o, e->sha256, e->size);
			continue;
		}
		for (unsigned k = 0; t && k < e->nrecords && !rec; k++)
			if (fatelf_target_equal(&e->records[k].target, t))
				rec = &e->records[k];
		q = rec ? objs_add(&o, rec->sha256, rec->size) : whole_file(&o, m, pack, e);
	}
	if (q == 0 && o.n > 1)
		qsort(o.v, o.n, sizeof(*o.v), obj_cmp);
	for (size_t i = 0; i < o.n && q == 0; i++)
		if (i == 0 || memcmp(o.v[i].sha, o.v[i - 1].sha, 32) != 0)
			q = cb(ctx, o.v[i].sha, o.v[i].size);
	free(o.v);
	return q;
}

/* ------------------------------------------------------------ JSON */

static json_object *str(const char *s)
{
	return json_object_new_string(s);
}

static json_object *digest(const uint8_t sha[32])
{
	char text[72];

	memcpy(text, "sha256:", 7);
	fatelf_hex(sha, 32, text + 7);
	return str(text);
}

static json_object *u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

/* {mediaType, digest, size[, annotations]} */
static json_object *descriptor(const char *media_type, const uint8_t sha[32], uint64_t size, json_object *ann)
{
	json_object *d = json_object_new_object();

	if (!d) {
		json_object_put(ann);
		return NULL;
	}
	json_object_object_add(d, "mediaType", str(media_type));
	json_object_object_add(d, "digest", digest(sha));
	json_object_object_add(d, "size", u64(size));
	if (ann)
		json_object_object_add(d, "annotations", ann);
	return d;
}

static json_object *blob_descriptor(const char *media_type, const fatelf_oci_blob *b)
{
	json_object *ann = json_object_new_object();
	char hex[65], size[24];

	fatelf_hex(b->object, 32, hex);
	snprintf(size, sizeof(size), "%llu", (unsigned long long)b->object_size);
	json_object_object_add(ann, FATELF_OCI_A_OBJECT, str(hex));
	json_object_object_add(ann, FATELF_OCI_A_SIZE, str(size));
	return descriptor(media_type, b->digest, b->size, ann);
}

static json_object *target_annotations(const fatelf_manifest *m, const fatelf_target *t, bool package)
{
	json_object *ann = json_object_new_object();
	char name[FATELF_TARGET_NAME_MAX];

	if (!ann)
		return NULL;
	if (t) {
		fatelf_target_format(t, name);
		json_object_object_add(ann, FATELF_OCI_A_TARGET, str(name));
	} else {
		json_object_object_add(ann, FATELF_OCI_A_FORM, str("fat"));
	}
	if (package) {
		json_object_object_add(ann, FATELF_OCI_A_PACKAGE, str(m->name));
		json_object_object_add(ann, FATELF_OCI_A_VERSION, str(m->version));
	}
	return ann;
}

static int text_of(json_object *o, char **ret, size_t *ret_len)
{
	size_t len = 0;
	const char *s = o ? json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE, &len) : NULL;
	int q = 0;

	*ret = s ? strndup(s, len) : NULL;
	*ret_len = len;
	if (!*ret)
		q = -ENOMEM;
	json_object_put(o);
	return q;
}

int fatelf_oci_manifest_json(const fatelf_manifest *m, const fatelf_oci_blob *config, const char *sig,
			     const fatelf_oci_blob *pack, const fatelf_oci_blob *layers, size_t nlayers,
			     const fatelf_target *t, char **ret, size_t *ret_len)
{
	json_object *top = json_object_new_object(), *ls = json_object_new_array(), *cann = NULL, *cfg;

	if (!top || !ls) {
		json_object_put(top);
		json_object_put(ls);
		return -ENOMEM;
	}
	json_object_object_add(top, "schemaVersion", json_object_new_int(2));
	json_object_object_add(top, "mediaType", str(FATELF_OCI_MT_MANIFEST));
	json_object_object_add(top, "artifactType", str(FATELF_OCI_ARTIFACT));
	if (sig) {
		cann = json_object_new_object();
		json_object_object_add(cann, FATELF_OCI_A_SIGNATURE, str(sig));
	}
	cfg = descriptor(FATELF_OCI_MT_CONFIG, config->digest, config->size, cann);
	json_object_object_add(top, "config", cfg);
	if (pack)
		json_object_array_add(ls, blob_descriptor(FATELF_OCI_MT_PACK, pack));
	for (size_t i = 0; i < nlayers; i++)
		json_object_array_add(ls, blob_descriptor(FATELF_OCI_MT_OBJECT, &layers[i]));
	json_object_object_add(top, "layers", ls);
	json_object_object_add(top, "annotations", target_annotations(m, t, true));
	return text_of(top, ret, ret_len);
}

int fatelf_oci_index_json(const fatelf_manifest *m, const fatelf_oci_entry *e, size_t n, char **ret,
			  size_t *ret_len)
{
	json_object *top = json_object_new_object(), *ms = json_object_new_array(), *ann;

	if (!top || !ms) {
		json_object_put(top);
		json_object_put(ms);
		return -ENOMEM;
	}
	json_object_object_add(top, "schemaVersion", json_object_new_int(2));
	json_object_object_add(top, "mediaType", str(FATELF_OCI_MT_INDEX));
	for (size_t i = 0; i < n; i++) {
		json_object *d = descriptor(FATELF_OCI_MT_MANIFEST, e[i].digest, e[i].size, NULL);

		if (e[i].target) {
			fatelf_oci_platform p;
			json_object *po = json_object_new_object();

			fatelf_oci_platform_of(e[i].target, &p);
			json_object_object_add(po, "architecture", str(p.architecture));
			json_object_object_add(po, "os", str(p.os));
			if (p.variant[0])
				json_object_object_add(po, "variant", str(p.variant));
			json_object_object_add(d, "platform", po);
		}
		json_object_object_add(d, "annotations", target_annotations(m, e[i].target, false));
		json_object_array_add(ms, d);
	}
	json_object_object_add(top, "manifests", ms);
	ann = json_object_new_object();
	json_object_object_add(ann, FATELF_OCI_A_PACKAGE, str(m->name));
	json_object_object_add(ann, FATELF_OCI_A_VERSION, str(m->version));
	json_object_object_add(top, "annotations", ann);
	return text_of(top, ret, ret_len);
}

/* ------------------------------------------------------------ the registry's words */

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool fatelf_oci_name_valid(const char *s)
{
	bool start = true;      /* at a component's or run's start */
	size_t n = strlen(s);

	if (n == 0 || n > 255)
		return false;
	for (const char *p = s; *p; p++) {
		if (lower_alnum(*p)) {
			start = false;
		} else if (*p == '/' || *p == '.' || *p == '_' || *p == '-') {
			if (start)
				return false;
			/* "__" and "--" runs are separators too */
			while ((*p == '_' && p[1] == '_') || (*p == '-' && p[1] == '-'))
				p++;
			start = true;
		} else {
			return false;
		}
	}
	return !start;
}

bool fatelf_oci_tag_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128 || s[0] == '.' || s[0] == '-')
		return false;
	for (const char *p = s; *p; p++)
		if (!(lower_alnum(*p) || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

static bool host_loopback(const char *host)
{
	char h[256];
	char *colon;

	snprintf(h, sizeof(h), "%s", host);
	if (h[0] == '[') {
		char *end = strchr(h, ']');

		if (end)
			*end = '\0';
		return strcmp(h + 1, "::1") == 0;
	}
	colon = strchr(h, ':');
	if (colon)
		*colon = '\0';
	return strcmp(h, "localhost") == 0 || strncmp(h, "127.", 4) == 0;
}

static bool host_valid(const char *h)
{
	const char *colon;

	if (!*h)
		return false;
	if (h[0] == '[') {
		const char *end = strchr(h, ']');

		if (!end || end == h + 1)
			return false;
		for (const char *p = h + 1; p < end; p++)
			if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F') || *p == ':'))
				return false;
		colon = end[1] ? end + 1 : NULL;
		if (colon && *colon != ':')
			return false;
	} else {
		colon = strchr(h, ':');
		for (const char *p = h; *p && p != colon; p++)
			if (!(lower_alnum(*p) || (*p >= 'A' && *p <= 'Z') || *p == '.' || *p == '-'))
				return false;
		if (colon == h)
			return false;
	}
	if (colon) {
		unsigned long port = 0;

		if (!colon[1] || strlen(colon + 1) > 5)
			return false;
		for (const char *p = colon + 1; *p; p++) {
			if (*p < '0' || *p > '9')
				return false;
			port = port * 10 + (unsigned long)(*p - '0');
		}
		if (port == 0 || port > 65535)
			return false;
	}
	return true;
}

int fatelf_oci_ref_parse(const char *s, bool plain_http, fatelf_oci_ref *r)
{
	const char *p, *slash, *colon, *at;
	char tail[sizeof(r->name)];
	size_t hl, nl;

	memset(r, 0, sizeof(*r));
	if (strncmp(s, "oci://", 6) != 0)
		return -EINVAL;
	p = s + 6;
	slash = strchr(p, '/');
	if (!slash)
		return -EINVAL;
	hl = (size_t)(slash - p);
	if (hl == 0 || hl >= sizeof(r->host))
		return -EINVAL;
	memcpy(r->host, p, hl);
	if (!host_valid(r->host))
		return -EINVAL;
	p = slash + 1;
	at = strchr(p, '@');
	if (at) {
		const char *h = at + 1;

		if (strncmp(h, "sha256:", 7) != 0 || strlen(h + 7) != 64)
			return -EINVAL;
		if (fatelf_unhex_lower(h + 7, r->digest, 32) < 0)
			return -EINVAL;
		r->has_digest = true;
		nl = (size_t)(at - p);
		if (nl >= sizeof(tail))
			return -EINVAL;
		memcpy(tail, p, nl);
		tail[nl] = '\0';
		p = tail;
	}
	colon = strrchr(p, ':');
	nl = colon ? (size_t)(colon - p) : strlen(p);
	if (nl >= sizeof(r->name))
		return -EINVAL;
	memcpy(r->name, p, nl);
	if (!fatelf_oci_name_valid(r->name))
		return -EINVAL;
	if (colon) {
		if (!fatelf_oci_tag_valid(colon + 1))
			return -EINVAL;
		snprintf(r->tag, sizeof(r->tag), "%s", colon + 1);
	}
	snprintf(r->scheme, sizeof(r->scheme), "%s", plain_http || host_loopback(r->host) ? "http" : "https");
	return 0;
}

/* key="value" pairs after the scheme, separated by commas; a quoted value
 * may hold '\\' escapes. Each known key once. */
int fatelf_oci_challenge_parse(const char *h, fatelf_oci_challenge *c)
{
	const char *p = h;

	memset(c, 0, sizeof(*c));
	if (strncasecmp(p, "Basic", 5) == 0 && (p[5] == '\0' || p[5] == ' ')) {
		c->scheme = FATELF_OCI_AUTH_BASIC;
		return 0;
	}
	if (strncasecmp(p, "Bearer", 6) != 0 || p[6] != ' ')
		return -EINVAL;
	c->scheme = FATELF_OCI_AUTH_BEARER;
	p += 7;
	while (*p) {
		char key[32], val[1024];
		size_t kl = 0, vl = 0;
		char *dst;
		size_t cap;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		while (*p && *p != '=' && *p != ' ' && *p != ',') {
			if (kl + 1 >= sizeof(key))
				return -EINVAL;
			key[kl++] = *p++;
		}
		key[kl] = '\0';
		if (*p != '=' || p[1] != '"')
			return -EINVAL;
		p += 2;
		while (*p && *p != '"') {
			if (*p == '\\' && p[1])
				p++;
			if (vl + 1 >= sizeof(val) || (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
				return -EINVAL;
			val[vl++] = *p++;
		}
		if (*p != '"')
			return -EINVAL;
		p++;
		val[vl] = '\0';
		if (strcasecmp(key, "realm") == 0)
			dst = c->realm, cap = sizeof(c->realm);
		else if (strcasecmp(key, "service") == 0)
			dst = c->service, cap = sizeof(c->service);
		else if (strcasecmp(key, "scope") == 0)
			dst = c->scope, cap = sizeof(c->scope);
		else
			continue;       /* error="...", and others: not ours */
		if (dst[0] || vl >= cap)
			return -EINVAL;
		memcpy(dst, val, vl + 1);
	}
	return c->realm[0] ? 0 : -EINVAL;
}

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}

int fatelf_oci_token_parse(const char *body, size_t len, char **ret)
{
	struct json_tokener *tk;
	json_object *o, *t = NULL;
	const char *tok;
	int q = -EPROTO;

	*ret = NULL;
	if (len > (1u << 20))
		return -EPROTO;
	tk = json_tokener_new_ex(16);
	if (!tk)
		return -ENOMEM;
	o = json_tokener_parse_ex(tk, body, (int)len);
	if (o && json_tokener_get_error(tk) == json_tokener_success && blank(body + json_tokener_get_parse_end(tk),
									     len - json_tokener_get_parse_end(tk)) &&
	    json_object_is_type(o, json_type_object) &&
	    ((json_object_object_get_ex(o, "token", &t) && json_object_is_type(t, json_type_string)) ||
	     (json_object_object_get_ex(o, "access_token", &t) && json_object_is_type(t, json_type_string))) &&
	    (tok = json_object_get_string(t)) && *tok && strlen(tok) == (size_t)json_object_get_string_len(t)) {
		q = 0;
		for (const char *c = tok; *c; c++)
			if ((unsigned char)*c <= 0x20 || (unsigned char)*c > 0x7e)
				q = -EPROTO;
		if (q == 0 && !(*ret = strdup(tok)))
			q = -ENOMEM;
	}
	json_object_put(o);
	json_tokener_free(tk);
	return q;
}
