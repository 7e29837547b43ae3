/*
 * fatelf install --root and fatelf remove --root: the engine's install
 * (several bundles in one group: one transaction) and remove on a root
 * directory, with results in fatelfctl's words, or as JSON as fatelfd
 * replies.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "results.h"
#include "root_cmd.h"
#include "store.h"

static const char *change_words(const engine_result *r)
{
	static const struct { const char *change, *done, *would; } words[] = {
		{ "install", "installed", "would install" },
		{ "upgrade", "upgraded", "would upgrade" },
		{ "reinstall", "reinstalled", "would reinstall" },
		{ "downgrade", "downgraded", "would downgrade" },
		{ "remove", "removed", "would remove" },
	};
	const char *change = r->change ? r->change : r->kind;

	for (size_t i = 0; change && i < ARRAY_SIZE(words); i++)
		if (strcmp(change, words[i].change) == 0)
			return r->dry_run ? words[i].would : words[i].done;
	return change ? change : "?";
}

/* The names, versions and paths come from the bundle and from the store,
 * whose older rows may hold control or bidirectional characters: each is
 * printed through root_put. */
static void result_print(const engine_result *r)
{
	bool remove = r->kind && strcmp(r->kind, "remove") == 0;
	bool two = r->change && (strcmp(r->change, "upgrade") == 0 || strcmp(r->change, "downgrade") == 0);
	const char *files = r->files == 1 ? "file" : "files";
	char written[32], saved[32];

	fatelf_format_size(r->bytes_written, written);
	fatelf_format_size(r->bytes_saved > 0 ? (uint64_t)r->bytes_saved : 0, saved);
	if (r->config_files_only)
		printf("%s the config files ", r->dry_run ? "would purge" : "purged");
	else if (remove && r->purge)
		printf("%s ", r->dry_run ? "would purge" : "purged");
	else
		printf("%s ", change_words(r));
	root_put(r->package ? r->package : "?");
	if (two) {
		putchar(' ');
		root_put(r->old_version ? r->old_version : "?");
		printf(" -> ");
		root_put(r->new_version ? r->new_version : "?");
	} else if (remove && r->old_version) {
		putchar(' ');
		root_put(r->old_version);
	} else if (!remove && r->new_version) {
		putchar(' ');
		root_put(r->new_version);
	}
	if (r->config_files_only)
		printf(" left behind: %llu %s\n", (unsigned long long)r->files, files);
	else if (remove)
		printf(": %llu %s\n", (unsigned long long)r->files, files);
	else
		printf(": %llu %s, %s %s, %s %s by thinning\n", (unsigned long long)r->files, files, written,
		       r->dry_run ? "to write" : "written", saved, r->dry_run ? "would be saved" : "saved");
	if (r->signature && strcmp(r->signature, "unverified") == 0)
		printf("signature not verified: signed by key %s, which is not trusted; %s as unsigned\n",
		       r->signer, r->dry_run ? "would install" : "installed");
	for (size_t i = 0; i < r->nconfig_kept; i++) {
		printf("%s your changed ", r->dry_run ? "would keep" : "kept");
		root_put(r->config_kept[i]);
		if (!remove) {
			printf("; the new version is ");
			root_put(r->config_kept[i]);
			printf(".fatelf-new");
		}
		putchar('\n');
	}
	for (size_t i = 0; i < r->ntaken; i++) {
		printf("took over ");
		root_put(r->taken[i].path);
		if (r->taken[i].kept_by) {
			printf(", a config file package ");
			root_put(r->taken[i].kept_by);
			putchar(' ');
			root_put(r->taken[i].kept_version);
			printf(" left behind");
		} else if (r->taken[i].from) {
			printf(" from ");
			root_put(r->taken[i].from);
		} else {
			printf(" (unowned)");
		}
		putchar('\n');
	}
	for (size_t i = 0; i < r->nwarnings; i++) {
		printf("warning: ");
		root_put(r->warnings[i].path);
		printf(" %s fat: ", r->dry_run ? "would stay" : "stays");
		root_put(r->warnings[i].reason);
		putchar('\n');
	}
}

static void results_print(const struct root_args *a, const engine_result *v, size_t n)
{
	/* As fatelfd's reply to fatelfctl: one package's result, or several's
	 * results. */
	if (a->json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *arr = n == 1 ? NULL : json_object_new_array();

		if (!o)
			return;
		for (size_t i = 0; arr && i < n; i++)
			json_object_array_add(arr, json_result(&v[i]));
		if (n == 1)
			json_set(o, "result", json_result(&v[0]));
		else
			json_set(o, "results", arr);
		cmd_json_print(o);
		return;
	}
	for (size_t i = 0; i < n; i++)
		result_print(&v[i]);
	if (n > 1)
		printf("%s: %zu packages in one transaction\n", v[0].dry_run ? "dry run" : "committed", n);
}

/* Opens each bundle with the user's own rights, before anything else:
 * a missing file fails before the root is touched. */
