/*
 * fatelf-run's layers of libfatelf: what the kernel's binfmt_misc will run
 * (lib/run/binfmt.c), how far an ELF image's $ORIGIN references reach
 * (lib/run/elfdyn.c), and the per-user cache of selected records that makes a
 * fat executable start as fast as a thin one (lib/run/runcache.c).
 *
 * Like fatelf.h, nothing here prints or exits; functions return 0 (or a
 * count) or a negative code (-errno or -FATELF_E_*) and fill a fatelf_diag.
 */
#ifndef FATELF_RUN_H
#define FATELF_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fatelf.h"

/* ------------------------------------------------------------ binfmt_misc */

#define FATELF_BINFMT_DIR       "/proc/sys/fs/binfmt_misc"
/* The kernel's BINPRM_BUF_SIZE: a magic (offset + length) never reaches
 * past the first 256 bytes of a file. */
#define FATELF_BINFMT_BUF       256
#define FATELF_BINFMT_NAME_MAX  256
#define FATELF_BINFMT_INTERP_MAX 4096

typedef struct fatelf_binfmt_entry {
	char name[FATELF_BINFMT_NAME_MAX];         /* the file name under the directory */
	bool enabled;
	bool magic_type;                           /* 'M' (magic); false: 'E' (extension) */
	char interpreter[FATELF_BINFMT_INTERP_MAX];
	char flags[16];                            /* as printed: "POF", "" ... */
	unsigned offset;                           /* of the magic in the file */
	size_t magic_len;
	uint8_t magic[FATELF_BINFMT_BUF];
	uint8_t mask[FATELF_BINFMT_BUF];           /* 0xff where the entry has no mask */
	char extension[FATELF_BINFMT_NAME_MAX];    /* for 'E' entries */
} fatelf_binfmt_entry;

/*
 * Parses the text the kernel prints for one entry (the contents of
 * /proc/sys/fs/binfmt_misc/NAME): "enabled"/"disabled", "interpreter P",
 * "flags: F", then "offset N", "magic HEX" and optional "mask HEX", or
 * "extension .EXT". Anything else, or a magic that does not fit in
 * FATELF_BINFMT_BUF bytes, is -EINVAL with a message naming the line.
 */
int fatelf_binfmt_parse(const char *name, const char *text, size_t len,
			fatelf_binfmt_entry *ret, fatelf_diag *d);
/* true when e is enabled, a magic entry, and buf (a file's first len bytes,
 * len <= FATELF_BINFMT_BUF) matches it under its mask, as the kernel does. */
bool fatelf_binfmt_matches(const fatelf_binfmt_entry *e, const void *buf, size_t len);
/* true when e's magic (under its mask, at offset 0) is FatELF's: a handler
 * for fat files (fatelf-run), which must never be asked to run a record. */
bool fatelf_binfmt_is_fatelf(const fatelf_binfmt_entry *e);
/*
 * Reads every entry under dir (NULL: $FATELF_BINFMT_MISC_DIR when set,
 * else FATELF_BINFMT_DIR), skipping "register" and "status" and entries
 * that do not parse. Returns the number of entries (*ret is a malloc'd
 * array, possibly NULL when 0), or -ENOENT when binfmt_misc is not
 * mounted there (no "register" file).
 */
int fatelf_binfmt_list(const char *dir, fatelf_binfmt_entry **ret);
/*
 * The first enabled, non-FatELF entry among list[0..n) that matches buf
 * (a record's first len bytes), or -1. This is what decides whether a
 * record for another architecture runs here through an emulator
 * (qemu-user), exactly as the kernel would decide when it is exec'd.
 */
int fatelf_binfmt_find_handler(const fatelf_binfmt_entry *list, size_t n,
			       const void *buf, size_t len);

/* ------------------------------------------------------------- $ORIGIN */

/* Deeper $ORIGIN/../../.. references than this are refused (FATELF_E_LIMIT). */
#define FATELF_ORIGIN_DEPTH_MAX 16

