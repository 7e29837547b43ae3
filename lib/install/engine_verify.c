/*
 * Checking installed files against the store: the engine_verify
 * operation. Each file of a package (or of every package) must exist with
 * its type, symlink target, mode and content as installed; a fat file
 * that was thinned must still hold the vendor's bytes in every record it
 * kept, which the record hashes of the signed manifest prove even though
 * the file as a whole was never shipped. Configuration files are not
 * checked for content: the admin may change them. Verify only reads, so it
 * runs on a read-only engine while a transaction runs on another.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "engine_private.h"
#include "hashq.h"
#include "macro.h"

#define READ_CHUNK (256u * 1024)

const char *engine_problem_name(int problem)
{
	switch (problem) {
	case ENGINE_PROBLEM_MISSING:
		return "missing";
	case ENGINE_PROBLEM_TYPE:
		return "type";
	case ENGINE_PROBLEM_MODE:
		return "mode";
	case ENGINE_PROBLEM_CONTENT:
		return "content";
	case ENGINE_PROBLEM_RECORD:
		return "record";
	case ENGINE_PROBLEM_OWNER:
		return "owner";
	}
	return "unknown";
}

/* A file row, the columns verify needs. */
struct vfile {
	char *path;
	const char *package;    /* points into the package table */
	int64_t package_id;
	bool symlink;
	uint32_t mode;
	char *link_target;
	bool config;
	bool thinned;           /* a fat file installed thinned */
	uint64_t installed_size;
	char installed_sha256[65];
};

struct verify {
	engine *e;
	engine_problem_cb cb;
	void *userdata;
	uint64_t problems;
	struct vfile *files;
	size_t nfiles, cap;
	store_package *pkgs;
	size_t npkgs;
	store_dir *dirs;
	size_t ndirs;
	fatelf_hashq *q;
	uint8_t *buf;
};

static void verify_done(struct verify *v)
{
	for (size_t i = 0; i < v->nfiles; i++) {
		free(v->files[i].path);
		free(v->files[i].link_target);
	}
	free(v->files);
	store_packages_free(v->pkgs, v->npkgs);
	store_dirs_free(v->dirs, v->ndirs);
	fatelf_hashq_free(v->q);
	free(v->buf);
}

static int collect_file(const store_file *f, void *userdata)
{
	struct verify *v = userdata;

	if (GROW_ARRAY(v->files, v->cap, v->nfiles + 1) < 0)
		return -ENOMEM;
	struct vfile *x = &v->files[v->nfiles];
	*x = (struct vfile) {
		.package_id = f->package_id,
		.symlink = f->type == STORE_FILE_SYMLINK,
		.mode = f->mode,
		.config = f->config != 0,
		.thinned = f->kind == STORE_KIND_FATELF && f->installed_form == STORE_FORM_THINNED,
		.installed_size = f->installed_size,
	};
	snprintf(x->installed_sha256, sizeof(x->installed_sha256), "%s",
		 f->installed_sha256 ? f->installed_sha256 : "");
	x->path = strdup(f->path);
	if (f->link_target)
		x->link_target = strdup(f->link_target);
	if (!x->path || (f->link_target && !x->link_target)) {
		free(x->path);
		free(x->link_target);
		return -ENOMEM;
	}
	v->nfiles++;
	return 0;
}

static const char *package_name(const struct verify *v, int64_t id)
{
	for (size_t i = 0; i < v->npkgs; i++)
		if (v->pkgs[i].id == id)
			return v->pkgs[i].name;
	return "";
}

static int problem(struct verify *v, const struct vfile *f, int kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int problem(struct verify *v, const struct vfile *f, int kind, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	v->problems++;
	if (!v->cb)
		return 0;
	return v->cb(f->package, f->path, kind, detail, v->userdata);
}

static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISLNK(m))
		return "a symlink";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "a device";
}

static int check_symlink(struct verify *v, const struct vfile *f, fatelf_diag *d)
{
	_cleanup_close_ int dfd = -1;
	char target[4096];
	const char *base;
	ssize_t n;

	dfd = eng_open_parent(v->e, f->path, &base, d);
	if (dfd < 0)
		return dfd;
	n = readlinkat(dfd, base, target, sizeof(target) - 1);
	if (n < 0) {
		int r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot read the symlink: %s", fatelf_strerror(r));
	}
	target[n] = '\0';
	if (strcmp(target, f->link_target ? f->link_target : "") != 0)
		return problem(v, f, ENGINE_PROBLEM_TYPE, "expected a symlink to %s, found one to %s",
			       f->link_target ? f->link_target : "", target);
	return 0;
}

/* The vendor's records of a thinned file (from the store). */
struct vrec {
	unsigned idx;
	fatelf_target target;
	char sha256[65];
	bool kept;
	bool seen;              /* in the installed file */
};

