/*
 * The daemon's errors in words: one table keyed on the error's name, each
 * row with the exit status it maps to and the sentence its parameters make.
 * Only parameters are read, never the text of a message beyond printing
 * it: fatelfd's messages name their path, entry or URL themselves.
 * Unknown errors (a newer daemon) keep their name, so nothing is hidden.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fatelfctl.h"
#include "macro.h"

typedef struct words_in {
	json_object *p;                 /* the error's parameters (may be NULL) */
	const char *verb;               /* the verb that failed (may be NULL) */
	const char *socket;             /* where fatelfctl connected */
} words_in;

/* Appends " (CODE)" for an error that carries a library code name. */
static const char *code_suffix(json_object *p, char buf[96])
{
	const char *code = ctl_json_str(p, "code", NULL);

	if (!code || !code[0])
		return "";
	snprintf(buf, 96, " (%s)", code);
	return buf;
}

/* What a mutating verb is called in "permission denied: installing needs
 * ...", and who may run it. */
static void verb_gerund(const char *verb, const char **ret_gerund, const char **ret_who)
{
	static const struct { const char *verb, *gerund, *who; } g[] = {
		{ "install", "installing", "root or the admin group" },
		{ "upgrade", "upgrading", "root or the admin group" },
		{ "remove", "removing", "root or the admin group" },
		{ "thin", "thinning", "root or the admin group" },
		{ "cancel", "cancelling", "root or the admin group" },
		{ "update", "updating the repositories", "root or the admin group" },
		{ "repo add", "adding a repository", "root" },
		{ "repo remove", "removing a repository", "root" },
		{ "key add", "adding a trusted key", "root" },
		{ "key list", "listing the trusted keys", "root" },
		{ "key remove", "removing a trusted key", "root" },
		{ "hold", "holding a package", "root or the admin group" },
		{ "unhold", "releasing a hold", "root or the admin group" },
	};

	*ret_gerund = verb ? verb : "this";
	*ret_who = "root or the admin group";
	for (size_t i = 0; i < ARRAY_SIZE(g); i++)
		if (verb && strcmp(verb, g[i].verb) == 0) {
			*ret_gerund = g[i].gerund;
			*ret_who = g[i].who;
		}
}

static void w_package_not_found(const words_in *w, char *msg, size_t size)
{
	const char *pkg = ctl_json_str(w->p, "package", "?");
	const char *near = ctl_json_str(w->p, "suggestion", NULL);

	/* An install that names a package asks the repositories for it
	 * (fatelfctl sends a name only when no file of that name exists). */
	if (w->verb && strcmp(w->verb, "install") == 0 && near)
		snprintf(msg, size, "no such package: no repository offers %s, and no file of that name "
			 "exists (did you mean %s?)", pkg, near);
	else if (w->verb && strcmp(w->verb, "install") == 0)
		snprintf(msg, size, "no such package: no repository offers %s, and no file of that name "
			 "exists ('fatelfctl search' lists what the repositories offer)", pkg);
	else if (ctl_json_str(w->p, "kept_version", NULL))
		snprintf(msg, size, "package not installed: %s (removed; %lld config file%s of %s %s kept: "
			 "remove --purge %s deletes %s)", pkg, (long long)ctl_json_int(w->p, "kept_files"),
			 ctl_json_int(w->p, "kept_files") == 1 ? "" : "s", pkg,
			 ctl_json_str(w->p, "kept_version", "?"), pkg,
			 ctl_json_int(w->p, "kept_files") == 1 ? "it" : "them");
	else
		snprintf(msg, size, "package not installed: %s", pkg);
}

static void w_repository_not_found(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "no repository named %s (fatelfctl repo list)",
		 ctl_json_str(w->p, "repository", "?"));
}

static void w_repository_invalid(const words_in *w, char *msg, size_t size)
{
	char code[96];

	/* The message names the file of the repository it is about. */
	snprintf(msg, size, "repository %s: %s%s", ctl_json_str(w->p, "repository", "?"),
		 ctl_json_str(w->p, "message", "refused"), code_suffix(w->p, code));
}

static void w_repository_mismatch(const words_in *w, char *msg, size_t size)
{
	const char *repo = ctl_json_str(w->p, "repository", "?");

	snprintf(msg, size, "repository %s: a mirror served the index of another repository (id %s; "
		 "this machine pinned %s): refused, nothing changed. Check the "
		 "repository's URLs (fatelfctl repo list); if the vendor really replaced the repository, "
		 "fatelfctl repo remove %s, then repo add it again", repo, ctl_json_str(w->p, "got", "none"),
		 ctl_json_str(w->p, "expected", "?"), repo);
}

