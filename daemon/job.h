/*
 * A job (daemon/job.c): what a call asked the worker to do, with what the
 * worker found, and the names it goes by in logs, rows and Status.
 */
#ifndef FATELFD_JOB_H
#define FATELFD_JOB_H

#include "fatelfd.h"

enum job_kind {
	JOB_INSTALL = 1,
	JOB_REMOVE,
	JOB_THIN,
	JOB_VERIFY,
	JOB_CANCEL,             /* a Cancel waiting for the rollback it asked for */
	JOB_UPDATE,             /* Update: a thread of its own, as Verify */
};

/* What a repository install fetched. */
struct job_fetch {
	uint64_t objects, local, cloned, fetched, bytes, metadata;
};

/* One package of an Install of several. */
struct job_member {
	char *spec;             /* "NAME[=VERSION]" */
	char *repo_name;        /* the repository it came from */
	int fd;                 /* a bundle passed as an fd (has_fd), else unused */
	bool has_fd;
	char *source_path;      /* with fd: the file the caller opened */
	bool automatic;         /* pulled in as another member's dependency */
	engine_result result;
	struct job_fetch fetch;
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
	char *source_path;      /* with fd: the file the caller opened (recorded, never opened) */
	engine_policy_spec policy;
	bool has_policy;
	bool allow_unsigned, force, allow_downgrade, allow_setid;
	bool allow_file_url;
	/* Install from a repository: "NAME[=VERSION]", and what it fetched */
	char *repo_spec;
	char *repo_name;        /* the repository it came from (replies, errors) */
	bool has_fetch;
	struct job_fetch fetch;
	/* Install of several packages of the repositories as one
	 * transaction: repo_spec names them all (logs), each has its own */
	struct job_member *members;
	size_t nmembers;
	/* Remove, Verify; Update: the repository (NULL: all) */
	char *package;
	/* Thin */
	char **packages;        /* NULL-terminated, NULL: all */
	bool dry_run;
	bool purge;             /* Remove: kept configs and PATH.fatelf-new too */
	bool autoremove;        /* Remove: the automatic packages nothing needs (members filled by the worker) */
	bool keep_automatic;    /* Install: an upgrade or repair, the automatic marks stay */
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
	char progress_package[256];
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
/* "install", "remove", "thin", "verify", "cancel". */
const char *job_kind_name(int kind);
/* The kind its history row records: install, remove or thin. */
store_tx_kind job_row_kind(const job *j);
/* The package its queued row names: Remove's, or Thin's only one; or NULL. */
const char *job_row_package(const job *j);
/* What the job is about, for the logs: a package, a URL, a path. */
const char *job_what(const job *j);
/* Whether the job's message already names job_what. */
bool job_diag_names_what(const job *j);

/* Its lines in the daemon's log (daemon/joblog.c), each naming the job's
 * number, kind, package, version (as far as known) and the caller's uid. */
void job_log_queued(const job *j, const job *ahead);
void job_log_started(const job *j);
/* "EVENT (transaction N)": a cancel, a shutdown. */
void job_log_event(const job *j, const char *event);
/* Done, dry run done, or failed (by j->r). */
void job_log_ended(const job *j);

#endif
