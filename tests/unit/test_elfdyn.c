/*
 * Unit tests for the $ORIGIN reach of an ELF image (lib/run/elfdyn.c): real
 * executables and libraries built at test time by gcc and the cross
 * compilers (64/32-bit, little and big endian, RPATH and RUNPATH, static),
 * read both as whole files and embedded at an offset like a FatELF record;
 * and hand-made images in memory, valid and malformed, each asserting the
 * depth or the exact error code a caller gets.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fatelf.h"
#include "run.h"
#include "testutil.h"

/* ------------------------------------------------------------ helpers */

/* Checks the contract on every failure: the code is returned and in d,
 * with a message; and the output parameter is left alone. */
static int depth_of(const fatelf_reader *src, uint64_t base, uint64_t size, int *ret_depth,
		    fatelf_diag *d)
{
	int depth = -42;
	int r;

	fatelf_diag_clear(d);
	r = fatelf_elf_origin_depth(src, base, size, &depth, d);
	if (r < 0) {
		ck_assert_int_eq(d->code, r);
		ck_assert_msg(d->msg[0] != '\0', "no message for %s", fatelf_error_name(r));
		ck_assert_int_eq(depth, -42);
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert_msg(depth >= -1 && depth <= FATELF_ORIGIN_DEPTH_MAX, "depth %d", depth);
	}
	*ret_depth = depth;
	return r;
}

static int depth_of_mem(const void *buf, size_t len, int *ret_depth, fatelf_diag *d)
{
	fatelf_reader src;

	fatelf_reader_seekable_mem(&src, buf, len);
	return depth_of(&src, 0, len, ret_depth, d);
}

/*
 * The depth of an image read three ways: the file through an fd, and the
 * same bytes embedded at 12288 in a larger buffer whose surroundings are
 * junk (as a FatELF record is), which must give the same answer.
 */
