/*
 * fatelf-fetch, fatelfd's download helper: fetches one URL and streams the
 * body to stdout. fatelfd runs it for Install{url} with stdout on a pipe
 * that its bundle reader consumes, so that libcurl, TLS and the parsing of
 * whatever a server sends happen in a separate, short-lived process, which
 * the daemon starts as a uid of its own for http and https, and which
 * makes itself non-dumpable before it reads anything (and that keeps libcurl
 * and its dependency chain out of the daemon's memory). fatelfd gives the
 * URL as "-" and writes it to stdin, since a command line is readable by
 * every local user and a URL may carry a password. The limits (deadline,
 * minimum rate, denied networks) come as options from fatelfd.conf.
 *
 * Exit status: 0 the transfer completed and every byte went to stdout;
 * 1 the URL was refused or the transfer failed, or the reader went away;
 * 2 usage error; 3 system error. On failure exactly one line goes to
 * stderr (none when the reader went away): the message the fetch module
 * wrote, which names the URL.
 *
 * With --batch it fetches a repository's objects instead: mirrors and
 * gets on stdin, frames on stdout (fetch_batch.h has the protocol).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fetch.h"
#include "fetch_batch.h"
#include "io.h"
#include "macro.h"

/* The longest URL read from stdin (a Varlink message is larger; curl
 * itself takes at most 8 MB). */
#define FETCH_URL_STDIN_MAX ((size_t)1 << 20)

enum {
	EXIT_FETCH = 1,
	EXIT_USAGE = 2,
	EXIT_SYSTEM = 3,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: fatelf-fetch [OPTION...] URL|-\n"
		"       fatelf-fetch --batch [--parallel N] [OPTION...] <LINES\n"
		"Fetch URL (http, https, or file with --allow-file) and write the body to stdout;\n"
		"with -, read the URL from standard input.\n"
		"\n"
		"With --batch, fetch many objects from mirrors. Standard input holds lines,\n"
		"read to its end before any transfer:\n"
		"  mirror BASE-URL        1 to 16, first; tried in this order (no query)\n"
		"  accept MEDIA-TYPE      0 to 8, before the gets: every HTTP request sends\n"
		"                         \"Accept: T1, T2, ...\" (an OCI registry's manifests)\n"
		"  basic BASE64           at most once, before the gets: USER:PASSWORD in\n"
		"                         base64, for a registry that asks (never shown)\n"
		"  get ID PATH SIZE       at most 1000000: ID 0 to 2^31, each once; PATH\n"
		"                         [a-zA-Z0-9._/:-]+, relative, not starting with \":\",\n"
		"                         no \"..\"; SIZE in bytes, 0 when not known\n"
		"Standard output holds frames, of different IDs interleaved:\n"
		"  data ID OFFSET LEN\\n and LEN bytes of the object, to go at OFFSET\n"
		"  done ID TOTAL\\n       the object is complete, TOTAL bytes\n"
		"  fail ID CODE TEXT\\n   no mirror gave it: CODE the last HTTP status (or 0),\n"
		"                         TEXT the last URL tried (no credentials) and why\n"
		"A broken transfer is retried 3 times on its mirror from the bytes received\n"
		"(Range); a 206 continues, a 200 starts again at offset 0. An HTTP error,\n"
		"a mirror that cannot be reached and a body longer than SIZE go to the next\n"
		"mirror. A registry's 401 is met once per mirror: a Bearer challenge's token\n"
		"is asked of its realm (with BASIC), a Basic one answered with BASIC, and\n"
		"kept for the mirror's later requests, never sent to another host.\n"
		"Exit 0 when every get is done, 1 when one failed, 2 on bad input.\n"
		"\n"
		"  --batch                fetch the objects that standard input lists\n"
		"  --parallel N           with --batch: N transfers at a time, over one\n"
		"                         connection pool (default 6, at most 64)\n"
		"  --allow-file           accept file:// URLs\n"
		"  --timeout SEC          fail when no byte arrives for SEC seconds (default 60)\n"
		"  --max-bytes N          fail when the body is larger than N bytes (0: no limit;\n"
		"                         with --batch, for objects of SIZE 0)\n"
		"  --deadline SEC         fail when the download takes longer than SEC seconds\n"
		"                         (default 0: no deadline; with --batch, each object)\n"
		"  --min-rate N           fail when fewer than N bytes a second arrive for\n"
		"                         --low-speed-time seconds (default 0: no minimum)\n"
		"  --low-speed-time SEC   the window of --min-rate (default 30)\n"
		"  --deny-networks LIST   connect into none of these networks (CIDR, comma\n"
		"                         separated), but into those the URL's own host is in\n"
		"                         (with --batch: the first mirror's host)\n"
		"  --proxy URL            go through this proxy (default: none, whatever\n"
		"                         the environment says)\n"
		"  --help                 print this help, exit\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s[0] || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Bad URLs and failed transfers are the caller's or the server's business;
 * anything else (out of memory, say) is ours. */
static int fetch_exit_status(int r)
{
	switch (-r) {
	case EINVAL:
	case EIO:
	case EFBIG:
	case ECANCELED:
		return EXIT_FETCH;
	}
	return EXIT_SYSTEM;
}

/* The URL as the whole of stdin (fatelfd passes it so, out of the
 * command line that every local user can read), one trailing newline
 * dropped. */
static int read_url(char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	/* exactly FETCH_URL_STDIN_MAX bytes is one too many */
	int r = read_fd_max(STDIN_FILENO, FETCH_URL_STDIN_MAX - 1, &buf, &len);

	if (r == -EFBIG)
		return -E2BIG;
	if (r < 0)
		return r;
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	/* A NUL inside would cut the URL short of what was asked for. */
	if (strlen(buf) != len)
		return -EINVAL;
	*ret = TAKE_PTR(buf);
	return 0;
}

static int fail(const fatelf_diag *d, int r)
{
	fprintf(stderr, "%s\n", fatelf_diag_text(d, r));
	return fetch_exit_status(r);
}

/* --batch: the whole input first, then the transfers. */
static int run_batch(const fatelf_fetch_opts *o, unsigned parallel)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d = { 0 };
	int r;

