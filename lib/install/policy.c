/*
 * Install policy: what each fat file of a bundle becomes on this machine.
 * The rules themselves live in lib/fatelf/choose.c (the kernel's
 * selection rule, the "compatible" set, target patterns), which a bundle
 * extract shares; this module maps the daemon's named policies and
 * KeepFat globs onto them, turns the stored policy text back into a spec, and works out a file's
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
		return fatelf_diag_oom(d);
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
	static const int rules[] = {
		[ENGINE_POLICY_NATIVE] = FATELF_CHOOSE_NATIVE,
		[ENGINE_POLICY_COMPATIBLE] = FATELF_CHOOSE_COMPATIBLE,
		[ENGINE_POLICY_KEEP] = FATELF_CHOOSE_KEEP,
		[ENGINE_POLICY_TARGETS] = FATELF_CHOOSE_TARGETS,
	};
	fatelf_choice c = { .host = host };
	int r;

	/* KeepFat wins over every policy, even for a file this host cannot
	 * run at all: that is what a tree shared between machines needs. */
	if (engine_policy_keep_fat(keep_fat, nkeep_fat, path))
		return 0;

	if (p->policy < 0 || (size_t)p->policy >= ARRAY_SIZE(rules))
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "unknown policy %d", p->policy);
	c.rule = rules[p->policy];
	if (p->policy == ENGINE_POLICY_TARGETS) {
		if (p->ntargets == 0 || p->ntargets > ENGINE_TARGETS_MAX)
			return fatelf_diag_set(d, -ENGINE_E_POLICY, -1,
					       "policy targets needs at least one target name");
		c.targets = (const char *const *)p->targets;
		c.ntargets = p->ntargets;
	}
	r = fatelf_choose(&c, hdr, ret_keep, ret_form, d);
	/* A name that does not parse is the policy's fault, not the file's. */
	if (r < 0 && p->policy == ENGINE_POLICY_TARGETS && r != -FATELF_E_NO_MATCH &&
	    r != -ENOMEM) {
		char msg[sizeof(d->msg)];

		snprintf(msg, sizeof(msg), "%s", d ? d->msg : "");
		return fatelf_diag_set(d, -ENGINE_E_POLICY, -1, "%s", msg);
	}
	return r;
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
