/*
 * fatelfd's entry point: options, the config, the two engines (read-write
 * for the worker, read-only for queries), the listening socket (passed by
 * systemd, or bound here), then the loop until SIGTERM or SIGINT; on the
 * way out the running transaction is cancelled and rolled back, and the
 * worker is waited for. Also --check-interface, which compares the method
 * table with the interface file the daemon carries.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "dispatch.h"
#include "fatelfd.h"
#include "metrics.h"
#include "worker.h"
#include "macro.h"
#include "repos.h"
#include "path.h"

/* The server's calls up into the layers above it. */
static void on_wake(server *s)
{
	worker_dispatch(s->worker);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: fatelfd [OPTION...]\n"
		"The fatelf installer daemon: serves io.fatelf.Manager over Varlink.\n"
		"\n"
		"  --socket PATH       listen on PATH (default " FATELFD_DEFAULT_SOCKET ");\n"
		"                      a socket passed by systemd (LISTEN_FDS) wins\n"
		"  --root DIR          install into DIR (default /)\n"
		"  --state-dir DIR     keep the database in DIR (default /var/lib/fatelf)\n"
		"  --config FILE       read FILE and FILE.d/*.conf (default " FATELFD_DEFAULT_CONFIG ")\n"
		"  --check-interface   compare the method table with the interface file, exit\n"
		"  -V, --version       print the version, exit\n"
		"  -h, --help          print this help, exit\n");
}

/* The methods of io.fatelf.Manager that the interface text declares and
 * the table serves must be the same set. Returns the mismatches. */
static int check_interface(void)
{
	const char *prefix = FATELFD_INTERFACE ".";
	size_t plen = strlen(prefix);
	unsigned bad = 0, ndeclared = 0;
	const char *line = fatelfd_interface_text;

	/* Every "method Name(" line has a handler. */
	while (*line) {
		size_t len = strcspn(line, "\n");

		if (len > 7 && strncmp(line, "method ", 7) == 0) {
			const char *name = line + 7;
			size_t n = strcspn(name, "( \n");
			bool found = false;

			ndeclared++;
			for (size_t i = 0; dispatch_method_name(i); i++) {
				const char *m = dispatch_method_name(i);

				if (strncmp(m, prefix, plen) == 0 && strlen(m + plen) == n &&
				    strncmp(m + plen, name, n) == 0)
					found = true;
			}
			if (!found) {
				printf("interface method %.*s has no handler\n", (int)n, name);
				bad++;
			}
		}
		line += len + (line[len] == '\n');
	}
	/* Every handler of the interface is declared. */
	for (size_t i = 0; dispatch_method_name(i); i++) {
		const char *m = dispatch_method_name(i);
		char want[300];

		if (strncmp(m, prefix, plen) != 0)
			continue;
		snprintf(want, sizeof(want), "\nmethod %s(", m + plen);
		if (!strstr(fatelfd_interface_text, want)) {
			printf("handler %s is not in the interface\n", m);
			bad++;
		}
	}
	/* Every row of the method set has a handler. */
	for (const params_method *pm = params_methods; pm->name; pm++)
		if (!dispatch_handler(pm)) {
			printf("method %s has no handler\n", pm->name);
			bad++;
		}
	if (!bad)
		printf("%u methods of %s: every one has a handler, every handler is declared\n",
		       ndeclared, FATELFD_INTERFACE);
	return (int)bad;
}

static int set_string(char **dst, const char *src)
{
	char *s = strdup(src);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* path made absolute against the working directory, for Status and logs
 * (a private instance is often started with relative paths). */
static char *path_absolute(const char *path)
{
	char cwd[4096];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	return path_join(cwd, path);
}

/* The path a socket passed by systemd listens on, for Status. */
static char *socket_path_of(int fd)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);

	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
		return strdup("(socket-activated)");
	return strndup(sa.sun_path, len - offsetof(struct sockaddr_un, sun_path));
}

struct options {
	const char *socket;
	const char *root;
	const char *state;
	const char *config;
};

/* Returns true to go on; false when the program ends here, with
 * *ret_status. */
