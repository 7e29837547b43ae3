/*
 * Unit tests for the download byte source: a small HTTP/1.1 server runs in
 * a child process on 127.0.0.1 and serves a body whole, truncated, stalled,
 * as a 404 or as redirects; the tests read through the source and check
 * the bytes, the errors and their messages, cancellation, the size limit,
 * file:// handling and that chunks stay small. One test feeds a served
 * bundle to the bundle reader.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elfgen.h"
#include "fetch.h"
#include "netrange.h"
#include "testutil.h"
#include "text.h"

/* ------------------------------------------------------------ server */

struct srv {
	pid_t pid;
	int port;
	char base[64];          /* "http://127.0.0.1:PORT" */
};

static void send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;     /* the client went away: nothing to do */
		p += n;
		len -= (size_t)n;
	}
}

static void send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

static void send_head(int fd, const char *status, long long length, const char *extra)
{
	char h[512];

	if (length >= 0)
		snprintf(h, sizeof(h), "HTTP/1.1 %s\r\nContent-Length: %lld\r\n%sConnection: close\r\n\r\n",
			 status, length, extra);
	else
		snprintf(h, sizeof(h), "HTTP/1.1 %s\r\n%sConnection: close\r\n\r\n", status, extra);
	send_str(fd, h);
}

/*
 * One request per connection. The path picks the behaviour:
 *   /full          200, Content-Length, the whole body
 *   /nolen         200, no Content-Length, the body, then close
 *   /trunc         200, Content-Length of the whole body, half of it, close
 *   /stall         200, Content-Length, 4 KiB, then nothing (no close)
 *   /404           404
 *   /redir         302 to /full
 *   /redir-file    302 to file:///etc/passwd
 *   /redir-lo2     302 to http://127.0.0.2:PORT/full (nothing listens there)
 *   /drip          200, Content-Length, then one byte every 200 ms
 */
static int srv_port;
static void srv_handle(int c, const uint8_t *body, size_t len)
{
	char req[8192], path[256] = "";
	size_t got = 0;

	while (got < sizeof(req) - 1) {
		ssize_t n = recv(c, req + got, sizeof(req) - 1 - got, 0);

		if (n <= 0)
			return;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	if (strncmp(req, "GET ", 4) != 0)
		return;
	for (size_t i = 0; i + 1 < sizeof(path) && req[4 + i] && req[4 + i] != ' '; i++) {
		path[i] = req[4 + i];
		path[i + 1] = '\0';
	}

	if (strcmp(path, "/full") == 0) {
		send_head(c, "200 OK", (long long)len, "");
		send_all(c, body, len);
	} else if (strcmp(path, "/nolen") == 0) {
		send_head(c, "200 OK", -1, "");
		send_all(c, body, len);
	} else if (strcmp(path, "/trunc") == 0) {
		send_head(c, "200 OK", (long long)len, "");
		send_all(c, body, len / 2);
	} else if (strcmp(path, "/stall") == 0) {
		send_head(c, "200 OK", (long long)len, "");
		send_all(c, body, len < 4096 ? len : 4096);
		sleep(120);
	} else if (strcmp(path, "/redir") == 0) {
		send_head(c, "302 Found", 0, "Location: /full\r\n");
	} else if (strcmp(path, "/redir-file") == 0) {
		send_head(c, "302 Found", 0, "Location: file:///etc/passwd\r\n");
	} else if (strcmp(path, "/redir-lo2") == 0) {
		char loc[128];

		snprintf(loc, sizeof(loc), "Location: http://127.0.0.2:%d/full\r\n", srv_port);
		send_head(c, "302 Found", 0, loc);
	} else if (strcmp(path, "/drip") == 0) {
		send_head(c, "200 OK", (long long)len, "");
		for (size_t i = 0; i < len; i++) {
			send_all(c, body + i, 1);
			usleep(200000);
		}
	} else {
		send_head(c, "404 Not Found", 9, "");
		send_str(c, "not found");
	}
}

/* Serves body from a child process; the child dies with the test. */
static void srv_start(struct srv *s, const void *body, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 8), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &salen), 0);
	s->port = ntohs(sa.sin_port);
	srv_port = s->port;
	snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);

	s->pid = fork();
	ck_assert_int_ge(s->pid, 0);
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			int c = accept(lfd, NULL, NULL);

			if (c < 0)
				continue;
			srv_handle(c, body, len);
			close(c);
		}
	}
	close(lfd);
}

static void srv_stop(struct srv *s)
{
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
}

/* ------------------------------------------------------------ helpers */

static uint8_t *random_bytes(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len);
	uint32_t x = seed ? seed : 1;

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)(x >> 24);
	}
	return b;
}

struct drained {
	uint8_t *buf;
	size_t len;
	size_t max_chunk;
	size_t nchunks;
	ssize_t last;           /* 0 at the end, or the error */
};

/* Reads the source until the end or an error, keeping every byte. */
static void drain(fatelf_fetch *f, struct drained *r)
{
	fatelf_reader src;

	*r = (struct drained){ 0 };
	fatelf_fetch_source(f, &src);
	for (;;) {
		const void *p = NULL;
		ssize_t n = src.read(src.ctx, &p);

		if (n <= 0) {
			r->last = n;
			return;
		}
		ck_assert_ptr_nonnull(p);
		r->buf = realloc(r->buf, r->len + (size_t)n);
		ck_assert_ptr_nonnull(r->buf);
		memcpy(r->buf + r->len, p, (size_t)n);
		r->len += (size_t)n;
		r->nchunks++;
		if ((size_t)n > r->max_chunk)
			r->max_chunk = (size_t)n;
	}
}

