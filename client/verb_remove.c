/*
 * fatelfctl remove: remove installed packages (several in one
 * transaction), their files and then the directories they owned that are
 * left empty; changed config files stay unless --purge.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_remove_usage[] =
	"Usage: fatelfctl remove PKG... [--purge] [--dry-run] [--no-wait]\n"
	"\n"
	"Remove installed packages: their files, then the directories they owned that\n"
	"are now empty. Config files you changed are kept. Several packages are one\n"
	"transaction: all of them are removed, or, when one cannot be (not installed,\n"
	"say), none is.\n"
	"\n"
	"Options:\n"
	"  --purge     also remove the config files you changed and the\n"
	"              PATH.fatelf-new files an upgrade left beside config files\n"
	"  --dry-run   report what would be removed; remove nothing\n"
	"  --no-wait   return once fatelfd has accepted the remove, printing its\n"
	"              transaction id; it goes on in fatelfd\n"
	"  -h, --help  show this help\n";

/* Several packages: each result, then that they went together. */
static int on_reply(json_object *params, bool continues, void *userdata)
{
	struct ctl_tx_state *st = userdata;
	json_object *results = ctl_json_array(params, "results");
	size_t n;
	bool dry = false;

	if (!results || ctl_arg.json)
		return ctl_tx_reply(params, continues, st);
	ctl_progress_clear();
	n = json_object_array_length(results);
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(results, i);

		dry |= ctl_json_bool(r, "dry_run");
		ctl_result_print(r);
	}
	/* one package: its result line says it all */
	if (n > 1)
		printf("%s: %zu packages in one transaction\n", dry ? "dry run" : "committed", n);
	return CTL_CONTINUE;
}

int verb_remove(int argc, char **argv)
{
	static const struct option options[] = {
		{ "purge", no_argument, NULL, 'P' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "no-wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctl_tx_state st = { 0 };
	json_object *params;
	bool dry_run = false, purge = false;
	char what[300];
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'n':
			dry_run = true;
			break;
		case 'P':
			purge = true;
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
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (optind + 1 < argc) {
		json_object *a = json_object_new_array();

		for (int i = optind; a && i < argc; i++)
			json_object_array_add(a, json_object_new_string(argv[i]));
		json_object_object_add(params, "packages", a);
		snprintf(what, sizeof(what), "remove of %d packages", argc - optind);
	} else {
		json_object_object_add(params, "package", json_object_new_string(argv[optind]));
		snprintf(what, sizeof(what), "remove of %s", argv[optind]);
	}
	if (dry_run)
		json_object_object_add(params, "dry_run", json_object_new_boolean(1));
	if (purge)
		json_object_object_add(params, "purge", json_object_new_boolean(1));
	st.what = what;
	status = ctl_call("Remove", params, VL_CALL_MORE, NULL, 0, on_reply, &st);
	json_object_put(params);
	return status;
}

const char verb_autoremove_usage[] =
	"Usage: fatelfctl autoremove [--purge] [--dry-run] [--no-wait]\n"
	"\n"
	"Remove the automatic packages (installed from a repository only because\n"
	"another package depended on them) that no installed package needs any\n"
	"more, in one transaction.\n"
	"\n"
	"Options:\n"
	"  --purge     also remove the config files you changed, as remove --purge\n"
	"  --dry-run   report what would be removed; remove nothing\n"
	"  --no-wait   return once fatelfd has accepted it, printing its\n"
	"              transaction id; it goes on in fatelfd\n"
	"  -h, --help  show this help\n";

/* The results, or that there was nothing to remove. */
static int on_auto_reply(json_object *params, bool continues, void *userdata)
{
	json_object *results = ctl_json_array(params, "results");

	if (results && !ctl_arg.json && json_object_array_length(results) == 0) {
		ctl_progress_clear();
		printf("no automatic package to remove\n");
		return CTL_CONTINUE;
	}
	return on_reply(params, continues, userdata);
}

int verb_autoremove(int argc, char **argv)
{
	static const struct option options[] = {
		{ "purge", no_argument, NULL, 'P' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "no-wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ctl_tx_state st = { 0 };
	json_object *params;
	int status, c;

	opterr = 0;
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "autoremove", json_object_new_boolean(1));
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'n':
			json_object_object_add(params, "dry_run", json_object_new_boolean(1));
			break;
		case 'P':
			json_object_object_add(params, "purge", json_object_new_boolean(1));
			break;
		case 'W':
			st.no_wait = true;
			break;
		case 'h':
			json_object_put(params);
			return ctl_help(verb_autoremove_usage);
		default:
			json_object_put(params);
			return ctl_option_error(c, argv);
		}
	}
	if (optind < argc) {
		json_object_put(params);
		return ctl_usage_error("autoremove takes no package");
	}
	st.what = "autoremove";
	status = ctl_call("Remove", params, VL_CALL_MORE, NULL, 0, on_auto_reply, &st);
	json_object_put(params);
	return status;
}
