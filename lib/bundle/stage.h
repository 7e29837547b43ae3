/*
 * Staging one file beside its target: what an install and a bundle
 * extract share. A file is written under a hidden temp name in its own
 * directory (reached as a dirfd, so nothing here follows a symlink out of
 * the root), made with O_EXCL and mode 0600, given its final mode only
 * after its bytes are written, and renamed into place (or unlinked) by
 * its caller once everything checked out. An interrupted run leaves only
 * hidden debris under the temp names, never a half-written target.
 *
 * Temp names are the one scheme of lib/basic/atomic.h,
 * ".fatelf.<tag>.<seq>.<16 random hex digits>": tag names the run (an
 * install's transaction id, an extract's pid), seq the file, and the
 * random part makes the name unguessable, so nobody can plant a file or a
 * link under it in advance. The ".fatelf." namespace belongs to the
 * temps: an entry named into it is refused.
 */
#ifndef FATELF_STAGE_H
#define FATELF_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "atomic.h"
#include "diag.h"

/* The name every temp starts with; no bundle entry's name may. */
#define FATELF_STAGE_PREFIX FATELF_TEMP_PREFIX
/* Room for a temp name with its NUL. */
#define FATELF_STAGE_NAME_MAX FATELF_TEMP_NAME_MAX
/* Names tried for one temp before staging gives up: each is 64 random
 * bits, so a second try only happens when someone planted the first. */
#define FATELF_STAGE_TRIES FATELF_TEMP_TRIES

/* Flags for fatelf_stage_close */
#define FATELF_STAGE_WRITEBACK 0x01u    /* start writing the bytes back now */

/* Names */
/* true when the last component of path is in the temps' namespace. */
bool fatelf_stage_reserved(const char *path);
/* A fresh temp name into name. 0, or -errno when no random bytes came. */
int fatelf_stage_name(int64_t tag, size_t seq, char name[FATELF_STAGE_NAME_MAX]);

/* Staging: each returns -errno (the caller words the message) */
/* Creates the temp name in dirfd for writing and reading back (O_RDWR,
 * O_CREAT|O_EXCL, O_NOFOLLOW, mode 0600). Returns the fd; -EEXIST when
 * the name is taken (pick another). */
int fatelf_stage_open(int dirfd, const char *name);
/* Creates the temp name in dirfd as a symlink to target. */
int fatelf_stage_symlink(int dirfd, const char *name, const char *target);
/*
 * Finishes a staged file: its final mode (the permission bits of mode;
 * set last, so the temp stays 0600 while incomplete and setid bits are
 * never cleared by a later write), then closes fd, which is closed in
 * every case. what names the file in a message ("/opt/x/bin/x",
 * "entry 'opt/x/bin/x'").
 */
int fatelf_stage_close(int fd, mode_t mode, unsigned flags, const char *what, fatelf_diag *d);
/* Renames the temp name over base, both in dirfd. */
int fatelf_stage_commit(int dirfd, const char *name, const char *base);
/* Unlinks the temp name (a cancel; a temp already gone is fine). */
void fatelf_stage_drop(int dirfd, const char *name);

#endif
