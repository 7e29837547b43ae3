/*
 * fatelfd, the installer daemon: the pieces its files share.
 *
 *  - main.c parses options and the config, opens the engines, sets up the
 *    socket (activated or bound), signals and sd_notify, and runs the loop;
 *  - server.c is the single-threaded epoll loop: connections, peer
 *    credentials, framing, fds passed with SCM_RIGHTS, output buffers;
 *  - dispatch.c holds the method table of io.fatelf.Manager and
 *    org.varlink.service and checks each call (authz.c: who may call
 *    what; params.c: the parameters) before its handler runs;
 *  - service.c, status.c and queries.c answer inline on the main thread
 *    against a read-only store connection; jobmethods.c turns the
 *    mutating methods into jobs (job.c); reply.c and errmap.c build the
 *    replies, with the objects of lib/install/results.c (which fatelf
 *    --root prints too);
 *  - worker.c owns the read-write engine on one worker thread and runs the
 *    mutating jobs (Install, Remove, Thin) one at a time in arrival order;
 *    queue.c is the main thread's side of them; verify.c runs Verify on
 *    short-lived threads of its own. Downloads run in a child process,
 *    fatelf-fetch (fetch_main.c, started by fetchchild.c), never in the
 *    daemon.
 *
 * Threads meet in one place only: the worker's mutex, which guards the job
 * queue, the running job's progress and the list of finished jobs. The
 * worker wakes the loop with an eventfd; every socket write happens on the
 * main thread.
 */
#ifndef FATELFD_H
#define FATELFD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "conf.h"
#include "jsonput.h"
#include "netuid.h"
#include "store.h"
#include "params.h"
#include "varlink.h"

#define FATELFD_INTERFACE "io.fatelf.Manager"
#define FATELFD_DEFAULT_SOCKET "/run/fatelfd/io.fatelf.Manager"
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define FATELFD_DEFAULT_CONFIG SYSCONFDIR "/fatelf/fatelfd.conf"
#define FATELFD_URL "https://github.com/fatelf/fatelf"

/* Limits of one connection. */
#define CONN_FDS_MAX PARAMS_FDS_MAX     /* passed fds held at once */
#define CONN_OUTPUT_MAX ((size_t)16 << 20) /* unread replies before the peer is dropped */
/* A larger output buffer is freed once empty: an idle connection then
 * holds at most this much, so the connection limits bound what idle
 * connections hold together (4096 x 4 KiB), outside the buffer caps. */
#define CONN_OUTPUT_KEEP ((size_t)4 << 10)
#define CONN_CALLS_PER_TURN 16          /* calls of one peer served per loop round */
#define SERVER_CONNECTIONS_MAX 4096     /* all peers together */
#define VERIFY_THREADS_MAX 4            /* Verify calls served at once */
#define PROGRESS_INTERVAL_USEC 100000   /* at most ~10 progress replies a second */
#define SHUTDOWN_GRACE_USEC 3500000     /* SIGTERM: threads get this long to end */
#define FETCH_HELPER_NAME "fatelf-fetch"
#define FETCH_HELPER_ENV "FATELF_FETCH_HELPER" /* overrides where the helper is */
#define FETCH_STDERR_MAX 4096           /* the helper's message kept, at most */
/* The uids network downloads run as: lib/basic/netuid.h. */
#define FETCH_BACKSTOP_SEC 10           /* a silent helper pipe fails this long after its timeout */

/* Logging (daemon/log.c): to the journal with structured fields when
 * stderr is systemd's journal stream, else to stderr as plain lines
 * ("error: " and "warning: " before those levels). A job's lines carry
 * its fields: FATELF_PACKAGE=, FATELF_VERSION=, FATELF_TXID=,
 * FATELF_KIND= (each left out when NULL, empty or 0) and FATELF_UID=
 * (with has_uid). */
