/*
 * fatelf info: validates FatELF files and describes them, as a human table
 * or as JSON: the header, every record's target and placement, the facts
 * of the ELF image it holds, the record this machine would run, and any
 * bytes after the last record.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "macro.h"

const char cmd_info_usage[] =
	"Usage: fatelf info [--json] FILE...\n"
	"\n"
	"Validate each FatELF FILE and show its size, format version and records:\n"
	"index, short name, full target, architecture, machine, osabi, word size,\n"
	"byte order, offset, size, alignment, ELF type and the largest PT_LOAD\n"
	"p_align; then the record this machine would run and any trailing bytes.\n"
	"\n"
	"Options:\n"
	"  -j, --json   print one JSON object per file (an array for several files)\n"
	"  -h, --help   show this help\n";

/* Everything info shows about one valid file */
struct info_file {
	const char *path;
	uint64_t size;
	fatelf_header hdr;
	fatelf_elfinfo elf[FATELF_MAX_RECORDS];
	int host_record;        /* -1: none */
	uint64_t trailing;
	struct cmd_warnings warnings;
};

/* A value's name, or prefix and its number when it has none. */
static const char *name_or_number(const char *name, const char *prefix, unsigned v,
				  char buf[16])
{
	if (name)
		return name;
	snprintf(buf, 16, "%s%u", prefix, v);
	return buf;
}

static const char *machine_name(uint16_t machine, char buf[16])
{
	return name_or_number(fatelf_machine_name(machine), "em", machine, buf);
}

static const char *osabi_name(uint8_t osabi, char buf[16])
{
	return name_or_number(fatelf_osabi_name(osabi), "osabi", osabi, buf);
}

static const char *elf_type(uint16_t type, char buf[16])
{
	return name_or_number(cmd_elf_type_name(type), "", type, buf);
}

static unsigned word_bits(uint8_t word_size)
{
	return word_size == FATELF_CLASS64 ? 64 : 32;
}

static const char *order_name(uint8_t byte_order)
{
	return byte_order == FATELF_DATA2MSB ? "be" : "le";
}

/* ------------------------------------------------------------ human table */

enum { COL_INDEX, COL_NAME, COL_ARCH, COL_MACHINE, COL_OSABI, COL_BITS, COL_ORDER,
       COL_OFFSET, COL_SIZE, COL_ALIGN, COL_TYPE, COL_PALIGN, COL_TARGET, NCOLS };

static const char *const col_titles[NCOLS] = {
	"#", "NAME", "ARCH", "MACHINE", "OSABI", "BITS", "ORDER",
	"OFFSET", "SIZE", "ALIGN", "TYPE", "P_ALIGN", "TARGET",
};

typedef char info_cell[FATELF_TARGET_NAME_MAX];

static void record_cells(const struct info_file *f, unsigned i, info_cell cells[NCOLS])
{
	const fatelf_record *rec = &f->hdr.records[i];
	const fatelf_target *t = &rec->target;
	const char *arch = fatelf_target_arch(t);
	char buf[16];

	snprintf(cells[COL_INDEX], sizeof(info_cell), "%u", i);
	fatelf_target_short_name(&f->hdr, (int)i, cells[COL_NAME]);
	snprintf(cells[COL_ARCH], sizeof(info_cell), "%s", arch ? arch : "-");
	snprintf(cells[COL_MACHINE], sizeof(info_cell), "%u %s", (unsigned)t->machine,
		 machine_name(t->machine, buf));
	snprintf(cells[COL_OSABI], sizeof(info_cell), "%s", osabi_name(t->osabi, buf));
	snprintf(cells[COL_BITS], sizeof(info_cell), "%u", word_bits(t->word_size));
	snprintf(cells[COL_ORDER], sizeof(info_cell), "%s", order_name(t->byte_order));
	snprintf(cells[COL_OFFSET], sizeof(info_cell), "0x%" PRIx64, rec->offset);
	snprintf(cells[COL_SIZE], sizeof(info_cell), "%" PRIu64, rec->size);
	snprintf(cells[COL_ALIGN], sizeof(info_cell), "%" PRIu64, cmd_align_of(rec->offset));
	snprintf(cells[COL_TYPE], sizeof(info_cell), "%s", elf_type(f->elf[i].type, buf));
	snprintf(cells[COL_PALIGN], sizeof(info_cell), "0x%" PRIx64, f->elf[i].max_align);
	fatelf_target_format(t, cells[COL_TARGET]);
}

static void print_row(const char *const row[NCOLS], const size_t width[NCOLS])
{
	for (unsigned c = 0; c < NCOLS; c++) {
		if (c == NCOLS - 1)
			printf("%s\n", row[c]);
		else
			printf("%-*s  ", (int)width[c], row[c]);
	}
}

static void print_human(const struct info_file *f)
{
	static info_cell cells[FATELF_MAX_RECORDS][NCOLS];
	size_t width[NCOLS];
	const char *row[NCOLS];
	char sz[32];

	printf("file:        %s\n", f->path);
	printf("size:        %" PRIu64 " (%s)\n", f->size, fatelf_format_size(f->size, sz));
	printf("version:     %u\n", (unsigned)f->hdr.version);
	printf("records:     %u\n", (unsigned)f->hdr.nrecords);
	if (f->host_record >= 0) {
		char name[FATELF_TARGET_NAME_MAX];

		fatelf_target_short_name(&f->hdr, f->host_record, name);
		printf("host record: %d (%s)\n", f->host_record, name);
	} else {
		printf("host record: none (this machine runs none of the records)\n");
	}
	if (f->trailing)
		printf("trailing:    %" PRIu64 " bytes after the last record\n", f->trailing);
	for (size_t i = 0; i < f->warnings.n; i++)
		printf("warning:     %s\n", f->warnings.v[i].msg);
	printf("\n");

	for (unsigned c = 0; c < NCOLS; c++)
		width[c] = strlen(col_titles[c]);
	for (unsigned i = 0; i < f->hdr.nrecords; i++) {
		record_cells(f, i, cells[i]);
		for (unsigned c = 0; c < NCOLS; c++)
			width[c] = MAX(width[c], strlen(cells[i][c]));
	}
	print_row(col_titles, width);
	for (unsigned i = 0; i < f->hdr.nrecords; i++) {
		for (unsigned c = 0; c < NCOLS; c++)
			row[c] = cells[i][c];
		print_row(row, width);
	}
}

