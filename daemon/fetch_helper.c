/*
 * Where fatelfd finds its download helper, fatelf-fetch, and the check at
 * start that the identity a network download runs as (a uid of its own,
 * lib/basic/netuid.c) can execute the helper. A helper that is missing or
 * that no download may run would otherwise only show at the first
 * Install{url}, as a download that fails.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fatelfd.h"
#include "macro.h"
#include "path.h"

/* $FATELF_FETCH_HELPER (tests), else the one of the build tree, else the
 * installed one. */
void fetch_helper_path(char *buf, size_t size)
{
	const char *env = getenv(FETCH_HELPER_ENV);

	if (env && env[0]) {
		snprintf(buf, size, "%s", env);
		return;
	}
	helper_program_path(FETCH_HELPER_NAME, PKGLIBEXECDIR, buf, size);
}

/*
 * Asks the kernel rather than reading mode bits: a child takes on the
 * download identity and calls access(X_OK), which also sees ACLs, every
 * directory on the way and a file system mounted noexec.
 */
int fetch_helper_check(const char *helper, struct fatelf_netuid *ret_as)
{
	struct fatelf_netuid as = { .uid = geteuid(), .gid = getegid() };
	struct stat st;
	pid_t pid;
	int status, r;

	if (geteuid() == 0) {
		r = fatelf_netuid_pick(&as);
		if (r < 0)
			return r;
	}
	*ret_as = as;
	if (stat(helper, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (geteuid() != 0)
		return access(helper, X_OK) < 0 ? -errno : 0;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (fatelf_netuid_enter(&as) < 0)
			_exit(EPERM);
		_exit(access(helper, X_OK) < 0 ? (errno & 0xff) : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}
