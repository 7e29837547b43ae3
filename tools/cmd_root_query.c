/*
 * fatelf list, files, owner and verify --root: the store's answers about a
 * root directory, read through a read-only engine (no lock: they run
 * beside a fatelfd on the same root), in fatelfctl's words, or as JSON
 * as fatelfd replies. A root where nothing was ever installed has no
 * store: it has no packages, and none is created.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "results.h"
#include "root_cmd.h"
#include "store.h"
#include "text.h"

/* ------------------------------------------------------------ list */

static void left_print(const store_kept_package *v, size_t n)
{
	if (n > 0)
		printf("\nremoved, their changed config files kept ('fatelf remove --root DIR --purge NAME' "
		       "deletes them):\n");
	for (size_t i = 0; i < n; i++) {
		printf("  ");
		root_put(v[i].name);
		putchar(' ');
		root_put(v[i].version);
		printf(": %llu config %s\n", (unsigned long long)v[i].files, v[i].files == 1 ? "file" : "files");
	}
}

int root_list(int argc, char **argv)
{
	static const char *const header[] = { "NAME", "VERSION", "FILES", "SIZE", "SAVED", "POLICY", "SUMMARY" };
	struct root_args a;
	engine *e = NULL;
	store_package *pkgs = NULL;
	store_kept_package *left = NULL;
	store_usage *use = NULL;
	char (*cells)[4][32] = NULL;
	char *(*shown)[4] = NULL;       /* name, version, policy, summary as shown */
	size_t n = 0, nleft = 0, w[ARRAY_SIZE(header)];
	fatelf_diag d = { 0 };
	int status = root_parse(argc, argv, 0, cmd_root_list_usage, &a);
	int r = 0;

	if (status <= 0)
		return cmd_exit_code(status);
	if (optind < argc)
		return cmd_usage_error(a.cmd, "unexpected argument '%s'", argv[optind]);
	status = root_open(&a, true, &e);
	if (status != EXIT_OK)
		return status;
	if (e)
		r = store_package_list(engine_store(e), &pkgs, &n, &d);
	if (e && r >= 0)
		r = store_kept_packages(engine_store(e), &left, &nleft, &d);
	if (r < 0) {
		status = root_fail(&a, &d, r);
		goto out;
	}
	use = calloc(n ? n : 1, sizeof(*use));
	cells = calloc(n ? n : 1, sizeof(*cells));
	shown = calloc(n ? n : 1, sizeof(*shown));
	if (!use || !cells || !shown) {
		status = root_fail(&a, &d, fatelf_diag_oom(&d));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		(void)store_usage_get(engine_store(e), pkgs[i].id, &use[i], NULL);
	if (a.json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *arr = json_object_new_array();

		for (size_t i = 0; arr && i < n; i++)
			json_object_array_add(arr, json_package(engine_store(e), &pkgs[i]));
		if (o) {
			json_set(o, "packages", arr);
			if (nleft > 0)
				json_set(o, "config_files", json_config_files(left, nleft));
			cmd_json_print(o);
		} else if (arr) {
			json_object_put(arr);
		}
		goto out;
	}
	if (n == 0) {
		printf("no packages installed\n");
		left_print(left, nleft);
		goto out;
	}
	for (size_t c = 0; c < ARRAY_SIZE(header); c++)
		w[c] = strlen(header[c]);
	for (size_t i = 0; i < n; i++) {
		const char *text[4] = { pkgs[i].name, pkgs[i].version, pkgs[i].policy ? pkgs[i].policy : "-",
					pkgs[i].summary ? pkgs[i].summary : "" };

		for (size_t k = 0; k < 4; k++) {
			shown[i][k] = root_shown(text[k]);
			if (!shown[i][k]) {
				status = root_fail(&a, &d, fatelf_diag_oom(&d));
				goto out;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t shipped = use[i].shipped_size, installed = use[i].installed_size;

		snprintf(cells[i][0], sizeof(cells[i][0]), "%llu", (unsigned long long)use[i].files);
		fatelf_format_size(installed, cells[i][1]);
		fatelf_format_size(shipped > installed ? shipped - installed : 0, cells[i][2]);
		w[0] = MAX(w[0], strlen(shown[i][0]));
		w[1] = MAX(w[1], strlen(shown[i][1]));
		w[2] = MAX(w[2], strlen(cells[i][0]));
		w[3] = MAX(w[3], strlen(cells[i][1]));
		w[4] = MAX(w[4], strlen(cells[i][2]));
		w[5] = MAX(w[5], strlen(shown[i][2]));
	}
	printf("%-*s  %-*s  %*s  %*s  %*s  %-*s  %s\n", (int)w[0], header[0], (int)w[1], header[1], (int)w[2],
	       header[2], (int)w[3], header[3], (int)w[4], header[4], (int)w[5], header[5], header[6]);
	for (size_t i = 0; i < n; i++)
		printf("%-*s  %-*s  %*s  %*s  %*s  %-*s  %s\n", (int)w[0], shown[i][0], (int)w[1], shown[i][1],
		       (int)w[2], cells[i][0], (int)w[3], cells[i][1], (int)w[4], cells[i][2], (int)w[5],
		       shown[i][2], shown[i][3]);
	left_print(left, nleft);
out:
	for (size_t i = 0; shown && i < n; i++)
		for (size_t k = 0; k < 4; k++)
			free(shown[i][k]);
	free(shown);
	free(use);
	free(cells);
	store_packages_free(pkgs, n);
	store_kept_packages_free(left, nleft);
	engine_close(e);
	return status;
}

/* ------------------------------------------------------------ files */

struct entry {
	const char *path;
	const store_file *f;            /* NULL: a directory */
	const store_dir *dir;
};

static int entry_cmp(const void *x, const void *y)
{
	return strcmp(((const struct entry *)x)->path, ((const struct entry *)y)->path);
}

int root_files(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	store_package pk = { 0 };
	store_file *files = NULL;
	store_dir *dirs = NULL;
	struct entry *v = NULL;
	size_t nf = 0, nd = 0, n = 0;
	fatelf_diag d = { 0 };
	const char *package;
	int status = root_parse(argc, argv, 0, cmd_root_files_usage, &a);
	int r;

	if (status <= 0)
		return cmd_exit_code(status);
	if (optind >= argc)
		return cmd_usage_error(a.cmd, "missing PACKAGE");
	if (optind + 1 < argc)
		return cmd_usage_error(a.cmd, "one package at a time ('%s' is extra)", argv[optind + 1]);
	package = argv[optind];
	status = root_open(&a, true, &e);
	if (status != EXIT_OK)
		return status;
	r = e ? store_package_get(engine_store(e), package, &pk, &d) : 0;
	if (r == 0) {
		memset(&d, 0, sizeof(d));
		snprintf(d.subject, sizeof(d.subject), "%s", package);
		r = fatelf_diag_set(&d, -ENGINE_E_NOT_INSTALLED, -1, "not installed in %s", a.root);
	}
	if (r >= 0)
		r = store_files_of(engine_store(e), package, &files, &nf, &d);
	if (r >= 0)
		r = store_dirs_page(engine_store(e), pk.id, NULL, SIZE_MAX, &dirs, &nd, &d);
	if (r >= 0 && !(v = calloc(nf + nd + 1, sizeof(*v))))
		r = fatelf_diag_oom(&d);
	if (r < 0) {
		status = root_fail(&a, &d, r);
		goto out;
	}
	for (size_t i = 0; i < nf; i++)
		v[n++] = (struct entry){ .path = files[i].path, .f = &files[i] };
	for (size_t i = 0; i < nd; i++)
		v[n++] = (struct entry){ .path = dirs[i].path, .dir = &dirs[i] };
	if (n > 1)
		qsort(v, n, sizeof(*v), entry_cmp);
	if (a.json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *arr = json_object_new_array();
		const char *last;

		if (!o || !arr || json_entries_add(engine_store(e), arr, package, files, nf, dirs, nd, SIZE_MAX,
						   &last) < 0) {
			json_object_put(arr);
			status = root_fail(&a, &d, fatelf_diag_oom(&d));
			goto out;
		}
		json_set(o, "files", arr);
		cmd_json_print(o);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		root_put(v[i].path);
		if (!v[i].f)
			putchar('/');
		else if (v[i].f->type == STORE_FILE_SYMLINK) {
			printf(" -> ");
			root_put(v[i].f->link_target ? v[i].f->link_target : "?");
		}
		putchar('\n');
	}
out:
	free(v);
	store_files_free(files, nf);
	store_dirs_free(dirs, nd);
	store_package_done(&pk);
	engine_close(e);
	return status;
}

/* ------------------------------------------------------------ owner */

static int owner_found(const char *path, const char *package, bool dir, int dir_mode, void *userdata)
{
	uint64_t *n = userdata;

	(void)dir_mode;
	(*n)++;
	root_put(package);
	printf(": ");
	root_put(path);
	printf("%s\n", dir ? "/" : "");
	return 0;
}

/* As fatelfd's Owner: a path a package owns as a file or symlink is
 * {package, file}; anything else is matched as a pattern, {files}. */
static int owner_json(store *st, const char *path, const char *pattern, uint64_t *ret_n, fatelf_diag *d)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *package = NULL;
	struct json_object *arr;
	store_file f = { 0 };
	int r;

	if (!o)
		return fatelf_diag_oom(d);
	if (st && path) {
		fatelf_diag lookup = { 0 };

		r = store_file_get(st, path, &f, &package, &lookup);
		if (r > 0) {
			json_set_str(o, "package", package);
			json_set(o, "file", json_file(st, &f, package));
			store_file_done(&f);
			cmd_json_print(o);
			*ret_n = 1;
			return 0;
		}
		if (r < 0) {
			*d = lookup;
			return r;
		}
	}
	arr = json_object_new_array();
	if (!arr)
		return fatelf_diag_oom(d);
	json_set(o, "files", arr);
	r = st ? json_owner_matches(st, pattern, arr, d) : 0;
	if (r < 0)
		return r;
	*ret_n = json_object_array_length(arr);
	cmd_json_print(o);
	return 0;
}

int root_owner(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	uint64_t n = 0;
	fatelf_diag d = { 0 };
	char *root = NULL, *pattern = NULL;
	const char *arg;
	size_t rl;
	int status = root_parse(argc, argv, 0, cmd_root_owner_usage, &a);
	int r = 0;

	if (status <= 0)
		return cmd_exit_code(status);
	if (optind >= argc)
		return cmd_usage_error(a.cmd, "missing PATH");
	if (optind + 1 < argc)
		return cmd_usage_error(a.cmd, "one path at a time ('%s' is extra)", argv[optind + 1]);
	arg = argv[optind];
	if (!arg[0])
		return cmd_usage_error(a.cmd, "an empty PATH");
	status = root_open(&a, true, &e);
	if (status != EXIT_OK)
		return status;
	/* DIR/usr/bin/x is /usr/bin/x of the root. */
	root = realpath(a.root, NULL);
	rl = root ? strlen(root) : 0;
	if (root && rl > 1 && strncmp(arg, root, rl) == 0 && arg[rl] == '/')
		arg += rl;
	else if (rl > 1 && strncmp(arg, a.root, strlen(a.root)) == 0 && arg[strlen(a.root)] == '/')
		arg += strlen(a.root);
	/* As dpkg -S: a glob as it is, a word anywhere in a path, an
	 * absolute path itself (fnmatch without a special character). */
	if (strpbrk(arg, "*?[") || arg[0] == '/')
		pattern = strdup(arg);
	else if (asprintf(&pattern, "*%s*", arg) < 0)
		pattern = NULL;
	if (!pattern) {
		status = root_fail(&a, &d, fatelf_diag_oom(&d));
		goto out;
	}
	if (a.json)
		r = owner_json(e ? engine_store(e) : NULL, arg[0] == '/' && !strpbrk(arg, "*?[") ? arg : NULL,
			       pattern, &n, &d);
	else if (e)
		r = store_paths_match(engine_store(e), pattern, owner_found, &n, &d);
	if (r < 0) {
		status = root_fail(&a, &d, r);
		goto out;
	}
	if (n == 0) {
		store_kept k = { 0 };

		/* a config file a removed package left behind says which */
		_cleanup_free_ char *shown_arg = root_shown(arg);

		if (arg[0] == '/' && !strpbrk(arg, "*?[") && store_kept_get(engine_store(e), arg, &k, NULL) > 0 &&
		    !k.dir) {
			_cleanup_free_ char *pkg = root_shown(k.package), *ver = root_shown(k.version);

			fprintf(stderr, "%s: %s: %s: no package owns it: a config file %s %s left behind "
				"(remove --purge %s deletes it)\n", program_name, a.cmd, shown_arg ? shown_arg : "?",
				pkg ? pkg : "?", ver ? ver : "?", pkg ? pkg : "?");
		} else
			fprintf(stderr, "%s: %s: %s: no package owns it\n", program_name, a.cmd,
				shown_arg ? shown_arg : "?");
		store_kept_done(&k);
		status = EXIT_INVALID;
	}
out:
	free(pattern);
	free(root);
	engine_close(e);
	return status;
}

/* ------------------------------------------------------------ verify */

static int problem_print(const char *package, const char *path, int problem, const char *detail, void *userdata)
{
	root_put(path);
	printf(": %s", engine_problem_name(problem));
	if (detail && detail[0]) {
		printf(": ");
		root_put(detail);
	}
	putchar('\n');
	return 0;
}

int root_verify(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	_cleanup_json_ struct json_object *o = NULL;
	struct json_object *found = NULL;   /* --json: o's problems */
	fatelf_diag d = { 0 };
	const char *package = NULL;
	uint64_t problems = 0;
	int status = root_parse(argc, argv, 0, cmd_root_verify_usage, &a);
	int r = 0;

	if (status <= 0)
		return cmd_exit_code(status);
	if (optind < argc)
		package = argv[optind];
	if (optind + 1 < argc)
		return cmd_usage_error(a.cmd, "one package at a time ('%s' is extra)", argv[optind + 1]);
	status = root_open(&a, true, &e);
	if (status != EXIT_OK)
		return status;
	if (a.json) {
		o = json_object_new_object();
		found = json_object_new_array();
		if (!o || !found) {
			json_object_put(found);
			status = root_fail(&a, &d, fatelf_diag_oom(&d));
			goto out;
		}
		json_set(o, "problems", found);
	}
	if (e)
		r = found ? engine_verify(e, package, json_problem_add, found, &problems, &d)
			   : engine_verify(e, package, problem_print, NULL, &problems, &d);
	else if (package)
		r = -ENOENT;
	if (r == -ENOENT || r == -ENGINE_E_NOT_INSTALLED) {
		memset(&d, 0, sizeof(d));
		snprintf(d.subject, sizeof(d.subject), "%s", package ? package : "");
		r = fatelf_diag_set(&d, -ENGINE_E_NOT_INSTALLED, -1, "not installed in %s", a.root);
	}
	if (r < 0) {
		status = root_fail(&a, &d, r);
		goto out;
	}
	if (o) {
		json_set_int(o, "checked", r);
		cmd_json_print(o);
	} else {
		printf("%d file%s checked, %llu problem%s\n", r, r == 1 ? "" : "s", (unsigned long long)problems,
		       problems == 1 ? "" : "s");
	}
	status = problems ? EXIT_INVALID : EXIT_OK;
out:
	engine_close(e);
	return status;
}
