/*
 * The rules that make one bundle of several architectures' builds: given
 * each source's index (every path with its type, mode, symlink target,
 * size, SHA-256 and, for an ELF file, its target), decide for each path
 * whether it is glued (an ELF file in every source), shared (the same
 * bytes everywhere), per-arch (allowed to differ or to be missing), or a
 * directory (the union of the sources'), and refuse everything else with
 * an error that names the path, the rule and the sources.
 *
 * Pure: no I/O. Reading the sources (directories, tar archives, .deb
 * packages) into indexes, and writing the bundle, are the callers'.
 */
#ifndef FATELF_UNIFY_H
#define FATELF_UNIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "deb.h"
#include "diag.h"
#include "libfatelf.h"

#define FATELF_UNIFY_MAX_SOURCES 32

typedef struct fatelf_unify_item {
	const char *path;       /* relative, no leading "./" or "/" */
	int type;               /* enum fatelf_entry_type */
	unsigned mode;          /* permission bits (07777) */
	const char *link;       /* a symlink's target */
	uint64_t size;
	uint8_t sha256[32];
	bool elf;               /* a plain ELF file (not FatELF): target is its own */
	bool fat;               /* a FatELF file */
	fatelf_target target;
	/* An ELF file: what fatelf_elf_inspect found as the index read it
	 * (its header and program header table, caught as they streamed
	 * by), so that a glued file's table is laid out with no second
	 * read: 0 and the largest PT_LOAD alignment, or the error's code
	 * and its words (elf_msg, malloc'd). */
	int elf_r;
	uint64_t max_align;
	char *elf_msg;
	uint64_t ord;           /* its place in the source's stream (0: the first entry) */
	/* A file of a directory source: the identity and times its stat
	 * gave when the index read it, which the writer checks when it opens
	 * the file again (its bytes it checks by SHA-256). */
	bool has_stat;
	uint64_t dev, ino;
	int64_t mtime, ctime;
	long mtime_nsec, ctime_nsec;
} fatelf_unify_item;

typedef struct fatelf_unify_source {
	const char *arch;       /* the ARCH of --from, for messages */
	const char *triplet;    /* its Debian multiarch triplet; NULL: none known */
	const fatelf_unify_item *items;
	size_t nitems;          /* sorted by path (strcmp), each path once */
} fatelf_unify_source;

enum fatelf_unify_kind {
	FATELF_UNIFY_DIR = 1,   /* a directory of one or more sources */
	FATELF_UNIFY_SHARED,    /* the same bytes (or symlink) in every source: stored once */
	FATELF_UNIFY_GLUE,      /* an ELF file in every source: one FatELF file, a record each */
	FATELF_UNIFY_PER_ARCH,  /* each source present keeps its own */
};

#define FATELF_UNIFY_NONE SIZE_MAX

typedef struct fatelf_unify_decision {
	const char *path;
	int kind;               /* enum fatelf_unify_kind */
	/* per source (in --from order): the index of its item, or
	 * FATELF_UNIFY_NONE where the path is missing */
	size_t item[FATELF_UNIFY_MAX_SOURCES];
} fatelf_unify_decision;

typedef struct fatelf_unify_stats {
	size_t glued, shared, per_arch, dirs;
	uint64_t bytes_in;      /* bytes of files over all sources */
	uint64_t bytes_once;    /* bytes of files once each is stored once */
} fatelf_unify_stats;

/*
 * Decides every path of the n sources, in path order, into *ret (free()
 * it; the paths are the sources'). per_arch holds the --per-arch globs
 * (fnmatch(3) on the relative path, no flags). Errors, each naming the
 * path and the sources:
 *   -FATELF_E_UNIFY_TYPE     the entry types differ (file, directory, symlink)
 *   -FATELF_E_UNIFY_MISSING  in some sources only, and neither a --per-arch
 *                            glob nor each source's own triplet allows it
 *   -FATELF_E_UNIFY_MODE     the permission bits differ
 *   -FATELF_E_UNIFY_SYMLINK  the symlink targets differ
 *   -FATELF_E_UNIFY_DIFFERS  different bytes, not all ELF, no --per-arch glob
 *   -FATELF_E_UNIFY_TARGET   two sources give ELF files of one target
 */
int fatelf_unify_plan(const fatelf_unify_source *src, size_t n, const char *const *per_arch,
		      size_t nper_arch, fatelf_unify_decision **ret, size_t *ret_n,
		      fatelf_unify_stats *stats, fatelf_diag *d);

