/*
 * fatelf bundle: the vendor's and the admin's side of fat bundles
 * (doc/fatbundle.md). create packs a staging tree into a reproducible,
 * optionally signed bundle; inspect shows what a bundle holds and what a
 * thinned install would put on disk for each architecture; verify checks
 * the signature, every hash and every FatELF record; extract unpacks it,
 * thinned to one target if asked. Each verb is a function of its own,
 * dispatched from the small table at the end.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "bundle.h"
#include "cmd.h"
#include "macro.h"

#define MAX_KEYS 16
#define SECKEY_MAX (64u << 10)
#define SIG_MAX 8192

const char cmd_bundle_usage[] =
	"Usage: fatelf bundle create -o OUT --name N --version V [OPTIONS] TREE\n"
	"       fatelf bundle inspect [--json] BUNDLE\n"
	"       fatelf bundle verify [--json] [--key PUB]... BUNDLE\n"
	"       fatelf bundle extract [--target T] [--key PUB]... BUNDLE DIR\n"
	"\n"
	"Fat bundles: one signed archive of a staging tree for every architecture.\n"
	"\n"
	"create packs TREE (laid out like the target root) into OUT, written\n"
	"atomically. FatELF files are validated, plain ELF files recorded with\n"
	"their target. The same tree gives the same bytes; every member's mtime is\n"
	"$SOURCE_DATE_EPOCH, or 0.\n"
	"  -o, --output OUT            the bundle to write\n"
	"      --name N                package name ([a-z0-9][a-z0-9+.-]*)\n"
	"      --version V             package version (dpkg syntax)\n"
	"      --summary S, --vendor V, --license L, --homepage U\n"
	"      --compression C         none, gzip, xz or zstd (default)\n"
	"      --config GLOB           files matching GLOB are config files\n"
	"                              (repeatable; default: everything under etc/)\n"
	"      --allow-setid           keep setuid/setgid bits (else refused)\n"
	"      --sign SECKEY           sign with a minisign secret key\n"
	"      --password-file F       the key's password is F's first line\n"
	"                              (else asked on the terminal, if encrypted)\n"
	"      --trusted-comment T     the signature's trusted comment\n"
	"\n"
	"inspect checks the bundle and shows its package fields, targets, entries,\n"
	"and for each architecture the size of a thinned install.\n"
	"\n"
	"verify checks the signature, every hash and every FatELF record; with a\n"
	"--key (a minisign .pub file or an RW... string) a signature by one of the\n"
	"keys is required. Prints the first failure.\n"
	"\n"
	"extract unpacks BUNDLE into DIR (entry opt/x lands at DIR/opt/x), each\n"
	"FatELF thinned to T (an architecture such as aarch64, a target name, or\n"
	"\"host\") when --target is given. With --key, a signature is required.\n"
	"\n"
	"  -j, --json                  inspect, verify: JSON output\n"
	"  -h, --help                  show this help\n";

static int bundle_open(const char *path, fatelf_diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot open: %s", fatelf_strerror(r));
	}
	return fd;
}

/* Reads a small whole file (a key, a password) into a NUL-terminated buffer. */
static int read_small_file(const char *path, size_t max, char **ret, size_t *ret_len,
			   fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, r, -1, "cannot open: %s", fatelf_strerror(r));
	}
	buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, max - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(d->subject, sizeof(d->subject), "%s", path);
			return fatelf_diag_set(d, r, -1, "cannot read: %s", fatelf_strerror(r));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == max) {
			snprintf(d->subject, sizeof(d->subject), "%s", path);
			return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "larger than %zu bytes", max);
		}
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* ---------------------------------------------------------------- create */

