/*
 * fatelfctl verify: check installed files against the store (missing,
 * changed content, mode or type, thinned records that no longer match the
 * vendor's hashes) and directories (type, mode, owner), one line per
 * problem, and exit 1 when there is any.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_verify_usage[] =
	"Usage: fatelfctl verify [PKG]\n"
	"\n"
	"Check every file of PKG, or of every package, against what was installed:\n"
	"missing files, changed content, mode or type, and thinned files whose\n"
	"records no longer match the vendor's; and every directory: its type, mode,\n"
	"and owner (root). Prints \"PATH: PROBLEM: DETAIL\" per problem, then a\n"
	"count of the files checked. Exits 1 when it found problems.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static const char *problem_words(const char *p)
{
	if (strcmp(p, "missing") == 0)
		return "missing";
	if (strcmp(p, "content") == 0)
		return "content changed";
	if (strcmp(p, "mode") == 0)
		return "mode changed";
	if (strcmp(p, "type") == 0)
		return "type changed";
	if (strcmp(p, "record") == 0)
		return "record does not match the vendor's";
	if (strcmp(p, "owner") == 0)
		return "owner changed";
	return p;
}

struct verify_state {
	uint64_t problems;      /* in the replies so far */
};

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *problems = ctl_json_array(params, "problems");
	size_t n = problems ? json_object_array_length(problems) : 0;
	int64_t checked = ctl_json_int(params, "checked");
	struct verify_state *st = userdata;

	/* The problems come in chunks (the call has "more"): each is printed
	 * as it comes, the count after the last. */
	st->problems += n;
	if (ctl_arg.json) {
		ctl_json_line(params);
		return CTL_CONTINUE;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(problems, i);
		const char *detail = ctl_json_str(p, "detail", "");

		printf("%s: %s%s%s\n", ctl_json_str(p, "path", "?"),
		       problem_words(ctl_json_str(p, "problem", "?")), detail[0] ? ": " : "", detail);
	}
	if (!continues)
		printf("%lld file%s checked, %llu problem%s\n", (long long)checked,
		       checked == 1 ? "" : "s", (unsigned long long)st->problems,
		       st->problems == 1 ? "" : "s");
	fflush(stdout);
	return CTL_CONTINUE;
}

int verb_verify(int argc, char **argv)
{
	json_object *params;
	struct verify_state st = { 0 };
	int status, r = ctl_parse_plain(argc, argv, verb_verify_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind + 1 < argc)
		return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind + 1]);
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (optind < argc)
		json_object_object_add(params, "package", json_object_new_string(argv[optind]));
	status = ctl_call("Verify", params, VL_CALL_MORE, NULL, 0, on_reply, &st);
	json_object_put(params);
	if (status == EXIT_OK && st.problems > 0)
		return EXIT_FAILED;
	return status;
}
