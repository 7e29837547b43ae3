/*
 * The seekable edit operations on paths: glue, extract, remove, replace,
 * thin and split. Each validates its inputs first, never modifies an input
 * in place, and writes through fatelf_atomic.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fatelf.h"
#include "io.h"
#include "macro.h"

/* One record of an output being assembled from pieces of several files. */
struct piece {
	int fd;
	uint64_t offset;
	uint64_t size;
	uint64_t align;
	fatelf_target target;
	const char *from;       /* path, for messages */
};

static void set_subject(fatelf_diag *d, const char *path)
{
	if (d && path)
		snprintf(d->subject, sizeof(d->subject), "%s", path);
}

uint64_t fatelf_glue_align(uint64_t forced, uint64_t p_align)
{
	if (forced)
		return forced;
	/* Honour the ELF's own alignment (64 KiB pages on aarch64/ppc64le),
	 * within the range a writer keeps. */
	return MIN(MAX(p_align, (uint64_t)FATELF_MIN_ALIGN), (uint64_t)FATELF_MAX_ALIGN);
}

int fatelf_glue_table(const fatelf_target *targets, const uint64_t *sizes, const uint64_t *aligns,
		      unsigned n, fatelf_header *ret, uint64_t *ret_size, fatelf_diag *d)
{
	fatelf_header hdr;
	uint64_t cursor;

	if (n == 0 || n > FATELF_MAX_RECORDS)
		return fatelf_diag_set(d, n ? -FATELF_E_TOO_MANY : -FATELF_E_INVALID, -1,
				       "%u records; 1 to %d are allowed", n, FATELF_MAX_RECORDS);
	fatelf_header_init(&hdr);
	hdr.nrecords = (uint8_t)n;
	cursor = FATELF_TABLE_SIZE(n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = fatelf_align_up(cursor, aligns[i]);

		for (unsigned j = 0; j < i; j++)
			if (fatelf_target_equal(&targets[i], &targets[j])) {
				char name[FATELF_TARGET_NAME_MAX];

				fatelf_target_format(&targets[i], name);
				return fatelf_diag_set(d, -FATELF_E_DUPLICATE, (int)i,
						       "record %u (%s) has the same target as record %u", i, name, j);
			}
		if (off < cursor || off + sizes[i] < off)
			return fatelf_diag_set(d, -FATELF_E_OVERFLOW, (int)i, "record %u: offset overflows", i);
		hdr.records[i].target = targets[i];
		hdr.records[i].offset = off;
		hdr.records[i].size = sizes[i];
		cursor = off + sizes[i];
	}
	*ret = hdr;
	*ret_size = cursor;
	return 0;
}

/* Writes pieces, in order, as a FatELF to out. */
static int write_pieces(const char *out, mode_t mode, const struct stat *keep_owner,
			const struct piece *pcs, unsigned n, fatelf_diag *d)
{
	fatelf_header hdr;
	fatelf_atomic a;
	uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
	fatelf_target targets[FATELF_MAX_RECORDS];
	uint64_t sizes[FATELF_MAX_RECORDS], aligns[FATELF_MAX_RECORDS], cursor;
	int r;

	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < i; j++)
			if (fatelf_target_equal(&pcs[i].target, &pcs[j].target)) {
				char name[FATELF_TARGET_NAME_MAX];
				fatelf_target_format(&pcs[i].target, name);
				set_subject(d, pcs[i].from);
				return fatelf_diag_set(d, -FATELF_E_DUPLICATE, (int)i,
						       "record %u (%s) has the same target as record %u (from %s)",
						       i, name, j, pcs[j].from);
			}
		targets[i] = pcs[i].target;
		sizes[i] = pcs[i].size;
		aligns[i] = pcs[i].align;
	}
	r = fatelf_glue_table(targets, sizes, aligns, n, &hdr, &cursor, d);
	if (r < 0)
		return r;
	r = fatelf_atomic_open(&a, out, mode, d);
	if (r < 0)
		return r;
	if (keep_owner) {
		mode_t m = keep_owner->st_mode & 0777;
		if (fchown(a.fd, keep_owner->st_uid, keep_owner->st_gid) == 0 ||
		    (keep_owner->st_uid == geteuid() && keep_owner->st_gid == getegid()))
			m = keep_owner->st_mode & 07777;
		(void)fchmod(a.fd, m);
	}
	ssize_t tl = fatelf_header_encode(&hdr, table, sizeof(table));
	r = tl < 0 ? (int)tl : pwrite_all(a.fd, table, (size_t)tl, 0);
	if (r < 0)
		goto fail;
	for (unsigned i = 0; i < n; i++) {
		r = copy_range(pcs[i].fd, pcs[i].offset, a.fd, hdr.records[i].offset, pcs[i].size);
		if (r < 0)
			goto fail;
	}
	if (ftruncate(a.fd, (off_t)cursor) < 0) {
		r = -errno;
		goto fail;
	}
	return fatelf_atomic_commit(&a, d);
