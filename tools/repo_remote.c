/*
 * fatelf repo list|verify URL: the repository at an http(s) URL copied,
 * as much of it as the verb needs, into a temporary directory, which the
 * local verbs then read like any repository. The downloads run in
 * fatelfd's helper, fatelf-fetch, in its batch mode (parallel transfers,
 * resume, the deny list), so that this program links no HTTP library.
 * Run by root, the helper runs as a download uid of its own, as fatelfd's
 * do (lib/basic/netuid.h): it talks to the server, frames what it gets on
 * a pipe, and this process writes the files; the helper can open none.
 * Nothing fetched is trusted here either: the local reader checks the
 * pointer, the index's hash and signature, and every object's hash.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "bundle_cmd.h"
#include "io.h"
#include "macro.h"
#include "netuid.h"
#include "path.h"
#include "repo.h"

#define FETCH_PROGRAM "fatelf-fetch"

/* The helper: the build tree's fetch/ or the package's libexec directory. */
static int helper_path(char *buf, size_t cap)
{
	helper_program_path(FETCH_PROGRAM, PKGLIBEXECDIR, buf, cap);
	return access(buf, X_OK) == 0 ? 0 : -ENOENT;
}

struct rget {
	char path[FATELF_REPO_MANIFEST_PATH_MAX];
	uint64_t size;          /* 0: unknown */
	int fd;
	bool done;
};

