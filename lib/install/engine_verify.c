/*
 * Checking installed files against the store: the engine_verify
 * operation. Each file of a package (or of every package) must exist with
 * its type, symlink target, mode and content as installed; a fat file
 * that was thinned must still hold the vendor's bytes in every record it
 * kept, which the record hashes of the signed manifest prove even though
 * the file as a whole was never shipped. Configuration files are not
 * checked for content: the admin may change them. Verify only reads, so it
 * runs on a read-only engine while a transaction runs on another.
 *
 * The rows come from the store in three queries (files, records of the
 * thinned ones, directories) before any file is read; then a few threads
 * (one per core, at most VERIFY_THREADS) take the files in chunks of the
 * path order. Each file is opened once, beneath the root without
 * following any symlink, and judged by what that descriptor is: fstat for
 * type and mode, its bytes for the hashes. Anything that open does not
 * make a plain regular file of (missing, a symlink, a FIFO, no access)
 * goes the careful way, component by component, which names the problem.
 * Problems are collected per thread and handed to the callback in path
 * order once every thread is done, so the report does not depend on the
 * threads' timing.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "array.h"
#include "engine_private.h"
#include "hashq.h"
#include "macro.h"

#define READ_CHUNK (256u * 1024)
#define VERIFY_THREADS 4        /* hashing threads of one verify, at most */
#define VERIFY_BATCH 64         /* files a thread takes at a time */
#define VERIFY_MIN_SPLIT 256    /* fewer files than this: one thread */

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

/* The vendor's records of a thinned file (from the store). */
struct vrec {
	unsigned idx;
	fatelf_target target;
	char sha256[65];
	bool kept;
	bool seen;              /* in the installed file */
};

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
	struct vrec *recs;      /* thinned: the vendor's records, by idx */
	unsigned nrecs;
	size_t caprecs;
};

/* One problem found by a thread, for the callback later. */
struct vproblem {
	size_t file;            /* index in verify.files */
	int kind;
	char *detail;
};

/* A hashing thread's own state. */
struct vworker {
	struct verify *v;
	pthread_t thread;
	bool started;
	uint8_t *buf;
	fatelf_sha256 *h;
	size_t cur;             /* the file being checked */
	struct vproblem *probs;
	size_t nprobs, cap;
	int r;                  /* the first failure, on file err_file */
	size_t err_file;
	fatelf_diag diag;
};

struct verify {
	engine *e;
	engine_problem_cb cb;
	void *userdata;
	uint64_t problems;
	struct vfile *files;
	size_t nfiles, cap;
	size_t rec_at;          /* where collect_record looks next */
	store_package *pkgs;
	size_t npkgs;
	store_dir *dirs;
	size_t ndirs;
	atomic_size_t next;     /* the next file no thread took */
	atomic_bool stop;       /* a thread failed */
	atomic_bool no_openat2;
};

