/*
 * Hex encoding and decoding.
 */
#include <errno.h>
#include <stdbool.h>

#include "hex.h"

void fatelf_hex(const uint8_t *buf, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[buf[i] >> 4];
		out[2 * i + 1] = digits[buf[i] & 15];
	}
	out[2 * len] = '\0';
}

static int digit(char c, bool lower)
{
	return lower && c >= 'A' && c <= 'F' ? -1 : fatelf_hex_digit(c);
}

static int unhex(const char *hex, uint8_t *out, size_t len, bool lower)
{
	for (size_t i = 0; i < len; i++) {
		int hi = digit(hex[2 * i], lower), lo = hi < 0 ? -1 : digit(hex[2 * i + 1], lower);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int fatelf_unhex(const char *hex, uint8_t *out, size_t len)
{
	return unhex(hex, out, len, false);
}

int fatelf_unhex_lower(const char *hex, uint8_t *out, size_t len)
{
	return unhex(hex, out, len, true);
}
