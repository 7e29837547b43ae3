/*
 * fatelf bundle keygen: a new minisign key pair, for bundle create --sign,
 * repo --sign and 'fatelfctl key add'. The secret key is encrypted as
 * minisign encrypts it (so minisign -S reads it) unless --no-password is
 * given; the password is asked twice on the terminal, or read from stdin
 * when stdin is not a terminal (its first line; a second line, when there
 * is one, must repeat it). Existing files are kept unless --force.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "bundle_cmd.h"
#include "io.h"
#include "macro.h"

#define PASSWORD_MAX 1024

enum { OPT_NO_PASSWORD = 0x100, OPT_FORCE };

/* One line from fd into buf (without its end); false at EOF before any byte. */
static bool read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;
	bool any = false;

	for (;;) {
		char c;
		ssize_t k = read(fd, &c, 1);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		any = true;
		if (c == '\n')
			break;
		if (c != '\r' && n + 1 < size)
			buf[n++] = c;
	}
	buf[n] = '\0';
	return any;
}

/* Asks prompt on the terminal tty with the echo off. */
static int ask_tty(int tty, const char *prompt, char *buf, size_t size, fatelf_diag *d)
{
	struct termios old, noecho;

	if (tcgetattr(tty, &old) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot read the terminal's settings");
	noecho = old;
	noecho.c_lflag &= ~(tcflag_t)ECHO;
	noecho.c_lflag |= ECHONL;
	(void)!write(tty, prompt, strlen(prompt));
	if (tcsetattr(tty, TCSAFLUSH, &noecho) < 0)
		return fatelf_diag_set(d, -errno, -1, "cannot turn off the terminal's echo");
	read_line(tty, buf, size);
	tcsetattr(tty, TCSAFLUSH, &old);
	return 0;
}

/* The new key's password, twice the same, in pw (PASSWORD_MAX bytes). */
static int read_new_password(char *pw, fatelf_diag *d)
{
	char again[PASSWORD_MAX];
	bool second;
	int r = 0;

	if (isatty(STDIN_FILENO)) {
		r = ask_tty(STDIN_FILENO, "Password: ", pw, PASSWORD_MAX, d);
		if (r >= 0)
			r = ask_tty(STDIN_FILENO, "Password (one more time): ", again, sizeof(again), d);
		second = true;
	} else {
		if (!read_line(STDIN_FILENO, pw, PASSWORD_MAX))
			pw[0] = '\0';
		second = read_line(STDIN_FILENO, again, sizeof(again));
	}
	if (r >= 0 && !pw[0])
		r = fatelf_diag_set(d, -FATELF_E_INVALID, -1,
				    "empty password (--no-password makes an unencrypted key)");
	if (r >= 0 && second && strcmp(pw, again) != 0)
		r = fatelf_diag_set(d, -FATELF_E_INVALID, -1, "the two passwords differ");
	explicit_bzero(again, sizeof(again));
	return r;
}

/* Whether path exists (a dangling symlink too). */
static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int write_key_file(const char *path, const char *text, mode_t mode, fatelf_diag *d)
{
	fatelf_atomic a;
	int r;

	r = fatelf_atomic_open(&a, path, mode, d);
	if (r < 0)
		return r;
	a.durable = true;
	r = fchmod(a.fd, mode) < 0 ? -errno : 0;
	if (r >= 0)
		r = write_all(a.fd, text, strlen(text));
	if (r < 0) {
		fatelf_atomic_abort(&a);
		snprintf(d->subject, sizeof(d->subject), "%s", path);
		return fatelf_diag_set(d, r, -1, "cannot write: %s", fatelf_strerror(r));
	}
	return fatelf_atomic_commit(&a, d);
}

int cmd_bundle_keygen(int argc, char **argv)
{
	static const struct option options[] = {
		{ "public-key", required_argument, NULL, 'p' },
		{ "secret-key", required_argument, NULL, 's' },
		{ "no-password", no_argument, NULL, OPT_NO_PASSWORD },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *pub = "minisign.pub", *sec = "minisign.key";
	bool no_password = false, force = false;
	_cleanup_free_ char *pubtext = NULL, *sectext = NULL;
	char password[PASSWORD_MAX] = "", id[17];
	fatelf_ms_pubkey key;
	fatelf_diag d;
	int c, r;

	fatelf_diag_clear(&d);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:s:h", options, NULL)) >= 0) {
		switch (c) {
		case 'p':
			pub = optarg;
			break;
		case 's':
			sec = optarg;
			break;
		case OPT_NO_PASSWORD:
			no_password = true;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case 'h':
			return cmd_help(cmd_bundle_usage);
		default:
			return cmd_option_error("bundle keygen", c, argv);
		}
	}
	if (optind < argc)
		return cmd_usage_error("bundle keygen", "unexpected argument '%s'", argv[optind]);
	if (!pub[0] || !sec[0])
		return cmd_usage_error("bundle keygen", "empty file name");
	if (strcmp(pub, sec) == 0)
		return cmd_usage_error("bundle keygen", "the public and the secret key need two files (%s)",
				       pub);
	if (!force)
		for (const char *const *f = (const char *const[]){ pub, sec, NULL }; *f; f++)
			if (exists(*f)) {
				snprintf(d.subject, sizeof(d.subject), "%s", *f);
				return cmd_report(*f, &d, fatelf_diag_set(&d, -EEXIST, -1,
						  "already exists (--force overwrites it)"));
			}

	if (!no_password) {
		r = read_new_password(password, &d);
		if (r < 0)
			return cmd_report(NULL, &d, r);
	}
	r = fatelf_ms_keygen(no_password ? NULL : password, &pubtext, &sectext, &key, &d);
	explicit_bzero(password, sizeof(password));
	if (r < 0)
		return cmd_report(NULL, &d, r);
	r = write_key_file(sec, sectext, 0600, &d);
	explicit_bzero(sectext, strlen(sectext));
	if (r < 0)
		return cmd_report(sec, &d, r);
	r = write_key_file(pub, pubtext, 0644, &d);
	if (r < 0)
		return cmd_report(pub, &d, r);
	fatelf_ms_keyid_format(key.keyid, id);
	printf("key %s: public key %s, secret key %s (%s)\n", id, pub, sec,
	       no_password ? "not encrypted" : "encrypted");
	return EXIT_OK;
}
