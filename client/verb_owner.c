/*
 * fatelfctl owner: which package owns a path, printed as "PKG: PATH" like
 * dpkg -S. The path is inside the daemon's root.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_owner_usage[] =
	"Usage: fatelfctl owner PATH\n"
	"\n"
	"Tell which package owns PATH, as \"PKG: PATH\". PATH is inside the daemon's\n"
	"root: for a fatelfd started with --root R, /opt/x means R/opt/x. Exits 1\n"
	"when no package owns it.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	const char *asked = userdata;

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	/* The stored path: the daemon may have normalized the one asked. */
	printf("%s: %s\n", ctl_json_str(params, "package", "?"),
	       ctl_json_str(ctl_json_obj(params, "file"), "path", asked));
	return CTL_CONTINUE;
}

int verb_owner(int argc, char **argv)
{
	json_object *params;
	int status = ctl_parse_plain(argc, argv, verb_owner_usage);

	if (status >= 0)
		return status;
	if (optind >= argc)
		return ctl_usage_error("missing PATH");
	if (optind + 1 < argc)
		return ctl_usage_error("one path at a time ('%s' is extra)", argv[optind + 1]);
	params = json_object_new_object();
	if (!params)
		return ctl_error(EXIT_SYSTEM, "out of memory");
	json_object_object_add(params, "path", json_object_new_string(argv[optind]));
	status = ctl_call("Owner", params, 0, NULL, 0, on_reply, argv[optind]);
	json_object_put(params);
	return status;
}
