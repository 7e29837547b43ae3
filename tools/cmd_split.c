/*
 * fatelf split: writes every record of a FatELF file out as its own ELF
 * file, named PREFIX-<short name>, and prints each path it wrote.
 */
#include <getopt.h>
#include <stdio.h>

#include "cmd.h"

const char cmd_split_usage[] =
	"Usage: fatelf split [-p PREFIX] FILE\n"
	"\n"
	"Write each record of FILE to its own ELF file, PREFIX-NAME, where NAME is\n"
	"the record's short target name (as \"fatelf info\" shows it). PREFIX\n"
	"defaults to FILE, so the files land beside it. Prints each path written.\n"
	"\n"
	"Options:\n"
	"  -p, --prefix PREFIX   the path prefix of the files to write\n"
	"  -h, --help            show this help\n";

static void print_path(void *ctx, int index, const char *path)
{
	puts(path);
}

int cmd_split(int argc, char **argv)
{
	static const struct option options[] = {
		{ "prefix", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *prefix = NULL;
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:h", options, NULL)) >= 0) {
		switch (c) {
		case 'p':
			prefix = optarg;
			break;
		case 'h':
			return cmd_help(cmd_split_usage);
		default:
			return cmd_option_error("split", c, argv);
		}
	}
	if (argc - optind != 1)
		return cmd_usage_error("split", "expected one FILE");

	fatelf_diag_clear(&d);
	r = fatelf_split(argv[optind], prefix, print_path, NULL, &d);
	fflush(stdout);
	if (r < 0)
		return cmd_report(argv[optind], &d, r);
	return EXIT_OK;
}
