/*
 * The daemon's log: lines on stderr with sd-daemon priority prefixes, which
 * journald reads.
 */
#include <stdarg.h>
#include <stdio.h>

#include "fatelfd.h"

void daemon_log(int prio, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write per line, so lines of two threads never interleave. */
	fprintf(stderr, "<%d>%s\n", prio, msg);
}