/* The password of an encrypted key: a file's first line, or the terminal. */
static int read_password(const char *file, char **ret, fatelf_diag *d)
{
	char *buf = NULL;
	size_t len;
	int r;

	if (file) {
		r = read_small_file(file, 4096, &buf, &len, d);
		if (r < 0)
			return r;
		buf[strcspn(buf, "\r\n")] = '\0';
		*ret = buf;
		return 0;
	}

	_cleanup_close_ int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios old, noecho;
	char line[1024];
	size_t n = 0;

	if (tty < 0)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1,
				       "the secret key is encrypted: give --password-file (no terminal to ask on)");
	if (tcgetattr(tty, &old) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot read the terminal's settings");
	noecho = old;
	noecho.c_lflag &= ~(tcflag_t)ECHO;
	noecho.c_lflag |= ECHONL;
	(void)!write(tty, "Password: ", 10);
	if (tcsetattr(tty, TCSAFLUSH, &noecho) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot turn off the terminal's echo");
	for (;;) {
		char c;
		ssize_t k = read(tty, &c, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || c == '\n' || c == '\r')
			break;
		if (n + 1 < sizeof(line))
			line[n++] = c;
	}
	line[n] = '\0';
	tcsetattr(tty, TCSAFLUSH, &old);
	buf = strdup(line);
	explicit_bzero(line, sizeof(line));
	if (!buf)
		return -ENOMEM;
	*ret = buf;
	return 0;
}

static int load_seckey(const char *path, const char *password_file, fatelf_ms_seckey *ret,
		       fatelf_diag *d)
{
	_cleanup_free_ char *text = NULL, *password = NULL;
	size_t len;
	int r;

	r = read_small_file(path, SECKEY_MAX, &text, &len, d);
	if (r < 0)
		return r;
	if (fatelf_ms_seckey_encrypted(text, len)) {
		r = read_password(password_file, &password, d);
		if (r < 0)
			return r;
	}
	r = fatelf_ms_seckey_parse(text, len, password, ret, d);
	if (password)
		explicit_bzero(password, strlen(password));
	if (r < 0 && !d->subject[0])
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	return r;
}

static int parse_compression(const char *s, int *ret)
{
	static const struct { const char *name; int v; } names[] = {
		{ "zstd", FATELF_COMPRESS_ZSTD },
		{ "none", FATELF_COMPRESS_NONE },
		{ "gzip", FATELF_COMPRESS_GZIP },
		{ "xz", FATELF_COMPRESS_XZ },
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i].name) == 0) {
			*ret = names[i].v;
			return 0;
		}
	return -1;
}

/* SOURCE_DATE_EPOCH: a decimal count of seconds, else 0. */
static int source_date_epoch(int64_t *ret)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	long long v;

	*ret = 0;
	if (!s)
		return 0;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*ret = v;
	return 0;
}

enum {
	OPT_NAME = 0x100, OPT_VERSION, OPT_SUMMARY, OPT_VENDOR, OPT_LICENSE, OPT_HOMEPAGE,
	OPT_COMPRESSION, OPT_CONFIG, OPT_ALLOW_SETID, OPT_SIGN, OPT_PASSWORD_FILE,
	OPT_TRUSTED_COMMENT, OPT_KEY, OPT_TARGET,
};

