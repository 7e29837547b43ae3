/*
 * Every method fatelfd serves, in one list: its name, its handler
 * (daemon/methods.h), its parameter table (params_fields_* in
 * daemon/params.c), who may call it and how it runs. Nothing else names a
 * method: daemon/params.c expands the list into params_methods[] (which
 * the fuzz_dispatch target shares, without the handlers) and
 * daemon/dispatch.c into the handler of each row. tests/unit/test_daemon.c
 * holds the list to schema/io.fatelf.Manager.varlink, type by type.
 *
 * X(name, handler, fields, who, runs):
 *   who   PARAMS_ANYONE, PARAMS_ADMIN (uid 0 or AdminGroup=) or PARAMS_ROOT
 *         (uid 0 alone);
 *   runs  PARAMS_INLINE (answered on the loop), PARAMS_QUEUED (a job of
 *         the worker) or PARAMS_THREAD (a job on a thread of its own).
 */
#ifndef FATELFD_METHODSET_H
#define FATELFD_METHODSET_H

#define FATELFD_METHODSET(X) \
	X("org.varlink.service.GetInfo", method_get_info, none, PARAMS_ANYONE, PARAMS_INLINE) \
	X("org.varlink.service.GetInterfaceDescription", method_get_interface_description, interface, \
	  PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Status", method_status, status, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Install", method_install, install, PARAMS_ADMIN, PARAMS_QUEUED) \
	X("io.fatelf.Manager.Remove", method_remove, remove, PARAMS_ADMIN, PARAMS_QUEUED) \
	X("io.fatelf.Manager.Thin", method_thin, thin, PARAMS_ADMIN, PARAMS_QUEUED) \
	X("io.fatelf.Manager.Cancel", method_cancel, cancel, PARAMS_ADMIN, PARAMS_INLINE) \
	X("io.fatelf.Manager.List", method_list, none, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Info", method_info, package, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Files", method_files, files, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Owner", method_owner, owner, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Verify", method_verify, package_opt, PARAMS_ANYONE, PARAMS_THREAD) \
	X("io.fatelf.Manager.History", method_history, history, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.GetPolicy", method_get_policy, none, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.RepoAdd", method_repo_add, repo_add, PARAMS_ADMIN, PARAMS_INLINE) \
	X("io.fatelf.Manager.RepoRemove", method_repo_remove, repo_name, PARAMS_ADMIN, PARAMS_INLINE) \
	X("io.fatelf.Manager.RepoList", method_repo_list, none, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.Update", method_update, update, PARAMS_ADMIN, PARAMS_THREAD) \
	X("io.fatelf.Manager.Search", method_search, search, PARAMS_ANYONE, PARAMS_INLINE) \
	X("io.fatelf.Manager.KeyAdd", method_key_add, key_add, PARAMS_ROOT, PARAMS_INLINE) \
	X("io.fatelf.Manager.KeyList", method_key_list, none, PARAMS_ROOT, PARAMS_INLINE) \
	X("io.fatelf.Manager.KeyRemove", method_key_remove, key_remove, PARAMS_ROOT, PARAMS_INLINE) \
	X("io.fatelf.Manager.Hold", method_hold, package, PARAMS_ADMIN, PARAMS_INLINE) \
	X("io.fatelf.Manager.Unhold", method_unhold, package, PARAMS_ADMIN, PARAMS_INLINE)

#endif
