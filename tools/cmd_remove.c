/*
 * fatelf remove: writes a FatELF file without the records that the given
 * targets name. The result stays a FatELF file even with one record left;
 * removing every record is an error.
 */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cmd.h"

const char cmd_remove_usage[] =
	"Usage: fatelf remove -o OUT FILE TARGET...\n"
	"\n"
	"Write FILE to OUT without the records the TARGETs name. Each TARGET must\n"
	"name exactly one record; at least one record must remain. OUT stays a\n"
	"FatELF file (use \"fatelf thin --elf\" or \"extract\" for a plain ELF) and\n"
	"keeps FILE's mode. OUT may be FILE: it is replaced atomically.\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT   the FatELF file to write\n"
	"  -h, --help         show this help\n";

int cmd_remove(int argc, char **argv)
{
	static fatelf_header hdr;
	const char *out = NULL, *in;
	fatelf_keepset keep;
	fatelf_diag d;
	int r;

	r = cmd_parse_output(argc, argv, "remove", cmd_remove_usage, &out);
	if (r <= 0)
		return cmd_exit_code(r);
	if (argc - optind < 2)
		return cmd_usage_error("remove", "expected FILE and at least one TARGET");
	in = argv[optind];

	r = cmd_read_header(in, &hdr, &d);
	if (r < 0)
		return cmd_report(in, &d, r);

	/* Keep every record, then drop the one each target names. */
	fatelf_keep_clear(&keep);
	for (unsigned i = 0; i < hdr.nrecords; i++)
		fatelf_keep_add(&keep, i);
	for (int i = optind + 1; i < argc; i++) {
		fatelf_keepset drop;

		fatelf_diag_clear(&d);
		r = fatelf_target_find(argv[i], &hdr, &d);
		if (r < 0)
			return cmd_report(in, &d, r);
		/* fatelf_keepset has no "remove": rebuild it without index r. */
		fatelf_keep_clear(&drop);
		for (unsigned k = 0; k < hdr.nrecords; k++)
			if (k != (unsigned)r && fatelf_keep_has(&keep, k))
				fatelf_keep_add(&drop, k);
		keep = drop;
	}
	if (fatelf_keep_count(&keep) == 0) {
		fatelf_diag_set(&d, -FATELF_E_EMPTY_KEEP, -1,
				"removing every record would leave an empty file");
		return cmd_report(in, &d, -FATELF_E_EMPTY_KEEP);
	}

	fatelf_diag_clear(&d);
	r = fatelf_thin(out, in, &keep, FATELF_FORM_FAT, &d);
	if (r < 0)
		return cmd_report(out, &d, r);
	return EXIT_OK;
}
