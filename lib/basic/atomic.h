/*
 * Atomic replacement of a file: the new bytes go to a hidden temp file
 * in the target's own directory, reached through a directory descriptor,
 * which is then renamed over the target (apk's stage, then commit or
 * cancel). A reader sees the old file or the whole new one, never a
 * mix; an interrupted writer leaves only hidden temp debris.
 *
 * Every temp file of every layer is named by fatelf_temp_name:
 * ".fatelf.<tag>.<16 random hex digits>". The install engine refuses
 * bundle entries whose names start with FATELF_TEMP_PREFIX, so no entry
 * can land on a temp; keep the two in step.
 */
#ifndef FATELF_ATOMIC_H
#define FATELF_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What every temp name starts with. */
#define FATELF_TEMP_PREFIX ".fatelf."
/* Room for any temp name and its NUL (a long tag is cut, never the
 * random part, so the name stays within NAME_MAX). */
#define FATELF_TEMP_NAME_MAX 256
/* Names tried for one temp before giving up: each is 64 random bits, so
 * a second try only happens when someone planted the first. */
#define FATELF_TEMP_TRIES 8

/*
 * ".fatelf.<tag>.<16 random hex digits>" into buf (FATELF_TEMP_NAME_MAX
 * bytes): 64 unguessable bits, so nobody can plant a file or a link under
 * the name in advance. tag says whose temp it is (a target's base name,
 * a transaction and step) and must hold no '/'. 0 or -errno.
 */
int fatelf_temp_name(const char *tag, char buf[FATELF_TEMP_NAME_MAX]);

/* A temp file being written, beside its target. dirfd is borrowed. */
typedef struct fatelf_tmpfile {
	int dirfd;
	int fd;                 /* -1 once closed */
	char name[FATELF_TEMP_NAME_MAX];   /* "" when there is none */
} fatelf_tmpfile;

/* Creates a new temp file (O_EXCL, never through a symlink) in dirfd,
 * named for tag, with mode (through the umask). 0 or -errno; ret is
 * left empty on failure and safe to abort. */
int fatelf_tmpfile_open(int dirfd, const char *tag, mode_t mode, fatelf_tmpfile *ret);

/*
 * Renames the temp over name in the same directory. When durable, the
 * file's data is fsync'd before the rename and the directory after it,
 * so a crash leaves the old file or the whole new one. Closes the file.
 * On failure the temp is removed. 0 or -errno.
 */
int fatelf_tmpfile_commit(fatelf_tmpfile *t, const char *name, bool durable);

/* Closes and removes the temp. Safe on an empty or finished one. */
void fatelf_tmpfile_abort(fatelf_tmpfile *t);

#endif
