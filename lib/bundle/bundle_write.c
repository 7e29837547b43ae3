/*
 * The bundle writer: turns a staging tree (laid out like the target root)
 * into a reproducible bundle. Three steps:
 *   1. walk the tree without following symlinks and collect its regular
 *      files, directories and symlinks, sorted by path;
 *   2. read every file once: classify it by its magic (FatELF, validated;
 *      plain ELF, inspected; data), hash it whole and hash each FatELF
 *      record's byte range as the bytes go by;
 *   3. write the manifest (and its signature), then every entry, as a pax
 *      tar through libarchive, with owners, times and header fields fixed
 *      so that the same tree gives the same bytes.
 * The archive pass reads each file a second time (from the page cache on
 * any tree that fits in memory) because the manifest, which pins every
 * hash, must come first.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "bundle.h"
#include "macro.h"
#include "manifest_private.h"
#include "text.h"

/*
 * Reads are 64 KiB: the buffer stays in the L2 cache while the kernel
 * copies into it and SHA-256 or zstd read it back. 1 MiB buffers measured
 * slower: copying from the page cache took 11% of the run, against 2%.
 */
#define IO_CHUNK (64u << 10)

/* One thing found in the tree, before it becomes a manifest entry. */
struct item {
	char *path;
	int type;               /* enum fatelf_entry_type */
	uint32_t mode;          /* st_mode & 07777 */
	dev_t dev;
	ino_t ino;
	char *link;             /* symlinks */
};

struct creator {
	const fatelf_bundle_create_opts *o;
	fatelf_bundle_limits lim;
	int rootfd;
	struct item *items;
	size_t nitems, cap;
	uint64_t total;
	struct stat out;        /* the output, so that it is not bundled into itself */
	bool out_is_file;
	bool non_ascii;         /* some name or link target has a byte >= 0x80 */
	uint8_t *buf;           /* IO_CHUNK bytes, for the archive pass */
	atomic_size_t scan_next;    /* next item a scan worker takes */
	atomic_size_t scan_stop;    /* lowest index that failed */
	fatelf_diag *d;
};

static void creator_done(struct creator *c)
{
	for (size_t i = 0; i < c->nitems; i++) {
		free(c->items[i].path);
		free(c->items[i].link);
	}
	free(c->items);
	free(c->buf);
	if (c->rootfd >= 0)
		close(c->rootfd);
}

/* Re-states a failure of a per-file step with the entry's path in front. */
static int fail_path(fatelf_diag *d, int code, const fatelf_diag *inner, const char *path)
{
	return fatelf_diag_set(d, code, inner->record, "%s: %s", path, inner->msg);
}

/*
 * Opens an entry of the tree for reading, never through a symlink, and
 * checks that it is still the object the walk saw.
 */
static int open_item(struct creator *c, const struct item *it, int flags, struct stat *ret_st,
		     fatelf_diag *d)
{
	fatelf_diag inner;
	_cleanup_close_ int dirfd = -1, fd = -1;
	const char *base;

	fatelf_diag_clear(&inner);
	dirfd = fatelf_root_open_parent(c->rootfd, it->path, false, &base, &inner);
	if (dirfd < 0)
		return fail_path(d, dirfd, &inner, it->path);
	/* O_NONBLOCK: a FIFO swapped in since the walk must not hang the open. */
	fd = openat(dirfd, base, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: cannot open it: %s", it->path,
				       fatelf_strerror(-errno));
	if (fstat(fd, ret_st) < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", it->path, fatelf_strerror(-errno));
	if (ret_st->st_dev != it->dev || ret_st->st_ino != it->ino)
		return fatelf_diag_set(d, -EIO, -1, "%s: was replaced while the bundle was made",
				       it->path);
	return TAKE_FD(fd);
}

static const char *type_word(mode_t m)
{
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "of an unknown file type";
}

static int read_link(struct creator *c, int dirfd, const char *name, const char *path,
		     const struct stat *st, char **ret)
{
	size_t cap = st->st_size > 0 && st->st_size < 65536 ? (size_t)st->st_size + 1 : 4096;

	for (;;) {
		_cleanup_free_ char *t = malloc(cap);
		ssize_t n;

		if (!t)
			return fatelf_diag_oom(c->d);
		n = readlinkat(dirfd, name, t, cap);
		if (n < 0)
			return fatelf_diag_set(c->d, -errno, -1, "%s: cannot read the symlink: %s", path,
					       fatelf_strerror(-errno));
		if ((size_t)n < cap) {
			t[n] = '\0';
			if (n == 0)
				return fatelf_diag_set(c->d, -FATELF_E_PATH_INVALID, -1,
						       "%s: empty symlink target", path);
			*ret = TAKE_PTR(t);
			return 0;
		}
		if (cap >= c->lim.max_path + 1)
			return fatelf_diag_set(c->d, -FATELF_E_LIMIT, -1,
					       "%s: symlink target longer than %zu bytes", path,
					       c->lim.max_path);
		cap *= 2;
	}
}

static bool has_non_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return true;
	return false;
}

