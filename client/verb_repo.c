/*
 * fatelfctl repo: the repositories fatelfd installs packages from. add
 * configures one (its mirrors and the minisign key its index must be
 * signed by; the key file is read here, with the caller's own rights, and
 * only its key line travels), remove drops one, list shows them in a
 * table. Each is a verb of its own for the error lines ("repo add").
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "io.h"
#include "macro.h"

const char verb_repo_usage[] =
	"Usage: fatelfctl repo add NAME URL... --key PUB [--id ID]\n"
	"       fatelfctl repo remove NAME\n"
	"       fatelfctl repo list\n"
	"\n"
	"Manage the repositories that 'fatelfctl install NAME' installs from.\n"
	"\n"
	"add      configure repository NAME, or replace the one of that name: its\n"
	"         mirrors (URLs, tried in order) and the minisign public key its index\n"
	"         must be signed by. 'fatelfctl update NAME' then fetches its index.\n"
	"remove   drop repository NAME and the index kept from it.\n"
	"list     a table of NAME, SERIAL (of the index accepted last, \"never updated\"\n"
	"         before the first update), PACKAGES, URLS and KEY (the key id).\n"
	"\n"
	"add and remove need root; list is open to every user.\n"
	"\n"
	"Options:\n"
	"  --key PUB   (add) a minisign public key file (read with your rights), or\n"
	"              its key line itself (RW...)\n"
	"  --id ID     (add) the repository's identity, as 'fatelf repo init' printed\n"
	"              it: its index must name it from the first update on (without\n"
	"              it, the first update pins the identity it is served)\n"
	"  -h, --help  show this help\n";

/* A .pub file is two short lines; anything far larger is not one. */
#define KEY_FILE_MAX 4096

static const char key_hint[] = "--key takes a minisign public key file, or its RW... line";

/* The key line of the file pub, read with the caller's rights, in *ret_text
 * (malloc'd) at *ret_line. 0 or an exit status. */
static int key_file(const char *pub, char **ret_text, const char **ret_line, size_t *ret_len)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file_max(AT_FDCWD, pub, READ_FILE_REGULAR, KEY_FILE_MAX, &text, &len);
	if (r == -EINVAL)
		return ctl_error(EXIT_FAILED, "%s is not a regular file (%s)", pub, key_hint);
	if (r == -EFBIG)
		return ctl_error(EXIT_FAILED, "%s is too large to be a minisign public key (%s)", pub,
				 key_hint);
	if (r == -ENOENT)
		return ctl_error(EXIT_SYSTEM, "cannot open %s: %s (%s)", pub, strerror(-r), key_hint);
	if (r < 0)
		return ctl_error(EXIT_SYSTEM, "cannot read %s: %s", pub, strerror(-r));
	switch (ctl_key_line(text, len, ret_line, ret_len)) {
	case CTL_KEY_PUBLIC:
		*ret_text = TAKE_PTR(text);
		return 0;
	case CTL_KEY_SECRET:
		return ctl_error(EXIT_FAILED, "%s is a minisign secret key: give its public key "
				 "(the .pub file)", pub);
	default:
		return ctl_error(EXIT_FAILED, "%s is not a minisign public key (%s)", pub, key_hint);
	}
}

/*
 * The key line of --key PUB, malloc'd in *ret: PUB itself when it has the
 * shape of one ("RW" and 54 more base64 characters), else the file PUB.
 * 0 or an exit status.
 */
static int key_read(const char *pub, char **ret)
{
	_cleanup_free_ char *text = NULL;
	const char *line;
	size_t n;

	if (ctl_key_line(pub, strlen(pub), &line, &n) != CTL_KEY_PUBLIC) {
		int status = key_file(pub, &text, &line, &n);

		if (status != 0)
			return status;
	}
	*ret = strndup(line, n);
	if (!*ret)
		return ctl_oom();
	return 0;
}

