/*
 * Unit tests for fatelfd's code that needs no socket: the method set
 * (daemon/methodset.h) held to schema/io.fatelf.Manager.varlink type by
 * type, the lookup of a method and its handler (daemon/dispatch.c), the
 * parameter tables (daemon/params.c), who may call what (daemon/authz.c),
 * the JSON of jobs held to the interface's types (lib/install/results.c), the
 * names a job goes by (daemon/job.c), and the readers of repos.d and
 * registries.d files (daemon/repos.c, daemon/ociinstall.c).
 *
 * The interface is read the way a Varlink client reads it: "method
 * Name(a: T, ...)" and "type Name (a: T, ...)" with comments (#) anywhere
 * between the parentheses, and types string, int, bool, float, ?T, []T
 * and named types. Each checker is also run on a broken copy, so that a
 * wrong type is seen to fail.
 */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "authz.h"
#include "dispatch.h"
#include "job.h"
#include "results.h"
#include "methods.h"
#include "params.h"
#include "repos.h"
#include "testutil.h"

#define IFACE "io.fatelf.Manager"
#define MAX_FIELDS 32

/* ------------------------------------------------------------ reading the interface */

struct decl_field {
	char name[64];
	char type[64];
};

/* The fields between the parentheses that follow "KEYWORD NAME" (at the
 * start of a line) in text, comments dropped. Returns how many, or -1
 * when there is no such declaration. */
static int decl_fields(const char *text, const char *keyword, const char *name,
		       struct decl_field *ret, int max)
{
	char head[128];
	const char *p = text;
	size_t hlen;
	int n = 0;

	hlen = (size_t)snprintf(head, sizeof(head), "%s %s", keyword, name);
	for (;;) {
		p = strstr(p, head);
		if (!p)
			return -1;
		if ((p == text || p[-1] == '\n') && (p[hlen] == '(' || p[hlen] == ' '))
			break;
		p += hlen;
	}
	p = strchr(p + hlen, '(');
	ck_assert_ptr_nonnull(p);
	p++;
	for (;;) {
		char item[160];
		size_t len = 0;
		int depth = 0;
		char *colon, *s, *e;

		/* One item, up to the comma or the closing parenthesis at depth 0. */
		for (; *p; p++) {
			if (*p == '#') {
				p += strcspn(p, "\n");
				if (!*p)
					break;
				continue;
			}
			if (*p == '(')
				depth++;
			if ((*p == ',' || *p == ')') && depth == 0)
				break;
			if (*p == ')')
				depth--;
			if (len + 1 < sizeof(item))
				item[len++] = *p;
		}
		ck_assert_msg(*p, "%s %s: the list does not end", keyword, name);
		item[len] = '\0';
		for (s = item; *s == ' ' || *s == '\n' || *s == '\t'; s++)
			;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t'))
			*--e = '\0';
		if (*s) {
			ck_assert_int_lt(n, max);
			colon = strchr(s, ':');
			ck_assert_msg(colon, "%s %s: \"%s\" has no type", keyword, name, s);
			*colon = '\0';
			snprintf(ret[n].name, sizeof(ret[n].name), "%.*s", (int)strcspn(s, " \t\n"), s);
			for (colon++; *colon == ' '; colon++)
				;
			snprintf(ret[n].type, sizeof(ret[n].type), "%s", colon);
			n++;
		}
		if (*p == ')')
			return n;
		p++;
	}
}

/* The interface's type for a field of a parameter table. */
static const char *field_type(const vl_field *f, char *buf, size_t size)
{
	const char *t = "?";

	switch (f->type) {
	case VL_STRING:
		t = "string";
		break;
	case VL_BOOL:
		t = "bool";
		break;
	case VL_INT64:
	case VL_UINT64:
		t = "int";
		break;
	case VL_STRV:
		t = "[]string";
		break;
	case VL_OBJECT:
		t = "object";
		break;
	case VL_ARRAY:
		/* the daemon's one array of another type: Install's fds */
		t = "[]int";
		break;
	}
	snprintf(buf, size, "%s%s", f->flags & VL_MANDATORY ? "" : "?", t);
	return buf;
}

/*
 * Holds the rows of table that belong to IFACE to the methods text
 * declares: the same methods, the same parameters, the same types and the
 * same optional ones; and each row has its handler. Returns the number of
 * mismatches; the first is described in why.
 */
