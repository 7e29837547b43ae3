/*
 * Helpers shared by the fatelf subcommands: mapping library codes to the
 * documented exit status, the one-line error format ("fatelf: FILE:
 * MESSAGE"), collecting validation warnings, and the small pieces of
 * human and JSON output that several commands print the same way. Keeping
 * them here is what makes every subcommand report errors identically.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "cmd.h"
#include "macro.h"
#include "text.h"

const char *program_name = "fatelf";

/* The unify rules' own exit statuses (fatelf(1), EXIT STATUS). */
static const struct {
	int code;
	int status;
} rule_exit[] = {
	{ FATELF_E_UNIFY_TYPE, EXIT_UNIFY_TYPE },
	{ FATELF_E_UNIFY_MISSING, EXIT_UNIFY_MISSING },
	{ FATELF_E_UNIFY_MODE, EXIT_UNIFY_MODE },
	{ FATELF_E_UNIFY_SYMLINK, EXIT_UNIFY_SYMLINK },
	{ FATELF_E_UNIFY_DIFFERS, EXIT_UNIFY_DIFFERS },
	{ FATELF_E_UNIFY_TARGET, EXIT_UNIFY_TARGET },
	{ FATELF_E_UNIFY_ARCH, EXIT_UNIFY_ARCH },
	{ FATELF_E_UNIFY_FIELD, EXIT_UNIFY_FIELD },
	{ FATELF_E_UNIFY_SCRIPTS, EXIT_UNIFY_SCRIPTS },
};

int cmd_exit_code(int r)
{
	if (r >= 0)
		return EXIT_OK;
	for (size_t i = 0; i < ARRAY_SIZE(rule_exit); i++)
		if (-r == rule_exit[i].code)
			return rule_exit[i].status;
	/* The library's "bad option value" is the user's command line. */
	if (r == -FATELF_E_INVALID)
		return EXIT_USAGE;
	/* --root: another process (a fatelfd) holds the root's lock */
	if (r == -ENGINE_E_LOCKED)
		return EXIT_BUSY;
	if (-r < FATELF_E_BASE)
		return EXIT_SYSTEM;
	return EXIT_INVALID;
}

int cmd_report(const char *file, const fatelf_diag *d, int r)
{
	const char *subject = file;
	const char *msg = fatelf_diag_text(d, r);

	if (d && d->subject[0])
		subject = d->subject;
	/* A file name on disk or in an archive is anybody's: it reaches the
	 * terminal with its control and bidirectional characters escaped. */
	_cleanup_free_ char *shown_subject = subject ? fatelf_text_display(subject) : NULL;
	_cleanup_free_ char *shown_msg = fatelf_text_display(msg);

	if (subject)
		fprintf(stderr, "%s: %s: %s\n", program_name, shown_subject ? shown_subject : "?",
			shown_msg ? shown_msg : "?");
	else
		fprintf(stderr, "%s: %s\n", program_name, shown_msg ? shown_msg : "?");
	return cmd_exit_code(r);
}

static void usage_vprint(const char *cmd, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (cmd)
		fprintf(stderr, "%s: %s: %s (see '%s %s --help')\n", program_name, cmd, msg,
			program_name, cmd);
	else
		fprintf(stderr, "%s: %s (see '%s --help')\n", program_name, msg, program_name);
}

int cmd_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_vprint(cmd, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int cmd_usage_failed(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_vprint(cmd, fmt, ap);
	va_end(ap);
	return CMD_E_USAGE;
}

int cmd_option_error(const char *cmd, int c, char **argv)
{
	extern int optind, optopt;
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	/* A long-only option's optopt is its value (0x100 and up), not a
	 * letter: name it as typed instead. */
	bool letter = optopt > 0 && optopt < 0x80 && isgraph(optopt);

	if (c == ':') {
		if (letter)
			return cmd_usage_error(cmd, "option '-%c' needs an argument", optopt);
		return cmd_usage_error(cmd, "option '%s' needs an argument", arg);
	}
	if (letter)
		return cmd_usage_error(cmd, "unknown option '-%c'", optopt);
	return cmd_usage_error(cmd, "unknown option '%s'", arg);
}

int cmd_option_failed(const char *cmd, int c, char **argv)
{
	(void)cmd_option_error(cmd, c, argv);
	return CMD_E_USAGE;
}

int cmd_parse_output(int argc, char **argv, const char *cmd, const char *usage,
		     const char **ret_out)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *out = NULL;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			cmd_help(usage);
			return 0;
		default:
			return cmd_option_failed(cmd, c, argv);
		}
	}
	if (!out)
		return cmd_usage_failed(cmd, "missing -o OUT");
	*ret_out = out;
	return 1;
}

int cmd_parse_json(int argc, char **argv, const char *cmd, const char *usage, bool *ret_json)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	bool json = false;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jh", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			cmd_help(usage);
			return 0;
		default:
			return cmd_option_failed(cmd, c, argv);
		}
	}
	*ret_json = json;
	return 1;
}

