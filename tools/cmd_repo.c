/*
 * fatelf repo: the vendor's side of repositories (doc/repository.md).
 * Each verb changes the repository directory atomically for a reader
 * (the pointer file is the one name that changes, and it changes last)
 * and under the writers' lock. It runs in the fatelf-bundle program,
 * which the fatelf front end execs for "fatelf repo".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "hex.h"
#include "macro.h"
#include "path.h"
#include "repo.h"

/* A DIR or a file:// URL names a directory. */
static const char *repo_path(const char *arg)
{
	if (strncmp(arg, "file://", 7) == 0)
		return arg + 7;
	return arg;
}

static bool is_remote(const char *arg)
{
	return strstr(arg, "://") != NULL && strncmp(arg, "file://", 7) != 0;
}

struct common {
	const char *sign, *password_file;
	struct bundle_keys keys, vendor_keys;
	bool json;
	int64_t expires;                /* seconds; 0: never */
	fatelf_ms_seckey sk;
};

enum { OPT_SIGN = 256, OPT_PASSWORD_FILE, OPT_KEY, OPT_VENDOR_KEY, OPT_EXPIRES };

static const struct option common_options[] = {
	{ "sign", required_argument, NULL, OPT_SIGN },
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "vendor-key", required_argument, NULL, OPT_VENDOR_KEY },
	{ "expires", required_argument, NULL, OPT_EXPIRES },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* "30d", "12h", "3600" (seconds) */
static int parse_duration(const char *s, int64_t *ret)
{
	char *end;
	unsigned long long v;
	int64_t unit = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0)
		return -EINVAL;
	if (*end == 'd')
		unit = 86400, end++;
	else if (*end == 'h')
		unit = 3600, end++;
	else if (*end == 's')
		end++;
	if (*end || v > (unsigned long long)(INT64_MAX / 4 / unit))
		return -EINVAL;
	*ret = (int64_t)v * unit;
	return 0;
}

/* Parses the options a verb allows (letters of allow: s sign, k key,
 * v vendor-key, e expires, j json). 1 to go on, 0 when done (--help),
 * else a negative code, reported. */
static int parse_common(int argc, char **argv, const char *verb, const char *allow, struct common *c)
{
	int ch, r;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":jh", common_options, NULL)) != -1) {
		char want = ch == OPT_SIGN || ch == OPT_PASSWORD_FILE ? 's' : ch == OPT_KEY ? 'k'
			    : ch == OPT_VENDOR_KEY ? 'v' : ch == OPT_EXPIRES ? 'e' : ch == 'j' ? 'j' : 0;

		if (ch == 'h') {
			cmd_help(cmd_repo_usage);
			return 0;
		}
		if (ch == '?' || ch == ':' || !want || !strchr(allow, want))
			return cmd_option_failed(verb, ch == '?' || ch == ':' ? ch : '?', argv);
		switch (ch) {
		case OPT_SIGN:
			c->sign = optarg;
			break;
		case OPT_PASSWORD_FILE:
			c->password_file = optarg;
			break;
		case OPT_KEY:
			if ((r = bundle_keys_add(&c->keys, optarg)) < 0)
				return r;
			break;
		case OPT_VENDOR_KEY:
			if ((r = bundle_keys_add(&c->vendor_keys, optarg)) < 0)
				return r;
			break;
		case OPT_EXPIRES:
			if (parse_duration(optarg, &c->expires) < 0)
				return cmd_usage_failed(verb, "--expires takes a duration: N (seconds), Nh or Nd");
			break;
		case 'j':
			c->json = true;
			break;
		}
	}
	if (c->password_file && !c->sign)
		return cmd_usage_failed(verb, "--password-file needs --sign");
	if (c->sign) {
		fatelf_diag d;

		fatelf_diag_clear(&d);
		r = bundle_load_seckey(c->sign, c->password_file, &c->sk, &d);
		if (r < 0) {
			cmd_report(c->sign, &d, r);
			return r;
		}
	}
	return 1;
}

static int64_t now_secs(void)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");

	if (sde && *sde) {
		char *end;
		long long v = strtoll(sde, &end, 10);

		if (!*end && v >= 0)
			return v;
	}
	return (int64_t)time(NULL);
}

/* A signed repository stays signed: changing it needs the key. 0, or
 * -FATELF_E_SIG_MISSING, reported. */
