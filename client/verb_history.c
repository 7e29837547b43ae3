/*
 * fatelfctl history: past transactions, newest first as the daemon sends
 * them, in one table: what was done to which package, how it ended, when,
 * and the bytes written and saved.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_history_usage[] =
	"Usage: fatelfctl history [PKG | --package PKG] [--limit N]\n"
	"\n"
	"Show past transactions, newest first, of PKG or of every package: ID, kind,\n"
	"package, versions, state, start time (local), bytes written and saved, and\n"
	"the error of one that failed. PKG need not be installed any more: its\n"
	"history stays.\n"
	"\n"
	"Options:\n"
	"  -p, --package PKG  only the transactions of PKG (the same as naming it)\n"
	"  --limit N          show at most N transactions\n"
	"  -h, --help         show this help\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	static const char *const header[] = { "ID", "KIND", "PACKAGE", "VERSIONS", "STATE", "STARTED",
					      "WRITTEN", "SAVED", "ERROR" };
	static const bool right[] = { true, false, false, false, false, false, true, true, false };
	json_object *txs = ctl_json_array(params, "transactions");
	size_t n = txs ? json_object_array_length(txs) : 0;
	struct ctl_table t;

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	if (n == 0) {
		printf("no transactions\n");
		return CTL_CONTINUE;
	}
	if (ctl_table_init(&t, ARRAY_SIZE(header), header, right) < 0)
		return CTL_CONTINUE;
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(txs, i);
		const char *oldv = ctl_json_str(x, "old_version", NULL);
		const char *newv = ctl_json_str(x, "new_version", NULL);
		char id[24], versions[256], started[32], written[32], saved[32];
		const char *row[ARRAY_SIZE(header)];

		snprintf(id, sizeof(id), "%lld", (long long)ctl_json_int(x, "id"));
		if (oldv && newv)
			snprintf(versions, sizeof(versions), "%s -> %s", oldv, newv);
		else
			snprintf(versions, sizeof(versions), "%s", oldv ? oldv : newv ? newv : "-");
		row[0] = id;
		row[1] = ctl_json_str(x, "kind", "?");
		row[2] = ctl_json_str(x, "package", "-");
		row[3] = versions;
		row[4] = ctl_json_str(x, "state", "?");
		row[5] = ctl_format_time(ctl_json_int(x, "started_at"), started);
		row[6] = fatelf_format_size((uint64_t)ctl_json_int(x, "bytes_written"), written);
		row[7] = fatelf_format_size((uint64_t)ctl_json_int(x, "bytes_saved"), saved);
		row[8] = ctl_json_str(x, "error", "-");
		if (ctl_table_add(&t, row) < 0)
			break;
	}
	ctl_table_print(&t, stdout);
	ctl_table_done(&t);
	return CTL_CONTINUE;
}

int verb_history(int argc, char **argv)
{
	static const struct option options[] = {
		{ "limit", required_argument, NULL, 'l' },
		{ "package", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	json_object *params;
	long long limit = -1;
	const char *package = NULL;
	char *end;
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hp:", options, NULL)) >= 0) {
		switch (c) {
		case 'p':
			if (!optarg[0])
				return ctl_usage_error("an empty --package");
			if (package && strcmp(package, optarg) != 0)
				return ctl_usage_error("one package at a time ('%s' is extra)", optarg);
			package = optarg;
			break;
		case 'l':
			errno = 0;
			limit = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || limit < 1)
				return ctl_usage_error("bad --limit '%s' (a count of 1 or more)", optarg);
			break;
		case 'h':
			return ctl_help(verb_history_usage);
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (optind + 1 < argc)
		return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind + 1]);
	if (optind < argc) {
		if (package && strcmp(package, argv[optind]) != 0)
			return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind]);
		package = argv[optind];
	}
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (package)
		json_object_object_add(params, "package", json_object_new_string(package));
	if (limit > 0)
		json_object_object_add(params, "limit", json_object_new_int64(limit));
	status = ctl_call("History", params, 0, NULL, 0, on_reply, NULL);
	json_object_put(params);
	return status;
}
