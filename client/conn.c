/*
 * The client's side of the Varlink connection to fatelfd: connect to the
 * socket, send one call (with the file descriptors an install passes, as
 * SCM_RIGHTS on the message's first bytes), and read the replies through
 * the library's framer and reply parser, handing each to the verb until
 * the last one. Every failure ends here as one error line and an exit
 * status, so the verbs only deal with successful replies.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fatelfctl.h"
#include "macro.h"

/*
 * The largest reply we take. The daemon is the peer we chose to trust, and
 * a Files or Verify reply for a package of many thousand files with their
 * records runs past the library's 1 MiB default; this only stops a runaway.
 */
#define CTL_REPLY_MAX ((size_t)256 << 20)

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	interrupted = sig;
}

/*
 * Ctrl-C during a wait for the daemon deserves more than the default: a
 * transaction belongs to the daemon and goes on, and the user should be
 * told so rather than assume it was stopped; with --json the caller gets
 * an error object. The handler has no SA_RESTART, so the blocked recv
 * returns.
 */
static void interrupt_catch(struct sigaction *ret_int, struct sigaction *ret_term)
{
	struct sigaction sa = { .sa_handler = on_interrupt };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, ret_int);
	sigaction(SIGTERM, &sa, ret_term);
}

/*
 * What to do when the socket does not answer: no socket, or nobody
 * listening on it, is a daemon that is not running; a socket the caller
 * may not connect to is a question of rights. The advice is a line of
 * its own after the error, and the "hint" member of the JSON error.
 */
static void unreachable_hint(int e, char *buf, size_t size)
{
	buf[0] = '\0';
	if ((e == ENOENT || e == ECONNREFUSED) && strcmp(ctl_arg.socket, CTL_DEFAULT_SOCKET) == 0)
		snprintf(buf, size, "fatelfd is not running: start it with 'systemctl start fatelfd.socket' "
			 "(or run fatelfd as root)");
	else if (e == ENOENT || e == ECONNREFUSED)
		snprintf(buf, size, "no fatelfd is listening there: start one with 'fatelfd --socket %s' "
			 "(as root)", ctl_arg.socket);
	else if (e == EACCES || e == EPERM)
		snprintf(buf, size, "the socket does not admit you: run this as root, or have root admit "
			 "your group (AdminGroup= in %s, and the socket's mode)", CTL_CONFIG_PATH);
}

static int unreachable(int e)
{
	json_object *p = json_object_new_object();
	char hint[512];
	int status;

	unreachable_hint(e, hint, sizeof(hint));
	if (p) {
		json_object_object_add(p, "socket", json_object_new_string(ctl_arg.socket));
		json_object_object_add(p, "errno", json_object_new_string(strerrorname_np(e) ?
									   strerrorname_np(e) : "EUNKNOWN"));
		if (hint[0])
			json_object_object_add(p, "hint", json_object_new_string(hint));
	}
	status = ctl_error_data(e == EACCES || e == EPERM ? EXIT_DENIED : EXIT_SYSTEM, CTL_ERROR_UNREACHABLE,
				p, "cannot reach fatelfd at %s: %s", ctl_arg.socket, strerror(e));
	if (hint[0])
		ctl_note("%s", hint);
	return status;
}

static int conn_open(int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(ctl_arg.socket);
	int fd;

	if (len >= sizeof(sa.sun_path))
		return ctl_error(EXIT_SYSTEM, "cannot reach fatelfd at %s: %s", ctl_arg.socket,
				 strerror(ENAMETOOLONG));
	memcpy(sa.sun_path, ctl_arg.socket, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ctl_error(EXIT_SYSTEM, "cannot create a socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return unreachable(e);
	}
	*ret_fd = fd;
	return EXIT_OK;
}

/* Writes the whole message; the fds ride on the first sendmsg only. */
static int conn_send(int fd, const char *buf, size_t len, const int *fds, size_t n_fds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 16)];
	} control;
	size_t done = 0;

	if (n_fds > 16)
		return -EINVAL;
	while (done < len) {
		struct iovec iov = { .iov_base = (char *)buf + done, .iov_len = len - done };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (done == 0 && n_fds > 0) {
			struct cmsghdr *c;

			memset(&control, 0, sizeof(control));
			mh.msg_control = control.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
		}
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR && !interrupted)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

/* Exits as a shell reports a program the signal ended (130 for Ctrl-C),
 * saying what became of the transaction, which is the daemon's. */
static int interrupted_report(const char *method)
{
	json_object *p = json_object_new_object();
	int sig = interrupted;

	if (p)
		json_object_object_add(p, "signal", json_object_new_string(sig == SIGINT ? "SIGINT" :
									    sig == SIGTERM ? "SIGTERM" :
									    "signal"));
	/* Cancel is the one wait that is not for a transaction of its own:
	 * what goes on is the rollback. */
	if (strcmp(method, "Cancel") == 0)
		return ctl_error_data(EXIT_SIGNAL + sig, CTL_ERROR_INTERRUPTED, p,
				      "interrupted; a rollback already started goes on in fatelfd "
				      "to its end ('fatelfctl status' shows it)");
	if (strcmp(method, "Install") != 0 && strcmp(method, "Remove") != 0 &&
	    strcmp(method, "Thin") != 0)
		return ctl_error_data(EXIT_SIGNAL + sig, CTL_ERROR_INTERRUPTED, p, "interrupted");
	return ctl_error_data(EXIT_SIGNAL + sig, CTL_ERROR_INTERRUPTED, p,
			      "interrupted; a transaction already started goes on in fatelfd "
			      "('fatelfctl cancel' rolls it back)");
}

