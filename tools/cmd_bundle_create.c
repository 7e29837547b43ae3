/*
 * fatelf bundle create: packs a staging tree into a reproducible bundle
 * (doc/fatbundle.md), written atomically and optionally signed with a
 * minisign secret key, whose password comes from a file or the terminal.
 */
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

#include "bundle_cmd.h"
#include "fatelf.h"
#include "io.h"
#include "macro.h"

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
	OPT_TRUSTED_COMMENT, OPT_FROM, OPT_PER_ARCH, OPT_IGNORE_SCRIPTS,
	OPT_DEPENDS, OPT_FAT_PACKAGES, OPT_KEEP_DEPENDS, OPT_REPO,
};

/* --fat-packages NAME,...: each name into fat (room for cap). */
static int add_fat_names(char *arg, const char **fat, size_t *nfat, size_t cap)
{
	for (char *save = NULL, *n = strtok_r(arg, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		if (!fatelf_pkg_name_valid(n) || *nfat == cap)
			return -1;
		fat[(*nfat)++] = n;
	}
	return 0;
}

static void strv_freep(char ***v)
{
	for (size_t i = 0; *v && (*v)[i]; i++)
		free((*v)[i]);
	free(*v);
}

/* ARCH=SOURCE, ARCH a target name (not "recordN"). */
static int parse_from(const char *arg, fatelf_unify_from *ret)
{
	const char *eq = strchr(arg, '=');
	fatelf_pattern p;
	fatelf_diag d;
	char arch[64];

	if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= sizeof(arch))
		return -1;
	memcpy(arch, arg, (size_t)(eq - arg));
	arch[eq - arg] = 0;
	fatelf_diag_clear(&d);
	if (fatelf_pattern_parse(arch, &p, &d) < 0 || (p.want & FATELF_WANT_RECORD))
		return -1;
	/* The ARCH points into argv, which outlives the command. */
	((char *)arg)[eq - arg] = 0;
	ret->arch = arg;
	ret->path = eq + 1;
	return 0;
}

struct open_out {
	fatelf_atomic *a;
	const char *path;
	bool failed;
};

static int open_out(void *userdata, fatelf_diag *d)
{
	struct open_out *oo = userdata;
	int r = fatelf_atomic_open(oo->a, oo->path, 0644, d);

	if (r < 0) {
		oo->failed = true;
		return r;
	}
	return oo->a->fd;
}

