/*
 * libfatelf: the FatELF v1 format, from bytes to files.
 *
 * This header is the library's whole API inside the tree; its exported
 * part, which a program outside uses, is include/fatelf/libfatelf.h (the
 * installed libfatelf.so.0), included below. It owns:
 *   - the on-disk header and record table (decode, encode);
 *   - byte sources (fd, memory) that every reader goes through;
 *   - strict validation of a FatELF file against the ELF images it holds;
 *   - target names (machine table, osabi table, the historical ':' syntax,
 *     uname/Debian/multiarch names) and the host's targets;
 *   - the output layout shared by every writer, the seekable edit
 *     operations (glue, extract, remove, replace, thin, split), and a
 *     streaming thinner for non-seekable input.
 *
 * There is no global state. Nothing here prints, logs or exits: functions
 * return 0 (or a count) on success and a negative code on failure, either
 * -errno or -FATELF_E_*, and fill a fatelf_diag with a one-line message
 * that names the record and the rule. Callers prefix the file name.
 */
#ifndef FATELF_H
#define FATELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "diag.h"
#include "reader.h"
/* The exported part of this API, which this header extends. */
#include "libfatelf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* On-disk constants */
#define FATELF_MAGIC            0x1F0E70FAu /* bytes FA 70 0E 1F */
#define FATELF_FORMAT_VERSION   1
#define FATELF_HEADER_SIZE      8
#define FATELF_RECORD_SIZE      24
#define FATELF_TABLE_SIZE(n)    (FATELF_HEADER_SIZE + (uint64_t)(n) * FATELF_RECORD_SIZE)
#define FATELF_MIN_ALIGN        4096u          /* what validation requires */
#define FATELF_MAX_ALIGN        (2u << 20)     /* largest alignment a writer keeps */

/* Warnings from validation: a valid file, but worth telling. */
enum fatelf_warning {
	FATELF_W_UNDER_ALIGNED = 1,     /* offset aligned below the ELF's own p_align */
	FATELF_W_TRAILING,              /* bytes after the last record */
};

/* Header and records */
/* fatelf_target is in libfatelf.h. */
typedef struct fatelf_record {
	fatelf_target target;
	uint8_t reserved[2];    /* kept as read, so validation can check them */
	uint64_t offset;
	uint64_t size;
} fatelf_record;

typedef struct fatelf_header {
	uint32_t magic;
	uint16_t version;
	uint8_t nrecords;
	uint8_t reserved;
	fatelf_record records[FATELF_MAX_RECORDS];
} fatelf_header;

/* Codec: bytes <-> struct, little endian */
/*
 * Decodes a header from buf. Checks only what decoding needs: len >= 8,
 * magic, version, record count >= 1, and that len holds the whole table
 * (else FATELF_E_TABLE_TRUNCATED; a caller with a short buffer reads
 * FATELF_TABLE_SIZE(buf[6]) bytes and tries again). Everything else is
 * validation's job, so ret keeps reserved bytes as they are.
 */
int fatelf_header_decode(const void *buf, size_t len, fatelf_header *ret, fatelf_diag *d);
/* Encodes hdr (magic and version as stored) into buf; returns bytes written
 * (FATELF_TABLE_SIZE(nrecords)) or -ENOSPC when cap is too small. */
ssize_t fatelf_header_encode(const fatelf_header *hdr, void *buf, size_t cap);
/* Fills hdr with magic, version 1, 0 records. */
void fatelf_header_init(fatelf_header *hdr);

/* Every seekable reader takes a fatelf_reader with random access
 * (lib/basic/reader.h): fatelf_reader_seekable_fd or _mem, or any reader
 * whose source has a fixed size. */

/* ELF facts (lib/fatelf/elf.c) */
typedef struct fatelf_elfinfo {
	fatelf_target target;   /* from e_ident / e_machine */
	uint16_t type;          /* e_type: ET_REL, ET_EXEC, ET_DYN, ... */
	uint16_t phnum;
	uint64_t max_align;     /* largest PT_LOAD p_align, 0 when none */
	uint64_t entry;
	bool has_interp;        /* a PT_INTERP names a dynamic linker (an executable) */
} fatelf_elfinfo;