static int bundle_create(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "version", required_argument, NULL, OPT_VERSION },
		{ "summary", required_argument, NULL, OPT_SUMMARY },
		{ "vendor", required_argument, NULL, OPT_VENDOR },
		{ "license", required_argument, NULL, OPT_LICENSE },
		{ "homepage", required_argument, NULL, OPT_HOMEPAGE },
		{ "compression", required_argument, NULL, OPT_COMPRESSION },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "allow-setid", no_argument, NULL, OPT_ALLOW_SETID },
		{ "sign", required_argument, NULL, OPT_SIGN },
		{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
		{ "trusted-comment", required_argument, NULL, OPT_TRUSTED_COMMENT },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	fatelf_bundle_create_opts o = { 0 };
	_cleanup_free_ const char **globs = NULL;
	const char *out = NULL, *sign = NULL, *password_file = NULL;
	fatelf_ms_seckey sk;
	fatelf_atomic a = { .fd = -1, .dirfd = -1 };
	fatelf_diag d;
	struct stat st;
	char size[32];
	int c, r;

	globs = calloc((size_t)argc + 1, sizeof(*globs));
	if (!globs)
		return cmd_report(NULL, NULL, -ENOMEM);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case OPT_NAME:
			o.name = optarg;
			break;
		case OPT_VERSION:
			o.version = optarg;
			break;
		case OPT_SUMMARY:
			o.summary = optarg;
			break;
		case OPT_VENDOR:
			o.vendor = optarg;
			break;
		case OPT_LICENSE:
			o.license = optarg;
			break;
		case OPT_HOMEPAGE:
			o.homepage = optarg;
			break;
		case OPT_COMPRESSION:
			if (parse_compression(optarg, &o.compression) < 0)
				return cmd_usage_error("bundle create",
						       "unknown compression '%s' (none, gzip, xz, zstd)", optarg);
			break;
		case OPT_CONFIG:
			globs[o.nconfig_globs++] = optarg;
			break;
		case OPT_ALLOW_SETID:
			o.allow_setid = true;
			break;
		case OPT_SIGN:
			sign = optarg;
			break;
		case OPT_PASSWORD_FILE:
			password_file = optarg;
			break;
		case OPT_TRUSTED_COMMENT:
			o.trusted_comment = optarg;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle create", c, argv);
		}
	}
	if (!out)
		return cmd_usage_error("bundle create", "missing -o OUT");
	if (!o.name || !o.version)
		return cmd_usage_error("bundle create", "--name and --version are required");
	if (argc - optind != 1)
		return cmd_usage_error("bundle create", "expected one TREE");
	if (!sign && (password_file || o.trusted_comment))
		return cmd_usage_error("bundle create",
				       "--password-file and --trusted-comment need --sign");
	if (source_date_epoch(&o.mtime) < 0)
		return cmd_usage_error("bundle create",
				       "SOURCE_DATE_EPOCH must be a decimal number of seconds");
	if (o.nconfig_globs > 0)
		o.config_globs = globs;

	fatelf_diag_clear(&d);
	if (sign) {
		r = load_seckey(sign, password_file, &sk, &d);
		if (r < 0)
			return cmd_report(sign, &d, r);
		o.sign_key = &sk;
	}

	r = fatelf_atomic_open(&a, out, 0644, &d);
	if (r < 0)
		return cmd_report(out, &d, r);
	r = fatelf_bundle_create(argv[optind], a.fd, &o, &d);
	explicit_bzero(&sk, sizeof(sk));
	if (r < 0) {
		fatelf_atomic_abort(&a);
		return cmd_report(argv[optind], &d, r);
	}
	r = fatelf_atomic_commit(&a, &d);
	if (r < 0) {
		fatelf_atomic_abort(&a);
		return cmd_report(out, &d, r);
	}
	if (stat(out, &st) == 0)
		printf("%s: %s %s, %" PRIu64 " bytes (%s)%s\n", out, o.name, o.version,
		       (uint64_t)st.st_size, cmd_format_size((uint64_t)st.st_size, size),
		       sign ? ", signed" : "");
	return EXIT_OK;
}

/* ---------------------------------------------------------------- keys */

static int parse_key_option(const char *arg, fatelf_ms_pubkey *keys, size_t *nkeys)
{
	fatelf_diag d;
	int r;

	if (*nkeys == MAX_KEYS)
		return cmd_usage_error("bundle", "at most %d --key options", MAX_KEYS);
	fatelf_diag_clear(&d);
	r = fatelf_ms_pubkey_load(arg, &keys[*nkeys], &d);
	if (r < 0)
		return cmd_report(arg, &d, r);
	(*nkeys)++;
	return -1;
}

/* ---------------------------------------------------------------- verify */

/* Follows the entry being read, so an error can name it. */
struct track {
	char entry[4096];
	size_t nentries;
	const fatelf_ms_pubkey *signer;
	fatelf_ms_pubkey signer_copy;
	bool signed_;
	fatelf_manifest *m;     /* inspect: a copy of the manifest */
};

static int track_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
			  fatelf_diag *d)
{
	struct track *t = ctx;

	if (signer) {
		t->signer_copy = *signer;
		t->signer = &t->signer_copy;
	}
	return 0;
}

static int track_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct track *t = ctx;

	snprintf(t->entry, sizeof(t->entry), "%s", e->path);
	return 0;
}

static int track_end(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d)
{
	struct track *t = ctx;

	if (status >= 0) {
		t->entry[0] = '\0';
		t->nentries++;
	}
	return 0;
}

/* The entry an error is about: the one being read, else the one the
 * message names ("entry 'x': ..."), else none. */