static void w_repository_expired(const words_in *w, char *msg, size_t size)
{
	const char *repo = ctl_json_str(w->p, "repository", "?");
	time_t t = (time_t)ctl_json_int(w->p, "expires");
	struct tm tm;
	char when[64] = "?";

	if (t > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(msg, size, "repository %s: its index expired at %s, and nothing an expired index says is "
		 "trusted: once the vendor has re-signed it, fatelfctl update fetches the new one (or "
		 "fatelfctl repo remove %s takes the repository out)", repo, when, repo);
}

static void w_path_not_owned(const words_in *w, char *msg, size_t size)
{
	const char *kept_by = ctl_json_str(w->p, "kept_by", NULL);

	if (kept_by)
		snprintf(msg, size, "no package owns %s: a config file %s %s left behind "
			 "(remove --purge %s deletes it)", ctl_json_str(w->p, "path", "?"), kept_by,
			 ctl_json_str(w->p, "kept_version", "?"), kept_by);
	else
		snprintf(msg, size, "no package owns %s", ctl_json_str(w->p, "path", "?"));
}

static void w_no_such_transaction(const words_in *w, char *msg, size_t size)
{
	json_object *id = NULL;
	const char *state = ctl_json_str(w->p, "state", NULL);
	bool has_id = w->p && json_object_object_get_ex(w->p, "id", &id) &&
		      json_object_is_type(id, json_type_int);

	if (has_id && state)
		snprintf(msg, size, "transaction %lld has already ended (%s); nothing to cancel",
			 (long long)json_object_get_int64(id), state);
	else if (has_id)
		snprintf(msg, size, "no such transaction: %lld is neither queued nor running",
			 (long long)json_object_get_int64(id));
	else
		snprintf(msg, size, "no transaction is running");
}

static void w_bundle_invalid(const words_in *w, char *msg, size_t size)
{
	char code[96];

	/* The message names the entry it is about. */
	snprintf(msg, size, "invalid bundle: %s%s", ctl_json_str(w->p, "message", "rejected"),
		 code_suffix(w->p, code));
}

static void w_signature_required(const words_in *w, char *msg, size_t size)
{
	const char *key = ctl_json_str(w->p, "key_id", NULL);
	const char *dir = ctl_json_str(w->p, "keys_dir", "the TrustedKeys directory");
	int64_t nkeys = ctl_json_int(w->p, "keys");

	if (!key)
		snprintf(msg, size, "signature required: the bundle is not signed "
			 "(root may install it with --allow-unsigned)");
	else if (nkeys == 0)
		snprintf(msg, size, "signature required: the bundle is signed by key %s, but no "
			 "trusted key is configured in %s: add the vendor's public key there, "
			 "or install it as root with --allow-unsigned", key, dir);
	else
		snprintf(msg, size, "signature required: the bundle is signed by key %s, which is "
			 "not one of the %lld trusted keys in %s: add the vendor's public key "
			 "there, or install it as root with --allow-unsigned", key,
			 (long long)nkeys, dir);
}

static void w_signature_invalid(const words_in *w, char *msg, size_t size)
{
	char code[96];

	snprintf(msg, size, "bad signature: %s%s", ctl_json_str(w->p, "message", "rejected"),
		 code_suffix(w->p, code));
}

static void w_conflict(const words_in *w, char *msg, size_t size)
{
	const char *owner = ctl_json_str(w->p, "owner", NULL);

	/* Without an owner, the message says what is in the way, by path. */
	if (owner)
		snprintf(msg, size, "conflict: %s belongs to package %s", ctl_json_str(w->p, "path", "?"),
			 owner);
	else
		snprintf(msg, size, "conflict: %s",
			 ctl_json_str(w->p, "message", "the path already exists and no package owns it"));
}

static void w_directory_unsafe(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "unsafe directory: %s is owned by uid %lld with mode %04llo, "
		 "so others could replace what is installed in it (--force as root "
		 "takes it over)", ctl_json_str(w->p, "path", "?"), (long long)ctl_json_int(w->p, "uid"),
		 (unsigned long long)ctl_json_int(w->p, "mode"));
}

static void w_downgrade(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "downgrade: %s %s is installed and the bundle has %s "
		 "(--allow-downgrade allows it)", ctl_json_str(w->p, "package", "?"),
		 ctl_json_str(w->p, "installed", "?"), ctl_json_str(w->p, "offered", "?"));
}

static void w_package_held(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "held: %s is held at %s and the bundle has %s ('fatelfctl unhold %s' "
		 "releases it, or install it as root with --force)", ctl_json_str(w->p, "package", "?"),
		 ctl_json_str(w->p, "installed", "?"), ctl_json_str(w->p, "offered", "?"),
		 ctl_json_str(w->p, "package", "?"));
}