/* Fetches gets from url into dirfd (each at its relative path). */
static int fetch_into(const char *url, int dirfd, struct rget *gets, size_t n, fatelf_diag *d)
{
	char helper[PATH_MAX], line[4096], cannot[PATH_MAX + 96];
	char *argv[] = { helper, (char *)"--batch", NULL };
	struct fatelf_netuid as;
	bool drop = geteuid() == 0;
	sigset_t all, old;
	_cleanup_free_ char *text = NULL;
	size_t cap = strlen(url) + 64 + n * (FATELF_REPO_MANIFEST_PATH_MAX + 48), len = 0, ndone = 0;
	int in = -1, out[2] = { -1, -1 }, status = 0, k = 0, e;
	FILE *f = NULL;
	pid_t parent = getpid(), pid;

	if (n == 0)
		return 0;
	if (helper_path(helper, sizeof(helper)) < 0)
		return fatelf_diag_set(d, -ENOENT, -1, "the download helper " FETCH_PROGRAM " is not installed");
	/* Never a network download as root. */
	if (drop) {
		k = fatelf_netuid_pick(&as);
		if (k < 0)
			return fatelf_diag_set(d, k, -1, "%s: cannot start the download: no free download uid: %s", url,
					       fatelf_strerror(k));
	}
	snprintf(cannot, sizeof(cannot), "fatelf: cannot run the download helper %s as uid %u: ", helper,
		 drop ? (unsigned)as.uid : (unsigned)geteuid());
	text = malloc(cap);
	if (!text)
		return fatelf_diag_oom(d);
	len = (size_t)snprintf(text, cap, "mirror %s\n", url);
	for (size_t i = 0; i < n; i++) {
		char dir[FATELF_REPO_MANIFEST_PATH_MAX], *slash;

		len += (size_t)snprintf(text + len, cap - len, "get %zu %s %" PRIu64 "\n", i, gets[i].path, gets[i].size);
		snprintf(dir, sizeof(dir), "%s", gets[i].path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			(void)mkdir_p(dirfd, dir, 0755, 0755, 0);
		}
		gets[i].fd = openat(dirfd, gets[i].path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (gets[i].fd < 0)
			return fatelf_diag_set(d, -errno, -1, "%s: %s", gets[i].path, fatelf_strerror(-errno));
	}
	in = memfd_create("fatelf-repo-gets", MFD_CLOEXEC);
	if (in < 0 || write_all(in, text, len) < 0 || lseek(in, 0, SEEK_SET) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		k = fatelf_diag_set(d, -errno, -1, "cannot start the download: %s", fatelf_strerror(-errno));
		goto out;
	}
	/* No handler of ours may run in the child before it resets them. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		fatelf_netuid_exec(helper, argv, (const int[3]){ in, out[1], STDERR_FILENO }, drop ? &as : NULL,
				   parent, cannot);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		k = fatelf_diag_set(d, -e, -1, "cannot start the download: %s", fatelf_strerror(-e));
		goto out;
	}
	close(out[1]);
	out[1] = -1;
	f = fdopen(out[0], "r");
	if (!f) {
		k = -ENOMEM;
		goto reap;
	}
	out[0] = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long id, off, cnt;
		int used = 0;

		if (sscanf(line, "data %llu %llu %llu%n", &id, &off, &cnt, &used) == 3 && line[used] == '\n' && id < n) {
			uint8_t buf[65536];

			while (cnt > 0) {
				size_t want = (size_t)MIN(cnt, (unsigned long long)sizeof(buf));

				if (fread(buf, 1, want, f) != want || pwrite_all(gets[id].fd, buf, want, off) < 0) {
					k = fatelf_diag_set(d, -EIO, -1, "%s: the download broke off", url);
					goto reap;
				}
				off += want;
				cnt -= want;
			}
		} else if (sscanf(line, "done %llu %llu%n", &id, &off, &used) == 2 && id < n && !gets[id].done) {
			gets[id].done = true;
			ndone++;
		} else if (sscanf(line, "fail %llu %llu %n", &id, &off, &used) == 2) {
			line[strcspn(line, "\n")] = '\0';
			k = fatelf_diag_set(d, -EIO, -1, "%s", line + used);
			goto reap;
		} else {
			k = fatelf_diag_set(d, -EPROTO, -1, "the download helper broke its protocol");
			goto reap;
		}
	}
	if (ndone < n)
		k = fatelf_diag_set(d, -EIO, -1, "%s: the download ended early", url);
reap:
	if (k < 0)
		(void)kill(pid, SIGKILL);
	if (f)
		fclose(f);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
out:
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++)
		if (out[i] >= 0)
			close(out[i]);
	for (size_t i = 0; i < n; i++)
		if (gets[i].fd >= 0)
			close(gets[i].fd);
	return k;
}

static int one(const char *url, int dirfd, const char *path, uint64_t size, fatelf_diag *d)
{
	struct rget g = { .size = size, .fd = -1 };

	snprintf(g.path, sizeof(g.path), "%s", path);
	return fetch_into(url, dirfd, &g, 1, d);
}

static int get_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rget *)a)->path, ((const struct rget *)b)->path);
}

int repo_remote_copy(const char *url, bool everything, char *ret_dir, size_t cap, fatelf_diag *d)
{
	_cleanup_close_ int dirfd = -1;
	fatelf_repo_dir *r = NULL;
	struct rget *gets = NULL;
	size_t n = 0, ncap = 0;
	char rel[FATELF_REPO_MANIFEST_PATH_MAX];
	_cleanup_free_ char *ptr = NULL;
	uint8_t sha[32];
	uint64_t size;
	size_t plen;
	int k;

	snprintf(ret_dir, cap, "%s/fatelf-repo.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(ret_dir))
		return fatelf_diag_set(d, -errno, -1, "cannot make a temporary directory: %s", fatelf_strerror(-errno));
	dirfd = open(ret_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", ret_dir, fatelf_strerror(-errno));
	/* the pointer, then what it names */
	k = one(url, dirfd, FATELF_REPO_POINTER, 0, d);
	if (k == 0)
		k = read_file_max(dirfd, FATELF_REPO_POINTER, READ_FILE_NOFOLLOW, FATELF_REPO_POINTER_MAX, &ptr, &plen);
	if (k == 0)
		k = fatelf_repo_pointer_parse(ptr, plen, sha, &size, d);
	if (k < 0)
		return k;
	gets = calloc(2, sizeof(*gets));
	if (!gets)
		return fatelf_diag_oom(d);
	fatelf_repo_index_path(sha, false, gets[0].path);
	gets[0].size = size;
	fatelf_repo_index_path(sha, true, gets[1].path);
	/* an unsigned index has no signature: fetched apart, its absence is no error */
	k = fetch_into(url, dirfd, gets, 1, d);
	if (k == 0 && fetch_into(url, dirfd, gets + 1, 1, NULL) < 0)
		(void)unlinkat(dirfd, gets[1].path, 0);
	free(gets);
	gets = NULL;
	if (k < 0 || !everything)
		return k;
	/* every manifest, signature and pack list, then every object */
	k = fatelf_repo_open(ret_dir, false, NULL, 0, &r, d);
	if (k < 0)
		return k;
	for (int round = 0; round < 2 && k == 0; round++) {
		n = 0;
		for (size_t i = 0; i < r->index->npackages; i++)
			for (size_t j = 0; j < r->index->packages[i].nversions; j++) {
				const fatelf_repo_version *v = &r->index->packages[i].versions[j];
				fatelf_repo_pack *pk = NULL;
				size_t need = round == 0 ? 3 : 0;

				if (round == 1) {
					k = fatelf_repo_load_pack(r, v, NULL, &pk, d);
					if (k < 0)
						goto done;
					need = pk->nobjects;
				}
				if (GROW_ARRAY(gets, ncap, n + need) < 0) {
					fatelf_repo_pack_free(pk);
					k = fatelf_diag_oom(d);
					goto done;
				}
				if (round == 0) {
					memset(&gets[n], 0, 3 * sizeof(*gets));
					fatelf_repo_manifest_path(v->manifest, false, gets[n].path);
					gets[n++].size = v->manifest_size;
					if (v->signed_manifest)
						fatelf_repo_manifest_path(v->manifest, true, gets[n++].path);
					fatelf_repo_object_path(v->pack, rel);
					snprintf(gets[n++].path, sizeof(gets[0].path), "%s", rel);
				} else {
					for (size_t o = 0; o < pk->nobjects; o++) {
						memset(&gets[n], 0, sizeof(*gets));
						fatelf_repo_object_path(pk->objects[o].sha256, rel);
						snprintf(gets[n].path, sizeof(gets[0].path), "%s", rel);
						gets[n++].size = pk->objects[o].csize;
					}
					fatelf_repo_pack_free(pk);
				}
			}
		/* an object several versions share is fetched once */
		if (n > 1 && gets) {
			size_t w = 1;

			qsort(gets, n, sizeof(*gets), get_cmp);
			for (size_t i = 1; i < n; i++)
				if (strcmp(gets[w - 1].path, gets[i].path) != 0)
					gets[w++] = gets[i];
			n = w;
		}
		k = fetch_into(url, dirfd, gets, n, d);
	}
done:
	free(gets);
	fatelf_repo_close(r);
	return k;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		(void)rmdir(path);
	else
		(void)unlink(path);
	return 0;
}

void repo_remote_remove(const char *dir)
{
	/* our own temporary directory, made by mkdtemp; never a link out */
	if (dir[0] == '/' && strstr(dir, "/fatelf-repo."))
		(void)nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
