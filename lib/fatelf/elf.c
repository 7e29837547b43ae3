/*
 * ELF facts: a bounds-checked reader for the ELF header and program header
 * table of an untrusted image, and the comparison of an image's target
 * with a FatELF record's. It reads only the header and the program header
 * table, never the segments, so its cost does not depend on the image size.
 * Every offset and size in the image is checked against the image's own
 * extent, with overflow checks, before it is used.
 */
#include <stdio.h>
#include <string.h>

#include "fatelf.h"
#include "macro.h"

#define EHDR32_SIZE     52u
#define EHDR64_SIZE     64u
#define PHDR32_SIZE     32u
#define PHDR64_SIZE     56u
#define PN_XNUM         0xffffu
#define PT_LOAD         1u
#define PT_INTERP       3u
#define EV_CURRENT      1u

/* Program headers are read in batches this big: the table itself may be
 * nearly 3.6 MiB (65534 entries of 56 bytes), and need not be held. */
#define PH_BATCH        64u

unsigned fatelf_elf_ehdr_size(uint8_t word_size)
{
	switch (word_size) {
	case FATELF_CLASS32:
		return EHDR32_SIZE;
	case FATELF_CLASS64:
		return EHDR64_SIZE;
	default:
		return 0;
	}
}

/* "record N: " when the image is a record, "" for a plain ELF file. */
static const char *record_prefix(int record, const char *recname, char *buf, size_t len)
{
	if (record < 0)
		buf[0] = '\0';
	else if (recname && *recname)
		snprintf(buf, len, "record %d (%s): ", record, recname);
	else
		snprintf(buf, len, "record %d: ", record);
	return buf;
}

#define PREFIX_MAX (FATELF_TARGET_NAME_MAX + 32)

static int inspect_phdrs(const fatelf_reader *src, uint64_t base, uint64_t size, int record,
			 bool is64, int msb, uint64_t phoff, uint16_t phnum, uint64_t *ret_max_align,
			 bool *ret_has_interp, fatelf_diag *d)
{
	bool has_interp = false;
	const unsigned entsize = is64 ? PHDR64_SIZE : PHDR32_SIZE;
	uint8_t buf[PH_BATCH * PHDR64_SIZE];
	uint64_t max_align = 0;
	char pfx[PREFIX_MAX];

	record_prefix(record, NULL, pfx, sizeof(pfx));
	for (unsigned first = 0; first < phnum; first += PH_BATCH) {
		unsigned n = MIN(PH_BATCH, (unsigned)phnum - first);
		int r = fatelf_reader_read_at(src, buf, (size_t)n * entsize,
					   base + phoff + (uint64_t)first * entsize);
		if (r < 0)
			return fatelf_diag_set(d, r, record, "%sreading the program header table: %s",
					       pfx, fatelf_strerror(r));

		for (unsigned k = 0; k < n; k++) {
			const uint8_t *ph = buf + (size_t)k * entsize;
			uint64_t off, filesz, align;

			if (get_e32(ph, msb) == PT_INTERP)
				has_interp = true;
			if (get_e32(ph, msb) != PT_LOAD)
				continue;
			if (is64) {
				off = get_e64(ph + 8, msb);
				filesz = get_e64(ph + 32, msb);
				align = get_e64(ph + 48, msb);
			} else {
				off = get_e32(ph + 4, msb);
				filesz = get_e32(ph + 16, msb);
				align = get_e32(ph + 28, msb);
			}
			if (off > size || filesz > size - off)
				return fatelf_diag_set(d, -FATELF_E_SEGMENT, record,
						       "%sPT_LOAD segment (program header %u) covers file bytes "
						       "[0x%llx, 0x%llx + 0x%llx), outside the image's 0x%llx bytes",
						       pfx, first + k, (unsigned long long)off,
						       (unsigned long long)off, (unsigned long long)filesz,
						       (unsigned long long)size);
			max_align = MAX(max_align, align);
		}
	}
	*ret_max_align = max_align;
	*ret_has_interp = has_interp;
	return 0;
}

