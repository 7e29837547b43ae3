/*
 * fatelfctl's internal interface: the verb handlers that the table in
 * fatelfctl.c dispatches to, the connection to fatelfd (conn.c) and the
 * output helpers every verb shares (output.c): tables, sizes, times, JSON,
 * the progress bar and the one-line errors with their exit codes. The
 * client speaks Varlink through lib/varlink/varlink.h and nothing else of
 * libfatelf: everything it knows about packages comes from the daemon.
 */
#ifndef FATELF_CLIENT_FATELFCTL_H
#define FATELF_CLIENT_FATELFCTL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "text.h"
#include "varlink.h"

/* Exit status of fatelfctl (documented in --help and fatelfctl(1)). */
enum {
	EXIT_OK = 0,
	EXIT_FAILED = 1,        /* the daemon refused, the operation failed, verify found problems */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_SYSTEM = 3,        /* cannot reach the daemon, protocol or system error */
	EXIT_DENIED = 4,        /* permission denied */
	EXIT_REPOSITORY = 5,    /* a repository's index, manifest or object was refused */
	EXIT_SIGNAL = 128,      /* + the signal that interrupted a wait (130 for SIGINT) */
};

#define CTL_DEFAULT_SOCKET "/run/fatelfd/io.fatelf.Manager"
#define CTL_INTERFACE "io.fatelf.Manager"
/* fatelfd's configuration as installed (AdminGroup= is in it). */
#define CTL_CONFIG_PATH SYSCONFDIR "/fatelf/fatelfd.conf"

/* One verb: a line of the table in fatelfctl.c. argv[0] is the verb. */
struct ctl_verb {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const char *usage;
};

/* The global options, valid before or after the verb. */
struct ctl_args {
	const char *socket;     /* --socket, $FATELF_SOCKET, or the default */
	bool json;              /* --json */
	const char *verb;       /* the verb running, for error lines */
};
extern struct ctl_args ctl_arg;

/* Verbs (verb_NAME.c): each returns an exit status. */
int verb_install(int argc, char **argv);
int verb_remove(int argc, char **argv);
int verb_autoremove(int argc, char **argv);
int verb_thin(int argc, char **argv);
int verb_cancel(int argc, char **argv);
int verb_list(int argc, char **argv);
int verb_info(int argc, char **argv);
int verb_files(int argc, char **argv);
int verb_owner(int argc, char **argv);
int verb_verify(int argc, char **argv);
int verb_status(int argc, char **argv);
int verb_history(int argc, char **argv);
int verb_policy(int argc, char **argv);
int verb_repo(int argc, char **argv);
int verb_update(int argc, char **argv);
int verb_search(int argc, char **argv);
int verb_upgrade(int argc, char **argv);
int verb_key(int argc, char **argv);
int verb_hold(int argc, char **argv);
int verb_unhold(int argc, char **argv);

extern const char verb_install_usage[];
extern const char verb_remove_usage[];
extern const char verb_autoremove_usage[];
extern const char verb_thin_usage[];
extern const char verb_cancel_usage[];
extern const char verb_list_usage[];
extern const char verb_info_usage[];
extern const char verb_files_usage[];
extern const char verb_owner_usage[];
extern const char verb_verify_usage[];
extern const char verb_status_usage[];
extern const char verb_history_usage[];
extern const char verb_policy_usage[];
extern const char verb_repo_usage[];
extern const char verb_update_usage[];
extern const char verb_search_usage[];
extern const char verb_upgrade_usage[];
extern const char verb_key_usage[];
extern const char verb_hold_usage[];

/* Calling the daemon (conn.c) */

/* What a reply callback returns: go on reading, or stop with success. */
#define CTL_CONTINUE 0
#define CTL_STOP 100

/*
 * Called for each successful reply, in order; params is the reply's
 * parameters object (borrowed), continues whether more replies follow.
 */
typedef int (*ctl_reply_fn)(json_object *params, bool continues, void *userdata);

/*
 * Connects to ctl_arg.socket, sends METHOD (the short name, e.g.
 * "Install") of io.fatelf.Manager with params (NULL for {}; not consumed)
 * and flags (VL_CALL_MORE for a stream), passing fds (may be NULL) with
 * the message, and feeds every reply to on_reply until the last one or
 * until on_reply returns CTL_STOP. An error reply, a refused connection or
 * a broken reply is reported on stderr (and as JSON on stdout with --json)
 * and its exit status returned; 0 otherwise.
 */
int ctl_call(const char *method, json_object *params, unsigned flags,
	     const int *fds, size_t n_fds, ctl_reply_fn on_reply, void *userdata);

/*
 * As ctl_call (without fds), but an error reply of the daemon is handed
 * back instead of reported: *ret_error gets its name (malloc'd) and
 * *ret_params its parameters (a new reference, or NULL), and the exit
 * status the error maps to is returned; the caller reports it with
 * ctl_error_reply, or leaves it unsaid. Any other failure (no daemon, a
 * broken reply) is reported as by ctl_call and leaves *ret_error NULL.
 */
