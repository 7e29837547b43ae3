/*
 * fatelfctl info: one installed package, as "key: value" lines.
 */
#include <getopt.h>
#include <stdio.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_info_usage[] =
	"Usage: fatelfctl info PKG\n"
	"\n"
	"Show an installed package: version, summary, vendor, signer, when and\n"
	"with which policy it was installed, its files and their sizes.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

static const char *or_dash(const char *s)
{
	return s && s[0] ? s : "-";
}

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *p = ctl_json_obj(params, "package");
	int64_t shipped = ctl_json_int(p, "shipped_size"), installed = ctl_json_int(p, "installed_size");
	char a[32], b[32], c[32];

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	printf("name: %s\n", ctl_json_str(p, "name", "?"));
	printf("version: %s\n", ctl_json_str(p, "version", "?"));
	printf("summary: %s\n", or_dash(ctl_json_str(p, "summary", NULL)));
	printf("vendor: %s\n", or_dash(ctl_json_str(p, "vendor", NULL)));
	printf("signer: %s\n", ctl_json_str(p, "signer", "unsigned"));
	printf("installed: %s\n", ctl_format_time(ctl_json_int(p, "installed_at"), a));
	printf("policy: %s\n", ctl_json_str(p, "policy", "-"));
	printf("files: %lld\n", (long long)ctl_json_int(p, "files"));
	printf("size as shipped: %s\n", fatelf_format_size((uint64_t)shipped, b));
	printf("size on disk: %s\n", fatelf_format_size((uint64_t)installed, c));
	printf("saved by thinning: %s\n",
	       fatelf_format_size(shipped > installed ? (uint64_t)(shipped - installed) : 0, a));
	return CTL_CONTINUE;
}

int verb_info(int argc, char **argv)
{
	json_object *params;
	int status = ctl_parse_plain(argc, argv, verb_info_usage);

	if (status >= 0)
		return status;
	if (optind >= argc)
		return ctl_usage_error("missing PKG");
	if (optind + 1 < argc)
		return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind + 1]);
	params = json_object_new_object();
	if (!params)
		return ctl_error(EXIT_SYSTEM, "out of memory");
	json_object_object_add(params, "package", json_object_new_string(argv[optind]));
	status = ctl_call("Info", params, 0, NULL, 0, on_reply, NULL);
	json_object_put(params);
	return status;
}