/*
 * One source's index (lib/unify/unify_index.c): a directory, a tar
 * archive (any tar format and filter libarchive reads) or a .deb (its
 * data archive; the control file, conffiles and scripts in deb). Read
 * once, as a stream: every entry's path (by the bundle's path rules),
 * type (regular files, directories and symlinks only), mode, size,
 * SHA-256 and, for an ELF file, its target from the ELF header. Items
 * are sorted by path; a path twice is FATELF_E_PATH_DUPLICATE.
 */
typedef struct fatelf_unify_index {
	fatelf_unify_item *items;
	size_t nitems;
	bool is_deb;
	fatelf_deb_info deb;            /* is_deb: the control archive's facts */
} fatelf_unify_index;

int fatelf_unify_index_read(const char *source, const fatelf_bundle_limits *lim,
			    fatelf_unify_index *ret, fatelf_diag *d);
void fatelf_unify_index_free(fatelf_unify_index *x);
#define _cleanup_unify_index_ _cleanup_(fatelf_unify_index_free)

/*
 * A source read as a stream of entries, as the index reads it, for the
 * writer's later passes: each entry's path by the same rules (the root
 * skipped), its libarchive entry, and its data through the archive.
 * ret_deb (may be NULL) gets a .deb's control facts.
 */
typedef struct fatelf_unify_stream fatelf_unify_stream;
struct archive;
struct archive_entry;

int fatelf_unify_stream_open(const char *source, fatelf_unify_stream **ret, fatelf_deb_info *ret_deb,
			     fatelf_diag *d);
/* 1 and the next entry, 0 at the end, or a negative code. */
int fatelf_unify_stream_next(fatelf_unify_stream *s, const char **ret_path, struct archive_entry **ret_entry,
			     fatelf_diag *d);
struct archive *fatelf_unify_stream_archive(fatelf_unify_stream *s);
void fatelf_unify_stream_free(fatelf_unify_stream *s);
static inline void fatelf_unify_stream_freep(fatelf_unify_stream **p)
{
	fatelf_unify_stream_free(*p);
}
#define _cleanup_unify_stream_ _cleanup_(fatelf_unify_stream_freep)

/*
 * The writer (lib/unify/unify_write.c): one bundle of the sources, in
 * --from order. A path that is an ELF file in every source (or, under
 * --per-arch, in every source that has it) becomes one FatELF file with a
 * record each, in --from order, its images checked as glue checks them;
 * the same bytes everywhere are stored once; a path some sources lack is
 * a per-arch entry (manifest format 2) for the targets of the sources
 * that have it, and items that differ under --per-arch are an entry
 * each, for the targets of their sources (doc/fatbundle.md, 2.8); two
 * sources of one target whose items differ are FATELF_E_UNIFY_TARGET.
 * Besides the plan's errors: FATELF_E_UNIFY_ARCH (an ELF file not
 * of its source's ARCH), FATELF_E_UNIFY_SCRIPTS (a .deb with maintainer
 * scripts, unless ignore_scripts), FATELF_E_UNIFY_FIELD (two .debs
 * disagree on a field the options do not give). The output is opened
 * through bundle.open_output only once everything checked out.
 */
typedef struct fatelf_unify_from {
	const char *arch;       /* a target name fatelf_pattern_parse takes */
	const char *path;       /* a directory, a tar archive or a .deb */
} fatelf_unify_from;

typedef struct fatelf_unify_opts {
	const fatelf_unify_from *from;
	size_t nfrom;
	const char *const *per_arch;
	size_t nper_arch;
	bool ignore_scripts;
	/* name, version, summary, vendor, homepage: NULL takes the .deb
	 * sources' Package, Version, Description, Maintainer, Homepage.
	 * config_globs add to the .debs' conffiles (without .debs and
	 * globs: etc/). open_output is required. */
	fatelf_bundle_create_opts bundle;
} fatelf_unify_opts;

typedef struct fatelf_unify_result {
	fatelf_unify_stats stats;       /* the plan's */
	size_t glued, shared, per_arch, dirs;   /* entries of the bundle */
	uint64_t sources_size;          /* a tar or .deb: its size; a directory: its files' */
	unsigned scripts_ignored;       /* bit s: source s had scripts, ignored */
	char scripts[FATELF_UNIFY_MAX_SOURCES][128];  /* their names, "postinst, prerm" */
	char name[256], version[256];
	/* per source: its reads from the start again, as its members come in
	 * another order than the first tar or .deb source's (lead) */
	unsigned rereads[FATELF_UNIFY_MAX_SOURCES];
	size_t lead;
} fatelf_unify_result;

int fatelf_unify_create(const fatelf_unify_opts *o, fatelf_unify_result *ret, fatelf_diag *d);

/* The Debian multiarch triplet of an architecture name ("arm64" or
 * "aarch64": "aarch64-linux-gnu"); NULL when there is none. */
const char *fatelf_unify_triplet(const char *arch);

#endif
