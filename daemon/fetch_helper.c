/*
 * Where fatelfd finds its download helper, fatelf-fetch, the identity a
 * network download runs as, and the check at start that this identity can
 * execute the helper. A helper that is missing or that no download may run
 * would otherwise only show at the first Install{url}, as a download that
 * fails.
 *
 * Each helper gets a uid of its own, as systemd's DynamicUser= does: a
 * process of the same uid could read the helper's stdin (credentials) in
 * /proc and ptrace it in the moment between its exec and its
 * PR_SET_DUMPABLE, and signal it at any time. A uid that no other process
 * has closes all three.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fatelfd.h"
#include "macro.h"

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

/* Marks in used (a bit per uid of the range) the uids a process has, as
 * any of its real, effective, saved or file system uid. The status file,
 * not the directory's owner: a non-dumpable process's is root. */
static void proc_uids_used(uint8_t *used)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], buf[4096], *l;
		unsigned long u[4];
		ssize_t n;
		int fd;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/status", e->d_name);
		fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		l = strstr(buf, "\nUid:");
		if (!l || sscanf(l + 5, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
			continue;
		for (int i = 0; i < 4; i++)
			if (u[i] >= FETCH_UID_MIN && u[i] - FETCH_UID_MIN < FETCH_UID_COUNT)
				used[(u[i] - FETCH_UID_MIN) / 8] |= (uint8_t)(1u << ((u[i] - FETCH_UID_MIN) % 8));
	}
	closedir(d);
}

/* Does the user or group database name id? Then someone gave it out. */
static bool id_named(uid_t id, bool group)
{
	char buf[4096];
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;

	if (group)
		return getgrgid_r((gid_t)id, &gr, buf, sizeof(buf), &grp) == 0 && grp;
	return getpwuid_r(id, &pw, buf, sizeof(buf), &pwp) == 0 && pwp;
}

/* FETCH_GROUP's gid, or -ENOENT. Root's and nogroup's are not a group of
 * its own. */
static int fetch_group(gid_t *ret)
{
	char buf[4096];
	struct group gr, *grp = NULL;

	if (getgrnam_r(FETCH_GROUP, &gr, buf, sizeof(buf), &grp) != 0 || !grp || grp->gr_gid == 0 ||
	    grp->gr_gid == 65534)
		return -ENOENT;
	*ret = grp->gr_gid;
	return 0;
}

int fetch_identity_pick(struct fetch_identity *ret)
{
	/* Where the next pick starts: onward from a random place, so that
	 * two helpers of this daemon never get the same uid, and those of
	 * two daemons seldom try the same one. */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint32_t next;
	static bool seeded;
	_cleanup_free_ uint8_t *used = calloc(FETCH_UID_COUNT / 8, 1);
	gid_t group;
	bool have_group = fetch_group(&group) == 0;

	if (!used)
		return -ENOMEM;
	proc_uids_used(used);
	pthread_mutex_lock(&lock);
	if (!seeded) {
		if (getrandom(&next, sizeof(next), GRND_NONBLOCK) != sizeof(next))
			next = (uint32_t)getpid() * 2654435761u;
		seeded = true;
	}
	for (uint32_t tries = 0; tries < FETCH_UID_COUNT; tries++) {
		uint32_t k = next++ % FETCH_UID_COUNT;
		uid_t uid = FETCH_UID_MIN + k;

		if (used[k / 8] & (1u << (k % 8)))
			continue;
		if (id_named(uid, false) || (!have_group && id_named((gid_t)uid, true)))
			continue;
		pthread_mutex_unlock(&lock);
		*ret = (struct fetch_identity){ .uid = uid, .gid = have_group ? group : (gid_t)uid };
		return 0;
	}
	pthread_mutex_unlock(&lock);
	return -EUSERS;
}

/*
 * Asks the kernel rather than reading mode bits: a child takes on the
 * download identity and calls access(X_OK), which also sees ACLs, every
 * directory on the way and a file system mounted noexec.
 */
int fetch_helper_check(const char *helper, struct fetch_identity *ret_as)
{
	struct fetch_identity as = { .uid = geteuid(), .gid = getegid() };
	struct stat st;
	pid_t pid;
	int status, r;

	if (geteuid() == 0) {
		r = fetch_identity_pick(&as);
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
		if (setgroups(0, NULL) < 0 || setresgid(as.gid, as.gid, as.gid) < 0 ||
		    setresuid(as.uid, as.uid, as.uid) < 0)
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
