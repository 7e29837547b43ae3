/*
 * From a message to its method's handler. The methods are the rows of
 * daemon/methodset.h; `fatelfd --check-interface` and
 * tests/unit/test_daemon.c hold them to schema/io.fatelf.Manager.varlink
 * (the file embedded as fatelfd_interface_text).
 *
 * Order of checks for a call: the method exists (else MethodNotFound or
 * InterfaceNotFound), the caller may call it (daemon/authz.c: methods for
 * admins need uid 0 or the admin group, else PermissionDenied), the parameters pass the
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
#include "methodset.h"
#include "reply.h"

#define E(name) "io.fatelf.Manager." name

/* ------------------------------------------------------------ the table */

/* The handler of each row of params_methods[], in the same order: both
 * are expanded from daemon/methodset.h. */
#define DISPATCH_ROW(name, handler, fields, who, runs) handler,
static method_handler *const handlers[] = { FATELFD_METHODSET(DISPATCH_ROW) };

const char *dispatch_method_name(size_t i)
{
	return i < ARRAY_SIZE(handlers) ? params_methods[i].name : NULL;
}

method_handler *dispatch_handler(const params_method *m)
{
	for (size_t i = 0; i < ARRAY_SIZE(handlers); i++)
		if (&params_methods[i] == m)
			return handlers[i];
	return NULL;
}

void dispatch_call(conn *c, const char *msg, size_t len)
{
	vl_call call = { 0 };
	const params_method *pm;
	method_handler *handler = NULL;
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
	pm = params_lookup(call.method);
	if (pm)
		handler = dispatch_handler(pm);
	if (!handler) {
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
	if (!authz_may_call(pm, c->uid, c->gid, c->srv->cfg.admin_group)) {
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
	if ((bad = authz_root_only_field(pm, c->uid, &p))) {
		reply_error_str(c, E("RootRequired"), "parameter", bad);
		params_done(pm->fields, &p);
		goto out;
	}
	handler(c, &call, &p);
	params_done(pm->fields, &p);
out:
	c->oneway = false;
	vl_call_done(&call);
}
