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

uint64_t fatelf_glue_align(uint64_t forced, uint64_t p_align)
{
	if (forced)
		return forced;
	/* Honour the ELF's own alignment (64 KiB pages on aarch64/ppc64le),
	 * within the range a writer keeps. */
	return MIN(MAX(p_align, (uint64_t)FATELF_MIN_ALIGN), (uint64_t)FATELF_MAX_ALIGN);
}

int fatelf_glue_table(const fatelf_target *targets, const uint64_t *sizes, const uint64_t *aligns,
		      unsigned n, fatelf_header *ret, uint64_t *ret_size, fatelf_diag *d)
{
	fatelf_header hdr;
	uint64_t cursor;

	if (n == 0 || n > FATELF_MAX_RECORDS)
		return fatelf_diag_set(d, n ? -FATELF_E_TOO_MANY : -FATELF_E_INVALID, -1,
				       "%u records; 1 to %d are allowed", n, FATELF_MAX_RECORDS);
	fatelf_header_init(&hdr);
	hdr.nrecords = (uint8_t)n;
	cursor = FATELF_TABLE_SIZE(n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = fatelf_align_up(cursor, aligns[i]);

		for (unsigned j = 0; j < i; j++)
			if (fatelf_target_equal(&targets[i], &targets[j])) {
				char name[FATELF_TARGET_NAME_MAX];

				fatelf_target_format(&targets[i], name);
				return fatelf_diag_set(d, -FATELF_E_DUPLICATE, (int)i,
						       "record %u (%s) has the same target as record %u", i, name, j);
			}
		if (off < cursor || off + sizes[i] < off)
			return fatelf_diag_set(d, -FATELF_E_OVERFLOW, (int)i, "record %u: offset overflows", i);
		hdr.records[i].target = targets[i];
		hdr.records[i].offset = off;
		hdr.records[i].size = sizes[i];
		cursor = off + sizes[i];
	}
	*ret = hdr;
	*ret_size = cursor;
	return 0;
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
