/*
 * fatelfctl install: install or upgrade a package from a fat bundle. A
 * local bundle is opened here, with the caller's own rights, and travels
 * to fatelfd as an open file descriptor, so the daemon never opens a path
 * an unprivileged user named; a URL is fetched by the daemon itself; a
 * package name is looked up by the daemon in its repositories, several
 * names in one call and one transaction. The call and its words serve upgrade too (verb_upgrade.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fatelfctl.h"
#include "macro.h"
#include "text.h"

const char verb_install_usage[] =
	"Usage: fatelfctl install FILE|URL|- [OPTIONS]\n"
	"       fatelfctl install FILE... [OPTIONS]\n"
	"       fatelfctl install NAME[=VERSION]... [OPTIONS]\n"
	"       fatelfctl install --reinstall PKG|FILE... [OPTIONS]\n"
	"\n"
	"Install or upgrade the package in a fat bundle. FILE is opened by fatelfctl\n"
	"with your rights and handed to fatelfd as an open file; '-' hands over\n"
	"standard input; an http://, https:// or file:// URL is fetched by fatelfd.\n"
	"\n"
	"NAME installs the newest version of package NAME that the repositories offer\n"
	"('fatelfctl search'), NAME=VERSION that version; fatelfd fetches only the\n"
	"objects that no installed file already holds, and fatelfctl prints\n"
	"\"fetch: N objects (SIZE), K from installed files\" after the result. An\n"
	"argument is a NAME only when it has no '/', follows the package name rule\n"
	"([a-z0-9][a-z0-9+.-]*) and no file of that name exists: an existing file\n"
	"(anything but a directory) always wins, so write hello=VERSION or run from\n"
	"another directory to install package hello beside a file named hello.\n"
	"Several NAMEs are one transaction, in the order given: all of them are\n"
	"installed, or, when one fails, none is. So are several FILEs (at most 16;\n"
	"each a bundle file, no URL or '-' among them). A URL or '-' installs alone.\n"
	"\n"
	"--reinstall repairs an installed package: the same version again, every file\n"
	"rewritten. PKG reinstalls from where it came (its repository or registry,\n"
	"see 'fatelfctl info'); a package installed from a file or a URL needs the\n"
	"bundle given again: fatelfctl install --reinstall FILE.\n"
	"\n"
	"Options:\n"
	"  --policy P         native, compatible, keep or targets, for this install only\n"
	"                     (root only)\n"
	"  --targets T,...    the targets to keep (with --policy targets, the default\n"
	"                     when --targets is given)\n"
	"  --allow-unsigned   accept a bundle without a signature\n"
	"  --force            take over paths that conflict with another package or\n"
	"                     with files no package owns\n"
	"  --allow-downgrade  install a version older than the installed one\n"
	"  --reinstall        repair an installed package (above)\n"
	"  --dry-run          run every check and report what would change (for a NAME,\n"
	"                     what it would fetch); write nothing\n"
	"  --no-wait          return once fatelfd has accepted the install; it goes on\n"
	"  -h, --help         show this help\n"
	"\n"
	"On a terminal a progress bar shows on standard error; while another\n"
	"transaction runs, the install waits its turn (\"waiting\").\n";

enum {
	OPT_POLICY = 0x100,
	OPT_TARGETS,
	OPT_ALLOW_UNSIGNED,
	OPT_FORCE,
	OPT_ALLOW_DOWNGRADE,
	OPT_DRY_RUN,
	OPT_NO_WAIT,
	OPT_REINSTALL,
};

static bool policy_is_known(const char *p)
{
	return strcmp(p, "native") == 0 || strcmp(p, "compatible") == 0 || strcmp(p, "keep") == 0 ||
	       strcmp(p, "targets") == 0;
}

static int add_bool(json_object *params, const char *key, bool v)
{
	if (!v)
		return 0;
	return json_object_object_add(params, key, json_object_new_boolean(1));
}

static const char *file_type_word(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	return "not a file";
}

/*
 * Whether what fd reads can be a bundle, by fatelfd's own rule (a file, a
 * pipe or a socket, and a file has bytes), so that the user reads why in
 * words naming the source rather than fatelfd's refusal of a parameter.
 * 0 or an exit status.
 */
