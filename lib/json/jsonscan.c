/*
 * The strict JSON reader of manifests, in three passes that build no
 * tree: the lexical pre-scan (the rules json-c's strict mode lets
 * through, the nesting limit, the count of entries), the grammar check
 * (the grammar and numbers exactly as json-c's strict mode takes them,
 * the depth limit, duplicate keys), and the pull reader that the schema
 * parser walks the valid text with.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "array.h"
#include "hex.h"
#include "jsonscan.h"
#include "macro.h"
#include "text.h"

static int scan_fail(fatelf_diag *d, size_t at, const char *what)
{
	return fatelf_diag_set(d, -FATELF_E_MANIFEST_JSON, -1, "byte %zu: %s", at, what);
}

/* Reads the 4 hex digits of a \u escape at s[i]; -1 when they are not. */
static long scan_u4(const char *s, size_t len, size_t i)
{
	long v = 0;

	if (i + 4 > len)
		return -1;
	for (size_t k = 0; k < 4; k++) {
		char c = s[i + k];
		int h = fatelf_hex_digit(c);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* The string starting at s[i] == '"': checks its escapes and bytes,
 * returns the offset just past its closing quote, or a negative code. */
static ssize_t scan_string(const char *s, size_t len, size_t i, bool *ret_nul, fatelf_diag *d)
{
	size_t start = i++;

	*ret_nul = false;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"')
			return (ssize_t)(i + 1);
		if (c < 0x20)
			return scan_fail(d, i, "raw control character in a string");
		if (c != '\\') {
			i++;
			continue;
		}
		if (i + 1 >= len)
			break;
		c = (unsigned char)s[i + 1];
		if (c == 'u') {
			long u = scan_u4(s, len, i + 2);

			if (u < 0)
				return scan_fail(d, i, "bad \\u escape");
			if (u == 0)
				*ret_nul = true;
			if (u >= 0xdc00 && u <= 0xdfff)
				return scan_fail(d, i, "lone low surrogate escape");
			if (u >= 0xd800 && u <= 0xdbff) {
				long lo = i + 12 <= len && s[i + 6] == '\\' && s[i + 7] == 'u'
						  ? scan_u4(s, len, i + 8) : -1;

				if (lo < 0xdc00 || lo > 0xdfff)
					return scan_fail(d, i, "high surrogate escape without its low half");
				i += 6;
			}
			i += 6;
		} else if (strchr("\"\\/bfnrt", c) && c) {
			i += 2;
		} else {
			return scan_fail(d, i, "bad escape in a string");
		}
	}
	return scan_fail(d, start, "string does not end");
}

/*
 * The lexical rules json-c's strict mode lets through (single quotes,
 * NaN and Infinity, raw control bytes in strings, lone surrogates,
 * comments), the nesting limit, and counts: every object key, and the
 * elements of the top-level "entries" array. The grammar is
 * fatelf_json_validate's.
 */
int fatelf_json_prescan(const char *s, size_t len, fatelf_json_scan *ret, fatelf_diag *d)
{
	char stack[FATELF_JSON_DEPTH];
	size_t depth = 0, entries_depth = 0;
	bool expect_key = false, entries_key = false;
	fatelf_json_scan sc = { 0 };
	size_t i = 0;

	while (i < len) {
		char c = s[i];

		switch (c) {
		case ' ': case '\t': case '\n': case '\r':
			i++;
			continue;
		case ',':
			expect_key = depth > 0 && stack[depth - 1] == '{';
			i++;
			continue;
		case ':':
			i++;
			continue;
		case '}': case ']':
			if (depth == 0 || stack[depth - 1] != (c == '}' ? '{' : '['))
				return scan_fail(d, i, "unbalanced bracket");
			if (depth == entries_depth)
				entries_depth = 0;
			depth--;
			expect_key = false;
			i++;
			continue;
		}
		/* Everything else starts a key or a value. */
		if (c == '"' && depth > 0 && stack[depth - 1] == '{' && expect_key) {
			bool nul;
			ssize_t end = scan_string(s, len, i, &nul, d);

			if (end < 0)
				return (int)end;
			if (nul)
				return fatelf_diag_set(d, -FATELF_E_MANIFEST_SCHEMA, -1,
						       "byte %zu: a key holds \\u0000", i);
			sc.keys++;
			expect_key = false;
			entries_key = depth == 1 && (size_t)end - i == 9 && memcmp(s + i, "\"entries\"", 9) == 0;
			i = (size_t)end;
			continue;
		}
		if (depth > 0 && depth == entries_depth && stack[depth - 1] == '[')
			sc.entries++;
		if (c == '{' || c == '[') {
			if (depth == FATELF_JSON_DEPTH)
				return scan_fail(d, i, "nested deeper than 64 levels");
			stack[depth++] = c;
			if (entries_key && c == '[' && depth == 2)
				entries_depth = depth;
			expect_key = c == '{';
			i++;
		} else if (c == '"') {
			bool nul;
			ssize_t end = scan_string(s, len, i, &nul, d);

			if (end < 0)
				return (int)end;
			i = (size_t)end;
		} else if (c == '-' || fatelf_text_is_digit(c)) {
			while (i < len && s[i] &&
			       (fatelf_text_is_digit(s[i]) || strchr("+-.eE", s[i]) != NULL))
				i++;
		} else if (len - i >= 4 && (memcmp(s + i, "true", 4) == 0 || memcmp(s + i, "null", 4) == 0)) {
			i += 4;
		} else if (len - i >= 5 && memcmp(s + i, "false", 5) == 0) {
			i += 5;
		} else {
			return scan_fail(d, i, fatelf_text_is_alpha(c)
						       ? "bare word (JSON has only true, false and null)"
						       : "unexpected character");
		}
		/* Only the value right after the key can be the entries array. */
		entries_key = false;
	}
	if (depth > 0)
		return scan_fail(d, len, "the document ends inside an object or array");
	*ret = sc;
	return 0;
}

/* Shared by the grammar check and the pull reader */

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && is_ws(s[i]))
		i++;
	return i;
}

