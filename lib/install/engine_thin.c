/*
 * Thinning what is already installed: the engine_thin operation. A fat
 * file installed as shipped (or thinned to an older policy) is rewritten
 * to the records the policy keeps, under a hidden temp name, and every
 * kept record's bytes in the new file are checked against the vendor's
 * record hash from the store before anything is committed, so a file
 * tampered with after install is never blessed with a new hash. The store
 * keeps the records' offsets as shipped; only their kept flags, and the
 * file's installed form, size and hash, change. All files of one call
 * share one transaction (one history row, one commit). A file with no
 * record the policy takes is left as it is.
 */
#include <errno.h>
#include <fcntl.h>
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

/* A record of the file as the vendor shipped it (from the store). */
struct thin_rec {
	unsigned idx;
	fatelf_target target;
	uint64_t size;
	char sha256[65];
	int kept;               /* in the new file */
};

struct thin_file {
	char *path;
	mode_t mode;            /* of the installed file, within the shipped one */
	uint64_t old_size;
	uint64_t new_size;
	/* The installed file's table when planned: staging checks that it is
	 * still the same file. */
	unsigned ncur;
	fatelf_record *cur;
	unsigned *cur_rec;      /* current record i -> index into recs */
	fatelf_keepset keep;
	int form;
	struct thin_rec *recs;
	unsigned nrecs;
	size_t op;
	char sha256[65];        /* of the new file */
};

struct thin_ctx {
	engine *e;
	struct thin_file *files;
	size_t nfiles, cap;
	/* collecting paths */
	char **paths;
	size_t npaths, pcap;
	/* the policy thinned to, recorded as the policy of each package
	 * whose files it rewrote: what list and info show is on disk */
	char policy[512];
};

static int set_subject(fatelf_diag *d, const char *subject, int r)
{
	return eng_diag_name(d, r, subject);
}

static void thin_file_free(struct thin_file *f)
{
	free(f->path);
	free(f->cur);
	free(f->cur_rec);
	free(f->recs);
}

#define _cleanup_thin_file_ _cleanup_(thin_file_free)