static unsigned check_methods(const char *text, const params_method *table, char *why, size_t size)
{
	const size_t plen = strlen(IFACE ".");
	unsigned bad = 0, nrows = 0, ndeclared = 0;
	const char *p;

#define BAD(...) do { if (!bad++) snprintf(why, size, __VA_ARGS__); } while (0)
	why[0] = '\0';
	for (const params_method *m = table; m->name; m++) {
		struct decl_field d[MAX_FIELDS];
		const char *name = m->name + plen;
		size_t nfields = 0;
		int nd;

		if (strncmp(m->name, IFACE ".", plen) != 0)
			continue;
		nrows++;
		if (!dispatch_handler(&params_methods[m - table]))
			BAD("%s has no handler", m->name);
		nd = decl_fields(text, "method", name, d, MAX_FIELDS);
		if (nd < 0) {
			BAD("%s is not in the interface", m->name);
			continue;
		}
		for (const vl_field *f = m->fields; f->name; f++) {
			char want[64];
			bool found = false;

			nfields++;
			field_type(f, want, sizeof(want));
			for (int i = 0; i < nd; i++)
				if (strcmp(d[i].name, f->name) == 0) {
					found = true;
					if (strcmp(d[i].type, want) != 0)
						BAD("%s(%s): the table says %s, the interface %s", name, f->name, want,
						    d[i].type);
				}
			if (!found)
				BAD("%s(%s): not in the interface", name, f->name);
		}
		if ((size_t)nd != nfields)
			BAD("%s: the interface has %d parameters, the table %zu", name, nd, nfields);
	}
	/* Every method the interface declares is a row. */
	for (p = text; (p = strstr(p, "\nmethod ")); p++) {
		char full[256];
		const char *name = p + 8;

		ndeclared++;
		bool found = false;

		snprintf(full, sizeof(full), IFACE ".%.*s", (int)strcspn(name, "( \n"), name);
		for (const params_method *m = table; m->name; m++)
			if (strcmp(m->name, full) == 0)
				found = true;
		if (!found)
			BAD("%s has no row in the method set", full);
	}
	if (ndeclared != nrows)
		BAD("the interface declares %u methods, the method set has %u", ndeclared, nrows);
#undef BAD
	return bad;
}

/* Whether v is of the interface's type typ (named types are looked up). */
static bool value_ok(const char *text, const char *typ, json_object *v, char *why, size_t size);

/* Whether o has exactly the fields of "type name" in text, each of its type. */
static bool object_ok(const char *text, const char *name, json_object *o, char *why, size_t size)
{
	struct decl_field d[MAX_FIELDS];
	int n = decl_fields(text, "type", name, d, MAX_FIELDS);

	if (n < 0) {
		snprintf(why, size, "type %s is not declared", name);
		return false;
	}
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(why, size, "%s is not an object", name);
		return false;
	}
	json_object_object_foreach(o, key, val) {
		bool found = false;

		(void)val;
		for (int i = 0; i < n; i++)
			if (strcmp(d[i].name, key) == 0)
				found = true;
		if (!found) {
			snprintf(why, size, "%s has %s, which the interface does not declare", name, key);
			return false;
		}
	}
	for (int i = 0; i < n; i++) {
		json_object *v = NULL;
		bool present = json_object_object_get_ex(o, d[i].name, &v);

		if (!present && d[i].type[0] != '?') {
			snprintf(why, size, "%s lacks %s (%s)", name, d[i].name, d[i].type);
			return false;
		}
		if (present && !value_ok(text, d[i].type, v, why, size)) {
			size_t len = strlen(why);

			snprintf(why + len, size - len, " (%s.%s)", name, d[i].name);
			return false;
		}
	}
	return true;
}

static bool value_ok(const char *text, const char *typ, json_object *v, char *why, size_t size)
{
	bool ok;

	if (typ[0] == '?')
		return !v || value_ok(text, typ + 1, v, why, size);
	if (!v) {
		snprintf(why, size, "null for %s", typ);
		return false;
	}
	if (strncmp(typ, "[]", 2) == 0) {
		if (!json_object_is_type(v, json_type_array)) {
			snprintf(why, size, "not an array for %s", typ);
			return false;
		}
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!value_ok(text, typ + 2, json_object_array_get_idx(v, i), why, size))
				return false;
		return true;
	}
	if (strcmp(typ, "string") == 0)
		ok = json_object_is_type(v, json_type_string);
	else if (strcmp(typ, "int") == 0)
		ok = json_object_is_type(v, json_type_int);
	else if (strcmp(typ, "bool") == 0)
		ok = json_object_is_type(v, json_type_boolean);
	else if (strcmp(typ, "float") == 0)
		ok = json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
	else
		return object_ok(text, typ, v, why, size);
	if (!ok)
		snprintf(why, size, "%s for %s", json_object_to_json_string(v), typ);
	return ok;
}

/* text with the first from replaced by to (malloc'd). */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *s;

	ck_assert_msg(at, "the interface has no \"%s\"", from);
	ck_assert_int_ne(asprintf(&s, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)), -1);
	return s;
}

/* ------------------------------------------------------------ the method set */

START_TEST(test_methods_match_interface)
{
	char why[512];
	unsigned bad = check_methods(fatelfd_interface_text, params_methods, why, sizeof(why));

	ck_assert_msg(bad == 0, "%u mismatches, first: %s", bad, why);
}
END_TEST

