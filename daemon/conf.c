/*
 * The daemon's configuration: fatelfd.conf and its drop-ins
 * (fatelfd.conf.d/ *.conf) parsed into an engine_config, and the trusted
 * minisign keys of its TrustedKeys directory. The format is a small INI
 * dialect (see fatelfd.conf(5)); every key is listed in one table with its
 * section and value parser, so an unknown key, a misplaced one or a bad
 * value is refused with the file, the line and the key, which is what the
 * daemon prints when it refuses to start. A load that fails leaves the
 * caller's config as it was.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "array.h"
#include "ini.h"
#include "io.h"
#include "macro.h"
#include "path.h"
#include "text.h"

#define CONF_FILE_MAX (1u << 20)
#define CONF_MESSAGE_MIN (4u << 10)     /* a Varlink message smaller than this holds no reply */
#define CONF_MESSAGE_MAX (1u << 30)

/* What the keys' own parsers share across the files of one load. */
typedef struct conf_ctx {
	engine_config *c;
	/* Policy=targets is checked against Targets= once every file is read,
	 * but reported at the line that asked for it. */
	char policy_at[4200];
} conf_ctx;

/* ------------------------------------------------------------ values */

static int set_string(ini_file *f, char **field, const char *value)
{
	char *s = NULL;

	if (value) {
		s = strdup(value);
		if (!s)
			return fatelf_diag_oom(f->d);
	}
	free(*field);
	*field = s;
	return 0;
}

/* A group name or number; empty: none (root only). */
static int parse_group(ini_file *f, const ini_key *k, const char *value, void *field)
{
	char q[FATELF_TEXT_QUOTE_BUF];

	if (!*value)
		return set_string(f, field, NULL);
	for (const char *p = value; *p; p++)
		if (isspace((unsigned char)*p) || *p == ':' || *p == '/' || iscntrl((unsigned char)*p))
			return ini_error(f, -EINVAL, k->name, "'%s' is not a group name", fatelf_text_quote(value, q));
	return set_string(f, field, value);
}

static int parse_policy(ini_file *f, const ini_key *k, const char *value, void *field)
{
	conf_ctx *x = f->userdata;
	char q[FATELF_TEXT_QUOTE_BUF];
	int policy;

	if (engine_policy_from_name(value, &policy) < 0)
		return ini_error(f, -EINVAL, k->name,
				 "unknown policy '%s' (native, compatible, keep or targets)",
				 fatelf_text_quote(value, q));
	x->c->policy.policy = policy;
	snprintf(x->policy_at, sizeof(x->policy_at), "%s:%u", f->name, f->line);
	return 0;
}

/* The whole list is replaced; an empty value clears it. */
static int parse_targets(ini_file *f, const ini_key *k, const char *value, void *field)
{
	conf_ctx *x = f->userdata;
	engine_policy_spec *cur = &x->c->policy, spec;
	char text[INI_LINE_MAX + 16];
	fatelf_diag sub;
	int r;

	memset(&spec, 0, sizeof(spec));
	if (*value) {
		snprintf(text, sizeof(text), "targets:%s", value);
		fatelf_diag_clear(&sub);
		r = engine_policy_spec_parse(text, &spec, &sub);
		if (r == -ENOMEM)
			return fatelf_diag_oom(f->d);
		if (r < 0)
			return ini_error(f, -EINVAL, k->name, "%s", sub.msg);
	}
	spec.policy = cur->policy;
	engine_policy_spec_done(cur);
	*cur = spec;
	return 0;
}

/* Space-separated absolute globs, added to the list; empty clears it. */
static int parse_keep_fat(ini_file *f, const ini_key *k, const char *value, void *field)
{
	engine_config *c = ((conf_ctx *)f->userdata)->c;
	char q[FATELF_TEXT_QUOTE_BUF];
	size_t n = 0, add = 0;
	char **list;
	const char *p;

	if (!*value) {
		for (size_t i = 0; i < c->nkeep_fat; i++)
			free(c->keep_fat[i]);
		free(c->keep_fat);
		c->keep_fat = NULL;
		c->nkeep_fat = 0;
		return 0;
	}
	for (p = value; *p; p += strspn(p, " \t")) {
		size_t len = strcspn(p, " \t");

		if (len == 0)
			continue;
		if (p[0] != '/')
			return ini_error(f, -EINVAL, k->name, "'%s' is not an absolute path glob",
					 fatelf_text_quote_n(p, len, q));
		add++;
		p += len;
	}
	list = reallocarray(c->keep_fat, c->nkeep_fat + add, sizeof(*list));
	if (!list)
		return fatelf_diag_oom(f->d);
	c->keep_fat = list;
	for (p = value; *p && n < add; p += strspn(p, " \t")) {
		size_t len = strcspn(p, " \t");
		char *g;

		if (len == 0)
			continue;
		g = strndup(p, len);
		if (!g)
			return fatelf_diag_oom(f->d);
		c->keep_fat[c->nkeep_fat++] = g;
		n++;
		p += len;
	}
	return 0;
}

