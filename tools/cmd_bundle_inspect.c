/*
 * fatelf bundle inspect: checks a bundle, then shows its package fields,
 * who signed it, its targets and entries, and for each architecture the
 * size a thinned install would put on disk, as a table or as JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "macro.h"

static const char *type_name(int type)
{
	switch (type) {
	case FATELF_ENTRY_FILE:
		return "file";
	case FATELF_ENTRY_DIR:
		return "dir";
	case FATELF_ENTRY_SYMLINK:
		return "symlink";
	}
	return "?";
}

static const char *kind_name(const fatelf_bundle_entry *e)
{
	if (e->type != FATELF_ENTRY_FILE)
		return "-";
	switch (e->kind) {
	case FATELF_KIND_ELF:
		return "elf";
	case FATELF_KIND_FATELF:
		return "fatelf";
	}
	return "data";
}

/* What a thinned install for one architecture puts on disk. */
struct thin {
	const char *arch;
	uint64_t size;
	size_t nfat_kept;       /* FatELF entries no record of which runs there */
	const char *first_kept;
};

/* The bytes a FatELF entry leaves on disk for a host: the record the
 * kernel would pick, or the whole file when none runs there (-1). */
static int64_t thin_entry_size(const fatelf_bundle_entry *e, const fatelf_host *h)
{
	static fatelf_header hdr;
	int i;

	fatelf_header_init(&hdr);
	hdr.nrecords = (uint8_t)MIN(e->nrecords, (unsigned)FATELF_MAX_RECORDS);
	for (unsigned k = 0; k < hdr.nrecords; k++) {
		hdr.records[k].target = e->records[k].target;
		hdr.records[k].offset = e->records[k].offset;
		hdr.records[k].size = e->records[k].size;
	}
	i = fatelf_host_select(h, &hdr, NULL);
	return i < 0 ? -1 : (int64_t)e->records[i].size;
}

/* One line per distinct architecture of the targets list; per-arch
 * entries count where the native rule for that machine picks one of
 * their targets, as extract --target and an install pick them. */
static size_t thin_plan(const fatelf_manifest *m, struct thin *ret, size_t max)
{
	static fatelf_header pa;
	size_t n = 0;

	for (size_t i = 0; i < m->ntargets && n < max; i++) {
		const char *arch = fatelf_target_arch(&m->targets[i]);
		fatelf_host h;
		bool dup = false;

		if (!arch)
			continue;
		for (size_t k = 0; k < n; k++)
			dup = dup || strcmp(ret[k].arch, arch) == 0;
		if (dup || fatelf_host_from_uname(arch, FATELF_HOST_ARM32, &h) < 0)
			continue;
		ret[n] = (struct thin){ .arch = arch };
		fatelf_keepset keep;
		bool *take;
		int sel;

		if (fatelf_manifest_per_arch_header(m, &h, &pa, NULL) < 0)
			pa.nrecords = 0;
		sel = pa.nrecords ? fatelf_host_select(&h, &pa, NULL) : -1;

		fatelf_keep_clear(&keep);
		if (sel >= 0)
			fatelf_keep_add(&keep, (unsigned)sel);
		take = calloc(m->nentries ? m->nentries : 1, sizeof(*take));
		if (!take || fatelf_manifest_select(m, &pa, &keep, take) < 0) {
			free(take);
			break;
		}
		for (size_t k = 0; k < m->nentries; k++) {
			const fatelf_bundle_entry *e = &m->entries[k];
			int64_t s;

			if (e->type != FATELF_ENTRY_FILE || !take[k])
				continue;
			if (e->kind != FATELF_KIND_FATELF) {
				ret[n].size += e->size;
				continue;
			}
			s = thin_entry_size(e, &h);
			if (s < 0) {
				ret[n].size += e->size;
				if (ret[n].nfat_kept++ == 0)
					ret[n].first_kept = e->path;
			} else {
				ret[n].size += (uint64_t)s;
			}
		}
		free(take);
		n++;
	}
	return n;
}

