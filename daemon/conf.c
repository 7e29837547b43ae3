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
#include "io.h"
#include "macro.h"
#include "path.h"

#define CONF_LINE_MAX 4096u             /* bytes in a line, without its newline */
#define CONF_FILE_MAX (1u << 20)
#define CONF_MESSAGE_MIN (4u << 10)     /* a Varlink message smaller than this holds no reply */
#define CONF_MESSAGE_MAX (1u << 30)

enum conf_section {
	SECTION_NONE = 0,
	SECTION_DAEMON,
	SECTION_POLICY,
};

static const char *const section_names[] = {
	[SECTION_DAEMON] = "Daemon",
	[SECTION_POLICY] = "Policy",
};

/* Where a parse is: the file and line every message starts with. */
typedef struct conf_ctx {
	engine_config *c;
	const char *file;
	unsigned line;
	int section;
	/* Policy=targets is checked against Targets= once every file is read,
	 * but reported at the line that asked for it. */
	char policy_at[4200];
	fatelf_diag *d;
} conf_ctx;

/* "FILE:LINE: KEY: rule" */
static int conf_error(conf_ctx *x, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int conf_error(conf_ctx *x, const char *key, const char *fmt, ...)
{
	char rule[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	if (x->d)
		snprintf(x->d->subject, sizeof(x->d->subject), "%s", x->file);
	return fatelf_diag_set(x->d, -EINVAL, -1, "%s:%u: %.64s: %s", x->file, x->line, key, rule);
}

/* ------------------------------------------------------------ values */

typedef struct conf_key conf_key;
typedef int (*conf_parse_fn)(conf_ctx *x, const conf_key *k, const char *value, void *field);

struct conf_key {
	int section;
	const char *name;
	conf_parse_fn parse;
	size_t offset;                  /* of the field in engine_config */
	uint64_t min, max;              /* numbers */
};

static int parse_bool(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	static const char *const yes[] = { "yes", "true", "1" };
	static const char *const no[] = { "no", "false", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
		if (strcasecmp(value, yes[i]) == 0) {
			*(bool *)field = true;
			return 0;
		}
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		if (strcasecmp(value, no[i]) == 0) {
			*(bool *)field = false;
			return 0;
		}
	return conf_error(x, k->name, "'%.64s' is not a boolean (yes, no, true, false, 1 or 0)",
			  value);
}

static int set_string(conf_ctx *x, char **field, const char *value)
{
	char *s = NULL;

	if (value) {
		s = strdup(value);
		if (!s)
			return fatelf_diag_set(x->d, -ENOMEM, -1, "out of memory");
	}
	free(*field);
	*field = s;
	return 0;
}

static int parse_abs_path(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	if (value[0] != '/')
		return conf_error(x, k->name, "'%.64s' is not an absolute path", value);
	return set_string(x, field, value);
}

/* A group name or number; empty: none (root only). */
static int parse_group(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	if (!*value)
		return set_string(x, field, NULL);
	for (const char *p = value; *p; p++)
		if (isspace((unsigned char)*p) || *p == ':' || *p == '/' || iscntrl((unsigned char)*p))
			return conf_error(x, k->name, "'%.64s' is not a group name", value);
	return set_string(x, field, value);
}

/* Decimal digits only: no sign, no base prefix, no overflow. */
static int parse_decimal(const char *s, uint64_t *ret, const char **ret_end)
{
	uint64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned digit = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - digit) / 10)
			return -ERANGE;
		v = v * 10 + digit;
	}
	*ret = v;
	*ret_end = p;
	return 0;
}

/* Bytes, with an optional K, M, G or T (powers of 1024; "KiB" too). */
static int parse_bytes_value(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; unsigned shift; } units[] = {
		{ "", 0 }, { "B", 0 },
		{ "K", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GiB", 30 }, { "T", 40 }, { "TiB", 40 },
	};
	const char *end;
	uint64_t v;
	int r;

	r = parse_decimal(s, &v, &end);
	if (r < 0)
		return r;
	end += strspn(end, " \t");
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (strcmp(end, units[i].suffix) == 0) {
			if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
				return -ERANGE;
			*ret = v << units[i].shift;
			return 0;
		}
	return -EINVAL;
}

