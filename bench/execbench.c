/*
 * execbench: times how long commands take from exec to exit, for
 * bench/bench-run.sh. A shell's own fork and the `date` calls around a
 * command cost more than the difference being measured (a fat executable
 * against its thin record, a millisecond or less), so the commands are
 * started and timed from here.
 *
 *   execbench [-w WARMUPS] [-q] N CMD_A [ARGS...] -- CMD_B [ARGS...] [-- CMD_C ...]
 *
 * Each command runs N times, interleaved (A, B, C, A, B, C, ...), so that
 * whatever else the machine does slows every command alike. Each run is a
 * posix_spawn of the command (stdin and stdout on /dev/null, stderr
 * inherited, the environment unchanged) followed by waitpid, timed with
 * CLOCK_MONOTONIC from just before the spawn to just after the wait. A
 * command name without a slash is looked up in PATH once, before timing.
 * WARMUPS untimed rounds (default 1) run first; 0 times cold starts.
 *
 * A run that exits non-zero or is killed by a signal is an error, never a
 * fast sample: execbench says which command and which run, and exits 1.
 *
 * Output, one line per command, then one line per command after the first
 * comparing it with the first (A is the baseline):
 *
 *   cmd 0 runs N median_ms M p90_ms P min_ms X max_ms Y : CMD_A ARGS
 *   vs 1 ratio R diff_ms D paired_diff_ms Q
 *
 * ratio is median(B) / median(A), diff_ms median(B) - median(A), and
 * paired_diff_ms the median of the per-round differences B[i] - A[i].
 * -q prints nothing but the error lines. Exit status: 0, 1 when a run
 * failed, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_CMDS 8

struct cmd {
	char **argv;            /* NULL-terminated, inside the caller's argv */
	char path[PATH_MAX];    /* what is spawned */
	int64_t *ns;            /* one sample per timed run */
};

