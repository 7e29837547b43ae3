/*
 * The FatELF header and record table as bytes: decode and encode. Every
 * field is little endian; doc/design.md and the FatELF v1 format describe the layout.
 */
#include <string.h>

#include "fatelf.h"
#include "macro.h"

void fatelf_header_init(fatelf_header *hdr)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = FATELF_MAGIC;
	hdr->version = FATELF_FORMAT_VERSION;
}

bool fatelf_is_fatelf(const void *buf, size_t len)
{
	return len >= 4 && get_le32(buf) == FATELF_MAGIC;
}

bool fatelf_is_elf(const void *buf, size_t len)
{
	return len >= 4 && memcmp(buf, "\177ELF", 4) == 0;
}

int fatelf_header_decode(const void *buf, size_t len, fatelf_header *ret, fatelf_diag *d)
{
	const uint8_t *p = buf;
	uint8_t n;

	if (len < FATELF_HEADER_SIZE)
		return fatelf_diag_set(d, -FATELF_E_SHORT, -1,
				       "file is %zu bytes, shorter than the %d-byte FatELF header",
				       len, FATELF_HEADER_SIZE);
	if (get_le32(p) != FATELF_MAGIC)
		return fatelf_diag_set(d, -FATELF_E_MAGIC, -1,
				       "bad magic %02x %02x %02x %02x, expected fa 70 0e 1f",
				       p[0], p[1], p[2], p[3]);
	if (get_le16(p + 4) != FATELF_FORMAT_VERSION)
		return fatelf_diag_set(d, -FATELF_E_VERSION, -1,
				       "format version %u is not supported (only version 1)",
				       get_le16(p + 4));
	n = p[6];
	if (n == 0)
		return fatelf_diag_set(d, -FATELF_E_NO_RECORDS, -1,
				       "record count is 0 (a FatELF file holds 1 to 255 records)");
	if (len < FATELF_TABLE_SIZE(n))
		return fatelf_diag_set(d, -FATELF_E_TABLE_TRUNCATED, -1,
				       "record table of %u records needs %llu bytes, file has %zu",
				       n, (unsigned long long)FATELF_TABLE_SIZE(n), len);

	memset(ret, 0, sizeof(*ret));
	ret->magic = FATELF_MAGIC;
	ret->version = FATELF_FORMAT_VERSION;
	ret->nrecords = n;
	ret->reserved = p[7];
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *r = p + FATELF_HEADER_SIZE + (size_t)i * FATELF_RECORD_SIZE;
		fatelf_record *rec = &ret->records[i];

		rec->target.machine = get_le16(r);
		rec->target.osabi = r[2];
		rec->target.osabi_version = r[3];
		rec->target.word_size = r[4];
		rec->target.byte_order = r[5];
		rec->reserved[0] = r[6];
		rec->reserved[1] = r[7];
		rec->offset = get_le64(r + 8);
		rec->size = get_le64(r + 16);
	}
	return 0;
}

ssize_t fatelf_header_encode(const fatelf_header *hdr, void *buf, size_t cap)
{
	uint8_t *p = buf;
	uint64_t need = FATELF_TABLE_SIZE(hdr->nrecords);

	if (cap < need)
		return -ENOSPC;
	put_le32(p, hdr->magic);
	put_le16(p + 4, hdr->version);
	p[6] = hdr->nrecords;
	p[7] = hdr->reserved;
	for (unsigned i = 0; i < hdr->nrecords; i++) {
		uint8_t *r = p + FATELF_HEADER_SIZE + (size_t)i * FATELF_RECORD_SIZE;
		const fatelf_record *rec = &hdr->records[i];

		put_le16(r, rec->target.machine);
		r[2] = rec->target.osabi;
		r[3] = rec->target.osabi_version;
		r[4] = rec->target.word_size;
		r[5] = rec->target.byte_order;
		r[6] = rec->reserved[0];
		r[7] = rec->reserved[1];
		put_le64(r + 8, rec->offset);
		put_le64(r + 16, rec->size);
	}
	return (ssize_t)need;
}
