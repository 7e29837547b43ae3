/*
 * The download child of an Install{url} (daemon/fetchchild.c): fatelf-fetch
 * started with fork+exec, its body on one pipe and its one-line message on
 * another, killed on Cancel and always reaped.
 */
#ifndef FATELFD_FETCHCHILD_H
#define FATELFD_FETCHCHILD_H

#include <sys/types.h>

#include "fatelfd.h"
#include "worker.h"

struct fetch_child {
	pid_t pid;
	int out;                        /* the body */
	int err;                        /* the helper's message */
};

/* The helper's limits from the config: the deadline, the minimum rate
 * and the deny list, as options. The strings live in a. */
struct fetch_limit_args {
	char deadline[24], min_rate[24], low_speed[24];
	char deny[FATELF_NETRANGES_MAX * FATELF_NETRANGE_TEXT_MAX];
};

/* Starts helper with argv, stdin on in (the caller's to close), as as
 * (no supplementary groups) or, when NULL, the daemon's own identity;
 * cannot prefixes the helper's message when exec fails. 0 or -errno. */
int fetch_child_start(const char *helper, char *const argv[], int in, const struct fatelf_netuid *as,
		      const char *cannot, struct fetch_child *ret);
/* text in an anonymous file at offset 0, for a helper's stdin: an fd or -errno. */
int fetch_text_memfd(const char *text);
/* The limit options of cfg into argv (at most 8); returns their count. */
size_t fetch_limit_argv(const engine_config *cfg, struct fetch_limit_args *a, char **argv);
/* The helper's one-line message from c->err, waiting up to grace_ms for
 * it to end (then killing it). */
void fetch_collect(struct fetch_child *c, unsigned grace_ms, char *msg, size_t size);

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
