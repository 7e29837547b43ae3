/*
 * fatelfctl update: fatelfd fetches the index of every repository (or of
 * the one named), checks its signature, serial and expiry, and keeps it;
 * then one line per repository says what it holds now.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_update_usage[] =
	"Usage: fatelfctl update [REPOSITORY]\n"
	"\n"
	"Fetch the index of every repository, or of REPOSITORY: fatelfd checks its\n"
	"signature against the repository's key, that its serial is not below the\n"
	"one accepted before and that it has not expired, and keeps it. Prints one\n"
	"line per repository: its name, the serial of its index and its number of\n"
	"packages. 'fatelfctl search' and 'fatelfctl install NAME' read what it kept.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n"
	"\n"
	"On a terminal a progress bar shows on standard error.\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *progress = ctl_json_obj(params, "progress");
	json_object *repos = ctl_json_array(params, "repositories");
	size_t n = repos ? json_object_array_length(repos) : 0;

	if (ctl_arg.json) {
		ctl_json_line(params);
		return CTL_CONTINUE;
	}
	if (progress && !repos) {
		ctl_progress_draw(progress);
		return CTL_CONTINUE;
	}
	ctl_progress_clear();
	if (!repos)
		return CTL_CONTINUE;
	if (n == 0)
		printf("no repositories ('fatelfctl repo add' adds one)\n");
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(repos, i);
		json_object *serial = NULL;
		int64_t pkgs = ctl_json_int(r, "packages");

		if (!r || !json_object_object_get_ex(r, "serial", &serial) ||
		    !json_object_is_type(serial, json_type_int))
			printf("%s: never updated\n", ctl_json_str(r, "name", "?"));
		else
			printf("%s: serial %lld, %lld %s\n", ctl_json_str(r, "name", "?"),
			       (long long)json_object_get_int64(serial), (long long)pkgs,
			       pkgs == 1 ? "package" : "packages");
	}
	return CTL_CONTINUE;
}

int verb_update(int argc, char **argv)
{
	json_object *params;
	int status, r = ctl_parse_plain(argc, argv, verb_update_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind + 1 < argc)
		return ctl_usage_error("one repository at a time ('%s' is extra)", argv[optind + 1]);
	if (optind < argc && !argv[optind][0])
		return ctl_usage_error("empty REPOSITORY");
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (optind < argc)
		json_object_object_add(params, "repository", json_object_new_string(argv[optind]));
	/* A stream: the progress of the downloads, then the repositories. */
	status = ctl_call("Update", params, VL_CALL_MORE, NULL, 0, on_reply, NULL);
	json_object_put(params);
	return status;
}