static int add_item(struct creator *c, int dirfd, const char *name, const char *path,
		    const struct stat *st)
{
	struct item it = { .mode = st->st_mode & 07777, .dev = st->st_dev, .ino = st->st_ino };
	int q;

	if (S_ISREG(st->st_mode))
		it.type = FATELF_ENTRY_FILE;
	else if (S_ISDIR(st->st_mode))
		it.type = FATELF_ENTRY_DIR;
	else if (S_ISLNK(st->st_mode))
		it.type = FATELF_ENTRY_SYMLINK;
	else
		return fatelf_diag_set(c->d, -FATELF_E_MEMBER_TYPE, -1,
				       "%s: is %s; only regular files, directories and symlinks can be bundled",
				       path, type_word(st->st_mode));

	/* Its messages name the path already. */
	q = fatelf_path_check(path, &c->lim, c->d);
	if (q < 0)
		return q;
	if (it.type != FATELF_ENTRY_SYMLINK && (st->st_mode & (S_ISUID | S_ISGID)) &&
	    !c->o->allow_setid)
		return fatelf_diag_set(c->d, -FATELF_E_MODE, -1,
				       "%s: has the setuid or setgid bit (mode %04o); it is bundled only with --allow-setid",
				       path, (unsigned)it.mode);
	if (it.type == FATELF_ENTRY_FILE && c->out_is_file && st->st_dev == c->out.st_dev &&
	    st->st_ino == c->out.st_ino)
		return fatelf_diag_set(c->d, -FATELF_E_INVALID, -1,
				       "%s: is the bundle being written; put the output outside the tree",
				       path);
	if (c->nitems >= c->lim.max_entries)
		return fatelf_diag_set(c->d, -FATELF_E_LIMIT, -1, "%s: more than %zu entries", path,
				       c->lim.max_entries);
	if (it.type == FATELF_ENTRY_FILE) {
		c->total += (uint64_t)st->st_size;
		if (c->total > c->lim.max_total)
			return fatelf_diag_set(c->d, -FATELF_E_LIMIT, -1,
					       "%s: files add up to more than %llu bytes", path,
					       (unsigned long long)c->lim.max_total);
	}
	if (it.type == FATELF_ENTRY_SYMLINK) {
		q = read_link(c, dirfd, name, path, st, &it.link);
		if (q < 0)
			return q;
		it.mode = 0777;
	}
	if (GROW_ARRAY(c->items, c->cap, c->nitems + 1) < 0) {
		free(it.link);
		return fatelf_diag_oom(c->d);
	}
	c->non_ascii |= has_non_ascii(path) || (it.link && has_non_ascii(it.link));
	it.path = strdup(path);
	if (!it.path) {
		free(it.link);
		return fatelf_diag_oom(c->d);
	}
	c->items[c->nitems++] = it;
	return 0;
}

/* Adds every entry of directory fd (dir is its path, "" for the root). Takes fd. */
static int list_dir(struct creator *c, int fd, const char *dir)
{
	DIR *dp = fdopendir(fd);
	struct dirent *de;
	int q = 0;

	if (!dp) {
		q = -errno;
		close(fd);
		return fatelf_diag_set(c->d, q, -1, "%s: cannot read the directory: %s",
				       *dir ? dir : ".", fatelf_strerror(q));
	}
	for (;;) {
		char path[8192];
		struct stat st;
		int n;

		errno = 0;
		de = readdir(dp);
		if (!de) {
			if (errno)
				q = fatelf_diag_set(c->d, -errno, -1, "%s: cannot read the directory: %s",
						    *dir ? dir : ".", fatelf_strerror(-errno));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n = snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			q = fatelf_diag_set(c->d, -FATELF_E_LIMIT, -1,
					    "%.200s/%.200s: path longer than %zu bytes", *dir ? dir : ".",
					    de->d_name, c->lim.max_path);
			break;
		}
		if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			q = fatelf_diag_set(c->d, -errno, -1, "%s: %s", path, fatelf_strerror(-errno));
			break;
		}
		q = add_item(c, dirfd(dp), de->d_name, path, &st);
		if (q < 0)
			break;
	}
	closedir(dp);
	return q;
}

static int item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->path, ((const struct item *)b)->path);
}

