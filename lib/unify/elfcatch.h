/*
 * The bytes of an ELF file that fatelf_elf_inspect reads (its 64-byte
 * head and its program header table, wherever e_phoff puts it), caught
 * from a stream as they go by (private to libfatelf). A reader that
 * cannot go back (a tar or .deb member) hands every block here, in
 * order, holes left out; at the end, the inspection runs over what was
 * caught and gives what it would give over the whole file.
 */
#ifndef FATELF_ELFCATCH_H
#define FATELF_ELFCATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "fatelf.h"
#include "macro.h"

typedef struct fatelf_elfcatch {
	uint8_t head[64];       /* zeros where no byte came (a hole, a short file) */
	bool placed;            /* the head is whole and the table placed */
	uint64_t tab_off, tab_len;
	uint8_t *tab;           /* NULL: no table to catch */
} fatelf_elfcatch;

/* The file's bytes [off, off + len), blocks in ascending order. 0, or
 * -ENOMEM for the table's room (at most 65,534 entries of 56 bytes). */
int fatelf_elfcatch_block(fatelf_elfcatch *c, const void *buf, uint64_t off, size_t len);
/* fatelf_elf_inspect of the file of size bytes whose blocks were
 * handed in, as a plain ELF file (record -1): its code and diag. */
int fatelf_elfcatch_inspect(fatelf_elfcatch *c, uint64_t size, fatelf_elfinfo *ret, fatelf_diag *d);
void fatelf_elfcatch_done(fatelf_elfcatch *c);
#define _cleanup_elfcatch_ _cleanup_(fatelf_elfcatch_done)

#endif