static int source_check(int fd, const char *name)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return ctl_error(EXIT_SYSTEM, "cannot read %s: %s", name, strerror(errno));
	if (!(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return ctl_error(EXIT_FAILED, "%s is %s, not a bundle (a bundle comes from a file or "
				 "a pipe)", name, file_type_word(st.st_mode));
	if (S_ISREG(st.st_mode) && st.st_size == 0)
		return ctl_error(EXIT_FAILED, "%s is empty, not a bundle", name);
	return 0;
}

/*
 * Whether an operand names a package of the repositories: the shape of
 * one, and no file of that name (a directory is no bundle, so it does not
 * count). A URL or a path never does.
 */
static bool source_is_package(const char *arg)
{
	struct stat st;

	if (strchr(arg, '/') || !ctl_package_spec(arg))
		return false;
	return !(stat(arg, &st) == 0 && !S_ISDIR(st.st_mode));
}

/*
 * A word that is neither a file nor, by its shape, a package name
 * ("Greeter"): no file of that name, no '/', no URL. Such an install is
 * told it names no package, with the nearest one the repositories offer,
 * rather than that a file is missing.
 */
static bool source_is_missing_word(const char *arg)
{
	struct stat st;

	if (strchr(arg, '/') || strstr(arg, "://") || strcmp(arg, "-") == 0)
		return false;
	return lstat(arg, &st) < 0 && errno == ENOENT;
}

/* The PackageNotFound the daemon would send; returns its exit status. */
static int no_such_package(const char *arg)
{
	json_object *p = json_object_new_object();
	int status;

	if (!p)
		return ctl_oom();
	json_object_object_add(p, "package", json_object_new_string(arg));
	status = ctl_package_suggest(p);
	if (status == EXIT_OK)
		status = ctl_error_reply(CTL_INTERFACE ".PackageNotFound", p);
	json_object_put(p);
	return status;
}

/* The file's absolute path, which fatelfd records as the package's
 * source (it never opens it); none for standard input, or for a path
 * that cannot be resolved or holds a control character. */
static void add_source_path(json_object *params, const char *file)
{
	_cleanup_free_ char *abs = NULL;

	if (strcmp(file, "-") == 0 || !(abs = realpath(file, NULL)))
		return;
	for (const char *p = abs; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return;
	json_object_object_add(params, "source_path", json_object_new_string(abs));
}

/* Opens a local bundle with the caller's rights; 0 or an exit status. */
static int source_open(const char *file, int *ret_fd)
{
	int fd, status;

	if (strcmp(file, "-") == 0) {
		/* A terminal is never a bundle: the user forgot the redirection. */
		if (isatty(STDIN_FILENO))
			return ctl_usage_error("'-' reads the bundle from standard input, which is a terminal");
		status = source_check(STDIN_FILENO, "standard input");
		if (status != 0)
			return status;
		*ret_fd = STDIN_FILENO;
		return 0;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ctl_error(EXIT_SYSTEM, "cannot open %s: %s", file, strerror(errno));
	status = source_check(fd, file);
	if (status != 0) {
		close(fd);
		return status;
	}
	*ret_fd = fd;
	return 0;
}

/* The replies of one Install call: the shared transaction words, and what
 * a repository install fetched (or would fetch) after its result. */
struct install_state {
	struct ctl_tx_state tx;
	json_object *fetch;     /* the last "fetch" seen, until the result */
	bool dry_run;
};

static void fetch_print(json_object *f, bool dry)
{
	int64_t fetched = ctl_json_int(f, "fetched"), cloned = ctl_json_int(f, "cloned");
	char bytes[32];

	printf("%s: %lld %s (%s), %lld from installed files", dry ? "would fetch" : "fetch",
	       (long long)fetched, fetched == 1 ? "object" : "objects",
	       fatelf_format_size((uint64_t)ctl_json_int(f, "bytes"), bytes),
	       (long long)ctl_json_int(f, "local"));
	/* an older fatelfd sends no "cloned": 0 */
	if (cloned > 0)
		printf(" (%lld cloned)", (long long)cloned);
	putchar('\n');
}

static int on_reply(json_object *params, bool continues, void *userdata)
{
	struct install_state *st = userdata;
	json_object *fetch = ctl_json_obj(params, "fetch");
	json_object *result = ctl_json_obj(params, "result");
	json_object *results = ctl_json_array(params, "results");
	int r;

	/* Several packages, one transaction: each result with what it fetched. */
	if (results && !ctl_arg.json) {
		json_object *fetches = ctl_json_array(params, "fetches");
		size_t n = json_object_array_length(results);
		bool dry = st->dry_run;

		ctl_progress_clear();
		for (size_t i = 0; i < n; i++) {
			json_object *ri = json_object_array_get_idx(results, i);
			json_object *fi = fetches ? json_object_array_get_idx(fetches, i) : NULL;

			dry |= ctl_json_bool(ri, "dry_run");
			ctl_result_print(ri);
			if (fi)
				fetch_print(fi, dry);
		}
		/* one package: its result line says it all */
		if (n > 1)
			printf("%s: %zu packages in one transaction\n", dry ? "dry run" : "committed", n);
		return CTL_CONTINUE;
	}

	/* With --json the reply carries it as it came. */
	if (fetch && !ctl_arg.json) {
		json_object_put(st->fetch);
		st->fetch = json_object_get(fetch);
	}
	r = ctl_tx_reply(params, continues, &st->tx);
	if (st->fetch && result) {
		fetch_print(st->fetch, st->dry_run || ctl_json_bool(result, "dry_run"));
		json_object_put(st->fetch);
		st->fetch = NULL;
	}
	return r;
}

/* An install of names: a name no repository offers gets the one they
 * offer that is nearest, when one is. */
static int install_named(json_object *params, struct install_state *st)
{
	_cleanup_free_ char *error = NULL;
	json_object *eparams = NULL;
	int status;

	status = ctl_call_capture("Install", params, VL_CALL_MORE, on_reply, st, &error, &eparams);
	if (!error)
		return status;
	if (strcmp(error, CTL_INTERFACE ".PackageNotFound") == 0 && eparams) {
		status = ctl_package_suggest(eparams);
		if (status != EXIT_OK) {
			json_object_put(eparams);
			return status;
		}
	}
	status = ctl_error_reply(error, eparams);
	json_object_put(eparams);
	return status;
}

int ctl_install_call(json_object *params, const int *fds, size_t nfds, const char *what, bool no_wait,
		     bool dry_run)
{
	struct install_state st = { .tx = { .no_wait = no_wait, .what = what }, .dry_run = dry_run };
	int status;

	/* Always a stream: it carries the progress, the "waiting" turn and lets
	 * --no-wait return on the first reply. */
	if (fds || !ctl_arg.verb || strcmp(ctl_arg.verb, "install") != 0)
		status = ctl_call("Install", params, VL_CALL_MORE, fds, nfds, on_reply, &st);
	else
		status = install_named(params, &st);
	json_object_put(st.fetch);
	return status;
}

int ctl_install_packages(json_object *params, const char *const *names, size_t n, const char *verb,
			 bool no_wait, bool dry_run)
{
	/* An upgrade or a repair leaves the automatic marks as they are. */
	if (strcmp(verb, "upgrade") == 0 || strcmp(verb, "reinstall") == 0)
		json_object_object_add(params, "keep_automatic", json_object_new_boolean(1));
	/* Several: one call, one transaction, all of them or none. */
	if (n > 1) {
		json_object *a = json_object_new_array();
		char what[128];

		for (size_t i = 0; a && i < n; i++)
			json_object_array_add(a, json_object_new_string(names[i]));
		json_object_object_add(params, "packages", a);
		snprintf(what, sizeof(what), "%s of %zu packages", verb, n);
		return ctl_install_call(params, NULL, 0, what, no_wait, dry_run);
	}
	for (size_t i = 0; i < n; i++) {
		char what[640];     /* a NAME=VERSION is at most 511 bytes */
		int status;

		json_object_object_add(params, "package", json_object_new_string(names[i]));
		snprintf(what, sizeof(what), "%s of %s", verb, names[i]);
		status = ctl_install_call(params, NULL, 0, what, no_wait, dry_run);
		if (status != EXIT_OK)
			return status;
	}
	return EXIT_OK;
}

#define CTL_INSTALL_FILES_MAX 16

/* Several bundle files, one transaction: each opened here, all passed
 * with one call. */
static int install_files(json_object *params, char **files, int n, bool no_wait, bool dry_run)
{
	int fds[CTL_INSTALL_FILES_MAX];
	json_object *idx = json_object_new_array(), *paths = json_object_new_array();
	char what[128];
	int status = 0, opened = 0;

	if (!idx || !paths) {
		json_object_put(idx);
		json_object_put(paths);
		return ctl_oom();
	}
	for (int i = 0; i < n && status == 0; i++) {
		_cleanup_free_ char *abs = realpath(files[i], NULL);
		bool plain = abs != NULL;

		status = source_open(files[i], &fds[i]);
		if (status != 0)
			break;
		opened++;
		json_object_array_add(idx, json_object_new_int(i));
		for (const char *p = abs; plain && *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				plain = false;
		json_object_array_add(paths, json_object_new_string(plain ? abs : ""));
	}
	if (status == 0) {
		json_object_object_add(params, "fds", idx);
		json_object_object_add(params, "source_paths", paths);
		idx = paths = NULL;
		snprintf(what, sizeof(what), "install of %d bundles", n);
		status = ctl_install_call(params, fds, (size_t)n, what, no_wait, dry_run);
	}
	json_object_put(idx);
	json_object_put(paths);
	for (int i = 0; i < opened; i++)
		close(fds[i]);
	return status;
}

/* Info's reply: where the package came from. */
struct source_of {
	char *type, *where, *version;
};

static int on_info(json_object *params, bool continues, void *userdata)
{
	struct source_of *s = userdata;
	json_object *p = ctl_json_obj(params, "package");
	const char *type = ctl_json_str(p, "source_type", NULL), *where = ctl_json_str(p, "source", NULL);
	const char *version = ctl_json_str(p, "version", NULL);

	(void)continues;
	s->type = type ? strdup(type) : NULL;
	s->where = where ? strdup(where) : NULL;
	s->version = version ? strdup(version) : NULL;
	return CTL_CONTINUE;
}

/*
 * --reinstall PKG...: each from where it came, the same version. A
 * repository's packages go together (one transaction), a registry's
 * reference is installed again; a file or URL needs the bundle again.
 */
static int reinstall_packages(json_object *params, const char *const *names, size_t n, bool no_wait,
			      bool dry_run)
{
	_cleanup_free_ char **specs = calloc(n ? n : 1, sizeof(char *));
	size_t nspecs = 0;
	int status = EXIT_OK;

	if (!specs)
		return ctl_oom();
	for (size_t i = 0; i < n && status == EXIT_OK; i++) {
		json_object *q = json_object_new_object();
		struct source_of s = { 0 };

		if (strchr(names[i], '=')) {
			json_object_put(q);
			status = ctl_usage_error("--reinstall takes the installed version: '%s' names one", names[i]);
			break;
		}
		json_object_object_add(q, "package", json_object_new_string(names[i]));
		status = ctl_call("Info", q, 0, NULL, 0, on_info, &s);
		json_object_put(q);
		if (status == EXIT_OK && s.type && strcmp(s.type, "repository") == 0 && s.version) {
			size_t len = strlen(names[i]) + strlen(s.version) + 2;

			specs[nspecs] = malloc(len);
			if (specs[nspecs])
				snprintf(specs[nspecs++], len, "%s=%s", names[i], s.version);
			else
				status = ctl_oom();
		} else if (status == EXIT_OK && s.type && strcmp(s.type, "registry") == 0 && s.where) {
			json_object *one = json_object_get(params);
			char what[640];

			json_object_object_add(one, "url", json_object_new_string(s.where));
			snprintf(what, sizeof(what), "reinstall of %s", names[i]);
			status = ctl_install_call(one, NULL, 0, what, no_wait, dry_run);
			json_object_object_del(one, "url");
			json_object_put(one);
		} else if (status == EXIT_OK) {
			status = ctl_error(EXIT_FAILED, "%s was installed from %s%s%s: give the bundle again, "
					   "fatelfctl install --reinstall FILE", names[i],
					   s.type ? s.type : "an unrecorded source", s.where ? " " : "",
					   s.where ? s.where : "");
		}
		free(s.type);
		free(s.where);
		free(s.version);
	}
	if (status == EXIT_OK && nspecs > 0)
		status = ctl_install_packages(params, (const char *const *)specs, nspecs, "reinstall", no_wait,
					      dry_run);
	for (size_t i = 0; i < nspecs; i++)
		free(specs[i]);
	return status;
}

static const struct option install_options[] = {
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "targets", required_argument, NULL, OPT_TARGETS },
	{ "allow-unsigned", no_argument, NULL, OPT_ALLOW_UNSIGNED },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "allow-downgrade", no_argument, NULL, OPT_ALLOW_DOWNGRADE },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "no-wait", no_argument, NULL, OPT_NO_WAIT },
	{ "reinstall", no_argument, NULL, OPT_REINSTALL },
	{ "help", no_argument, NULL, 'h' },
	{}
};

/* What the command line asks for. */
struct install_args {
	const char *policy, *targets_arg;
	json_object *targets;           /* --targets as a list, owned */
	bool allow_unsigned, force, allow_downgrade, dry_run, no_wait, reinstall;
	bool packages;                  /* the sources are package names, else files or a URL */
	int nfiles;
};

static void install_args_done(struct install_args *ia)
{
	json_object_put(ia->targets);
}

/* The options: 1 to go on (optind at the first source), 0 when done
 * (--help), else CTL_E_USAGE, reported. */
static int install_options_parse(struct install_args *ia, int argc, char **argv)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", install_options, NULL)) >= 0) {
		switch (c) {
		case OPT_POLICY:
			ia->policy = optarg;
			break;
		case OPT_TARGETS:
			ia->targets_arg = optarg;
			break;
		case OPT_ALLOW_UNSIGNED:
			ia->allow_unsigned = true;
			break;
		case OPT_FORCE:
			ia->force = true;
			break;
		case OPT_ALLOW_DOWNGRADE:
			ia->allow_downgrade = true;
			break;
		case OPT_DRY_RUN:
			ia->dry_run = true;
			break;
		case OPT_NO_WAIT:
			ia->no_wait = true;
			break;
		case OPT_REINSTALL:
			ia->reinstall = true;
			break;
		case 'h':
			ctl_help(verb_install_usage);
			return 0;
		default:
			(void)ctl_option_error(c, argv);
			return CTL_E_USAGE;
		}
	}
	return 1;
}

