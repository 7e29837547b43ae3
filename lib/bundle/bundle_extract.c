/*
 * Unpacking a bundle into a directory, optionally thinned to one target:
 * a thin install without the daemon, for building images. Files are
 * staged as an install stages them (lib/bundle/stage.h: a hidden temp
 * name beside the target, in the namespace no entry may use) and renamed
 * into place only after the whole bundle checked out; a failed extract
 * leaves no file of the bundle behind. --target picks records with the
 * install policies' rules (fatelf_choose): "host" and a uname -m name are
 * the native rule for that machine, any other name the targets rule.
 * The same rule picks, once, which of the bundle's per-arch targets are
 * extracted (fatelf_manifest_per_arch_header): a per-arch entry is when
 * one of its targets is. Without --target every per-arch entry with a
 * path of its own is, and where several share a path, this host's.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "bundle.h"
#include "io.h"
#include "macro.h"
#include "stage.h"

struct staged {
	int dirfd;
	char *tmp;
	char *base;
};

struct extract {
	int rootfd;
	/* how FatELF entries are thinned (rule KEEP: not at all) */
	fatelf_choice choice;
	fatelf_host host;
	const char *target;
	/* per-arch entries: the targets the rule keeps; without a rule, the
	 * one this host runs best, for the paths several entries share */
	const fatelf_manifest *m;
	const fatelf_host *pa_host;
	fatelf_header pa_hdr;
	fatelf_keepset pa_keep;
	bool *wanted;                   /* per entry of m */
	bool skipping;
	/* the file being written */
	int fd;
	int dirfd;
	char tmp[FATELF_STAGE_NAME_MAX];
	const char *base;
	size_t seq;                     /* of the next temp name */
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

/* A bundle that ships a file in the temps' namespace is refused before
 * anything is made, as an install refuses it. */
static int ex_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
		       fatelf_diag *d)
{
	struct extract *x = ctx;
	fatelf_host host;
	int form, q;

	x->m = m;
	if (x->choice.rule == FATELF_CHOOSE_KEEP)
		x->pa_host = fatelf_host_detect(&host) == 0 ? &host : NULL;
	q = fatelf_manifest_per_arch_header(m, x->choice.rule == FATELF_CHOOSE_KEEP ? x->pa_host : x->choice.host,
					    &x->pa_hdr, d);
	if (q < 0)
		return q;
	fatelf_keep_clear(&x->pa_keep);
	if (x->pa_hdr.nrecords > 0 && x->choice.rule == FATELF_CHOOSE_KEEP) {
		/* Every per-arch entry; where several share a path, the one
		 * this host runs best (the first of pa_hdr's order). */
		for (unsigned i = 0; i < x->pa_hdr.nrecords; i++)
			fatelf_keep_add(&x->pa_keep, i);
	} else if (x->pa_hdr.nrecords > 0) {
		fatelf_diag tmp;

		/* No per-arch target the rule takes: no per-arch entry. */
		fatelf_diag_clear(&tmp);
		q = fatelf_choose(&x->choice, &x->pa_hdr, &x->pa_keep, &form, &tmp);
		if (q == -ENOMEM)
			return fatelf_diag_oom(d);
		if (q < 0)
			fatelf_keep_clear(&x->pa_keep);
	}
	x->wanted = calloc(m->nentries ? m->nentries : 1, sizeof(*x->wanted));
	if (!x->wanted)
		return fatelf_diag_oom(d);
	q = fatelf_manifest_select(m, &x->pa_hdr, &x->pa_keep, x->wanted);
	if (q < 0)
		return fatelf_diag_oom(d);
	/* The manifest's reader refuses these already (pkgrules.c's path
	 * rule); this is the stager's own guard, with the same code. */
	for (size_t i = 0; i < m->nentries; i++)
		if (fatelf_stage_reserved(m->entries[i].path))
			return fatelf_diag_set(d, -ENGINE_E_NAME_RESERVED, -1,
					       "entry '%s': names starting with \"" FATELF_STAGE_PREFIX
					       "\" are reserved for the installer's temp files",
					       m->entries[i].path);
	return 0;
}

static int ex_select(void *ctx, const fatelf_bundle_entry *e, const fatelf_header *hdr,
		     fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d)
{
	struct extract *x = ctx;
	int q = fatelf_choose(&x->choice, hdr, ret_keep, ret_form, d);

	return q < 0 ? q : 0;
}