static fatelf_fetch *open_ok(const char *url, const fatelf_fetch_opts *o)
{
	fatelf_fetch *f = NULL;
	fatelf_diag d;
	int r = fatelf_fetch_open(url, o, &f, &d);

	ck_assert_msg(r == 0, "%s: %d %s", url, r, d.msg);
	ck_assert_ptr_nonnull(f);
	return f;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define BODY_LEN (4u * 1024 * 1024 + 12345)

/* ------------------------------------------------------------ tests */

START_TEST(test_full_download)
{
	uint8_t *body = random_bytes(BODY_LEN, 7);
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, body, BODY_LEN);
	snprintf(url, sizeof(url), "%s/full", s.base);
	fatelf_fetch *f = open_ok(url, NULL);

	drain(f, &r);
	ck_assert_int_eq(r.last, 0);
	ck_assert_uint_eq(r.len, BODY_LEN);
	ck_assert(memcmp(r.buf, body, BODY_LEN) == 0);
	/* Memory does not grow with the download: chunks are curl-sized. */
	ck_assert_uint_le(r.max_chunk, 1024 * 1024);
	ck_assert_uint_gt(r.nchunks, 4);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), 0);
	ck_assert_uint_eq(fatelf_fetch_bytes(f), BODY_LEN);
	ck_assert_uint_eq(fatelf_fetch_length(f), BODY_LEN);
	/* Reading past the end stays at the end. */
	fatelf_reader src;
	const void *p;
	fatelf_fetch_source(f, &src);
	ck_assert_int_eq(src.read(src.ctx, &p), 0);
	ck_assert_ptr_null(fatelf_fetch_close(f));
	free(r.buf);
	srv_stop(&s);
	free(body);
}
END_TEST

START_TEST(test_no_length_and_redirect)
{
	uint8_t *body = random_bytes(300000, 8);
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, body, 300000);

	/* No Content-Length: the end is the server closing; length unknown. */
	snprintf(url, sizeof(url), "%s/nolen", s.base);
	fatelf_fetch *f = open_ok(url, NULL);
	drain(f, &r);
	ck_assert_int_eq(r.last, 0);
	ck_assert_uint_eq(r.len, 300000);
	ck_assert(memcmp(r.buf, body, 300000) == 0);
	ck_assert_uint_eq(fatelf_fetch_length(f), 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), 0);
	fatelf_fetch_close(f);
	free(r.buf);

	/* An http redirect is followed. */
	snprintf(url, sizeof(url), "%s/redir", s.base);
	f = open_ok(url, NULL);
	drain(f, &r);
	ck_assert_int_eq(r.last, 0);
	ck_assert_uint_eq(r.len, 300000);
	ck_assert(memcmp(r.buf, body, 300000) == 0);
	ck_assert_uint_eq(fatelf_fetch_length(f), 300000);
	fatelf_fetch_close(f);
	free(r.buf);

	srv_stop(&s);
	free(body);
}
END_TEST

START_TEST(test_http_404)
{
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, "x", 1);
	snprintf(url, sizeof(url), "%s/missing", s.base);
	fatelf_fetch *f = open_ok(url, NULL);
	drain(f, &r);
	ck_assert_int_eq(r.last, -EIO);
	/* The error page is not handed out as bundle bytes. */
	ck_assert_uint_eq(r.len, 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_int_eq(d.code, -EIO);
	ck_assert_msg(strncmp(d.msg, url, strlen(url)) == 0, "%s", d.msg);
	ck_assert_msg(strstr(d.msg, ": the server answered HTTP 404 Not Found"), "%s", d.msg);
	/* the status is said once, not again in curl's words */
	ck_assert_msg(!strstr(d.msg, "returned error"), "%s", d.msg);
	fatelf_fetch_close(f);
	srv_stop(&s);
}
END_TEST

START_TEST(test_truncated)
{
	uint8_t *body = random_bytes(1000000, 9);
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, body, 1000000);
	snprintf(url, sizeof(url), "%s/trunc", s.base);
	fatelf_fetch *f = open_ok(url, NULL);
	drain(f, &r);
	/* What arrived is handed out, then the short transfer is an error. */
	ck_assert_int_eq(r.last, -EIO);
	ck_assert_uint_eq(r.len, 500000);
	ck_assert(memcmp(r.buf, body, r.len) == 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strncmp(d.msg, url, strlen(url)) == 0, "%s", d.msg);
	ck_assert_msg(strstr(d.msg, "500000 bytes remaining"), "%s", d.msg);
	/* The error sticks. */
	fatelf_reader src;
	const void *p;
	fatelf_fetch_source(f, &src);
	ck_assert_int_eq(src.read(src.ctx, &p), -EIO);
	fatelf_fetch_close(f);
	free(r.buf);
	srv_stop(&s);
	free(body);
}
END_TEST

START_TEST(test_stall_times_out)
{
	uint8_t *body = random_bytes(100000, 10);
	fatelf_fetch_opts o = { .timeout_sec = 2 };
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, body, 100000);
	snprintf(url, sizeof(url), "%s/stall", s.base);
	fatelf_fetch *f = open_ok(url, &o);
	double t0 = now_sec();
	drain(f, &r);
	double took = now_sec() - t0;
	ck_assert_int_eq(r.last, -EIO);
	ck_assert_uint_eq(r.len, 4096);
	ck_assert_msg(took >= 1.9 && took < 4.0, "took %.1f s", took);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strncmp(d.msg, url, strlen(url)) == 0, "%s", d.msg);
	ck_assert_msg(strstr(d.msg, "no data for 2 seconds"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);
	srv_stop(&s);
	free(body);
}
END_TEST

