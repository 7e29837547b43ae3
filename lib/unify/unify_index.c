/*
 * A unify source read into its index (unify.h), through libarchive for
 * all three kinds: archive_read_disk for a directory (symlinks not
 * followed), a tar reader for an archive, and the .deb reader's data
 * archive for a package. One pass, streaming: nothing is unpacked. The
 * files' bytes are hashed on a second thread (hashq.h) while the next
 * ones are read; their digests are collected in file order.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcatch.h"
#include "hashq.h"
#include "macro.h"
#include "text.h"
#include "unify.h"

#define AR_MAGIC "!<arch>\n"

struct indexer {
	fatelf_unify_index *x;
	const fatelf_bundle_limits *lim;
	const char *source;
	size_t cap;
	fatelf_hashq *q;
	/* the items of the files ended and not yet collected, oldest first */
	size_t pending[FATELF_HASHQ_PENDING];
	unsigned npending, first;
	fatelf_diag *d;
};

void fatelf_unify_index_free(fatelf_unify_index *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nitems; i++) {
		free((char *)x->items[i].path);
		free((char *)x->items[i].link);
		free(x->items[i].elf_msg);
	}
	free(x->items);
	fatelf_deb_info_done(&x->deb);
	memset(x, 0, sizeof(*x));
}

static int entry_fail(struct indexer *ix, int code, const char *path, const char *what)
{
	char q[FATELF_TEXT_QUOTE_BUF];

	/* The entry is the subject; the message names it too, once. */
	fatelf_diag_set(ix->d, code, -1, "entry '%s': %s", fatelf_text_quote(path, q), what);
	fatelf_diag_names(ix->d, path);
	return code;
}

