/*
 * fatelfctl status: the daemon (version, uptime, socket, root, database),
 * the machine (host targets, policy), what is installed (packages, files,
 * fat files, bytes on disk and saved), the transaction running, if any,
 * and the jobs that wait their turn. With --prometheus, the metrics that
 * fatelfd computes (daemon/metrics.c), printed as they come.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_status_usage[] =
	"Usage: fatelfctl status [--prometheus]\n"
	"\n"
	"Show fatelfd's version and uptime, its socket, root and database, this\n"
	"host's targets and the policy, the counts of packages, files and fat files,\n"
	"bytes on disk and saved by thinning, the running transaction, and the jobs\n"
	"running and queued (transaction id, kind, package or source, state, caller).\n"
	"\n"
	"Options:\n"
	"  --prometheus  print the machine's metrics in the Prometheus text format\n"
	"                instead (packages, files, bytes, upgrades pending, holds,\n"
	"                the last transaction and the last verify): the text that\n"
	"                fatelfd writes to MetricsFile= (fatelfd.conf(5))\n"
	"  -h, --help    show this help\n";

enum {
	OPT_PROMETHEUS = 0x100,
};

static void print_running(json_object *tx, json_object *progress)
{
	const char *oldv = ctl_json_str(tx, "old_version", NULL);
	const char *newv = ctl_json_str(tx, "new_version", NULL);
	char versions[256] = "", since[32];

	if (oldv && newv)
		snprintf(versions, sizeof(versions), " %s -> %s", oldv, newv);
	else if (oldv || newv)
		snprintf(versions, sizeof(versions), " %s", oldv ? oldv : newv);
	printf("running: transaction %lld, %s %s%s, %s since %s\n", (long long)ctl_json_int(tx, "id"),
	       ctl_json_str(tx, "kind", "?"), ctl_json_str(tx, "package", "-"), versions,
	       ctl_json_str(tx, "state", "?"), ctl_format_time(ctl_json_int(tx, "started_at"), since));
	if (progress) {
		int64_t bd = ctl_json_int(progress, "bytes_done"), bt = ctl_json_int(progress, "bytes_total");
		const char *path = ctl_json_str(progress, "path", NULL);

		printf("progress: %s", ctl_json_str(progress, "phase", "?"));
		if (bt > 0)
			printf(", %lld%%, %.1f/%.1f MiB", (long long)(MIN(bd, bt) * 100 / bt),
			       (double)bd / 1048576.0, (double)bt / 1048576.0);
		if (ctl_json_int(progress, "entries_total") > 0)
			printf(", %lld/%lld entries", (long long)ctl_json_int(progress, "entries_done"),
			       (long long)ctl_json_int(progress, "entries_total"));
		if (path) {
			fputs(", ", stdout);
			ctl_put_shown(stdout, path);
		}
		putchar('\n');
	}
}

/* The running and queued jobs, one row each, in the order they run. */
static void print_jobs(json_object *jobs)
{
	static const char *const header[] = { "ID", "KIND", "WHAT", "STATE", "UID", "QUEUED" };
	static const bool right[] = { true, false, false, false, true, false };
	struct ctl_table t;
	size_t n = jobs ? json_object_array_length(jobs) : 0;

	if (n == 0) {
		printf("jobs: none\n");
		return;
	}
	if (ctl_table_init(&t, ARRAY_SIZE(header), header, right) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *j = json_object_array_get_idx(jobs, i);
		char id[32], uid[32], at[32], what[4300];
		const char *row[ARRAY_SIZE(header)];
		const char *pkg = ctl_json_str(j, "package", NULL), *src = ctl_json_str(j, "source", NULL);

		snprintf(id, sizeof(id), "%lld", (long long)ctl_json_int(j, "id"));
		snprintf(uid, sizeof(uid), "%lld", (long long)ctl_json_int(j, "uid"));
		snprintf(what, sizeof(what), "%s%s", pkg ? pkg : src ? src : "all packages",
			 ctl_json_bool(j, "dry_run") ? " (dry run)" : "");
		row[0] = id;
		row[1] = ctl_json_str(j, "kind", "?");
		row[2] = what;
		row[3] = ctl_json_str(j, "state", "?");
		row[4] = uid;
		row[5] = ctl_format_time(ctl_json_int(j, "queued_at"), at);
		ctl_table_add(&t, row);
	}
	printf("jobs:\n");
	ctl_table_print(&t, stdout);
	ctl_table_done(&t);
}

static int on_reply(json_object *p, bool continues, void *userdata)
{
	json_object *running = ctl_json_obj(p, "running");
	char buf[512], a[32];

	if (ctl_arg.json) {
		ctl_json_print(p);
		return CTL_CONTINUE;
	}
	if (userdata) {
		fputs(ctl_json_str(p, "metrics", ""), stdout);
		return CTL_CONTINUE;
	}
	printf("version: %s\n", ctl_json_str(p, "version", "?"));
	printf("uptime: %s\n", ctl_format_duration(ctl_json_int(p, "uptime"), a));
	printf("socket: %s\n", ctl_json_str(p, "socket", ctl_arg.socket));
	printf("root: %s\n", ctl_json_str(p, "root", "?"));
	printf("database: %s\n", ctl_json_str(p, "database", "?"));
	printf("host targets: %s\n", ctl_json_join(ctl_json_array(p, "host_targets"), buf, sizeof(buf)));
	printf("policy: %s\n", ctl_json_str(p, "policy", "?"));
	printf("packages: %lld\n", (long long)ctl_json_int(p, "packages"));
	printf("files: %lld\n", (long long)ctl_json_int(p, "files"));
	printf("fat files: %lld (%lld installed fat)\n", (long long)ctl_json_int(p, "fat_files"),
	       (long long)ctl_json_int(p, "fat_files_fat"));
	printf("bytes on disk: %s\n", fatelf_format_size((uint64_t)ctl_json_int(p, "bytes_on_disk"), a));
	printf("bytes saved: %s\n", fatelf_format_size((uint64_t)ctl_json_int(p, "bytes_saved"), a));
	printf("held: %s\n", ctl_json_join(ctl_json_array(p, "held"), buf, sizeof(buf)));
	if (running)
		print_running(running, ctl_json_obj(p, "progress"));
	else
		printf("running: none\n");
	print_jobs(ctl_json_array(p, "jobs"));
	return CTL_CONTINUE;
}

int verb_status(int argc, char **argv)
{
	static const struct option options[] = {
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	json_object *params = NULL;
	bool prometheus = false;
	int c, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		if (c == 'h')
			return ctl_help(verb_status_usage);
		if (c != OPT_PROMETHEUS)
			return ctl_option_error(c, argv);
		prometheus = true;
	}
	if (optind < argc)
		return ctl_usage_error("no arguments expected ('%s')", argv[optind]);
	if (prometheus) {
		params = json_object_new_object();
		if (!params || json_object_object_add(params, "prometheus", json_object_new_boolean(true)) < 0) {
			json_object_put(params);
			return ctl_oom();
		}
	}
	status = ctl_call("Status", params, 0, NULL, 0, on_reply, prometheus ? &prometheus : NULL);
	json_object_put(params);
	return status;
}