static int check_range(conf_ctx *x, const conf_key *k, const char *value, uint64_t v)
{
	if (v < k->min || v > k->max)
		return conf_error(x, k->name, "%.64s is out of range (%llu to %llu)", value,
				  (unsigned long long)k->min, (unsigned long long)k->max);
	return 0;
}

static int parse_count(conf_ctx *x, const conf_key *k, const char *value, uint64_t *ret)
{
	const char *end;
	uint64_t v;
	int r = parse_decimal(value, &v, &end);

	if (r == -ERANGE)
		return conf_error(x, k->name, "%.64s is out of range (%llu to %llu)", value,
				  (unsigned long long)k->min, (unsigned long long)k->max);
	if (r < 0 || *end)
		return conf_error(x, k->name, "'%.64s' is not a whole number", value);
	r = check_range(x, k, value, v);
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

static int parse_size_t(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	uint64_t v;
	int r = parse_count(x, k, value, &v);

	if (r == 0)
		*(size_t *)field = (size_t)v;
	return r;
}

static int parse_unsigned(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	uint64_t v;
	int r = parse_count(x, k, value, &v);

	if (r == 0)
		*(unsigned *)field = (unsigned)v;
	return r;
}

static int parse_bytes(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	uint64_t v;
	int r = parse_bytes_value(value, &v);

	if (r == -ERANGE)
		return conf_error(x, k->name, "%.64s is out of range", value);
	if (r < 0)
		return conf_error(x, k->name,
				  "'%.64s' is not a size (bytes, or a number with K, M, G or T)", value);
	r = check_range(x, k, value, v);
	if (r < 0)
		return r;
	*(uint64_t *)field = v;
	return 0;
}

static int parse_policy(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	int policy;

	if (engine_policy_from_name(value, &policy) < 0)
		return conf_error(x, k->name,
				  "unknown policy '%.64s' (native, compatible, keep or targets)", value);
	x->c->policy.policy = policy;
	snprintf(x->policy_at, sizeof(x->policy_at), "%s:%u", x->file, x->line);
	return 0;
}

/* The whole list is replaced; an empty value clears it. */
static int parse_targets(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	engine_policy_spec *cur = &x->c->policy, spec;
	char text[CONF_LINE_MAX + 16];
	fatelf_diag sub;
	int r;

	memset(&spec, 0, sizeof(spec));
	if (*value) {
		snprintf(text, sizeof(text), "targets:%s", value);
		fatelf_diag_clear(&sub);
		r = engine_policy_spec_parse(text, &spec, &sub);
		if (r == -ENOMEM)
			return fatelf_diag_set(x->d, r, -1, "out of memory");
		if (r < 0)
			return conf_error(x, k->name, "%s", sub.msg);
	}
	spec.policy = cur->policy;
	engine_policy_spec_done(cur);
	*cur = spec;
	return 0;
}

/* Space-separated absolute globs, added to the list; empty clears it. */
static int parse_keep_fat(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	engine_config *c = x->c;
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
			return conf_error(x, k->name, "'%.*s' is not an absolute path glob",
					  (int)MIN(len, 64), p);
		add++;
		p += len;
	}
	list = reallocarray(c->keep_fat, c->nkeep_fat + add, sizeof(*list));
	if (!list)
		return fatelf_diag_set(x->d, -ENOMEM, -1, "out of memory");
	c->keep_fat = list;
	for (p = value; *p && n < add; p += strspn(p, " \t")) {
		size_t len = strcspn(p, " \t");
		char *g;

		if (len == 0)
			continue;
		g = strndup(p, len);
		if (!g)
			return fatelf_diag_set(x->d, -ENOMEM, -1, "out of memory");
		c->keep_fat[c->nkeep_fat++] = g;
		n++;
		p += len;
	}
	return 0;
}

/* Appends to the list (repeatable, separated by spaces or commas); an
 * empty value clears it, defaults included. */
static int parse_netranges(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	fatelf_netranges *l = field;
	fatelf_diag sub = { 0 };

	if (!*value) {
		l->n = 0;
		return 0;
	}
	if (fatelf_netranges_add(l, value, &sub) < 0)
		return conf_error(x, k->name, "%s", sub.msg);
	return 0;
}

/* A proxy URL: http, https or socks5h, a host, an optional port, nothing
 * else. Credentials are refused: the helper gets the proxy on its command
 * line, which every local user can read in /proc. Empty: no proxy. */
