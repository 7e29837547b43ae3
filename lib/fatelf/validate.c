/*
 * Strict validation of a FatELF file: every rule of the format, each with
 * its own error code, checked in one fixed order (header, each record on
 * its own, records against each other, each record's ELF image, then
 * warnings) so that a file breaking several rules always gets the same
 * verdict. Only the record table, the ELF headers and the program header
 * tables are read: validating a 1 GiB file costs what a 1 MiB one does.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "fatelf.h"
#include "macro.h"

#define LIMIT_4GIB      UINT64_C(0xFFFFFFFF)

static int check_header(const fatelf_header *hdr, uint64_t file_size, fatelf_diag *d)
{
	const bool known = file_size != UINT64_MAX;

	if (known && file_size < FATELF_HEADER_SIZE)
		return fatelf_diag_set(d, -FATELF_E_SHORT, -1,
				       "file is %llu bytes, shorter than the %d-byte FatELF header",
				       (unsigned long long)file_size, FATELF_HEADER_SIZE);
	if (hdr->magic != FATELF_MAGIC)
		return fatelf_diag_set(d, -FATELF_E_MAGIC, -1,
				       "bad magic %02x %02x %02x %02x, expected fa 70 0e 1f",
				       hdr->magic & 0xff, (hdr->magic >> 8) & 0xff,
				       (hdr->magic >> 16) & 0xff, hdr->magic >> 24);
	if (hdr->version != FATELF_FORMAT_VERSION)
		return fatelf_diag_set(d, -FATELF_E_VERSION, -1,
				       "format version %u is not supported (only version 1)",
				       hdr->version);
	if (hdr->reserved != 0)
		return fatelf_diag_set(d, -FATELF_E_HDR_RESERVED, -1,
				       "header reserved byte is 0x%02x, must be 0", hdr->reserved);
	if (hdr->nrecords == 0)
		return fatelf_diag_set(d, -FATELF_E_NO_RECORDS, -1,
				       "record count is 0 (a FatELF file holds 1 to 255 records)");
	if (known && file_size < FATELF_TABLE_SIZE(hdr->nrecords))
		return fatelf_diag_set(d, -FATELF_E_TABLE_TRUNCATED, -1,
				       "record table of %u records needs %llu bytes, file has %llu",
				       hdr->nrecords,
				       (unsigned long long)FATELF_TABLE_SIZE(hdr->nrecords),
				       (unsigned long long)file_size);
	return 0;
}

static int check_record(const fatelf_header *hdr, unsigned i, uint64_t file_size, fatelf_diag *d)
{
	const fatelf_record *r = &hdr->records[i];
	const uint64_t table_end = FATELF_TABLE_SIZE(hdr->nrecords);
	char name[FATELF_TARGET_NAME_MAX];
	unsigned ehsize;
	uint64_t end;

	fatelf_target_format(&r->target, name);
	if (r->reserved[0] != 0 || r->reserved[1] != 0)
		return fatelf_diag_set(d, -FATELF_E_REC_RESERVED, (int)i,
				       "record %u (%s): reserved bytes are %02x %02x, must be 0",
				       i, name, r->reserved[0], r->reserved[1]);
	ehsize = fatelf_elf_ehdr_size(r->target.word_size);
	if (ehsize == 0)
		return fatelf_diag_set(d, -FATELF_E_WORD_SIZE, (int)i,
				       "record %u (%s): word size %u is not 1 (32-bit) or 2 (64-bit)",
				       i, name, r->target.word_size);
	if (r->target.byte_order != FATELF_DATA2LSB && r->target.byte_order != FATELF_DATA2MSB)
		return fatelf_diag_set(d, -FATELF_E_BYTE_ORDER, (int)i,
				       "record %u (%s): byte order %u is not 1 (little endian) or 2 "
				       "(big endian)", i, name, r->target.byte_order);
	if (r->size > UINT64_MAX - r->offset)
		return fatelf_diag_set(d, -FATELF_E_OVERFLOW, (int)i,
				       "record %u (%s): offset 0x%llx + size 0x%llx overflows 64 bits",
				       i, name, (unsigned long long)r->offset,
				       (unsigned long long)r->size);
	end = r->offset + r->size;
	if (file_size != UINT64_MAX && end > file_size)
		return fatelf_diag_set(d, -FATELF_E_OUTSIDE, (int)i,
				       "record %u (%s): bytes [0x%llx, 0x%llx) extend past the end of "
				       "the file (0x%llx bytes)", i, name,
				       (unsigned long long)r->offset, (unsigned long long)end,
				       (unsigned long long)file_size);
	if (r->size < ehsize)
		return fatelf_diag_set(d, -FATELF_E_TOO_SMALL, (int)i,
				       "record %u (%s): size %llu is smaller than the %u-byte ELF header "
				       "of its class", i, name, (unsigned long long)r->size, ehsize);
	if (r->offset < table_end)
		return fatelf_diag_set(d, -FATELF_E_OVERLAP_TABLE, (int)i,
				       "record %u (%s): bytes [0x%llx, 0x%llx) overlap the header table "
				       "[0, 0x%llx)", i, name, (unsigned long long)r->offset,
				       (unsigned long long)end, (unsigned long long)table_end);
	if (r->offset % FATELF_MIN_ALIGN != 0)
		return fatelf_diag_set(d, -FATELF_E_ALIGN, (int)i,
				       "record %u (%s): offset 0x%llx is not aligned to %u",
				       i, name, (unsigned long long)r->offset, FATELF_MIN_ALIGN);
	/* A 32-bit loader addresses the file with 32-bit offsets: the
	 * record's end must itself be a 32-bit value. */
	if (r->target.word_size == FATELF_CLASS32 && end > LIMIT_4GIB)
		return fatelf_diag_set(d, -FATELF_E_4GIB, (int)i,
				       "record %u (%s): 32-bit record ends at 0x%llx, beyond 0xffffffff",
				       i, name, (unsigned long long)end);
	return 0;
}