/* The sources and the options that go together: 1, else CTL_E_USAGE,
 * reported. */
static int install_args_check(struct install_args *ia, int argc, char **argv)
{
	const char *policy = ia->policy, *targets_arg = ia->targets_arg;

	if (optind >= argc)
		return ctl_usage_error("missing FILE, URL, - or NAME"), CTL_E_USAGE;
	/* Several sources are package names, or bundle files, all in one call. */
	ia->packages = true;
	for (int i = optind; i < argc; i++)
		if (!argv[i][0]) {
			return ctl_usage_error("empty FILE"), CTL_E_USAGE;
		} else if (!source_is_package(argv[i])) {
			if (optind + 1 < argc && (strstr(argv[i], "://") || strcmp(argv[i], "-") == 0))
				return ctl_usage_error("a URL or - installs alone ('%s')", argv[i]), CTL_E_USAGE;
			ia->packages = false;
			ia->nfiles++;
		}
	if (ia->nfiles > 0 && ia->nfiles < argc - optind)
		return ctl_usage_error("bundle files and package names do not go together in one install"),
		       CTL_E_USAGE;
	if (ia->nfiles > CTL_INSTALL_FILES_MAX)
		return ctl_usage_error("at most %d bundle files in one install", CTL_INSTALL_FILES_MAX), CTL_E_USAGE;
	if (policy && !policy_is_known(policy))
		return ctl_usage_error("unknown policy '%s' (native, compatible, keep or targets)", policy),
		       CTL_E_USAGE;
	if (targets_arg && policy && strcmp(policy, "targets") != 0)
		return ctl_usage_error("--targets goes with --policy targets"), CTL_E_USAGE;
	if (policy && strcmp(policy, "targets") == 0 && !targets_arg)
		return ctl_usage_error("--policy targets needs --targets T,..."), CTL_E_USAGE;
	if (targets_arg && ctl_split_list(targets_arg, &ia->targets) < 0)
		return ctl_usage_error("bad --targets list '%s'", targets_arg), CTL_E_USAGE;
	if (targets_arg && !policy)
		ia->policy = "targets";
	return 1;
}