START_TEST(test_redirect_to_file_refused)
{
	fatelf_fetch_opts o = { .allow_file = true };
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, "x", 1);
	snprintf(url, sizeof(url), "%s/redir-file", s.base);
	/* Even where file URLs are allowed, a server cannot redirect to one. */
	fatelf_fetch *f = open_ok(url, &o);
	drain(f, &r);
	ck_assert_int_eq(r.last, -EIO);
	ck_assert_uint_eq(r.len, 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strncmp(d.msg, url, strlen(url)) == 0, "%s", d.msg);
	ck_assert_msg(strstr(d.msg, ": redirected to file:///etc/passwd: only redirects to http and https are followed"),
		      "%s", d.msg);
	fatelf_fetch_close(f);
	srv_stop(&s);
}
END_TEST

START_TEST(test_file_url)
{
	const char *dir = tu_tmpdir();
	uint8_t *body = random_bytes(500000, 11);
	fatelf_fetch_opts no = { 0 }, yes = { .allow_file = true };
	fatelf_fetch *f = NULL;
	struct drained r;
	char url[4200];
	fatelf_diag d;

	tu_write_file("a b.bin", body, 500000);
	snprintf(url, sizeof(url), "file://%s/a%%20b.bin", dir);

	ck_assert_int_eq(fatelf_fetch_open(url, &no, &f, &d), -EINVAL);
	ck_assert_ptr_null(f);
	ck_assert_msg(strstr(d.msg, "file URLs are not allowed here"), "%s", d.msg);
	ck_assert_int_eq(fatelf_fetch_open(url, NULL, &f, &d), -EINVAL);

	f = open_ok(url, &yes);
	drain(f, &r);
	ck_assert_int_eq(r.last, 0);
	ck_assert_uint_eq(r.len, 500000);
	ck_assert(memcmp(r.buf, body, 500000) == 0);
	ck_assert_uint_le(r.max_chunk, 1024 * 1024);
	ck_assert_uint_eq(fatelf_fetch_length(f), 500000);
	ck_assert_uint_eq(fatelf_fetch_bytes(f), 500000);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), 0);
	fatelf_fetch_close(f);
	free(r.buf);

	/* file://localhost/ is the same file. */
	snprintf(url, sizeof(url), "file://localhost%s/a%%20b.bin", dir);
	f = open_ok(url, &yes);
	drain(f, &r);
	ck_assert_int_eq(r.last, 0);
	ck_assert_uint_eq(r.len, 500000);
	fatelf_fetch_close(f);
	free(r.buf);

	/* Another host is refused before any I/O. */
	ck_assert_int_eq(fatelf_fetch_open("file://example.org/etc/passwd", &yes, &f, &d), -EINVAL);

	/* A missing file and a directory fail at the first read. */
	snprintf(url, sizeof(url), "file://%s/missing", dir);
	f = open_ok(url, &yes);
	drain(f, &r);
	ck_assert_int_eq(r.last, -EIO);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "No such file or directory"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);

	snprintf(url, sizeof(url), "file://%s", dir);
	f = open_ok(url, &yes);
	drain(f, &r);
	ck_assert_int_eq(r.last, -EIO);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "not a regular file"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);

	/* The size limit holds for files too. */
	fatelf_fetch_opts lim = { .allow_file = true, .max_bytes = 1000 };
	snprintf(url, sizeof(url), "file://%s/a%%20b.bin", dir);
	f = open_ok(url, &lim);
	drain(f, &r);
	ck_assert_int_eq(r.last, -EFBIG);
	ck_assert_uint_eq(r.len, 0);
	fatelf_fetch_close(f);
	free(r.buf);
	free(body);
}
END_TEST

START_TEST(test_refused_urls)
{
	static const char *bad[] = {
		"ftp://127.0.0.1/x.fatbundle",
		"gopher://127.0.0.1/x",
		"not a url",
		"",
		"/tmp/x.fatbundle",
		"127.0.0.1/x.fatbundle",
		"scp://host/x",
	};
	fatelf_fetch_opts o = { .allow_file = true };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fatelf_fetch *f = NULL;
		fatelf_diag d;

		ck_assert_msg(fatelf_fetch_open(bad[i], &o, &f, &d) == -EINVAL, "%s", bad[i]);
		ck_assert_ptr_null(f);
		ck_assert_int_eq(d.code, -EINVAL);
		ck_assert_msg(strstr(d.msg, "only http, https and file URLs are accepted"), "%s: %s",
			      bad[i], d.msg);
	}
	/* Without allow_file the message does not offer file URLs. */
	fatelf_fetch *f = NULL;
	fatelf_diag d;
	ck_assert_int_eq(fatelf_fetch_open("ftp://h/x", NULL, &f, &d), -EINVAL);
	ck_assert_msg(strstr(d.msg, "ftp://h/x: only http and https URLs are accepted"), "%s", d.msg);

	/* A URL with a line break is refused and quoted on one line. */
	ck_assert_int_eq(fatelf_fetch_open("http://h/a\nb", NULL, &f, &d), -EINVAL);
	ck_assert_msg(!strchr(d.msg, '\n') && strstr(d.msg, "http://h/a?b: "), "%s", d.msg);

	/* The scheme is case-insensitive; opening does no I/O. */
	f = open_ok("HTTPS://127.0.0.1:1/x", NULL);
	fatelf_fetch_close(f);
	ck_assert_ptr_null(fatelf_fetch_close(NULL));
}
END_TEST

