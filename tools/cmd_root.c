/*
 * What the --root commands share: their options, the engine opened on the
 * root with the root's own trusted keys, and errors as one line (and a
 * JSON object with --json) with an exit status that tells a busy root
 * from a refusal. No fatelfd.conf is read: its parser is the daemon's,
 * and the options say all an install needs (the defaults are fatelfd's:
 * policy native, a signature required, the keys of the root's
 * etc/fatelf/keys.d).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "macro.h"
#include "path.h"
#include "results.h"
#include "root_cmd.h"
#include "text.h"

/* A minisign public key file is two short lines. */
#define ROOT_KEY_FILE_MAX 4096

enum {
	OPT_ROOT = 0x100,
	OPT_POLICY,
	OPT_TARGETS,
	OPT_KEEP_FAT,
	OPT_KEYS,
	OPT_ALLOW_UNSIGNED,
	OPT_FORCE,
	OPT_ALLOW_DOWNGRADE,
	OPT_PURGE,
};

int root_parse(int argc, char **argv, unsigned flags, const char *usage, struct root_args *a)
{
	static const struct option options[] = {
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "targets", required_argument, NULL, OPT_TARGETS },
		{ "keep-fat", required_argument, NULL, OPT_KEEP_FAT },
		{ "keys", required_argument, NULL, OPT_KEYS },
		{ "allow-unsigned", no_argument, NULL, OPT_ALLOW_UNSIGNED },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "allow-downgrade", no_argument, NULL, OPT_ALLOW_DOWNGRADE },
		{ "purge", no_argument, NULL, OPT_PURGE },
		{}
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->cmd = argv[0];
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jhn", options, NULL)) >= 0) {
		bool mutate = false, install = false, remove = false;

		switch (c) {
		case 'h':
			return cmd_help(usage);
		case OPT_ROOT:
			a->root = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'n':
			a->dry_run = mutate = true;
			break;
		case OPT_POLICY:
			a->policy = optarg;
			install = true;
			break;
		case OPT_TARGETS:
			a->targets = optarg;
			install = true;
			break;
		case OPT_KEEP_FAT:
			if (a->nkeep_fat == ARRAY_SIZE(a->keep_fat))
				return cmd_usage_failed(a->cmd, "--keep-fat: at most %zu globs",
						       ARRAY_SIZE(a->keep_fat));
			a->keep_fat[a->nkeep_fat++] = optarg;
			install = true;
			break;
		case OPT_KEYS:
			a->keys = optarg;
			install = true;
			break;
		case OPT_ALLOW_UNSIGNED:
			a->allow_unsigned = install = true;
			break;
		case OPT_FORCE:
			a->force = install = true;
			break;
		case OPT_ALLOW_DOWNGRADE:
			a->allow_downgrade = install = true;
			break;
		case OPT_PURGE:
			a->purge = remove = true;
			break;
		default:
			return cmd_option_failed(a->cmd, c, argv);
		}
		if ((mutate && !(flags & ROOT_OPT_MUTATE)) || (install && !(flags & ROOT_OPT_INSTALL)) ||
		    (remove && !(flags & ROOT_OPT_REMOVE)))
			return cmd_usage_failed(a->cmd, "'%s' is not an option of %s", argv[optind - 1], a->cmd);
	}
	if (!a->root)
		return cmd_usage_failed(a->cmd, "--root DIR is required");
	if (!a->root[0])
		return cmd_usage_failed(a->cmd, "--root: an empty path");
	return 1;
}

char *root_shown(const char *s)
{
	return fatelf_text_display(s ? s : "-");
}

void root_put(const char *s)
{
	_cleanup_free_ char *shown = root_shown(s);

	fputs(shown ? shown : "?", stdout);
}