static bool parse_argv(int argc, char **argv, struct options *o, int *ret_status)
{
	enum { OPT_SOCKET = 256, OPT_ROOT, OPT_STATE, OPT_CONFIG, OPT_CHECK };
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "check-interface", no_argument, NULL, OPT_CHECK },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET:
			o->socket = optarg;
			break;
		case OPT_ROOT:
			o->root = optarg;
			break;
		case OPT_STATE:
			o->state = optarg;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_CHECK:
			*ret_status = check_interface() ? 1 : 0;
			return false;
		case 'V':
			printf("fatelfd %s\n%s\n", PACKAGE_VERSION, FATELF_LICENSE_TEXT);
			*ret_status = 0;
			return false;
		case 'h':
			usage(stdout);
			*ret_status = 0;
			return false;
		default:
			usage(stderr);
			*ret_status = 2;
			return false;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fatelfd: unexpected argument: %s\n", argv[optind]);
		usage(stderr);
		*ret_status = 2;
		return false;
	}
	return true;
}

/* A socket that a running daemon serves is refused before anything else
 * is touched (unless systemd passes the socket). */
static int socket_refuse_served(const char *opt_socket)
{
	_cleanup_free_ char *sp = NULL;

	if (sd_listen_fds(0) > 0)
		return 0;
	sp = path_absolute(opt_socket ? opt_socket : FATELFD_DEFAULT_SOCKET);
	if (sp && server_socket_served(sp)) {
		log_error("fatelfd: %s: already in use by a running fatelfd", sp);
		return -EADDRINUSE;
	}
	return 0;
}

/* The root (made if missing) and the state directory, as absolute paths. */
static int config_paths_absolute(engine_config *cfg)
{
	char *root, *state = path_absolute(cfg->state_dir);

	/* A private instance's root may not exist yet. */
	if (access(cfg->root, F_OK) < 0 && errno == ENOENT)
		(void)mkdir_p(AT_FDCWD, cfg->root, 0755, 0755, 0);
	root = realpath(cfg->root, NULL);
	if (!root || !state) {
		int e = errno;

		free(state);
		free(root);
		log_error("fatelfd: root %s: %s", cfg->root, strerror(e));
		return -e;
	}
	free(cfg->root);
	cfg->root = root;
	free(cfg->state_dir);
	cfg->state_dir = state;
	return 0;
}

/* The config, then the command line over it, then the trusted keys. */
static int config_setup(server *s, const struct options *o, fatelf_diag *d)
{
	int r;

	r = engine_config_load(&s->cfg, o->config, d);
	if (r < 0) {
		log_error("fatelfd: %s", fatelf_diag_text(d, r));
		return r;
	}
	if ((o->root && set_string(&s->cfg.root, o->root) < 0) ||
	    (o->state && set_string(&s->cfg.state_dir, o->state) < 0)) {
		log_error("fatelfd: %s", fatelf_diag_text(NULL, -ENOMEM));
		return fatelf_diag_oom(d);
	}
	r = config_paths_absolute(&s->cfg);
	if (r < 0)
		return r;
	s->config_path = o->config;
	if (asprintf(&s->db_path, "%s/fatelf.db", s->cfg.state_dir) < 0) {
		s->db_path = NULL;
		log_error("fatelfd: %s", fatelf_diag_text(NULL, -ENOMEM));
		return fatelf_diag_oom(d);
	}
	r = engine_config_load_keys(&s->cfg, &s->keys, &s->nkeys, d);
	if (r < 0) {
		log_error("fatelfd: trusted keys: %s", fatelf_diag_text(d, r));
		return r;
	}
	return 0;
}