/* Creates the entry's temp (a file, x->fd, or a symlink) in dirfd. */
static int stage_create(struct extract *x, const fatelf_bundle_entry *e, int dirfd)
{
	int q;

	for (int tries = 1;; tries++) {
		q = fatelf_stage_name((int64_t)getpid(), x->seq, x->tmp);
		if (q < 0)
			return q;
		if (e->type == FATELF_ENTRY_SYMLINK) {
			q = fatelf_stage_symlink(dirfd, x->tmp, e->link_target);
		} else {
			q = fatelf_stage_open(dirfd, x->tmp);
			if (q >= 0) {
				x->fd = q;
				q = 0;
			}
		}
		if (q != -EEXIST || tries == FATELF_STAGE_TRIES)
			break;
	}
	x->seq++;
	return q;
}

/* Whether per-arch entry e is extracted. */
static bool ex_wanted(const struct extract *x, const fatelf_bundle_entry *e)
{
	return x->wanted[e - x->m->entries];
}

static int ex_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct extract *x = ctx;
	int dirfd, q;

	x->skipping = !ex_wanted(x, e);
	if (x->skipping)
		return FATELF_BUNDLE_SKIP;

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
				return fatelf_diag_oom(d);
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
	q = stage_create(x, e, dirfd);
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

	if (x->skipping) {
		x->skipping = false;
		return 0;
	}
	if (e->type == FATELF_ENTRY_DIR)
		return 0;
	if (x->fd >= 0) {
		char what[sizeof(d->msg)];

		snprintf(what, sizeof(what), "entry '%s'", e->path);
		if (status == 0)
			/* setid bits only where the manifest says so */
			q = fatelf_stage_close(x->fd, e->mode & (e->setid ? 07777 : 01777), 0, what,
					       d);
		else
			close(x->fd);
		x->fd = -1;
		if (q < 0) {
			fatelf_stage_drop(x->dirfd, x->tmp);
			close(x->dirfd);
			x->dirfd = -1;
			return q;
		}
	}
	if (status == 0)
		q = stage_add(x, x->dirfd, x->tmp, x->base);
	if (status < 0 || q < 0)
		fatelf_stage_drop(x->dirfd, x->tmp);
	close(x->dirfd);
	x->dirfd = -1;
	if (q < 0 && status == 0)
		return fatelf_diag_set(d, q, -1, "entry '%s': cannot write it: %s", e->path,
				       fatelf_diag_text(NULL, q));
	return 0;
}

int fatelf_bundle_extract(int bundle_fd, const char *dir, const char *target,
			  const fatelf_bundle_read_opts *o, fatelf_diag *d)
{
	struct extract x = { .rootfd = -1, .fd = -1, .dirfd = -1 };
	fatelf_bundle_reader_ops ops = {
		.manifest = ex_manifest,
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
	x.target = target;
	x.choice.rule = FATELF_CHOOSE_KEEP;
	if (target && strcmp(target, "host") == 0) {
		q = fatelf_host_detect(&x.host);
		if (q < 0)
			return fatelf_diag_set(d, q, -1, "cannot tell this host's targets");
		x.choice = (fatelf_choice) { .rule = FATELF_CHOOSE_NATIVE, .host = &x.host };
	} else if (target && fatelf_host_from_uname(target, FATELF_HOST_ARM32, &x.host) == 0) {
		/* An architecture name: keep what that machine's kernel would run. */
		x.choice = (fatelf_choice) {
			.rule = FATELF_CHOOSE_NATIVE, .host = &x.host, .machine = target,
		};
	} else if (target) {
		/* Checked before anything is made. */
		q = fatelf_pattern_parse(target, &pat, d);
		if (q < 0)
			return q;
		x.choice = (fatelf_choice) {
			.rule = FATELF_CHOOSE_TARGETS, .targets = &x.target, .ntargets = 1,
		};
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
		if (q == 0) {
			q = fatelf_stage_commit(s->dirfd, s->tmp, s->base);
			if (q < 0)
				fatelf_diag_set(d, q, -1, "cannot rename '%s' into place: %s", s->base,
						fatelf_strerror(q));
		}
		if (q < 0)
			fatelf_stage_drop(s->dirfd, s->tmp);
		close(s->dirfd);
		free(s->tmp);
		free(s->base);
	}
	free(x.staged);
	free(x.wanted);
	if (x.fd >= 0)
		close(x.fd);
	if (x.dirfd >= 0) {
		fatelf_stage_drop(x.dirfd, x.tmp);
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
