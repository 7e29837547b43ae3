/*
 * Who may call what (daemon/authz.c), from the caller's credentials and
 * the method's row of daemon/methodset.h: PARAMS_ADMIN methods are for
 * uid 0 and the members of AdminGroup=, and the fields marked
 * PARAMS_ROOT_ONLY for uid 0 alone. Depends on daemon/params.h alone.
 */
#ifndef FATELFD_AUTHZ_H
#define FATELFD_AUTHZ_H

#include <stdbool.h>
#include <sys/types.h>

#include "params.h"

/* Whether uid (whose primary group is gid) is root or a member of the
 * group named admin_group (NULL or "": nobody but root). */
bool authz_is_admin(uid_t uid, gid_t gid, const char *admin_group);
/* Whether the caller may call m at all (else PermissionDenied). The group
 * database is asked only when m is for admins. */
bool authz_may_call(const params_method *m, uid_t uid, gid_t gid, const char *admin_group);
/* The first root-only field that a caller other than root set in p, the
 * parameters of m (then RootRequired names it), or NULL. */
const char *authz_root_only_field(const params_method *m, uid_t uid, const union method_params *p);

#endif