static int parse_proxy(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	static const char *const schemes[] = { "http://", "https://", "socks5h://" };
	char *out = field;
	const char *host = NULL, *p;
	size_t len = strlen(value);

	if (!*value) {
		out[0] = '\0';
		return 0;
	}
	if (len >= ENGINE_PROXY_MAX)
		return conf_error(x, k->name, "longer than %d bytes", ENGINE_PROXY_MAX - 1);
	for (size_t i = 0; i < ARRAY_SIZE(schemes) && !host; i++)
		if (strncasecmp(value, schemes[i], strlen(schemes[i])) == 0)
			host = value + strlen(schemes[i]);
	if (!host)
		return conf_error(x, k->name, "'%.64s' is not an http://, https:// or socks5h:// URL", value);
	if (!*host || *host == '/' || *host == ':')
		return conf_error(x, k->name, "'%.64s' names no host", value);
	for (p = host; *p && *p != '/'; p++) {
		if (*p == '@')
			return conf_error(x, k->name, "a proxy URL may not hold credentials "
					  "(the download helper's command line is public)");
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == '?' || *p == '#')
			return conf_error(x, k->name, "'%.64s' is not a host[:port]", value);
	}
	if (*p && strcmp(p, "/") != 0)
		return conf_error(x, k->name, "'%.64s' has a path; a proxy is scheme://host[:port]", value);
	memcpy(out, value, len + 1);
	return 0;
}

/* node_exporter's textfile collector reads *.prom files only; empty: none. */
static int parse_metrics_file(conf_ctx *x, const conf_key *k, const char *value, void *field)
{
	size_t len = strlen(value);

	if (!*value)
		return set_string(x, field, NULL);
	if (value[0] != '/' || len <= 6 || strcmp(value + len - 5, ".prom") != 0 || value[len - 6] == '/')
		return conf_error(x, k->name, "'%.64s' is not an absolute path of a file ending in .prom "
				  "(node_exporter's textfile collector reads *.prom only)", value);
	return set_string(x, field, value);
}

#define FIELD(f) offsetof(engine_config, f)
static const conf_key conf_keys[] = {
	{ SECTION_DAEMON, "AdminGroup", parse_group, FIELD(admin_group), 0, 0 },
	{ SECTION_DAEMON, "TrustedKeys", parse_abs_path, FIELD(trusted_keys), 0, 0 },
	{ SECTION_DAEMON, "Repositories", parse_abs_path, FIELD(repos_dir), 0, 0 },
	{ SECTION_DAEMON, "Registries", parse_abs_path, FIELD(registries_dir), 0, 0 },
	{ SECTION_DAEMON, "RequireSignature", parse_bool, FIELD(require_signature), 0, 0 },
	{ SECTION_DAEMON, "Durable", parse_bool, FIELD(durable), 0, 0 },
	{ SECTION_DAEMON, "RunLdconfig", parse_bool, FIELD(ldconfig), 0, 0 },
	{ SECTION_DAEMON, "LdconfigPath", parse_abs_path, FIELD(ldconfig_path), 0, 0 },
	{ SECTION_DAEMON, "MaxEntries", parse_size_t, FIELD(limits.max_entries), 1, SIZE_MAX },
	/* a path longer than PATH_MAX - 1 cannot be created anyway */
	{ SECTION_DAEMON, "MaxPathLength", parse_size_t, FIELD(limits.max_path), 1, 4095 },
	{ SECTION_DAEMON, "MaxTotalSize", parse_bytes, FIELD(limits.max_total), 1, UINT64_MAX },
	{ SECTION_DAEMON, "MaxMessageSize", parse_bytes, FIELD(max_message),
	  CONF_MESSAGE_MIN, CONF_MESSAGE_MAX },
	{ SECTION_DAEMON, "MaxConnectionsPerUser", parse_unsigned, FIELD(max_connections_per_uid),
	  1, 65536 },
	{ SECTION_DAEMON, "MaxBufferedPerUser", parse_bytes, FIELD(max_buffered_per_uid),
	  64u << 10, (uint64_t)1 << 40 },
	{ SECTION_DAEMON, "MaxBufferedTotal", parse_bytes, FIELD(max_buffered_total),
	  64u << 10, (uint64_t)1 << 40 },
	{ SECTION_DAEMON, "FetchTimeoutSec", parse_unsigned, FIELD(fetch_timeout), 1, 86400 },
	{ SECTION_DAEMON, "FetchDeadlineSec", parse_unsigned, FIELD(fetch_deadline), 0, 604800 },
	{ SECTION_DAEMON, "FetchMinRateBytes", parse_bytes, FIELD(fetch_min_rate), 0, 1u << 30 },
	{ SECTION_DAEMON, "FetchLowSpeedSec", parse_unsigned, FIELD(fetch_low_speed), 1, 86400 },
	{ SECTION_DAEMON, "FetchDenyNetworks", parse_netranges, FIELD(fetch_deny), 0, 0 },
	{ SECTION_DAEMON, "FetchProxy", parse_proxy, FIELD(fetch_proxy), 0, 0 },
	{ SECTION_DAEMON, "MetricsFile", parse_metrics_file, FIELD(metrics_file), 0, 0 },
	{ SECTION_POLICY, "Policy", parse_policy, FIELD(policy), 0, 0 },
	{ SECTION_POLICY, "Targets", parse_targets, FIELD(policy), 0, 0 },
	{ SECTION_POLICY, "KeepFat", parse_keep_fat, FIELD(keep_fat), 0, 0 },
};
#undef FIELD

