/*
 * vlping: a small Varlink load generator for bench/bench-daemon.sh. A
 * Python client spends more time in its own interpreter than fatelfd
 * spends answering a Status call, so the round-trip and concurrency
 * figures are measured with this instead.
 *
 *   vlping SOCKET CALLS CLIENTS MESSAGE
 *
 * CLIENTS processes each open their own connection, wait until all are
 * connected, then make CALLS calls in a row: MESSAGE (one JSON object) is
 * sent NUL-terminated and the whole reply read before the next call. A
 * reply whose top-level object has an "error" key counts as an error, and
 * so does a closed or failed connection (that client stops). Prints one
 * line:
 *
 *   calls N errors E seconds S rate R median_us M p99_us P max_us X
 *
 * and exits 0 when there were no errors, 1 otherwise, 2 on usage errors.
 * The wall time runs from the moment every client is connected until the
 * last one is done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ERROR_BIT (UINT64_C(1) << 63)
#define CHUNK 512               /* 512 * 8 bytes = PIPE_BUF: atomic writes */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	int fd;

	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Whether the top-level JSON object in msg[0..n) has the key "error". A
 * key is a string at depth 1 followed by ':'; strings inside values and
 * nested objects are skipped, so a Transaction's "error" field does not
 * count. */
static bool reply_is_error(const char *msg, size_t n)
{
	int depth = 0;
	size_t i = 0;

	while (i < n) {
		char c = msg[i];

		if (c == '"') {
			size_t start = ++i, end;

			while (i < n && msg[i] != '"')
				i += msg[i] == '\\' ? 2 : 1;
			end = i++;
			if (depth != 1)
				continue;
			while (i < n && (msg[i] == ' ' || msg[i] == '\t' || msg[i] == '\n' || msg[i] == '\r'))
				i++;
			if (i < n && msg[i] == ':' && end - start == 5 && memcmp(msg + start, "error", 5) == 0)
				return true;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--;
		i++;
	}
	return false;
}

/* One client: CALLS round trips, latencies (ns, ERROR_BIT on errors) to
 * the pipe out in atomic chunks. */
static int client_run(const char *path, long calls, const char *message, int go, int out)
{
	size_t mlen = strlen(message) + 1;     /* with the NUL */
	size_t cap = 1 << 16, have = 0;
	uint64_t chunk[CHUNK];
	size_t nchunk = 0;
	char *buf, dummy;
	int fd, r = 0;

	fd = connect_to(path);
	buf = malloc(cap);
	if (!buf)
		return 1;
	/* Everyone connects, then waits for the parent to close the go pipe. */
	while (read(go, &dummy, 1) < 0 && errno == EINTR)
		;
	for (long i = 0; i < calls; i++) {
		uint64_t t0 = now_ns(), lat;
		bool err = fd < 0;
		char *nul = NULL;

		if (!err && write_all(fd, message, mlen) < 0)
			err = true;
		while (!err) {
			ssize_t n;

			nul = have ? memchr(buf, '\0', have) : NULL;
			if (nul)
				break;
			if (have == cap) {
				char *nb = realloc(buf, cap * 2);

				if (!nb) {
					err = true;
					break;
				}
				buf = nb;
				cap *= 2;
			}
			n = read(fd, buf + have, cap - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				err = true;
				break;
			}
			have += (size_t)n;
		}
		lat = now_ns() - t0;
		if (!err) {
			size_t len = (size_t)(nul - buf);

			err = reply_is_error(buf, len);
			memmove(buf, nul + 1, have - len - 1);
			have -= len + 1;
		}
		chunk[nchunk++] = lat | (err ? ERROR_BIT : 0);
		if (nchunk == CHUNK) {
			write_all(out, chunk, sizeof(chunk));
			nchunk = 0;
		}
		if (err) {
			r = 1;
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
	}
	if (nchunk)
		write_all(out, chunk, nchunk * sizeof(uint64_t));
	if (fd >= 0)
		close(fd);
	free(buf);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long calls, clients;
	uint64_t *lat, t0, t1, errors = 0;
	size_t nlat = 0, want;
	int go[2], res[2];
	char *end;

	if (argc != 5) {
		fprintf(stderr, "usage: vlping SOCKET CALLS CLIENTS MESSAGE\n");
		return 2;
	}
	calls = strtol(argv[2], &end, 10);
	if (*end || calls < 1)
		return 2;
	clients = strtol(argv[3], &end, 10);
	if (*end || clients < 1 || clients > 4096)
		return 2;
	want = (size_t)calls * (size_t)clients;
	lat = calloc(want, sizeof(*lat));
	if (!lat || pipe(go) < 0 || pipe(res) < 0) {
		perror("vlping");
		return 2;
	}
	for (long c = 0; c < clients; c++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("vlping: fork");
			return 2;
		}
		if (pid == 0) {
			close(go[1]);
			close(res[0]);
			_exit(client_run(argv[1], calls, argv[4], go[0], res[1]));
		}
	}
	close(go[0]);
	close(res[1]);
	/* Give every client time to connect before the start. */
	usleep(200000);
	t0 = now_ns();
	close(go[1]);
	for (;;) {
		ssize_t n = read(res[0], (char *)lat + nlat * sizeof(*lat),
				 (want - nlat) * sizeof(*lat));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		nlat += (size_t)n / sizeof(*lat);
		if (nlat == want)
			break;
	}
	t1 = now_ns();
	while (wait(NULL) > 0)
		;
	for (size_t i = 0; i < nlat; i++) {
		if (lat[i] & ERROR_BIT) {
			errors++;
			lat[i] &= ~ERROR_BIT;
		}
	}
	errors += want - nlat;  /* calls a dead client never reported */
	if (nlat == 0) {
		printf("calls 0 errors %llu\n", (unsigned long long)errors);
		return 1;
	}
	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	printf("calls %zu errors %llu seconds %.3f rate %.0f median_us %.1f p99_us %.1f max_us %.1f\n",
	       nlat, (unsigned long long)errors, (double)(t1 - t0) / 1e9,
	       (double)nlat / ((double)(t1 - t0) / 1e9), (double)lat[nlat / 2] / 1e3,
	       (double)lat[(nlat * 99) / 100 < nlat ? (nlat * 99) / 100 : nlat - 1] / 1e3,
	       (double)lat[nlat - 1] / 1e3);
	free(lat);
	return errors ? 1 : 0;
}