static void thin_ctx_done(struct thin_ctx *c)
{
	for (size_t i = 0; i < c->nfiles; i++)
		thin_file_free(&c->files[i]);
	free(c->files);
	for (size_t i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
}

static int collect_path(const store_file *f, void *userdata)
{
	struct thin_ctx *c = userdata;

	if (f->kind != STORE_KIND_FATELF || f->type != STORE_FILE_REGULAR)
		return 0;
	if (c->npaths == c->pcap) {
		size_t ncap = c->pcap ? c->pcap * 2 : 64;
		char **n = realloc(c->paths, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->paths = n;
		c->pcap = ncap;
	}
	c->paths[c->npaths] = strdup(f->path);
	if (!c->paths[c->npaths])
		return -ENOMEM;
	c->npaths++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fat files of the named packages (or all), sorted, each once (a
 * package named twice must not give a path two replace operations). */
static int collect_paths(engine *e, const char *const *packages, struct thin_ctx *c, fatelf_diag *d)
{
	int r;

	if (!packages) {
		r = store_files_all(e->st, collect_path, c, d);
		if (r < 0)
			return r == -ENOMEM ? fatelf_diag_oom(d) : r;
	} else {
		for (size_t i = 0; packages[i]; i++) {
			store_file *files = NULL;
			size_t n = 0;

			r = store_files_of(e->st, packages[i], &files, &n, d);
			for (size_t j = 0; j < n && r >= 0; j++)
				r = collect_path(&files[j], c);
			store_files_free(files, n);
			if (r == -ENOENT) {
				FATELF_DIAG_FACT(d, package, packages[i]);
				r = fatelf_diag_set(d, -ENGINE_E_NOT_INSTALLED, -1,
						    "package %s is not installed", packages[i]);
				fatelf_diag_names(d, packages[i]);
				return r;
			}
			if (r < 0)
				return r == -ENOMEM ? fatelf_diag_oom(d) : r;
		}
	}
	if (c->npaths > 1)
		qsort(c->paths, c->npaths, sizeof(*c->paths), cmp_str);
	size_t n = 0;
	for (size_t i = 0; i < c->npaths; i++) {
		if (n > 0 && strcmp(c->paths[n - 1], c->paths[i]) == 0) {
			free(c->paths[i]);
			continue;
		}
		c->paths[n++] = c->paths[i];
	}
	c->npaths = n;
	return 0;
}

struct recs_acc {
	struct thin_rec *recs;
	unsigned n;
	size_t cap;
};

static int collect_rec(const store_record *r, struct recs_acc *a)
{
	if (a->n == FATELF_MAX_RECORDS)
		return -FATELF_E_TOO_MANY;
	if (GROW_ARRAY(a->recs, a->cap, a->n + 1) < 0)
		return -ENOMEM;
	struct thin_rec *t = &a->recs[a->n++];
	*t = (struct thin_rec) {
		.idx = r->idx,
		.target = r->target,
		.size = r->size,
	};
	snprintf(t->sha256, sizeof(t->sha256), "%s", r->sha256 ? r->sha256 : "");
	return 0;
}

/*
 * Opens the installed file beneath the root without following a symlink.
 * Returns the fd, with *ret_st filled.
 */
static int open_installed(engine *e, const char *path, struct stat *ret_st, fatelf_diag *d)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	const char *base;
	int r;

	dfd = eng_open_parent(e, path, &base, d);
	if (dfd < 0)
		return dfd;
	/* Never blocks: a FIFO swapped in for the file would otherwise hold
	 * the open until someone writes to it. */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			return fatelf_diag_at(d, r, -1, path, "the installed file is now a symlink");
		return fatelf_diag_set(d, r, -1, "cannot open the installed file: %s",
				       fatelf_strerror(r));
	}
	if (fstat(fd, ret_st) < 0) {
		r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot stat the installed file: %s",
				       fatelf_strerror(r));
	}
	if (!S_ISREG(ret_st->st_mode))
		return fatelf_diag_set(d, -EINVAL, -1,
				       "%s: the installed file is not a regular file any more (%s)", path,
				       S_ISFIFO(ret_st->st_mode) ? "a FIFO" :
				       S_ISDIR(ret_st->st_mode) ? "a directory" :
				       S_ISSOCK(ret_st->st_mode) ? "a socket" : "a device");
	return TAKE_FD(fd);
}

/* 1 and *ret_hdr for a valid FatELF, 0 for a plain ELF (already thinned
 * to one record), or an error for anything else. */
static int read_table(int fd, fatelf_header *ret_hdr, fatelf_diag *d)
{
	fatelf_reader src;
	uint8_t magic[4];
	int r;

	r = fatelf_reader_seekable_fd(&src, fd);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot read the installed file: %s",
				       fatelf_strerror(r));
	if (src.size >= sizeof(magic)) {
		r = fatelf_reader_read_at(&src, magic, sizeof(magic), 0);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "cannot read the installed file: %s",
					       fatelf_strerror(r));
		if (fatelf_is_elf(magic, sizeof(magic)))
			return 0;
	}
	r = fatelf_validate(&src, NULL, ret_hdr, NULL, d);
	if (r < 0)
		return r;
	return 1;
}

/* Pairs each record of the installed file with the vendor's record of the
 * same target: the store knows records by their shipped index and
 * offset, which thinning changes. */
