/*
 * fatelfctl key: the minisign public keys fatelfd trusts to sign bundles
 * (its TrustedKeys directory). add trusts a key (a .pub file, read here
 * with the caller's rights, whose text travels with its comment, or the
 * RW... line itself), list shows them, remove stops trusting one. All
 * three are root's, and take effect at once: the next install verifies
 * with the new set. Each is a verb of its own for the error lines
 * ("key add").
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

const char verb_key_usage[] =
	"Usage: fatelfctl key add FILE|RW...\n"
	"       fatelfctl key list\n"
	"       fatelfctl key remove ID\n"
	"\n"
	"Manage the minisign public keys that fatelfd trusts to sign bundles (the\n"
	"*.pub files of its TrustedKeys directory). Changes take effect at once:\n"
	"the next install verifies with them, without a restart.\n"
	"\n"
	"add     trust a key: a minisign .pub file (read with your rights; its\n"
	"        untrusted comment becomes the key's comment) or its key line\n"
	"        (RW...). fatelfd writes it as ID.pub. A key already trusted is left\n"
	"        as it is.\n"
	"list    a table of ID, COMMENT and FILE.\n"
	"remove  stop trusting the key ID (as list shows it): its file is removed.\n"
	"\n"
	"All need root.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n";

/* A .pub file is two short lines; anything far larger is not one. */
#define KEY_FILE_MAX 4096

static const char key_hint[] = "give a minisign public key file, or its RW... line";

/*
 * The text to send for arg, malloc'd in *ret: arg itself when it has the
 * shape of a key line, else the whole text of the file arg (comment and
 * key line), once it looks like a public key. 0 or an exit status.
 */
static int key_text(const char *arg, char **ret)
{
	_cleanup_free_ char *text = NULL;
	const char *line;
	size_t len, n;
	int r;

	if (ctl_key_line(arg, strlen(arg), &line, &n) == CTL_KEY_PUBLIC) {
		*ret = strndup(line, n);
		return *ret ? 0 : ctl_oom();
	}
	r = read_file_max(AT_FDCWD, arg, READ_FILE_REGULAR, KEY_FILE_MAX, &text, &len);
	if (r == -ENOENT)
		return ctl_error(EXIT_FAILED, "%s: no such file, and not a key line either (%s)", arg,
				 key_hint);
	if (r == -EINVAL)
		return ctl_error(EXIT_FAILED, "%s is not a regular file (%s)", arg, key_hint);
	if (r == -EFBIG)
		return ctl_error(EXIT_FAILED, "%s is too large to be a minisign public key (%s)", arg,
				 key_hint);
	if (r < 0)
		return ctl_error(EXIT_SYSTEM, "cannot read %s: %s", arg, strerror(-r));
	switch (ctl_key_line(text, len, &line, &n)) {
	case CTL_KEY_PUBLIC:
		*ret = TAKE_PTR(text);
		return 0;
	case CTL_KEY_SECRET:
		return ctl_error(EXIT_FAILED, "%s is a minisign secret key: give its public key "
				 "(the .pub file)", arg);
	default:
		return ctl_error(EXIT_FAILED, "%s is not a minisign public key: %s", arg, key_hint);
	}
}

/* ------------------------------------------------------------ add */

static int on_add(json_object *params, bool continues, void *userdata)
{
	json_object *k = ctl_json_obj(params, "key");

	(void)continues;
	(void)userdata;
	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	if (ctl_json_bool(params, "added"))
		printf("trusted key %s (%s): %s\n", ctl_json_str(k, "id", "?"), ctl_json_str(k, "comment", ""),
		       ctl_json_str(k, "file", "?"));
	else
		printf("key %s is already trusted: %s\n", ctl_json_str(k, "id", "?"),
		       ctl_json_str(k, "file", "?"));
	return CTL_CONTINUE;
}

