/*
 * fatelf's --root commands: install, remove, list, files, owner and
 * verify run the install engine directly on a root directory, its state
 * under ROOT/var/lib/fatelf, for image builds, chroots and CI where no
 * fatelfd runs. They live in their own program, fatelf-root (installed in
 * the package's libexec directory), because they alone link the engine,
 * SQLite and libarchive; the fatelf front end execs it (root_exec.c).
 */
#ifndef FATELF_TOOL_ROOT_CMD_H
#define FATELF_TOOL_ROOT_CMD_H

#include <stdbool.h>

#include "cmd.h"
#include "engine.h"

/* The state directory of a root, relative to it: where fatelfd started
 * with --state-dir ROOT/var/lib/fatelf finds the same store. */
#define ROOT_STATE_DIR "var/lib/fatelf"
/* The trusted keys of a root, relative to it, unless --keys says. */
#define ROOT_KEYS_DIR "etc/fatelf/keys.d"

/* What every --root command's command line gives. */
struct root_args {
	const char *cmd;                /* "install", ... (for messages) */
	const char *root;               /* --root DIR, as typed */
	bool json;
	bool dry_run;
	bool allow_unsigned;
	bool force;
	bool allow_downgrade;
	bool purge;                     /* remove --purge */
	const char *keys;               /* --keys DIR */
	const char *policy;             /* --policy NAME */
	const char *targets;            /* --targets T1,T2 */
	const char *keep_fat[ENGINE_TARGETS_MAX];  /* --keep-fat GLOB */
	size_t nkeep_fat;
};

/* The commands (argv[0] is the command's name); each returns an exit status. */
int root_install(int argc, char **argv);
int root_remove(int argc, char **argv);
int root_list(int argc, char **argv);
int root_files(int argc, char **argv);
int root_owner(int argc, char **argv);
int root_verify(int argc, char **argv);

/* cmd_root.c: the options, the engine, errors */
enum {
	ROOT_OPT_MUTATE = 1 << 0,       /* --dry-run */
	ROOT_OPT_INSTALL = 1 << 1,      /* --policy, --targets, --keep-fat, --keys, --allow-unsigned, ... */
	ROOT_OPT_REMOVE = 1 << 2,       /* --purge */
};
/* Parses argv into a (flags: the options the command takes besides
 * --root, --json and --help). Returns 1 to go on (optind at the first
 * operand), 0 when done (--help printed), or CMD_E_USAGE (reported); a
 * caller returns cmd_exit_code(r) when r <= 0. */
int root_parse(int argc, char **argv, unsigned flags, const char *usage, struct root_args *a);
/* Opens the engine on a->root (read-only: no lock, no recovery; the
 * store must exist). Returns 0 or an exit status, the error reported. */
int root_open(const struct root_args *a, bool readonly, engine **ret);
/* Reports a failure on stderr ("fatelf: CMD: SUBJECT: MESSAGE", with
 * "busy: " before the lock's message), and with --json as
 * {"error": {"code", "subject", "message"}} on stdout. Returns the exit
 * status: EXIT_BUSY for ENGINE_E_LOCKED, EXIT_SYSTEM for errno, else
 * EXIT_INVALID. */
int root_fail(const struct root_args *a, const fatelf_diag *d, int r);

/*
 * Text from the store as a terminal may show it: the store's rows may
 * predate the readers' rule against control and bidirectional
 * characters, so the human output escapes them (fatelf_text_display);
 * --json gives the rows as they are. root_put writes s (NULL: "-") to
 * stdout; root_shown returns it malloc'd (NULL: out of memory).
 */
void root_put(const char *s);
char *root_shown(const char *s);

/* With --json, a --root command prints what fatelfctl --json prints for
 * the same verb: the reply of fatelfd's method, its members built by
 * lib/install/results.c (the shapes of schema/io.fatelf.Manager.varlink). */

#endif