static void record_names(const fatelf_bundle_entry *e, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	if (e->type != FATELF_ENTRY_FILE)
		return;
	if (e->kind == FATELF_KIND_ELF) {
		const char *a = fatelf_target_arch(&e->target);
		char name[FATELF_TARGET_NAME_MAX];
		if (!a) {
			fatelf_target_format(&e->target, name);
			a = name;
		}
		snprintf(buf, cap, "%s", a);
		return;
	}
	for (unsigned i = 0; i < e->nrecords && len + 1 < cap; i++) {
		const char *a = fatelf_target_arch(&e->records[i].target);
		char name[FATELF_TARGET_NAME_MAX];
		int k;
		if (!a) {
			fatelf_target_format(&e->records[i].target, name);
			a = name;
		}
		k = snprintf(buf + len, cap - len, "%s%s", i ? "," : "", a);
		if (k < 0)
			break;
		len += (size_t)k;
		if (len >= cap)
			len = cap - 1;
	}
}

/* A per-arch entry's targets by architecture name, "arm64,armhf". */
static void entry_for_names(const fatelf_bundle_entry *e, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < e->ntargets && len + 1 < cap; i++) {
		const char *a = fatelf_target_arch(&e->targets[i]);
		char name[FATELF_TARGET_NAME_MAX];
		int k;

		if (!a) {
			fatelf_target_format(&e->targets[i], name);
			a = name;
		}
		k = snprintf(buf + len, cap - len, "%s%s", i ? "," : "", a);
		if (k < 0)
			break;
		len += (size_t)k;
		if (len >= cap)
			len = cap - 1;
	}
}

