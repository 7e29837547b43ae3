/*
 * Unit tests for the download byte source: a small HTTP/1.1 server runs in
 * a child process on 127.0.0.1 and serves a body whole, truncated, stalled,
 * as a 404 or as redirects; the tests read through the source and check
 * the bytes, the errors and their messages, cancellation, the size limit,
 * file:// handling and that chunks stay small. One test feeds a served
 * bundle to the bundle reader.
 */
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
#include "testutil.h"

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
 */
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
	fatelf_bundle_source src;

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
	fatelf_bundle_source src;
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
	fatelf_bundle_source src;
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
	ck_assert_msg(strstr(d.msg, "(HTTP 302)"), "%s", d.msg);
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
	ck_assert_msg(!strstr(d.msg, "s3cret"), "%s", d.msg);
	ck_assert_msg(strstr(d.msg, "user@127.0.0.1"), "%s", d.msg);
	fatelf_fetch_close(f);
	srv_stop(&s);

	ck_assert_int_eq(fatelf_fetch_open("ftp://user:s3cret@h/x", NULL, &f, &d), -EINVAL);
	ck_assert_msg(!strstr(d.msg, "s3cret"), "%s", d.msg);
}
END_TEST

START_TEST(test_cancel_mid_transfer)
{
	uint8_t *body = random_bytes(BODY_LEN, 12);
	atomic_int cancel = 0;
	fatelf_fetch_opts o = { .cancel = &cancel };
	fatelf_bundle_source src;
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
	fatelf_bundle_source src;

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