struct vrecs {
	struct vrec recs[FATELF_MAX_RECORDS];
	unsigned n;
};

static int collect_rec(const store_record *r, struct vrecs *a)
{
	if (a->n == FATELF_MAX_RECORDS)
		return -FATELF_E_TOO_MANY;
	struct vrec *x = &a->recs[a->n++];
	*x = (struct vrec) {
		.idx = r->idx,
		.target = r->target,
		.kept = r->kept != 0,
	};
	snprintf(x->sha256, sizeof(x->sha256), "%s", r->sha256 ? r->sha256 : "");
	return 0;
}

/*
 * The byte ranges of a thinned file's records and the vendor's record each
 * is. An ELF is its one kept record, whole; a FatELF holds its records
 * where its own table says. Returns the number of ranges; *ret_parsed is
 * false (and the problem reported) when the file is neither.
 */
static int thinned_ranges(struct verify *v, const struct vfile *f, int fd, struct vrecs *vr,
			  fatelf_hash_range *ranges, struct vrec **which, bool *ret_parsed,
			  fatelf_diag *d)
{
	_cleanup_free_ fatelf_header *hdr = NULL;
	fatelf_reader src;
	uint8_t magic[4];
	fatelf_diag vd;
	int r;

	*ret_parsed = false;
	r = fatelf_reader_seekable_fd(&src, fd);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot read the file: %s", fatelf_strerror(r));
	if (src.size >= sizeof(magic)) {
		r = fatelf_reader_read_at(&src, magic, sizeof(magic), 0);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "cannot read the file: %s",
					       fatelf_strerror(r));
		if (fatelf_is_elf(magic, sizeof(magic))) {
			struct vrec *kept = NULL;
			unsigned nkept = 0;

			for (unsigned j = 0; j < vr->n; j++)
				if (vr->recs[j].kept) {
					kept = &vr->recs[j];
					nkept++;
				}
			if (nkept != 1) {
				r = problem(v, f, ENGINE_PROBLEM_RECORD,
					    "a plain ELF, but the store keeps %u records", nkept);
				return MIN(r, 0);
			}
			*ret_parsed = true;
			kept->seen = true;
			ranges[0] = (fatelf_hash_range) { 0, src.size };
			which[0] = kept;
			return 1;
		}
	}

	hdr = malloc(sizeof(*hdr));
	if (!hdr)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	fatelf_diag_clear(&vd);
	r = fatelf_validate(&src, NULL, hdr, NULL, &vd);
	if (r < 0) {
		r = problem(v, f, ENGINE_PROBLEM_RECORD, "not a valid FatELF or ELF: %s", vd.msg);
		return MIN(r, 0);
	}
	*ret_parsed = true;

	/* hashq wants the ranges in file order. */
	uint8_t order[FATELF_MAX_RECORDS];
	unsigned n = hdr->nrecords;
	for (unsigned i = 0; i < n; i++)
		order[i] = (uint8_t)i;
	for (unsigned i = 1; i < n; i++)
		for (unsigned k = i; k > 0 && hdr->records[order[k - 1]].offset >
					      hdr->records[order[k]].offset; k--) {
			uint8_t t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	unsigned nr = 0;
	for (unsigned k = 0; k < n; k++) {
		const fatelf_record *rec = &hdr->records[order[k]];
		char name[FATELF_TARGET_NAME_MAX];
		struct vrec *x = NULL;

		for (unsigned j = 0; j < vr->n; j++)
			if (fatelf_target_equal(&vr->recs[j].target, &rec->target))
				x = &vr->recs[j];
		if (!x || !x->kept) {
			fatelf_target_format(&rec->target, name);
			r = problem(v, f, ENGINE_PROBLEM_RECORD,
				    x ? "record %s is not kept in the store"
				      : "record %s is not one the vendor shipped", name);
			if (r < 0)
				return r;
			continue;
		}
		x->seen = true;
		ranges[nr] = (fatelf_hash_range) { rec->offset, rec->size };
		which[nr++] = x;
	}
	return (int)nr;
}

/* Hashes the whole file and the given ranges in one pass. */
static int hash_fd(struct verify *v, int fd, const fatelf_hash_range *ranges, unsigned n,
		   fatelf_hash_result *res, uint64_t *ret_size, fatelf_diag *d)
{
	uint64_t pos = 0;
	int r = 0;

	r = fatelf_hashq_begin(v->q, ranges, n);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot hash: %s", fatelf_strerror(r));
	for (;;) {
		ssize_t got = pread(fd, v->buf, READ_CHUNK, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			break;
		}
		if (got == 0)
			break;
		fatelf_hashq_feed(v->q, v->buf, (size_t)got);
		pos += (uint64_t)got;
	}
	fatelf_hashq_end(v->q);
	fatelf_hashq_collect(v->q, true, res);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot read the file: %s", fatelf_strerror(r));
	*ret_size = pos;
	return 0;
}

