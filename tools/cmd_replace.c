/*
 * fatelf replace: writes a FatELF file in which the record for each new
 * ELF file's target holds that ELF instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cmd.h"
#include "macro.h"

const char cmd_replace_usage[] =
	"Usage: fatelf replace -o OUT FILE NEWELF...\n"
	"\n"
	"Write FILE to OUT with the record for each NEWELF's target (machine, osabi,\n"
	"osabi version, word size and byte order) replaced by NEWELF. FILE must have\n"
	"a record for every NEWELF, and no two NEWELFs may have the same target.\n"
	"OUT keeps FILE's mode. OUT may be FILE: it is replaced atomically.\n"
	"\n"
	"Options:\n"
	"  -o, --output OUT   the FatELF file to write\n"
	"  -h, --help         show this help\n";

/* The target of the ELF file at path, checked like a record would be. */
static int elf_target(const char *path, fatelf_target *ret, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	fatelf_reader src;
	fatelf_elfinfo info;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot open: %s", fatelf_strerror(r));
	}
	r = fatelf_reader_seekable_fd(&src, fd);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot read: %s", fatelf_strerror(r));
	r = fatelf_elf_inspect(&src, 0, src.size, -1, &info, d);
	if (r < 0)
		return r;
	*ret = info.target;
	return 0;
}

/*
 * Checks every NEWELF before anything is written, so that a bad one among
 * several leaves OUT untouched rather than half replaced.
 */
static int replace_check(const char *in, char **newelfs, int n, fatelf_diag *d)
{
	static fatelf_header hdr;
	bool used[FATELF_MAX_RECORDS] = { false };
	int r;

	r = cmd_read_header(in, &hdr, d);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++) {
		fatelf_target t;
		char name[FATELF_TARGET_NAME_MAX];
		int found = -1;

		fatelf_diag_clear(d);
		r = elf_target(newelfs[i], &t, d);
		if (r < 0) {
			snprintf(d->subject, sizeof(d->subject), "%s", newelfs[i]);
			return r;
		}
		for (unsigned k = 0; k < hdr.nrecords; k++)
			if (fatelf_target_equal(&hdr.records[k].target, &t))
				found = (int)k;
		fatelf_target_format(&t, name);
		if (found < 0) {
			r = fatelf_diag_set(d, -FATELF_E_NO_MATCH, -1,
					    "no record has the target of %s (%s)", newelfs[i], name);
			return r;
		}
		if (used[found])
			return fatelf_diag_set(d, -FATELF_E_DUPLICATE, found,
					       "record %d (%s) is replaced twice, last by %s",
					       found, name, newelfs[i]);
		used[found] = true;
	}
	return 0;
}

int cmd_replace(int argc, char **argv)
{
	const char *out = NULL, *in;
	fatelf_diag d;
	int r;

	r = cmd_parse_output(argc, argv, "replace", cmd_replace_usage, &out);
	if (r <= 0)
		return cmd_exit_code(r);
	if (argc - optind < 2)
		return cmd_usage_error("replace", "expected FILE and at least one NEWELF");
	in = argv[optind];

	fatelf_diag_clear(&d);
	r = replace_check(in, argv + optind + 1, argc - optind - 1, &d);
	if (r < 0)
		return cmd_report(in, &d, r);

	/* The first replacement reads FILE; each next one edits OUT in place. */
	for (int i = optind + 1; i < argc; i++) {
		fatelf_diag_clear(&d);
		r = fatelf_replace(out, i == optind + 1 ? in : out, argv[i], &d);
		if (r < 0)
			return cmd_report(out, &d, r);
	}
	return EXIT_OK;
}
