/*
 * fatelf bundle: the vendor's and the admin's side of fat bundles
 * (doc/fatbundle.md). This file is the verb table and its dispatch; each
 * verb lives in its own cmd_bundle_VERB.c. A new verb is one new file and
 * one line of the table.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bundle_cmd.h"
#include "macro.h"

const char cmd_bundle_usage[] =
	"Usage: fatelf bundle create -o OUT --name N --version V [OPTIONS] TREE\n"
	"       fatelf bundle inspect [--json] BUNDLE\n"
	"       fatelf bundle verify [--json] [--key PUB]... BUNDLE\n"
	"       fatelf bundle extract [--target T] [--key PUB]... BUNDLE DIR\n"
	"\n"
	"Fat bundles: one signed archive of a staging tree for every architecture.\n"
	"\n"
	"create packs TREE (laid out like the target root) into OUT, written\n"
	"atomically. FatELF files are validated, plain ELF files recorded with\n"
	"their target. The same tree gives the same bytes; every member's mtime is\n"
	"$SOURCE_DATE_EPOCH, or 0.\n"
	"  -o, --output OUT            the bundle to write\n"
	"      --name N                package name ([a-z0-9][a-z0-9+.-]*)\n"
	"      --version V             package version (dpkg syntax)\n"
	"      --summary S, --vendor V, --license L, --homepage U\n"
	"      --compression C         none, gzip, xz or zstd (default)\n"
	"      --config GLOB           files matching GLOB are config files\n"
	"                              (repeatable; default: everything under etc/)\n"
	"      --allow-setid           keep setuid/setgid bits (else refused)\n"
	"      --sign SECKEY           sign with a minisign secret key\n"
	"      --password-file F       the key's password is F's first line\n"
	"                              (else asked on the terminal, if encrypted)\n"
	"      --trusted-comment T     the signature's trusted comment\n"
	"\n"
	"inspect checks the bundle and shows its package fields, targets, entries,\n"
	"and for each architecture the size of a thinned install.\n"
	"\n"
	"verify checks the signature, every hash and every FatELF record; with a\n"
	"--key (a minisign .pub file or an RW... string) a signature by one of the\n"
	"keys is required. Prints the first failure.\n"
	"\n"
	"extract unpacks BUNDLE into DIR (entry opt/x lands at DIR/opt/x), each\n"
	"FatELF thinned to T (an architecture such as aarch64, a target name, or\n"
	"\"host\") when --target is given. With --key, a signature is required.\n"
	"\n"
	"  -j, --json                  inspect, verify: JSON output\n"
	"  -h, --help                  show this help\n";

/* The verbs share one --help text: the bundle's, which documents them all. */
static const struct fatelf_cmd verbs[] = {
	{ "create",  "Pack a staging tree into a signed bundle",     cmd_bundle_create,  cmd_bundle_usage },
	{ "inspect", "Show a bundle's package, entries and thinning", cmd_bundle_inspect, cmd_bundle_usage },
	{ "verify",  "Check a bundle's signature, hashes and records", cmd_bundle_verify,  cmd_bundle_usage },
	{ "extract", "Unpack a bundle, thinned to one target",        cmd_bundle_extract, cmd_bundle_usage },
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
