/*
 * fatelf bundle verify: checks a bundle's signature (against the --key
 * keys, if any), every hash and every FatELF record, and prints the first
 * failure, naming the entry it was found in.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "macro.h"

enum { OPT_KEY = 0x100 };

/* Counts the entries read, and keeps the signer. */
struct track {
	size_t nentries;
	const fatelf_ms_pubkey *signer;
	fatelf_ms_pubkey signer_copy;
};

static int track_manifest(void *ctx, const fatelf_manifest *m, const fatelf_ms_pubkey *signer,
			  fatelf_diag *d)
{
	struct track *t = ctx;

	if (signer) {
		t->signer_copy = *signer;
		t->signer = &t->signer_copy;
	}
	return 0;
}

static int track_end(void *ctx, const fatelf_bundle_entry *e, int status, fatelf_diag *d)
{
	struct track *t = ctx;

	if (status >= 0)
		t->nentries++;
	return 0;
}

int cmd_bundle_verify(int argc, char **argv)
{
	static const struct option options[] = {
		{ "key", required_argument, NULL, OPT_KEY },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct bundle_keys keys = { .n = 0 };
	bool json = false;
	struct track t = { 0 };
	fatelf_bundle_reader_ops ops = {
		.manifest = track_manifest,
		.end = track_end,
		.ctx = &t,
	};
	_cleanup_close_ int fd = -1;
	const char *path;
	char id[17];
	fatelf_diag d;
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jh", options, NULL)) >= 0) {
		switch (c) {
		case OPT_KEY:
			r = bundle_keys_add(&keys, optarg);
			if (r < 0)
				return cmd_exit_code(r);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle verify", c, argv);
		}
	}
	if (argc - optind != 1)
		return cmd_usage_error("bundle verify", "expected one BUNDLE");
	path = argv[optind];

	fatelf_bundle_read_opts o = bundle_keys_read_opts(&keys);
	fatelf_diag_clear(&d);
	fd = bundle_open(path, &d);
	r = fd < 0 ? fd : fatelf_bundle_read_fd(fd, &o, &ops, &d);

	if (json) {
		_cleanup_json_ struct json_object *j = json_object_new_object();
		json_object_object_add(j, "file", json_object_new_string(path));
		json_object_object_add(j, "valid", json_object_new_boolean(r >= 0));
		if (r >= 0 && t.signer) {
			fatelf_ms_keyid_format(t.signer->keyid, id);
			json_object_object_add(j, "signed_by", json_object_new_string(id));
		} else {
			json_object_object_add(j, "signed_by", NULL);
		}
		if (r < 0) {
			struct json_object *e = cmd_json_error(&d, r);
			/* The reader makes every error about one entry that
			 * entry's subject, the same entry its message names. */
			json_object_object_del(e, "record");
			json_object_object_add(e, "entry", d.subject[0] ? json_object_new_string(d.subject) : NULL);
			json_object_object_add(j, "error", e);
		} else {
			json_object_object_add(j, "error", NULL);
		}
		cmd_json_print(j);
		return cmd_exit_code(r);
	}
	if (r < 0)
		return bundle_report(path, &d, r);
	if (t.signer) {
		fatelf_ms_keyid_format(t.signer->keyid, id);
		printf("%s: valid, %zu entries, signed by key %s\n", path, t.nentries, id);
	} else {
		printf("%s: valid, %zu entries, signature not checked (no --key)\n", path, t.nentries);
	}
	return EXIT_OK;
}
