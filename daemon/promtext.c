/*
 * The Prometheus text format's writer (promtext.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "promtext.h"
#include "text.h"

static bool name_char(char c, bool first, bool colon)
{
	if (fatelf_text_is_alpha(c) || c == '_' || (colon && c == ':'))
		return true;
	return !first && fatelf_text_is_digit(c);
}

int prom_metric_name_valid(const char *name)
{
	if (!name || !*name)
		return 0;
	for (const char *p = name; *p; p++)
		if (!name_char(*p, p == name, true))
			return 0;
	return 1;
}

int prom_label_name_valid(const char *name)
{
	if (!name || !*name || strncmp(name, "__", 2) == 0)
		return 0;
	for (const char *p = name; *p; p++)
		if (!name_char(*p, p == name, false))
			return 0;
	return 1;
}

/* s with backslash, newline and (when quoted) the double quote escaped;
 * bytes that are not UTF-8 written as U+FFFD. */
static void put_escaped(FILE *f, const char *s, bool quoted)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = strlen(s);

	while (n > 0) {
		uint32_t cp;
		size_t k = fatelf_text_utf8_decode(p, n, &cp);

		if (k == 0) {
			fputs("\xef\xbf\xbd", f);
			p++;
			n--;
			continue;
		}
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '"' && quoted)
			fputs("\\\"", f);
		else
			fwrite(p, 1, k, f);
		p += k;
		n -= k;
	}
}

int prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	if (!prom_metric_name_valid(name) || !type ||
	    (strcmp(type, "gauge") != 0 && strcmp(type, "counter") != 0 && strcmp(type, "untyped") != 0))
		return -EINVAL;
	fprintf(f, "# HELP %s ", name);
	put_escaped(f, help ? help : "", false);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
	return 0;
}

int prom_sample(FILE *f, const char *name, const prom_label *labels, size_t nlabels, int64_t value)
{
	if (!prom_metric_name_valid(name))
		return -EINVAL;
	for (size_t i = 0; i < nlabels; i++) {
		if (!prom_label_name_valid(labels[i].name) || !labels[i].value)
			return -EINVAL;
		for (size_t k = 0; k < i; k++)
			if (strcmp(labels[k].name, labels[i].name) == 0)
				return -EINVAL;
	}
	fputs(name, f);
	if (nlabels > 0) {
		fputc('{', f);
		for (size_t i = 0; i < nlabels; i++) {
			fprintf(f, "%s%s=\"", i ? "," : "", labels[i].name);
			put_escaped(f, labels[i].value, true);
			fputc('"', f);
		}
		fputc('}', f);
	}
	fprintf(f, " %lld\n", (long long)value);
	return 0;
}
