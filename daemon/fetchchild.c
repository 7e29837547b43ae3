/*
 * An Install{url} downloads in a child process, fatelf-fetch, started with
 * fork+exec (as a uid of its own for http and https when the daemon is
 * root, see fatelf_netuid_pick): the
 * child streams the body into a pipe that the engine reads like any other
 * passed pipe, and says what went wrong in one line on a second pipe. So
 * the daemon neither parses what a server sends nor carries libcurl. The
 * child's pid is kept under the worker's mutex so that a Cancel or SIGTERM
 * can kill it; the worker always reaps it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fetchchild.h"
#include "io.h"
#include "worker_private.h"

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
int fetch_text_memfd(const char *url)
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

int fetch_child_start(const char *helper, char *const argv[], int in, const struct fatelf_netuid *as,
		      const char *cannot, struct fetch_child *ret)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 };
	sigset_t all, old;
	pid_t parent = getpid(), pid;
	int e;

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
		fatelf_netuid_exec(helper, argv, (const int[3]){ in, out[1], err[1] }, as, parent, cannot);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		goto fail;
	close(out[1]);
	close(err[1]);
	*ret = (struct fetch_child){ .pid = pid, .out = out[0], .err = err[0] };
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return -e;
}

size_t fetch_limit_argv(const engine_config *cfg, struct fetch_limit_args *a, char **argv)
{
	return fetch_limits(cfg, a, argv);
}

int fetch_spawn(worker *w, job *j, struct fetch_child *ret, fatelf_diag *d)
{
	const engine_config *cfg = engine_get_config(w->rw);
	char helper[PATH_MAX], timeout[32], cannot[PATH_MAX + 128];
	struct fetch_limit_args limits;
	char *argv[20];
	size_t argc = 0;
	int in = -1;
	/* file:// reads the daemon's files: only for root callers (checked by
	 * the method), with the daemon's identity. Anything else runs as a
	 * uid of its own, so a hostile server meets a process that owns
	 * nothing and that no other process may look into. */
	bool is_file = strncasecmp(j->url, "file:", 5) == 0;
	bool drop = geteuid() == 0 && !(j->allow_file_url && is_file);
	struct fatelf_netuid as;
	pid_t pid;
	int e;

	if (drop) {
		e = fatelf_netuid_pick(&as);
		if (e < 0)
			return fatelf_diag_set(d, e, -1, "%s: cannot start the download: no free download uid: %s",
					       j->url_shown, strerror(-e));
	}
	fetch_helper_path(helper, sizeof(helper));
	/* FetchFailed's message names the URL, as the helper's own do. */
	snprintf(cannot, sizeof(cannot), "%s: cannot run the download helper %s as uid %u: ", j->url_shown, helper,
		 drop ? (unsigned)as.uid : (unsigned)geteuid());
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

	in = fetch_text_memfd(j->url);
	if (in < 0) {
		e = -in;
		return fatelf_diag_set(d, -e, -1, "%s: cannot start the download: %s", j->url_shown, strerror(e));
	}
	e = fetch_child_start(helper, argv, in, drop ? &as : NULL, cannot, ret);
	close(in);
	if (e < 0)
		return fatelf_diag_set(d, e, -1, "%s: cannot start the download: %s", j->url_shown, strerror(-e));
	pid = ret->pid;
	pthread_mutex_lock(&w->lock);
	w->fetch_pid = pid;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

/* Main thread or worker, under the lock: stops the running download. */
void fetch_child_kill_locked(worker *w)
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
void fetch_collect(struct fetch_child *c, unsigned grace_ms, char *msg, size_t size)
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
int fetch_finish(worker *w, job *j, struct fetch_child *c, const fatelf_reader *src, int r)
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

/* The engine's source_failed: the helper is stopped and reaped before the
 * engine writes the history row, so that the row says why the download
 * failed rather than what the short archive looked like. */
int download_failed(void *ctx, int r, fatelf_diag *d)
{
	struct download *dl = ctx;

	(void)d;                        /* it is the job's diag */
	return fetch_finish(dl->w, dl->j, &dl->c, dl->src, r);
}
