/*
 * The worker (daemon/worker.c, daemon/queue.c, daemon/verify.c): one
 * thread that owns the read-write engine and runs the mutating jobs one
 * at a time; Verify on threads of their own; the main thread queues the
 * jobs and answers their callers.
 */
#ifndef FATELFD_WORKER_H
#define FATELFD_WORKER_H

#include "job.h"

/* Also opens the main thread's connection to the store (the queued rows)
 * and closes as cancelled the queued rows a stop left behind. */
worker *worker_new(server *s, engine *rw);
/* Queues j (takes it, also on failure), with its history row queued: its
 * id is the transaction id from now on. A caller with "more" gets at once
 * a reply with that id and Progress "waiting" when another job runs or
 * waits. Fails only when the row cannot be written. */
int worker_submit(worker *w, job *j);
/* Starts j (a Verify) on its own thread with its own read-only engine. */
int worker_verify(worker *w, job *j);
/* Main thread: the eventfd fired; send progress and final replies. */
void worker_dispatch(worker *w);
/*
 * Cancel from c: id names a queued job (taken off the queue, its row
 * cancelled, its caller answered Cancelled, and c answered {id, state:
 * "cancelled"} at once) or the running one (0: whichever runs). A running
 * job is asked to stop; c waits for the end of its rollback and is then
 * answered {id, state} ("cancelled", or "committed"/"failed" when it ended
 * otherwise); with more it is first told {id, state: "rolling-back"}.
 * -ESRCH when nothing matched (nothing was sent).
 */
int worker_cancel(worker *w, int64_t id, conn *c, bool more);
/* The running and the queued jobs, in order, for Status: []Job. */
json_object *worker_jobs(worker *w);
/* Hands a reload's settings (copied) to the worker, which takes them before
 * its next job. Returns whether a job runs meanwhile (it keeps its own). */
bool worker_reconfigure(worker *w, const engine_config *cfg, const fatelf_ms_pubkey *keys, size_t nkeys);
/* What the running job is, for Status. */
typedef struct job_info {
	const char *kind;       /* "install", "remove", "thin" */
	char package[256];      /* "" when none */
	int64_t started_at;
	engine_progress progress;
	char phase[32];
	char path[4096];
	char progress_package[256];
} job_info;
bool worker_running(worker *w, job_info *ret);
/* The newest pending history row's id on the read-only store, or 0. */
int64_t worker_pending_txid(server *s);
/* Cancels the running job and waits for it and for Verify threads until
 * deadline_usec (CLOCK_MONOTONIC); the jobs that ended are answered by
 * the next worker_dispatch. false: some thread is still busy. */
bool worker_stop(worker *w, uint64_t deadline_usec);
/* worker_stop, then drops the queue and frees everything; leaves w alone
 * when a thread is still busy (the process is about to exit). */
worker *worker_free(worker *w);


#endif
