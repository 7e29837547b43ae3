/*
 * Install policy: what each fat file of a bundle becomes on this machine.
 * The rules themselves live in libfatelf's host and keep-set code (the
 * kernel's selection rule, the "compatible" set, target patterns); this
 * module maps the daemon's named policies and KeepFat globs onto them,
 * turns the stored policy text back into a spec, and works out a file's
 * installed size from its manifest entry alone, so preflight knows the
 * bytes to be written before any payload byte is read. Pure: no I/O.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "macro.h"

static const char *const policy_names[] = {
	[ENGINE_POLICY_NATIVE] = "native",
	[ENGINE_POLICY_COMPATIBLE] = "compatible",
	[ENGINE_POLICY_KEEP] = "keep",
	[ENGINE_POLICY_TARGETS] = "targets",
};

const char *engine_policy_name(int policy)
{
	if (policy < 0 || (size_t)policy >= ARRAY_SIZE(policy_names))
		return NULL;
	return policy_names[policy];
}

int engine_policy_from_name(const char *name, int *ret)
{
	if (!name)
		return -ENGINE_E_POLICY;
	for (size_t i = 0; i < ARRAY_SIZE(policy_names); i++)
		if (strcmp(name, policy_names[i]) == 0) {
			*ret = (int)i;
			return 0;
		}
	return -ENGINE_E_POLICY;
}

void engine_policy_spec_done(engine_policy_spec *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ntargets && i < ENGINE_TARGETS_MAX; i++)
		free(p->targets[i]);
	memset(p, 0, sizeof(*p));
	p->policy = ENGINE_POLICY_NATIVE;
}

int engine_policy_spec_format(const engine_policy_spec *p, char *buf, size_t size)
{
	const char *name = engine_policy_name(p->policy);
	size_t len;

	if (!name)
		return -ENGINE_E_POLICY;
	if (p->policy == ENGINE_POLICY_TARGETS && (p->ntargets == 0 || p->ntargets > ENGINE_TARGETS_MAX))
		return -ENGINE_E_POLICY;
	len = strlen(name);
	if (len >= size)
		return -ENOSPC;
	memcpy(buf, name, len + 1);
	if (p->policy != ENGINE_POLICY_TARGETS)
		return (int)len;

	for (size_t i = 0; i < p->ntargets; i++) {
		size_t n = strlen(p->targets[i]);

		/* ':' before the first name, ',' between the others */
		if (len + 1 + n >= size)
			return -ENOSPC;
		buf[len++] = i == 0 ? ':' : ',';
		memcpy(buf + len, p->targets[i], n + 1);
		len += n;
	}
	return (int)len;
}

/* Adds one target name of [s, s+n) to p, after checking that it parses. */
static int spec_add_target(engine_policy_spec *p, const char *s, size_t n, fatelf_diag *d)
{
	fatelf_pattern pat;
	fatelf_diag sub;
	char *name;
	int r;

	if (p->ntargets >= ENGINE_TARGETS_MAX)
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "more than %d targets",
				       ENGINE_TARGETS_MAX);
	name = strndup(s, n);
	if (!name)
		return fatelf_diag_set(d, -ENOMEM, -1, "out of memory");
	fatelf_diag_clear(&sub);
	r = fatelf_pattern_parse(name, &pat, &sub);
	if (r < 0) {
		/* the pattern parser's message already names the target */
		if (sub.msg[0])
			r = fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "%s", sub.msg);
		else
			r = fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "target '%.96s': %s", name,
					    fatelf_strerror(r));
		free(name);
		return r;
	}
	p->targets[p->ntargets++] = name;
	return 0;
}