static int depth_of_file(const char *path)
{
	size_t len;
	uint8_t *img = tu_read_file(path, &len);
	fatelf_reader src;
	fatelf_diag d;
	int fd, depth, depth2, r;

	ck_assert_msg(img != NULL, "reading %s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fatelf_reader_seekable_fd(&src, fd), 0);
	r = depth_of(&src, 0, len, &depth, &d);
	ck_assert_msg(r == 0, "%s: %s", path, d.msg);
	close(fd);

	const size_t off = 12288, pad = 8192;
	uint8_t *big = malloc(off + len + pad);
	ck_assert_ptr_nonnull(big);
	memset(big, 0xa5, off + len + pad);
	memcpy(big, "\177ELF\002\001\001", 7);   /* a decoy header before the image */
	memcpy(big + off, img, len);
	fatelf_reader_seekable_mem(&src, big, off + len + pad);
	r = depth_of(&src, off, len, &depth2, &d);
	ck_assert_msg(r == 0, "%s at offset %zu: %s", path, off, d.msg);
	ck_assert_int_eq(depth2, depth);
	free(big);
	free(img);
	return depth;
}

static bool have_tool(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		int k = snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);

		if (n > 0 && k > 0 && (size_t)k < sizeof(buf) && access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* Runs argv (no shell, so "$ORIGIN" reaches the linker as is); its exit status. */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const char hello_c[] =
	"#include <stdio.h>\n"
	"int main(void) { puts(\"hello\"); return 0; }\n";

/*
 * Builds hello.c with cc and the given extra arguments (NULL-terminated)
 * into out. false (and a note on stdout) when cc is not installed.
 */
static bool build(const char *cc, const char *out, const char *const *extra)
{
	char *argv[32];
	int n = 0;

	if (!have_tool(cc)) {
		printf("# skipped %s: %s is not installed\n", out, cc);
		return false;
	}
	if (access("hello.c", F_OK) != 0)
		tu_write_file("hello.c", hello_c, sizeof(hello_c) - 1);
	argv[n++] = (char *)cc;
	argv[n++] = (char *)"-o";
	argv[n++] = (char *)out;
	argv[n++] = (char *)"hello.c";
	for (; extra && *extra; extra++) {
		ck_assert_int_lt(n, 30);
		argv[n++] = (char *)*extra;
	}
	argv[n] = NULL;
	ck_assert_msg(run(argv) == 0, "%s failed to build %s", cc, out);
	return true;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static const char *tmp;

static void tmp_setup(void)
{
	tmp = tu_tmpdir();
}

static void tmp_teardown(void)
{
	if (tmp && chdir("/") == 0)
		nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The dynamic tag of each kind in a file, read with readelf when there is
 * one, so the RPATH/RUNPATH variants are known to be what they claim. */
static void assert_has_tag(const char *path, const char *tag)
{
	char cmd[512];
	FILE *p;
	char line[512];
	bool found = false;

	if (!have_tool("readelf"))
		return;
	snprintf(cmd, sizeof(cmd), "readelf -d '%s'", path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, tag))
			found = true;
	pclose(p);
	ck_assert_msg(found, "%s has no %s", path, tag);
}

/* ------------------------------------------------- real binaries (host) */

START_TEST(test_gcc_runpath)
{
	static const struct {
		const char *rpath;
		int depth;
	} cases[] = {
		{ "$ORIGIN/../lib", 1 },
		{ "$ORIGIN", 0 },
		{ "$ORIGIN/../../x:/usr/lib", 2 },
		{ "${ORIGIN}/lib", 0 },
		{ "/usr/lib:$ORIGIN/a/../../b", 1 },
		{ "$ORIGINX/../..", -1 },
		{ "/opt/lib", -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[32], flag[256];
		const char *extra[] = { flag, NULL };

		snprintf(out, sizeof(out), "hello-%zu", i);
		snprintf(flag, sizeof(flag), "-Wl,-rpath,%s", cases[i].rpath);
		if (!build("gcc", out, extra))
			return;
		assert_has_tag(out, "(RUNPATH)");
		ck_assert_msg(depth_of_file(out) == cases[i].depth, "rpath '%s': depth %d, want %d",
			      cases[i].rpath, depth_of_file(out), cases[i].depth);
	}
}
END_TEST

START_TEST(test_gcc_rpath_old_dtags)
{
	const char *extra[] = { "-Wl,--disable-new-dtags", "-Wl,-rpath,/usr/lib:$ORIGIN/../../../lib",
				NULL };

	if (!build("gcc", "hello-rpath", extra))
		return;
	assert_has_tag("hello-rpath", "(RPATH)");
	ck_assert_int_eq(depth_of_file("hello-rpath"), 3);
}
END_TEST

START_TEST(test_gcc_no_origin)
{
	const char *stat[] = { "-static", NULL };

	if (!build("gcc", "hello-plain", NULL))
		return;
	assert_has_tag("hello-plain", "(NEEDED)");
	ck_assert_int_eq(depth_of_file("hello-plain"), -1);
	/* a static executable has no PT_DYNAMIC at all */
	if (build("gcc", "hello-static", stat))
		ck_assert_int_eq(depth_of_file("hello-static"), -1);
}
END_TEST

/* A library whose soname uses $ORIGIN puts it into its users' DT_NEEDED;
 * the library itself (ET_DYN) is scanned the same way. */
START_TEST(test_gcc_needed_origin)
{
	static const char lib_c[] = "int lib_answer(void) { return 42; }\n";
	char *mklib[] = { "gcc", "-shared", "-fPIC", "-o", "libx.so",
			  "-Wl,-soname,$ORIGIN/../lib/libx.so", "-Wl,-rpath,$ORIGIN/../../up", "lib.c",
			  NULL };
	/* --no-as-needed: hello does not call the library, keep it needed anyway */
	char *mkexe[] = { "gcc", "-o", "uses-libx", "hello.c", "-Wl,--no-as-needed", "libx.so", NULL };

	if (!have_tool("gcc")) {
		printf("# skipped DT_NEEDED: gcc is not installed\n");
		return;
	}
	tu_write_file("lib.c", lib_c, sizeof(lib_c) - 1);
	tu_write_file("hello.c", hello_c, sizeof(hello_c) - 1);
	ck_assert_int_eq(run(mklib), 0);
	ck_assert_int_eq(run(mkexe), 0);
	assert_has_tag("uses-libx", "$ORIGIN/../lib/libx.so");
	ck_assert_int_eq(depth_of_file("uses-libx"), 1);
	ck_assert_int_eq(depth_of_file("libx.so"), 2);
}
END_TEST

/* ----------------------------------------------- cross-compiled binaries */

static const struct {
	const char *cc;
	const char *what;
	const char *flags[3];
	int depth;
} cross[] = {
	{ "aarch64-linux-gnu-gcc", "aarch64 (64-bit LE) RUNPATH", { "-Wl,-rpath,$ORIGIN/../lib" }, 1 },
	{ "aarch64-linux-gnu-gcc", "aarch64 plain", { NULL }, -1 },
	{ "s390x-linux-gnu-gcc", "s390x (64-bit BE) RUNPATH", { "-Wl,-rpath,$ORIGIN/../../lib" }, 2 },
	{ "s390x-linux-gnu-gcc", "s390x RPATH",
	  { "-Wl,--disable-new-dtags", "-Wl,-rpath,${ORIGIN}" }, 0 },
	{ "s390x-linux-gnu-gcc", "s390x plain", { NULL }, -1 },
	{ "i686-linux-gnu-gcc", "i686 (32-bit LE) RPATH",
	  { "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../lib:$ORIGIN" }, 1 },
	{ "i686-linux-gnu-gcc", "i686 RUNPATH", { "-Wl,-rpath,/x:$ORIGIN/../../../../lib" }, 4 },
	{ "i686-linux-gnu-gcc", "i686 static", { "-static" }, -1 },
	{ "i686-linux-gnu-gcc", "i686 plain", { NULL }, -1 },
};

START_TEST(test_cross)
{
	char out[32];

	snprintf(out, sizeof(out), "cross-%d", _i);
	if (!build(cross[_i].cc, out, cross[_i].flags))
		return;
	ck_assert_msg(depth_of_file(out) == cross[_i].depth, "%s: depth %d, want %d",
		      cross[_i].what, depth_of_file(out), cross[_i].depth);
}
END_TEST

/* ------------------------------------------------ hand-made images */

/*
 * A minimal dynamic image, in either class and byte order:
 *   ELF header, program headers at PHOFF: PT_LOAD [0, SIZE) at VBASE and
 *   PT_DYNAMIC at DYNOFF; the dynamic array at DYNOFF; strings at STROFF.
 * Tests then break single fields.
 */
#define SYN_SIZE   4096u
#define SYN_DYNOFF 0x200u
#define SYN_STROFF 0x600u
#define SYN_VBASE  0x400000u

typedef struct synth {
	uint8_t buf[SYN_SIZE];
	bool is64, msb;
	unsigned nphdr, ndyn;
	size_t strsz;
	bool no_strtab;         /* leave DT_STRTAB out */
} synth;

static void put_e(uint8_t *p, uint64_t v, unsigned width, bool msb)
{
	for (unsigned i = 0; i < width; i++)
		p[msb ? width - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static unsigned syn_word(const synth *s)
{
	return s->is64 ? 8 : 4;
}

static unsigned syn_phoff(const synth *s)
{
	return s->is64 ? 64 : 52;
}

static unsigned syn_phentsize(const synth *s)
{
	return s->is64 ? 56 : 32;
}

static void syn_init(synth *s, bool is64, bool msb)
{
	memset(s, 0, sizeof(*s));
	s->is64 = is64;
	s->msb = msb;
	s->strsz = 1;           /* offset 0 is the empty string */
}

static uint64_t syn_str(synth *s, const char *str)
{
	size_t n = strlen(str) + 1, at = s->strsz;

	ck_assert_uint_le(SYN_STROFF + at + n, SYN_SIZE);
	memcpy(s->buf + SYN_STROFF + at, str, n);
	s->strsz += n;
	return at;
}

static void syn_dyn(synth *s, uint64_t tag, uint64_t val)
{
	unsigned w = syn_word(s);
	uint8_t *p = s->buf + SYN_DYNOFF + (size_t)s->ndyn * 2 * w;

	ck_assert_uint_le(SYN_DYNOFF + (s->ndyn + 1) * 2 * w, SYN_STROFF);
	put_e(p, tag, w, s->msb);
	put_e(p + w, val, w, s->msb);
	s->ndyn++;
}

/* Offset of program header i's field: type, offset, vaddr, filesz. */
enum { PH_TYPE, PH_OFFSET, PH_VADDR, PH_FILESZ };
static uint8_t *syn_ph_field(synth *s, unsigned i, int field, unsigned *ret_width)
{
	static const unsigned off64[] = { 0, 8, 16, 32 }, off32[] = { 0, 4, 8, 16 };
	uint8_t *ph = s->buf + syn_phoff(s) + (size_t)i * syn_phentsize(s);

	*ret_width = field == PH_TYPE ? 4 : syn_word(s);
	return ph + (s->is64 ? off64[field] : off32[field]);
}

static void syn_ph_set(synth *s, unsigned i, int field, uint64_t v)
{
	unsigned w;
	uint8_t *p = syn_ph_field(s, i, field, &w);

	put_e(p, v, w, s->msb);
}

/* Adds DT_STRTAB, DT_STRSZ and DT_NULL and writes the headers. */
static void syn_finish(synth *s)
{
	uint8_t *e = s->buf;
	unsigned w = syn_word(s);

	if (!s->no_strtab)
		syn_dyn(s, 5, SYN_VBASE + SYN_STROFF);
	syn_dyn(s, 10, s->strsz);
	syn_dyn(s, 0, 0);

	memcpy(e, "\177ELF", 4);
	e[4] = s->is64 ? 2 : 1;
	e[5] = s->msb ? 2 : 1;
	e[6] = 1;
	put_e(e + 16, 3, 2, s->msb);            /* ET_DYN */
	put_e(e + 18, s->is64 ? 62 : 3, 2, s->msb);
	put_e(e + 20, 1, 4, s->msb);
	put_e(e + 24 + w, syn_phoff(s), w, s->msb);     /* e_phoff */
	uint8_t *tail = e + (s->is64 ? 52 : 40);
	put_e(tail, s->is64 ? 64 : 52, 2, s->msb);
	put_e(tail + 2, syn_phentsize(s), 2, s->msb);
	put_e(tail + 4, 2, 2, s->msb);
	s->nphdr = 2;

	syn_ph_set(s, 0, PH_TYPE, 1);
	syn_ph_set(s, 0, PH_OFFSET, 0);
	syn_ph_set(s, 0, PH_VADDR, SYN_VBASE);
	syn_ph_set(s, 0, PH_FILESZ, SYN_SIZE);
	syn_ph_set(s, 1, PH_TYPE, 2);
	syn_ph_set(s, 1, PH_OFFSET, SYN_DYNOFF);
	syn_ph_set(s, 1, PH_VADDR, SYN_VBASE + SYN_DYNOFF);
	syn_ph_set(s, 1, PH_FILESZ, (uint64_t)s->ndyn * 2 * w);
}

/* The four layouts: 64/32-bit x little/big endian (loop tests' _i). */
static void syn_layout(synth *s, int i)
{
	syn_init(s, (i & 1) == 0, (i & 2) != 0);
}

/* An image with one DT_RUNPATH string; its depth or error code. */
static int syn_runpath(int layout, const char *runpath, int *ret_depth, fatelf_diag *d)
{
	synth s;

	syn_layout(&s, layout);
	syn_dyn(&s, 1, syn_str(&s, "libc.so.6"));
	syn_dyn(&s, 29, syn_str(&s, runpath));
	syn_finish(&s);
	return depth_of_mem(s.buf, sizeof(s.buf), ret_depth, d);
}

START_TEST(test_synth_paths)
{
	static const struct {
		const char *path;
		int depth;
	} cases[] = {
		{ "$ORIGIN", 0 },
		{ "$ORIGIN/", 0 },
		{ "${ORIGIN}", 0 },
		{ "$ORIGIN/lib", 0 },
		{ "$ORIGIN/../lib", 1 },
		{ "${ORIGIN}/../../lib", 2 },
		{ "$ORIGIN/a/../../b", 1 },
		{ "$ORIGIN/a/b/../../../../c/..", 2 },
		{ "$ORIGIN/././/x/../..", 1 },
		{ "$ORIGIN/...", 0 },
		{ "$ORIGIN/..", 1 },
		{ "/usr/lib:$ORIGIN/../..:$ORIGIN/..", 2 },
		{ "$ORIGIN/..::/lib:", 1 },
		{ "/opt/../../..", -1 },
		{ "", -1 },
		{ "$ORIGINX/../..", -1 },
		{ "$ORIGIN_/..", -1 },
		{ "$ORIGIN9", -1 },
		{ "$origin/..", -1 },
		{ "${ORIGIN/..", -1 },
		{ "$ORIGI", -1 },
		/* glibc expands $ORIGIN followed by any non-identifier byte:
		 * "<dir>-x" is a sibling of <dir>, one level up */
		{ "$ORIGIN-x/lib", 1 },
		{ "${ORIGIN}x", 1 },
		{ "$ORIGIN.d/../..", 2 },
		/* a token later in the element counts from where it stands */
		{ "/a/$ORIGIN/../..", 2 },
		{ "$ORIGIN/../$ORIGIN/../../..", 3 },
		{ "$ORIGIN/../../../../../../../../../../../../../../../../lib", 16 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fatelf_diag d;
		int depth;

		ck_assert_msg(syn_runpath(_i, cases[i].path, &depth, &d) == 0, "'%s': %s",
			      cases[i].path, d.msg);
		ck_assert_msg(depth == cases[i].depth, "layout %d '%s': depth %d, want %d", _i,
			      cases[i].path, depth, cases[i].depth);
	}
}
END_TEST

START_TEST(test_synth_depth_limit)
{
	fatelf_diag d;
	int depth;

	ck_assert_int_eq(syn_runpath(_i, "/x:$ORIGIN/../../../../../../../../../../../../../../../../../lib",
				     &depth, &d), -FATELF_E_LIMIT);
	ck_assert_ptr_nonnull(strstr(d.msg, "17"));
	ck_assert_ptr_nonnull(strstr(d.msg, "DT_RUNPATH"));
	/* "a/.." does not hide a climb: the lowest point counts */
	ck_assert_int_eq(syn_runpath(_i, "$ORIGIN/../../../../../../../../../../../../../../../../../x/../..",
				     &depth, &d), -FATELF_E_LIMIT);
}
END_TEST

/* DT_RPATH and DT_NEEDED count like DT_RUNPATH; DT_NEEDED is not split. */
START_TEST(test_synth_tags)
{
	fatelf_diag d;
	synth s;
	int depth;

	syn_layout(&s, _i);
	syn_dyn(&s, 15, syn_str(&s, "$ORIGIN/.."));
	syn_dyn(&s, 1, syn_str(&s, "$ORIGIN/a:b/../../../libz.so"));
	syn_finish(&s);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 2);

	/* other string-valued tags (DT_SONAME 14) are not search paths */
	syn_layout(&s, _i);
	syn_dyn(&s, 14, syn_str(&s, "$ORIGIN/../../x"));
	syn_dyn(&s, 1, syn_str(&s, "libc.so.6"));
	syn_finish(&s);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, -1);

	/* entries after DT_NULL are not part of the section */
	syn_layout(&s, _i);
	syn_dyn(&s, 29, syn_str(&s, "$ORIGIN"));
	syn_finish(&s);
	syn_dyn(&s, 29, syn_str(&s, "$ORIGIN/../../../../../../../../../../../../../../../../../.."));
	syn_ph_set(&s, 1, PH_FILESZ, (uint64_t)s.ndyn * 2 * syn_word(&s));
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 0);
}
END_TEST

START_TEST(test_synth_no_dynamic)
{
	fatelf_diag d;
	synth s;
	int depth;

	/* no PT_DYNAMIC: the second program header becomes PT_NOTE */
	syn_layout(&s, _i);
	syn_dyn(&s, 29, syn_str(&s, "$ORIGIN/.."));
	syn_finish(&s);
	syn_ph_set(&s, 1, PH_TYPE, 4);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, -1);

	/* no program headers at all */
	put_e(s.buf + (s.is64 ? 56 : 44), 0, 2, s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, -1);

	/* a dynamic section without strings needs no string table */
	syn_layout(&s, _i);
	s.no_strtab = true;
	syn_finish(&s);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, -1);

	/* an empty PT_DYNAMIC */
	syn_layout(&s, _i);
	syn_finish(&s);
	syn_ph_set(&s, 1, PH_FILESZ, 0);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, -1);
}
END_TEST

START_TEST(test_synth_not_elf)
{
	static const uint8_t zero[SYN_SIZE];
	fatelf_diag d;
	synth s, good;
	int depth;

	syn_layout(&good, _i);
	syn_dyn(&good, 29, syn_str(&good, "$ORIGIN"));
	syn_finish(&good);

	ck_assert_int_eq(depth_of_mem(zero, sizeof(zero), &depth, &d), -FATELF_E_NOT_ELF);
	ck_assert_int_eq(depth_of_mem(good.buf, 10, &depth, &d), -FATELF_E_NOT_ELF);
	ck_assert_int_eq(depth_of_mem(good.buf, 0, &depth, &d), -FATELF_E_NOT_ELF);
	/* shorter than its class's header */
	ck_assert_int_eq(depth_of_mem(good.buf, good.is64 ? 63 : 51, &depth, &d), -FATELF_E_NOT_ELF);

	s = good;
	s.buf[4] = 3;
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_NOT_ELF);
	ck_assert_ptr_nonnull(strstr(d.msg, "EI_CLASS"));
	s = good;
	s.buf[5] = 0;
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_NOT_ELF);
	ck_assert_ptr_nonnull(strstr(d.msg, "EI_DATA"));
	s = good;
	s.buf[6] = 2;
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_NOT_ELF);
	s = good;
	s.buf[0] = 0x7e;
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_NOT_ELF);
	/* e_phentsize of the other class */
	s = good;
	put_e(s.buf + (s.is64 ? 54 : 42), s.is64 ? 32 : 56, 2, s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_NOT_ELF);
	ck_assert_ptr_nonnull(strstr(d.msg, "e_phentsize"));
	/* PN_XNUM */
	s = good;
	put_e(s.buf + (s.is64 ? 56 : 44), 0xffff, 2, s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_NOT_ELF);

	/* the unbroken image is fine */
	ck_assert_int_eq(depth_of_mem(good.buf, sizeof(good.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 0);
}
END_TEST

START_TEST(test_synth_ranges)
{
	fatelf_diag d;
	synth s, good;
	int depth;
	uint64_t huge;

	syn_layout(&good, _i);
	huge = good.is64 ? UINT64_MAX - 8 : UINT32_MAX - 8;
	syn_dyn(&good, 29, syn_str(&good, "$ORIGIN/.."));
	syn_finish(&good);
	ck_assert_int_eq(depth_of_mem(good.buf, sizeof(good.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 1);

	/* truncated program header table: the image ends inside it */
	ck_assert_int_eq(depth_of_mem(good.buf, syn_phoff(&good) + syn_phentsize(&good) + 7, &depth,
				      &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "program header table"));
	/* e_phnum says more headers than the image holds */
	s = good;
	put_e(s.buf + (s.is64 ? 56 : 44), 200, 2, s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	/* e_phoff past the end, and wrapping around */
	s = good;
	put_e(s.buf + 24 + syn_word(&s), huge, syn_word(&s), s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);

	/* PT_DYNAMIC outside the image, straddling its end, and wrapping */
	s = good;
	syn_ph_set(&s, 1, PH_OFFSET, 0x2000);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "PT_DYNAMIC"));
	s = good;
	syn_ph_set(&s, 1, PH_FILESZ, SYN_SIZE - SYN_DYNOFF + 1);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	s = good;
	syn_ph_set(&s, 1, PH_FILESZ, huge);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	/* ... but the image's own size is what counts, not the buffer's */
	ck_assert_int_eq(depth_of_mem(good.buf, SYN_DYNOFF + 8, &depth, &d), -FATELF_E_SEGMENT);

	/* DT_STRTAB in no PT_LOAD: before it, past its file bytes, none at all */
	s = good;
	syn_ph_set(&s, 0, PH_VADDR, SYN_VBASE + SYN_STROFF + 1);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "DT_STRTAB"));
	s = good;
	syn_ph_set(&s, 0, PH_FILESZ, SYN_STROFF);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	s = good;
	syn_ph_set(&s, 0, PH_TYPE, 6);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	/* the PT_LOAD holding it reaches past the image */
	s = good;
	syn_ph_set(&s, 0, PH_FILESZ, SYN_SIZE + 1);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "PT_LOAD"));

	/* strings without DT_STRTAB */
	syn_layout(&s, _i);
	s.no_strtab = true;
	syn_dyn(&s, 1, syn_str(&s, "libc.so.6"));
	syn_finish(&s);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
}
END_TEST

