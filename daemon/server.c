/*
 * The daemon's event loop: one thread, one epoll set holding the listening
 * socket, the signalfd, the worker's eventfd and every connection.
 *
 * Each connection is a Varlink stream: bytes go through the framer (which
 * bounds a message to MaxMessageSize), file descriptors passed with
 * SCM_RIGHTS are held until a call takes one, and replies queue in an
 * output buffer that is written as the peer reads. Calls on a connection
 * are served in order: while one is in flight (queued in the worker), the
 * connection is not read, so a pipelining client cannot queue work
 * without bound. A peer that breaks the protocol, sends an oversized
 * message or stops reading its replies is dropped; nobody else notices.
 *
 * What the daemon holds for its peers (replies not yet read, a message
 * still arriving) is bounded per connection, per uid and for everyone
 * together: past the uid's or the global bound, the connections that hold
 * the most are closed, so a flood of peers that never read costs a fixed
 * amount of memory and the others go on being served.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fatelfd.h"
#include "job.h"
#include "macro.h"
#include "path.h"

/* epoll data for the fixed fds; connections are their conn pointer. */
static char tag_listen, tag_signal, tag_event;

uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* 1 when a process listens on the socket at sa, 0 when none does (a
 * socket left behind), or a negative errno when that cannot be told. */
static int socket_listened(const struct sockaddr_un *sa)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 1;
	switch (errno) {
	case ECONNREFUSED:
	case ENOENT:
		return 0;
	case EAGAIN:
	case EINPROGRESS:
		/* A listener whose backlog is full is still a listener. */
		return 1;
	default:
		return -errno;
	}
}

bool server_socket_served(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	size_t n = strlen(path);

	if (n >= sizeof(sa.sun_path) || lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	memcpy(sa.sun_path, path, n + 1);
	return socket_listened(&sa) > 0;
}

int server_listen(server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	size_t n = strlen(path);
	int r;

	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n + 1);
	r = mkdir_p(AT_FDCWD, path, 0755, 0755, MKDIR_PARENTS_ONLY | MKDIR_FOLLOW);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a daemon that died is replaced. One that a
	 * daemon still listens on is not ours to take, nor is anything that
	 * is not a socket. */
	{
		struct stat st;

		if (lstat(path, &st) == 0) {
			if (!S_ISSOCK(st.st_mode))
				return -EEXIST;
			r = socket_listened(&sa);
			if (r < 0)
				return r;
			if (r > 0)
				return -EADDRINUSE;
			if (unlink(path) < 0)
				return -errno;
		}
	}
	/* Everyone may connect; the methods decide who may do what. The
	 * mode comes from the umask at bind: a chmod by name afterwards
	 * would follow whatever someone who may write in the socket's
	 * directory put there meanwhile (a symlink to any file). Nothing
	 * else runs yet to see this umask. */
	{
		mode_t old = umask(0111);

		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
		umask(old);
		if (r < 0)
			return r;
	}
	if (listen(fd, SOMAXCONN) < 0)
		return -errno;
	/* The inode we bound: at exit only that one is unlinked, never a
	 * socket another daemon put at the same path since. A path that no
	 * longer names a socket was swapped since the bind, and nobody
	 * would reach us through it. */
	{
		struct stat st;

		if (lstat(path, &st) < 0)
			return -errno;
		if (!S_ISSOCK(st.st_mode))
			return -ESTALE;
		s->listen_dev = st.st_dev;
		s->listen_ino = st.st_ino;
	}
	s->listen_fd = TAKE_FD(fd);
	s->listen_owned = true;
	return 0;
}

