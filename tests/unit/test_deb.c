/*
 * Unit tests for the .deb reader: packages made here byte by byte (the ar
 * container by hand, the member archives with libarchive), one per
 * member compression, and one refusal per rule with its code; every
 * truncation of a valid package fails cleanly; and a package made by
 * dpkg-deb itself, read from a pipe.
 */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle.h"
#include "deb.h"
#include "macro.h"
#include "testutil.h"

#define CONTROL \
	"Package: hello-fat\n" \
	"Version: 1:2.10-3\n" \
	"Architecture: arm64\n" \
	"Maintainer: Jane Doe <jane@example.org>\n" \
	"Homepage: https://example.org/hello\n" \
	"Depends: libc6 (>= 2.34),\n" \
	" libx1\n" \
	"Description: greets the world\n" \
	" A longer text,\n" \
	" .\n" \
	" over lines.\n"

struct file {
	const char *name;
	const char *data;       /* NULL: a directory; "->x": a symlink to x */
	unsigned mode;
};

/* A tar of files, through filter ("" none, "gz", "xz", "zst", "bz2"). */
static uint8_t *make_tar(const struct file *f, size_t n, const char *filter, size_t *ret_len)
{
	size_t cap = 1 << 20, used = 0;
	uint8_t *buf = malloc(cap);
	struct archive *a = archive_write_new();

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(archive_write_set_format_gnutar(a), ARCHIVE_OK);
	if (strcmp(filter, "gz") == 0)
		ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	else if (strcmp(filter, "xz") == 0)
		ck_assert_int_eq(archive_write_add_filter_xz(a), ARCHIVE_OK);
	else if (strcmp(filter, "zst") == 0)
		ck_assert_int_eq(archive_write_add_filter_zstd(a), ARCHIVE_OK);
	else if (strcmp(filter, "bz2") == 0)
		ck_assert_int_eq(archive_write_add_filter_bzip2(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();

		archive_entry_set_pathname(e, f[i].name);
		if (!f[i].data) {
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, 0755);
		} else if (strncmp(f[i].data, "->", 2) == 0) {
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, f[i].data + 2);
			archive_entry_set_perm(e, 0777);
		} else {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, f[i].mode ? f[i].mode : 0644);
			archive_entry_set_size(e, (la_int64_t)strlen(f[i].data));
		}
		ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (f[i].data && strncmp(f[i].data, "->", 2) != 0)
			ck_assert_int_eq(archive_write_data(a, f[i].data, strlen(f[i].data)),
					 (la_ssize_t)strlen(f[i].data));
		archive_entry_free(e);
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	*ret_len = used;
	return buf;
}

struct deb_buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct deb_buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void member(struct deb_buf *b, const char *name, const void *data, size_t len)
{
	char h[61];

	snprintf(h, sizeof(h), "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "100644", len);
	put(b, h, 60);
	put(b, data, len);
	if (len % 2)
		put(b, "\n", 1);
}

static const struct file control_files[] = {
	{ "./", NULL, 0 },
	{ "./control", CONTROL, 0 },
	{ "./conffiles", "/etc/hello.conf\nremove-on-upgrade /etc/old.conf\n\n", 0 },
	{ "./md5sums", "d41d8cd98f00b204e9800998ecf8427e  usr/bin/hello\n", 0 },
	{ "./postinst", "#!/bin/sh\nexit 0\n", 0755 },
};

static const struct file data_files[] = {
	{ "./", NULL, 0 },
	{ "./usr/", NULL, 0 },
	{ "./usr/bin/", NULL, 0 },
	{ "./usr/bin/hello", "\177ELF not really", 0755 },
	{ "./usr/lib/libx.so", "->libx.so.1", 0 },
	{ "./etc/hello.conf", "greeting=hi\n", 0 },
};

/* A .deb: debian-binary, the control archive, the data archive. */
static struct deb_buf make_deb(const char *cfilter, const char *dfilter, bool extra)
{
	struct deb_buf b = { 0 };
	char cname[32], dname[32];
	size_t clen, dlen;
	uint8_t *c = make_tar(control_files, ARRAY_SIZE(control_files), cfilter, &clen);
	uint8_t *dd = make_tar(data_files, ARRAY_SIZE(data_files), dfilter, &dlen);

