/*
 * fuzz_elfdyn: libFuzzer target for the $ORIGIN scanner (lib/run/elfdyn.c),
 * which reads the ELF header, program headers, dynamic section and
 * strings of an untrusted record before fatelf-run runs it.
 *
 * The input is used twice:
 *   - as an ELF image (a memory source, base 0, size len), and the same
 *     bytes again embedded at an odd offset between junk, as a record in a
 *     fat file is: both must give the same result;
 *   - as a DT_RUNPATH string (up to its first NUL) in a fixed, valid image,
 *     so the path rules see arbitrary text.
 * Besides "no crash, no sanitizer report" it aborts when a property fails:
 * a failure is one of the documented codes with its diagnostic filled and
 * the depth untouched; a depth is within [-1, FATELF_ORIGIN_DEPTH_MAX]; a
 * string without "ORIGIN" has depth -1, and no string reaches further up
 * than it has ".." components (plus one for a token glued to a name).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelf.h"
#include "run.h"
#include "fuzz.h"

#define UNTOUCHED (-1000)

static int scan(const fatelf_reader *src, uint64_t base, uint64_t len, int *ret_depth)
{
	fatelf_diag d;
	int depth = UNTOUCHED, r;

	fatelf_diag_clear(&d);
	r = fatelf_elf_origin_depth(src, base, len, &depth, &d);
	if (r < 0) {
		fuzz_assert(r == -FATELF_E_NOT_ELF || r == -FATELF_E_SEGMENT ||
			    r == -FATELF_E_LIMIT);
		fuzz_assert(d.code == r);
		fuzz_assert(memchr(d.msg, '\0', sizeof(d.msg)) != NULL);
		fuzz_assert(d.msg[0] != '\0');
		fuzz_assert(depth == UNTOUCHED);
	} else {
		fuzz_assert(r == 0);
		fuzz_assert(depth >= -1 && depth <= FATELF_ORIGIN_DEPTH_MAX);
	}
	*ret_depth = depth;
	return r;
}

static void fuzz_image(const uint8_t *data, size_t size)
{
	const size_t off = 4099, pad = 61;
	fatelf_reader src;
	int r, depth, r2, depth2;
	uint8_t *big;

	fatelf_reader_seekable_mem(&src, data, size);
	r = scan(&src, 0, size, &depth);

	big = malloc(off + size + pad);
	if (!big)
		return;
	memset(big, 0xa5, off + size + pad);
	memcpy(big + off, data, size);
	fatelf_reader_seekable_mem(&src, big, off + size + pad);
	r2 = scan(&src, off, size, &depth2);
	fuzz_assert(r2 == r);
	fuzz_assert(depth2 == depth);
	free(big);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/*
 * A 64-bit little-endian ET_DYN: PT_LOAD over the whole image at 0x10000,
 * PT_DYNAMIC at 0x100 with DT_RUNPATH, DT_STRTAB, DT_STRSZ, DT_NULL, and
 * the string table at 0x200 holding "" and the path.
 */
static void fuzz_runpath(const uint8_t *data, size_t size)
{
	const size_t dynoff = 0x100, stroff = 0x200;
	const uint8_t *nul = memchr(data, '\0', size);
	size_t n = nul ? (size_t)(nul - data) : size;
	size_t len = stroff + 1 + n + 1;
	uint8_t *img = calloc(1, len);
	fatelf_reader src;
	int depth, r;

	if (!img)
		return;
	memcpy(img, "\177ELF\002\001\001", 7);
	put16(img + 16, 3);
	put16(img + 18, 62);
	img[20] = 1;
	put64(img + 32, 64);
	put16(img + 52, 64);
	put16(img + 54, 56);
	put16(img + 56, 2);
	uint8_t *ph = img + 64;
	ph[0] = 1;                      /* PT_LOAD */
	put64(ph + 16, 0x10000);
	put64(ph + 32, len);
	ph += 56;
	ph[0] = 2;                      /* PT_DYNAMIC */
	put64(ph + 8, dynoff);
	put64(ph + 32, 4 * 16);
	uint8_t *dyn = img + dynoff;
	put64(dyn, 29);
	put64(dyn + 8, 1);
	put64(dyn + 16, 5);
	put64(dyn + 24, 0x10000 + stroff);
	put64(dyn + 32, 10);
	put64(dyn + 40, 1 + n + 1);
	memcpy(img + stroff + 1, data, n);

	fatelf_reader_seekable_mem(&src, img, len);
	r = scan(&src, 0, len, &depth);
	if (!memmem(data, n, "ORIGIN", 6)) {
		fuzz_assert(r == 0 && depth == -1);
	} else if (r == 0 && depth > 0) {
		unsigned dotdot = 0;

		for (size_t i = 0; i + 1 < n; i++)
			if (data[i] == '.' && data[i + 1] == '.')
				dotdot++;
		fuzz_assert((unsigned)depth <= dotdot + 1);
	} else {
		fuzz_assert(r == 0 || r == -FATELF_E_LIMIT);
	}
	free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_image(data, size);
	fuzz_runpath(data, size);
	return 0;
}
