/*
 * Who a network download runs as when root starts it (netuid.h).
 *
 * Each helper gets a uid of its own: a process of the same uid could read
 * the helper's stdin (credentials) in /proc and ptrace it in the moment
 * between its exec and its PR_SET_DUMPABLE, and signal it at any time. A
 * uid that no other process has closes all three.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

#include "macro.h"
#include "netuid.h"

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
			if (u[i] >= FATELF_NETUID_MIN && u[i] - FATELF_NETUID_MIN < FATELF_NETUID_COUNT)
				used[(u[i] - FATELF_NETUID_MIN) / 8] |=
					(uint8_t)(1u << ((u[i] - FATELF_NETUID_MIN) % 8));
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

/* FATELF_NETUID_GROUP's gid, or -ENOENT. Root's and nogroup's are not a
 * group of its own. */
static int netuid_group(gid_t *ret)
{
	char buf[4096];
	struct group gr, *grp = NULL;

	if (getgrnam_r(FATELF_NETUID_GROUP, &gr, buf, sizeof(buf), &grp) != 0 || !grp || grp->gr_gid == 0 ||
	    grp->gr_gid == 65534)
		return -ENOENT;
	*ret = grp->gr_gid;
	return 0;
}

int fatelf_netuid_pick(struct fatelf_netuid *ret)
{
	/* Where the next pick starts: onward from a random place, so that
	 * two helpers of this process never get the same uid, and those of
	 * two processes seldom try the same one. */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint32_t next;
	static bool seeded;
	_cleanup_free_ uint8_t *used = calloc(FATELF_NETUID_COUNT / 8, 1);
	gid_t group;
	bool have_group = netuid_group(&group) == 0;

	if (!used)
		return -ENOMEM;
	proc_uids_used(used);
	pthread_mutex_lock(&lock);
	if (!seeded) {
		if (getrandom(&next, sizeof(next), GRND_NONBLOCK) != sizeof(next))
			next = (uint32_t)getpid() * 2654435761u;
		seeded = true;
	}
	for (uint32_t tries = 0; tries < FATELF_NETUID_COUNT; tries++) {
		uint32_t k = next++ % FATELF_NETUID_COUNT;
		uid_t uid = FATELF_NETUID_MIN + k;

		if (used[k / 8] & (1u << (k % 8)))
			continue;
		if (id_named(uid, false) || (!have_group && id_named((gid_t)uid, true)))
			continue;
		pthread_mutex_unlock(&lock);
		*ret = (struct fatelf_netuid){ .uid = uid, .gid = have_group ? group : (gid_t)uid };
		return 0;
	}
	pthread_mutex_unlock(&lock);
	return -EUSERS;
}

int fatelf_netuid_enter(const struct fatelf_netuid *as)
{
	/* Groups first: setgroups and setresgid need root. */
	if (setgroups(0, NULL) < 0 || setresgid(as->gid, as->gid, as->gid) < 0 ||
	    setresuid(as->uid, as->uid, as->uid) < 0)
		return -errno;
	return 0;
}

/* prefix, then e's text and name, on fd 2. strerrordesc_np and
 * strerrorname_np only read a static table (no locale, no lock), unlike
 * strerror, so a child of a threaded process may call them. */
static void say_errno(const char *prefix, int e)
{
	const char *desc = strerrordesc_np(e), *name = strerrorname_np(e);

	if (!desc)
		desc = "unknown error";
	(void)!write(2, prefix, strlen(prefix));
	(void)!write(2, desc, strlen(desc));
	if (name) {
		(void)!write(2, " (", 2);
		(void)!write(2, name, strlen(name));
		(void)!write(2, ")", 1);
	}
	(void)!write(2, "\n", 1);
}

_Noreturn void fatelf_netuid_exec(const char *path, char *const argv[], const int fds[3],
				  const struct fatelf_netuid *as, pid_t parent, const char *cannot)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t none;
	int moved[3], r;

	for (int sig = 1; sig < _NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	/* Out of the way of 0..2 first, whatever numbers they have. */
	for (int i = 0; i < 3; i++)
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
	for (int i = 0; i < 3; i++)
		if (moved[i] < 0 || dup2(moved[i], i) < 0)
			_exit(3);
	if (close_range(3, ~0U, 0) < 0)
		for (int fd = 3; fd < 65536; fd++)
			(void)close(fd);
	if (chdir("/") < 0)
		_exit(3);
	/* Every id of the three; a failure to drop is a failed download,
	 * never one as root. */
	if (as) {
		r = fatelf_netuid_enter(as);
		if (r < 0) {
			say_errno(cannot, -r);
			_exit(3);
		}
	}
	/* After the uid change, which clears it: a parent that dies takes
	 * its download along. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execv(path, argv);
	say_errno(cannot, errno);
	_exit(3);
}
