/*
 * fatelfctl cancel: cancel a queued transaction (it never starts) or the
 * running one, which fatelfd rolls back, so every package is left as it
 * was before it started; the verb waits until the rollback is done.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_cancel_usage[] =
	"Usage: fatelfctl cancel [ID]\n"
	"\n"
	"Cancel the running transaction, or with ID the queued or running\n"
	"transaction ID ('fatelfctl status' lists them). A queued one never starts;\n"
	"a running one is rolled back, and cancel waits until that is done.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

struct cancel_state {
	bool rolling_back;      /* told so: the transaction was running */
	int status;             /* EXIT_FAILED when it ended otherwise */
};

static int on_reply(json_object *params, bool continues, void *userdata)
{
	const char *state = ctl_json_str(params, "state", "cancelled");
	long long id = (long long)ctl_json_int(params, "id");
	struct cancel_state *cs = userdata;

	if (!continues && strcmp(state, "cancelled") != 0)
		cs->status = EXIT_FAILED;
	if (ctl_arg.json) {
		ctl_json_line(params);
		return CTL_CONTINUE;
	}
	if (strcmp(state, "rolling-back") == 0) {
		printf("rolling back transaction %lld...\n", id);
		fflush(stdout);
		cs->rolling_back = true;
	} else if (strcmp(state, "cancelled") == 0) {
		printf("cancelled transaction %lld%s\n", id,
		       cs->rolling_back ? ": rolled back, every package is as it was" : ", before it started");
	} else {
		ctl_error(EXIT_FAILED, "transaction %lld was not cancelled: it %s before the cancel took effect",
			  id, strcmp(state, "committed") == 0 ? "committed" : "failed");
	}
	return CTL_CONTINUE;
}

int verb_cancel(int argc, char **argv)
{
	json_object *params;
	struct cancel_state cs = { 0 };
	int status, r;

	r = ctl_parse_plain(argc, argv, verb_cancel_usage);
	if (r <= 0)
		return ctl_exit_code(r);
	if (optind + 1 < argc)
		return ctl_usage_error("too many arguments");
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (optind < argc) {
		char *end;
		long long id;

		errno = 0;
		id = strtoll(argv[optind], &end, 10);
		if (errno || end == argv[optind] || *end || id <= 0) {
			json_object_put(params);
			return ctl_usage_error("bad transaction ID '%s'", argv[optind]);
		}
		json_object_object_add(params, "id", json_object_new_int64(id));
	}
	status = ctl_call("Cancel", params, VL_CALL_MORE, NULL, 0, on_reply, &cs);
	if (status == EXIT_OK)
		status = cs.status;
	json_object_put(params);
	return status;
}