/* Appends to the list (repeatable, separated by spaces or commas); an
 * empty value clears it, defaults included. */
static int parse_netranges(ini_file *f, const ini_key *k, const char *value, void *field)
{
	fatelf_netranges *l = field;
	fatelf_diag sub = { 0 };

	if (!*value) {
		l->n = 0;
		return 0;
	}
	if (fatelf_netranges_add(l, value, &sub) < 0)
		return ini_error(f, -EINVAL, k->name, "%s", sub.msg);
	return 0;
}

/* A proxy URL: http, https or socks5h, a host, an optional port, nothing
 * else. Credentials are refused: the helper gets the proxy on its command
 * line, which every local user can read in /proc. Empty: no proxy. */
static int parse_proxy(ini_file *f, const ini_key *k, const char *value, void *field)
{
	static const char *const schemes[] = { "http://", "https://", "socks5h://" };
	char *out = field, q[FATELF_TEXT_QUOTE_BUF];
	const char *host = NULL, *p;
	size_t len = strlen(value);

	if (!*value) {
		out[0] = '\0';
		return 0;
	}
	if (len >= ENGINE_PROXY_MAX)
		return ini_error(f, -EINVAL, k->name, "longer than %d bytes", ENGINE_PROXY_MAX - 1);
	for (size_t i = 0; i < ARRAY_SIZE(schemes) && !host; i++)
		if (strncasecmp(value, schemes[i], strlen(schemes[i])) == 0)
			host = value + strlen(schemes[i]);
	if (!host)
		return ini_error(f, -EINVAL, k->name, "'%s' is not an http://, https:// or socks5h:// URL",
				 fatelf_text_quote(value, q));
	if (!*host || *host == '/' || *host == ':')
		return ini_error(f, -EINVAL, k->name, "'%s' names no host", fatelf_text_quote(value, q));
	for (p = host; *p && *p != '/'; p++) {
		if (*p == '@')
			return ini_error(f, -EINVAL, k->name, "a proxy URL may not hold credentials "
					 "(the download helper's command line is public)");
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '?' || *p == '#')
			return ini_error(f, -EINVAL, k->name, "'%s' is not a host[:port]", fatelf_text_quote(value, q));
	}
	if (*p && strcmp(p, "/") != 0)
		return ini_error(f, -EINVAL, k->name, "'%s' has a path; a proxy is scheme://host[:port]",
				 fatelf_text_quote(value, q));
	memcpy(out, value, len + 1);
	return 0;
}

/* node_exporter's textfile collector reads *.prom files only; empty: none. */
static int parse_metrics_file(ini_file *f, const ini_key *k, const char *value, void *field)
{
	char q[FATELF_TEXT_QUOTE_BUF];
	size_t len = strlen(value);

	if (!*value)
		return set_string(f, field, NULL);
	if (value[0] != '/' || len <= 6 || strcmp(value + len - 5, ".prom") != 0 || value[len - 6] == '/')
		return ini_error(f, -EINVAL, k->name, "'%s' is not an absolute path of a file ending in .prom "
				 "(node_exporter's textfile collector reads *.prom only)", fatelf_text_quote(value, q));
	return set_string(f, field, value);
}

#define DAEMON(key, t, f, lo, hi) \
	{ .section = "Daemon", .name = key, .type = t, .offset = offsetof(engine_config, f), .min = lo, .max = hi }
#define DAEMON_FN(key, f, fn) \
	{ .section = "Daemon", .name = key, .type = INI_CUSTOM, .offset = offsetof(engine_config, f), .parse = fn }
#define POLICY(key, f, fn) \
	{ .section = "Policy", .name = key, .type = INI_CUSTOM, .offset = offsetof(engine_config, f), .parse = fn }
