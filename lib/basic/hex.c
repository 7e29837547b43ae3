/*
 * Hex encoding and decoding.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

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

/* Each byte as a hex digit: its value + 1, with UPPER for 'A' to 'F';
 * 0 for any other byte. */
#define UPPER 0x20
static const uint8_t digit_of[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = UPPER | 11, ['B'] = UPPER | 12, ['C'] = UPPER | 13, ['D'] = UPPER | 14,
	['E'] = UPPER | 15, ['F'] = UPPER | 16,
};

static int unhex(const char *hex, uint8_t *out, size_t len, bool lower)
{
	uint8_t refuse = lower ? UPPER : 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t hi = digit_of[(uint8_t)hex[2 * i]], lo;

		if (!hi || (hi & refuse))
			return -EINVAL;
		lo = digit_of[(uint8_t)hex[2 * i + 1]];
		if (!lo || (lo & refuse))
			return -EINVAL;
		out[i] = (uint8_t)(((hi & 0x1f) - 1) << 4 | ((lo & 0x1f) - 1));
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