START_TEST(test_synth_strings)
{
	fatelf_diag d;
	synth s;
	int depth;
	uint64_t at;
	unsigned w;

	/* the string offset is not below DT_STRSZ */
	syn_layout(&s, _i);
	syn_dyn(&s, 29, 0x7fff);
	syn_finish(&s);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "DT_STRSZ"));

	/* DT_STRSZ ends inside the string: no NUL within it */
	syn_layout(&s, _i);
	at = syn_str(&s, "$ORIGIN/..");
	syn_dyn(&s, 29, at);
	syn_finish(&s);
	/* the DT_STRSZ entry is the one before DT_NULL */
	w = syn_word(&s);
	put_e(s.buf + SYN_DYNOFF + (size_t)(s.ndyn - 2) * 2 * w + w, at + 5, w, s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "NUL"));
	ck_assert_ptr_nonnull(strstr(d.msg, "DT_STRSZ"));

	/* a huge DT_STRSZ is fine: only the strings used are read */
	put_e(s.buf + SYN_DYNOFF + (size_t)(s.ndyn - 2) * 2 * w + w,
	      s.is64 ? UINT64_MAX : UINT32_MAX, w, s.msb);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 1);

	/* ... but the string must end inside the image: unterminated tail */
	memset(s.buf + SYN_STROFF + at, '/', SYN_SIZE - SYN_STROFF - at);
	memcpy(s.buf + SYN_STROFF + at, "$ORIGIN", 7);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "image"));
	/* and the image's size bounds it, even if the buffer goes on */
	syn_layout(&s, _i);
	syn_dyn(&s, 29, syn_str(&s, "$ORIGIN/.."));
	syn_finish(&s);
	/* the PT_LOAD ends where the image is cut, just before the NUL */
	syn_ph_set(&s, 0, PH_FILESZ, SYN_STROFF + 1 + 10);
	ck_assert_int_eq(depth_of_mem(s.buf, SYN_STROFF + 1 + 10, &depth, &d), -FATELF_E_SEGMENT);
	ck_assert_int_eq(depth_of_mem(s.buf, SYN_STROFF + 1 + 11, &depth, &d), 0);
	ck_assert_int_eq(depth, 1);
}
END_TEST