int fatelf_elf_inspect(const fatelf_reader *src, uint64_t base, uint64_t size,
		       int record, fatelf_elfinfo *ret, fatelf_diag *d)
{
	uint8_t e[EHDR64_SIZE] = { 0 };
	size_t have = (size_t)MIN(size, (uint64_t)sizeof(e));
	char pfx[PREFIX_MAX];
	fatelf_elfinfo info = { 0 };
	unsigned ehsize;
	uint64_t phoff;
	uint16_t phentsize;
	bool is64;
	int msb, r;

	record_prefix(record, NULL, pfx, sizeof(pfx));
	r = fatelf_reader_read_at(src, e, have, base);
	if (r < 0)
		return fatelf_diag_set(d, r, record, "%sreading the ELF header: %s", pfx,
				       fatelf_strerror(r));

	/* A short image that starts like an ELF is too small; anything else is
	 * simply not an ELF image. */
	if (have == 0 || memcmp(e, "\177ELF", MIN(have, (size_t)4)) != 0)
		return fatelf_diag_set(d, -FATELF_E_ELF_MAGIC, record,
				       "%sno ELF magic: the image starts with %02x %02x %02x %02x, "
				       "expected 7f 45 4c 46", pfx, e[0], e[1], e[2], e[3]);
	if (have < 16)
		return fatelf_diag_set(d, -FATELF_E_TOO_SMALL, record,
				       "%sthe image is %llu bytes, too small for an ELF header",
				       pfx, (unsigned long long)size);

	ehsize = fatelf_elf_ehdr_size(e[4]);
	if (ehsize == 0)
		return fatelf_diag_set(d, -FATELF_E_ELF_CLASS, record,
				       "%sEI_CLASS is %u, not 1 (32-bit) or 2 (64-bit)", pfx, e[4]);
	if (e[5] != FATELF_DATA2LSB && e[5] != FATELF_DATA2MSB)
		return fatelf_diag_set(d, -FATELF_E_ELF_DATA, record,
				       "%sEI_DATA is %u, not 1 (little endian) or 2 (big endian)",
				       pfx, e[5]);
	if (size < ehsize)
		return fatelf_diag_set(d, -FATELF_E_TOO_SMALL, record,
				       "%sthe image is %llu bytes, smaller than the %u-byte ELF header "
				       "of its class", pfx, (unsigned long long)size, ehsize);

	is64 = ehsize == EHDR64_SIZE;
	msb = e[5] == FATELF_DATA2MSB;
	if (e[6] != EV_CURRENT)
		return fatelf_diag_set(d, -FATELF_E_ELF_VERSION, record,
				       "%sEI_VERSION is %u, not 1", pfx, e[6]);
	if (get_e32(e + 20, msb) != EV_CURRENT)
		return fatelf_diag_set(d, -FATELF_E_ELF_VERSION, record,
				       "%se_version is %u, not 1", pfx, get_e32(e + 20, msb));

	info.target.word_size = e[4];
	info.target.byte_order = e[5];
	info.target.osabi = e[7];
	info.target.osabi_version = e[8];
	info.type = get_e16(e + 16, msb);
	info.target.machine = get_e16(e + 18, msb);
	if (is64) {
		info.entry = get_e64(e + 24, msb);
		phoff = get_e64(e + 32, msb);
	} else {
		info.entry = get_e32(e + 24, msb);
		phoff = get_e32(e + 28, msb);
	}
	/* e_ehsize, e_phentsize, e_phnum sit at the same place after the
	 * three class-sized words. */
	const uint8_t *tail = e + (is64 ? 52 : 40);
	if (get_e16(tail, msb) != ehsize)
		return fatelf_diag_set(d, -FATELF_E_ELF_EHSIZE, record,
				       "%se_ehsize is %u, expected %u for ELFCLASS%s", pfx,
				       get_e16(tail, msb), ehsize, is64 ? "64" : "32");
	phentsize = get_e16(tail + 2, msb);
	info.phnum = get_e16(tail + 4, msb);

	if (info.phnum > 0) {
		const unsigned want = is64 ? PHDR64_SIZE : PHDR32_SIZE;
		uint64_t tabsize;

		if (phentsize != want)
			return fatelf_diag_set(d, -FATELF_E_PH_ENTSIZE, record,
					       "%se_phentsize is %u, expected %u for ELFCLASS%s", pfx,
					       phentsize, want, is64 ? "64" : "32");
		if (info.phnum == PN_XNUM)
			return fatelf_diag_set(d, -FATELF_E_PH_TABLE, record,
					       "%sextended program header count (PN_XNUM) is not supported",
					       pfx);
		tabsize = (uint64_t)info.phnum * want;
		if (phoff > size || tabsize > size - phoff)
			return fatelf_diag_set(d, -FATELF_E_PH_TABLE, record,
					       "%sprogram header table [0x%llx, 0x%llx + 0x%llx) lies outside "
					       "the image's 0x%llx bytes", pfx, (unsigned long long)phoff,
					       (unsigned long long)phoff, (unsigned long long)tabsize,
					       (unsigned long long)size);
		r = inspect_phdrs(src, base, size, record, is64, msb, phoff, info.phnum,
				  &info.max_align, &info.has_interp, d);
		if (r < 0)
			return r;
	}

	if (ret)
		*ret = info;
	return 0;
}

