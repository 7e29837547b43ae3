/*
 * Verify reads every file of a package, so it runs on a short-lived thread
 * of its own with its own read-only engine, and posts its reply the way
 * the worker posts a finished job; the loop keeps serving meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repos.h"
#include "results.h"
#include "worker_private.h"

static void *verify_main(void *arg)
{
	job *j = arg;
	worker *w = j->w;
	engine *e = NULL;
	int r;

#ifdef FATELF_FAILPOINTS
	/* Test builds: the first Verify thread gets stuck in a call that no
	 * signal ends (every signal is blocked here), for the shutdown's
	 * time bound. */
	{
		static atomic_int hits;
		const char *fp = getenv("FATELF_FAILPOINT");

		if (fp && strcmp(fp, "verify-stuck") == 0 && atomic_fetch_add(&hits, 1) == 0)
			for (;;)
				pause();
	}
#endif
	if (j->kind == JOB_UPDATE)
		r = repo_update_job(j);
	else
		r = engine_open(&j->cfg, NULL, 0, ENGINE_OPEN_READONLY, &e, NULL, &j->diag);
	if (r >= 0 && j->kind == JOB_VERIFY) {
		json_object *o = json_object_new_object();
		json_object *a = json_object_new_array();
		uint64_t nproblems = 0;

		if (!o || !a) {
			r = -ENOMEM;
			json_putp(&a);
		} else {
			json_object_object_add(o, "problems", a);
			r = engine_verify(e, j->package, json_problem_add, a, &nproblems, &j->diag);
			if (r >= 0)
				json_object_object_add(o, "checked", json_object_new_int64(r));
		}
		if (r >= 0)
			j->reply = o;
		else
			json_putp(&o);
		engine_close(e);
	}
	j->r = r;
	pthread_mutex_lock(&w->lock);
	if (w->done_tail)
		w->done_tail->next = j;
	else
		w->done = j;
	w->done_tail = j;
	w->nverify--;
	pthread_cond_broadcast(&w->verify_cond);
	worker_wake(w);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int worker_verify(worker *w, job *j)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	j->w = w;
	/* Its own copy: a reload replaces the server's meanwhile. */
	if (!j->has_cfg) {
		if (engine_config_copy(&j->cfg, &w->srv->cfg) < 0)
			return -ENOMEM;
		j->has_cfg = true;
	}
	pthread_mutex_lock(&w->lock);
	if (w->nverify >= VERIFY_THREADS_MAX) {
		pthread_mutex_unlock(&w->lock);
		return -EBUSY;
	}
	w->nverify++;
	j->seq = ++w->seq;
	pthread_mutex_unlock(&w->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, verify_main, j);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		pthread_mutex_lock(&w->lock);
		w->nverify--;
		pthread_mutex_unlock(&w->lock);
		return -r;
	}
	return 0;
}
