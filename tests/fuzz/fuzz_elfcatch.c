/*
 * libFuzzer target for the ELF bytes caught from a stream (elfcatch.h),
 * which lay out the glued files of a tar or .deb source: the input is a
 * file, handed in blocks whose size its last byte picks (1 byte to
 * 4 KiB, in steps of 16), some of them left out as holes when its
 * second-to-last byte is odd (a sparse member reads zeros there). The
 * inspection over what was caught must give exactly what
 * fatelf_elf_inspect gives over the whole file with those holes zeroed:
 * the same code, the same words, the same alignment and target.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfcatch.h"
#include "reader.h"

static void check(bool ok, const char *what, const fatelf_diag *a, const fatelf_diag *b)
{
	if (!ok) {
		fprintf(stderr, "fuzz_elfcatch: %s (%s | %s)\n", what, a ? a->msg : "", b ? b->msg : "");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fatelf_elfcatch c = { 0 };
	fatelf_elfinfo ci = { 0 }, fi = { 0 };
	fatelf_diag cd, fd;
	fatelf_reader whole;
	size_t block, n = 0;
	bool holes;
	uint8_t *file;
	int cr, fr;

	if (size < 2)
		return 0;
	block = 1 + (size_t)data[size - 1] * 16;
	holes = data[size - 2] & 1;
	file = malloc(size);
	if (!file)
		return 0;
	memcpy(file, data, size);
	for (size_t off = 0; off < size; off += block, n++) {
		size_t len = size - off < block ? size - off : block;

		/* Every third block a hole (never the first: a member's head). */
		if (holes && n % 3 == 2) {
			memset(file + off, 0, len);
			continue;
		}
		check(fatelf_elfcatch_block(&c, file + off, off, len) == 0, "a block refused", NULL, NULL);
	}
	fatelf_diag_clear(&cd);
	fatelf_diag_clear(&fd);
	cr = fatelf_elfcatch_inspect(&c, size, &ci, &cd);
	fatelf_reader_seekable_mem(&whole, file, size);
	fr = fatelf_elf_inspect(&whole, 0, size, -1, &fi, &fd);
	check(cr == fr, "another code than over the whole file", &cd, &fd);
	if (fr < 0)
		check(strcmp(cd.msg, fd.msg) == 0, "other words than over the whole file", &cd, &fd);
	else
		check(ci.max_align == fi.max_align && ci.phnum == fi.phnum && ci.type == fi.type &&
		      ci.has_interp == fi.has_interp && fatelf_target_equal(&ci.target, &fi.target),
		      "another result than over the whole file", &cd, &fd);
	fatelf_elfcatch_done(&c);
	free(file);
	return 0;
}
