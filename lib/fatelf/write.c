/*
 * Writing files: a plan's records copied (cloned where the file system
 * can) into atomic output, a hidden temp file renamed over the target.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic.h"
#include "fatelf.h"
#include "io.h"
#include "macro.h"

int fatelf_atomic_open(fatelf_atomic *ret, const char *path, mode_t mode, fatelf_diag *d)
{
	char dirbuf[4096], basebuf[4096];
	size_t plen = strlen(path);

	memset(ret, 0, sizeof(*ret));
	ret->fd = -1;
	ret->dirfd = -1;
	if (plen == 0 || plen >= sizeof(ret->path)) {
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, -ENAMETOOLONG, -1, "%s", fatelf_strerror(-ENAMETOOLONG));
	}
	memcpy(ret->path, path, plen + 1);
	memcpy(dirbuf, path, plen + 1);
	memcpy(basebuf, path, plen + 1);
	const char *dir = dirname(dirbuf);
	const char *base = basename(basebuf);

	ret->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ret->dirfd < 0) {
		int r = -errno;
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", dir);
		return fatelf_diag_set(d, r, -1, "cannot open output directory: %s", fatelf_strerror(r));
	}

	fatelf_tmpfile t;
	int r = fatelf_tmpfile_open(ret->dirfd, base, mode, &t);

	if (r == 0) {
		ret->fd = t.fd;
		memcpy(ret->tmpname, t.name, sizeof(t.name));
		return 0;
	}
	if (d)
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	close(ret->dirfd);
	ret->dirfd = -1;
	ret->tmpname[0] = '\0';
	return fatelf_diag_set(d, r, -1, "cannot create a temporary file beside it: %s",
			       fatelf_strerror(r));
}

int fatelf_atomic_commit(fatelf_atomic *a, fatelf_diag *d)
{
	char basebuf[4096];
	fatelf_tmpfile t = { .dirfd = a->dirfd, .fd = a->fd };
	int r;

	memcpy(basebuf, a->path, sizeof(basebuf));
	memcpy(t.name, a->tmpname, sizeof(t.name));
	t.name[sizeof(t.name) - 1] = '\0';
	r = fatelf_tmpfile_commit(&t, basename(basebuf), a->durable);
	/* the temp is renamed or removed, and the file closed, either way */
	a->fd = -1;
	a->tmpname[0] = '\0';
	if (r < 0) {
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", a->path);
		fatelf_diag_set(d, r, -1, "cannot write the output: %s", fatelf_strerror(r));
		fatelf_atomic_abort(a);
		return r;
	}
	close(a->dirfd);
	a->dirfd = -1;
	return 0;
}

void fatelf_atomic_abort(fatelf_atomic *a)
{
	fatelf_tmpfile t;

	if (!a)
		return;
	/* without its directory there is no temp to remove, only the file */
	t = (fatelf_tmpfile){ .dirfd = a->dirfd, .fd = a->fd };
	if (a->dirfd >= 0) {
		memcpy(t.name, a->tmpname, sizeof(t.name));
		t.name[sizeof(t.name) - 1] = '\0';
	}
	fatelf_tmpfile_abort(&t);
	if (a->dirfd >= 0)
		close(a->dirfd);
	a->fd = -1;
	a->dirfd = -1;
	a->tmpname[0] = '\0';
}

int fatelf_plan_write(const fatelf_plan *plan, const fatelf_header *in, int in_fd,
		      int out_fd, fatelf_diag *d)
{
	int r;

	if (plan->form == FATELF_FORM_FAT) {
		uint8_t table[FATELF_TABLE_SIZE(FATELF_MAX_RECORDS)];
		ssize_t n = fatelf_header_encode(&plan->out, table, sizeof(table));

		if (n < 0)
			return fatelf_diag_set(d, (int)n, -1, "cannot encode the header");
		r = pwrite_all(out_fd, table, (size_t)n, 0);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "cannot write the header: %s",
					       fatelf_strerror(r));
	}
	for (unsigned k = 0; k < plan->nkept; k++) {
		const fatelf_record *src = &in->records[plan->in_index[k]];
		uint64_t out_off = plan->form == FATELF_FORM_FAT
					   ? plan->out.records[plan->out_index[k]].offset : 0;

		r = copy_range(in_fd, src->offset, out_fd, out_off, src->size);
		if (r < 0)
			return fatelf_diag_set(d, r, plan->in_index[k], "record %u: cannot copy: %s",
					       plan->in_index[k], fatelf_strerror(r));
	}
	/* Padding between records may be holes; the length must be exact. */
	if (ftruncate(out_fd, (off_t)plan->out_size) < 0) {
		r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot set the output size: %s", fatelf_strerror(r));
	}
	return 0;
}
