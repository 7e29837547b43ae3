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
	return -EINVAL;
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
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
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
			return -EINVAL;
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
		return -EINVAL;
	memcpy(arch, arg, (size_t)(eq - arg));
	arch[eq - arg] = 0;
	fatelf_diag_clear(&d);
	if (fatelf_pattern_parse(arch, &p, &d) < 0 || (p.want & FATELF_WANT_RECORD))
		return -EINVAL;
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

static const struct option create_options[] = {
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

/* What the command line asks for. Each list has room for every argument. */
struct create_args {
	fatelf_bundle_create_opts o;
	const char **globs, **per_arch, **fat, **repos;
	fatelf_unify_from *from;
	char **depends;                 /* text form, malloc'd, room for FATELF_DEPENDS_MAX */
	char **repo_names;              /* the names --repo found, malloc'd; fat points into them */
	size_t nfrom, nper_arch, nfat, ndepends, nrepos;
	bool ignore_scripts, json, keep_depends;
	const char *out, *sign, *password_file;
};

static void create_args_done(struct create_args *ca)
{
	free(ca->globs);
	free(ca->per_arch);
	free(ca->fat);
	free(ca->repos);
	free(ca->from);
	strv_freep(&ca->depends);
	strv_freep(&ca->repo_names);
}

static void seckey_erase(fatelf_ms_seckey *sk)
{
	explicit_bzero(sk, sizeof(*sk));
}

/* One option of getopt_long's: 1 to go on, 0 when done (--help), else a
 * negative code, reported. */
static int create_option(struct create_args *ca, int c, int argc, char **argv)
{
	fatelf_bundle_create_opts *o = &ca->o;

	switch (c) {
	case 'o':
		ca->out = optarg;
		break;
	case OPT_NAME:
		o->name = optarg;
		break;
	case OPT_VERSION:
		o->version = optarg;
		break;
	case OPT_SUMMARY:
		o->summary = optarg;
		break;
	case OPT_VENDOR:
		o->vendor = optarg;
		break;
	case OPT_LICENSE:
		o->license = optarg;
		break;
	case OPT_HOMEPAGE:
		o->homepage = optarg;
		break;
	case OPT_COMPRESSION:
		if (parse_compression(optarg, &o->compression) < 0)
			return cmd_usage_failed("bundle create", "unknown compression '%s' (none, gzip, xz, zstd)",
						optarg);
		break;
	case OPT_CONFIG:
		ca->globs[o->nconfig_globs++] = optarg;
		break;
	case OPT_ALLOW_SETID:
		o->allow_setid = true;
		break;
	case OPT_SIGN:
		ca->sign = optarg;
		break;
	case OPT_PASSWORD_FILE:
		ca->password_file = optarg;
		break;
	case OPT_TRUSTED_COMMENT:
		o->trusted_comment = optarg;
		break;
	case OPT_FROM:
		if (parse_from(optarg, &ca->from[ca->nfrom]) < 0)
			return cmd_usage_failed("bundle create",
						"--from '%s': expected ARCH=SOURCE, ARCH a target name such as amd64 or aarch64",
						optarg);
		if (ca->nfrom == FATELF_UNIFY_MAX_SOURCES)
			return cmd_usage_failed("bundle create", "more than %d --from sources",
						FATELF_UNIFY_MAX_SOURCES);
		ca->nfrom++;
		break;
	case OPT_PER_ARCH:
		ca->per_arch[ca->nper_arch++] = optarg;
		break;
	case OPT_IGNORE_SCRIPTS:
		ca->ignore_scripts = true;
		break;
	case OPT_DEPENDS:
		if (ca->ndepends == FATELF_DEPENDS_MAX)
			return cmd_usage_failed("bundle create", "more than %d --depends", FATELF_DEPENDS_MAX);
		ca->depends[ca->ndepends] = strdup(optarg);
		if (!ca->depends[ca->ndepends++]) {
			cmd_report(NULL, NULL, -ENOMEM);
			return -ENOMEM;
		}
		break;
	case OPT_FAT_PACKAGES:
		if (add_fat_names(optarg, ca->fat, &ca->nfat, (size_t)argc) < 0)
			return cmd_usage_failed("bundle create",
						"--fat-packages: expected package names separated by commas");
		break;
	case OPT_KEEP_DEPENDS:
		ca->keep_depends = true;
		break;
	case OPT_REPO:
		ca->repos[ca->nrepos++] = optarg;
		break;
	case 'j':
		ca->json = true;
		break;
	case 'h':
		cmd_help(cmd_bundle_usage);
		return 0;
	default:
		return cmd_option_failed("bundle create", c, argv);
	}
	return 1;
}

/* The options and operands that go together: 1, else CMD_E_USAGE, reported. */
static int create_check(struct create_args *ca, int argc)
{
	if (!ca->out)
		return cmd_usage_failed("bundle create", "missing -o OUT");
	if (ca->nfrom > 0 && argc - optind > 0)
		return cmd_usage_failed("bundle create", "a TREE and --from sources cannot be mixed");
	if (ca->nfrom == 0 &&
	    (ca->nper_arch > 0 || ca->ignore_scripts || ca->nfat > 0 || ca->keep_depends || ca->nrepos > 0))
		return cmd_usage_failed("bundle create",
					"--per-arch, --ignore-scripts, --fat-packages, --repo and --keep-depends need --from");
	if (ca->nfrom == 0 && (!ca->o.name || !ca->o.version))
		return cmd_usage_failed("bundle create", "--name and --version are required");
	if (ca->nfrom == 0 && argc - optind != 1)
		return cmd_usage_failed("bundle create", "expected one TREE");
	if (!ca->sign && (ca->password_file || ca->o.trusted_comment))
		return cmd_usage_failed("bundle create", "--password-file and --trusted-comment need --sign");
	if (source_date_epoch(&ca->o.mtime) < 0)
		return cmd_usage_failed("bundle create", "SOURCE_DATE_EPOCH must be a decimal number of seconds");
	if (ca->o.nconfig_globs > 0)
		ca->o.config_globs = ca->globs;
	return 1;
}

/* The command line into ca: 1 to go on (optind at the TREE), 0 when done
 * (--help), else a negative code, reported. */
static int create_parse(struct create_args *ca, int argc, char **argv)
{
	int c, r;

	ca->globs = calloc((size_t)argc + 1, sizeof(*ca->globs));
	ca->per_arch = calloc((size_t)argc + 1, sizeof(*ca->per_arch));
	ca->from = calloc((size_t)argc + 1, sizeof(*ca->from));
	ca->fat = calloc((size_t)argc + 1, sizeof(*ca->fat));
	ca->depends = calloc(FATELF_DEPENDS_MAX + 1, sizeof(*ca->depends));
	ca->repos = calloc((size_t)argc + 1, sizeof(*ca->repos));
	if (!ca->globs || !ca->per_arch || !ca->from || !ca->fat || !ca->depends || !ca->repos) {
		cmd_report(NULL, NULL, -ENOMEM);
		return -ENOMEM;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:hj", create_options, NULL)) >= 0)
		if ((r = create_option(ca, c, argc, argv)) <= 0)
			return r;
	return create_check(ca, argc);
}

/* --repo: every package a repository offers is a fat package. 0, else a
 * negative code, reported. */
static int add_repo_packages(struct create_args *ca, fatelf_diag *d)
{
	for (size_t i = 0; i < ca->nrepos; i++) {
		char **names = NULL, **all;
		size_t n = 0, had = 0;
		const char **more;
		int r;

		r = repo_package_names(ca->repos[i], &names, &n, d);
		if (r < 0) {
			cmd_report(ca->repos[i], d, r);
			return r;
		}
		while (ca->repo_names && ca->repo_names[had])
			had++;
		more = realloc(ca->fat, (ca->nfat + n + 1) * sizeof(*ca->fat));
		all = realloc(ca->repo_names, (had + n + 1) * sizeof(*all));
		if (more)
			ca->fat = more;
		if (all)
			ca->repo_names = all;
		if (!more || !all) {
			for (size_t k = 0; k < n; k++)
				free(names[k]);
			free(names);
			cmd_report(NULL, NULL, -ENOMEM);
			return fatelf_diag_oom(d);
		}
		for (size_t k = 0; k < n; k++) {
			ca->repo_names[had + k] = names[k];
			ca->fat[ca->nfat++] = names[k];
		}
		ca->repo_names[had + n] = NULL;
		free(names);
	}
	return 0;
}

/* bundle create --from: the sources' Depends mapped, then unified into
 * the bundle. Returns the exit status. */
static int create_from(struct create_args *ca, fatelf_atomic *a, struct open_out *oo, fatelf_diag *d)
{
	fatelf_unify_opts mapped = { .from = ca->from, .nfrom = ca->nfrom };
	int r;

	r = bundle_deb_depends(&mapped, ca->fat, ca->nfat, ca->keep_depends, ca->depends, &ca->ndepends,
			       FATELF_DEPENDS_MAX, d);
	if (r < 0) {
		if (ca->json)
			return bundle_create_json_error(ca->out, d, r);
		return cmd_report(NULL, d, r);
	}
	ca->o.depends = (const char *const *)ca->depends;
	ca->o.ndepends = ca->ndepends;

	fatelf_unify_opts uo = {
		.from = ca->from,
		.nfrom = ca->nfrom,
		.per_arch = ca->per_arch,
		.nper_arch = ca->nper_arch,
		.ignore_scripts = ca->ignore_scripts,
		.bundle = ca->o,
	};

	return bundle_unify(ca->out, &uo, a, &oo->failed, ca->json, d);
}

static int create_print(const struct create_args *ca)
{
	struct stat st;
	char size[32];

	if (ca->json) {
		_cleanup_json_ struct json_object *j = json_object_new_object();

		json_object_object_add(j, "file", json_object_new_string(ca->out));
		json_object_object_add(j, "size", json_object_new_int64(stat(ca->out, &st) == 0 ? st.st_size : -1));
		json_object_object_add(j, "signed", json_object_new_boolean(ca->sign != NULL));
		json_object_object_add(j, "error", NULL);
		cmd_json_print(j);
		return EXIT_OK;
	}
	if (stat(ca->out, &st) == 0)
		printf("%s: %s %s, %" PRIu64 " bytes (%s)%s\n", ca->out, ca->o.name, ca->o.version,
		       (uint64_t)st.st_size, fatelf_format_size((uint64_t)st.st_size, size),
		       ca->sign ? ", signed" : "");
	return EXIT_OK;
}

/* bundle create TREE: the tree packed, the bundle committed. Returns the
 * exit status. */
static int create_tree(struct create_args *ca, const char *tree, fatelf_atomic *a, struct open_out *oo,
		       fatelf_diag *d)
{
	int r;

	ca->o.depends = (const char *const *)ca->depends;
	ca->o.ndepends = ca->ndepends;
	r = fatelf_bundle_create(tree, -1, &ca->o, d);
	if (r < 0) {
		if (a->fd >= 0)
			fatelf_atomic_abort(a);
		if (ca->json)
			return bundle_create_json_error(ca->out, d, r);
		return cmd_report(oo->failed ? ca->out : tree, d, r);
	}
	r = fatelf_atomic_commit(a, d);
	if (r < 0) {
		fatelf_atomic_abort(a);
		if (ca->json)
			return bundle_create_json_error(ca->out, d, r);
		return cmd_report(ca->out, d, r);
	}
	return create_print(ca);
}

int cmd_bundle_create(int argc, char **argv)
{
	_cleanup_(create_args_done) struct create_args ca = { 0 };
	_cleanup_(seckey_erase) fatelf_ms_seckey sk;
	fatelf_atomic a = { .fd = -1, .dirfd = -1 };
	struct open_out oo = { .a = &a };
	fatelf_diag d;
	int r;

	r = create_parse(&ca, argc, argv);
	if (r <= 0)
		return cmd_exit_code(r);
	fatelf_diag_clear(&d);
	if (ca.sign) {
		r = bundle_load_seckey(ca.sign, ca.password_file, &sk, &d);
		if (r < 0)
			return cmd_report(ca.sign, &d, r);
		ca.o.sign_key = &sk;
	}
	/* The temporary output is made only once the tree passed every
	 * check: a refused tree leaves nothing behind. */
	oo.path = ca.out;
	ca.o.open_output = open_out;
	ca.o.userdata = &oo;
	r = add_repo_packages(&ca, &d);
	if (r < 0)
		return cmd_exit_code(r);
	if (ca.nfrom > 0)
		return create_from(&ca, &a, &oo, &d);
	return create_tree(&ca, argv[optind], &a, &oo, &d);
}