fail:
	set_subject(d, out);
	fatelf_diag_set(d, r, -1, "cannot write the output: %s", fatelf_strerror(r));
	fatelf_atomic_abort(&a);
	return r;
}

/* Opens an input that may be an ELF or a FatELF, adding its records. */
static int add_input(const char *path, int fd, uint64_t forced_align, struct piece *pcs,
		     unsigned *n, fatelf_diag *d)
{
	fatelf_reader src;
	uint8_t magic[4];
	int r;

	r = fatelf_reader_seekable_fd(&src, fd);
	if (r < 0) {
		set_subject(d, path);
		return fatelf_diag_set(d, r, -1, "%s", fatelf_strerror(r));
	}
	if (src.size < 4 || fatelf_reader_read_at(&src, magic, 4, 0) < 0) {
		set_subject(d, path);
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1, "not an ELF or FatELF file (%llu bytes)",
				       (unsigned long long)src.size);
	}
	if (fatelf_is_fatelf(magic, 4)) {
		fatelf_header hdr;
		_cleanup_free_ fatelf_elfinfo *info = calloc(FATELF_MAX_RECORDS, sizeof(*info));

		if (!info)
			return fatelf_diag_oom(d);
		r = fatelf_validate(&src, NULL, &hdr, info, d);
		if (r < 0) {
			set_subject(d, path);
			return r;
		}
		for (unsigned i = 0; i < hdr.nrecords; i++) {
			if (*n >= FATELF_MAX_RECORDS)
				goto too_many;
			pcs[*n] = (struct piece){
				.fd = fd,
				.offset = hdr.records[i].offset,
				.size = hdr.records[i].size,
				.align = fatelf_glue_align(forced_align, info[i].max_align),
				.target = hdr.records[i].target,
				.from = path,
			};
			(*n)++;
		}
		return 0;
	}
	if (!fatelf_is_elf(magic, 4)) {
		set_subject(d, path);
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1, "not an ELF or FatELF file");
	}
	fatelf_elfinfo info;
	r = fatelf_elf_inspect(&src, 0, src.size, -1, &info, d);
	if (r < 0) {
		set_subject(d, path);
		return r;
	}
	if (*n >= FATELF_MAX_RECORDS)
		goto too_many;
	pcs[*n] = (struct piece){
		.fd = fd,
		.offset = 0,
		.size = src.size,
		.align = fatelf_glue_align(forced_align, info.max_align),
		.target = info.target,
		.from = path,
	};
	(*n)++;
	return 0;
too_many:
	set_subject(d, path);
	return fatelf_diag_set(d, -FATELF_E_TOO_MANY, -1,
			       "more than %d records in all", FATELF_MAX_RECORDS);
}