/*
 * The number token at s[i] (a '-' or a digit) as json-c's reads it: the
 * longest run of digits, an 'e' or 'E' (once), a '.' (once, and only
 * before any exponent), a '-' at the start or right after '.', 'e' or
 * 'E', a '+' only right after those. Returns the offset past it.
 */
static size_t number_end(const char *s, size_t len, size_t i, bool *ret_double)
{
	bool exp = false, dbl = false, neg_ok = true, pos_ok = false;

	while (i < len) {
		char c = s[i];

		if (!(fatelf_text_is_digit(c) || (!exp && (c == 'e' || c == 'E')) ||
		      (neg_ok && c == '-') || (pos_ok && c == '+') || (!dbl && c == '.')))
			break;
		neg_ok = pos_ok = false;
		if (c == '.')
			dbl = neg_ok = pos_ok = true;
		else if (c == 'e' || c == 'E')
			exp = dbl = neg_ok = pos_ok = true;
		i++;
	}
	*ret_double = dbl;
	return i;
}

static size_t digits(const char *s, size_t end, size_t i)
{
	while (i < end && fatelf_text_is_digit(s[i]))
		i++;
	return i;
}

/* Whether strtod would read the whole token: -?(D+(.D*)?|.D+)([eE][+-]?D+)? */
static bool double_valid(const char *s, size_t i, size_t end)
{
	size_t k;

	if (i < end && s[i] == '-')
		i++;
	k = digits(s, end, i);
	if (k > i) {
		i = k;
		if (i < end && s[i] == '.')
			i = digits(s, end, i + 1);
	} else {
		if (i >= end || s[i] != '.')
			return false;
		k = digits(s, end, i + 1);
		if (k == i + 1)
			return false;
		i = k;
	}
	if (i < end && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < end && (s[i] == '+' || s[i] == '-'))
			i++;
		k = digits(s, end, i);
		if (k == i)
			return false;
		i = k;
	}
	return i == end;
}

/*
 * An integer token (-?D* here) as json-c keeps it: both views saturated
 * like strtoll and strtoull; false for what json-c's strict mode refuses
 * (no digit, or a leading zero on a positive non-zero value).
 */
static bool int_value(const char *s, size_t i, size_t end, int64_t *ret_i64, uint64_t *ret_u64)
{
	bool neg = i < end && s[i] == '-';
	uint64_t u = 0;
	bool sat = false;
	size_t first;

	if (neg)
		i++;
	first = i;
	if (i == end)
		return false;
	for (; i < end; i++) {
		unsigned dgt = (unsigned)(s[i] - '0');

		if (u > (UINT64_MAX - dgt) / 10)
			sat = true;
		else
			u = u * 10 + dgt;
	}
	if (sat)
		u = UINT64_MAX;
	if (neg) {
		*ret_u64 = 0;
		*ret_i64 = u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)u;
		return true;
	}
	if (u != 0 && s[first] == '0')
		return false;
	*ret_u64 = u;
	*ret_i64 = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
	return true;
}

