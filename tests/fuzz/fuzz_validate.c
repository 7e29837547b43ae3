/*
 * fuzz_validate: libFuzzer target for every parser that reads untrusted
 * FatELF bytes on the seekable path: the header codec, the full validator
 * (records, ELF headers, program header tables), the ELF inspector on a
 * plain ELF, and the target-name parser.
 *
 * Besides "no crash, no sanitizer report" it checks properties that must
 * hold for any input, and aborts (a libFuzzer crash) when one does not:
 *   - a failure fills the diagnostic with the returned code and a message;
 *   - decode then encode gives back the input's table bytes exactly, and
 *     decoding that again gives the same header;
 *   - a file that validates also decodes, with the same header;
 *   - every record's full name parses back to a pattern that matches that
 *     record, and in a valid file its short name finds that record alone.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelf.h"
#include "fuzz.h"

static void diag_check(int r, const fatelf_diag *d)
{
	fuzz_assert(r < 0);
	fuzz_assert(d->code == r);
	fuzz_assert(memchr(d->msg, '\0', sizeof(d->msg)) != NULL);
	fuzz_assert(d->msg[0] != '\0');
	fuzz_assert(fatelf_strerror(r) != NULL);
	fuzz_assert(fatelf_error_name(r) != NULL);
}

static void warn_count(void *ctx, int warning, int record, const char *msg)
{
	unsigned *n = ctx;

	fuzz_assert(warning == FATELF_W_UNDER_ALIGNED || warning == FATELF_W_TRAILING);
	fuzz_assert(msg != NULL && msg[0] != '\0');
	(*n)++;
}

static bool header_equal(const fatelf_header *a, const fatelf_header *b)
{
	if (a->magic != b->magic || a->version != b->version ||
	    a->nrecords != b->nrecords || a->reserved != b->reserved)
		return false;
	for (unsigned i = 0; i < a->nrecords; i++) {
		const fatelf_record *x = &a->records[i], *y = &b->records[i];

		if (!fatelf_target_equal(&x->target, &y->target) ||
		    memcmp(x->reserved, y->reserved, sizeof(x->reserved)) != 0 ||
		    x->offset != y->offset || x->size != y->size)
			return false;
	}
	return true;
}

static void fuzz_codec(const uint8_t *data, size_t size, fatelf_header *hdr, bool *decoded)
{
	static uint8_t buf[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	static fatelf_header again;
	fatelf_diag d;
	ssize_t n;
	int r;

	fatelf_diag_clear(&d);
	r = fatelf_header_decode(data, size, hdr, &d);
	*decoded = r == 0;
	if (r < 0) {
		diag_check(r, &d);
		return;
	}
	fuzz_assert(hdr->nrecords >= 1);
	fuzz_assert(size >= FATELF_TABLE_SIZE(hdr->nrecords));

	n = fatelf_header_encode(hdr, buf, FATELF_TABLE_SIZE(hdr->nrecords) - 1);
	fuzz_assert(n == -ENOSPC);
	n = fatelf_header_encode(hdr, buf, sizeof(buf));
	fuzz_assert(n == (ssize_t)FATELF_TABLE_SIZE(hdr->nrecords));
	fuzz_assert(memcmp(buf, data, (size_t)n) == 0);

	fatelf_diag_clear(&d);
	fuzz_assert(fatelf_header_decode(buf, (size_t)n, &again, &d) == 0);
	fuzz_assert(header_equal(hdr, &again));
}

static void fuzz_names(const fatelf_header *hdr, bool valid)
{
	char full[FATELF_TARGET_NAME_MAX], shortname[FATELF_TARGET_NAME_MAX];

	for (unsigned i = 0; i < hdr->nrecords; i++) {
		const fatelf_target *t = &hdr->records[i].target;
		fatelf_pattern p;
		fatelf_diag d;
		int r;

		fatelf_target_format(t, full);
		fuzz_assert(memchr(full, '\0', sizeof(full)) != NULL);
		fatelf_diag_clear(&d);
		r = fatelf_pattern_parse(full, &p, &d);
		if (r < 0) {
			fprintf(stderr, "full name \"%s\" does not parse: %s\n", full, d.msg);
			abort();
		}
		fuzz_assert(fatelf_pattern_match(&p, t, (int)i));
		(void)fatelf_target_arch(t);
		(void)fatelf_target_debian_arch(t);
		(void)fatelf_machine_name(t->machine);
		(void)fatelf_machine_desc(t->machine);
		(void)fatelf_osabi_name(t->osabi);

		fatelf_target_short_name(hdr, (int)i, shortname);
		fuzz_assert(memchr(shortname, '\0', sizeof(shortname)) != NULL);
		if (valid) {
			/* targets are unique in a valid file, so both names pick
			 * exactly this record */
			fatelf_diag_clear(&d);
			r = fatelf_target_find(shortname, hdr, &d);
			if (r != (int)i) {
				fprintf(stderr, "short name \"%s\" of record %u finds %d: %s\n",
					shortname, i, r, d.msg);
				abort();
			}
			fatelf_diag_clear(&d);
			fuzz_assert(fatelf_target_find(full, hdr, &d) == (int)i);
		}
	}
}

/* The input as a target name: the parser sees arbitrary strings too. */
static void fuzz_pattern_text(const uint8_t *data, size_t size)
{
	char name[256];
	fatelf_pattern p;
	fatelf_diag d;
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	int r;

	memcpy(name, data, n);
	name[n] = '\0';
	fatelf_diag_clear(&d);
	r = fatelf_pattern_parse(name, &p, &d);
	if (r < 0)
		diag_check(r, &d);
	fatelf_diag_clear(&d);
	r = fatelf_machine_from_name(name, &(uint16_t){0});
	(void)r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fatelf_header hdr, decoded_hdr;
	static fatelf_elfinfo info[FATELF_MAX_RECORDS];
	fatelf_validate_opts opts;
	fatelf_reader src;
	fatelf_diag d;
	unsigned warnings = 0;
	bool decoded;
	int r;

	fuzz_codec(data, size, &decoded_hdr, &decoded);

	fatelf_reader_seekable_mem(&src, data, size);
	memset(&opts, 0, sizeof(opts));
	opts.warn = warn_count;
	opts.warn_ctx = &warnings;
	fatelf_diag_clear(&d);
	r = fatelf_validate(&src, &opts, &hdr, info, &d);
	if (r < 0) {
		diag_check(r, &d);
	} else {
		fuzz_assert(r == 0);
		fuzz_assert(decoded);
		fuzz_assert(header_equal(&hdr, &decoded_hdr));
		fatelf_diag_clear(&d);
		fuzz_assert(fatelf_validate_table(&hdr, size, &d) == 0);
		for (unsigned i = 0; i < hdr.nrecords; i++)
			fuzz_assert(fatelf_target_equal(&info[i].target, &hdr.records[i].target));
	}
	if (decoded)
		fuzz_names(&decoded_hdr, r == 0);

	if (fatelf_is_elf(data, size)) {
		fatelf_elfinfo ei;

		fatelf_diag_clear(&d);
		r = fatelf_elf_inspect(&src, 0, size, -1, &ei, &d);
		if (r < 0)
			diag_check(r, &d);
	}

	fuzz_pattern_text(data, size);
	return 0;
}
