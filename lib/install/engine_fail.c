/*
 * Failpoints: the crash tests name a step in FATELF_FAILPOINT ("name" or
 * "name:N" for its Nth hit) and the engine kills itself there with
 * SIGKILL. Built in only with --enable-failpoints; otherwise a no-op.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_private.h"
#include "macro.h"

void engine_failpoint(const char *name)
{
#ifdef FATELF_FAILPOINTS
	static unsigned hits;
	const char *want = getenv("FATELF_FAILPOINT");
	size_t n;
	unsigned long nth = 1;

	if (!want || !*want)
		return;
	n = strcspn(want, ":");
	if (strlen(name) != n || memcmp(want, name, n) != 0)
		return;
	if (want[n] == ':') {
		char *end;
		nth = strtoul(want + n + 1, &end, 10);
		if (*end != '\0' || nth == 0)
			return;
	}
	if (__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED) == nth)
		kill(getpid(), SIGKILL);
#else
	(void)name;
#endif
}