static int need_key(const fatelf_repo_dir *r, const struct common *c, const char *dir)
{
	if (r->index_sig && !c->sign) {
		fprintf(stderr, "%s: %s: the repository's index is signed: give --sign KEY to change it\n",
			program_name, dir);
		return -FATELF_E_SIG_MISSING;
	}
	return 0;
}

static int repo_report(const char *what, const fatelf_diag *d, int r, bool json)
{
	if (json) {
		json_object *o = json_object_new_object(), *e = json_object_new_object();

		json_object_object_add(e, "code", json_object_new_string(fatelf_error_name(r)));
		json_object_object_add(e, "message", json_object_new_string(fatelf_diag_text(d, r)));
		json_object_object_add(e, "subject", json_object_new_string(d->subject[0] ? d->subject : what));
		json_object_object_add(o, "error", e);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	if (d->has & FATELF_DIAG_NAMED) {
		/* the message names its file: the line names the repository */
		fatelf_diag named = *d;

		named.subject[0] = '\0';
		return cmd_report(strcmp(what, d->subject) == 0 ? NULL : what, &named, r);
	}
	return cmd_report(what, d, r);
}

static int repo_init(int argc, char **argv)
{
	struct common c = { 0 };
	fatelf_repo_dir *rd = NULL;
	fatelf_diag d;
	int r = parse_common(argc, argv, "repo init", "sj", &c);

	if (r <= 0)
		return cmd_exit_code(r);
	if (argc - optind != 1)
		return cmd_usage_error("repo init", "expected one DIR");
	fatelf_diag_clear(&d);
	r = fatelf_repo_init(argv[optind], c.sign ? &c.sk : NULL, now_secs(), &d);
	explicit_bzero(&c.sk, sizeof(c.sk));
	if (r == 0)
		r = fatelf_repo_open(argv[optind], false, NULL, 0, &rd, &d);
	if (r < 0)
		return repo_report(argv[optind], &d, r, c.json);
	if (!c.json)
		printf("%s: repository made (serial 1%s, id %s)\n", argv[optind], c.sign ? ", signed" : "",
		       rd->index->repository);
	else {
		_cleanup_json_ json_object *o = json_object_new_object();

		json_object_object_add(o, "repository", json_object_new_string(argv[optind]));
		json_object_object_add(o, "id", json_object_new_string(rd->index->repository));
		json_object_object_add(o, "serial", json_object_new_int64(1));
		cmd_json_print(o);
	}
	fatelf_repo_close(rd);
	return EXIT_OK;
}

static int repo_add(int argc, char **argv)
{
	struct common c = { 0 };
	fatelf_repo_dir *r = NULL;
	json_object *arr = NULL;
	const char *dir;
	fatelf_diag d;
	bool changed = false;
	int q = parse_common(argc, argv, "repo add", "skej", &c), status = EXIT_OK;

	if (q <= 0)
		return cmd_exit_code(q);
	if (argc - optind < 2)
		return cmd_usage_error("repo add", "expected DIR and at least one BUNDLE");
	dir = repo_path(argv[optind]);
	fatelf_diag_clear(&d);
	q = fatelf_repo_open(dir, true, NULL, 0, &r, &d);
	if (q < 0)
		return repo_report(dir, &d, q, c.json);
	if ((q = need_key(r, &c, dir)) < 0) {
		q = cmd_exit_code(q);
		goto out;
	}
	arr = json_object_new_array();
	for (int i = optind + 1; i < argc; i++) {
		fatelf_bundle_read_opts ro = bundle_keys_read_opts(&c.keys);
		fatelf_repo_add_result res;
		int fd = bundle_open(argv[i], &d);

		if (fd < 0) {
			q = repo_report(argv[i], &d, fd, c.json);
			goto out;
		}
		fatelf_diag_clear(&d);
		q = fatelf_repo_add_bundle(r, r->index, fd, &ro, &res, &d);
		close(fd);
		if (q < 0) {
			/* nothing of this add is named; earlier ones are not published */
			q = bundle_report(argv[i], &d, q);
			goto out;
		}
		changed |= !res.unchanged;
		if (c.json) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "bundle", json_object_new_string(argv[i]));
			json_object_object_add(o, "name", json_object_new_string(res.name));
			json_object_object_add(o, "version", json_object_new_string(res.version));
			json_object_object_add(o, "unchanged", json_object_new_boolean(res.unchanged));
			json_object_object_add(o, "objects_new", json_object_new_int64((int64_t)res.counts.objects_new));
			json_object_object_add(o, "objects_shared",
					       json_object_new_int64((int64_t)res.counts.objects_shared));
			json_object_array_add(arr, o);
		} else if (res.unchanged)
			printf("%s: %s %s is in the repository already: unchanged\n", argv[i], res.name, res.version);
		else
			printf("%s: added %s %s (%" PRIu64 " new objects, %" PRIu64 " already there)\n", argv[i],
			       res.name, res.version, res.counts.objects_new, res.counts.objects_shared);
	}
	if (changed) {
		q = fatelf_repo_publish(r, r->index, c.sign ? &c.sk : NULL, now_secs(), c.expires, &d);
		if (q < 0) {
			q = repo_report(dir, &d, q, c.json);
			goto out;
		}
	}
	if (c.json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "repository", json_object_new_string(argv[optind]));
		json_object_object_add(o, "serial", json_object_new_int64((int64_t)r->index->serial));
		json_object_object_add(o, "changed", json_object_new_boolean(changed));
		json_object_object_add(o, "added", json_object_get(arr));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (changed)
		printf("%s: index serial %" PRIu64 "\n", argv[optind], r->index->serial);
	q = status;
