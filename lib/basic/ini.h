/*
 * The one reader of the INI files an administrator writes: fatelfd.conf
 * and its drop-ins, repos.d/NAME.conf and registries.d/HOST[:PORT].conf.
 * A caller describes its keys in a table (section, name, type, where the
 * value goes, whether it is required); the reader splits the text into
 * lines, finds the sections and keys, converts the values of the common
 * types and hands the others to the key's own parser. The text is
 * untrusted: every line is bounds-checked, and what a message quotes of
 * it is escaped.
 *
 * The rules, the same for every file:
 *  - A line ends at "\n"; it is at most INI_LINE_MAX bytes long. A NUL
 *    byte anywhere is refused.
 *  - White space (space, tab, \r, \f, \v) around a line, a key and a value
 *    is ignored, so "\r\n" line ends and "Key = Value" are fine.
 *  - A line whose first non-blank byte is '#' or ';' is a comment; a
 *    comment cannot follow a value. Blank lines are ignored.
 *  - "[Name]" alone on its line starts a section; the sections are those
 *    the table names (case-sensitive), and every key belongs to one. A
 *    section may be opened again.
 *  - "Key=Value" sets a key; keys are case-sensitive; the value is
 *    everything after the first '=' and is never quoted.
 *  - An unknown key, a key of another section, a key before any section
 *    and a line that is none of the above are refused.
 *  - A key given again is handed to its parser again: a plain value is
 *    replaced (the later one wins), a list key's parser adds to its list.
 *  - Booleans are yes, true, on, 1 and no, false, off, 0, in any case.
 *  - Numbers are decimal digits only (no sign, no base prefix), checked
 *    against the key's range; sizes may end in K, M, G or T (or KiB, MiB,
 *    GiB, TiB: powers of 1024, or B).
 *  - A required key missing from the file is refused at the line of its
 *    section's last header (or the file's last line, without one).
 * Every refusal is -EINVAL (or the code a key's parser chose) with
 * "FILE:LINE: KEY: rule" in the diag and FILE as its subject. LINE counts
 * every line of the file from 1, blank and comment lines included; KEY is
 * the key, the section header, or "syntax" for a line that has neither.
 */
#ifndef FATELF_INI_H
#define FATELF_INI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

#define INI_LINE_MAX 4096u      /* bytes in a line, without its "\n" */
#define INI_KEYS_MAX 64u        /* keys in one table */

/* Where a parse is; a key's parser reads it and passes it to ini_error. */
typedef struct ini_file {
	const char *name;       /* the file, as messages name it */
	unsigned line;          /* the line being read, from 1 */
	const char *section;    /* the section it is in, NULL before the first */
	void *userdata;         /* ini_table.userdata */
	fatelf_diag *d;
} ini_file;

typedef struct ini_key ini_key;
/* A key's own parser: value is trimmed, field is base + offset. Returns 0,
 * or a negative code with the diag set (ini_error). */
typedef int (*ini_parse_fn)(ini_file *f, const ini_key *k, const char *value, void *field);

enum ini_type {
	INI_BOOL,               /* bool */
	INI_PATH,               /* char *, malloc'd: an absolute path (the old one is freed) */
	INI_UNSIGNED,           /* unsigned, min to max */
	INI_SIZE,               /* size_t, min to max */
	INI_BYTES,              /* uint64_t, a size with an optional unit, min to max */
	INI_CUSTOM,             /* parse */
};

enum {
	INI_REQUIRED = 1 << 0,  /* the file must set it */
};

struct ini_key {
	const char *section;    /* "Daemon", without the brackets */
	const char *name;
	enum ini_type type;
	size_t offset;          /* of the field in ini_table.base */
	unsigned flags;         /* INI_REQUIRED */
	uint64_t min, max;      /* numbers */
	ini_parse_fn parse;     /* INI_CUSTOM */
};

/* What a file is read into: its keys and the struct they fill. */
typedef struct ini_table {
	const ini_key *keys;
	size_t nkeys;           /* at most INI_KEYS_MAX */
	void *base;
	void *userdata;
} ini_table;

/*
 * Reads text (len bytes, not NUL-terminated) as the file named file into
 * t->base. Values set before a refusal stay set: a caller that must leave
 * its object as it was parses into a copy.
 */
int ini_parse(const ini_table *t, const char *file, const char *text, size_t len, fatelf_diag *d);

/* Sets d to "FILE:LINE: KEY: rule" (KEY escaped; the rule as formatted)
 * and FILE as its subject; returns code. For the keys' parsers. */
int ini_error(ini_file *f, int code, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