/* The Install parameters every call shares, the one file's opened in *fd
 * (a URL's named) when there is one source that is not a package. Returns
 * the exit status. */
static int install_params(struct install_args *ia, const char *source, int *fd, json_object **ret)
{
	json_object *params = json_object_new_object();
	int status;

	if (!params)
		return ctl_oom();
	/* A package is set per call (ctl_install_packages). */
	if (!ia->packages && strstr(source, "://")) {
		json_object_object_add(params, "url", json_object_new_string(source));
	} else if (!ia->packages && ia->nfiles == 1) {
		status = source_open(source, fd);
		if (status != 0) {
			json_object_put(params);
			return status;
		}
		/* The index of the fd among those passed with the message. */
		json_object_object_add(params, "fd", json_object_new_int(0));
		add_source_path(params, source);
	}
	if (ia->policy)
		json_object_object_add(params, "policy", json_object_new_string(ia->policy));
	if (ia->targets)
		json_object_object_add(params, "targets", json_object_get(ia->targets));
	add_bool(params, "allow_unsigned", ia->allow_unsigned);
	add_bool(params, "force", ia->force);
	add_bool(params, "allow_downgrade", ia->allow_downgrade);
	add_bool(params, "dry_run", ia->dry_run);
	*ret = params;
	return EXIT_OK;
}