/* ret_error, when not NULL, takes an error reply instead of reporting it
 * (ctl_call_capture). */
static int call(const char *method, json_object *params, unsigned flags,
		const int *fds, size_t n_fds, ctl_reply_fn on_reply, void *userdata,
		char **ret_error, json_object **ret_params)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *msg = NULL;
	char name[128];
	char buf[65536];
	vl_buffer vb;
	size_t len;
	int status = EXIT_SYSTEM;
	bool done = false;
	int r;

	snprintf(name, sizeof(name), "%s.%s", CTL_INTERFACE, method);
	r = vl_call_format(name, params, flags, &msg, &len);
	if (r < 0)
		return ctl_error(EXIT_SYSTEM, "cannot build the %s call: %s", method, strerror(-r));
	r = conn_open(&fd);
	if (r != EXIT_OK)
		return r;
	r = conn_send(fd, msg, len, fds, n_fds);
	if (r < 0) {
		if (interrupted)
			return interrupted_report(method);
		return ctl_error(EXIT_SYSTEM, "cannot send to fatelfd at %s: %s", ctl_arg.socket,
				 strerror(-r));
	}
	if (flags & VL_CALL_ONEWAY)
		return EXIT_OK;

	vl_buffer_init(&vb, CTL_REPLY_MAX);
	while (!done) {
		const char *m;
		size_t mlen;
		ssize_t n;

		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR && !interrupted)
				continue;
			ctl_progress_clear();
			if (interrupted)
				status = interrupted_report(method);
			else
				status = ctl_error(EXIT_SYSTEM, "cannot read from fatelfd: %s",
						   strerror(errno));
			break;
		}
		if (n == 0) {
			ctl_progress_clear();
			status = ctl_error(EXIT_SYSTEM, "fatelfd closed the connection before its last reply%s",
					   vl_buffer_pending(&vb) ? " (a reply was cut short)" : "");
			break;
		}
		r = vl_buffer_append(&vb, buf, (size_t)n);
		while (r >= 0 && (r = vl_buffer_next(&vb, &m, &mlen)) > 0) {
			vl_response resp = { 0 };
			fatelf_diag d;

			fatelf_diag_clear(&d);
			r = vl_reply_parse(m, mlen, &resp, &d);
			if (r < 0) {
				ctl_progress_clear();
				status = ctl_error_data(EXIT_SYSTEM, CTL_ERROR_PROTOCOL, NULL,
							"protocol error: %s", fatelf_diag_text(&d, r));
				done = true;
				break;
			}
			if (resp.error && ret_error) {
				char words[2048];

				ctl_progress_clear();
				*ret_error = strdup(resp.error);
				*ret_params = resp.parameters ? json_object_get(resp.parameters) : NULL;
				status = *ret_error ? ctl_error_words(resp.error, resp.parameters, ctl_arg.verb,
								      ctl_arg.socket, words, sizeof(words))
						    : ctl_oom();
				done = true;
			} else if (resp.error) {
				ctl_progress_clear();
				status = ctl_error_reply(resp.error, resp.parameters);
				done = true;
			} else if (on_reply(resp.parameters, resp.continues, userdata) == CTL_STOP ||
				   !resp.continues) {
				status = EXIT_OK;
				done = true;
			}
			vl_response_done(&resp);
			if (done)
				break;
		}
		if (!done && r < 0) {
			ctl_progress_clear();
			status = ctl_error_data(EXIT_SYSTEM, CTL_ERROR_PROTOCOL, NULL, "protocol error: %s",
						r == -EMSGSIZE ? "a reply is too long" : strerror(-r));
			break;
		}
	}
	vl_buffer_done(&vb);
	return status;
}

/* Only the wait for the daemon is caught: the signals are as they were
 * again while the caller prints. */
int ctl_call(const char *method, json_object *params, unsigned flags,
	     const int *fds, size_t n_fds, ctl_reply_fn on_reply, void *userdata)
{
	struct sigaction old_int, old_term;
	int status;

	/* Every wait: a verify of a big system takes a while too. */
	interrupt_catch(&old_int, &old_term);
	status = call(method, params, flags, fds, n_fds, on_reply, userdata, NULL, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return status;
}

int ctl_call_capture(const char *method, json_object *params, unsigned flags, ctl_reply_fn on_reply,
		     void *userdata, char **ret_error, json_object **ret_params)
{
	struct sigaction old_int, old_term;
	int status;

	*ret_error = NULL;
	*ret_params = NULL;
	interrupt_catch(&old_int, &old_term);
	status = call(method, params, flags, NULL, 0, on_reply, userdata, ret_error, ret_params);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return status;
}