START_TEST(test_methods_check_fails)
{
	static const struct {
		const char *from, *to, *why;
	} cases[] = {
		{ "method Info(package: string)", "method Info(package: int)", "Info(package)" },
		{ "method Files(package: string, dirs: ?bool)", "method Files(package: ?string, dirs: ?bool)", "Files(package)" },
		{ "  dry_run: ?bool,\n  purge: ?bool,\n", "  dry_run: ?bool,\n  purge: ?[]bool,\n",
		  "Remove(purge)" },
		{ "  targets: ?[]string,\n  allow_unsigned", "  targets: ?string,\n  allow_unsigned", "Install(targets)" },
		{ "method List()", "method List(all: ?bool)", "List: the interface has 1" },
		{ "method GetPolicy()", "method GetPolicyOf(package: string)", "GetPolicy is not in" },
		{ "method Cancel(id: ?int)", "method Cancel(id: ?int, soon: ?bool)", "Cancel: the interface" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[512];
		char *text = replaced(fatelfd_interface_text, cases[i].from, cases[i].to);
		unsigned bad = check_methods(text, params_methods, why, sizeof(why));

		ck_assert_msg(bad > 0, "\"%s\" went unseen", cases[i].to);
		ck_assert_msg(strstr(why, cases[i].why), "\"%s\": %s", cases[i].to, why);
		free(text);
	}
}
END_TEST

START_TEST(test_methods_check_fails_on_table)
{
	size_t n = 0;
	params_method *table;
	vl_field *fields;
	const params_method *info = params_lookup(IFACE ".Info");
	char why[512];
	size_t nf = 0;

	while (params_methods[n].name)
		n++;
	table = calloc(n + 1, sizeof(*table));
	ck_assert_ptr_nonnull(table);
	memcpy(table, params_methods, (n + 1) * sizeof(*table));
	/* Info's package as an int, then as optional. */
	while (info->fields[nf].name)
		nf++;
	fields = calloc(nf + 1, sizeof(*fields));
	ck_assert_ptr_nonnull(fields);
	memcpy(fields, info->fields, (nf + 1) * sizeof(*fields));
	table[info - params_methods].fields = fields;
	fields[0].type = VL_INT64;
	ck_assert_uint_gt(check_methods(fatelfd_interface_text, table, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "Info(package): the table says int, the interface string"), "%s", why);
	fields[0].type = VL_STRING;
	fields[0].flags &= ~VL_MANDATORY;
	ck_assert_uint_gt(check_methods(fatelfd_interface_text, table, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "says ?string"), "%s", why);
	fields[0].flags |= VL_MANDATORY;
	ck_assert_uint_eq(check_methods(fatelfd_interface_text, table, why, sizeof(why)), 0);
	free(fields);
	free(table);
}
END_TEST

START_TEST(test_lookup_and_handlers)
{
	static const struct {
		const char *name;
		method_handler *handler;
	} want[] = {
		{ "org.varlink.service.GetInfo", method_get_info },
		{ "org.varlink.service.GetInterfaceDescription", method_get_interface_description },
		{ IFACE ".Status", method_status },
		{ IFACE ".Install", method_install },
		{ IFACE ".Remove", method_remove },
		{ IFACE ".Thin", method_thin },
		{ IFACE ".Cancel", method_cancel },
		{ IFACE ".List", method_list },
		{ IFACE ".Info", method_info },
		{ IFACE ".Files", method_files },
		{ IFACE ".Owner", method_owner },
		{ IFACE ".Verify", method_verify },
		{ IFACE ".History", method_history },
		{ IFACE ".GetPolicy", method_get_policy },
		{ IFACE ".RepoAdd", method_repo_add },
		{ IFACE ".RepoRemove", method_repo_remove },
		{ IFACE ".RepoList", method_repo_list },
		{ IFACE ".Update", method_update },
		{ IFACE ".Search", method_search },
		{ IFACE ".KeyAdd", method_key_add },
		{ IFACE ".KeyList", method_key_list },
		{ IFACE ".KeyRemove", method_key_remove },
		{ IFACE ".Hold", method_hold },
		{ IFACE ".Unhold", method_unhold },
	};
	size_t n = 0;
	params_method other = { 0 };

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const params_method *m = params_lookup(want[i].name);

		ck_assert_msg(m, "%s has no row", want[i].name);
		ck_assert_msg(dispatch_handler(m) == want[i].handler, "%s: another handler", want[i].name);
	}
	for (; dispatch_method_name(n); n++)
		ck_assert_str_eq(dispatch_method_name(n), params_methods[n].name);
	ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
	ck_assert_ptr_null(params_methods[n].name);
	ck_assert_ptr_null(params_lookup(IFACE ".Frobnicate"));
	ck_assert_ptr_null(params_lookup(IFACE ".info"));
	ck_assert_ptr_null(params_lookup(IFACE));
	ck_assert_ptr_null(params_lookup(""));
	/* A row that is not the table's has no handler. */
	other.name = IFACE ".Info";
	ck_assert_ptr_null(dispatch_handler(&other));
}
END_TEST

