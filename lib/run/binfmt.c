/*
 * binfmt_misc as libfatelf sees it: the entries the kernel prints under
 * /proc/sys/fs/binfmt_misc, parsed strictly (the text is not ours: any
 * program with the rights to register may put there what it likes), and
 * the kernel's own matching rule, so that fatelf-run and `fatelf targets`
 * decide which record an emulator such as qemu-user would run exactly as
 * the kernel would when that record is exec'd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "fatelf.h"
#include "hex.h"
#include "io.h"
#include "macro.h"
#include "run.h"

/* The kernel prints at most an interpreter path, a few keywords and two
 * 256-byte hex strings; anything longer is not an entry. */
#define BINFMT_TEXT_MAX 8192

static const uint8_t fatelf_magic[4] = { 0xfa, 0x70, 0x0e, 0x1f };

/* ------------------------------------------------------------ parsing */

struct line_reader {
	const char *p, *end;
	unsigned no;            /* number of the line last returned, from 1 */
};

/* The next line without its '\n'; false at the end of the text. A last
 * line without '\n' still counts (a hand-written file may lack it). */
static bool line_next(struct line_reader *lr, const char **ret, size_t *ret_len)
{
	const char *nl;

	if (lr->p >= lr->end)
		return false;
	nl = memchr(lr->p, '\n', (size_t)(lr->end - lr->p));
	*ret = lr->p;
	*ret_len = nl ? (size_t)(nl - lr->p) : (size_t)(lr->end - lr->p);
	lr->p = nl ? nl + 1 : lr->end;
	lr->no++;
	return true;
}

/* A printable, bounded copy of untrusted text for a message: control
 * bytes and non-ASCII would otherwise reach a terminal. */
