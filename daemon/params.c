/*
 * The dispatch tables of fatelfd's methods (see params.h). Each names the
 * fields of schema/io.fatelf.Manager.varlink for its method; a field not
 * listed is refused with org.varlink.service.InvalidParameter. Which
 * method has which table is written in daemon/methodset.h.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "methodset.h"
#include "params.h"

#define F(type, member, vt, fl) { #member, vt, offsetof(type, member), fl, 0, 0, 0 }

static const vl_field params_fields_none[] = { { NULL } };
static const vl_field params_fields_install[] = {
	{ "fd", VL_INT64, offsetof(struct p_install, fd), 0, 0, PARAMS_FDS_MAX - 1, 0 },
	/* file:// URLs are root's too: the handler checks the scheme. */
	F(struct p_install, url, VL_STRING, 0),
	F(struct p_install, path, VL_STRING, PARAMS_ROOT_ONLY),
	F(struct p_install, policy, VL_STRING, PARAMS_ROOT_ONLY),
	F(struct p_install, targets, VL_STRV, PARAMS_ROOT_ONLY),
	F(struct p_install, allow_unsigned, VL_BOOL, PARAMS_ROOT_ONLY),
	F(struct p_install, force, VL_BOOL, PARAMS_ROOT_ONLY),
	F(struct p_install, allow_downgrade, VL_BOOL, PARAMS_ROOT_ONLY),
	F(struct p_install, dry_run, VL_BOOL, 0),
	F(struct p_install, package, VL_STRING, 0),
	F(struct p_install, packages, VL_STRV, 0),
	F(struct p_install, source_path, VL_STRING, 0),
	F(struct p_install, fds, VL_ARRAY, 0),
	F(struct p_install, source_paths, VL_STRV, 0),
	F(struct p_install, keep_automatic, VL_BOOL, 0),
	{ NULL },
};
static const vl_field params_fields_remove[] = {
	F(struct p_remove, package, VL_STRING, 0),
	F(struct p_remove, packages, VL_STRV, 0),
	F(struct p_remove, dry_run, VL_BOOL, 0),
	F(struct p_remove, purge, VL_BOOL, 0),
	F(struct p_remove, autoremove, VL_BOOL, 0),
	{ NULL },
};
static const vl_field params_fields_thin[] = {
	F(struct p_thin, packages, VL_STRV, 0),
	F(struct p_thin, targets, VL_STRV, PARAMS_ROOT_ONLY),
	F(struct p_thin, dry_run, VL_BOOL, 0),
	{ NULL },
};
static const vl_field params_fields_cancel[] = {
	{ "id", VL_INT64, offsetof(struct p_cancel, id), 0, 1, INT64_MAX, 0 },
	{ NULL },
};
static const vl_field params_fields_package[] = {
	F(struct p_package, package, VL_STRING, VL_MANDATORY),
	{ NULL },
};
static const vl_field params_fields_package_opt[] = {
	F(struct p_package, package, VL_STRING, 0),
	{ NULL },
};
static const vl_field params_fields_owner[] = {
	F(struct p_owner, path, VL_STRING, 0),
	F(struct p_owner, pattern, VL_STRING, 0),
	{ NULL },
};
static const vl_field params_fields_files[] = {
	F(struct p_files, package, VL_STRING, VL_MANDATORY),
	F(struct p_files, dirs, VL_BOOL, 0),
	{ NULL },
};
static const vl_field params_fields_history[] = {
	F(struct p_history, package, VL_STRING, 0),
	{ "limit", VL_INT64, offsetof(struct p_history, limit), 0, 0, INT64_MAX, 0 },
	{ NULL },
};
static const vl_field params_fields_repo_add[] = {
	F(struct p_repo_add, name, VL_STRING, VL_MANDATORY | PARAMS_ROOT_ONLY),
	F(struct p_repo_add, urls, VL_STRV, VL_MANDATORY | PARAMS_ROOT_ONLY),
	F(struct p_repo_add, key, VL_STRING, VL_MANDATORY | PARAMS_ROOT_ONLY),
	F(struct p_repo_add, id, VL_STRING, PARAMS_ROOT_ONLY),
	{ NULL },
};
static const vl_field params_fields_repo_name[] = {
	F(struct p_repo_name, name, VL_STRING, VL_MANDATORY | PARAMS_ROOT_ONLY),
	{ NULL },
};
static const vl_field params_fields_update[] = {
	F(struct p_update, repository, VL_STRING, 0),
	{ NULL },
};
static const vl_field params_fields_search[] = {
	F(struct p_search, pattern, VL_STRING, 0),
	F(struct p_search, upgradable, VL_BOOL, 0),
	{ NULL },
};
static const vl_field params_fields_status[] = {
	F(struct p_status, prometheus, VL_BOOL, 0),
	{ NULL },
};
static const vl_field params_fields_key_add[] = {
	F(struct p_key_add, key, VL_STRING, VL_MANDATORY),
	{ NULL },
};
static const vl_field params_fields_key_remove[] = {
	F(struct p_key_remove, id, VL_STRING, VL_MANDATORY),
	{ NULL },
};
static const vl_field params_fields_interface[] = {
	F(struct p_interface, interface, VL_STRING, VL_MANDATORY),
	{ NULL },
};

#define PARAMS_ROW(name, handler, fields, who, runs) { name, params_fields_##fields, who, runs },

const params_method params_methods[] = {
	FATELFD_METHODSET(PARAMS_ROW)
	{ NULL, NULL, PARAMS_ANYONE, PARAMS_INLINE },
};

const params_method *params_lookup(const char *name)
{
	for (const params_method *m = params_methods; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

const char *params_root_only_set(const vl_field *fields, const union method_params *p)
{
	for (const vl_field *f = fields; f->name; f++) {
		const char *at = (const char *)p + f->offset;
		bool b;
		const void *ptr;

		if (!(f->flags & PARAMS_ROOT_ONLY))
			continue;
		switch (f->type) {
		case VL_BOOL:
			memcpy(&b, at, sizeof(b));
			if (b)
				return f->name;
			break;
		case VL_STRING:
		case VL_STRV:
			memcpy(&ptr, at, sizeof(ptr));
			if (ptr)
				return f->name;
			break;
		default:
			/* Only these types carry an option worth refusing. */
			return f->name;
		}
	}
	return NULL;
}

void params_done(const vl_field *fields, union method_params *p)
{
	for (const vl_field *f = fields; f->name; f++)
		if (f->type == VL_STRV) {
			void *v;

			memcpy(&v, (char *)p + f->offset, sizeof(v));
			free(v);
		}
}
