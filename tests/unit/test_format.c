/*
 * Unit tests for lib/fatelf/format.c: the header and record table as bytes. Every
 * field is little endian at a fixed offset; a table round-trips through
 * encode and decode; decode rejects what it cannot decode with the
 * validation codes.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "fatelf.h"
#include "testutil.h"

/* A table of n records whose every field differs from its neighbours'. */
static void fill(fatelf_header *h, unsigned n)
{
	fatelf_header_init(h);
	h->nrecords = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		fatelf_record *r = &h->records[i];

		r->target.machine = (uint16_t)(0x0102 + i * 0x0101);
		r->target.osabi = (uint8_t)(i * 3);
		r->target.osabi_version = (uint8_t)(i * 5 + 1);
		r->target.word_size = (uint8_t)(1 + i % 2);
		r->target.byte_order = (uint8_t)(2 - i % 2);
		r->offset = UINT64_C(0x1122334455667788) + (uint64_t)i * 0x1000;
		r->size = UINT64_C(0x0102030405060708) * (i + 1);
	}
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int k = 7; k >= 0; k--)
		v = v << 8 | p[k];
	return v;
}

static void round_trip(unsigned n)
{
	uint8_t buf[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS) + 16];
	fatelf_header h, back;
	fatelf_diag d;
	ssize_t len;

	fill(&h, n);
	memset(buf, 0xee, sizeof(buf));
	len = fatelf_header_encode(&h, buf, sizeof(buf));
	ck_assert_int_eq(len, 8 + 24 * n);
	/* nothing written past the table */
	ck_assert_int_eq(buf[len], 0xee);

	static const uint8_t head[8] = { 0xfa, 0x70, 0x0e, 0x1f, 0x01, 0x00, 0, 0x00 };
	ck_assert_int_eq(memcmp(buf, head, 6), 0);
	ck_assert_int_eq(buf[6], n);
	ck_assert_int_eq(buf[7], 0);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *r = buf + 8 + 24 * i;
		const fatelf_record *rec = &h.records[i];

		ck_assert_int_eq(r[0], rec->target.machine & 0xff);
		ck_assert_int_eq(r[1], rec->target.machine >> 8);
		ck_assert_int_eq(r[2], rec->target.osabi);
		ck_assert_int_eq(r[3], rec->target.osabi_version);
		ck_assert_int_eq(r[4], rec->target.word_size);
		ck_assert_int_eq(r[5], rec->target.byte_order);
		ck_assert_int_eq(r[6], 0);
		ck_assert_int_eq(r[7], 0);
		ck_assert_uint_eq(le64_at(r + 8), rec->offset);
		ck_assert_uint_eq(le64_at(r + 16), rec->size);
	}

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_header_decode(buf, (size_t)len, &back, &d), 0);
	ck_assert_uint_eq(back.magic, FATELF_MAGIC);
	ck_assert_int_eq(back.version, 1);
	ck_assert_int_eq(back.nrecords, n);
	ck_assert_int_eq(back.reserved, 0);
	ck_assert_int_eq(memcmp(back.records, h.records, n * sizeof(h.records[0])), 0);
}

START_TEST(test_round_trip_1)
{
	round_trip(1);
}
END_TEST

START_TEST(test_round_trip_2)
{
	round_trip(2);
}
END_TEST

START_TEST(test_round_trip_255)
{
	round_trip(255);
}
END_TEST

/* The first record of a table, byte by byte. */
START_TEST(test_exact_bytes)
{
	static const uint8_t want[32] = {
		0xfa, 0x70, 0x0e, 0x1f, 0x01, 0x00, 0x01, 0x00,
		0xb7, 0x00, 0x03, 0x02, 0x02, 0x01, 0x00, 0x00,
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x34, 0x12, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
	};
	fatelf_header h;
	uint8_t buf[32];

	fatelf_header_init(&h);
	h.nrecords = 1;
	h.records[0] = (fatelf_record){
		.target = { .machine = 183, .osabi = 3, .osabi_version = 2,
			    .word_size = 2, .byte_order = 1 },
		.offset = 0x10000, .size = UINT64_C(0x100001234),
	};
	ck_assert_int_eq(fatelf_header_encode(&h, buf, sizeof(buf)), 32);
	ck_assert_int_eq(memcmp(buf, want, sizeof(want)), 0);
	ck_assert(fatelf_is_fatelf(buf, 4));
	ck_assert(!fatelf_is_fatelf(buf, 3));
	ck_assert(!fatelf_is_elf(buf, 32));
	ck_assert(fatelf_is_elf("\177ELF", 4));
}
END_TEST

