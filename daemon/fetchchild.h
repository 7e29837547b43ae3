/*
 * The download child of an Install{url} (daemon/fetchchild.c): fatelf-fetch
 * started with fork+exec, its body on one pipe and its one-line message on
 * another, killed on Cancel and always reaped.
 */
#ifndef FATELFD_FETCHCHILD_H
#define FATELFD_FETCHCHILD_H

#include <sys/types.h>

#include "worker.h"

struct fetch_child {
	pid_t pid;
	int out;                        /* the body */
	int err;                        /* the helper's message */
};

/* The download of a job, as the engine's byte source sees it. */
struct download {
	worker *w;
	job *j;
	struct fetch_child c;
	const fatelf_reader *src;
};

/* Worker thread: starts the helper for j's URL; its pid is the worker's
 * fetch_pid until fetch_finish. */
int fetch_spawn(worker *w, job *j, struct fetch_child *ret, fatelf_diag *d);
/*
 * After the engine is done with the pipe: stops and reaps the helper, and
 * decides whose failure r is (FetchFailed with the helper's message, or
 * the reader's own error).
 */
int fetch_finish(worker *w, job *j, struct fetch_child *c, const fatelf_reader *src, int r);
/* The engine's source_failed for a download (ctx: struct download). */
int download_failed(void *ctx, int r, fatelf_diag *d);
/* Main thread or worker, under the lock: stops the running download. */
void fetch_child_kill_locked(worker *w);

#endif