static void put_utf8(char *out, size_t *n, unsigned long cp)
{
	if (cp < 0x80) {
		out[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*n)++] = (char)(0xc0 | (cp >> 6));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*n)++] = (char)(0xe0 | (cp >> 12));
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | (cp >> 18));
		out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* The offset just past the string at s[i] == '"' (whose escapes the
 * pre-scan checked). */
static size_t string_end(const char *s, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (s[i] == '"')
			return i + 1;
		if (s[i] == '\\')
			i++;
	}
	return len;
}

/*
 * Decodes the string at s[i] == '"' into *buf (grown to fit, NUL-ended),
 * as json-c does: escapes to their bytes, \u to UTF-8, a surrogate pair
 * to one 4-byte sequence, every other byte as it is. Returns the offset
 * past the string, or -ENOMEM.
 */
static ssize_t string_decode(const char *s, size_t len, size_t i, char **buf, size_t *cap,
			     size_t *ret_len)
{
	size_t end = string_end(s, len, i), n = 0;

	/* Decoding never makes a string longer. */
	if (end - i + 1 > *cap) {
		size_t want = MAX(end - i + 1, (size_t)64);
		char *p = realloc(*buf, want);

		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = want;
	}
	for (i++; i < end - 1; i++) {
		char c = s[i];

		if (c != '\\') {
			(*buf)[n++] = c;
			continue;
		}
		c = s[++i];
		switch (c) {
		case 'b': (*buf)[n++] = '\b'; break;
		case 'f': (*buf)[n++] = '\f'; break;
		case 'n': (*buf)[n++] = '\n'; break;
		case 'r': (*buf)[n++] = '\r'; break;
		case 't': (*buf)[n++] = '\t'; break;
		case 'u': {
			long u = scan_u4(s, len, i + 1), lo;

			if (u < 0)
				u = 0xfffd;
			i += 4;
			if (u >= 0xd800 && u <= 0xdbff && i + 6 < len && s[i + 1] == '\\' &&
			    s[i + 2] == 'u' && (lo = scan_u4(s, len, i + 3)) >= 0xdc00 && lo <= 0xdfff) {
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			}
			put_utf8(*buf, &n, (unsigned long)u);
			break;
		}
		default: (*buf)[n++] = c; break;
		}
	}
	(*buf)[n] = '\0';
	*ret_len = n;
	return (ssize_t)end;
}

/* The grammar check */

struct keyref {
	uint64_t hash;
	size_t off, len;
};

struct gram {
	const char *s;
	size_t len, i;
	fatelf_diag *d;
	/* The decoded keys of the objects open now, innermost last. */
	char *arena;
	size_t arena_len, arena_cap;
	struct keyref *keys;
	size_t nkeys, keys_cap;
	char *tmp;
	size_t tmp_cap;
	fatelf_json_doc *doc;           /* where the spans go, or NULL */
};

static int keyref_cmp(const void *pa, const void *pb)
{
	const struct keyref *a = pa, *b = pb;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return 0;
}

static int key_push(struct gram *g)
{
	size_t klen;
	ssize_t end = string_decode(g->s, g->len, g->i, &g->tmp, &g->tmp_cap, &klen);
	uint64_t h = 0xcbf29ce484222325ull;

	if (end < 0)
		return fatelf_diag_oom(g->d);
	if (g->arena_len + klen > g->arena_cap) {
		size_t want = MAX(2 * g->arena_cap, g->arena_len + klen + 256);
		char *p = realloc(g->arena, want);

		if (!p)
			return fatelf_diag_oom(g->d);
		g->arena = p;
		g->arena_cap = want;
	}
	if (g->nkeys == g->keys_cap) {
		size_t want = MAX(2 * g->keys_cap, (size_t)64);
		struct keyref *p = reallocarray(g->keys, want, sizeof(*p));

		if (!p)
			return fatelf_diag_oom(g->d);
		g->keys = p;
		g->keys_cap = want;
	}
	for (size_t k = 0; k < klen; k++)
		h = (h ^ (uint8_t)g->tmp[k]) * 0x100000001b3ull;
	if (klen > 0) /* "" leaves the arena as it is, maybe still NULL */
		memcpy(g->arena + g->arena_len, g->tmp, klen);
	g->keys[g->nkeys++] = (struct keyref) { .hash = h, .off = g->arena_len, .len = klen };
	g->arena_len += klen;
	g->i = (size_t)end;
	return 0;
}