static int bundles_open(const struct root_args *a, char **paths, size_t n, int *fds, char **real)
{
	for (size_t i = 0; i < n; i++) {
		fatelf_diag d = { 0 };
		struct stat st;
		int r;

		fds[i] = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fds[i] < 0 || fstat(fds[i], &st) < 0) {
			r = -errno;
			snprintf(d.subject, sizeof(d.subject), "%s", paths[i]);
			fatelf_diag_set(&d, r, -1, "%s", fatelf_strerror(r));
			return root_fail(a, &d, r);
		}
		if (S_ISDIR(st.st_mode)) {
			snprintf(d.subject, sizeof(d.subject), "%s", paths[i]);
			fatelf_diag_set(&d, -EISDIR, -1, "is a directory, not a bundle");
			return root_fail(a, &d, -EISDIR);
		}
		real[i] = realpath(paths[i], NULL);
	}
	return EXIT_OK;
}

int root_install(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	engine_group *g = NULL;
	engine_result *results = NULL;
	fatelf_diag d = { 0 };
	size_t n, done = 0;
	int *fds = NULL;
	char **real = NULL;
	int status = root_parse(argc, argv, ROOT_OPT_MUTATE | ROOT_OPT_INSTALL, cmd_root_install_usage, &a);
	int r = 0;

	if (status <= 0)
		return cmd_exit_code(status);
	if (optind >= argc)
		return cmd_usage_error(a.cmd, "missing BUNDLE");
	n = (size_t)(argc - optind);
	fds = malloc(n * sizeof(*fds));
	real = calloc(n, sizeof(*real));
	results = calloc(n, sizeof(*results));
	if (!fds || !real || !results) {
		status = root_fail(&a, &d, fatelf_diag_oom(&d));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	status = bundles_open(&a, argv + optind, n, fds, real);
	if (status != EXIT_OK)
		goto out;
	status = root_open(&a, false, &e);
	if (status != EXIT_OK)
		goto out;
	if (n > 1) {
		g = engine_group_new(e);
		if (!g) {
			status = root_fail(&a, &d, fatelf_diag_oom(&d));
			goto out;
		}
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		engine_install_opts o = {
			.allow_unsigned = a.allow_unsigned,
			.force = a.force,
			.allow_downgrade = a.allow_downgrade,
			/* as fatelfd lets root install setid files */
			.allow_setid = geteuid() == 0,
			.dry_run = a.dry_run,
			/* the image's kernel and binfmt handler are not this
			 * machine's: a fat executable gets its warning */
			.fat_executables_run = false,
			.group = g,
			.source_type = STORE_SOURCE_FILE,
			.source = real[i] ? real[i] : argv[optind + (int)i],
		};
		fatelf_reader src = { 0 };

		r = fatelf_reader_file(&src, fds[i]);
		if (r < 0) {
			snprintf(d.subject, sizeof(d.subject), "%s", argv[optind + (int)i]);
			fatelf_diag_set(&d, r, -1, "%s", fatelf_strerror(r));
		} else {
			r = engine_install(e, &src, &o, &results[i], &d);
			fatelf_reader_close(&src);
		}
		if (r < 0 && !d.subject[0])
			snprintf(d.subject, sizeof(d.subject), "%s", argv[optind + (int)i]);
		if (r >= 0)
			done++;
	}
	if (g && r < 0)
		engine_group_abort(g, r, &d);
	else if (g && !a.dry_run)
		r = engine_group_commit(g, &d);
	else if (g)
		r = engine_group_check(g, &d);
	if (r < 0) {
		done = 0;
		status = root_fail(&a, &d, r);
		goto out;
	}
	results_print(&a, results, done);
	status = EXIT_OK;
out:
	if (g)
		engine_group_free(g);
	engine_close(e);
	for (size_t i = 0; results && i < done; i++)
		engine_result_done(&results[i]);
	for (size_t i = 0; fds && i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (size_t i = 0; real && i < n; i++)
		free(real[i]);
	free(fds);
	free(real);
	free(results);
	return status;
}

int root_remove(int argc, char **argv)
{
	struct root_args a;
	engine *e = NULL;
	engine_result *results;
	size_t done = 0;
	int status = root_parse(argc, argv, ROOT_OPT_MUTATE | ROOT_OPT_REMOVE, cmd_root_remove_usage, &a);

	if (status <= 0)
		return cmd_exit_code(status);
	if (optind >= argc)
		return cmd_usage_error(a.cmd, "missing PACKAGE");
	results = calloc((size_t)(argc - optind), sizeof(*results));
	if (!results) {
		fatelf_diag d = { 0 };

		return root_fail(&a, &d, fatelf_diag_oom(&d));
	}
	status = root_open(&a, false, &e);
	/* One transaction, as fatelfctl remove: all of them or none. */
	if (status == EXIT_OK) {
		engine_remove_opts o = { .dry_run = a.dry_run, .purge = a.purge };
		fatelf_diag d = { 0 };
		size_t n = (size_t)(argc - optind);
		int r = engine_remove_many(e, (const char *const *)argv + optind, n, &o, results, &d);

		if (r < 0)
			status = root_fail(&a, &d, r);
		else
			done = n;
	}
	if (status == EXIT_OK)
		results_print(&a, results, done);
	engine_close(e);
	for (size_t i = 0; i < done; i++)
		engine_result_done(&results[i]);
	free(results);
	return status;
}
