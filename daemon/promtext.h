/*
 * The Prometheus text exposition format (version 0.0.4), as node_exporter's
 * textfile collector and any scraper read it: a family is its "# HELP" and
 * "# TYPE" lines, then its samples, "name{label="value",...} value". This
 * module writes it and owns its quoting: a HELP text escapes backslash and
 * newline, a label value backslash, double quote and newline, and a byte
 * that is not well-formed UTF-8 becomes U+FFFD. Names are checked against
 * the format's grammar; a bad one is -EINVAL and nothing is written.
 */
#ifndef FATELFD_PROMTEXT_H
#define FATELFD_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct prom_label {
	const char *name;
	const char *value;
} prom_label;

/* [a-zA-Z_:][a-zA-Z0-9_:]* */
int prom_metric_name_valid(const char *name);
/* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved). */
int prom_label_name_valid(const char *name);

/* "# HELP name help" and "# TYPE name type" (gauge, counter, untyped). */
int prom_family(FILE *f, const char *name, const char *type, const char *help);
/* One sample of an integer value; labels may be NULL when nlabels is 0. */
int prom_sample(FILE *f, const char *name, const prom_label *labels, size_t nlabels, int64_t value);

#endif
