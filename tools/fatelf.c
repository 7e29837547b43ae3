/*
 * fatelf: the offline tool that glues, inspects, validates, extracts,
 * splits, removes, replaces and thins FatELF files, and installs fat
 * bundles into a root directory (--root). This file holds main()
 * and the one table of subcommands; each subcommand lives in its own
 * cmd_NAME.c. Invoked under a historical name (fatelf-glue, fatelf-info,
 * ...), the same binary runs the positional front ends in compat.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "macro.h"

static int cmd_help_command(int argc, char **argv);

static const char cmd_help_usage[] =
	"Usage: fatelf help [COMMAND]\n"
	"\n"
	"Show the list of commands, or the options of one command.\n";

static const struct fatelf_cmd commands[] = {
	{ "glue",     "Glue ELF (and FatELF) files into one FatELF file",  cmd_glue,     cmd_glue_usage },
	{ "info",     "Show a FatELF file's header and records",           cmd_info,     cmd_info_usage },
	{ "validate", "Check FatELF files against every rule",             cmd_validate, cmd_validate_usage },
	{ "extract",  "Write one record out as a plain ELF file",          cmd_extract,  cmd_extract_usage },
	{ "split",    "Write every record out as its own ELF file",        cmd_split,    cmd_split_usage },
	{ "remove",   "Write a FatELF file without some records",          cmd_remove,   cmd_remove_usage },
	{ "replace",  "Replace records with new ELF files",                cmd_replace,  cmd_replace_usage },
	{ "thin",     "Keep only the records a machine needs",             cmd_thin,     cmd_thin_usage },
	{ "verify",   "Tell whether a file has a record for a target",     cmd_verify,   cmd_verify_usage },
	{ "targets",  "Show this machine's targets and binfmt_misc state", cmd_targets,  cmd_targets_usage },
	{ "bundle",   "Create, inspect, verify and extract fat bundles",   cmd_bundle_exec, cmd_bundle_usage },
	{ "repo",     "Make and keep a repository of fat packages",        cmd_bundle_exec, cmd_repo_usage },
	{ "install",  "Install fat bundles into a root directory (--root)", cmd_root_exec, cmd_root_install_usage },
	{ "list",     "List the packages of a root directory (--root)",    cmd_root_exec, cmd_root_list_usage },
	{ "files",    "List a package's files in a root directory (--root)", cmd_root_exec, cmd_root_files_usage },
	{ "owner",    "Tell which package owns a path (--root)",           cmd_root_exec, cmd_root_owner_usage },
	{ "help",     "Show help for a command",                           cmd_help_command, cmd_help_usage },
};

static const struct fatelf_cmd *command_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void main_usage(FILE *f)
{
	fputs("Usage: fatelf [--help] [--version] COMMAND [ARGS...]\n"
	      "\n"
	      "Create, inspect and edit FatELF multi-architecture binaries.\n"
	      "\n"
	      "Commands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Run 'fatelf help COMMAND' or 'fatelf COMMAND --help' for a command's options.\n"
	      "\n"
	      "Exit status:\n"
	      "  0  success\n"
	      "  1  invalid input, target not found, or verify found no matching record\n"
	      "  2  usage error\n"
	      "  3  system or I/O error (for example ENOENT, EACCES, ENOSPC)\n"
	      "  4  --root: the root is busy (a fatelfd running on it holds its lock)\n"
	      "\n"
	      "Installed as fatelf-glue, fatelf-info, fatelf-extract, fatelf-split,\n"
	      "fatelf-remove, fatelf-replace, fatelf-verify and fatelf-validate, it takes\n"
	      "the historical positional arguments and exits 0 or 1; see fatelf(1).\n", f);
}

static void print_version(void)
{
	printf("%s %s (libfatelf %s)\n%s\n", program_name, PACKAGE_VERSION, fatelf_version(), FATELF_LICENSE_TEXT);
}

static int cmd_help_command(int argc, char **argv)
{
	const struct fatelf_cmd *c;

	if (argc < 2) {
		main_usage(stdout);
		return EXIT_OK;
	}
	if (argc > 2)
		return cmd_usage_error("help", "too many arguments");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(cmd_help_usage);
	c = command_find(argv[1]);
	if (!c)
		return cmd_usage_error("help", "unknown command '%s'", argv[1]);
	return cmd_help(c->usage);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	const struct fatelf_cmd *cmd;
	const char *name = argc > 0 ? base_name(argv[0]) : "fatelf";
	int c;

	if (compat_is_name(name)) {
		program_name = name;
		return compat_main(name, argc, argv);
	}

	/* '+': stop at the command name; the rest belongs to the command. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", options, NULL)) >= 0) {
		switch (c) {
		case 'h':
			main_usage(stdout);
			return EXIT_OK;
		case 'V':
			print_version();
			return EXIT_OK;
		default:
			return cmd_option_error(NULL, c, argv);
		}
	}
	if (optind >= argc) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	cmd = command_find(argv[optind]);
	if (!cmd)
		return cmd_usage_error(NULL, "unknown command '%s'", argv[optind]);

	/* Each command parses its own options from a fresh getopt state. */
	argc -= optind;
	argv += optind;
	optind = 0;
	/* remove and verify work on a root's packages when given --root. */
	if ((cmd->run == cmd_remove || cmd->run == cmd_verify) && cmd_root_wanted(argc, argv))
		return cmd_root_exec(argc, argv);
	return cmd->run(argc, argv);
}
