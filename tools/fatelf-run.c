/*
 * fatelf-run: runs a FatELF executable on a kernel that knows nothing of
 * FatELF. Registered with binfmt_misc on the FatELF magic (flags P and O),
 * the kernel hands it every fat file that is exec'd; it picks the record
 * this machine would run (libfatelf's kernel rule, then any record a
 * binfmt_misc emulator such as qemu-user runs), finds or writes that
 * record's thin copy in the user's cache, and execve()s it in the same
 * process, with the caller's argv and environment. Nothing stays between
 * the program and its caller: same pid, same stdio, same exit status and
 * signals.
 *
 * It links only libc and the format layer of libfatelf, and does only a
 * few small reads and stats before the execve, because it runs on every
 * exec of every fat program.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fatelf.h"
#include "io.h"
#include "macro.h"
#include "run.h"

extern char **environ;

/* Exit statuses a shell uses: found but cannot run, and not found. */
#define RUN_EXIT_CANNOT_EXECUTE 126
#define RUN_EXIT_NOT_FOUND      127
#define RUN_EXIT_USAGE          2

/* AT_FLAGS bit the kernel sets when binfmt_misc kept argv[0] (flag P). */
#define RUN_AT_FLAGS_PRESERVE_ARGV0 0x1ul

static const char usage_text[] =
	"Usage: fatelf-run [--which] [--] FILE [ARGS...]\n"
	"\n"
	"Run the record of the FatELF file FILE that this machine runs, with\n"
	"ARGS, as if FILE were a plain executable (argv[0] is FILE). Registered\n"
	"as a binfmt_misc handler (see fatelf-run(1)), it lets fat executables\n"
	"run directly.\n"
	"\n"
	"Options:\n"
	"  -w, --which    print the record it would run and the thin binary it\n"
	"                 would exec (filling the cache), without running it\n"
	"  -h, --help     show this help\n"
	"  -V, --version  show the version\n";

struct run {
	const char *path;       /* as the caller named it, for messages */
	int fd;
	struct stat st;
	fatelf_header hdr;
	int record;
	const char *how;        /* "native", "compatible", "emulated" */
	char emulator[FATELF_BINFMT_NAME_MAX];
	char real[PATH_MAX];    /* the file's real path, or "" when unknown */
	const char *dir;
	const char *name;
	int origin_depth;
};

