/*
 * fatelfd's worker: the one thread that owns the read-write engine and runs
 * the mutating jobs (Install, Remove, Thin) one at a time, in the order
 * they arrived. Callers that ask while a job runs wait in the queue; those
 * that asked with "more" are told so at once (Progress phase "waiting").
 *
 * The worker never touches a socket. The running job's progress is kept
 * under the mutex and the main loop is woken through an eventfd, at most
 * about ten times a second plus at every phase change; the loop sends the
 * Progress replies and, once a job is done, its final reply. A caller that
 * hangs up does not stop its job: the job runs to its end and its replies
 * are dropped. Cancel sets a flag that the progress callback (and the byte
 * sources) check, and the engine rolls the transaction back.
 *
 * Verify reads every file of a package, so it runs on a short-lived thread
 * of its own with its own read-only engine, and posts its reply the same
 * way; the loop keeps serving meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "fatelfd.h"
#include "macro.h"

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
	bool stopped;                   /* main thread: worker_stop ran */
	atomic_int cancel;
};

job *job_new(int kind)
{
	job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->kind = kind;
	j->fd = -1;
	return j;
}

job *job_free(job *j)
{
	if (!j)
		return NULL;
	if (j->fd >= 0)
		close(j->fd);
	free(j->url);
	free(j->path);
	free(j->package);
	for (size_t i = 0; j->packages && j->packages[i]; i++)
		free(j->packages[i]);
	free(j->packages);
	engine_policy_spec_done(&j->policy);
	engine_result_done(&j->result);
	if (j->reply)
		json_object_put(j->reply);
	free(j->sent_progress);
	free(j);
	return NULL;
}

static const char *job_kind_name(int kind)
{
	switch (kind) {
	case JOB_INSTALL:
		return "install";
	case JOB_REMOVE:
		return "remove";
	case JOB_THIN:
		return "thin";
	case JOB_VERIFY:
		return "verify";
	}
	return "?";
}

static void worker_wake(worker *w)
{
	uint64_t one = 1;

	(void)!write(w->srv->event_fd, &one, sizeof(one));
}

/* Worker thread: records progress, wakes the loop when it is worth it. */
static int job_progress(const engine_progress *p, void *userdata)
{
	job *j = userdata;
	worker *w = j->w;
	uint64_t now = now_usec();
	bool wake;

	pthread_mutex_lock(&w->lock);
	wake = strncmp(j->phase, p->phase ? p->phase : "", sizeof(j->phase)) != 0 ||
	       now - j->woke_usec >= PROGRESS_INTERVAL_USEC;
	j->progress = *p;
	snprintf(j->phase, sizeof(j->phase), "%s", p->phase ? p->phase : "");
	j->progress.phase = j->phase;
	if (p->path) {
		snprintf(j->progress_path, sizeof(j->progress_path), "%s", p->path);
		j->progress.path = j->progress_path;
	}
	j->progress_dirty = true;
	if (wake)
		j->woke_usec = now;
	pthread_mutex_unlock(&w->lock);
	if (wake)
		worker_wake(w);
	return atomic_load(&w->cancel) ? -ECANCELED : 0;
}

static void job_phase(job *j, const char *phase)
{
	engine_progress p = { .phase = phase };

	(void)job_progress(&p, j);
}

/*
 * A bundle read from a passed fd (a file, a pipe, a socket) or a root
 * caller's path. A pipe is polled, so a writer that stalls can neither
 * hold the worker past the fetch timeout nor block a Cancel.
 */
struct fd_source {
	int fd;
	bool poll;
	worker *w;
	unsigned timeout_sec;
	uint8_t buf[128 * 1024];
};

static ssize_t fd_source_read(void *ctx, const void **ret_buf)
{
	struct fd_source *fs = ctx;
	uint64_t silent_since = now_usec();

	for (;;) {
		ssize_t n;

		if (atomic_load(&fs->w->cancel))
			return -ECANCELED;
		if (fs->poll) {
			struct pollfd pfd = { .fd = fs->fd, .events = POLLIN };
			int r = poll(&pfd, 1, 500);

			if (r < 0 && errno != EINTR)
				return -errno;
			if (r <= 0) {
				if (now_usec() - silent_since >= (uint64_t)fs->timeout_sec * 1000000u)
					return -ETIMEDOUT;
				continue;
			}
		}
		n = read(fs->fd, fs->buf, sizeof(fs->buf));
		if (n >= 0) {
			*ret_buf = fs->buf;
			return n;
		}
		if (errno == EINTR || errno == EAGAIN)
			continue;
		return -errno;
	}
}

