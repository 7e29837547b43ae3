/*
 * fatelf validate: checks FatELF files against every rule of the format
 * and says which rule the first broken one is, for scripts (exit status,
 * -q, --json with the stable error and warning names) and for people.
 */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cmd.h"
#include "macro.h"

const char cmd_validate_usage[] =
	"Usage: fatelf validate [--json] [-q] FILE...\n"
	"\n"
	"Check each FILE against every rule of the FatELF format and the ELF images\n"
	"it holds. Prints \"FILE: ok (N records)\" for a valid file, with any warnings\n"
	"as \"FILE: warning: MESSAGE\", and one error line on stderr for an invalid one.\n"
	"Exits 0 when every file is valid, 1 when any is not.\n"
	"\n"
	"Options:\n"
	"  -j, --json    print {\"file\", \"valid\", \"records\", \"error\", \"warnings\"} per\n"
	"                file (an array for several files); errors go in \"error\"\n"
	"  -q, --quiet   print nothing for valid files and no warnings (errors still\n"
	"                go to stderr)\n"
	"  -h, --help    show this help\n";

static struct json_object *validate_json(const char *path, int r, const fatelf_header *hdr,
					 const fatelf_diag *d, const struct cmd_warnings *w)
{
	struct json_object *o = json_object_new_object();
	struct json_object *warnings = json_object_new_array();

	json_object_object_add(o, "file", json_object_new_string(path));
	json_object_object_add(o, "valid", json_object_new_boolean(r >= 0));
	json_object_object_add(o, "records", r >= 0 ? json_object_new_int(hdr->nrecords) : NULL);
	json_object_object_add(o, "error", r >= 0 ? NULL : cmd_json_error(d, r));
	for (size_t i = 0; i < w->n; i++)
		json_object_array_add(warnings, cmd_json_warning(&w->v[i]));
	json_object_object_add(o, "warnings", warnings);
	return o;
}

int cmd_validate(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static fatelf_header hdr;
	_cleanup_json_ struct json_object *array = NULL;
	bool json = false, quiet = false;
	int c, ret = EXIT_OK;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jqh", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			return cmd_help(cmd_validate_usage);
		default:
			return cmd_option_error("validate", c, argv);
		}
	}
	if (optind >= argc)
		return cmd_usage_error("validate", "no input files");

	if (json)
		array = json_object_new_array();
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i];
		struct cmd_warnings w;
		fatelf_diag d;
		int fd;

		fd = cmd_open_validated(path, &hdr, NULL, &w, NULL, &d);
		if (fd >= 0)
			close(fd);
		else
			ret = MAX(ret, cmd_exit_code(fd));

		if (json) {
			json_object_array_add(array, validate_json(path, fd, &hdr, &d, &w));
		} else if (fd < 0) {
			cmd_report(path, &d, fd);
		} else if (!quiet) {
			for (size_t k = 0; k < w.n; k++)
				printf("%s: warning: %s\n", path, w.v[k].msg);
			printf("%s: ok (%u record%s)\n", path, (unsigned)hdr.nrecords,
			       hdr.nrecords == 1 ? "" : "s");
		}
		cmd_warnings_free(&w);
	}

	if (json) {
		if (argc - optind > 1)
			cmd_json_print(array);
		else
			cmd_json_print(json_object_array_get_idx(array, 0));
	}
	fflush(stdout);
	return ret;
}