static void verify_done(struct verify *v)
{
	for (size_t i = 0; i < v->nfiles; i++) {
		free(v->files[i].path);
		free(v->files[i].link_target);
		free(v->files[i].recs);
	}
	free(v->files);
	store_packages_free(v->pkgs, v->npkgs);
	store_dirs_free(v->dirs, v->ndirs);
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

/* Both the files and the records come by path (the store's one order), so
 * a record's file is found by walking forward. */
static int collect_record(const store_record *r, void *userdata)
{
	struct verify *v = userdata;
	struct vfile *f;

	while (v->rec_at < v->nfiles && strcmp(v->files[v->rec_at].path, r->path) < 0)
		v->rec_at++;
	if (v->rec_at == v->nfiles)
		return 0;
	f = &v->files[v->rec_at];
	if (!f->thinned || strcmp(f->path, r->path) != 0)
		return 0;
	if (f->nrecs == FATELF_MAX_RECORDS)
		return -FATELF_E_TOO_MANY;
	if (GROW_ARRAY(f->recs, f->caprecs, f->nrecs + 1) < 0)
		return -ENOMEM;
	struct vrec *x = &f->recs[f->nrecs++];
	*x = (struct vrec) {
		.idx = r->idx,
		.target = r->target,
		.kept = r->kept != 0,
	};
	snprintf(x->sha256, sizeof(x->sha256), "%s", r->sha256 ? r->sha256 : "");
	return 0;
}

static const char *package_name(const struct verify *v, int64_t id)
{
	for (size_t i = 0; i < v->npkgs; i++)
		if (v->pkgs[i].id == id)
			return v->pkgs[i].name;
	return "";
}

static int problem(struct verify *v, struct vworker *w, const struct vfile *f, int kind,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* On a thread (w), kept for later; else (directories) reported at once. */
static int problem(struct verify *v, struct vworker *w, const struct vfile *f, int kind,
		   const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (w) {
		if (GROW_ARRAY(w->probs, w->cap, w->nprobs + 1) < 0)
			return -ENOMEM;
		w->probs[w->nprobs] = (struct vproblem) { .file = w->cur, .kind = kind,
							  .detail = strdup(detail) };
		if (!w->probs[w->nprobs].detail)
			return -ENOMEM;
		w->nprobs++;
		return 0;
	}
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

static int check_symlink(struct verify *v, struct vworker *w, const struct vfile *f,
			 fatelf_diag *d)
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
		return problem(v, w, f, ENGINE_PROBLEM_TYPE, "expected a symlink to %s, found one to %s",
			       f->link_target ? f->link_target : "", target);
	return 0;
}

/*
 * The byte ranges of a thinned file's records and the vendor's record each
 * is. An ELF is its one kept record, whole; a FatELF holds its records
 * where its own table says. Returns the number of ranges; *ret_parsed is
 * false (and the problem reported) when the file is neither.
 */
static int thinned_ranges(struct verify *v, struct vworker *w, struct vfile *f, int fd,
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

			for (unsigned j = 0; j < f->nrecs; j++)
				if (f->recs[j].kept) {
					kept = &f->recs[j];
					nkept++;
				}
			if (nkept != 1) {
				r = problem(v, w, f, ENGINE_PROBLEM_RECORD,
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
		return fatelf_diag_oom(d);
	fatelf_diag_clear(&vd);
	r = fatelf_validate(&src, NULL, hdr, NULL, &vd);
	if (r < 0) {
		r = problem(v, w, f, ENGINE_PROBLEM_RECORD, "not a valid FatELF or ELF: %s", vd.msg);
		return MIN(r, 0);
	}
	*ret_parsed = true;

	/* In file order, as the records were hashed before. */
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

		for (unsigned j = 0; j < f->nrecs; j++)
			if (fatelf_target_equal(&f->recs[j].target, &rec->target))
				x = &f->recs[j];
		if (!x || !x->kept) {
			fatelf_target_format(&rec->target, name);
			r = problem(v, w, f, ENGINE_PROBLEM_RECORD,
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

static int read_hash(struct vworker *w, int fd, uint64_t off, uint64_t len, uint64_t *ret_got)
{
	uint64_t got = 0;

	while (got < len) {
		size_t want = (size_t)MIN(len - got, (uint64_t)READ_CHUNK);
		ssize_t n = pread(fd, w->buf, want, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		fatelf_sha256_update(w->h, w->buf, (size_t)n);
		got += (uint64_t)n;
	}
	*ret_got = got;
	return 0;
}

/* SHA-256 of the whole file, to its end, and of the given ranges (zeros
 * for a range that is not inside the file). */
static int hash_fd(struct vworker *w, int fd, const fatelf_hash_range *ranges, unsigned n,
		   fatelf_hash_result *res, uint64_t *ret_size, fatelf_diag *d)
{
	uint64_t size = 0, got;
	int r;

	r = read_hash(w, fd, 0, UINT64_MAX, &size);
	fatelf_sha256_final(w->h, res->file);
	res->nranges = n;
	for (unsigned k = 0; k < n && r >= 0; k++) {
		memset(res->ranges[k], 0, 32);
		if (ranges[k].offset > size || ranges[k].size > size - ranges[k].offset)
			continue;
		r = read_hash(w, fd, ranges[k].offset, ranges[k].size, &got);
		fatelf_sha256_final(w->h, res->ranges[k]);
		if (r >= 0 && got != ranges[k].size)
			memset(res->ranges[k], 0, 32);
	}
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot read the file: %s", fatelf_strerror(r));
	*ret_size = size;
	return 0;
}

/* The content of the regular file open on fd: size and hash, and for a
 * thinned one each record it kept. */
static int check_content_fd(struct verify *v, struct vworker *w, struct vfile *f, int fd,
			    fatelf_diag *d)
{
	fatelf_hash_range ranges[FATELF_MAX_RECORDS];
	struct vrec *which[FATELF_MAX_RECORDS];
	fatelf_hash_result res;
	uint64_t size = 0;
	bool parsed = false;
	char hex[65];
	int nr = 0, r;

	if (f->thinned) {
		for (unsigned j = 0; j < f->nrecs; j++)
			f->recs[j].seen = false;
		nr = thinned_ranges(v, w, f, fd, ranges, which, &parsed, d);
		if (nr < 0)
			return nr;
	}
	r = hash_fd(w, fd, ranges, (unsigned)nr, &res, &size, d);
	if (r < 0)
		return r;

	fatelf_hex(res.file, 32, hex);
	if (size != f->installed_size)
		r = problem(v, w, f, ENGINE_PROBLEM_CONTENT, "expected %llu bytes, found %llu",
			    (unsigned long long)f->installed_size, (unsigned long long)size);
	else if (strcmp(hex, f->installed_sha256) != 0)
		r = problem(v, w, f, ENGINE_PROBLEM_CONTENT, "sha256 differs");
	if (r < 0)
		return r;

	for (int k = 0; k < nr; k++) {
		char name[FATELF_TARGET_NAME_MAX];

		fatelf_hex(res.ranges[k], 32, hex);
		if (strcmp(hex, which[k]->sha256) == 0)
			continue;
		fatelf_target_format(&which[k]->target, name);
		r = problem(v, w, f, ENGINE_PROBLEM_RECORD, "record %s differs from the vendor's", name);
		if (r < 0)
			return r;
	}
	if (parsed) {
		for (unsigned j = 0; j < f->nrecs; j++) {
			char name[FATELF_TARGET_NAME_MAX];

			if (!f->recs[j].kept || f->recs[j].seen)
				continue;
			fatelf_target_format(&f->recs[j].target, name);
			r = problem(v, w, f, ENGINE_PROBLEM_RECORD, "record %s is missing", name);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* The careful way: opens the file again from its directory, for a path
 * that was a regular file when it was looked at. */
static int check_content(struct verify *v, struct vworker *w, struct vfile *f, fatelf_diag *d)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	const char *base;
	struct stat st;
	int r;

	dfd = eng_open_parent(v->e, f->path, &base, d);
	if (dfd == -ENOENT || dfd == -ENOTDIR)
		return problem(v, w, f, ENGINE_PROBLEM_MISSING, "no such file");
	if (dfd == -ELOOP)
		return problem(v, w, f, ENGINE_PROBLEM_TYPE, "a directory on its path is a symlink");
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
			return problem(v, w, f, ENGINE_PROBLEM_MISSING, "no such file");
		if (r == -ELOOP)
			return problem(v, w, f, ENGINE_PROBLEM_TYPE,
				       "expected a regular file, found a symlink");
		return fatelf_diag_set(d, r, -1, "cannot open the file: %s", fatelf_strerror(r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot stat the file: %s", fatelf_strerror(r));
	}
	if (!S_ISREG(st.st_mode))
		return problem(v, w, f, ENGINE_PROBLEM_TYPE, "expected a regular file, found %s",
			       type_name(st.st_mode));
	return check_content_fd(v, w, f, fd, d);
}

/* A regular file as it was found (st), open on fd or not (-1). */
static int check_regular(struct verify *v, struct vworker *w, struct vfile *f, int fd,
			 const struct stat *st, fatelf_diag *d)
{
	int r;

	if ((st->st_mode & 07777) != f->mode) {
		r = problem(v, w, f, ENGINE_PROBLEM_MODE, "expected mode %04o, found %04o", f->mode,
			    (unsigned)(st->st_mode & 07777));
		if (r < 0)
			return r;
	}
	/* The admin owns a config file's content once it is installed. */
	if (f->config)
		return 0;
	if (fd >= 0)
		return check_content_fd(v, w, f, fd, d);
	return check_content(v, w, f, d);
}

/*
 * Opens a file beneath the root in one call, following no symlink on the
 * way or at the end, without blocking (a FIFO) and without taking a
 * terminal. -ENOSYS where openat2 is not there (or filtered).
 *
 * What was opened is judged by fstat before a byte is read: a FIFO, a
 * socket (whose open fails) or a device node planted in place of a file
 * is never read, only named. O_NONBLOCK stays set on a regular file: it
 * changes nothing for one. A device node is opened (the one call does not
 * know what it opens) but not read; only root can make one, and a user
 * can link in place of a file only a node that user may read and write
 * anyway (fs.protected_hardlinks).
 */
static int open_beneath(struct verify *v, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (atomic_load_explicit(&v->no_openat2, memory_order_relaxed))
		return -ENOSYS;
	do
		fd = syscall(SYS_openat2, v->e->rootfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		if (errno == ENOSYS || errno == EPERM) {
			atomic_store(&v->no_openat2, true);
			return -ENOSYS;
		}
		return -errno;
	}
	return (int)fd;
}

static int verify_file(struct verify *v, struct vworker *w, struct vfile *f, fatelf_diag *d)
{
	struct stat st;
	int r;

	/* The common case: a regular file, opened once and judged by its
	 * descriptor. */
	if (!f->symlink && f->path[0] == '/' && f->path[1]) {
		_cleanup_close_ int fd = open_beneath(v, f->path + 1);

		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			return check_regular(v, w, f, fd, &st, d);
	}

	r = eng_lstat(v->e, f->path, &st, d);
	if (r == -ENOENT || r == -ENOTDIR)
		return problem(v, w, f, ENGINE_PROBLEM_MISSING, "no such file");
	if (r == -ELOOP)
		return problem(v, w, f, ENGINE_PROBLEM_TYPE, "a directory on its path is a symlink");
	if (r < 0)
		return r;

	if (f->symlink) {
		if (!S_ISLNK(st.st_mode))
			return problem(v, w, f, ENGINE_PROBLEM_TYPE, "expected a symlink, found %s",
				       type_name(st.st_mode));
		return check_symlink(v, w, f, d);
	}
	if (!S_ISREG(st.st_mode))
		return problem(v, w, f, ENGINE_PROBLEM_TYPE, "expected a regular file, found %s",
			       type_name(st.st_mode));
	return check_regular(v, w, f, -1, &st, d);
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
		return problem(v, NULL, &f, ENGINE_PROBLEM_MISSING, "no such directory");
	if (r == -ELOOP)
		return problem(v, NULL, &f, ENGINE_PROBLEM_TYPE, "a directory on its path is a symlink");
	if (r < 0)
		return r;
	if (!S_ISDIR(st.st_mode))
		return problem(v, NULL, &f, ENGINE_PROBLEM_TYPE, "expected a directory, found %s",
			       type_name(st.st_mode));
	if (st.st_uid != geteuid()) {
		r = problem(v, NULL, &f, ENGINE_PROBLEM_OWNER, "expected owner uid %u, found uid %u",
			    (unsigned)geteuid(), (unsigned)st.st_uid);
		if (r < 0)
			return r;
	}
	if (dir->mode >= 0 && (int)(st.st_mode & 07777) != dir->mode)
		return problem(v, NULL, &f, ENGINE_PROBLEM_MODE, "expected mode %04o, found %04o",
			       (unsigned)dir->mode, (unsigned)(st.st_mode & 07777));
	return 0;
}

static void *vworker_main(void *arg)
{
	struct vworker *w = arg;
	struct verify *v = w->v;

	while (!atomic_load_explicit(&v->stop, memory_order_relaxed)) {
		size_t start = atomic_fetch_add(&v->next, VERIFY_BATCH), end;

		if (start >= v->nfiles)
			break;
		end = MIN(start + VERIFY_BATCH, v->nfiles);
		for (size_t i = start; i < end; i++) {
			int r;

			w->cur = i;
			r = verify_file(v, w, &v->files[i], &w->diag);
			if (r == -ENOMEM)
				r = fatelf_diag_oom(&w->diag);
			if (r < 0) {
				w->r = r;
				w->err_file = i;
				atomic_store(&v->stop, true);
				return NULL;
			}
		}
	}
	return NULL;
}

static void vworker_done(struct vworker *w)
{
	for (size_t i = 0; i < w->nprobs; i++)
		free(w->probs[i].detail);
	free(w->probs);
	free(w->buf);
	fatelf_sha256_free(w->h);
}

/* Every file, on up to VERIFY_THREADS threads (this one among them); then
 * the problems to the callback in file order. */
static int verify_files(struct verify *v, fatelf_diag *d)
{
	struct vworker w[VERIFY_THREADS] = { 0 };
	size_t at[VERIFY_THREADS] = { 0 };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = ncpu < 1 ? 1 : (unsigned)MIN(ncpu, (long)VERIFY_THREADS);
	struct vworker *failed = NULL;
	int r = 0;

	if (v->nfiles < VERIFY_MIN_SPLIT)
		n = 1;
	for (unsigned i = 0; i < n; i++) {
		w[i].v = v;
		w[i].buf = malloc(READ_CHUNK);
		w[i].h = fatelf_sha256_new();
		fatelf_diag_clear(&w[i].diag);
		if (!w[i].buf || !w[i].h) {
			r = fatelf_diag_oom(d);
			goto out;
		}
	}
	atomic_store(&v->next, 0);
	atomic_store(&v->stop, false);
	/* A thread that cannot start leaves its share to the others. */
	for (unsigned i = 1; i < n; i++)
		w[i].started = pthread_create(&w[i].thread, NULL, vworker_main, &w[i]) == 0;
	vworker_main(&w[0]);
	for (unsigned i = 1; i < n; i++)
		if (w[i].started)
			pthread_join(w[i].thread, NULL);

	for (unsigned i = 0; i < n; i++)
		if (w[i].r < 0 && (!failed || w[i].err_file < failed->err_file))
			failed = &w[i];
	if (failed) {
		r = failed->r;
		if (d) {
			*d = failed->diag;
			snprintf(d->subject, sizeof(d->subject), "%s", v->files[failed->err_file].path);
		}
		goto out;
	}

	/* Each thread's problems are in file order: merge them. */
	for (;;) {
		struct vworker *best = NULL;
		unsigned bi = 0;

		for (unsigned i = 0; i < n; i++)
			if (at[i] < w[i].nprobs &&
			    (!best || w[i].probs[at[i]].file < best->probs[at[bi]].file)) {
				best = &w[i];
				bi = i;
			}
		if (!best)
			break;
		struct vproblem *p = &best->probs[at[bi]++];
		const struct vfile *f = &v->files[p->file];

		v->problems++;
		if (v->cb) {
			r = v->cb(f->package, f->path, p->kind, p->detail, v->userdata);
			if (r < 0) {
				if (r == -ENOMEM)
					r = fatelf_diag_oom(d);
				goto out;
			}
		}
		/* The callback keeps its own copy: a package whose every file
		 * is a problem does not hold each detail twice. */
		free(p->detail);
		p->detail = NULL;
	}
	r = 0;
out:
	for (unsigned i = 0; i < n; i++)
		vworker_done(&w[i]);
	return r;
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
		if (r == 0)
			r = -ENOENT;    /* gone since its files were read: as if never there */
		if (r > 0) {
			r = store_records_all(e->st, pk.id, collect_record, &v, d);
			if (r >= 0)
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
			r = store_records_all(e->st, 0, collect_record, &v, d);
		if (r >= 0)
			r = store_dirs_with_modes(e->st, 0, &v.dirs, &v.ndirs, d);
	}
	if (r == -ENOMEM)
		r = fatelf_diag_oom(d);
	if (r < 0)
		goto out;

	for (size_t i = 0; i < v.nfiles; i++)
		v.files[i].package = package ? package : package_name(&v, v.files[i].package_id);
	r = verify_files(&v, d);
	if (r < 0)
		goto out;
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
