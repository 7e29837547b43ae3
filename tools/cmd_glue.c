/*
 * fatelf glue: builds one FatELF file from ELF files (and the records of
 * FatELF files), with each image aligned so that it can be mapped.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

const char cmd_glue_usage[] =
	"Usage: fatelf glue -o OUT [--align N] INPUT...\n"
	"\n"
	"Glue ELF files, and the records of FatELF files, into the FatELF file OUT.\n"
	"Records keep the order of the inputs (the order of preference). Each image\n"
	"is aligned to max(4096, its largest PT_LOAD p_align) unless --align is given.\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT   the FatELF file to write (replaced atomically)\n"
	"  -a, --align N      align every record to N bytes: a power of two >= 4096,\n"
	"                     decimal or 0x hex, with an optional K or M suffix\n"
	"  -h, --help         show this help\n";

/* Parses "65536", "0x10000", "64K", "2M". Returns 0 or -EINVAL. */
static int parse_align(const char *s, uint64_t *ret)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;
	int base = 10;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!isxdigit((unsigned char)s[0]))
			return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno != 0)
		return -EINVAL;
	if (*end == 'K' || *end == 'k') {
		mult = 1024;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		mult = 1024 * 1024;
		end++;
	}
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -EINVAL;
	v *= mult;
	if (v < FATELF_MIN_ALIGN || (v & (v - 1)) != 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

int cmd_glue(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "align", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	fatelf_glue_opts opts = { 0 };
	const char *out = NULL;
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:a:h", options, NULL)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'a':
			if (parse_align(optarg, &opts.align) < 0)
				return cmd_usage_error("glue",
						       "--align '%s' is not a power of two >= 4096",
						       optarg);
			break;
		case 'h':
			return cmd_help(cmd_glue_usage);
		default:
			return cmd_option_error("glue", c, argv);
		}
	}
	if (!out)
		return cmd_usage_error("glue", "missing -o OUT");
	if (optind >= argc)
		return cmd_usage_error("glue", "no input files");

	fatelf_diag_clear(&d);
	r = fatelf_glue(out, (const char *const *)argv + optind, (size_t)(argc - optind), &opts, &d);
	if (r < 0)
		return cmd_report(out, &d, r);
	return EXIT_OK;
}