START_TEST(test_who_and_how)
{
	for (const params_method *m = params_methods; m->name; m++) {
		/* What changes the system is the admins'; the interface's
		 * comment says which are read methods. */
		bool admin = strstr(m->name, ".Install") || strstr(m->name, ".Remove") ||
			     strstr(m->name, ".Thin") || strstr(m->name, ".Cancel") ||
			     strstr(m->name, ".RepoAdd") || strstr(m->name, ".RepoRemove") ||
			     strstr(m->name, ".Update") || strstr(m->name, ".Hold") ||
			     strstr(m->name, ".Unhold");
		/* The trusted keys are root's alone, the admin group's neither. */
		bool root = strstr(m->name, ".Key") != NULL;

		ck_assert_msg((m->who == PARAMS_ADMIN) == admin, "%s", m->name);
		ck_assert_msg((m->who == PARAMS_ROOT) == root, "%s", m->name);
		if (m->runs == PARAMS_QUEUED)
			ck_assert_msg(m->who == PARAMS_ADMIN, "%s is queued for anyone", m->name);
	}
	ck_assert_int_eq(params_lookup(IFACE ".Verify")->runs, PARAMS_THREAD);
	ck_assert_int_eq(params_lookup(IFACE ".Install")->runs, PARAMS_QUEUED);
	ck_assert_int_eq(params_lookup(IFACE ".Cancel")->runs, PARAMS_INLINE);
	ck_assert_int_eq(params_lookup(IFACE ".Status")->runs, PARAMS_INLINE);
}
END_TEST

/* ------------------------------------------------------------ parameters */

/* Dispatches json against name's table; returns the refused field or NULL. */
static const char *dispatch(const char *name, const char *json, union method_params *p)
{
	static char refused[64];
	const params_method *m = params_lookup(name);
	json_object *o = json ? json_tokener_parse(json) : NULL;
	const char *bad = NULL;
	int r;

	ck_assert_ptr_nonnull(m);
	ck_assert(!json || o);
	memset(p, 0, sizeof(*p));
	r = vl_dispatch(o, m->fields, p, &bad);
	/* What dispatch gives is borrowed from o: the callers read only
	 * numbers and flags, and the refused name is copied. */
	if (r < 0) {
		ck_assert_ptr_nonnull(bad);
		snprintf(refused, sizeof(refused), "%s", bad);
	}
	params_done(m->fields, p);
	json_object_put(o);
	return r < 0 ? refused : NULL;
}

START_TEST(test_params)
{
	union method_params p;
	const params_method *thin = params_lookup(IFACE ".Thin");
	json_object *o;
	const char *bad = NULL;

	ck_assert_ptr_null(dispatch(IFACE ".Install", "{\"fd\": 3, \"dry_run\": true}", &p));
	ck_assert_int_eq(p.install.fd, 3);
	ck_assert(p.install.dry_run);
	ck_assert_str_eq(dispatch(IFACE ".Install", "{\"fd\": 16}", &p), "fd");
	ck_assert_str_eq(dispatch(IFACE ".Install", "{\"fds\": 3}", &p), "fds");
	ck_assert_ptr_null(dispatch(IFACE ".Install", "{\"fds\": [0, 1]}", &p));
	ck_assert_str_eq(dispatch(IFACE ".Install", "{\"fd\": -1}", &p), "fd");
	ck_assert_str_eq(dispatch(IFACE ".Install", "{\"force\": 1}", &p), "force");
	ck_assert_str_eq(dispatch(IFACE ".Install", "{\"sneaky\": true}", &p), "sneaky");
	/* package or packages: the method itself wants exactly one */
	ck_assert_str_eq(dispatch(IFACE ".Remove", "{\"packages\": \"a\"}", &p), "packages");
	ck_assert_str_eq(dispatch(IFACE ".Remove", "{\"purge\": 1}", &p), "purge");
	ck_assert_str_eq(dispatch(IFACE ".Cancel", "{\"id\": 0}", &p), "id");
	ck_assert_ptr_null(dispatch(IFACE ".Cancel", "{}", &p));
	ck_assert_int_eq(p.cancel.id, 0);
	ck_assert_str_eq(dispatch(IFACE ".History", "{\"limit\": -1}", &p), "limit");
	ck_assert_ptr_null(dispatch(IFACE ".List", NULL, &p));
	ck_assert_str_eq(dispatch(IFACE ".List", "{\"all\": true}", &p), "all");

	/* A list is the caller's to free, through params_done. */
	o = json_tokener_parse("{\"packages\": [\"a\", \"b\"], \"dry_run\": true}");
	ck_assert_ptr_nonnull(o);
	memset(&p, 0, sizeof(p));
	ck_assert_int_ge(vl_dispatch(o, thin->fields, &p, &bad), 0);
	ck_assert_str_eq(p.thin.packages[0], "a");
	ck_assert_str_eq(p.thin.packages[1], "b");
	ck_assert_ptr_null(p.thin.packages[2]);
	ck_assert_ptr_null(p.thin.targets);
	ck_assert(p.thin.dry_run);
	params_done(thin->fields, &p);
	json_object_put(o);
	ck_assert_str_eq(dispatch(IFACE ".Thin", "{\"packages\": [\"a\", 1]}", &p), "packages");
}
END_TEST

/* ------------------------------------------------------------ authorization */