static int job_install(worker *w, job *j)
{
	const engine_config *cfg = &w->srv->cfg;
	engine_install_opts o = {
		.policy = j->has_policy ? &j->policy : NULL,
		.allow_unsigned = j->allow_unsigned,
		.force = j->force,
		.allow_downgrade = j->allow_downgrade,
		.allow_setid = j->allow_setid,
		.dry_run = j->dry_run,
		.progress = job_progress,
		.userdata = j,
	};
	fatelf_bundle_source src;
	int r;

	if (j->url) {
		fatelf_fetch_opts fo = {
			.allow_file = j->allow_file_url,
			.timeout_sec = cfg->fetch_timeout,
			.cancel = &w->cancel,
		};
		fatelf_fetch *f = NULL;
		fatelf_diag fd = { 0 };

		job_phase(j, "fetching");
		r = fatelf_fetch_open(j->url, &fo, &f, &j->diag);
		if (r < 0) {
			j->fetch_failed = true;
			return r;
		}
		fatelf_fetch_source(f, &src);
		r = engine_install(w->rw, &src, &o, &j->result, &j->diag);
		/* A read that failed because the transfer did is the
		 * download's fault: say what curl said. */
		if (r < 0) {
			int fr = fatelf_fetch_status(f, &fd);

			if (fr < 0 && fr != -ECANCELED) {
				r = fr;
				j->diag = fd;
				j->fetch_failed = true;
			}
		}
		fatelf_fetch_close(f);
		return r;
	} else {
		_cleanup_free_ struct fd_source *fs = calloc(1, sizeof(*fs));
		struct stat st;

		if (!fs)
			return -ENOMEM;
		if (j->path) {
			/* Root named this file (checked by the method). */
			j->fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
			if (j->fd < 0)
				return fatelf_diag_set(&j->diag, -errno, -1, "%s: %s", j->path, strerror(errno));
		}
		if (fstat(j->fd, &st) < 0)
			return -errno;
		if (S_ISDIR(st.st_mode))
			return fatelf_diag_set(&j->diag, -EISDIR, -1, "%s: is a directory", j->path ? j->path : "fd");
		fs->fd = j->fd;
		fs->poll = !S_ISREG(st.st_mode);
		fs->w = w;
		fs->timeout_sec = cfg->fetch_timeout ? cfg->fetch_timeout : 60;
		src = (fatelf_bundle_source){ .read = fd_source_read, .ctx = fs };
		r = engine_install(w->rw, &src, &o, &j->result, &j->diag);
		close(j->fd);
		j->fd = -1;
		return r;
	}
}

static int job_run(worker *w, job *j)
{
	switch (j->kind) {
	case JOB_INSTALL:
		return job_install(w, j);
	case JOB_REMOVE: {
		engine_remove_opts o = { .dry_run = j->dry_run, .progress = job_progress, .userdata = j };

		return engine_remove(w->rw, j->package, &o, &j->result, &j->diag);
	}
	case JOB_THIN: {
		engine_thin_opts o = {
			.packages = (const char *const *)j->packages,
			.policy = j->has_policy ? &j->policy : NULL,
			.dry_run = j->dry_run,
			.progress = job_progress,
			.userdata = j,
		};

		return engine_thin(w->rw, &o, &j->result, &j->diag);
	}
	}
	return -EINVAL;
}

static const char *job_what(const job *j)
{
	if (j->package)
		return j->package;
	if (j->url)
		return j->url;
	if (j->path)
		return j->path;
	return j->kind == JOB_INSTALL ? "bundle from fd" : "all packages";
}

static void *worker_main(void *arg)
{
	worker *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		job *j = w->queue;
		int r;

		if (!j) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		w->queue = j->next;
		if (!w->queue)
			w->queue_tail = NULL;
		j->next = NULL;
		w->running = j;
		j->started_at = time(NULL);
		atomic_store(&w->cancel, 0);
		pthread_mutex_unlock(&w->lock);

		log_info("job %llu: %s %s%s: started", (unsigned long long)j->seq, job_kind_name(j->kind),
			 job_what(j), j->dry_run ? " (dry run)" : "");
		sd_notifyf(0, "STATUS=Running job %llu: %s %s", (unsigned long long)j->seq,
			   job_kind_name(j->kind), job_what(j));
		r = job_run(w, j);
		atomic_fetch_add(&w->srv->store_gen, 1);
		if (r < 0 && atomic_load(&w->cancel) && !j->fetch_failed)
			r = -ENGINE_E_CANCELLED;
		j->r = r;
		if (r < 0)
			log_error("job %llu: %s %s: %s", (unsigned long long)j->seq, job_kind_name(j->kind),
				  job_what(j), j->diag.msg[0] ? j->diag.msg : engine_strerror(r));
		else
			log_info("job %llu: %s %s: done (transaction %lld, %llu files, %llu bytes written, %lld saved)",
				 (unsigned long long)j->seq, j->result.kind ? j->result.kind : job_kind_name(j->kind),
				 job_what(j), (long long)j->result.txid, (unsigned long long)j->result.files,
				 (unsigned long long)j->result.bytes_written, (long long)j->result.bytes_saved);
		sd_notify(0, "STATUS=Idle");

		pthread_mutex_lock(&w->lock);
		w->running = NULL;
		if (w->done_tail)
			w->done_tail->next = j;
		else
			w->done = j;
		w->done_tail = j;
		worker_wake(w);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

worker *worker_new(server *s, engine *rw)
{
	worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->srv = s;
	w->rw = rw;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	pthread_cond_init(&w->verify_cond, NULL);
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		pthread_cond_destroy(&w->verify_cond);
		free(w);
		return NULL;
	}
	return w;
}

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
	conn_reply(j->conn, o, true);
}