/* A record inside a fat file: base is its offset, size its length. */
START_TEST(test_synth_embedded)
{
	const size_t off = 8192;
	uint8_t *big = malloc(off + 2 * SYN_SIZE);
	fatelf_reader src;
	fatelf_diag d;
	synth s;
	int depth;

	ck_assert_ptr_nonnull(big);
	syn_layout(&s, _i);
	syn_dyn(&s, 29, syn_str(&s, "$ORIGIN/../.."));
	syn_finish(&s);
	memset(big, 0, off + 2 * SYN_SIZE);
	memcpy(big, s.buf, sizeof(s.buf));     /* a different image at 0 ... */
	memcpy(big + off, s.buf, sizeof(s.buf));
	fatelf_reader_seekable_mem(&src, big, off + 2 * SYN_SIZE);
	ck_assert_int_eq(depth_of(&src, off, SYN_SIZE, &depth, &d), 0);
	ck_assert_int_eq(depth, 2);
	/* ... offsets are the image's own: break the copy at 0, not at off */
	memset(big, 0, SYN_SIZE);
	ck_assert_int_eq(depth_of(&src, off, SYN_SIZE, &depth, &d), 0);
	ck_assert_int_eq(depth, 2);
	ck_assert_int_eq(depth_of(&src, 0, SYN_SIZE, &depth, &d), -FATELF_E_NOT_ELF);

	/* the string's NUL lies just past the image's end, inside the buffer:
	 * cut the image (and its PT_LOAD) right before it */
	syn_ph_set(&s, 0, PH_FILESZ, SYN_STROFF + 1 + 13);
	memcpy(big + off, s.buf, sizeof(s.buf));
	ck_assert_int_eq(depth_of(&src, off, SYN_STROFF + 1 + 13, &depth, &d), -FATELF_E_SEGMENT);

	/* an image past the end of the source is an I/O error, not a crash */
	ck_assert_int_eq(depth_of(&src, off + 2 * SYN_SIZE + 100, SYN_SIZE, &depth, &d), -EIO);
	/* base + size overflowing */
	ck_assert_int_eq(depth_of(&src, UINT64_MAX - 10, 100, &depth, &d), -EINVAL);
	free(big);
}
END_TEST