static const ini_key conf_keys[] = {
	DAEMON_FN("AdminGroup", admin_group, parse_group),
	DAEMON("TrustedKeys", INI_PATH, trusted_keys, 0, 0),
	DAEMON("Repositories", INI_PATH, repos_dir, 0, 0),
	DAEMON("Registries", INI_PATH, registries_dir, 0, 0),
	DAEMON("RequireSignature", INI_BOOL, require_signature, 0, 0),
	DAEMON("Durable", INI_BOOL, durable, 0, 0),
	DAEMON("RunLdconfig", INI_BOOL, ldconfig, 0, 0),
	DAEMON("LdconfigPath", INI_PATH, ldconfig_path, 0, 0),
	DAEMON("MaxEntries", INI_SIZE, limits.max_entries, 1, SIZE_MAX),
	/* a path longer than PATH_MAX - 1 cannot be created anyway */
	DAEMON("MaxPathLength", INI_SIZE, limits.max_path, 1, 4095),
	DAEMON("MaxTotalSize", INI_BYTES, limits.max_total, 1, UINT64_MAX),
	DAEMON("MaxMessageSize", INI_BYTES, max_message, CONF_MESSAGE_MIN, CONF_MESSAGE_MAX),
	DAEMON("MaxConnectionsPerUser", INI_UNSIGNED, max_connections_per_uid, 1, 65536),
	DAEMON("MaxBufferedPerUser", INI_BYTES, max_buffered_per_uid, 64u << 10, (uint64_t)1 << 40),
	DAEMON("MaxBufferedTotal", INI_BYTES, max_buffered_total, 64u << 10, (uint64_t)1 << 40),
	DAEMON("FetchTimeoutSec", INI_UNSIGNED, fetch_timeout, 1, 86400),
	DAEMON("FetchDeadlineSec", INI_UNSIGNED, fetch_deadline, 0, 604800),
	DAEMON("FetchMinRateBytes", INI_BYTES, fetch_min_rate, 0, 1u << 30),
	DAEMON("FetchLowSpeedSec", INI_UNSIGNED, fetch_low_speed, 1, 86400),
	DAEMON_FN("FetchDenyNetworks", fetch_deny, parse_netranges),
	DAEMON_FN("FetchProxy", fetch_proxy, parse_proxy),
	DAEMON_FN("MetricsFile", metrics_file, parse_metrics_file),
	POLICY("Policy", policy, parse_policy),
	POLICY("Targets", policy, parse_targets),
	POLICY("KeepFat", keep_fat, parse_keep_fat),
};
#undef DAEMON
#undef DAEMON_FN
#undef POLICY

/* ------------------------------------------------------------ files */

/* The whole file; -ENOENT is returned without a message (the caller
 * decides whether a missing file is an error). */
static int conf_read(const char *path, char **ret_text, size_t *ret_len, fatelf_diag *d)
{
	int r = read_file_max(AT_FDCWD, path, 0, CONF_FILE_MAX, ret_text, ret_len);

	if (r == -ENOENT || r == 0)
		return r;
	if (r == -ENOMEM)
		return fatelf_diag_oom(d);
	if (d)
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	if (r == -EFBIG)
		return fatelf_diag_set(d, -EINVAL, -1, "%s: larger than 1 MiB", path);
	return fatelf_diag_set(d, r, -1, "%s: cannot read: %s", path, strerror(-r));
}

static int conf_load_file(conf_ctx *x, const char *path, bool missing_ok, fatelf_diag *d)
{
	const ini_table t = {
		.keys = conf_keys,
		.nkeys = ARRAY_SIZE(conf_keys),
		.base = x->c,
		.userdata = x,
	};
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	r = conf_read(path, &text, &len, d);
	if (r == -ENOENT && missing_ok)
		return 0;
	if (r == -ENOENT) {
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, r, -1, "%s: cannot read: %s", path, strerror(ENOENT));
	}
	if (r < 0)
		return r;
	return ini_parse(&t, path, text, len, d);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls > lx && strcmp(s + ls - lx, suffix) == 0;
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* A directory's names as dir_list gives them, freed by _cleanup_names_. */
struct names {
	char **v;
	size_t n;
};

static void names_done(struct names *nm)
{
	names_free(nm->v, nm->n);
}

#define _cleanup_names_ _cleanup_(names_done)

/*
 * The names in dir that end in suffix (hidden files left out), in strcmp
 * order. A missing directory has none.
 */