/* Unlinks the socket we bound, if the path still names it. */
static void server_unlink_socket(server *s)
{
	struct stat st;

	if (!s->listen_owned || !s->socket_path)
		return;
	if (lstat(s->socket_path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_dev != s->listen_dev ||
	    st.st_ino != s->listen_ino)
		return;
	(void)unlink(s->socket_path);
}

static void conn_free(conn *c);

/* What c costs: its unread replies, and the room its input takes (a
 * message arriving fills up to half of it, and that half is the peer's
 * to choose). */
static size_t conn_held(const conn *c)
{
	return (c->out_len - c->out_off) + c->in.cap;
}

/* Brings the server's total up to date with what c holds now. */
static void conn_account(conn *c)
{
	size_t h = c->dead ? 0 : conn_held(c);

	c->srv->held_total = c->srv->held_total - c->held + h;
	c->held = h;
}

/*
 * Makes room for need more bytes on c: while c's uid, or everyone, would
 * then hold more than the limit, closes the connection (of that uid, or
 * anyone's) that holds the most. Returns false when that was c itself.
 */
static bool server_make_room(server *s, conn *c, size_t need)
{
	uint64_t per_uid = s->cfg.max_buffered_per_uid, total = s->cfg.max_buffered_total;
	uint64_t lowest = per_uid && (!total || per_uid < total) ? per_uid : total;

	for (;;) {
		uint64_t sum_all = 0, sum_uid = 0;
		conn *big_all = c, *big_uid = c, *victim;
		const char *which;

		/* Almost always: everyone together is under both limits. */
		if (!lowest || (uint64_t)s->held_total + need <= lowest)
			return true;
		for (conn *o = s->conns; o; o = o->next) {
			size_t h = conn_held(o);

			sum_all += h;
			if (h > conn_held(big_all))
				big_all = o;
			if (o->uid == c->uid) {
				sum_uid += h;
				if (h > conn_held(big_uid))
					big_uid = o;
			}
		}
		if (per_uid && sum_uid + need > per_uid) {
			victim = big_uid;
			which = "MaxBufferedPerUser=";
		} else if (total && sum_all + need > total) {
			victim = big_all;
			which = "MaxBufferedTotal=";
		} else {
			return true;
		}
		/* One line a second at most: the peers choose how often. */
		if (now_usec() - s->shed_logged_usec >= 1000000u) {
			s->shed_logged_usec = now_usec();
			log_info("closing a connection of uid %u (pid %d) holding %zu bytes: over %s",
				 (unsigned)victim->uid, (int)victim->pid, conn_held(victim), which);
		}
		conn_free(victim);
		if (victim == c)
			return false;
	}
}

static void conn_update_events(conn *c)
{
	unsigned ev = 0;
	struct epoll_event e;

	if (c->dead)
		return;
	/* Read only when no call is in flight or waiting for its turn, and
	 * the peer still writes. */
	if (!c->job && !c->stream && !c->backlog && !c->eof)
		ev |= EPOLLIN;
	/* A stream goes on when the socket takes more. */
	if (c->out_len > c->out_off || c->stream)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	e = (struct epoll_event){ .events = ev, .data.ptr = c };
	epoll_ctl(c->srv->epoll_fd, EPOLL_CTL_MOD, c->fd, &e);
	c->events = ev;
}

static void conn_close_fds(conn *c)
{
	for (unsigned i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
}

/*
 * Closes c at once but frees it later (server_reap), so code further up
 * the stack that still holds c sees c->dead instead of freed memory.
 */
static void conn_free(conn *c)
{
	server *s = c->srv;

	if (c->dead)
		return;
	c->dead = true;
	conn_account(c);
	/* A queued or running job goes on; its replies are dropped. */
	if (c->job)
		c->job->conn = NULL;
	c->job = NULL;
	if (c->stream) {
		c->stream->free(c->stream);
		c->stream = NULL;
	}
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	conn_close_fds(c);
	vl_buffer_done(&c->in);
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = c->out_cap = 0;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	if (s->accept_paused) {
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &tag_listen };

		if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &e) == 0)
			s->accept_paused = false;
	}
	c->prev = NULL;
	c->next = s->dead;
	s->dead = c;
}

void conn_close(conn *c)
{
	conn_free(c);
}

static void server_reap(server *s)
{
	while (s->dead) {
		conn *c = s->dead;

		s->dead = c->next;
		free(c);
	}
}

static unsigned conns_of_uid(server *s, uid_t uid)
{
	unsigned n = 0;

	for (conn *c = s->conns; c; c = c->next)
		n += c->uid == uid;
	return n;
}

static void server_accept(server *s)
{
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct epoll_event e;
		unsigned per_uid = s->cfg.max_connections_per_uid;
		conn *c;
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				/* Out of fds: stop accepting until a peer leaves,
				 * rather than spin on a socket that stays readable. */
				log_error("accept: %s: not accepting until a connection closes",
					  strerror(errno));
				epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
				s->accept_paused = true;
			} else if (errno != EAGAIN) {
				log_error("accept: %s", strerror(errno));
			}
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			close(fd);
			continue;
		}
		/* Over a limit: the connection is closed at once, so a
		 * flood by one user neither starves the others nor us. */
		if (s->nconns >= SERVER_CONNECTIONS_MAX ||
		    (per_uid && conns_of_uid(s, cred.uid) >= per_uid)) {
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->srv = s;
		c->fd = fd;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->pid = cred.pid;
		vl_buffer_init(&c->in, (size_t)s->cfg.max_message);
		c->events = EPOLLIN;
		e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &e) < 0) {
			vl_buffer_done(&c->in);
			free(c);
			close(fd);
			continue;
		}
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->nconns++;
	}
}