	snprintf(cname, sizeof(cname), "control.tar%s%s", *cfilter ? "." : "", cfilter);
	snprintf(dname, sizeof(dname), "data.tar%s%s", *dfilter ? "." : "", dfilter);
	put(&b, "!<arch>\n", 8);
	member(&b, "debian-binary", "2.0\n", 4);
	if (extra)
		member(&b, "_gpgorigin", "sig", 3);
	member(&b, cname, c, clen);
	member(&b, dname, dd, dlen);
	free(c);
	free(dd);
	return b;
}

/* Opens b, reads its data archive whole; the code of the first failure. */
static int read_deb(const uint8_t *p, size_t len, fatelf_deb_info *info, unsigned *ret_entries,
		    fatelf_diag *d)
{
	fatelf_reader src;
	fatelf_deb *deb = NULL;
	struct archive *a;
	struct archive_entry *e;
	unsigned n = 0;
	int r, ar;

	ck_assert_int_eq(fatelf_reader_mem(&src, p, len), 0);
	r = fatelf_deb_open(&src, &deb, info, d);
	if (r < 0) {
		ck_assert_ptr_null(deb);
		goto out;
	}
	r = fatelf_deb_data(deb, &a, d);
	if (r < 0)
		goto out;
	while ((ar = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		char buf[256];

		n++;
		while (archive_read_data(a, buf, sizeof(buf)) > 0)
			;
	}
	if (ar != ARCHIVE_EOF)
		r = fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1, "data: %s", archive_error_string(a));
out:
	if (r < 0)
		fatelf_deb_info_done(info);
	if (ret_entries)
		*ret_entries = n;
	fatelf_deb_free(deb);
	if (src.close)
		src.close(src.ctx);
	return r;
}

static void check_info(const fatelf_deb_info *info)
{
	ck_assert_str_eq(info->package, "hello-fat");
	ck_assert_str_eq(info->version, "1:2.10-3");
	ck_assert_str_eq(info->architecture, "arm64");
	ck_assert_str_eq(info->maintainer, "Jane Doe <jane@example.org>");
	ck_assert_str_eq(info->homepage, "https://example.org/hello");
	ck_assert_str_eq(info->summary, "greets the world");
	ck_assert_ptr_null(info->multiarch);
	ck_assert_uint_eq(info->nconffiles, 2);
	ck_assert_str_eq(info->conffiles[0], "etc/hello.conf");
	ck_assert_str_eq(info->conffiles[1], "etc/old.conf");
	ck_assert_uint_eq(info->scripts, FATELF_DEB_POSTINST);
}

START_TEST(test_every_compression)
{
	static const char *const filters[][2] = {
		{ "", "" }, { "gz", "xz" }, { "xz", "gz" }, { "zst", "zst" }, { "gz", "bz2" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(filters); i++) {
		struct deb_buf b = make_deb(filters[i][0], filters[i][1], i == 1);
		fatelf_deb_info info;
		fatelf_diag d;
		unsigned n;
		int r = read_deb(b.p, b.len, &info, &n, &d);

		ck_assert_msg(r == 0, "control.tar.%s data.tar.%s: %s", filters[i][0], filters[i][1], d.msg);
		check_info(&info);
		ck_assert_uint_eq(n, ARRAY_SIZE(data_files));
		fatelf_deb_info_done(&info);
		free(b.p);
	}
}
END_TEST

START_TEST(test_every_truncation_fails)
{
	struct deb_buf b = make_deb("gz", "xz", false);

	for (size_t len = 0; len < b.len; len++) {
		fatelf_deb_info info;
		fatelf_diag d;
		int r = read_deb(b.p, len, &info, NULL, &d);

		ck_assert_msg(r == -FATELF_E_DEB_FORMAT, "%zu of %zu bytes: %s (%s)", len, b.len,
			      fatelf_error_name(r), d.msg);
		ck_assert_ptr_null(info.package);
	}
	free(b.p);
}
END_TEST

/* A .deb with the members given, each (name, data). */
static struct deb_buf deb_of(const char *const *m, size_t n)
{
	struct deb_buf b = { 0 };

	put(&b, "!<arch>\n", 8);
	for (size_t i = 0; i + 1 < n; i += 2)
		member(&b, m[i], m[i + 1], strlen(m[i + 1]));
	return b;
}

static void expect(const uint8_t *p, size_t len, int code, const char *words)
{
	fatelf_deb_info info;
	fatelf_diag d;
	int r = read_deb(p, len, &info, NULL, &d);

	ck_assert_msg(r == code, "want %s, got %s: %s", fatelf_error_name(code), fatelf_error_name(r), d.msg);
	ck_assert_msg(strstr(d.msg, words), "\"%s\" does not say \"%s\"", d.msg, words);
	ck_assert_ptr_null(info.package);
}

START_TEST(test_container_rules)
{
	static const char *const not_first[] = { "control.tar", "x", "debian-binary", "2.0\n" };
	static const char *const v3[] = { "debian-binary", "3.0\n" };
	static const char *const order[] = { "debian-binary", "2.0\n", "data.tar", "x" };
	static const char *const only_version[] = { "debian-binary", "2.0\n" };
	static const char *const compression[] = { "debian-binary", "2.0\n", "control.tar.lz4", "x" };
	static const char *const junk[] = { "debian-binary", "2.0\n", "control.tar", "not a tar at all" };
	struct deb_buf b;
	uint8_t h[60];
	fatelf_ar_member m;
	fatelf_diag d;

	expect((const uint8_t *)"!<arch>", 7, -FATELF_E_DEB_FORMAT, "ar magic");
	expect((const uint8_t *)"PK\003\004 a zip file", 16, -FATELF_E_DEB_FORMAT, "ar magic");
	{
		static const struct {
			const char *const *m;
			size_t n;
			const char *words;
		} cases[] = {
			{ not_first, ARRAY_SIZE(not_first), "first member is not debian-binary" },
			{ v3, ARRAY_SIZE(v3), "not 2.x" },
			{ order, ARRAY_SIZE(order), "member data.tar where control.tar.* must come" },
			{ only_version, ARRAY_SIZE(only_version), "ends before its control.tar member" },
			{ compression, ARRAY_SIZE(compression), "control.tar.lz4: a compression dpkg does not write" },
			{ junk, ARRAY_SIZE(junk), "control.tar" },
		};

		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			b = deb_of(cases[i].m, cases[i].n);
			expect(b.p, b.len, -FATELF_E_DEB_FORMAT, cases[i].words);
			free(b.p);
		}
	}

	/* the header on its own */
	memcpy(h, "debian-binary/  0           0     0     100644  4         `\n", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), 0);
	ck_assert_str_eq(m.name, "debian-binary");
	ck_assert_uint_eq(m.size, 4);
	memcpy(h, "debian-binary/  0           0     0     100644  4         `x", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), -FATELF_E_DEB_FORMAT);
	memcpy(h, "/               0           0     0     100644  4         `\n", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), -FATELF_E_DEB_FORMAT);
	memcpy(h, "a/b             0           0     0     100644  4         `\n", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), -FATELF_E_DEB_FORMAT);
	memcpy(h, "debian-binary   0           0     0     100644  -4        `\n", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), -FATELF_E_DEB_FORMAT);
	memcpy(h, "debian-binary   0           0     0     100644  4 4       `\n", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), -FATELF_E_DEB_FORMAT);
	memcpy(h, "debian-binary   0           0     0     100644  9999999999`\n", 60);
	ck_assert_int_eq(fatelf_ar_header_parse(h, &m, &d), 0);
	ck_assert_uint_eq(m.size, 9999999999ull);
}
END_TEST

