/*
 * fatelfctl info: one installed package, as "key: value" lines, and the
 * versions the repositories offer of it (a Search), so that it answers
 * for a package that is not installed too.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfctl.h"
#include "macro.h"

const char verb_info_usage[] =
	"Usage: fatelfctl info PKG\n"
	"\n"
	"Show an installed package: version, summary, vendor, license, homepage,\n"
	"signer, when it was installed and from where (source: file PATH, url URL,\n"
	"repository NAME, registry REFERENCE, or fd for standard input), the policy\n"
	"its fat files follow now, the form they are in on disk (installed form:\n"
	"fat, thinned, compatible, mixed, or none without fat files), the targets\n"
	"the bundle covers, its files and their sizes; then the\n"
	"versions the repositories offer of it, as of the last 'fatelfctl update'\n"
	"(\"available: 2.0 (main), 1.0 (main)\", newest first, or -), or why they\n"
	"are unknown (\"available: unknown: repository main: its index expired\n"
	"at ...\", when the repositories refuse to answer). A package that\n"
	"is not installed but that a repository offers shows its name and the\n"
	"versions offered, and info exits 1 as for any package not installed.\n"
	"\n"
	"Options:\n"
	"  -h, --help  show this help\n"
	"\n"
	"With --json: the daemon's Info reply, {\"package\": {...}}, with an\n"
	"\"available\" array of what 'fatelfctl search --json' lists of PKG, or,\n"
	"when the repositories refused to answer, \"available_error\": the error\n"
	"'fatelfctl search --json' gives, {\"error\": NAME, \"parameters\": {...}}.\n";

static const char *or_dash(const char *s)
{
	return s && s[0] ? s : "-";
}

/* "source: TYPE WHERE" ("source: fd" alone), or "source: -" when the
 * daemon did not record it. */
static void print_source(json_object *p)
{
	const char *type = ctl_json_str(p, "source_type", NULL), *where = ctl_json_str(p, "source", NULL);

	if (!type || !where)
		printf("source: -\n");
	else if (strcmp(type, "fd") == 0)
		printf("source: fd\n");
	else
		printf("source: %s %s\n", type, where);
}

/* The length of name's first k fields (separated by ':'). */
static size_t fields_len(const char *name, unsigned k)
{
	size_t n = 0;

	for (unsigned i = 0; i < k && name[n]; i++) {
		n += strcspn(name + n, ":");
		if (i + 1 < k && name[n] == ':')
			n++;
	}
	return n;
}

/* "targets: T1 T2 ...", or - when not recorded. Each full name
 * (machine:bits:order:osabi:osabiverN, as --json gives it) is cut to its
 * first fields that no other target of the list shares: "x86_64". */
static void print_targets(json_object *targets)
{
	size_t n = targets ? json_object_array_length(targets) : 0;

	printf("targets:");
	for (size_t i = 0; i < n; i++) {
		const char *t = json_object_get_string(json_object_array_get_idx(targets, i));
		size_t len = strlen(t);

		for (unsigned k = 1; k <= 5; k++) {
			size_t l = fields_len(t, k);
			bool unique = true;

			for (size_t j = 0; j < n && unique; j++) {
				const char *u = json_object_get_string(json_object_array_get_idx(targets, j));

				unique = j == i || fields_len(u, k) != l || strncmp(t, u, l) != 0;
			}
			if (unique) {
				len = l;
				break;
			}
		}
		printf(" %.*s", (int)len, t);
	}
	printf("%s\n", n == 0 ? " -" : "");
}

static int on_reply(json_object *params, bool continues, void *userdata)
{
	json_object *p = ctl_json_obj(params, "package");
	json_object **keep = userdata;
	int64_t shipped = ctl_json_int(p, "shipped_size"), installed = ctl_json_int(p, "installed_size");
	char a[32], b[32], c[32];

	(void)continues;
	/* With --json the reply is printed once "available" joins it. */
	if (ctl_arg.json) {
		json_object_put(*keep);
		*keep = json_object_get(params);
		return CTL_CONTINUE;
	}
	/* The texts of a manifest: its reader refuses control and
	 * bidirectional characters, and a store older than that rule may
	 * still hold one. */
	static const char *const texts[] = { "name", "version", "summary", "vendor", "license", "homepage" };
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		printf("%s: ", texts[i]);
		ctl_put_shown(stdout, i < 2 ? ctl_json_str(p, texts[i], "?") : or_dash(ctl_json_str(p, texts[i], NULL)));
		putchar('\n');
	}
	printf("signer: %s\n", ctl_json_str(p, "signer", "unsigned"));
	printf("installed: %s\n", ctl_format_time(ctl_json_int(p, "installed_at"), a));
	print_source(p);
	printf("policy: %s\n", ctl_json_str(p, "policy", "-"));
	printf("installed form: %s\n", ctl_json_str(p, "form", "-"));
	print_targets(ctl_json_array(p, "targets"));
	printf("files: %lld\n", (long long)ctl_json_int(p, "files"));
	printf("size as shipped: %s\n", fatelf_format_size((uint64_t)shipped, b));
	printf("size on disk: %s\n", fatelf_format_size((uint64_t)installed, c));
	printf("saved by thinning: %s\n",
	       fatelf_format_size(shipped > installed ? (uint64_t)(shipped - installed) : 0, a));
	return CTL_CONTINUE;
}