/* Breadth first over the items list itself, so no recursion and one fd at a time. */
static int walk_tree(struct creator *c, const char *tree)
{
	struct stat st;
	int fd, q;

	c->rootfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->rootfd < 0)
		return fatelf_diag_set(c->d, -errno, -1, "cannot open the tree: %s",
				       fatelf_strerror(-errno));
	fd = openat(c->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_set(c->d, -errno, -1, "cannot open the tree: %s",
				       fatelf_strerror(-errno));
	q = list_dir(c, fd, "");
	for (size_t i = 0; q >= 0 && i < c->nitems; i++) {
		if (c->items[i].type != FATELF_ENTRY_DIR)
			continue;
		fd = open_item(c, &c->items[i], O_RDONLY | O_DIRECTORY, &st, c->d);
		if (fd < 0)
			return fd;
		q = list_dir(c, fd, c->items[i].path);
	}
	if (q < 0)
		return q;
	/* An empty tree has no items array at all, which qsort may not get. */
	if (c->nitems > 1)
		qsort(c->items, c->nitems, sizeof(*c->items), item_cmp);
	return 0;
}

static bool is_config(const fatelf_bundle_create_opts *o, const char *path)
{
	if (!o->config_globs || o->nconfig_globs == 0)
		return fnmatch("etc/*", path, 0) == 0;
	for (size_t i = 0; i < o->nconfig_globs; i++)
		if (o->config_globs[i] && fnmatch(o->config_globs[i], path, 0) == 0)
			return true;
	return false;
}

/* Per-record hashes of a FatELF while its bytes stream by. */
struct rec_hash {
	fatelf_sha256 *h[FATELF_MAX_RECORDS];
	unsigned n;
};

static void rec_hash_free(struct rec_hash *rh)
{
	for (unsigned i = 0; i < rh->n; i++)
		fatelf_sha256_free(rh->h[i]);
	rh->n = 0;
}

/* Feeds the part of [pos, pos + len) that falls in each record. */
static void rec_hash_feed(struct rec_hash *rh, const fatelf_bundle_entry *e, const uint8_t *buf,
			  size_t len, uint64_t pos)
{
	for (unsigned i = 0; i < rh->n; i++) {
		uint64_t lo = e->records[i].offset, hi = lo + e->records[i].size;
		uint64_t a = MAX(lo, pos), b = MIN(hi, pos + len);
		if (a < b)
			fatelf_sha256_update(rh->h[i], buf + (a - pos), (size_t)(b - a));
	}
}

/* Classifies a file by its magic and records what the manifest says of it. */
static int classify(fatelf_bundle_entry *e, int fd, fatelf_diag *d)
{
	fatelf_reader src;
	fatelf_diag inner;
	uint8_t magic[4];
	ssize_t n;
	int q;

	e->kind = FATELF_KIND_DATA;
	n = pread(fd, magic, sizeof(magic), 0);
	if (n < 0)
		return fatelf_diag_set(d, -errno, -1, "%s: %s", e->path, fatelf_strerror(-errno));
	if (n < (ssize_t)sizeof(magic))
		return 0;
	if (!fatelf_is_fatelf(magic, 4) && !fatelf_is_elf(magic, 4))
		return 0;
	q = fatelf_reader_seekable_fd(&src, fd);
	if (q < 0)
		return fatelf_diag_set(d, q, -1, "%s: %s", e->path, fatelf_strerror(q));
	fatelf_diag_clear(&inner);
	if (fatelf_is_elf(magic, 4)) {
		fatelf_elfinfo info;
		q = fatelf_elf_inspect(&src, 0, src.size, -1, &info, &inner);
		if (q < 0)
			return fail_path(d, q, &inner, e->path);
		e->kind = FATELF_KIND_ELF;
		e->target = info.target;
		return 0;
	}

	_cleanup_free_ fatelf_header *hdr = malloc(sizeof(*hdr));
	if (!hdr)
		return fatelf_diag_oom(d);
	q = fatelf_validate(&src, NULL, hdr, NULL, &inner);
	if (q < 0)
		return fail_path(d, q, &inner, e->path);
	e->records = calloc(hdr->nrecords, sizeof(*e->records));
	if (!e->records)
		return fatelf_diag_oom(d);
	e->kind = FATELF_KIND_FATELF;
	e->nrecords = hdr->nrecords;
	e->header_size = (uint32_t)FATELF_TABLE_SIZE(hdr->nrecords);
	for (unsigned i = 0; i < hdr->nrecords; i++) {
		e->records[i].target = hdr->records[i].target;
		e->records[i].offset = hdr->records[i].offset;
		e->records[i].size = hdr->records[i].size;
	}
	return 0;
}

