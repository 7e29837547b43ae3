/*
 * Debian binary packages (deb(5)), read as a stream: the ar container,
 * its debian-binary member, the control archive's control file,
 * conffiles and maintainer scripts, and the data archive handed out as a
 * libarchive reader, so that a vendor's .deb is a source of a bundle
 * without an unpacked copy anywhere.
 *
 * Everything here is untrusted input: the ar member headers and the
 * control file are parsed by bounds-checked functions of their own
 * (fatelf_ar_header_parse, fatelf_deb_control_parse,
 * fatelf_deb_conffiles_parse), which tests/fuzz/fuzz_deb drives.
 */
#ifndef FATELF_DEB_H
#define FATELF_DEB_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "macro.h"
#include "reader.h"

struct archive;

#define FATELF_AR_HEADER 60             /* bytes of an ar member header */
#define FATELF_AR_NAME_MAX 16
#define FATELF_DEB_CONTROL_MAX (1u << 20) /* bytes of control, and of conffiles */
#define FATELF_DEB_CONFFILES_MAX 65536  /* lines of conffiles */

typedef struct fatelf_ar_member {
	char name[FATELF_AR_NAME_MAX + 1];  /* without the trailing '/' */
	uint64_t size;                      /* bytes of data, before the padding to even */
} fatelf_ar_member;

/* The maintainer scripts a control archive may hold; dpkg runs them. */
enum {
	FATELF_DEB_PREINST = 1 << 0,
	FATELF_DEB_POSTINST = 1 << 1,
	FATELF_DEB_PRERM = 1 << 2,
	FATELF_DEB_POSTRM = 1 << 3,
	FATELF_DEB_CONFIG = 1 << 4,
	FATELF_DEB_TRIGGERS = 1 << 5,   /* not a script: dpkg calls postinst for it */
};
#define FATELF_DEB_SCRIPTS 6

typedef struct fatelf_deb_info {
	/* fields of the control file, trimmed; NULL when absent */
	char *package, *version, *architecture, *maintainer, *homepage;
	char *summary;          /* the first line of Description */
	char *multiarch;        /* Multi-Arch */
	char *depends;          /* Depends, its continuation lines joined by a space */
	/* conffiles, as package paths (no leading '/') */
	char **conffiles;
	size_t nconffiles;
	unsigned scripts;       /* FATELF_DEB_* of the scripts present */
} fatelf_deb_info;

/* The name of script bit i (0 <= i < FATELF_DEB_SCRIPTS): "preinst"... */
const char *fatelf_deb_script_name(unsigned i);

/*
 * One ar member header: its 16-byte name (printable ASCII, no '/' but one
 * trailing, not empty), its size (decimal digits, then spaces) and the
 * "`\n" that ends it. -FATELF_E_DEB_FORMAT naming the rule otherwise.
 */
int fatelf_ar_header_parse(const uint8_t h[FATELF_AR_HEADER], fatelf_ar_member *ret,
			   fatelf_diag *d);

/*
 * The control file (one deb822 stanza, at most FATELF_DEB_CONTROL_MAX
 * bytes): "Field: value" lines and their continuation lines (a leading
 * space or tab), field names case-insensitive, each once; Package,
 * Version and Architecture required, the name and version by dpkg's
 * rules. Fills the fields of ret it knows (ret is cleared first; free it
 * with fatelf_deb_info_done). -FATELF_E_DEB_CONTROL naming the line and
 * the rule, or -FATELF_E_PKG_NAME / -FATELF_E_PKG_VERSION.
 */
int fatelf_deb_control_parse(const char *s, size_t len, fatelf_deb_info *ret, fatelf_diag *d);

/*
 * conffiles: one absolute path a line, optionally after the flag
 * "remove-on-upgrade"; empty lines are skipped. Appends to
 * ret->conffiles. -FATELF_E_DEB_CONTROL naming the line and the rule.
 */
int fatelf_deb_conffiles_parse(const char *s, size_t len, fatelf_deb_info *ret, fatelf_diag *d);

void fatelf_deb_info_done(fatelf_deb_info *info);
#define _cleanup_deb_info_ _cleanup_(fatelf_deb_info_done)

/* One relation of a Depends field (doc/fatelf.1, bundle create --from):
 * text is the relation as written (trimmed); name is set when it names
 * one package, with an optional version constraint (op, version; dpkg's
 * obsolete "<" and ">" read as "<=" and ">="), and an architecture
 * qualifier ":any" or ":ARCH" dropped; NULL for alternatives ("a | b")
 * or a relation that does not read so. */
typedef struct fatelf_deb_relation {
	char *text;
	char *name;
	int op;                 /* enum fatelf_dep_op */
	char *version;
} fatelf_deb_relation;
#define FATELF_DEB_RELATIONS_MAX 1024

/* Splits a Depends field into its relations (at most
 * FATELF_DEB_RELATIONS_MAX); *ret is freed by fatelf_deb_relations_free. */
int fatelf_deb_depends_parse(const char *field, fatelf_deb_relation **ret, size_t *ret_n, fatelf_diag *d);
void fatelf_deb_relations_free(fatelf_deb_relation *rel, size_t n);

typedef struct fatelf_deb fatelf_deb;

/*
 * Reads a .deb from src as it comes (a pipe will do): the ar magic, the
 * debian-binary member (format 2.x), members named "_..." (skipped, as
 * dpkg does), and the control archive (control.tar, .gz, .xz or .zst),
 * whose control file, conffiles and maintainer scripts fill *ret_info.
 * Any other member in their place is an error naming it. src stays the
 * caller's and must outlive the returned object.
 */
int fatelf_deb_open(const fatelf_reader *src, fatelf_deb **ret, fatelf_deb_info *ret_info,
		    fatelf_diag *d);

/*
 * The data archive (data.tar, .gz, .xz, .bz2, .lzma or .zst), the next
 * member after the control archive, as a libarchive reader of its tar
 * entries; it reads from src as the caller reads entries, and is the
 * deb's (freed with it).
 */
int fatelf_deb_data(fatelf_deb *deb, struct archive **ret, fatelf_diag *d);

void fatelf_deb_free(fatelf_deb *deb);
static inline void fatelf_deb_freep(fatelf_deb **p)
{
	fatelf_deb_free(*p);
}
#define _cleanup_deb_ _cleanup_(fatelf_deb_freep)

#endif
