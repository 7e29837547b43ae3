/*
 * ldconfig after a transaction that landed a shared library in a
 * directory the dynamic loader searches.
 */
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "engine_private.h"
#include "macro.h"

extern char **environ;

/* The directories the dynamic loader searches by default, and their
 * multiarch subdirectories ("/usr/lib/x86_64-linux-gnu"). */
static bool loader_dir(const char *dir, size_t len)
{
	static const char *const dirs[] = {
		"/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64",
		"/usr/libx32", "/usr/local/lib",
	};

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		size_t n = strlen(dirs[i]);
		if (len < n || memcmp(dir, dirs[i], n) != 0)
			continue;
		if (len == n)
			return true;
		/* one multiarch level: "/<triplet>" with no further '/' */
		if (dir[n] == '/' && len > n + 1 && !memchr(dir + n + 1, '/', len - n - 1) &&
		    memmem(dir + n + 1, len - n - 1, "-linux-", 7))
			return true;
	}
	return false;
}

static bool is_loader_library(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash || !strstr(slash + 1, ".so"))
		return false;
	return loader_dir(path, (size_t)(slash - path));
}

int eng_ldconfig(engine *e, const char *const *paths, size_t n, fatelf_diag *d)
{
	char *argv[4];
	bool any = false;
	pid_t pid;
	int status, q;

	if (!e->cfg.ldconfig || !e->cfg.ldconfig_path || !*e->cfg.ldconfig_path)
		return 0;
	for (size_t i = 0; i < n && !any; i++)
		any = paths[i] && is_loader_library(paths[i]);
	if (!any)
		return 0;

	argv[0] = e->cfg.ldconfig_path;
	argv[1] = NULL;
	if (strcmp(e->cfg.root, "/") != 0) {
		argv[1] = (char *)"-r";
		argv[2] = e->cfg.root;
		argv[3] = NULL;
	}
	q = posix_spawn(&pid, e->cfg.ldconfig_path, NULL, NULL, argv, environ);
	if (q != 0)
		return fatelf_diag_set(d, -q, -1, "cannot run %s: %s", e->cfg.ldconfig_path,
				       fatelf_strerror(-q));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return fatelf_diag_set(d, -errno, -1, "waiting for %s: %s",
					       e->cfg.ldconfig_path, fatelf_strerror(-errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fatelf_diag_set(d, -EIO, -1, "%s failed (%s %d)", e->cfg.ldconfig_path,
				       WIFEXITED(status) ? "exit status" : "signal",
				       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}
