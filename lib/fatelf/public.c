/*
 * The exported API's own functions (include/fatelf/libfatelf.h): the
 * opaque diagnostic and file, and the operations whose internal form
 * takes a fixed-size struct. Each one is a thin wrapper over the internal
 * function that does the work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fatelf.h"
#include "macro.h"

struct fatelf_file {
	int fd;                 /* -1 for a file in memory */
	fatelf_header hdr;
	fatelf_elfinfo info[FATELF_MAX_RECORDS];
};

fatelf_diag *fatelf_diag_new(void)
{
	fatelf_diag *d = malloc(sizeof(*d));

	fatelf_diag_clear(d);
	return d;
}

fatelf_diag *fatelf_diag_free(fatelf_diag *d)
{
	free(d);
	return NULL;
}

int fatelf_diag_code(const fatelf_diag *d)
{
	return d ? d->code : 0;
}

int fatelf_diag_record(const fatelf_diag *d)
{
	return d ? d->record : -1;
}

const char *fatelf_diag_message(const fatelf_diag *d)
{
	return d ? d->msg : "";
}

const char *fatelf_diag_subject(const fatelf_diag *d)
{
	return d ? d->subject : "";
}

/* A host by its uname -m name, or this machine for NULL. */
static int host_of(const char *uname_machine, fatelf_host *ret, fatelf_diag *d)
{
	int r;

	if (!uname_machine) {
		r = fatelf_host_detect(ret);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "cannot detect this machine's targets");
		return 0;
	}
	r = fatelf_host_from_uname(uname_machine, FATELF_HOST_ARM32, ret);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "unknown machine name \"%s\"", uname_machine);
	return 0;
}

int fatelf_file_open(const char *path, fatelf_file **ret, fatelf_diag *d)
{
	_cleanup_free_ fatelf_file *f = NULL;
	int fd;

	if (!path || !ret)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no path or no result");
	f = malloc(sizeof(*f));
	if (!f)
		return fatelf_diag_oom(d);
	fd = fatelf_open_validated(path, &f->hdr, f->info, NULL, d);
	if (fd < 0)
		return fd;
	f->fd = fd;
	*ret = TAKE_PTR(f);
	return 0;
}

int fatelf_file_open_mem(const void *mem, size_t len, fatelf_file **ret, fatelf_diag *d)
{
	_cleanup_free_ fatelf_file *f = NULL;
	fatelf_reader src;
	int r;

	if ((!mem && len) || !ret)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no memory or no result");
	f = malloc(sizeof(*f));
	if (!f)
		return fatelf_diag_oom(d);
	fatelf_reader_seekable_mem(&src, mem, len);
	r = fatelf_validate(&src, NULL, &f->hdr, f->info, d);
	if (r < 0)
		return r;
	f->fd = -1;
	*ret = TAKE_PTR(f);
	return 0;
}

fatelf_file *fatelf_file_free(fatelf_file *f)
{
	if (f) {
		if (f->fd >= 0)
			close(f->fd);
		free(f);
	}
	return NULL;
}

unsigned fatelf_file_count(const fatelf_file *f)
{
	return f ? f->hdr.nrecords : 0;
}

static bool has_record(const fatelf_file *f, unsigned index)
{
	return f && index < f->hdr.nrecords;
}

int fatelf_file_target(const fatelf_file *f, unsigned index, fatelf_target *ret)
{
	if (!has_record(f, index) || !ret)
		return -EINVAL;
	*ret = f->hdr.records[index].target;
	return 0;
}

int fatelf_file_range(const fatelf_file *f, unsigned index, uint64_t *ret_offset,
		      uint64_t *ret_size)
{
	if (!has_record(f, index))
		return -EINVAL;
	if (ret_offset)
		*ret_offset = f->hdr.records[index].offset;
	if (ret_size)
		*ret_size = f->hdr.records[index].size;
	return 0;
}

int fatelf_file_elf_type(const fatelf_file *f, unsigned index)
{
	if (!has_record(f, index))
		return -EINVAL;
	return f->info[index].type;
}

int fatelf_file_short_name(const fatelf_file *f, unsigned index, char buf[FATELF_TARGET_NAME_MAX])
{
	if (!has_record(f, index) || !buf)
		return -EINVAL;
	fatelf_target_short_name(&f->hdr, (int)index, buf);
	return 0;
}

int fatelf_file_find(const fatelf_file *f, const char *target, fatelf_diag *d)
{
	if (!f || !target)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no file or no target");
	return fatelf_target_find(target, &f->hdr, d);
}

int fatelf_file_select_host(const fatelf_file *f, const char *uname_machine, fatelf_diag *d)
{
	fatelf_host h;
	int r;

	if (!f)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no file");
	r = host_of(uname_machine, &h, d);
	if (r < 0)
		return r;
	return fatelf_host_select(&h, &f->hdr, d);
}

int fatelf_glue_files(const char *out, const char *const *inputs, size_t n, uint64_t align,
		      fatelf_diag *d)
{
	fatelf_glue_opts opts = { .align = align };

	return fatelf_glue(out, inputs, n, &opts, d);
}

/* The keep set of in that names or a host pick, then the thin itself. */
static int thin_with(const char *out, const char *in, const char *const *targets, size_t n,
		     const fatelf_host *h, int form, fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	fatelf_header hdr;
	fatelf_keepset keep;
	int r;

	fd = fatelf_open_validated(in, &hdr, NULL, NULL, d);
	if (fd < 0)
		return fd;
	r = h ? fatelf_keep_from_host(&hdr, h, &keep, d)
	      : fatelf_keep_from_names(&hdr, targets, n, &keep, d);
	if (r < 0) {
		FATELF_DIAG_FACT(d, subject, in);
		return r;
	}
	return fatelf_thin(out, in, &keep, form, d);
}

int fatelf_thin_targets(const char *out, const char *in, const char *const *targets, size_t n,
			int form, fatelf_diag *d)
{
	if (!targets && n)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "no target names");
	return thin_with(out, in, targets, n, NULL, form, d);
}

int fatelf_thin_host(const char *out, const char *in, const char *uname_machine, int form,
		     fatelf_diag *d)
{
	fatelf_host h;
	int r;

	r = host_of(uname_machine, &h, d);
	if (r < 0)
		return r;
	return thin_with(out, in, NULL, 0, &h, form, d);
}
