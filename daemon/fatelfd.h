/*
 * fatelfd, the installer daemon: the pieces its files share.
 *
 *  - main.c parses options and the config, opens the engines, sets up the
 *    socket (activated or bound), signals and sd_notify, and runs the loop;
 *  - server.c is the single-threaded epoll loop: connections, peer
 *    credentials, framing, fds passed with SCM_RIGHTS, output buffers;
 *  - methods.c is the method table of io.fatelf.Manager and
 *    org.varlink.service, authorization, and the read methods, which run
 *    inline on the main thread against a read-only store connection;
 *  - worker.c owns the read-write engine on one worker thread and runs the
 *    mutating jobs (Install, Remove, Thin) one at a time in arrival order,
 *    and Verify on short-lived threads of their own. Downloads run in a
 *    child process, fatelf-fetch (fetch_main.c), never in the daemon.
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
#define FETCH_UNPRIVILEGED_ID 65534     /* nobody/nogroup: http(s) downloads run as */
#define FETCH_BACKSTOP_SEC 10           /* a silent helper pipe fails this long after its timeout */

static inline void json_putp(json_object **o)
{
	if (*o)
		json_object_put(*o);
}
#define _cleanup_json_ __attribute__((cleanup(json_putp)))

/* Logging to stderr with sd-daemon priority prefixes (journald reads them). */
#define log_info(...) daemon_log(6, __VA_ARGS__)
#define log_error(...) daemon_log(3, __VA_ARGS__)
void daemon_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct server server;
typedef struct conn conn;
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
uint64_t now_usec(void);

/* ------------------------------------------------------------ reload.c */
/* SIGHUP: reads the config and the trusted keys again. A config or a key
 * that does not load changes nothing (the reason is logged); the running
 * job keeps the settings it started with, the next one gets the new. */
void server_reload(server *s);

/* ------------------------------------------------------------ methods.c */
/* Handles one message from c (without its NUL). */
void methods_dispatch(conn *c, const char *msg, size_t len);
/* The method names the table holds, NULL-terminated (for --check-interface). */
const char *methods_name(size_t i);
/* Turns an engine failure into the interface's error reply on c. url is set
 * when the failure is the download of that URL (FetchFailed). */
void methods_reply_failure(conn *c, int r, const fatelf_diag *d, const char *url);
json_object *json_result(const engine_result *r);
json_object *json_progress(const engine_progress *p);
extern const char fatelfd_interface_text[];

/* ------------------------------------------------------------ fetch_helper.c */
/* The download helper's path: $FATELF_FETCH_HELPER, next to fatelfd, or
 * the installed one. */
void fetch_helper_path(char *buf, size_t size);
/* The uid downloads run as: nobody when the daemon is root, else its own. */
uid_t fetch_helper_uid(void);
/* 0 when helper is a file that fetch_helper_uid() may execute, else the
 * negative errno that says why not. */
int fetch_helper_check(const char *helper);

/* ------------------------------------------------------------ worker.c */
enum job_kind {
	JOB_INSTALL = 1,
	JOB_REMOVE,
	JOB_THIN,
	JOB_VERIFY,
	JOB_CANCEL,             /* a Cancel waiting for the rollback it asked for */
};

struct job {
	job *next;
	int kind;
	uint64_t seq;           /* the daemon's job number (logs) */
	int64_t txid;           /* its history row, queued when it was accepted; Cancel: the target */
	uid_t uid;              /* the caller's */
	int64_t queued_at;
	conn *conn;             /* main thread only; NULL once the peer left */
	job *waiters;           /* main thread only: the Cancel calls waiting for its end */
	bool more;              /* the caller streams progress */
	bool oneway;            /* the caller wants no reply */
	/* Install */
	int fd;                 /* -1 unless the source is a passed fd */
	char *url;
	char *url_shown;        /* url without its credentials: logs and replies */
	char *path;
	engine_policy_spec policy;
	bool has_policy;
	bool allow_unsigned, force, allow_downgrade, allow_setid;
	bool allow_file_url;
	/* Remove, Verify */
	char *package;
	/* Thin */
	char **packages;        /* NULL-terminated, NULL: all */
	bool dry_run;
	/* Set by the worker, read by the main thread after the job is done. */
	worker *w;
	int r;
	bool fetch_failed;      /* r is the download's error */
	int64_t cancel_id;      /* the id Cancel named, for the Cancelled reply */
	fatelf_diag diag;
	engine_result result;
	json_object *reply;     /* Verify: the reply parameters */
	/* Progress, under the worker's mutex. */
	engine_progress progress;
	char phase[32];
	char progress_path[4096];
	bool progress_dirty;
	char *sent_progress;    /* main thread: the Progress last sent (JSON) */
	uint64_t woke_usec;     /* worker: when it last woke the loop */
	int64_t started_at;     /* seconds since the epoch */
	/* Verify: the settings it opens its engine with. */
	engine_config cfg;
	bool has_cfg;
};

job *job_new(int kind);
job *job_free(job *j);

/* Also opens the main thread's connection to the store (the queued rows)
 * and closes as cancelled the queued rows a stop left behind. */
worker *worker_new(server *s, engine *rw);
/* Queues j (takes it, also on failure), with its history row queued: its
 * id is the transaction id from now on. A caller with "more" gets at once
 * a reply with that id and Progress "waiting" when another job runs or
 * waits. Fails only when the row cannot be written. */
int worker_submit(worker *w, job *j);
/* Starts j (a Verify) on its own thread with its own read-only engine. */
int worker_verify(worker *w, job *j);
/* Main thread: the eventfd fired; send progress and final replies. */
void worker_dispatch(worker *w);
/*
 * Cancel from c: id names a queued job (taken off the queue, its row
 * cancelled, its caller answered Cancelled, and c answered {id, state:
 * "cancelled"} at once) or the running one (0: whichever runs). A running
 * job is asked to stop; c waits for the end of its rollback and is then
 * answered {id, state} ("cancelled", or "committed"/"failed" when it ended
 * otherwise); with more it is first told {id, state: "rolling-back"}.
 * -ESRCH when nothing matched (nothing was sent).
 */
int worker_cancel(worker *w, int64_t id, conn *c, bool more);
/* The running and the queued jobs, in order, for Status: []Job. */
json_object *worker_jobs(worker *w);
/* Hands a reload's settings (copied) to the worker, which takes them before
 * its next job. Returns whether a job runs meanwhile (it keeps its own). */
bool worker_reconfigure(worker *w, const engine_config *cfg, const fatelf_ms_pubkey *keys, size_t nkeys);
/* What the running job is, for Status. */
typedef struct job_info {
	const char *kind;       /* "install", "remove", "thin" */
	char package[256];      /* "" when none */
	int64_t started_at;
	engine_progress progress;
	char phase[32];
	char path[4096];
} job_info;
bool worker_running(worker *w, job_info *ret);
/* The newest pending history row's id on the read-only store, or 0. */
int64_t worker_pending_txid(server *s);
/* Cancels the running job and waits for it and for Verify threads until
 * deadline_usec (CLOCK_MONOTONIC); the jobs that ended are answered by
 * the next worker_dispatch. false: some thread is still busy. */
bool worker_stop(worker *w, uint64_t deadline_usec);
/* worker_stop, then drops the queue and frees everything; leaves w alone
 * when a thread is still busy (the process is about to exit). */
worker *worker_free(worker *w);

#endif
