/*
 * The main thread's side of the jobs: queueing a call's job with its
 * history row, answering each job's caller (Progress while it runs, the
 * final reply when it ends), Cancel, and what Status shows of the queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetchchild.h"
#include "results.h"
#include "macro.h"
#include "metrics.h"
#include "reply.h"
#include "worker_private.h"

/*
 * Main thread: sends a Progress reply (takes progress) to j's caller, unless
 * it says exactly what the last one said (the worker's first report often
 * repeats the phase the call was acknowledged with).
 */
static void job_send_progress(job *j, json_object *progress)
{
	_cleanup_json_ json_object *o = NULL;
	const char *text;

	if (!progress)
		return;
	if (!j->conn) {
		json_object_put(progress);
		return;
	}
	text = json_object_to_json_string_ext(progress, JSON_C_TO_STRING_PLAIN);
	if (text && j->sent_progress && strcmp(text, j->sent_progress) == 0) {
		json_object_put(progress);
		return;
	}
	free(j->sent_progress);
	j->sent_progress = text ? strdup(text) : NULL;
	o = json_object_new_object();
	if (!o || json_object_object_add(o, "progress", progress) < 0) {
		json_object_put(progress);
		return;
	}
	if (j->txid)
		json_object_object_add(o, "id", json_object_new_int64(j->txid));
	conn_reply(j->conn, o, true);
}

int worker_submit(worker *w, job *j)
{
	bool busy;
	engine_progress p = { 0 };
	fatelf_diag d = { 0 };
	int r;

	j->w = w;
	j->uid = j->conn ? j->conn->uid : 0;
	j->queued_at = (int64_t)time(NULL);
	r = store_tx_queue(w->qst, job_row_kind(j), job_row_package(j), j->queued_at, &j->txid, &d);
	if (r < 0) {
		log_error("cannot queue a %s: %s", store_tx_kind_to_text(job_row_kind(j)),
			  fatelf_diag_text(&d, r));
		return r;
	}
	atomic_fetch_add(&w->srv->store_gen, 1);
	pthread_mutex_lock(&w->lock);
	j->seq = ++w->seq;
	busy = w->running || w->queue;
	/* Under the lock, so that this line comes before the job's start. */
	if (busy)
		job_log_queued(j, w->queue_tail ? w->queue_tail : w->running);
	if (w->queue_tail)
		w->queue_tail->next = j;
	else
		w->queue = j;
	w->queue_tail = j;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	/* Tell a streaming caller at once that the call was accepted, and
	 * whether it waits its turn. This reply goes before any progress
	 * the job makes: those are sent by this thread later. */
	if (j->more && !j->oneway && j->conn) {
		p.phase = busy ? "waiting" : (j->url ? "fetching" : "preflight");
		job_send_progress(j, json_progress(&p));
	}
	return 0;
}

/* Main thread: the job's final reply. */
static void job_answer(job *j)
{
	conn *c = j->conn;

	if (!c)
		return;
	if (!j->oneway) {
		if (j->kind == JOB_VERIFY && j->r >= 0 && j->more) {
			/* The problems in chunks; the stream takes the reply. */
			json_object *o = j->reply;

			j->reply = NULL;
			reply_array_stream(c, o, "problems");
		} else if ((j->kind == JOB_VERIFY || j->kind == JOB_UPDATE) && j->r >= 0) {
			conn_reply(c, j->reply, false);
		} else if (j->r == -ECANCELED) {
			_cleanup_json_ json_object *o = json_object_new_object();

			if (o) {
				json_object_object_add(o, "id", json_object_new_int64(j->cancel_id));
				conn_error(c, "io.fatelf.Manager.Cancelled", o);
			}
		} else if (j->r < 0) {
			int code = j->r < 0 ? -j->r : j->r;
			bool about_repo = j->repo_name &&
					  (j->kind == JOB_UPDATE || (code >= FATELF_E_REPO_FORMAT && code <= FATELF_E_REPO_MISMATCH));

			c->oneway = false;
			reply_failure_repo(c, j->r, &j->diag, j->fetch_failed ? j->url_shown : NULL,
					   about_repo ? j->repo_name : NULL);
		} else {
			_cleanup_json_ json_object *o = json_object_new_object();

			if (o && (j->nmembers > 0 || j->autoremove)) {
				json_object *rs = json_object_new_array(), *fs = json_object_new_array();

				for (size_t i = 0; rs && fs && i < j->nmembers; i++) {
					const struct job_member *m = &j->members[i];

					json_object_array_add(rs, json_result(&m->result));
					json_object_array_add(fs, json_fetch(m->repo_name, m->fetch.objects, m->fetch.local,
									     m->fetch.cloned, m->fetch.fetched,
									     m->fetch.bytes, m->fetch.metadata));
				}
				json_object_object_add(o, "results", rs);
				/* what each fetched: an install from the repositories */
				if (j->repo_spec)
					json_object_object_add(o, "fetches", fs);
				else
					json_object_put(fs);
				conn_reply(c, o, false);
			} else if (o && json_object_object_add(o, "result", json_result(&j->result)) == 0) {
				if (j->has_fetch)
					json_object_object_add(o, "fetch",
							       json_fetch(j->repo_name, j->fetch.objects, j->fetch.local,
									  j->fetch.cloned, j->fetch.fetched, j->fetch.bytes,
									  j->fetch.metadata));
				conn_reply(c, o, false);
			}
		}
	}
	conn_call_done(c);
}

