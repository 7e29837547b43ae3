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
};

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
int fatelf_text_check(const char *s, size_t len, size_t *ret_at);

/* Quoting for messages; both return buf. */
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
