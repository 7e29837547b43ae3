/*
 * fatelfd's repositories: configuration, accepted indexes, downloads and
 * resolution (see repos.h). What a mirror sends is never parsed here but
 * by the repository layer's strict readers, after its signature or hash
 * is checked; the helper that spoke to the mirror runs unprivileged.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "fatelfd.h"
#include "fetchchild.h"
#include "ini.h"
#include "io.h"
#include "macro.h"
#include "oci.h"
#include "path.h"
#include "results.h"
#include "job.h"
#include "repos.h"
#include "text.h"

#define REPO_CONF_MAX (64u << 10)

void repo_conf_done(struct repo_conf *r)
{
	for (size_t i = 0; i < r->nurls; i++)
		free(r->urls[i]);
	if (r->basic) {
		explicit_bzero(r->basic, strlen(r->basic));
		free(r->basic);
	}
	memset(r, 0, sizeof(*r));
}

void repo_conf_list_free(struct repo_conf *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		repo_conf_done(&v[i]);
	free(v);
}

bool repo_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= REPO_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '-' || c == '_' || c == '.'));

		if (!ok)
			return false;
	}
	return true;
}

const char *repo_url_problem(const char *url)
{
	size_t n = strlen(url);

	if (n == 0 || n > REPO_URL_MAX)
		return "is empty or longer than 2048 bytes";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f)
			return "holds a space or a control character";
	if (strncmp(url, "oci://", 6) == 0) {
		fatelf_oci_ref ref;

		if (fatelf_oci_ref_parse(url, false, &ref) < 0 || ref.tag[0] || ref.has_digest)
			return "is not a registry's namespace, oci://HOST[:PORT]/NAMESPACE (no tag, no digest)";
		return NULL;
	}
	if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0 &&
	    strncasecmp(url, "file:///", 8) != 0)
		return "is not an http://, https://, file:/// or oci:// URL";
	return NULL;
}

static int conf_path(const char *dir, const char *name, char **ret)
{
	char base[REPO_NAME_MAX + 8];

	snprintf(base, sizeof(base), "%s.conf", name);
	*ret = path_join(dir, base);
	return *ret ? 0 : -ENOMEM;
}

/* ------------------------------------------------------------ NAME.conf */

/* Each URL= line adds a mirror, tried in order. A registry does its own
 * mirroring: an oci:// URL stands alone. */
static int parse_url(ini_file *f, const ini_key *k, const char *value, void *field)
{
	struct repo_conf *r = field;
	bool oci = strncmp(value, "oci://", 6) == 0;
	const char *why;

	if ((why = repo_url_problem(value)))
		return ini_error(f, -EINVAL, k->name, "the URL %s", why);
	if (r->nurls == REPO_MIRRORS_MAX)
		return ini_error(f, -EINVAL, k->name, "at most %d mirrors", REPO_MIRRORS_MAX);
	if (r->nurls > 0 && (oci || r->oci))
		return ini_error(f, -EINVAL, k->name, "a repository of type oci has one URL= alone (its "
				 "registry does the mirroring)");
	r->urls[r->nurls] = strdup(value);
	if (!r->urls[r->nurls])
		return fatelf_diag_oom(f->d);
	r->nurls++;
	r->oci = oci;
	return 0;
}

static int parse_key(ini_file *f, const ini_key *k, const char *value, void *field)
{
	fatelf_diag tmp;

	if (fatelf_ms_pubkey_parse(value, strlen(value), field, &tmp) < 0)
		return ini_error(f, -EINVAL, k->name, "%s", tmp.msg);
	return 0;
}

static int parse_id(ini_file *f, const ini_key *k, const char *value, void *field)
{
	if (!fatelf_repo_id_valid(value))
		return ini_error(f, -EINVAL, k->name, "not a repository's identity (%d lower-case hex digits)",
				 FATELF_REPO_ID_LEN);
	memcpy(field, value, sizeof(((struct repo_conf *)NULL)->id));
	return 0;
}

#define REPOSITORY(key, flags_, f, fn) \
	{ .section = "Repository", .name = key, .type = INI_CUSTOM, .offset = offsetof(struct repo_conf, f), \
	  .flags = flags_, .parse = fn }
static const ini_key repo_conf_keys[] = {
	/* the whole struct: a URL= line also says whether it is of type oci */
	{ .section = "Repository", .name = "URL", .type = INI_CUSTOM, .offset = 0, .flags = INI_REQUIRED,
	  .parse = parse_url },
	REPOSITORY("Key", INI_REQUIRED, key, parse_key),
	REPOSITORY("ID", 0, id, parse_id),
};
#undef REPOSITORY

int repo_conf_load(const char *dir, const char *name, struct repo_conf *ret, fatelf_diag *d)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len;
	int k;

	memset(ret, 0, sizeof(*ret));
	if (!repo_name_valid(name))
		return fatelf_diag_set(d, -ENOENT, -1, "no repository named %s", name);
	if (conf_path(dir, name, &path) < 0)
		return fatelf_diag_oom(d);
	k = read_file_max(AT_FDCWD, path, READ_FILE_NOFOLLOW | READ_FILE_REGULAR, REPO_CONF_MAX, &text, &len);
	if (k == -ENOENT)
		return fatelf_diag_set(d, -ENOENT, -1, "no repository named %s", name);
	if (k < 0)
		return fatelf_diag_set(d, k, -1, "%s: %s", path, fatelf_strerror(k));
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	k = ini_parse(&(const ini_table){ .keys = repo_conf_keys, .nkeys = ARRAY_SIZE(repo_conf_keys), .base = ret },
		      path, text, len, d);
	if (k < 0)
		repo_conf_done(ret);
	return k;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct repo_conf *)a)->name, ((const struct repo_conf *)b)->name);
}

