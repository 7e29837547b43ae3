/*
 * fatelf verify: answers, by exit status, whether a valid FatELF file has
 * a record for a target, so that scripts can ask before they extract.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

const char cmd_verify_usage[] =
	"Usage: fatelf verify FILE TARGET\n"
	"\n"
	"Exit 0 when FILE is a valid FatELF file with at least one record that\n"
	"TARGET matches (\"host\": a record this machine would run),\n"
	"1 when it has none (\"FILE: no record matches TARGET\" on stderr) or FILE is\n"
	"not valid. Prints nothing on success.\n"
	"\n"
	"Options:\n"
	"  -h, --help   show this help\n";

/* 0 when some record of path matches target, else a negative code. */
static int verify_file(const char *path, const char *target, fatelf_diag *d)
{
	static fatelf_header hdr;
	int r;

	r = cmd_read_header(path, &hdr, d);
	if (r < 0)
		return r;
	fatelf_diag_clear(d);
	if (strcmp(target, "host") == 0) {
		r = cmd_host_record(&hdr, d);
		return r < 0 ? r : 0;
	}
	return cmd_header_match(&hdr, target, d);
}

int cmd_verify(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'h':
			return cmd_help(cmd_verify_usage);
		default:
			return cmd_option_error("verify", c, argv);
		}
	}
	if (argc - optind != 2)
		return cmd_usage_error("verify", "expected FILE and TARGET");

	r = verify_file(argv[optind], argv[optind + 1], &d);
	if (r < 0)
		return cmd_report(argv[optind], &d, r);
	return EXIT_OK;
}
