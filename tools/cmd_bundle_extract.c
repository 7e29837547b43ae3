/*
 * fatelf bundle extract: unpacks a bundle into a directory, each FatELF
 * file thinned to one target when --target is given, and refuses an
 * unsigned or foreign-signed bundle when --key names the trusted signers.
 */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "macro.h"

enum { OPT_KEY = 0x100, OPT_TARGET };

int cmd_bundle_extract(int argc, char **argv)
{
	static const struct option options[] = {
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct bundle_keys keys = { .n = 0 };
	const char *target = NULL, *path, *dir;
	_cleanup_close_ int fd = -1;
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:h", options, NULL)) >= 0) {
		switch (c) {
		case 't':
		case OPT_TARGET:
			target = optarg;
			break;
		case OPT_KEY:
			r = bundle_keys_add(&keys, optarg);
			if (r < 0)
				return cmd_exit_code(r);
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle extract", c, argv);
		}
	}
	if (argc - optind != 2)
		return cmd_usage_error("bundle extract", "expected BUNDLE and DIR");
	path = argv[optind];
	dir = argv[optind + 1];

	fatelf_bundle_read_opts o = bundle_keys_read_opts(&keys);
	fatelf_diag_clear(&d);
	fd = bundle_open(path, &d);
	if (fd < 0)
		return cmd_report(path, &d, fd);
	r = fatelf_bundle_extract(fd, dir, target, &o, &d);
	if (r < 0)
		return bundle_report(path, &d, r);
	printf("%s: extracted into %s%s%s\n", path, dir, target ? ", thinned to " : "",
	       target ? target : "");
	return EXIT_OK;
}
