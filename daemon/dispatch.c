/*
 * fatelfd's methods: one table of every method the daemon serves, with
 * the parameter dispatch table of each and whether it changes the system.
 * The table is checked against schema/io.fatelf.Manager.varlink (the file
 * embedded as fatelfd_interface_text) by `fatelfd --check-interface`.
 *
 * Order of checks for a call: the method exists (else MethodNotFound or
 * InterfaceNotFound), the caller may call it (mutating methods need uid 0
 * or the admin group, else PermissionDenied), the parameters pass the
 * dispatch table (else InvalidParameter naming the field), a caller other
 * than root sets no root-only field (else RootRequired naming it), then
 * the handler runs. Read methods answer inline from the read-only store: each
 * is a few indexed queries. Mutating methods become jobs for the worker;
 * Verify, which reads every file, runs on a thread of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "dispatch.h"
#include "macro.h"
#include "methods.h"
#include "reply.h"

#define E(name) "io.fatelf.Manager." name

/* ------------------------------------------------------------ the table */

typedef struct method {
	const char *name;
	void (*handler)(conn *c, const vl_call *call, union method_params *p);
} method;

/* The handlers; each one's parameters and whether it mutates come from
 * params_methods[] (daemon/params.c), which the fuzzer shares. */
static const method methods[] = {
	{ "org.varlink.service.GetInfo", method_get_info },
	{ "org.varlink.service.GetInterfaceDescription", method_get_interface_description },
	{ E("Status"), method_status },
	{ E("Install"), method_install },
	{ E("Remove"), method_remove },
	{ E("Thin"), method_thin },
	{ E("Cancel"), method_cancel },
	{ E("List"), method_list },
	{ E("Info"), method_info },
	{ E("Files"), method_files },
	{ E("Owner"), method_owner },
	{ E("Verify"), method_verify },
	{ E("History"), method_history },
	{ E("GetPolicy"), method_get_policy },
};

const char *dispatch_method_name(size_t i)
{
	return i < ARRAY_SIZE(methods) ? methods[i].name : NULL;
}

static void params_free(const vl_field *fields, union method_params *p)
{
	for (const vl_field *f = fields; f->name; f++)
		if (f->type == VL_STRV) {
			void *v;

			memcpy(&v, (char *)p + f->offset, sizeof(v));
			free(v);
		}
}

void dispatch_call(conn *c, const char *msg, size_t len)
{
	vl_call call = { 0 };
	const method *m = NULL;
	const params_method *pm = NULL;
	union method_params p;
	const char *bad = NULL;
	fatelf_diag d = { 0 };
	size_t ilen;

	if (vl_call_parse(msg, len, &call, &d) < 0) {
		/* Not a Varlink call: the protocol has no answer for it. */
		conn_close(c);
		return;
	}
	c->oneway = (call.flags & VL_CALL_ONEWAY) != 0;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (strcmp(methods[i].name, call.method) == 0)
			m = &methods[i];
	if (m)
		pm = params_lookup(m->name);
	if (!m || !pm) {
		char iface[VL_NAME_MAX + 1];

		ilen = vl_name_interface_len(call.method);
		snprintf(iface, sizeof(iface), "%.*s", (int)ilen, call.method);
		if (strcmp(iface, FATELFD_INTERFACE) == 0 || strcmp(iface, "org.varlink.service") == 0)
			reply_error_str(c, VL_ERROR_METHOD_NOT_FOUND, "method", call.method);
		else
			reply_error_str(c, VL_ERROR_INTERFACE_NOT_FOUND, "interface", iface);
		goto out;
	}
	if (call.flags & VL_CALL_UPGRADE) {
		reply_error_str(c, VL_ERROR_METHOD_NOT_IMPLEMENTED, "method", call.method);
		goto out;
	}
	if (pm->mutating && !authz_caller_is_admin(c)) {
		reply_error(c, VL_ERROR_PERMISSION_DENIED, NULL);
		goto out;
	}
	memset(&p, 0, sizeof(p));
	if (vl_dispatch(call.parameters, pm->fields, &p, &bad) < 0) {
		reply_error_str(c, VL_ERROR_INVALID_PARAMETER, "parameter", bad ? bad : "parameters");
		goto out;
	}
	/* The admin group may call the method, but the options that lift a
	 * safety check (a signature, a conflict, a downgrade, the policy) or
	 * name the daemon's own files are root's. */
	if (c->uid != 0 && (bad = params_root_only_set(pm->fields, &p))) {
		reply_error_str(c, E("RootRequired"), "parameter", bad);
		params_free(pm->fields, &p);
		goto out;
	}
	m->handler(c, &call, &p);
	params_free(pm->fields, &p);
out:
	c->oneway = false;
	vl_call_done(&call);
}
