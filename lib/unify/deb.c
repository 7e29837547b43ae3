/*
 * Debian binary packages, read as a stream (deb(5)): an ar archive of
 * "debian-binary", the control archive and the data archive, with
 * members named "_..." allowed between them and skipped. The facts of
 * the format are from deb(5) and deb-control(5); the rules are stricter
 * than dpkg's wherever dpkg only warns.
 */
#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "deb.h"
#include "macro.h"
#include "text.h"

#define AR_MAGIC "!<arch>\n"
#define AR_MAGIC_LEN 8

static const char *const script_names[FATELF_DEB_SCRIPTS] = {
	"preinst", "postinst", "prerm", "postrm", "config", "triggers",
};

const char *fatelf_deb_script_name(unsigned i)
{
	return i < FATELF_DEB_SCRIPTS ? script_names[i] : NULL;
}

/* ------------------------------------------------------------ ar headers */

static int ar_fail(fatelf_diag *d, const char *what)
{
	return fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1, "%s", what);
}

int fatelf_ar_header_parse(const uint8_t h[FATELF_AR_HEADER], fatelf_ar_member *ret,
			   fatelf_diag *d)
{
	/* name[16] mtime[12] uid[6] gid[6] mode[8] size[10] "`\n" */
	const uint8_t *name = h, *size = h + 48;
	size_t nlen = FATELF_AR_NAME_MAX;
	uint64_t v = 0;
	size_t i;

	memset(ret, 0, sizeof(*ret));
	if (h[58] != '`' || h[59] != '\n')
		return ar_fail(d, "an ar member header does not end in \"`\\n\"");
	while (nlen > 0 && name[nlen - 1] == ' ')
		nlen--;
	if (nlen > 0 && name[nlen - 1] == '/')
		nlen--;
	if (nlen == 0)
		return ar_fail(d, "an ar member has no name (long-name tables are not part of a .deb)");
	for (i = 0; i < nlen; i++)
		if (name[i] <= 0x20 || name[i] >= 0x7f || name[i] == '/')
			return ar_fail(d, "an ar member name holds a byte other than printable ASCII without '/'");
	memcpy(ret->name, name, nlen);
	ret->name[nlen] = 0;
	for (i = 0; i < 10 && fatelf_text_is_digit((char)size[i]); i++)
		v = v * 10 + (uint64_t)(size[i] - '0');
	if (i == 0)
		return ar_fail(d, "an ar member's size is not a decimal number");
	for (; i < 10; i++)
		if (size[i] != ' ')
			return ar_fail(d, "an ar member's size is not a decimal number");
	ret->size = v;
	return 0;
}

/* ------------------------------------------------------------ the control file */

void fatelf_deb_info_done(fatelf_deb_info *info)
{
	if (!info)
		return;
	free(info->package);
	free(info->version);
	free(info->architecture);
	free(info->maintainer);
	free(info->homepage);
	free(info->summary);
	free(info->multiarch);
	free(info->depends);
	for (size_t i = 0; i < info->nconffiles; i++)
		free(info->conffiles[i]);
	free(info->conffiles);
	memset(info, 0, sizeof(*info));
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The first byte of s[0..len) that is not text (a control character other
 * than tab, or not UTF-8), or len. */
static size_t text_bad_at(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t k;

		if (s[i] == '\t') {
			i++;
			continue;
		}
		k = fatelf_text_utf8_decode((const uint8_t *)s + i, len - i, &cp);
		if (k == 0 || fatelf_text_is_control(cp))
			return i;
		i += k;
	}
	return len;
}

/* The fields this reader keeps; the rest are read and checked, then
 * dropped. */
struct field_slot {
	const char *name;
	size_t offset;
	bool multiline;         /* continuation lines allowed (the first line is kept) */
	bool fold;              /* continuation lines joined to the first by a space */
};

static const struct field_slot known_fields[] = {
	{ "Package", offsetof(fatelf_deb_info, package), false, false },
	{ "Version", offsetof(fatelf_deb_info, version), false, false },
	{ "Architecture", offsetof(fatelf_deb_info, architecture), false, false },
	{ "Maintainer", offsetof(fatelf_deb_info, maintainer), false, false },
	{ "Homepage", offsetof(fatelf_deb_info, homepage), false, false },
	{ "Description", offsetof(fatelf_deb_info, summary), true, false },
	{ "Multi-Arch", offsetof(fatelf_deb_info, multiarch), false, false },
	{ "Depends", offsetof(fatelf_deb_info, depends), true, true },
};