int fatelf_glue(const char *out, const char *const *inputs, size_t n,
		const fatelf_glue_opts *opts, fatelf_diag *d)
{
	_cleanup_free_ struct piece *pcs = NULL;
	_cleanup_free_ int *fds = NULL;
	uint64_t forced = opts ? opts->align : 0;
	unsigned np = 0;
	int r = 0;

	fatelf_diag_clear(d);
	if (n == 0)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "nothing to glue");
	if (forced && (forced < FATELF_MIN_ALIGN || (forced & (forced - 1))))
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1,
				       "alignment %llu is not a power of two of at least 4096",
				       (unsigned long long)forced);
	pcs = calloc(FATELF_MAX_RECORDS, sizeof(*pcs));
	fds = calloc(n, sizeof(*fds));
	if (!pcs || !fds)
		return fatelf_diag_oom(d);
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	for (size_t i = 0; i < n && r == 0; i++) {
		fds[i] = open(inputs[i], O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			r = -errno;
			set_subject(d, inputs[i]);
			fatelf_diag_set(d, r, -1, "%s", fatelf_strerror(r));
			break;
		}
		r = add_input(inputs[i], fds[i], forced, pcs, &np, d);
	}
	if (r == 0)
		r = write_pieces(out, 0777, NULL, pcs, np, d);
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

/* Keeps records of in, writing out with the given mode policy. */
static int keep_write(const char *out, const char *in, int in_fd, const fatelf_header *hdr,
		      const fatelf_keepset *keep, int form, bool keep_mode, fatelf_diag *d)
{
	fatelf_plan plan;
	fatelf_atomic a;
	struct stat st;
	int r;

	r = fatelf_plan_make(hdr, keep, form, &plan, d);
	if (r < 0) {
		set_subject(d, in);
		return r;
	}
	if (fstat(in_fd, &st) < 0)
		return -errno;
	r = fatelf_atomic_open(&a, out, keep_mode ? (st.st_mode & 0777) : 0777, d);
	if (r < 0)
		return r;
	if (keep_mode) {
		mode_t m = st.st_mode & 0777;
		if (fchown(a.fd, st.st_uid, st.st_gid) == 0 ||
		    (st.st_uid == geteuid() && st.st_gid == getegid()))
			m = st.st_mode & 07777;
		(void)fchmod(a.fd, m);
	}
	r = fatelf_plan_write(&plan, hdr, in_fd, a.fd, d);
	if (r < 0) {
		set_subject(d, out);
		fatelf_atomic_abort(&a);
		return r;
	}
	return fatelf_atomic_commit(&a, d);
}

/* Opens and validates in, and finds the one record target names. */
static int open_and_find(const char *in, const char *target, fatelf_header *ret_hdr,
			 int *ret_index, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	int idx;

	fatelf_diag_clear(d);
	fd = fatelf_open_validated(in, ret_hdr, NULL, NULL, d);
	if (fd < 0)
		return fd;
	idx = fatelf_target_find(target, ret_hdr, d);
	if (idx < 0) {
		set_subject(d, in);
		return idx;
	}
	*ret_index = idx;
	return TAKE_FD(fd);
}

int fatelf_extract(const char *out, const char *in, const char *target, fatelf_diag *d)
{
	fatelf_header hdr;
	fatelf_keepset keep;
	_cleanup_close_ int fd = -1;
	int idx;

	fd = open_and_find(in, target, &hdr, &idx, d);
	if (fd < 0)
		return fd;
	fatelf_keep_clear(&keep);
	fatelf_keep_add(&keep, (unsigned)idx);
	return keep_write(out, in, fd, &hdr, &keep, FATELF_FORM_ELF, false, d);
}

int fatelf_remove(const char *out, const char *in, const char *target, fatelf_diag *d)
{
	fatelf_header hdr;
	fatelf_keepset keep;
	_cleanup_close_ int fd = -1;
	int idx;

	fd = open_and_find(in, target, &hdr, &idx, d);
	if (fd < 0)
		return fd;
	if (hdr.nrecords == 1) {
		set_subject(d, in);
		return fatelf_diag_set(d, -FATELF_E_EMPTY_KEEP, idx,
				       "record %d is the only record; removing it would leave none", idx);
	}
	fatelf_keep_clear(&keep);
	for (unsigned i = 0; i < hdr.nrecords; i++)
		if ((int)i != idx)
			fatelf_keep_add(&keep, i);
	return keep_write(out, in, fd, &hdr, &keep, FATELF_FORM_FAT, true, d);
}