static const char *file_type_word(mode_t mode)
{
	return S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" :
	       S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/*
 * A member of a type no bundle holds. Which source holds it matters as
 * much as which member (every source has its own tree), so the source is
 * the subject, as for a member with an absolute name, and the message
 * names both.
 */
static int member_fail(struct indexer *ix, const char *path, const char *what, const char *other)
{
	char q[FATELF_TEXT_QUOTE_BUF], sq[FATELF_TEXT_QUOTE_BUF], oq[FATELF_TEXT_QUOTE_BUF];

	return fatelf_diag_set(ix->d, -FATELF_E_MEMBER_TYPE, -1,
			       "entry '%s' in %s: %s%s%s%s; a bundle holds files, directories and symlinks",
			       fatelf_text_quote(path, q), fatelf_text_quote(ix->source, sq), what,
			       other ? " '" : "", other ? fatelf_text_quote(other, oq) : "", other ? "'" : "");
}

static int archive_fail(struct indexer *ix, struct archive *a)
{
	char q[FATELF_TEXT_QUOTE_BUF];
	const char *es = archive_error_string(a);

	return fatelf_diag_set(ix->d, -FATELF_E_ARCHIVE, -1, "%s", fatelf_text_quote(es ? es : "unreadable", q));
}

/* The target of an ELF header's first bytes; false when they are not one. */
static bool elf_target(const uint8_t *h, size_t n, fatelf_target *ret)
{
	if (n < 52 || !fatelf_is_elf(h, n))
		return false;
	if ((h[4] != FATELF_CLASS32 && h[4] != FATELF_CLASS64) ||
	    (h[5] != FATELF_DATA2LSB && h[5] != FATELF_DATA2MSB))
		return false;
	*ret = (fatelf_target) {
		.machine = h[5] == FATELF_DATA2LSB ? (uint16_t)(h[18] | h[19] << 8) : (uint16_t)(h[18] << 8 | h[19]),
		.osabi = h[7],
		.osabi_version = h[8],
		.word_size = h[4],
		.byte_order = h[5],
	};
	return true;
}

/* The entry's path as the bundle has it: "./" and "/" in front and after
 * dropped (archive_read_disk: the source's path too); NULL for the root. */
static const char *entry_path(const char *strip, struct archive_entry *e, char *buf, size_t size)
{
	const char *p = archive_entry_pathname(e);
	size_t len;

	if (!p)
		return NULL;
	if (strip) {
		size_t sl = strlen(strip);

		if (strncmp(p, strip, sl) != 0)
			return NULL;
		p += sl;
	}
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	while (p[0] == '/')
		p++;
	len = strlen(p);
	while (len > 0 && p[len - 1] == '/')
		len--;
	if (len == 0 || (len == 1 && p[0] == '.') || len >= size)
		return len >= size ? p : NULL;
	memcpy(buf, p, len);
	buf[len] = 0;
	return buf;
}

/* Room for one more item. */
static int grow_items(struct indexer *ix)
{
	size_t c = ix->cap ? ix->cap * 2 : 256;
	fatelf_unify_item *v;

	if (ix->x->nitems < ix->cap)
		return 0;
	v = reallocarray(ix->x->items, c, sizeof(*v));
	if (!v)
		return fatelf_diag_oom(ix->d);
	ix->x->items = v;
	ix->cap = c;
	return 0;
}

/* Hashes the zeros of a hole from *at up to end. */
static int hash_zeros(fatelf_hashq *q, uint64_t *at, uint64_t end)
{
	static const uint8_t zeros[4096];

	while (*at < end) {
		size_t k = (size_t)MIN((uint64_t)sizeof(zeros), end - *at);
		int r = fatelf_hashq_feed(q, zeros, k);

		if (r < 0)
			return r;
		*at += k;
	}
	return 0;
}

/* The oldest pending file's digest into its item, 1; with wait, waits
 * for it; 0 when none is ready. */
static int collect_one(struct indexer *ix, bool wait)
{
	fatelf_hash_result res;
	int r;

	if (ix->npending == 0)
		return 0;
	r = fatelf_hashq_collect(ix->q, wait, &res);
	if (r <= 0)
		return r < 0 ? fatelf_diag_set(ix->d, r, -1, "hashing: %s", fatelf_strerror(r)) : 0;
	memcpy(ix->x->items[ix->pending[ix->first]].sha256, res.file, 32);
	ix->first = (ix->first + 1) % FATELF_HASHQ_PENDING;
	ix->npending--;
	return 1;
}

/* it's ELF checks, as glue makes them, over what was caught of it. */
static int catch_inspect(struct indexer *ix, fatelf_elfcatch *c, fatelf_unify_item *it)
{
	fatelf_elfinfo info = { 0 };
	fatelf_diag inner;
	int r;

	fatelf_diag_clear(&inner);
	r = fatelf_elfcatch_inspect(c, it->size, &info, &inner);
	if (r == -ENOMEM)
		return fatelf_diag_oom(ix->d);
	it->elf_r = r;
	it->max_align = info.max_align;
	if (it->elf_r < 0 && !(it->elf_msg = strdup(inner.msg)))
		return fatelf_diag_oom(ix->d);
	return 0;
}

static int add_entry(struct indexer *ix, struct archive *a, struct archive_entry *e, const char *path, bool disk,
		     uint64_t ord)
{
	fatelf_unify_item it = { .ord = ord };
	int r;

	r = fatelf_path_check(path, ix->lim, ix->d);
	if (r < 0)
		return r;
	if (ix->x->nitems >= ix->lim->max_entries)
		return entry_fail(ix, -FATELF_E_LIMIT, path, "more entries than the limit of a bundle");
	if (archive_entry_hardlink(e))
		return member_fail(ix, path, "a hard link to", archive_entry_hardlink(e));
	it.mode = archive_entry_perm(e) & 07777;
	switch (archive_entry_filetype(e)) {
	case AE_IFDIR:
		it.type = FATELF_ENTRY_DIR;
		break;
	case AE_IFLNK:
		it.type = FATELF_ENTRY_SYMLINK;
		it.mode = 0777;
		if (!archive_entry_symlink(e) || !archive_entry_symlink(e)[0])
			return member_fail(ix, path, "a symlink with no target", NULL);
		it.link = strdup(archive_entry_symlink(e));
		if (!it.link)
			return fatelf_diag_oom(ix->d);
		break;
	case AE_IFREG: {
		fatelf_elfcatch c = { 0 };
		const void *buf;
		size_t len;
		la_int64_t off;
		int ar;

		it.type = FATELF_ENTRY_FILE;
		/* Room for one more pending file; ready digests on the way. */
		do
			r = collect_one(ix, ix->npending >= FATELF_HASHQ_PENDING);
		while (r > 0);
		if (r < 0)
			return r;
		r = fatelf_hashq_begin(ix->q, NULL, 0);
		if (r < 0)
			return fatelf_diag_set(ix->d, r, -1, "hashing: %s", fatelf_strerror(r));
		if (disk && archive_entry_ino_is_set(e) && archive_entry_dev_is_set(e) &&
		    archive_entry_mtime_is_set(e) && archive_entry_ctime_is_set(e)) {
			it.has_stat = true;
			it.dev = (uint64_t)archive_entry_dev(e);
			it.ino = (uint64_t)archive_entry_ino64(e);
			it.mtime = (int64_t)archive_entry_mtime(e);
			it.mtime_nsec = archive_entry_mtime_nsec(e);
			it.ctime = (int64_t)archive_entry_ctime(e);
			it.ctime_nsec = archive_entry_ctime_nsec(e);
		}
		while ((ar = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
			r = fatelf_elfcatch_block(&c, buf, (uint64_t)off, len);
			if (r < 0) {
				fatelf_elfcatch_done(&c);
				return r == -ENOMEM ? fatelf_diag_oom(ix->d)
						    : fatelf_diag_set(ix->d, r, -1, "%s", fatelf_strerror(r));
			}
			r = hash_zeros(ix->q, &it.size, (uint64_t)off);       /* a hole */
			if (r == 0)
				r = fatelf_hashq_feed(ix->q, buf, len);
			if (r < 0)
				break;
			it.size = (uint64_t)off + len;
		}
		if (r == 0 && ar == ARCHIVE_EOF && archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
			r = hash_zeros(ix->q, &it.size, (uint64_t)archive_entry_size(e));
		if (r == 0)
			r = fatelf_hashq_end(ix->q);
		if (r < 0 || ar != ARCHIVE_EOF) {
			fatelf_elfcatch_done(&c);
			return r < 0 ? fatelf_diag_set(ix->d, r, -1, "hashing: %s", fatelf_strerror(r)) : archive_fail(ix, a);
		}
		it.elf = elf_target(c.head, (size_t)MIN(it.size, (uint64_t)sizeof(c.head)), &it.target);
		it.fat = fatelf_is_fatelf(c.head, (size_t)MIN(it.size, (uint64_t)sizeof(c.head)));
		r = it.elf ? catch_inspect(ix, &c, &it) : 0;
		fatelf_elfcatch_done(&c);
		if (r < 0) {
			free(it.elf_msg);
			return r;
		}
		break;
	}
	default:
		return member_fail(ix, path, file_type_word(archive_entry_filetype(e)), NULL);
	}
	it.path = strdup(path);
	if (!it.path || grow_items(ix) < 0) {
		free((char *)it.path);
		free((char *)it.link);
		free(it.elf_msg);
		return fatelf_diag_oom(ix->d);
	}
	if (it.type == FATELF_ENTRY_FILE) {
		ix->pending[(ix->first + ix->npending) % FATELF_HASHQ_PENDING] = ix->x->nitems;
		ix->npending++;
	}
	ix->x->items[ix->x->nitems++] = it;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	return strcmp(((const fatelf_unify_item *)a)->path, ((const fatelf_unify_item *)b)->path);
}

static bool stream_is_disk(const fatelf_unify_stream *s);

/* The item of path in the sorted index, or NULL. */
static const fatelf_unify_item *item_find(const fatelf_unify_index *x, const char *path)
{
	fatelf_unify_item key = { .path = path };

	return bsearch(&key, x->items, x->nitems, sizeof(*x->items), item_cmp);
}

/*
 * An archive's members each come after their parent directory's own
 * member, as dpkg-deb and tar write them, and dpkg refuses a .deb whose
 * parent is not there rather than inventing one (with which owner and
 * mode?). So does a source: the parent is named, and the source, since
 * a directory that one archive lacks is not the merge's fault.
 */
static int check_parents(struct indexer *ix)
{
	char q[FATELF_TEXT_QUOTE_BUF], pq[FATELF_TEXT_QUOTE_BUF], sq[FATELF_TEXT_QUOTE_BUF];

	for (size_t i = 0; i < ix->x->nitems; i++) {
		const char *path = ix->x->items[i].path, *slash = strrchr(path, '/');
		const fatelf_unify_item *parent;
		char dir[4096];

		if (!slash)
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		parent = item_find(ix->x, dir);
		if (parent && parent->type == FATELF_ENTRY_DIR)
			continue;
		fatelf_diag_set(ix->d, -FATELF_E_PATH_PARENT, -1,
				"member '%s': parent directory '%s' %s %s (each member's parent directory is a member too, as dpkg-deb and tar write them)",
				fatelf_text_quote(path, q), fatelf_text_quote(dir, pq),
				!parent ? "is missing from" : parent->type == FATELF_ENTRY_SYMLINK ? "is a symlink, not a directory, in" : "is a file, not a directory, in",
				fatelf_text_quote(ix->source, sq));
		return ix->d->code;
	}
	return 0;
}

static int read_entries(struct indexer *ix, fatelf_unify_stream *s)
{
	for (uint64_t ord = 0;; ord++) {
		struct archive_entry *e;
		const char *path;
		int r = fatelf_unify_stream_next(s, &path, &e, ix->d);

		if (r < 0)
			return r;
		if (r == 0)
			break;
		r = add_entry(ix, fatelf_unify_stream_archive(s), e, path, stream_is_disk(s), ord);
		if (r < 0)
			return r;
	}
	while (ix->npending > 0) {
		int r = collect_one(ix, true);

		if (r < 0)
			return r;
	}
	if (ix->x->nitems > 1)
		qsort(ix->x->items, ix->x->nitems, sizeof(*ix->x->items), item_cmp);
	for (size_t i = 1; i < ix->x->nitems; i++)
		if (strcmp(ix->x->items[i - 1].path, ix->x->items[i].path) == 0)
			return entry_fail(ix, -FATELF_E_PATH_DUPLICATE, ix->x->items[i].path, "two entries with this path");
	return stream_is_disk(s) ? 0 : check_parents(ix);
}

struct fatelf_unify_stream {
	int fd;
	struct archive *a;      /* the deb's when deb is set */
	struct archive_entry *disk_entry;
	bool disk;
	uint64_t nheaders;      /* members read, the skipped root among them */
	char *strip;
	fatelf_deb *deb;
	fatelf_reader src;
	char path[4096];
};

void fatelf_unify_stream_free(fatelf_unify_stream *s)
{
	if (!s)
		return;
	if (s->a && !s->deb)
		archive_read_free(s->a);
	fatelf_deb_free(s->deb);
	if (s->src.close)
		s->src.close(s->src.ctx);
	if (s->fd >= 0)
		close(s->fd);
	archive_entry_free(s->disk_entry);
	free(s->strip);
	free(s);
}

static int stream_archive_fail(struct archive *a, fatelf_diag *d)
{
	char q[FATELF_TEXT_QUOTE_BUF];
	const char *es = archive_error_string(a);

	return fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1, "%s", fatelf_text_quote(es ? es : "unreadable", q));
}

int fatelf_unify_stream_open(const char *source, fatelf_unify_stream **ret, fatelf_deb_info *ret_deb,
			     fatelf_diag *d)
{
	fatelf_unify_stream *s = calloc(1, sizeof(*s));
	fatelf_deb_info ignored = { 0 };
	struct stat st;
	char magic[8];
	int r;

	if (!s)
		return fatelf_diag_oom(d);
	/* O_NONBLOCK: a FIFO is refused, not waited on for a writer. */
	s->fd = open(source, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (s->fd < 0 || fstat(s->fd, &st) < 0) {
		r = fatelf_diag_set(d, -errno, -1, "%s", strerror(errno));
		goto fail;
	}
	/* A device reads as whatever it gives: /dev/zero's zero blocks are
	 * a tar archive's end to libarchive, an empty tree to the merge. */
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		r = fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1,
				    "%s, not a directory, a tar archive or a .deb (a source is one of those)",
				    file_type_word(st.st_mode));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		s->disk = true;
		s->a = archive_read_disk_new();
		s->disk_entry = archive_entry_new();
		s->strip = strdup(source);
		if (!s->a || !s->disk_entry || !s->strip) {
			r = fatelf_diag_oom(d);
			goto fail;
		}
		archive_read_disk_set_symlink_physical(s->a);
		/* No sparse-file map: it costs lseek(SEEK_DATA/SEEK_HOLE) calls
		 * on every file, and a hole is hashed and stored as its zeros
		 * either way, so reading them as data gives the same bytes. */
		archive_read_disk_set_behavior(s->a, ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
							 ARCHIVE_READDISK_NO_FFLAGS | ARCHIVE_READDISK_NO_SPARSE);
		if (archive_read_disk_open(s->a, source) != ARCHIVE_OK) {
			r = stream_archive_fail(s->a, d);
			goto fail;
		}
		*ret = s;
		return 0;
	}
	if (pread(s->fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) && memcmp(magic, AR_MAGIC, 8) == 0) {
		r = fatelf_reader_fd(&s->src, s->fd, NULL);
		if (r < 0) {
			r = fatelf_diag_set(d, r, -1, "%s", strerror(-r));
			goto fail;
		}
		r = fatelf_deb_open(&s->src, &s->deb, ret_deb ? ret_deb : &ignored, d);
		if (!ret_deb)
			fatelf_deb_info_done(&ignored);
		if (r < 0)
			goto fail;
		r = fatelf_deb_data(s->deb, &s->a, d);
		if (r < 0)
			goto fail;
		*ret = s;
		return 0;
	}
	s->a = archive_read_new();
	if (!s->a) {
		r = fatelf_diag_oom(d);
		goto fail;
	}
	archive_read_support_filter_all(s->a);
	archive_read_support_format_tar(s->a);
	if (archive_read_open_fd(s->a, s->fd, 128 << 10) != ARCHIVE_OK) {
		r = stream_archive_fail(s->a, d);
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	if (s->deb)
		s->a = NULL;
	fatelf_unify_stream_free(s);
	return r;
}

static bool stream_is_disk(const fatelf_unify_stream *s)
{
	return s->disk;
}

struct archive *fatelf_unify_stream_archive(fatelf_unify_stream *s)
{
	return s->a;
}

int fatelf_unify_stream_next(fatelf_unify_stream *s, const char **ret_path, struct archive_entry **ret_entry,
			     fatelf_diag *d)
{
	for (;;) {
		struct archive_entry *e = s->disk_entry;
		int ar = s->disk ? archive_read_next_header2(s->a, e) : archive_read_next_header(s->a, &e);
		const char *path;

		if (ar == ARCHIVE_EOF) {
			/* libarchive takes a file of zero blocks for an empty
			 * tar archive: that is no source's tree. (A .deb with
			 * no files is still a package.) */
			if (s->nheaders == 0 && !s->disk && !s->deb)
				return fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1,
						       "not an archive of a tree: it holds no members, only zero blocks or an end marker (a tar source holds its tree's members)");
			return 0;
		}
		if (ar < ARCHIVE_WARN)
			return stream_archive_fail(s->a, d);
		s->nheaders++;
		if (s->disk && archive_read_disk_can_descend(s->a))
			archive_read_disk_descend(s->a);
		/* An absolute name is not stripped into the tree: an archive
		 * that names /usr/bin/x was made for no root but /. */
		if (!s->disk && archive_entry_pathname(e) && archive_entry_pathname(e)[0] == '/') {
			char q[FATELF_TEXT_QUOTE_BUF];

			return fatelf_diag_set(d, -FATELF_E_PATH_ABSOLUTE, -1,
					       "member '%s' has an absolute name (a source's members are relative to its root, as tar writes them without -P)",
					       fatelf_text_quote(archive_entry_pathname(e), q));
		}
		path = entry_path(s->strip, e, s->path, sizeof(s->path));
		if (!path)
			continue;
		*ret_path = path;
		*ret_entry = e;
		return 1;
	}
}

int fatelf_unify_index_read(const char *source, const fatelf_bundle_limits *lim, fatelf_unify_index *ret,
			    fatelf_diag *d)
{
	struct indexer ix = { .x = ret, .lim = lim, .source = source, .d = d };
	fatelf_bundle_limits def;
	fatelf_unify_stream *s = NULL;
	int r;

	fatelf_diag_clear(d);
	memset(ret, 0, sizeof(*ret));
	if (!lim) {
		fatelf_bundle_limits_default(&def);
		ix.lim = &def;
	}
	r = fatelf_hashq_new(&ix.q);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "hashing: %s", fatelf_strerror(r));
	r = fatelf_unify_stream_open(source, &s, &ret->deb, d);
	if (r == 0) {
		ret->is_deb = ret->deb.package != NULL;
		r = read_entries(&ix, s);
	}
	fatelf_unify_stream_free(s);
	fatelf_hashq_free(ix.q);
	if (r < 0)
		fatelf_unify_index_free(ret);
	return r;
}
