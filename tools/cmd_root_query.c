/*
 * fatelf list, files, owner and verify --root: the store's answers about a
 * root directory, read through a read-only engine (no lock: they run
 * beside a fatelfd on the same root), in fatelfctl's words, or as JSON
 * with fatelfd's fields. A root where nothing was ever installed has no
 * store: it has no packages, and none is created.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "root_cmd.h"
#include "store.h"
#include "text.h"

/* ------------------------------------------------------------ list */

static const char *package_form(store *st, int64_t id)
{
	store_forms f = { 0 };

	if (store_package_forms(st, id, &f, NULL) < 0)
		return NULL;
	if (f.fat + f.thinned + f.several == 0)
		return "none";
	if (f.fat > 0)
		return f.thinned + f.several > 0 ? "mixed" : "fat";
	return f.several > 0 ? "compatible" : "thinned";
}

static struct json_object *json_targets(const char *s)
{
	struct json_object *a = json_object_new_array();

	while (a && s && *s) {
		size_t n = strcspn(s, ",");

		json_object_array_add(a, json_object_new_string_len(s, (int)n));
		s += n + (s[n] == ',');
	}
	return a;
}

static struct json_object *package_json(store *st, const store_package *pk, const store_usage *u)
{
	struct json_object *o = json_object_new_object();
	bool held = false;

	if (!o)
		return NULL;
	root_json_str(o, "name", pk->name);
	root_json_str(o, "version", pk->version);
	root_json_str(o, "summary", pk->summary ? pk->summary : "");
	root_json_str(o, "vendor", pk->vendor ? pk->vendor : "");
	root_json_str(o, "signer", pk->signer_keyid);
	root_json_int(o, "installed_at", pk->installed_at);
	root_json_str(o, "policy", pk->policy ? pk->policy : "");
	root_json_bool(o, "held", store_hold_get(st, pk->name, &held, NULL) >= 0 && held);
	root_json_int(o, "files", (int64_t)u->files);
	root_json_int(o, "shipped_size", (int64_t)u->shipped_size);
	root_json_int(o, "installed_size", (int64_t)u->installed_size);
	root_json_str(o, "license", pk->license);
	root_json_str(o, "homepage", pk->homepage);
	json_object_object_add(o, "targets", pk->targets ? json_targets(pk->targets) : NULL);
	root_json_str(o, "form", package_form(st, pk->id));
	root_json_str(o, "source_type", store_source_to_text(pk->source_type));
	root_json_str(o, "source", pk->source);
	return o;
}

/* The packages no longer installed that left config files behind, as
 * fatelfctl list has them. */