/* A control file's verdict: the code, and words of the message. */
static void control_expect(const char *text, int code, const char *words)
{
	fatelf_deb_info info;
	fatelf_diag d = { 0 };
	int r = fatelf_deb_control_parse(text, strlen(text), &info, &d);

	ck_assert_msg(r == code, "%s: want %s, got %s: %s", text, fatelf_error_name(code),
		      fatelf_error_name(r), d.msg);
	if (code == 0) {
		ck_assert_str_eq(info.package, "a1");
		fatelf_deb_info_done(&info);
		return;
	}
	ck_assert_msg(strstr(d.msg, words), "\"%s\" does not say \"%s\"", d.msg, words);
	ck_assert_ptr_null(info.package);
}

START_TEST(test_control_rules)
{
	fatelf_deb_info info;
	fatelf_diag d;
	const char *t =
		"# made by hand\n"
		"package:a1\n"
		"VERSION:   0.1  \n"
		"Architecture: all\n"
		"Description: one\n"
		"\ttwo\n"
		"Multi-Arch: same\n"
		"\n\n";

	ck_assert_int_eq(fatelf_deb_control_parse(t, strlen(t), &info, &d), 0);
	ck_assert_str_eq(info.package, "a1");
	ck_assert_str_eq(info.version, "0.1");
	ck_assert_str_eq(info.summary, "one");
	ck_assert_str_eq(info.multiarch, "same");
	fatelf_deb_info_done(&info);

	control_expect("Package: a1\nVersion: 1\nArchitecture: all", 0, NULL);
	control_expect("Version: 1\nArchitecture: all\n", -FATELF_E_DEB_CONTROL, "no Package field");
	control_expect("Package: a1\nArchitecture: all\n", -FATELF_E_DEB_CONTROL, "no Version field");
	control_expect("Package: a1\nVersion: 1\n", -FATELF_E_DEB_CONTROL, "no Architecture field");
	control_expect("Package: a1\nVersion: 1\nArchitecture: all\npackage: b\n", -FATELF_E_DEB_CONTROL,
		       "line 4: a field given twice");
	control_expect(" x\nPackage: a1\n", -FATELF_E_DEB_CONTROL, "line 1: a continuation line before any field");
	control_expect("Package: a1\nVersion: 1\nArchitecture: all\n\nPackage: b\n", -FATELF_E_DEB_CONTROL,
		       "line 5: a second stanza");
	control_expect("Package: a1\n x\n", -FATELF_E_DEB_CONTROL, "the Package field must be one line");
	control_expect("Package a1\n", -FATELF_E_DEB_CONTROL, "not \"Field: value\"");
	control_expect(": a1\n", -FATELF_E_DEB_CONTROL, "field name is empty");
	control_expect("-X: a1\n", -FATELF_E_DEB_CONTROL, "starts with '-'");
	control_expect("Pack age: a1\n", -FATELF_E_DEB_CONTROL, "printable ASCII");
	control_expect("Package: a\0011\n", -FATELF_E_DEB_CONTROL, "control character");
	control_expect("Package: a\3771\n", -FATELF_E_DEB_CONTROL, "not UTF-8");
	control_expect("Package: A1\nVersion: 1\nArchitecture: all\n", -FATELF_E_PKG_NAME, "package name");
	control_expect("Package: a1\nVersion: 1:\nArchitecture: all\n", -FATELF_E_PKG_VERSION, "version");
}
END_TEST

