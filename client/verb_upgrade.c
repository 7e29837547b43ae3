/*
 * fatelfctl upgrade: installs the newest version the repositories offer
 * of each installed package that has a newer one (a Search for the
 * upgradable ones), or of the packages named, in one Install call and
 * one transaction, in the words of 'install NAME' (verb_install.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_upgrade_usage[] =
	"Usage: fatelfctl upgrade [NAME...] [OPTIONS]\n"
	"\n"
	"Upgrade every installed package that a repository offers a newer version\n"
	"of ('fatelfctl list --upgradable', as of the last 'fatelfctl update'), or\n"
	"the packages NAME, each of which must be installed: a NAME with nothing\n"
	"newer prints \"NAME is up to date\". Each package installs its newest\n"
	"version as 'fatelfctl install NAME' does, in the order given (else in the\n"
	"order of the list). All of them are one transaction: they are upgraded\n"
	"together, or, when one fails, none is, and fatelfctl returns that one's\n"
	"exit status. fatelfd fetches only the objects that no installed file\n"
	"holds, and each result is followed by\n"
	"\"fetch: N objects (SIZE), K from installed files\".\n"
	"A held package ('fatelfctl hold') is left out: \"NAME is held: not upgraded\".\n"
	"\n"
	"Options:\n"
	"  --dry-run   run every check and say what each upgrade would change and\n"
	"              fetch; write nothing\n"
	"  --no-wait   return once fatelfd has accepted the upgrade; it goes on\n"
	"  -h, --help  show this help\n"
	"\n"
	"With --json: the JSON lines of each Install call, and for a NAME with\n"
	"nothing newer {\"package\": NAME, \"up_to_date\": true}, and for a held one\n"
	"{\"package\": NAME, \"held\": true, \"skipped\": true}.\n";

enum {
	OPT_DRY_RUN = 0x100,
	OPT_NO_WAIT,
};

/* Info is asked only to learn that the package is installed. */
static int on_info(json_object *params, bool continues, void *userdata)
{
	(void)params;
	(void)continues;
	(void)userdata;
	return CTL_CONTINUE;
}

static bool array_has(json_object *strings, const char *s)
{
	size_t n = strings ? json_object_array_length(strings) : 0;

	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(strings, i)), s) == 0)
			return true;
	return false;
}

static void up_to_date(const char *name)
{
	json_object *o;

	if (!ctl_arg.json) {
		printf("%s is up to date\n", name);
		return;
	}
	o = json_object_new_object();
	if (!o)
		return;
	json_object_object_add(o, "package", json_object_new_string(name));
	json_object_object_add(o, "up_to_date", json_object_new_boolean(1));
	ctl_json_line(o);
	json_object_put(o);
}

/* Keeps the names of the held packages of the List reply. */
static int on_list(json_object *params, bool continues, void *userdata)
{
	json_object *held = userdata;
	json_object *pkgs = ctl_json_array(params, "packages");
	size_t n = pkgs ? json_object_array_length(pkgs) : 0;

	(void)continues;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(pkgs, i);

		if (ctl_json_bool(p, "held"))
			json_object_array_add(held, json_object_new_string(ctl_json_str(p, "name", "?")));
	}
	return CTL_CONTINUE;
}

/* A held package is left out, in words or as {"package", "held": true,
 * "skipped": true}. */
static void skip_held(const char *name)
{
	json_object *o;

	if (!ctl_arg.json) {
		printf("%s is held: not upgraded ('fatelfctl unhold %s' releases it)\n", name, name);
		return;
	}
	o = json_object_new_object();
	if (!o)
		return;
	json_object_object_add(o, "package", json_object_new_string(name));
	json_object_object_add(o, "held", json_object_new_boolean(1));
	json_object_object_add(o, "skipped", json_object_new_boolean(1));
	ctl_json_line(o);
	json_object_put(o);
}