/* Step 2 for one regular file: kind, records, size and hashes, in one read. */
static int scan_file(struct creator *c, const struct item *it, fatelf_bundle_entry *e,
		     fatelf_sha256 *whole, uint8_t *buf, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	struct rec_hash rh = { .n = 0 };
	struct stat st;
	uint64_t pos = 0;
	int q;

	fd = open_item(c, it, O_RDONLY, &st, d);
	if (fd < 0)
		return fd;
	if (!S_ISREG(st.st_mode))
		return fatelf_diag_set(d, -EIO, -1, "%s: was replaced while the bundle was made",
				       it->path);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	q = classify(e, fd, d);
	if (q < 0)
		return q;
	for (unsigned i = 0; i < e->nrecords; i++) {
		rh.h[i] = fatelf_sha256_new();
		if (!rh.h[i]) {
			rec_hash_free(&rh);
			return fatelf_diag_oom(d);
		}
		rh.n = i + 1;
	}
	/* Exactly the size fstat gave, so a file that keeps growing ends the loop too. */
	while (pos < (uint64_t)st.st_size) {
		size_t want = (size_t)MIN((uint64_t)IO_CHUNK, (uint64_t)st.st_size - pos);
		ssize_t n = pread(fd, buf, want, (off_t)pos);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			q = fatelf_diag_set(d, -errno, -1, "%s: read error: %s", it->path,
					    fatelf_strerror(-errno));
			break;
		}
		if (n == 0)
			break;
		fatelf_sha256_update(whole, buf, (size_t)n);
		if (rh.n)
			rec_hash_feed(&rh, e, buf, (size_t)n, pos);
		pos += (uint64_t)n;
	}
	if (q == 0 && (pos != (uint64_t)st.st_size || pread(fd, buf, 1, (off_t)pos) != 0))
		q = fatelf_diag_set(d, -EIO, -1, "%s: changed size while it was read", it->path);
	if (q == 0) {
		e->size = pos;
		fatelf_sha256_final(whole, e->sha256);
		for (unsigned i = 0; i < rh.n; i++)
			fatelf_sha256_final(rh.h[i], e->records[i].sha256);
	}
	rec_hash_free(&rh);
	return q;
}