static int check_pairs(const fatelf_header *hdr, fatelf_diag *d)
{
	char a[FATELF_TARGET_NAME_MAX], b[FATELF_TARGET_NAME_MAX];

	/* At most 255 records: the quadratic scan is ~32k cheap comparisons. */
	for (unsigned j = 1; j < hdr->nrecords; j++) {
		const fatelf_record *rj = &hdr->records[j];

		for (unsigned i = 0; i < j; i++) {
			const fatelf_record *ri = &hdr->records[i];

			if (ri->offset < rj->offset + rj->size && rj->offset < ri->offset + ri->size) {
				fatelf_target_format(&ri->target, a);
				fatelf_target_format(&rj->target, b);
				return fatelf_diag_set(d, -FATELF_E_OVERLAP, (int)j,
						       "record %u (%s): bytes [0x%llx, 0x%llx) overlap record "
						       "%u (%s) at [0x%llx, 0x%llx)", j, b,
						       (unsigned long long)rj->offset,
						       (unsigned long long)(rj->offset + rj->size), i, a,
						       (unsigned long long)ri->offset,
						       (unsigned long long)(ri->offset + ri->size));
			}
		}
	}
	for (unsigned j = 1; j < hdr->nrecords; j++)
		for (unsigned i = 0; i < j; i++)
			if (fatelf_target_equal(&hdr->records[i].target, &hdr->records[j].target)) {
				fatelf_target_format(&hdr->records[j].target, b);
				return fatelf_diag_set(d, -FATELF_E_DUPLICATE, (int)j,
						       "record %u (%s): same target as record %u", j, b, i);
			}
	return 0;
}

int fatelf_validate_table(const fatelf_header *hdr, uint64_t file_size, fatelf_diag *d)
{
	int r = check_header(hdr, file_size, d);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < hdr->nrecords; i++) {
		r = check_record(hdr, i, file_size, d);
		if (r < 0)
			return r;
	}
	return check_pairs(hdr, d);
}

/* fatelf_elf_inspect names a record by index only ("record N: "): give
 * the message the record's target name too, like every other rule. */
int fatelf_record_check_elf(const fatelf_reader *src, uint64_t base, const fatelf_record *rec,
			    unsigned i, fatelf_elfinfo *ret, fatelf_diag *d)
{
	char name[FATELF_TARGET_NAME_MAX];
	fatelf_diag tmp;
	char pfx[32];
	const char *rule;
	int r;

	fatelf_target_format(&rec->target, name);
	fatelf_diag_clear(&tmp);
	r = fatelf_elf_inspect(src, base, rec->size, (int)i, ret, &tmp);
	if (r < 0) {
		/* inspect knows the index only; put the record's name in. */
		snprintf(pfx, sizeof(pfx), "record %u: ", i);
		rule = tmp.msg;
		if (strncmp(rule, pfx, strlen(pfx)) == 0)
			rule += strlen(pfx);
		return fatelf_diag_set(d, r, (int)i, "record %u (%s): %s", i, name, rule);
	}
	return fatelf_elf_match(&rec->target, &ret->target, (int)i, name, d);
}

