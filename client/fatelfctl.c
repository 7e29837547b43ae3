/*
 * fatelfctl: the command-line client of fatelfd. This file holds main(),
 * the global options (--socket, --json, accepted before or after the verb)
 * and the one table of verbs; each verb lives in its own verb_NAME.c and
 * talks to the daemon through conn.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "fatelfctl.h"
#include "macro.h"

struct ctl_args ctl_arg = {
	.socket = CTL_DEFAULT_SOCKET,
};

static int verb_help(int argc, char **argv);

static const char verb_help_usage[] =
	"Usage: fatelfctl help [VERB]\n"
	"\n"
	"Show the list of verbs, or the options of one verb.\n";

static const struct ctl_verb verbs[] = {
	{ "install", verb_install, "Install or upgrade from a bundle or repository", verb_install_usage },
	{ "upgrade", verb_upgrade, "Upgrade packages from the repositories",         verb_upgrade_usage },
	{ "remove",  verb_remove,  "Remove a package",                               verb_remove_usage },
	{ "autoremove", verb_autoremove, "Remove automatic packages nothing needs",   verb_autoremove_usage },
	{ "thin",    verb_thin,    "Thin installed fat files to the policy",         verb_thin_usage },
	{ "cancel",  verb_cancel,  "Cancel the running transaction (rolled back)",   verb_cancel_usage },
	{ "list",    verb_list,    "List installed packages",                        verb_list_usage },
	{ "info",    verb_info,    "Show one package",                               verb_info_usage },
	{ "files",   verb_files,   "List the files of a package",                    verb_files_usage },
	{ "owner",   verb_owner,   "Tell which package owns a path",                 verb_owner_usage },
	{ "verify",  verb_verify,  "Check installed files against the store",        verb_verify_usage },
	{ "status",  verb_status,  "Show the daemon, the machine and what runs",     verb_status_usage },
	{ "history", verb_history, "Show past transactions",                         verb_history_usage },
	{ "policy",  verb_policy,  "Show the install policy in force",               verb_policy_usage },
	{ "repo",    verb_repo,    "Add, remove or list the repositories",           verb_repo_usage },
	{ "update",  verb_update,  "Fetch the repositories' indexes",                verb_update_usage },
	{ "search",  verb_search,  "Search the packages the repositories offer",     verb_search_usage },
	{ "hold",    verb_hold,    "Keep packages at their installed version",       verb_hold_usage },
	{ "unhold",  verb_unhold,  "Release held packages",                          verb_hold_usage },
	{ "key",     verb_key,     "Add, list or remove the trusted signing keys",   verb_key_usage },
	{ "help",    verb_help,    "Show help for a verb",                           verb_help_usage },
};

/* The words apt and dnf users type: each runs a verb of the table, with
 * an option put first when it has one. */
static const struct {
	const char *name, *verb, *option;
} aliases[] = {
	{ "show", "info", NULL },
	{ "purge", "remove", "--purge" },
};

/* The verb name runs, alias or not; *ret_option the option an alias adds
 * (NULL for none). */
static const struct ctl_verb *verb_find(const char *name, const char **ret_option)
{
	*ret_option = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(aliases); i++)
		if (strcmp(aliases[i].name, name) == 0) {
			*ret_option = aliases[i].option;
			name = aliases[i].verb;
		}
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

/* The usage error of a word that is no verb, with the verb or alias it
 * is nearest to. */
static int unknown_verb(const char *word)
{
	const char *names[ARRAY_SIZE(verbs) + ARRAY_SIZE(aliases)];
	const char *near;
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		names[n++] = verbs[i].name;
	for (size_t i = 0; i < ARRAY_SIZE(aliases); i++)
		names[n++] = aliases[i].name;
	near = ctl_suggest(word, names, n);
	if (near)
		return ctl_usage_error("unknown verb '%s': did you mean %s?", word, near);
	return ctl_usage_error("unknown verb '%s'", word);
}