int engine_policy_spec_parse(const char *text, engine_policy_spec *ret, fatelf_diag *d)
{
	engine_policy_spec p = { .policy = ENGINE_POLICY_NATIVE };
	const char *colon, *s;
	char name[16];
	size_t n;
	int r;

	if (!text)
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "no policy given");
	colon = strchr(text, ':');
	n = colon ? (size_t)(colon - text) : strlen(text);
	if (n >= sizeof(name))
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
				       "unknown policy '%.64s' (native, compatible, keep or targets)", text);
	memcpy(name, text, n);
	name[n] = '\0';
	if (engine_policy_from_name(name, &p.policy) < 0)
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
				       "unknown policy '%s' (native, compatible, keep or targets)", name);
	if (p.policy != ENGINE_POLICY_TARGETS) {
		if (colon)
			return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
					       "policy %s takes no target list", name);
		*ret = p;
		return 0;
	}

	/* The stored form separates names by commas; people also type spaces. */
	for (s = colon ? colon + 1 : ""; *s;) {
		size_t len = strcspn(s, ", \t");

		if (len > 0) {
			r = spec_add_target(&p, s, len, d);
			if (r < 0) {
				engine_policy_spec_done(&p);
				return r;
			}
		}
		s += len;
		s += strspn(s, ", \t");
	}
	if (p.ntargets == 0)
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
				       "policy targets needs at least one target name");
	*ret = p;
	return 0;
}

/* "x86_64:64bits:le:sysv:osabiver0, i386:..." into buf. */
static void file_targets(const fatelf_header *hdr, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < hdr->nrecords && len + 1 < size; i++) {
		char name[FATELF_TARGET_NAME_MAX];
		int n;

		fatelf_target_format(&hdr->records[i].target, name);
		n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", name);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
}

/*
 * The host rule's own message lists what the host runs and what the file
 * offers; only the code changes, so the engine's callers can tell a policy
 * refusal from a damaged file.
 */
/* The file's targets, as facts of d. */
static void offered_targets(const fatelf_header *hdr, fatelf_diag *d)
{
	char name[FATELF_TARGET_NAME_MAX];

	if (!d)
		return;
	d->ntargets = 0;
	for (int i = 0; i < hdr->nrecords; i++) {
		fatelf_target_format(&hdr->records[i].target, name);
		fatelf_diag_add_target(d, name);
	}
}

static int no_host_record(const fatelf_host *host, const fatelf_header *hdr, fatelf_diag *d)
{
	fatelf_diag sub;
	int r;

	fatelf_diag_clear(&sub);
	r = fatelf_host_select(host, hdr, &sub);
	if (r >= 0)
		/* Not reached: callers come here when no record fits. */
		return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1, "no record runs on this host");
	if (r != -FATELF_E_NO_HOST_RECORD)
		return fatelf_diag_set(d, r, sub.record, "%s", sub.msg);
	offered_targets(hdr, d);
	return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1, "%s", sub.msg);
}

static int select_targets(const engine_policy_spec *p, const fatelf_header *hdr,
			  fatelf_keepset *ret_keep, fatelf_diag *d)
{
	fatelf_keepset k;
	char list[256];
	size_t len = 0;

	if (p->ntargets == 0 || p->ntargets > ENGINE_TARGETS_MAX)
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
				       "policy targets needs at least one target name");
	fatelf_keep_clear(&k);
	list[0] = '\0';
	for (size_t i = 0; i < p->ntargets; i++) {
		fatelf_pattern pat;
		fatelf_diag sub;
		int r, n;

		fatelf_diag_clear(&sub);
		r = fatelf_pattern_parse(p->targets[i], &pat, &sub);
		if (r < 0)
			return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "%s", sub.msg);
		/* A name that matches nothing here is fine: the list is for
		 * every file of a bundle, and files differ. */
		for (unsigned j = 0; j < hdr->nrecords; j++)
			if (fatelf_pattern_match(&pat, &hdr->records[j].target, (int)j))
				fatelf_keep_add(&k, j);
		n = snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", p->targets[i]);
		if (n > 0 && (size_t)n < sizeof(list) - len)
			len += (size_t)n;
	}
	if (fatelf_keep_count(&k) == 0) {
		char offers[400];

		file_targets(hdr, offers, sizeof(offers));
		offered_targets(hdr, d);
		FATELF_DIAG_FACT(d, target, list);
		return fatelf_diag_set(d, -FATELF_E_NO_MATCH, -1,
				       "targets %s name no record; the file offers: %s", list, offers);
	}
	*ret_keep = k;
	return 0;
}

