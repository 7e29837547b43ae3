/*
 * The INI reader (see ini.h): lines, sections, keys, and the values of
 * the common types.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ini.h"
#include "macro.h"
#include "text.h"

#define BLANKS " \t\r\f\v"

int ini_error(ini_file *f, int code, const char *key, const char *fmt, ...)
{
	char rule[384], q[FATELF_TEXT_QUOTE_BUF];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	if (f->d)
		snprintf(f->d->subject, sizeof(f->d->subject), "%s", f->name);
	return fatelf_diag_set(f->d, code, -1, "%s:%u: %s: %s", f->name, f->line, fatelf_text_quote(key, q), rule);
}

/* ------------------------------------------------------------ values */

/* The one boolean rule of every file. */
static int parse_bool(ini_file *f, const ini_key *k, const char *value, bool *field)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	char q[FATELF_TEXT_QUOTE_BUF];

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
		if (strcasecmp(value, yes[i]) == 0) {
			*field = true;
			return 0;
		}
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		if (strcasecmp(value, no[i]) == 0) {
			*field = false;
			return 0;
		}
	return ini_error(f, -EINVAL, k->name, "'%s' is not a boolean (yes, no, true, false, on, off, 1 or 0)",
			 fatelf_text_quote(value, q));
}

static int parse_path(ini_file *f, const ini_key *k, const char *value, char **field)
{
	char q[FATELF_TEXT_QUOTE_BUF], *s;

	if (value[0] != '/')
		return ini_error(f, -EINVAL, k->name, "'%s' is not an absolute path", fatelf_text_quote(value, q));
	s = strdup(value);
	if (!s)
		return fatelf_diag_oom(f->d);
	free(*field);
	*field = s;
	return 0;
}

