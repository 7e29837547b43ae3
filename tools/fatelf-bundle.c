/*
 * fatelf-bundle: the bundle verbs of the fatelf tool, in a program of their
 * own because they alone link libarchive and libcrypto. "fatelf bundle
 * ARGS..." execs it as "fatelf bundle ARGS..." (see bundle_exec.c), and
 * "fatelf repo ARGS..." likewise; it is
 * installed in the package's libexec directory, not meant to be run by
 * hand.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bundle_cmd.h"

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "bundle") != 0 && strcmp(argv[1], "repo") != 0)) {
		fprintf(stderr, "fatelf-bundle: run as 'fatelf bundle VERB ...' or 'fatelf repo VERB ...'\n");
		return EXIT_USAGE;
	}
	optind = 0;
	if (strcmp(argv[1], "repo") == 0)
		return cmd_repo(argc - 1, argv + 1);
	return cmd_bundle(argc - 1, argv + 1);
}