START_TEST(test_conffiles_rules)
{
	fatelf_deb_info info = { 0 };
	fatelf_diag d;
	const char *ok = "/etc/a\n\n  \nremove-on-upgrade   /etc/b  \n/etc/c d";

	ck_assert_int_eq(fatelf_deb_conffiles_parse(ok, strlen(ok), &info, &d), 0);
	ck_assert_uint_eq(info.nconffiles, 3);
	ck_assert_str_eq(info.conffiles[0], "etc/a");
	ck_assert_str_eq(info.conffiles[1], "etc/b");
	ck_assert_str_eq(info.conffiles[2], "etc/c d");
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("etc/a\n", 6, &info, &d), -FATELF_E_DEB_CONTROL);
	ck_assert_ptr_nonnull(strstr(d.msg, "conffiles line 1"));
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("/a\nkeep /etc/b\n", 15, &info, &d), -FATELF_E_DEB_CONTROL);
	ck_assert_ptr_nonnull(strstr(d.msg, "conffiles line 2"));
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("/\n", 2, &info, &d), -FATELF_E_DEB_CONTROL);
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("/a\tb\n", 5, &info, &d), -FATELF_E_DEB_CONTROL);
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("//etc/a\n", 8, &info, &d), -FATELF_E_DEB_CONTROL);
	ck_assert_ptr_nonnull(strstr(d.msg, "conffiles line 1: the path '/etc/a' is absolute"));
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("/etc/../a\n", 10, &info, &d), -FATELF_E_DEB_CONTROL);
	fatelf_deb_info_done(&info);
	ck_assert_int_eq(fatelf_deb_conffiles_parse("/etc/a/\n", 8, &info, &d), -FATELF_E_DEB_CONTROL);
	fatelf_deb_info_done(&info);
}
END_TEST

