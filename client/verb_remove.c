/*
 * fatelfctl remove: remove an installed package, its files and then the
 * directories it owned that are left empty; changed config files stay.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_remove_usage[] =
	"Usage: fatelfctl remove PKG [--dry-run] [--no-wait]\n"
	"\n"
	"Remove an installed package: its files, then the directories it owned that\n"
	"are now empty. Config files you changed are kept.\n"
	"\n"
	"Options:\n"
	"  --dry-run   report what would be removed; remove nothing\n"
	"  --no-wait   return once fatelfd has accepted the remove, printing its\n"
	"              transaction id; it goes on in fatelfd\n"
	"  -h, --help  show this help\n";

int verb_remove(int argc, char **argv)
{
	static const struct option options[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "no-wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctl_tx_state st = { 0 };
	json_object *params;
	bool dry_run = false;
	char what[300];
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'n':
			dry_run = true;
			break;
		case 'W':
			st.no_wait = true;
			break;
		case 'h':
			return ctl_help(verb_remove_usage);
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (optind >= argc)
		return ctl_usage_error("missing PKG");
	if (optind + 1 < argc)
		return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind + 1]);

	params = json_object_new_object();
	if (!params)
		return ctl_error(EXIT_SYSTEM, "out of memory");
	json_object_object_add(params, "package", json_object_new_string(argv[optind]));
	if (dry_run)
		json_object_object_add(params, "dry_run", json_object_new_boolean(1));
	snprintf(what, sizeof(what), "remove of %s", argv[optind]);
	st.what = what;
	status = ctl_call("Remove", params, VL_CALL_MORE, NULL, 0, ctl_tx_reply, &st);
	json_object_put(params);
	return status;
}
