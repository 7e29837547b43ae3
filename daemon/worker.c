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
 *
 * An Install{url} downloads in a child process, fatelf-fetch, started with
 * fork+exec (as nobody for http and https when the daemon is root): the
 * child streams the body into a pipe that the engine reads like any other
 * passed pipe, and says what went wrong in one line on a second pipe. So
 * the daemon neither parses what a server sends nor carries libcurl. The
 * child's pid is kept under the mutex so that a Cancel or SIGTERM can kill
 * it; the worker always reaps it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "fatelfd.h"
#include "io.h"
#include "macro.h"
#include "run.h"
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
	/* Settings a reload made, for the worker to take before its next job. */
	bool reload;
	engine_config reload_cfg;
	fatelf_ms_pubkey *reload_keys;
	size_t reload_nkeys;
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
	free(j->url_shown);
	free(j->path);
	free(j->package);
	for (size_t i = 0; j->packages && j->packages[i]; i++)
		free(j->packages[i]);
	free(j->packages);
	engine_policy_spec_done(&j->policy);
	engine_result_done(&j->result);
	if (j->has_cfg)
		engine_config_done(&j->cfg);
	if (j->reply)
		json_object_put(j->reply);
	free(j->sent_progress);
	while (j->waiters) {
		job *c = j->waiters;

		j->waiters = c->next;
		job_free(c);
	}
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
	case JOB_CANCEL:
		return "cancel";
	}
	return "?";
}