START_TEST(test_encode_enospc)
{
	uint8_t buf[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	fatelf_header h;

	fill(&h, 3);
	ck_assert_int_eq(fatelf_header_encode(&h, buf, FATELF_TABLE_SIZE(3) - 1), -ENOSPC);
	ck_assert_int_eq(fatelf_header_encode(&h, buf, 0), -ENOSPC);
	ck_assert_int_eq(fatelf_header_encode(&h, buf, FATELF_TABLE_SIZE(3)), FATELF_TABLE_SIZE(3));
	fill(&h, 255);
	ck_assert_int_eq(fatelf_header_encode(&h, buf, sizeof(buf) - 1), -ENOSPC);
	ck_assert_int_eq(fatelf_header_encode(&h, buf, sizeof(buf)), 6128);
}
END_TEST

static int decode(const uint8_t *buf, size_t len, fatelf_header *h, fatelf_diag *d)
{
	fatelf_diag_clear(d);
	return fatelf_header_decode(buf, len, h, d);
}

START_TEST(test_decode_errors)
{
	uint8_t buf[FATELF_TABLE_SIZE(2)];
	fatelf_header h, untouched;
	fatelf_diag d;

	fill(&h, 2);
	ck_assert_int_eq(fatelf_header_encode(&h, buf, sizeof(buf)), sizeof(buf));
	memset(&h, 0x5a, sizeof(h));
	untouched = h;

	ck_assert_int_eq(decode(buf, 7, &h, &d), -FATELF_E_SHORT);
	ck_assert_int_eq(d.code, -FATELF_E_SHORT);
	ck_assert_int_eq(decode(buf, 0, &h, &d), -FATELF_E_SHORT);
	ck_assert_int_eq(decode(buf, sizeof(buf) - 1, &h, &d), -FATELF_E_TABLE_TRUNCATED);
	ck_assert_int_eq(decode(buf, 8, &h, &d), -FATELF_E_TABLE_TRUNCATED);
	ck_assert_int_eq(memcmp(&h, &untouched, sizeof(h)), 0);

	buf[0] = 0x7f;
	ck_assert_int_eq(decode(buf, sizeof(buf), &h, &d), -FATELF_E_MAGIC);
	buf[0] = 0xfa;
	buf[4] = 2;
	ck_assert_int_eq(decode(buf, sizeof(buf), &h, &d), -FATELF_E_VERSION);
	buf[4] = 1;
	buf[5] = 1; /* version 0x0101: the high byte counts too */
	ck_assert_int_eq(decode(buf, sizeof(buf), &h, &d), -FATELF_E_VERSION);
	buf[5] = 0;
	buf[6] = 0;
	ck_assert_int_eq(decode(buf, sizeof(buf), &h, &d), -FATELF_E_NO_RECORDS);
	ck_assert_int_eq(memcmp(&h, &untouched, sizeof(h)), 0);
	buf[6] = 2;

	/* Reserved bytes are not decoding's business: kept as read. */
	buf[7] = 0x44;
	buf[8 + 24 + 6] = 0x55;
	buf[8 + 24 + 7] = 0x66;
	ck_assert_int_eq(decode(buf, sizeof(buf), &h, &d), 0);
	ck_assert_int_eq(h.reserved, 0x44);
	ck_assert_int_eq(h.records[1].reserved[0], 0x55);
	ck_assert_int_eq(h.records[1].reserved[1], 0x66);
	ck_assert_int_eq(h.records[0].reserved[0], 0);
}
END_TEST

START_TEST(test_error_names)
{
	ck_assert_str_eq(fatelf_error_name(-FATELF_E_ALIGN), "FATELF_E_ALIGN");
	ck_assert_str_eq(fatelf_error_name(-FATELF_E_SEGMENT), "FATELF_E_SEGMENT");
	ck_assert_str_eq(fatelf_error_name(-ENOENT), "ENOENT");
	ck_assert_str_eq(fatelf_error_name(-ENGINE_E_CONFLICT), "ENGINE_E_CONFLICT");
	/* One table for every code of the space, each with a name and a text. */
	for (int c = FATELF_E_BASE; c < FATELF_E_MAX; c++) {
		const char *name = fatelf_error_name(-c);

		bool engine = c >= ENGINE_E_CONFLICT && c <= ENGINE_E_DEPENDENCY_BROKEN;

		ck_assert_msg(strncmp(name, engine ? "ENGINE_E_" : "FATELF_E_", 9) == 0, "%d: %s", c, name);
		ck_assert(fatelf_strerror(-c)[0] != '\0');
	}
}
END_TEST

static Suite *format_suite(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_round_trip_1);
	tcase_add_test(tc, test_round_trip_2);
	tcase_add_test(tc, test_round_trip_255);
	tcase_add_test(tc, test_exact_bytes);
	tcase_add_test(tc, test_encode_enospc);
	tcase_add_test(tc, test_decode_errors);
	tcase_add_test(tc, test_error_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(format_suite());
}