static int dir_list(const char *dir, const char *suffix, char ***ret, size_t *ret_n, fatelf_diag *d)
{
	DIR *dh = opendir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;

	if (!dh) {
		if (errno == ENOENT) {
			*ret = NULL;
			*ret_n = 0;
			return 0;
		}
		r = -errno;
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", dir);
		return fatelf_diag_set(d, r, -1, "%s: cannot open the directory: %s", dir,
				       strerror(-r));
	}
	for (;;) {
		errno = 0;
		de = readdir(dh);
		if (!de) {
			if (errno) {
				r = fatelf_diag_set(d, -errno, -1, "%s: cannot read the directory: %s",
						    dir, strerror(errno));
				goto out;
			}
			break;
		}
		if (de->d_name[0] == '.' || !has_suffix(de->d_name, suffix))
			continue;
		if (GROW_ARRAY(names, cap, n + 1) < 0) {
			r = fatelf_diag_oom(d);
			goto out;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = fatelf_diag_oom(d);
			goto out;
		}
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
out:
	closedir(dh);
	if (r < 0) {
		names_free(names, n);
		return r;
	}
	*ret = names;
	*ret_n = n;
	return 0;
}

int engine_config_load(engine_config *c, const char *path, fatelf_diag *d)
{
	_cleanup_engine_config_ engine_config tmp = { 0 };
	_cleanup_free_ char *dropdir = NULL;
	_cleanup_names_ struct names nm = { 0 };
	conf_ctx x = { 0 };
	int r;

	if (!c || !path || !*path)
		return fatelf_diag_set(d, -EINVAL, -1, "no configuration file given");
	if (!c->root || !c->state_dir || !c->trusted_keys || !c->ldconfig_path)
		return fatelf_diag_oom(d);
	if (engine_config_copy(&tmp, c) < 0)
		return fatelf_diag_oom(d);
	x.c = &tmp;

	r = conf_load_file(&x, path, true, d);
	if (r < 0)
		return r;

	dropdir = malloc(strlen(path) + 3);
	if (!dropdir)
		return fatelf_diag_oom(d);
	memcpy(dropdir, path, strlen(path));
	memcpy(dropdir + strlen(path), ".d", 3);
	r = dir_list(dropdir, ".conf", &nm.v, &nm.n, d);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nm.n; i++) {
		_cleanup_free_ char *p = path_join(dropdir, nm.v[i]);

		if (!p)
			return fatelf_diag_oom(d);
		r = conf_load_file(&x, p, false, d);
		if (r < 0)
			return r;
	}

	if (tmp.policy.policy == ENGINE_POLICY_TARGETS && tmp.policy.ntargets == 0) {
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, -EINVAL, -1, "%s: Policy: targets needs a Targets= list",
				       x.policy_at[0] ? x.policy_at : path);
	}
	/* Targets= only means something with Policy=targets; the policy
	 * reported and stored is the one in force. */
	if (tmp.policy.policy != ENGINE_POLICY_TARGETS) {
		int policy = tmp.policy.policy;

		engine_policy_spec_done(&tmp.policy);
		tmp.policy.policy = policy;
	}
	engine_config_done(c);
	*c = tmp;
	memset(&tmp, 0, sizeof(tmp));
	return 0;
}

int engine_config_load_keys(const engine_config *c, fatelf_ms_pubkey **ret_keys, size_t *ret_n,
			    fatelf_diag *d)
{
	_cleanup_names_ struct names nm = { 0 };
	_cleanup_free_ fatelf_ms_pubkey *keys = NULL;
	int r;

	if (!c->trusted_keys)
		return fatelf_diag_set(d, -EINVAL, -1, "no TrustedKeys directory");
	r = dir_list(c->trusted_keys, ".pub", &nm.v, &nm.n, d);
	if (r < 0)
		return r;
	if (nm.n > 0) {
		keys = calloc(nm.n, sizeof(*keys));
		if (!keys)
			return fatelf_diag_oom(d);
	}
	for (size_t i = 0; i < nm.n; i++) {
		_cleanup_free_ char *p = path_join(c->trusted_keys, nm.v[i]);
		fatelf_diag sub;

		if (!p)
			return fatelf_diag_oom(d);
		fatelf_diag_clear(&sub);
		r = fatelf_ms_pubkey_load(p, &keys[i], &sub);
		if (r < 0) {
			if (d)
				snprintf(d->subject, sizeof(d->subject), "%s", p);
			return fatelf_diag_set(d, r, -1, "%s: %s", p, fatelf_diag_text(&sub, r));
		}
	}
	*ret_keys = TAKE_PTR(keys);
	*ret_n = nm.n;
	return nm.n > INT_MAX ? INT_MAX : (int)nm.n;
}