/*
 * Scans the ELF image of `size` bytes at `base` in src (a record of a fat
 * file, or a whole ELF) for $ORIGIN in its DT_RPATH, DT_RUNPATH and
 * DT_NEEDED strings, as "$ORIGIN" or "${ORIGIN}". Sets *ret_depth to -1
 * when the image does not use $ORIGIN (no PT_DYNAMIC, or no reference),
 * else to how many directories above $ORIGIN the references reach: 0 for
 * "$ORIGIN" and "$ORIGIN/lib", 1 for "$ORIGIN/../lib", 2 for
 * "$ORIGIN/../../lib" (components are counted in order, so
 * "$ORIGIN/a/../../b" reaches 1). Every offset and size is bounds-checked
 * against the image; a malformed dynamic section is an error naming the
 * rule (FATELF_E_SEGMENT for ranges outside the image, FATELF_E_NOT_ELF
 * for a bad header, FATELF_E_LIMIT for depth > FATELF_ORIGIN_DEPTH_MAX).
 */
/*
 * Whether the image's dynamic section has a DT_SONAME, and DF_1_PIE in
 * DT_FLAGS_1 (false for both without one). A shared library may have a
 * PT_INTERP and DF_1_PIE too (glibc's libc.so.6 has both), so neither
 * makes an ET_DYN image an executable. Bounds-checked like the function
 * below.
 */
int fatelf_elf_dyn_library(const fatelf_reader *src, uint64_t base, uint64_t size, bool *ret_soname,
			   bool *ret_pie, fatelf_diag *d);
int fatelf_elf_origin_depth(const fatelf_reader *src, uint64_t base, uint64_t size,
			    int *ret_depth, fatelf_diag *d);

/* ------------------------------------------------------------ run cache */

/*
 * A verified cache directory. Every directory from / down to it is owned
 * by root or by uid and not writable by group or others (unless sticky,
 * like /tmp), and the directory itself is owned by uid and not writable by
 * group or others: nobody but uid (and root) can put anything in it, so
 * what fatelf-run finds there is what uid itself wrote.
 */
typedef struct fatelf_run_cache {
	int fd;                 /* O_PATH descriptor of the directory */
	uid_t uid;
	char path[4096];        /* its absolute, symlink-free path */
} fatelf_run_cache;

/*
 * The cache directory for the effective user: root -> /var/cache/fatelf;
 * others -> $XDG_CACHE_HOME/fatelf (when absolute), else $HOME/.cache/fatelf.
 * $FATELF_RUN_CACHE_DIR overrides both. When secure (AT_SECURE), the
 * environment is ignored and HOME comes from the password database.
 * -ENOENT when no home is known.
 */
int fatelf_run_cache_default(bool secure, char *buf, size_t cap);
/* Opens path (creating missing directories 0700) and checks it as above.
 * -EPERM with a message naming the directory and the rule when unsafe. */
int fatelf_run_cache_open(const char *path, uid_t uid, fatelf_run_cache *ret, fatelf_diag *d);
void fatelf_run_cache_close(fatelf_run_cache *c);

/* What to run: one record of an open fat file. */
typedef struct fatelf_run_request {
	int fd;                 /* the fat file, readable */
	struct stat st;         /* its fstat */
	const char *dir;        /* its directory: absolute and symlink-free */
	const char *name;       /* its file name in dir */
	unsigned record;
	uint64_t offset;        /* the record's bytes in the file */
	uint64_t size;
	int origin_depth;       /* fatelf_elf_origin_depth of the record */
} fatelf_run_request;

/* Where a selected record is exec'd from. */
typedef struct fatelf_run_entry {
	char path[4096];        /* absolute path of the thin binary to execve */
	bool created;           /* this call wrote it (the first run) */
} fatelf_run_entry;

/*
 * The cache entry of req: CACHE/<dev>-<ino>-<hash of dir and name>/<key>/
 * [<mirror dirs>/]NAME, with key = mtime, ctime, size and record (plus
 * the mtimes of the mirrored directories for an $ORIGIN view). Finds it,
 * or writes it (into a temp directory, fdatasync'd, renamed into place,
 * then prunes the file's older entries). The entry is checked: a regular
 * file of uid, not writable by group or others, of exactly the record's
 * size.
 */
int fatelf_run_cache_get(fatelf_run_cache *c, const fatelf_run_request *req,
			 fatelf_run_entry *ret, fatelf_diag *d);

#endif
