/*
 * Progress reports of a long engine operation, and the cancel a progress
 * callback asks for.
 */
#include <errno.h>

#include "engine_private.h"

int eng_progress(engine_progress_cb cb, void *userdata, const char *package, const char *phase, uint64_t bytes_done,
		 uint64_t bytes_total, uint64_t entries_done, uint64_t entries_total,
		 const char *path)
{
	engine_progress p = {
		.phase = phase,
		.package = package,
		.bytes_done = bytes_done,
		.bytes_total = bytes_total,
		.entries_done = entries_done,
		.entries_total = entries_total,
		.path = path,
	};

	if (!cb)
		return 0;
	return cb(&p, userdata) < 0 ? -ECANCELED : 0;
}