/* Writes what the peer will take. Returns false when c was freed. */
static bool conn_flush(conn *c)
{
	if (c->dead)
		return false;
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			conn_free(c);
			return false;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		/* A big reply's buffer goes back once it is read. */
		if (c->out_cap > CONN_OUTPUT_KEEP) {
			free(c->out);
			c->out = NULL;
			c->out_cap = 0;
		}
	}
	conn_account(c);
	/* A peer that shut its side gets its last reply, then the close. */
	if (c->eof && !c->job && !c->stream && c->out_len == 0) {
		conn_free(c);
		return false;
	}
	conn_update_events(c);
	return true;
}

void conn_send(conn *c, char *buf, size_t len)
{
	size_t pending;

	if (!c || c->dead)
		goto out;
	pending = c->out_len - c->out_off;
	if (pending + len > CONN_OUTPUT_MAX) {
		/* The peer does not read its replies. It may not eat our
		 * memory: drop it. Its job (if any) goes on. */
		conn_free(c);
		goto out;
	}
	if (!server_make_room(c->srv, c, len))
		goto out;
	if (c->out_off > 0 && c->out_len + len > c->out_cap) {
		memmove(c->out, c->out + c->out_off, pending);
		c->out_len = pending;
		c->out_off = 0;
	}
	if (c->out_len + len > c->out_cap) {
		size_t cap = MAX(c->out_cap * 2, c->out_len + len);
		char *p = realloc(c->out, MAX(cap, (size_t)4096));

		if (!p) {
			conn_free(c);
			goto out;
		}
		c->out = p;
		c->out_cap = MAX(cap, (size_t)4096);
	}
	memcpy(c->out + c->out_len, buf, len);
	c->out_len += len;
	/* Try at once: most replies fit the socket buffer. */
	conn_flush(c);
out:
	free(buf);
}

void conn_reply(conn *c, json_object *params, bool continues)
{
	char *buf;
	size_t len;

	if (!c || c->dead)
		return;
	if (vl_reply(params, continues, &buf, &len) < 0) {
		conn_free(c);
		return;
	}
	conn_send(c, buf, len);
}

void conn_error(conn *c, const char *name, json_object *params)
{
	char *buf;
	size_t len;

	if (!c || c->dead)
		return;
	if (vl_reply_error(name, params, &buf, &len) < 0) {
		conn_free(c);
		return;
	}
	conn_send(c, buf, len);
}

void conn_error_str(conn *c, const char *name, const char *key, const char *value)
{
	char *buf;
	size_t len;

	if (!c || c->dead)
		return;
	if (vl_reply_error_str(name, key, value, &buf, &len) < 0) {
		conn_free(c);
		return;
	}
	conn_send(c, buf, len);
}

int conn_take_fd(conn *c, int64_t index)
{
	int fd;

	if (index < 0 || (uint64_t)index >= c->nfds)
		return -1;
	fd = c->fds[index];
	memmove(c->fds + index, c->fds + index + 1, (c->nfds - (size_t)index - 1) * sizeof(int));
	c->nfds--;
	return fd;
}

/*
 * Serves the complete calls buffered on c, in order, until one is in
 * flight, or CONN_CALLS_PER_TURN of them: the rest wait for the next
 * round of the loop (c->backlog), so that a peer that pipelines calls
 * with large replies delays the others by one turn at most. Returns false
 * when c was freed. The conn pointer may be freed by a handler (a reply
 * that overflowed), so each step looks it up again.
 */
static bool conn_process(conn *c)
{
	unsigned served = 0;

	c->backlog = false;
	while (!c->dead && !c->job && !c->stream) {
		const char *msg;
		size_t len;
		int r;

		if (served++ == CONN_CALLS_PER_TURN) {
			c->backlog = true;
			c->srv->backlog = true;
			break;
		}
		r = vl_buffer_next(&c->in, &msg, &len);
		if (r == 0)
			break;
		if (r < 0) {
			/* An oversized message: the stream cannot be resynced. */
			conn_free(c);
			return false;
		}
		c->srv->on_call(c, msg, len);
	}
	if (c->dead)
		return false;
	/* Passed fds belong to the calls that came with them: once every
	 * buffered byte is served, whatever no call took is closed. */
	if (!c->job && !c->stream && vl_buffer_pending(&c->in) == 0) {
		conn_close_fds(c);
		vl_buffer_trim(&c->in);
	}
	return conn_flush(c);
}

