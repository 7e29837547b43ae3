/*
 * Repository objects: each one zstd frame of one object's bytes
 * (doc/repository.md, "Objects"), written and read through libarchive's
 * raw format, whose zstd filter is the one compression an object may
 * have. A reader trusts nothing of a frame: the filter must be zstd, the
 * bytes exactly the size the signed manifest gives, and their SHA-256
 * the object's name.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "macro.h"
#include "repo.h"

void fatelf_repo_object_path(const uint8_t sha[32], char buf[FATELF_REPO_OBJECT_PATH_MAX])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	snprintf(buf, FATELF_REPO_OBJECT_PATH_MAX, FATELF_REPO_OBJECTS "/%.2s/%s.zst", hex, hex);
}

void fatelf_repo_manifest_path(const uint8_t sha[32], bool signature, char buf[FATELF_REPO_MANIFEST_PATH_MAX])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	snprintf(buf, FATELF_REPO_MANIFEST_PATH_MAX, FATELF_REPO_MANIFESTS "/%s/%s", hex,
		 signature ? FATELF_SIGNATURE_NAME : FATELF_MANIFEST_NAME);
}

void fatelf_repo_index_path(const uint8_t sha[32], bool signature, char buf[FATELF_REPO_MANIFEST_PATH_MAX])
{
	char hex[65];

	fatelf_hex(sha, 32, hex);
	snprintf(buf, FATELF_REPO_MANIFEST_PATH_MAX, FATELF_REPO_INDEXES "/%s.json%s", hex,
		 signature ? ".minisig" : "");
}

struct fatelf_repo_owriter {
	struct archive *a;
	fatelf_sha256 *h;
	uint64_t size;
};

static int owriter_fail(fatelf_repo_owriter *w, const char *what, fatelf_diag *d)
{
	const char *msg = archive_error_string(w->a);
	int e = archive_errno(w->a);

	return fatelf_diag_set(d, e > 0 ? -e : -EIO, -1, "%s a compressed object: %s", what,
			       msg ? msg : "write error");
}

int fatelf_repo_owriter_open(int fd, fatelf_repo_owriter **ret, fatelf_diag *d)
{
	fatelf_repo_owriter *w = calloc(1, sizeof(*w));
	struct archive_entry *e = NULL;
	int r;

	if (!w)
		return fatelf_diag_oom(d);
	w->a = archive_write_new();
	w->h = fatelf_sha256_new();
	e = archive_entry_new();
	if (!w->a || !w->h || !e) {
		r = fatelf_diag_oom(d);
		goto fail;
	}
	if (archive_write_set_format_raw(w->a) != ARCHIVE_OK ||
	    archive_write_add_filter_zstd(w->a) != ARCHIVE_OK ||
	    archive_write_set_filter_option(w->a, "zstd", "compression-level", "19") != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w->a, 0) != ARCHIVE_OK ||
	    archive_write_open_fd(w->a, fd) != ARCHIVE_OK) {
		r = owriter_fail(w, "starting", d);
		goto fail;
	}
	archive_entry_set_pathname(e, "object");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	if (archive_write_header(w->a, e) != ARCHIVE_OK) {
		r = owriter_fail(w, "starting", d);
		goto fail;
	}
	archive_entry_free(e);
	*ret = w;
	return 0;
fail:
	archive_entry_free(e);
	fatelf_repo_owriter_abort(w);
	return r;
}

int fatelf_repo_owriter_write(fatelf_repo_owriter *w, const void *buf, size_t len, fatelf_diag *d)
{
	const uint8_t *p = buf;

	while (len > 0) {
		la_ssize_t n = archive_write_data(w->a, p, len);

		if (n <= 0)
			return owriter_fail(w, "writing", d);
		fatelf_sha256_update(w->h, p, (size_t)n);
		w->size += (uint64_t)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fatelf_repo_owriter_close(fatelf_repo_owriter *w, uint8_t ret_sha[32], uint64_t *ret_size, fatelf_diag *d)
{
	int r = 0;

	if (archive_write_close(w->a) != ARCHIVE_OK)
		r = owriter_fail(w, "finishing", d);
	if (r == 0) {
		fatelf_sha256_final(w->h, ret_sha);
		*ret_size = w->size;
	}
	fatelf_repo_owriter_abort(w);
	return r;
}

void fatelf_repo_owriter_abort(fatelf_repo_owriter *w)
{
	if (!w)
		return;
	if (w->a)
		archive_write_free(w->a);
	fatelf_sha256_free(w->h);
	free(w);
}

struct oread {
	const fatelf_reader *src;
	int src_err;
};

static la_ssize_t oread_cb(struct archive *a, void *ctx, const void **buf)
{
	struct oread *o = ctx;
	ssize_t n = o->src->read(o->src->ctx, buf);

	if (n < 0) {
		o->src_err = (int)n;
		archive_set_error(a, (int)-n, "read error: %s", fatelf_strerror((int)n));
		return -1;
	}
	return n;
}

static int object_fail(fatelf_diag *d, int code, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int object_fail(fatelf_diag *d, int code, const char *name, const char *fmt, ...)
{
	char rule[sizeof(((fatelf_diag *)0)->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	return fatelf_diag_at(d, code, -1, name, "%s", rule);
}

int fatelf_repo_object_read(const fatelf_reader *src, const uint8_t sha[32], uint64_t size,
			    const char *name, int (*data)(void *ctx, const void *buf, size_t len), void *ctx,
			    fatelf_diag *d)
{
	struct oread o = { .src = src };
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	fatelf_sha256 *h = fatelf_sha256_new();
	uint64_t got = 0;
	uint8_t out[32];
	int r, k0;

	if (!a || !h) {
		r = fatelf_diag_oom(d);
		goto out;
	}
	if (!src->read) {
		r = fatelf_diag_set(d, -EINVAL, -1, "object reader is not sequential");
		goto out;
	}
	/* Exactly one zstd filter, never bid for: an object whose own bytes
	 * are zstd (a shipped .zst file) is one frame around them, and an
	 * empty object is a frame with no bytes in it. */
	if (archive_read_append_filter(a, ARCHIVE_FILTER_ZSTD) != ARCHIVE_OK ||
	    archive_read_support_format_raw(a) != ARCHIVE_OK || archive_read_support_format_empty(a) != ARCHIVE_OK) {
		r = fatelf_diag_oom(d);
		goto out;
	}
	if (archive_read_open(a, &o, NULL, oread_cb, NULL) != ARCHIVE_OK) {
		if (o.src_err) {
			r = fatelf_diag_at(d, o.src_err, -1, name, "%s", fatelf_strerror(o.src_err));
			goto out;
		}
		r = object_fail(d, -FATELF_E_REPO_OBJECT, name, "not a zstd frame: %s",
				archive_error_string(a) ? archive_error_string(a) : "empty");
		goto out;
	}
	k0 = archive_read_next_header(a, &e);
	if (k0 != ARCHIVE_OK && k0 != ARCHIVE_EOF) {
		if (o.src_err) {
			r = fatelf_diag_at(d, o.src_err, -1, name, "%s", fatelf_strerror(o.src_err));
			goto out;
		}
		r = object_fail(d, -FATELF_E_REPO_OBJECT, name, "not a zstd frame: %s",
				archive_error_string(a) ? archive_error_string(a) : "empty");
		goto out;
	}
	if (archive_filter_count(a) != 2 || archive_filter_code(a, 0) != ARCHIVE_FILTER_ZSTD ||
	    archive_filter_bytes(a, -1) == 0) {
		r = object_fail(d, -FATELF_E_REPO_OBJECT, name, "not a zstd frame");
		goto out;
	}
	for (; k0 == ARCHIVE_OK;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int k = archive_read_data_block(a, &buf, &len, &off);

		if (k == ARCHIVE_EOF)
			break;
		if (k != ARCHIVE_OK) {
			if (o.src_err)
				r = fatelf_diag_at(d, o.src_err, -1, name, "%s", fatelf_strerror(o.src_err));
			else
				r = object_fail(d, -FATELF_E_REPO_OBJECT, name, "damaged zstd frame: %s",
						archive_error_string(a) ? archive_error_string(a) : "read error");
			goto out;
		}
		if (len > size - got) {
			r = object_fail(d, -FATELF_E_REPO_OBJECT, name,
					"holds more than the %" PRIu64 " bytes the manifest gives", size);
			goto out;
		}
		fatelf_sha256_update(h, buf, len);
		got += len;
		if (data && len > 0) {
			r = data(ctx, buf, len);
			if (r < 0) {
				if (d && !d->code)
					fatelf_diag_at(d, r, -1, name, "%s", fatelf_strerror(r));
				goto out;
			}
		}
	}
	if (got != size) {
		r = object_fail(d, -FATELF_E_REPO_OBJECT, name,
				"holds %" PRIu64 " bytes, the manifest gives %" PRIu64, got, size);
		goto out;
	}
	fatelf_sha256_final(h, out);
	if (memcmp(out, sha, 32) != 0) {
		char want[65], have[65];

		fatelf_hex(sha, 32, want);
		fatelf_hex(out, 32, have);
		r = object_fail(d, -FATELF_E_REPO_OBJECT, name, "SHA-256 is %s, its name says %s", have, want);
		goto out;
	}
	r = 0;
out:
	if (a)
		archive_read_free(a);
	fatelf_sha256_free(h);
	return r;
}