	fatelf_fetch_batch_input_init(&in, o->allow_file);
	r = fatelf_fetch_batch_input_read(&in, STDIN_FILENO, &d);
	if (r < 0) {
		fatelf_fetch_batch_input_free(&in);
		fprintf(stderr, "fatelf-fetch: --batch: standard input: %s\n", fatelf_diag_text(&d, r));
		return r == -EINVAL ? EXIT_USAGE : EXIT_SYSTEM;
	}
	r = fatelf_fetch_batch_run(&in, o, parallel, STDOUT_FILENO, &d);
	fatelf_fetch_batch_input_free(&in);
	if (r == -EPIPE)
		return EXIT_FETCH;
	if (r < 0) {
		fprintf(stderr, "fatelf-fetch: --batch: %s\n", fatelf_diag_text(&d, r));
		return EXIT_SYSTEM;
	}
	return r > 0 ? EXIT_FETCH : 0;
}

static const struct option fetch_options[] = {
	{ "allow-file", no_argument, NULL, 'f' },
	{ "timeout", required_argument, NULL, 't' },
	{ "max-bytes", required_argument, NULL, 'm' },
	{ "deadline", required_argument, NULL, 'd' },
	{ "min-rate", required_argument, NULL, 'r' },
	{ "low-speed-time", required_argument, NULL, 'l' },
	{ "deny-networks", required_argument, NULL, 'n' },
	{ "proxy", required_argument, NULL, 'p' },
	{ "batch", no_argument, NULL, 'b' },
	{ "parallel", required_argument, NULL, 'P' },
	{ "help", no_argument, NULL, 'h' },
	{}
};

/* What the command line asks for. */
struct fetch_args {
	fatelf_fetch_opts o;
	fatelf_netranges deny;
	bool batch;
	unsigned parallel;
};

/* The number optarg gives option name, up to max (0 refused unless
 * zero_ok): 0, else -EINVAL, reported. */
static int number_option(const char *name, uint64_t max, bool zero_ok, uint64_t *ret)
{
	if (parse_u64(optarg, max, ret) < 0 || (!zero_ok && *ret == 0)) {
		fprintf(stderr, "fatelf-fetch: bad --%s: %s\n", name, optarg);
		return -EINVAL;
	}
	return 0;
}

/* One option of getopt_long's: 1 to go on, 0 when done (--help), else
 * -EINVAL, reported. */
