/*
 * The exit status of the fatelf commands (documented in --help and
 * fatelf(1)), shared by every program of the command, the registry client
 * in fetch/ included.
 */
#ifndef FATELF_EXITSTATUS_H
#define FATELF_EXITSTATUS_H

enum {
	EXIT_OK = 0,
	EXIT_INVALID = 1,       /* invalid input, target not found, verify false */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_SYSTEM = 3,        /* an errno from the system: ENOENT, EACCES, ENOSPC... */
	EXIT_BUSY = 4,          /* --root: another process (a fatelfd) holds the root's lock */
	/* bundle create --from: a status per unify rule, in the order of
	 * FATELF_E_UNIFY_* (lib/basic/diag.h); only that command meets them */
	EXIT_UNIFY_TYPE = 10,    /* entry types differ across sources */
	EXIT_UNIFY_MISSING = 11, /* a path missing in some sources, not per-arch */
	EXIT_UNIFY_MODE = 12,    /* modes differ */
	EXIT_UNIFY_SYMLINK = 13, /* symlink targets differ */
	EXIT_UNIFY_DIFFERS = 14, /* different bytes, not all ELF, not per-arch */
	EXIT_UNIFY_TARGET = 15,  /* two sources give one target */
	EXIT_UNIFY_ARCH = 16,    /* an ELF file's target is not its source's ARCH */
	EXIT_UNIFY_FIELD = 17,   /* .debs disagree on a control field */
	EXIT_UNIFY_SCRIPTS = 18, /* a .deb has maintainer scripts or triggers */
};

#endif