#define FIELDS_MAX 256
#define FIELD_NAME_MAX 128

static int control_fail(fatelf_diag *d, size_t line, const char *what)
{
	return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1, "control line %zu: %s", line, what);
}

/* A control file's reading, line by line. */
struct control_reader {
	fatelf_deb_info *info;
	fatelf_diag *d;
	char names[FIELDS_MAX][FIELD_NAME_MAX + 1];     /* the fields so far */
	size_t nnames;
	const struct field_slot *cur;   /* the field being read, if kept */
	bool ended, any;
};

/* A continuation line (l[k] its first non-blank byte): the field's, if it
 * may have one; a folded field gets it joined by a space. */
static int control_continuation(struct control_reader *c, const char *l, size_t n, size_t k, size_t line)
{
	const struct field_slot *cur = c->cur;
	char **slot, *grown;
	size_t have, e = n;

	if (!c->any)
		return control_fail(c->d, line, "a continuation line before any field");
	if (cur && !cur->multiline) {
		char msg[96];

		snprintf(msg, sizeof(msg), "the %s field must be one line", cur->name);
		return control_fail(c->d, line, msg);
	}
	if (!cur || !cur->fold)
		return 0;
	slot = (char **)((char *)c->info + cur->offset);
	have = strlen(*slot);
	while (e > k && is_blank(l[e - 1]))
		e--;
	/* Bounded by the control file's limit. */
	grown = realloc(*slot, have + 1 + (e - k) + 1);
	if (!grown)
		return fatelf_diag_oom(c->d);
	grown[have] = ' ';
	memcpy(grown + have + 1, l + k, e - k);
	grown[have + 1 + (e - k)] = 0;
	*slot = grown;
	return 0;
}

/* "Name: value": a field name of printable ASCII, given once; a field
 * this reader keeps gets its value, trimmed. */
static int control_field(struct control_reader *c, const char *l, size_t n, size_t line)
{
	const char *v = memchr(l, ':', n), *ve;
	size_t name_len, k;

	if (!v)
		return control_fail(c->d, line, "not \"Field: value\" and not a continuation line");
	name_len = (size_t)(v - l);
	if (name_len == 0 || name_len > FIELD_NAME_MAX || l[0] == '-')
		return control_fail(c->d, line, "a field name is empty, over 128 bytes, or starts with '-'");
	for (k = 0; k < name_len; k++)
		if ((unsigned char)l[k] <= 0x20 || (unsigned char)l[k] >= 0x7f)
			return control_fail(c->d, line, "a field name holds a byte other than printable ASCII");
	for (k = 0; k < c->nnames; k++)
		if (strlen(c->names[k]) == name_len && strncasecmp(c->names[k], l, name_len) == 0)
			return control_fail(c->d, line, "a field given twice");
	if (c->nnames == FIELDS_MAX)
		return control_fail(c->d, line, "more than 256 fields");
	memcpy(c->names[c->nnames], l, name_len);
	c->names[c->nnames++][name_len] = 0;
	c->any = true;
	v++;
	ve = l + n;
	while (v < ve && is_blank(*v))
		v++;
	while (ve > v && is_blank(ve[-1]))
		ve--;
	c->cur = NULL;
	for (k = 0; k < ARRAY_SIZE(known_fields); k++)
		if (strlen(known_fields[k].name) == name_len && strncasecmp(known_fields[k].name, l, name_len) == 0)
			c->cur = &known_fields[k];
	if (c->cur) {
		char **slot = (char **)((char *)c->info + c->cur->offset);

		*slot = strndup(v, (size_t)(ve - v));
		if (!*slot)
			return fatelf_diag_oom(c->d);
	}
	return 0;
}

/* One line of n bytes: text, then blank (the stanza's end), a comment, a
 * continuation or a field. */
static int control_line(struct control_reader *c, const char *l, size_t n, size_t line)
{
	size_t k;

	if (text_bad_at(l, n) < n)
		return control_fail(c->d, line, "a control character or a byte that is not UTF-8");
	for (k = 0; k < n && is_blank(l[k]); k++)
		;
	if (k == n) {           /* a blank line ends the stanza */
		if (c->any)
			c->ended = true;
		c->cur = NULL;
		return 0;
	}
	if (l[0] == '#')        /* a comment, as dpkg reads them */
		return 0;
	if (c->ended)
		return control_fail(c->d, line, "a second stanza; a binary package's control file has one");
	if (is_blank(l[0]))     /* a continuation line */
		return control_continuation(c, l, n, k, line);
	return control_field(c, l, n, line);
}

