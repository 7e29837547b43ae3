/*
 * Where fatelfd finds its download helper, fatelf-fetch, and the check at
 * start that the identity downloads run as can execute it. A helper that
 * is missing or that nobody may run would otherwise only show at the
 * first Install{url}, as a download that fails.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fatelfd.h"

/* $FATELF_FETCH_HELPER (tests), else next to our own binary (the build
 * tree), else the installed one. */
void fetch_helper_path(char *buf, size_t size)
{
	const char *env = getenv(FETCH_HELPER_ENV);
	char self[PATH_MAX];
	ssize_t n;

	if (env && env[0]) {
		snprintf(buf, size, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if ((size_t)snprintf(buf, size, "%s/%s", self, FETCH_HELPER_NAME) < size &&
			    access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, size, "%s/%s", PKGLIBEXECDIR, FETCH_HELPER_NAME);
}

uid_t fetch_helper_uid(void)
{
	return geteuid() == 0 ? (uid_t)FETCH_UNPRIVILEGED_ID : geteuid();
}

/*
 * Asks the kernel rather than reading mode bits: a child takes on the
 * download identity and calls access(X_OK), which also sees ACLs, every
 * directory on the way and a file system mounted noexec.
 */
int fetch_helper_check(const char *helper)
{
	struct stat st;
	pid_t pid;
	int status;

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
		if (setgroups(0, NULL) < 0 || setgid(FETCH_UNPRIVILEGED_ID) < 0 ||
		    setuid(FETCH_UNPRIVILEGED_ID) < 0)
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