static int set_str(char **field, const char *v)
{
	char *s = strdup(v ? v : "");

	if (!s)
		return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

int fatelf_bundle_manifest_package(fatelf_manifest *m, const fatelf_bundle_create_opts *o)
{
	if (set_str(&m->name, o->name) < 0 || set_str(&m->version, o->version) < 0 ||
	    set_str(&m->summary, o->summary) < 0 || set_str(&m->vendor, o->vendor) < 0 ||
	    set_str(&m->license, o->license) < 0 || set_str(&m->homepage, o->homepage) < 0)
		return -ENOMEM;
	/* Checked by fatelf_bundle_opts_check already. */
	for (size_t i = 0; i < o->ndepends; i++) {
		int r = fatelf_manifest_add_depend(m, o->depends[i], NULL);

		if (r < 0)
			return r == -ENOMEM ? r : -EINVAL;
	}
	return 0;
}

/*
 * Step 2 runs on every CPU (up to SCAN_THREADS): hashing is the one cost
 * a plain tar does not have, and the files are independent. Workers take
 * entries in index order; the error reported is the one of the lowest
 * index, as a single thread would find it, because every index below a
 * failed one was taken before it and is finished by its worker.
 */
#define SCAN_THREADS 4

struct scanner {
	struct creator *c;
	fatelf_manifest *m;
	pthread_t thread;
	bool started;
	int err;
	size_t err_index;
	fatelf_diag d;
};

static void *scan_worker(void *arg)
{
	struct scanner *w = arg;
	struct creator *c = w->c;
	fatelf_sha256 *whole = fatelf_sha256_new();
	uint8_t *buf = malloc(IO_CHUNK);

	w->err = 0;
	w->err_index = SIZE_MAX;
	fatelf_diag_clear(&w->d);
	if (!whole || !buf) {
		w->err = fatelf_diag_oom(&w->d);
		w->err_index = 0;
		atomic_store(&c->scan_stop, 0);
	}
	while (!w->err) {
		size_t i = atomic_fetch_add(&c->scan_next, 1);
		int q;

		if (i >= c->nitems || i > atomic_load(&c->scan_stop))
			break;
		if (c->items[i].type != FATELF_ENTRY_FILE)
			continue;
		q = scan_file(c, &c->items[i], &w->m->entries[i], whole, buf, &w->d);
		if (q < 0) {
			size_t stop = atomic_load(&c->scan_stop);
			w->err = q;
			w->err_index = i;
			while (i < stop && !atomic_compare_exchange_weak(&c->scan_stop, &stop, i))
				;
		}
	}
	free(buf);
	fatelf_sha256_free(whole);
	return NULL;
}

static int scan_files(struct creator *c, fatelf_manifest *m)
{
	struct scanner w[SCAN_THREADS];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = ncpu < 1 ? 1 : MIN((size_t)ncpu, (size_t)SCAN_THREADS);
	const struct scanner *first = NULL;

	atomic_store(&c->scan_next, 0);
	atomic_store(&c->scan_stop, SIZE_MAX);
	memset(w, 0, sizeof(w));
	for (size_t t = 0; t < n; t++) {
		w[t].c = c;
		w[t].m = m;
	}
	/* Worker 0 is this thread; a worker that cannot start is simply not there. */
	for (size_t t = 1; t < n; t++)
		w[t].started = pthread_create(&w[t].thread, NULL, scan_worker, &w[t]) == 0;
	scan_worker(&w[0]);
	for (size_t t = 1; t < n; t++)
		if (w[t].started)
			pthread_join(w[t].thread, NULL);
	for (size_t t = 0; t < n; t++) {
		if ((t == 0 || w[t].started) && w[t].err &&
		    (!first || w[t].err_index < first->err_index))
			first = &w[t];
	}
	if (!first)
		return 0;
	if (c->d)
		*c->d = first->d;
	return first->err;
}

/* Steps 1 and 2: the manifest of the tree. */
static int build_manifest(struct creator *c, fatelf_manifest **ret)
{
	const fatelf_bundle_create_opts *o = c->o;
	fatelf_manifest *m = fatelf_manifest_new();
	int q;

	if (!m)
		return fatelf_diag_oom(c->d);
	m->format = FATELF_BUNDLE_FORMAT;
	if (fatelf_bundle_manifest_package(m, o) < 0)
		goto oom;
	for (size_t i = 0; i < c->nitems; i++)
		if (!fatelf_manifest_add(m, c->items[i].path, c->items[i].type))
			goto oom;
	for (size_t i = 0; i < c->nitems; i++) {
		const struct item *it = &c->items[i];
		fatelf_bundle_entry *e = &m->entries[i];

		e->mode = it->mode;
		e->setid = (it->mode & (S_ISUID | S_ISGID)) != 0;
		if (it->type == FATELF_ENTRY_SYMLINK) {
			e->link_target = strdup(it->link);
			if (!e->link_target)
				goto oom;
		}
		if (it->type == FATELF_ENTRY_FILE)
			e->config = is_config(o, it->path);
	}
	q = scan_files(c, m);
	if (q < 0)
		goto out;
	*ret = TAKE_PTR(m);
	goto out;
oom:
	q = fatelf_diag_oom(c->d);
out:
	fatelf_manifest_free(m);
	return q;
}

/* libarchive's verdict on a call, with its own message. */
static int ar_check(struct creator *c, struct archive *a, int r, const char *what)
{
	const char *s;
	int e;

	if (r == ARCHIVE_OK)
		return 0;
	s = archive_error_string(a);
	e = archive_errno(a);
	return fatelf_diag_set(c->d, e > 0 && e < FATELF_E_BASE ? -e : -FATELF_E_ARCHIVE, -1,
			       "%s: %s", what, s ? s : "libarchive failed");
}

static int ar_header(struct creator *c, struct archive *a, const char *name, mode_t type,
		     uint32_t mode, uint64_t size, const char *link)
{
	struct archive_entry *ae = archive_entry_new();
	int r;

	if (!ae)
		return fatelf_diag_oom(c->d);
	archive_entry_set_pathname(ae, name);
	archive_entry_set_filetype(ae, type);
	archive_entry_set_perm(ae, mode);
	archive_entry_set_uid(ae, 0);
	archive_entry_set_gid(ae, 0);
	archive_entry_set_mtime(ae, c->o->mtime, 0);
	if (type == AE_IFREG)
		archive_entry_set_size(ae, (la_int64_t)size);
	if (link)
		archive_entry_set_symlink(ae, link);
	r = archive_write_header(a, ae);
	archive_entry_free(ae);
	return ar_check(c, a, r, name);
}

static int ar_data(struct creator *c, struct archive *a, const void *buf, size_t len,
		   const char *name)
{
	la_ssize_t n = archive_write_data(a, buf, len);

	if (n < 0 || (size_t)n != len)
		return ar_check(c, a, n < 0 ? (int)n : ARCHIVE_FATAL, name);
	return 0;
}

static int ar_file(struct creator *c, struct archive *a, const struct item *it,
		   const fatelf_bundle_entry *e, const char *name)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint64_t pos = 0;
	int q;

	fd = open_item(c, it, O_RDONLY, &st, c->d);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size != e->size)
		return fatelf_diag_set(c->d, -EIO, -1, "%s: changed size while the bundle was made",
				       it->path);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	q = ar_header(c, a, name, AE_IFREG, e->mode, e->size, NULL);
	while (q == 0 && pos < e->size) {
		size_t want = (size_t)MIN((uint64_t)IO_CHUNK, e->size - pos);
		ssize_t n = pread(fd, c->buf, want, (off_t)pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fatelf_diag_set(c->d, -errno, -1, "%s: read error: %s", it->path,
					       fatelf_strerror(-errno));
		if (n == 0)
			return fatelf_diag_set(c->d, -EIO, -1,
					       "%s: changed size while the bundle was made", it->path);
		q = ar_data(c, a, c->buf, (size_t)n, name);
		pos += (uint64_t)n;
	}
	return q;
}

