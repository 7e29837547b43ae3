/*
 * The worker's state, shared by the files that make it up: the worker
 * thread (daemon/worker.c), the main thread's queue and replies
 * (daemon/queue.c), the Verify threads (daemon/verify.c) and the download
 * child (daemon/fetchchild.c). Everything a second thread reads is under
 * lock.
 */
#ifndef FATELFD_WORKER_PRIVATE_H
#define FATELFD_WORKER_PRIVATE_H

#include "worker.h"

#include "text.h"

struct worker {
	server *srv;
	engine *rw;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* the queue grew, or stop */
	pthread_cond_t verify_cond;     /* a verify thread ended */
	job *queue, *queue_tail;        /* waiting, in order */
	job *running;
	job *done, *done_tail;          /* finished, for the loop to answer */
	unsigned nverify;
	uint64_t seq;
	bool stop;
	bool exited;                    /* the worker thread is past its loop */
	bool joined;                    /* main thread: ... and was joined */
	bool stopped;                   /* main thread: worker_stop ran */
	atomic_int cancel;
	pid_t fetch_pid;                /* the running download's helper, 0: none */
	store *qst;                     /* main thread: the queued history rows */
	/* The checkpoint thread: copies the store's WAL into the database
	 * after each job, on its own connection, while the next job runs. */
	pthread_t ckpt_thread;
	bool ckpt_started;
	pthread_cond_t ckpt_cond;       /* a job ended, or stop */
	bool ckpt_due;
	store *ckst;
	/* Settings a reload made, for the worker to take before its next job. */
	bool reload;
	engine_config reload_cfg;
	fatelf_ms_pubkey *reload_keys;
	size_t reload_nkeys;
};

/* Wakes the main loop (its eventfd): progress or a finished job to send. */
void worker_wake(worker *w);

/* Install{package}: the version a repository offers (daemon/repomethods.c). */
int job_install_repo(worker *w, job *j, const engine_install_opts *o);
/* Install{url: "oci://..."}: a version from an OCI registry (daemon/ociinstall.c). */
int job_install_oci(worker *w, job *j, const engine_install_opts *o);

#endif