out:
	explicit_bzero(&c.sk, sizeof(c.sk));
	json_object_put(arr);
	fatelf_repo_close(r);
	return q;
}

static int repo_remove(int argc, char **argv)
{
	struct common c = { 0 };
	fatelf_repo_dir *r = NULL;
	const char *dir, *name, *version;
	fatelf_diag d;
	size_t n;
	int q = parse_common(argc, argv, "repo remove", "sej", &c);

	if (q <= 0)
		return cmd_exit_code(q);
	if (argc - optind < 2 || argc - optind > 3)
		return cmd_usage_error("repo remove", "expected DIR NAME [VERSION]");
	dir = repo_path(argv[optind]);
	name = argv[optind + 1];
	version = argc - optind == 3 ? argv[optind + 2] : NULL;
	fatelf_diag_clear(&d);
	q = fatelf_repo_open(dir, true, NULL, 0, &r, &d);
	if (q < 0)
		return repo_report(dir, &d, q, c.json);
	if ((q = need_key(r, &c, dir)) < 0) {
		q = cmd_exit_code(q);
		goto out;
	}
	n = fatelf_repo_index_remove(r->index, name, version);
	if (n == 0) {
		fprintf(stderr, "%s: %s: no package %s%s%s in the repository\n", program_name, dir, name,
			version ? " version " : "", version ? version : "");
		q = EXIT_INVALID;
		goto out;
	}
	q = fatelf_repo_publish(r, r->index, c.sign ? &c.sk : NULL, now_secs(), c.expires, &d);
	if (q < 0) {
		q = repo_report(dir, &d, q, c.json);
		goto out;
	}
	if (c.json) {
		_cleanup_json_ json_object *o = json_object_new_object();

		json_object_object_add(o, "removed", json_object_new_int64((int64_t)n));
		json_object_object_add(o, "serial", json_object_new_int64((int64_t)r->index->serial));
		cmd_json_print(o);
	} else
		printf("%s: removed %zu version%s of %s (index serial %" PRIu64 "); 'fatelf repo gc' frees their objects\n",
		       argv[optind], n, n == 1 ? "" : "s", name, r->index->serial);
	q = EXIT_OK;
out:
	explicit_bzero(&c.sk, sizeof(c.sk));
	fatelf_repo_close(r);
	return q;
}

/* Opens the repository arg names for reading: a directory, a file://
 * URL, or an http(s) URL copied into tmp first (everything: all its
 * files, else its index). 0, with *ret_dir the directory, else a
 * negative code (reported, tmp removed). */
static int open_any(const char *arg, bool everything, const struct common *c, char tmp[PATH_MAX],
		    const char **ret_dir, fatelf_repo_dir **ret)
{
	const char *dir = repo_path(arg);
	fatelf_diag d;
	int q;

	fatelf_diag_clear(&d);
	if (is_remote(arg)) {
		q = repo_remote_copy(arg, everything, tmp, PATH_MAX, &d);
		if (q < 0) {
			repo_remote_remove(tmp);
			repo_report(arg, &d, q, c->json);
			return q;
		}
		dir = tmp;
	}
	q = fatelf_repo_open(dir, false, c->keys.v, c->keys.n, ret, &d);
	if (q < 0) {
		if (dir == tmp)
			repo_remote_remove(tmp);
		repo_report(dir == tmp ? arg : dir, &d, q, c->json);
		return q;
	}
	*ret_dir = dir;
	return 0;
}