static int ar_setup(struct creator *c, struct archive *a)
{
	int q;

	/*
	 * pax_restricted writes plain ustar headers and adds an extended
	 * header only for what ustar cannot hold (long names, big sizes,
	 * non-ASCII names), whose own name has no pid in it. Owners, times
	 * and modes come only from what ar_header sets.
	 */
	q = ar_check(c, a, archive_write_set_format_pax_restricted(a), "pax format");
	/*
	 * libarchive converts non-ASCII names through the caller's locale: a
	 * UTF-8 pax "path" under a UTF-8 locale, the raw bytes with
	 * hdrcharset=BINARY under "C", an error under others. So that the bytes
	 * do not depend on LANG, a tree with any non-ASCII name or link target
	 * is written in binary mode: every name as its exact bytes (already
	 * checked to be UTF-8), which a reader gets back unconverted whatever
	 * its own locale. Binary mode costs an extended header per member, so
	 * all-ASCII trees (most) keep plain ustar headers.
	 */
	if (q == 0 && c->non_ascii)
		q = ar_check(c, a, archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY"),
			     "pax hdrcharset");
	if (q < 0)
		return q;
	switch (c->o->compression) {
	case FATELF_COMPRESS_ZSTD:
		q = ar_check(c, a, archive_write_add_filter_zstd(a), "zstd");
		/* zstd gives the same bytes for any number of workers >= 1, so
		 * this uses every core and stays reproducible across machines. */
		if (q == 0) {
			char threads[16];
			long n = sysconf(_SC_NPROCESSORS_ONLN);
			snprintf(threads, sizeof(threads), "%ld", n < 1 ? 1 : MIN(n, 16));
			q = ar_check(c, a, archive_write_set_filter_option(a, "zstd", "threads", threads),
				     "zstd threads");
		}
		break;
	case FATELF_COMPRESS_NONE:
		q = ar_check(c, a, archive_write_add_filter_none(a), "no compression");
		break;
	case FATELF_COMPRESS_GZIP:
		q = ar_check(c, a, archive_write_add_filter_gzip(a), "gzip");
		/* No time stamp or name in the gzip header: they vary between runs. */
		if (q == 0)
			q = ar_check(c, a, archive_write_set_filter_option(a, "gzip", "timestamp", NULL),
				     "gzip timestamp");
		break;
	case FATELF_COMPRESS_XZ:
		q = ar_check(c, a, archive_write_add_filter_xz(a), "xz");
		break;
	default:
		return fatelf_diag_set(c->d, -FATELF_E_INVALID, -1, "unknown compression %d",
				       c->o->compression);
	}
	if (q < 0)
		return q;
	/* No padding of the last block, whether out_fd is a file, a pipe or a tty. */
	return ar_check(c, a, archive_write_set_bytes_in_last_block(a, 1), "block size");
}

/* Step 3. */
static int write_archive(struct creator *c, int out_fd, const fatelf_manifest *m,
			 const char *json, size_t json_len, const char *sig)
{
	struct archive *a;
	char name[8192];
	int q;

	a = archive_write_new();
	if (!a)
		return fatelf_diag_oom(c->d);
	q = ar_setup(c, a);
	if (q == 0)
		q = ar_check(c, a, archive_write_open_fd(a, out_fd), "opening the output");
	if (q == 0)
		q = ar_header(c, a, FATELF_MANIFEST_NAME, AE_IFREG, 0644, json_len, NULL);
	if (q == 0)
		q = ar_data(c, a, json, json_len, FATELF_MANIFEST_NAME);
	if (q == 0 && sig) {
		q = ar_header(c, a, FATELF_SIGNATURE_NAME, AE_IFREG, 0644, strlen(sig), NULL);
		if (q == 0)
			q = ar_data(c, a, sig, strlen(sig), FATELF_SIGNATURE_NAME);
	}
	for (size_t i = 0; q == 0 && i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		const struct item *it = &c->items[i];

		if (strcmp(e->path, it->path) != 0) {
			q = fatelf_diag_set(c->d, -FATELF_E_INVALID, -1,
					    "%s: manifest entries out of step with the tree", e->path);
			break;
		}
		snprintf(name, sizeof(name), FATELF_PAYLOAD_PREFIX "%s%s", e->path,
			 e->type == FATELF_ENTRY_DIR ? "/" : "");
		switch (e->type) {
		case FATELF_ENTRY_DIR:
			q = ar_header(c, a, name, AE_IFDIR, e->mode, 0, NULL);
			break;
		case FATELF_ENTRY_SYMLINK:
			q = ar_header(c, a, name, AE_IFLNK, 0777, 0, e->link_target);
			break;
		default:
			q = ar_file(c, a, it, e, name);
			break;
		}
	}
	if (q == 0)
		q = ar_check(c, a, archive_write_close(a), "finishing the archive");
	archive_write_free(a);
	return q;
}