/* ld.so takes the last PT_DYNAMIC and the last DT_STRTAB; so do we. */
START_TEST(test_synth_last_wins)
{
	fatelf_diag d;
	synth s;
	int depth;
	unsigned w;

	syn_layout(&s, _i);
	syn_dyn(&s, 5, 0x1);    /* an earlier DT_STRTAB, overridden */
	syn_dyn(&s, 29, syn_str(&s, "$ORIGIN/.."));
	syn_finish(&s);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 1);

	/* three program headers: a bogus PT_DYNAMIC first */
	w = syn_word(&s);
	put_e(s.buf + (s.is64 ? 56 : 44), 3, 2, s.msb);
	syn_ph_set(&s, 2, PH_TYPE, 2);
	syn_ph_set(&s, 2, PH_OFFSET, SYN_DYNOFF);
	syn_ph_set(&s, 2, PH_FILESZ, (uint64_t)s.ndyn * 2 * w);
	syn_ph_set(&s, 1, PH_OFFSET, 0x100000);
	ck_assert_int_eq(depth_of_mem(s.buf, sizeof(s.buf), &depth, &d), 0);
	ck_assert_int_eq(depth, 1);
}
END_TEST

/* A dynamic section with no DT_NULL in its first 65536 entries. */
START_TEST(test_synth_dynamic_cap)
{
	const size_t n = (1u << 16) + 2, size = SYN_DYNOFF + n * 16 + 64;
	uint8_t *big = calloc(1, size);
	fatelf_diag d;
	synth s;
	int depth;

	ck_assert_ptr_nonnull(big);
	syn_init(&s, true, false);
	syn_finish(&s);
	syn_ph_set(&s, 0, PH_FILESZ, size);
	syn_ph_set(&s, 1, PH_FILESZ, n * 16);
	memcpy(big, s.buf, SYN_DYNOFF);
	for (size_t i = 0; i < n; i++)
		put_e(big + SYN_DYNOFF + i * 16, 0x6ffffef5, 8, false);    /* DT_GNU_HASH */
	ck_assert_int_eq(depth_of_mem(big, size, &depth, &d), -FATELF_E_LIMIT);
	/* a DT_NULL inside the cap ends the walk */
	put_e(big + SYN_DYNOFF + 1000 * 16, 0, 8, false);
	ck_assert_int_eq(depth_of_mem(big, size, &depth, &d), 0);
	ck_assert_int_eq(depth, -1);
	free(big);
}
END_TEST