int repo_conf_list(const char *dir, struct repo_conf **ret, size_t *ret_n, fatelf_diag *d)
{
	DIR *dh = opendir(dir);
	struct repo_conf *v = NULL;
	size_t n = 0;
	struct dirent *de;
	int k = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!dh)
		return errno == ENOENT ? 0 : fatelf_diag_set(d, -errno, -1, "%s: %s", dir, fatelf_strerror(-errno));
	while ((de = readdir(dh))) {
		size_t len = strlen(de->d_name);
		char name[REPO_NAME_MAX];
		struct repo_conf *grown;

		if (len <= 5 || len - 5 >= sizeof(name) || strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		memcpy(name, de->d_name, len - 5);
		name[len - 5] = '\0';
		if (!repo_name_valid(name))
			continue;
		grown = realloc(v, (n + 1) * sizeof(*v));
		if (!grown) {
			k = fatelf_diag_oom(d);
			break;
		}
		v = grown;
		k = repo_conf_load(dir, name, &v[n], d);
		if (k < 0)
			break;
		n++;
	}
	closedir(dh);
	if (k < 0) {
		repo_conf_list_free(v, n);
		return k;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), name_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Writes buf as dir/base atomically, making dir, shown as shown in
 * messages. dir is relative to atfd: AT_FDCWD for a directory an admin
 * configures (whose parents only root may change), else the state
 * directory's descriptor, beneath which no symlink is followed. */
static int write_atomic(int atfd, const char *dir, const char *shown, const char *base, const void *buf,
			size_t len, mode_t mode, fatelf_diag *d)
{
	_cleanup_close_ int pfd = -1, dfd = -1;
	fatelf_tmpfile t = { .fd = -1 };
	int k;

	pfd = mkdir_p_open(atfd, dir, 0755, 0755, atfd == AT_FDCWD ? MKDIR_FOLLOW : MKDIR_BENEATH, NULL);
	if (pfd < 0)
		return fatelf_diag_set(d, pfd, -1, "%s: cannot make it: %s", shown, fatelf_strerror(pfd));
	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", shown, fatelf_strerror(-errno));
	k = fatelf_tmpfile_open(dfd, base, mode, &t);
	if (k == 0)
		k = write_all(t.fd, buf, len);
	if (k == 0 && fchmod(t.fd, mode) < 0)
		k = -errno;
	if (k == 0)
		k = fatelf_tmpfile_commit(&t, base, true);
	if (k < 0) {
		fatelf_tmpfile_abort(&t);
		return fatelf_diag_set(d, k, -1, "%s/%s: cannot write: %s", shown, base, fatelf_strerror(k));
	}
	return 0;
}

int repo_conf_write(const char *dir, const struct repo_conf *r, fatelf_diag *d)
{
	char key[64], base[REPO_NAME_MAX + 8];
	size_t cap = 256 + r->nurls * (REPO_URL_MAX + 8), len;
	_cleanup_free_ char *text = malloc(cap);

	if (!text)
		return fatelf_diag_oom(d);
	fatelf_ms_pubkey_format(&r->key, key);
	len = (size_t)snprintf(text, cap, "# Written by fatelfctl repo add\n[Repository]\n");
	for (size_t i = 0; i < r->nurls; i++)
		len += (size_t)snprintf(text + len, cap - len, "URL=%s\n", r->urls[i]);
	len += (size_t)snprintf(text + len, cap - len, "Key=%s\n", key);
	if (r->id[0])
		len += (size_t)snprintf(text + len, cap - len, "ID=%s\n", r->id);
	snprintf(base, sizeof(base), "%s.conf", r->name);
	/* A URL may carry a password: root's alone. */
	return write_atomic(AT_FDCWD, dir, dir, base, text, len, 0600, d);
}

static int state_fd = -1;

int repo_state_fd_set(int fd)
{
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (copy < 0)
		return -errno;
	if (state_fd >= 0)
		close(state_fd);
	state_fd = copy;
	return 0;
}

int repo_state_fd(void)
{
	return state_fd;
}

/* A repository's directory under the state directory: rel relative to
 * its descriptor, *ret the name shown in messages. */
static int state_dir_of(const char *state_dir, const char *name, char rel[static REPO_NAME_MAX + 16], char **ret)
{
	snprintf(rel, REPO_NAME_MAX + 16, "repos/%s", name);
	*ret = path_join(state_dir, rel);
	return *ret ? 0 : -ENOMEM;
}

int repo_conf_remove(const char *dir, const char *state_dir, const char *name, fatelf_diag *d)
{
	_cleanup_free_ char *path = NULL, *sdir = NULL;
	static const char *const files[] = { "index.json", "index.json.minisig" };
	char rel[REPO_NAME_MAX + 16];

	if (!repo_name_valid(name))
		return fatelf_diag_set(d, -ENOENT, -1, "no repository named %s", name);
	if (conf_path(dir, name, &path) < 0 || state_dir_of(state_dir, name, rel, &sdir) < 0)
		return fatelf_diag_oom(d);
	if (unlink(path) < 0)
		return errno == ENOENT ? fatelf_diag_set(d, -ENOENT, -1, "no repository named %s", name)
				       : fatelf_diag_set(d, -errno, -1, "%s: %s", path, fatelf_strerror(-errno));
	{
		_cleanup_close_ int rfd = openat(state_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (rfd < 0)
			return 0;
		for (size_t i = 0; i < ARRAY_SIZE(files); i++)
			(void)unlinkat(rfd, files[i], 0);
	}
	(void)unlinkat(state_fd, rel, AT_REMOVEDIR);
	return 0;
}

int repo_state_load(const char *state_dir, const char *name, fatelf_repo_index **ret, fatelf_diag *d)
{
	_cleanup_free_ char *sdir = NULL, *json = NULL;
	char rel[REPO_NAME_MAX + 16], file[REPO_NAME_MAX + 32];
	size_t len;
	int k;

	if (state_dir_of(state_dir, name, rel, &sdir) < 0)
		return fatelf_diag_oom(d);
	snprintf(file, sizeof(file), "%s/index.json", rel);
	k = read_file_max(state_fd, file, READ_FILE_NOFOLLOW | READ_FILE_REGULAR, FATELF_REPO_INDEX_MAX, &json,
			  &len);
	if (k == -ENOENT)
		return -ENOENT;
	if (k < 0)
		return fatelf_diag_set(d, k, -1, "%s/index.json: %s", sdir, fatelf_strerror(k));
	/* Checked when it was accepted; kept where only root writes. */
	return fatelf_repo_index_parse(json, len, ret, d);
}

int repo_state_load_fresh(const char *state_dir, const char *name, int64_t now, fatelf_repo_index **ret,
			  fatelf_diag *d)
{
	fatelf_repo_index *ix = NULL;
	int k = repo_state_load(state_dir, name, &ix, NULL);

	if (k < 0)
		return k;
	/* The rule update applies to a fetched index: a machine that cannot
	 * reach a fresh one must not go on trusting the last one (a
	 * freeze). Nothing of it is trusted then: not what it offers, not
	 * what it does not. */
	k = fatelf_repo_index_check(ix, 0, now, d);
	if (k < 0) {
		FATELF_DIAG_FACT(d, repository, name);
		fatelf_repo_index_free(ix);
		return k;
	}
	*ret = ix;
	return 0;
}

int repo_state_keep(const char *state_dir, const char *name, const fatelf_repo_index *ix, fatelf_diag *d)
{
	_cleanup_free_ char *sdir = NULL, *text = NULL;
	char rel[REPO_NAME_MAX + 16], sig[REPO_NAME_MAX + 40];
	size_t len;
	int k;

	if (state_dir_of(state_dir, name, rel, &sdir) < 0)
		return fatelf_diag_oom(d);
	k = fatelf_repo_index_serialize(ix, &text, &len, d);
	if (k == 0)
		k = write_atomic(state_fd, rel, sdir, "index.json", text, len, 0644, d);
	if (k == 0) {
		snprintf(sig, sizeof(sig), "%s/index.json.minisig", rel);
		(void)unlinkat(state_fd, sig, 0);
	}
	return k;
}

int repo_state_accept(const struct repo_conf *r, const char *state_dir, const char *json, size_t len,
		      const char *sig, size_t slen, int64_t now, fatelf_repo_index **ret, fatelf_diag *d)
{
	_cleanup_free_ char *sdir = NULL;
	_cleanup_repo_index_ fatelf_repo_index *ix = NULL;
	char rel[REPO_NAME_MAX + 16];
	uint64_t min_serial = 0;
	char pinned[FATELF_REPO_ID_LEN + 1];
	int k;

	if (!sig)
		return fatelf_diag_set(d, -FATELF_E_SIG_MISSING, -1, "the index of %s is not signed", r->name);
	k = fatelf_ms_verify(&r->key, 1, json, len, sig, slen, NULL, d);
	if (k < 0)
		return k;
	k = fatelf_repo_index_parse(json, len, &ix, d);
	if (k < 0)
		return k;
	/* The identity pinned: the admin's (ID=), else the one of the index
	 * accepted before (none before the first update). */
	memcpy(pinned, r->id, sizeof(pinned));
	{
		_cleanup_repo_index_ fatelf_repo_index *old = NULL;

		if (repo_state_load(state_dir, r->name, &old, NULL) == 0) {
			min_serial = old->serial;
			if (!pinned[0])
				memcpy(pinned, old->repository, sizeof(pinned));
		}
	}
	/* The identity first: another repository's index (the same vendor's
	 * key) must not move this one's serial floor. */
	k = fatelf_repo_index_check_identity(ix, pinned, d);
	if (k < 0) {
		FATELF_DIAG_FACT(d, repository, r->name);
		return k;
	}
	k = fatelf_repo_index_check(ix, min_serial, now, d);
	if (k < 0) {
		FATELF_DIAG_FACT(d, repository, r->name);
		return k;
	}
	if (state_dir_of(state_dir, r->name, rel, &sdir) < 0)
		return fatelf_diag_oom(d);
	/* The signature first: the index file is what is trusted on load. */
	k = write_atomic(state_fd, rel, sdir, "index.json.minisig", sig, slen, 0644, d);
	if (k == 0)
		k = write_atomic(state_fd, rel, sdir, "index.json", json, len, 0644, d);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(ix);
	return 0;
}

/* Downloads */

struct frames {
	int fd;
	char buf[64 << 10];
	size_t len, off;
	const atomic_int *cancel;
};

/* Fills the buffer: 1 more bytes, 0 end, <0 error. */
static int frames_fill(struct frames *f)
{
	if (f->off > 0) {
		memmove(f->buf, f->buf + f->off, f->len - f->off);
		f->len -= f->off;
		f->off = 0;
	}
	if (f->len == sizeof(f->buf))
		return -EPROTO;
	for (;;) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		ssize_t n;
		int r;

		if (f->cancel && atomic_load(f->cancel))
			return -ECANCELED;
		r = poll(&p, 1, 500);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = read(f->fd, f->buf + f->len, sizeof(f->buf) - f->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		f->len += (size_t)n;
		return n > 0;
	}
}

/* The next line (without its newline) in *ret, valid until the next call. */
static int frames_line(struct frames *f, char **ret)
{
	for (;;) {
		char *nl = memchr(f->buf + f->off, '\n', f->len - f->off);
		int r;

		if (nl) {
			*nl = '\0';
			*ret = f->buf + f->off;
			f->off = (size_t)(nl - f->buf) + 1;
			return 1;
		}
		r = frames_fill(f);
		if (r <= 0)
			return r == 0 && f->len > f->off ? -EPROTO : r;
	}
}

/* The bytes of a data frame to g. A failure to write them down (a full
 * disk) is -errno with *ret_write set too. */
static int take_bytes(struct frames *f, struct repo_get *g, uint64_t off, uint64_t len, bool *ret_write)
{
	while (len > 0) {
		size_t have = f->len - f->off, k;
		int r;

		if (have == 0) {
			r = frames_fill(f);
			if (r <= 0)
				return r == 0 ? -EPROTO : r;
			continue;
		}
		k = (size_t)MIN((uint64_t)have, len);
		if (g->fd < 0 && g->name) {
			g->fd = openat(g->dirfd, g->name, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (g->fd < 0) {
				*ret_write = true;
				return -errno;
			}
		}
		if (g->fd >= 0) {
			r = pwrite_all(g->fd, f->buf + f->off, k, g->base + off);
			if (r < 0) {
				*ret_write = true;
				return r;
			}
		} else {
			memcpy(g->buf + off, f->buf + f->off, k);
		}
		if (off + k > g->len) {
			g->len = (size_t)(off + k);
			if (g->fd < 0 && g->buf)
				g->buf[g->len] = '\0';
		}
		f->off += k;
		off += k;
		len -= k;
	}
	return 0;
}

/* The mirrors one helper is given: r's urls[first..first+count), all of
 * one kind when the daemon is root (see mirror_runs). */
struct mirror_run {
	size_t first, count;
	bool file;
};

static bool url_is_file(const char *url)
{
	return strncasecmp(url, "file:", 5) == 0;
}

/*
 * A file: mirror is read with the daemon's identity (root configured it,
 * and its files may be root's alone), a network one by a helper of a uid
 * of its own. A helper is one process, so when root's repository mixes
 * the two, each run of mirrors of one kind gets a helper of its own, in
 * the mirrors' order: the gets that no mirror of a run gave go on to the
 * next. Not root: one run of every mirror, as the daemon's identity is
 * the only one there is. Returns the count of runs in runs.
 */
static size_t mirror_runs(const struct repo_conf *r, struct mirror_run runs[REPO_MIRRORS_MAX])
{
	size_t n = 0;

	if (geteuid() != 0) {
		bool any_file = false;

		for (size_t i = 0; i < r->nurls; i++)
			any_file |= url_is_file(r->urls[i]);
		runs[0] = (struct mirror_run){ .first = 0, .count = r->nurls, .file = any_file };
		return 1;
	}
	for (size_t i = 0; i < r->nurls; i++) {
		bool file = url_is_file(r->urls[i]);

		if (n > 0 && runs[n - 1].file == file) {
			runs[n - 1].count++;
			continue;
		}
		runs[n++] = (struct mirror_run){ .first = i, .count = 1, .file = file };
	}
	return n;
}

/* The helper's stdin for the mirrors of run and the gets not yet done. */
static char *request_text(const struct repo_conf *r, const struct mirror_run *run, const struct repo_get *gets,
			  size_t n)
{
	size_t cap = 64, len = 0;
	char *s;

	for (size_t i = run->first; i < run->first + run->count; i++)
		cap += strlen(r->urls[i]) + 16;
	for (size_t i = 0; i < n; i++)
		cap += strlen(gets[i].path) + 64;
	if (r->oci)
		cap += sizeof(FATELF_OCI_MT_INDEX) + sizeof(FATELF_OCI_MT_MANIFEST) + 32;
	if (r->basic)
		cap += strlen(r->basic) + 16;
	s = malloc(cap);
	if (!s)
		return NULL;
	for (size_t i = run->first; i < run->first + run->count; i++)
		len += (size_t)snprintf(s + len, cap - len, "mirror %s\n", r->urls[i]);
	if (r->oci)
		len += (size_t)snprintf(s + len, cap - len, "accept %s\naccept %s\n", FATELF_OCI_MT_INDEX,
					FATELF_OCI_MT_MANIFEST);
	if (r->basic)
		len += (size_t)snprintf(s + len, cap - len, "basic %s\n", r->basic);
	for (size_t i = 0; i < n; i++)
		if (!gets[i].done)
			len += (size_t)snprintf(s + len, cap - len, "get %zu %s %" PRIu64 "\n", i, gets[i].path,
						gets[i].size);
	return s;
}

int repo_fetch(const engine_config *cfg, const struct repo_conf *r, struct repo_get *gets, size_t n,
	       const atomic_int *cancel, pid_t *pid_slot, fatelf_diag *d)
{
	return repo_fetch_each(cfg, r, gets, n, NULL, cancel, pid_slot, NULL, NULL, d);
}

/* The helper for run's mirrors of r, its stdin on in. */
static int helper_start(const engine_config *cfg, const struct repo_conf *r, const struct mirror_run *run, int in,
			struct fetch_child *c, fatelf_diag *d)
{
	char helper[PATH_MAX], timeout[32], cannot[PATH_MAX + 128];
	struct fetch_limit_args limits;
	struct fatelf_netuid as;
	/* A repository on a local medium (root configured it) is read with
	 * the daemon's identity; a network mirror never is. */
	bool drop = geteuid() == 0 && !run->file;
	char *argv[24];
	size_t argc = 0;
	int k;

	if (drop) {
		k = fatelf_netuid_pick(&as);
		if (k < 0)
			return fatelf_diag_set(d, k, -1, "repository %s: cannot start the download: no free download uid: %s",
					       r->name, fatelf_strerror(k));
	}
	fetch_helper_path(helper, sizeof(helper));
	snprintf(cannot, sizeof(cannot), "repository %s: cannot run the download helper %s as uid %u: ", r->name,
		 helper, drop ? (unsigned)as.uid : (unsigned)geteuid());
	snprintf(timeout, sizeof(timeout), "%u", cfg->fetch_timeout ? cfg->fetch_timeout : 60);
	argv[argc++] = helper;
	argv[argc++] = (char *)"--batch";
	if (run->file)
		argv[argc++] = (char *)"--allow-file";
	argv[argc++] = (char *)"--timeout";
	argv[argc++] = timeout;
	argc += fetch_limit_argv(cfg, &limits, argv + argc);
	if (cfg->fetch_proxy[0]) {
		argv[argc++] = (char *)"--proxy";
		argv[argc++] = (char *)cfg->fetch_proxy;
	}
	argv[argc] = NULL;
	k = fetch_child_start(helper, argv, in, drop ? &as : NULL, cannot, c);
	if (k < 0)
		return fatelf_diag_set(d, k, -1, "repository %s: cannot start the download: %s", r->name,
				       fatelf_strerror(k));
	return 0;
}

int repo_helper_spawn(const engine_config *cfg, const struct repo_conf *r, struct repo_helper *h, fatelf_diag *d)
{
	struct mirror_run runs[REPO_MIRRORS_MAX];
	int p[2], k;

	*h = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	if (r->nurls == 0)
		return 0;
	/* the helper of the first run, which every fetch starts with */
	(void)mirror_runs(r, runs);
	if (pipe2(p, O_CLOEXEC) < 0)
		return fatelf_diag_set(d, -errno, -1, "repository %s: %s", r->name, fatelf_strerror(-errno));
	k = helper_start(cfg, r, &runs[0], p[0], &h->c, d);
	close(p[0]);
	if (k < 0) {
		close(p[1]);
		return k;
	}
	h->in = p[1];
	return 0;
}

void repo_helper_discard(struct repo_helper *h)
{
	if (!h || h->c.pid <= 0)
		return;
	if (h->in >= 0)
		close(h->in);
	(void)kill(h->c.pid, SIGKILL);
	close(h->c.out);
	close(h->c.err);
	while (waitpid(h->c.pid, NULL, 0) < 0 && errno == EINTR)
		;
	*h = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
}

/* A get that no mirror of a run gave starts over on the next run's. Its
 * bytes so far stay where a known size puts them (the next mirror sends
 * them all again); without a size, nothing tells how long it is. */
static void get_start_over(struct repo_get *g)
{
	if (g->size)
		return;
	g->len = 0;
	if (g->buf)
		g->buf[0] = '\0';
	if (g->name && g->fd >= 0)
		(void)ftruncate(g->fd, 0);
}

/* One helper's turn: what it was asked for and how each ended. */
struct turn {
	struct repo_get *gets;
	size_t n;
	bool *asked;                    /* gets[i] asked of it and not ended */
	size_t nasked, nended, nfailed;
	bool more;                      /* another run follows */
	bool write_failed;              /* bytes arrived that could not be kept */
	void (*event)(void *ctx, size_t i, bool whole);
	void *ctx;
	char *failmsg;
	size_t failsize;
};

/* "data ID OFF LEN": bytes of a get, only of one it was asked for and
 * within its size. */
static int turn_data(struct turn *t, struct frames *f, unsigned long long id, unsigned long long a,
		     unsigned long long b)
{
	struct repo_get *g;
	uint64_t lim;
	int k;

	/* only what this helper was asked for, until it ends */
	if (id >= t->n || !t->asked[id])
		return -EPROTO;
	g = &t->gets[id];
	lim = g->size ? g->size : g->max;
	if (a > lim || b > lim - a) {
		g->too_big = true;
		snprintf(t->failmsg, t->failsize, "%s: larger than %" PRIu64 " bytes", g->path, lim);
		return -EFBIG;
	}
	k = take_bytes(f, g, a, b, &t->write_failed);
	if (k < 0) {
		if (t->write_failed)
			snprintf(t->failmsg, t->failsize, "%s: cannot keep its bytes: %s", g->path, fatelf_strerror(k));
		return k;
	}
	if (t->event)
		t->event(t->ctx, (size_t)id, false);
	return 0;
}

/* "done ID LEN": a get whole, every byte of it there. */
static int turn_done(struct turn *t, unsigned long long id, unsigned long long a)
{
	struct repo_get *g;

	if (id >= t->n || !t->asked[id])
		return -EPROTO;
	g = &t->gets[id];
	if ((g->size && a != g->size) || a != g->len) {
		snprintf(t->failmsg, t->failsize, "%s: %llu bytes arrived, %" PRIu64 " expected", g->path, a,
			 g->size);
		return -EIO;
	}
	t->asked[id] = false;
	t->nended++;
	g->done = true;
	if (g->name && g->fd >= 0) {
		close(g->fd);
		g->fd = -1;
	}
	if (t->event)
		t->event(t->ctx, (size_t)id, true);
	return 0;
}

/* "fail ID CODE TEXT": a get this run's mirrors do not have; the next
 * run's may. */
static int turn_fail(struct turn *t, unsigned long long id, unsigned long long a, const char *text)
{
	/* one line from the helper, made printable */
	size_t m = 0;

	if (id < t->n)
		t->gets[id].code = (long)MIN(a, 999ULL);
	for (const char *p = text; *p && m + 1 < t->failsize; p++)
		t->failmsg[m++] = (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f ? *p : '?';
	t->failmsg[m] = '\0';
	if (!t->more || id >= t->n || !t->asked[id])
		return -EIO;
	t->asked[id] = false;
	t->nended++;
	t->nfailed++;
	get_start_over(&t->gets[id]);
	return 0;
}

/* The helper's lines until it ends: 0 at its end, else why it broke off. */
static int turn_read(struct turn *t, int out, const atomic_int *cancel)
{
	_cleanup_free_ struct frames *f = calloc(1, sizeof(*f));
	char *line;
	int k;

	if (!f)
		return -ENOMEM;
	f->fd = out;
	f->cancel = cancel;
	while ((k = frames_line(f, &line)) > 0) {
		unsigned long long id, a, b;
		int used = 0;

		if (sscanf(line, "data %llu %llu %llu%n", &id, &a, &b, &used) == 3 && line[used] == '\0')
			k = turn_data(t, f, id, a, b);
		else if (sscanf(line, "done %llu %llu%n", &id, &a, &used) == 2 && line[used] == '\0')
			k = turn_done(t, id, a);
		else if (sscanf(line, "fail %llu %llu %n", &id, &a, &used) == 2)
			k = turn_fail(t, id, a, line + used);
		else
			k = -EPROTO;
		if (k < 0)
			break;
	}
	return k;
}

/* The helper started beforehand (pre) takes its requests down its pipe,
 * which it reads whole before anything else; *ret_c is its process. */
static int turn_hand_requests(struct repo_helper *pre, const char *text, struct fetch_child *ret_c, char *failmsg,
			      size_t failsize)
{
	int k;

	*ret_c = pre->c;
	k = write_all(pre->in, text, strlen(text));
	close(pre->in);
	*pre = (struct repo_helper){ .c = { .pid = 0, .out = -1, .err = -1 }, .in = -1 };
	if (k < 0)
		snprintf(failmsg, failsize, "cannot hand the helper its requests: %s", fatelf_strerror(k));
	return k;
}

/* A helper started now, its requests in a memfd on its stdin. */
static int turn_start(const engine_config *cfg, const struct repo_conf *r, const struct mirror_run *run,
		      const char *text, struct fetch_child *ret_c, fatelf_diag *d)
{
	int in = fetch_text_memfd(text), k;

	if (in < 0)
		return fatelf_diag_set(d, in, -1, "repository %s: %s", r->name, fatelf_strerror(in));
	k = helper_start(cfg, r, run, in, ret_c, d);
	close(in);
	return k;
}

/* The helper's end: stopped if it has not ended by itself, reaped; the
 * turn's result (k is how the reading ended). */
static int turn_end(struct turn *t, struct fetch_child *c, int k, const struct repo_conf *r,
		    const atomic_int *cancel, pid_t *pid_slot, fatelf_diag *d)
{
	char msg[512];
	int status = 0;

	if (k < 0 || t->nended < t->nasked)
		(void)kill(c->pid, SIGKILL);
	close(c->out);
	fetch_collect(c, 2000, msg, sizeof(msg));
	close(c->err);
	if (pid_slot)
		__atomic_store_n(pid_slot, 0, __ATOMIC_SEQ_CST);
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (k == -ECANCELED || (cancel && atomic_load(cancel)))
		return fatelf_diag_set(d, -ECANCELED, -1, "cancelled");
	if (k < 0 || t->nended < t->nasked) {
		const char *why = t->failmsg[0] ? t->failmsg
			: msg[0] ? msg
			: k == -EPROTO ? "the download helper broke its protocol"
			: "the download helper ended early";

		/* a disk that filled up is the machine's error, not the mirror's */
		return fatelf_diag_set(d, t->write_failed ? k : -EIO, -1, "repository %s: %s", r->name, why);
	}
	return 0;
}

/*
 * One helper's turn: the gets not done yet, from run's mirrors. 0 when the
 * helper ended with each of them done or, when more is false, failed
 * (*ret_failed counts those, failmsg says the last); else an error with
 * d set, as repo_fetch_each returns it.
 */
static int fetch_run(const engine_config *cfg, const struct repo_conf *r, const struct mirror_run *run, bool more,
		     struct repo_get *gets, size_t n, struct repo_helper *pre, const atomic_int *cancel,
		     pid_t *pid_slot, void (*event)(void *ctx, size_t i, bool whole), void *ctx, char *failmsg,
		     size_t failsize, size_t *ret_failed, fatelf_diag *d)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ bool *asked = calloc(n, sizeof(bool));
	struct fetch_child c = { .pid = 0, .out = -1, .err = -1 };
	struct turn t = { .gets = gets, .n = n, .asked = asked, .more = more, .event = event, .ctx = ctx,
			  .failmsg = failmsg, .failsize = failsize };
	int k;

	if (!asked) {
		repo_helper_discard(pre);
		return fatelf_diag_oom(d);
	}
	for (size_t i = 0; i < n; i++)
		if (!gets[i].done) {
			asked[i] = true;
			t.nasked++;
		}
	text = request_text(r, run, gets, n);
	if (!text) {
		repo_helper_discard(pre);
		return fatelf_diag_oom(d);
	}
	if (pre && pre->c.pid > 0) {
		k = turn_hand_requests(pre, text, &c, failmsg, failsize);
	} else {
		repo_helper_discard(pre);
		k = turn_start(cfg, r, run, text, &c, d);
		if (k < 0)
			return k;
	}
	if (pid_slot)
		__atomic_store_n(pid_slot, c.pid, __ATOMIC_SEQ_CST);
	if (k == 0)
		k = turn_read(&t, c.out, cancel);
	k = turn_end(&t, &c, k, r, cancel, pid_slot, d);
	if (k < 0)
		return k;
	*ret_failed = t.nfailed;
	return 0;
}

int repo_fetch_each(const engine_config *cfg, const struct repo_conf *r, struct repo_get *gets, size_t n,
		    struct repo_helper *pre, const atomic_int *cancel, pid_t *pid_slot,
		    void (*event)(void *ctx, size_t i, bool whole), void *ctx, fatelf_diag *d)
{
	struct mirror_run runs[REPO_MIRRORS_MAX];
	char failmsg[512] = "";
	size_t nruns, failed = 0;
	int k;

	if (n == 0) {
		repo_helper_discard(pre);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		gets[i].len = 0;
		gets[i].done = false;
		gets[i].too_big = false;
		if (gets[i].fd < 0 && !gets[i].name) {
			uint64_t cap = gets[i].size ? gets[i].size : gets[i].max;

			gets[i].buf = malloc((size_t)cap + 1);
			if (!gets[i].buf) {
				repo_helper_discard(pre);
				return fatelf_diag_oom(d);
			}
			gets[i].buf[0] = '\0';
		}
	}
	nruns = mirror_runs(r, runs);
	for (size_t i = 0; i < nruns; i++) {
		k = fetch_run(cfg, r, &runs[i], i + 1 < nruns, gets, n, i == 0 ? pre : NULL, cancel, pid_slot, event,
			      ctx, failmsg, sizeof(failmsg), &failed, d);
		if (k < 0)
			return k;
		if (failed == 0)
			return 0;
	}
	/* the last run fails with its helper's words; here, no run at all */
	return fatelf_diag_set(d, -EIO, -1, "repository %s: %s", r->name, failmsg[0] ? failmsg : "it has no mirror");
}

/* Resolution */

int repo_resolve(const engine_config *cfg, const char *spec, struct repo_conf *ret_conf,
		 fatelf_repo_index **ret_ix, const fatelf_repo_version **ret_v, fatelf_diag *d)
{
	struct repo_conf *confs = NULL;
	size_t nconfs = 0, best = SIZE_MAX;
	fatelf_repo_index *best_ix = NULL;
	const fatelf_repo_version *best_v = NULL;
	char name[256];
	const char *eq = strchr(spec, '='), *version = eq ? eq + 1 : NULL;
	int k;

	if ((eq ? (size_t)(eq - spec) : strlen(spec)) >= sizeof(name))
		return fatelf_diag_set(d, -ENOENT, -1, "no repository offers %s", spec);
	snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - spec) : (int)strlen(spec), spec);
	k = repo_conf_list(cfg->repos_dir, &confs, &nconfs, d);
	if (k < 0)
		return k;
	for (size_t i = 0; i < nconfs; i++) {
		fatelf_repo_index *ix = NULL;
		const fatelf_repo_package *p;
		const fatelf_repo_version *v = NULL;

		/* An expired index refuses the whole resolution: what it
		 * offers, or does not, may be a frozen mirror's word. */
		k = repo_state_load_fresh(cfg->state_dir, confs[i].name, (int64_t)time(NULL), &ix, d);
		if (k == -FATELF_E_REPO_EXPIRED) {
			fatelf_repo_index_free(best_ix);
			repo_conf_list_free(confs, nconfs);
			return k;
		}
		if (k < 0)
			continue;
		p = fatelf_repo_index_find(ix, name);
		if (p && version)
			v = fatelf_repo_package_version(p, version);
		else if (p)
			v = &p->versions[p->nversions - 1];
		if (v && (!best_v || fatelf_pkg_version_compare(v->version, best_v->version) > 0)) {
			fatelf_repo_index_free(best_ix);
			best_ix = ix;
			best_v = v;
			best = i;
		} else {
			fatelf_repo_index_free(ix);
		}
	}
	if (!best_v) {
		repo_conf_list_free(confs, nconfs);
		return fatelf_diag_set(d, -ENOENT, -1, "no repository offers %s (fatelfctl update, then search)", spec);
	}
	*ret_conf = confs[best];
	memset(&confs[best], 0, sizeof(confs[best]));
	repo_conf_list_free(confs, nconfs);
	*ret_ix = best_ix;
	*ret_v = best_v;
	return 0;
}

void repo_depends_free(fatelf_depend *deps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fatelf_depend_clear(&deps[i]);
	free(deps);
}

int repo_depends_copy(const fatelf_repo_version *v, fatelf_depend **ret, size_t *ret_n)
{
	fatelf_depend *c = calloc(v->ndepends ? v->ndepends : 1, sizeof(*c));
	size_t n = 0;

	if (!c)
		return -ENOMEM;
	for (; n < v->ndepends; n++) {
		c[n].op = v->depends[n].op;
		c[n].name = strdup(v->depends[n].name);
		c[n].version = v->depends[n].version ? strdup(v->depends[n].version) : NULL;
		if (!c[n].name || (v->depends[n].version && !c[n].version)) {
			repo_depends_free(c, n + 1);
			return -ENOMEM;
		}
	}
	*ret = c;
	*ret_n = n;
	return 0;
}

int repo_resolve_depend(const engine_config *cfg, const fatelf_depend *dep, char **ret_spec,
			fatelf_depend **ret_deps, size_t *ret_ndeps, fatelf_diag *d)
{
	struct repo_conf *confs = NULL;
	size_t nconfs = 0;
	fatelf_repo_index *best_ix = NULL;
	const fatelf_repo_version *best_v = NULL;
	int k;

	k = repo_conf_list(cfg->repos_dir, &confs, &nconfs, NULL);
	if (k < 0)
		return k;
	for (size_t i = 0; i < nconfs; i++) {
		fatelf_repo_index *ix = NULL;
		const fatelf_repo_package *p;
		const fatelf_repo_version *v = NULL;

		k = repo_state_load_fresh(cfg->state_dir, confs[i].name, (int64_t)time(NULL), &ix, d);
		if (k == -FATELF_E_REPO_EXPIRED) {
			fatelf_repo_index_free(best_ix);
			repo_conf_list_free(confs, nconfs);
			return k;
		}
		if (k < 0)
			continue;
		p = fatelf_repo_index_find(ix, dep->name);
		/* the newest of this repository's that meets the constraint */
		for (size_t n = p ? p->nversions : 0; n-- > 0;)
			if (fatelf_depend_satisfied_by(dep, p->versions[n].version)) {
				v = &p->versions[n];
				break;
			}
		if (v && (!best_v || fatelf_pkg_version_compare(v->version, best_v->version) > 0)) {
			fatelf_repo_index_free(best_ix);
			best_ix = ix;
			best_v = v;
		} else {
			fatelf_repo_index_free(ix);
		}
	}
	repo_conf_list_free(confs, nconfs);
	if (!best_v)
		return -ENOENT;
	k = asprintf(ret_spec, "%s=%s", dep->name, best_v->version) < 0 ? -ENOMEM : 0;
	if (k == 0) {
		k = repo_depends_copy(best_v, ret_deps, ret_ndeps);
		if (k < 0)
			free(*ret_spec);
	}
	fatelf_repo_index_free(best_ix);
	return k;
}

/* Replies and Update */

json_object *json_repository(const struct repo_conf *r, const fatelf_repo_index *ix)
{
	json_object *o = json_object_new_object(), *urls = json_object_new_array();
	char id[17];

	for (size_t i = 0; i < r->nurls; i++)
	{
		/* RepoList is open to every user: a URL's password stays in
		 * the root-only config */
		char *shown = fatelf_text_url_redact(r->urls[i]);

		json_object_array_add(urls, json_object_new_string(shown ? shown : ""));
		free(shown);
	}
	fatelf_ms_keyid_format(r->key.keyid, id);
	json_set_str(o, "name", r->name);
	json_object_object_add(o, "urls", urls);
	json_set_str(o, "key_id", id);
	if (ix) {
		json_set_int(o, "serial", (int64_t)ix->serial);
		json_set_int(o, "created", ix->created);
		if (ix->expires)
			json_set_int(o, "expires", ix->expires);
		json_set_int(o, "packages", (int64_t)ix->npackages);
	}
	if (r->id[0])
		json_set_str(o, "id", r->id);
	else if (ix && ix->repository[0])
		json_set_str(o, "id", ix->repository);
	return o;
}

