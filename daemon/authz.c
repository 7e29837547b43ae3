/*
 * Who may call what: uid 0, and the members of AdminGroup= (by their
 * primary group or, asking the group database, a supplementary one), may
 * call the methods that change the system; the options that lift a safety
 * check or name the daemon's own files are root's.
 */
#include <grp.h>
#include <pwd.h>
#include <stddef.h>

#include "authz.h"
#include "macro.h"

bool authz_is_admin(uid_t uid, gid_t gid, const char *group)
{
	struct group gr, *grp = NULL;
	struct passwd pw, *pwp = NULL;
	char buf[16384];
	gid_t groups[256];
	int ngroups = (int)ARRAY_SIZE(groups);
	gid_t admin;

	if (uid == 0)
		return true;
	if (!group || !*group)
		return false;
	if (getgrnam_r(group, &gr, buf, sizeof(buf), &grp) != 0 || !grp)
		return false;
	admin = grp->gr_gid;
	if (gid == admin)
		return true;
	/* Supplementary groups: the peer's are not in SO_PEERCRED, so ask
	 * the group database about the uid's user. */
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return false;
	if (getgrouplist(pwp->pw_name, pwp->pw_gid, groups, &ngroups) < 0)
		ngroups = (int)ARRAY_SIZE(groups);
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == admin)
			return true;
	return false;
}

bool authz_may_call(const params_method *m, uid_t uid, gid_t gid, const char *admin_group)
{
	if (m->who == PARAMS_ROOT)
		return uid == 0;
	return m->who == PARAMS_ANYONE || authz_is_admin(uid, gid, admin_group);
}

const char *authz_root_only_field(const params_method *m, uid_t uid, const union method_params *p)
{
	return uid == 0 ? NULL : params_root_only_set(m->fields, p);
}