static struct json_object *json_u64(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static struct json_object *json_target(const fatelf_target *t)
{
	char name[FATELF_TARGET_NAME_MAX];

	fatelf_target_format(t, name);
	return json_object_new_string(name);
}

static void inspect_json(const char *path, const fatelf_manifest *m, const char *sig_keyid,
			 const struct thin *th, size_t nth)
{
	_cleanup_json_ struct json_object *j = json_object_new_object();
	struct json_object *pkg = json_object_new_object();
	struct json_object *sig = json_object_new_object();
	struct json_object *targets = json_object_new_array();
	struct json_object *entries = json_object_new_array();
	struct json_object *thin = json_object_new_array();

	json_object_object_add(j, "file", json_object_new_string(path));
	json_object_object_add(j, "format", json_object_new_int((int)m->format));
	json_object_object_add(pkg, "name", json_object_new_string(m->name));
	json_object_object_add(pkg, "version", json_object_new_string(m->version));
	json_object_object_add(pkg, "summary", json_object_new_string(m->summary));
	json_object_object_add(pkg, "vendor", json_object_new_string(m->vendor));
	json_object_object_add(pkg, "license", json_object_new_string(m->license));
	json_object_object_add(pkg, "homepage", json_object_new_string(m->homepage));
	{
		struct json_object *deps = json_object_new_array();

		for (size_t i = 0; i < m->ndepends; i++) {
			char text[FATELF_DEPEND_TEXT_MAX];

			if (fatelf_depend_format(&m->depends[i], text, sizeof(text)) >= 0)
				json_object_array_add(deps, json_object_new_string(text));
		}
		json_object_object_add(pkg, "depends", deps);
	}
	json_object_object_add(j, "package", pkg);
	json_object_object_add(sig, "signed", json_object_new_boolean(sig_keyid != NULL));
	json_object_object_add(sig, "key_id", sig_keyid ? json_object_new_string(sig_keyid) : NULL);
	json_object_object_add(sig, "verified", json_object_new_boolean(false));
	json_object_object_add(j, "signature", sig);
	for (size_t i = 0; i < m->ntargets; i++)
		json_object_array_add(targets, json_target(&m->targets[i]));
	json_object_object_add(j, "targets", targets);
	json_object_object_add(j, "nentries", json_u64(m->nentries));
	json_object_object_add(j, "total_size", json_u64(m->total_size));
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		struct json_object *o = json_object_new_object();
		char mode[8];

		snprintf(mode, sizeof(mode), "%04o", e->mode & 07777);
		json_object_object_add(o, "path", json_object_new_string(e->path));
		json_object_object_add(o, "type", json_object_new_string(type_name(e->type)));
		if (e->ntargets) {
			struct json_object *ts = json_object_new_array(), *as = json_object_new_array();

			for (unsigned k = 0; k < e->ntargets; k++) {
				const char *a = fatelf_target_arch(&e->targets[k]);

				json_object_array_add(ts, json_target(&e->targets[k]));
				json_object_array_add(as, a ? json_object_new_string(a) : NULL);
			}
			json_object_object_add(o, "targets", ts);
			json_object_object_add(o, "for", as);
		}
		json_object_object_add(o, "mode", json_object_new_string(mode));
		if (e->setid)
			json_object_object_add(o, "setid", json_object_new_boolean(true));
		if (e->config)
			json_object_object_add(o, "config", json_object_new_boolean(true));
		if (e->type == FATELF_ENTRY_SYMLINK)
			json_object_object_add(o, "link_target", json_object_new_string(e->link_target));
		if (e->type == FATELF_ENTRY_FILE) {
			json_object_object_add(o, "size", json_u64(e->size));
			json_object_object_add(o, "kind", json_object_new_string(kind_name(e)));
			if (e->kind == FATELF_KIND_ELF)
				json_object_object_add(o, "target", json_target(&e->target));
			if (e->kind == FATELF_KIND_FATELF) {
				struct json_object *recs = json_object_new_array();
				for (unsigned k = 0; k < e->nrecords; k++) {
					struct json_object *r = json_object_new_object();
					const char *a = fatelf_target_arch(&e->records[k].target);
					json_object_object_add(r, "target", json_target(&e->records[k].target));
					json_object_object_add(r, "arch", a ? json_object_new_string(a) : NULL);
					json_object_object_add(r, "offset", json_u64(e->records[k].offset));
					json_object_object_add(r, "size", json_u64(e->records[k].size));
					json_object_array_add(recs, r);
				}
				json_object_object_add(o, "records", recs);
			}
		}
		json_object_array_add(entries, o);
	}
	json_object_object_add(j, "entries", entries);
	for (size_t i = 0; i < nth; i++) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "arch", json_object_new_string(th[i].arch));
		json_object_object_add(o, "size", json_u64(th[i].size));
		json_object_object_add(o, "saved", json_u64(m->total_size - th[i].size));
		json_object_object_add(o, "fat_kept", json_u64(th[i].nfat_kept));
		json_object_array_add(thin, o);
	}
	json_object_object_add(j, "thin", thin);
	cmd_json_print(j);
}

