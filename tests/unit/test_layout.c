/*
 * Unit tests for lib/fatelf/layout.c: keep sets, alignment rules and the output
 * plan every writer follows.
 */
#include <check.h>
#include <stdlib.h>

#include "fatelf.h"
#include "testutil.h"

static fatelf_header make_hdr(unsigned n, const uint64_t *offsets, const uint64_t *sizes)
{
	fatelf_header h;

	fatelf_header_init(&h);
	h.nrecords = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		h.records[i].target.machine = (uint16_t)(100 + i);
		h.records[i].target.word_size = FATELF_CLASS64;
		h.records[i].target.byte_order = FATELF_DATA2LSB;
		h.records[i].offset = offsets[i];
		h.records[i].size = sizes[i];
	}
	return h;
}

START_TEST(test_align_of_offset)
{
	ck_assert_uint_eq(fatelf_align_of_offset(0x1000), 0x1000);
	ck_assert_uint_eq(fatelf_align_of_offset(0x3000), 0x1000);
	ck_assert_uint_eq(fatelf_align_of_offset(0x10000), 0x10000);
	ck_assert_uint_eq(fatelf_align_of_offset(0x30000), 0x10000);
	ck_assert_uint_eq(fatelf_align_of_offset(0x200000), FATELF_MAX_ALIGN);
	ck_assert_uint_eq(fatelf_align_of_offset(0x40000000), FATELF_MAX_ALIGN);
	ck_assert_uint_eq(fatelf_align_of_offset(0x1008), FATELF_MIN_ALIGN);
	ck_assert_uint_eq(fatelf_align_up(0x1001, 0x1000), 0x2000);
	ck_assert_uint_eq(fatelf_align_up(0x2000, 0x1000), 0x2000);
	ck_assert_uint_eq(fatelf_align_up(5, 0), 5);
}
END_TEST

START_TEST(test_keepset)
{
	fatelf_keepset k;

	fatelf_keep_clear(&k);
	ck_assert_uint_eq(fatelf_keep_count(&k), 0);
	fatelf_keep_add(&k, 0);
	fatelf_keep_add(&k, 9);
	fatelf_keep_add(&k, 254);
	fatelf_keep_add(&k, 255); /* out of range: ignored */
	ck_assert_uint_eq(fatelf_keep_count(&k), 3);
	ck_assert(fatelf_keep_has(&k, 9));
	ck_assert(!fatelf_keep_has(&k, 8));
	ck_assert(fatelf_keep_has(&k, 254));
	ck_assert(!fatelf_keep_has(&k, 255));
}
END_TEST

START_TEST(test_plan_elf)
{
	const uint64_t off[] = { 0x1000, 0x10000 }, sz[] = { 500, 700 };
	fatelf_header h = make_hdr(2, off, sz);
	fatelf_keepset k;
	fatelf_plan p;
	fatelf_diag d;

	fatelf_keep_clear(&k);
	fatelf_keep_add(&k, 1);
	ck_assert_int_eq(fatelf_plan_make(&h, &k, FATELF_FORM_AUTO, &p, &d), 0);
	ck_assert_int_eq(p.form, FATELF_FORM_ELF);
	ck_assert_uint_eq(p.nkept, 1);
	ck_assert_uint_eq(p.in_index[0], 1);
	ck_assert_uint_eq(p.out_size, 700);

	fatelf_keep_add(&k, 0);
	ck_assert_int_eq(fatelf_plan_make(&h, &k, FATELF_FORM_ELF, &p, &d), -FATELF_E_INVALID);
	ck_assert_int_eq(d.code, -FATELF_E_INVALID);

	fatelf_keep_clear(&k);
	ck_assert_int_eq(fatelf_plan_make(&h, &k, FATELF_FORM_AUTO, &p, &d), -FATELF_E_EMPTY_KEEP);
}
END_TEST

START_TEST(test_plan_fat_order_and_alignment)
{
	/* Record 0 lies after record 2 in the file; record 1 sits at 128 KiB. */
	const uint64_t off[] = { 0x40000, 0x20000, 0x1000 }, sz[] = { 100, 0x11000, 50 };
	fatelf_header h = make_hdr(3, off, sz);
	fatelf_keepset k;
	fatelf_plan p;
	fatelf_diag d;

	fatelf_keep_clear(&k);
	fatelf_keep_add(&k, 0);
	fatelf_keep_add(&k, 1);
	fatelf_keep_add(&k, 2);
	ck_assert_int_eq(fatelf_plan_make(&h, &k, FATELF_FORM_AUTO, &p, &d), 0);
	ck_assert_int_eq(p.form, FATELF_FORM_FAT);
	ck_assert_uint_eq(p.out.nrecords, 3);
	/* Table order is the vendor's order. */
	for (unsigned i = 0; i < 3; i++)
		ck_assert_uint_eq(p.out.records[i].target.machine, 100 + i);
	/* Placement follows the input offsets: record 2, then 1, then 0. */
	ck_assert_uint_eq(p.in_index[0], 2);
	ck_assert_uint_eq(p.in_index[1], 1);
	ck_assert_uint_eq(p.in_index[2], 0);
	ck_assert_uint_eq(p.out.records[2].offset, 0x1000);
	ck_assert_uint_eq(p.out.records[1].offset, 0x20000);
	/* 0x20000 + 0x11000 = 0x31000; record 0 keeps 0x40000's alignment. */
	ck_assert_uint_eq(p.out.records[0].offset, 0x40000);
	ck_assert_uint_eq(p.out_size, 0x40000 + 100);

	/* Keeping one record as FatELF still gives a table. */
	fatelf_keep_clear(&k);
	fatelf_keep_add(&k, 1);
	ck_assert_int_eq(fatelf_plan_make(&h, &k, FATELF_FORM_FAT, &p, &d), 0);
	ck_assert_uint_eq(p.out.nrecords, 1);
	ck_assert_uint_eq(p.out.records[0].offset, 0x20000);
	ck_assert_uint_eq(p.out_size, 0x20000 + 0x11000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("plan");

	tcase_add_test(tc, test_align_of_offset);
	tcase_add_test(tc, test_keepset);
	tcase_add_test(tc, test_plan_elf);
	tcase_add_test(tc, test_plan_fat_order_and_alignment);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