START_TEST(test_password_not_shown)
{
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, "x", 1);
	snprintf(url, sizeof(url), "http://user:s3cret@127.0.0.1:%d/missing", s.port);
	fatelf_fetch *f = open_ok(url, NULL);
	drain(f, &r);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(!strstr(d.msg, "s3cret") && !strstr(d.msg, "user"), "%s", d.msg);
	ck_assert_msg(strstr(d.msg, "http://127.0.0.1:"), "%s", d.msg);
	fatelf_fetch_close(f);
	srv_stop(&s);

	ck_assert_int_eq(fatelf_fetch_open("ftp://user:s3cret@h/x", NULL, &f, &d), -EINVAL);
	ck_assert_msg(!strstr(d.msg, "s3cret") && strstr(d.msg, "ftp://h/x: "), "%s", d.msg);
	/* A URL curl cannot parse is quoted without its credentials too. */
	ck_assert_int_eq(fatelf_fetch_open("http://user:s3cret@h:99999999/x", NULL, &f, &d), -EINVAL);
	ck_assert_msg(!strstr(d.msg, "s3cret") && strstr(d.msg, "http://h:99999999/x: "), "%s", d.msg);
}
END_TEST

START_TEST(test_netrange_parse)
{
	static const char *const good[][2] = {
		{ "10.0.0.0/8", "10.0.0.0/8" },
		{ "127.0.0.2", "127.0.0.2/32" },
		{ "0.0.0.0/0", "0.0.0.0/0" },
		{ "172.16.0.0/12", "172.16.0.0/12" },
		{ "fe80::/10", "fe80::/10" },
		{ "::1", "::1/128" },
		{ "FC00::/7", "fc00::/7" },
		{ "::/0", "::/0" },
		{ "192.168.1.128/25", "192.168.1.128/25" },
		/* IPv4-mapped networks are IPv4 ones, as connections are matched */
		{ "::ffff:127.0.0.0/104", "127.0.0.0/8" },
		{ "::FFFF:10.1.2.3", "10.1.2.3/32" },
	};
	static const char *const bad[][2] = {
		{ "", "is not an IPv4 or IPv6 network" },
		{ "/8", "is not an IPv4 or IPv6 network" },
		{ "10.0.0/8", "is not an IPv4 or IPv6 network" },
		{ "10.0.0.0/", "the prefix length is not a number" },
		{ "10.0.0.0/+8", "the prefix length is not a number" },
		{ "10.0.0.0/8x", "the prefix length is not a number" },
		{ "10.0.0.0/0008", "the prefix length is not a number" },
		{ "10.0.0.0/33", "the prefix length is more than 32" },
		{ "::/129", "the prefix length is more than 128" },
		{ "10.0.0.1/8", "bits are set past the prefix length (the network is 10.0.0.0/8)" },
		{ "fe80::1/10", "(the network is fe80::/10)" },
		{ "192.168.1.129/25", "(the network is 192.168.1.128/25)" },
		{ "localhost", "is not an IPv4 or IPv6 network" },
		{ "1.2.3.4.5/8", "is not an IPv4 or IPv6 network" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/8",
		  "is not an IPv4 or IPv6 network" },
	};
	fatelf_netrange r;
	fatelf_diag d;
	char buf[FATELF_NETRANGE_TEXT_MAX];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(fatelf_netrange_parse(good[i][0], strlen(good[i][0]), &r, &d) == 0, "%s: %s",
			      good[i][0], d.msg);
		ck_assert_str_eq(fatelf_netrange_format(&r, buf), good[i][1]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(fatelf_netrange_parse(bad[i][0], strlen(bad[i][0]), &r, &d) == -EINVAL, "%s",
			      bad[i][0]);
		ck_assert_msg(strstr(d.msg, bad[i][1]), "%s: %s", bad[i][0], d.msg);
	}
	/* The length bounds the text: no NUL is needed, none is read past. */
	ck_assert_int_eq(fatelf_netrange_parse("10.0.0.0/8,junk", 10, &r, &d), 0);
	ck_assert_str_eq(fatelf_netrange_format(&r, buf), "10.0.0.0/8");
}
END_TEST