/* ET_DYN with no PT_INTERP: a shared library, which only a dynamic linker
 * loads (a PIE executable is ET_DYN with a PT_INTERP). */
#define FATELF_ELF_IS_SHARED_LIBRARY(info) ((info)->type == 3 && !(info)->has_interp)

/*
 * Checks the ELF image of `size` bytes starting at `base` in src: ident,
 * versions, header sizes, the program header table and every PT_LOAD
 * file range inside [0, size). On success fills ret. Record-relative
 * errors use codes FATELF_E_ELF_* / PH_* / SEGMENT; `record` is only used
 * to fill the diagnostic (-1 for a plain ELF file).
 */
int fatelf_elf_inspect(const fatelf_reader *src, uint64_t base, uint64_t size,
		       int record, fatelf_elfinfo *ret, fatelf_diag *d);
/* Compares an ELF's target to a record's; FATELF_E_ELF_* on mismatch. */
int fatelf_elf_match(const fatelf_target *rec, const fatelf_target *elf,
		     int record, const char *recname, fatelf_diag *d);
/*
 * fatelf_elf_inspect and fatelf_elf_match for record i, whose bytes start
 * at base in src (its offset in the file, or 0 in a capture of the
 * record), with messages that name the record's target.
 */
int fatelf_record_check_elf(const fatelf_reader *src, uint64_t base, const fatelf_record *rec,
			    unsigned i, fatelf_elfinfo *ret, fatelf_diag *d);
/* Size of an ELF header for a class: 52 or 64, 0 for an unknown class. */
unsigned fatelf_elf_ehdr_size(uint8_t word_size);

/* Validation (lib/fatelf/validate.c) */
typedef struct fatelf_validate_opts {
	/* called once per warning; may be NULL */
	void (*warn)(void *ctx, int warning, int record, const char *msg);
	void *warn_ctx;
} fatelf_validate_opts;

/*
 * Validates a whole FatELF file by every rule, reading only the header
 * table, each ELF header and each program header table: the cost does not
 * depend on the size of the images. Fills ret (if not NULL) with the
 * header and ret_info (if not NULL, FATELF_MAX_RECORDS entries) with each
 * record's ELF facts. Returns 0 or the first rule broken.
 */
int fatelf_validate(const fatelf_reader *src, const fatelf_validate_opts *opts,
		    fatelf_header *ret, fatelf_elfinfo *ret_info, fatelf_diag *d);
/*
 * The table-level rules only (everything that needs the header and the
 * file size but not the images), in the same order and with the same
 * codes as fatelf_validate. file_size may be UINT64_MAX when unknown
 * (streaming): then "inside the file" checks are left to the caller.
 */
int fatelf_validate_table(const fatelf_header *hdr, uint64_t file_size, fatelf_diag *d);

/* Names: machines, osabis, targets (lib/fatelf/machines.c, lib/fatelf/target.c) */
/* The machine and osabi names are in libfatelf.h. */

/* Bits of fatelf_pattern.want */
#define FATELF_WANT_MACHINE     0x01u
#define FATELF_WANT_OSABI       0x02u
#define FATELF_WANT_OSABIVER    0x04u
#define FATELF_WANT_WORDSIZE    0x08u
#define FATELF_WANT_BYTEORDER   0x10u
#define FATELF_WANT_ALL         0x1Fu
#define FATELF_WANT_RECORD      0x20u   /* "recordN": an index, nothing else */

/* A parsed target name: some fields fixed, the others wildcards. */
typedef struct fatelf_pattern {
	unsigned want;
	fatelf_target target;
	int record;             /* with FATELF_WANT_RECORD */
} fatelf_pattern;

/*
 * Parses a target name. Accepts the historical ':'-separated fields in any
 * order (a gABI machine name, an osabi name, 32bits/64bits/32bit/64bit,
 * le/be/littleendian/bigendian, osabiverN, emN, osabiN), "recordN", and
 * the names people type: uname -m names, Debian architectures and
 * multiarch triplets, which fix machine, word size and byte order. Two
 * fields that fix the same thing differently are an error.
 */