/* One file, from standard input or a URL: one Install call with the fd
 * passed. Returns the exit status. */
static int install_one(json_object *params, const char *source, int fd, bool no_wait, bool dry_run)
{
	char what[4200];
	char *shown;

	/* The words quote the URL, and a terminal or a CI log is no place
	 * for its credentials. */
	shown = strstr(source, "://") ? fatelf_text_url_redact(source) : NULL;
	snprintf(what, sizeof(what), "install of %s",
		 strcmp(source, "-") == 0 ? "standard input" : shown ? shown : source);
	free(shown);
	return ctl_install_call(params, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, what, no_wait, dry_run);
}

int verb_install(int argc, char **argv)
{
	_cleanup_(install_args_done) struct install_args ia = { 0 };
	json_object *params = NULL;
	const char *const *sources;
	size_t nsources;
	int fd = -1, status, r;

	r = install_options_parse(&ia, argc, argv);
	if (r > 0)
		r = install_args_check(&ia, argc, argv);
	if (r <= 0)
		return ctl_exit_code(r);
	sources = (const char *const *)(argv + optind);
	nsources = (size_t)(argc - optind);
	for (size_t i = 0; !ia.packages && i < nsources; i++)
		if (source_is_missing_word(sources[i]))
			return no_such_package(sources[i]);
	status = install_params(&ia, sources[0], &fd, &params);
	if (status != EXIT_OK)
		return status;
	if (ia.packages && ia.reinstall)
		status = reinstall_packages(params, sources, nsources, ia.no_wait, ia.dry_run);
	else if (ia.packages)
		status = ctl_install_packages(params, sources, nsources, "install", ia.no_wait, ia.dry_run);
	else if (ia.nfiles > 1)
		status = install_files(params, argv + optind, ia.nfiles, ia.no_wait, ia.dry_run);
	else
		status = install_one(params, sources[0], fd, ia.no_wait, ia.dry_run);
	if (fd > STDIN_FILENO)
		close(fd);
	json_object_put(params);
	return status;
}