/* A source that counts what is read: a 64 MiB image whose bytes past the
 * first 4096 are zeros that no caller should need. */
typedef struct counting {
	const uint8_t *img;
	uint64_t bytes, calls;
} counting;

static ssize_t counting_pread(const fatelf_reader *src, void *buf, size_t len, uint64_t off)
{
	counting *c = src->ctx;

	if (off >= src->size)
		return 0;
	len = (size_t)(len < src->size - off ? len : src->size - off);
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = off + i < SYN_SIZE ? c->img[off + i] : 0;
	c->bytes += len;
	c->calls++;
	return (ssize_t)len;
}

START_TEST(test_synth_bounded_reads)
{
	const uint64_t size = 64ull << 20;
	counting c = { 0 };
	fatelf_reader src = { .pread = counting_pread, .ctx = &c, .size = size, .fd = -1 };
	fatelf_diag d;
	synth s;
	int depth;

	syn_layout(&s, _i);
	syn_dyn(&s, 1, syn_str(&s, "libc.so.6"));
	syn_dyn(&s, 15, syn_str(&s, "$ORIGIN/../lib"));
	syn_finish(&s);
	syn_ph_set(&s, 0, PH_FILESZ, size);
	c.img = s.buf;
	ck_assert_int_eq(depth_of(&src, 0, size, &depth, &d), 0);
	ck_assert_int_eq(depth, 1);
	ck_assert_msg(c.bytes < 4096, "read %llu bytes in %llu calls",
		      (unsigned long long)c.bytes, (unsigned long long)c.calls);
}
END_TEST