bool engine_policy_keep_fat(const char *const *keep_fat, size_t nkeep_fat, const char *path)
{
	for (size_t i = 0; path && i < nkeep_fat; i++)
		if (keep_fat[i] && fnmatch(keep_fat[i], path, 0) == 0)
			return true;
	return false;
}

int engine_policy_select(const engine_policy_spec *p, const char *const *keep_fat, size_t nkeep_fat,
			 const fatelf_host *host, const char *path, const fatelf_header *hdr,
			 fatelf_keepset *ret_keep, int *ret_form, fatelf_diag *d)
{
	fatelf_keepset k;
	int r, form;

	/* KeepFat wins over every policy, even for a file this host cannot
	 * run at all: that is what a tree shared between machines needs. */
	if (engine_policy_keep_fat(keep_fat, nkeep_fat, path))
		return 0;

	fatelf_keep_clear(&k);
	switch (p->policy) {
	case ENGINE_POLICY_KEEP:
		return 0;
	case ENGINE_POLICY_NATIVE:
		r = fatelf_host_select(host, hdr, NULL);
		if (r < 0)
			return no_host_record(host, hdr, d);
		fatelf_keep_add(&k, (unsigned)r);
		form = FATELF_FORM_ELF;
		break;
	case ENGINE_POLICY_COMPATIBLE:
		r = fatelf_keep_from_host(hdr, host, &k, NULL);
		if (r < 0)
			return no_host_record(host, hdr, d);
		form = FATELF_FORM_AUTO;
		break;
	case ENGINE_POLICY_TARGETS:
		r = select_targets(p, hdr, &k, d);
		if (r < 0)
			return r;
		form = FATELF_FORM_AUTO;
		break;
	default:
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "unknown policy %d", p->policy);
	}
	*ret_keep = k;
	*ret_form = form;
	return 1;
}

int engine_entry_header(const fatelf_bundle_entry *e, fatelf_header *ret, fatelf_diag *d)
{
	fatelf_header h;

	if (e->type != FATELF_ENTRY_FILE || e->kind != FATELF_KIND_FATELF)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "not a FatELF file");
	if (e->nrecords == 0 || e->nrecords > FATELF_MAX_RECORDS || !e->records)
		return fatelf_diag_set(d, -FATELF_E_RECORDS, -1, "%u records (1 to %u allowed)",
				       e->nrecords, FATELF_MAX_RECORDS);
	fatelf_header_init(&h);
	h.nrecords = (uint8_t)e->nrecords;
	for (unsigned i = 0; i < e->nrecords; i++) {
		memset(&h.records[i], 0, sizeof(h.records[i]));
		h.records[i].target = e->records[i].target;
		h.records[i].offset = e->records[i].offset;
		h.records[i].size = e->records[i].size;
	}
	/* The table rules (alignment, overlaps, duplicates, inside the file)
	 * hold for every file the reader will accept, so a manifest that
	 * breaks them fails here, before anything is staged. */
	int r = fatelf_validate_table(&h, e->size, d);
	if (r < 0)
		return r;
	*ret = h;
	return 0;
}

int engine_installed_size(const fatelf_bundle_entry *e, int thinned, const fatelf_keepset *keep,
			  int form, uint64_t *ret, fatelf_diag *d)
{
	fatelf_header h;
	fatelf_plan plan;
	int r;

	if (!thinned) {
		*ret = e->size;
		return 0;
	}
	r = engine_entry_header(e, &h, d);
	if (r < 0)
		return r;
	r = fatelf_plan_make(&h, keep, form, &plan, d);
	if (r < 0)
		return r;
	*ret = plan.out_size;
	return 0;
}