static void usage(void)
{
	fputs("usage: execbench [-w WARMUPS] [-q] N CMD_A [ARGS...] -- CMD_B [ARGS...] [-- CMD_C ...]\n", stderr);
	exit(2);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Resolves a command name the way execvp would, once, so that the PATH
 * search is not part of any timed run. */
static int cmd_resolve(struct cmd *c)
{
	const char *name = c->argv[0], *p, *end;
	size_t nlen = strlen(name);

	if (strchr(name, '/')) {
		if (nlen >= sizeof(c->path))
			return -ENAMETOOLONG;
		memcpy(c->path, name, nlen + 1);
		return access(c->path, X_OK) < 0 ? -errno : 0;
	}
	p = getenv("PATH");
	if (!p || !*p)
		p = "/usr/local/bin:/usr/bin:/bin";
	for (; *p; p = *end ? end + 1 : end) {
		struct stat st;
		size_t dlen;
		int n;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		n = snprintf(c->path, sizeof(c->path), "%.*s/%s", (int)dlen, dlen ? p : ".", name);
		if (n < 0 || (size_t)n >= sizeof(c->path))
			continue;
		if (stat(c->path, &st) == 0 && S_ISREG(st.st_mode) && access(c->path, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static void cmd_print(FILE *f, const struct cmd *c)
{
	for (char **a = c->argv; *a; a++)
		fprintf(f, "%s%s", a == c->argv ? "" : " ", *a);
}

/* Runs c once; returns its wall time in ns, or -1 after saying why it
 * failed (round < 0: a warm-up round). */
static int64_t cmd_run(const struct cmd *c, const posix_spawn_file_actions_t *fa, int idx, long round)
{
	int64_t t0, t1;
	pid_t pid;
	int r, status;

	t0 = now_ns();
	r = posix_spawn(&pid, c->path, fa, NULL, c->argv, environ);
	if (r != 0) {
		fprintf(stderr, "execbench: command %d (", idx);
		cmd_print(stderr, c);
		fprintf(stderr, "): cannot start: %s\n", strerror(r));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "execbench: waitpid: %s\n", strerror(errno));
			return -1;
		}
	}
	t1 = now_ns();
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return t1 - t0;
	fprintf(stderr, "execbench: command %d (", idx);
	cmd_print(stderr, c);
	if (round < 0)
		fprintf(stderr, "), warm-up run: ");
	else
		fprintf(stderr, "), run %ld: ", round + 1);
	if (WIFEXITED(status))
		fprintf(stderr, "exit status %d\n", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		fprintf(stderr, "killed by signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		fprintf(stderr, "wait status 0x%x\n", status);
	return -1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Median (the mean of the two middle samples when n is even) and the
 * nearest-rank p90 of v, which is sorted in place. */
static double median_ns(int64_t *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static double p90_ns(const int64_t *sorted, long n)
{
	long k = (n * 9 + 9) / 10;      /* ceil(0.9 n), 1-based */

	return (double)sorted[k < 1 ? 0 : k - 1];
}

int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	struct cmd cmds[MAX_CMDS];
	long runs, warmups = 1;
	int ncmds = 0, opt, quiet = 0;
	char *end;

	while ((opt = getopt(argc, argv, "+w:qh")) != -1) {
		switch (opt) {
		case 'w':
			errno = 0;
			warmups = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || warmups < 0 || warmups > 1000000)
				usage();
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			usage();
		}
	}
	if (argc - optind < 4)
		usage();
	errno = 0;
	runs = strtol(argv[optind], &end, 10);
	if (errno || *end || end == argv[optind] || runs < 1 || runs > 10000000)
		usage();

	/* Split the rest at each "--" (the separators become the argv ends). */
	for (int i = optind + 1; i < argc; i++) {
		if (ncmds == MAX_CMDS) {
			fprintf(stderr, "execbench: at most %d commands\n", MAX_CMDS);
			return 2;
		}
		cmds[ncmds].argv = &argv[i];
		while (i < argc && strcmp(argv[i], "--") != 0)
			i++;
		if (i < argc)
			argv[i] = NULL;
		if (!cmds[ncmds].argv[0])
			usage();        /* an empty command: "--" twice, or at the end */
		ncmds++;
	}
	if (ncmds < 2)
		usage();
	for (int c = 0; c < ncmds; c++) {
		int r = cmd_resolve(&cmds[c]);

		if (r < 0) {
			fprintf(stderr, "execbench: %s: %s\n", cmds[c].argv[0], strerror(-r));
			return 2;
		}
		cmds[c].ns = calloc((size_t)runs, sizeof(int64_t));
		if (!cmds[c].ns) {
			fputs("execbench: out of memory\n", stderr);
			return 1;
		}
	}

	if (posix_spawn_file_actions_init(&fa) != 0 ||
	    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
	    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0) {
		fputs("execbench: posix_spawn_file_actions failed\n", stderr);
		return 1;
	}

	for (long w = 0; w < warmups; w++)
		for (int c = 0; c < ncmds; c++)
			if (cmd_run(&cmds[c], &fa, c, -1) < 0)
				return 1;
	for (long i = 0; i < runs; i++)
		for (int c = 0; c < ncmds; c++)
			if ((cmds[c].ns[i] = cmd_run(&cmds[c], &fa, c, i)) < 0)
				return 1;
	if (quiet)
		return 0;

	/* The paired differences need the samples in run order, so they are
	 * computed before the medians sort them. */
	double pdiff[MAX_CMDS] = { 0 };
	int64_t *d = calloc((size_t)runs, sizeof(int64_t));

	if (!d) {
		fputs("execbench: out of memory\n", stderr);
		return 1;
	}
	for (int c = 1; c < ncmds; c++) {
		for (long i = 0; i < runs; i++)
			d[i] = cmds[c].ns[i] - cmds[0].ns[i];
		pdiff[c] = median_ns(d, runs);
	}
	free(d);

	double med[MAX_CMDS];

	for (int c = 0; c < ncmds; c++) {
		med[c] = median_ns(cmds[c].ns, runs);
		printf("cmd %d runs %ld median_ms %.4f p90_ms %.4f min_ms %.4f max_ms %.4f : ",
		       c, runs, med[c] / 1e6, p90_ns(cmds[c].ns, runs) / 1e6,
		       (double)cmds[c].ns[0] / 1e6, (double)cmds[c].ns[runs - 1] / 1e6);
		cmd_print(stdout, &cmds[c]);
		putchar('\n');
	}
	for (int c = 1; c < ncmds; c++)
		printf("vs %d ratio %.4f diff_ms %.4f paired_diff_ms %.4f\n", c,
		       med[0] > 0 ? med[c] / med[0] : 0.0, (med[c] - med[0]) / 1e6, pdiff[c] / 1e6);
	return 0;
}
