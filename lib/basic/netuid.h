/*
 * The identity a network download runs as when root starts it: a uid of
 * its own from a reserved range, as systemd's DynamicUser= gives one
 * (doc/reliability.md, "The download helper's identity"). fatelfd and the
 * fatelf tool's remote repository verbs both start fatelf-fetch so, with
 * the same range, the same pick and the same steps between fork and exec.
 * What a download is and when to drop stays with the callers.
 */
#ifndef FATELF_NETUID_H
#define FATELF_NETUID_H

#include <sys/types.h>

/* The range, one uid of its own for each helper: in the range systemd
 * leaves to no one (1879048192-2147483647), clear of its foreign range
 * 0x7FFE0000. */
#define FATELF_NETUID_MIN 0x7FE00000u
#define FATELF_NETUID_COUNT 0x10000u
/* The group they run in when it exists (sysusers.d/fatelf.conf makes it),
 * so that a firewall can name them; else a gid of the uid's number. */
#define FATELF_NETUID_GROUP "fatelf-fetch"

struct fatelf_netuid {
	uid_t uid;
	gid_t gid;
};

/* A uid of the range that no process has and no passwd entry names, each
 * call another (a helper at a time holds it; thread-safe), with
 * FATELF_NETUID_GROUP's gid or the uid's number. 0 or -errno (-EUSERS:
 * the whole range is taken). */
int fatelf_netuid_pick(struct fatelf_netuid *ret);

/* Takes on as: no supplementary groups, then real, effective and saved
 * gid, then uid. Async-signal-safe. 0 or -errno; on a failure the caller
 * must not go on (some ids may have changed). */
int fatelf_netuid_enter(const struct fatelf_netuid *as);

/*
 * The child side of starting a helper, between fork and exec; only
 * async-signal-safe calls, so a threaded parent may use it. Resets every
 * signal's handler, puts fds[0..2] on 0..2 and closes every other
 * descriptor, goes to "/", takes on as (NULL: stays who it is), dies with
 * parent (PR_SET_PDEATHSIG, then checks that parent is still its parent),
 * sets no_new_privs, unblocks every signal and execs path with argv and
 * the environment. A failure to drop or to exec writes cannot, errno's
 * text and name and a newline to the new fd 2; every failure exits 3.
 * Never returns.
 */
_Noreturn void fatelf_netuid_exec(const char *path, char *const argv[], const int fds[3],
				  const struct fatelf_netuid *as, pid_t parent, const char *cannot);

#endif
