/*
 * What every fuzz target shares: the libFuzzer entry point's prototype and
 * an assertion that stays on in every build (a property the target checks
 * on top of "no crash, no sanitizer report").
 */
#ifndef FATELF_FUZZ_H
#define FATELF_FUZZ_H

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

#endif
