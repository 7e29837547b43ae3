/*
 * fatelfctl list: the installed packages, one table row each, with what
 * their files take on disk and what thinning saved.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_list_usage[] =
	"Usage: fatelfctl list\n"
	"\n"
	"List the installed packages: name, version, files, size on disk, bytes\n"
	"saved by thinning, the policy they were installed with, and summary.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

/* The rows of every reply (the call has "more"), one table at the end. */
struct list_state {
	struct ctl_table t;
	bool init;
	size_t n;
};

static const char *const list_header[] = { "NAME", "VERSION", "FILES", "SIZE", "SAVED", "POLICY", "SUMMARY" };
static const bool list_right[] = { false, false, true, true, true, false, false };

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *pkgs = ctl_json_array(params, "packages");
	size_t n = pkgs ? json_object_array_length(pkgs) : 0;
	struct list_state *st = userdata;

	if (ctl_arg.json) {
		ctl_json_line(params);
		return CTL_CONTINUE;
	}
	if (!st->init) {
		if (ctl_table_init(&st->t, ARRAY_SIZE(list_header), list_header, list_right) < 0)
			return CTL_CONTINUE;
		st->init = true;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(pkgs, i);
		int64_t shipped = ctl_json_int(p, "shipped_size"), installed = ctl_json_int(p, "installed_size");
		char files[24], size[32], saved[32];
		const char *row[ARRAY_SIZE(list_header)];

		snprintf(files, sizeof(files), "%lld", (long long)ctl_json_int(p, "files"));
		row[0] = ctl_json_str(p, "name", "?");
		row[1] = ctl_json_str(p, "version", "?");
		row[2] = files;
		row[3] = fatelf_format_size((uint64_t)installed, size);
		row[4] = fatelf_format_size(shipped > installed ? (uint64_t)(shipped - installed) : 0, saved);
		row[5] = ctl_json_str(p, "policy", "-");
		row[6] = ctl_json_str(p, "summary", "");
		if (ctl_table_add(&st->t, row) < 0)
			break;
		st->n++;
	}
	if (continues)
		return CTL_CONTINUE;
	if (st->n == 0)
		printf("no packages installed\n");
	else
		ctl_table_print(&st->t, stdout);
	ctl_table_done(&st->t);
	st->init = false;
	return CTL_CONTINUE;
}

int verb_list(int argc, char **argv)
{
	int status = ctl_parse_plain(argc, argv, verb_list_usage);

	if (status >= 0)
		return status;
	if (optind < argc)
		return ctl_usage_error("no arguments expected ('%s')", argv[optind]);
	struct list_state st = { 0 };

	status = ctl_call("List", NULL, VL_CALL_MORE, NULL, 0, on_reply, &st);
	if (st.init)
		ctl_table_done(&st.t);
	return status;
}