START_TEST(test_authz)
{
	const params_method *install = params_lookup(IFACE ".Install");
	const params_method *list = params_lookup(IFACE ".List");
	const params_method *cancel = params_lookup(IFACE ".Cancel");
	struct group *gr = getgrgid(getgid());
	union method_params p = { 0 };

	/* Root may call anything; anyone may read. */
	ck_assert(authz_may_call(install, 0, 0, NULL));
	ck_assert(authz_may_call(list, 4242, 4242, NULL));
	ck_assert(authz_may_call(list, 4242, 4242, "no-such-group-fatelf"));
	/* Without an admin group, or with one that does not exist, nobody else. */
	ck_assert(!authz_may_call(install, 4242, 4242, NULL));
	ck_assert(!authz_may_call(install, 4242, 4242, ""));
	ck_assert(!authz_may_call(cancel, 4242, 4242, "no-such-group-fatelf"));
	ck_assert(!authz_is_admin(4242, 4242, "no-such-group-fatelf"));
	ck_assert(authz_is_admin(0, 4242, NULL));
	/* A caller whose primary group is the admin group. */
	if (gr && getuid() != 0) {
		ck_assert(authz_is_admin(getuid(), getgid(), gr->gr_name));
		ck_assert(authz_may_call(install, getuid(), getgid(), gr->gr_name));
		ck_assert(authz_may_call(cancel, getuid(), getgid(), gr->gr_name));
	}
	/* The trusted keys are root's: not even the admin group's. */
	const params_method *key_add = params_lookup(IFACE ".KeyAdd");
	ck_assert(authz_may_call(key_add, 0, 0, NULL));
	ck_assert(!authz_may_call(key_add, 4242, 4242, NULL));
	if (gr && getuid() != 0)
		ck_assert(!authz_may_call(key_add, getuid(), getgid(), gr->gr_name));
	ck_assert(!authz_may_call(params_lookup(IFACE ".KeyList"), 4242, 0, NULL));

	/* The admin group may install, but not lift a safety check. */
	ck_assert_ptr_null(authz_root_only_field(install, 4242, &p));
	p.install.dry_run = true;
	p.install.url = "https://example.org/b.fatelf";
	ck_assert_ptr_null(authz_root_only_field(install, 4242, &p));
	p.install.force = true;
	ck_assert_str_eq(authz_root_only_field(install, 4242, &p), "force");
	ck_assert_ptr_null(authz_root_only_field(install, 0, &p));
	p.install.force = false;
	p.install.path = "/srv/b.fatelf";
	ck_assert_str_eq(authz_root_only_field(install, 4242, &p), "path");
	memset(&p, 0, sizeof(p));
	p.install.policy = "native";
	ck_assert_str_eq(authz_root_only_field(install, 4242, &p), "policy");
	memset(&p, 0, sizeof(p));
	p.install.allow_unsigned = true;
	ck_assert_str_eq(authz_root_only_field(install, 4242, &p), "allow_unsigned");
	memset(&p, 0, sizeof(p));
	{
		const char *targets[] = { "x86_64", NULL };
		const params_method *thin = params_lookup(IFACE ".Thin");

		p.thin.targets = targets;
		ck_assert_str_eq(authz_root_only_field(thin, 4242, &p), "targets");
		ck_assert_ptr_null(authz_root_only_field(thin, 0, &p));
	}
}
END_TEST

/* ------------------------------------------------------------ job JSON */

