/*
 * fatelfctl search: the package versions the repositories offer, as the
 * indexes kept by the last update list them, in one table with the
 * version installed beside each.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_search_usage[] =
	"Usage: fatelfctl search [PATTERN]\n"
	"\n"
	"List the package versions the repositories offer whose name contains\n"
	"PATTERN, or all of them, newest first, as of the last 'fatelfctl update':\n"
	"name, version, repository, size of its files, the version installed (or -)\n"
	"and summary. 'fatelfctl install NAME' or NAME=VERSION installs one.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	static const char *const header[] = { "NAME", "VERSION", "REPOSITORY", "SIZE", "INSTALLED",
					      "SUMMARY" };
	static const bool right[] = { false, false, false, true, false, false };
	json_object *pkgs = ctl_json_array(params, "packages");
	size_t n = pkgs ? json_object_array_length(pkgs) : 0;
	const char *pattern = userdata;
	struct ctl_table t;

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	if (n == 0) {
		if (pattern)
			printf("no package of the repositories matches '%s'\n", pattern);
		else
			printf("the repositories offer no packages (has 'fatelfctl update' run?)\n");
		return CTL_CONTINUE;
	}
	if (ctl_table_init(&t, ARRAY_SIZE(header), header, right) < 0)
		return CTL_CONTINUE;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(pkgs, i);
		const char *row[ARRAY_SIZE(header)];
		char size[32];

		row[0] = ctl_json_str(p, "name", "?");
		row[1] = ctl_json_str(p, "version", "?");
		row[2] = ctl_json_str(p, "repository", "?");
		row[3] = fatelf_format_size((uint64_t)ctl_json_int(p, "size"), size);
		row[4] = ctl_json_str(p, "installed", "-");
		row[5] = ctl_json_str(p, "summary", "");
		if (ctl_table_add(&t, row) < 0)
			break;
	}
	ctl_table_print(&t, stdout);
	ctl_table_done(&t);
	return CTL_CONTINUE;
}

int verb_search(int argc, char **argv)
{
	json_object *params;
	int status, r = ctl_parse_plain(argc, argv, verb_search_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind + 1 < argc)
		return ctl_usage_error("one pattern at a time ('%s' is extra)", argv[optind + 1]);
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (optind < argc && argv[optind][0])
		json_object_object_add(params, "pattern", json_object_new_string(argv[optind]));
	status = ctl_call("Search", params, 0, NULL, 0, on_reply,
			  optind < argc && argv[optind][0] ? argv[optind] : NULL);
	json_object_put(params);
	return status;
}

int ctl_package_suggest(json_object *eparams)
{
	_cleanup_free_ char *error = NULL, *name = NULL;
	_cleanup_free_ const char **names = NULL;
	json_object *pkgs = NULL, *distinct = NULL, *ep = NULL;
	const char *spec = ctl_json_str(eparams, "package", NULL), *near;
	size_t n;
	int status;

	if (!spec)
		return EXIT_OK;
	/* NAME=VERSION: the name is what may be mistyped. */
	name = strndup(spec, strcspn(spec, "="));
	if (!name)
		return ctl_oom();
	/* Every package the repositories offer, the Search of no pattern. */
	status = ctl_call_capture("Search", NULL, 0, ctl_keep_packages, &pkgs, &error, &ep);
	json_object_put(ep);
	if (error || status != EXIT_OK) {
		json_object_put(pkgs);
		return error ? EXIT_OK : status;
	}
	if (ctl_json_distinct(pkgs, "name", &distinct) < 0) {
		json_object_put(pkgs);
		return ctl_oom();
	}
	json_object_put(pkgs);
	n = json_object_array_length(distinct);
	names = calloc(n ? n : 1, sizeof(*names));
	if (!names) {
		json_object_put(distinct);
		return ctl_oom();
	}
	for (size_t i = 0; i < n; i++)
		names[i] = json_object_get_string(json_object_array_get_idx(distinct, i));
	near = ctl_suggest(name, names, n);
	/* The name itself (another version of it was asked for) is no hint. */
	if (near && strcmp(near, name) != 0)
		json_object_object_add(eparams, "suggestion", json_object_new_string(near));
	json_object_put(distinct);
	return EXIT_OK;
}