void conn_stream_start(conn *c, conn_stream *st)
{
	if (!c || c->dead || c->stream) {
		st->free(st);
		return;
	}
	c->stream = st;
	conn_update_events(c);
}

/* The next chunks of c's stream while little output waits; at its end,
 * the calls that came meanwhile. */
static void conn_stream_pump(conn *c)
{
	while (!c->dead && c->stream && c->out_len - c->out_off < CONN_STREAM_LOW) {
		conn_stream *st = c->stream;

		if (st->next(c, st) > 0)
			continue;
		if (c->dead)
			return;
		c->stream = NULL;
		st->free(st);
		conn_process(c);
		return;
	}
	if (!c->dead)
		conn_update_events(c);
}

void conn_call_done(conn *c)
{
	if (c->dead)
		return;
	c->job = NULL;
	conn_process(c);
}

/* Receives what is there, with any passed fds. */
static void conn_read(conn *c)
{
	char buf[65536];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 16)];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = &ctl,
		.msg_controllen = sizeof(ctl),
	};
	ssize_t n;

	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		conn_free(c);
		return;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nfd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->nfds < CONN_FDS_MAX)
				c->fds[c->nfds++] = fd;
			else
				close(fd);
		}
	}
	if (n == 0) {
		c->eof = true;
		if (vl_buffer_pending(&c->in) > 0) {
			/* A message cut off by the close. */
			conn_free(c);
			return;
		}
		if (!c->job && !c->stream && c->out_len == c->out_off) {
			conn_free(c);
			return;
		}
		conn_update_events(c);
		return;
	}
	if (!server_make_room(c->srv, c, (size_t)n))
		return;
	if (vl_buffer_append(&c->in, buf, (size_t)n) < 0) {
		conn_free(c);
		return;
	}
	conn_account(c);
	if (conn_process(c))
		conn_account(c);
}

static void server_signal(server *s)
{
	struct signalfd_siginfo si;

	while (read(s->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			log_info("signal %s: stopping", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			s->quit = true;
		} else if (si.ssi_signo == SIGHUP) {
			s->on_reload(s);
		}
	}
}

int server_run(server *s)
{
	struct epoll_event e;
	sigset_t mask;

	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epoll_fd < 0)
		return -errno;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	/* Blocked in every thread: the worker is started after this. */
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return -EINVAL;
	s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->signal_fd < 0)
		return -errno;
	e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_signal };
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->signal_fd, &e) < 0)
		return -errno;
	e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_event };
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->event_fd, &e) < 0)
		return -errno;
	if (fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	e = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_listen };
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &e) < 0)
		return -errno;
	return 0;
}

/* One more turn for each connection whose calls wait for it. */
static void server_serve_backlog(server *s)
{
	if (!s->backlog)
		return;
	s->backlog = false;
	for (conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->backlog && !c->job)
			conn_process(c);
	}
}

/* The loop proper; returns when a signal asked us to stop. */
int server_loop(server *s)
{
	while (!s->quit) {
		struct epoll_event ev[64];
		/* Waiting calls: look at the sockets, but do not sleep. */
		int n = epoll_wait(s->epoll_fd, ev, (int)ARRAY_SIZE(ev), s->backlog ? 0 : -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;

			if (p == &tag_listen) {
				server_accept(s);
			} else if (p == &tag_signal) {
				server_signal(s);
			} else if (p == &tag_event) {
				uint64_t x;

				(void)!read(s->event_fd, &x, sizeof(x));
				s->on_wake(s);
			} else {
				conn *c = p;

				/* An earlier event of this round may have closed c. */
				if (c->dead)
					continue;
				/* Read before acting on a hang-up: a peer may send a
				 * (oneway) call and close at once. The read that
				 * returns 0 then closes the connection. */
				if (ev[i].events & EPOLLIN) {
					conn_read(c);
					continue;
				}
				/* Calls that wait for their turn are served first. */
				if ((ev[i].events & (EPOLLHUP | EPOLLERR)) && !c->backlog) {
					conn_free(c);
					continue;
				}
				if ((ev[i].events & EPOLLOUT) && conn_flush(c) && c->stream)
					conn_stream_pump(c);
			}
		}
		server_serve_backlog(s);
		server_reap(s);
	}
	return 0;
}

void server_flush(server *s)
{
	for (conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		conn_flush(c);
	}
	server_reap(s);
}

void server_done(server *s)
{
	while (s->conns)
		conn_free(s->conns);
	server_reap(s);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	server_unlink_socket(s);
	if (s->signal_fd >= 0)
		close(s->signal_fd);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	s->listen_fd = s->signal_fd = s->epoll_fd = -1;
}