/* Every upgradable package, in the order of the list. */
static int upgrade_all(json_object *params, json_object *upgradable, json_object *held, bool no_wait,
		       bool dry_run)
{
	size_t n = json_object_array_length(upgradable), ntodo = 0;
	_cleanup_free_ const char **names = NULL;

	if (n == 0) {
		if (!ctl_arg.json)
			printf("nothing to upgrade: every package is up to date\n");
		return EXIT_OK;
	}
	names = calloc(n, sizeof(*names));
	if (!names)
		return ctl_oom();
	for (size_t i = 0; i < n; i++) {
		const char *name = json_object_get_string(json_object_array_get_idx(upgradable, i));

		if (array_has(held, name))
			skip_held(name);
		else
			names[ntodo++] = name;
	}
	if (ntodo == 0) {
		if (!ctl_arg.json)
			printf("nothing to upgrade: every package with a newer version is held\n");
		return EXIT_OK;
	}
	return ctl_install_packages(params, names, ntodo, "upgrade", no_wait, dry_run);
}

/*
 * The packages named, in order, once each: every one must be installed
 * (Info says so, or its words say it is not) before the first upgrade.
 */
static int upgrade_named(json_object *params, json_object *upgradable, json_object *held, char **names,
			 int n, bool no_wait, bool dry_run)
{
	for (int i = 0; i < n; i++) {
		json_object *q;
		int status;

		if (array_has(upgradable, names[i]))
			continue;
		q = json_object_new_object();
		if (!q)
			return ctl_oom();
		json_object_object_add(q, "package", json_object_new_string(names[i]));
		status = ctl_call("Info", q, 0, NULL, 0, on_info, NULL);
		json_object_put(q);
		if (status != EXIT_OK)
			return status;
	}
	_cleanup_free_ const char **todo = calloc((size_t)n + 1, sizeof(*todo));
	size_t ntodo = 0;

	if (!todo)
		return ctl_oom();
	for (int i = 0; i < n; i++) {
		const char *name = names[i];
		bool again = false;

		for (int k = 0; k < i && !again; k++)
			again = strcmp(names[k], name) == 0;
		if (again)
			continue;
		if (!array_has(upgradable, name)) {
			up_to_date(name);
			continue;
		}
		if (array_has(held, name)) {
			skip_held(name);
			continue;
		}
		todo[ntodo++] = name;
	}
	return ntodo ? ctl_install_packages(params, todo, ntodo, "upgrade", no_wait, dry_run) : EXIT_OK;
}

int verb_upgrade(int argc, char **argv)
{
	static const struct option options[] = {
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "no-wait", no_argument, NULL, OPT_NO_WAIT },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	json_object *search = NULL, *offered = NULL, *upgradable = NULL, *params = NULL, *held = NULL;
	bool dry_run = false, no_wait = false;
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case OPT_DRY_RUN:
			dry_run = true;
			break;
		case OPT_NO_WAIT:
			no_wait = true;
			break;
		case 'h':
			return ctl_help(verb_upgrade_usage);
		default:
			return ctl_option_error(c, argv);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (strchr(argv[i], '=') && ctl_package_spec(argv[i]))
			return ctl_usage_error("upgrade takes package names ('fatelfctl install %s' installs "
					       "that version)", argv[i]);
		if (!ctl_package_spec(argv[i]))
			return ctl_usage_error("'%s' is not a package name", argv[i]);
	}

	/* The newest version of each, newer than the one installed. */
	search = json_object_new_object();
	if (!search)
		return ctl_oom();
	json_object_object_add(search, "upgradable", json_object_new_boolean(1));
	status = ctl_call("Search", search, 0, NULL, 0, ctl_keep_packages, &offered);
	json_object_put(search);
	if (status != EXIT_OK)
		goto out;
	/* The held packages, which are left out. */
	held = json_object_new_array();
	if (!held) {
		status = ctl_oom();
		goto out;
	}
	status = ctl_call("List", NULL, 0, NULL, 0, on_list, held);
	if (status != EXIT_OK)
		goto out;
	params = json_object_new_object();
	if (!params || ctl_json_distinct(offered, "name", &upgradable) < 0) {
		status = ctl_oom();
		goto out;
	}
	if (dry_run)
		json_object_object_add(params, "dry_run", json_object_new_boolean(1));
	if (optind >= argc)
		status = upgrade_all(params, upgradable, held, no_wait, dry_run);
	else
		status = upgrade_named(params, upgradable, held, argv + optind, argc - optind, no_wait, dry_run);
out:
	json_object_put(held);
	json_object_put(params);
	json_object_put(upgradable);
	json_object_put(offered);
	return status;
}