static int map_records(const fatelf_header *hdr, struct thin_file *f, fatelf_diag *d)
{
	f->cur_rec = calloc(hdr->nrecords, sizeof(*f->cur_rec));
	f->cur = calloc(hdr->nrecords, sizeof(*f->cur));
	if (!f->cur_rec || !f->cur)
		return fatelf_diag_oom(d);
	f->ncur = hdr->nrecords;
	memcpy(f->cur, hdr->records, hdr->nrecords * sizeof(*f->cur));
	for (unsigned i = 0; i < hdr->nrecords; i++) {
		const fatelf_record *rec = &hdr->records[i];
		char name[FATELF_TARGET_NAME_MAX];
		unsigned j;

		for (j = 0; j < f->nrecs; j++)
			if (fatelf_target_equal(&f->recs[j].target, &rec->target))
				break;
		fatelf_target_format(&rec->target, name);
		if (j == f->nrecs)
			return fatelf_diag_set(d, -FATELF_E_RECORDS, (int)i,
					       "record %u (%s): not a record the vendor shipped", i, name);
		if (f->recs[j].size != rec->size)
			return fatelf_diag_set(d, -FATELF_E_RECORDS, (int)i,
					       "record %u (%s): %llu bytes, the vendor's has %llu", i,
					       name, (unsigned long long)rec->size,
					       (unsigned long long)f->recs[j].size);
		f->cur_rec[i] = j;
	}
	return 0;
}

/*
 * Reads one file's state and decides what thinning does to it. Returns 1
 * when the file is to be rewritten (appended to c->files), 0 when it is
 * left alone, or an error.
 */
static int plan_file(engine *e, const engine_policy_spec *spec, const char *path,
		     struct thin_ctx *c, fatelf_diag *d)
{
	_cleanup_free_ fatelf_header *hdr = NULL;
	_cleanup_close_ int fd = -1;
	struct recs_acc acc = { 0 };
	_cleanup_thin_file_ struct thin_file f = { 0 };
	fatelf_diag none;
	fatelf_plan plan;
	struct stat st;
	int r;

	hdr = malloc(sizeof(*hdr));
	if (!hdr)
		return fatelf_diag_oom(d);
	fd = open_installed(e, path, &st, d);
	if (fd < 0)
		return fd;
	r = read_table(fd, hdr, d);
	if (r <= 0)
		return r;

	{
		store_record *recs = NULL;
		size_t nrecs = 0;

		r = store_records_of(e->st, path, &recs, &nrecs, d);
		for (size_t i = 0; i < nrecs && r >= 0; i++)
			r = collect_rec(&recs[i], &acc);
		store_records_free(recs, nrecs);
	}
	f.recs = acc.recs;
	f.nrecs = acc.n;
	if (r < 0) {
		if (r == -ENOMEM || r == -FATELF_E_TOO_MANY)
			return fatelf_diag_set(d, r, -1, "cannot load the vendor's records: %s",
					       fatelf_strerror(r));
		return r;
	}
	r = map_records(hdr, &f, d);
	if (r < 0)
		return r;

