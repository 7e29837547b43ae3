/*
 * Unpacking a bundle into a directory, optionally thinned to one target:
 * a thin install without the daemon, for building images. Every file is
 * staged under a hidden temp name beside its target and renamed into
 * place only after the whole bundle checked out; a failed extract leaves
 * no file of the bundle behind.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "atomic.h"
#include "bundle.h"
#include "io.h"
#include "macro.h"

struct staged {
	int dirfd;
	char *tmp;
	char *base;
};

struct extract {
	int rootfd;
	/* how FatELF entries are thinned */
	enum { KEEP_ALL, KEEP_HOST, KEEP_PATTERN } how;
	fatelf_host host;
	const char *target;
	/* the file being written */
	int fd;
	int dirfd;
	char tmp[FATELF_TEMP_NAME_MAX];
	const char *base;
	/* files waiting for the final rename */
	struct staged *staged;
	size_t nstaged, cap;
	/* directories this extract created (tmp unused), removed again when
	 * it fails, so that a failed extract leaves nothing of the bundle */
	struct staged *made;
	size_t nmade, made_cap;
};

static int list_add(struct staged **list, size_t *n, size_t *cap, int dirfd, const char *tmp,
		    const char *base)
{
	if (GROW_ARRAY(*list, *cap, *n + 1) < 0)
		return -ENOMEM;
	struct staged *s = &(*list)[*n];
	s->dirfd = dup(dirfd);
	s->tmp = tmp ? strdup(tmp) : NULL;
	s->base = strdup(base);
	if (s->dirfd < 0 || (tmp && !s->tmp) || !s->base) {
		if (s->dirfd >= 0)
			close(s->dirfd);
		free(s->tmp);
		free(s->base);
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

static int stage_add(struct extract *x, int dirfd, const char *tmp, const char *base)
{
	return list_add(&x->staged, &x->nstaged, &x->cap, dirfd, tmp, base);
}

/* --target named a machine: the rule is that machine's, not this host's. */
static int no_record_for(const struct extract *x, const fatelf_header *hdr, fatelf_diag *d)
{
	char offers[512], name[FATELF_TARGET_NAME_MAX];
	size_t len = 0;

	offers[0] = '\0';
	for (unsigned i = 0; i < hdr->nrecords && len < sizeof(offers); i++) {
		int n;

		fatelf_target_format(&hdr->records[i].target, name);
		n = snprintf(offers + len, sizeof(offers) - len, "%s%s", i ? ", " : "", name);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1,
			       "no record runs on a %s machine; the file offers: %s", x->target,
			       hdr->nrecords ? offers : "nothing");
}

static int ex_select(void *ctx, const fatelf_bundle_entry *e, const fatelf_header *hdr,
		     fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d)
{
	struct extract *x = ctx;
	int idx;

	switch (x->how) {
	case KEEP_ALL:
		return 0;
	case KEEP_HOST:
		idx = fatelf_host_select(&x->host, hdr, d);
		if (idx == -FATELF_E_NO_HOST_RECORD && x->target)
			return no_record_for(x, hdr, d);
		if (idx < 0)
			return idx;
		fatelf_keep_add(ret_keep, (unsigned)idx);
		*ret_form = FATELF_FORM_ELF;
		return 0;
	case KEEP_PATTERN: {
		int q = fatelf_keep_from_names(hdr, &x->target, 1, ret_keep, d);
		*ret_form = FATELF_FORM_AUTO;
		return q < 0 ? q : 0;
	}
	}
	return 0;
}

static int ex_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct extract *x = ctx;
	int dirfd, q;

	dirfd = fatelf_root_open_parent(x->rootfd, e->path, true, &x->base, d);
	if (dirfd < 0)
		return dirfd;
	if (e->type == FATELF_ENTRY_DIR) {
		struct stat st;
		bool made = false;
		if (mkdirat(dirfd, x->base, 0700) == 0) {
			made = true;
			q = list_add(&x->made, &x->nmade, &x->made_cap, dirfd, NULL, x->base);
			if (q < 0) {
				unlinkat(dirfd, x->base, AT_REMOVEDIR);
				close(dirfd);
				return q;
			}
		} else if (errno != EEXIST) {
			q = -errno;
			close(dirfd);
			return fatelf_diag_set(d, q, -1, "entry '%s': cannot create the directory: %s",
					       e->path, fatelf_strerror(q));
		}
		int fd = openat(dirfd, x->base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		q = fd < 0 ? -errno : 0;
		if (fd >= 0 && fstat(fd, &st) < 0)
			q = -errno;
		/* Whoever owns a directory may swap the files put in it: one of
		 * another uid (a user's, where a root extract would otherwise
		 * adopt it) is refused, and so is a directory moved in for the
		 * one just made (it is not empty, or not ours). */
		if (q == 0 && (st.st_uid != geteuid() || (made && !fatelf_dir_is_empty(fd)))) {
			close(fd);
			close(dirfd);
			if (made)
				return fatelf_diag_set(d, -EPERM, -1,
						       "entry '%s': the new directory was replaced "
						       "before its mode was set", e->path);
			return fatelf_diag_set(d, -EPERM, -1,
					       "entry '%s': the directory exists, owned by uid %u with "
					       "mode %04o; refusing to put files in it",
					       e->path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		}
		if (q == 0 && fchmod(fd, e->mode & 07777) < 0)
			q = -errno;
		if (fd >= 0)
			close(fd);
		close(dirfd);
		if (q < 0)
			return fatelf_diag_set(d, q, -1, "entry '%s': %s", e->path,
					       q == -ELOOP || q == -ENOTDIR
						       ? "exists and is not a directory"
						       : fatelf_strerror(q));
		return 0;
	}
	if (e->type == FATELF_ENTRY_SYMLINK) {
		q = fatelf_temp_name(x->base, x->tmp);
		if (q == 0 && symlinkat(e->link_target, dirfd, x->tmp) < 0)
			q = -errno;
	} else {
		fatelf_tmpfile t;

		q = fatelf_tmpfile_open(dirfd, x->base, 0600, &t);
		if (q == 0) {
			x->fd = t.fd;
			memcpy(x->tmp, t.name, sizeof(t.name));
		}
	}
	if (q < 0) {
		close(dirfd);
		return fatelf_diag_set(d, q, -1, "entry '%s': cannot create it: %s", e->path,
				       fatelf_strerror(q));
	}
	x->dirfd = dirfd;
	return 0;
}

static int ex_data(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len)
{
	struct extract *x = ctx;

	return write_all(x->fd, buf, len);
}

static int ex_end(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d)
{
	struct extract *x = ctx;
	int q = 0;

	if (e->type == FATELF_ENTRY_DIR)
		return 0;
	if (x->fd >= 0) {
		if (status == 0 && fchmod(x->fd, e->mode & (e->setid ? 07777 : 01777)) < 0)
			q = -errno;
		if (close(x->fd) < 0 && q == 0)
			q = -errno;
		x->fd = -1;
	}
	if (status == 0 && q == 0)
		q = stage_add(x, x->dirfd, x->tmp, x->base);
	if (status < 0 || q < 0)
		unlinkat(x->dirfd, x->tmp, 0);
	close(x->dirfd);
	x->dirfd = -1;
	if (q < 0 && status == 0)
		return fatelf_diag_set(d, q, -1, "entry '%s': cannot write it: %s", e->path,
				       fatelf_strerror(q));
	return 0;
}

int fatelf_bundle_extract(int bundle_fd, const char *dir, const char *target,
			  const fatelf_bundle_read_opts *o, fatelf_diag *d)
{
	struct extract x = { .rootfd = -1, .fd = -1, .dirfd = -1 };
	fatelf_bundle_reader_ops ops = {
		.select = ex_select,
		.begin = ex_begin,
		.data = ex_data,
		.end = ex_end,
		.ctx = &x,
	};
	fatelf_pattern pat;
	bool made_dir = false;
	int q;

	fatelf_diag_clear(d);
	if (target && strcmp(target, "host") == 0) {
		q = fatelf_host_detect(&x.host);
		if (q < 0)
			return fatelf_diag_set(d, q, -1, "cannot tell this host's targets");
		x.how = KEEP_HOST;
	} else if (target && fatelf_host_from_uname(target, FATELF_HOST_ARM32, &x.host) == 0) {
		/* An architecture name: keep what that machine's kernel would run. */
		x.how = KEEP_HOST;
		x.target = target;
	} else if (target) {
		q = fatelf_pattern_parse(target, &pat, d);
		if (q < 0)
			return q;
		x.how = KEEP_PATTERN;
		x.target = target;
	}

	if (mkdir(dir, 0755) == 0) {
		made_dir = true;
	} else if (errno != EEXIST) {
		q = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", dir);
		return fatelf_diag_set(d, q, -1, "cannot create the directory: %s", fatelf_strerror(q));
	}
	x.rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.rootfd < 0) {
		q = -errno;
		if (made_dir)
			rmdir(dir);
		snprintf(d->subject, sizeof(d->subject), "%s", dir);
		return fatelf_diag_set(d, q, -1, "cannot open the directory: %s", fatelf_strerror(q));
	}

	q = fatelf_bundle_read_fd(bundle_fd, o, &ops, d);
	for (size_t i = 0; i < x.nstaged; i++) {
		struct staged *s = &x.staged[i];
		if (q == 0 && renameat(s->dirfd, s->tmp, s->dirfd, s->base) < 0) {
			q = -errno;
			fatelf_diag_set(d, q, -1, "cannot rename '%s' into place: %s", s->base,
					fatelf_strerror(q));
		}
		if (q < 0)
			unlinkat(s->dirfd, s->tmp, 0);
		close(s->dirfd);
		free(s->tmp);
		free(s->base);
	}
	free(x.staged);
	if (x.fd >= 0)
		close(x.fd);
	if (x.dirfd >= 0) {
		unlinkat(x.dirfd, x.tmp, 0);
		close(x.dirfd);
	}
	/* Children before parents; a directory someone else filled stays. */
	for (size_t i = x.nmade; i-- > 0;) {
		struct staged *s = &x.made[i];
		if (q < 0)
			unlinkat(s->dirfd, s->base, AT_REMOVEDIR);
		close(s->dirfd);
		free(s->base);
	}
	free(x.made);
	close(x.rootfd);
	if (q < 0 && made_dir)
		rmdir(dir);
	return q;
}
