/*
 * Failpoints of the install engine (engine.h): in builds configured with
 * --enable-failpoints, a crash test names a step in FATELF_FAILPOINT and
 * the engine kills itself with SIGKILL when it reaches that step.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

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