START_TEST(test_jobjson)
{
	engine_progress pr = { .phase = "staging", .bytes_done = 10, .bytes_total = 20,
			       .entries_done = 1, .entries_total = 2, .path = "/usr/bin/x" };
	engine_progress bare = { 0 };
	engine_taken taken = { .path = (char *)"/usr/bin/x", .from = NULL };
	engine_warning warn = { .path = (char *)"/usr/lib/libx.so", .reason = ENGINE_WARN_FAT_LIBRARY };
	char *kept[] = { (char *)"/etc/x.conf", NULL };
	engine_result r = { .txid = 7, .kind = "install", .change = "upgrade", .package = (char *)"x",
			    .old_version = (char *)"1", .new_version = (char *)"2", .files = 3,
			    .bytes_written = 4, .bytes_saved = -5, .config_kept = kept, .nconfig_kept = 1,
			    .signature = "verified", .signer = "0123456789abcdef",
			    .taken = &taken, .ntaken = 1, .warnings = &warn, .nwarnings = 1 };
	engine_result thin = { .kind = "thin", .dry_run = true };
	engine_result leftovers = { .kind = "remove", .package = (char *)"x", .old_version = (char *)"1",
				    .files = 2, .purge = true, .config_files_only = true };
	store_tx pending = { .id = 9, .kind = STORE_TX_REMOVE, .package = "x", .state = STORE_TX_PENDING,
			     .started_at = 100 };
	store_tx done = { .id = 8, .kind = STORE_TX_THIN, .state = STORE_TX_FAILED, .started_at = 100, .finished_at = 101,
			  .error = "disk full" };
	json_object *o;
	char why[512];

#define CHECK_TYPE(type, obj)                                                                 \
	do {                                                                                   \
		o = (obj);                                                                     \
		ck_assert_ptr_nonnull(o);                                                      \
		ck_assert_msg(object_ok(fatelfd_interface_text, type, o, why, sizeof(why)),   \
			      "%s: %s: %s", type, why, json_object_to_json_string(o));         \
	} while (0)

	CHECK_TYPE("Progress", json_progress(&pr));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "phase")), "staging");
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(o, "bytes_total")), 20);
	json_object_put(o);
	CHECK_TYPE("Progress", json_progress(&bare));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "phase")), "");
	json_object_put(o);

	CHECK_TYPE("Result", json_result(&r));
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(o, "bytes_saved")), -5);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "signer")), "0123456789abcdef");
	ck_assert_int_eq((int)json_object_array_length(json_object_object_get(o, "taken")), 1);
	json_object_put(o);
	CHECK_TYPE("Result", json_result(&thin));
	ck_assert(!json_object_object_get_ex(o, "taken", NULL));
	ck_assert(!json_object_object_get_ex(o, "purge", NULL));
	ck_assert(!json_object_object_get_ex(o, "config_files_only", NULL));
	ck_assert(json_object_get_boolean(json_object_object_get(o, "dry_run")));
	json_object_put(o);
	/* purge and config_files_only: declared, and only on a purge */
	CHECK_TYPE("Result", json_result(&leftovers));
	ck_assert(json_object_get_boolean(json_object_object_get(o, "purge")));
	ck_assert(json_object_get_boolean(json_object_object_get(o, "config_files_only")));
	json_object_put(o);

	CHECK_TYPE("Transaction", json_tx(&pending));
	ck_assert(json_object_object_get_ex(o, "finished_at", NULL));
	ck_assert_ptr_null(json_object_object_get(o, "finished_at"));
	json_object_put(o);
	CHECK_TYPE("Transaction", json_tx(&done));
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(o, "finished_at")), 101);

	/* The type check fails: a field of the wrong type, one too many,
	 * and one missing. */
	json_object_object_add(o, "finished_at", json_object_new_string("101"));
	ck_assert(!object_ok(fatelfd_interface_text, "Transaction", o, why, sizeof(why)));
	ck_assert_msg(strstr(why, "for ?int") || strstr(why, "for int"), "%s", why);
	json_object_object_add(o, "finished_at", json_object_new_int64(101));
	ck_assert(object_ok(fatelfd_interface_text, "Transaction", o, why, sizeof(why)));
	json_object_object_add(o, "extra", json_object_new_int64(1));
	ck_assert(!object_ok(fatelfd_interface_text, "Transaction", o, why, sizeof(why)));
	json_object_object_del(o, "extra");
	json_object_object_del(o, "state");
	ck_assert(!object_ok(fatelfd_interface_text, "Transaction", o, why, sizeof(why)));
	ck_assert_msg(strstr(why, "lacks state"), "%s", why);
	json_object_put(o);
	o = json_result(&r);
	json_object_object_add(json_object_array_get_idx(json_object_object_get(o, "warnings"), 0), "path",
			       json_object_new_boolean(true));
	ck_assert(!object_ok(fatelfd_interface_text, "Result", o, why, sizeof(why)));
	ck_assert_msg(strstr(why, "InstallWarning.path"), "%s", why);
	json_object_put(o);
#undef CHECK_TYPE
}
END_TEST

/* ------------------------------------------------------------ jobs */

START_TEST(test_job_names)
{
	job *j = job_new(JOB_INSTALL);

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(j->fd, -1);
	ck_assert_str_eq(job_kind_name(j->kind), "install");
	ck_assert_int_eq(job_row_kind(j), STORE_TX_INSTALL);
	ck_assert_str_eq(job_what(j), "bundle from fd");
	ck_assert_ptr_null(job_row_package(j));
	j->url = strdup("https://user:pw@example.org/b.fatelf");
	j->url_shown = strdup("https://example.org/b.fatelf");
	ck_assert_str_eq(job_what(j), "https://example.org/b.fatelf");
	/* A failed download's message names its URL. */
	ck_assert(!job_diag_names_what(j));
	j->fetch_failed = true;
	ck_assert(job_diag_names_what(j));
	ck_assert_ptr_null(job_free(j));

	j = job_new(JOB_THIN);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(job_row_kind(j), STORE_TX_THIN);
	ck_assert_str_eq(job_what(j), "all packages");
	j->packages = calloc(3, sizeof(char *));
	ck_assert_ptr_nonnull(j->packages);
	j->packages[0] = strdup("a");
	ck_assert_str_eq(job_row_package(j), "a");
	j->packages[1] = strdup("b");
	ck_assert_ptr_null(job_row_package(j));
	job_free(j);

	j = job_new(JOB_REMOVE);
	ck_assert_ptr_nonnull(j);
	j->package = strdup("x");
	snprintf(j->diag.package, sizeof(j->diag.package), "x");
	ck_assert_int_eq(job_row_kind(j), STORE_TX_REMOVE);
	ck_assert_str_eq(job_row_package(j), "x");
	ck_assert_str_eq(job_what(j), "x");
	ck_assert(job_diag_names_what(j));
	job_free(j);

	ck_assert_str_eq(job_kind_name(JOB_VERIFY), "verify");
	ck_assert_str_eq(job_kind_name(JOB_CANCEL), "cancel");
	ck_assert_str_eq(job_kind_name(0), "?");
	ck_assert_ptr_null(job_free(NULL));
}
END_TEST