int fatelf_pattern_parse(const char *name, fatelf_pattern *ret, fatelf_diag *d);
bool fatelf_pattern_match(const fatelf_pattern *p, const fatelf_target *t, int index);
/* The one record of hdr that p matches: FATELF_E_NO_MATCH or
 * FATELF_E_AMBIGUOUS otherwise. Returns the index. */
int fatelf_pattern_find(const fatelf_pattern *p, const fatelf_header *hdr, fatelf_diag *d);
/* parse + find, for convenience. */
int fatelf_target_find(const char *name, const fatelf_header *hdr, fatelf_diag *d);

/* fatelf_target_format (libfatelf.h) always parses back to a pattern
 * matching exactly its target. */
/* The fields named by want only, in the canonical order
 * machine:bits:order:osabi:osabiverN. */
void fatelf_target_format_fields(const fatelf_target *t, unsigned want,
				 char buf[FATELF_TARGET_NAME_MAX]);
/* The shortest canonical-order name that picks record index out of hdr
 * alone (what split names files by, and info prints as "name"). */
void fatelf_target_short_name(const fatelf_header *hdr, int index,
			      char buf[FATELF_TARGET_NAME_MAX]);
/* The familiar architectures, for listings and shell completion: row i's
 * target (machine, word size, byte order), its name and its Debian name
 * (NULL when Debian has none). False past the last row. */
bool fatelf_arch_get(size_t i, fatelf_target *ret_target, const char **ret_arch,
		     const char **ret_debian);

/* Host (lib/fatelf/host.c) */
#define FATELF_HOST_MAX 8
typedef struct fatelf_host {
	char uname_machine[65];
	/* osabi and osabi_version of these entries are unused (0) */
	unsigned nnative;
	fatelf_target native[FATELF_HOST_MAX];
	unsigned ncompat;
	fatelf_target compat[FATELF_HOST_MAX];
} fatelf_host;

/* Flags for fatelf_host_from_uname */
#define FATELF_HOST_ARM32   0x01u   /* an aarch64 CPU that runs AArch32 code */

/* This machine: uname(2), and for aarch64 whether the CPU runs 32-bit code. */
int fatelf_host_detect(fatelf_host *ret);
/* A host described by its uname -m name, for tests and --host options. */
int fatelf_host_from_uname(const char *machine, unsigned flags, fatelf_host *ret);
/* 2 when the host runs t natively, 1 when as a compatible target, 0 when
 * not at all (machine, class and byte order only). */
int fatelf_host_runs(const fatelf_host *h, const fatelf_target *t);
/*
 * The kernel's selection rule: the first record whose machine, class and
 * byte order the host runs (native or compatible), with osabi SYSV or
 * Linux and osabi_version 0. Returns the index, or
 * -FATELF_E_NO_HOST_RECORD (with a message that lists the file's targets
 * and the host's).
 */
int fatelf_host_select(const fatelf_host *h, const fatelf_header *hdr, fatelf_diag *d);

/* Keep sets and output layout (lib/fatelf/layout.c) */
typedef struct fatelf_keepset {
	uint8_t bits[(FATELF_MAX_RECORDS + 7) / 8];
} fatelf_keepset;

void fatelf_keep_clear(fatelf_keepset *k);
void fatelf_keep_add(fatelf_keepset *k, unsigned index);
bool fatelf_keep_has(const fatelf_keepset *k, unsigned index);
unsigned fatelf_keep_count(const fatelf_keepset *k);
/* Every record that one of the names matches (each name must match at
 * least one record, else FATELF_E_NO_MATCH). */
int fatelf_keep_from_names(const fatelf_header *hdr, const char *const *names, size_t n,
			   fatelf_keepset *ret, fatelf_diag *d);
/* Every record the host runs (native or compatible) with osabi SYSV/Linux
 * and osabi_version 0: the "compatible" policy (lib/fatelf/host.c). */
int fatelf_keep_from_host(const fatelf_header *hdr, const fatelf_host *h,
			  fatelf_keepset *ret, fatelf_diag *d);

/* What a fat file becomes on one machine (lib/fatelf/choose.c): the rules
 * an install (policies) and a bundle extract (--target) share. */