/* The fields every binary package has, and its name and version by
 * dpkg's rules. */
static int control_check(const fatelf_deb_info *info, fatelf_diag *d)
{
	char buf[128], q[FATELF_TEXT_QUOTE_BUF];
	const char *why;

	if (!info->package || !info->package[0])
		return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1, "the control file has no Package field");
	if (!info->version || !info->version[0])
		return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1, "the control file has no Version field");
	if (!info->architecture || !info->architecture[0])
		return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1, "the control file has no Architecture field");
	why = fatelf_pkg_name_problem(info->package, strlen(info->package), buf, sizeof(buf));
	if (why)
		return fatelf_diag_set(d, -FATELF_E_PKG_NAME, -1, "control: the package name '%s' %s",
				       fatelf_text_quote(info->package, q), why);
	if (!fatelf_pkg_version_valid(info->version))
		return fatelf_diag_set(d, -FATELF_E_PKG_VERSION, -1,
				       "control: the version '%s' is not [epoch:]upstream[-revision] as dpkg reads it",
				       fatelf_text_quote(info->version, q));
	return 0;
}

int fatelf_deb_control_parse(const char *s, size_t len, fatelf_deb_info *ret, fatelf_diag *d)
{
	struct control_reader c = { .info = ret, .d = d };
	size_t line = 0, pos = 0;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (len > FATELF_DEB_CONTROL_MAX)
		return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
				       "the control file is %zu bytes, over the limit of %u", len,
				       FATELF_DEB_CONTROL_MAX);
	while (pos < len && r == 0) {
		const char *l = s + pos, *nl = memchr(l, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - l) : len - pos;

		pos += n + (nl ? 1 : 0);
		r = control_line(&c, l, n, ++line);
	}
	if (r == 0)
		r = control_check(ret, d);
	if (r < 0)
		fatelf_deb_info_done(ret);
	return r;
}

int fatelf_deb_conffiles_parse(const char *s, size_t len, fatelf_deb_info *ret, fatelf_diag *d)
{
	static const char flag[] = "remove-on-upgrade";
	size_t pos = 0, line = 0;

	if (len > FATELF_DEB_CONTROL_MAX)
		return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
				       "conffiles is %zu bytes, over the limit of %u", len, FATELF_DEB_CONTROL_MAX);
	while (pos < len) {
		const char *l = s + pos, *nl = memchr(l, '\n', len - pos), *p, *e;
		size_t n = nl ? (size_t)(nl - l) : len - pos;
		char rule[FATELF_PATH_RULE_MAX], q[FATELF_TEXT_QUOTE_BUF];
		char **v;

		pos += n + (nl ? 1 : 0);
		line++;
		p = l;
		e = l + n;
		while (e > p && is_blank(e[-1]))
			e--;
		if (e == p)
			continue;
		if (text_bad_at(p, (size_t)(e - p)) < (size_t)(e - p) || memchr(p, '\t', (size_t)(e - p)))
			return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
					       "conffiles line %zu: a control character or a byte that is not UTF-8",
					       line);
		if ((size_t)(e - p) > sizeof(flag) && memcmp(p, flag, sizeof(flag) - 1) == 0 &&
		    p[sizeof(flag) - 1] == ' ') {
			p += sizeof(flag);
			while (p < e && *p == ' ')
				p++;
		}
		if (p == e || *p != '/' || e - p < 2)
			return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
					       "conffiles line %zu: not an absolute path, nor \"remove-on-upgrade\" and one",
					       line);
		if (ret->nconffiles == FATELF_DEB_CONFFILES_MAX)
			return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
					       "conffiles line %zu: more than %u conffiles", line,
					       FATELF_DEB_CONFFILES_MAX);
		v = reallocarray(ret->conffiles, ret->nconffiles + 1, sizeof(*v));
		if (!v)
			return fatelf_diag_oom(d);
		ret->conffiles = v;
		v[ret->nconffiles] = strndup(p + 1, (size_t)(e - p - 1));
		if (!v[ret->nconffiles])
			return fatelf_diag_oom(d);
		ret->nconffiles++;
		/* the path rules of a bundle entry, on the path below "/" */
		if (fatelf_path_rule(v[ret->nconffiles - 1], NULL, rule) < 0)
			return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
					       "conffiles line %zu: the path '%s' %s", line,
					       fatelf_text_quote(v[ret->nconffiles - 1], q), rule);
	}
	return 0;
}