/* {id, state} to c, the last reply of its Cancel unless continues. */
static void cancel_reply(conn *c, int64_t id, const char *state, bool continues)
{
	_cleanup_json_ json_object *o = json_object_new_object();

	if (!o)
		return;
	json_object_object_add(o, "id", json_object_new_int64(id));
	json_object_object_add(o, "state", json_object_new_string(state));
	conn_reply(c, o, continues);
}

/* Main thread: the Cancel calls waiting for j's end learn how it ended. */
static void job_answer_waiters(job *j)
{
	const char *state = j->r == -ECANCELED ? "cancelled" : j->r >= 0 ? "committed" : "failed";

	while (j->waiters) {
		job *c = j->waiters;

		j->waiters = c->next;
		c->next = NULL;
		if (c->conn) {
			cancel_reply(c->conn, j->txid, state, false);
			conn_call_done(c->conn);
		}
		job_free(c);
	}
}

void worker_dispatch(worker *w)
{
	job *done, *running;
	json_object *progress = NULL;

	pthread_mutex_lock(&w->lock);
	done = w->done;
	w->done = w->done_tail = NULL;
	running = w->running;
	if (running && running->progress_dirty) {
		running->progress_dirty = false;
		if (running->conn && running->more && !running->oneway)
			progress = json_progress(&running->progress);
	}
	pthread_mutex_unlock(&w->lock);

	/* The running job cannot be freed meanwhile: only this thread frees
	 * jobs, after taking them off the done list. */
	if (progress)
		job_send_progress(running, progress);
	if (!done)
		return;
	while (done) {
		job *j = done;

		done = j->next;
		if (j->kind == JOB_VERIFY && j->r >= 0 && j->reply) {
			json_object *problems = NULL, *checked = NULL;

			json_object_object_get_ex(j->reply, "problems", &problems);
			json_object_object_get_ex(j->reply, "checked", &checked);
			metrics_verify_done(w->srv, j->package, (uint64_t)MAX(json_object_get_int64(checked), 0),
					    problems ? json_object_array_length(problems) : 0);
		}
		job_answer(j);
		job_answer_waiters(j);
		job_free(j);
	}
	/* A job ended: a transaction, a verify or an update changed what
	 * the metrics say. */
	metrics_file_update(w->srv);
}

