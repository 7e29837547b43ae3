/*
 * Output layout: which bytes a writer puts where when it keeps some records
 * of a FatELF. One plan serves the seekable writers and the streaming
 * thinner, which is what makes their outputs byte-identical.
 */
#include <string.h>

#include "fatelf.h"
#include "macro.h"

uint64_t fatelf_align_up(uint64_t v, uint64_t align)
{
	if (align <= 1)
		return v;
	uint64_t rem = v % align;
	return rem ? v + (align - rem) : v;
}

uint64_t fatelf_align_of_offset(uint64_t offset)
{
	uint64_t low = offset & (~offset + 1); /* lowest set bit */

	if (offset == 0 || low > FATELF_MAX_ALIGN)
		return FATELF_MAX_ALIGN;
	return MAX(low, (uint64_t)FATELF_MIN_ALIGN);
}

void fatelf_keep_clear(fatelf_keepset *k)
{
	memset(k, 0, sizeof(*k));
}

void fatelf_keep_add(fatelf_keepset *k, unsigned index)
{
	if (index < FATELF_MAX_RECORDS)
		k->bits[index / 8] |= (uint8_t)(1u << (index % 8));
}

bool fatelf_keep_has(const fatelf_keepset *k, unsigned index)
{
	return index < FATELF_MAX_RECORDS && (k->bits[index / 8] >> (index % 8)) & 1u;
}

unsigned fatelf_keep_count(const fatelf_keepset *k)
{
	unsigned n = 0;

	for (unsigned i = 0; i < FATELF_MAX_RECORDS; i++)
		n += fatelf_keep_has(k, i);
	return n;
}

int fatelf_plan_make(const fatelf_header *in, const fatelf_keepset *keep, int form,
		     fatelf_plan *ret, fatelf_diag *d)
{
	fatelf_plan p;
	unsigned slot = 0;

	memset(&p, 0, sizeof(p));
	for (unsigned i = 0; i < in->nrecords; i++) {
		if (!fatelf_keep_has(keep, i))
			continue;
		p.in_index[p.nkept] = (uint8_t)i;
		p.out_index[p.nkept] = (uint8_t)slot++;
		p.nkept++;
	}
	if (p.nkept == 0)
		return fatelf_diag_set(d, -FATELF_E_EMPTY_KEEP, -1,
				       "no record selected: the output would be empty");
	if (form == FATELF_FORM_AUTO)
		form = p.nkept == 1 ? FATELF_FORM_ELF : FATELF_FORM_FAT;
	if (form == FATELF_FORM_ELF && p.nkept != 1)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1,
				       "a plain ELF output holds one record, but %u are selected",
				       p.nkept);
	if (form != FATELF_FORM_ELF && form != FATELF_FORM_FAT)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "unknown output form %d", form);
	p.form = form;

	/* Placement order is ascending input offset (insertion sort: n <= 255),
	 * carrying each record's slot in the output table with it. */
	for (unsigned i = 1; i < p.nkept; i++) {
		uint8_t ii = p.in_index[i], oi = p.out_index[i];
		unsigned j = i;
		while (j > 0 && in->records[p.in_index[j - 1]].offset > in->records[ii].offset) {
			p.in_index[j] = p.in_index[j - 1];
			p.out_index[j] = p.out_index[j - 1];
			j--;
		}
		p.in_index[j] = ii;
		p.out_index[j] = oi;
	}

	if (form == FATELF_FORM_ELF) {
		p.out_size = in->records[p.in_index[0]].size;
		*ret = p;
		return 0;
	}

	fatelf_header_init(&p.out);
	p.out.nrecords = (uint8_t)p.nkept;
	uint64_t cursor = FATELF_TABLE_SIZE(p.nkept);
	for (unsigned k = 0; k < p.nkept; k++) {
		const fatelf_record *src = &in->records[p.in_index[k]];
		fatelf_record *dst = &p.out.records[p.out_index[k]];
		uint64_t off = fatelf_align_up(cursor, fatelf_align_of_offset(src->offset));

		if (off < cursor || off + src->size < off)
			return fatelf_diag_set(d, -FATELF_E_OVERFLOW, p.in_index[k],
					       "record %u: output offset overflows", p.in_index[k]);
		dst->target = src->target;
		dst->offset = off;
		dst->size = src->size;
		cursor = off + src->size;
	}
	p.out_size = cursor;
	*ret = p;
	return 0;
}