void worker_submit(worker *w, job *j)
{
	bool busy;
	engine_progress p = { 0 };

	j->w = w;
	pthread_mutex_lock(&w->lock);
	j->seq = ++w->seq;
	busy = w->running || w->queue;
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
}

/* Main thread: the job's final reply. */
static void job_answer(job *j)
{
	conn *c = j->conn;

	if (!c)
		return;
	if (!j->oneway) {
		if (j->kind == JOB_VERIFY && j->r >= 0) {
			conn_reply(c, j->reply, false);
		} else if (j->r == -ENGINE_E_CANCELLED) {
			_cleanup_json_ json_object *o = json_object_new_object();

			if (o) {
				json_object_object_add(o, "id", json_object_new_int64(j->cancel_id));
				conn_error(c, "io.fatelf.Manager.Cancelled", o);
			}
		} else if (j->r < 0) {
			c->oneway = false;
			methods_reply_failure(c, j->r, &j->diag, j->fetch_failed ? j->url : NULL);
		} else {
			_cleanup_json_ json_object *o = json_object_new_object();

			if (o && json_object_object_add(o, "result", json_result(&j->result)) == 0)
				conn_reply(c, o, false);
		}
	}
	conn_call_done(c);
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
	while (done) {
		job *j = done;

		done = j->next;
		job_answer(j);
		job_free(j);
	}
}

static int pending_cb(const store_tx *t, void *userdata)
{
	*(int64_t *)userdata = t->id;
	return 0;
}

int64_t worker_pending_txid(server *s)
{
	int64_t id = 0;

	/* The history row the running transaction opened (oldest first:
	 * the last one is the newest). */
	(void)store_tx_pending(engine_store(s->ro), pending_cb, &id, NULL);
	return id;
}

int worker_cancel(worker *w, int64_t id, int64_t *ret_id)
{
	int64_t txid = worker_pending_txid(w->srv);
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (!w->running || (id && txid && id != txid) || (id && !txid))
		r = -ESRCH;
	else {
		atomic_store(&w->cancel, 1);
		w->running->cancel_id = txid;
		*ret_id = txid;
		log_info("job %llu: cancel requested", (unsigned long long)w->running->seq);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
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
	}
	pthread_mutex_unlock(&w->lock);
	return running;
}

/* ------------------------------------------------------------ verify */

static int verify_problem(const char *package, const char *path, int problem, const char *detail,
			  void *userdata)
{
	json_object *o = json_object_new_object();

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "package", json_object_new_string(package ? package : ""));
	json_object_object_add(o, "path", json_object_new_string(path ? path : ""));
	json_object_object_add(o, "problem", json_object_new_string(engine_problem_name(problem)));
	json_object_object_add(o, "detail", json_object_new_string(detail ? detail : ""));
	json_object_array_add(userdata, o);
	return 0;
}

static void *verify_main(void *arg)
{
	job *j = arg;
	worker *w = j->w;
	engine *e = NULL;
	int r;

	r = engine_open(&w->srv->cfg, NULL, 0, ENGINE_OPEN_READONLY, &e, NULL, &j->diag);
	if (r >= 0) {
		json_object *o = json_object_new_object();
		json_object *a = json_object_new_array();
		uint64_t nproblems = 0;

		if (!o || !a) {
			r = -ENOMEM;
			json_putp(&a);
		} else {
			json_object_object_add(o, "problems", a);
			r = engine_verify(e, j->package, verify_problem, a, &nproblems, &j->diag);
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

void worker_stop(worker *w)
{
	int64_t txid;

	if (!w || w->stopped)
		return;
	w->stopped = true;
	txid = worker_pending_txid(w->srv);
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	if (w->running) {
		atomic_store(&w->cancel, 1);
		w->running->cancel_id = txid;
		log_info("job %llu: cancelled by shutdown", (unsigned long long)w->running->seq);
	}
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);

	pthread_mutex_lock(&w->lock);
	while (w->nverify > 0)
		pthread_cond_wait(&w->verify_cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

worker *worker_free(worker *w)
{
	job *j;

	if (!w)
		return NULL;
	worker_stop(w);

	while ((j = w->queue)) {
		w->queue = j->next;
		job_free(j);
	}
	while ((j = w->done)) {
		w->done = j->next;
		job_free(j);
	}
	engine_close(w->rw);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_cond_destroy(&w->verify_cond);
	free(w);
	return NULL;
}
