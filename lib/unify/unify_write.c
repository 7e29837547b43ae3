/*
 * The unify writer (unify.h): one bundle of several architectures'
 * builds. The sources are indexed (one streaming read each), the plan
 * decides every path, and the bundle is written with its manifest first,
 * which pins every file's SHA-256, so a glued FatELF's bytes must be
 * known before the first member goes out: they are read once to hash
 * them for the manifest and once to write them.
 *
 * No source is copied, nor any part of one. A directory source's files
 * are read where they are, opened beneath the source's directory
 * descriptor without following a symlink, each open checked to be the
 * regular file the index read (size, device, inode, mtime, ctime). A tar
 * or .deb source is read as a stream each time: the index caught each
 * ELF file's header and program header table as they went by, which lays
 * out the glued files' tables; one more read of each source in turn
 * carries every glued file's SHA-256 on (its records follow the sources'
 * order); and the write pass reads the sources side by side, each glued
 * file going out when the first tar or .deb source reaches its image,
 * the other streams moved on to theirs. Every read of a file's bytes is
 * checked against the index's SHA-256, so a file that changes between
 * the reads fails the bundle, naming the source and the path, and never
 * yields one whose manifest does not match its bytes.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "macro.h"
#include "manifest_private.h"
#include "text.h"
#include "unify.h"

#define IO_CHUNK (64u << 10)

/* A path written as a FatELF, a record per source that has it. */
struct glued {
	size_t dec;                             /* its decision */
	unsigned nrec;
	uint8_t src_of[FATELF_MAX_RECORDS];     /* record i comes from source src_of[i] */
	fatelf_header hdr;
	uint64_t size;
	uint8_t sha256[32];                     /* the file's */
};

/* A tar or .deb source's stream, as the write pass reads it. */
struct cur {
	fatelf_unify_stream *st;
	uint64_t ord;                           /* the entry it stands on (UINT64_MAX: none yet) */
	bool on;                                /* standing on it, its bytes unread */
	bool eof;
	const char *path;
	struct archive_entry *ae;
	unsigned reads;                         /* times the source was opened */
};

struct uw {
	const fatelf_unify_opts *o;
	fatelf_bundle_create_opts bo;
	fatelf_bundle_limits lim;
	size_t n;
	fatelf_unify_index ix[FATELF_UNIFY_MAX_SOURCES];
	fatelf_unify_source src[FATELF_UNIFY_MAX_SOURCES];
	bool is_dir[FATELF_UNIFY_MAX_SOURCES];
	int root[FATELF_UNIFY_MAX_SOURCES];     /* a directory source's, open; else -1 */
	fatelf_unify_decision *dec;
	size_t ndec;
	size_t *owner;                          /* per decision: the source whose bytes are stored, or NONE */
	size_t *glue_of;                        /* per decision: its index in glued, or NONE */
	bool *grouped;                          /* per decision: an entry per distinct item (--per-arch) */
	/* The manifest's entries, one or more a decision, in its order:
	 * the decision, the source whose item (and bytes) it is (NONE for a
	 * glued file), the sources it is for (all: a plain entry). */
	struct went {
		size_t dec, src;
		uint32_t srcs;
	} *went;
	size_t nwent;
	size_t *went_of;                        /* per decision: its first entry */
	fatelf_pattern pat[FATELF_UNIFY_MAX_SOURCES];
	fatelf_target target[FATELF_UNIFY_MAX_SOURCES];  /* each source's, for per-arch entries */
	bool has_target[FATELF_UNIFY_MAX_SOURCES];
	struct glued *glued;
	size_t nglued;
	uint8_t *buf;
	fatelf_sha256 *sha;                     /* the file being read, checked against the index */
	/* the write pass */
	struct cur cur[FATELF_UNIFY_MAX_SOURCES];
	bool *done;                             /* per manifest entry: its member is out */
	struct archive *out;
	const fatelf_manifest *m;
	fatelf_unify_result *res;
	fatelf_diag *d;
};

static const char *src_name(const struct uw *w, size_t s)
{
	return w->o->from[s].path;
}