START_TEST(test_netranges_list)
{
	fatelf_netranges l = { 0 }, m;
	fatelf_diag d;
	char text[FATELF_NETRANGES_MAX * FATELF_NETRANGE_TEXT_MAX], small[12];

	ck_assert_int_eq(fatelf_netranges_add(&l, " 10.0.0.0/8,\t::1  ,,127.0.0.2 ", &d), 0);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_int_eq(fatelf_netranges_format(&l, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "10.0.0.0/8,::1/128,127.0.0.2/32");
	ck_assert_int_eq(fatelf_netranges_format(&l, small, sizeof(small)), -ENOBUFS);
	/* Read back, it is the same list. */
	m = (fatelf_netranges){ 0 };
	ck_assert_int_eq(fatelf_netranges_add(&m, text, &d), 0);
	ck_assert_int_eq(memcmp(&l, &m, sizeof(l)), 0);
	/* A bad item changes nothing. */
	ck_assert_int_eq(fatelf_netranges_add(&l, "192.168.0.0/16 nonsense", &d), -EINVAL);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_msg(strstr(d.msg, "'nonsense' is not an IPv4 or IPv6 network"), "%s", d.msg);
	/* At most FATELF_NETRANGES_MAX. */
	l.n = 0;
	for (int i = 0; i < FATELF_NETRANGES_MAX; i++) {
		char one[32];

		snprintf(one, sizeof(one), "10.%d.0.0/16", i);
		ck_assert_int_eq(fatelf_netranges_add(&l, one, &d), 0);
	}
	ck_assert_int_eq(fatelf_netranges_add(&l, "11.0.0.0/8", &d), -E2BIG);
	ck_assert_uint_eq(l.n, FATELF_NETRANGES_MAX);
	ck_assert_int_eq(fatelf_netranges_format(&l, text, sizeof(text)), 0);
	/* The default list. */
	fatelf_netranges_default(&l);
	ck_assert_int_eq(fatelf_netranges_format(&l, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "127.0.0.0/8,0.0.0.0/8,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,"
			 "192.168.0.0/16,100.64.0.0/10,::1/128,::/128,fe80::/10,fc00::/7");
}
END_TEST

static uint64_t match4(const fatelf_netranges *l, const char *a)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	ck_assert_int_eq(inet_pton(AF_INET, a, &sa.sin_addr), 1);
	return fatelf_netranges_match(l, (struct sockaddr *)&sa, sizeof(sa));
}

static uint64_t match6(const fatelf_netranges *l, const char *a)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };

	ck_assert_int_eq(inet_pton(AF_INET6, a, &sa.sin6_addr), 1);
	return fatelf_netranges_match(l, (struct sockaddr *)&sa, sizeof(sa));
}

START_TEST(test_netranges_match)
{
	fatelf_netranges l = { 0 };
	struct sockaddr_un { sa_family_t f; char p[8]; } un = { AF_UNIX, "x" };
	struct sockaddr_in shortsa = { .sin_family = AF_INET };
	fatelf_diag d;

	/* bits:          0            1               2              3         4 */
	ck_assert_int_eq(fatelf_netranges_add(&l, "127.0.0.0/8 127.0.0.2/32 172.16.0.0/12 fe80::/10 0.0.0.0/0",
					      &d), 0);
	ck_assert_uint_eq(match4(&l, "127.0.0.1"), 0x1 | 0x10);
	ck_assert_uint_eq(match4(&l, "127.0.0.2"), 0x1 | 0x2 | 0x10);
	ck_assert_uint_eq(match4(&l, "172.31.255.255"), 0x4 | 0x10);
	ck_assert_uint_eq(match4(&l, "172.32.0.0"), 0x10);
	ck_assert_uint_eq(match4(&l, "128.0.0.1"), 0x10);
	ck_assert_uint_eq(match6(&l, "fe80::1"), 0x8);
	ck_assert_uint_eq(match6(&l, "febf:ffff::1"), 0x8);
	ck_assert_uint_eq(match6(&l, "fec0::1"), 0);
	/* IPv4-mapped IPv6 is IPv4. */
	ck_assert_uint_eq(match6(&l, "::ffff:127.0.0.2"), 0x1 | 0x2 | 0x10);
	ck_assert_uint_eq(match6(&l, "::ffff:8.8.8.8"), 0x10);
	{
		fatelf_netranges m = { 0 };

		ck_assert_int_eq(fatelf_netranges_add(&m, "::ffff:127.0.0.0/104", &d), 0);
		ck_assert_uint_eq(match4(&m, "127.0.0.5"), 0x1);
		ck_assert_uint_eq(match6(&m, "::ffff:127.0.0.5"), 0x1);
		ck_assert_uint_eq(match4(&m, "128.0.0.1"), 0);
	}
	/* Not an IP address, or too short: no match. */
	ck_assert_uint_eq(fatelf_netranges_match(&l, (struct sockaddr *)&un, sizeof(un)), 0);
	ck_assert_uint_eq(fatelf_netranges_match(&l, (struct sockaddr *)&shortsa, 4), 0);
	ck_assert_uint_eq(fatelf_netranges_match(&l, NULL, 0), 0);

	/* The default list: loopback, link-local, private; not public. */
	fatelf_netranges_default(&l);
	ck_assert_uint_ne(match4(&l, "127.1.2.3"), 0);
	ck_assert_uint_ne(match4(&l, "0.0.0.0"), 0);
	ck_assert_uint_ne(match4(&l, "169.254.169.254"), 0);
	ck_assert_uint_ne(match4(&l, "10.1.2.3"), 0);
	ck_assert_uint_ne(match4(&l, "192.168.0.1"), 0);
	ck_assert_uint_ne(match4(&l, "100.100.100.100"), 0);
	ck_assert_uint_ne(match6(&l, "::1"), 0);
	ck_assert_uint_ne(match6(&l, "::"), 0);
	ck_assert_uint_ne(match6(&l, "fd12::1"), 0);
	ck_assert_uint_ne(match6(&l, "::ffff:10.0.0.1"), 0);
	ck_assert_uint_eq(match4(&l, "8.8.8.8"), 0);
	ck_assert_uint_eq(match4(&l, "172.32.0.1"), 0);
	ck_assert_uint_eq(match6(&l, "2001:db8::1"), 0);
}
END_TEST

