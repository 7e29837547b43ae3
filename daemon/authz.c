/*
 * Who may call what: uid 0, and the members of AdminGroup= (by their
 * primary group or, asking the group database, a supplementary one), may
 * call the methods that change the system.
 */
#include <grp.h>
#include <pwd.h>

#include "authz.h"
#include "macro.h"

bool authz_caller_is_admin(const conn *c)
{
	const char *group = c->srv->cfg.admin_group;
	struct group gr, *grp = NULL;
	struct passwd pw, *pwp = NULL;
	char buf[16384];
	gid_t groups[256];
	int ngroups = (int)ARRAY_SIZE(groups);
	gid_t admin;

	if (c->uid == 0)
		return true;
	if (!group || !*group)
		return false;
	if (getgrnam_r(group, &gr, buf, sizeof(buf), &grp) != 0 || !grp)
		return false;
	admin = grp->gr_gid;
	if (c->gid == admin)
		return true;
	/* Supplementary groups: the peer's are not in SO_PEERCRED, so ask
	 * the group database about the uid's user. */
	if (getpwuid_r(c->uid, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return false;
	if (getgrouplist(pwp->pw_name, pwp->pw_gid, groups, &ngroups) < 0)
		ngroups = (int)ARRAY_SIZE(groups);
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == admin)
			return true;
	return false;
}
