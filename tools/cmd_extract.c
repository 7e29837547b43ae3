/*
 * fatelf extract: writes the one record a target names out as a plain ELF
 * file. The target "host" names the record this machine would run.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

const char cmd_extract_usage[] =
	"Usage: fatelf extract -o OUT FILE TARGET\n"
	"\n"
	"Write the record of FILE that TARGET names to OUT as a plain ELF file.\n"
	"TARGET is a target name (see fatelf(1)): for example x86_64, aarch64,\n"
	"i386:32bits:le, arm64, x86_64-linux-gnu or record1; or \"host\" for the\n"
	"record this machine would run. It must match exactly one record.\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT   the ELF file to write (replaced atomically)\n"
	"  -h, --help         show this help\n";

int cmd_resolve_target(const char *in, const char *target, char buf[32], const char **ret,
		       fatelf_diag *d)
{
	static fatelf_header hdr;
	int r;

	if (strcmp(target, "host") != 0) {
		*ret = target;
		return 0;
	}
	r = cmd_read_header(in, &hdr, d);
	if (r < 0)
		return r;
	r = cmd_host_record(&hdr, d);
	if (r < 0)
		return r;
	snprintf(buf, 32, "record%d", r);
	*ret = buf;
	return 0;
}

int cmd_extract(int argc, char **argv)
{
	const char *out = NULL, *in, *target;
	char buf[32];
	fatelf_diag d;
	int r;

	r = cmd_parse_output(argc, argv, "extract", cmd_extract_usage, &out);
	if (r <= 0)
		return cmd_exit_code(r);
	if (argc - optind != 2)
		return cmd_usage_error("extract", "expected FILE and TARGET");
	in = argv[optind];

	fatelf_diag_clear(&d);
	r = cmd_resolve_target(in, argv[optind + 1], buf, &target, &d);
	if (r >= 0) {
		fatelf_diag_clear(&d);
		r = fatelf_extract(out, in, target, &d);
	}
	if (r < 0)
		return cmd_report(in, &d, r);
	return EXIT_OK;
}
