/*
 * fatelf bundle create --from: one bundle of several architectures'
 * builds (lib/unify/unify.h), written atomically beside OUT, and the
 * report of what was glued, shared and kept per architecture, and the
 * .debs' Depends mapped to the bundle's dependencies.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "deb.h"
#include "macro.h"

static bool name_in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The Depends field of the .deb at path (a name ending in .deb, so that
 * no other source is opened once more); NULL (and 0) when path is not a
 * .deb or has none. */
static int deb_depends_field(const char *path, char **ret, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	fatelf_deb_info info = { 0 };
	fatelf_deb *deb = NULL;
	fatelf_reader src;
	char magic[8];
	int r;

	*ret = NULL;
	if (!has_suffix(path, ".deb") || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "!<arch>\n", 8) != 0)
		return 0;          /* not a .deb: unify names the problem, if any */
	r = fatelf_reader_fd(&src, fd, NULL);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "%s", strerror(-r));
	r = fatelf_deb_open(&src, &deb, &info, d);
	if (r == 0)
		*ret = TAKE_PTR(info.depends);
	fatelf_deb_info_done(&info);
	fatelf_deb_free(deb);
	fatelf_reader_close(&src);
	return r < 0 ? r : 0;
}

int bundle_deb_depends(const fatelf_unify_opts *uo, const char *const *fat, size_t nfat, bool keep,
		       char **depends, size_t *ndepends, size_t cap, fatelf_diag *d)
{
	for (size_t s = 0; s < uo->nfrom; s++) {
		_cleanup_free_ char *field = NULL;
		fatelf_deb_relation *rel = NULL;
		size_t nrel = 0;
		int r;

		r = deb_depends_field(uo->from[s].path, &field, d);
		if (r < 0) {
			fatelf_diag_names(d, uo->from[s].path);
			return r;
		}
		if (!field)
			continue;
		r = fatelf_deb_depends_parse(field, &rel, &nrel, d);
		if (r < 0)
			return r;
		for (size_t i = 0; i < nrel; i++) {
			fatelf_depend dep = { .name = rel[i].name, .op = rel[i].op, .version = rel[i].version };
			char text[FATELF_DEPEND_TEXT_MAX];
			bool have = false;

			for (size_t k = 0; rel[i].name && k < *ndepends; k++) {
				size_t n = strlen(rel[i].name);

				have = have || (strncmp(depends[k], rel[i].name, n) == 0 &&
						(depends[k][n] == 0 || depends[k][n] == ' '));
			}
			if (have)
				continue;
			if (!rel[i].name) {
				fprintf(stderr, "%s: %s: Depends '%s' left out: not one package (alternatives are not kept)\n",
					program_name, uo->from[s].path, rel[i].text);
				continue;
			}
			if (!name_in(rel[i].name, fat, nfat) && !keep) {
				fprintf(stderr, "%s: %s: Depends '%s' left out: '%s' is not a fat package (--fat-packages; --keep-depends keeps it)\n",
					program_name, uo->from[s].path, rel[i].text, rel[i].name);
				continue;
			}
			if (*ndepends == cap || fatelf_depend_format(&dep, text, sizeof(text)) < 0 ||
			    !(depends[*ndepends] = strdup(text))) {
				fatelf_deb_relations_free(rel, nrel);
				return fatelf_diag_set(d, *ndepends == cap ? -FATELF_E_LIMIT : -ENOMEM, -1,
						       *ndepends == cap ? "more than %d dependencies" : "out of memory",
						       FATELF_DEPENDS_MAX);
			}
			(*ndepends)++;
		}
		fatelf_deb_relations_free(rel, nrel);
	}
	return 0;
}

int bundle_create_json_error(const char *out, const fatelf_diag *d, int r)
{
	_cleanup_json_ struct json_object *j = json_object_new_object();
	struct json_object *e = cmd_json_error(d, r);

	json_object_object_add(e, "subject", d->subject[0] ? json_object_new_string(d->subject) : NULL);
	json_object_object_add(j, "file", json_object_new_string(out));
	json_object_object_add(j, "error", e);
	cmd_json_print(j);
	return cmd_exit_code(r);
}