static struct json_object *left_json(const store_kept_package *v, size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		struct json_object *x = json_object_new_object();

		if (!x)
			break;
		root_json_str(x, "name", v[i].name);
		root_json_str(x, "version", v[i].version);
		root_json_int(x, "files", (int64_t)v[i].files);
		json_object_array_add(a, x);
	}
	return a;
}

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

	if (status >= 0)
		return status;
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
		status = root_fail(&a, &d, fatelf_diag_set(&d, -ENOMEM, -1, "out of memory"));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		(void)store_usage_get(engine_store(e), pkgs[i].id, &use[i], NULL);
	if (a.json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *arr = json_object_new_array();

		for (size_t i = 0; arr && i < n; i++)
			json_object_array_add(arr, package_json(engine_store(e), &pkgs[i], &use[i]));
		if (o) {
			json_object_object_add(o, "packages", arr);
			if (nleft > 0)
				json_object_object_add(o, "config_files", left_json(left, nleft));
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
				status = root_fail(&a, &d, fatelf_diag_set(&d, -ENOMEM, -1, "out of memory"));
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

static struct json_object *file_json(store *st, const struct entry *en, const char *package)
{
	struct json_object *o = json_object_new_object();
	const store_file *f = en->f;

	if (!o)
		return NULL;
	root_json_str(o, "path", en->path);
	root_json_str(o, "package", package);
	if (!f) {
		root_json_str(o, "type", "dir");
		root_json_int(o, "mode", en->dir->mode >= 0 ? en->dir->mode : 0);
		return o;
	}
	root_json_str(o, "type", store_file_type_to_text(f->type));
	root_json_int(o, "mode", f->mode);
	root_json_int(o, "size", (int64_t)f->size);
	root_json_str(o, "sha256", f->sha256);
	root_json_str(o, "link_target", f->link_target);
	root_json_bool(o, "config", f->config);
	root_json_str(o, "kind", store_file_kind_to_text(f->kind));
	root_json_str(o, "installed_form", store_form_to_text(f->installed_form));
	root_json_int(o, "installed_size", (int64_t)f->installed_size);
	root_json_str(o, "installed_sha256", f->installed_sha256);
	if (f->kind == STORE_KIND_FATELF) {
		struct json_object *arr = json_object_new_array();
		store_record *recs = NULL;
		size_t n = 0;

		if (arr && store_records_of(st, f->path, &recs, &n, NULL) >= 0)
			for (size_t i = 0; i < n; i++) {
				struct json_object *x = json_object_new_object();
				char target[FATELF_TARGET_NAME_MAX];

				if (!x)
					break;
				fatelf_target_format(&recs[i].target, target);
				root_json_int(x, "index", recs[i].idx);
				root_json_str(x, "target", target);
				root_json_int(x, "offset", (int64_t)recs[i].offset);
				root_json_int(x, "size", (int64_t)recs[i].size);
				root_json_str(x, "sha256", recs[i].sha256);
				root_json_bool(x, "kept", recs[i].kept);
				json_object_array_add(arr, x);
			}
		store_records_free(recs, n);
		json_object_object_add(o, "records", arr);
	}
	return o;
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

	if (status >= 0)
		return status;
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
		r = store_dirs_of(engine_store(e), pk.id, &dirs, &nd, &d);
	if (r >= 0 && !(v = calloc(nf + nd + 1, sizeof(*v))))
		r = fatelf_diag_set(&d, -ENOMEM, -1, "out of memory");
	if (r < 0) {
		status = root_fail(&a, &d, r);
		goto out;
	}
	for (size_t i = 0; i < nf; i++)
		v[n++] = (struct entry){ .path = files[i].path, .f = &files[i] };
	for (size_t i = 0; i < nd; i++)
		v[n++] = (struct entry){ .path = dirs[i].path, .dir = &dirs[i] };
	qsort(v, n, sizeof(*v), entry_cmp);
	if (a.json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *arr = json_object_new_array();

		for (size_t i = 0; arr && i < n; i++)
			json_object_array_add(arr, file_json(engine_store(e), &v[i], package));
		if (o) {
			json_object_object_add(o, "files", arr);
			cmd_json_print(o);
		} else if (arr) {
			json_object_put(arr);
		}
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

struct owner_state {
	struct json_object *arr;        /* --json */
	uint64_t n;
};

static int owner_found(const char *path, const char *package, bool dir, int dir_mode, void *userdata)
{
	struct owner_state *st = userdata;

	(void)dir_mode;
	st->n++;
	if (st->arr) {
		struct json_object *o = json_object_new_object();

		if (!o)
			return -ENOMEM;
		root_json_str(o, "path", path);
		root_json_str(o, "package", package);
		root_json_str(o, "type", dir ? "dir" : "file");
		json_object_array_add(st->arr, o);
	} else {
		root_put(package);
		printf(": ");
		root_put(path);
		printf("%s\n", dir ? "/" : "");
	}
	return 0;
}

int root_owner(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	struct owner_state st = { 0 };
	_cleanup_json_ struct json_object *o = NULL;
	fatelf_diag d = { 0 };
	char *root = NULL, *pattern = NULL;
	const char *arg;
	size_t rl;
	int status = root_parse(argc, argv, 0, cmd_root_owner_usage, &a);
	int r = 0;

	if (status >= 0)
		return status;
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
		status = root_fail(&a, &d, fatelf_diag_set(&d, -ENOMEM, -1, "out of memory"));
		goto out;
	}
	if (a.json) {
		o = json_object_new_object();
		st.arr = json_object_new_array();
		if (!o || !st.arr) {
			if (st.arr)
				json_object_put(st.arr);
			status = root_fail(&a, &d, fatelf_diag_set(&d, -ENOMEM, -1, "out of memory"));
			goto out;
		}
		json_object_object_add(o, "owners", st.arr);
	}
	if (e)
		r = store_paths_match(engine_store(e), pattern, owner_found, &st, &d);
	if (r < 0) {
		status = root_fail(&a, &d, r);
		goto out;
	}
	if (o)
		cmd_json_print(o);
	if (st.n == 0) {
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

struct verify_state {
	struct json_object *arr;        /* --json */
};

static int problem_found(const char *package, const char *path, int problem, const char *detail, void *userdata)
{
	struct verify_state *st = userdata;

	if (st->arr) {
		struct json_object *o = json_object_new_object();

		if (!o)
			return -ENOMEM;
		root_json_str(o, "package", package);
		root_json_str(o, "path", path);
		root_json_str(o, "problem", engine_problem_name(problem));
		root_json_str(o, "detail", detail && detail[0] ? detail : NULL);
		json_object_array_add(st->arr, o);
	} else {
		root_put(path);
		printf(": %s", engine_problem_name(problem));
		if (detail && detail[0]) {
			printf(": ");
			root_put(detail);
		}
		putchar('\n');
	}
	return 0;
}

int root_verify(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	struct verify_state st = { 0 };
	_cleanup_json_ struct json_object *o = NULL;
	fatelf_diag d = { 0 };
	const char *package = NULL;
	uint64_t problems = 0;
	int status = root_parse(argc, argv, 0, cmd_root_verify_usage, &a);
	int r = 0;

	if (status >= 0)
		return status;
	if (optind < argc)
		package = argv[optind];
	if (optind + 1 < argc)
		return cmd_usage_error(a.cmd, "one package at a time ('%s' is extra)", argv[optind + 1]);
	status = root_open(&a, true, &e);
	if (status != EXIT_OK)
		return status;
	if (a.json) {
		o = json_object_new_object();
		st.arr = json_object_new_array();
		if (!o || !st.arr) {
			if (st.arr)
				json_object_put(st.arr);
			status = root_fail(&a, &d, fatelf_diag_set(&d, -ENOMEM, -1, "out of memory"));
			goto out;
		}
	}
	if (e)
		r = engine_verify(e, package, problem_found, &st, &problems, &d);
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
		root_json_int(o, "checked", r);
		json_object_object_add(o, "problems", st.arr);
		st.arr = NULL;
		cmd_json_print(o);
	} else {
		printf("%d file%s checked, %llu problem%s\n", r, r == 1 ? "" : "s", (unsigned long long)problems,
		       problems == 1 ? "" : "s");
	}
	status = problems ? EXIT_INVALID : EXIT_OK;
out:
	if (st.arr)
		json_object_put(st.arr);
	engine_close(e);
	return status;
}