static Suite *elfdyn_suite(void)
{
	Suite *s = suite_create("elfdyn");
	TCase *real = tcase_create("compiled");
	TCase *syn = tcase_create("synthetic");

	tcase_add_checked_fixture(real, tmp_setup, tmp_teardown);
	tcase_set_timeout(real, 300);
	tcase_add_test(real, test_gcc_runpath);
	tcase_add_test(real, test_gcc_rpath_old_dtags);
	tcase_add_test(real, test_gcc_no_origin);
	tcase_add_test(real, test_gcc_needed_origin);
	tcase_add_loop_test(real, test_cross, 0, (int)(sizeof(cross) / sizeof(cross[0])));
	suite_add_tcase(s, real);

	tcase_set_timeout(syn, 60);
	tcase_add_loop_test(syn, test_synth_paths, 0, 4);
	tcase_add_loop_test(syn, test_synth_depth_limit, 0, 4);
	tcase_add_loop_test(syn, test_synth_tags, 0, 4);
	tcase_add_loop_test(syn, test_synth_no_dynamic, 0, 4);
	tcase_add_loop_test(syn, test_synth_not_elf, 0, 4);
	tcase_add_loop_test(syn, test_synth_ranges, 0, 4);
	tcase_add_loop_test(syn, test_synth_strings, 0, 4);
	tcase_add_loop_test(syn, test_synth_embedded, 0, 4);
	tcase_add_loop_test(syn, test_synth_last_wins, 0, 4);
	tcase_add_test(syn, test_synth_dynamic_cap);
	tcase_add_loop_test(syn, test_synth_bounded_reads, 0, 4);
	suite_add_tcase(s, syn);
	return s;
}

int main(void)
{
	return tu_run_suite(elfdyn_suite());
}