int fatelf_thin(const char *out, const char *in, const fatelf_keepset *keep, int form,
		fatelf_diag *d)
{
	fatelf_header hdr;
	_cleanup_close_ int fd = -1;

	fatelf_diag_clear(d);
	fd = fatelf_open_validated(in, &hdr, NULL, NULL, d);
	if (fd < 0)
		return fd;
	return keep_write(out, in, fd, &hdr, keep, form, true, d);
}

int fatelf_replace(const char *out, const char *in, const char *newelf, fatelf_diag *d)
{
	fatelf_header hdr;
	fatelf_reader src;
	fatelf_elfinfo info;
	_cleanup_free_ struct piece *pcs = NULL;
	_cleanup_close_ int fd = -1, efd = -1;
	struct stat st;
	int r, idx = -1;

	fatelf_diag_clear(d);
	fd = fatelf_open_validated(in, &hdr, NULL, NULL, d);
	if (fd < 0)
		return fd;
	efd = open(newelf, O_RDONLY | O_CLOEXEC);
	if (efd < 0) {
		r = -errno;
		set_subject(d, newelf);
		return fatelf_diag_set(d, r, -1, "%s", fatelf_strerror(r));
	}
	r = fatelf_reader_seekable_fd(&src, efd);
	if (r == 0)
		r = fatelf_elf_inspect(&src, 0, src.size, -1, &info, d);
	if (r < 0) {
		set_subject(d, newelf);
		if (d && d->code != r)
			fatelf_diag_set(d, r, -1, "%s", fatelf_diag_text(NULL, r));
		return r;
	}
	for (unsigned i = 0; i < hdr.nrecords; i++)
		if (fatelf_target_equal(&hdr.records[i].target, &info.target))
			idx = (int)i;
	if (idx < 0) {
		char name[FATELF_TARGET_NAME_MAX];
		fatelf_target_format(&info.target, name);
		set_subject(d, in);
		return fatelf_diag_set(d, -FATELF_E_NO_MATCH, -1,
				       "no record has the target of %s (%s)", newelf, name);
	}
	pcs = calloc(hdr.nrecords, sizeof(*pcs));
	if (!pcs)
		return fatelf_diag_oom(d);
	for (unsigned i = 0; i < hdr.nrecords; i++) {
		const fatelf_record *rec = &hdr.records[i];
		if ((int)i == idx)
			pcs[i] = (struct piece){ efd, 0, src.size, fatelf_glue_align(0, info.max_align),
						 info.target, newelf };
		else
			pcs[i] = (struct piece){ fd, rec->offset, rec->size,
						 fatelf_align_of_offset(rec->offset), rec->target, in };
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	return write_pieces(out, st.st_mode & 0777, &st, pcs, hdr.nrecords, d);
}

int fatelf_split(const char *in, const char *prefix,
		 void (*on_file)(void *ctx, int index, const char *path), void *ctx,
		 fatelf_diag *d)
{
	fatelf_header hdr;
	_cleanup_close_ int fd = -1;

	fatelf_diag_clear(d);
	fd = fatelf_open_validated(in, &hdr, NULL, NULL, d);
	if (fd < 0)
		return fd;
	if (!prefix)
		prefix = in;
	for (unsigned i = 0; i < hdr.nrecords; i++) {
		char name[FATELF_TARGET_NAME_MAX], path[4096];
		fatelf_keepset keep;
		int r;

		fatelf_target_short_name(&hdr, (int)i, name);
		if ((size_t)snprintf(path, sizeof(path), "%s-%s", prefix, name) >= sizeof(path)) {
			set_subject(d, prefix);
			return fatelf_diag_set(d, -ENAMETOOLONG, (int)i, "output name too long");
		}
		fatelf_keep_clear(&keep);
		fatelf_keep_add(&keep, i);
		r = keep_write(path, in, fd, &hdr, &keep, FATELF_FORM_ELF, false, d);
		if (r < 0)
			return r;
		if (on_file)
			on_file(ctx, (int)i, path);
	}
	return hdr.nrecords;
}
