/*
 * What several fatelf bundle verbs share: opening the bundle named on the
 * command line, and the --key options (verify, extract) that say which
 * signers to trust. Kept apart so that every verb opens bundles and reports
 * bad keys in the same words.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "io.h"
#include "macro.h"

#define SECKEY_MAX (64u << 10)

/* Reads a small whole file (a key, a password) into a NUL-terminated
 * buffer; one of max bytes is already too large. */
static int read_small_file(const char *path, size_t max, char **ret, size_t *ret_len,
			   fatelf_diag *d)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, r, -1, "cannot open: %s", fatelf_strerror(r));
	}
	r = read_fd_max(fd, max - 1, ret, ret_len);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	if (r == -EFBIG)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "larger than %zu bytes", max);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "cannot read: %s", fatelf_strerror(r));
	return 0;
}

/* The password of an encrypted key: a file's first line, or the terminal. */
static int read_password(const char *file, char **ret, fatelf_diag *d)
{
	char *buf = NULL;
	size_t len;
	int r;

	if (file) {
		r = read_small_file(file, 4096, &buf, &len, d);
		if (r < 0)
			return r;
		buf[strcspn(buf, "\r\n")] = '\0';
		*ret = buf;
		return 0;
	}

	_cleanup_close_ int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios old, noecho;
	char line[1024];
	size_t n = 0;

	if (tty < 0)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1,
				       "the secret key is encrypted: give --password-file (no terminal to ask on)");
	if (tcgetattr(tty, &old) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot read the terminal's settings");
	noecho = old;
	noecho.c_lflag &= ~(tcflag_t)ECHO;
	noecho.c_lflag |= ECHONL;
	(void)!write(tty, "Password: ", 10);
	if (tcsetattr(tty, TCSAFLUSH, &noecho) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot turn off the terminal's echo");
	for (;;) {
		char c;
		ssize_t k = read(tty, &c, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || c == '\n' || c == '\r')
			break;
		if (n + 1 < sizeof(line))
			line[n++] = c;
	}
	line[n] = '\0';
	tcsetattr(tty, TCSAFLUSH, &old);
	buf = strdup(line);
	explicit_bzero(line, sizeof(line));
	if (!buf)
		return fatelf_diag_oom(d);
	*ret = buf;
	return 0;
}

int bundle_load_seckey(const char *path, const char *password_file, fatelf_ms_seckey *ret,
		       fatelf_diag *d)
{
	_cleanup_free_ char *text = NULL, *password = NULL;
	size_t len;
	int r;

	r = read_small_file(path, SECKEY_MAX, &text, &len, d);
	if (r < 0)
		return r;
	if (fatelf_ms_seckey_encrypted(text, len)) {
		r = read_password(password_file, &password, d);
		if (r < 0)
			return r;
	}
	r = fatelf_ms_seckey_parse(text, len, password, ret, d);
	if (password)
		explicit_bzero(password, strlen(password));
	if (r < 0 && !d->subject[0])
		snprintf(d->subject, sizeof(d->subject), "%s", path);
	return r;
}


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
		return cmd_usage_failed("bundle", "at most %d --key options", BUNDLE_MAX_KEYS);
	fatelf_diag_clear(&d);
	r = fatelf_ms_pubkey_load(arg, &k->v[k->n], &d);
	if (r < 0) {
		cmd_report(arg, &d, r);
		return r;
	}
	k->n++;
	return 0;
}

fatelf_bundle_read_opts bundle_keys_read_opts(const struct bundle_keys *k)
{
	return (fatelf_bundle_read_opts){
		.keys = k->v,
		.nkeys = k->n,
		.require_signature = k->n > 0,
	};
}