/* ------------------------------------------------------------ lines */

static char *trim(char *s)
{
	size_t n;

	s += strspn(s, " \t\r\f\v");
	n = strlen(s);
	while (n > 0 && strchr(" \t\r\f\v", s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int conf_section_line(conf_ctx *x, char *line)
{
	size_t n = strlen(line);

	if (n < 2 || line[n - 1] != ']')
		return conf_error(x, line, "a section header is '[Name]' alone on its line");
	line[n - 1] = '\0';
	for (size_t i = 1; i < ARRAY_SIZE(section_names); i++)
		if (strcmp(line + 1, section_names[i]) == 0) {
			x->section = (int)i;
			return 0;
		}
	line[n - 1] = ']';
	return conf_error(x, line, "unknown section (only [Daemon] and [Policy])");
}

static int conf_key_line(conf_ctx *x, char *line)
{
	char *eq = strchr(line, '=');
	const char *key, *value;
	const conf_key *other = NULL;

	if (!eq)
		return conf_error(x, "syntax", "'%.48s' is not a [Section] header, a Key=Value line or a comment",
				  line);
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (!*key)
		return conf_error(x, "syntax", "'=%.48s' has no key", value);

	for (size_t i = 0; i < ARRAY_SIZE(conf_keys); i++) {
		const conf_key *k = &conf_keys[i];

		if (strcmp(k->name, key) != 0)
			continue;
		if (k->section == x->section)
			return k->parse(x, k, value, (char *)x->c + k->offset);
		other = k;
	}
	if (x->section == SECTION_NONE)
		return conf_error(x, key, "key outside a section (put it under [Daemon] or [Policy])");
	if (other)
		return conf_error(x, key, "unknown key in [%s] (it belongs in [%s])",
				  section_names[x->section], section_names[other->section]);
	return conf_error(x, key, "unknown key in [%s]", section_names[x->section]);
}

static int conf_parse(conf_ctx *x, const char *text, size_t len)
{
	char buf[CONF_LINE_MAX + 1];
	size_t pos = 0;

	x->section = SECTION_NONE;
	x->line = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = (nl ? (size_t)(nl - text) : len) - pos;
		char *line;
		int r;

		x->line++;
		if (n > CONF_LINE_MAX)
			return conf_error(x, "syntax", "line is longer than %u bytes", CONF_LINE_MAX);
		if (memchr(text + pos, '\0', n))
			return conf_error(x, "syntax", "line holds a NUL byte");
		memcpy(buf, text + pos, n);
		buf[n] = '\0';
		pos += n + 1;

		line = trim(buf);
		if (!*line || *line == '#' || *line == ';')
			continue;
		r = *line == '[' ? conf_section_line(x, line) : conf_key_line(x, line);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ------------------------------------------------------------ files */

/* The whole file; -ENOENT is returned without a message (the caller
 * decides whether a missing file is an error). */
static int conf_read(const char *path, char **ret_text, size_t *ret_len, fatelf_diag *d)
{
	int r = read_file_max(AT_FDCWD, path, 0, CONF_FILE_MAX, ret_text, ret_len);

	if (r == -ENOENT || r == 0)
		return r;
	if (r == -ENOMEM)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	if (d)
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	if (r == -EFBIG)
		return fatelf_diag_set(d, -EINVAL, -1, "%s: larger than 1 MiB", path);
	return fatelf_diag_set(d, r, -1, "%s: cannot read: %s", path, strerror(-r));
}

static int conf_load_file(conf_ctx *x, const char *path, bool missing_ok)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	r = conf_read(path, &text, &len, x->d);
	if (r == -ENOENT && missing_ok)
		return 0;
	if (r == -ENOENT) {
		if (x->d)
			snprintf(x->d->subject, sizeof(x->d->subject), "%s", path);
		return fatelf_diag_set(x->d, r, -1, "%s: cannot read: %s", path, strerror(ENOENT));
	}
	if (r < 0)
		return r;
	x->file = path;
	return conf_parse(x, text, len);
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
			r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
			goto out;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
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
	engine_config tmp;
	_cleanup_free_ char *dropdir = NULL;
	char **names = NULL;
	size_t nnames = 0;
	conf_ctx x = { .d = d };
	int r;

	if (!c || !path || !*path)
		return fatelf_diag_set(d, -EINVAL, -1, "no configuration file given");
	if (!c->root || !c->state_dir || !c->trusted_keys || !c->ldconfig_path)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	if (engine_config_copy(&tmp, c) < 0)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	x.c = &tmp;

	r = conf_load_file(&x, path, true);
	if (r < 0)
		goto out;

	dropdir = malloc(strlen(path) + 3);
	if (!dropdir) {
		r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
		goto out;
	}
	memcpy(dropdir, path, strlen(path));
	memcpy(dropdir + strlen(path), ".d", 3);
	r = dir_list(dropdir, ".conf", &names, &nnames, d);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < nnames; i++) {
		_cleanup_free_ char *p = path_join(dropdir, names[i]);

		if (!p) {
			r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
			goto out;
		}
		r = conf_load_file(&x, p, false);
		if (r < 0)
			goto out;
	}

	if (tmp.policy.policy == ENGINE_POLICY_TARGETS && tmp.policy.ntargets == 0) {
		if (d)
			snprintf(d->subject, sizeof(d->subject), "%s", path);
		r = fatelf_diag_set(d, -EINVAL, -1, "%s: Policy: targets needs a Targets= list",
				    x.policy_at[0] ? x.policy_at : path);
		goto out;
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
	r = 0;
out:
	names_free(names, nnames);
	engine_config_done(&tmp);
	return r;
}

int engine_config_load_keys(const engine_config *c, fatelf_ms_pubkey **ret_keys, size_t *ret_n,
			    fatelf_diag *d)
{
	char **names = NULL;
	size_t nnames = 0;
	fatelf_ms_pubkey *keys = NULL;
	int r;

	if (!c->trusted_keys)
		return fatelf_diag_set(d, -EINVAL, -1, "no TrustedKeys directory");
	r = dir_list(c->trusted_keys, ".pub", &names, &nnames, d);
	if (r < 0)
		return r;
	if (nnames > 0) {
		keys = calloc(nnames, sizeof(*keys));
		if (!keys) {
			r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
			goto out;
		}
	}
	for (size_t i = 0; i < nnames; i++) {
		_cleanup_free_ char *p = path_join(c->trusted_keys, names[i]);
		fatelf_diag sub;

		if (!p) {
			r = fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
			goto out;
		}
		fatelf_diag_clear(&sub);
		r = fatelf_ms_pubkey_load(p, &keys[i], &sub);
		if (r < 0) {
			if (d)
				snprintf(d->subject, sizeof(d->subject), "%s", p);
			r = fatelf_diag_set(d, r, -1, "%s: %s", p, sub.msg[0] ? sub.msg : fatelf_strerror(r));
			goto out;
		}
	}
	*ret_keys = TAKE_PTR(keys);
	*ret_n = nnames;
	r = nnames > INT_MAX ? INT_MAX : (int)nnames;
out:
	free(keys);
	names_free(names, nnames);
	return r;
}