/* ------------------------------------------------------------ repos.d, registries.d */

static void put_text(const char *path, const char *text)
{
	tu_write_file(path, text, strlen(text));
	ck_assert_int_eq(chmod(path, 0600), 0);
}

/* repos.d/NAME.conf is refused with exactly msg. */
static void repo_refused(const char *text, const char *msg)
{
	struct repo_conf rc;
	fatelf_diag d;

	put_text("repos.d/r.conf", text);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(repo_conf_load("repos.d", "r", &rc, &d), -EINVAL);
	ck_assert_str_eq(d.msg, msg);
	ck_assert_str_eq(d.subject, "repos.d/r.conf");
	ck_assert_uint_eq(rc.nurls, 0);
}

START_TEST(test_repo_conf)
{
	fatelf_ms_seckey sk;
	fatelf_ms_pubkey pk;
	struct repo_conf rc;
	fatelf_diag d;
	char key[64], text[1024];

	tu_tmpdir();
	ck_assert_int_eq(mkdir("repos.d", 0755), 0);
	tu_key_from_seed(1, 1, 1, &sk, &pk);
	fatelf_ms_pubkey_format(&pk, key);

	/* what repo add writes, and the same by hand: blank lines, comments,
	 * spaces around '=', CRLF */
	snprintf(text, sizeof(text), "# Written by fatelfctl repo add\n[Repository]\nURL=http://a/r\n"
		 "URL=https://b/r\nKey=%s\nID=0123456789abcdef0123456789abcdef\n", key);
	put_text("repos.d/r.conf", text);
	fatelf_diag_clear(&d);
	ck_assert_msg(repo_conf_load("repos.d", "r", &rc, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(rc.nurls, 2);
	ck_assert_str_eq(rc.urls[0], "http://a/r");
	ck_assert_str_eq(rc.urls[1], "https://b/r");
	ck_assert_str_eq(rc.id, "0123456789abcdef0123456789abcdef");
	ck_assert(!rc.oci);
	ck_assert_mem_eq(rc.key.pk, pk.pk, sizeof(pk.pk));
	repo_conf_done(&rc);

	snprintf(text, sizeof(text), "\r\n; mine\r\n  [Repository]  \r\n\r\n  URL = oci://127.0.0.1:5000/fleet \r\n"
		 "Key =\t%s\r\n", key);
	put_text("repos.d/r.conf", text);
	ck_assert_msg(repo_conf_load("repos.d", "r", &rc, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(rc.nurls, 1);
	ck_assert_str_eq(rc.urls[0], "oci://127.0.0.1:5000/fleet");
	ck_assert(rc.oci);
	ck_assert_str_eq(rc.id, "");
	repo_conf_done(&rc);

	/* each error at its line, blank and comment lines counted */
	snprintf(text, sizeof(text), "[Repository]\n\n# c\n\nURL=http://a/\nKey=%s\n\n\nMirror=http://b/\n", key);
	repo_refused(text, "repos.d/r.conf:9: Mirror: unknown key in [Repository]");
	repo_refused("\n\nURL=http://a/\n", "repos.d/r.conf:3: URL: key outside a section (put it under [Repository])");
	repo_refused("[Repository]\n\n\nURL=ftp://a/\n",
		     "repos.d/r.conf:4: URL: the URL is not an http://, https://, file:/// or oci:// URL");
	/* the key reader's own words */
	ck_assert_int_lt(fatelf_ms_pubkey_parse("RWnope", 6, &pk, &d), 0);
	snprintf(text, sizeof(text), "repos.d/r.conf:5: Key: %s", d.msg);
	repo_refused("[Repository]\n\n\nURL=http://a/\nKey=RWnope\n", text);
	repo_refused("[Repository]\n\nID=xyz\n",
		     "repos.d/r.conf:3: ID: not a repository's identity (32 lower-case hex digits)");
	repo_refused("[Repository]\n\n\nURL http://a/\n",
		     "repos.d/r.conf:4: syntax: 'URL http://a/' is not a [Section] header, a Key=Value line or a comment");
	repo_refused("# c\n[Registry]\n", "repos.d/r.conf:2: [Registry]: unknown section (only [Repository])");
	repo_refused("\n[Repository]\n\nURL=http://a/\n\n",
		     "repos.d/r.conf:2: Key: missing: [Repository] needs a Key= line");
	snprintf(text, sizeof(text), "[Repository]\nKey=%s\n\n", key);
	repo_refused(text, "repos.d/r.conf:1: URL: missing: [Repository] needs a URL= line");
	snprintf(text, sizeof(text), "[Repository]\nKey=%s\nURL=oci://h/ns\n\nURL=http://a/\n", key);
	repo_refused(text, "repos.d/r.conf:5: URL: a repository of type oci has one URL= alone "
		     "(its registry does the mirroring)");
	tu_write_file("repos.d/r.conf", "[Repository]\nURL=http://a/\0\n", 28);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(repo_conf_load("repos.d", "r", &rc, &d), -EINVAL);
	ck_assert_str_eq(d.msg, "repos.d/r.conf:2: syntax: line holds a NUL byte");
}
END_TEST

/* registries.d/HOST[:PORT].conf is refused with code and exactly msg. */
static void registry_refused(engine_config *c, const char *text, int code, const char *msg)
{
	struct repo_conf rc = { 0 };
	fatelf_diag d;

	put_text("registries.d/h:5000.conf", text);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(oci_conf_for(c, "h:5000", &rc, &d), code);
	ck_assert_str_eq(d.msg, msg);
	ck_assert_ptr_null(rc.basic);
	repo_conf_done(&rc);
}

START_TEST(test_registry_conf)
{
	static const struct { const char *value; bool plain; } bools[] = {
		{ "yes", true }, { "True", true }, { "on", true }, { "1", true },
		{ "no", false }, { "FALSE", false }, { "off", false }, { "0", false },
	};
	engine_config c;
	struct repo_conf rc;
	fatelf_diag d;
	char text[2048], cwd[1024];

	tu_tmpdir();
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	engine_config_init(&c);
	free(c.registries_dir);
	c.registries_dir = strdup("registries.d");
	ck_assert_int_eq(mkdir("registries.d", 0755), 0);

	/* no file: HTTPS, anonymous */
	memset(&rc, 0, sizeof(rc));
	ck_assert_int_eq(oci_conf_for(&c, "h:5000", &rc, &d), 0);
	ck_assert_str_eq(rc.urls[0], "https://h:5000/");
	ck_assert_ptr_null(rc.basic);
	repo_conf_done(&rc);

	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		snprintf(text, sizeof(text), "\n# c\n[Registry]\n PlainHTTP = %s \r\n", bools[i].value);
		put_text("registries.d/h:5000.conf", text);
		memset(&rc, 0, sizeof(rc));
		fatelf_diag_clear(&d);
		ck_assert_msg(oci_conf_for(&c, "h:5000", &rc, &d) == 0, "%s", d.msg);
		ck_assert_str_eq(rc.urls[0], bools[i].plain ? "http://h:5000/" : "https://h:5000/");
		repo_conf_done(&rc);
	}

	/* USER:PASSWORD, as base64 */
	put_text("creds", "fleet:pw\n");
	snprintf(text, sizeof(text), "[Registry]\n\nCredentials = %s/creds\n", cwd);
	put_text("registries.d/h:5000.conf", text);
	memset(&rc, 0, sizeof(rc));
	ck_assert_msg(oci_conf_for(&c, "h:5000", &rc, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(rc.basic, "ZmxlZXQ6cHc=");
	repo_conf_done(&rc);

	registry_refused(&c, "[Registry]\n\n# c\n\nPlainHTTP=maybe\n", -EINVAL,
			 "registries.d/h:5000.conf:5: PlainHTTP: 'maybe' is not a boolean "
			 "(yes, no, true, false, on, off, 1 or 0)");
	registry_refused(&c, "[Registry]\n\n\nInsecure=yes\n", -EINVAL,
			 "registries.d/h:5000.conf:4: Insecure: unknown key in [Registry]");
	registry_refused(&c, "\n\nPlainHTTP=yes\n", -EINVAL,
			 "registries.d/h:5000.conf:3: PlainHTTP: key outside a section (put it under [Registry])");
	registry_refused(&c, "[Registry]\n\nCredentials=creds\n", -EINVAL,
			 "registries.d/h:5000.conf:3: Credentials: an absolute path");
	snprintf(text, sizeof(text), "[Registry]\n\n\nCredentials=%s/nothing\n", cwd);
	{
		char msg[1200];

		snprintf(msg, sizeof(msg), "registries.d/h:5000.conf:4: Credentials: %s/nothing: %s", cwd,
			 fatelf_strerror(-ENOENT));
		registry_refused(&c, text, -ENOENT, msg);
	}
	engine_config_done(&c);
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_methods_match_interface);
	tcase_add_test(tc, test_methods_check_fails);
	tcase_add_test(tc, test_methods_check_fails_on_table);
	tcase_add_test(tc, test_lookup_and_handlers);
	tcase_add_test(tc, test_who_and_how);
	tcase_add_test(tc, test_params);
	tcase_add_test(tc, test_authz);
	tcase_add_test(tc, test_jobjson);
	tcase_add_test(tc, test_job_names);
	tcase_add_test(tc, test_repo_conf);
	tcase_add_test(tc, test_registry_conf);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(daemon_suite());
}
