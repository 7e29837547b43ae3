/*
 * fatelfctl hold and unhold: a held package keeps its installed version.
 * fatelfd refuses to install another version of it (PackageHeld) unless
 * --force is given, and 'fatelfctl upgrade' leaves it out, saying so.
 * One Hold or Unhold call per package named, in order, stopping at the
 * first that fails.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fatelfctl.h"

const char verb_hold_usage[] =
	"Usage: fatelfctl hold PACKAGE...\n"
	"       fatelfctl unhold PACKAGE...\n"
	"\n"
	"hold keeps each installed PACKAGE at its version: 'fatelfctl upgrade'\n"
	"leaves it out (and says so), and installing another version of it, from a\n"
	"file, a URL or a repository, is refused unless root gives --force.\n"
	"Reinstalling the same version stays possible. unhold releases the hold;\n"
	"removing the package releases it too. 'fatelfctl list' shows holds in\n"
	"its HELD column, 'fatelfctl status' on its held line.\n"
	"\n"
	"Both need root or the admin group.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n"
	"\n"
	"With --json: one object {package, held, changed} per PACKAGE.\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	const char *name = ctl_json_str(params, "package", "?");
	bool held = ctl_json_bool(params, "held"), changed = ctl_json_bool(params, "changed");

	(void)continues;
	(void)userdata;
	if (ctl_arg.json)
		ctl_json_line(params);
	else if (held)
		printf(changed ? "%s held\n" : "%s was already held\n", name);
	else
		printf(changed ? "%s no longer held\n" : "%s was not held\n", name);
	return CTL_CONTINUE;
}

static int hold_verb(int argc, char **argv, const char *method)
{
	int status, r = ctl_parse_plain(argc, argv, verb_hold_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing PACKAGE");
	for (int i = optind; i < argc; i++)
		if (!ctl_package_spec(argv[i]) || strchr(argv[i], '='))
			return ctl_usage_error("'%s' is not a package name", argv[i]);
	for (int i = optind; i < argc; i++) {
		json_object *params = json_object_new_object();

		if (!params)
			return ctl_oom();
		json_object_object_add(params, "package", json_object_new_string(argv[i]));
		status = ctl_call(method, params, 0, NULL, 0, on_reply, NULL);
		json_object_put(params);
		if (status != EXIT_OK)
			return status;
	}
	return EXIT_OK;
}

int verb_hold(int argc, char **argv)
{
	return hold_verb(argc, argv, "Hold");
}

int verb_unhold(int argc, char **argv)
{
	return hold_verb(argc, argv, "Unhold");
}