static const char *error_entry(const struct track *t, const fatelf_diag *d, char buf[4096])
{
	const char *p, *q;

	if (t->entry[0])
		return t->entry;
	p = strstr(d->msg, "entry '");
	if (!p)
		return NULL;
	p += 7;
	q = strchr(p, '\'');
	if (!q || (size_t)(q - p) >= 4096)
		return NULL;
	memcpy(buf, p, (size_t)(q - p));
	buf[q - p] = '\0';
	return buf;
}

/* The first two members: the manifest's bytes and the signature text,
 * when there is one (NULL otherwise). For inspect, which shows who signed
 * a bundle even when no key was given to check it. */
static int read_head(int fd, char **ret_manifest, size_t *ret_mlen, char **ret_sig,
		     fatelf_diag *d)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	_cleanup_free_ char *manifest = NULL, *sig = NULL;
	size_t mlen = 0;
	int r = 0;

	if (!a)
		return -ENOMEM;
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK ||
	    archive_read_next_header(a, &ae) != ARCHIVE_OK) {
		r = fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1, "%s", archive_error_string(a) ?
				    archive_error_string(a) : "not an archive");
		goto out;
	}
	if (strcmp(archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "",
		   FATELF_MANIFEST_NAME) != 0) {
		r = fatelf_diag_set(d, -FATELF_E_MEMBER_ORDER, -1,
				    "the first member is not " FATELF_MANIFEST_NAME);
		goto out;
	}
	if (archive_entry_size(ae) < 0 || archive_entry_size(ae) > (la_int64_t)FATELF_MANIFEST_MAX) {
		r = fatelf_diag_set(d, -FATELF_E_MANIFEST_TOO_BIG, -1,
				    FATELF_MANIFEST_NAME " is larger than %u bytes", FATELF_MANIFEST_MAX);
		goto out;
	}
	mlen = (size_t)archive_entry_size(ae);
	manifest = malloc(mlen + 1);
	if (!manifest) {
		r = -ENOMEM;
		goto out;
	}
	if (archive_read_data(a, manifest, mlen) != (la_ssize_t)mlen) {
		r = fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1, "cannot read " FATELF_MANIFEST_NAME);
		goto out;
	}
	manifest[mlen] = '\0';
	if (archive_read_next_header(a, &ae) == ARCHIVE_OK &&
	    strcmp(archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "",
		   FATELF_SIGNATURE_NAME) == 0 &&
	    archive_entry_size(ae) >= 0 && archive_entry_size(ae) < SIG_MAX) {
		size_t slen = (size_t)archive_entry_size(ae);
		sig = malloc(slen + 1);
		if (!sig) {
			r = -ENOMEM;
			goto out;
		}
		if (archive_read_data(a, sig, slen) != (la_ssize_t)slen) {
			r = fatelf_diag_set(d, -FATELF_E_ARCHIVE, -1, "cannot read " FATELF_SIGNATURE_NAME);
			goto out;
		}
		sig[slen] = '\0';
	}
	*ret_manifest = TAKE_PTR(manifest);
	*ret_mlen = mlen;
	*ret_sig = TAKE_PTR(sig);
out:
	archive_read_free(a);
	return r;
}