	fatelf_keep_clear(&f.keep);
	f.form = FATELF_FORM_AUTO;
	fatelf_diag_clear(&none);
	r = engine_policy_select(spec, (const char *const *)e->cfg.keep_fat, e->cfg.nkeep_fat,
				 &e->host, path, hdr, &f.keep, &f.form, &none);
	/* A file with no record the policy takes stays as installed: thinning
	 * drops records, never a file's every one. Policy keep installs such
	 * files: a per-arch entry of other architectures (which a native
	 * install does not take at all), a program for machines that share
	 * the tree. Refusing it would leave the package's other files fat. */
	if (r == -FATELF_E_NO_HOST_RECORD || r == -FATELF_E_NO_MATCH)
		r = 0;
	else if (r < 0 && d)
		*d = none;
	if (r <= 0)
		return r;
	/* As an install does: no dynamic linker loads a fat shared library,
	 * so compatible keeps only the record the kernel would pick. */
	if (spec->policy == ENGINE_POLICY_COMPATIBLE && fatelf_keep_count(&f.keep) > 1 &&
	    eng_fat_is_shared_library(fd, hdr)) {
		int native = fatelf_host_select(&e->host, hdr, NULL);

		if (native >= 0) {
			fatelf_keep_clear(&f.keep);
			fatelf_keep_add(&f.keep, (unsigned)native);
			f.form = FATELF_FORM_ELF;
		}
	}
	r = fatelf_plan_make(hdr, &f.keep, f.form, &plan, d);
	if (r < 0)
		return r;
	if (plan.nkept == hdr->nrecords && plan.form == FATELF_FORM_FAT)
		return 0;       /* already as thin as the policy asks */
	for (unsigned k = 0; k < plan.nkept; k++)
		f.recs[f.cur_rec[plan.in_index[k]]].kept = 1;
	f.form = plan.form;
	/* The new file is root's: its mode may hold no bit the package did
	 * not ship. Whoever may write in the directory may have put a copy
	 * of their own there, setuid to themselves, and root's copy of it
	 * must not be setuid to root. A bit taken away since (an admin's
	 * chmod u-s) stays away. */
	{
		_cleanup_store_file_ store_file row = { 0 };

		r = store_file_get(e->st, path, &row, NULL, d);
		if (r == 0)
			r = fatelf_diag_at(d, -ENOENT, -1, path, "no package owns this path");
		if (r < 0)
			return r;
		f.mode = st.st_mode & row.mode & 07777;
	}
	f.old_size = (uint64_t)st.st_size;
	f.new_size = plan.out_size;
	f.path = strdup(path);
	if (!f.path)
		return fatelf_diag_oom(d);
	if (GROW_ARRAY(c->files, c->cap, c->nfiles + 1) < 0)
		return fatelf_diag_oom(d);
	c->files[c->nfiles++] = f;
	f = (struct thin_file){ 0 };
	return 1;
}

static int open_staged(eng_tx *t, size_t op, fatelf_diag *d)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *temp = eng_tx_temp(t, op);
	const char *base;
	int fd, r;

	if (!temp)
		return fatelf_diag_oom(d);
	dfd = eng_open_parent(t->e, temp, &base, d);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot read the staged file back: %s",
				       fatelf_strerror(r));
	}
	return fd;
}

/*
 * Writes the new file into its temp and checks it: the kept records'
 * bytes must hash to the vendor's record hashes. Also yields the new
 * file's SHA-256.
 */
