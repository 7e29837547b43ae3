/*
 * fatelf bundle create --from: one bundle of several architectures'
 * builds (lib/bundle/unify.h), written atomically beside OUT, and the
 * report of what was glued, shared and kept per architecture.
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
#include "macro.h"

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