/* ------------------------------------------------------------ JSON */

static struct json_object *json_string_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static struct json_object *record_json(const struct info_file *f, unsigned i)
{
	const fatelf_record *rec = &f->hdr.records[i];
	const fatelf_target *t = &rec->target;
	struct json_object *o = json_object_new_object();
	char name[FATELF_TARGET_NAME_MAX], buf[16];

	json_object_object_add(o, "index", json_object_new_int((int)i));
	fatelf_target_short_name(&f->hdr, (int)i, name);
	json_object_object_add(o, "name", json_object_new_string(name));
	fatelf_target_format(t, name);
	json_object_object_add(o, "target", json_object_new_string(name));
	json_object_object_add(o, "arch", json_string_or_null(fatelf_target_arch(t)));
	json_object_object_add(o, "machine", json_object_new_int(t->machine));
	json_object_object_add(o, "machine_name",
			       json_object_new_string(machine_name(t->machine, buf)));
	json_object_object_add(o, "osabi", json_object_new_int(t->osabi));
	json_object_object_add(o, "osabi_name", json_object_new_string(osabi_name(t->osabi, buf)));
	json_object_object_add(o, "osabi_version", json_object_new_int(t->osabi_version));
	json_object_object_add(o, "word_size", json_object_new_int((int)word_bits(t->word_size)));
	json_object_object_add(o, "byte_order", json_object_new_string(order_name(t->byte_order)));
	json_object_object_add(o, "offset", json_object_new_uint64(rec->offset));
	json_object_object_add(o, "size", json_object_new_uint64(rec->size));
	json_object_object_add(o, "align", json_object_new_uint64(cmd_align_of(rec->offset)));
	json_object_object_add(o, "elf_type", json_object_new_string(elf_type(f->elf[i].type, buf)));
	json_object_object_add(o, "p_align", json_object_new_uint64(f->elf[i].max_align));
	return o;
}

static struct json_object *file_json(const struct info_file *f)
{
	struct json_object *o = json_object_new_object();
	struct json_object *records = json_object_new_array();
	struct json_object *warnings = json_object_new_array();

	json_object_object_add(o, "file", json_object_new_string(f->path));
	json_object_object_add(o, "size", json_object_new_uint64(f->size));
	json_object_object_add(o, "version", json_object_new_int(f->hdr.version));
	for (unsigned i = 0; i < f->hdr.nrecords; i++)
		json_object_array_add(records, record_json(f, i));
	json_object_object_add(o, "records", records);
	json_object_object_add(o, "host_record",
			       f->host_record >= 0 ? json_object_new_int(f->host_record) : NULL);
	json_object_object_add(o, "trailing_bytes", json_object_new_uint64(f->trailing));
	for (size_t i = 0; i < f->warnings.n; i++)
		json_object_array_add(warnings, cmd_json_warning(&f->warnings.v[i]));
	json_object_object_add(o, "warnings", warnings);
	return o;
}

/* ------------------------------------------------------------ command */

static int info_load(struct info_file *f, const char *path, fatelf_diag *d)
{
	fatelf_diag hd;
	int fd;

	f->path = path;
	fd = cmd_open_validated(path, &f->hdr, f->elf, &f->warnings, &f->size, d);
	if (fd < 0)
		return fd;
	close(fd);
	fatelf_diag_clear(&hd);
	f->host_record = cmd_host_record(&f->hdr, &hd);
	if (f->host_record < 0)
		f->host_record = -1;
	f->trailing = cmd_trailing_bytes(&f->hdr, f->size);
	return 0;
}

int cmd_info(int argc, char **argv)
{
	static struct info_file f;
	_cleanup_json_ struct json_object *array = NULL;
	bool json = false, printed = false;
	int r, ret = EXIT_OK;

	r = cmd_parse_json(argc, argv, "info", cmd_info_usage, &json);
	if (r <= 0)
		return cmd_exit_code(r);
	if (optind >= argc)
		return cmd_usage_error("info", "no input files");

	if (json)
		array = json_object_new_array();
	for (int i = optind; i < argc; i++) {
		fatelf_diag d;

		memset(&f, 0, sizeof(f));
		r = info_load(&f, argv[i], &d);
		if (r < 0) {
			int code = cmd_report(argv[i], &d, r);

			ret = MAX(ret, code);
			cmd_warnings_free(&f.warnings);
			continue;
		}
		if (json) {
			json_object_array_add(array, file_json(&f));
		} else {
			if (printed)
				printf("\n");
			print_human(&f);
			printed = true;
		}
		cmd_warnings_free(&f.warnings);
	}

	/* One file gives one object; several give an array of the valid ones. */
	if (json) {
		if (argc - optind > 1)
			cmd_json_print(array);
		else if (json_object_array_length(array) == 1)
			cmd_json_print(json_object_array_get_idx(array, 0));
	}
	fflush(stdout);
	return ret;
}
