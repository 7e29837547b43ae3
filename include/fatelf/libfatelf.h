/*
 * libfatelf: the public API of the FatELF v1 format library
 * (libfatelf.so.0, pkg-config name "fatelf", man page libfatelf(3)).
 *
 * A program reads, validates and edits FatELF files through this header
 * alone: #include <fatelf/libfatelf.h>, link with -lfatelf.
 *
 * Conventions. Functions return 0 (or a count, or an index) on success
 * and a negative code on failure: -errno, or -FATELF_E_* below. A failing
 * call fills the fatelf_diag it is given (it may be NULL) with the code,
 * a one-line message naming the record and the rule, and the path the
 * message is about. There is no global state: calls on distinct objects
 * may run in parallel threads.
 *
 * ABI. Only what this header declares is exported, under the symbol
 * version FATELF_0. Every object the library fills is opaque (allocated
 * by the library, read through accessors) except fatelf_target, which is
 * the five fields of a FatELF v1 record's target and is frozen with the
 * format. Error codes keep their values; new ones are only appended.
 */
#ifndef FATELF_LIBFATELF_H
#define FATELF_LIBFATELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FATELF_PUBLIC
#define FATELF_PUBLIC __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- errors */
/* The format's error codes, returned negated (values below 1024 are errno
 * values; each validation rule has its own code): errors.h, installed
 * beside this header. */
#include "errors.h"

/* The library's version string ("0.1.0"). */
FATELF_PUBLIC const char *fatelf_version(void);
/* One static string per code, -errno too (strerror's wording). */
FATELF_PUBLIC const char *fatelf_strerror(int code);
/* The code's stable symbolic name ("FATELF_E_ALIGN", "ENOENT"). */
FATELF_PUBLIC const char *fatelf_error_name(int code);

/* The diagnostic of a failure. Opaque: made by fatelf_diag_new. */
typedef struct fatelf_diag fatelf_diag;

/* A cleared diagnostic, or NULL when out of memory. */
FATELF_PUBLIC fatelf_diag *fatelf_diag_new(void);
/* Frees d (NULL is fine); returns NULL. */
FATELF_PUBLIC fatelf_diag *fatelf_diag_free(fatelf_diag *d);
/* Clears code, message and subject. */
FATELF_PUBLIC void fatelf_diag_clear(fatelf_diag *d);
/* The negative code of the last failure, 0 if none. */
FATELF_PUBLIC int fatelf_diag_code(const fatelf_diag *d);
/* The record index the message is about, -1 if none. */
FATELF_PUBLIC int fatelf_diag_record(const fatelf_diag *d);
/* The message ("" if none); it never names the file. Valid until d
 * is used again or freed. */
FATELF_PUBLIC const char *fatelf_diag_message(const fatelf_diag *d);
/* The path the message is about ("" if the caller's own file). */
FATELF_PUBLIC const char *fatelf_diag_subject(const fatelf_diag *d);

/* ---------------------------------------------------------------- targets */
#define FATELF_CLASS32          1   /* ELFCLASS32 */
#define FATELF_CLASS64          2   /* ELFCLASS64 */
#define FATELF_DATA2LSB         1   /* ELFDATA2LSB */
#define FATELF_DATA2MSB         2   /* ELFDATA2MSB */
#define FATELF_OSABI_SYSV       0
#define FATELF_OSABI_LINUX      3
#define FATELF_MAX_RECORDS      255

/* A record's target: the five fields of a FatELF v1 record, which the
 * ELF image inside it repeats. Frozen with the format. */
typedef struct fatelf_target {
	uint16_t machine;       /* e_machine */
	uint8_t osabi;          /* EI_OSABI */
	uint8_t osabi_version;  /* EI_ABIVERSION */
	uint8_t word_size;      /* EI_CLASS: FATELF_CLASS32/64 */
	uint8_t byte_order;     /* EI_DATA: FATELF_DATA2LSB/MSB */
} fatelf_target;

/* true when buf starts with the FatELF magic (len >= 4). */
FATELF_PUBLIC bool fatelf_is_fatelf(const void *buf, size_t len);
/* true when buf starts with the ELF magic (len >= 4). */
FATELF_PUBLIC bool fatelf_is_elf(const void *buf, size_t len);

/* Short machine name ("x86_64", "aarch64") or NULL when unnamed. */
FATELF_PUBLIC const char *fatelf_machine_name(uint16_t machine);
/* Long description ("AMD x86-64 architecture") or NULL. */
FATELF_PUBLIC const char *fatelf_machine_desc(uint16_t machine);
/* Looks up a short name; also accepts "emN" for a raw number. */
FATELF_PUBLIC int fatelf_machine_from_name(const char *name, uint16_t *ret);
/* "sysv", "linux", ... or NULL. */
FATELF_PUBLIC const char *fatelf_osabi_name(uint8_t osabi);
/* Looks up an osabi name; also accepts "osabiN". */
FATELF_PUBLIC int fatelf_osabi_from_name(const char *name, uint8_t *ret);

#define FATELF_TARGET_NAME_MAX  96
/* Full name, every field: "x86_64:64bits:le:sysv:osabiver0". Unknown
 * machines print as "emN", unknown osabis as "osabiN". */