static void inspect_text(const char *path, const fatelf_manifest *m, const char *sig_keyid,
			 const struct thin *th, size_t nth)
{
	size_t nfiles = 0, ndirs = 0, nlinks = 0;
	char s1[32], s2[32], recs[512], tname[FATELF_TARGET_NAME_MAX];

	printf("bundle:    %s\n", path);
	printf("package:   %s %s\n", m->name, m->version);
	if (m->summary[0])
		printf("summary:   %s\n", m->summary);
	if (m->vendor[0])
		printf("vendor:    %s\n", m->vendor);
	if (m->license[0])
		printf("license:   %s\n", m->license);
	if (m->homepage[0])
		printf("homepage:  %s\n", m->homepage);
	for (size_t i = 0; i < m->ndepends; i++) {
		char text[FATELF_DEPEND_TEXT_MAX];

		if (fatelf_depend_format(&m->depends[i], text, sizeof(text)) >= 0)
			printf("%s%s", i ? ", " : "depends:   ", text);
		if (i + 1 == m->ndepends)
			printf("\n");
	}
	printf("format:    %u\n", m->format);
	if (sig_keyid)
		printf("signature: signed by key %s (not verified: no key given; use verify --key)\n",
		       sig_keyid);
	else
		printf("signature: unsigned\n");
	printf("targets:  ");
	for (size_t i = 0; i < m->ntargets; i++) {
		fatelf_target_format(&m->targets[i], tname);
		printf(" %s", tname);
	}
	printf("\n");
	for (size_t i = 0; i < m->nentries; i++) {
		int t = m->entries[i].type;
		nfiles += t == FATELF_ENTRY_FILE;
		ndirs += t == FATELF_ENTRY_DIR;
		nlinks += t == FATELF_ENTRY_SYMLINK;
	}
	printf("entries:   %zu (%zu files, %zu dirs, %zu symlinks)\n", m->nentries, nfiles, ndirs,
	       nlinks);
	printf("size:      %" PRIu64 " bytes (%s)\n\n", m->total_size,
	       fatelf_format_size(m->total_size, s1));

	printf("%-7s %-5s %12s %-6s %-24s %s\n", "TYPE", "MODE", "SIZE", "KIND", "RECORDS", "PATH");
	for (size_t i = 0; i < m->nentries; i++) {
		const fatelf_bundle_entry *e = &m->entries[i];
		char size[24];

		if (e->type == FATELF_ENTRY_FILE)
			snprintf(size, sizeof(size), "%" PRIu64, e->size);
		else
			snprintf(size, sizeof(size), "-");
		record_names(e, recs, sizeof(recs));
		printf("%-7s %04o  %12s %-6s %-24s %s", type_name(e->type), e->mode & 07777, size,
		       kind_name(e), recs[0] ? recs : "-", e->path);
		if (e->type == FATELF_ENTRY_SYMLINK)
			printf(" -> %s", e->link_target);
		if (e->config)
			printf(" (config)");
		if (e->ntargets) {
			entry_for_names(e, recs, sizeof(recs));
			printf(" (per-arch: %s)", recs);
		}
		printf("\n");
	}

	printf("\nthinned install per architecture (fat total %" PRIu64 " bytes):\n",
	       m->total_size);
	printf("  %-10s %14s %14s %7s\n", "ARCH", "ON DISK", "SAVED", "");
	for (size_t i = 0; i < nth; i++) {
		uint64_t saved = m->total_size - th[i].size;
		printf("  %-10s %14" PRIu64 " %14" PRIu64 " %6.1f%%  (%s, saves %s)\n", th[i].arch,
		       th[i].size, saved, m->total_size ? 100.0 * (double)saved / (double)m->total_size : 0.0,
		       fatelf_format_size(th[i].size, s1), fatelf_format_size(saved, s2));
		if (th[i].nfat_kept)
			printf("    %zu FatELF file(s) have no record that runs on %s and stay whole "
			       "(first: %s)\n", th[i].nfat_kept, th[i].arch, th[i].first_kept);
	}
}

int cmd_bundle_inspect(int argc, char **argv)
{
	bool json = false;
	_cleanup_close_ int fd = -1;
	fatelf_manifest *m = NULL;
	char keyid[FATELF_MS_KEYID_SIZE * 2 + 1] = "";
	fatelf_bundle_read_opts o = { .untrusted_keyid = keyid, .ret_manifest = &m };
	struct thin th[32];
	size_t nth;
	const char *path;
	fatelf_diag d;
	int r;

	r = cmd_parse_json(argc, argv, "bundle inspect", cmd_bundle_usage, &json);
	if (r <= 0)
		return cmd_exit_code(r);
	if (argc - optind != 1)
		return cmd_usage_error("bundle inspect", "expected one BUNDLE");
	path = argv[optind];

	/* One pass checks every hash, reads who signed it (no key is given,
	 * so a signature is parsed but verified by none) and keeps the
	 * manifest to show. */
	fatelf_diag_clear(&d);
	fd = bundle_open(path, &d);
	if (fd < 0)
		return cmd_report(path, &d, fd);
	r = fatelf_bundle_read_fd(fd, &o, NULL, &d);
	if (r < 0)
		return bundle_report(path, &d, r);

	nth = thin_plan(m, th, ARRAY_SIZE(th));
	if (json)
		inspect_json(path, m, keyid[0] ? keyid : NULL, th, nth);
	else
		inspect_text(path, m, keyid[0] ? keyid : NULL, th, nth);
	fatelf_manifest_free(m);
	return EXIT_OK;
}