/* ------------------------------------------------------------ the stream */

struct fatelf_deb {
	const fatelf_reader *src;
	const uint8_t *buf;     /* bytes read from src and not used yet */
	size_t len;
	uint64_t left;          /* bytes of the current member not handed out */
	bool pad;               /* an odd-sized member: one byte of padding follows it */
	struct archive *a;      /* the archive of the current member */
	fatelf_diag *d;
	char member[FATELF_AR_NAME_MAX + 1];
};

/* Makes bytes available in deb->buf: 1, 0 at the end of src, or -errno. */
static int pull(fatelf_deb *deb)
{
	ssize_t n;

	if (deb->len > 0)
		return 1;
	n = deb->src->read(deb->src->ctx, (const void **)&deb->buf);
	if (n < 0)
		return (int)n;
	deb->len = (size_t)n;
	return n > 0;
}

/* Reads n bytes into out: n, fewer at the end of src, or -errno. */
static ssize_t take(fatelf_deb *deb, void *out, size_t n)
{
	size_t got = 0;

	while (got < n) {
		int r = pull(deb);
		size_t k;

		if (r < 0)
			return r;
		if (r == 0)
			break;
		k = MIN(n - got, deb->len);
		memcpy((uint8_t *)out + got, deb->buf, k);
		deb->buf += k;
		deb->len -= k;
		got += k;
	}
	return (ssize_t)got;
}

static int stream_fail(fatelf_deb *deb, int r, const char *what)
{
	if (r < 0)
		return fatelf_diag_set(deb->d, r, -1, "%s: %s", what, strerror(-r));
	return fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "the .deb ends early, %s", what);
}

/* Drops what is left of the current member and its padding. */
static int member_skip(fatelf_deb *deb)
{
	uint64_t n = deb->left + (deb->pad ? 1 : 0);

	while (n > 0) {
		int r = pull(deb);
		size_t k;

		if (r <= 0)
			return stream_fail(deb, r, "in a member");
		k = (size_t)MIN((uint64_t)deb->len, n);
		deb->buf += k;
		deb->len -= k;
		n -= k;
	}
	deb->left = 0;
	deb->pad = false;
	return 0;
}

/* The next member's header: 1, 0 at the end of the archive, or a code. */
static int member_next(fatelf_deb *deb, fatelf_ar_member *m)
{
	uint8_t h[FATELF_AR_HEADER];
	ssize_t n;
	int r;

	r = member_skip(deb);
	if (r < 0)
		return r;
	n = take(deb, h, sizeof(h));
	if (n == 0)
		return 0;
	if (n < (ssize_t)sizeof(h))
		return stream_fail(deb, n < 0 ? (int)n : 0, "in an ar member header");
	r = fatelf_ar_header_parse(h, m, deb->d);
	if (r < 0)
		return r;
	deb->left = m->size;
	deb->pad = m->size % 2 == 1;
	memcpy(deb->member, m->name, sizeof(deb->member));
	return 1;
}

/* libarchive's read callback over the current member. */
static la_ssize_t member_read(struct archive *a, void *ctx, const void **ret_buf)
{
	fatelf_deb *deb = ctx;
	size_t k;
	int r;

	if (deb->left == 0)
		return 0;
	r = pull(deb);
	if (r <= 0) {
		archive_set_error(a, r < 0 ? -r : EIO, "the .deb ends inside member %s", deb->member);
		return -1;
	}
	k = (size_t)MIN((uint64_t)deb->len, deb->left);
	*ret_buf = deb->buf;
	deb->buf += k;
	deb->len -= k;
	deb->left -= k;
	return (la_ssize_t)k;
}