enum fatelf_choose_rule {
	FATELF_CHOOSE_KEEP = 0,         /* the file as it is */
	FATELF_CHOOSE_NATIVE,           /* the record the kernel picks, as a plain ELF */
	FATELF_CHOOSE_COMPATIBLE,       /* every record the host runs */
	FATELF_CHOOSE_TARGETS,          /* every record one of the names matches */
};

typedef struct fatelf_choice {
	int rule;                       /* enum fatelf_choose_rule */
	const fatelf_host *host;        /* NATIVE, COMPATIBLE */
	/* NATIVE, COMPATIBLE: the uname -m name host was made from, which a
	 * refusal names ("no record runs on a mips64 machine"); NULL for
	 * this machine (the message lists what the host runs) */
	const char *machine;
	const char *const *targets;     /* TARGETS: target names */
	size_t ntargets;
} fatelf_choice;

/*
 * Applies the rule to a file with table hdr. Returns 1 with the records to
 * keep and the output form (FATELF_FORM_ELF or _AUTO) when the file is
 * rewritten, 0 when it stays as it is (KEEP; the outputs are untouched),
 * or an error: -FATELF_E_NO_HOST_RECORD (the host runs no record),
 * -FATELF_E_NO_MATCH (no name matches a record), a target name's parse
 * error; each message lists what the file offers, and so do d's targets.
 */
int fatelf_choose(const fatelf_choice *c, const fatelf_header *hdr, fatelf_keepset *ret_keep,
		  int *ret_form, fatelf_diag *d);

/* enum fatelf_form (the output's form) is in libfatelf.h. */

/*
 * The output of keeping some records of `in`. One plan is shared by the
 * seekable writers and the streaming thinner, so both give the same bytes.
 *
 * A FatELF output lists the kept records in their original (vendor
 * preference) order. Their images are placed in ascending order of their
 * input offsets, right after the table, each at the next offset that keeps
 * its input alignment: the largest power of two that divides its input
 * offset, between FATELF_MIN_ALIGN and FATELF_MAX_ALIGN. Padding is zero.
 * Bytes after the last record are not part of any record and are dropped.
 * An ELF output is the kept record's bytes alone.
 */
typedef struct fatelf_plan {
	int form;                               /* FATELF_FORM_ELF or _FAT */
	fatelf_header out;                      /* _FAT: the header to write */
	unsigned nkept;
	uint8_t in_index[FATELF_MAX_RECORDS];   /* kept input records, ascending input offset */
	uint8_t out_index[FATELF_MAX_RECORDS];  /* ... and each one's index in out */
	uint64_t out_size;                      /* total bytes of the output */
} fatelf_plan;

int fatelf_plan_make(const fatelf_header *in, const fatelf_keepset *keep, int form,
		     fatelf_plan *ret, fatelf_diag *d);
/* Alignment a writer gives a record first placed at `offset` elsewhere. */
uint64_t fatelf_align_of_offset(uint64_t offset);
uint64_t fatelf_align_up(uint64_t v, uint64_t align);

/* Seekable writers (lib/fatelf/write.c, lib/fatelf/edit.c) */
/*
 * Atomic output: a hidden temp file (".fatelf.NAME.<random>", named by
 * lib/basic/atomic.h) in the target's own directory, renamed over the
 * target on commit. The target
 * is never half-written; an abort unlinks the temp file.
 */
typedef struct fatelf_atomic {
	int fd;
	int dirfd;
	bool durable;           /* fsync the file and its directory on commit */
	char path[4096];        /* the target */
	char tmpname[512];      /* temp name, relative to dirfd */
} fatelf_atomic;

int fatelf_atomic_open(fatelf_atomic *ret, const char *path, mode_t mode, fatelf_diag *d);
/* fsyncs, renames over the target. Closes everything. */
int fatelf_atomic_commit(fatelf_atomic *a, fatelf_diag *d);
/* Unlinks the temp file and closes everything. Safe on a zeroed or
 * already finished fatelf_atomic. */
void fatelf_atomic_abort(fatelf_atomic *a);

/*
 * Writes the plan's output for source fd in_fd (whose header is plan's
 * input) to out_fd at offset 0. Returns 0 or -errno.
 */
int fatelf_plan_write(const fatelf_plan *plan, const fatelf_header *in, int in_fd,
		      int out_fd, fatelf_diag *d);