int ctl_call_capture(const char *method, json_object *params, unsigned flags, ctl_reply_fn on_reply,
		     void *userdata, char **ret_error, json_object **ret_params);

/* Output (output.c) */

/*
 * The names of fatelfctl's own errors, for --json: with --json every error
 * is also one object {"error": NAME, "parameters": {..., "message": ...}}
 * on stdout, whether the daemon sent it or fatelfctl found it.
 */
#define CTL_ERROR_UNREACHABLE "fatelfctl.Unreachable"   /* socket, errno, hint */
#define CTL_ERROR_INTERRUPTED "fatelfctl.Interrupted"   /* signal */
#define CTL_ERROR_PROTOCOL    "fatelfctl.ProtocolError"
#define CTL_ERROR_USAGE       "fatelfctl.UsageError"
#define CTL_ERROR_SYSTEM      "fatelfctl.SystemError"
#define CTL_ERROR_DENIED      "fatelfctl.PermissionDenied"
#define CTL_ERROR_FAILED      "fatelfctl.Failed"

/* One error line "fatelfctl: VERB: MESSAGE" on stderr (and, with --json,
 * the object above, named after the status); returns status. */
int ctl_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line of advice after an error: "fatelfctl: MESSAGE" on stderr. */
void ctl_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ctl_error of an allocation that failed, in the one wording. */
int ctl_oom(void);
/* The same with a given name and parameters (taken; NULL for none). */
int ctl_error_data(int status, const char *name, json_object *params, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A usage error for the running verb; returns EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For getopt_long's '?' and ':' (with opterr = 0 and a leading ':'). */
int ctl_option_error(int c, char **argv);
/* Prints a verb's --help text with the global options and exit status. */
int ctl_help(const char *usage);
/*
 * Reports an error reply: its name turned into words, with the details
 * its parameters give, in one line; also the reply as JSON on stdout with
 * --json. Returns the exit status the error maps to.
 */
int ctl_error_reply(const char *error, json_object *params);
/* The words of an error reply (client/words.c): fills msg and returns the
 * exit status. verb and socket may be NULL. */
int ctl_error_words(const char *error, json_object *params, const char *verb, const char *socket,
		    char *msg, size_t size);
/* The table's i-th error name, NULL past the end (for tests). */
const char *ctl_words_error(size_t i);

/* true when color may be used on stream f (a TTY, NO_COLOR unset or empty) */
bool ctl_color(FILE *f);

/* Local time "YYYY-MM-DD HH:MM" ("-" for 0). */
const char *ctl_format_time(int64_t t, char buf[32]);
/* "42s", "5m 03s", "2h 07m", "3d 04h" */
const char *ctl_format_duration(int64_t s, char buf[32]);

/* Reading reply parameters: a missing or mistyped member gives the
 * fallback, so a newer daemon's extra or null fields never crash us. */
const char *ctl_json_str(json_object *o, const char *key, const char *fallback);
int64_t ctl_json_int(json_object *o, const char *key);
bool ctl_json_bool(json_object *o, const char *key);
json_object *ctl_json_obj(json_object *o, const char *key);   /* object or NULL */
json_object *ctl_json_array(json_object *o, const char *key); /* array or NULL */
/* A reply callback that keeps the reply's "packages" array in the
 * json_object * that userdata points to (a reference of its own). */
int ctl_keep_packages(json_object *params, bool continues, void *userdata);
/* Joins an array of strings with ", " into buf ("-" when empty). */
const char *ctl_json_join(json_object *array, char *buf, size_t size);
/* The distinct strings that member key of the objects of array holds, in
 * the order they first come, as a new array in *ret (members that are
 * missing or not strings are skipped). 0 or -ENOMEM. */
int ctl_json_distinct(json_object *array, const char *key, json_object **ret);

/* A Search reply's Available objects (a repository's package version) */

/* Those of packages whose name is exactly name, in order, as a new array
 * in *ret that shares them (Search matches a part of the name). 0 or
 * -ENOMEM. */
int ctl_available_of(json_object *packages, const char *name, json_object **ret);
/* "2.0 (main), 1.0 (main)": each one's version and repository, in order,
 * into buf ("-" when none). */
const char *ctl_available_join(json_object *available, char *buf, size_t size);

/* JSON output: one pretty document, or one compact line (for streams). */
void ctl_json_print(json_object *o);
void ctl_json_line(json_object *o);
/* s as a terminal may show it (fatelf_text_display: control and
 * bidirectional characters escaped), into f; for a name, a path or a
 * summary of a reply printed outside a table. */
void ctl_put_shown(FILE *f, const char *s);

/* Aligned tables: rows added as strings, printed with column widths from
 * content; the last column is not padded. */
struct ctl_table {
	size_t ncols;
	size_t nrows;           /* rows, not counting the header */
	char **cells;           /* (nrows + 1) * ncols, row 0 is the header */
	size_t cap;             /* cells allocated */
	bool *right;            /* per column: right-aligned (numbers) */
};
int ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *header, const bool *right);
/* Adds a row of ncols strings (copied; NULL prints as "-"). */
int ctl_table_add(struct ctl_table *t, const char *const *row);
void ctl_table_print(const struct ctl_table *t, FILE *f);
void ctl_table_done(struct ctl_table *t);