static const char *snippet(const char *s, size_t len, char buf[32])
{
	size_t n = MIN(len, (size_t)24), i;

	for (i = 0; i < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' ? s[i] : '?';
	if (len > n) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/* The value after "keyword" on the line, when the line starts with it. */
static bool line_key(const char *line, size_t len, const char *keyword,
		     const char **ret_val, size_t *ret_vlen)
{
	size_t k = strlen(keyword);

	if (len < k || memcmp(line, keyword, k) != 0)
		return false;
	*ret_val = line + k;
	*ret_vlen = len - k;
	return true;
}

static int hex_parse(const char *s, size_t len, unsigned line, const char *what,
		     uint8_t out[FATELF_BINFMT_BUF], size_t *ret_n, fatelf_diag *d)
{
	if (len == 0)
		return fatelf_diag_set(d, -EINVAL, -1, "line %u (%s): no bytes", line, what);
	if (len % 2)
		return fatelf_diag_set(d, -EINVAL, -1, "line %u (%s): odd number of hex digits (%zu)",
				       line, what, len);
	if (len / 2 > FATELF_BINFMT_BUF)
		return fatelf_diag_set(d, -EINVAL, -1,
				       "line %u (%s): %zu bytes, more than the kernel's %d-byte buffer",
				       line, what, len / 2, FATELF_BINFMT_BUF);
	for (size_t i = 0; i < len; i += 2) {
		int hi = fatelf_hex_digit(s[i]), lo = fatelf_hex_digit(s[i + 1]);

		if (hi < 0 || lo < 0)
			return fatelf_diag_set(d, -EINVAL, -1,
					       "line %u (%s): byte %zu is not two hex digits",
					       line, what, i / 2);
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*ret_n = len / 2;
	return 0;
}

/* Decimal, digits only (the kernel prints "%i"), at most FATELF_BINFMT_BUF. */
static int offset_parse(const char *s, size_t len, unsigned line, unsigned *ret, fatelf_diag *d)
{
	unsigned v = 0;

	if (len == 0)
		return fatelf_diag_set(d, -EINVAL, -1, "line %u (offset): no number", line);
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return fatelf_diag_set(d, -EINVAL, -1,
					       "line %u (offset): not a decimal number", line);
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > FATELF_BINFMT_BUF)
			return fatelf_diag_set(d, -EINVAL, -1,
					       "line %u (offset): beyond the kernel's %d-byte buffer",
					       line, FATELF_BINFMT_BUF);
	}
	*ret = v;
	return 0;
}

static int flags_parse(const char *s, size_t len, unsigned line, char ret[16], fatelf_diag *d)
{
	for (size_t i = 0; i < len; i++) {
		if (!memchr("POCF", s[i], 4))
			return fatelf_diag_set(d, -EINVAL, -1,
					       "line %u (flags): byte %zu is not one of P, O, C, F",
					       line, i);
		if (memchr(s, s[i], i))
			return fatelf_diag_set(d, -EINVAL, -1, "line %u (flags): flag %c twice",
					       line, s[i]);
	}
	/* at most four distinct letters, so this fits */
	memcpy(ret, s, len);
	ret[len] = '\0';
	return 0;
}

static int expect_line(struct line_reader *lr, const char *what, const char **ret,
		       size_t *ret_len, fatelf_diag *d)
{
	if (!line_next(lr, ret, ret_len))
		return fatelf_diag_set(d, -EINVAL, -1, "line %u: expected %s, found the end of the text",
				       lr->no + 1, what);
	return 0;
}

static int expect_end(struct line_reader *lr, fatelf_diag *d)
{
	const char *line;
	size_t len;
	char buf[32];

	if (!line_next(lr, &line, &len))
		return 0;
	return fatelf_diag_set(d, -EINVAL, -1, "line %u: unexpected line \"%s\" after the entry",
			       lr->no, snippet(line, len, buf));
}

static int magic_parse(struct line_reader *lr, const char *offset_val, size_t offset_len,
		       fatelf_binfmt_entry *e, fatelf_diag *d)
{
	const char *line, *val;
	size_t len, vlen, mask_len;
	char buf[32];
	int r;

	r = offset_parse(offset_val, offset_len, lr->no, &e->offset, d);
	if (r < 0)
		return r;

	r = expect_line(lr, "\"magic HEX\"", &line, &len, d);
	if (r < 0)
		return r;
	if (!line_key(line, len, "magic ", &val, &vlen))
		return fatelf_diag_set(d, -EINVAL, -1, "line %u: expected \"magic HEX\", found \"%s\"",
				       lr->no, snippet(line, len, buf));
	r = hex_parse(val, vlen, lr->no, "magic", e->magic, &e->magic_len, d);
	if (r < 0)
		return r;
	if (e->offset + e->magic_len > FATELF_BINFMT_BUF)
		return fatelf_diag_set(d, -EINVAL, -1,
				       "line %u (magic): offset %u + %zu bytes reach past the kernel's %d-byte buffer",
				       lr->no, e->offset, e->magic_len, FATELF_BINFMT_BUF);

	memset(e->mask, 0xff, sizeof(e->mask));
	if (!line_next(lr, &line, &len))
		return 0;
	if (!line_key(line, len, "mask ", &val, &vlen))
		return fatelf_diag_set(d, -EINVAL, -1, "line %u: expected \"mask HEX\" or the end, found \"%s\"",
				       lr->no, snippet(line, len, buf));
	r = hex_parse(val, vlen, lr->no, "mask", e->mask, &mask_len, d);
	if (r < 0)
		return r;
	if (mask_len != e->magic_len)
		return fatelf_diag_set(d, -EINVAL, -1, "line %u (mask): %zu bytes, the magic has %zu",
				       lr->no, mask_len, e->magic_len);
	/* The kernel masks the magic when the entry is registered and then
	 * compares (byte & mask) with it; doing the same here keeps a
	 * hand-written entry with bits outside its mask matching as the
	 * kernel would match it. */
	for (size_t i = 0; i < e->magic_len; i++)
		e->magic[i] &= e->mask[i];
	return expect_end(lr, d);
}

int fatelf_binfmt_parse(const char *name, const char *text, size_t len,
			fatelf_binfmt_entry *ret, fatelf_diag *d)
{
	_cleanup_free_ fatelf_binfmt_entry *e = NULL;
	struct line_reader lr;
	const char *line, *val;
	size_t llen, vlen;
	char buf[32];
	int r;

	if (!name)
		name = "";
	if (strlen(name) >= sizeof(e->name))
		return fatelf_diag_set(d, -EINVAL, -1, "entry name longer than %zu bytes",
				       sizeof(e->name) - 1);
	if (!text) {
		if (len > 0)
			return fatelf_diag_set(d, -EINVAL, -1, "no text");
		text = "";
	}
	if (len > 0 && memchr(text, '\0', len))
		return fatelf_diag_set(d, -EINVAL, -1, "a NUL byte in the text");

	lr = (struct line_reader) { .p = text, .end = text + len };
	/* an entry is 5 KiB: not for the stack of a caller that loops */
	e = calloc(1, sizeof(*e));
	if (!e)
		return fatelf_diag_oom(d);
	memcpy(e->name, name, strlen(name) + 1);

	r = expect_line(&lr, "\"enabled\" or \"disabled\"", &line, &llen, d);
	if (r < 0)
		return r;
	if (llen == 7 && memcmp(line, "enabled", 7) == 0)
		e->enabled = true;
	else if (!(llen == 8 && memcmp(line, "disabled", 8) == 0))
		return fatelf_diag_set(d, -EINVAL, -1,
				       "line 1: expected \"enabled\" or \"disabled\", found \"%s\"",
				       snippet(line, llen, buf));

	r = expect_line(&lr, "\"interpreter PATH\"", &line, &llen, d);
	if (r < 0)
		return r;
	if (!line_key(line, llen, "interpreter ", &val, &vlen))
		return fatelf_diag_set(d, -EINVAL, -1,
				       "line %u: expected \"interpreter PATH\", found \"%s\"",
				       lr.no, snippet(line, llen, buf));
	if (vlen == 0)
		return fatelf_diag_set(d, -EINVAL, -1, "line %u (interpreter): empty path", lr.no);
	if (vlen >= sizeof(e->interpreter))
		return fatelf_diag_set(d, -EINVAL, -1, "line %u (interpreter): longer than %zu bytes",
				       lr.no, sizeof(e->interpreter) - 1);
	memcpy(e->interpreter, val, vlen);
	e->interpreter[vlen] = '\0';

	r = expect_line(&lr, "\"flags: LETTERS\"", &line, &llen, d);
	if (r < 0)
		return r;
	if (!line_key(line, llen, "flags: ", &val, &vlen))
		return fatelf_diag_set(d, -EINVAL, -1,
				       "line %u: expected \"flags: LETTERS\", found \"%s\"",
				       lr.no, snippet(line, llen, buf));
	r = flags_parse(val, vlen, lr.no, e->flags, d);
	if (r < 0)
		return r;

	r = expect_line(&lr, "\"offset N\" or \"extension .EXT\"", &line, &llen, d);
	if (r < 0)
		return r;
	if (line_key(line, llen, "offset ", &val, &vlen)) {
		e->magic_type = true;
		r = magic_parse(&lr, val, vlen, e, d);
		if (r < 0)
			return r;
	} else if (line_key(line, llen, "extension .", &val, &vlen)) {
		/* Stored as the kernel holds it: without the dot. */
		if (vlen == 0 || memchr(val, '/', vlen))
			return fatelf_diag_set(d, -EINVAL, -1,
					       "line %u (extension): empty or holds a '/'", lr.no);
		if (vlen >= sizeof(e->extension))
			return fatelf_diag_set(d, -EINVAL, -1,
					       "line %u (extension): longer than %zu bytes",
					       lr.no, sizeof(e->extension) - 1);
		memcpy(e->extension, val, vlen);
		e->extension[vlen] = '\0';
		r = expect_end(&lr, d);
		if (r < 0)
			return r;
	} else
		return fatelf_diag_set(d, -EINVAL, -1,
				       "line %u: expected \"offset N\" or \"extension .EXT\", found \"%s\"",
				       lr.no, snippet(line, llen, buf));

	memcpy(ret, e, sizeof(*e));
	return 0;
}

/* ------------------------------------------------------------ matching */

bool fatelf_binfmt_matches(const fatelf_binfmt_entry *e, const void *buf, size_t len)
{
	const uint8_t *b = buf;

	if (!e->enabled || !e->magic_type)
		return false;
	/* a corrupt entry (not from fatelf_binfmt_parse) must not read out of
	 * bounds either */
	if (e->magic_len == 0 || e->magic_len > FATELF_BINFMT_BUF || e->offset > FATELF_BINFMT_BUF)
		return false;
	if (len > FATELF_BINFMT_BUF)
		len = FATELF_BINFMT_BUF;
	if ((size_t)e->offset + e->magic_len > len)
		return false;
	for (size_t i = 0; i < e->magic_len; i++)
		if ((b[e->offset + i] & e->mask[i]) != (e->magic[i] & e->mask[i]))
			return false;
	return true;
}

bool fatelf_binfmt_is_fatelf(const fatelf_binfmt_entry *e)
{
	/* The entry claims fat files when it pins all four magic bytes at the
	 * start of the file. A mask that leaves some of them open is some
	 * other (broader) handler's business, not FatELF's own. */
	if (!e->magic_type || e->offset != 0 || e->magic_len < sizeof(fatelf_magic))
		return false;
	for (size_t i = 0; i < sizeof(fatelf_magic); i++)
		if (e->mask[i] != 0xff || e->magic[i] != fatelf_magic[i])
			return false;
	return true;
}

int fatelf_binfmt_find_handler(const fatelf_binfmt_entry *list, size_t n,
			       const void *buf, size_t len)
{
	for (size_t i = 0; i < n && i <= (size_t)INT32_MAX; i++)
		if (!fatelf_binfmt_is_fatelf(&list[i]) && fatelf_binfmt_matches(&list[i], buf, len))
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------ listing */

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const fatelf_binfmt_entry *)a)->name, ((const fatelf_binfmt_entry *)b)->name);
}