static void print_json(const char *out, const fatelf_unify_opts *uo, const fatelf_unify_result *res,
		       uint64_t size)
{
	_cleanup_json_ struct json_object *j = json_object_new_object();
	struct json_object *entries = json_object_new_object(), *ign = json_object_new_array();

	json_object_object_add(j, "file", json_object_new_string(out));
	json_object_object_add(j, "name", json_object_new_string(res->name));
	json_object_object_add(j, "version", json_object_new_string(res->version));
	json_object_object_add(j, "size", json_object_new_int64((int64_t)size));
	json_object_object_add(j, "sources_size", json_object_new_int64((int64_t)res->sources_size));
	json_object_object_add(j, "signed", json_object_new_boolean(uo->bundle.sign_key != NULL));
	json_object_object_add(entries, "glued", json_object_new_int64((int64_t)res->glued));
	json_object_object_add(entries, "shared", json_object_new_int64((int64_t)res->shared));
	json_object_object_add(entries, "per_arch", json_object_new_int64((int64_t)res->per_arch));
	json_object_object_add(entries, "dirs", json_object_new_int64((int64_t)res->dirs));
	json_object_object_add(j, "entries", entries);
	{
		uint64_t rereads = 0;

		for (size_t s = 0; s < uo->nfrom; s++)
			rereads += res->rereads[s];
		json_object_object_add(j, "rereads", json_object_new_int64((int64_t)rereads));
	}
	for (size_t s = 0; s < uo->nfrom; s++) {
		struct json_object *x;

		if (!(res->scripts_ignored & (1u << s)))
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "source", json_object_new_string(uo->from[s].path));
		json_object_object_add(x, "scripts", json_object_new_string(res->scripts[s]));
		json_object_array_add(ign, x);
	}
	json_object_object_add(j, "ignored_scripts", ign);
	json_object_object_add(j, "error", NULL);
	cmd_json_print(j);
}

int bundle_unify(const char *out, fatelf_unify_opts *uo, fatelf_atomic *a, const bool *open_failed, bool json,
		 fatelf_diag *d)
{
	fatelf_unify_result res;
	char size[32], in[32];
	struct stat st;
	uint64_t n = 0;
	int r;

	r = fatelf_unify_create(uo, &res, d);
	if (r == 0)
		r = fatelf_atomic_commit(a, d);
	if (r < 0) {
		fatelf_atomic_abort(a);
		if (json)
			return bundle_create_json_error(out, d, r);
		return cmd_report(*open_failed ? out : NULL, d, r);
	}
	for (size_t s = 0; s < uo->nfrom; s++)
		if (res.scripts_ignored & (1u << s))
			fprintf(stderr, "%s: %s: its maintainer scripts (%s) are not in the bundle; nothing will run them (--ignore-scripts)\n",
				program_name, uo->from[s].path, res.scripts[s]);
	for (size_t s = 0; s < uo->nfrom; s++)
		if (res.rereads[s])
			fprintf(stderr, "%s: %s: read %u more time%s from its start, as its members come in another order than %s's (tar --sort=name makes one read enough)\n",
				program_name, uo->from[s].path, res.rereads[s], res.rereads[s] == 1 ? "" : "s",
				uo->from[res.lead].path);
	if (stat(out, &st) == 0)
		n = (uint64_t)st.st_size;
	if (json) {
		print_json(out, uo, &res, n);
		return EXIT_OK;
	}
	printf("%s: %s %s, %" PRIu64 " bytes (%s)%s\n", out, res.name, res.version, n, fatelf_format_size(n, size),
	       uo->bundle.sign_key ? ", signed" : "");
	printf("%zu sources: %zu glued, %zu shared, %zu per-arch, %zu directories; the sources are %" PRIu64
	       " bytes (%s), the bundle %.1f%% of that\n",
	       uo->nfrom, res.glued, res.shared, res.per_arch, res.dirs, res.sources_size,
	       fatelf_format_size(res.sources_size, in),
	       res.sources_size ? 100.0 * (double)n / (double)res.sources_size : 0.0);
	return EXIT_OK;
}
