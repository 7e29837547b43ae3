/*
 * fatelfctl owner: which package owns a path, printed as "PKG: PATH" like
 * dpkg -S. The path is inside the daemon's root. A glob pattern (with *,
 * ? or [) lists every file, symlink and directory it matches, and a word
 * that is neither a pattern nor an absolute path matches the paths that
 * contain it, as dpkg -S does.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_owner_usage[] =
	"Usage: fatelfctl owner PATH|PATTERN\n"
	"\n"
	"Tell which package owns PATH, as \"PKG: PATH\". PATH is inside the daemon's\n"
	"root: for a fatelfd started with --root R, /opt/x means R/opt/x.\n"
	"\n"
	"A PATTERN with *, ? or [ is an fnmatch(3) glob, as dpkg -S takes ('*' matches\n"
	"'/' too): every installed file, symlink and directory it matches, by path, one\n"
	"line each, \"PKG: PATH\" (a directory as \"PATH/\", and \"PKG1, PKG2: PATH/\"\n"
	"when several packages own it). A word that is neither a pattern nor an\n"
	"absolute path matches the paths that contain it (\"*WORD*\").\n"
	"\n"
	"Exits 1 when no package owns PATH, or nothing matches PATTERN.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n"
	"\n"
	"With --json: PATH gives {\"package\": ..., \"file\": {...}}; PATTERN gives one\n"
	"line {\"files\": [...]} per reply of the daemon, each entry a File with its\n"
	"\"package\" and \"type\" (\"file\", \"symlink\" or \"dir\").\n";

static int on_reply(json_object *params, bool continues, void *userdata)
{
	const char *asked = userdata;

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	/* The stored path: the daemon may have normalized the one asked. */
	ctl_put_shown(stdout, ctl_json_str(params, "package", "?"));
	fputs(": ", stdout);
	ctl_put_shown(stdout, ctl_json_str(ctl_json_obj(params, "file"), "path", asked));
	fputc('\n', stdout);
	return CTL_CONTINUE;
}

/* The pattern's matches, a line per path: the packages of one path come
 * one after another (the daemon sorts by path, then package), and a line
 * is printed once the next path, or the last reply, comes. */
struct match_state {
	char *path;
	char *owners;
	bool dir;
};

static void match_flush(struct match_state *st)
{
	if (st->path) {
		ctl_put_shown(stdout, st->owners);
		fputs(": ", stdout);
		ctl_put_shown(stdout, st->path);
		fputs(st->dir ? "/\n" : "\n", stdout);
	}
	free(st->path);
	free(st->owners);
	st->path = st->owners = NULL;
}

static int match_add(struct match_state *st, const char *path, const char *package, bool dir)
{
	if (st->path && strcmp(st->path, path) == 0) {
		char *owners = NULL;

		if (asprintf(&owners, "%s, %s", st->owners, package) < 0)
			return -ENOMEM;
		free(st->owners);
		st->owners = owners;
		return 0;
	}
	match_flush(st);
	st->path = strdup(path);
	st->owners = strdup(package);
	st->dir = dir;
	return st->path && st->owners ? 0 : -ENOMEM;
}

static int on_matches(json_object *params, bool continues, void *userdata)
{
	struct match_state *st = userdata;
	json_object *files = ctl_json_array(params, "files");
	size_t n = files ? json_object_array_length(files) : 0;

	if (ctl_arg.json) {
		ctl_json_line(params);
		return CTL_CONTINUE;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *f = json_object_array_get_idx(files, i);

		if (match_add(st, ctl_json_str(f, "path", "?"), ctl_json_str(f, "package", "?"),
			      strcmp(ctl_json_str(f, "type", "file"), "dir") == 0) < 0)
			break;
	}
	if (!continues)
		match_flush(st);
	fflush(stdout);
	return CTL_CONTINUE;
}

int verb_owner(int argc, char **argv)
{
	struct match_state st = { 0 };
	_cleanup_free_ char *pattern = NULL;
	json_object *params;
	const char *arg;
	bool glob;
	int status, r = ctl_parse_plain(argc, argv, verb_owner_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing PATH");
	if (optind + 1 < argc)
		return ctl_usage_error("one path at a time ('%s' is extra)", argv[optind + 1]);
	arg = argv[optind];
	if (!arg[0])
		return ctl_usage_error("an empty PATH");
	glob = strpbrk(arg, "*?[") != NULL;
	if (glob || arg[0] != '/') {
		if (glob)
			pattern = strdup(arg);
		else if (asprintf(&pattern, "*%s*", arg) < 0)
			pattern = NULL;
		if (!pattern)
			return ctl_oom();
	}
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	if (pattern) {
		json_object_object_add(params, "pattern", json_object_new_string(pattern));
		status = ctl_call("Owner", params, VL_CALL_MORE, NULL, 0, on_matches, &st);
		match_flush(&st);
	} else {
		json_object_object_add(params, "path", json_object_new_string(arg));
		status = ctl_call("Owner", params, 0, NULL, 0, on_reply, (void *)arg);
	}
	json_object_put(params);
	return status;
}
