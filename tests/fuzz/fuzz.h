/*
 * What every fuzz target shares: the libFuzzer entry point's prototype and
 * an assertion that stays on in every build (a property the target checks
 * on top of "no crash, no sanitizer report").
 */
#ifndef FATELF_FUZZ_H
#define FATELF_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_assert(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

/* Messages may quote hostile text, but only escaped: valid UTF-8 with no
 * control character (C0, DEL, C1). */
static inline bool fuzz_text_clean(const char *s)
{
	const uint8_t *u = (const uint8_t *)s;

	while (*u) {
		size_t k = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 :
			   (*u & 0xf8) == 0xf0 ? 4 : 0;

		if (k == 0 || *u < 0x20 || *u == 0x7f)
			return false;
		for (size_t i = 1; i < k; i++)
			if ((u[i] & 0xc0) != 0x80)
				return false;
		/* C1 controls, U+0080..U+009F */
		if (k == 2 && u[0] == 0xc2 && u[1] < 0xa0)
			return false;
		u += k;
	}
	return true;
}

#endif
