/*
 * fatelfctl policy: the install policy fatelfd applies, from its config,
 * as "key: value" lines.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_policy_usage[] =
	"Usage: fatelfctl policy\n"
	"\n"
	"Show the install policy fatelfd applies: the policy and its targets, the\n"
	"paths kept fat, whether a signature is required, the trusted keys\n"
	"directory and the admin group.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *p = ctl_json_obj(params, "policy");
	char buf[2048];

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	printf("policy: %s\n", ctl_json_str(p, "policy", "?"));
	printf("targets: %s\n", ctl_json_join(ctl_json_array(p, "targets"), buf, sizeof(buf)));
	printf("keep fat: %s\n", ctl_json_join(ctl_json_array(p, "keep_fat"), buf, sizeof(buf)));
	printf("require signature: %s\n", ctl_json_bool(p, "require_signature") ? "yes" : "no");
	printf("trusted keys: %s\n", ctl_json_str(p, "trusted_keys", "-"));
	printf("admin group: %s\n", ctl_json_str(p, "admin_group", "-"));
	return CTL_CONTINUE;
}

int verb_policy(int argc, char **argv)
{
	int r = ctl_parse_plain(argc, argv, verb_policy_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind < argc)
		return ctl_usage_error("no arguments expected ('%s')", argv[optind]);
	return ctl_call("GetPolicy", NULL, 0, NULL, 0, on_reply, NULL);
}
