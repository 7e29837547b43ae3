/*
 * Hex: bytes as lower-case hex digits and back. One digit table and one
 * decoder for digests, key ids and binfmt_misc magic; callers that accept
 * only the canonical form decode with fatelf_unhex_lower.
 */
#ifndef FATELF_HEX_H
#define FATELF_HEX_H

#include <stddef.h>
#include <stdint.h>

/* The value of a hex digit of either case, -1 for anything else. */
static inline int fatelf_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 2*len lower-case hex digits of buf and a NUL into out. */
void fatelf_hex(const uint8_t *buf, size_t len, char *out);

/*
 * Parses exactly 2*len hex digits into out: 0, or -EINVAL at the first
 * byte that is not two digits (a short string stops there and is never
 * read past its NUL). out may be partly written on failure.
 * fatelf_unhex_lower takes only lower-case digits, the form fatelf_hex
 * writes.
 */
int fatelf_unhex(const char *hex, uint8_t *out, size_t len);
int fatelf_unhex_lower(const char *hex, uint8_t *out, size_t len);

#endif