/* The process's settings for a long-running server with many peers. */
static void process_tune(void)
{
	/* Room for SERVER_CONNECTIONS_MAX peers and their passed fds. */
	struct rlimit rl;

	signal(SIGPIPE, SIG_IGN);
	/* Peers' buffers come and go in megabytes. A fixed threshold keeps
	 * each one in its own mapping, returned to the system when freed;
	 * glibc's sliding one would move them to the heap, which keeps what
	 * it once held. */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* The store's statements take and free some 60 KiB each (sqlite's
	 * ephemeral tables for the IN lists of the schema's CHECKs): with the
	 * default threshold of 128 KiB the worker's heap gave those pages
	 * back after nearly every row, an madvise with a TLB shootdown across
	 * the CPUs and page faults to take them again: half of the CPU of a
	 * many-file install, some 0.5 ms a journaled file of a remove. A few
	 * MiB of heap top are kept instead. */
	(void)mallopt(M_TRIM_THRESHOLD, 4 * 1024 * 1024);
	(void)mallopt(M_TOP_PAD, 1024 * 1024);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)16384);
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The write engine, then the read-only one for queries. */
static int engines_open(server *s, engine **ret_rw, fatelf_diag *d)
{
	unsigned recovered = 0;
	int r;

	/* The write engine first: it creates the database and finishes or
	 * rolls back what a crash cut off. */
	r = engine_open(&s->cfg, s->keys, s->nkeys, 0, ret_rw, &recovered, d);
	if (r < 0) {
		log_error("fatelfd: %s: %s", s->db_path, fatelf_diag_text(d, r));
		return r;
	}
	/* The files the daemon keeps beside the store, through the directory
	 * the engine checked (daemon/repos.h). */
	r = repo_state_fd_set(engine_state_fd(*ret_rw));
	if (r < 0) {
		log_error("fatelfd: state directory %s: %s", s->cfg.state_dir, fatelf_strerror(r));
		return r;
	}
	if (recovered)
		log_info("recovered %u interrupted transaction%s", recovered, recovered == 1 ? "" : "s");
	r = engine_open(&s->cfg, NULL, 0, ENGINE_OPEN_READONLY, &s->ro, NULL, d);
	if (r < 0) {
		log_error("fatelfd: %s: %s", s->db_path, fatelf_diag_text(d, r));
		return r;
	}
	return 0;
}

/* The listening socket bound at path; each refusal named. */
static int socket_bind(server *s, const char *path)
{
	int r = server_listen(s, path);

	if (r == -EADDRINUSE)
		log_error("fatelfd: %s: already in use by a running fatelfd", path);
	else if (r == -EEXIST)
		log_error("fatelfd: %s: exists and is not a socket", path);
	else if (r == -ESTALE)
		log_error("fatelfd: %s: was replaced by something else just after the "
			  "socket was made there; refusing to serve", path);
	else if (r < 0)
		log_error("fatelfd: %s: %s", path, strerror(-r));
	return r;
}

/* The listening socket: the one systemd passes, else one bound here.
 * *ret_path is set (the caller frees it) whenever it could be made. */
static int socket_setup(server *s, const char *opt_socket, char **ret_path)
{
	int n = sd_listen_fds(1), r;

	if (n < 0) {
		log_error("fatelfd: LISTEN_FDS: %s", strerror(-n));
		return n;
	}
	if (n > 1) {
		log_error("fatelfd: %d sockets passed, expected one", n);
		return -EINVAL;
	}
	if (n == 1) {
		if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_error("fatelfd: the passed fd is not a listening AF_UNIX stream socket");
			return -ENOTSOCK;
		}
		s->listen_fd = SD_LISTEN_FDS_START;
		*ret_path = socket_path_of(s->listen_fd);
	} else {
		*ret_path = path_absolute(opt_socket ? opt_socket : FATELFD_DEFAULT_SOCKET);
		if (!*ret_path)
			return -ENOMEM;
		r = socket_bind(s, *ret_path);
		if (r < 0)
			return r;
	}
	s->socket_path = *ret_path;
	return 0;
}

/* Logs whether the download helper can be executed by the uid the
 * downloads run as. */
static void fetch_helper_report(void)
{
	char helper[4096], who[96];
	struct fatelf_netuid as = { .uid = geteuid(), .gid = getegid() };
	int r;

	fetch_helper_path(helper, sizeof(helper));
	r = fetch_helper_check(helper, &as);
	/* Every download has a uid of its own; they are alike to the
	 * helper's mode bits. */
	if (geteuid() == 0 && as.gid == (gid_t)as.uid)
		snprintf(who, sizeof(who), "a download uid of its own (%u-%u, gid = uid)", FATELF_NETUID_MIN,
			 FATELF_NETUID_MIN + FATELF_NETUID_COUNT - 1);
	else if (geteuid() == 0)
		snprintf(who, sizeof(who), "a download uid of its own (%u-%u, gid %u)", FATELF_NETUID_MIN,
			 FATELF_NETUID_MIN + FATELF_NETUID_COUNT - 1, (unsigned)as.gid);
	else
		snprintf(who, sizeof(who), "uid %u", (unsigned)as.uid);
	if (r < 0)
		log_error("fatelfd: download helper %s: %s cannot execute it: %s; "
			  "installs from URLs will fail", helper, who, strerror(-r));
	else
		log_info("download helper %s: executable by %s", helper, who);
}