static int check_content(struct verify *v, const struct vfile *f, fatelf_diag *d)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	fatelf_hash_range ranges[FATELF_MAX_RECORDS];
	struct vrec *which[FATELF_MAX_RECORDS];
	_cleanup_free_ struct vrecs *vr = NULL;
	fatelf_hash_result res;
	const char *base;
	struct stat st;
	uint64_t size = 0;
	bool parsed = false;
	char hex[65];
	int nr = 0, r;

	dfd = eng_open_parent(v->e, f->path, &base, d);
	if (dfd == -ENOENT || dfd == -ENOTDIR)
		return problem(v, f, ENGINE_PROBLEM_MISSING, "no such file");
	if (dfd == -ELOOP)
		return problem(v, f, ENGINE_PROBLEM_TYPE, "a directory on its path is a symlink");
	if (dfd < 0)
		return dfd;
	/* The path was a regular file when it was looked at, but anyone who
	 * can write in its directory may have swapped in a FIFO since, whose
	 * open would wait for a writer forever: never block, and judge what
	 * was opened. */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT)
			return problem(v, f, ENGINE_PROBLEM_MISSING, "no such file");
		if (r == -ELOOP)
			return problem(v, f, ENGINE_PROBLEM_TYPE, "expected a regular file, found a symlink");
		return fatelf_diag_set(d, r, -1, "cannot open the file: %s", fatelf_strerror(r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot stat the file: %s", fatelf_strerror(r));
	}
	if (!S_ISREG(st.st_mode))
		return problem(v, f, ENGINE_PROBLEM_TYPE, "expected a regular file, found %s",
			       type_name(st.st_mode));
	if (f->thinned) {
		vr = calloc(1, sizeof(*vr));
		if (!vr)
			return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
		store_record *recs = NULL;
		size_t nrecs = 0;

		r = store_records_of(v->e->st, f->path, &recs, &nrecs, d);
		for (size_t i = 0; i < nrecs && r >= 0; i++)
			r = collect_rec(&recs[i], vr);
		store_records_free(recs, nrecs);
		if (r < 0)
			return r;
		nr = thinned_ranges(v, f, fd, vr, ranges, which, &parsed, d);
		if (nr < 0)
			return nr;
	}
	r = hash_fd(v, fd, ranges, (unsigned)nr, &res, &size, d);
	if (r < 0)
		return r;

	fatelf_hex(res.file, 32, hex);
	if (size != f->installed_size)
		r = problem(v, f, ENGINE_PROBLEM_CONTENT, "expected %llu bytes, found %llu",
			    (unsigned long long)f->installed_size, (unsigned long long)size);
	else if (strcmp(hex, f->installed_sha256) != 0)
		r = problem(v, f, ENGINE_PROBLEM_CONTENT, "sha256 differs");
	if (r < 0)
		return r;

	for (int k = 0; k < nr; k++) {
		char name[FATELF_TARGET_NAME_MAX];

		fatelf_hex(res.ranges[k], 32, hex);
		if (strcmp(hex, which[k]->sha256) == 0)
			continue;
		fatelf_target_format(&which[k]->target, name);
		r = problem(v, f, ENGINE_PROBLEM_RECORD, "record %s differs from the vendor's", name);
		if (r < 0)
			return r;
	}
	if (parsed) {
		for (unsigned j = 0; j < vr->n; j++) {
			char name[FATELF_TARGET_NAME_MAX];

			if (!vr->recs[j].kept || vr->recs[j].seen)
				continue;
			fatelf_target_format(&vr->recs[j].target, name);
			r = problem(v, f, ENGINE_PROBLEM_RECORD, "record %s is missing", name);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int verify_file(struct verify *v, const struct vfile *f, fatelf_diag *d)
{
	struct stat st;
	int r;

	r = eng_lstat(v->e, f->path, &st, d);
	if (r == -ENOENT || r == -ENOTDIR)
		return problem(v, f, ENGINE_PROBLEM_MISSING, "no such file");
	if (r == -ELOOP)
		return problem(v, f, ENGINE_PROBLEM_TYPE, "a directory on its path is a symlink");
	if (r < 0)
		return r;

	if (f->symlink) {
		if (!S_ISLNK(st.st_mode))
			return problem(v, f, ENGINE_PROBLEM_TYPE, "expected a symlink, found %s",
				       type_name(st.st_mode));
		return check_symlink(v, f, d);
	}
	if (!S_ISREG(st.st_mode))
		return problem(v, f, ENGINE_PROBLEM_TYPE, "expected a regular file, found %s",
			       type_name(st.st_mode));
	if ((st.st_mode & 07777) != f->mode) {
		r = problem(v, f, ENGINE_PROBLEM_MODE, "expected mode %04o, found %04o", f->mode,
			    (unsigned)(st.st_mode & 07777));
		if (r < 0)
			return r;
	}
	/* The admin owns a config file's content once it is installed. */
	if (f->config)
		return 0;
	return check_content(v, f, d);
}

/*
 * A directory of a package: still a directory, still root's (whoever owns
 * it may replace what is installed in it), and as open as it was.
 */
static int verify_dir(struct verify *v, const store_dir *dir, const char *package,
		      fatelf_diag *d)
{
	const struct vfile f = { .path = (char *)dir->path, .package = package };
	struct stat st;
	int r;

	r = eng_lstat(v->e, dir->path, &st, d);
	if (r == -ENOENT || r == -ENOTDIR)
		return problem(v, &f, ENGINE_PROBLEM_MISSING, "no such directory");
	if (r == -ELOOP)
		return problem(v, &f, ENGINE_PROBLEM_TYPE, "a directory on its path is a symlink");
	if (r < 0)
		return r;
	if (!S_ISDIR(st.st_mode))
		return problem(v, &f, ENGINE_PROBLEM_TYPE, "expected a directory, found %s",
			       type_name(st.st_mode));
	if (st.st_uid != geteuid()) {
		r = problem(v, &f, ENGINE_PROBLEM_OWNER, "expected owner uid %u, found uid %u",
			    (unsigned)geteuid(), (unsigned)st.st_uid);
		if (r < 0)
			return r;
	}
	if (dir->mode >= 0 && (int)(st.st_mode & 07777) != dir->mode)
		return problem(v, &f, ENGINE_PROBLEM_MODE, "expected mode %04o, found %04o",
			       (unsigned)dir->mode, (unsigned)(st.st_mode & 07777));
	return 0;
}

int engine_verify(engine *e, const char *package, engine_problem_cb cb, void *userdata,
		  uint64_t *ret_problems, fatelf_diag *d)
{
	struct verify v = { .e = e, .cb = cb, .userdata = userdata };
	int r;

	if (package) {
		store_package pk = { 0 };
		store_file *files = NULL;
		size_t n = 0;

		r = store_files_of(e->st, package, &files, &n, d);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = collect_file(&files[i], &v);
		store_files_free(files, n);
		if (r >= 0)
			r = store_package_get(e->st, package, &pk, d);
		if (r >= 0) {
			r = store_dirs_with_modes(e->st, pk.id, &v.dirs, &v.ndirs, d);
			store_package_done(&pk);
		}
		if (r == -ENOENT) {
			FATELF_DIAG_FACT(d, package, package);
			r = fatelf_diag_set(d, -ENGINE_E_NOT_INSTALLED, -1,
					    "package %s is not installed", package);
			if (d)
				snprintf(d->subject, sizeof(d->subject), "%s", package);
		}
	} else {
		r = store_package_list(e->st, &v.pkgs, &v.npkgs, d);
		if (r >= 0)
			r = store_files_all(e->st, collect_file, &v, d);
		if (r >= 0)
			r = store_dirs_with_modes(e->st, 0, &v.dirs, &v.ndirs, d);
	}
	if (r == -ENOMEM)
		r = fatelf_diag_set(d, r, -1, "out of memory");
	if (r < 0)
		goto out;

	v.buf = malloc(READ_CHUNK);
	if (!v.buf) {
		r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
		goto out;
	}
	r = fatelf_hashq_new(&v.q);
	if (r < 0) {
		r = fatelf_diag_set(d, r, -1, "cannot start hashing: %s", fatelf_strerror(r));
		goto out;
	}
	for (size_t i = 0; i < v.nfiles; i++) {
		struct vfile *f = &v.files[i];

		f->package = package ? package : package_name(&v, f->package_id);
		r = verify_file(&v, f, d);
		if (r < 0) {
			if (d)
				snprintf(d->subject, sizeof(d->subject), "%s", f->path);
			goto out;
		}
	}
	for (size_t i = 0; i < v.ndirs; i++) {
		const store_dir *dir = &v.dirs[i];

		r = verify_dir(&v, dir, package ? package : package_name(&v, dir->package_id), d);
		if (r < 0) {
			if (d)
				snprintf(d->subject, sizeof(d->subject), "%s", dir->path);
			goto out;
		}
	}
	if (ret_problems)
		*ret_problems = v.problems;
	r = (int)MIN(v.nfiles, (size_t)INT32_MAX);
out:
	verify_done(&v);
	return r;
}