/* The filter a member name's suffix names: "control.tar.xz" -> xz. */
static int member_archive(fatelf_deb *deb, const char *base, bool data)
{
	size_t bl = strlen(base);
	const char *suffix = deb->member + bl;
	int (*filter)(struct archive *) = NULL;
	struct archive *a;

	if (strcmp(suffix, "") == 0)
		filter = NULL;
	else if (strcmp(suffix, ".gz") == 0)
		filter = archive_read_support_filter_gzip;
	else if (strcmp(suffix, ".xz") == 0)
		filter = archive_read_support_filter_xz;
	else if (strcmp(suffix, ".zst") == 0)
		filter = archive_read_support_filter_zstd;
	else if (data && strcmp(suffix, ".bz2") == 0)
		filter = archive_read_support_filter_bzip2;
	else if (data && strcmp(suffix, ".lzma") == 0)
		filter = archive_read_support_filter_lzma;
	else
		return fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1,
				       "member %s: a compression dpkg does not write there", deb->member);
	a = archive_read_new();
	if (!a)
		return fatelf_diag_oom(deb->d);
	if ((filter && filter(a) != ARCHIVE_OK) || archive_read_support_format_tar(a) != ARCHIVE_OK) {
		archive_read_free(a);
		return fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1,
				       "member %s: this libarchive cannot read it", deb->member);
	}
	if (archive_read_open(a, deb, NULL, member_read, NULL) != ARCHIVE_OK) {
		char q[FATELF_TEXT_QUOTE_BUF];
		int r = fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "member %s: %s", deb->member,
					fatelf_text_quote(archive_error_string(a) ? archive_error_string(a) : "unreadable", q));

		archive_read_free(a);
		return r;
	}
	archive_read_free(deb->a);
	deb->a = a;
	return 0;
}

/* Skips "_..." members; *m is then the next other one. */
static int member_next_main(fatelf_deb *deb, fatelf_ar_member *m, const char *want)
{
	for (;;) {
		int r = member_next(deb, m);

		if (r < 0)
			return r;
		if (r == 0)
			return fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1,
					       "the .deb ends before its %s member", want);
		if (m->name[0] != '_')
			return 0;
	}
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The whole data of the current entry of deb->a, at most max bytes. */
static int entry_slurp(fatelf_deb *deb, struct archive_entry *e, const char *what, char **ret,
		       size_t *ret_len)
{
	la_int64_t size = archive_entry_size(e);
	char *buf;
	la_ssize_t n;
	size_t got = 0;

	if (archive_entry_filetype(e) != AE_IFREG)
		return fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "%s: %s is not a regular file",
				       deb->member, what);
	if (size < 0 || (uint64_t)size > FATELF_DEB_CONTROL_MAX)
		return fatelf_diag_set(deb->d, -FATELF_E_DEB_CONTROL, -1,
				       "%s: %s is over the limit of %u bytes", deb->member, what,
				       FATELF_DEB_CONTROL_MAX);
	buf = malloc((size_t)size + 1);
	if (!buf)
		return fatelf_diag_oom(deb->d);
	while ((n = archive_read_data(deb->a, buf + got, (size_t)size - got)) > 0)
		got += (size_t)n;
	if (n < 0 || got != (size_t)size) {
		char q[FATELF_TEXT_QUOTE_BUF];
		const char *es = n < 0 ? archive_error_string(deb->a) : NULL;

		free(buf);
		return fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "%s: reading %s: %s", deb->member,
				       what, fatelf_text_quote(es ? es : "short", q));
	}
	buf[got] = 0;
	*ret = buf;
	*ret_len = got;
	return 0;
}

static int control_read(fatelf_deb *deb, fatelf_deb_info *info)
{
	struct archive_entry *e;
	bool have_control = false;
	char *conffiles = NULL;
	size_t conffiles_len = 0;
	unsigned scripts = 0;
	int ar, r;

	while ((ar = archive_read_next_header(deb->a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		char *text;
		size_t len;

		if (!name)
			continue;
		if (has_prefix(name, "./"))
			name += 2;
		if (strcmp(name, "control") == 0) {
			if (have_control) {
				r = fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "%s: two control files",
						    deb->member);
				goto fail;
			}
			r = entry_slurp(deb, e, "control", &text, &len);
			if (r < 0)
				goto fail;
			r = fatelf_deb_control_parse(text, len, info, deb->d);
			free(text);
			if (r < 0)
				goto fail;
			have_control = true;
		} else if (strcmp(name, "conffiles") == 0) {
			if (conffiles) {
				r = fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "%s: two conffiles",
						    deb->member);
				goto fail;
			}
			r = entry_slurp(deb, e, "conffiles", &conffiles, &conffiles_len);
			if (r < 0)
				goto fail;
		} else {
			for (unsigned i = 0; i < FATELF_DEB_SCRIPTS; i++)
				if (strcmp(name, script_names[i]) == 0)
					scripts |= 1u << i;
		}
	}
	if (ar != ARCHIVE_EOF) {
		char q[FATELF_TEXT_QUOTE_BUF];
		const char *es = archive_error_string(deb->a);

		r = fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "%s: %s", deb->member,
				    fatelf_text_quote(es ? es : "unreadable", q));
		goto fail;
	}
	if (!have_control) {
		r = fatelf_diag_set(deb->d, -FATELF_E_DEB_FORMAT, -1, "%s holds no control file", deb->member);
		goto fail;
	}
	if (conffiles) {
		r = fatelf_deb_conffiles_parse(conffiles, conffiles_len, info, deb->d);
		if (r < 0)
			goto fail;
	}
	info->scripts = scripts;
	free(conffiles);
	return 0;