static int entry_error(struct uw *w, int code, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int entry_error(struct uw *w, int code, const char *path, const char *fmt, ...)
{
	char msg[600], q[FATELF_TEXT_QUOTE_BUF];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The entry is the subject; the message names it too, once. */
	fatelf_diag_set(w->d, code, -1, "entry '%s': %s", fatelf_text_quote(path, q), msg);
	fatelf_diag_names(w->d, path);
	return code;
}

static const fatelf_unify_item *item_at(const struct uw *w, size_t dec, size_t s)
{
	size_t i = w->dec[dec].item[s];

	return i == FATELF_UNIFY_NONE ? NULL : &w->ix[s].items[i];
}

/* The decision of path, or NONE. */
static size_t find_dec(const struct uw *w, const char *path)
{
	size_t lo = 0, hi = w->ndec;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(w->dec[mid].path, path);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return FATELF_UNIFY_NONE;
}

/* Step 1: every source's index; the message names the source. */
static int index_sources(struct uw *w)
{
	for (size_t s = 0; s < w->n; s++) {
		struct stat st;
		int r = fatelf_unify_index_read(src_name(w, s), &w->lim, &w->ix[s], w->d);

		if (r < 0) {
			if (!w->d->subject[0])
				snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
			return r;
		}
		w->src[s] = (fatelf_unify_source) {
			.arch = w->o->from[s].arch,
			.triplet = fatelf_unify_triplet(w->o->from[s].arch),
			.items = w->ix[s].items,
			.nitems = w->ix[s].nitems,
		};
		/* The index read it by name; the writer reads a directory's
		 * files again beneath this descriptor, each checked against
		 * the index. */
		w->root[s] = open(src_name(w, s), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (w->root[s] < 0 || fstat(w->root[s], &st) < 0)
			return fatelf_diag_set(w->d, -errno, -1, "%s: %s", src_name(w, s), fatelf_strerror(-errno));
		w->is_dir[s] = S_ISDIR(st.st_mode);
		if (!w->is_dir[s]) {
			close(w->root[s]);
			w->root[s] = -1;
		}
		if (w->is_dir[s]) {
			for (size_t i = 0; i < w->ix[s].nitems; i++)
				w->res->sources_size += w->ix[s].items[i].size;
		} else
			w->res->sources_size += (uint64_t)st.st_size;
	}
	return 0;
}

/* Step 2: .deb sources: their scripts, and the fields that name the bundle. */
static int deb_scripts(struct uw *w)
{
	for (size_t s = 0; s < w->n; s++) {
		char names[128] = "";
		size_t o = 0;

		if (!w->ix[s].is_deb || !w->ix[s].deb.scripts)
			continue;
		for (unsigned i = 0; i < FATELF_DEB_SCRIPTS; i++)
			if (w->ix[s].deb.scripts & (1u << i))
				o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", o ? ", " : "",
						      fatelf_deb_script_name(i));
		if (!w->o->ignore_scripts) {
			snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
			return fatelf_diag_set(w->d, -FATELF_E_UNIFY_SCRIPTS, -1,
					       "%s (%s) has maintainer scripts (%s); a bundle runs none, so it is refused unless --ignore-scripts",
					       src_name(w, s), w->o->from[s].arch, names);
		}
		w->res->scripts_ignored |= 1u << s;
		snprintf(w->res->scripts[s], sizeof(w->res->scripts[s]), "%s", names);
	}
	return 0;
}

static int deb_field(struct uw *w, const char *field, size_t off, const char *given, const char **ret)
{
	const char *v = NULL;
	size_t first = FATELF_UNIFY_NONE;

	*ret = given;
	if (given)
		return 0;
	for (size_t s = 0; s < w->n; s++) {
		const char *x;

		if (!w->ix[s].is_deb)
			continue;
		x = *(char *const *)((const char *)&w->ix[s].deb + off);
		if (first == FATELF_UNIFY_NONE) {
			first = s;
			v = x;
			continue;
		}
		if (strcmp(v ? v : "", x ? x : "") != 0) {
			char a[FATELF_TEXT_QUOTE_BUF], b[FATELF_TEXT_QUOTE_BUF];

			snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
			return fatelf_diag_set(w->d, -FATELF_E_UNIFY_FIELD, -1,
					       "%s: '%s' in %s (%s), '%s' in %s (%s); the sources must agree, or give it on the command line",
					       field, fatelf_text_quote(v ? v : "", a), src_name(w, first),
					       w->o->from[first].arch, fatelf_text_quote(x ? x : "", b), src_name(w, s),
					       w->o->from[s].arch);
		}
	}
	*ret = v;
	return 0;
}

static int deb_fields(struct uw *w)
{
	const fatelf_bundle_create_opts *g = &w->o->bundle;
	int r;

	r = deb_field(w, "Package", offsetof(fatelf_deb_info, package), g->name, &w->bo.name);
	if (r == 0)
		r = deb_field(w, "Version", offsetof(fatelf_deb_info, version), g->version, &w->bo.version);
	if (r == 0)
		r = deb_field(w, "Description", offsetof(fatelf_deb_info, summary), g->summary, &w->bo.summary);
	if (r == 0)
		r = deb_field(w, "Homepage", offsetof(fatelf_deb_info, homepage), g->homepage, &w->bo.homepage);
	if (r == 0)
		r = deb_field(w, "Maintainer", offsetof(fatelf_deb_info, maintainer), g->vendor, &w->bo.vendor);
	return r;
}

static bool is_conffile(const struct uw *w, const char *path)
{
	bool any_deb = false;

	for (size_t s = 0; s < w->n; s++) {
		if (!w->ix[s].is_deb)
			continue;
		any_deb = true;
		for (size_t i = 0; i < w->ix[s].deb.nconffiles; i++)
			if (strcmp(w->ix[s].deb.conffiles[i], path) == 0)
				return true;
	}
	if (w->bo.config_globs && w->bo.nconfig_globs) {
		for (size_t i = 0; i < w->bo.nconfig_globs; i++)
			if (w->bo.config_globs[i] && fnmatch(w->bo.config_globs[i], path, 0) == 0)
				return true;
		return false;
	}
	return !any_deb && fnmatch("etc/*", path, 0) == 0;
}

/*
 * The full target a source's per-arch entries are for: its ARCH when
 * that names one, else the target most of its ELF files that ARCH
 * matches have (the first in target order on a tie).
 */
static int source_target(struct uw *w, size_t s)
{
	const fatelf_pattern *p = &w->pat[s];
	size_t best = 0;

	if (w->has_target[s])
		return 0;
	if ((p->want & FATELF_WANT_ALL) == FATELF_WANT_ALL) {
		w->target[s] = p->target;
		w->has_target[s] = true;
		return 0;
	}
	for (size_t i = 0; i < w->ix[s].nitems; i++) {
		const fatelf_unify_item *it = &w->ix[s].items[i];
		size_t count = 0;

		if (!it->elf || !fatelf_pattern_match(p, &it->target, -1))
			continue;
		for (size_t j = 0; j < w->ix[s].nitems; j++)
			count += w->ix[s].items[j].elf && fatelf_target_equal(&w->ix[s].items[j].target, &it->target);
		if (count > best || (count == best && fatelf_manifest_target_cmp(&it->target, &w->target[s]) < 0)) {
			best = count;
			w->target[s] = it->target;
		}
		/* Enough to tell: a source's ELF files share one target or two. */
		if (best > w->ix[s].nitems / 2)
			break;
	}
	if (best > 0) {
		w->has_target[s] = true;
		return 0;
	}
	/* No ELF file: the name must fix the rest, osabi SYSV 0 unless given. */
	if ((p->want & (FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE | FATELF_WANT_BYTEORDER)) !=
	    (FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE | FATELF_WANT_BYTEORDER)) {
		snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
		return fatelf_diag_set(w->d, -FATELF_E_UNIFY_ARCH, -1,
				       "--from %s=%s: the source has no ELF file and '%s' does not name a machine, word size and byte order, so its per-arch entries have no target",
				       w->o->from[s].arch, src_name(w, s), w->o->from[s].arch);
	}
	w->target[s] = p->target;
	if (!(p->want & FATELF_WANT_OSABI))
		w->target[s].osabi = 0;
	if (!(p->want & FATELF_WANT_OSABIVER))
		w->target[s].osabi_version = 0;
	w->has_target[s] = true;
	return 0;
}

/* Step 4: what each decision stores, the ARCH of every ELF file that is
 * not the same in every source, setid bits. */
static int check_decisions(struct uw *w)
{
	fatelf_pattern *pat = w->pat;

	for (size_t s = 0; s < w->n; s++) {
		fatelf_diag inner;

		fatelf_diag_clear(&inner);
		if (fatelf_pattern_parse(w->o->from[s].arch, &pat[s], &inner) < 0)
			return fatelf_diag_set(w->d, -FATELF_E_INVALID, -1, "--from %s=%s: %s", w->o->from[s].arch,
					       src_name(w, s), inner.msg);
	}
	w->owner = malloc(w->ndec * sizeof(*w->owner));
	w->glue_of = malloc(w->ndec * sizeof(*w->glue_of));
	w->glued = calloc(w->ndec ? w->ndec : 1, sizeof(*w->glued));
	w->grouped = calloc(w->ndec ? w->ndec : 1, sizeof(*w->grouped));
	w->went_of = calloc(w->ndec ? w->ndec : 1, sizeof(*w->went_of));
	if (!w->owner || !w->glue_of || !w->glued || !w->grouped || !w->went_of)
		return fatelf_diag_oom(w->d);
	for (size_t k = 0; k < w->ndec; k++) {
		const fatelf_unify_decision *x = &w->dec[k];
		const fatelf_unify_item *first = NULL;
		size_t present = 0;
		bool same = true, all_elf = true, same_mode = true;

		w->owner[k] = FATELF_UNIFY_NONE;
		w->glue_of[k] = FATELF_UNIFY_NONE;
		for (size_t s = 0; s < w->n; s++) {
			const fatelf_unify_item *it = item_at(w, k, s);

			if (!it)
				continue;
			present++;
			if (!first) {
				first = it;
				w->owner[k] = s;
			} else if (it->size != first->size || it->mode != first->mode ||
				   memcmp(it->sha256, first->sha256, 32) != 0 ||
				   strcmp(it->link ? it->link : "", first->link ? first->link : "") != 0) {
				same = false;
				same_mode = same_mode && it->mode == first->mode;
			}
			all_elf = all_elf && it->elf;
			if (it->type == FATELF_ENTRY_FILE && it->fat)
				return entry_error(w, -FATELF_E_INVALID, x->path,
						   "already a FatELF file in %s (%s); unify glues plain ELF files",
						   src_name(w, s), w->o->from[s].arch);
			if (it->type != FATELF_ENTRY_SYMLINK && (it->mode & 06000) && !w->bo.allow_setid)
				return entry_error(w, -FATELF_E_MODE, x->path,
						   "has the setuid or setgid bit (mode %04o) in %s; it is bundled only with --allow-setid",
						   it->mode, src_name(w, s));
		}
		/* Per-arch ELF files of one mode are glued, a record each;
		 * anything else that differs is an entry per distinct item. */
		if (x->kind == FATELF_UNIFY_PER_ARCH && present > 1 && !same && !(all_elf && same_mode)) {
			w->grouped[k] = true;
			w->owner[k] = FATELF_UNIFY_NONE;
		} else if (x->kind == FATELF_UNIFY_GLUE || (x->kind == FATELF_UNIFY_PER_ARCH && present > 1 && !same)) {
			w->glue_of[k] = w->nglued;
			w->glued[w->nglued++].dec = k;
			w->owner[k] = FATELF_UNIFY_NONE;
		}
		/* Only a file the same in every source may be of another target. */
		if (x->kind == FATELF_UNIFY_GLUE || x->kind == FATELF_UNIFY_PER_ARCH) {
			for (size_t s = 0; s < w->n; s++) {
				const fatelf_unify_item *it = item_at(w, k, s);
				char want[FATELF_TARGET_NAME_MAX], got[FATELF_TARGET_NAME_MAX];

				if (!it || !it->elf || fatelf_pattern_match(&pat[s], &it->target, -1))
					continue;
				fatelf_target_format(&it->target, got);
				snprintf(want, sizeof(want), "%s", w->o->from[s].arch);
				snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
				return entry_error(w, -FATELF_E_UNIFY_ARCH, x->path,
						   "an ELF file for %s in %s, given as --from %s (the ELF files of a source must be of its ARCH)",
						   got, src_name(w, s), want);
			}
		}
	}
	return 0;
}


/*
 * Source s's file of item it (a directory source's), opened beneath the
 * source's directory without following a symlink, and still the file
 * the index read: a regular file of its size, device, inode, mtime and
 * ctime. Its bytes are the caller's to check, by SHA-256 as it reads
 * them. Returns the descriptor.
 */
static int open_dir_item(struct uw *w, size_t s, const fatelf_unify_item *it)
{
	_cleanup_close_ int dirfd = -1, fd = -1;
	fatelf_diag inner;
	const char *base, *what = NULL;
	struct stat st;

	fatelf_diag_clear(&inner);
	dirfd = fatelf_root_open_parent(w->root[s], it->path, false, &base, &inner);
	if (dirfd < 0)
		return entry_error(w, dirfd, it->path, "in %s: %s", src_name(w, s), inner.msg);
	fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return entry_error(w, -errno, it->path, "in %s: cannot open it: %s", src_name(w, s),
				   fatelf_strerror(-errno));
	if (!S_ISREG(st.st_mode))
		what = "no longer a regular file";
	else if ((uint64_t)st.st_size != it->size)
		what = "its size";
	else if (it->has_stat && ((uint64_t)st.st_dev != it->dev || (uint64_t)st.st_ino != it->ino))
		what = "another file (device or inode)";
	else if (it->has_stat && ((int64_t)st.st_mtim.tv_sec != it->mtime || st.st_mtim.tv_nsec != it->mtime_nsec))
		what = "its mtime";
	else if (it->has_stat && ((int64_t)st.st_ctim.tv_sec != it->ctime || st.st_ctim.tv_nsec != it->ctime_nsec))
		what = "its ctime";
	if (what)
		return entry_error(w, -EIO, it->path, "changed in %s since it was read (%s)", src_name(w, s), what);
	return TAKE_FD(fd);
}


typedef int (*bytes_fn)(struct uw *w, const void *buf, size_t len, void *ctx);

/* Hands fn n zeros; with check, hashes them into the image's digest too. */
static int zeros_to(struct uw *w, uint64_t n, bool check, bytes_fn fn, void *ctx)
{
	static const uint8_t zeros[4096];
	int r = 0;

	while (r == 0 && n > 0) {
		size_t k = (size_t)MIN((uint64_t)sizeof(zeros), n);

		if (check)
			fatelf_sha256_update(w->sha, zeros, k);
		r = fn(w, zeros, k, ctx);
		n -= k;
	}
	return r;
}

/*
 * Hands fn the bytes of source s's file of item it, a hole as its zeros:
 * from in, a source's stream standing at its member, or (in NULL) from a
 * directory source's file, opened again (open_dir_item). Its size and
 * SHA-256 are checked against the index, so bytes that changed between
 * two reads fail the bundle, naming the source and the path.
 */
static int item_bytes(struct uw *w, size_t s, struct archive *in, const fatelf_unify_item *it, bytes_fn fn,
		      void *ctx)
{
	uint64_t size = 0;
	uint8_t sha[32];
	int r = 0;

	if (!in) {
		_cleanup_close_ int fd = open_dir_item(w, s, it);

		if (fd < 0)
			return fd;
		while (r == 0 && size < it->size) {
			ssize_t got = pread(fd, w->buf, (size_t)MIN((uint64_t)IO_CHUNK, it->size - size), (off_t)size);

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				return entry_error(w, -errno, it->path, "in %s: cannot read it: %s", src_name(w, s),
						   fatelf_strerror(-errno));
			if (got == 0)
				break;
			fatelf_sha256_update(w->sha, w->buf, (size_t)got);
			r = fn(w, w->buf, (size_t)got, ctx);
			size += (uint64_t)got;
		}
	} else {
		const void *buf;
		size_t len;
		la_int64_t off;
		int ar;

		while (r == 0 && (ar = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK) {
			if (off < 0 || (uint64_t)off < size || (uint64_t)off > it->size || len > it->size - (uint64_t)off) {
				size = UINT64_MAX;      /* more than the index read */
				break;
			}
			r = zeros_to(w, (uint64_t)off - size, true, fn, ctx);
			if (r == 0) {
				fatelf_sha256_update(w->sha, buf, len);
				r = fn(w, buf, len, ctx);
			}
			size = (uint64_t)off + len;
		}
		if (r == 0 && size != UINT64_MAX && ar != ARCHIVE_OK && ar != ARCHIVE_EOF) {
			const char *es = archive_error_string(in);

			return entry_error(w, -FATELF_E_ARCHIVE, it->path, "%s: %s", src_name(w, s), es ? es : "unreadable");
		}
		if (r == 0 && size != UINT64_MAX && ar == ARCHIVE_EOF && size < it->size) {
			r = zeros_to(w, it->size - size, true, fn, ctx);         /* a hole at the end */
			size = it->size;
		}
	}
	if (r < 0)
		return r;
	fatelf_sha256_final(w->sha, sha);
	if (size != it->size || memcmp(sha, it->sha256, 32) != 0)
		return entry_error(w, -EIO, it->path, "changed in %s since it was read", src_name(w, s));
	return 0;
}

/* Step 5: each glued file's table, checked like any glue's inputs, from
 * what the index found of each image (no byte is read again here). */
static int layout_glued(struct uw *w, struct glued *g)
{
	const fatelf_unify_decision *x = &w->dec[g->dec];
	fatelf_target targets[FATELF_MAX_RECORDS];
	uint64_t sizes[FATELF_MAX_RECORDS], aligns[FATELF_MAX_RECORDS];
	fatelf_diag inner;
	int r;

	g->nrec = 0;
	for (size_t s = 0; s < w->n; s++) {
		const fatelf_unify_item *it = item_at(w, g->dec, s);

		if (!it)
			continue;
		if (g->nrec >= FATELF_MAX_RECORDS)
			return entry_error(w, -FATELF_E_TOO_MANY, x->path, "more than %d records", FATELF_MAX_RECORDS);
		if (it->elf_r < 0) {
			snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
			return entry_error(w, it->elf_r, x->path, "in %s (%s): %s", src_name(w, s), w->o->from[s].arch,
					   it->elf_msg ? it->elf_msg : fatelf_strerror(it->elf_r));
		}
		for (unsigned j = 0; j < g->nrec; j++)
			if (fatelf_target_equal(&targets[j], &it->target)) {
				char tn[FATELF_TARGET_NAME_MAX];

				fatelf_target_format(&it->target, tn);
				return entry_error(w, -FATELF_E_UNIFY_TARGET, x->path,
						   "%s and %s both give an ELF file for %s (one record a target)",
						   w->o->from[g->src_of[j]].arch, w->o->from[s].arch, tn);
			}
		targets[g->nrec] = it->target;
		sizes[g->nrec] = it->size;
		aligns[g->nrec] = fatelf_glue_align(0, it->max_align);
		g->src_of[g->nrec++] = (uint8_t)s;
	}
	fatelf_diag_clear(&inner);
	r = fatelf_glue_table(targets, sizes, aligns, g->nrec, &g->hdr, &g->size, &inner);
	if (r == 0)
		r = fatelf_validate_table(&g->hdr, g->size, &inner);
	if (r < 0)
		return entry_error(w, r, x->path, "%s", inner.msg);
	return 0;
}

/* g's record of source s. */
static const fatelf_record *record_of(const struct glued *g, size_t s)
{
	for (unsigned j = 0; j < g->nrec; j++)
		if (g->src_of[j] == s)
			return &g->hdr.records[j];
	return NULL;
}

static int sha_fn(struct uw *w, const void *buf, size_t len, void *ctx)
{
	(void)w;
	fatelf_sha256_update(ctx, buf, len);
	return 0;
}

/* Source s's image of glued file i into its digest h, after the zeros up
 * to its record (*pos: how far h has come). */
static int hash_image(struct uw *w, size_t i, size_t s, struct archive *in, fatelf_sha256 *h, uint64_t *pos)
{
	const struct glued *g = &w->glued[i];
	const fatelf_record *rec = record_of(g, s);
	int r;

	if (!rec || rec->offset < *pos)
		return entry_error(w, -EIO, w->dec[g->dec].path, "read twice from %s", src_name(w, s));
	r = zeros_to(w, rec->offset - *pos, false, sha_fn, h);
	if (r == 0)
		r = item_bytes(w, s, in, item_at(w, g->dec, s), sha_fn, h);
	*pos = rec->offset + rec->size;
	return r;
}

/*
 * Step 6: each glued file's SHA-256, which the manifest (the bundle's
 * first member) pins. A record's bytes come from its source, and the
 * records follow the sources' order, so one read of each source in turn,
 * in its own order, carries every glued file's digest on from the
 * source before: a digest held open a glued file, and no image copied.
 */
static int hash_glued(struct uw *w)
{
	fatelf_sha256 **h = calloc(w->nglued ? w->nglued : 1, sizeof(*h));
	uint64_t *pos = calloc(w->nglued ? w->nglued : 1, sizeof(*pos));
	int r = 0;

	if (!h || !pos)
		r = fatelf_diag_oom(w->d);
	for (size_t i = 0; r == 0 && i < w->nglued; i++) {
		uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
		ssize_t tl = fatelf_header_encode(&w->glued[i].hdr, table, sizeof(table));

		h[i] = fatelf_sha256_new();
		if (!h[i])
			r = fatelf_diag_oom(w->d);
		else if (tl < 0)
			r = fatelf_diag_set(w->d, (int)tl, -1, "encoding a FatELF table");
		else {
			fatelf_sha256_update(h[i], table, (size_t)tl);
			pos[i] = (uint64_t)tl;
		}
	}
	for (size_t s = 0; r == 0 && s < w->n; s++) {
		fatelf_unify_stream *st = NULL;
		struct archive_entry *e;
		const char *path;

		if (w->is_dir[s]) {
			for (size_t i = 0; r == 0 && i < w->nglued; i++)
				if (item_at(w, w->glued[i].dec, s))
					r = hash_image(w, i, s, NULL, h[i], &pos[i]);
			continue;
		}
		r = fatelf_unify_stream_open(src_name(w, s), &st, NULL, w->d);
		for (uint64_t ord = 0; r >= 0 && (r = fatelf_unify_stream_next(st, &path, &e, w->d)) > 0; ord++) {
			size_t k = find_dec(w, path);
			const fatelf_unify_item *it;

			if (k == FATELF_UNIFY_NONE || w->glue_of[k] == FATELF_UNIFY_NONE ||
			    archive_entry_filetype(e) != AE_IFREG || !(it = item_at(w, k, s)) || it->ord != ord)
				continue;
			r = hash_image(w, w->glue_of[k], s, fatelf_unify_stream_archive(st), h[w->glue_of[k]],
				       &pos[w->glue_of[k]]);
		}
		fatelf_unify_stream_free(st);
		for (size_t i = 0; r == 0 && i < w->nglued; i++) {
			const fatelf_record *rec = record_of(&w->glued[i], s);

			if (rec && pos[i] < rec->offset + rec->size)
				r = entry_error(w, -EIO, w->dec[w->glued[i].dec].path, "gone from %s since it was read",
						src_name(w, s));
		}
		if (r < 0 && !w->d->subject[0])
			snprintf(w->d->subject, sizeof(w->d->subject), "%s", src_name(w, s));
	}
	for (size_t i = 0; r == 0 && i < w->nglued; i++) {
		r = zeros_to(w, w->glued[i].size - pos[i], false, sha_fn, h[i]);
		fatelf_sha256_final(h[i], w->glued[i].sha256);
	}
	for (size_t i = 0; h && i < w->nglued; i++)
		fatelf_sha256_free(h[i]);
	free(h);
	free(pos);
	return r;
}

static int build_entries(struct uw *w, fatelf_manifest *m, uint64_t *total_io);

/* Step 7: the manifest, an entry a decision, in path order. */
static int build_manifest(struct uw *w, fatelf_manifest **ret)
{
	fatelf_manifest *m = fatelf_manifest_new();
	uint64_t total = 0;
	int r = build_entries(w, m, &total);

	if (r < 0) {
		fatelf_manifest_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

/* Two items of a path that one entry can stand for. */
static bool item_same(const fatelf_unify_item *a, const fatelf_unify_item *b)
{
	return a->type == b->type && a->mode == b->mode && a->size == b->size &&
	       memcmp(a->sha256, b->sha256, 32) == 0 &&
	       strcmp(a->link ? a->link : "", b->link ? b->link : "") == 0;
}

/* The sources of decision k's entry that stands for source s's item. */
static uint32_t group_of(const struct uw *w, size_t k, size_t s)
{
	const fatelf_unify_item *it = item_at(w, k, s);
	uint32_t mask = 0;

	for (size_t t = 0; t < w->n; t++) {
		const fatelf_unify_item *o = item_at(w, k, t);

		if (o && (!w->grouped[k] || item_same(o, it)))
			mask |= 1u << t;
	}
	return mask;
}

/* Sets a per-arch entry's targets: its sources' targets, sorted. */
static int entry_targets(struct uw *w, fatelf_bundle_entry *e, uint32_t srcs)
{
	unsigned n = 0;
	int r;

	e->targets = calloc(w->n, sizeof(*e->targets));
	if (!e->targets)
		return fatelf_diag_oom(w->d);
	for (size_t s = 0; s < w->n; s++) {
		unsigned at;

		if (!(srcs & (1u << s)))
			continue;
		r = source_target(w, s);
		if (r < 0)
			return r;
		for (at = n; at > 0 && fatelf_manifest_target_cmp(&e->targets[at - 1], &w->target[s]) > 0; at--)
			;
		if (at > 0 && fatelf_target_equal(&e->targets[at - 1], &w->target[s]))
			continue;
		memmove(&e->targets[at + 1], &e->targets[at], (n - at) * sizeof(*e->targets));
		e->targets[at] = w->target[s];
		n++;
	}
	e->ntargets = n;
	return 0;
}

/* Adds the entries of decision k: one, or (grouped) one per distinct
 * item, ordered by first target. */
static int plan_entries(struct uw *w, size_t k)
{
	uint32_t full = w->n >= 32 ? UINT32_MAX : (1u << w->n) - 1, present = 0, left;
	size_t first = w->nwent;

	for (size_t s = 0; s < w->n; s++)
		if (item_at(w, k, s))
			present |= 1u << s;
	w->went_of[k] = first;
	for (left = present; left; ) {
		size_t s = (size_t)__builtin_ctz(left);
		uint32_t g = group_of(w, k, s);

		left &= ~g;
		w->went[w->nwent++] = (struct went) {
			.dec = k,
			.src = w->glue_of[k] != FATELF_UNIFY_NONE ? FATELF_UNIFY_NONE : s,
			.srcs = g == full ? 0 : g,
		};
	}
	/* Sources of one target in two entries would overlap. */
	for (size_t i = first; i < w->nwent; i++)
		for (size_t j = i + 1; j < w->nwent; j++)
			for (size_t s = 0; s < w->n; s++)
				for (size_t t = 0; t < w->n; t++) {
					int r;

					if (!(w->went[i].srcs & (1u << s)) || !(w->went[j].srcs & (1u << t)))
						continue;
					if ((r = source_target(w, s)) < 0 || (r = source_target(w, t)) < 0)
						return r;
					if (fatelf_target_equal(&w->target[s], &w->target[t])) {
						char tn[FATELF_TARGET_NAME_MAX];

						fatelf_target_format(&w->target[s], tn);
						return entry_error(w, -FATELF_E_UNIFY_TARGET, w->dec[k].path,
								   "differs between %s and %s, which are both %s (one per-arch entry a target)",
								   w->o->from[s].arch, w->o->from[t].arch, tn);
					}
				}
	/* By first target: the order of entries that share a path. */
	for (size_t i = first + 1; i < w->nwent; i++)
		for (size_t j = i; j > first; j--) {
			struct went tmp;
			size_t a = (size_t)__builtin_ctz(w->went[j - 1].srcs), b = (size_t)__builtin_ctz(w->went[j].srcs);
			fatelf_target ta = w->target[a], tb = w->target[b];

			for (size_t s = a; s < w->n; s++)
				if ((w->went[j - 1].srcs & (1u << s)) && fatelf_manifest_target_cmp(&w->target[s], &ta) < 0)
					ta = w->target[s];
			for (size_t s = b; s < w->n; s++)
				if ((w->went[j].srcs & (1u << s)) && fatelf_manifest_target_cmp(&w->target[s], &tb) < 0)
					tb = w->target[s];
			if (fatelf_manifest_target_cmp(&ta, &tb) <= 0)
				break;
			tmp = w->went[j - 1];
			w->went[j - 1] = w->went[j];
			w->went[j] = tmp;
		}
	return 0;
}

static int build_entries(struct uw *w, fatelf_manifest *m, uint64_t *total_io)
{
	uint64_t total = 0;
	int r;

	if (!m || fatelf_bundle_manifest_package(m, &w->bo) < 0)
		return fatelf_diag_oom(w->d);
	m->format = FATELF_BUNDLE_FORMAT;
	/* At most one entry a source a decision. */
	w->went = calloc(w->ndec ? w->ndec * w->n : 1, sizeof(*w->went));
	if (!w->went)
		return fatelf_diag_oom(w->d);
	for (size_t k = 0; k < w->ndec; k++) {
		r = plan_entries(w, k);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < w->nwent; i++) {
		const struct went *we = &w->went[i];
		size_t k = we->dec;
		const fatelf_unify_decision *x = &w->dec[k];
		const fatelf_unify_item *it = NULL;
		fatelf_bundle_entry *e;

		if (we->src != FATELF_UNIFY_NONE)
			it = item_at(w, k, we->src);
		for (size_t s = 0; s < w->n && !it; s++)
			it = item_at(w, k, s);
		e = fatelf_manifest_add(m, x->path, it->type);
		if (!e)
			return fatelf_diag_oom(w->d);
		if (we->srcs) {
			r = entry_targets(w, e, we->srcs);
			if (r < 0)
				return r;
		}
		e->mode = it->mode;
		e->setid = it->type != FATELF_ENTRY_SYMLINK && (it->mode & 06000);
		if (it->type == FATELF_ENTRY_SYMLINK) {
			e->mode = 0777;
			e->link_target = strdup(it->link);
			if (!e->link_target)
				return fatelf_diag_oom(w->d);
			continue;
		}
		if (it->type != FATELF_ENTRY_FILE)
			continue;
		e->config = is_conffile(w, x->path);
		if (w->glue_of[k] != FATELF_UNIFY_NONE) {
			const struct glued *g = &w->glued[w->glue_of[k]];

			memcpy(e->sha256, g->sha256, 32);
			e->size = g->size;
			e->kind = FATELF_KIND_FATELF;
			e->nrecords = g->nrec;
			e->header_size = (uint32_t)FATELF_TABLE_SIZE(g->nrec);
			e->records = calloc(g->nrec, sizeof(*e->records));
			if (!e->records)
				return fatelf_diag_oom(w->d);
			for (unsigned j = 0; j < g->nrec; j++) {
				e->records[j].target = g->hdr.records[j].target;
				e->records[j].offset = g->hdr.records[j].offset;
				e->records[j].size = g->hdr.records[j].size;
				memcpy(e->records[j].sha256, item_at(w, k, g->src_of[j])->sha256, 32);
			}
		} else {
			e->size = it->size;
			memcpy(e->sha256, it->sha256, 32);
			e->kind = it->elf ? FATELF_KIND_ELF : FATELF_KIND_DATA;
			e->target = it->target;
		}
		total += e->size;
		if (total > w->lim.max_total)
			return entry_error(w, -FATELF_E_LIMIT, x->path, "files add up to more than %llu bytes",
					   (unsigned long long)w->lim.max_total);
	}
	*total_io = total;
	return 0;
}

struct put {
	struct archive *a;
	const fatelf_bundle_entry *e;
};

static int put_fn(struct uw *w, const void *buf, size_t len, void *ctx)
{
	struct put *p = ctx;

	return fatelf_bundle_archive_data(p->a, p->e, buf, len, w->d);
}

/* Entry i's member, the bytes of source s's item: from in, a stream
 * standing at it, or (NULL) the directory source's file. */
static int put_item(struct uw *w, size_t i, size_t s, struct archive *in)
{
	struct put p = { .a = w->out, .e = &w->m->entries[i] };
	int r = fatelf_bundle_archive_header(w->out, &w->bo, p.e, w->d);

	if (r == 0)
		r = item_bytes(w, s, in, item_at(w, w->went[i].dec, s), put_fn, &p);
	w->done[i] = true;
	return r;
}

/* Source s's stream one entry on: 1, or 0 at its end. */
static int cur_next(struct uw *w, size_t s)
{
	struct cur *c = &w->cur[s];
	int r;

	if (!c->st) {
		r = fatelf_unify_stream_open(src_name(w, s), &c->st, NULL, w->d);
		if (r < 0)
			return r;
		c->ord = UINT64_MAX;
		c->eof = false;
		c->reads++;
	}
	c->on = false;
	if (c->eof)
		return 0;
	r = fatelf_unify_stream_next(c->st, &c->path, &c->ae, w->d);
	c->eof = r <= 0;
	if (r <= 0)
		return r;
	c->ord++;               /* from UINT64_MAX: 0, the first */
	c->on = true;
	return 1;
}

/* The manifest entry whose member source s's stream stands on, when it
 * is that entry's turn (every entry of its path before it written),
 * else NONE. Glued files are not one source's. */
static size_t cur_entry(const struct uw *w, size_t s)
{
	const struct cur *c = &w->cur[s];
	const fatelf_unify_item *it;
	size_t k;

	if (!c->on || archive_entry_filetype(c->ae) != AE_IFREG)
		return FATELF_UNIFY_NONE;
	k = find_dec(w, c->path);
	if (k == FATELF_UNIFY_NONE || w->glue_of[k] != FATELF_UNIFY_NONE || !(it = item_at(w, k, s)) ||
	    it->ord != c->ord)
		return FATELF_UNIFY_NONE;
	for (size_t i = w->went_of[k]; i < w->nwent && w->went[i].dec == k; i++)
		if (!w->done[i])
			return w->went[i].src == s ? i : FATELF_UNIFY_NONE;
	return FATELF_UNIFY_NONE;
}

/* Writes the member source s's stream stands on when it is its turn. */
static int cur_put(struct uw *w, size_t s)
{
	struct cur *c = &w->cur[s];
	size_t i = cur_entry(w, s);

	if (i == FATELF_UNIFY_NONE)
		return 0;
	c->on = false;
	return put_item(w, i, s, fatelf_unify_stream_archive(c->st));
}

/*
 * Moves source s's stream to its member of item it (at its header, its
 * bytes unread), writing on the way each member whose turn it is. A
 * member it has passed is found by reading the source again from its
 * start: a source that gives its members in another order than the
 * first costs a read each time it goes back (doc/design.md).
 */
static int cur_seek(struct uw *w, size_t s, const fatelf_unify_item *it)
{
	struct cur *c = &w->cur[s];
	int r;

	if (c->st && c->ord != UINT64_MAX && (c->ord > it->ord || (c->ord == it->ord && !c->on) || c->eof)) {
		fatelf_unify_stream_free(c->st);
		c->st = NULL;
		c->on = false;
	}
	for (;;) {
		if (c->on && c->ord == it->ord)
			break;
		if (c->on && (r = cur_put(w, s)) < 0)
			return r;
		r = cur_next(w, s);
		if (r < 0)
			return r;
		if (r == 0 || c->ord > it->ord)
			return entry_error(w, -EIO, it->path, "gone from %s since it was read", src_name(w, s));
	}
	if (strcmp(c->path, it->path) != 0 || archive_entry_filetype(c->ae) != AE_IFREG)
		return entry_error(w, -EIO, it->path, "gone from %s since it was read", src_name(w, s));
	return 0;
}

/* The rest of source s's stream, writing each member whose turn it is. */
static int cur_drain(struct uw *w, size_t s)
{
	struct cur *c = &w->cur[s];
	int r;

	for (;;) {
		if (c->on && (r = cur_put(w, s)) < 0)
			return r;
		r = cur_next(w, s);
		if (r <= 0)
			return r;
	}
}

/* Glued file entry i: each archive source's stream is moved to its image
 * first, then the file goes out, its table, zeros and images in order,
 * each image checked against the index. */
static int put_glued(struct uw *w, size_t i)
{
	const struct glued *g = &w->glued[w->glue_of[w->went[i].dec]];
	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	struct put p = { .a = w->out, .e = &w->m->entries[i] };
	ssize_t tl = fatelf_header_encode(&g->hdr, table, sizeof(table));
	uint64_t pos;
	int r = 0;

	if (tl < 0)
		return fatelf_diag_set(w->d, (int)tl, -1, "encoding a FatELF table");
	for (unsigned j = 0; r == 0 && j < g->nrec; j++)
		if (!w->is_dir[g->src_of[j]])
			r = cur_seek(w, g->src_of[j], item_at(w, g->dec, g->src_of[j]));
	if (r == 0)
		r = fatelf_bundle_archive_header(w->out, &w->bo, p.e, w->d);
	if (r == 0)
		r = put_fn(w, table, (size_t)tl, &p);
	pos = (uint64_t)tl;
	for (unsigned j = 0; r == 0 && j < g->nrec; j++) {
		const fatelf_record *rec = &g->hdr.records[j];
		size_t s = g->src_of[j];

		r = zeros_to(w, rec->offset - pos, false, put_fn, &p);
		if (r == 0)
			r = item_bytes(w, s, w->is_dir[s] ? NULL : fatelf_unify_stream_archive(w->cur[s].st),
				       item_at(w, g->dec, s), put_fn, &p);
		w->cur[s].on = false;
		pos = rec->offset + rec->size;
	}
	w->done[i] = true;
	return r;
}

/* Whether an entry of path k that comes before entry i is still unwritten. */
static bool waits(const struct uw *w, size_t i)
{
	for (size_t j = w->went_of[w->went[i].dec]; j < i; j++)
		if (!w->done[j])
			return true;
	return false;
}

/*
 * Step 8: the members, an entry each. Directories, symlinks and what
 * directory sources give go out in the manifest's order. The members of
 * tar and .deb sources are read as they stream, with no copy: the first
 * such source leads, and each glued file goes out when it reaches its
 * image, the other sources' streams moved on to theirs (each writes the
 * members it passes); the rest of each stream follows, then anything
 * still left, in the manifest's order. Readers match members by name;
 * the entries that share a path go out in the manifest's order.
 */
static int write_members(struct uw *w)
{
	size_t lead = FATELF_UNIFY_NONE;
	int r = 0;

	w->done = calloc(w->nwent ? w->nwent : 1, sizeof(*w->done));
	if (!w->done)
		return fatelf_diag_oom(w->d);
	for (size_t i = 0; r == 0 && i < w->nwent; i++) {
		const fatelf_bundle_entry *e = &w->m->entries[i];
		size_t k = w->went[i].dec, s = w->went[i].src;
		bool dirs_only = true;

		if (e->type != FATELF_ENTRY_FILE) {
			r = fatelf_bundle_archive_header(w->out, &w->bo, e, w->d);
			w->done[i] = true;
		} else if (w->glue_of[k] != FATELF_UNIFY_NONE) {
			const struct glued *g = &w->glued[w->glue_of[k]];

			for (unsigned j = 0; j < g->nrec; j++)
				dirs_only = dirs_only && w->is_dir[g->src_of[j]];
			if (dirs_only)
				r = put_glued(w, i);
		} else if (w->is_dir[s] && !waits(w, i)) {
			r = put_item(w, i, s, NULL);
		}
	}
	for (size_t s = 0; s < w->n && lead == FATELF_UNIFY_NONE; s++)
		if (!w->is_dir[s])
			lead = s;
	while (r == 0 && lead != FATELF_UNIFY_NONE && (r = cur_next(w, lead)) > 0) {
		struct cur *c = &w->cur[lead];
		size_t k = archive_entry_filetype(c->ae) == AE_IFREG ? find_dec(w, c->path) : FATELF_UNIFY_NONE;
		const fatelf_unify_item *it;

		if (k != FATELF_UNIFY_NONE && w->glue_of[k] != FATELF_UNIFY_NONE && (it = item_at(w, k, lead)) &&
		    it->ord == c->ord && !w->done[w->went_of[k]])
			r = put_glued(w, w->went_of[k]);
		else
			r = cur_put(w, lead);
	}
	for (size_t s = 0; r == 0 && s < w->n; s++) {
		bool left = false;

		for (size_t i = 0; i < w->nwent && !left && !w->is_dir[s]; i++)
			left = !w->done[i] && w->went[i].src == s;
		if (left)
			r = cur_drain(w, s);
	}
	for (size_t i = 0; r == 0 && i < w->nwent; i++) {
		size_t k = w->went[i].dec, s = w->went[i].src;

		if (w->done[i])
			continue;
		if (w->glue_of[k] != FATELF_UNIFY_NONE) {
			r = put_glued(w, i);
		} else if (w->is_dir[s]) {
			r = put_item(w, i, s, NULL);
		} else {
			r = cur_seek(w, s, item_at(w, k, s));
			if (r == 0)
				r = cur_put(w, s);
			if (r == 0 && !w->done[i])
				r = entry_error(w, -EIO, w->dec[k].path, "gone from %s since it was read", src_name(w, s));
		}
	}
	w->res->lead = lead;
	for (size_t s = 0; s < w->n; s++) {
		if (w->cur[s].reads > 1)
			w->res->rereads[s] = w->cur[s].reads - 1;
		fatelf_unify_stream_free(w->cur[s].st);
		w->cur[s].st = NULL;
	}
	return r;
}

static void uw_done(struct uw *w)
{
	for (size_t s = 0; s < w->n; s++)
		fatelf_unify_index_free(&w->ix[s]);
	free(w->dec);
	free(w->owner);
	free(w->glue_of);
	free(w->grouped);
	free(w->went);
	free(w->went_of);
	free(w->glued);
	free(w->buf);
	fatelf_sha256_free(w->sha);
	free(w->done);
	for (size_t s = 0; s < FATELF_UNIFY_MAX_SOURCES; s++)
		fatelf_unify_stream_free(w->cur[s].st);
	for (size_t s = 0; s < FATELF_UNIFY_MAX_SOURCES; s++)
		if (w->root[s] >= 0)
			close(w->root[s]);
}

#define _cleanup_uw_ _cleanup_(uw_done)

/* The sources read and every path decided: per-arch, shared or glued,
 * the glued ones laid out and hashed. */
static int uw_plan(struct uw *w)
{
	const fatelf_unify_opts *o = w->o;
	fatelf_diag *d = w->d;
	int r;

	r = index_sources(w);
	if (r == 0)
		r = deb_scripts(w);
	if (r == 0)
		r = deb_fields(w);
	if (r == 0 && (!w->bo.name || !w->bo.version))
		r = fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no %s: give %s, or a .deb source that has one",
				    !w->bo.name ? "package name" : "version", !w->bo.name ? "--name" : "--version");
	if (r == 0)
		r = fatelf_bundle_opts_check(&w->bo, d);
	if (r == 0)
		r = fatelf_unify_plan(w->src, w->n, o->per_arch, o->nper_arch, &w->dec, &w->ndec, &w->res->stats, d);
	if (r == 0)
		r = check_decisions(w);
	for (size_t i = 0; r == 0 && i < w->nglued; i++)
		r = layout_glued(w, &w->glued[i]);
	if (r == 0)
		r = hash_glued(w);
	return r;
}

/* The manifest as a reader takes it (parents, paths, records): refused
 * here, before an output exists. */
static int manifest_reads_back(const char *json, size_t json_len, const fatelf_bundle_limits *lim, fatelf_diag *d)
{
	_cleanup_manifest_ fatelf_manifest *back = NULL;

	return fatelf_manifest_parse(json, json_len, lim, &back, d);
}

/* Whether a path or a link target of m has a byte over 0x7f. */
static bool manifest_non_ascii(const fatelf_manifest *m)
{
	for (size_t k = 0; k < m->nentries; k++) {
		for (const char *p = m->entries[k].path; *p; p++)
			if ((unsigned char)*p >= 0x80)
				return true;
		for (const char *p = m->entries[k].link_target; p && *p; p++)
			if ((unsigned char)*p >= 0x80)
				return true;
	}
	return false;
}

/* The bundle written to the output the options open: the manifest, the
 * signature, then every member. */
static int uw_write(struct uw *w, fatelf_manifest *m, const char *json, size_t json_len, const char *sig)
{
	struct archive *a = NULL;
	int out_fd, r;

	out_fd = w->o->bundle.open_output(w->o->bundle.userdata, w->d);
	if (out_fd < 0)
		return out_fd;
	r = fatelf_bundle_archive_open(&w->bo, manifest_non_ascii(m), out_fd, json, json_len, sig, &a, w->d);
	if (r == 0) {
		w->out = a;
		w->m = m;
		r = write_members(w);
	}
	if (a) {
		int q = fatelf_bundle_archive_close(a, w->d);

		if (r == 0)
			r = q;
	}
	return r;
}

/* What the bundle holds, counted by kind. */
static void uw_count(const struct uw *w, const fatelf_manifest *m, fatelf_unify_result *res)
{
	for (size_t i = 0; i < w->nwent; i++) {
		size_t k = w->went[i].dec;

		if (m->entries[i].type == FATELF_ENTRY_DIR)
			res->dirs++;
		else if (w->glue_of[k] != FATELF_UNIFY_NONE)
			res->glued++;
		else if (w->dec[k].kind == FATELF_UNIFY_PER_ARCH || w->went[i].srcs)
			res->per_arch++;
		else
			res->shared++;
	}
	snprintf(res->name, sizeof(res->name), "%s", w->bo.name);
	snprintf(res->version, sizeof(res->version), "%s", w->bo.version);
}

static int unify_run(const fatelf_unify_opts *o, fatelf_unify_result *ret, fatelf_diag *d)
{
	fatelf_unify_result res = { 0 };
	_cleanup_uw_ struct uw w = { .o = o, .d = d, .n = o->nfrom, .bo = o->bundle, .res = &res };
	_cleanup_manifest_ fatelf_manifest *m = NULL;
	_cleanup_free_ char *json = NULL, *sig = NULL;
	size_t json_len = 0;
	int r;

	for (size_t s = 0; s < FATELF_UNIFY_MAX_SOURCES; s++)
		w.root[s] = -1;
	fatelf_bundle_limits_fill(&w.lim, &o->bundle.limits);
	w.buf = malloc(IO_CHUNK);
	w.sha = fatelf_sha256_new();
	if (!w.buf || !w.sha)
		return fatelf_diag_oom(d);
	r = uw_plan(&w);
	if (r == 0)
		r = build_manifest(&w, &m);
	if (r == 0)
		r = fatelf_bundle_manifest_finish(m, &w.bo, &w.lim, &json, &json_len, &sig, d);
	if (r == 0)
		r = manifest_reads_back(json, json_len, &w.lim, d);
	if (r == 0)
		r = uw_write(&w, m, json, json_len, sig);
	if (r != 0)
		return r;
	uw_count(&w, m, &res);
	if (ret)
		*ret = res;
	return 0;
}

int fatelf_unify_create(const fatelf_unify_opts *o, fatelf_unify_result *ret, fatelf_diag *d)
{
	int r;

	fatelf_diag_clear(d);
	if (!o || o->nfrom == 0 || o->nfrom > FATELF_UNIFY_MAX_SOURCES)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "%zu sources; 1 to %d are allowed",
				       o ? o->nfrom : 0, FATELF_UNIFY_MAX_SOURCES);
	if (!o->bundle.open_output)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no output");
	r = unify_run(o, ret, d);
	/* libarchive and the hash queue run out of memory without a diag */
	if (r == -ENOMEM)
		fatelf_diag_oom(d);
	return r;
}
