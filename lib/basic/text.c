/*
 * Untrusted text: a UTF-8 decoder that takes only well-formed sequences,
 * the one text rule (no control, no bidirectional formatting character)
 * that every writer and reader of a manifest's or an index's texts and
 * paths keeps, and the quoting that lets a message or a listing show a
 * hostile name without handing a terminal an escape sequence or a
 * reordering. Names in a bundle come from
 * whoever made it, so every message that shows one goes through here.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 when it
 * is not one (overlong forms, surrogates and values past U+10FFFF are not). */
size_t fatelf_text_utf8_decode(const uint8_t *s, size_t n, uint32_t *ret_cp)
{
	uint32_t cp, min;
	size_t k;

	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		k = 2, cp = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		k = 3, cp = s[0] & 0x0f, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		k = 4, cp = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return k;
}

/* C0, DEL and C1: nothing a terminal or a log should receive raw. */
bool fatelf_text_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* The characters that reorder what a terminal shows (Unicode's
 * bidirectional formatting characters, UAX #9): the embeddings and
 * overrides, the isolates and the three marks. With them, a name can
 * show as another ("invoice\u202efdp.exe"), which is why no rule of ours
 * lets one through, even where a right-to-left text might use a mark. */
bool fatelf_text_is_bidi(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

/* Classifies s (a FATELF_TEXT_* value); *ret_at is the offset of the
 * first bad byte. */
int fatelf_text_check(const char *s, size_t len, size_t *ret_at)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t i = 0, k;
	uint32_t cp;

	while (i < len) {
		k = fatelf_text_utf8_decode(u + i, len - i, &cp);
		if (k == 0) {
			*ret_at = i;
			return FATELF_TEXT_UTF8;
		}
		if (fatelf_text_is_control(cp)) {
			*ret_at = i;
			return FATELF_TEXT_CONTROL;
		}
		if (fatelf_text_is_bidi(cp)) {
			*ret_at = i;
			return FATELF_TEXT_BIDI;
		}
		i += k;
	}
	return FATELF_TEXT_OK;
}

const char *fatelf_text_problem(const char *s, size_t len, char buf[FATELF_TEXT_PROBLEM_MAX])
{
	size_t at = 0;
	uint32_t cp = 0;

	switch (fatelf_text_check(s, len, &at)) {
	case FATELF_TEXT_OK:
		return NULL;
	case FATELF_TEXT_UTF8:
		snprintf(buf, FATELF_TEXT_PROBLEM_MAX, "is not valid UTF-8 (byte %zu)", at);
		return buf;
	case FATELF_TEXT_CONTROL:
		fatelf_text_utf8_decode((const uint8_t *)s + at, len - at, &cp);
		snprintf(buf, FATELF_TEXT_PROBLEM_MAX, "holds the control character U+%04X at byte %zu",
			 (unsigned)cp, at);
		return buf;
	default:
		fatelf_text_utf8_decode((const uint8_t *)s + at, len - at, &cp);
		snprintf(buf, FATELF_TEXT_PROBLEM_MAX,
			 "holds the bidirectional control character U+%04X at byte %zu", (unsigned)cp, at);
		return buf;
	}
}

/*
 * The escape of the character at s (k bytes, 0 when not UTF-8) into out
 * (12 bytes), or 0 when it is shown as it is: a control
 * character and a byte that is not UTF-8 as \xNN a byte at a time (so
 * its k is the one byte), a bidirectional formatting character as
 * \uNNNN, and, when backslash, the backslash as \x5c.
 */
static size_t escape_one(const uint8_t *s, size_t *k, uint32_t cp, bool backslash, char out[12])
{
	if (*k == 0 || fatelf_text_is_control(cp) || (backslash && cp == '\\')) {
		*k = 1;
		snprintf(out, 12, "\\x%02x", s[0]);
		return 4;
	}
	if (fatelf_text_is_bidi(cp)) {
		snprintf(out, 12, "\\u%04x", (unsigned)cp);
		return 6;
	}
	return 0;
}

/*
 * s as a message may show it: printable UTF-8 as is, every other byte
 * and the backslash as \xNN, a bidirectional control as \uNNNN, cut
 * with "..." past FATELF_TEXT_QUOTE_MAX bytes. A name from a hostile
 * manifest or archive never reaches a terminal raw.
 */
const char *fatelf_text_quote_n(const char *s, size_t len, char buf[FATELF_TEXT_QUOTE_BUF])
{
	const uint8_t *u = (const uint8_t *)s;
	size_t i = 0, o = 0, k, n;
	uint32_t cp = 0;
	char esc[12];

	while (i < len) {
		k = fatelf_text_utf8_decode(u + i, len - i, &cp);
		n = escape_one(u + i, &k, cp, true, esc);
		if (n) {
			if (o + n > FATELF_TEXT_QUOTE_MAX)
				break;
			memcpy(buf + o, esc, n);
			o += n;
			i += k;
			continue;
		}
		if (o + k > FATELF_TEXT_QUOTE_MAX)
			break;
		memcpy(buf + o, s + i, k);
		o += k;
		i += k;
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

char *fatelf_text_display(const char *s)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t len = strlen(s), i = 0, o = 0, k, n;
	uint32_t cp = 0;
	char esc[12], *out;

	/* 4 bytes at most for each byte: a \xNN is one byte's, a \uNNNN
	 * three bytes'. */
	if (len > (SIZE_MAX - 1) / 4)
		return NULL;
	out = malloc(len * 4 + 1);
	if (!out)
		return NULL;
	while (i < len) {
		k = fatelf_text_utf8_decode(u + i, len - i, &cp);
		n = escape_one(u + i, &k, cp, false, esc);
		if (n) {
			memcpy(out + o, esc, n);
			o += n;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
		}
		i += k;
	}
	out[o] = '\0';
	return out;
}

const char *fatelf_text_quote(const char *s, char buf[FATELF_TEXT_QUOTE_BUF])
{
	return fatelf_text_quote_n(s, strlen(s), buf);
}

/* ------------------------------------------------------------ URLs */

/* Where a URL's authority starts: after "scheme:" and the slashes that
 * follow it, or 0 when the text has no "scheme:/" (then it is all taken
 * for an authority, so "user:pw@host" loses its credentials too). */
static size_t url_authority_start(const char *url)
{
	size_t i = 0;

	if (!fatelf_text_is_alpha(url[0]))
		return 0;
	while (fatelf_text_is_alpha(url[i]) || fatelf_text_is_digit(url[i]) || url[i] == '+' ||
	       url[i] == '-' || url[i] == '.')
		i++;
	if (url[i] != ':' || (url[i + 1] != '/' && url[i + 1] != '\\'))
		return 0;
	i++;
	while (url[i] == '/' || url[i] == '\\')
		i++;
	return i;
}

/* The end of the credentials in the authority at url + start (the index
 * just past their '@'), or start when there are none. */
static size_t url_userinfo_end(const char *url, size_t start)
{
	size_t end = start + strcspn(url + start, "/\\?#");
	size_t stop = strlen(url);
	const char *colon, *bracket;
	size_t at = start;

	for (size_t i = start; i < end; i++)
		if (url[i] == '@')
			at = i + 1;
	if (at > start)
		return at;
	/* A password with a raw '/', '?' or '#' in it ("user:pa/ss@host")
	 * ends the authority early: a ':' that is not followed by a port
	 * number still means credentials, up to the last '@'. Such a URL
	 * does not parse, so cutting more of it than that loses nothing. */
	bracket = memchr(url + start, ']', end - start);
	colon = memchr(bracket ? bracket : url + start, ':', (size_t)(url + end - (bracket ? bracket : url + start)));
	if (!colon || strspn(colon + 1, "0123456789") == (size_t)(url + end - colon - 1))
		return start;
	for (size_t i = end; i < stop; i++)
		if (url[i] == '@')
			at = i + 1;
	return at;
}

char *fatelf_text_url_redact(const char *url)
{
	size_t start, skip, len, o = 0;
	char *out;

	if (!url)
		return NULL;
	len = strlen(url);
	start = url_authority_start(url);
	skip = url_userinfo_end(url, start);
	out = malloc(len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)url[i];

		if (i >= start && i < skip)
			continue;
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = '\0';
	return out;
}

const char *fatelf_format_size(uint64_t n, char buf[32])
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	unsigned u = 0;

	if (n < 1024) {
		snprintf(buf, 32, "%llu B", (unsigned long long)n);
		return buf;
	}
	v /= 1024.0;
	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, 32, "%.1f %s", v, units[u]);
	return buf;
}