static int bundle_verify(int argc, char **argv)
{
	static const struct option options[] = {
		{ "key", required_argument, NULL, OPT_KEY },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	fatelf_ms_pubkey keys[MAX_KEYS];
	size_t nkeys = 0;
	bool json = false;
	struct track t = { 0 };
	fatelf_bundle_reader_ops ops = {
		.manifest = track_manifest,
		.begin = track_begin,
		.end = track_end,
		.ctx = &t,
	};
	_cleanup_close_ int fd = -1;
	const char *path;
	char id[17], ebuf[4096];
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jh", options, NULL)) >= 0) {
		switch (c) {
		case OPT_KEY:
			r = parse_key_option(optarg, keys, &nkeys);
			if (r >= 0)
				return r;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle verify", c, argv);
		}
	}
	if (argc - optind != 1)
		return cmd_usage_error("bundle verify", "expected one BUNDLE");
	path = argv[optind];

	fatelf_bundle_read_opts o = {
		.keys = keys,
		.nkeys = nkeys,
		.require_signature = nkeys > 0,
	};
	fatelf_diag_clear(&d);
	fd = bundle_open(path, &d);
	r = fd < 0 ? fd : fatelf_bundle_read_fd(fd, &o, &ops, &d);

	if (json) {
		_cleanup_json_ struct json_object *j = json_object_new_object();
		json_object_object_add(j, "file", json_object_new_string(path));
		json_object_object_add(j, "valid", json_object_new_boolean(r >= 0));
		if (r >= 0 && t.signer) {
			fatelf_ms_keyid_format(t.signer->keyid, id);
			json_object_object_add(j, "signed_by", json_object_new_string(id));
		} else {
			json_object_object_add(j, "signed_by", NULL);
		}
		if (r < 0) {
			struct json_object *e = cmd_json_error(&d, r);
			const char *entry = error_entry(&t, &d, ebuf);
			json_object_object_del(e, "record");
			json_object_object_add(e, "entry", entry ? json_object_new_string(entry) : NULL);
			json_object_object_add(j, "error", e);
		} else {
			json_object_object_add(j, "error", NULL);
		}
		cmd_json_print(j);
		return cmd_exit_code(r);
	}
	if (r < 0)
		return cmd_report(path, &d, r);
	if (t.signer) {
		fatelf_ms_keyid_format(t.signer->keyid, id);
		printf("%s: valid, %zu entries, signed by key %s\n", path, t.nentries, id);
	} else {
		printf("%s: valid, %zu entries, signature not checked (no --key)\n", path, t.nentries);
	}
	return EXIT_OK;
}

/* ---------------------------------------------------------------- extract */

static int bundle_extract(int argc, char **argv)
{
	static const struct option options[] = {
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	fatelf_ms_pubkey keys[MAX_KEYS];
	size_t nkeys = 0;
	const char *target = NULL, *path, *dir;
	_cleanup_close_ int fd = -1;
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:h", options, NULL)) >= 0) {
		switch (c) {
		case 't':
		case OPT_TARGET:
			target = optarg;
			break;
		case OPT_KEY:
			r = parse_key_option(optarg, keys, &nkeys);
			if (r >= 0)
				return r;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle extract", c, argv);
		}
	}
	if (argc - optind != 2)
		return cmd_usage_error("bundle extract", "expected BUNDLE and DIR");
	path = argv[optind];
	dir = argv[optind + 1];

	fatelf_bundle_read_opts o = {
		.keys = keys,
		.nkeys = nkeys,
		.require_signature = nkeys > 0,
	};
	fatelf_diag_clear(&d);
	fd = bundle_open(path, &d);
	if (fd < 0)
		return cmd_report(path, &d, fd);
	r = fatelf_bundle_extract(fd, dir, target, &o, &d);
	if (r < 0)
		return cmd_report(path, &d, r);
	printf("%s: extracted into %s%s%s\n", path, dir, target ? ", thinned to " : "",
	       target ? target : "");
	return EXIT_OK;
}

/* ---------------------------------------------------------------- inspect */

static const char *type_name(int type)
{
	switch (type) {
	case FATELF_ENTRY_FILE:
		return "file";
	case FATELF_ENTRY_DIR:
		return "dir";
	case FATELF_ENTRY_SYMLINK:
		return "symlink";
	}
	return "?";
}

static const char *kind_name(const fatelf_bundle_entry *e)
{
	if (e->type != FATELF_ENTRY_FILE)
		return "-";
	switch (e->kind) {
	case FATELF_KIND_ELF:
		return "elf";
	case FATELF_KIND_FATELF:
		return "fatelf";
	}
	return "data";
}

/* What a thinned install for one architecture puts on disk. */
struct thin {
	const char *arch;
	uint64_t size;
	size_t nfat_kept;       /* FatELF entries no record of which runs there */
	const char *first_kept;
};

/* The bytes a FatELF entry leaves on disk for a host: the record the
 * kernel would pick, or the whole file when none runs there (-1). */