static int stage_file(eng_tx *t, struct thin_file *f, fatelf_hashq *q, uint8_t *buf,
		      fatelf_diag *d)
{
	_cleanup_free_ fatelf_header *hdr = NULL;
	_cleanup_close_ int in = -1, back = -1, out = -1;
	fatelf_hash_range ranges[FATELF_MAX_RECORDS];
	fatelf_hash_result res;
	fatelf_plan plan;
	struct stat st;
	int r;

	hdr = malloc(sizeof(*hdr));
	if (!hdr)
		return fatelf_diag_oom(d);
	in = open_installed(t->e, f->path, &st, d);
	if (in < 0)
		return in;
	r = read_table(in, hdr, d);
	if (r < 0)
		return r;
	/* The file may have changed since it was planned (another tool, an
	 * admin); thinning a different file than the one planned would record
	 * wrong kept flags. */
	if (r == 0 || (uint64_t)st.st_size != f->old_size || hdr->nrecords != f->ncur ||
	    memcmp(hdr->records, f->cur, f->ncur * sizeof(*f->cur)) != 0)
		return fatelf_diag_set(d, -EBUSY, -1, "the installed file changed while thinning");
	r = fatelf_plan_make(hdr, &f->keep, f->form, &plan, d);
	if (r < 0)
		return r;

	out = eng_tx_stage_open(t, f->op, d);
	if (out < 0)
		return out;
	r = fatelf_plan_write(&plan, hdr, in, out, d);
	if (r < 0)
		return r;

	/* Output records are laid out in ascending input offset order, which
	 * is plan order: the ranges come sorted and disjoint. */
	for (unsigned k = 0; k < plan.nkept; k++) {
		if (plan.form == FATELF_FORM_FAT) {
			const fatelf_record *o = &plan.out.records[plan.out_index[k]];
			ranges[k] = (fatelf_hash_range) { o->offset, o->size };
		} else {
			ranges[k] = (fatelf_hash_range) { 0, plan.out_size };
		}
	}
	/* The staged fd is write-only: read the temp back through its name. */
	back = open_staged(t, f->op, d);
	if (back < 0)
		return back;
	r = fatelf_hashq_begin(q, ranges, plan.nkept);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot hash the new file: %s", fatelf_strerror(r));
	uint64_t pos = 0;
	int rerr = 0;
	while (pos < plan.out_size) {
		ssize_t n = pread(back, buf, (size_t)MIN((uint64_t)READ_CHUNK, plan.out_size - pos),
				  (off_t)pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rerr = n < 0 ? -errno : -EIO;
			break;
		}
		fatelf_hashq_feed(q, buf, (size_t)n);
		pos += (uint64_t)n;
	}
	fatelf_hashq_end(q);
	fatelf_hashq_collect(q, true, &res);
	if (rerr < 0)
		return fatelf_diag_set(d, rerr, -1, "cannot read the new file back: %s", fatelf_strerror(rerr));
	for (unsigned k = 0; k < plan.nkept; k++) {
		unsigned i = plan.in_index[k];
		const struct thin_rec *v = &f->recs[f->cur_rec[i]];
		char hex[65], name[FATELF_TARGET_NAME_MAX];

		fatelf_hex(res.ranges[k], 32, hex);
		if (strcmp(hex, v->sha256) != 0) {
			fatelf_target_format(&v->target, name);
			return fatelf_diag_set(d, -FATELF_E_RECORD_HASH, (int)v->idx,
					       "record %u (%s): the installed bytes differ from the vendor's "
					       "record hash", v->idx, name);
		}
	}
	fatelf_hex(res.file, 32, f->sha256);
	return eng_tx_stage_close(t, f->op, TAKE_FD(out), UINT64_MAX, d);
}

static int apply_thin(engine *e, void *userdata, fatelf_diag *d)
{
	struct thin_ctx *c = userdata;
	int r;

	for (size_t i = 0; i < c->nfiles; i++) {
		const struct thin_file *f = &c->files[i];

		r = store_file_set_installed(e->st, f->path, STORE_FORM_THINNED, f->new_size, f->sha256, d);
		if (r >= 0)
			r = store_package_set_policy_of(e->st, f->path, c->policy, d);
		if (r < 0)
			return set_subject(d, f->path, r);
		for (unsigned j = 0; j < f->nrecs; j++) {
			r = store_record_set_kept(e->st, f->path, f->recs[j].idx, f->recs[j].kept, d);
			if (r < 0)
				return set_subject(d, f->path, r);
		}
	}
	return 0;
}

static int progress(const engine_thin_opts *o, uint64_t bytes_done, uint64_t bytes_total,
		    uint64_t done, uint64_t total, const char *path)
{
	if (!o->progress)
		return 0;
	return eng_progress(o->progress, o->userdata, NULL, "thinning", bytes_done, bytes_total, done,
			    total, path);
}

/* Stages every planned file and commits them as one transaction. */
/* The transaction of a thinning: every file staged (hashed through q,
 * read back through buf), then committed; rolled back on a failure. */
