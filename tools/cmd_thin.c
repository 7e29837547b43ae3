/*
 * fatelf thin: keeps only the records a machine needs (named targets, the
 * record this host would run, or every record it can run), as a plain ELF
 * or a FatELF file, in place by default, and says how many bytes it saved.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

const char cmd_thin_usage[] =
	"Usage: fatelf thin [-o OUT] [--elf|--fat] [--host|--compatible] FILE [TARGET...]\n"
	"\n"
	"Keep only some records of the FatELF FILE: those the TARGETs name (each must\n"
	"match at least one record); else, with --host (the default), the record\n"
	"this machine would run; or, with --compatible, every record it can run.\n"
	"One record kept gives a plain ELF file, several a FatELF file, unless\n"
	"--elf or --fat says otherwise. Without -o, FILE itself is replaced\n"
	"atomically. Prints the sizes before and after.\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT   write OUT instead of replacing FILE\n"
	"      --elf          write a plain ELF file (exactly one record kept)\n"
	"      --fat          write a FatELF file, even with one record kept\n"
	"      --host         keep the record this machine would run (default)\n"
	"      --compatible   keep every record this machine can run\n"
	"  -h, --help         show this help\n";

enum { OPT_ELF = 0x100, OPT_FAT, OPT_HOST, OPT_COMPATIBLE };

static int thin_keepset(const char *in, char **targets, int ntargets, bool compatible,
			fatelf_keepset *ret, fatelf_diag *d)
{
	static fatelf_header hdr;
	fatelf_host host;
	int r;

	r = cmd_read_header(in, &hdr, d);
	if (r < 0)
		return r;
	fatelf_diag_clear(d);
	if (ntargets > 0)
		return fatelf_keep_from_names(&hdr, (const char *const *)targets, (size_t)ntargets,
					      ret, d);
	if (compatible) {
		r = fatelf_host_detect(&host);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "cannot detect this machine's targets");
		return fatelf_keep_from_host(&hdr, &host, ret, d);
	}
	r = cmd_host_record(&hdr, d);
	if (r < 0)
		return r;
	fatelf_keep_clear(ret);
	fatelf_keep_add(ret, (unsigned)r);
	return 0;
}

static int file_size(const char *path, uint64_t *ret, fatelf_diag *d)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int r = -errno;

		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, r, -1, "cannot stat: %s", fatelf_strerror(r));
	}
	*ret = (uint64_t)st.st_size;
	return 0;
}

int cmd_thin(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "elf", no_argument, NULL, OPT_ELF },
		{ "fat", no_argument, NULL, OPT_FAT },
		{ "host", no_argument, NULL, OPT_HOST },
		{ "compatible", no_argument, NULL, OPT_COMPATIBLE },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *out = NULL, *in;
	int form = FATELF_FORM_AUTO;
	bool host = false, compatible = false;
	uint64_t before, after;
	fatelf_keepset keep;
	char b1[32], b2[32];
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case OPT_ELF:
		case OPT_FAT:
			if (form != FATELF_FORM_AUTO)
				return cmd_usage_error("thin", "--elf and --fat exclude each other");
			form = c == OPT_ELF ? FATELF_FORM_ELF : FATELF_FORM_FAT;
			break;
		case OPT_HOST:
			host = true;
			break;
		case OPT_COMPATIBLE:
			compatible = true;
			break;
		case 'h':
			return cmd_help(cmd_thin_usage);
		default:
			return cmd_option_error("thin", c, argv);
		}
	}
	if (host && compatible)
		return cmd_usage_error("thin", "--host and --compatible exclude each other");
	if (optind >= argc)
		return cmd_usage_error("thin", "no input file");
	if (argc - optind > 1 && (host || compatible))
		return cmd_usage_error("thin", "TARGETs and --%s exclude each other",
				       host ? "host" : "compatible");
	in = argv[optind];
	if (!out)
		out = in;

	fatelf_diag_clear(&d);
	r = file_size(in, &before, &d);
	if (r >= 0)
		r = thin_keepset(in, argv + optind + 1, argc - optind - 1, compatible, &keep, &d);
	if (r < 0)
		return cmd_report(in, &d, r);

	fatelf_diag_clear(&d);
	r = fatelf_thin(out, in, &keep, form, &d);
	if (r < 0)
		return cmd_report(out, &d, r);

	fatelf_diag_clear(&d);
	r = file_size(out, &after, &d);
	if (r < 0)
		return cmd_report(out, &d, r);
	printf("%s: %" PRIu64 " -> %" PRIu64 " bytes (%s -> %s), saved %" PRId64 " bytes (%.1f%%)\n",
	       out, before, after, fatelf_format_size(before, b1), fatelf_format_size(after, b2),
	       (int64_t)(before - after),
	       before ? 100.0 * ((double)before - (double)after) / (double)before : 0.0);
	return EXIT_OK;
}