static int64_t thin_entry_size(const fatelf_bundle_entry *e, const fatelf_host *h)
{
	static fatelf_header hdr;
	int i;

	fatelf_header_init(&hdr);
	hdr.nrecords = (uint8_t)MIN(e->nrecords, (unsigned)FATELF_MAX_RECORDS);
	for (unsigned k = 0; k < hdr.nrecords; k++) {
		hdr.records[k].target = e->records[k].target;
		hdr.records[k].offset = e->records[k].offset;
		hdr.records[k].size = e->records[k].size;
	}
	i = fatelf_host_select(h, &hdr, NULL);
	return i < 0 ? -1 : (int64_t)e->records[i].size;
}

/* One line per distinct architecture of the targets list. */
static size_t thin_plan(const fatelf_manifest *m, struct thin *ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->ntargets && n < max; i++) {
		const char *arch = fatelf_target_arch(&m->targets[i]);
		fatelf_host h;
		bool dup = false;

		if (!arch)
			continue;
		for (size_t k = 0; k < n; k++)
			dup = dup || strcmp(ret[k].arch, arch) == 0;
		if (dup || fatelf_host_from_uname(arch, FATELF_HOST_ARM32, &h) < 0)
			continue;
		ret[n] = (struct thin){ .arch = arch };
		for (size_t k = 0; k < m->nentries; k++) {
			const fatelf_bundle_entry *e = &m->entries[k];
			int64_t s;

			if (e->type != FATELF_ENTRY_FILE)
				continue;
			if (e->kind != FATELF_KIND_FATELF) {
				ret[n].size += e->size;
				continue;
			}
			s = thin_entry_size(e, &h);
			if (s < 0) {
				ret[n].size += e->size;
				if (ret[n].nfat_kept++ == 0)
					ret[n].first_kept = e->path;
			} else {
				ret[n].size += (uint64_t)s;
			}
		}
		n++;
	}
	return n;
}

static void record_names(const fatelf_bundle_entry *e, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	if (e->type != FATELF_ENTRY_FILE)
		return;
	if (e->kind == FATELF_KIND_ELF) {
		const char *a = fatelf_target_arch(&e->target);
		char name[FATELF_TARGET_NAME_MAX];
		if (!a) {
			fatelf_target_format(&e->target, name);
			a = name;
		}
		snprintf(buf, cap, "%s", a);
		return;
	}
	for (unsigned i = 0; i < e->nrecords && len + 1 < cap; i++) {
		const char *a = fatelf_target_arch(&e->records[i].target);
		char name[FATELF_TARGET_NAME_MAX];
		int k;
		if (!a) {
			fatelf_target_format(&e->records[i].target, name);
			a = name;
		}
		k = snprintf(buf + len, cap - len, "%s%s", i ? "," : "", a);
		if (k < 0)
			break;
		len += (size_t)k;
		if (len >= cap)
			len = cap - 1;
	}
}