/* Decimal digits only: no sign, no base prefix, no overflow. */
static int parse_decimal(const char *s, uint64_t *ret, const char **ret_end)
{
	uint64_t v = 0;
	const char *p = s;

	if (!fatelf_text_is_digit(*p))
		return -EINVAL;
	for (; fatelf_text_is_digit(*p); p++) {
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

static int check_range(ini_file *f, const ini_key *k, const char *value, uint64_t v)
{
	char q[FATELF_TEXT_QUOTE_BUF];

	if (v < k->min || v > k->max)
		return ini_error(f, -EINVAL, k->name, "%s is out of range (%llu to %llu)", fatelf_text_quote(value, q),
				 (unsigned long long)k->min, (unsigned long long)k->max);
	return 0;
}

static int parse_number(ini_file *f, const ini_key *k, const char *value, uint64_t *ret)
{
	char q[FATELF_TEXT_QUOTE_BUF];
	const char *end;
	uint64_t v;
	int r;

	if (k->type == INI_BYTES) {
		r = parse_bytes_value(value, &v);
		if (r == -ERANGE)
			return ini_error(f, -EINVAL, k->name, "%s is out of range", fatelf_text_quote(value, q));
		if (r < 0)
			return ini_error(f, -EINVAL, k->name,
					 "'%s' is not a size (bytes, or a number with K, M, G or T)",
					 fatelf_text_quote(value, q));
	} else {
		r = parse_decimal(value, &v, &end);
		if (r == -ERANGE)
			return ini_error(f, -EINVAL, k->name, "%s is out of range (%llu to %llu)",
					 fatelf_text_quote(value, q), (unsigned long long)k->min,
					 (unsigned long long)k->max);
		if (r < 0 || *end)
			return ini_error(f, -EINVAL, k->name, "'%s' is not a whole number",
					 fatelf_text_quote(value, q));
	}
	r = check_range(f, k, value, v);
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

static int parse_value(ini_file *f, const ini_key *k, const char *value, void *field)
{
	uint64_t v = 0;
	int r;

	switch (k->type) {
	case INI_BOOL:
		return parse_bool(f, k, value, field);
	case INI_PATH:
		return parse_path(f, k, value, field);
	case INI_UNSIGNED:
	case INI_SIZE:
	case INI_BYTES:
		r = parse_number(f, k, value, &v);
		if (r < 0)
			return r;
		/* the tables' ranges fit the fields */
		if (k->type == INI_UNSIGNED)
			*(unsigned *)field = (unsigned)v;
		else if (k->type == INI_SIZE)
			*(size_t *)field = (size_t)v;
		else
			*(uint64_t *)field = v;
		return 0;
	case INI_CUSTOM:
		return k->parse(f, k, value, field);
	}
	return ini_error(f, -EINVAL, k->name, "no parser for this key");
}

/* ------------------------------------------------------------ lines */

static char *trim(char *s)
{
	size_t n;

	s += strspn(s, BLANKS);
	n = strlen(s);
	while (n > 0 && strchr(BLANKS, s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* "[Daemon] and [Policy]": the table's sections, in its order, the last
 * after the word last. */
static void section_list(const ini_table *t, const char *last, char *buf, size_t size)
{
	size_t n = 0, count = 0, total = 0;

	for (size_t i = 0; i < t->nkeys; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(t->keys[j].section, t->keys[i].section) == 0;
		total += !seen;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < t->nkeys && n < size; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(t->keys[j].section, t->keys[i].section) == 0;
		if (seen)
			continue;
		count++;
		n += (size_t)snprintf(buf + n, size - n, "%s%s%s[%s]", count == 1 ? "" : count == total ? " " : ", ",
				      count > 1 && count == total ? last : "", count > 1 && count == total ? " " : "",
				      t->keys[i].section);
	}
}

typedef struct parse_state {
	const ini_table *t;
	ini_file f;
	uint64_t seen;                          /* keys set, by index */
	unsigned header_line[INI_KEYS_MAX];     /* of each key's section, last opened */
} parse_state;

static int section_line(parse_state *s, char *line)
{
	size_t n = strlen(line);
	char list[256];

	if (n < 2 || line[n - 1] != ']')
		return ini_error(&s->f, -EINVAL, line, "a section header is '[Name]' alone on its line");
	line[n - 1] = '\0';
	for (size_t i = 0; i < s->t->nkeys; i++)
		if (strcmp(line + 1, s->t->keys[i].section) == 0) {
			s->f.section = s->t->keys[i].section;
			for (size_t j = 0; j < s->t->nkeys; j++)
				if (strcmp(s->t->keys[j].section, s->f.section) == 0)
					s->header_line[j] = s->f.line;
			return 0;
		}
	line[n - 1] = ']';
	section_list(s->t, "and", list, sizeof(list));
	return ini_error(&s->f, -EINVAL, line, "unknown section (only %s)", list);
}

static int key_line(parse_state *s, char *line)
{
	char *eq = strchr(line, '=');
	char q[FATELF_TEXT_QUOTE_BUF], list[256];
	const ini_key *other = NULL;
	const char *key, *value;

	if (!eq)
		return ini_error(&s->f, -EINVAL, "syntax",
				 "'%s' is not a [Section] header, a Key=Value line or a comment",
				 fatelf_text_quote(line, q));
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (!*key)
		return ini_error(&s->f, -EINVAL, "syntax", "'=%s' has no key", fatelf_text_quote(value, q));

	for (size_t i = 0; i < s->t->nkeys; i++) {
		const ini_key *k = &s->t->keys[i];

		if (strcmp(k->name, key) != 0)
			continue;
		if (s->f.section && strcmp(k->section, s->f.section) == 0) {
			s->seen |= UINT64_C(1) << i;
			return parse_value(&s->f, k, value, (char *)s->t->base + k->offset);
		}
		other = k;
	}
	if (!s->f.section) {
		section_list(s->t, "or", list, sizeof(list));
		return ini_error(&s->f, -EINVAL, key, "key outside a section (put it under %s)", list);
	}
	if (other)
		return ini_error(&s->f, -EINVAL, key, "unknown key in [%s] (it belongs in [%s])", s->f.section,
				 other->section);
	return ini_error(&s->f, -EINVAL, key, "unknown key in [%s]", s->f.section);
}

static int check_required(parse_state *s)
{
	unsigned last = s->f.line ? s->f.line : 1;

	for (size_t i = 0; i < s->t->nkeys; i++) {
		const ini_key *k = &s->t->keys[i];

		if (!(k->flags & INI_REQUIRED) || (s->seen & (UINT64_C(1) << i)))
			continue;
		s->f.line = s->header_line[i] ? s->header_line[i] : last;
		return ini_error(&s->f, -EINVAL, k->name, "missing: [%s] needs a %s= line", k->section, k->name);
	}
	return 0;
}

int ini_parse(const ini_table *t, const char *file, const char *text, size_t len, fatelf_diag *d)
{
	char buf[INI_LINE_MAX + 1];
	parse_state s = {
		.t = t,
		.f = { .name = file, .userdata = t->userdata, .d = d },
	};
	size_t pos = 0;

	if (t->nkeys > INI_KEYS_MAX)
		return fatelf_diag_set(d, -EINVAL, -1, "%s: more than %u keys in the reader's table", file,
				       INI_KEYS_MAX);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = (nl ? (size_t)(nl - text) : len) - pos;
		char *line;
		int r;

		s.f.line++;
		if (n > INI_LINE_MAX)
			return ini_error(&s.f, -EINVAL, "syntax", "line is longer than %u bytes", INI_LINE_MAX);
		if (memchr(text + pos, '\0', n))
			return ini_error(&s.f, -EINVAL, "syntax", "line holds a NUL byte");
		memcpy(buf, text + pos, n);
		buf[n] = '\0';
		pos += n + 1;

		line = trim(buf);
		if (!*line || *line == '#' || *line == ';')
			continue;
		r = *line == '[' ? section_line(&s, line) : key_line(&s, line);
		if (r < 0)
			return r;
	}
	return check_required(&s);
}