/* The package a queued row names: Remove's, or Thin's only one. */
static const char *job_row_package(const job *j)
{
	if (j->package)
		return j->package;
	if (j->packages && j->packages[0] && !j->packages[1])
		return j->packages[0];
	return NULL;
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

/* ------------------------------------------------------------ downloads */

struct fetch_child {
	pid_t pid;
	int out;                        /* the body */
	int err;                        /* the helper's message */
};

/* The child's one-line message: prefix, then errno's text and name.
 * strerrordesc_np and strerrorname_np only read a static table (no
 * locale, no lock), unlike strerror, so a child of a threaded process may
 * call them. */
static void child_say_errno(const char *prefix, int e)
{
	const char *desc = strerrordesc_np(e), *name = strerrorname_np(e);

	(void)!write(2, prefix, strlen(prefix));
	(void)!write(2, desc ? desc : "unknown error", strlen(desc ? desc : "unknown error"));
	if (name) {
		(void)!write(2, " (", 2);
		(void)!write(2, name, strlen(name));
		(void)!write(2, ")", 1);
	}
	(void)!write(2, "\n", 1);
}

/* Child side of fetch_spawn, between fork and exec: async-signal-safe
 * calls only (the daemon is threaded). cannot is the message prefix for a
 * failure, made before the fork. Never returns. */
static _Noreturn void fetch_child_exec(const char *helper, char *const argv[], int in, int out,
				       int err, bool drop, pid_t parent, const char *cannot)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t none;
	int fds[3];

	for (int sig = 1; sig < _NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	/* Out of the way of 0..2 first, whatever numbers the pipes got. */
	fds[0] = fcntl(in, F_DUPFD_CLOEXEC, 3);
	fds[1] = fcntl(out, F_DUPFD_CLOEXEC, 3);
	fds[2] = fcntl(err, F_DUPFD_CLOEXEC, 3);
	if (fds[2] < 0)
		_exit(3);
	for (int i = 0; i < 3; i++)
		if (fds[i] < 0 || dup2(fds[i], i) < 0)
			_exit(3);
	if (close_range(3, ~0U, 0) < 0)
		for (int fd = 3; fd < 65536; fd++)
			(void)close(fd);
	if (chdir("/") < 0)
		_exit(3);
	if (drop) {
		if (setgroups(0, NULL) < 0 || setgid(FETCH_UNPRIVILEGED_ID) < 0 ||
		    setuid(FETCH_UNPRIVILEGED_ID) < 0) {
			child_say_errno(cannot, errno);
			_exit(3);
		}
	}
	/* After the uid change, which clears it: a daemon that dies takes
	 * its download along. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execv(helper, argv);
	child_say_errno(cannot, errno);
	_exit(3);
}

/* The helper's limits from the config: the deadline, the minimum rate
 * and the deny list, as options. The strings live in a. */
struct fetch_limit_args {
	char deadline[24], min_rate[24], low_speed[24];
	char deny[FATELF_NETRANGES_MAX * FATELF_NETRANGE_TEXT_MAX];
};

static size_t fetch_limits(const engine_config *cfg, struct fetch_limit_args *a, char **argv)
{
	size_t n = 0;

	snprintf(a->deadline, sizeof(a->deadline), "%u", cfg->fetch_deadline);
	snprintf(a->min_rate, sizeof(a->min_rate), "%llu", (unsigned long long)cfg->fetch_min_rate);
	snprintf(a->low_speed, sizeof(a->low_speed), "%u", cfg->fetch_low_speed ? cfg->fetch_low_speed : 30);
	argv[n++] = (char *)"--deadline";
	argv[n++] = a->deadline;
	argv[n++] = (char *)"--min-rate";
	argv[n++] = a->min_rate;
	argv[n++] = (char *)"--low-speed-time";
	argv[n++] = a->low_speed;
	/* The buffer holds the longest list there is. */
	(void)fatelf_netranges_format(&cfg->fetch_deny, a->deny, sizeof(a->deny));
	argv[n++] = (char *)"--deny-networks";
	argv[n++] = a->deny;
	return n;
}

/* The URL in an anonymous file, at offset 0, for the helper's stdin: an
 * fd, or -errno. */
static int fetch_url_memfd(const char *url)
{
	int fd = memfd_create("fatelf-fetch-url", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = write_all(fd, url, strlen(url));
	if (r < 0) {
		close(fd);
		return r;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int fetch_spawn(worker *w, job *j, struct fetch_child *ret, fatelf_diag *d)
{
	const engine_config *cfg = engine_get_config(w->rw);
	char helper[PATH_MAX], timeout[32], cannot[PATH_MAX + 128];
	struct fetch_limit_args limits;
	char *argv[20];
	size_t argc = 0;
	int in = -1, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	/* file:// reads the daemon's files: only for root callers (checked by
	 * the method), with the daemon's identity. Anything else runs as
	 * nobody, so a hostile server meets a process that owns nothing. */
	bool is_file = strncasecmp(j->url, "file:", 5) == 0;
	bool drop = geteuid() == 0 && !(j->allow_file_url && is_file);
	sigset_t all, old;
	pid_t parent = getpid(), pid;
	int e;

	fetch_helper_path(helper, sizeof(helper));
	/* FetchFailed's message names the URL, as the helper's own do. */
	snprintf(cannot, sizeof(cannot), "%s: cannot run the download helper %s as uid %u: ", j->url_shown, helper,
		 drop ? (unsigned)FETCH_UNPRIVILEGED_ID : (unsigned)geteuid());
	snprintf(timeout, sizeof(timeout), "%u", cfg->fetch_timeout ? cfg->fetch_timeout : 60);
	argv[argc++] = helper;
	if (j->allow_file_url)
		argv[argc++] = (char *)"--allow-file";
	argv[argc++] = (char *)"--timeout";
	argv[argc++] = timeout;
	argc += fetch_limits(cfg, &limits, argv + argc);
	if (cfg->fetch_proxy[0]) {
		argv[argc++] = (char *)"--proxy";
		argv[argc++] = (char *)cfg->fetch_proxy;
	}
	argv[argc++] = (char *)"--";
	/* The URL goes on the helper's stdin: a command line is in /proc for
	 * every local user to read, and the URL may hold a password. */
	argv[argc++] = (char *)"-";
	argv[argc] = NULL;

	in = fetch_url_memfd(j->url);
	if (in < 0) {
		e = -in;
		goto fail;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		e = errno;
		goto fail;
	}
	/* No signal handler may run in the child before it resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	e = errno;
	if (pid == 0)
		fetch_child_exec(helper, argv, in, out[1], err[1], drop, parent, cannot);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		goto fail;
	close(in);
	close(out[1]);
	close(err[1]);
	*ret = (struct fetch_child){ .pid = pid, .out = out[0], .err = err[0] };
	pthread_mutex_lock(&w->lock);
	w->fetch_pid = pid;
	pthread_mutex_unlock(&w->lock);
	return 0;
fail:
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return fatelf_diag_set(d, -e, -1, "%s: cannot start the download: %s", j->url_shown, strerror(e));
}

/* Main thread or worker, under the lock: stops the running download. */
static void worker_kill_fetch_locked(worker *w)
{
	/* The pid is cleared under the lock before the child is reaped, so
	 * it cannot name another process here. */
	if (w->fetch_pid > 0)
		(void)kill(w->fetch_pid, SIGKILL);
}

/* The helper's message, up to FETCH_STDERR_MAX bytes: read until it
 * closes the pipe (it exits), killing it if it takes longer than
 * grace_ms. One line comes out, with anything unprintable replaced, since
 * the helper handled what a server sent. */
static void fetch_collect(struct fetch_child *c, unsigned grace_ms, char *msg, size_t size)
{
	char buf[FETCH_STDERR_MAX];
	size_t len = 0, k = 0;
	uint64_t deadline = now_usec() + (uint64_t)grace_ms * 1000;
	bool killed = false;

	for (;;) {
		struct pollfd pfd = { .fd = c->err, .events = POLLIN };
		uint64_t now = now_usec();
		int r = poll(&pfd, 1, killed || now >= deadline ? 1000 : (int)((deadline - now) / 1000) + 1);
		char scratch[512];
		ssize_t n;

		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0) {
			if (!killed && now_usec() >= deadline) {
				(void)kill(c->pid, SIGKILL);
				killed = true;
			}
			continue;
		}
		if (len < sizeof(buf))
			n = read(c->err, buf + len, sizeof(buf) - len);
		else
			n = read(c->err, scratch, sizeof(scratch));
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break;
		}
		if (len < sizeof(buf))
			len += (size_t)n;
	}
	for (size_t i = 0; i < len && buf[i] != '\n' && k + 1 < size; i++) {
		unsigned char ch = (unsigned char)buf[i];

		msg[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	msg[k] = '\0';
}

/*
 * After the engine is done with the pipe: stops and reaps the helper, and
 * decides whose failure r is. A helper that ended badly on its own is the
 * reason (the reader then saw the pipe end early): FetchFailed with its
 * message. One that still ran when the reader stopped is killed: the
 * reader's own error (a bad bundle, say) stands.
 */
static int fetch_finish(worker *w, job *j, struct fetch_child *c, const fatelf_reader *src, int r)
{
	const engine_config *cfg = engine_get_config(w->rw);
	siginfo_t si = { 0 };
	bool exited = false, ours = false;
	char msg[sizeof(j->diag.msg)];
	int status = 0;

	/* Done already, when the read failed (see download_failed). */
	if (c->pid <= 0)
		return r;
	/* Exited already? Look without reaping, so the pid stays ours. */
	if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == c->pid)
		exited = true;
	if (!exited && !fatelf_reader_at_eof(src)) {
		(void)kill(c->pid, SIGKILL);
		ours = true;
	}
	close(c->out);
	c->out = -1;
	/* A helper that closed its stdout is on its way out. */
	fetch_collect(c, 5000, msg, sizeof(msg));
	close(c->err);
	c->err = -1;

	pthread_mutex_lock(&w->lock);
	w->fetch_pid = 0;
	pthread_mutex_unlock(&w->lock);
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	c->pid = 0;

	if (r >= 0 || atomic_load(&w->cancel))
		return r;
	if (!ours && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		j->fetch_failed = true;
		/* The download's message replaces the reader's, subject and all. */
		j->diag.subject[0] = '\0';
		if (msg[0])
			return fatelf_diag_set(&j->diag, -EIO, -1, "%s", msg);
		if (WIFSIGNALED(status))
			return fatelf_diag_set(&j->diag, -EIO, -1, "%s: the download helper was killed by signal %d",
					       j->url_shown, WTERMSIG(status));
		return fatelf_diag_set(&j->diag, -EIO, -1, "%s: the download helper failed with status %d",
				       j->url_shown, WEXITSTATUS(status));
	}
	/* The helper keeps its own time; this is the backstop for one that
	 * neither sends nor ends. */
	if (r == -ETIMEDOUT) {
		j->fetch_failed = true;
		j->diag.subject[0] = '\0';
		return fatelf_diag_set(&j->diag, -EIO, -1, "%s: no data for %u seconds", j->url_shown,
				       cfg->fetch_timeout ? cfg->fetch_timeout : 60);
	}
	if (r == -ETIME) {
		j->fetch_failed = true;
		j->diag.subject[0] = '\0';
		return fatelf_diag_set(&j->diag, -EIO, -1, "%s: the download did not end within its deadline of %u s",
				       j->url_shown, cfg->fetch_deadline);
	}
	return r;
}

/* The download of a job, as the engine's byte source sees it. */
struct download {
	worker *w;
	job *j;
	struct fetch_child c;
	const fatelf_reader *src;
};

/* The engine's source_failed: the helper is stopped and reaped before the
 * engine writes the history row, so that the row says why the download
 * failed rather than what the short archive looked like. */
static int download_failed(void *ctx, int r, fatelf_diag *d)
{
	struct download *dl = ctx;

	(void)d;                        /* it is the job's diag */
	return fetch_finish(dl->w, dl->j, &dl->c, dl->src, r);
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
		.fat_executables_run = fat_executables_run(),
		.progress = job_progress,
		.userdata = j,
	};
	fatelf_reader_fd_opts ro = { .cancel = &w->cancel };
	fatelf_reader src = { 0 };
	int r;

	/* A passed descriptor is read, never mapped: its owner could shrink
	 * the file under the mapping. */
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
		return j->url_shown;
	if (j->path)
		return j->path;
	return j->kind == JOB_INSTALL ? "bundle from fd" : "all packages";
}

/* Whether the job's message names what the job is about, told by the
 * facts: a failed download's message names its URL, and a message about
 * the job's own package or file has it for subject. */
static bool job_diag_names_what(const job *j)
{
	const char *what = job_what(j);

	return j->fetch_failed || strcmp(j->diag.subject, what) == 0 || strcmp(j->diag.package, what) == 0;
}

/*
 * Worker thread: the queued row of a job that opened no transaction. A
 * dry run or a job with nothing to do leaves no history; one that failed
 * or was cancelled first says so in its row.
 */
static void job_close_row(worker *w, job *j, int r)
{
	store *st = engine_store(w->rw);
	const char *msg = j->diag.msg[0] ? j->diag.msg : fatelf_strerror(r);

	store_tx_adopt(st, 0);
	if (!j->txid)
		return;
	(void)store_tx_dequeue(st, j->txid,
			       j->dry_run || r >= 0 ? NULL : r == -ECANCELED ? "cancelled" : "failed",
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

		log_info("job %llu: %s %s%s: started (transaction %lld)", (unsigned long long)j->seq,
			 job_kind_name(j->kind), job_what(j), j->dry_run ? " (dry run)" : "", (long long)j->txid);
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
		if (r < 0 && j->diag.msg[0] && job_diag_names_what(j))
			/* The message names the bundle or the package itself. */
			log_error("job %llu: %s: %s", (unsigned long long)j->seq, job_kind_name(j->kind),
				  j->diag.msg);
		else if (r < 0)
			log_error("job %llu: %s %s: %s", (unsigned long long)j->seq, job_kind_name(j->kind),
				  job_what(j), j->diag.msg[0] ? j->diag.msg : fatelf_strerror(r));
		else if (j->dry_run)
			log_info("job %llu: %s %s: dry run done (%llu files, %llu bytes to write, %lld to save)",
				 (unsigned long long)j->seq,
				 j->result.change ? j->result.change :
				 j->result.kind ? j->result.kind : job_kind_name(j->kind),
				 job_what(j), (unsigned long long)j->result.files,
				 (unsigned long long)j->result.bytes_written, (long long)j->result.bytes_saved);
		else
			log_info("job %llu: %s %s: done (transaction %lld, %llu files, %llu bytes written, %lld saved)",
				 (unsigned long long)j->seq,
				 j->result.change ? j->result.change :
				 j->result.kind ? j->result.kind : job_kind_name(j->kind),
				 job_what(j), (long long)j->result.txid, (unsigned long long)j->result.files,
				 (unsigned long long)j->result.bytes_written, (long long)j->result.bytes_saved);
		if (r >= 0 && j->result.signature && strcmp(j->result.signature, "unverified") == 0)
			log_info("job %llu: the signature was not verified: key %s is not trusted, "
				 "the bundle was installed as unsigned", (unsigned long long)j->seq,
				 j->result.signer);
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
	w->exited = true;
	pthread_cond_broadcast(&w->verify_cond);
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
		log_error("fatelfd: %s: %s", s->db_path, d.msg[0] ? d.msg : fatelf_strerror(r));
		free(w);
		return NULL;
	}
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
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		pthread_cond_destroy(&w->verify_cond);
		store_close(w->qst);
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
	if (j->txid)
		json_object_object_add(o, "id", json_object_new_int64(j->txid));
	conn_reply(j->conn, o, true);
}

static const char *job_row_kind(const job *j)
{
	return j->kind == JOB_REMOVE ? "remove" : j->kind == JOB_THIN ? "thin" : "install";
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
		log_error("cannot queue a %s: %s", job_row_kind(j), d.msg[0] ? d.msg : fatelf_strerror(r));
		return r;
	}
	atomic_fetch_add(&w->srv->store_gen, 1);
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
	return 0;
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
		} else if (j->r == -ECANCELED) {
			_cleanup_json_ json_object *o = json_object_new_object();

			if (o) {
				json_object_object_add(o, "id", json_object_new_int64(j->cancel_id));
				conn_error(c, "io.fatelf.Manager.Cancelled", o);
			}
		} else if (j->r < 0) {
			c->oneway = false;
			methods_reply_failure(c, j->r, &j->diag, j->fetch_failed ? j->url_shown : NULL);
		} else {
			_cleanup_json_ json_object *o = json_object_new_object();

			if (o && json_object_object_add(o, "result", json_result(&j->result)) == 0)
				conn_reply(c, o, false);
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
	while (done) {
		job *j = done;

		done = j->next;
		job_answer(j);
		job_answer_waiters(j);
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
		worker_kill_fetch_locked(w);
		running->cancel_id = running->txid;
		log_info("job %llu: cancel requested (transaction %lld): rolling back",
			 (unsigned long long)running->seq, (long long)running->txid);
	}
	pthread_mutex_unlock(&w->lock);

	if (queued) {
		fatelf_diag d = { 0 };

		/* It never started: no file was touched. A dry run leaves no row. */
		if (store_tx_dequeue(w->qst, queued->txid, queued->dry_run ? NULL : "cancelled",
				     (int64_t)time(NULL), "cancelled before it started", &d) < 0)
			log_error("transaction %lld: %s", (long long)queued->txid, d.msg);
		atomic_fetch_add(&w->srv->store_gen, 1);
		log_info("job %llu: %s %s: cancelled before it started (transaction %lld)",
			 (unsigned long long)queued->seq, job_kind_name(queued->kind), job_what(queued),
			 (long long)queued->txid);
		queued->r = -ECANCELED;
		queued->cancel_id = queued->txid;
		job_answer(queued);
		job_free(queued);
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
		json_object_object_add(o, "kind", json_object_new_string(job_row_kind(j)));
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
	r = engine_open(&j->cfg, NULL, 0, ENGINE_OPEN_READONLY, &e, NULL, &j->diag);
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
		worker_kill_fetch_locked(w);
		w->running->cancel_id = w->running->txid ? w->running->txid : txid;
		log_info("job %llu: cancelled by shutdown", (unsigned long long)w->running->seq);
	}
	pthread_cond_signal(&w->cond);
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

	/* The queue never runs: its callers are told, its rows say so. The
	 * lock keeps a worker thread that is still stuck off the queue. */
	pthread_mutex_lock(&w->lock);
	while (w->queue) {
		job *j = w->queue;

		w->queue = j->next;
		j->next = NULL;
		(void)store_tx_dequeue(w->qst, j->txid, j->dry_run ? NULL : "cancelled", (int64_t)time(NULL),
				       "cancelled: fatelfd stopped before it started", NULL);
		log_info("job %llu: cancelled by shutdown before it started (transaction %lld)",
			 (unsigned long long)j->seq, (long long)j->txid);
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
	if (w->reload) {
		engine_config_done(&w->reload_cfg);
		free(w->reload_keys);
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_cond_destroy(&w->verify_cond);
	free(w);
	return NULL;
}
