/*
 * The historical fatelf-* tools (fatelf-glue, fatelf-extract, ...), as
 * front ends of the one binary: the same positional arguments, a
 * "USAGE: ..." line for a wrong count, and exit status 0 or 1 only, so
 * that scripts written for the old tools keep working. The work itself
 * is the library's, with its full validation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "macro.h"

struct compat_tool {
	const char *name;
	const char *args;       /* the historical USAGE line's arguments */
	int min_args, max_args; /* positional arguments; max -1: no limit */
	int (*run)(char **args, int n, fatelf_diag *d, const char **ret_file);
};

static int compat_glue(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	fatelf_glue_opts opts = { 0 };

	*ret_file = args[0];
	return fatelf_glue(args[0], (const char *const *)args + 1, (size_t)(n - 1), &opts, d);
}

static int compat_extract(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	const char *target;
	char buf[32];
	int r;

	*ret_file = args[1];
	r = cmd_resolve_target(args[1], args[2], buf, &target, d);
	if (r < 0)
		return r;
	fatelf_diag_clear(d);
	return fatelf_extract(args[0], args[1], target, d);
}

static int compat_remove(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	*ret_file = args[1];
	return fatelf_remove(args[0], args[1], args[2], d);
}

static int compat_replace(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	*ret_file = args[1];
	return fatelf_replace(args[0], args[1], args[2], d);
}

static int compat_split(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	*ret_file = args[0];
	return fatelf_split(args[0], NULL, NULL, NULL, d);
}

static int compat_validate(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	static fatelf_header hdr;

	*ret_file = args[0];
	return cmd_read_header(args[0], &hdr, d);
}

static int compat_verify(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	static fatelf_header hdr;
	int r;

	*ret_file = args[0];
	r = cmd_read_header(args[0], &hdr, d);
	if (r < 0)
		return r;
	fatelf_diag_clear(d);
	return cmd_header_match(&hdr, args[1], d);
}

/* The historical report: a few lines per record, sizes in decimal. */
static int compat_info(char **args, int n, fatelf_diag *d, const char **ret_file)
{
	static fatelf_header hdr;
	int r;

	*ret_file = args[0];
	r = cmd_read_header(args[0], &hdr, d);
	if (r < 0)
		return r;
	printf("%s: FatELF format version %u\n", args[0], (unsigned)hdr.version);
	printf("%u records.\n", (unsigned)hdr.nrecords);
	for (unsigned i = 0; i < hdr.nrecords; i++) {
		const fatelf_record *rec = &hdr.records[i];
		const char *osabi = fatelf_osabi_name(rec->target.osabi);
		const char *mach = fatelf_machine_name(rec->target.machine);
		const char *desc = fatelf_machine_desc(rec->target.machine);

		printf("Binary at index #%u:\n", i);
		printf("  OSABI %u (%s) version %u,\n", (unsigned)rec->target.osabi,
		       osabi ? osabi : "unknown", (unsigned)rec->target.osabi_version);
		printf("  %u bits\n", rec->target.word_size == FATELF_CLASS64 ? 64u : 32u);
		printf("  %s byteorder\n",
		       rec->target.byte_order == FATELF_DATA2MSB ? "Bigendian" : "Littleendian");
		printf("  Machine %u (%s%s%s)\n", (unsigned)rec->target.machine,
		       mach ? mach : "unknown", desc ? ": " : "", desc ? desc : "");
		printf("  Offset %" PRIu64 "\n", rec->offset);
		printf("  Size %" PRIu64 "\n", rec->size);
	}
	return 0;
}

static const struct compat_tool tools[] = {
	{ "fatelf-glue",     "<out> <in1> <in2> [... <inN>]", 3, -1, compat_glue },
	{ "fatelf-extract",  "<out> <in> <target>",           3, 3,  compat_extract },
	{ "fatelf-remove",   "<out> <in> <target>",           3, 3,  compat_remove },
	{ "fatelf-replace",  "<out> <in> <newelf>",           3, 3,  compat_replace },
	{ "fatelf-split",    "<in>",                          1, 1,  compat_split },
	{ "fatelf-verify",   "<in> <target>",                 2, 2,  compat_verify },
	{ "fatelf-validate", "<in>",                          1, 1,  compat_validate },
	{ "fatelf-info",     "<in>",                          1, 1,  compat_info },
};

static const struct compat_tool *compat_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (strcmp(tools[i].name, name) == 0)
			return &tools[i];
	return NULL;
}

bool compat_is_name(const char *name)
{
	return compat_find(name) != NULL;
}

int compat_main(const char *name, int argc, char **argv)
{
	const struct compat_tool *t = compat_find(name);
	const char *file = NULL;
	int nargs = argc - 1;
	fatelf_diag d;
	int r;

	if (nargs >= 1 && strcmp(argv[1], "--version") == 0) {
		printf("%s %s (libfatelf %s)\n%s\n", name, PACKAGE_VERSION, fatelf_version(), FATELF_LICENSE_TEXT);
		return 0;
	}
	if (nargs >= 1 && strcmp(argv[1], "--help") == 0) {
		printf("USAGE: %s %s\n", t->name, t->args);
		return 0;
	}
	if (nargs < t->min_args || (t->max_args >= 0 && nargs > t->max_args)) {
		fprintf(stderr, "USAGE: %s %s\n", t->name, t->args);
		return 1;
	}

	fatelf_diag_clear(&d);
	r = t->run(argv + 1, nargs, &d, &file);
	fflush(stdout);
	if (r < 0) {
		cmd_report(file, &d, r);
		return 1;
	}
	return 0;
}