/* A redirect into a denied network is refused, before any connection,
 * naming the hop and the range; the same redirect without the entry is
 * followed (and fails to connect: nothing listens on 127.0.0.2). The
 * first URL's own network (127.0.0.1 in 127.0.0.0/8) does not count. */
START_TEST(test_redirect_denied)
{
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;
	fatelf_netranges deny = { 0 };
	fatelf_fetch_opts o = { .deny = &deny };
	fatelf_fetch *f;

	srv_start(&s, "x", 1);
	snprintf(url, sizeof(url), "http://u:s3cret@127.0.0.1:%d/redir-lo2", s.port);
	ck_assert_int_eq(fatelf_netranges_add(&deny, "127.0.0.2/32", &d), 0);
	f = open_ok(url, &o);
	drain(f, &r);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "/redir-lo2: redirected to http://127.0.0.2:") &&
		      strstr(d.msg, "/full: 127.0.0.2 is in a denied network (127.0.0.2/32)") &&
		      !strstr(d.msg, "s3cret"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);

	/* The first URL in a denied network of its own: allowed, but a hop
	 * into another denied range is not. */
	deny.n = 0;
	ck_assert_int_eq(fatelf_netranges_add(&deny, "127.0.0.1/32 127.0.0.2/32", &d), 0);
	f = open_ok(url, &o);
	drain(f, &r);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "127.0.0.2 is in a denied network (127.0.0.2/32)"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);

	/* Both in one range that the first host is in: followed. */
	fatelf_netranges_default(&deny);
	f = open_ok(url, &o);
	drain(f, &r);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(!strstr(d.msg, "denied"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);

	/* The first URL alone, in the default list: served. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/full", s.port);
	f = open_ok(url, &o);
	drain(f, &r);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), 0);
	ck_assert_uint_eq(r.len, 1);
	fatelf_fetch_close(f);
	free(r.buf);
	srv_stop(&s);
}
END_TEST

/* A server that sends a byte every 200 ms is cut at the deadline, or by
 * the minimum rate, long before it would end (200 bytes: 40 s). */
START_TEST(test_drip_deadline_and_rate)
{
	uint8_t *body = random_bytes(200, 5);
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;
	fatelf_fetch *f;
	double t0, secs;

	srv_start(&s, body, 200);
	snprintf(url, sizeof(url), "%s/drip", s.base);

	fatelf_fetch_opts o = { .timeout_sec = 30, .deadline_sec = 2 };
	t0 = now_sec();
	f = open_ok(url, &o);
	drain(f, &r);
	secs = now_sec() - t0;
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "/drip: the download did not end within its deadline of 2 s ("),
		      "%s", d.msg);
	ck_assert_msg(secs >= 1.5 && secs < 10, "cut after %.1f s", secs);
	ck_assert_uint_lt(r.len, 200);
	fatelf_fetch_close(f);
	free(r.buf);

	/* The server serves one connection at a time: a fresh one. */
	srv_stop(&s);
	srv_start(&s, body, 200);
	snprintf(url, sizeof(url), "%s/drip", s.base);
	o = (fatelf_fetch_opts){ .timeout_sec = 30, .min_rate = 1000, .low_speed_sec = 2 };
	t0 = now_sec();
	f = open_ok(url, &o);
	drain(f, &r);
	secs = now_sec() - t0;
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "/drip: slower than 1000 bytes/s for 2 s ("), "%s", d.msg);
	ck_assert_msg(secs >= 1.5 && secs < 10, "cut after %.1f s", secs);
	ck_assert_uint_gt(r.len, 0);
	fatelf_fetch_close(f);
	free(r.buf);

	srv_stop(&s);
	srv_start(&s, body, 200);

	/* A fast download is not cut by either. */
	snprintf(url, sizeof(url), "%s/full", s.base);
	o = (fatelf_fetch_opts){ .deadline_sec = 20, .min_rate = 1000, .low_speed_sec = 2 };
	f = open_ok(url, &o);
	drain(f, &r);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), 0);
	ck_assert_uint_eq(r.len, 200);
	fatelf_fetch_close(f);
	free(r.buf);
	srv_stop(&s);
	free(body);
}
END_TEST