/*
 * What the repositories offer of package name, exactly that name, in
 * *ret (a new array). When the daemon refuses the Search (a repository
 * whose index expired, say), *ret stays NULL and *ret_error is the error
 * as data, {"error": NAME, "parameters": {...}}: the versions are unknown,
 * and info says why. A daemon older than Search is no failure and leaves
 * both NULL. Returns 0, or the exit status of a call that failed
 * otherwise (already reported).
 */
static int available(const char *name, json_object **ret, json_object **ret_error)
{
	json_object *params = json_object_new_object(), *pkgs = NULL, *eparams = NULL;
	char *error = NULL;
	int status;

	*ret = NULL;
	*ret_error = NULL;
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "pattern", json_object_new_string(name));
	status = ctl_call_capture("Search", params, 0, ctl_keep_packages, &pkgs, &error, &eparams);
	json_object_put(params);
	if (error) {
		status = EXIT_OK;
		if (strcmp(error, VL_ERROR_METHOD_NOT_FOUND) != 0) {
			json_object *e = json_object_new_object();

			if (!e)
				status = ctl_oom();
			else {
				json_object_object_add(e, "error", json_object_new_string(error));
				json_object_object_add(e, "parameters", json_object_get(eparams));
				*ret_error = e;
			}
		}
	} else if (status == EXIT_OK && ctl_available_of(pkgs, name, ret) < 0)
		status = ctl_oom();
	free(error);
	json_object_put(eparams);
	json_object_put(pkgs);
	return status;
}

/* "available: 2.0 (main), ...", or "available: unknown: WHY" when the
 * Search was refused (the error's words, as fatelfctl search says them). */
static void available_print(json_object *avail, json_object *avail_error)
{
	char buf[4096];

	if (avail_error) {
		ctl_error_words(ctl_json_str(avail_error, "error", "?"), ctl_json_obj(avail_error, "parameters"),
				ctl_arg.verb, ctl_arg.socket, buf, sizeof(buf));
		printf("available: unknown: ");
		ctl_put_shown(stdout, buf);
		putchar('\n');
		return;
	}
	printf("available: %s\n", ctl_available_join(avail, buf, sizeof(buf)));
}

/* Adds "available" or "available_error" to the --json object o. */
static void available_json(json_object *o, json_object *avail, json_object *avail_error)
{
	if (avail_error)
		json_object_object_add(o, "available_error", json_object_get(avail_error));
	else if (avail)
		json_object_object_add(o, "available", json_object_get(avail));
}

/* Not installed: what the repositories offer of it, when they offer
 * anything, then the daemon's error as it came, whose status info
 * returns whatever the Search gave. */
static int not_installed(const char *name, const char *error, json_object *eparams)
{
	json_object *avail = NULL, *avail_error = NULL;

	if (available(name, &avail, &avail_error) == EXIT_OK &&
	    (avail_error || (avail && json_object_array_length(avail) > 0))) {
		if (ctl_arg.json) {
			json_object *o = json_object_new_object();

			if (o) {
				available_json(o, avail, avail_error);
				ctl_json_print(o);
				json_object_put(o);
			}
		} else {
			printf("name: ");
			ctl_put_shown(stdout, name);
			putchar('\n');
			available_print(avail, avail_error);
		}
		fflush(stdout);
	}
	json_object_put(avail);
	json_object_put(avail_error);
	return ctl_error_reply(error, eparams);
}

int verb_info(int argc, char **argv)
{
	json_object *params, *reply = NULL, *eparams = NULL, *avail = NULL, *avail_error = NULL;
	char *error = NULL;
	const char *name;
	int status, r = ctl_parse_plain(argc, argv, verb_info_usage);

	if (r <= 0)
		return ctl_exit_code(r);
	if (optind >= argc)
		return ctl_usage_error("missing PKG");
	if (optind + 1 < argc)
		return ctl_usage_error("one package at a time ('%s' is extra)", argv[optind + 1]);
	name = argv[optind];
	params = json_object_new_object();
	if (!params)
		return ctl_oom();
	json_object_object_add(params, "package", json_object_new_string(name));
	status = ctl_call_capture("Info", params, 0, on_reply, &reply, &error, &eparams);
	json_object_put(params);
	if (error) {
		if (strcmp(error, CTL_INTERFACE ".PackageNotFound") == 0)
			status = not_installed(name, error, eparams);
		else
			status = ctl_error_reply(error, eparams);
		goto out;
	}
	if (status != EXIT_OK)
		goto out;
	status = available(name, &avail, &avail_error);
	if (ctl_arg.json && reply) {
		available_json(reply, avail, avail_error);
		ctl_json_print(reply);
	} else if (!ctl_arg.json && (avail || avail_error)) {
		available_print(avail, avail_error);
	}
out:
	free(error);
	json_object_put(eparams);
	json_object_put(reply);
	json_object_put(avail);
	json_object_put(avail_error);
	return status;
}