fail:
	free(conffiles);
	fatelf_deb_info_done(info);
	return r;
}

int fatelf_deb_open(const fatelf_reader *src, fatelf_deb **ret, fatelf_deb_info *ret_info,
		    fatelf_diag *d)
{
	fatelf_deb *deb;
	fatelf_ar_member m;
	char magic[AR_MAGIC_LEN], version[16];
	ssize_t n;
	int r;

	fatelf_diag_clear(d);
	memset(ret_info, 0, sizeof(*ret_info));
	*ret = NULL;
	if (!src->read)
		return fatelf_diag_set(d, -EINVAL, -1, "the source cannot be read as a stream");
	deb = calloc(1, sizeof(*deb));
	if (!deb)
		return fatelf_diag_oom(d);
	deb->src = src;
	deb->d = d;
	n = take(deb, magic, sizeof(magic));
	if (n < 0) {
		r = stream_fail(deb, (int)n, "reading the ar magic");
		goto fail;
	}
	if (n < (ssize_t)sizeof(magic) || memcmp(magic, AR_MAGIC, AR_MAGIC_LEN) != 0) {
		r = fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1, "not a .deb: no ar magic \"!<arch>\"");
		goto fail;
	}
	r = member_next(deb, &m);
	if (r < 0)
		goto fail;
	if (r == 0 || strcmp(m.name, "debian-binary") != 0) {
		r = fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1, "not a .deb: the first member is not debian-binary");
		goto fail;
	}
	if (m.size < 4 || m.size > sizeof(version)) {
		r = fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1, "debian-binary is %llu bytes, not a version line",
				    (unsigned long long)m.size);
		goto fail;
	}
	n = take(deb, version, (size_t)m.size);
	if (n != (ssize_t)m.size) {
		r = stream_fail(deb, n < 0 ? (int)n : 0, "in debian-binary");
		goto fail;
	}
	deb->left = 0;
	/* "2.0\n"; later minor numbers and lines are allowed */
	if (version[0] != '2' || version[1] != '.' || !fatelf_text_is_digit(version[2])) {
		r = fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1,
				    "debian-binary: format version is not 2.x (deb(5) format 2 only)");
		goto fail;
	}
	r = member_next_main(deb, &m, "control.tar");
	if (r < 0)
		goto fail;
	if (!has_prefix(m.name, "control.tar")) {
		r = fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1,
				    "member %s where control.tar.* must come (deb(5) member order)", m.name);
		goto fail;
	}
	r = member_archive(deb, "control.tar", false);
	if (r < 0)
		goto fail;
	r = control_read(deb, ret_info);
	if (r < 0)
		goto fail;
	archive_read_free(deb->a);
	deb->a = NULL;
	*ret = deb;
	return 0;
fail:
	fatelf_deb_free(deb);
	return r;
}

int fatelf_deb_data(fatelf_deb *deb, struct archive **ret, fatelf_diag *d)
{
	fatelf_ar_member m;
	int r;

	deb->d = d;
	r = member_next_main(deb, &m, "data.tar");
	if (r < 0)
		return r;
	if (!has_prefix(m.name, "data.tar"))
		return fatelf_diag_set(d, -FATELF_E_DEB_FORMAT, -1,
				       "member %s where data.tar.* must come (deb(5) member order)", m.name);
	r = member_archive(deb, "data.tar", true);
	if (r < 0)
		return r;
	*ret = deb->a;
	return 0;
}

void fatelf_deb_free(fatelf_deb *deb)
{
	if (!deb)
		return;
	archive_read_free(deb->a);
	free(deb);
}

/* Depends relations */