int cmd_bundle_create(int argc, char **argv)
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
		{ "from", required_argument, NULL, OPT_FROM },
		{ "per-arch", required_argument, NULL, OPT_PER_ARCH },
		{ "ignore-scripts", no_argument, NULL, OPT_IGNORE_SCRIPTS },
		{ "depends", required_argument, NULL, OPT_DEPENDS },
		{ "fat-packages", required_argument, NULL, OPT_FAT_PACKAGES },
		{ "keep-depends", no_argument, NULL, OPT_KEEP_DEPENDS },
		{ "repo", required_argument, NULL, OPT_REPO },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	fatelf_bundle_create_opts o = { 0 };
	_cleanup_free_ const char **globs = NULL, **per_arch = NULL;
	_cleanup_free_ fatelf_unify_from *from = NULL;
	_cleanup_free_ const char **fat = NULL;
	_cleanup_(strv_freep) char **depends = NULL;
	_cleanup_(strv_freep) char **repo_names = NULL;
	_cleanup_free_ const char **repos = NULL;
	size_t nfrom = 0, nper_arch = 0, nfat = 0, ndepends = 0, nrepos = 0;
	bool ignore_scripts = false, json = false, keep_depends = false;
	const char *out = NULL, *sign = NULL, *password_file = NULL;
	fatelf_ms_seckey sk;
	fatelf_atomic a = { .fd = -1, .dirfd = -1 };
	fatelf_diag d;
	struct stat st;
	char size[32];
	int c, r;

	globs = calloc((size_t)argc + 1, sizeof(*globs));
	per_arch = calloc((size_t)argc + 1, sizeof(*per_arch));
	from = calloc((size_t)argc + 1, sizeof(*from));
	fat = calloc((size_t)argc + 1, sizeof(*fat));
	depends = calloc(FATELF_DEPENDS_MAX + 1, sizeof(*depends));
	repos = calloc((size_t)argc + 1, sizeof(*repos));
	if (!globs || !per_arch || !from || !fat || !depends || !repos)
		return cmd_report(NULL, NULL, -ENOMEM);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:hj", options, NULL)) >= 0) {
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
		case OPT_FROM:
			r = parse_from(optarg, &from[nfrom]);
			if (r < 0)
				return cmd_usage_error("bundle create",
						       "--from '%s': expected ARCH=SOURCE, ARCH a target name such as amd64 or aarch64",
						       optarg);
			if (nfrom == FATELF_UNIFY_MAX_SOURCES)
				return cmd_usage_error("bundle create", "more than %d --from sources",
						       FATELF_UNIFY_MAX_SOURCES);
			nfrom++;
			break;
		case OPT_PER_ARCH:
			per_arch[nper_arch++] = optarg;
			break;
		case OPT_IGNORE_SCRIPTS:
			ignore_scripts = true;
			break;
		case OPT_DEPENDS:
			if (ndepends == FATELF_DEPENDS_MAX)
				return cmd_usage_error("bundle create", "more than %d --depends", FATELF_DEPENDS_MAX);
			depends[ndepends] = strdup(optarg);
			if (!depends[ndepends++])
				return cmd_report(NULL, NULL, -ENOMEM);
			break;
		case OPT_FAT_PACKAGES:
			if (add_fat_names(optarg, fat, &nfat, (size_t)argc) < 0)
				return cmd_usage_error("bundle create",
						       "--fat-packages: expected package names separated by commas");
			break;
		case OPT_KEEP_DEPENDS:
			keep_depends = true;
			break;
		case OPT_REPO:
			repos[nrepos++] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle create", c, argv);
		}
	}
	if (!out)
		return cmd_usage_error("bundle create", "missing -o OUT");
	if (nfrom > 0 && argc - optind > 0)
		return cmd_usage_error("bundle create", "a TREE and --from sources cannot be mixed");
	if (nfrom == 0 && (nper_arch > 0 || ignore_scripts || nfat > 0 || keep_depends || nrepos > 0))
		return cmd_usage_error("bundle create",
				       "--per-arch, --ignore-scripts, --fat-packages, --repo and --keep-depends need --from");
	if (nfrom == 0 && (!o.name || !o.version))
		return cmd_usage_error("bundle create", "--name and --version are required");
	if (nfrom == 0 && argc - optind != 1)
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
		r = bundle_load_seckey(sign, password_file, &sk, &d);
		if (r < 0)
			return cmd_report(sign, &d, r);
		o.sign_key = &sk;
	}

	/* The temporary output is made only once the tree passed every
	 * check: a refused tree leaves nothing behind. */
	struct open_out oo = { .a = &a, .path = out };
	o.open_output = open_out;
	o.userdata = &oo;
	/* --repo: every package a repository offers is a fat package */
	for (size_t i = 0; i < nrepos; i++) {
		char **names = NULL;
		size_t n = 0, had = 0;
		const char **more;

		r = repo_package_names(repos[i], &names, &n, &d);
		if (r < 0) {
			explicit_bzero(&sk, sizeof(sk));
			return cmd_report(repos[i], &d, r);
		}
		while (repo_names && repo_names[had])
			had++;
		more = realloc(fat, (nfat + n + 1) * sizeof(*fat));
		char **all = realloc(repo_names, (had + n + 1) * sizeof(*all));
		if (more)
			fat = more;
		if (all)
			repo_names = all;
		if (!more || !all) {
			for (size_t k = 0; k < n; k++)
				free(names[k]);
			free(names);
			explicit_bzero(&sk, sizeof(sk));
			return cmd_report(NULL, NULL, -ENOMEM);
		}
		for (size_t k = 0; k < n; k++) {
			repo_names[had + k] = names[k];
			fat[nfat++] = names[k];
		}
		repo_names[had + n] = NULL;
		free(names);
	}
	if (nfrom > 0) {
		fatelf_unify_opts mapped = { .from = from, .nfrom = nfrom };

		r = bundle_deb_depends(&mapped, fat, nfat, keep_depends, depends, &ndepends,
				       FATELF_DEPENDS_MAX, &d);
		if (r < 0) {
			explicit_bzero(&sk, sizeof(sk));
			if (json)
				return bundle_create_json_error(out, &d, r);
			return cmd_report(NULL, &d, r);
		}
	}
	o.depends = (const char *const *)depends;
	o.ndepends = ndepends;
	if (nfrom > 0) {
		fatelf_unify_opts uo = {
			.from = from,
			.nfrom = nfrom,
			.per_arch = per_arch,
			.nper_arch = nper_arch,
			.ignore_scripts = ignore_scripts,
			.bundle = o,
		};

		r = bundle_unify(out, &uo, &a, &oo.failed, json, &d);
		explicit_bzero(&sk, sizeof(sk));
		return r;
	}
	r = fatelf_bundle_create(argv[optind], -1, &o, &d);
	explicit_bzero(&sk, sizeof(sk));
	if (r < 0) {
		if (a.fd >= 0)
			fatelf_atomic_abort(&a);
		if (json)
			return bundle_create_json_error(out, &d, r);
		return cmd_report(oo.failed ? out : argv[optind], &d, r);
	}
	r = fatelf_atomic_commit(&a, &d);
	if (r < 0) {
		fatelf_atomic_abort(&a);
		if (json)
			return bundle_create_json_error(out, &d, r);
		return cmd_report(out, &d, r);
	}
	if (json) {
		_cleanup_json_ struct json_object *j = json_object_new_object();

		json_object_object_add(j, "file", json_object_new_string(out));
		json_object_object_add(j, "size", json_object_new_int64(stat(out, &st) == 0 ? st.st_size : -1));
		json_object_object_add(j, "signed", json_object_new_boolean(sign != NULL));
		json_object_object_add(j, "error", NULL);
		cmd_json_print(j);
		return EXIT_OK;
	}
	if (stat(out, &st) == 0)
		printf("%s: %s %s, %" PRIu64 " bytes (%s)%s\n", out, o.name, o.version,
		       (uint64_t)st.st_size, fatelf_format_size((uint64_t)st.st_size, size),
		       sign ? ", signed" : "");
	return EXIT_OK;
}

