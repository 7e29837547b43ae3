/*
 * Untrusted text (private to libfatelf): UTF-8 decoding, the control
 * characters a terminal or a log must never receive raw, the quoting
 * of a hostile name (a manifest path, an archive member name) so that a
 * message can show it, and URLs stripped of their credentials. ASCII classes are here too, without the locale,
 * because every rule that uses them is about bytes.
 */
#ifndef FATELF_TEXT_H
#define FATELF_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of quoted text in a message, so that a message has room for the
 * rule (fatelf_diag.msg is 512 bytes). A quote buffer also holds "..."
 * and the NUL. */
#define FATELF_TEXT_QUOTE_MAX 160
#define FATELF_TEXT_QUOTE_BUF (FATELF_TEXT_QUOTE_MAX + 8)

/* What fatelf_text_check finds. */
enum {
	FATELF_TEXT_OK,
	FATELF_TEXT_CONTROL,    /* a C0, DEL or C1 control character */
	FATELF_TEXT_UTF8,       /* a byte that is not well-formed UTF-8 */
	FATELF_TEXT_BIDI,       /* a bidirectional formatting character */
};

/* Room for what fatelf_text_problem says about a text. */
#define FATELF_TEXT_PROBLEM_MAX 96

/* ASCII classes */
static inline bool fatelf_text_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool fatelf_text_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* UTF-8 and control characters */
size_t fatelf_text_utf8_decode(const uint8_t *s, size_t n, uint32_t *ret_cp);
bool fatelf_text_is_control(uint32_t cp);
bool fatelf_text_is_bidi(uint32_t cp);
int fatelf_text_check(const char *s, size_t len, size_t *ret_at);

/*
 * The one rule of every text a bundle, an index or a reply carries (a
 * name, a summary, a path, a symlink target), for its writers and its
 * readers alike: well-formed UTF-8 with no C0, DEL or C1 control
 * character and no bidirectional formatting character (U+061C, U+200E,
 * U+200F, U+202A to U+202E, U+2066 to U+2069), which would make a
 * terminal show other text than the bytes say. NULL when s keeps it,
 * else the rule it breaks ("holds the control character U+001B at byte
 * 3"), in buf.
 */
const char *fatelf_text_problem(const char *s, size_t len, char buf[FATELF_TEXT_PROBLEM_MAX]);

/*
 * s as a terminal may show it, whole: every control character, every
 * bidirectional formatting character and every byte that is not UTF-8
 * escaped (\x1b, \u202e, \xff); everything else, backslashes too, as it
 * is, so text quoted already comes out the same. malloc'd (NULL: out of
 * memory).
 */
char *fatelf_text_display(const char *s);

/* Quoting for messages, with the escapes of fatelf_text_display (and
 * backslashes as \x5c); both return buf. */
const char *fatelf_text_quote_n(const char *s, size_t len, char buf[FATELF_TEXT_QUOTE_BUF]);
const char *fatelf_text_quote(const char *s, char buf[FATELF_TEXT_QUOTE_BUF]);

/*
 * A URL as a log line, a reply, a history row or an error may show it:
 * without the credentials of its authority ("user:password@", or
 * "token@"), and with every byte that is not printable ASCII replaced by
 * '?'. Also for text that does not parse as a URL. malloc'd (NULL: out of
 * memory, or url is NULL).
 */
char *fatelf_text_url_redact(const char *url);

/* A size for people: "812 B", "1.5 MiB" (binary units, one decimal). */
const char *fatelf_format_size(uint64_t n, char buf[32]);

#endif