START_TEST(test_url_redact)
{
	static const char *const cases[][2] = {
		{ "http://user:secret@host/x", "http://host/x" },
		{ "https://token@host:8443/a/b?q=1#f", "https://host:8443/a/b?q=1#f" },
		{ "HTTP://u:p@[::1]:80/x", "HTTP://[::1]:80/x" },
		{ "http://a@b:c@host/x", "http://host/x" },         /* the last '@' ends them */
		{ "http://user:secret@host", "http://host" },
		{ "http://user:secret@host?x", "http://host?x" },
		{ "http://host/path@with-at", "http://host/path@with-at" },
		{ "http://host:8080/~user@x", "http://host:8080/~user@x" },
		{ "https://registry/@scope/pkg", "https://registry/@scope/pkg" },
		{ "http://user:pa/ss@host/x", "http://host/x" },    /* a raw '/' in the password */
		{ "http://user:pa?ss@host/x", "http://host/x" },    /* ... or '?', or '#' */
		{ "http://user:pa#ss@host/x?q", "http://host/x?q" },
		{ "http://user:p/a?s#s@host/x", "http://host/x" },
		{ "http://host:8080/x?to=a:b@c", "http://host:8080/x?to=a:b@c" },
		{ "http:\\\\user:pw@host/x", "http:\\\\host/x" },
		{ "user:secret@host/x", "host/x" },                 /* no scheme */
		{ "file:///srv/a@b.fatbundle", "file:///srv/a@b.fatbundle" },
		{ "http://host/a\nb\x7f\xc3\xa9", "http://host/a?b???" },
		{ "http://u:p\n@host/", "http://host/" },
		{ "", "" },
		{ "@", "" },
		{ "http://@host/", "http://host/" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *r = fatelf_text_url_redact(cases[i][0]);

		ck_assert_ptr_nonnull(r);
		ck_assert_msg(strcmp(r, cases[i][1]) == 0, "%s: got %s, want %s", cases[i][0], r,
			      cases[i][1]);
		free(r);
	}
	ck_assert_ptr_null(fatelf_text_url_redact(NULL));
}
END_TEST

START_TEST(test_cancel_mid_transfer)
{
	uint8_t *body = random_bytes(BODY_LEN, 12);
	atomic_int cancel = 0;
	fatelf_fetch_opts o = { .cancel = &cancel };
	fatelf_reader src;
	const void *p;
	struct srv s;
	char url[128];
	fatelf_diag d;

	srv_start(&s, body, BODY_LEN);
	snprintf(url, sizeof(url), "%s/full", s.base);
	fatelf_fetch *f = open_ok(url, &o);
	fatelf_fetch_source(f, &src);
	ssize_t n = src.read(src.ctx, &p);
	ck_assert_int_gt(n, 0);
	ck_assert(memcmp(p, body, (size_t)n) == 0);
	atomic_store(&cancel, 1);
	ck_assert_int_eq(src.read(src.ctx, &p), -ECANCELED);
	ck_assert_int_eq(src.read(src.ctx, &p), -ECANCELED);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -ECANCELED);
	ck_assert_msg(strncmp(d.msg, url, strlen(url)) == 0, "%s", d.msg);
	ck_assert_uint_lt(fatelf_fetch_bytes(f), BODY_LEN);
	fatelf_fetch_close(f);
	srv_stop(&s);
	free(body);
}
END_TEST

static void *cancel_later(void *arg)
{
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

START_TEST(test_cancel_while_stalled)
{
	uint8_t *body = random_bytes(100000, 13);
	atomic_int cancel = 0;
	fatelf_fetch_opts o = { .cancel = &cancel, .timeout_sec = 60 };
	struct srv s;
	struct drained r;
	char url[128];
	pthread_t t;

	srv_start(&s, body, 100000);
	snprintf(url, sizeof(url), "%s/stall", s.base);
	fatelf_fetch *f = open_ok(url, &o);
	double t0 = now_sec();
	ck_assert_int_eq(pthread_create(&t, NULL, cancel_later, &cancel), 0);
	/* The read blocks on a silent server; the flag still stops it. */
	drain(f, &r);
	double took = now_sec() - t0;
	pthread_join(t, NULL);
	ck_assert_int_eq(r.last, -ECANCELED);
	ck_assert_uint_eq(r.len, 4096);
	ck_assert_msg(took < 2.0, "took %.1f s", took);
	fatelf_fetch_close(f);
	free(r.buf);
	srv_stop(&s);
	free(body);
}
END_TEST

START_TEST(test_max_bytes)
{
	uint8_t *body = random_bytes(1000000, 14);
	struct srv s;
	struct drained r;
	char url[128];
	fatelf_diag d;

	srv_start(&s, body, 1000000);

	/* The announced length is over the limit: nothing is handed out. */
	fatelf_fetch_opts small = { .max_bytes = 1000 };
	snprintf(url, sizeof(url), "%s/full", s.base);
	fatelf_fetch *f = open_ok(url, &small);
	drain(f, &r);
	ck_assert_int_eq(r.last, -EFBIG);
	ck_assert_uint_eq(r.len, 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EFBIG);
	ck_assert_msg(strstr(d.msg, "larger than the limit of 1000 bytes"), "%s", d.msg);
	fatelf_fetch_close(f);
	free(r.buf);

	/* No length announced: cut off once the bytes pass the limit. */
	fatelf_fetch_opts half = { .max_bytes = 500000 };
	snprintf(url, sizeof(url), "%s/nolen", s.base);
	f = open_ok(url, &half);
	drain(f, &r);
	ck_assert_msg(r.last == -EFBIG, "%zd %s", r.last, (fatelf_fetch_status(f, &d), d.msg));
	ck_assert_uint_le(r.len, 500000);
	ck_assert_uint_gt(r.len, 400000);
	ck_assert(memcmp(r.buf, body, r.len) == 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &d), -EFBIG);
	fatelf_fetch_close(f);
	free(r.buf);

	/* Exactly at the limit is fine. */
	fatelf_fetch_opts exact = { .max_bytes = 1000000 };
	f = open_ok(url, &exact);
	drain(f, &r);
	ck_assert_int_eq(r.last, 0);
	ck_assert_uint_eq(r.len, 1000000);
	fatelf_fetch_close(f);
	free(r.buf);

	srv_stop(&s);
	free(body);
}
END_TEST

/* ------------------------------------------------------------ bundle */

struct counted {
	size_t entries;
	uint64_t bytes;
	bool saw_data;
	bool data_ok;
};

static int cnt_begin(void *ctx, const fatelf_bundle_entry *e, fatelf_diag *d)
{
	struct counted *c = ctx;

	c->entries++;
	if (strcmp(e->path, "opt/tool/share/data") == 0)
		c->saw_data = true;
	return 0;
}