int worker_cancel(worker *w, int64_t id, conn *c, bool more)
{
	int64_t pending = worker_pending_txid(w->srv);
	job *queued = NULL, *prev = NULL, *running = NULL;

	pthread_mutex_lock(&w->lock);
	for (job *q = id ? w->queue : NULL; q; prev = q, q = q->next)
		if (q->txid == id) {
			queued = q;
			if (prev)
				prev->next = q->next;
			else
				w->queue = q->next;
			if (w->queue_tail == q)
				w->queue_tail = prev;
			q->next = NULL;
			break;
		}
	/* A thin of several packages runs transactions of its own after the
	 * first: the pending one names the job too. */
	if (!queued && w->running && (!id || id == w->running->txid || (pending && id == pending))) {
		running = w->running;
		atomic_store(&w->cancel, 1);
		fetch_child_kill_locked(w);
		running->cancel_id = running->txid;
		job_log_event(running, "cancel requested, rolling back");
	}
	pthread_mutex_unlock(&w->lock);

	if (queued) {
		fatelf_diag d = { 0 };

		/* It never started: no file was touched. A dry run leaves no row. */
		if ((queued->dry_run ? store_tx_drop_queued(w->qst, queued->txid, &d)
				     : store_tx_dequeue(w->qst, queued->txid, STORE_TX_CANCELLED, (int64_t)time(NULL),
							"cancelled before it started", &d)) < 0)
			log_error("transaction %lld: %s", (long long)queued->txid, d.msg);
		atomic_fetch_add(&w->srv->store_gen, 1);
		job_log_event(queued, "cancelled before it started");
		queued->r = -ECANCELED;
		queued->cancel_id = queued->txid;
		job_answer(queued);
		job_free(queued);
		metrics_file_update(w->srv);
		if (!c->oneway)
			cancel_reply(c, id, "cancelled", false);
		return 0;
	}
	if (!running)
		return -ESRCH;
	if (c->oneway)
		return 0;
	{
		/* The running job is freed on this thread only, after its end
		 * answered its waiters. */
		job *waiter = job_new(JOB_CANCEL);

		if (!waiter) {
			cancel_reply(c, running->txid, "rolling-back", false);
			return 0;
		}
		waiter->txid = running->txid;
		waiter->conn = c;
		waiter->next = running->waiters;
		running->waiters = waiter;
		c->job = waiter;
		if (more)
			cancel_reply(c, running->txid, "rolling-back", true);
	}
	return 0;
}

json_object *worker_jobs(worker *w)
{
	json_object *a = json_object_new_array();
	char source[4200];

	if (!a)
		return NULL;
	pthread_mutex_lock(&w->lock);
	for (job *j = w->running ? w->running : w->queue; j; j = j == w->running ? w->queue : j->next) {
		json_object *o = json_object_new_object();
		const char *package = job_row_package(j);

		if (!o)
			break;
		if (j->url)
			snprintf(source, sizeof(source), "%s", j->url_shown);
		else if (j->path)
			snprintf(source, sizeof(source), "%s", j->path);
		else
			snprintf(source, sizeof(source), "%s", j->kind == JOB_INSTALL ? "fd" : "");
		json_object_object_add(o, "id", json_object_new_int64(j->txid));
		json_object_object_add(o, "kind", json_object_new_string(store_tx_kind_to_text(job_row_kind(j))));
		json_object_object_add(o, "package", package ? json_object_new_string(package) : NULL);
		json_object_object_add(o, "source", source[0] ? json_object_new_string(source) : NULL);
		json_object_object_add(o, "state", json_object_new_string(j == w->running ? "running" : "queued"));
		json_object_object_add(o, "uid", json_object_new_int64((int64_t)j->uid));
		json_object_object_add(o, "queued_at", json_object_new_int64(j->queued_at));
		json_object_object_add(o, "dry_run", json_object_new_boolean(j->dry_run));
		json_object_array_add(a, o);
	}
	pthread_mutex_unlock(&w->lock);
	return a;
}

bool worker_running(worker *w, job_info *ret)
{
	bool running;

	pthread_mutex_lock(&w->lock);
	running = w->running != NULL;
	if (running) {
		job *j = w->running;

		*ret = (job_info){ .kind = job_kind_name(j->kind), .started_at = j->started_at };
		snprintf(ret->package, sizeof(ret->package), "%s", j->package ? j->package : "");
		ret->progress = j->progress;
		snprintf(ret->phase, sizeof(ret->phase), "%s", j->phase[0] ? j->phase : "preflight");
		ret->progress.phase = ret->phase;
		if (j->progress.path) {
			snprintf(ret->path, sizeof(ret->path), "%s", j->progress_path);
			ret->progress.path = ret->path;
		}
		/* the package the progress names, copied like the path */
		ret->progress.package = NULL;
		if (j->progress.package) {
			snprintf(ret->progress_package, sizeof(ret->progress_package), "%s", j->progress_package);
			ret->progress.package = ret->progress_package;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return running;
}