static int dir_open(const char *dir)
{
	int fd;

	if (!dir) {
		/* secure_getenv: a setuid caller's environment must not point
		 * fatelf-run at entries of its choosing */
		dir = secure_getenv("FATELF_BINFMT_MISC_DIR");
		if (!dir || !*dir)
			dir = FATELF_BINFMT_DIR;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? -ENOENT : -errno;
	return fd;
}

int fatelf_binfmt_list(const char *dir, fatelf_binfmt_entry **ret)
{
	_cleanup_free_ fatelf_binfmt_entry *list = NULL;
	_cleanup_free_ char *status = NULL;
	size_t n = 0, cap = 0, len;
	bool all_disabled = false;
	struct stat st;
	struct dirent *de;
	DIR *dp;
	int dfd, r;

	dfd = dir_open(dir);
	if (dfd < 0)
		return dfd;
	/* An unmounted binfmt_misc is an empty directory: no "register". */
	if (fstatat(dfd, "register", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? -ENOENT : -errno;
		close(dfd);
		return r;
	}
	/* "echo 0 > status" switches every entry off at once: the kernel then
	 * runs none of them, whatever each one's own state says. procfs
	 * reports size 0: the files are read to their end. */
	if (read_file_max(dfd, "status", READ_FILE_NOFOLLOW | READ_FILE_REGULAR, BINFMT_TEXT_MAX,
			  &status, &len) == 0 &&
	    strncmp(status, "disabled", 8) == 0)
		all_disabled = true;

	dp = fdopendir(dfd);
	if (!dp) {
		r = -errno;
		close(dfd);
		return r;
	}
	while ((de = readdir(dp))) {
		_cleanup_free_ char *text = NULL;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, "register") == 0 || strcmp(de->d_name, "status") == 0)
			continue;
		if (read_file_max(dirfd(dp), de->d_name, READ_FILE_NOFOLLOW | READ_FILE_REGULAR,
				  BINFMT_TEXT_MAX, &text, &len) < 0)
			continue;
		if (GROW_ARRAY(list, cap, n + 1) < 0) {
			closedir(dp);
			return -ENOMEM;
		}
		if (fatelf_binfmt_parse(de->d_name, text, len, &list[n], NULL) < 0)
			continue;
		if (all_disabled)
			list[n].enabled = false;
		n++;
	}
	closedir(dp);
	if (n > (size_t)INT32_MAX)
		return -EOVERFLOW;
	/* The kernel tries the newest registration first, which the directory
	 * does not tell; name order at least makes every caller agree. */
	if (n > 1)
		qsort(list, n, sizeof(*list), entry_cmp);
	*ret = n ? TAKE_PTR(list) : NULL;
	return (int)n;
}