/*
 * Before a file is hashed: the entries' paths and link targets alone may
 * make a manifest no reader takes. The fewest bytes each entry takes are
 * added up (the header's are left out), so a tree refused here would be
 * refused after the hashing all the same, only later.
 */
static int manifest_fits(struct creator *c)
{
	size_t least = 0;

	for (size_t i = 0; i < c->nitems; i++) {
		const struct item *it = &c->items[i];

		least += fatelf_manifest_entry_min_len(it->type, strlen(it->path),
						       it->link ? strlen(it->link) : 0);
		if (least > c->lim.max_manifest)
			break;
	}
	if (least <= c->lim.max_manifest)
		return 0;
	/* The rest counted too, for the message: the walk has the lengths. */
	least = 0;
	for (size_t i = 0; i < c->nitems; i++)
		least += fatelf_manifest_entry_min_len(c->items[i].type, strlen(c->items[i].path),
						       c->items[i].link ? strlen(c->items[i].link) : 0);
	return fatelf_diag_set(c->d, -FATELF_E_MANIFEST_TOO_BIG, -1,
			       "the manifest of %zu entries would be at least %zu bytes, the limit is %zu",
			       c->nitems, least, c->lim.max_manifest);
}

static void limits_fill(fatelf_bundle_limits *lim, const fatelf_bundle_limits *given);

/* The archive side, for the unify writer (manifest_private.h). */
int fatelf_bundle_archive_open(const fatelf_bundle_create_opts *o, bool non_ascii, int out_fd,
			       const char *json, size_t json_len, const char *sig, struct archive **ret,
			       fatelf_diag *d)
{
	struct creator c = { .o = o, .rootfd = -1, .non_ascii = non_ascii, .d = d };
	struct archive *a = archive_write_new();
	int q;

	if (!a)
		return fatelf_diag_oom(d);
	q = ar_setup(&c, a);
	if (q == 0)
		q = ar_check(&c, a, archive_write_open_fd(a, out_fd), "opening the output");
	if (q == 0)
		q = ar_header(&c, a, FATELF_MANIFEST_NAME, AE_IFREG, 0644, json_len, NULL);
	if (q == 0)
		q = ar_data(&c, a, json, json_len, FATELF_MANIFEST_NAME);
	if (q == 0 && sig) {
		q = ar_header(&c, a, FATELF_SIGNATURE_NAME, AE_IFREG, 0644, strlen(sig), NULL);
		if (q == 0)
			q = ar_data(&c, a, sig, strlen(sig), FATELF_SIGNATURE_NAME);
	}
	if (q < 0) {
		archive_write_free(a);
		return q;
	}
	*ret = a;
	return 0;
}

int fatelf_bundle_archive_header(struct archive *a, const fatelf_bundle_create_opts *o, const fatelf_bundle_entry *e,
				 fatelf_diag *d)
{
	struct creator c = { .o = o, .rootfd = -1, .d = d };
	char name[8192];

	snprintf(name, sizeof(name), FATELF_PAYLOAD_PREFIX "%s%s", e->path, e->type == FATELF_ENTRY_DIR ? "/" : "");
	switch (e->type) {
	case FATELF_ENTRY_DIR:
		return ar_header(&c, a, name, AE_IFDIR, e->mode, 0, NULL);
	case FATELF_ENTRY_SYMLINK:
		return ar_header(&c, a, name, AE_IFLNK, 0777, 0, e->link_target);
	default:
		return ar_header(&c, a, name, AE_IFREG, e->mode, e->size, NULL);
	}
}

int fatelf_bundle_archive_data(struct archive *a, const fatelf_bundle_entry *e, const void *buf, size_t len,
			       fatelf_diag *d)
{
	struct creator c = { .rootfd = -1, .d = d };

	return ar_data(&c, a, buf, len, e->path);
}

int fatelf_bundle_archive_close(struct archive *a, fatelf_diag *d)
{
	struct creator c = { .rootfd = -1, .d = d };
	int q = ar_check(&c, a, archive_write_close(a), "finishing the archive");

	archive_write_free(a);
	return q;
}

