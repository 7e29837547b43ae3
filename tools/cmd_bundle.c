/*
 * fatelf bundle: the vendor's and the admin's side of fat bundles
 * (doc/fatbundle.md). This file is the verb table and its dispatch; each
 * verb lives in its own cmd_bundle_VERB.c. A new verb is one new file and
 * one line of the table. It runs in the fatelf-bundle program, which the
 * fatelf front end execs for "fatelf bundle" (bundle_exec.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bundle_cmd.h"
#include "macro.h"

/* The verbs share one --help text: the bundle's, which documents them all. */
static const struct fatelf_cmd verbs[] = {
	{ "create",  "Pack a staging tree into a signed bundle",     cmd_bundle_create,  cmd_bundle_usage },
	{ "inspect", "Show a bundle's package, entries and thinning", cmd_bundle_inspect, cmd_bundle_usage },
	{ "verify",  "Check a bundle's signature, hashes and records", cmd_bundle_verify,  cmd_bundle_usage },
	{ "extract", "Unpack a bundle, thinned to one target",        cmd_bundle_extract, cmd_bundle_usage },
	{ "keygen",  "Make a minisign key pair to sign bundles",      cmd_bundle_keygen,  cmd_bundle_usage },
};

/* "create, inspect, verify" and then last_sep and "extract": the verbs
 * named in usage errors, so that they follow the table. */
static const char *verb_list(const char *last_sep, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(verbs) && len < cap; i++) {
		const char *sep = i == 0 ? "" : i + 1 == ARRAY_SIZE(verbs) ? last_sep : ", ";
		int k = snprintf(buf + len, cap - len, "%s%s", sep, verbs[i].name);

		if (k < 0)
			break;
		len += (size_t)k;
	}
	return buf;
}

int cmd_bundle(int argc, char **argv)
{
	char list[256];

	if (argc < 2)
		return cmd_usage_error("bundle", "expected a verb: %s",
				       verb_list(" or ", list, sizeof(list)));
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0)
		return cmd_help(cmd_bundle_usage);
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(argv[1], verbs[i].name) == 0) {
			optind = 0;
			return verbs[i].run(argc - 1, argv + 1);
		}
	return cmd_usage_error("bundle", "unknown verb '%s' (%s)", argv[1],
			       verb_list(", ", list, sizeof(list)));
}