void fatelf_deb_relations_free(fatelf_deb_relation *rel, size_t n)
{
	for (size_t i = 0; rel && i < n; i++) {
		free(rel[i].text);
		free(rel[i].name);
		free(rel[i].version);
	}
	free(rel);
}

/* Reads one relation [p, e) (trimmed, no ','); fills name, op and
 * version when it is one package, leaves them NULL otherwise. */
static int relation_read(const char *p, const char *e, fatelf_deb_relation *rel)
{
	static const struct { const char *t; int op; } ops[] = {
		{ "<<", FATELF_DEP_LT }, { "<=", FATELF_DEP_LE }, { ">=", FATELF_DEP_GE },
		{ ">>", FATELF_DEP_GT }, { "=", FATELF_DEP_EQ }, { "<", FATELF_DEP_LE }, { ">", FATELF_DEP_GE },
	};
	const char *n = p, *ne, *vs, *ve;
	char why[160];
	int op = FATELF_DEP_ANY;

	if (memchr(p, '|', (size_t)(e - p)))
		return 0;
	while (p < e && !is_blank(*p) && *p != '(' && *p != ':')
		p++;
	ne = p;
	if (fatelf_pkg_name_problem(n, (size_t)(ne - n), why, sizeof(why)))
		return 0;
	if (p < e && *p == ':') {               /* an architecture qualifier */
		p++;
		while (p < e && (isalnum((unsigned char)*p) || *p == '-'))
			p++;
	}
	while (p < e && is_blank(*p))
		p++;
	if (p < e) {
		size_t k;

		if (*p != '(' || e[-1] != ')')
			return 0;
		p++;
		while (p < e && is_blank(*p))
			p++;
		for (k = 0; k < ARRAY_SIZE(ops); k++)
			if ((size_t)(e - p) >= strlen(ops[k].t) && memcmp(p, ops[k].t, strlen(ops[k].t)) == 0)
				break;
		if (k == ARRAY_SIZE(ops))
			return 0;
		op = ops[k].op;
		p += strlen(ops[k].t);
		while (p < e && is_blank(*p))
			p++;
		vs = p;
		ve = e - 1;
		while (ve > vs && is_blank(ve[-1]))
			ve--;
		if (ve == vs || ve - vs > 255 || memchr(vs, ' ', (size_t)(ve - vs)) || memchr(vs, '\t', (size_t)(ve - vs)))
			return 0;
		rel->version = strndup(vs, (size_t)(ve - vs));
		if (!rel->version)
			return -ENOMEM;
		if (!fatelf_pkg_version_valid(rel->version)) {
			free(rel->version);
			rel->version = NULL;
			return 0;
		}
	}
	rel->name = strndup(n, (size_t)(ne - n));
	if (!rel->name)
		return -ENOMEM;
	rel->op = op;
	return 0;
}

int fatelf_deb_depends_parse(const char *field, fatelf_deb_relation **ret, size_t *ret_n, fatelf_diag *d)
{
	fatelf_deb_relation *rel = NULL;
	size_t n = 0, len = field ? strlen(field) : 0, pos = 0;
	int r;

	while (pos < len) {
		const char *p = field + pos, *comma = memchr(p, ',', len - pos);
		const char *e = comma ? comma : field + len;
		fatelf_deb_relation *grown;

		pos = (size_t)(e - field) + (comma ? 1 : 0);
		while (p < e && is_blank(*p))
			p++;
		while (e > p && is_blank(e[-1]))
			e--;
		if (p == e)
			continue;
		if (n == FATELF_DEB_RELATIONS_MAX) {
			fatelf_deb_relations_free(rel, n);
			return fatelf_diag_set(d, -FATELF_E_DEB_CONTROL, -1,
					       "control: Depends has more than %d relations", FATELF_DEB_RELATIONS_MAX);
		}
		grown = realloc(rel, (n + 1) * sizeof(*rel));
		if (!grown) {
			fatelf_deb_relations_free(rel, n);
			return fatelf_diag_oom(d);
		}
		rel = grown;
		memset(&rel[n], 0, sizeof(rel[n]));
		rel[n].text = strndup(p, (size_t)(e - p));
		n++;
		r = rel[n - 1].text ? relation_read(p, e, &rel[n - 1]) : -ENOMEM;
		if (r < 0) {
			fatelf_deb_relations_free(rel, n);
			return fatelf_diag_oom(d);
		}
	}
	*ret = rel;
	*ret_n = n;
	return 0;
}
