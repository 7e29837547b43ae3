/*
 * fatelfctl cancel: cancel the running transaction; fatelfd rolls it back,
 * so every package is left as it was before it started.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_cancel_usage[] =
	"Usage: fatelfctl cancel [ID]\n"
	"\n"
	"Cancel the running transaction; it is rolled back. With ID, only when the\n"
	"running transaction is that one ('fatelfctl status' shows it).\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	if (ctl_arg.json)
		ctl_json_print(params);
	else
		printf("cancelled transaction %lld; it is rolled back\n",
		       (long long)ctl_json_int(params, "id"));
	return CTL_CONTINUE;
}

int verb_cancel(int argc, char **argv)
{
	json_object *params;
	int status;

	status = ctl_parse_plain(argc, argv, verb_cancel_usage);
	if (status >= 0)
		return status;
	if (optind + 1 < argc)
		return ctl_usage_error("too many arguments");
	params = json_object_new_object();
	if (!params)
		return ctl_error(EXIT_SYSTEM, "out of memory");
	if (optind < argc) {
		char *end;
		long long id;

		errno = 0;
		id = strtoll(argv[optind], &end, 10);
		if (errno || end == argv[optind] || *end || id < 0) {
			json_object_put(params);
			return ctl_usage_error("bad transaction ID '%s'", argv[optind]);
		}
		json_object_object_add(params, "id", json_object_new_int64(id));
	}
	status = ctl_call("Cancel", params, 0, NULL, 0, on_reply, NULL);
	json_object_put(params);
	return status;
}
