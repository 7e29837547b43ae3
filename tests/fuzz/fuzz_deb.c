/*
 * libFuzzer target for the .deb reader: the ar container, the control
 * archive's control file and conffiles, and the data archive's entries,
 * read as a stream from memory. An input whose first byte is 'C' goes,
 * after that byte, straight to the control file and conffiles parsers,
 * and a Depends field to its relations' parser.
 * Any bytes either fail with a code of the tree (a .deb code, a package
 * rule's, or ENOMEM) and a clean message, or give the three fields every
 * control file must have.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "deb.h"

static void check(bool ok, const char *what, const fatelf_diag *d)
{
	if (!ok) {
		fprintf(stderr, "fuzz_deb: %s (%s)\n", what, d ? d->msg : "");
		abort();
	}
}

static void check_failure(int r, const fatelf_diag *d)
{
	check(d->code == r, "the diag code differs from the return", d);
	check(r == -FATELF_E_DEB_FORMAT || r == -FATELF_E_DEB_CONTROL || r == -FATELF_E_PKG_NAME ||
	      r == -FATELF_E_PKG_VERSION || r == -ENOMEM, "an unexpected error code", d);
	for (const char *p = d->msg; *p; p++)
		check((unsigned char)*p >= 0x20 && *p != 0x7f, "a message holds a control character", NULL);
}

static void check_info(const fatelf_deb_info *info)
{
	fatelf_deb_relation *rel = NULL;
	fatelf_diag d = { 0 };
	size_t nrel = 0;

	check(info->package && info->version && info->architecture, "a required field is missing", NULL);
	/* Depends splits into relations; each one that names a package
	 * writes back as a dependency the manifest parser takes. */
	if (info->depends && fatelf_deb_depends_parse(info->depends, &rel, &nrel, &d) == 0) {
		for (size_t i = 0; i < nrel; i++) {
			fatelf_depend dep = { .name = rel[i].name, .op = rel[i].op, .version = rel[i].version };
			char text[FATELF_DEPEND_TEXT_MAX];
			int n;

			check(rel[i].text && rel[i].text[0], "an empty relation", NULL);
			if (!rel[i].name)
				continue;
			n = fatelf_depend_format(&dep, text, sizeof(text));
			check(n > 0 && fatelf_depend_parse(text, (size_t)n, NULL, NULL, 0) == 0,
			      "a relation's dependency does not parse back", NULL);
		}
		fatelf_deb_relations_free(rel, nrel);
	}
	for (size_t i = 0; i < info->nconffiles; i++)
		check(info->conffiles[i][0] != 0 && info->conffiles[i][0] != '/', "an empty or absolute conffile",
		      NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fatelf_deb_info info;
	fatelf_reader src;
	fatelf_deb *deb = NULL;
	struct archive *a;
	struct archive_entry *e;
	fatelf_diag d = { 0 };
	int r;

	if (size > 0 && data[0] == 'C') {
		r = fatelf_deb_control_parse((const char *)data + 1, size - 1, &info, &d);
		if (r < 0) {
			check_failure(r, &d);
			check(info.package == NULL, "a failed parse left a field", &d);
		} else {
			check_info(&info);
			fatelf_deb_info_done(&info);
		}
		r = fatelf_deb_conffiles_parse((const char *)data + 1, size - 1, &info, &d);
		if (r < 0)
			check_failure(r, &d);
		else
			check_info(&(fatelf_deb_info) { .package = "p", .version = "1", .architecture = "a",
							 .conffiles = info.conffiles, .nconffiles = info.nconffiles });
		fatelf_deb_info_done(&info);
		return 0;
	}
	if (fatelf_reader_mem(&src, data, size) < 0)
		return 0;
	r = fatelf_deb_open(&src, &deb, &info, &d);
	if (r < 0) {
		check_failure(r, &d);
		check(deb == NULL && info.package == NULL, "a failed open left state", &d);
		goto out;
	}
	check_info(&info);
	fatelf_deb_info_done(&info);
	r = fatelf_deb_data(deb, &a, &d);
	if (r < 0) {
		check_failure(r, &d);
		goto out;
	}
	for (int n = 0; n < 4096 && archive_read_next_header(a, &e) == ARCHIVE_OK; n++) {
		char buf[4096];

		while (archive_read_data(a, buf, sizeof(buf)) > 0)
			;
	}
out:
	fatelf_deb_free(deb);
	if (src.close)
		src.close(src.ctx);
	return 0;
}