/* Progress bar on stderr: shown only on a TTY and without --json. */
bool ctl_progress_enabled(void);
/* Draws a Progress object ({phase, bytes_done, ...}), replacing the last. */
void ctl_progress_draw(json_object *progress);
/* Erases the bar (no-op when none is drawn). */
void ctl_progress_clear(void);

/* A transaction's Result in words ("installed hello 1.0: ..."), with the
 * config files kept; install, remove and thin share it. */
void ctl_result_print(json_object *result);

/*
 * The reply callback of install, remove and thin (more: true): JSON lines
 * with --json; else the progress bar, then the Result(s) in words. With
 * no_wait it stops at the first reply, saying the call was queued.
 */
struct ctl_tx_state {
	bool no_wait;
	const char *what;       /* "install of FILE", for the queued line */
};
int ctl_tx_reply(json_object *params, bool continues, void *userdata);

/*
 * One Install call (verb_install.c) with params, its source already set
 * (fd: the descriptor passed with it, or NULL), as a stream: the progress,
 * then the result in words and, for a repository install, the line
 * "fetch: N objects (SIZE), K from installed files" ("would fetch" for a
 * dry run). what names it in the --no-wait line ("install of FILE").
 * Returns the exit status.
 */
int ctl_install_call(json_object *params, const int *fds, size_t nfds, const char *what, bool no_wait,
		     bool dry_run);
/*
 * Installs the n repository packages named ("NAME" or "NAME=VERSION"), one
 * Install call each with params (the "package" member set per call), in
 * order, stopping at the first that fails and returning its exit status.
 * verb names the calls in the --no-wait lines ("VERB of NAME").
 */
int ctl_install_packages(json_object *params, const char *const *names, size_t n, const char *verb,
			 bool no_wait, bool dry_run);

/*
 * Whether an install's argument names a package of the repositories:
 * "NAME" or "NAME=VERSION", NAME by the package name rule
 * ([a-z0-9][a-z0-9+.-]*, 2 to 255 characters) and VERSION of a dpkg
 * version's characters, starting with a digit (fatelfd checks the rest).
 * The shape alone: whether a file of that name exists is the caller's.
 */
bool ctl_package_spec(const char *arg);

/*
 * A minisign public key as `repo add --key` takes it: the text of a .pub
 * file (an optional "untrusted comment:" line, then the key line) or the
 * key line alone. Points *ret_line at the key line ("RW" and 54 more
 * base64 characters, blanks around it left out) inside text.
 */
enum ctl_key_kind {
	CTL_KEY_PUBLIC,         /* a public key line */
	CTL_KEY_SECRET,         /* minisign's secret key file, not its .pub */
	CTL_KEY_INVALID,        /* anything else */
};
enum ctl_key_kind ctl_key_line(const char *text, size_t len, const char **ret_line, size_t *ret_len);

/*
 * "Did you mean" (client/suggest.c): the one of the n names nearest to
 * word (a Damerau-Levenshtein distance of 1, or 2 from five letters on,
 * case aside), else the only name word begins; NULL when none is near.
 */
const char *ctl_suggest(const char *word, const char *const *names, size_t n);

/*
 * After a PackageNotFound of eparams (a reply's parameters): the package
 * the repositories offer whose name is nearest to the one asked for, as
 * the member "suggestion" added to eparams (verb_search.c). Quiet when
 * the daemon refuses the Search; returns the exit status of a call that
 * failed otherwise (reported), else EXIT_OK.
 */
int ctl_package_suggest(json_object *eparams);

/* Splits "a,b,c" into a new JSON array of strings (empty items refused). */
int ctl_split_list(const char *s, json_object **ret);

/* Option parsing of a verb that takes only --help: returns 1 to go on
 * (optind at the first operand), 0 when done (--help printed), or
 * CTL_E_USAGE (reported). A verb returns ctl_exit_code(r) when r <= 0. */
int ctl_parse_plain(int argc, char **argv, const char *usage);

/* A bad command line, as a helper returns it once reported. */
#define CTL_E_USAGE (-EINVAL)
/* The one map from a helper's code to the exit status: EXIT_OK for 0 and
 * positive values, EXIT_USAGE for CTL_E_USAGE, EXIT_DENIED for -EACCES
 * and -EPERM, EXIT_SYSTEM for any other errno. */
int ctl_exit_code(int r);

#endif