FATELF_PUBLIC void fatelf_target_format(const fatelf_target *t, char buf[FATELF_TARGET_NAME_MAX]);
/* A familiar architecture name ("x86_64", "i386", "armhf", ...) or NULL. */
FATELF_PUBLIC const char *fatelf_target_arch(const fatelf_target *t);
/* Debian architecture name ("amd64", "arm64", ...) or NULL. */
FATELF_PUBLIC const char *fatelf_target_debian_arch(const fatelf_target *t);
/* true when all five fields are equal. */
FATELF_PUBLIC bool fatelf_target_equal(const fatelf_target *a, const fatelf_target *b);

/* ---------------------------------------------------------------- reading */
/* A validated FatELF file. Opaque: made by fatelf_file_open*. */
typedef struct fatelf_file fatelf_file;

/*
 * Opens path and validates it by every rule (reading only the tables and
 * ELF headers). On success *ret is the file, which holds the path's
 * descriptor until fatelf_file_free.
 */
FATELF_PUBLIC int fatelf_file_open(const char *path, fatelf_file **ret, fatelf_diag *d);
/* The same for a FatELF in memory; mem is not copied and must outlive
 * the file. */
FATELF_PUBLIC int fatelf_file_open_mem(const void *mem, size_t len, fatelf_file **ret,
				       fatelf_diag *d);
/* Closes and frees f (NULL is fine); returns NULL. */
FATELF_PUBLIC fatelf_file *fatelf_file_free(fatelf_file *f);
/* The number of records, 1 to 255. */
FATELF_PUBLIC unsigned fatelf_file_count(const fatelf_file *f);
/* Record index's target. -EINVAL for an index out of range. */
FATELF_PUBLIC int fatelf_file_target(const fatelf_file *f, unsigned index, fatelf_target *ret);
/* Record index's offset and size in the file (either may be NULL). */
FATELF_PUBLIC int fatelf_file_range(const fatelf_file *f, unsigned index, uint64_t *ret_offset,
				    uint64_t *ret_size);
/* Record index's ELF e_type (2 executable, 3 shared object or PIE, ...). */
FATELF_PUBLIC int fatelf_file_elf_type(const fatelf_file *f, unsigned index);
/* The shortest target name that picks record index out of this file. */
FATELF_PUBLIC int fatelf_file_short_name(const fatelf_file *f, unsigned index,
					 char buf[FATELF_TARGET_NAME_MAX]);
/*
 * The one record a target name picks: the historical ':' fields in any
 * order ("aarch64:64bits"), "recordN", uname -m names, Debian
 * architectures, multiarch triplets. Returns the index, or
 * -FATELF_E_TARGET_SYNTAX, -FATELF_E_NO_MATCH, -FATELF_E_AMBIGUOUS.
 */
FATELF_PUBLIC int fatelf_file_find(const fatelf_file *f, const char *target, fatelf_diag *d);
/*
 * The record the kernel would run on a host: this machine when
 * uname_machine is NULL, else the host uname -m names ("aarch64"). The
 * first record the host runs natively or as a compatible target, with
 * osabi SYSV or Linux and osabi_version 0. Returns the index or
 * -FATELF_E_NO_HOST_RECORD.
 */
FATELF_PUBLIC int fatelf_file_select_host(const fatelf_file *f, const char *uname_machine,
					  fatelf_diag *d);

/* ---------------------------------------------------------------- writing */
/*
 * Each operation validates its input fully first, never modifies an input
 * in place, and writes out through a hidden temp file in out's directory
 * renamed over out (so out may equal the input). Output mode: glue,
 * extract and split give 0777 & ~umask; remove, replace and thin keep the
 * input's mode. On failure fatelf_diag_subject names the file at fault.
 */
enum fatelf_form {
	FATELF_FORM_AUTO = 0,   /* one record kept: plain ELF; several: FatELF */
	FATELF_FORM_ELF,        /* exactly one record, as a plain ELF */
	FATELF_FORM_FAT,        /* always a FatELF, even with one record */
};

/* Glues ELF or FatELF inputs (all records of each) into out. align 0
 * gives each record max(4096, its largest PT_LOAD p_align); otherwise a
 * power of two >= 4096. */
FATELF_PUBLIC int fatelf_glue_files(const char *out, const char *const *inputs, size_t n,
				    uint64_t align, fatelf_diag *d);
/* The one record target names, as a plain ELF. */
FATELF_PUBLIC int fatelf_extract(const char *out, const char *in, const char *target,
				 fatelf_diag *d);
/* A FatELF without the record target names (at least one must remain). */
FATELF_PUBLIC int fatelf_remove(const char *out, const char *in, const char *target,
				fatelf_diag *d);
/* Replaces the record with newelf's target by newelf. */
FATELF_PUBLIC int fatelf_replace(const char *out, const char *in, const char *newelf,
				 fatelf_diag *d);
/* Keeps every record one of the n target names matches (each must match
 * at least one), in form (enum fatelf_form). */
FATELF_PUBLIC int fatelf_thin_targets(const char *out, const char *in,
				      const char *const *targets, size_t n, int form,
				      fatelf_diag *d);
/* Keeps every record a host runs (NULL: this machine), in form. */
FATELF_PUBLIC int fatelf_thin_host(const char *out, const char *in, const char *uname_machine,
				   int form, fatelf_diag *d);
/* Writes each record to "<prefix>-<short name>" (prefix NULL: in).
 * Calls on_file (may be NULL) with each path written. Returns the count. */
FATELF_PUBLIC int fatelf_split(const char *in, const char *prefix,
			       void (*on_file)(void *ctx, int index, const char *path), void *ctx,
			       fatelf_diag *d);

#ifdef __cplusplus
}
#endif
#endif /* FATELF_LIBFATELF_H */