typedef struct log_fields {
	const char *package;
	const char *version;
	int64_t txid;
	const char *kind;
	uid_t uid;              /* the caller's */
	bool has_uid;
} log_fields;
#define log_info(...) daemon_log(6, __VA_ARGS__)
#define log_warning(...) daemon_log(4, __VA_ARGS__)
#define log_error(...) daemon_log(3, __VA_ARGS__)
#define log_tx(prio, fields, ...) daemon_log_fields(prio, fields, __VA_ARGS__)
void daemon_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void daemon_log_fields(int prio, const log_fields *f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether lines go to the journal (decided once, at the first line). */
bool daemon_log_to_journal(void);

typedef struct server server;
typedef struct conn conn;
typedef struct conn_stream conn_stream;
typedef struct job job;
typedef struct worker worker;

/* ------------------------------------------------------------ server.c */
struct conn {
	server *srv;
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	vl_buffer in;
	char *out;              /* replies not yet written: out[out_off..out_len) */
	size_t out_len, out_off, out_cap;
	int fds[CONN_FDS_MAX];  /* passed with SCM_RIGHTS, not yet taken by a call */
	unsigned nfds;
	job *job;               /* the call in flight; no further call is read meanwhile */
	conn_stream *stream;    /* a reply sent in chunks; no further call is read meanwhile */
	bool eof;               /* the peer shut its side: finish replies, then close */
	bool dead;              /* closed; freed at the end of the loop round */
	bool oneway;            /* the call being handled wants no reply */
	unsigned events;        /* the epoll mask registered */
	size_t held;            /* bytes counted in the server's held_total */
	bool backlog;           /* calls buffered wait for the next turn */
	conn *prev, *next;
};

struct server {
	engine_config cfg;
	fatelf_ms_pubkey *keys;
	size_t nkeys;
	const char *config_path;
	const char *socket_path;
	char *db_path;
	engine *ro;             /* queries on the main thread */
	worker *worker;
	int epoll_fd;
	int listen_fd;
	int signal_fd;
	int event_fd;           /* the worker's and verify threads' wake-up */
	bool listen_owned;      /* we bound the socket: unlink it at exit */
	dev_t listen_dev;       /* ... if the path still names this inode */
	ino_t listen_ino;
	bool accept_paused;     /* out of fds: the listening socket is out of epoll */
	bool quit;
	uint64_t started_usec;  /* CLOCK_MONOTONIC */
	conn *conns;
	conn *dead;             /* closed connections not yet freed */
	unsigned nconns;
	size_t held_total;      /* unread replies and partial messages of every peer */
	bool backlog;           /* some connection has calls waiting for a turn */
	uint64_t shed_logged_usec; /* the last "closing ... over the limit" line */
	/* Status's totals are sums over every file: they are computed once
	 * per change of the store. The worker bumps store_gen after each job;
	 * the main thread recomputes when it differs from usage_gen. */
	atomic_uint_fast64_t store_gen;
	uint64_t usage_gen;
	bool usage_valid;
	uint64_t usage_packages;
	store_usage usage;
	/* The layers above the loop, which it calls: a call arrived on c (the
	 * message without its NUL), the eventfd fired, SIGHUP. */
	void (*on_call)(conn *c, const char *msg, size_t len);
	void (*on_wake)(server *s);
	void (*on_reload)(server *s);
};

int server_listen(server *s, const char *path);
/* true when a daemon already listens on the socket at path: checked before
 * the state directory is opened, so that a second daemon touches no state
 * (nor runs recovery on another state directory's journal over the same
 * root) before it is refused. */
bool server_socket_served(const char *path);
/* Sets up epoll, the signalfd and the fixed fds. */
int server_run(server *s);
/* Serves until SIGTERM or SIGINT. */
int server_loop(server *s);
/* At exit: writes what the peers will take without waiting. */
void server_flush(server *s);
void server_done(server *s);
/* Queues a reply (already serialized, with its NUL) on c; consumes buf.
 * A peer whose unread output passes CONN_OUTPUT_MAX is dropped, and when
 * one uid's peers or all peers together would hold more than
 * MaxBufferedPerUser= or MaxBufferedTotal=, those holding the most are. */
void conn_send(conn *c, char *buf, size_t len);
void conn_reply(conn *c, json_object *params, bool continues);
void conn_error(conn *c, const char *name, json_object *params);
void conn_error_str(conn *c, const char *name, const char *key, const char *value);
/* Drops the peer (its job, if any, goes on). */
void conn_close(conn *c);
/* Takes the Nth passed fd (the caller owns it), or -1. */
int conn_take_fd(conn *c, int64_t index);
/* The call in flight on c finished: read the next one. */
void conn_call_done(conn *c);

/*
 * A call answered in chunks (a method called with "more" whose answer may
 * be long): instead of one reply, the handler hands c a stream, whose next
 * is called each time c's unsent output is below CONN_STREAM_LOW, so that
 * only a chunk or two is ever held, however long the answer, and a peer
 * that reads slowly slows the stream instead of growing the daemon.
 * next sends one reply (continues while more follow) and returns 1 while
 * more follow, 0 after the last reply or an error reply; free is called
 * once, when the stream ended or the peer went away. No further call of
 * the peer is read meanwhile.
 */
struct conn_stream {
	int (*next)(conn *c, conn_stream *st);
	void (*free)(conn_stream *st);
};
#define CONN_STREAM_LOW (64u * 1024)
/* Takes st (freed with st->free even when c is gone). */
void conn_stream_start(conn *c, conn_stream *st);
uint64_t now_usec(void);

/* ------------------------------------------------------------ reload.c */
/* SIGHUP: reads the config and the trusted keys again. A config or a key
 * that does not load changes nothing (the reason is logged); the running
 * job keeps the settings it started with, the next one gets the new. */
void server_reload(server *s);

/* ------------------------------------------------------------ interface.c */
/* schema/io.fatelf.Manager.varlink, embedded at build time. */
extern const char fatelfd_interface_text[];

/* ------------------------------------------------------------ fetch_helper.c */
/* The download helper's path: $FATELF_FETCH_HELPER, next to fatelfd, or
 * the installed one. */
void fetch_helper_path(char *buf, size_t size);
/* Who a network download runs as when the daemon is root: a uid of its
 * own, fatelf_netuid_pick (lib/basic/netuid.h). */
/* 0 when helper is a file that a download identity (*ret_as) may execute,
 * else the negative errno that says why not. The daemon's own identity
 * when it is not root. */
int fetch_helper_check(const char *helper, struct fatelf_netuid *ret_as);

#endif