static void write_text(const char *path, const char *text, mode_t mode)
{
	tu_write_file(path, text, strlen(text));
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* dpkg-deb --build's own package, read as it streams out of cat. */
START_TEST(test_dpkg_deb_from_pipe)
{
	char dir[512], cmd[1536], path[600];
	fatelf_deb_info info;
	fatelf_deb *deb = NULL;
	fatelf_reader src;
	struct archive *a;
	struct archive_entry *e;
	fatelf_diag d;
	bool saw_conf = false;
	int p[2], st;
	pid_t pid;

	if (system("command -v dpkg-deb >/dev/null 2>&1") != 0) {
		fprintf(stderr, "# SKIP: dpkg-deb is not installed\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/debpkg", tu_tmpdir());
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s/DEBIAN %s/etc %s/usr/share/doc/x", dir, dir, dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/DEBIAN/control", dir);
	write_text(path, "Package: x-deb\nVersion: 2.0-1\nArchitecture: amd64\nMaintainer: M <m@x>\n"
		   "Description: a test\n more\n", 0644);
	snprintf(path, sizeof(path), "%s/DEBIAN/conffiles", dir);
	write_text(path, "/etc/x.conf\n", 0644);
	snprintf(path, sizeof(path), "%s/DEBIAN/prerm", dir);
	write_text(path, "#!/bin/sh\n", 0755);
	snprintf(path, sizeof(path), "%s/etc/x.conf", dir);
	write_text(path, "k=v\n", 0644);
	snprintf(path, sizeof(path), "%s/usr/share/doc/x/README", dir);
	write_text(path, "read me\n", 0644);
	snprintf(cmd, sizeof(cmd), "dpkg-deb -Zxz --root-owner-group --build %s %s.deb >/dev/null", dir, dir);
	ck_assert_int_eq(system(cmd), 0);

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		snprintf(path, sizeof(path), "%s.deb", dir);
		dup2(p[1], 1);
		close(p[0]);
		execlp("cat", "cat", path, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ck_assert_int_eq(fatelf_reader_fd(&src, p[0], NULL), 0);
	ck_assert_ptr_null(src.pread);
	ck_assert_msg(fatelf_deb_open(&src, &deb, &info, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(info.package, "x-deb");
	ck_assert_str_eq(info.version, "2.0-1");
	ck_assert_str_eq(info.architecture, "amd64");
	ck_assert_str_eq(info.summary, "a test");
	ck_assert_uint_eq(info.nconffiles, 1);
	ck_assert_str_eq(info.conffiles[0], "etc/x.conf");
	ck_assert_uint_eq(info.scripts, FATELF_DEB_PRERM);
	ck_assert_str_eq(fatelf_deb_script_name(2), "prerm");
	ck_assert_msg(fatelf_deb_data(deb, &a, &d) == 0, "%s", d.msg);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		char buf[64];
		la_ssize_t n = archive_read_data(a, buf, sizeof(buf) - 1);

		if (strcmp(archive_entry_pathname(e), "./etc/x.conf") == 0) {
			ck_assert_int_eq(n, 4);
			buf[n] = 0;
			ck_assert_str_eq(buf, "k=v\n");
			saw_conf = true;
		}
	}
	ck_assert(saw_conf);
	fatelf_deb_info_done(&info);
	fatelf_deb_free(deb);
	src.close(src.ctx);
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
}
END_TEST

static Suite *deb_suite(void)
{
	Suite *s = suite_create("deb");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_compression);
	tcase_add_test(tc, test_every_truncation_fails);
	tcase_add_test(tc, test_container_rules);
	tcase_add_test(tc, test_control_rules);
	tcase_add_test(tc, test_conffiles_rules);
	tcase_add_test(tc, test_dpkg_deb_from_pipe);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(deb_suite());
}
