/*
 * The handlers of fatelfd's methods, which daemon/dispatch.c calls once
 * the caller may call the method and its parameters passed the method's
 * dispatch table: org.varlink.service (daemon/service.c), Status
 * (daemon/status.c), the read methods (daemon/queries.c) and the methods
 * that become jobs (daemon/jobmethods.c).
 */
#ifndef FATELFD_METHODS_H
#define FATELFD_METHODS_H

#include "fatelfd.h"

typedef void method_handler(conn *c, const vl_call *call, union method_params *p);

/* org.varlink.service */
method_handler method_get_info;
method_handler method_get_interface_description;
/* io.fatelf.Manager: what the daemon is doing */
method_handler method_status;
/* io.fatelf.Manager: packages and files */
method_handler method_list;
method_handler method_info;
method_handler method_files;
method_handler method_owner;
method_handler method_history;
method_handler method_get_policy;
/* io.fatelf.Manager: jobs */
method_handler method_install;
method_handler method_remove;
method_handler method_thin;
method_handler method_verify;
method_handler method_cancel;
/* Starts j (Verify, Update) on a thread of its own, answering the call
 * when that cannot be done (daemon/jobmethods.c). */
void job_start_thread(conn *c, const vl_call *call, job *j);
/* io.fatelf.Manager: repositories (daemon/repomethods.c) */
method_handler method_repo_add;
method_handler method_repo_remove;
method_handler method_repo_list;
method_handler method_update;
method_handler method_search;
/* io.fatelf.Manager: trusted keys, root's (daemon/keymethods.c) */
method_handler method_key_add;
method_handler method_key_list;
method_handler method_key_remove;
/* io.fatelf.Manager: holds (daemon/holdmethods.c) */
method_handler method_hold;
method_handler method_unhold;

/* The read-only store the read methods answer from. */
static inline store *method_store(conn *c)
{
	return engine_store(c->srv->ro);
}

#endif