int root_fail(const struct root_args *a, const fatelf_diag *d, int r)
{
	const char *msg = fatelf_diag_text(d, r);
	const char *subject = d && d->subject[0] ? d->subject : NULL;
	bool busy = r == -ENGINE_E_LOCKED;

	fprintf(stderr, "%s: %s: %s%s%s%s%s\n", program_name, a->cmd, subject ? subject : "", subject ? ": " : "",
		busy ? "busy: " : "", msg, busy ? " (is a fatelfd running on this root?)" : "");
	if (a->json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *e = json_object_new_object();

		if (o && e) {
			json_set_str(e, "code", fatelf_error_name(r));
			json_set_str(e, "subject", subject);
			json_set_str(e, "message", msg);
			json_object_object_add(o, "error", e);
			cmd_json_print(o);
		} else if (e) {
			json_object_put(e);
		}
	}
	return cmd_exit_code(r);
}

static int name_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Every *.pub of the directory dirfd (shown as dir), by name; with
 * nofollow a key that is a symlink is refused. */
static int load_keys(int dirfd, const char *dir, bool nofollow, fatelf_ms_pubkey **ret, size_t *ret_n,
		     fatelf_diag *d)
{
	DIR *dp = fdopendir(dirfd);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	fatelf_ms_pubkey *keys = NULL;
	int r = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!dp) {
		r = -errno;
		close(dirfd);
		snprintf(d->subject, sizeof(d->subject), "%s", dir);
		return fatelf_diag_set(d, r, -1, "cannot read the trusted keys: %s", fatelf_strerror(r));
	}
	while ((de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		char **v;

		if (len <= 4 || strcmp(de->d_name + len - 4, ".pub") != 0 || de->d_name[0] == '.')
			continue;
		v = realloc(names, (n + 1) * sizeof(*names));
		if (!v || !(v[n] = strdup(de->d_name))) {
			names = v ? v : names;
			r = fatelf_diag_oom(d);
			goto out;
		}
		names = v;
		n++;
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys) {
		r = fatelf_diag_oom(d);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		r = read_file_max(dirfd, names[i], READ_FILE_REGULAR | (nofollow ? READ_FILE_NOFOLLOW : 0),
				  ROOT_KEY_FILE_MAX, &text, &len);
		if (r == -ELOOP)
			r = fatelf_diag_set(d, r, -1, "public key %s/%s is a symbolic link inside the root: "
					    "refusing it", dir, names[i]);
		else if (r < 0)
			r = fatelf_diag_set(d, r, -1, "public key: %s", fatelf_strerror(r));
		else
			r = fatelf_ms_pubkey_parse(text, len, &keys[i], d);
		if (r < 0) {
			snprintf(d->subject, sizeof(d->subject), "%s/%s", dir, names[i]);
			goto out;
		}
	}
	*ret = keys;
	*ret_n = n;
	keys = NULL;
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(keys);
	closedir(dp);
	return r;
}

/*
 * The trusted keys: --keys DIR as the admin named it, else the root's
 * etc/fatelf/keys.d reached from the root's descriptor without following
 * any symlink (a missing directory: no keys). Whoever owns the root could
 * otherwise have a directory of their keys, anywhere, trusted.
 */
static int root_keys(const struct root_args *a, int rootfd, const char *dir, fatelf_ms_pubkey **ret,
		     size_t *ret_n, fatelf_diag *d)
{
	size_t failed = 0;
	int fd, r;

	*ret = NULL;
	*ret_n = 0;
	if (a->keys) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return 0;
	} else {
		_cleanup_close_ int pfd = mkdir_p_open(rootfd, ROOT_KEYS_DIR, 0, 0, MKDIR_BENEATH | MKDIR_NOCREATE,
							&failed);

		if (pfd == -ENOENT)
			return 0;
		if (pfd == -ELOOP) {
			snprintf(d->subject, sizeof(d->subject), "%s", dir);
			return fatelf_diag_set(d, pfd, -1, "trusted keys %s: %.*s/%.*s is a symbolic link inside "
					       "the root: refusing it", dir, (int)(strlen(dir) - strlen(ROOT_KEYS_DIR) - 1),
					       dir, (int)failed, ROOT_KEYS_DIR);
		}
		fd = pfd < 0 ? pfd : openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			errno = -pfd;
	}
	if (fd < 0) {
		r = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", dir);
		return fatelf_diag_set(d, r, -1, "cannot read the trusted keys: %s", fatelf_strerror(r));
	}
	return load_keys(fd, dir, !a->keys, ret, ret_n, d);
}

