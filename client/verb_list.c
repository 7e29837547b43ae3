/*
 * fatelfctl list: the installed packages, one table row each, with what
 * their files take on disk and what thinning saved; with --upgradable,
 * those a repository offers a newer version of (a Search).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_list_usage[] =
	"Usage: fatelfctl list [--upgradable]\n"
	"\n"
	"List the installed packages: name, version, files, size on disk, bytes\n"
	"saved by thinning, the policy their fat files follow on disk now (a later\n"
	"'fatelfctl thin' records the policy it thinned to), and summary.\n"
	"HELD says \"held\" for a package 'fatelfctl hold' holds at its version.\n"
	"Then the removed packages whose config files you had changed were kept\n"
	"(dpkg's config-files state), one line each; 'fatelfctl remove --purge\n"
	"NAME' deletes them.\n"
	"\n"
	"Options:\n"
	"  --upgradable  list the installed packages that a repository offers a newer\n"
	"                version of, one line each: NAME INSTALLED -> VERSION (REPOSITORY),\n"
	"                as of the last 'fatelfctl update'\n"
	"  -h, --help    show this help\n";

/* The rows of every reply (the call has "more"), one table at the end. */
struct list_state {
	struct ctl_table t;
	bool init;
	size_t n;
};

static const char *const list_header[] = { "NAME", "VERSION", "FILES", "SIZE", "SAVED", "POLICY", "HELD",
					   "SUMMARY" };
static const bool list_right[] = { false, false, true, true, true, false, false, false };

/* The packages in config-files state, after the table. */
static void config_files_print(json_object *a)
{
	size_t n = a ? json_object_array_length(a) : 0;

	if (n > 0)
		printf("\nremoved, their changed config files kept ('fatelfctl remove --purge NAME' deletes them):\n");
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(a, i);
		int64_t files = ctl_json_int(p, "files");

		printf("  %s %s: %lld config %s\n", ctl_json_str(p, "name", "?"), ctl_json_str(p, "version", "?"),
		       (long long)files, files == 1 ? "file" : "files");
	}
}

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
		row[6] = ctl_json_bool(p, "held") ? "held" : "-";
		row[7] = ctl_json_str(p, "summary", "");
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
	config_files_print(ctl_json_array(params, "config_files"));
	return CTL_CONTINUE;
}

/* ------------------------------------------------------------ --upgradable */

struct offer {
	const char *name;
	size_t index;           /* in the reply, which is newest first */
};

static int offer_cmp(const void *a, const void *b)
{
	const struct offer *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* One line per package, its newest version: the first the reply lists of
 * each name, kept in the reply's order. */
static int on_upgradable(json_object *params, bool continues, void *userdata)
{
	json_object *pkgs = ctl_json_array(params, "packages");
	size_t n = pkgs ? json_object_array_length(pkgs) : 0;
	_cleanup_free_ struct offer *offers = NULL;
	_cleanup_free_ bool *newest = NULL;

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	if (n == 0) {
		printf("nothing to upgrade\n");
		return CTL_CONTINUE;
	}
	offers = calloc(n, sizeof(*offers));
	newest = calloc(n, sizeof(*newest));
	if (!offers || !newest) {
		*(int *)userdata = ctl_oom();
		return CTL_CONTINUE;
	}
	for (size_t i = 0; i < n; i++)
		offers[i] = (struct offer){ ctl_json_str(json_object_array_get_idx(pkgs, i), "name", "?"), i };
	if (n > 1)
		qsort(offers, n, sizeof(*offers), offer_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(offers[i].name, offers[i - 1].name) != 0)
			newest[offers[i].index] = true;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(pkgs, i);

		if (newest[i])
			printf("%s %s -> %s (%s)\n", ctl_json_str(p, "name", "?"),
			       ctl_json_str(p, "installed", "?"), ctl_json_str(p, "version", "?"),
			       ctl_json_str(p, "repository", "?"));
	}
	return CTL_CONTINUE;
}

static int list_upgradable(void)
{
	json_object *params = json_object_new_object();
	int status, printed = EXIT_OK;

	if (!params)
		return ctl_oom();
	json_object_object_add(params, "upgradable", json_object_new_boolean(1));
	status = ctl_call("Search", params, 0, NULL, 0, on_upgradable, &printed);
	json_object_put(params);
	return status != EXIT_OK ? status : printed;
}

int verb_list(int argc, char **argv)
{
	static const struct option options[] = {
		{ "upgradable", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	bool upgradable = false;
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'u':
			upgradable = true;
			break;
		case 'h':
			return ctl_help(verb_list_usage);
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (optind < argc)
		return ctl_usage_error("no arguments expected ('%s')", argv[optind]);
	if (upgradable)
		return list_upgradable();
	struct list_state st = { 0 };

	status = ctl_call("List", NULL, VL_CALL_MORE, NULL, 0, on_reply, &st);
	if (st.init)
		ctl_table_done(&st.t);
	return status;
}