static void vreport(const char *path, const char *fmt, va_list ap)
{
	fputs("fatelf-run: ", stderr);
	if (path)
		fprintf(stderr, "%s: ", path);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int fail(int status, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(int status, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(path, fmt, ap);
	va_end(ap);
	return status;
}

/* The steps' failures: each is reported once, and main maps every one to
 * RUN_EXIT_CANNOT_EXECUTE. Returns code, which is negative. */
static int step_failed(int code, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int step_failed(int code, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(path, fmt, ap);
	va_end(ap);
	return code;
}

/*
 * Whether the caller may read the file behind fd. With binfmt_misc's O
 * flag the kernel opens the file itself, so an execute-only file reaches
 * us readable; asking about the descriptor's inode (faccessat2 with
 * AT_EMPTY_PATH, or the /proc magic link on kernels before 5.8) checks the
 * caller's own rights, ACLs included, without a path that could change.
 */
static int caller_can_read(int fd)
{
	char proc[64];

	if (faccessat(fd, "", R_OK, AT_EMPTY_PATH | AT_EACCESS) == 0)
		return 1;
	if (errno == EACCES || errno == EPERM)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (faccessat(AT_FDCWD, proc, R_OK, AT_EACCESS) == 0)
		return 1;
	if (errno == EACCES || errno == EPERM)
		return 0;
	return -errno;
}

/*
 * Every rule, on the file as it is now, before a record is chosen: it
 * reads only the header table, ELF headers and program headers, and no
 * cache entry is ever written from a file that breaks one.
 */
static int validate(struct run *r)
{
	fatelf_reader src;
	fatelf_diag d;
	int e;

	fatelf_diag_clear(&d);
	e = fatelf_reader_seekable_fd(&src, r->fd);
	if (e == 0)
		e = fatelf_validate(&src, NULL, &r->hdr, NULL, &d);
	if (e < 0)
		return step_failed(e, r->path, "not a valid FatELF file: %s (%s)",
			    fatelf_diag_text(&d, e), fatelf_error_name(e));
	return 0;
}

/* The kernel's rule first; then a record that a binfmt_misc emulator
 * would take, in file order. */
static int select_record(struct run *r)
{
	fatelf_host host;
	fatelf_diag d;
	_cleanup_free_ fatelf_binfmt_entry *entries = NULL;
	int e, n;

	fatelf_diag_clear(&d);
	e = fatelf_host_detect(&host);
	if (e < 0)
		return step_failed(e, r->path, "cannot tell this machine's targets: %s",
			    fatelf_strerror(e));
	e = fatelf_host_select(&host, &r->hdr, &d);
	if (e >= 0) {
		r->record = e;
		r->how = fatelf_host_runs(&host, &r->hdr.records[e].target) == 2 ?
			 "native" : "compatible";
		return 0;
	}
	if (e != -FATELF_E_NO_HOST_RECORD)
		return step_failed(e, r->path, "%s", d.msg);

	n = fatelf_binfmt_list(FATELF_BINFMT_DIR, &entries);
	for (int i = 0; n > 0 && i < r->hdr.nrecords; i++) {
		const fatelf_record *rec = &r->hdr.records[i];
		uint8_t buf[FATELF_BINFMT_BUF];
		size_t len = (size_t)MIN(rec->size, (uint64_t)sizeof(buf));
		ssize_t got = pread(r->fd, buf, len, (off_t)rec->offset);
		int h;

		if (got <= 0)
			continue;
		h = fatelf_binfmt_find_handler(entries, (size_t)n, buf, (size_t)got);
		if (h >= 0) {
			r->record = i;
			r->how = "emulated";
			snprintf(r->emulator, sizeof(r->emulator), "%s", entries[h].name);
			return 0;
		}
	}
	return step_failed(-FATELF_E_NO_HOST_RECORD, r->path, "%s; no binfmt_misc handler runs any of them",
		    d.msg);
}

static void locate(struct run *r)
{
	char link[64];
	ssize_t n;
	char *slash;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", r->fd);
	n = readlink(link, r->real, sizeof(r->real) - 1);
	if (n <= 0 || r->real[0] != '/' || (size_t)n >= sizeof(r->real) - 1) {
		r->real[0] = '\0';
	} else {
		r->real[n] = '\0';
		/* an unlinked file has no directory to mirror */
		if (n > 10 && strcmp(r->real + n - 10, " (deleted)") == 0)
			r->real[0] = '\0';
	}
	if (r->real[0]) {
		slash = strrchr(r->real, '/');
		r->name = slash + 1;
		if (slash == r->real) {
			r->dir = "/";
		} else {
			*slash = '\0';
			r->dir = r->real;
		}
		return;
	}
	slash = strrchr(r->path, '/');
	r->name = slash && slash[1] ? slash + 1 : r->path;
	r->dir = NULL;
}

static int origin_depth(struct run *r)
{
	const fatelf_record *rec = &r->hdr.records[r->record];
	fatelf_reader src;
	fatelf_diag d;
	int e;

	fatelf_diag_clear(&d);
	r->origin_depth = -1;
	e = fatelf_reader_seekable_fd(&src, r->fd);
	if (e == 0)
		e = fatelf_elf_origin_depth(&src, rec->offset, rec->size, &r->origin_depth, &d);
	if (e < 0)
		return step_failed(e, r->path, "record %d: %s (%s)", r->record,
			    fatelf_diag_text(&d, e), fatelf_error_name(e));
	if (!r->dir)
		r->origin_depth = -1;
	return 0;
}

/* Finds (or writes) the thin binary in the user's cache. Returns 0 with
 * ret filled, or 1 when no safe cache is usable (why in reason). */
static int cache_lookup(struct run *r, fatelf_run_entry *ret, char *reason, size_t cap)
{
	char dir[PATH_MAX];
	fatelf_run_cache cache = { .fd = -1 };
	fatelf_run_request req;
	fatelf_diag d;
	const fatelf_record *rec = &r->hdr.records[r->record];
	int e;

	fatelf_diag_clear(&d);
	e = fatelf_run_cache_default(getauxval(AT_SECURE) != 0, dir, sizeof(dir));
	if (e < 0) {
		snprintf(reason, cap, "no cache directory: %s", strerror(-e));
		return 1;
	}
	e = fatelf_run_cache_open(dir, geteuid(), &cache, &d);
	if (e < 0) {
		snprintf(reason, cap, "%s", fatelf_diag_text(&d, e));
		return 1;
	}
	req = (fatelf_run_request) {
		.fd = r->fd, .st = r->st, .dir = r->dir, .name = r->name,
		.record = (unsigned)r->record, .offset = rec->offset, .size = rec->size,
		.origin_depth = r->origin_depth,
	};
	e = fatelf_run_cache_get(&cache, &req, ret, &d);
	fatelf_run_cache_close(&cache);
	if (e < 0) {
		snprintf(reason, cap, "%s", fatelf_diag_text(&d, e));
		return 1;
	}
	return 0;
}

/* No usable cache: a private copy in memory, for this exec only. Returns
 * only on failure, a negative code, reported. */
static int run_from_memfd(struct run *r, char **argv)
{
	const fatelf_record *rec = &r->hdr.records[r->record];
	_cleanup_close_ int mfd = -1;
	int e;

	mfd = memfd_create(r->name, MFD_CLOEXEC);
	if (mfd < 0)
		return step_failed(-errno, r->path, "cannot create a memory file: %s", strerror(errno));
	e = copy_range(r->fd, rec->offset, mfd, 0, rec->size);
	if (e < 0)
		return step_failed(e, r->path, "cannot copy record %d: %s", r->record, strerror(-e));
	fexecve(mfd, argv, environ);
	return step_failed(-errno, r->path, "cannot execute record %d: %s", r->record, strerror(errno));
}

static int print_which(struct run *r, const fatelf_run_entry *entry, const char *reason)
{
	char name[FATELF_TARGET_NAME_MAX];

	fatelf_target_format(&r->hdr.records[r->record].target, name);
	if (strcmp(r->how, "emulated") == 0)
		printf("record %d %s (emulated by %s)\n", r->record, name, r->emulator);
	else
		printf("record %d %s (%s)\n", r->record, name, r->how);
	if (entry)
		printf("cache %s%s\n", entry->path, entry->created ? " (new)" : "");
	else
		printf("cache none (%s): each run copies the record into memory\n", reason);
	return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct run r = { .fd = -1, .record = -1, .how = "native" };
	char **prog_argv;
	bool which = false;
	unsigned long execfd;
	bool binfmt;
	int e;

	errno = 0;
	execfd = getauxval(AT_EXECFD);
	binfmt = errno != ENOENT;

	if (binfmt) {
		/* argv: [interpreter, path exec'd, (argv[0] with P), args...] */
		r.fd = (int)execfd;
		if (argc < 2)
			return fail(RUN_EXIT_CANNOT_EXECUTE, NULL,
				    "started by binfmt_misc without a file name");
		r.path = argv[1];
		if (getauxval(AT_FLAGS) & RUN_AT_FLAGS_PRESERVE_ARGV0)
			prog_argv = argv + 2;
		else
			prog_argv = argv + 1;
	} else {
		int i = 1;

		for (; i < argc && argv[i][0] == '-'; i++) {
			const char *a = argv[i];

			if (strcmp(a, "--") == 0) {
				i++;
				break;
			} else if (strcmp(a, "-w") == 0 || strcmp(a, "--which") == 0) {
				which = true;
			} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
				fputs(usage_text, stdout);
				return 0;
			} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
				printf("fatelf-run %s\n%s\n", PACKAGE_VERSION, FATELF_LICENSE_TEXT);
				return 0;
			} else {
				fprintf(stderr, "fatelf-run: unknown option '%s'\n%s", a, usage_text);
				return RUN_EXIT_USAGE;
			}
		}
		if (i >= argc) {
			fprintf(stderr, "fatelf-run: no FILE given\n%s", usage_text);
			return RUN_EXIT_USAGE;
		}
		r.path = argv[i];
		prog_argv = argv + i;
		r.fd = open(r.path, O_RDONLY | O_CLOEXEC);
		if (r.fd < 0)
			return fail(errno == ENOENT || errno == ENOTDIR ? RUN_EXIT_NOT_FOUND :
				    RUN_EXIT_CANNOT_EXECUTE, r.path, "%s", strerror(errno));
	}
	/* the program must not inherit the descriptor binfmt_misc gave us */
	if (fcntl(r.fd, F_SETFD, FD_CLOEXEC) < 0 || fstat(r.fd, &r.st) < 0)
		return fail(RUN_EXIT_CANNOT_EXECUTE, r.path, "%s", strerror(errno));
	if (!S_ISREG(r.st.st_mode))
		return fail(RUN_EXIT_CANNOT_EXECUTE, r.path, "not a regular file");
	if (r.st.st_mode & (S_ISUID | S_ISGID))
		return fail(RUN_EXIT_CANNOT_EXECUTE, r.path,
			    "refused: a %s fat executable (mode %04o) does not run: binfmt_misc "
			    "runs fatelf-run with the caller's privileges, not the file's; "
			    "thin it (fatelf thin) to get a plain ELF the kernel runs %s",
			    (r.st.st_mode & S_ISUID) ? "setuid" : "setgid",
			    (unsigned)(r.st.st_mode & 07777),
			    (r.st.st_mode & S_ISUID) ? "setuid" : "setgid");
	e = caller_can_read(r.fd);
	if (e < 0)
		return fail(RUN_EXIT_CANNOT_EXECUTE, r.path,
			    "cannot tell whether the caller may read the file: %s", strerror(-e));
	if (e == 0)
		return fail(RUN_EXIT_CANNOT_EXECUTE, r.path,
			    "refused: an execute-only fat executable (mode %04o) does not run: its "
			    "record would be copied into the caller's cache, where the caller could "
			    "read it; give the caller read permission, or thin it (fatelf thin) to a "
			    "plain ELF the kernel runs execute-only",
			    (unsigned)(r.st.st_mode & 07777));

	e = validate(&r);
	if (e == 0)
		e = select_record(&r);
	if (e == 0) {
		locate(&r);
		e = origin_depth(&r);
	}
	if (e < 0)
		return RUN_EXIT_CANNOT_EXECUTE;

	for (int attempt = 0; attempt < 2; attempt++) {
		fatelf_run_entry entry;
		char reason[512];

		e = cache_lookup(&r, &entry, reason, sizeof(reason));
		if (which)
			return print_which(&r, e == 0 ? &entry : NULL, reason);
		if (e == 1) {
			run_from_memfd(&r, prog_argv);
			return RUN_EXIT_CANNOT_EXECUTE;
		}
		execve(entry.path, prog_argv, environ);
		/* pruned by a concurrent run of a newer version: look again */
		if (errno == ENOENT && attempt == 0)
			continue;
		/* a cache on a noexec file system */
		if (errno == EACCES || errno == EPERM) {
			run_from_memfd(&r, prog_argv);
			return RUN_EXIT_CANNOT_EXECUTE;
		}
		return fail(RUN_EXIT_CANNOT_EXECUTE, r.path, "cannot execute record %d (%s): %s",
			    r.record, entry.path, strerror(errno));
	}
	return RUN_EXIT_CANNOT_EXECUTE;
}
