/*
 * fatelfctl files: the paths a package installed, one per line (symlinks
 * as "path -> target", directories as "path/", as dpkg -L lists its
 * directories too), as paths inside the daemon's root. The daemon
 * answers in chunks (the call has "more"), each printed as it comes; with
 * --json each chunk is one JSON line {"files": [...]}.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_files_usage[] =
	"Usage: fatelfctl files PKG\n"
	"\n"
	"List the files and directories of an installed package by path, one per\n"
	"line; a directory shows as \"PATH/\", a symlink as \"PATH -> TARGET\". Paths\n"
	"are inside the daemon's root. With --json, each entry's \"type\" is \"file\",\n"
	"\"symlink\" or \"dir\".\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *files = ctl_json_array(params, "files");
	size_t n = files ? json_object_array_length(files) : 0;

	/* Each reply as it comes: a long package is several. */
	if (ctl_arg.json) {
		ctl_json_line(params);
		return CTL_CONTINUE;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *f = json_object_array_get_idx(files, i);
		const char *type = ctl_json_str(f, "type", "file");
		const char *target = ctl_json_str(f, "link_target", NULL);

		ctl_put_shown(stdout, ctl_json_str(f, "path", "?"));
		if (strcmp(type, "symlink") == 0 && target) {
			fputs(" -> ", stdout);
			ctl_put_shown(stdout, target);
		} else if (strcmp(type, "dir") == 0) {
			fputc('/', stdout);
		}
		fputc('\n', stdout);
	}
	fflush(stdout);
	return CTL_CONTINUE;
}

int verb_files(int argc, char **argv)
{
	json_object *params;
	int status, r = ctl_parse_plain(argc, argv, verb_files_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing PKG");
	if (optind + 1 < argc)
		return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind + 1]);
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "package", json_object_new_string(argv[optind]));
	json_object_object_add(params, "dirs", json_object_new_boolean(1));
	status = ctl_call("Files", params, VL_CALL_MORE, NULL, 0, on_reply, NULL);
	json_object_put(params);
	return status;
}