/* Everything before the loop: config, engines, socket, the worker. The
 * worker takes *rw over (set to NULL then). */
static int setup(server *s, const struct options *o, engine **rw, char **ret_socket_path)
{
	fatelf_diag d = { 0 };
	int r;

	r = config_setup(s, o, &d);
	if (r < 0)
		return r;
	process_tune();
	r = engines_open(s, rw, &d);
	if (r < 0)
		return r;
	r = socket_setup(s, o->socket, ret_socket_path);
	if (r < 0)
		return r;
	fetch_helper_report();
	s->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->event_fd < 0) {
		r = -errno;
		log_error("fatelfd: eventfd: %s", strerror(-r));
		return r;
	}
	/* The signal mask is set before the worker starts, so it inherits
	 * it and SIGTERM only ever reaches the signalfd. */
	r = server_run(s);
	if (r < 0) {
		log_error("fatelfd: %s", strerror(-r));
		return r;
	}
	s->worker = worker_new(s, *rw);
	if (!s->worker) {
		log_error("fatelfd: cannot start the worker thread");
		return -EAGAIN;
	}
	*rw = NULL;
	return 0;
}

/* What main made, freed; any of it may be missing. */
static void teardown(server *s, engine *rw, char *socket_path)
{
	s->worker = worker_free(s->worker);
	server_done(s);
	free(socket_path);
	engine_close(rw);
	engine_close(s->ro);
	free(s->keys);
	free(s->db_path);
	if (s->event_fd >= 0)
		close(s->event_fd);
	engine_config_done(&s->cfg);
}

/* The loop until SIGTERM or SIGINT. Returns its result. */
static int serve(server *s)
{
	int r;

	s->started_usec = now_usec();
	metrics_file_update(s);
	log_info("serving %s on %s (root %s, database %s)", FATELFD_INTERFACE, s->socket_path, s->cfg.root,
		 s->db_path);
	sd_notifyf(0, "READY=1\nSTATUS=Serving on %s", s->socket_path);
	r = server_loop(s);
	sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
	if (r < 0)
		log_error("fatelfd: event loop: %s", strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	struct options o = { .config = FATELFD_DEFAULT_CONFIG };
	server s = {
		.listen_fd = -1, .signal_fd = -1, .epoll_fd = -1, .event_fd = -1,
		.on_call = dispatch_call, .on_wake = on_wake, .on_reload = server_reload,
	};
	char *socket_path = NULL;
	engine *rw = NULL;
	bool ended;
	int status, r;

	if (!parse_argv(argc, argv, &o, &status))
		return status;
	if (socket_refuse_served(o.socket) < 0)
		return 1;
	engine_config_init(&s.cfg);
	r = setup(&s, &o, &rw, &socket_path);
	if (r < 0) {
		teardown(&s, rw, socket_path);
		return 1;
	}
	r = serve(&s);

	/* Cancel the running transaction (rolled back), wait for it, and
	 * tell its caller (and any Verify caller) how it ended. */
	ended = worker_stop(s.worker, now_usec() + SHUTDOWN_GRACE_USEC);
	worker_dispatch(s.worker);
	server_flush(&s);
	if (!ended) {
		/* A thread that does not end still uses the engines: exit
		 * without freeing them. Like a crash, a transaction cut off
		 * here is finished or undone at the next start. */
		server_done(&s);
		log_info("stopped, leaving busy threads behind");
		fflush(stderr);
		_exit(r < 0 ? 1 : 0);
	}
	teardown(&s, NULL, socket_path);
	log_info("stopped");
	return r < 0 ? 1 : 0;
}
