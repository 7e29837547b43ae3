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
 * Verify runs on threads of their own (daemon/verify.c); the queue and the
 * replies are the main thread's (daemon/queue.c); downloads run in a child
 * process (daemon/fetchchild.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "fetchchild.h"
#include "macro.h"
#include "run.h"
#include "worker_private.h"

void worker_wake(worker *w)
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
	if (p->package) {
		snprintf(j->progress_package, sizeof(j->progress_package), "%s", p->package);
		j->progress.package = j->progress_package;
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

/* Whether the kernel hands fat executables to a FatELF handler: an enabled
 * binfmt_misc entry with the FatELF magic (fatelf-run). Read at each
 * install, since an admin may register it at any time. */
static bool fat_executables_run(void)
{
	_cleanup_free_ fatelf_binfmt_entry *list = NULL;
	int n = fatelf_binfmt_list(NULL, &list);

	for (int i = 0; i < n; i++)
		if (list[i].enabled && fatelf_binfmt_is_fatelf(&list[i]))
			return true;
	return false;
}

/*
 * Install{fds}: the bundles, each read in turn and staged in one group,
 * then one commit for all; the first that fails rolls every one back,
 * and the error names its package (or its file, when the bundle never
 * said its name).
 */
static int job_install_files(worker *w, job *j, const engine_install_opts *oo)
{
	const engine_config *cfg = engine_get_config(w->rw);
	engine_install_opts o = *oo;
	engine_group *g = engine_group_new(w->rw);
	int r = 0;

	if (!g)
		return fatelf_diag_oom(&j->diag);
	o.group = g;
	for (size_t i = 0; i < j->nmembers && r >= 0; i++) {
		struct job_member *m = &j->members[i];
		fatelf_reader_fd_opts ro = { .cancel = &w->cancel };
		fatelf_reader src = { 0 };
		struct stat st;

		o.source_type = m->source_path ? STORE_SOURCE_FILE : STORE_SOURCE_FD;
		o.source = m->source_path ? m->source_path : "fd";
		if (fstat(m->fd, &st) < 0) {
			r = -errno;
			break;
		}
		ro.poll = !S_ISREG(st.st_mode);
		ro.silence_sec = cfg->fetch_timeout ? cfg->fetch_timeout : 60;
		if (ro.poll)
			ro.deadline_sec = cfg->fetch_deadline;
		r = fatelf_reader_fd(&src, m->fd, &ro);
		if (r >= 0) {
			r = engine_install(w->rw, &src, &o, &m->result, &j->diag);
			fatelf_reader_close(&src);
		}
		close(m->fd);
		m->fd = -1;
		if (r < 0 && !j->diag.package[0] && m->source_path) {
			/* the bundle's name was never read: its file says which,
			 * in the message too (its subject may be an entry) */
			char msg[sizeof(j->diag.msg)];

			if (!j->diag.subject[0])
				snprintf(j->diag.subject, sizeof(j->diag.subject), "%s", m->source_path);
			if (!((j->diag.has & FATELF_DIAG_NAMED) && strcmp(j->diag.subject, m->source_path) == 0) &&
			    snprintf(msg, sizeof(msg), "%s: %s", m->source_path,
				     fatelf_diag_text(&j->diag, r)) > 0)
				memcpy(j->diag.msg, msg, sizeof(msg));
		}
	}
	if (r < 0)
		engine_group_abort(g, r, &j->diag);
	else if (!o.dry_run)
		r = engine_group_commit(g, &j->diag);
	else
		r = engine_group_check(g, &j->diag);
	engine_group_free(g);
	return r;
}

static int job_install(worker *w, job *j)
{
	const engine_config *cfg = engine_get_config(w->rw);
	engine_install_opts o = {
		.policy = j->has_policy ? &j->policy : NULL,
		.allow_unsigned = j->allow_unsigned,
		.force = j->force,
		.allow_downgrade = j->allow_downgrade,
		.allow_setid = j->allow_setid,
		.dry_run = j->dry_run,
		.manual = !j->keep_automatic,
		.fat_executables_run = fat_executables_run(),
		.progress = job_progress,
		.userdata = j,
	};
	fatelf_reader_fd_opts ro = { .cancel = &w->cancel };
	fatelf_reader src = { 0 };
	int r;

	/* Where it comes from, for the package row; a repository's install
	 * names its repository (daemon/repoinstall.c). */
	if (j->url) {
		o.source_type = strncmp(j->url, "oci://", 6) == 0 ? STORE_SOURCE_REGISTRY : STORE_SOURCE_URL;
		o.source = j->url_shown;
	} else if (j->path || j->source_path) {
		o.source_type = STORE_SOURCE_FILE;
		o.source = j->path ? j->path : j->source_path;
	} else {
		o.source_type = STORE_SOURCE_FD;
		o.source = "fd";
	}
	if (j->repo_spec) {
		job_phase(j, "fetching");
		return job_install_repo(w, j, &o);
	}
	if (j->nmembers > 0)
		return job_install_files(w, j, &o);
	/* A passed descriptor is read, never mapped: its owner could shrink
	 * the file under the mapping. */
	if (j->url && strncmp(j->url, "oci://", 6) == 0) {
		job_phase(j, "fetching");
		return job_install_oci(w, j, &o);
	}
	if (j->url) {
		struct download dl = { .w = w, .j = j, .src = &src };

		job_phase(j, "fetching");
		r = fetch_spawn(w, j, &dl.c, &j->diag);
		if (r < 0) {
			j->fetch_failed = true;
			return r;
		}
		/* Later than the helper's own timeout and deadline, whose
		 * messages say more. */
		ro.poll = true;
		ro.silence_sec = (cfg->fetch_timeout ? cfg->fetch_timeout : 60) + FETCH_BACKSTOP_SEC;
		if (cfg->fetch_deadline)
			ro.deadline_sec = cfg->fetch_deadline + FETCH_BACKSTOP_SEC;
		r = fatelf_reader_fd(&src, dl.c.out, &ro);
		if (r >= 0) {
			o.source_failed = download_failed;
			o.source_ctx = &dl;
			r = engine_install(w->rw, &src, &o, &j->result, &j->diag);
		}
		r = fetch_finish(w, j, &dl.c, &src, r);
		fatelf_reader_close(&src);
		return r;
	} else {
		struct stat st;

		if (j->path) {
			/* Root named this file (checked by the method). A FIFO
			 * opens at once without a writer (O_NONBLOCK) and is
			 * then read with the same timeout as a passed pipe. */
			j->fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
			if (j->fd < 0) {
				snprintf(j->diag.subject, sizeof(j->diag.subject), "%s", j->path);
				return fatelf_diag_set(&j->diag, -errno, -1, "%s: %s", j->path, strerror(errno));
			}
		}
		if (fstat(j->fd, &st) < 0)
			return -errno;
		if (S_ISDIR(st.st_mode)) {
			snprintf(j->diag.subject, sizeof(j->diag.subject), "%s", j->path ? j->path : "fd");
			return fatelf_diag_set(&j->diag, -EISDIR, -1, "%s: is a directory", j->path ? j->path : "fd");
		}
		ro.poll = !S_ISREG(st.st_mode);
		ro.silence_sec = cfg->fetch_timeout ? cfg->fetch_timeout : 60;
		/* A pipe may be a download too ("curl URL | fatelfctl install -"):
		 * one that drips cannot hold the worker past the deadline. */
		if (ro.poll)
			ro.deadline_sec = cfg->fetch_deadline;
		r = fatelf_reader_fd(&src, j->fd, &ro);
		if (r >= 0) {
			r = engine_install(w->rw, &src, &o, &j->result, &j->diag);
			fatelf_reader_close(&src);
		}
		close(j->fd);
		j->fd = -1;
		if (r == -ETIME && !atomic_load(&w->cancel))
			return fatelf_diag_set(&j->diag, -ETIME, -1,
					       "%s: the bundle did not arrive within the deadline of %u s",
					       j->path ? j->path : "fd", cfg->fetch_deadline);
		return r;
	}
}

static int job_run(worker *w, job *j)
{
	switch (j->kind) {
	case JOB_INSTALL:
		return job_install(w, j);
	case JOB_REMOVE: {
		engine_remove_opts o = { .dry_run = j->dry_run, .purge = j->purge, .progress = job_progress,
					 .userdata = j };
		const char **names;
		engine_result *rets;
		int r;

		if (j->autoremove) {
			char **v = NULL;
			size_t n = 0;

			r = engine_autoremove_list(w->rw, &v, &n, &j->diag);
			if (r < 0 || n == 0) {
				store_holds_free(v, n);
				return r;
			}
			j->members = calloc(n, sizeof(*j->members));
			if (!j->members) {
				store_holds_free(v, n);
				return fatelf_diag_oom(&j->diag);
			}
			for (size_t i = 0; i < n; i++) {
				j->members[i].fd = -1;
				j->members[i].spec = v[i];
			}
			free(v);
			j->nmembers = n;
		}
		if (j->nmembers == 0)
			return engine_remove(w->rw, j->package, &o, &j->result, &j->diag);
		/* several: one transaction, each member's result its own */
		names = calloc(j->nmembers, sizeof(*names));
		rets = calloc(j->nmembers, sizeof(*rets));
		if (!names || !rets) {
			free(names);
			free(rets);
			return fatelf_diag_oom(&j->diag);
		}
		for (size_t i = 0; i < j->nmembers; i++)
			names[i] = j->members[i].spec;
		r = engine_remove_many(w->rw, names, j->nmembers, &o, rets, &j->diag);
		if (r >= 0)
			for (size_t i = 0; i < j->nmembers; i++)
				j->members[i].result = rets[i];
		free(names);
		free(rets);
		return r;
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

/*
 * Worker thread: the queued row of a job that opened no transaction. A
 * dry run or a job with nothing to do leaves no history; one that failed
 * or was cancelled first says so in its row.
 */
static void job_close_row(worker *w, job *j, int r)
{
	store *st = engine_store(w->rw);
	const char *msg = fatelf_diag_text(&j->diag, r);

	store_tx_adopt(st, 0);
	if (!j->txid)
		return;
	if (j->dry_run || r >= 0)
		(void)store_tx_drop_queued(st, j->txid, NULL);
	else
		(void)store_tx_dequeue(st, j->txid, r == -ECANCELED ? STORE_TX_CANCELLED : STORE_TX_FAILED,
				       (int64_t)time(NULL), r == -ECANCELED ? "cancelled" : msg, NULL);
}

/* Worker thread, under the lock: takes the settings of a reload, between
 * two jobs, so that a job runs to its end with those it started with. */
static void worker_take_reload(worker *w)
{
	engine_config cfg = w->reload_cfg;
	fatelf_ms_pubkey *keys = w->reload_keys;
	size_t nkeys = w->reload_nkeys;
	fatelf_diag d = { 0 };

	w->reload = false;
	memset(&w->reload_cfg, 0, sizeof(w->reload_cfg));
	w->reload_keys = NULL;
	w->reload_nkeys = 0;
	pthread_mutex_unlock(&w->lock);
	if (engine_reconfigure(w->rw, &cfg, keys, nkeys, &d) < 0)
		log_error("reload: the worker keeps its settings: %s", d.msg);
	engine_config_done(&cfg);
	free(keys);
	pthread_mutex_lock(&w->lock);
}

static void *worker_main(void *arg)
{
	worker *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		job *j = w->queue;
		int r;

		if (w->reload) {
			worker_take_reload(w);
			continue;
		}
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

		job_log_started(j);
		sd_notifyf(0, "STATUS=Running job %llu: %s %s", (unsigned long long)j->seq,
			   job_kind_name(j->kind), job_what(j));
		/* The job's first transaction takes over the queued row. */
		store_tx_adopt(engine_store(w->rw), j->txid);
		r = job_run(w, j);
		if (r < 0 && atomic_load(&w->cancel) && !j->fetch_failed)
			r = -ECANCELED;
		job_close_row(w, j, r);
		atomic_fetch_add(&w->srv->store_gen, 1);
		j->r = r;
		job_log_ended(j);
		sd_notify(0, "STATUS=Idle");

		pthread_mutex_lock(&w->lock);
		w->running = NULL;
		if (w->done_tail)
			w->done_tail->next = j;
		else
			w->done = j;
		w->done_tail = j;
		worker_wake(w);
		w->ckpt_due = true;
		pthread_cond_signal(&w->ckpt_cond);
	}
	w->exited = true;
	pthread_cond_broadcast(&w->verify_cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/*
 * The store's commits copy the WAL into the database only past
 * STORE_WAL_CHECKPOINT_PAGES; this thread does it once the worker has
 * been idle for CKPT_IDLE_USEC after a job, on a connection of its own:
 * neither the job's caller nor a job that follows right after waits for
 * the copy, or shares the disk with it. A job that starts first puts it
 * off until the worker is idle again (SQLite lets a writer go on while a
 * checkpoint runs, so one under way delays nothing but the disk).
 */
#define CKPT_IDLE_USEC (1000 * 1000)

static void *ckpt_main(void *arg)
{
	worker *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		if (!w->ckpt_due || w->running || w->queue) {
			pthread_cond_wait(&w->ckpt_cond, &w->lock);
			continue;
		}
		uint64_t at = now_usec() + CKPT_IDLE_USEC;
		struct timespec ts = { .tv_sec = (time_t)(at / 1000000),
				       .tv_nsec = (long)(at % 1000000) * 1000 };
		/* Woken (a job ended, or stop): the wait starts again. */
		if (pthread_cond_timedwait(&w->ckpt_cond, &w->lock, &ts) != ETIMEDOUT)
			continue;
		if (w->stop || w->running || w->queue)
			continue;
		w->ckpt_due = false;
		pthread_mutex_unlock(&w->lock);
		(void)store_checkpoint(w->ckst, NULL);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

worker *worker_new(server *s, engine *rw)
{
	worker *w = calloc(1, sizeof(*w));
	fatelf_diag d = { 0 };
	int r;

	if (!w)
		return NULL;
	w->srv = s;
	w->rw = rw;
	r = store_open(engine_db_path(rw), STORE_OPEN_NOCREATE, &w->qst, &d);
	if (r < 0) {
		log_error("fatelfd: %s: %s", s->db_path, fatelf_diag_text(&d, r));
		free(w);
		return NULL;
	}
	/* The queue's rows need not wait for the disk: one a power cut
	 * loses was a job that never ran, whose client had no answer, and
	 * the engine's first durable commit (its journal) takes a running
	 * job's row along, the WAL being written in order. */
	(void)store_set_durable(w->qst, false, NULL);
	/* Jobs a stop (or a crash) left in the queue never ran. */
	r = store_tx_cancel_queued(w->qst, (int64_t)time(NULL), "cancelled: fatelfd stopped before it started",
				   &d);
	if (r > 0)
		log_info("%d queued transaction%s of the last run marked cancelled", r, r == 1 ? "" : "s");
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	{
		/* worker_stop waits on it against the monotonic clock. */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->verify_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	{
		/* ckpt_main waits on it against the monotonic clock. */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->ckpt_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		pthread_cond_destroy(&w->verify_cond);
		pthread_cond_destroy(&w->ckpt_cond);
		store_close(w->qst);
		free(w);
		return NULL;
	}
	/* Without it (no connection, no thread) commits still checkpoint by
	 * themselves, past STORE_WAL_CHECKPOINT_PAGES. */
	if (store_open(engine_db_path(rw), STORE_OPEN_NOCREATE, &w->ckst, NULL) == 0) {
		w->ckpt_started = pthread_create(&w->ckpt_thread, NULL, ckpt_main, w) == 0;
		if (!w->ckpt_started)
			w->ckst = store_close(w->ckst);
	}
	return w;
}


int64_t worker_pending_txid(server *s)
{
	store_tx *v = NULL;
	size_t n = 0;
	int64_t id = 0;

	/* The history row the running transaction opened (oldest first:
	 * the last one is the newest). */
	if (store_tx_pending(engine_store(s->ro), &v, &n, NULL) >= 0 && n > 0)
		id = v[n - 1].id;
	store_txs_free(v, n);
	return id;
}

bool worker_reconfigure(worker *w, const engine_config *cfg, const fatelf_ms_pubkey *keys, size_t nkeys)
{
	engine_config copy;
	fatelf_ms_pubkey *k = NULL;
	bool running;

	if (engine_config_copy(&copy, cfg) < 0)
		return false;
	if (nkeys > 0) {
		k = calloc(nkeys, sizeof(*k));
		if (!k) {
			engine_config_done(&copy);
			return false;
		}
		memcpy(k, keys, nkeys * sizeof(*k));
	}
	pthread_mutex_lock(&w->lock);
	if (w->reload) {
		/* Two reloads before the worker took the first: the newer wins. */
		engine_config_done(&w->reload_cfg);
		free(w->reload_keys);
	}
	w->reload = true;
	w->reload_cfg = copy;
	w->reload_keys = k;
	w->reload_nkeys = nkeys;
	running = w->running != NULL;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return running;
}

bool worker_stop(worker *w, uint64_t deadline_usec)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_usec / 1000000u),
			       .tv_nsec = (long)(deadline_usec % 1000000u) * 1000 };
	bool ended;
	int64_t txid;

	if (!w)
		return true;
	if (w->stopped) {
		pthread_mutex_lock(&w->lock);
		ended = w->joined && w->nverify == 0;
		pthread_mutex_unlock(&w->lock);
		return ended;
	}
	w->stopped = true;
	txid = worker_pending_txid(w->srv);
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	if (w->running) {
		atomic_store(&w->cancel, 1);
		fetch_child_kill_locked(w);
		w->running->cancel_id = w->running->txid ? w->running->txid : txid;
		job_log_event(w->running, "cancelled by shutdown");
	}
	pthread_cond_signal(&w->cond);
	pthread_cond_signal(&w->ckpt_cond);
	/* A thread may be stuck where no cancel reaches it (a read that
	 * never returns, an open of a FIFO): past the deadline, give up on
	 * it rather than hang the stop. */
	while (!(w->exited && w->nverify == 0))
		if (pthread_cond_timedwait(&w->verify_cond, &w->lock, &ts) == ETIMEDOUT)
			break;
	ended = w->exited && w->nverify == 0;
	if (!ended)
		log_error("stopping: %s%u Verify thread%s still busy; not waiting for them",
			  w->exited ? "" : "the running job and ", w->nverify, w->nverify == 1 ? "" : "s");
	pthread_mutex_unlock(&w->lock);
	if (w->exited) {
		pthread_join(w->thread, NULL);
		w->joined = true;
	}
	if (w->ckpt_started) {
		/* A checkpoint under way ends by itself (it waits for nobody). */
		pthread_join(w->ckpt_thread, NULL);
		w->ckpt_started = false;
	}

	/* The queue never runs: its callers are told, its rows say so. The
	 * lock keeps a worker thread that is still stuck off the queue. */
	pthread_mutex_lock(&w->lock);
	while (w->queue) {
		job *j = w->queue;

		w->queue = j->next;
		j->next = NULL;
		if (j->dry_run)
			(void)store_tx_drop_queued(w->qst, j->txid, NULL);
		else
			(void)store_tx_dequeue(w->qst, j->txid, STORE_TX_CANCELLED, (int64_t)time(NULL),
					       "cancelled: fatelfd stopped before it started", NULL);
		job_log_event(j, "cancelled by shutdown before it started");
		j->r = -ECANCELED;
		j->cancel_id = j->txid;
		if (w->done_tail)
			w->done_tail->next = j;
		else
			w->done = j;
		w->done_tail = j;
	}
	w->queue_tail = NULL;
	pthread_mutex_unlock(&w->lock);
	return ended;
}

worker *worker_free(worker *w)
{
	job *j;

	if (!w)
		return NULL;
	if (!worker_stop(w, now_usec() + SHUTDOWN_GRACE_USEC)) {
		/* Its threads still use it: leave it to the exit. */
		return NULL;
	}

	while ((j = w->queue)) {
		w->queue = j->next;
		job_free(j);
	}
	while ((j = w->done)) {
		w->done = j->next;
		job_free(j);
	}
	engine_close(w->rw);
	store_close(w->qst);
	store_close(w->ckst);
	if (w->reload) {
		engine_config_done(&w->reload_cfg);
		free(w->reload_keys);
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_cond_destroy(&w->verify_cond);
	pthread_cond_destroy(&w->ckpt_cond);
	free(w);
	return NULL;
}
