/*
 * fatelf-root: fatelf's --root commands (install, remove, list, files,
 * owner, verify) in a program of their own, because they alone link the
 * install engine, SQLite and libarchive. "fatelf install ARGS..." execs it
 * as "fatelf install ARGS..." (see root_exec.c); it is installed in the
 * package's libexec directory, not meant to be run by hand.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "root_cmd.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} root_commands[] = {
	{ "install", root_install },
	{ "remove",  root_remove },
	{ "list",    root_list },
	{ "files",   root_files },
	{ "owner",   root_owner },
	{ "verify",  root_verify },
};

int main(int argc, char **argv)
{
	for (size_t i = 0; argc >= 2 && i < ARRAY_SIZE(root_commands); i++)
		if (strcmp(argv[1], root_commands[i].name) == 0) {
			optind = 0;
			return root_commands[i].run(argc - 1, argv + 1);
		}
	fprintf(stderr, "fatelf-root: run as 'fatelf install|remove|list|files|owner|verify --root DIR ...'\n");
	return EXIT_USAGE;
}