typedef struct fatelf_glue_opts {
	uint64_t align;         /* 0: per record, max(4096, largest PT_LOAD p_align) */
} fatelf_glue_opts;

/*
 * Path-level operations. Each validates its input fully first, never
 * modifies an input in place, and writes out through fatelf_atomic (so
 * out may equal the input). Output mode: glue, extract and split give
 * 0777 & ~umask; remove, replace and thin keep the input's mode.
 * On failure d->subject names the file the error is about.
 */
/* The alignment glue gives an ELF image: forced when not 0, else its
 * largest PT_LOAD p_align within [FATELF_MIN_ALIGN, FATELF_MAX_ALIGN]. */
uint64_t fatelf_glue_align(uint64_t forced, uint64_t p_align);
/*
 * The table of a FatELF glued from n ELF images in this order: record i
 * of targets[i] and sizes[i] bytes, placed after the one before at the
 * next multiple of aligns[i], zeros between. *ret_size is the file's
 * size. Two equal targets: FATELF_E_DUPLICATE naming both records.
 */
int fatelf_glue_table(const fatelf_target *targets, const uint64_t *sizes, const uint64_t *aligns,
		      unsigned n, fatelf_header *ret, uint64_t *ret_size, fatelf_diag *d);
/* Inputs are ELF files or FatELF files (whose records are all taken). */
int fatelf_glue(const char *out, const char *const *inputs, size_t n,
		const fatelf_glue_opts *opts, fatelf_diag *d);
/* fatelf_extract, fatelf_remove and fatelf_replace are in libfatelf.h. */
/* Keeps the records in keep, in the given form. */
int fatelf_thin(const char *out, const char *in, const fatelf_keepset *keep, int form,
		fatelf_diag *d);
/* fatelf_split is in libfatelf.h. */

/*
 * Opens path, validates it and fills ret_hdr. Returns the fd (caller
 * closes) or a negative code; d->subject is set to path on failure.
 */
int fatelf_open_validated(const char *path, fatelf_header *ret_hdr,
			  fatelf_elfinfo *ret_info, const fatelf_validate_opts *opts,
			  fatelf_diag *d);

/* Streaming thinner (lib/fatelf/stream.c) */
/*
 * Reads a FatELF from bytes pushed in order (a pipe, an archive member, a
 * download) and emits the output of a plan as the bytes pass: no seeking,
 * no temp copy, O(1) memory (at most one program header table per record
 * is held). Every record, kept or not, is validated by the same rules and
 * codes as fatelf_validate; the output is only good if
 * fatelf_stream_finish returns 0. Its bytes are identical to what
 * fatelf_plan_write writes for the same input and keep set.
 */
typedef struct fatelf_stream fatelf_stream;

typedef struct fatelf_stream_opts {
	/* Called once, when the record table has been read and checked:
	 * fills ret_keep and ret_form. Required. */
	int (*select)(void *ctx, const fatelf_header *hdr, fatelf_keepset *ret_keep,
		      int *ret_form, fatelf_diag *d);
	/* Called with each run of output bytes, in order. Required. */
	int (*write)(void *ctx, const void *buf, size_t len);
	void *ctx;
	/* The input's total size when known (archive entry size), else
	 * UINT64_MAX: then "inside the file" is checked at finish. */
	uint64_t input_size;
	void (*warn)(void *ctx, int warning, int record, const char *msg);
} fatelf_stream_opts;

int fatelf_stream_new(const fatelf_stream_opts *opts, fatelf_stream **ret);
/* Pushes len bytes. Returns 0 or the first error (sticky). */
int fatelf_stream_push(fatelf_stream *s, const void *buf, size_t len, fatelf_diag *d);
/* Ends the input: checks that every record was seen whole. */
int fatelf_stream_finish(fatelf_stream *s, fatelf_diag *d);
/* The header read, once the table is complete (NULL before). */
const fatelf_header *fatelf_stream_header(const fatelf_stream *s);
const fatelf_plan *fatelf_stream_plan(const fatelf_stream *s);
uint64_t fatelf_stream_bytes_out(const fatelf_stream *s);
fatelf_stream *fatelf_stream_free(fatelf_stream *s);


#ifdef __cplusplus
}
#endif
#endif /* FATELF_H */
