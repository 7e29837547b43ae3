/*
 * fatelfctl thin: thin installed fat files later, for some packages or
 * all of them, to the policy in force or to explicit targets, and say how
 * many bytes that saved (or would save, with --dry-run).
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_thin_usage[] =
	"Usage: fatelfctl thin PKG...|--all [--targets T,...] [--dry-run] [--no-wait]\n"
	"\n"
	"Thin the installed fat files of the packages named, or of every package\n"
	"with --all, to the policy in force or to the targets given, and report\n"
	"the bytes saved.\n"
	"\n"
	"Options:\n"
	"  --all            every installed package\n"
	"  --targets T,...  keep the records of these targets\n"
	"  --dry-run        report what would be saved; change nothing\n"
	"  --no-wait        return once fatelfd has accepted the thin, printing its\n"
	"                   transaction id; it goes on in fatelfd\n"
	"  -h, --help       show this help\n";

int verb_thin(int argc, char **argv)
{
	static const struct option options[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "targets", required_argument, NULL, 't' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "no-wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctl_tx_state st = { .what = "thin of all packages" };
	json_object *params = NULL, *targets = NULL, *packages = NULL;
	const char *targets_arg = NULL;
	bool all = false, dry_run = false;
	char what[300];
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'a':
			all = true;
			break;
		case 't':
			targets_arg = optarg;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'W':
			st.no_wait = true;
			break;
		case 'h':
			return ctl_help(verb_thin_usage);
		default:
			return ctl_option_error(c, argv);
		}
	}
	/* Thinning everything is never the accident of a forgotten name. */
	if (all && optind < argc)
		return ctl_usage_error("--all or package names, not both");
	if (!all && optind >= argc)
		return ctl_usage_error("name the packages, or --all");
	if (targets_arg && ctl_split_list(targets_arg, &targets) < 0)
		return ctl_usage_error("bad --targets list '%s'", targets_arg);

	params = json_object_new_object();
	if (!params) {
		json_object_put(targets);
		return ctl_oom();
	}
	if (!all) {
		packages = json_object_new_array();
		for (int i = optind; packages && i < argc; i++)
			json_object_array_add(packages, json_object_new_string(argv[i]));
		json_object_object_add(params, "packages", packages);
	}
	if (targets)
		json_object_object_add(params, "targets", targets);
	if (dry_run)
		json_object_object_add(params, "dry_run", json_object_new_boolean(1));
	if (!all) {
		if (optind + 1 == argc)
			snprintf(what, sizeof(what), "thin of %s", argv[optind]);
		else
			snprintf(what, sizeof(what), "thin of %d packages", argc - optind);
		st.what = what;
	}
	status = ctl_call("Thin", params, VL_CALL_MORE, NULL, 0, ctl_tx_reply, &st);
	json_object_put(params);
	return status;
}