int repo_package_names(const char *arg, char ***ret, size_t *ret_n, fatelf_diag *d)
{
	char tmp[PATH_MAX] = "";
	const char *dir = repo_path(arg);
	fatelf_repo_dir *r = NULL;
	char **v = NULL;
	size_t n = 0;
	int q;

	*ret = NULL;
	*ret_n = 0;
	if (is_remote(arg)) {
		q = repo_remote_copy(arg, false, tmp, PATH_MAX, d);
		if (q < 0) {
			repo_remote_remove(tmp);
			return q;
		}
		dir = tmp;
	}
	q = fatelf_repo_open(dir, false, NULL, 0, &r, d);
	if (q == 0) {
		v = calloc(r->index->npackages + 1, sizeof(*v));
		if (!v)
			q = fatelf_diag_oom(d);
		for (size_t i = 0; q == 0 && i < r->index->npackages; i++) {
			v[n] = strdup(r->index->packages[i].name);
			if (!v[n])
				q = fatelf_diag_oom(d);
			else
				n++;
		}
	}
	fatelf_repo_close(r);
	if (dir == tmp)
		repo_remote_remove(tmp);
	if (q < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return q;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int repo_list(int argc, char **argv)
{
	char tmp[PATH_MAX] = "";
	struct common c = { 0 };
	fatelf_repo_dir *r = NULL;
	const char *dir;
	fatelf_diag d;
	int q = parse_common(argc, argv, "repo list", "kj", &c);

	if (q <= 0)
		return cmd_exit_code(q);
	if (argc - optind != 1)
		return cmd_usage_error("repo list", "expected DIR or URL");
	q = open_any(argv[optind], false, &c, tmp, &dir, &r);
	if (q < 0)
		return cmd_exit_code(q);
	if (c.json) {
		_cleanup_free_ char *text = NULL;
		size_t len;

		q = fatelf_repo_index_serialize(r->index, &text, &len, &d);
		if (q < 0) {
			fatelf_repo_close(r);
			return repo_report(dir, &d, q, true);
		}
		fwrite(text, 1, len, stdout);
	} else {
		printf("serial %" PRIu64 ", %s%s, repository %s\n", r->index->serial,
		       r->index_sig ? "signed" : "unsigned", r->index->expires ? ", expires" : "",
		       r->index->repository[0] ? r->index->repository : "(no id)");
		for (size_t i = 0; i < r->index->npackages; i++) {
			const fatelf_repo_package *p = &r->index->packages[i];

			for (size_t j = 0; j < p->nversions; j++) {
				const fatelf_repo_version *v = &p->versions[j];
				char t[FATELF_TARGET_NAME_MAX], sz[32];

				fatelf_format_size(v->size, sz);
				printf("%-24s %-16s %8s %zu target%s", p->name, v->version, sz, v->ntargets,
				       v->ntargets == 1 ? "" : "s");
				for (size_t k = 0; k < v->ntargets; k++) {
					fatelf_target_format_fields(&v->targets[k], FATELF_WANT_MACHINE, t);
					printf("%s%s", k ? "," : " (", t);
				}
				printf("%s%s%s\n", v->ntargets ? ")" : "", v->summary[0] ? "  " : "", v->summary);
			}
		}
	}
	fatelf_repo_close(r);
	if (dir == tmp)
		repo_remote_remove(tmp);
	return EXIT_OK;
}

static int repo_verify(int argc, char **argv)
{
	char tmp[PATH_MAX] = "";
	struct common c = { 0 };
	fatelf_repo_dir *r = NULL;
	fatelf_repo_verify_result res;
	const char *dir;
	fatelf_diag d;
	int q = parse_common(argc, argv, "repo verify", "kvj", &c);

	if (q <= 0)
		return cmd_exit_code(q);
	if (argc - optind != 1)
		return cmd_usage_error("repo verify", "expected DIR or URL");
	q = open_any(argv[optind], true, &c, tmp, &dir, &r);
	if (q < 0)
		return cmd_exit_code(q);
	q = fatelf_repo_verify(r, c.vendor_keys.v, c.vendor_keys.n, &res, &d);
	if (q < 0) {
		char what[600];

		snprintf(what, sizeof(what), "%s: %s %s", argv[optind], res.package, res.version);
		fatelf_repo_close(r);
		if (dir == tmp)
			repo_remote_remove(tmp);
		return repo_report(what, &d, q, c.json);
	}
	if (c.json) {
		_cleanup_json_ json_object *o = json_object_new_object();

		json_object_object_add(o, "ok", json_object_new_boolean(true));
		json_object_object_add(o, "serial", json_object_new_int64((int64_t)r->index->serial));
		json_object_object_add(o, "signed", json_object_new_boolean(c.keys.n > 0));
		json_object_object_add(o, "packages", json_object_new_int64((int64_t)res.packages));
		json_object_object_add(o, "versions", json_object_new_int64((int64_t)res.versions));
		json_object_object_add(o, "objects", json_object_new_int64((int64_t)res.objects));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)res.bytes));
		json_object_object_add(o, "rebuilt", json_object_new_int64((int64_t)res.rebuilt));
		cmd_json_print(o);
	} else
		printf("%s: ok: serial %" PRIu64 "%s, %zu packages, %zu versions, %" PRIu64 " objects (%" PRIu64
		       " bytes), %" PRIu64 " FatELF files rebuilt\n",
		       argv[optind], r->index->serial, c.keys.n ? ", signature good" : "", res.packages, res.versions,
		       res.objects, res.bytes, res.rebuilt);
	fatelf_repo_close(r);
	if (dir == tmp)
		repo_remote_remove(tmp);
	return EXIT_OK;
}