/* The settings of an install from the options. */
static int root_config(const struct root_args *a, const char *root, engine_config *c, fatelf_diag *d)
{
	char *s;
	int r;

	free(c->root);
	c->root = strdup(root);
	if (asprintf(&s, "%s/" ROOT_STATE_DIR, root) < 0)
		return fatelf_diag_oom(d);
	free(c->state_dir);
	c->state_dir = s;
	if (a->keys)
		s = realpath(a->keys, NULL);
	else if (asprintf(&s, "%s/" ROOT_KEYS_DIR, root) < 0)
		s = NULL;
	if (!s) {
		r = a->keys ? -errno : -ENOMEM;
		snprintf(d->subject, sizeof(d->subject), "%s", a->keys ? a->keys : "");
		return fatelf_diag_set(d, r, -1, "--keys: %s", fatelf_strerror(r));
	}
	free(c->trusted_keys);
	c->trusted_keys = s;
	if (!c->root)
		return fatelf_diag_oom(d);

	if (a->policy || a->targets) {
		char text[1024];
		const char *policy = a->policy ? a->policy : "targets";
		int k;

		if (strcmp(policy, "targets") == 0 && !a->targets)
			return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "--policy targets needs --targets T,...");
		if (a->targets && strcmp(policy, "targets") != 0)
			return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
					       "--targets goes with --policy targets, not --policy %s", policy);
		k = a->targets ? snprintf(text, sizeof(text), "targets:%s", a->targets)
			       : snprintf(text, sizeof(text), "%s", policy);
		if (k < 0 || (size_t)k >= sizeof(text))
			return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "--targets: too long");
		engine_policy_spec_done(&c->policy);
		r = engine_policy_spec_parse(text, &c->policy, d);
		if (r < 0)
			return r;
	}
	if (a->nkeep_fat) {
		c->keep_fat = calloc(a->nkeep_fat, sizeof(*c->keep_fat));
		if (!c->keep_fat)
			return fatelf_diag_oom(d);
		for (size_t i = 0; i < a->nkeep_fat; i++) {
			c->keep_fat[i] = strdup(a->keep_fat[i]);
			if (!c->keep_fat[i])
				return fatelf_diag_oom(d);
			c->nkeep_fat++;
		}
	}
	return 0;
}

/* Has anything ever been installed in the root (a store in its state
 * directory, reached without following symlinks)? When that cannot be
 * told, yes: engine_open says why. */
static bool root_has_store(int rootfd)
{
	_cleanup_close_ int fd = mkdir_p_open(rootfd, ROOT_STATE_DIR, 0, 0, MKDIR_BENEATH | MKDIR_NOCREATE, NULL);
	struct stat st;

	if (fd == -ENOENT)
		return false;
	if (fd < 0)
		return true;
	return !(fstatat(fd, "fatelf.db", &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
}

int root_open(const struct root_args *a, bool readonly, engine **ret)
{
	engine_config c;
	fatelf_diag d = { 0 };
	fatelf_ms_pubkey *keys = NULL;
	size_t nkeys = 0;
	char *root = realpath(a->root, NULL);
	_cleanup_close_ int rootfd = -1;
	int r;

	*ret = NULL;
	if (root)
		rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!root || rootfd < 0) {
		r = -errno;
		free(root);
		snprintf(d.subject, sizeof(d.subject), "%s", a->root);
		fatelf_diag_set(&d, r, -1, "the root directory: %s", fatelf_strerror(r));
		return root_fail(a, &d, r);
	}
	engine_config_init(&c);
	r = root_config(a, root, &c, &d);
	/* Nothing was ever installed: no store, nothing to create. */
	if (r >= 0 && readonly && !root_has_store(rootfd))
		goto out;
	if (r >= 0 && !readonly)
		r = root_keys(a, rootfd, c.trusted_keys, &keys, &nkeys, &d);
	if (r >= 0)
		r = engine_open(&c, keys, nkeys, readonly ? ENGINE_OPEN_READONLY : 0, ret, NULL, &d);
out:
	free(keys);
	engine_config_done(&c);
	free(root);
	if (r < 0)
		return root_fail(a, &d, r);
	return EXIT_OK;
}