static void warn(const fatelf_validate_opts *opts, int warning, int record, const char *msg)
{
	if (opts && opts->warn)
		opts->warn(opts->warn_ctx, warning, record, msg);
}

int fatelf_validate(const fatelf_reader *src, const fatelf_validate_opts *opts,
		    fatelf_header *ret, fatelf_elfinfo *ret_info, fatelf_diag *d)
{
	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	fatelf_elfinfo info[FATELF_MAX_RECORDS];
	fatelf_header hdr;
	uint64_t max_end = 0;
	size_t len;
	int r;

	/* The first 8 bytes, checked in validation's order (the reserved
	 * byte comes before the record count, unlike in decoding). */
	len = (size_t)MIN(src->size, (uint64_t)FATELF_HEADER_SIZE);
	r = fatelf_reader_read_at(src, table, len, 0);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "reading the FatELF header: %s", fatelf_strerror(r));
	fatelf_header_init(&hdr);
	if (len == FATELF_HEADER_SIZE) {
		hdr.magic = get_le32(table);
		hdr.version = get_le16(table + 4);
		hdr.nrecords = table[6];
		hdr.reserved = table[7];
	}
	r = check_header(&hdr, src->size, d);
	if (r < 0)
		return r;

	len = (size_t)FATELF_TABLE_SIZE(hdr.nrecords);
	r = fatelf_reader_read_at(src, table, len, 0);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "reading the record table: %s", fatelf_strerror(r));
	r = fatelf_header_decode(table, len, &hdr, d);
	if (r < 0)
		return r;
	r = fatelf_validate_table(&hdr, src->size, d);
	if (r < 0)
		return r;

	for (unsigned i = 0; i < hdr.nrecords; i++) {
		r = fatelf_record_check_elf(src, hdr.records[i].offset, &hdr.records[i], i, &info[i], d);
		if (r < 0)
			return r;
	}

	for (unsigned i = 0; i < hdr.nrecords; i++) {
		const fatelf_record *rec = &hdr.records[i];
		uint64_t a = info[i].max_align;

		max_end = MAX(max_end, rec->offset + rec->size);
		if (a > FATELF_MIN_ALIGN && (a & (a - 1)) == 0 && rec->offset % a != 0) {
			char name[FATELF_TARGET_NAME_MAX], msg[256];

			fatelf_target_format(&rec->target, name);
			snprintf(msg, sizeof(msg),
				 "record %u (%s): offset 0x%llx is aligned below its p_align 0x%llx",
				 i, name, (unsigned long long)rec->offset, (unsigned long long)a);
			warn(opts, FATELF_W_UNDER_ALIGNED, (int)i, msg);
		}
	}
	if (src->size > max_end) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%llu bytes after the last record are ignored",
			 (unsigned long long)(src->size - max_end));
		warn(opts, FATELF_W_TRAILING, -1, msg);
	}

	if (ret)
		*ret = hdr;
	if (ret_info)
		memcpy(ret_info, info, hdr.nrecords * sizeof(info[0]));
	return 0;
}

int fatelf_open_validated(const char *path, fatelf_header *ret_hdr,
			  fatelf_elfinfo *ret_info, const fatelf_validate_opts *opts,
			  fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	fatelf_reader src;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = fatelf_diag_set(d, -errno, -1, "cannot open: %s", strerror(errno));
		goto fail;
	}
	r = fatelf_reader_seekable_fd(&src, fd);
	if (r < 0) {
		fatelf_diag_set(d, r, -1, "cannot read: %s", strerror(-r));
		goto fail;
	}
	r = fatelf_validate(&src, opts, ret_hdr, ret_info, d);
	if (r == -FATELF_E_MAGIC) {
		uint8_t head[4];

		if (fatelf_reader_read_at(&src, head, sizeof(head), 0) == 0 &&
		    fatelf_is_elf(head, sizeof(head)))
			fatelf_diag_set(d, r, -1, "is a plain ELF file, not FatELF");
	}
	if (r < 0)
		goto fail;
	return TAKE_FD(fd);

fail:
	if (d)
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	return r;
}
