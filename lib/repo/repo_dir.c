/*
 * A repository directory, as the vendor's commands change it
 * (doc/repository.md, "Writing a repository"). Every file but the
 * pointer is named by its content and written once, under a hidden temp
 * name then renamed; a new index is published by renaming the pointer
 * over the old one, after the index and its signature are durable. So a
 * reader, over HTTP or on the disk, sees the old repository or the new
 * one, never a mix; two writers take turns on the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "hex.h"
#include "io.h"
#include "macro.h"
#include "path.h"
#include "repo.h"

static const char *const folders[] = { FATELF_REPO_INDEXES, FATELF_REPO_OBJECTS, FATELF_REPO_MANIFESTS };

fatelf_repo_dir *fatelf_repo_close(fatelf_repo_dir *r)
{
	if (!r)
		return NULL;
	fatelf_repo_index_free(r->index);
	free(r->index_sig);
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
	return NULL;
}

int fatelf_repo_read_file(const fatelf_repo_dir *r, const char *rel, size_t max, char **ret, size_t *ret_len,
			  fatelf_diag *d)
{
	int k = read_file_max(r->fd, rel, READ_FILE_NOFOLLOW | READ_FILE_REGULAR, max, ret, ret_len);

	if (k == -ENOENT)
		return fatelf_diag_at(d, -FATELF_E_REPO_MISSING, -1, rel, "not in the repository");
	if (k == -EFBIG)
		return fatelf_diag_at(d, -FATELF_E_LIMIT, -1, rel, "larger than %zu bytes", max);
	if (k < 0)
		return fatelf_diag_at(d, k, -1, rel, "%s", fatelf_strerror(k));
	return 0;
}

/* The folder of rel, opened (made when missing), and its base name. */
static int open_folder(int top, const char *rel, const char **ret_base, fatelf_diag *d)
{
	char dir[FATELF_REPO_MANIFEST_PATH_MAX];
	const char *slash = strrchr(rel, '/');
	int k, fd;

	if (!slash) {
		*ret_base = rel;
		fd = fcntl(top, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? fatelf_diag_set(d, -errno, -1, "%s", fatelf_strerror(-errno)) : fd;
	}
	if ((size_t)(slash - rel) >= sizeof(dir))
		return fatelf_diag_set(d, -ENAMETOOLONG, -1, "%s: name too long", rel);
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	k = mkdir_p(top, dir, 0755, 0755, 0);
	if (k < 0)
		return fatelf_diag_at(d, k, -1, rel, "cannot make its folder: %s", fatelf_strerror(k));
	fd = openat(top, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fatelf_diag_at(d, -errno, -1, rel, "%s", fatelf_strerror(-errno));
	*ret_base = slash + 1;
	return fd;
}

int fatelf_repo_write_file(const fatelf_repo_dir *r, const char *rel, const void *buf, size_t len, bool keep,
			   fatelf_diag *d)
{
	fatelf_tmpfile t = { .fd = -1 };
	_cleanup_close_ int dfd = -1;
	const char *base = rel;
	int k;

	dfd = open_folder(r->fd, rel, &base, d);
	if (dfd < 0)
		return dfd;
	if (keep && faccessat(dfd, base, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	k = fatelf_tmpfile_open(dfd, "repo", 0644, &t);
	if (k == 0)
		k = write_all(t.fd, buf, len);
	if (k == 0)
		k = fatelf_tmpfile_commit(&t, base, true);
	if (k < 0) {
		fatelf_tmpfile_abort(&t);
		return fatelf_diag_at(d, k, -1, rel, "cannot write: %s", fatelf_strerror(k));
	}
	return 0;
}

bool fatelf_repo_has_object(const fatelf_repo_dir *r, const uint8_t sha[32])
{
	char rel[FATELF_REPO_OBJECT_PATH_MAX];
	struct stat st;

	fatelf_repo_object_path(sha, rel);
	return fstatat(r->fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* Reads the pointer, the index it names and its signature (if any). */
static int load_index(fatelf_repo_dir *r, const fatelf_ms_pubkey *keys, size_t nkeys, fatelf_diag *d)
{
	_cleanup_free_ char *ptr = NULL, *json = NULL;
	char rel[FATELF_REPO_MANIFEST_PATH_MAX];
	uint8_t sha[32];
	fatelf_sha256 *h;
	size_t len, jlen, slen = 0;
	uint64_t size;
	int k;

	k = fatelf_repo_read_file(r, FATELF_REPO_POINTER, FATELF_REPO_POINTER_MAX, &ptr, &len, d);
	if (k == -FATELF_E_REPO_MISSING)
		return fatelf_diag_set(d, -FATELF_E_REPO_FORMAT, -1,
				       "not a repository: no '" FATELF_REPO_POINTER "' file (fatelf repo init makes one)");
	if (k < 0)
		return k;
	k = fatelf_repo_pointer_parse(ptr, len, r->index_sha, &r->index_size, d);
	if (k < 0)
		return k;
	fatelf_repo_index_path(r->index_sha, false, rel);
	k = fatelf_repo_read_file(r, rel, FATELF_REPO_INDEX_MAX, &json, &jlen, d);
	if (k < 0)
		return k;
	h = fatelf_sha256_new();
	if (!h)
		return fatelf_diag_oom(d);
	fatelf_sha256_update(h, json, jlen);
	fatelf_sha256_final(h, sha);
	fatelf_sha256_free(h);
	size = jlen;
	if (memcmp(sha, r->index_sha, 32) != 0 || size != r->index_size)
		return fatelf_diag_at(d, -FATELF_E_REPO_INDEX, -1, rel, "its SHA-256 or size is not the pointer's");
	fatelf_repo_index_path(r->index_sha, true, rel);
	k = fatelf_repo_read_file(r, rel, FATELF_REPO_SIG_MAX, &r->index_sig, &slen, d);
	if (k == -FATELF_E_REPO_MISSING)
		fatelf_diag_clear(d);   /* an unsigned index */
	else if (k < 0)
		return k;
	if (nkeys > 0) {
		if (!r->index_sig)
			return fatelf_diag_set(d, -FATELF_E_SIG_MISSING, -1,
					       "the index is not signed, and a signature by the key is required");
		k = fatelf_ms_verify(keys, nkeys, json, jlen, r->index_sig, slen, NULL, d);
		if (k < 0)
			return k;
	}
	return fatelf_repo_index_parse(json, jlen, &r->index, d);
}

static int lock_repo(fatelf_repo_dir *r, bool write, fatelf_diag *d)
{
	r->lock_fd = openat(r->fd, FATELF_REPO_LOCK, (write ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC,
			    0644);
	if (r->lock_fd < 0 && !write && (errno == ENOENT || errno == EACCES))
		return 0;       /* a read-only medium: nobody writes it */
	if (r->lock_fd < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot open the repository's lock: %s",
				       fatelf_strerror(-errno));
	if (flock(r->lock_fd, write ? LOCK_EX : LOCK_SH) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot take the repository's lock: %s",
				       fatelf_strerror(-errno));
	return 0;
}

static int open_dir(const char *path, bool write, fatelf_repo_dir **ret, fatelf_diag *d)
{
	fatelf_repo_dir *r = calloc(1, sizeof(*r));

	if (!r)
		return fatelf_diag_oom(d);
	r->lock_fd = -1;
	r->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->fd < 0) {
		int k = -errno;

		free(r);
		return fatelf_diag_at(d, k, -1, path, "%s", fatelf_strerror(k));
	}
	*ret = r;
	return lock_repo(r, write, d);
}

int fatelf_repo_open(const char *path, bool write, const fatelf_ms_pubkey *keys, size_t nkeys,
		     fatelf_repo_dir **ret, fatelf_diag *d)
{
	_cleanup_repo_dir_ fatelf_repo_dir *r = NULL;
	int k = open_dir(path, write, &r, d);

	if (k < 0)
		return k;
	k = load_index(r, keys, nkeys, d);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(r);
	return 0;
}

static int sha_of(const void *buf, size_t len, uint8_t out[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();

	if (!h)
		return -ENOMEM;
	fatelf_sha256_update(h, buf, len);
	fatelf_sha256_final(h, out);
	fatelf_sha256_free(h);
	return 0;
}

/* Writes ix (serial and times already set) and points at it. */
static int publish_index(fatelf_repo_dir *r, fatelf_repo_index *ix, const fatelf_ms_seckey *key, fatelf_diag *d)
{
	_cleanup_free_ char *json = NULL, *sig = NULL;
	char rel[FATELF_REPO_MANIFEST_PATH_MAX], ptr[FATELF_REPO_POINTER_MAX], comment[128];
	uint8_t sha[32];
	size_t len;
	int k;

	k = fatelf_repo_index_serialize(ix, &json, &len, d);
	if (k < 0)
		return k;
	k = sha_of(json, len, sha);
	if (k < 0)
		return fatelf_diag_oom(d);
	if (key) {
		snprintf(comment, sizeof(comment), "fatelf-repo index serial %" PRIu64, ix->serial);
		k = fatelf_ms_sign(key, json, len, NULL, comment, &sig, d);
		if (k < 0)
			return k;
		fatelf_repo_index_path(sha, true, rel);
		k = fatelf_repo_write_file(r, rel, sig, strlen(sig), false, d);
		if (k < 0)
			return k;
	}
	fatelf_repo_index_path(sha, false, rel);
	k = fatelf_repo_write_file(r, rel, json, len, false, d);
	if (k < 0)
		return k;
	fatelf_repo_pointer_format(sha, len, ptr);
	k = fatelf_repo_write_file(r, FATELF_REPO_POINTER, ptr, strlen(ptr), false, d);
	if (k < 0)
		return k;
	memcpy(r->index_sha, sha, 32);
	r->index_size = len;
	free(r->index_sig);
	r->index_sig = TAKE_PTR(sig);
	return 0;
}

int fatelf_repo_publish(fatelf_repo_dir *r, fatelf_repo_index *ix, const fatelf_ms_seckey *key, int64_t now,
			int64_t expire_secs, fatelf_diag *d)
{
	uint64_t serial = r->index ? r->index->serial + 1 : 1;
	int k;

	/* The identity stays the repository's from index to index; one made
	 * before identities gets its own at its next publish. */
	if (!ix->repository[0] && r->index && r->index->repository[0])
		memcpy(ix->repository, r->index->repository, sizeof(ix->repository));
	if (!ix->repository[0]) {
		k = fatelf_repo_id_new(ix->repository);
		if (k < 0)
			return fatelf_diag_set(d, k, -1, "cannot make the repository's identity: %s",
					       fatelf_strerror(k));
	}
	ix->serial = serial;
	ix->created = now;
	ix->expires = expire_secs > 0 ? now + expire_secs : 0;
	k = publish_index(r, ix, key, d);
	if (k < 0)
		return k;
	/* The new index is the current one: the next serial, a gc. */
	if (r->index != ix) {
		fatelf_repo_index_free(r->index);
		r->index = ix;
	}
	return 0;
}

int fatelf_repo_init(const char *path, const fatelf_ms_seckey *key, int64_t now, fatelf_diag *d)
{
	_cleanup_repo_dir_ fatelf_repo_dir *r = NULL;
	_cleanup_repo_index_ fatelf_repo_index *ix = NULL;
	struct stat st;
	int k;

	k = mkdir_p(AT_FDCWD, path, 0755, 0755, MKDIR_FOLLOW);
	if (k < 0)
		return fatelf_diag_at(d, k, -1, path, "cannot make the folder: %s", fatelf_strerror(k));
	k = open_dir(path, true, &r, d);
	if (k < 0)
		return k;
	if (fstatat(r->fd, FATELF_REPO_POINTER, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return fatelf_diag_at(d, -FATELF_E_REPO_FORMAT, -1, path, "already a repository");
	for (size_t i = 0; i < ARRAY_SIZE(folders); i++) {
		k = mkdir_p(r->fd, folders[i], 0755, 0755, 0);
		if (k < 0)
			return fatelf_diag_at(d, k, -1, path, "%s: cannot make it: %s", folders[i],
					      fatelf_strerror(k));
	}
	ix = fatelf_repo_index_new();
	if (!ix)
		return fatelf_diag_oom(d);
	k = fatelf_repo_publish(r, ix, key, now, 0, d);
	if (k == 0)
		ix = NULL;      /* r's now */
	return k;
}