static const char *class_name(uint8_t c)
{
	return c == FATELF_CLASS32 ? "32bits" : c == FATELF_CLASS64 ? "64bits" : "invalid";
}

static const char *data_name(uint8_t c)
{
	return c == FATELF_DATA2LSB ? "le" : c == FATELF_DATA2MSB ? "be" : "invalid";
}

/* "62 (x86_64)", or the bare number for a machine without a name. */
static const char *machine_str(uint16_t m, char *buf, size_t len)
{
	const char *n = fatelf_machine_name(m);

	if (n)
		snprintf(buf, len, "%u (%s)", m, n);
	else
		snprintf(buf, len, "%u", m);
	return buf;
}

static const char *osabi_str(uint8_t o, char *buf, size_t len)
{
	const char *n = fatelf_osabi_name(o);

	if (n)
		snprintf(buf, len, "%u (%s)", o, n);
	else
		snprintf(buf, len, "%u", o);
	return buf;
}

int fatelf_elf_match(const fatelf_target *rec, const fatelf_target *elf,
		     int record, const char *recname, fatelf_diag *d)
{
	char pfx[PREFIX_MAX], a[64], b[64];

	record_prefix(record, recname, pfx, sizeof(pfx));
	if (rec->word_size != elf->word_size)
		return fatelf_diag_set(d, -FATELF_E_ELF_CLASS, record,
				       "%sELF header says class %u (%s), record says %u (%s)", pfx,
				       elf->word_size, class_name(elf->word_size), rec->word_size,
				       class_name(rec->word_size));
	if (rec->byte_order != elf->byte_order)
		return fatelf_diag_set(d, -FATELF_E_ELF_DATA, record,
				       "%sELF header says byte order %u (%s), record says %u (%s)", pfx,
				       elf->byte_order, data_name(elf->byte_order), rec->byte_order,
				       data_name(rec->byte_order));
	if (rec->machine != elf->machine)
		return fatelf_diag_set(d, -FATELF_E_ELF_MACHINE, record,
				       "%sELF header says machine %s, record says %s", pfx,
				       machine_str(elf->machine, a, sizeof(a)),
				       machine_str(rec->machine, b, sizeof(b)));
	if (rec->osabi != elf->osabi)
		return fatelf_diag_set(d, -FATELF_E_ELF_OSABI, record,
				       "%sELF header says osabi %s, record says %s", pfx,
				       osabi_str(elf->osabi, a, sizeof(a)),
				       osabi_str(rec->osabi, b, sizeof(b)));
	if (rec->osabi_version != elf->osabi_version)
		return fatelf_diag_set(d, -FATELF_E_ELF_ABIVERSION, record,
				       "%sELF header says ABI version %u, record says %u", pfx,
				       elf->osabi_version, rec->osabi_version);
	return 0;
}
