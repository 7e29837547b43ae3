/*
 * The strict JSON pre-scan of a manifest: the lexical rules json-c's
 * strict mode lets through, the nesting limit, and the counts that let
 * the parser find duplicate keys and enforce the entry limit before
 * json-c builds a tree. The grammar itself is left to json-c.
 */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "hex.h"
#include "jsonscan.h"
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
 * elements of the top-level "entries" array. The grammar is json-c's job.
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

size_t fatelf_json_count_keys(json_object *o)
{
	size_t n = 0;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val) {
			(void)key;
			n += 1 + fatelf_json_count_keys(val);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		size_t len = json_object_array_length(o);

		for (size_t i = 0; i < len; i++)
			n += fatelf_json_count_keys(json_object_array_get_idx(o, i));
	}
	return n;
}