static int repo_gc(int argc, char **argv)
{
	struct common c = { 0 };
	fatelf_repo_dir *r = NULL;
	fatelf_repo_gc_result res;
	const char *dir;
	fatelf_diag d;
	int q = parse_common(argc, argv, "repo gc", "j", &c);

	if (q <= 0)
		return cmd_exit_code(q);
	if (argc - optind != 1)
		return cmd_usage_error("repo gc", "expected DIR");
	dir = repo_path(argv[optind]);
	fatelf_diag_clear(&d);
	q = fatelf_repo_open(dir, true, NULL, 0, &r, &d);
	if (q < 0)
		return repo_report(dir, &d, q, c.json);
	q = fatelf_repo_gc(r, &res, &d);
	fatelf_repo_close(r);
	if (q < 0)
		return repo_report(dir, &d, q, c.json);
	if (c.json) {
		_cleanup_json_ json_object *o = json_object_new_object();

		json_object_object_add(o, "removed", json_object_new_int64((int64_t)res.files));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)res.bytes));
		cmd_json_print(o);
	} else
		printf("%s: removed %" PRIu64 " files (%" PRIu64 " bytes)\n", argv[optind], res.files, res.bytes);
	return EXIT_OK;
}

/* push: the registry client is a program of its own (libcurl), next to
 * the build tree's fetch/ or in the package's libexec directory. */
static int repo_push(int argc, char **argv)
{
	char path[PATH_MAX + 16];
	char **args;
	int e;

	helper_program_path("fatelf-oci", PKGLIBEXECDIR, path, sizeof(path));
	args = calloc((size_t)argc + 2, sizeof(*args));
	if (!args) {
		fprintf(stderr, "fatelf: repo push: %s\n", strerror(ENOMEM));
		return EXIT_SYSTEM;
	}
	args[0] = (char *)"fatelf-oci";
	args[1] = (char *)"push";
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	fflush(NULL);
	execv(path, args);
	e = errno;
	free(args);
	fprintf(stderr, "fatelf: repo push: cannot run %s: %s\n", path, strerror(e));
	return EXIT_SYSTEM;
}

static const struct fatelf_cmd verbs[] = {
	{ "init",   "Make a directory an empty repository",        repo_init,   cmd_repo_usage },
	{ "add",    "Add bundles' objects and versions",           repo_add,    cmd_repo_usage },
	{ "remove", "Take a package or one version out",           repo_remove, cmd_repo_usage },
	{ "list",   "Show the packages and versions",              repo_list,   cmd_repo_usage },
	{ "verify", "Check the index, every manifest and object",  repo_verify, cmd_repo_usage },
	{ "gc",     "Drop what the index no longer reaches",       repo_gc,     cmd_repo_usage },
	{ "push",   "Put a bundle in an OCI registry",              repo_push,   cmd_repo_usage },
};

int cmd_repo(int argc, char **argv)
{
	if (argc < 2)
		return cmd_usage_error("repo", "expected a verb: init, add, remove, list, verify, gc or push");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0)
		return cmd_help(cmd_repo_usage);
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(argv[1], verbs[i].name) == 0) {
			optind = 0;
			return verbs[i].run(argc - 1, argv + 1);
		}
	return cmd_usage_error("repo", "unknown verb '%s' (init, add, remove, list, verify, gc, push)", argv[1]);
}