static struct json_object *json_u64(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static struct json_object *json_target(const fatelf_target *t)
{
	char name[FATELF_TARGET_NAME_MAX];

	fatelf_target_format(t, name);
	return json_object_new_string(name);
}

static void inspect_json(const char *path, const fatelf_manifest *m, const char *sig_keyid,
			 const struct thin *th, size_t nth)
{
	_cleanup_json_ struct json_object *j = json_object_new_object();
	struct json_object *pkg = json_object_new_object();
	struct json_object *sig = json_object_new_object();
	struct json_object *targets = json_object_new_array();
	struct json_object *entries = json_object_new_array();
	struct json_object *thin = json_object_new_array();

	json_object_object_add(j, "file", json_object_new_string(path));
	json_object_object_add(j, "format", json_object_new_int((int)m->format));
	json_object_object_add(pkg, "name", json_object_new_string(m->name));
	json_object_object_add(pkg, "version", json_object_new_string(m->version));
	json_object_object_add(pkg, "summary", json_object_new_string(m->summary));
	json_object_object_add(pkg, "vendor", json_object_new_string(m->vendor));
	json_object_object_add(pkg, "license", json_object_new_string(m->license));
	json_object_object_add(pkg, "homepage", json_object_new_string(m->homepage));
	json_object_object_add(j, "package", pkg);
	json_object_object_add(sig, "signed", json_object_new_boolean(sig_keyid != NULL));
	json_object_object_add(sig, "key_id", sig_keyid ? json_object_new_string(sig_keyid) : NULL);
	json_object_object_add(sig, "verified", json_object_new_boolean(false));
	json_object_object_add(j, "signature", sig);
	for (size_t i = 0; i < m->ntargets; i++)
		json_object_array_add(targets, json_target(&m->targets[i]));
	json_object_object_add(j, "targets", targets);
	json_object_object_add(j, "nentries", json_u64(m->nentries));
	json_object_object_add(j, "total_size", json_u64(m->total_size));
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		struct json_object *o = json_object_new_object();
		char mode[8];

		snprintf(mode, sizeof(mode), "%04o", e->mode & 07777);
		json_object_object_add(o, "path", json_object_new_string(e->path));
		json_object_object_add(o, "type", json_object_new_string(type_name(e->type)));
		json_object_object_add(o, "mode", json_object_new_string(mode));
		if (e->setid)
			json_object_object_add(o, "setid", json_object_new_boolean(true));
		if (e->config)
			json_object_object_add(o, "config", json_object_new_boolean(true));
		if (e->type == FATELF_ENTRY_SYMLINK)
			json_object_object_add(o, "link_target", json_object_new_string(e->link_target));
		if (e->type == FATELF_ENTRY_FILE) {
			json_object_object_add(o, "size", json_u64(e->size));
			json_object_object_add(o, "kind", json_object_new_string(kind_name(e)));
			if (e->kind == FATELF_KIND_ELF)
				json_object_object_add(o, "target", json_target(&e->target));
			if (e->kind == FATELF_KIND_FATELF) {
				struct json_object *recs = json_object_new_array();
				for (unsigned k = 0; k < e->nrecords; k++) {
					struct json_object *r = json_object_new_object();
					const char *a = fatelf_target_arch(&e->records[k].target);
					json_object_object_add(r, "target", json_target(&e->records[k].target));
					json_object_object_add(r, "arch", a ? json_object_new_string(a) : NULL);
					json_object_object_add(r, "offset", json_u64(e->records[k].offset));
					json_object_object_add(r, "size", json_u64(e->records[k].size));
					json_object_array_add(recs, r);
				}
				json_object_object_add(o, "records", recs);
			}
		}
		json_object_array_add(entries, o);
	}
	json_object_object_add(j, "entries", entries);
	for (size_t i = 0; i < nth; i++) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "arch", json_object_new_string(th[i].arch));
		json_object_object_add(o, "size", json_u64(th[i].size));
		json_object_object_add(o, "saved", json_u64(m->total_size - th[i].size));
		json_object_object_add(o, "fat_kept", json_u64(th[i].nfat_kept));
		json_object_array_add(thin, o);
	}
	json_object_object_add(j, "thin", thin);
	cmd_json_print(j);
}

