/*
 * The daemon's log. Under systemd, stderr is a stream to the journal, and
 * systemd says so in JOURNAL_STREAM ("DEVICE:INODE" of that stream): each
 * line then goes to the journal as a structured entry (sd_journal_sendv),
 * with MESSAGE, PRIORITY and SYSLOG_IDENTIFIER, and for a job's lines
 * FATELF_PACKAGE, FATELF_VERSION, FATELF_TXID, FATELF_KIND and FATELF_UID,
 * which fleet log pipelines filter on (journalctl FATELF_PACKAGE=hello).
 * When the journal refuses an entry, the line goes to that same stream
 * with an sd-daemon priority prefix ("<3>..."), which journald reads as
 * the priority. Anywhere else (a terminal, a file, a test) a line is plain
 * text: errors start with "error: ", warnings with "warning: ", and the
 * rest with nothing, since a prefix there would only be noise to a reader.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "fatelfd.h"
#include "macro.h"
#include "text.h"

static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
static bool journal_on;

/* "N:N", decimal, nothing else. */
static bool parse_dev_ino(const char *s, unsigned long long *ret_dev, unsigned long long *ret_ino)
{
	unsigned long long v[2] = { 0, 0 };

	for (int i = 0; i < 2; i++) {
		const char *start = s;

		for (; *s >= '0' && *s <= '9'; s++) {
			if (v[i] > (~0ULL - 9) / 10)
				return false;
			v[i] = v[i] * 10 + (unsigned)(*s - '0');
		}
		if (s == start || *s != (i == 0 ? ':' : '\0'))
			return false;
		s++;
	}
	*ret_dev = v[0];
	*ret_ino = v[1];
	return true;
}

/* Whether stderr is the journal stream systemd connected: a JOURNAL_STREAM
 * inherited by a child whose stderr went elsewhere does not count. */
static void journal_detect(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	journal_on = e && parse_dev_ino(e, &dev, &ino) && fstat(STDERR_FILENO, &st) == 0 &&
		     (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

bool daemon_log_to_journal(void)
{
	pthread_once(&journal_once, journal_detect);
	return journal_on;
}

static int journal_send(int prio, const log_fields *f, const char *msg)
{
	char message[4200], priority[32], package[300], version[300], txid[48], kind[64], uid[48];
	struct iovec iov[8];
	size_t n = 0;

#define FIELD(buf, ...)                                                   \
	do {                                                              \
		int _k = snprintf(buf, sizeof(buf), __VA_ARGS__);         \
		iov[n].iov_base = buf;                                    \
		iov[n].iov_len = MIN((size_t)MAX(_k, 0), sizeof(buf) - 1); \
		n++;                                                      \
	} while (0)
	FIELD(message, "MESSAGE=%s", msg);
	FIELD(priority, "PRIORITY=%d", prio);
	iov[n++] = (struct iovec){ .iov_base = (char *)"SYSLOG_IDENTIFIER=fatelfd",
				   .iov_len = strlen("SYSLOG_IDENTIFIER=fatelfd") };
	if (f && f->package && *f->package)
		FIELD(package, "FATELF_PACKAGE=%s", f->package);
	if (f && f->version && *f->version)
		FIELD(version, "FATELF_VERSION=%s", f->version);
	if (f && f->txid > 0)
		FIELD(txid, "FATELF_TXID=%lld", (long long)f->txid);
	if (f && f->kind && *f->kind)
		FIELD(kind, "FATELF_KIND=%s", f->kind);
	if (f && f->has_uid)
		FIELD(uid, "FATELF_UID=%u", (unsigned)f->uid);
#undef FIELD
	return sd_journal_sendv(iov, (int)n);
}

void daemon_log_fields(int prio, const log_fields *f, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	_cleanup_free_ char *shown = NULL;
	const char *line;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Names, URLs and references in a message are callers' and bundle
	 * authors' text: a newline or an escape in one must not forge a line
	 * of its own, here or in the journal. */
	shown = fatelf_text_display(msg);
	line = shown ? shown : fatelf_diag_text(NULL, -ENOMEM);
	/* One write per line, so lines of two threads never interleave. */
	if (!daemon_log_to_journal())
		fprintf(stderr, "%s%s\n", prio <= 3 ? "error: " : prio == 4 ? "warning: " : "", line);
	else if (journal_send(prio, f, line) < 0)
		fprintf(stderr, "<%d>%s\n", prio, line);
}

void daemon_log(int prio, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	daemon_log_fields(prio, NULL, "%s", msg);
}
