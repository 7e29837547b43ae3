/*
 * fatelf bundle, as the fatelf front end runs it: in its own program,
 * fatelf-bundle, which it execs in place of itself with the same
 * arguments. Only the bundle verbs need libarchive, libcrypto and
 * everything they load; kept out of fatelf, they cost nothing to the
 * format commands, whose start is most of what a cloned thin or extract
 * costs. fatelf-bundle is looked for next to the running fatelf (the
 * build tree), then in the package's libexec directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "macro.h"

#define BUNDLE_PROGRAM "fatelf-bundle"

/* DIR/PROGRAM for the directory of the running program, if it is there
 * and executable: 0, else a negative code. */
static int program_beside_self(const char *program, char *buf, size_t cap)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	int k;

	if (n <= 0)
		return -ENOENT;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	k = snprintf(buf, cap, "%s/%s", self, program);
	if (k < 0 || (size_t)k >= cap)
		return -ENAMETOOLONG;
	return access(buf, X_OK) == 0 ? 0 : -errno;
}

int cmd_bundle_exec(int argc, char **argv)
{
	return cmd_exec_helper(BUNDLE_PROGRAM, argc, argv);
}

int cmd_exec_helper(const char *program, int argc, char **argv)
{
	char path[PATH_MAX];
	char **args;
	int e;

	if (program_beside_self(program, path, sizeof(path)) < 0)
		snprintf(path, sizeof(path), "%s/%s", PKGLIBEXECDIR, program);

	/* The helper takes the command line from the command on, after "fatelf" */
	args = calloc((size_t)argc + 2, sizeof(*args));
	if (!args) {
		fprintf(stderr, "%s: %s: %s\n", program_name, argv[0], strerror(ENOMEM));
		return EXIT_SYSTEM;
	}
	args[0] = (char *)"fatelf";
	memcpy(args + 1, argv, (size_t)argc * sizeof(*args));
	fflush(NULL);
	execv(path, args);
	e = errno;
	free(args);
	fprintf(stderr, "%s: %s: cannot run %s: %s\n", program_name, argv[0], path, strerror(e));
	return EXIT_SYSTEM;
}
