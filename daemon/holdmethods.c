/*
 * Hold and Unhold of io.fatelf.Manager: a held package keeps its
 * installed version. The hold is a row of the store (schema 9), written
 * on the main thread through the worker's connection for queued rows, in
 * one short statement; the engine reads it when an install of another
 * version starts (ENGINE_E_HELD, PackageHeld), and 'fatelfctl upgrade'
 * leaves held packages out.
 */
#include <errno.h>
#include <time.h>

#include "methods.h"
#include "metrics.h"
#include "reply.h"
#include "worker_private.h"

#define E(name) "io.fatelf.Manager." name

static void hold_set(conn *c, const char *name, bool held)
{
	fatelf_diag d = { 0 };
	json_object *o;
	int r;

	r = store_hold_set(c->srv->worker->qst, name, held, (int64_t)time(NULL), &d);
	if (r == -ENOENT) {
		reply_package_not_found(c, name);
		return;
	}
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	if (r > 0) {
		daemon_log(6, "%s %s", name, held ? "held" : "no longer held");
		metrics_file_update(c->srv);
	}
	o = json_object_new_object();
	json_object_object_add(o, "package", json_object_new_string(name));
	json_object_object_add(o, "held", json_object_new_boolean(held));
	json_object_object_add(o, "changed", json_object_new_boolean(r > 0));
	reply(c, o);
	json_object_put(o);
}

void method_hold(conn *c, const vl_call *call, union method_params *p)
{
	(void)call;
	hold_set(c, p->package.package, true);
}

void method_unhold(conn *c, const vl_call *call, union method_params *p)
{
	(void)call;
	hold_set(c, p->package.package, false);
}
