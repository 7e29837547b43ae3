/*
 * What a fat file becomes on one machine: the rules an install and a
 * bundle extract share, on top of the host and keep-set code. NATIVE keeps
 * the one record the kernel would pick, as a plain ELF; COMPATIBLE keeps
 * every record the host runs; TARGETS keeps every record one of the
 * target names matches (a name that matches nothing in this file is fine,
 * as long as one name matches something); KEEP leaves the file as it is.
 * Pure: no I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fatelf.h"

/* "x86_64:64bits:le:sysv:osabiver0, i386:..." into buf, and the same
 * targets as facts of d. */
static void offered(const fatelf_header *hdr, char *buf, size_t size, fatelf_diag *d)
{
	size_t len = 0;

	buf[0] = '\0';
	if (d)
		d->ntargets = 0;
	for (unsigned i = 0; i < hdr->nrecords; i++) {
		char name[FATELF_TARGET_NAME_MAX];
		int n;

		fatelf_target_format(&hdr->records[i].target, name);
		fatelf_diag_add_target(d, name);
		if (len + 1 >= size)
			continue;
		n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", name);
		if (n < 0 || (size_t)n >= size - len)
			len = size;
		else
			len += (size_t)n;
	}
	if (hdr->nrecords == 0)
		snprintf(buf, size, "nothing");
}

/* No record runs on the host: the host rule's own message (it lists both
 * sides), or, for a machine named by the caller, one that names it. */
static int no_host_record(const fatelf_choice *c, const fatelf_header *hdr, fatelf_diag *d)
{
	fatelf_diag sub;
	char offers[512];
	int r;

	fatelf_diag_clear(&sub);
	r = fatelf_host_select(c->host, hdr, &sub);
	if (r >= 0)
		/* Not reached: callers come here when no record fits. */
		return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1, "no record runs on this host");
	if (r != -FATELF_E_NO_HOST_RECORD)
		return fatelf_diag_set(d, r, sub.record, "%s", sub.msg);
	offered(hdr, offers, sizeof(offers), d);
	if (c->machine)
		return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1,
				       "no record runs on a %s machine; the file offers: %s",
				       c->machine, offers);
	return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1, "%s", sub.msg);
}

static int choose_targets(const fatelf_choice *c, const fatelf_header *hdr,
			  fatelf_keepset *ret_keep, fatelf_diag *d)
{
	fatelf_keepset k;
	char list[256];
	size_t len = 0;

	if (c->ntargets == 0 || !c->targets)
		return fatelf_diag_set(d, -FATELF_E_EMPTY_KEEP, -1, "no target names given");
	fatelf_keep_clear(&k);
	list[0] = '\0';
	for (size_t i = 0; i < c->ntargets; i++) {
		fatelf_pattern pat;
		fatelf_diag sub;
		int r, n;

		fatelf_diag_clear(&sub);
		r = fatelf_pattern_parse(c->targets[i], &pat, &sub);
		if (r < 0)
			return fatelf_diag_set(d, r, -1, "%s", sub.msg);
		for (unsigned j = 0; j < hdr->nrecords; j++)
			if (fatelf_pattern_match(&pat, &hdr->records[j].target, (int)j))
				fatelf_keep_add(&k, j);
		n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", c->targets[i]);
		if (n > 0 && (size_t)n < sizeof(list) - len)
			len += (size_t)n;
	}
	if (fatelf_keep_count(&k) == 0) {
		char offers[400];

		offered(hdr, offers, sizeof(offers), d);
		FATELF_DIAG_FACT(d, target, list);
		return fatelf_diag_set(d, -FATELF_E_NO_MATCH, -1,
				       "targets %s name no record; the file offers: %s", list, offers);
	}
	*ret_keep = k;
	return 0;
}

int fatelf_choose(const fatelf_choice *c, const fatelf_header *hdr, fatelf_keepset *ret_keep,
		  int *ret_form, fatelf_diag *d)
{
	fatelf_keepset k;
	int r, form;

	fatelf_keep_clear(&k);
	switch (c->rule) {
	case FATELF_CHOOSE_KEEP:
		return 0;
	case FATELF_CHOOSE_NATIVE:
		r = fatelf_host_select(c->host, hdr, NULL);
		if (r < 0)
			return no_host_record(c, hdr, d);
		fatelf_keep_add(&k, (unsigned)r);
		form = FATELF_FORM_ELF;
		break;
	case FATELF_CHOOSE_COMPATIBLE:
		r = fatelf_keep_from_host(hdr, c->host, &k, NULL);
		if (r < 0)
			return no_host_record(c, hdr, d);
		form = FATELF_FORM_AUTO;
		break;
	case FATELF_CHOOSE_TARGETS:
		r = choose_targets(c, hdr, &k, d);
		if (r < 0)
			return r;
		form = FATELF_FORM_AUTO;
		break;
	default:
		return fatelf_diag_set(d, -EINVAL, -1, "unknown rule %d", c->rule);
	}
	*ret_keep = k;
	*ret_form = form;
	return 1;
}