/* Serializes m, checks its size against lim, and signs it when o says so. */
int fatelf_bundle_manifest_finish(fatelf_manifest *m, const fatelf_bundle_create_opts *o,
				  const fatelf_bundle_limits *lim, char **ret_json, size_t *ret_len,
				  char **ret_sig, fatelf_diag *d)
{
	_cleanup_free_ char *json = NULL, *sig = NULL, *comment = NULL;
	size_t json_len = 0;
	int q;

	q = fatelf_manifest_serialize(m, &json, &json_len, d);
	/* Before a byte is written: a manifest no reader takes is no bundle. */
	if (q == 0 && json_len > lim->max_manifest)
		q = fatelf_diag_set(d, -FATELF_E_MANIFEST_TOO_BIG, -1,
				    "the manifest of %zu entries would be %zu bytes, the limit is %zu",
				    m->nentries, json_len, lim->max_manifest);
	if (q == 0 && o->sign_key) {
		const char *tc = o->trusted_comment;
		if (!tc) {
			if (asprintf(&comment, "fatbundle %s %s", o->name, o->version) < 0) {
				comment = NULL;
				q = fatelf_diag_oom(d);
			}
			tc = comment;
		}
		if (q == 0)
			q = fatelf_ms_sign(o->sign_key, json, json_len, NULL, tc, &sig, d);
	}
	if (q < 0)
		return q;
	*ret_json = TAKE_PTR(json);
	*ret_len = json_len;
	*ret_sig = TAKE_PTR(sig);
	return 0;
}

/* The options' fields every writer checks first. */
int fatelf_bundle_opts_check(const fatelf_bundle_create_opts *o, fatelf_diag *d)
{
	char why_buf[160], q_name[FATELF_TEXT_QUOTE_BUF];
	const char *why;

	if (!o || !o->name || !o->version)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "a bundle needs a name and a version");
	why = fatelf_pkg_name_problem(o->name, strlen(o->name), why_buf, sizeof(why_buf));
	if (why)
		return fatelf_diag_set(d, -FATELF_E_PKG_NAME, -1, "package name '%s' %s",
				       fatelf_text_quote(o->name, q_name), why);
	if (!fatelf_pkg_version_valid(o->version))
		return fatelf_diag_set(d, -FATELF_E_PKG_VERSION, -1,
				       "package version '%.100s' is not a valid dpkg version",
				       o->version);
	if (o->ndepends) {
		_cleanup_manifest_ fatelf_manifest *m = fatelf_manifest_new();

		if (!m || !(m->name = strdup(o->name)))
			return fatelf_diag_oom(d);
		for (size_t i = 0; i < o->ndepends; i++) {
			int r = fatelf_manifest_add_depend(m, o->depends[i], d);

			if (r < 0)
				return r;
		}
	}
	if (o->compression < FATELF_COMPRESS_ZSTD || o->compression > FATELF_COMPRESS_XZ)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "unknown compression %d",
				       o->compression);
	return 0;
}

void fatelf_bundle_limits_fill(fatelf_bundle_limits *lim, const fatelf_bundle_limits *given)
{
	limits_fill(lim, given);
}

static void limits_fill(fatelf_bundle_limits *lim, const fatelf_bundle_limits *given)
{
	fatelf_bundle_limits def;

	fatelf_bundle_limits_default(&def);
	lim->max_path = given->max_path ? given->max_path : def.max_path;
	lim->max_entries = given->max_entries ? given->max_entries : def.max_entries;
	lim->max_total = given->max_total ? given->max_total : def.max_total;
	lim->max_manifest = fatelf_bundle_manifest_max(given);
	lim->max_format = given->max_format;
}

int fatelf_bundle_create(const char *tree, int out_fd, const fatelf_bundle_create_opts *o,
			 fatelf_diag *d)
{
	struct creator c = { .o = o, .rootfd = -1, .d = d };
	fatelf_manifest *m = NULL;
	_cleanup_free_ char *json = NULL, *sig = NULL;
	size_t json_len = 0;
	int q;

	fatelf_diag_clear(d);
	if (!tree)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no tree");
	q = fatelf_bundle_opts_check(o, d);
	if (q < 0)
		return q;
	limits_fill(&c.lim, &o->limits);
	if (out_fd < 0 && !o->open_output)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no output");
	/* An output opened later is not in the tree while it is walked. */
	if (out_fd >= 0) {
		if (fstat(out_fd, &c.out) < 0)
			return fatelf_diag_set(d, -errno, -1, "output: %s", fatelf_strerror(-errno));
		c.out_is_file = S_ISREG(c.out.st_mode);
	}
	c.buf = malloc(IO_CHUNK);
	if (!c.buf)
		return fatelf_diag_oom(d);

	q = walk_tree(&c, tree);
	if (q == 0)
		q = manifest_fits(&c);
	if (q == 0)
		q = build_manifest(&c, &m);
	if (q == 0)
		q = fatelf_bundle_manifest_finish(m, o, &c.lim, &json, &json_len, &sig, d);
	if (q == 0 && out_fd < 0) {
		out_fd = o->open_output(o->userdata, d);
		if (out_fd < 0)
			q = out_fd;
	}
	if (q == 0)
		q = write_archive(&c, out_fd, m, json, json_len, sig);
	/* libarchive and the hash queue run out of memory without a diag */
	if (q == -ENOMEM)
		fatelf_diag_oom(d);
	fatelf_manifest_free(m);
	creator_done(&c);
	return q;
}