/* The keys of the object that began at byte start, keys[mark..]: each once. */
static int keys_check(struct gram *g, size_t mark, size_t start)
{
	struct keyref *k;
	size_t n = g->nkeys - mark;

	if (n < 2)      /* no key, or one (keys may still be NULL) */
		return 0;
	k = g->keys + mark;
	qsort(k, n, sizeof(*k), keyref_cmp);
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n && keyref_cmp(&k[a], &k[b]) == 0; b++)
			if (k[a].len == 0 || memcmp(g->arena + k[a].off, g->arena + k[b].off, k[a].len) == 0)
				return fatelf_diag_set(g->d, -FATELF_E_MANIFEST_JSON, -1,
						       "byte %zu: an object has the same key twice", start);
	return 0;
}

static int gram_fail(struct gram *g, const char *what)
{
	if (g->i >= g->len)
		return fatelf_diag_set(g->d, -FATELF_E_MANIFEST_JSON, -1,
				       "the document ends early (%zu bytes)", g->len);
	return scan_fail(g->d, g->i, what);
}

static int gram_value(struct gram *g, unsigned depth);

/* The members of the object (key ':' value, each key pushed for
 * keys_check) or array whose opening byte is at g->i, through its
 * closing byte. */
static int gram_members(struct gram *g, unsigned depth, bool object, size_t *ret_count)
{
	const char *s = g->s;
	char close = object ? '}' : ']';
	int r;

	*ret_count = 0;
	g->i = skip_ws(s, g->len, g->i + 1);
	if (g->i < g->len && s[g->i] == close) {
		g->i++;
		return 0;
	}
	for (;;) {
		(*ret_count)++;
		if (object) {
			g->i = skip_ws(s, g->len, g->i);
			if (g->i >= g->len || s[g->i] != '"')
				return gram_fail(g, "expected a key");
			r = key_push(g);
			if (r < 0)
				return r;
			g->i = skip_ws(s, g->len, g->i);
			if (g->i >= g->len || s[g->i] != ':')
				return gram_fail(g, "expected ':' after a key");
			g->i++;
		}
		if (depth + 1 >= FATELF_JSON_DEPTH)
			return gram_fail(g, "nested too deep");
		r = gram_value(g, depth + 1);
		if (r < 0)
			return r;
		g->i = skip_ws(s, g->len, g->i);
		if (g->i < g->len && s[g->i] == ',') {
			g->i++;
			continue;
		}
		if (g->i < g->len && s[g->i] == close)
			break;
		return gram_fail(g, object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	g->i++;
	return 0;
}

/* A slot for the span of the container that starts at g->i, when it is
 * indexed; SIZE_MAX when not. */
static int span_open(struct gram *g, unsigned depth, size_t *ret_slot)
{
	fatelf_json_doc *doc = g->doc;

	*ret_slot = SIZE_MAX;
	if (!doc || depth >= FATELF_JSON_INDEX_DEPTH || g->len > UINT32_MAX)
		return 0;
	if (GROW_ARRAY(doc->spans, doc->spans_cap, doc->nspans + 1) < 0)
		return fatelf_diag_oom(g->d);
	doc->spans[doc->nspans] = (fatelf_json_span) { .start = (uint32_t)g->i };
	*ret_slot = doc->nspans++;
	return 0;
}

static void span_close(struct gram *g, size_t slot, size_t count)
{
	if (slot == SIZE_MAX)
		return;
	g->doc->spans[slot].end = (uint32_t)g->i;
	g->doc->spans[slot].count = (uint32_t)MIN(count, (size_t)UINT32_MAX);
}

/* The object or array at g->i through its closing byte, its span noted. */
static int gram_container(struct gram *g, unsigned depth, bool object)
{
	size_t slot, count;
	int r;

	r = span_open(g, depth, &slot);
	if (r < 0)
		return r;
	r = gram_members(g, depth, object, &count);
	if (r < 0)
		return r;
	span_close(g, slot, count);
	return 0;
}

/* The value at g->i, at depth (the top value is at 0) */
static int gram_value(struct gram *g, unsigned depth)
{
	const char *s = g->s;
	int r;

	g->i = skip_ws(s, g->len, g->i);
	if (g->i >= g->len)
		return gram_fail(g, "a value is missing");
	switch (s[g->i]) {
	case '{': {
		size_t start = g->i, mark = g->nkeys, amark = g->arena_len;

		r = gram_container(g, depth, true);
		if (r < 0)
			return r;
		r = keys_check(g, mark, start);
		g->nkeys = mark;
		g->arena_len = amark;
		return r;
	}
	case '[':
		return gram_container(g, depth, false);
	case '"':
		g->i = string_end(s, g->len, g->i);
		return 0;
	case 't':
		if (g->len - g->i < 4 || memcmp(s + g->i, "true", 4) != 0)
			return gram_fail(g, "bad literal");
		g->i += 4;
		return 0;
	case 'f':
		if (g->len - g->i < 5 || memcmp(s + g->i, "false", 5) != 0)
			return gram_fail(g, "bad literal");
		g->i += 5;
		return 0;
	case 'n':
		if (g->len - g->i < 4 || memcmp(s + g->i, "null", 4) != 0)
			return gram_fail(g, "bad literal");
		g->i += 4;
		return 0;
	default:
		if (s[g->i] == '-' || fatelf_text_is_digit(s[g->i])) {
			size_t start = g->i;
			bool dbl;
			int64_t i64;
			uint64_t u64;

			g->i = number_end(s, g->len, g->i, &dbl);
			if (dbl ? !double_valid(s, start, g->i) : !int_value(s, start, g->i, &i64, &u64)) {
				g->i = start;
				return gram_fail(g, "bad number");
			}
			return 0;
		}
		return gram_fail(g, "unexpected character");
	}
}

int fatelf_json_validate(fatelf_json_doc *doc, fatelf_json_type *ret_top, fatelf_diag *d)
{
	const char *s = doc->s;
	size_t len = doc->len;
	struct gram g = { .s = s, .len = len, .d = d, .doc = doc };
	size_t top, top_end;
	char c;
	int r;

	r = gram_value(&g, 0);
	free(g.arena);
	free(g.keys);
	free(g.tmp);
	if (r < 0)
		return r;
	top = skip_ws(s, len, 0);
	top_end = g.i;
	g.i = skip_ws(s, len, g.i);
	if (g.i < len)
		return scan_fail(d, g.i, "data after the document");
	c = s[top];
	/* json-c takes a number or literal at the top as finished only when
	 * a byte follows it, and null as no document at all. */
	if ((c != '{' && c != '[' && c != '"' && top_end == len) || c == 'n')
		return fatelf_diag_set(d, -FATELF_E_MANIFEST_JSON, -1,
				       c == 'n' ? "the document is null" : "the document ends early (%zu bytes)",
				       len);
	if (ret_top)
		*ret_top = c == '{' ? FATELF_JSON_OBJECT : c == '[' ? FATELF_JSON_ARRAY :
			   c == '"' ? FATELF_JSON_STRING : c == 't' || c == 'f' ? FATELF_JSON_BOOL :
			   FATELF_JSON_INT;
	return 0;
}

/* The pull reader */

void fatelf_json_doc_init(fatelf_json_doc *doc, const char *s, size_t len)
{
	*doc = (fatelf_json_doc) { .s = s, .len = len };
}

void fatelf_json_doc_done(fatelf_json_doc *doc)
{
	free(doc->kbuf);
	free(doc->vbuf);
	free(doc->spans);
	doc->kbuf = doc->vbuf = NULL;
	doc->kcap = doc->vcap = 0;
	doc->spans = NULL;
	doc->nspans = doc->spans_cap = 0;
}

/* The indexed object or array that starts at offset i, or NULL. */
static const fatelf_json_span *span_at(const fatelf_json_doc *doc, size_t i)
{
	size_t lo = 0, hi = doc->nspans;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (doc->spans[mid].start == i)
			return &doc->spans[mid];
		if (doc->spans[mid].start < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t fatelf_json_skip(const fatelf_json_doc *doc, size_t at)
{
	const char *s = doc->s;
	size_t len = doc->len, i = skip_ws(s, len, at), depth = 0;
	bool dbl;

	if (i >= len)
		return len;
	switch (s[i]) {
	case '{': case '[': {
		const fatelf_json_span *sp = span_at(doc, i);

		if (sp)
			return sp->end;
		for (; i < len; i++) {
			if (s[i] == '"') {
				i = string_end(s, len, i) - 1;
			} else if (s[i] == '{' || s[i] == '[') {
				depth++;
			} else if (s[i] == '}' || s[i] == ']') {
				if (--depth == 0)
					return i + 1;
			}
		}
		return len;
	}
	case '"':
		return string_end(s, len, i);
	case 't': case 'n':
		return MIN(i + 4, len);
	case 'f':
		return MIN(i + 5, len);
	default:
		return number_end(s, len, i, &dbl);
	}
}

int fatelf_json_read(fatelf_json_doc *doc, size_t at, fatelf_json_value *ret)
{
	const char *s = doc->s;
	size_t i = skip_ws(s, doc->len, at);
	fatelf_json_value v = { .at = i };
	bool dbl;

	if (i >= doc->len)
		return -EINVAL;
	switch (s[i]) {
	case '{': v.type = FATELF_JSON_OBJECT; break;
	case '[': v.type = FATELF_JSON_ARRAY; break;
	case 'n': v.type = FATELF_JSON_NULL; break;
	case 't': v.type = FATELF_JSON_BOOL; v.b = true; break;
	case 'f': v.type = FATELF_JSON_BOOL; break;
	case '"': {
		ssize_t end = string_decode(s, doc->len, i, &doc->vbuf, &doc->vcap, &v.len);

		if (end < 0)
			return (int)end;
		v.type = FATELF_JSON_STRING;
		v.str = doc->vbuf;
		break;
	}
	default: {
		size_t end = number_end(s, doc->len, i, &dbl);

		if (dbl)
			v.type = FATELF_JSON_DOUBLE;
		else if (int_value(s, i, end, &v.i64, &v.u64))
			v.type = FATELF_JSON_INT;
		else
			return -EINVAL;
		break;
	}
	}
	*ret = v;
	return 0;
}

int fatelf_json_next_member(fatelf_json_doc *doc, size_t *pos, const char **ret_key,
			    size_t *ret_value)
{
	const char *s = doc->s;
	size_t len = doc->len, i = skip_ws(s, len, *pos), klen;

	if (i >= len || s[i] == '}' || s[i] == ']')
		return 0;
	i = skip_ws(s, len, i + 1);     /* past '{', '[' or ',' */
	if (i >= len || s[i] == '}' || s[i] == ']') {
		*pos = i;
		return 0;
	}
	if (ret_key) {
		ssize_t end = string_decode(s, len, i, &doc->kbuf, &doc->kcap, &klen);

		if (end < 0)
			return (int)end;
		*ret_key = doc->kbuf;
		i = skip_ws(s, len, (size_t)end);
		i = skip_ws(s, len, i + 1);     /* past ':' */
	}
	*ret_value = i;
	*pos = fatelf_json_skip(doc, i);
	return 1;
}

size_t fatelf_json_count(const fatelf_json_doc *doc, size_t at)
{
	const char *s = doc->s;
	size_t len = doc->len, i = skip_ws(s, len, at), n = 0;

	if (i >= len || (s[i] != '[' && s[i] != '{'))
		return 0;
	const fatelf_json_span *sp = span_at(doc, i);
	if (sp)
		return sp->count;
	for (;;) {
		i = skip_ws(s, len, i + 1);
		if (i >= len || s[i] == ']' || s[i] == '}')
			return n;
		if (s[i] == '"' && s[skip_ws(s, len, at)] == '{') {
			i = skip_ws(s, len, string_end(s, len, i));
			i++;
		}
		i = skip_ws(s, len, fatelf_json_skip(doc, i));
		n++;
		if (i >= len || s[i] != ',')
			return n;
	}
}

int fatelf_json_find(fatelf_json_doc *doc, size_t at, const char *key, size_t *ret_value)
{
	size_t pos = skip_ws(doc->s, doc->len, at);
	const char *k;
	int r;

	while ((r = fatelf_json_next_member(doc, &pos, &k, ret_value)) > 0)
		if (strcmp(k, key) == 0)
			return 1;
	return r;
}