static void main_usage(FILE *f)
{
	fputs("Usage: fatelfctl [--socket PATH] [--json] VERB [ARGS...]\n"
	      "\n"
	      "Install, remove and thin fat bundles through fatelfd, from files or from\n"
	      "repositories, and ask what is installed.\n"
	      "\n"
	      "Verbs:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
	fputs("\n"
	      "Aliases:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(aliases); i++)
		fprintf(f, "  %-10s %s%s%s\n", aliases[i].name, aliases[i].verb, aliases[i].option ? " " : "",
			aliases[i].option ? aliases[i].option : "");
	fputs("\n"
	      "Options (before or after the verb):\n"
	      "  --socket PATH  talk to the fatelfd listening on PATH (default $FATELF_SOCKET,\n"
	      "                 else " CTL_DEFAULT_SOCKET ")\n"
	      "  --json         print the daemon's replies, and every error, as JSON\n"
	      "                 (JSON lines for streams)\n"
	      "  -y, --yes, --assume-yes\n"
	      "                 accepted for apt's and dnf's habits; fatelfctl never asks\n"
	      "  -h, --help     show this help\n"
	      "  -V, --version  show the version\n"
	      "\n"
	      "Run 'fatelfctl help VERB' or 'fatelfctl VERB --help' for a verb's options.\n"
	      "\n"
	      "Exit status:\n"
	      "  0  success\n"
	      "  1  the daemon refused or the operation failed, or verify found problems\n"
	      "  2  usage error\n"
	      "  3  cannot reach the daemon, protocol or system error\n"
	      "  4  permission denied\n"
	      "  5  a repository's index, manifest or object was refused (RepositoryInvalid,\n"
	      "     RepositoryMismatch, RepositoryExpired)\n"
	      "  130 interrupted (Ctrl-C) while waiting; the transaction goes on\n"
	      "\n"
	      "With --json, every error is also a JSON object on stdout:\n"
	      "{\"error\": NAME, \"parameters\": {...}}.\n", f);
}

static int verb_help(int argc, char **argv)
{
	const struct ctl_verb *v;
	const char *option;

	if (argc < 2) {
		main_usage(stdout);
		return EXIT_OK;
	}
	if (argc > 2)
		return ctl_usage_error("too many arguments");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return ctl_help(verb_help_usage);
	v = verb_find(argv[1], &option);
	if (!v)
		return unknown_verb(argv[1]);
	return ctl_help(v->usage);
}

/*
 * Takes --socket, --json and -y out of args wherever they are (up to a "--",
 * which is left for the verb), so that every verb accepts them after its
 * name without knowing about them. Returns 1 when the option was consumed
 * (with *i advanced past its value), 0 when it is not global, or -EINVAL
 * when its value is missing.
 */
static int global_option(int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (strcmp(a, "--json") == 0) {
		ctl_arg.json = true;
		return 1;
	}
	/* Nothing asks for a confirmation: a script written for apt or dnf
	 * runs unchanged. */
	if (strcmp(a, "-y") == 0 || strcmp(a, "--yes") == 0 || strcmp(a, "--assume-yes") == 0)
		return 1;
	if (strncmp(a, "--socket=", 9) == 0) {
		ctl_arg.socket = a + 9;
		return 1;
	}
	if (strcmp(a, "--socket") == 0) {
		if (*i + 1 >= argc)
			return -EINVAL;
		ctl_arg.socket = argv[++*i];
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	_cleanup_free_ char **rest = NULL;
	const struct ctl_verb *v = NULL;
	const char *option = NULL;
	const char *env = getenv("FATELF_SOCKET");
	bool dashdash = false;
	int n = 0;

	if (env && env[0])
		ctl_arg.socket = env;
	/* Known before anything can fail, so that every error is JSON too. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			ctl_arg.json = true;
	/* + 1 for the option an alias adds */
	rest = calloc((size_t)argc + 2, sizeof(*rest));
	if (!rest) {
		fprintf(stderr, "fatelfctl: %s\n", fatelf_diag_text(NULL, -ENOMEM));
		return EXIT_SYSTEM;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;

		if (dashdash) {
			rest[n++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			dashdash = true;
			if (v)
				rest[n++] = argv[i];
			continue;
		}
		r = global_option(argc, argv, &i);
		if (r < 0)
			return ctl_usage_error("option '--socket' needs an argument");
		if (r > 0)
			continue;
		if (v) {
			rest[n++] = argv[i];
			continue;
		}
		/* Before the verb: only the global options and --help/--version. */
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			main_usage(stdout);
			return EXIT_OK;
		}
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			printf("fatelfctl %s\n%s\n", PACKAGE_VERSION, FATELF_LICENSE_TEXT);
			return EXIT_OK;
		}
		if (a[0] == '-' && a[1])
			return ctl_usage_error("unknown option '%s'", a);
		v = verb_find(a, &option);
		if (!v)
			return unknown_verb(a);
		/* Errors name the verb that runs, whose --help is the one to read. */
		ctl_arg.verb = v->name;
		rest[n++] = argv[i];
		if (option)
			rest[n++] = (char *)option;
	}
	if (!v) {
		if (dashdash)
			return ctl_usage_error("missing verb");
		main_usage(stderr);
		return EXIT_USAGE;
	}
	if (!ctl_arg.socket[0])
		return ctl_usage_error("--socket needs a path");

	/* Each verb parses its own options from a fresh getopt state. */
	optind = 0;
	return v->run(n, rest);
}
