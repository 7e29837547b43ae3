/*
 * The fatelf tool's internal interface: the subcommand handlers that the
 * command table in fatelf.c dispatches to, the historical fatelf-* front
 * ends of compat.c, and the helpers every subcommand shares (exit codes,
 * one-line error reporting, validation warnings, JSON and size output,
 * option parsing). Nothing here is part of libfatelf.
 */
#ifndef FATELF_TOOL_CMD_H
#define FATELF_TOOL_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "fatelf.h"
#include "jsonput.h"
#include "text.h"

#include "exitstatus.h"

/* One subcommand: a line of the table in fatelf.c. */
struct fatelf_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	const char *usage;
};

/* Subcommands: argv[0] is the subcommand's name. Each returns an exit status. */
int cmd_glue(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_split(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_replace(int argc, char **argv);
int cmd_thin(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_targets(int argc, char **argv);
/* fatelf bundle: the front end execs fatelf-bundle (bundle_exec.c), which
 * runs cmd_bundle (cmd_bundle.c). */
int cmd_bundle_exec(int argc, char **argv);
int cmd_bundle(int argc, char **argv);
/* Execs the helper program (beside the running fatelf, else in the
 * package's libexec directory) as "fatelf ARGV..."; returns only on
 * failure, with an exit status. */
int cmd_exec_helper(const char *program, int argc, char **argv);
/* The --root commands (root_exec.c): install, list, files and owner
 * always, remove and verify when given --root; they exec fatelf-root. */
int cmd_root_exec(int argc, char **argv);
bool cmd_root_wanted(int argc, char **argv);

/* Their --help texts */
extern const char cmd_glue_usage[];
extern const char cmd_info_usage[];
extern const char cmd_validate_usage[];
extern const char cmd_extract_usage[];
extern const char cmd_split_usage[];
extern const char cmd_remove_usage[];
extern const char cmd_replace_usage[];
extern const char cmd_thin_usage[];
extern const char cmd_verify_usage[];
extern const char cmd_targets_usage[];
extern const char cmd_bundle_usage[];
extern const char cmd_repo_usage[];
/* root_usage.c */
extern const char cmd_root_install_usage[];
extern const char cmd_root_remove_usage[];
extern const char cmd_root_list_usage[];
extern const char cmd_root_files_usage[];
extern const char cmd_root_owner_usage[];
extern const char cmd_root_verify_usage[];

/* Historical front ends (compat.c): true when name is one of them. */
bool compat_is_name(const char *name);
int compat_main(const char *name, int argc, char **argv);

/* Errors and exit codes (output.c) */
/* What errors are prefixed with: "fatelf" or the historical name used. */
extern const char *program_name;

/*
 * The one map from a code to the exit status: EXIT_OK for 0 and positive
 * values, EXIT_UNIFY_* for a unify rule's code, EXIT_USAGE for
 * CMD_E_USAGE, else EXIT_SYSTEM (an errno) or EXIT_INVALID. The helpers
 * of the subcommands return codes (negative: failed, reported already);
 * a subcommand, which returns an exit status, maps them here.
 */
int cmd_exit_code(int r);
/* A bad command line: the library's "invalid argument", which is the user's. */
#define CMD_E_USAGE (-FATELF_E_INVALID)
/*
 * Prints "PROGRAM: SUBJECT: MESSAGE" on stderr, where SUBJECT is
 * d->subject when set, else file (omitted when NULL), and MESSAGE is
 * fatelf_diag_text(d, r). Returns cmd_exit_code(r).
 */
int cmd_report(const char *file, const fatelf_diag *d, int r);
/* A one-line usage error for subcommand cmd; returns EXIT_USAGE. */
int cmd_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* For getopt_long's '?' and ':' (with opterr = 0 and a leading ':'). */
int cmd_option_error(const char *cmd, int c, char **argv);
/* The same two for a helper: they return CMD_E_USAGE instead. */
int cmd_usage_failed(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cmd_option_failed(const char *cmd, int c, char **argv);
/*
 * Parses the options of a subcommand that takes only -o OUT and --help.
 * Returns 1 to go on (optind at the first operand, *ret_out set, an
 * error when missing), 0 when done (--help printed), or CMD_E_USAGE
 * (reported). A caller returns cmd_exit_code(r) when r <= 0.
 */
int cmd_parse_output(int argc, char **argv, const char *cmd, const char *usage,
		     const char **ret_out);
/*
 * The same for a subcommand that takes only -j/--json and --help:
 * *ret_json tells whether --json was given.
 */
int cmd_parse_json(int argc, char **argv, const char *cmd, const char *usage, bool *ret_json);
/* Prints a --help text and the exit status footer on stdout; returns 0. */
int cmd_help(const char *usage);

/* Validation warnings, collected by a fatelf_validate_opts callback */
struct cmd_warning {
	int warning;
	int record;
	char msg[512];
};

struct cmd_warnings {
	size_t n, cap;
	struct cmd_warning *v;
};

void cmd_warnings_init(struct cmd_warnings *w, fatelf_validate_opts *ret_opts);
void cmd_warnings_free(struct cmd_warnings *w);
/* "FATELF_W_UNDER_ALIGNED", "FATELF_W_TRAILING", or "FATELF_W_UNKNOWN". */
const char *cmd_warning_name(int warning);

/* Files */
/*
 * Opens and validates path (fatelf_open_validated), collecting warnings
 * into w (may be NULL) and the file's size into ret_size (may be NULL).
 * Returns the fd or a negative code with d filled.
 */
int cmd_open_validated(const char *path, fatelf_header *ret_hdr, fatelf_elfinfo *ret_info,
		       struct cmd_warnings *w, uint64_t *ret_size, fatelf_diag *d);
/* The same for a caller that needs only the header: 0 or a negative code. */
int cmd_read_header(const char *path, fatelf_header *ret_hdr, fatelf_diag *d);
/* 0 when some record of hdr matches the pattern target, else a negative
 * code (FATELF_E_NO_MATCH when none does). */
int cmd_header_match(const fatelf_header *hdr, const char *target, fatelf_diag *d);
/* The index of the record this machine would run, or a negative code. */
int cmd_host_record(const fatelf_header *hdr, fatelf_diag *d);
/*
 * For extract: "host" becomes "recordN" (in buf) for the record this
 * machine would run in the FatELF file in; any other target is returned
 * as typed.
 */
int cmd_resolve_target(const char *in, const char *target, char buf[32], const char **ret,
		       fatelf_diag *d);
/* Bytes after the end of the last record. */
uint64_t cmd_trailing_bytes(const fatelf_header *hdr, uint64_t file_size);

/* Output */
/* Largest power of two dividing v (0 for 0). */
uint64_t cmd_align_of(uint64_t v);
/* "REL", "EXEC", "DYN", "CORE", "NONE"; NULL for other values. */
const char *cmd_elf_type_name(uint16_t type);
/* JSON: printed pretty, slashes unescaped, one trailing newline. */
void cmd_json_print(struct json_object *o);
struct json_object *cmd_json_warning(const struct cmd_warning *w);
/* {"code": NAME, "record": N|null, "message": MSG} for a failure. */
struct json_object *cmd_json_error(const fatelf_diag *d, int r);

#endif