static void w_dependency_missing(const words_in *w, char *msg, size_t size)
{
	const char *c = ctl_json_str(w->p, "constraint", "");

	snprintf(msg, size, "dependency: %s needs %s%s%s%s, installed neither before nor with it "
		 "(install both in one command)", ctl_json_str(w->p, "package", "?"),
		 ctl_json_str(w->p, "dependency", "?"), c[0] ? " (" : "", c, c[0] ? ")" : "");
}

static void w_dependency_broken(const words_in *w, char *msg, size_t size)
{
	json_object *a = NULL;
	size_t len;

	len = (size_t)snprintf(msg, size, "dependency: %s is needed by", ctl_json_str(w->p, "package", "?"));
	if (w->p && json_object_object_get_ex(w->p, "dependents", &a) && json_object_is_type(a, json_type_array))
		for (size_t i = 0; i < json_object_array_length(a) && len < size; i++) {
			const char *s = json_object_get_string(json_object_array_get_idx(a, i));

			len += (size_t)snprintf(msg + len, size - len, "%s %s", i ? "," : "", s ? s : "?");
		}
	if (len >= size)
		return;
	/* install, upgrade: the version offered does not meet their constraint */
	if (w->verb && (strcmp(w->verb, "install") == 0 || strcmp(w->verb, "upgrade") == 0))
		snprintf(msg + len, size - len, ", whose constraint the version offered does not meet "
			 "(install a version that meets it, or them too in the same command)");
	else
		snprintf(msg + len, size - len, " (remove them in the same command, or first)");
}

static void w_key_not_found(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "no trusted key has the id %s (fatelfctl key list)", ctl_json_str(w->p, "id", "?"));
}

static void w_key_invalid(const words_in *w, char *msg, size_t size)
{
	char code[96];

	snprintf(msg, size, "not a usable public key: %s%s", ctl_json_str(w->p, "message", "rejected"),
		 code_suffix(w->p, code));
}

static void w_no_host_record(const words_in *w, char *msg, size_t size)
{
	char targets[512], host[256];

	snprintf(msg, size, "no record for this machine: %s has %s; this host runs %s",
		 ctl_json_str(w->p, "path", "?"),
		 ctl_json_join(ctl_json_array(w->p, "targets"), targets, sizeof(targets)),
		 ctl_json_join(ctl_json_array(w->p, "host"), host, sizeof(host)));
}

static void w_disk_full(const words_in *w, char *msg, size_t size)
{
	char a[32], b[32];

	/* The preflight knows what it needs; a write that ran out of space
	 * midway says which file. */
	if (ctl_json_int(w->p, "needed") <= 0)
		snprintf(msg, size, "disk full: %s",
			 ctl_json_str(w->p, "message", "no space left on the device"));
	else
		snprintf(msg, size, "disk full: needs %s, %s available",
			 fatelf_format_size((uint64_t)ctl_json_int(w->p, "needed"), a),
			 fatelf_format_size((uint64_t)ctl_json_int(w->p, "available"), b));
}

static void w_fetch_failed(const words_in *w, char *msg, size_t size)
{
	/* fatelfd's message names the URL, as far as it may be shown. */
	snprintf(msg, size, "download failed: %s", ctl_json_str(w->p, "message", "failed"));
}

static void w_cancelled(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "cancelled: transaction %lld was rolled back",
		 (long long)ctl_json_int(w->p, "id"));
}

static void w_busy(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "busy: %s", ctl_json_str(w->p, "message", "another transaction runs"));
}

static void w_invalid_policy(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "invalid policy: %s", ctl_json_str(w->p, "message", "rejected"));
}

static void w_root_required(const words_in *w, char *msg, size_t size)
{
	const char *param = ctl_json_str(w->p, "parameter", "?");
	const char *gerund, *who;
	char opt[64];

	/* A verb that is root's whole (repo add, repo remove): the admin
	 * group may call its method but not name what it changes. */
	verb_gerund(w->verb, &gerund, &who);
	if (strcmp(who, "root") == 0) {
		snprintf(msg, size, "permission denied: %s needs root", gerund);
		return;
	}
	/* The parameters are the options' names with dashes, but for the two
	 * sources fatelfctl cannot send itself. */
	if (strcmp(param, "url") == 0)
		snprintf(opt, sizeof(opt), "a file URL");
	else if (strcmp(param, "path") == 0)
		snprintf(opt, sizeof(opt), "a path source");
	else {
		snprintf(opt, sizeof(opt), "--%s", param);
		for (char *q = opt; *q; q++)
			if (*q == '_')
				*q = '-';
	}
	snprintf(msg, size, "permission denied: only root may use %s", opt);
}

static void w_failed(const words_in *w, char *msg, size_t size)
{
	char code[96];

	snprintf(msg, size, "failed: %s%s", ctl_json_str(w->p, "message", "the operation failed"),
		 code_suffix(w->p, code));
}