static int cnt_data(void *ctx, const fatelf_bundle_entry *e, const void *buf, size_t len)
{
	struct counted *c = ctx;

	c->bytes += len;
	if (strcmp(e->path, "opt/tool/share/data") == 0)
		c->data_ok = len == 11 && memcmp(buf, "hello data\n", 11) == 0;
	return 0;
}

/* A staging tree with a FatELF program, a data file and a symlink. */
static uint8_t *make_bundle(size_t *ret_len)
{
	static const uint16_t machines[] = { 62, 183 };
	const char *in[] = { "x.elf", "a.elf" };
	fatelf_bundle_create_opts co = { .name = "tool", .version = "1.0", .compression = FATELF_COMPRESS_ZSTD };
	fatelf_diag d;

	for (int i = 0; i < 2; i++) {
		elfgen_opts o;
		size_t len;
		uint8_t *img;

		elfgen_defaults(&o, machines[i], FATELF_CLASS64, FATELF_DATA2LSB);
		o.p_align = machines[i] == 183 ? 0x10000 : 0x1000;
		o.size = 200000;
		o.seed = (uint32_t)i + 1;
		img = elfgen_make(&o, &len);
		tu_write_file(in[i], img, len);
		free(img);
	}
	ck_assert_int_eq(mkdir("tree", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/tool", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/tool/bin", 0755), 0);
	ck_assert_int_eq(mkdir("tree/opt/tool/share", 0755), 0);
	ck_assert_msg(fatelf_glue("tree/opt/tool/bin/tool", in, 2, NULL, &d) == 0, "%s", d.msg);
	tu_write_file("tree/opt/tool/share/data", "hello data\n", 11);
	ck_assert_int_eq(symlink("tool", "tree/opt/tool/bin/t"), 0);

	int fd = open("b.fatbundle", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fatelf_bundle_create("tree", fd, &co, &d) == 0, "%s", d.msg);
	close(fd);
	uint8_t *b = tu_read_file("b.fatbundle", ret_len);
	ck_assert_ptr_nonnull(b);
	return b;
}

static int read_served(const char *url, struct counted *c, fatelf_fetch **ret, fatelf_diag *d)
{
	fatelf_bundle_reader_ops ops = { .begin = cnt_begin, .data = cnt_data, .ctx = c };
	fatelf_bundle_read_opts ro = { 0 };
	fatelf_reader src;

	*c = (struct counted){ 0 };
	*ret = open_ok(url, NULL);
	fatelf_fetch_source(*ret, &src);
	return fatelf_bundle_read(&src, &ro, &ops, d);
}

START_TEST(test_bundle_end_to_end)
{
	struct counted c;
	struct srv s;
	char url[128];
	fatelf_diag d, fd;
	fatelf_fetch *f;
	size_t len;
	int r;

	tu_tmpdir();
	uint8_t *bundle = make_bundle(&len);
	srv_start(&s, bundle, len);

	snprintf(url, sizeof(url), "%s/full", s.base);
	r = read_served(url, &c, &f, &d);
	ck_assert_msg(r == 0, "%d %s", r, d.msg);
	ck_assert_int_eq(fatelf_fetch_status(f, &fd), 0);
	ck_assert(c.saw_data && c.data_ok);
	ck_assert_uint_ge(c.entries, 3);
	ck_assert_uint_gt(c.bytes, 400000);
	ck_assert_uint_eq(fatelf_fetch_length(f), len);
	fatelf_fetch_close(f);

	/* Served truncated: the read fails and the fetch says why. */
	snprintf(url, sizeof(url), "%s/trunc", s.base);
	r = read_served(url, &c, &f, &d);
	ck_assert_int_lt(r, 0);
	ck_assert_int_eq(fatelf_fetch_status(f, &fd), -EIO);
	ck_assert_msg(strncmp(fd.msg, url, strlen(url)) == 0, "%s", fd.msg);
	ck_assert_msg(strstr(fd.msg, "bytes remaining"), "%s", fd.msg);
	fatelf_fetch_close(f);

	srv_stop(&s);
	free(bundle);
}
END_TEST

static Suite *fetch_suite(void)
{
	Suite *s = suite_create("fetch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_full_download);
	tcase_add_test(tc, test_no_length_and_redirect);
	tcase_add_test(tc, test_http_404);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_stall_times_out);
	tcase_add_test(tc, test_redirect_to_file_refused);
	tcase_add_test(tc, test_file_url);
	tcase_add_test(tc, test_refused_urls);
	tcase_add_test(tc, test_password_not_shown);
	tcase_add_test(tc, test_url_redact);
	tcase_add_test(tc, test_netrange_parse);
	tcase_add_test(tc, test_netranges_list);
	tcase_add_test(tc, test_netranges_match);
	tcase_add_test(tc, test_redirect_denied);
	tcase_add_test(tc, test_drip_deadline_and_rate);
	tcase_add_test(tc, test_cancel_mid_transfer);
	tcase_add_test(tc, test_cancel_while_stalled);
	tcase_add_test(tc, test_max_bytes);
	tcase_add_test(tc, test_bundle_end_to_end);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* The tests talk to 127.0.0.1 directly. */
	static const char *proxies[] = { "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
					 "all_proxy", "ALL_PROXY" };
	for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
		unsetenv(proxies[i]);
	return tu_run_suite(fetch_suite());
}