static int thin_tx_run(engine *e, const engine_thin_opts *o, const char *package, struct thin_ctx *c,
		       fatelf_hashq *q, uint8_t *buf, uint64_t written, int64_t saved, int64_t *ret_txid,
		       fatelf_diag *d)
{
	eng_tx t;
	uint64_t done = 0;
	int r;

	r = eng_tx_start(e, STORE_TX_THIN, package, NULL, NULL, &t, d);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->nfiles; i++) {
		r = eng_tx_add(&t, STORE_JOP_REPLACE, c->files[i].path, c->files[i].mode, d);
		if (r < 0) {
			set_subject(d, c->files[i].path, r);
			goto abort;
		}
		c->files[i].op = (size_t)r;
	}
	r = eng_tx_journal(&t, d);
	if (r < 0)
		goto abort;
	for (size_t i = 0; i < c->nfiles; i++) {
		struct thin_file *f = &c->files[i];

		r = progress(o, done, written, i, c->nfiles, f->path);
		if (r < 0) {
			fatelf_diag_set(d, r, -1, "cancelled");
			goto abort;
		}
		r = stage_file(&t, f, q, buf, d);
		if (r < 0) {
			set_subject(d, f->path, r);
			goto abort;
		}
		done += f->new_size;
	}
	r = progress(o, done, written, c->nfiles, c->nfiles, NULL);
	if (r < 0) {
		fatelf_diag_set(d, r, -1, "cancelled");
		goto abort;
	}
	r = eng_tx_commit(&t, apply_thin, c, written, saved, d);
	if (r >= 0)
		*ret_txid = t.id;
	eng_tx_done(&t);
	return r;
abort:
	eng_tx_abort(&t, r, d);
	eng_tx_done(&t);
	return r;
}

static int thin_commit(engine *e, const engine_thin_opts *o, const char *package,
		       struct thin_ctx *c, uint64_t written, int64_t saved, int64_t *ret_txid,
		       fatelf_diag *d)
{
	_cleanup_free_ uint8_t *buf = NULL;
	_cleanup_hashq_ fatelf_hashq *q = NULL;
	int r;

	buf = malloc(READ_CHUNK);
	if (!buf)
		return fatelf_diag_oom(d);
	r = fatelf_hashq_new(&q);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot start hashing: %s", fatelf_strerror(r));
	return thin_tx_run(e, o, package, c, q, buf, written, saved, ret_txid, d);
}

int engine_thin(engine *e, const engine_thin_opts *o, engine_result *ret, fatelf_diag *d)
{
	static const engine_thin_opts no_opts;
	struct thin_ctx c = { .e = e };
	engine_result res = { .kind = store_tx_kind_to_text(STORE_TX_THIN) };
	const engine_policy_spec *spec;
	const char *package = NULL;
	uint64_t written = 0;
	int64_t saved = 0, txid = 0;
	int r;

	if (!o)
		o = &no_opts;
	if ((e->flags & ENGINE_OPEN_READONLY) && !o->dry_run)
		return fatelf_diag_set(d, -EROFS, -1, "the engine is open read-only");
	spec = o->policy ? o->policy : &e->cfg.policy;
	if (o->packages && o->packages[0] && !o->packages[1])
		package = o->packages[0];

	r = collect_paths(e, o->packages, &c, d);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < c.npaths; i++) {
		r = plan_file(e, spec, c.paths[i], &c, d);
		if (r < 0) {
			set_subject(d, c.paths[i], r);
			goto out;
		}
	}
	for (size_t i = 0; i < c.nfiles; i++) {
		written += c.files[i].new_size;
		saved += (int64_t)c.files[i].old_size - (int64_t)c.files[i].new_size;
	}
	/* Nothing to thin: no transaction, so no empty history row. */
	if (!o->dry_run && c.nfiles > 0) {
		r = engine_policy_spec_format(spec, c.policy, sizeof(c.policy));
		if (r < 0) {
			r = fatelf_diag_set(d, r, -1, "cannot record the policy");
			goto out;
		}
		r = thin_commit(e, o, package, &c, written, saved, &txid, d);
		if (r < 0)
			goto out;
	}

	res.txid = txid;
	res.files = c.nfiles;
	res.bytes_written = written;
	res.bytes_saved = saved;
	res.dry_run = o->dry_run;
	if (package) {
		res.package = strdup(package);
		if (!res.package) {
			r = fatelf_diag_oom(d);
			goto out;
		}
	}
	if (ret)
		*ret = res;
	else
		free(res.package);
	r = 0;
out:
	thin_ctx_done(&c);
	return r;
}