static int key_add(int argc, char **argv)
{
	_cleanup_free_ char *text = NULL;
	json_object *params;
	int status, r = ctl_parse_plain(argc, argv, verb_key_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing FILE (a minisign .pub file) or RW... key line");
	if (optind + 1 < argc)
		return ctl_usage_error("one key at a time ('%s' is extra)", argv[optind + 1]);
	if (!argv[optind][0])
		return ctl_usage_error("empty key");
	status = key_text(argv[optind], &text);
	if (status != 0)
		return status;
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "key", json_object_new_string(text));
	status = ctl_call("KeyAdd", params, 0, NULL, 0, on_add, NULL);
	json_object_put(params);
	return status;
}

/* ------------------------------------------------------------ list */

static int on_list(json_object *params, bool continues, void *userdata)
{
	static const char *const header[] = { "ID", "COMMENT", "FILE" };
	json_object *keys = ctl_json_array(params, "keys");
	size_t n = keys ? json_object_array_length(keys) : 0;
	struct ctl_table t;

	(void)continues;
	(void)userdata;
	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	if (n == 0) {
		printf("no trusted keys in %s ('fatelfctl key add' adds one)\n",
		       ctl_json_str(params, "directory", "the TrustedKeys directory"));
		return CTL_CONTINUE;
	}
	if (ctl_table_init(&t, ARRAY_SIZE(header), header, NULL) < 0)
		return CTL_CONTINUE;
	for (size_t i = 0; i < n; i++) {
		json_object *k = json_object_array_get_idx(keys, i);
		const char *row[] = { ctl_json_str(k, "id", "?"), ctl_json_str(k, "comment", ""),
				      ctl_json_str(k, "file", "?") };

		if (ctl_table_add(&t, row) < 0)
			break;
	}
	ctl_table_print(&t, stdout);
	ctl_table_done(&t);
	return CTL_CONTINUE;
}

static int key_list(int argc, char **argv)
{
	int r = ctl_parse_plain(argc, argv, verb_key_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind < argc)
		return ctl_usage_error("no arguments expected ('%s')", argv[optind]);
	return ctl_call("KeyList", NULL, 0, NULL, 0, on_list, NULL);
}

/* ------------------------------------------------------------ remove */

static int on_remove(json_object *params, bool continues, void *userdata)
{
	json_object *keys = ctl_json_array(params, "keys");
	size_t n = keys ? json_object_array_length(keys) : 0;

	(void)continues;
	(void)userdata;
	if (ctl_arg.json) {
		ctl_json_print(params);
		return CTL_CONTINUE;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *k = json_object_array_get_idx(keys, i);

		printf("removed trusted key %s (%s)\n", ctl_json_str(k, "id", "?"), ctl_json_str(k, "file", "?"));
	}
	return CTL_CONTINUE;
}

static int key_remove(int argc, char **argv)
{
	json_object *params;
	int status, r = ctl_parse_plain(argc, argv, verb_key_usage);
	const char *id;

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing ID (fatelfctl key list shows them)");
	if (optind + 1 < argc)
		return ctl_usage_error("one key at a time ('%s' is extra)", argv[optind + 1]);
	id = argv[optind];
	if (!id[0] || strlen(id) > 16 || strspn(id, "0123456789abcdefABCDEF") != strlen(id))
		return ctl_usage_error("'%s' is not a key id (up to 16 hex digits, as 'fatelfctl key list' "
				       "shows them)", id);
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "id", json_object_new_string(id));
	status = ctl_call("KeyRemove", params, 0, NULL, 0, on_remove, NULL);
	json_object_put(params);
	return status;
}

/* ------------------------------------------------------------ the verb */

int verb_key(int argc, char **argv)
{
	static const struct {
		const char *name, *verb;
		int (*run)(int argc, char **argv);
	} subs[] = {
		{ "add", "key add", key_add },
		{ "list", "key list", key_list },
		{ "remove", "key remove", key_remove },
	};
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return ctl_usage_error("missing add, list or remove");
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0)
		return ctl_help(verb_key_usage);
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (strcmp(sub, subs[i].name) == 0) {
			/* The error lines say "fatelfctl: key add: ...". */
			ctl_arg.verb = subs[i].verb;
			return subs[i].run(argc - 1, argv + 1);
		}
	if (sub[0] == '-')
		return ctl_usage_error("add, list or remove comes before the options ('%s')", sub);
	return ctl_usage_error("unknown key verb '%s' (add, list or remove)", sub);
}