static void w_permission_denied(const words_in *w, char *msg, size_t size)
{
	const char *gerund, *who;

	verb_gerund(w->verb, &gerund, &who);
	/* The admin group is a setting: say which, and where. */
	if (strcmp(who, "root") == 0)
		snprintf(msg, size, "permission denied: %s needs root", gerund);
	else
		snprintf(msg, size, "permission denied: %s needs %s (AdminGroup= in %s)", gerund, who,
			 CTL_CONFIG_PATH);
}

static void w_invalid_parameter(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "invalid parameter: fatelfd refused '%s'", ctl_json_str(w->p, "parameter", "?"));
}

static void w_method_not_found(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "fatelfd does not know %s (is it an older version?)",
		 ctl_json_str(w->p, "method", "the method"));
}

static void w_interface_not_found(const words_in *w, char *msg, size_t size)
{
	snprintf(msg, size, "the service at %s does not offer %s (is it fatelfd?)",
		 w->socket ? w->socket : "?", ctl_json_str(w->p, "interface", CTL_INTERFACE));
}

static void w_expected_more(const words_in *w, char *msg, size_t size)
{
	(void)w;
	snprintf(msg, size, "protocol error: fatelfd expected a streaming call");
}

#define M(name) CTL_INTERFACE "." name
#define S(name) "org.varlink.service." name

static const struct {
	const char *error;
	int status;
	void (*say)(const words_in *w, char *msg, size_t size);
} words[] = {
	{ M("PackageNotFound"), EXIT_FAILED, w_package_not_found },
	{ M("RepositoryNotFound"), EXIT_FAILED, w_repository_not_found },
	{ M("RepositoryInvalid"), EXIT_REPOSITORY, w_repository_invalid },
	{ M("RepositoryMismatch"), EXIT_REPOSITORY, w_repository_mismatch },
	{ M("RepositoryExpired"), EXIT_REPOSITORY, w_repository_expired },
	{ M("PathNotOwned"), EXIT_FAILED, w_path_not_owned },
	{ M("NoSuchTransaction"), EXIT_FAILED, w_no_such_transaction },
	{ M("BundleInvalid"), EXIT_FAILED, w_bundle_invalid },
	{ M("SignatureRequired"), EXIT_FAILED, w_signature_required },
	{ M("SignatureInvalid"), EXIT_FAILED, w_signature_invalid },
	{ M("Conflict"), EXIT_FAILED, w_conflict },
	{ M("DirectoryUnsafe"), EXIT_FAILED, w_directory_unsafe },
	{ M("Downgrade"), EXIT_FAILED, w_downgrade },
	{ M("PackageHeld"), EXIT_FAILED, w_package_held },
	{ M("DependencyMissing"), EXIT_FAILED, w_dependency_missing },
	{ M("DependencyBroken"), EXIT_FAILED, w_dependency_broken },
	{ M("KeyNotFound"), EXIT_FAILED, w_key_not_found },
	{ M("KeyInvalid"), EXIT_FAILED, w_key_invalid },
	{ M("NoHostRecord"), EXIT_FAILED, w_no_host_record },
	{ M("DiskFull"), EXIT_FAILED, w_disk_full },
	{ M("FetchFailed"), EXIT_FAILED, w_fetch_failed },
	{ M("Cancelled"), EXIT_FAILED, w_cancelled },
	{ M("Busy"), EXIT_FAILED, w_busy },
	{ M("InvalidPolicy"), EXIT_FAILED, w_invalid_policy },
	{ M("RootRequired"), EXIT_DENIED, w_root_required },
	{ M("Failed"), EXIT_FAILED, w_failed },
	{ S("PermissionDenied"), EXIT_DENIED, w_permission_denied },
	{ S("InvalidParameter"), EXIT_FAILED, w_invalid_parameter },
	{ S("MethodNotFound"), EXIT_SYSTEM, w_method_not_found },
	{ S("MethodNotImplemented"), EXIT_SYSTEM, w_method_not_found },
	{ S("InterfaceNotFound"), EXIT_SYSTEM, w_interface_not_found },
	{ S("ExpectedMore"), EXIT_SYSTEM, w_expected_more },
};

int ctl_error_words(const char *error, json_object *params, const char *verb, const char *socket,
		    char *msg, size_t size)
{
	const words_in w = { .p = params, .verb = verb, .socket = socket };

	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (strcmp(words[i].error, error) == 0) {
			words[i].say(&w, msg, size);
			return words[i].status;
		}
	snprintf(msg, size, "%s: %s", error,
		 params ? json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE)
			: "{}");
	return EXIT_FAILED;
}

const char *ctl_words_error(size_t i)
{
	return i < ARRAY_SIZE(words) ? words[i].error : NULL;
}