static int fetch_option(struct fetch_args *a, int c)
{
	fatelf_diag d = { 0 };
	uint64_t v;

	switch (c) {
	case 'f':
		a->o.allow_file = true;
		break;
	case 't':
		if (number_option("timeout", 86400, true, &v) < 0)
			return -EINVAL;
		a->o.timeout_sec = (unsigned)v;
		break;
	case 'm':
		if (number_option("max-bytes", UINT64_MAX, true, &v) < 0)
			return -EINVAL;
		a->o.max_bytes = v;
		break;
	case 'd':
		if (number_option("deadline", 604800, true, &v) < 0)
			return -EINVAL;
		a->o.deadline_sec = (unsigned)v;
		break;
	case 'r':
		if (number_option("min-rate", 1u << 30, true, &v) < 0)
			return -EINVAL;
		a->o.min_rate = v;
		break;
	case 'l':
		if (number_option("low-speed-time", 86400, false, &v) < 0)
			return -EINVAL;
		a->o.low_speed_sec = (unsigned)v;
		break;
	case 'n':
		a->deny.n = 0;
		if (fatelf_netranges_add(&a->deny, optarg, &d) < 0) {
			fprintf(stderr, "fatelf-fetch: bad --deny-networks: %s\n", d.msg);
			return -EINVAL;
		}
		a->o.deny = &a->deny;
		break;
	case 'p':
		a->o.proxy = optarg;
		break;
	case 'b':
		a->batch = true;
		break;
	case 'P':
		if (parse_u64(optarg, FATELF_FETCH_BATCH_PARALLEL_MAX, &v) < 0 || v == 0) {
			fprintf(stderr, "fatelf-fetch: bad --parallel: %s (1 to %d)\n", optarg,
				FATELF_FETCH_BATCH_PARALLEL_MAX);
			return -EINVAL;
		}
		a->parallel = (unsigned)v;
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return -EINVAL;
	}
	return 1;
}

/* The command line into a: 1 to go on (optind at the URL), 0 when done
 * (--help), else -EINVAL, reported. */
static int parse_args(struct fetch_args *a, int argc, char **argv)
{
	int c, r;

	while ((c = getopt_long(argc, argv, "", fetch_options, NULL)) >= 0)
		if ((r = fetch_option(a, c)) <= 0)
			return r;
	if (a->batch ? optind != argc : optind != argc - 1) {
		usage(stderr);
		return -EINVAL;
	}
	if (a->parallel && !a->batch) {
		fprintf(stderr, "fatelf-fetch: --parallel goes with --batch\n");
		return -EINVAL;
	}
	return 1;
}

/* One URL ("-": read from stdin) to stdout. Returns the exit status. */
static int run_one(const fatelf_fetch_opts *o, const char *url)
{
	_cleanup_free_ char *stdin_url = NULL;
	fatelf_reader src;
	fatelf_fetch *f = NULL;
	fatelf_diag d = { 0 };
	int r;

	if (strcmp(url, "-") == 0) {
		r = read_url(&stdin_url);
		if (r < 0) {
			fprintf(stderr, "fatelf-fetch: cannot read the URL from standard input: %s\n",
				r == -E2BIG ? "longer than 1 MiB" : strerror(-r));
			return r == -E2BIG ? EXIT_USAGE : EXIT_SYSTEM;
		}
		url = stdin_url;
	}
	r = fatelf_fetch_open(url, o, &f, &d);
	if (r < 0)
		return fail(&d, r);
	fatelf_fetch_source(f, &src);
	for (;;) {
		const void *buf = NULL;
		ssize_t n = src.read(src.ctx, &buf);

		if (n < 0) {
			if (fatelf_fetch_status(f, &d) == 0)
				fatelf_diag_set(&d, (int)n, -1, "%s", strerror((int)-n));
			r = fail(&d, (int)n);
			fatelf_fetch_close(f);
			return r;
		}
		if (n == 0)
			break;
		/* -EPIPE: the reader went away */
		r = write_all(STDOUT_FILENO, buf, (size_t)n);
		if (r < 0) {
			fatelf_fetch_close(f);
			if (r == -EPIPE)
				return EXIT_FETCH;
			fprintf(stderr, "fatelf-fetch: write error: %s\n", strerror(-r));
			return EXIT_SYSTEM;
		}
	}
	fatelf_fetch_close(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct fetch_args a = { 0 };
	int r;

	/* Before anything reads stdin, where URLs with passwords and a
	 * registry's credentials come: a non-dumpable process's /proc files
	 * (fd/0, mem, environ) are root's, and only root may ptrace it, so
	 * no process of the same uid can reach them. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		fprintf(stderr, "fatelf-fetch: cannot make itself non-dumpable: %s\n", strerror(errno));
		return EXIT_SYSTEM;
	}
	r = parse_args(&a, argc, argv);
	if (r <= 0)
		return r < 0 ? EXIT_USAGE : 0;

#ifdef FATELF_FAILPOINTS
	/* Test builds: the tests' own CA, for an https server on 127.0.0.1. */
	a.o.cainfo = getenv("FATELF_FETCH_TEST_CAINFO");
#endif
	/* A reader that hangs up is not an error worth a signal death: the
	 * write fails with EPIPE and we leave quietly. */
	signal(SIGPIPE, SIG_IGN);

	if (a.batch)
		return run_batch(&a.o, a.parallel);
	return run_one(&a.o, argv[optind]);
}