static void inspect_text(const char *path, const fatelf_manifest *m, const char *sig_keyid,
			 const struct thin *th, size_t nth)
{
	size_t nfiles = 0, ndirs = 0, nlinks = 0;
	char s1[32], s2[32], recs[512], tname[FATELF_TARGET_NAME_MAX];

	printf("bundle:    %s\n", path);
	printf("package:   %s %s\n", m->name, m->version);
	if (m->summary[0])
		printf("summary:   %s\n", m->summary);
	if (m->vendor[0])
		printf("vendor:    %s\n", m->vendor);
	if (m->license[0])
		printf("license:   %s\n", m->license);
	if (m->homepage[0])
		printf("homepage:  %s\n", m->homepage);
	printf("format:    %u\n", m->format);
	if (sig_keyid)
		printf("signature: signed by key %s (not verified: no key given; use verify --key)\n",
		       sig_keyid);
	else
		printf("signature: unsigned\n");
	printf("targets:  ");
	for (size_t i = 0; i < m->ntargets; i++) {
		fatelf_target_format(&m->targets[i], tname);
		printf(" %s", tname);
	}
	printf("\n");
	for (size_t i = 0; i < m->nentries; i++) {
		int t = m->entries[i].type;
		nfiles += t == FATELF_ENTRY_FILE;
		ndirs += t == FATELF_ENTRY_DIR;
		nlinks += t == FATELF_ENTRY_SYMLINK;
	}
	printf("entries:   %zu (%zu files, %zu dirs, %zu symlinks)\n", m->nentries, nfiles, ndirs,
	       nlinks);
	printf("size:      %" PRIu64 " bytes (%s)\n\n", m->total_size,
	       cmd_format_size(m->total_size, s1));

	printf("%-7s %-5s %12s %-6s %-24s %s\n", "TYPE", "MODE", "SIZE", "KIND", "RECORDS", "PATH");
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		char size[24];

		if (e->type == FATELF_ENTRY_FILE)
			snprintf(size, sizeof(size), "%" PRIu64, e->size);
		else
			snprintf(size, sizeof(size), "-");
		record_names(e, recs, sizeof(recs));
		printf("%-7s %04o  %12s %-6s %-24s %s", type_name(e->type), e->mode & 07777, size,
		       kind_name(e), recs[0] ? recs : "-", e->path);
		if (e->type == FATELF_ENTRY_SYMLINK)
			printf(" -> %s", e->link_target);
		if (e->config)
			printf(" (config)");
		printf("\n");
	}

	printf("\nthinned install per architecture (fat total %" PRIu64 " bytes):\n",
	       m->total_size);
	printf("  %-10s %14s %14s %7s\n", "ARCH", "ON DISK", "SAVED", "");
	for (size_t i = 0; i < nth; i++) {
		uint64_t saved = m->total_size - th[i].size;
		printf("  %-10s %14" PRIu64 " %14" PRIu64 " %6.1f%%  (%s, saves %s)\n", th[i].arch,
		       th[i].size, saved, m->total_size ? 100.0 * (double)saved / (double)m->total_size : 0.0,
		       cmd_format_size(th[i].size, s1), cmd_format_size(saved, s2));
		if (th[i].nfat_kept)
			printf("    %zu FatELF file(s) have no record that runs on %s and stay whole "
			       "(first: %s)\n", th[i].nfat_kept, th[i].arch, th[i].first_kept);
	}
}

static int bundle_inspect(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	bool json = false;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *manifest = NULL, *sigtext = NULL;
	fatelf_manifest *m = NULL;
	fatelf_ms_signature sig;
	struct thin th[32];
	size_t mlen = 0, nth;
	char keyid[17];
	const char *path;
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jh", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle inspect", c, argv);
		}
	}
	if (argc - optind != 1)
		return cmd_usage_error("bundle inspect", "expected one BUNDLE");
	path = argv[optind];

	/* First the whole bundle, every hash; then its head again to show. */
	fatelf_diag_clear(&d);
	fd = bundle_open(path, &d);
	if (fd < 0)
		return cmd_report(path, &d, fd);
	r = fatelf_bundle_read_fd(fd, NULL, NULL, &d);
	if (r < 0)
		return cmd_report(path, &d, r);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return cmd_report(path, NULL, -errno);
	fatelf_diag_clear(&d);
	r = read_head(fd, &manifest, &mlen, &sigtext, &d);
	if (r >= 0)
		r = fatelf_manifest_parse(manifest, mlen, NULL, &m, &d);
	if (r < 0)
		return cmd_report(path, &d, r);
	keyid[0] = '\0';
	if (sigtext && fatelf_ms_sig_parse(sigtext, strlen(sigtext), &sig, NULL) == 0)
		fatelf_ms_keyid_format(sig.keyid, keyid);
	else if (sigtext)
		snprintf(keyid, sizeof(keyid), "unreadable");

	nth = thin_plan(m, th, ARRAY_SIZE(th));
	if (json)
		inspect_json(path, m, keyid[0] ? keyid : NULL, th, nth);
	else
		inspect_text(path, m, keyid[0] ? keyid : NULL, th, nth);
	fatelf_manifest_free(m);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- verbs */

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} verbs[] = {
	{ "create", bundle_create },
	{ "inspect", bundle_inspect },
	{ "verify", bundle_verify },
	{ "extract", bundle_extract },
};

int cmd_bundle(int argc, char **argv)
{
	if (argc < 2)
		return cmd_usage_error("bundle", "expected a verb: create, inspect, verify or extract");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0)
		return cmd_help(cmd_bundle_usage);
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(argv[1], verbs[i].name) == 0) {
			optind = 0;
			return verbs[i].run(argc - 1, argv + 1);
		}
	return cmd_usage_error("bundle", "unknown verb '%s' (create, inspect, verify, extract)",
			       argv[1]);
}