/* The URLs of a Repository, without credentials or raw control bytes. */
static const char *urls_join(json_object *urls, char *buf, size_t size)
{
	size_t n = urls ? json_object_array_length(urls) : 0, used = 0;

	snprintf(buf, size, "-");
	for (size_t i = 0; i < n && used < size; i++) {
		json_object *e = json_object_array_get_idx(urls, i);
		char *shown = fatelf_text_url_redact(json_object_is_type(e, json_type_string) ?
						     json_object_get_string(e) : "?");
		int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", shown ? shown : "?");

		free(shown);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

static bool has_serial(json_object *repo)
{
	json_object *v;

	return repo && json_object_object_get_ex(repo, "serial", &v) && json_object_is_type(v, json_type_int);
}

/* ------------------------------------------------------------ add */

static int on_add(json_object *params, bool continues, void *userdata)
{
	json_object *r = ctl_json_obj(params, "repository");
	const char *name = ctl_json_str(r, "name", "?");
	char urls[4096];

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	printf("repository %s: key %s, mirrors %s\n", name, ctl_json_str(r, "key_id", "?"),
	       urls_join(ctl_json_array(r, "urls"), urls, sizeof(urls)));
	if (!has_serial(r))
		printf("'fatelfctl update %s' fetches its index\n", name);
	return CTL_CONTINUE;
}

static int repo_add(int argc, char **argv)
{
	static const struct option options[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "id", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	_cleanup_free_ char *key = NULL;
	const char *pub = NULL, *id = NULL;
	json_object *params, *urls;
	int status, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
		switch (c) {
		case 'k':
			pub = optarg;
			break;
		case 'i':
			id = optarg;
			break;
		case 'h':
			return ctl_help(verb_repo_usage);
		default:
			return ctl_option_error(c, argv);
		}
	}
	if (optind >= argc)
		return ctl_usage_error("missing NAME");
	if (!argv[optind][0])
		return ctl_usage_error("empty NAME");
	if (optind + 1 >= argc)
		return ctl_usage_error("missing URL (a mirror of repository %s)", argv[optind]);
	for (int i = optind + 1; i < argc; i++)
		if (!strstr(argv[i], "://"))
			return ctl_usage_error("'%s' is not a URL (http://, https:// or file://)", argv[i]);
	if (!pub)
		return ctl_usage_error("missing --key PUB (the minisign public key that signs the index)");
	if (!pub[0])
		return ctl_usage_error("empty --key");
	status = key_read(pub, &key);
	if (status != 0)
		return status;

	params = json_object_new_object();
	urls = json_object_new_array();
	if (!params || !urls) {
		json_object_put(params);
		json_object_put(urls);
		return ctl_oom();
	}
	for (int i = optind + 1; i < argc; i++)
		json_object_array_add(urls, json_object_new_string(argv[i]));
	json_object_object_add(params, "name", json_object_new_string(argv[optind]));
	json_object_object_add(params, "urls", urls);
	json_object_object_add(params, "key", json_object_new_string(key));
	if (id)
		json_object_object_add(params, "id", json_object_new_string(id));
	status = ctl_call("RepoAdd", params, 0, NULL, 0, on_add, NULL);
	json_object_put(params);
	return status;
}

/* ------------------------------------------------------------ remove */

static int on_remove(json_object *params, bool continues, void *userdata)
{
	if (ctl_arg.json)
		ctl_json_print(params);
	else
		printf("removed repository %s\n", (const char *)userdata);
	return CTL_CONTINUE;
}

static int repo_remove(int argc, char **argv)
{
	json_object *params;
	int status, r = ctl_parse_plain(argc, argv, verb_repo_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing NAME");
	if (optind + 1 < argc)
		return ctl_usage_error("one repository at a time ('%s' is extra)", argv[optind + 1]);
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "name", json_object_new_string(argv[optind]));
	status = ctl_call("RepoRemove", params, 0, NULL, 0, on_remove, argv[optind]);
	json_object_put(params);
	return status;
}

/* ------------------------------------------------------------ list */

static int on_list(json_object *params, bool continues, void *userdata)
{
	static const char *const header[] = { "NAME", "SERIAL", "PACKAGES", "URLS", "KEY" };
	static const bool right[] = { false, true, true, false, false };
	json_object *repos = ctl_json_array(params, "repositories");
	size_t n = repos ? json_object_array_length(repos) : 0;
	struct ctl_table t;

	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	if (n == 0) {
		printf("no repositories ('fatelfctl repo add' adds one)\n");
		return CTL_CONTINUE;
	}
	if (ctl_table_init(&t, ARRAY_SIZE(header), header, right) < 0)
		return CTL_CONTINUE;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(repos, i);
		bool updated = has_serial(r);
		char serial[24], packages[24], urls[4096];
		const char *row[ARRAY_SIZE(header)];

		snprintf(serial, sizeof(serial), "%lld", (long long)ctl_json_int(r, "serial"));
		snprintf(packages, sizeof(packages), "%lld", (long long)ctl_json_int(r, "packages"));
		row[0] = ctl_json_str(r, "name", "?");
		row[1] = updated ? serial : "never updated";
		row[2] = updated ? packages : "-";
		row[3] = urls_join(ctl_json_array(r, "urls"), urls, sizeof(urls));
		row[4] = ctl_json_str(r, "key_id", "?");
		if (ctl_table_add(&t, row) < 0)
			break;
	}
	ctl_table_print(&t, stdout);
	ctl_table_done(&t);
	return CTL_CONTINUE;
}

static int repo_list(int argc, char **argv)
{
	int r = ctl_parse_plain(argc, argv, verb_repo_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind < argc)
		return ctl_usage_error("no arguments expected ('%s')", argv[optind]);
	return ctl_call("RepoList", NULL, 0, NULL, 0, on_list, NULL);
}

/* ------------------------------------------------------------ the verb */

int verb_repo(int argc, char **argv)
{
	static const struct {
		const char *name, *verb;
		int (*run)(int argc, char **argv);
	} subs[] = {
		{ "add", "repo add", repo_add },
		{ "remove", "repo remove", repo_remove },
		{ "list", "repo list", repo_list },
	};
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return ctl_usage_error("missing add, remove or list");
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0)
		return ctl_help(verb_repo_usage);
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (strcmp(sub, subs[i].name) == 0) {
			/* The error lines say "fatelfctl: repo add: ...". */
			ctl_arg.verb = subs[i].verb;
			return subs[i].run(argc - 1, argv + 1);
		}
	if (sub[0] == '-')
		return ctl_usage_error("add, remove or list comes before the options ('%s')", sub);
	return ctl_usage_error("unknown repo verb '%s' (add, remove or list)", sub);
}