int cmd_help(const char *usage)
{
	fputs(usage, stdout);
	fputs("\nExit status: 0 success; 1 invalid input, target not found or no match;\n"
	      "2 usage error; 3 system or I/O error (ENOENT, EACCES, ENOSPC, ...).\n",
	      stdout);
	return EXIT_OK;
}

static void warnings_add(void *ctx, int warning, int record, const char *msg)
{
	struct cmd_warnings *w = ctx;
	struct cmd_warning *v;

	if (GROW_ARRAY(w->v, w->cap, w->n + 1) < 0)
		return; /* a warning lost to OOM is not worth failing the file */
	v = w->v;
	v[w->n].warning = warning;
	v[w->n].record = record;
	snprintf(v[w->n].msg, sizeof(v[w->n].msg), "%s", msg ? msg : "");
	w->n++;
}

void cmd_warnings_init(struct cmd_warnings *w, fatelf_validate_opts *ret_opts)
{
	w->n = w->cap = 0;
	w->v = NULL;
	if (ret_opts) {
		ret_opts->warn = warnings_add;
		ret_opts->warn_ctx = w;
	}
}

void cmd_warnings_free(struct cmd_warnings *w)
{
	free(w->v);
	w->v = NULL;
	w->n = w->cap = 0;
}

const char *cmd_warning_name(int warning)
{
	switch (warning) {
	case FATELF_W_UNDER_ALIGNED:
		return "FATELF_W_UNDER_ALIGNED";
	case FATELF_W_TRAILING:
		return "FATELF_W_TRAILING";
	default:
		return "FATELF_W_UNKNOWN";
	}
}

int cmd_open_validated(const char *path, fatelf_header *ret_hdr, fatelf_elfinfo *ret_info,
		       struct cmd_warnings *w, uint64_t *ret_size, fatelf_diag *d)
{
	fatelf_validate_opts opts = { 0 };
	struct stat st;
	int fd;

	if (w)
		cmd_warnings_init(w, &opts);
	fatelf_diag_clear(d);
	fd = fatelf_open_validated(path, ret_hdr, ret_info, w ? &opts : NULL, d);
	if (fd < 0)
		return fd;
	if (ret_size) {
		if (fstat(fd, &st) < 0) {
			int r = -errno;

			close(fd);
			return fatelf_diag_set(d, r, -1, "cannot stat: %s", strerror(-r));
		}
		*ret_size = (uint64_t)st.st_size;
	}
	return fd;
}

int cmd_read_header(const char *path, fatelf_header *ret_hdr, fatelf_diag *d)
{
	int fd = cmd_open_validated(path, ret_hdr, NULL, NULL, NULL, d);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int cmd_header_match(const fatelf_header *hdr, const char *target, fatelf_diag *d)
{
	fatelf_pattern p;
	int r;

	r = fatelf_pattern_parse(target, &p, d);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < hdr->nrecords; i++)
		if (fatelf_pattern_match(&p, &hdr->records[i].target, (int)i))
			return 0;
	return fatelf_diag_set(d, -FATELF_E_NO_MATCH, -1, "no record matches %s", target);
}

int cmd_host_record(const fatelf_header *hdr, fatelf_diag *d)
{
	fatelf_host host;
	int r;

	r = fatelf_host_detect(&host);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot detect this machine's targets");
	return fatelf_host_select(&host, hdr, d);
}

uint64_t cmd_trailing_bytes(const fatelf_header *hdr, uint64_t file_size)
{
	uint64_t end = FATELF_TABLE_SIZE(hdr->nrecords);

	for (unsigned i = 0; i < hdr->nrecords; i++)
		end = MAX(end, hdr->records[i].offset + hdr->records[i].size);
	return file_size > end ? file_size - end : 0;
}

uint64_t cmd_align_of(uint64_t v)
{
	return v & (~v + 1);
}

const char *cmd_elf_type_name(uint16_t type)
{
	static const char *const names[] = { "NONE", "REL", "EXEC", "DYN", "CORE" };

	return type < ARRAY_SIZE(names) ? names[type] : NULL;
}

void cmd_json_print(struct json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					       JSON_C_TO_STRING_SPACED |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
}

static struct json_object *json_record_index(int record)
{
	return record >= 0 ? json_object_new_int(record) : NULL;
}

struct json_object *cmd_json_warning(const struct cmd_warning *w)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "code", json_object_new_string(cmd_warning_name(w->warning)));
	json_object_object_add(o, "record", json_record_index(w->record));
	json_object_object_add(o, "message", json_object_new_string(w->msg));
	return o;
}

struct json_object *cmd_json_error(const fatelf_diag *d, int r)
{
	struct json_object *o = json_object_new_object();
	const char *msg = fatelf_diag_text(d, r);

	json_object_object_add(o, "code", json_object_new_string(fatelf_error_name(r)));
	json_object_object_add(o, "record", json_record_index(d->record));
	json_object_object_add(o, "message", json_object_new_string(msg));
	return o;
}
