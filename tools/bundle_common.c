/*
 * What several fatelf bundle verbs share: opening the bundle named on the
 * command line, and the --key options (verify, extract) that say which
 * signers to trust. Kept apart so that every verb opens bundles and reports
 * bad keys in the same words.
 */
#include <errno.h>
#include <fcntl.h>

#include "bundle_cmd.h"

int bundle_open(const char *path, fatelf_diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int r = -errno;
		return fatelf_diag_set(d, r, -1, "cannot open: %s", fatelf_strerror(r));
	}
	return fd;
}

int bundle_report(const char *path, const fatelf_diag *d, int r)
{
	fatelf_diag named;

	if (!d)
		return cmd_report(path, NULL, r);
	/* The message already names the entry; the line names the bundle. */
	named = *d;
	named.subject[0] = '\0';
	return cmd_report(path, &named, r);
}

int bundle_keys_add(struct bundle_keys *k, const char *arg)
{
	fatelf_diag d;
	int r;

	if (k->n == BUNDLE_MAX_KEYS)
		return cmd_usage_error("bundle", "at most %d --key options", BUNDLE_MAX_KEYS);
	fatelf_diag_clear(&d);
	r = fatelf_ms_pubkey_load(arg, &k->v[k->n], &d);
	if (r < 0)
		return cmd_report(arg, &d, r);
	k->n++;
	return -1;
}

fatelf_bundle_read_opts bundle_keys_read_opts(const struct bundle_keys *k)
{
	return (fatelf_bundle_read_opts){
		.keys = k->v,
		.nkeys = k->n,
		.require_signature = k->n > 0,
	};
}
