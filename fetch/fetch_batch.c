/*
 * fatelf-fetch --batch (see fetch_batch.h for the protocol). The input is
 * read and checked whole before the first request. Then a fixed set of
 * slots, one curl easy handle each, runs on one multi handle: a slot
 * holds one object from its first request to its done or fail frame,
 * through its retries and mirrors, and then takes the next get. Every
 * frame is written from this one thread, by curl's write callback (data)
 * or by the loop (done, fail); the output is flushed before each wait,
 * so the daemon sees bytes as they come. file: mirrors are read in the
 * loop itself, one chunk per slot and round, so that a big local file
 * does not hold up the network transfers.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "fetch_batch.h"
#include "io.h"
#include "macro.h"
#include "oci.h"
#include "text.h"

/* The output buffer: frames collect here between waits. */
#define BATCH_OUT_BUF (256 * 1024)
/* Chunk of a file: mirror's reads. */
#define BATCH_FILE_CHUNK (64 * 1024)
/* Longest wait of the loop, when nothing happens. */
#define BATCH_POLL_MS 1000
/* A WWW-Authenticate header's value, at most: a challenge's parameters
 * (fatelf_oci_challenge) and room for their quoting. */
#define BATCH_CHALLENGE_MAX 4096
/* Authorizations one get may take on one mirror: its own fresh one, and
 * the new ones other transfers found meanwhile. */
#define BATCH_AUTH_ROUNDS 8

/* ------------------------------------------------------------ stdin */

void fatelf_fetch_batch_input_init(fatelf_fetch_batch_input *in, bool allow_file)
{
	*in = (fatelf_fetch_batch_input){ .allow_file = allow_file };
}

void fatelf_fetch_batch_input_free(fatelf_fetch_batch_input *in)
{
	for (size_t i = 0; i < in->n_mirrors; i++)
		fatelf_fetch_url_clear(&in->mirrors[i]);
	if (in->basic) {
		explicit_bzero(in->basic, strlen(in->basic));
		free(in->basic);
	}
	free(in->gets);
	free(in->pool);
	fatelf_fetch_batch_input_init(in, in->allow_file);
}

static int line_error(fatelf_fetch_batch_input *in, fatelf_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int line_error(fatelf_fetch_batch_input *in, fatelf_diag *d, const char *fmt, ...)
{
	char what[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return fatelf_diag_set(d, -EINVAL, -1, "line %lu: %s", in->line, what);
}

/* Decimal, without sign or leading zeros, at most max. */
static int parse_dec(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || len > 20 || (s[0] == '0' && len > 1))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned dgt;

		if (!fatelf_text_is_digit(s[i]))
			return -EINVAL;
		dgt = (unsigned)(s[i] - '0');
		if (v > (max - dgt) / 10)
			return -EINVAL;
		v = v * 10 + dgt;
	}
	*ret = v;
	return 0;
}

static bool path_char(char c)
{
	return fatelf_text_is_alpha(c) || fatelf_text_is_digit(c) || c == '.' || c == '_' ||
	       c == '/' || c == '-' || c == ':';
}

static const char *path_problem(const char *p, size_t len)
{
	const char *q;
	size_t i, start;

	if (len == 0)
		return "an empty path";
	if (len > FATELF_FETCH_BATCH_PATH_MAX)
		return "a path longer than 4096 bytes";
	/* A query after one '?' (a registry's list by pages: ?n=1000&last=x)
	 * adds '=' and '&'. */
	q = memchr(p, '?', len);
	for (i = 0; i < len; i++)
		if (!path_char(p[i]) && !(q && p + i > q && (p[i] == '=' || p[i] == '&')) && p + i != q)
			return "a path with a byte other than [a-zA-Z0-9._/:-], or a query with '=' and '&'";
	if (p[0] == '/')
		return "an absolute path";
	/* "a:b" alone could read as a URL of scheme "a". */
	if (p[0] == ':')
		return "a path that starts with \":\"";
	for (start = 0; start <= len; start = i + 1) {
		for (i = start; i < len && p[i] != '/'; i++)
			;
		if (i - start == 2 && p[start] == '.' && p[start + 1] == '.')
			return "a path with a \"..\" component";
	}
	return NULL;
}

/* A mirror's URL: a base that an object's path is appended to. */
static int mirror_add(fatelf_fetch_batch_input *in, const char *text, size_t len, fatelf_diag *d)
{
	_cleanup_free_ char *url = NULL;
	fatelf_fetch_url *m = &in->mirrors[in->n_mirrors];
	fatelf_diag ud = { 0 };
	CURLU *u;
	char *part = NULL;
	bool extra = false;
	int r;

	if (len == 0 || memchr(text, ' ', len))
		return line_error(in, d, "\"mirror\" takes one URL");
	url = strndup(text, len);
	if (!url)
		return fatelf_diag_oom(d);
	r = fatelf_fetch_url_check(url, in->allow_file, m, &ud);
	if (r == -EINVAL)
		return line_error(in, d, "%s", ud.msg);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "%s", ud.msg);
	/* Paths are appended: a query or a fragment would swallow them. */
	u = curl_url();
	if (!u) {
		fatelf_fetch_url_clear(m);
		return fatelf_diag_oom(d);
	}
	if (curl_url_set(u, CURLUPART_URL, m->full, 0) == CURLUE_OK) {
		if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK)
			extra = true;
		curl_free(part);
		part = NULL;
		if (curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK)
			extra = true;
		curl_free(part);
	}
	curl_url_cleanup(u);
	if (extra) {
		r = line_error(in, d, "%.*s: a mirror's URL has no query and no fragment",
			       FATELF_FETCH_URL_SHOWN, m->shown);
		fatelf_fetch_url_clear(m);
		return r;
	}
	in->n_mirrors++;
	return 0;
}

static bool media_type_char(char c)
{
	return fatelf_text_is_alpha(c) || fatelf_text_is_digit(c) || c == '.' || c == '+' ||
	       c == '/' || c == '-';
}

static int accept_add(fatelf_fetch_batch_input *in, const char *s, size_t len, fatelf_diag *d)
{
	const char *slash;

	if (in->n_accept >= FATELF_FETCH_BATCH_ACCEPT_MAX)
		return line_error(in, d, "more than %d accept lines", FATELF_FETCH_BATCH_ACCEPT_MAX);
	if (len > FATELF_FETCH_BATCH_MEDIA_TYPE_MAX)
		return line_error(in, d, "a media type longer than %d bytes", FATELF_FETCH_BATCH_MEDIA_TYPE_MAX);
	for (size_t i = 0; i < len; i++)
		if (!media_type_char(s[i]))
			return line_error(in, d, "a media type with a byte other than [A-Za-z0-9.+/-]");
	slash = memchr(s, '/', len);
	if (!slash || slash == s || slash == s + len - 1 ||
	    memchr(slash + 1, '/', len - (size_t)(slash + 1 - s)))
		return line_error(in, d, "\"%.*s\" is not a media type (TYPE/SUBTYPE)", (int)len, s);
	for (size_t i = 0; i < in->n_accept; i++)
		if (strlen(in->accept[i]) == len && memcmp(in->accept[i], s, len) == 0)
			return line_error(in, d, "the media type \"%.*s\" twice", (int)len, s);
	memcpy(in->accept[in->n_accept], s, len);
	in->accept[in->n_accept][len] = '\0';
	in->n_accept++;
	return 0;
}

static int base64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64 with its padding, in its one canonical form, of bytes
 * that hold a ':' and no control character. Nothing of it is quoted. */
static const char *basic_problem(const char *s, size_t len)
{
	size_t pad = 0;
	bool colon = false;
	uint32_t acc = 0;
	unsigned bits = 0;

	if (len > FATELF_FETCH_BATCH_BASIC_MAX)
		return "longer than 1024 bytes";
	if (len % 4)
		return "not base64 (its length is not a multiple of 4)";
	while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < len - pad; i++) {
		int v = base64_value(s[i]);

		if (v < 0)
			return "not base64 (a byte outside A-Za-z0-9+/, or \"=\" inside)";
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			unsigned char c = (unsigned char)(acc >> (bits - 8));

			bits -= 8;
			acc &= ((uint32_t)1 << bits) - 1;
			if (c < 0x20 || c == 0x7f)
				return "the credentials hold a control character";
			colon |= c == ':';
		}
	}
	if (acc != 0)
		return "not base64 in its canonical form (padding bits set)";
	if (!colon)
		return "the credentials are not USER:PASSWORD (no \":\")";
	return NULL;
}

static int basic_set(fatelf_fetch_batch_input *in, const char *s, size_t len, fatelf_diag *d)
{
	const char *why;

	if (in->basic)
		return line_error(in, d, "a second basic line");
	why = basic_problem(s, len);
	if (why)
		return line_error(in, d, "\"basic\": %s", why);
	in->basic = strndup(s, len);
	if (!in->basic)
		return fatelf_diag_oom(d);
	return 0;
}

static int get_add(fatelf_fetch_batch_input *in, const char *s, size_t len, fatelf_diag *d)
{
	const char *sp1 = memchr(s, ' ', len), *sp2, *path, *why;
	size_t path_len, size_len;
	uint64_t id, size;
	fatelf_fetch_batch_get *g;

	sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - s)) : NULL;
	if (!sp1 || !sp2 || memchr(sp2 + 1, ' ', len - (size_t)(sp2 + 1 - s)))
		return line_error(in, d, "\"get\" takes an id, a path and a size");
	if (parse_dec(s, (size_t)(sp1 - s), FATELF_FETCH_BATCH_ID_MAX, &id) < 0)
		return line_error(in, d, "bad id \"%.*s\" (0 to 2147483648)", (int)MIN(sp1 - s, 32), s);
	path = sp1 + 1;
	path_len = (size_t)(sp2 - path);
	why = path_problem(path, path_len);
	if (why)
		return line_error(in, d, "%s", why);
	size_len = len - (size_t)(sp2 + 1 - s);
	if (parse_dec(sp2 + 1, size_len, INT64_MAX, &size) < 0)
		return line_error(in, d, "bad size \"%.*s\"", (int)MIN(size_len, 32), sp2 + 1);
	if (in->n_gets >= FATELF_FETCH_BATCH_GETS_MAX)
		return line_error(in, d, "more than 1000000 gets");
	if (GROW_ARRAY(in->gets, in->cap_gets, in->n_gets + 1) < 0 ||
	    GROW_ARRAY(in->pool, in->pool_cap, in->pool_len + path_len + 1) < 0)
		return fatelf_diag_oom(d);
	g = &in->gets[in->n_gets++];
	g->id = (uint32_t)id;
	g->size = size;
	g->path = in->pool_len;
	memcpy(in->pool + in->pool_len, path, path_len);
	in->pool[in->pool_len + path_len] = '\0';
	in->pool_len += path_len + 1;
	return 0;
}

int fatelf_fetch_batch_input_line(fatelf_fetch_batch_input *in, const char *line, size_t len,
				  fatelf_diag *d)
{
	size_t kw;

	in->line++;
	if (len == 0)
		return line_error(in, d, "an empty line");
	if (len > FATELF_FETCH_BATCH_LINE_MAX)
		return line_error(in, d, "longer than %d bytes", FATELF_FETCH_BATCH_LINE_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f)
			return line_error(in, d, "a byte that is not printable ASCII (at %zu)", i + 1);
	if (len > 7 && memcmp(line, "mirror ", 7) == 0) {
		if (in->n_gets)
			return line_error(in, d, "a mirror after a get");
		if (in->n_mirrors >= FATELF_FETCH_BATCH_MIRRORS_MAX)
			return line_error(in, d, "more than %d mirrors", FATELF_FETCH_BATCH_MIRRORS_MAX);
		return mirror_add(in, line + 7, len - 7, d);
	}
	if (len > 7 && memcmp(line, "accept ", 7) == 0) {
		if (in->n_gets)
			return line_error(in, d, "an accept after a get");
		return accept_add(in, line + 7, len - 7, d);
	}
	if (len > 6 && memcmp(line, "basic ", 6) == 0) {
		if (in->n_gets)
			return line_error(in, d, "a basic after a get");
		return basic_set(in, line + 6, len - 6, d);
	}
	if (len > 4 && memcmp(line, "get ", 4) == 0) {
		if (!in->n_mirrors)
			return line_error(in, d, "a get before any mirror");
		return get_add(in, line + 4, len - 4, d);
	}
	/* The keyword is named only when it looks like one: the line may be
	 * a URL with its credentials. */
	for (kw = 0; kw < len && kw <= 16 && fatelf_text_is_alpha(line[kw]); kw++)
		;
	if (kw > 0 && kw <= 16 && (kw == len || line[kw] == ' '))
		return line_error(in, d, "unknown keyword \"%.*s\" (or no argument)", (int)kw, line);
	return line_error(in, d, "not a \"mirror\" or \"get\" line");
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int fatelf_fetch_batch_input_end(fatelf_fetch_batch_input *in, fatelf_diag *d)
{
	_cleanup_free_ uint32_t *ids = NULL;

	if (!in->n_mirrors)
		return fatelf_diag_set(d, -EINVAL, -1, "no \"mirror\" line");
	if (in->n_gets < 2)
		return 0;
	ids = malloc(in->n_gets * sizeof(*ids));
	if (!ids)
		return fatelf_diag_oom(d);
	for (size_t i = 0; i < in->n_gets; i++)
		ids[i] = in->gets[i].id;
	if (in->n_gets > 1)
		qsort(ids, in->n_gets, sizeof(*ids), cmp_u32);
	for (size_t i = 1; i < in->n_gets; i++)
		if (ids[i] == ids[i - 1])
			return fatelf_diag_set(d, -EINVAL, -1, "id %" PRIu32 " in two gets", ids[i]);
	return 0;
}

int fatelf_fetch_batch_input_read(fatelf_fetch_batch_input *in, int fd, fatelf_diag *d)
{
	/* A line and the next read's bytes. */
	const size_t cap = FATELF_FETCH_BATCH_LINE_MAX + 1 + 64 * 1024;
	_cleanup_free_ char *buf = malloc(cap);
	size_t len = 0;
	int r;

	if (!buf)
		return fatelf_diag_oom(d);
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len);
		size_t start = 0;
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fatelf_diag_set(d, -errno, -1, "read error: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
		while ((nl = memchr(buf + start, '\n', len - start))) {
			r = fatelf_fetch_batch_input_line(in, buf + start, (size_t)(nl - (buf + start)), d);
			if (r < 0)
				return r;
			start = (size_t)(nl - buf) + 1;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		if (len > FATELF_FETCH_BATCH_LINE_MAX) {
			in->line++;
			return line_error(in, d, "longer than %d bytes", FATELF_FETCH_BATCH_LINE_MAX);
		}
	}
	if (len > 0) {
		/* A writer that died halfway through a line: "get 5 x 1" may
		 * be the start of "get 5 x 1000". */
		in->line++;
		return line_error(in, d, "no newline at its end (the input was cut short?)");
	}
	return fatelf_fetch_batch_input_end(in, d);
}

/* ------------------------------------------------------------ stdout */

size_t fatelf_fetch_batch_head_data(char buf[FATELF_FETCH_BATCH_HEAD_MAX], uint32_t id,
				    uint64_t offset, uint64_t len)
{
	return (size_t)snprintf(buf, FATELF_FETCH_BATCH_HEAD_MAX, "data %" PRIu32 " %" PRIu64 " %" PRIu64 "\n",
				id, offset, len);
}

size_t fatelf_fetch_batch_head_done(char buf[FATELF_FETCH_BATCH_HEAD_MAX], uint32_t id,
				    uint64_t total)
{
	return (size_t)snprintf(buf, FATELF_FETCH_BATCH_HEAD_MAX, "done %" PRIu32 " %" PRIu64 "\n", id,
				total);
}

size_t fatelf_fetch_batch_line_fail(char buf[FATELF_FETCH_BATCH_FAIL_MAX], uint32_t id, long code,
				    const char *text)
{
	size_t n, i;

	if (code < 0 || code > 999)
		code = 0;
	if (!text || !text[0])
		text = "failed";
	n = (size_t)snprintf(buf, FATELF_FETCH_BATCH_FAIL_MAX, "fail %" PRIu32 " %ld ", id, code);
	for (i = 0; text[i] && i < FATELF_FETCH_BATCH_TEXT_MAX; i++)
		buf[n++] = (text[i] >= 0x20 && text[i] < 0x7f) ? text[i] : '?';
	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}

int fatelf_fetch_batch_out_init(fatelf_fetch_batch_out *out, int fd)
{
	*out = (fatelf_fetch_batch_out){ .fd = fd };
	out->buf = malloc(BATCH_OUT_BUF);
	if (!out->buf)
		return -ENOMEM;
	out->cap = BATCH_OUT_BUF;
	return 0;
}

void fatelf_fetch_batch_out_free(fatelf_fetch_batch_out *out)
{
	free(out->buf);
	out->buf = NULL;
	out->len = out->cap = 0;
}

int fatelf_fetch_batch_out_flush(fatelf_fetch_batch_out *out)
{
	int r;

	if (out->error)
		return out->error;
	if (out->len == 0)
		return 0;
	r = write_all(out->fd, out->buf, out->len);
	out->len = 0;
	if (r < 0)
		out->error = r;
	return r;
}

static int out_put(fatelf_fetch_batch_out *out, const void *p, size_t n)
{
	int r;

	if (out->error)
		return out->error;
	if (n > out->cap - out->len) {
		r = fatelf_fetch_batch_out_flush(out);
		if (r < 0)
			return r;
	}
	if (n > out->cap) {
		r = write_all(out->fd, p, n);
		if (r < 0)
			out->error = r;
		return r;
	}
	memcpy(out->buf + out->len, p, n);
	out->len += n;
	return 0;
}

int fatelf_fetch_batch_out_data(fatelf_fetch_batch_out *out, uint32_t id, uint64_t offset,
				const void *buf, size_t len)
{
	char head[FATELF_FETCH_BATCH_HEAD_MAX];
	int r = out_put(out, head, fatelf_fetch_batch_head_data(head, id, offset, len));

	return r < 0 ? r : out_put(out, buf, len);
}

int fatelf_fetch_batch_out_done(fatelf_fetch_batch_out *out, uint32_t id, uint64_t total)
{
	char head[FATELF_FETCH_BATCH_HEAD_MAX];

	return out_put(out, head, fatelf_fetch_batch_head_done(head, id, total));
}

int fatelf_fetch_batch_out_fail(fatelf_fetch_batch_out *out, uint32_t id, long code,
				const char *text)
{
	char line[FATELF_FETCH_BATCH_FAIL_MAX];

	return out_put(out, line, fatelf_fetch_batch_line_fail(line, id, code, text));
}

/* ------------------------------------------------------------ the transfers */

/* What an attempt's end leads to. */
enum next {
	NX_RUNNING,                 /* the attempt runs */
	NX_DONE,                    /* the object is complete */
	NX_RETRY,                   /* again on this mirror, from the bytes received */
	NX_MIRROR,                  /* the next mirror, from the bytes received */
	NX_RESTART,                 /* the next mirror, from offset 0 */
	NX_FAIL,                    /* the object fails, whatever mirrors are left */
	NX_AUTH,                    /* again on this mirror with its new authorization (no retry counted) */
	NX_ABORT,                   /* the batch stops (a system error, the output's) */
};

/* Why a callback of ours stopped a transfer. */
enum stop {
	STOP_NONE,
	STOP_TOO_BIG,               /* more bytes than the size */
	STOP_LENGTH,                /* a length announced that is not the size */
	STOP_RANGE,                 /* a 206 for other bytes than asked for */
	STOP_STATUS,                /* a status other than 200 and 206 */
	STOP_OUTPUT,                /* stdout failed */
};

typedef struct batch batch;

typedef struct slot {
	batch *b;
	CURL *easy;
	bool in_multi;
	/* The object, from its first request to its end; NULL: idle. */
	const fatelf_fetch_batch_get *g;
	unsigned mirror, retries;
	uint64_t got;               /* bytes 0..got went out: where a resume starts */
	uint64_t total;             /* its length: the size, or one a server announced; 0: unknown */
	uint64_t started_ms;
	long code;                  /* the HTTP status of the last attempt */
	char why[FATELF_FETCH_BATCH_TEXT_MAX];  /* the last attempt's failure */
	/* This attempt. */
	char *url, *shown;
	uint64_t from;              /* asked for bytes from here */
	uint64_t pos;               /* the next byte's offset */
	bool responded;             /* a response came (later connections are hops) */
	bool body;                  /* the body started: its status was checked */
	int64_t range_start;        /* the last response's Content-Range, -1: none */
	uint64_t range_total;       /* ... its complete length, 0: unknown */
	enum stop stop;
	int fd;                     /* file: mirrors */
	fatelf_fetch_guard guard;
	char errbuf[CURL_ERROR_SIZE];
	/* Registry auth. */
	struct curl_slist *headers; /* this attempt's Accept and Authorization */
	unsigned auth_sent;         /* the serial of the mirror's authorization it sent, 0: none */
	bool authed;                /* this get took a fresh authorization on this mirror */
	unsigned auth_rounds;       /* authorizations this get took on this mirror */
	bool challenge_long;
	char challenge[BATCH_CHALLENGE_MAX];    /* the answer's last WWW-Authenticate, "": none */
} slot;

struct batch {
	const fatelf_fetch_batch_input *in;
	const fatelf_fetch_opts *o;
	fatelf_netranges deny;
	/* The deny list's ranges each mirror answered from: every mirror is
	 * one root configured, so its own host is exempt for its requests. */
	uint64_t exempt[FATELF_FETCH_BATCH_MIRRORS_MAX];
	bool proxied;               /* every connection goes to the proxy */
	char *accept;               /* "Accept: ..." for every request, NULL: none */
	/* The authorization each mirror asked for ("Authorization: ..."),
	 * sent with every later request to it; NULL: none yet. Its serial
	 * (never 0) tells a transfer whether it sent the newest. */
	char *auth[FATELF_FETCH_BATCH_MIRRORS_MAX];
	unsigned auth_serial[FATELF_FETCH_BATCH_MIRRORS_MAX];
	bool auth_basic[FATELF_FETCH_BATCH_MIRRORS_MAX];
	unsigned serial;
	CURL *token_easy;           /* the token requests', made at the first */
	CURLM *multi;
	slot *slots;
	unsigned n_slots;
	size_t next;                /* the next get to start */
	unsigned active;
	size_t failed;
	int error;                  /* the system error that stops the batch */
	fatelf_fetch_batch_out out;
	uint8_t *chunk;             /* file: reads */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The attempt's failure, as the fail frame's text will give it. */
static void slot_why(slot *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slot_why(slot *x, const char *fmt, ...)
{
	char what[512];
	const char *shown = x->shown ? x->shown : "?";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(x->why, sizeof(x->why), "%.*s%s: %s", FATELF_FETCH_URL_SHOWN, shown,
		 strlen(shown) > FATELF_FETCH_URL_SHOWN ? "..." : "", what);
}

static uint64_t slot_cap(const slot *x)
{
	return x->g->size ? x->g->size : x->b->o->max_bytes;
}

static bool slot_past_deadline(const slot *x, uint64_t slack_ms)
{
	unsigned dl = x->b->o->deadline_sec;

	return dl && now_ms() - x->started_ms + slack_ms >= (uint64_t)dl * 1000;
}

static void slot_why_deadline(slot *x)
{
	slot_why(x, "the download did not end within its deadline of %u s (%" PRIu64 " bytes received)",
		 x->b->o->deadline_sec, x->got);
}

static void slot_why_too_big(slot *x)
{
	if (x->g->size)
		slot_why(x, "the body is larger than the expected %" PRIu64 " bytes", x->g->size);
	else
		slot_why(x, "the download is larger than the limit of %" PRIu64 " bytes", slot_cap(x));
}

static void slot_close_file(slot *x)
{
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}

/* The status of the response whose body starts (or that ended without
 * one): 200, or 206 for the bytes asked for. */
static bool slot_body_start(slot *x)
{
	curl_off_t cl = -1;
	long code = 0;

	x->body = true;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code == 206 && x->from > 0 && x->range_start == (int64_t)x->from) {
		if (x->range_total && x->total && x->range_total != x->total) {
			x->stop = STOP_LENGTH;
			slot_why(x, "the server announces %" PRIu64 " bytes, not the expected %" PRIu64,
				 x->range_total, x->total);
			return false;
		}
		if (!x->total)
			x->total = x->range_total;
		x->pos = x->from;
		return true;
	}
	if (code == 200) {
		if (curl_easy_getinfo(x->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK &&
		    cl >= 0) {
			if (x->g->size && (uint64_t)cl != x->g->size) {
				x->stop = STOP_LENGTH;
				slot_why(x, "the server announces %" PRIu64 " bytes, not the expected %" PRIu64,
					 (uint64_t)cl, x->g->size);
				return false;
			}
			if (!x->g->size && slot_cap(x) && (uint64_t)cl > slot_cap(x)) {
				x->stop = STOP_TOO_BIG;
				slot_why_too_big(x);
				return false;
			}
			if (!x->g->size)
				x->total = (uint64_t)cl;
		}
		/* A range request answered with the whole: it starts again. */
		x->got = x->pos = 0;
		return true;
	}
	if (code == 206) {
		x->stop = STOP_RANGE;
		if (x->range_start < 0)
			slot_why(x, "a partial answer (206) without a valid Content-Range to a request for bytes from %" PRIu64,
				 x->from);
		else
			slot_why(x, "asked for bytes from %" PRIu64 ", the server sent bytes from %" PRId64,
				 x->from, x->range_start);
		return false;
	}
	x->stop = STOP_STATUS;
	slot_why(x, "the server answered HTTP %ld, not 200 or 206", code);
	return false;
}

static size_t slot_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	slot *x = userdata;
	size_t n = size * nmemb;
	uint64_t cap;

	if (!x->body && !slot_body_start(x))
		return 0;
	if (n == 0)
		return 0;
	/* Also when the server announced no length, or lied about it. */
	cap = slot_cap(x);
	if (cap && (x->pos > cap || n > cap - x->pos)) {
		x->stop = STOP_TOO_BIG;
		slot_why_too_big(x);
		return 0;
	}
	if (fatelf_fetch_batch_out_data(&x->b->out, x->g->id, x->pos, ptr, n) < 0) {
		x->stop = STOP_OUTPUT;
		return 0;
	}
	x->pos += n;
	x->got = x->pos;
	return n;
}

/* "Content-Range: bytes 100-199/200" (or "*" for the length). */
static void slot_content_range(slot *x, const char *p, size_t n)
{
	char v[128];
	unsigned long long start, end;
	char total[32];

	if (n >= sizeof(v))
		return;
	memcpy(v, p, n);
	v[n] = '\0';
	if (sscanf(v, " bytes %llu-%llu/%31[0-9*]", &start, &end, total) != 3 || start > INT64_MAX ||
	    end < start)
		return;
	x->range_start = (int64_t)start;
	x->range_total = total[0] == '*' ? 0 : strtoull(total, NULL, 10);
}

/* A WWW-Authenticate header: the last of an answer is the one met. */
static void slot_challenge(slot *x, const char *p, size_t n)
{
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	x->challenge_long = n >= sizeof(x->challenge);
	if (x->challenge_long)
		n = 0;
	memcpy(x->challenge, p, n);
	x->challenge[n] = '\0';
}

/* A list of headers that may hold a secret: wiped, then freed. */
static void headers_free(struct curl_slist **l)
{
	for (struct curl_slist *i = *l; i; i = i->next)
		explicit_bzero(i->data, strlen(i->data));
	curl_slist_free_all(*l);
	*l = NULL;
}

static void secret_free(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
	}
	*s = NULL;
}

static size_t slot_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	slot *x = userdata;
	size_t n = size * nmemb;

	/* The first response of a request to a mirror comes from that
	 * mirror's host: the deny list's ranges it is in are exempt for that
	 * mirror. (Through a proxy, every response comes from the proxy,
	 * which the admin chose.) Every later connection of this transfer is
	 * a redirect's hop. */
	if (!x->responded) {
		x->b->exempt[x->mirror] |= fatelf_fetch_guard_primary_hits(&x->guard);
		x->responded = true;
		x->guard.check = true;
	}
	if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		x->range_start = -1;
		x->range_total = 0;
		x->challenge[0] = '\0';
		x->challenge_long = false;
	} else if (n > 14 && strncasecmp(ptr, "Content-Range:", 14) == 0) {
		slot_content_range(x, ptr + 14, n - 14);
	} else if (n > 17 && strncasecmp(ptr, "WWW-Authenticate:", 17) == 0) {
		slot_challenge(x, ptr + 17, n - 17);
	}
	return n;
}

/* The URL of the object on the current mirror. */
static int slot_urls(slot *x)
{
	const fatelf_fetch_url *m = &x->b->in->mirrors[x->mirror];
	const char *path = fatelf_fetch_batch_path(x->b->in, x->g);
	const char *base = m->is_file ? m->path : m->full;
	bool slash = base[0] && base[strlen(base) - 1] == '/';
	bool shown_slash = m->shown[0] && m->shown[strlen(m->shown) - 1] == '/';

	free(x->url);
	free(x->shown);
	x->url = x->shown = NULL;
	if (asprintf(&x->url, "%s%s%s", base, slash ? "" : "/", path) < 0)
		x->url = NULL;
	if (asprintf(&x->shown, "%s%s%s", m->shown, shown_slash ? "" : "/", path) < 0)
		x->shown = NULL;
	return x->url && x->shown ? 0 : -ENOMEM;
}

static enum next slot_file_open(slot *x)
{
	struct stat st;

	x->fd = open(x->url, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (x->fd < 0) {
		slot_why(x, "cannot open: %s", strerror(errno));
		return NX_MIRROR;
	}
	if (fstat(x->fd, &st) < 0) {
		slot_why(x, "cannot open: %s", strerror(errno));
		return NX_MIRROR;
	}
	if (!S_ISREG(st.st_mode)) {
		slot_why(x, "not a regular file");
		return NX_MIRROR;
	}
	if (x->g->size && (uint64_t)st.st_size != x->g->size) {
		slot_why(x, "the file is %" PRIu64 " bytes, not the expected %" PRIu64,
			 (uint64_t)st.st_size, x->g->size);
		return NX_RESTART;
	}
	if (slot_cap(x) && (uint64_t)st.st_size > slot_cap(x)) {
		slot_why_too_big(x);
		return NX_RESTART;
	}
	if (!x->total)
		x->total = (uint64_t)st.st_size;
	return NX_RUNNING;
}

static enum next slot_http_start(slot *x, uint64_t timeout_ms)
{
	batch *b = x->b;
	const fatelf_fetch_url *m = &b->in->mirrors[x->mirror];
	char range[32];
	CURLcode c;
	CURLMcode mc;

	headers_free(&x->headers);
	x->auth_sent = 0;
	if (b->accept && !(x->headers = curl_slist_append(NULL, b->accept))) {
		b->error = -ENOMEM;
		return NX_ABORT;
	}
	if (b->auth[x->mirror]) {
		struct curl_slist *l = curl_slist_append(x->headers, b->auth[x->mirror]);

		if (!l) {
			b->error = -ENOMEM;
			return NX_ABORT;
		}
		x->headers = l;
		x->auth_sent = b->auth_serial[x->mirror];
	}
	c = fatelf_fetch_setopt_common(x->easy, b->o, m->https, &x->guard);
#define SETOPT(opt, val) do { if (c == CURLE_OK) c = curl_easy_setopt(x->easy, opt, val); } while (0)
	SETOPT(CURLOPT_URL, x->url);
	if (x->from) {
		snprintf(range, sizeof(range), "%" PRIu64 "-", x->from);
		SETOPT(CURLOPT_RANGE, range);
	} else {
		SETOPT(CURLOPT_RANGE, (char *)NULL);
	}
	SETOPT(CURLOPT_TIMEOUT_MS, (long)MIN(timeout_ms, (uint64_t)LONG_MAX));
	/* No CURLOPT_MAXFILESIZE: curl holds it against every response's
	 * length, a redirect's and an error page's included, so a small
	 * object could not follow a redirect. The size is checked on the
	 * answer (slot_body_start) and on every byte (slot_write). */
	SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	/* Wait for a connection that may multiplex rather than open another. */
	SETOPT(CURLOPT_PIPEWAIT, 1L);
	SETOPT(CURLOPT_HEADERFUNCTION, slot_header);
	SETOPT(CURLOPT_HEADERDATA, x);
	SETOPT(CURLOPT_WRITEFUNCTION, slot_write);
	SETOPT(CURLOPT_WRITEDATA, x);
	SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
	SETOPT(CURLOPT_PRIVATE, x);
	/* The mirror's authorization goes to its own host and port alone:
	 * curl sends a custom Authorization header to no other host that a
	 * redirect names (a registry's blob storage) unless told to. */
	SETOPT(CURLOPT_UNRESTRICTED_AUTH, 0L);
	SETOPT(CURLOPT_HTTPHEADER, x->headers);
#undef SETOPT
	if (c != CURLE_OK) {
		slot_why(x, "%s", curl_easy_strerror(c));
		return NX_MIRROR;
	}
	mc = curl_multi_add_handle(b->multi, x->easy);
	if (mc != CURLM_OK) {
		b->error = -ENOMEM;
		return NX_ABORT;
	}
	x->in_multi = true;
	return NX_RUNNING;
}

/* Starts an attempt on the current mirror, from the bytes received. */
static enum next slot_attempt(slot *x)
{
	batch *b = x->b;
	uint64_t timeout_ms = 0;

	if (slot_urls(x) < 0) {
		b->error = -ENOMEM;
		return NX_ABORT;
	}
	if (b->o->deadline_sec) {
		uint64_t spent = now_ms() - x->started_ms, limit = (uint64_t)b->o->deadline_sec * 1000;

		if (spent >= limit) {
			slot_why_deadline(x);
			return NX_FAIL;
		}
		timeout_ms = limit - spent;
	}
	x->from = x->pos = x->got;
	x->responded = x->body = false;
	x->range_start = -1;
	x->range_total = 0;
	x->stop = STOP_NONE;
	x->code = 0;
	x->errbuf[0] = '\0';
	x->challenge[0] = '\0';
	x->challenge_long = false;
	fatelf_fetch_guard_reset(&x->guard);
	/* A mirror's own host is root's choice (the repository's config),
	 * as the one URL of a single download is: its first connection is
	 * not checked, the hops of its redirects are. A proxy is the admin's:
	 * the deny list sees only its address, as for one download. */
	x->guard.check = false;
	x->guard.exempt = &b->exempt[x->mirror];
	if (b->in->mirrors[x->mirror].is_file)
		return slot_file_open(x);
	return slot_http_start(x, timeout_ms);
}

static void slot_end(slot *x)
{
	slot_close_file(x);
	x->g = NULL;
	x->b->active--;
}

/* Takes what an attempt's end leads to: true when another attempt is due. */
static bool slot_advance(slot *x, enum next nx)
{
	batch *b = x->b;

	switch (nx) {
	case NX_RUNNING:
	case NX_ABORT:
		return false;
	case NX_DONE:
		fatelf_fetch_batch_out_done(&b->out, x->g->id, x->got);
		slot_end(x);
		return false;
	case NX_FAIL:
		break;
	case NX_AUTH:
		return true;
	case NX_RETRY:
		if (x->retries < FATELF_FETCH_BATCH_RETRIES) {
			x->retries++;
			return true;
		}
		/* fall through */
	case NX_MIRROR:
	case NX_RESTART:
		slot_close_file(x);
		if (nx == NX_RESTART) {
			x->got = 0;
			x->total = x->g->size;
		}
		if (x->mirror + 1 < b->in->n_mirrors) {
			x->mirror++;
			x->retries = 0;
			x->authed = false;
			x->auth_rounds = 0;
			return true;
		}
		break;
	}
	fatelf_fetch_batch_out_fail(&b->out, x->g->id, x->code, x->why);
	b->failed++;
	slot_end(x);
	return false;
}

/* Attempts until one runs or the object ends. */
static void slot_go(slot *x)
{
	for (;;) {
		enum next nx;

		if (x->total && x->got == x->total)
			nx = NX_DONE;
		else
			nx = slot_attempt(x);
		if (!slot_advance(x, nx))
			return;
	}
}

static void slot_start(slot *x, const fatelf_fetch_batch_get *g)
{
	x->g = g;
	x->mirror = x->retries = 0;
	x->got = 0;
	x->total = g->size;
	x->started_ms = now_ms();
	x->code = 0;
	x->why[0] = '\0';
	x->authed = false;
	x->auth_rounds = 0;
	x->b->active++;
	slot_go(x);
}

/* ------------------------------------------------------------ registry auth */

/* "Accept: t1, t2, ..." of the accept lines. */
static int batch_accept_header(const fatelf_fetch_batch_input *in, char **ret)
{
	size_t cap = sizeof("Accept: ");
	char *s;
	size_t len;

	for (size_t i = 0; i < in->n_accept; i++)
		cap += strlen(in->accept[i]) + 2;
	s = malloc(cap);
	if (!s)
		return -ENOMEM;
	len = (size_t)snprintf(s, cap, "Accept: ");
	for (size_t i = 0; i < in->n_accept; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? ", " : "", in->accept[i]);
	*ret = s;
	return 0;
}

/* A token service's reply, bounded. */
typedef struct token_reply {
	char *buf;
	size_t len, cap;
	bool too_long;
} token_reply;

static size_t token_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	token_reply *t = userdata;
	size_t n = size * nmemb;

	if (n > FATELF_FETCH_BATCH_TOKEN_REPLY_MAX - t->len) {
		t->too_long = true;
		return 0;
	}
	if (t->len + n > t->cap) {
		size_t cap = MAX(t->cap * 2, (size_t)4096);
		char *p;

		cap = MIN(MAX(cap, t->len + n), (size_t)FATELF_FETCH_BATCH_TOKEN_REPLY_MAX);
		p = malloc(cap);
		if (!p)
			return 0;
		/* The reply holds a token: no copy of it is left behind. */
		if (t->buf) {
			memcpy(p, t->buf, t->len);
			explicit_bzero(t->buf, t->cap);
			free(t->buf);
		}
		t->buf = p;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, ptr, n);
	t->len += n;
	return n;
}

static void token_reply_free(token_reply *t)
{
	if (t->buf) {
		explicit_bzero(t->buf, t->cap);
		free(t->buf);
	}
	*t = (token_reply){ 0 };
}

/* The realm's URL with the challenge's service and scope; NULL with why
 * set when the realm is refused (x->b->error on a system error). */
static char *token_url(slot *x, const fatelf_oci_challenge *ch, bool *ret_https)
{
	const fatelf_fetch_url *m = &x->b->in->mirrors[x->mirror];
	_cleanup_free_ char *shown = fatelf_text_url_redact(ch->realm);
	char *scheme = NULL, *es = NULL, *esc = NULL, *url = NULL;
	bool https = false, ok = false;
	CURLU *u = curl_url();
	int r;

	if (!u || !shown) {
		curl_url_cleanup(u);
		x->b->error = -ENOMEM;
		return NULL;
	}
	if (strchr(ch->realm, '#') || curl_url_set(u, CURLUPART_URL, ch->realm, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		slot_why(x, "the registry's token realm %.*s is not a URL fatelf reads (HTTP 401)",
			 FATELF_FETCH_URL_SHOWN / 2, shown);
	} else if (strcasecmp(scheme, "https") == 0) {
		https = ok = true;
	} else if (strcasecmp(scheme, "http") == 0 && !m->https) {
		ok = true;
	} else {
		slot_why(x, "the registry's token realm %.*s is not https%s (HTTP 401)", FATELF_FETCH_URL_SHOWN / 2,
			 shown, m->https ? "" : " or http");
	}
	curl_free(scheme);
	curl_url_cleanup(u);
	if (!ok)
		return NULL;
	if (ch->service[0] && !(es = curl_easy_escape(NULL, ch->service, 0)))
		goto oom;
	if (ch->scope[0] && !(esc = curl_easy_escape(NULL, ch->scope, 0)))
		goto oom;
	r = asprintf(&url, "%s%s%s%s%s%s", ch->realm,
		     es || esc ? (strchr(ch->realm, '?') ? "&" : "?") : "",
		     es ? "service=" : "", es ? es : "",
		     esc ? (es ? "&scope=" : "scope=") : "", esc ? esc : "");
	curl_free(es);
	curl_free(esc);
	if (r < 0) {
		x->b->error = -ENOMEM;
		return NULL;
	}
	*ret_https = https;
	return url;
oom:
	curl_free(es);
	curl_free(esc);
	x->b->error = -ENOMEM;
	return NULL;
}

/* Asks the realm of a Bearer challenge for a token (one blocking request,
 * bounded by the timeout and the object's deadline) and keeps it as the
 * mirror's authorization. NX_AUTH, or what the failure leads to. */
static enum next slot_token(slot *x, const fatelf_oci_challenge *ch)
{
	batch *b = x->b;
	const fatelf_fetch_opts *o = b->o;
	const bool creds = b->in->basic != NULL;
	_cleanup_free_ char *url = NULL, *shown = NULL;
	struct curl_slist *headers = NULL;
	fatelf_fetch_guard guard = {
		.deny = &b->deny,
		/* The realm is a host the registry chose, as a redirect's hop
		 * is: checked from its first connection. */
		.exempt = &b->exempt[x->mirror],
		.check = true,
	};
	token_reply reply = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "", *tok = NULL, *auth = NULL;
	uint64_t timeout_ms = (uint64_t)(o->timeout_sec ? o->timeout_sec : 60) * 1000;
	enum next nx = NX_MIRROR;
	bool https = false;
	long code = 0;
	CURLcode c = CURLE_OK;

	url = token_url(x, ch, &https);
	if (!url)
		return b->error ? NX_ABORT : NX_MIRROR;
	shown = fatelf_text_url_redact(ch->realm);
	if (!shown)
		goto oom;
	if (o->deadline_sec) {
		uint64_t spent = now_ms() - x->started_ms, limit = (uint64_t)o->deadline_sec * 1000;

		if (spent >= limit) {
			slot_why_deadline(x);
			return NX_FAIL;
		}
		timeout_ms = MIN(timeout_ms, limit - spent);
	}
	if (!b->token_easy && !(b->token_easy = curl_easy_init()))
		goto oom;
	if (creds) {
		_cleanup_free_ char *h = NULL;

		if (asprintf(&h, "Authorization: Basic %s", b->in->basic) < 0)
			goto oom;
		headers = curl_slist_append(NULL, h);
		explicit_bzero(h, strlen(h));
		if (!headers)
			goto oom;
	}
	curl_easy_reset(b->token_easy);
	c = fatelf_fetch_setopt_common(b->token_easy, o, https, &guard);
#define SETOPT(opt, val) do { if (c == CURLE_OK) c = curl_easy_setopt(b->token_easy, opt, val); } while (0)
	SETOPT(CURLOPT_URL, url);
	SETOPT(CURLOPT_HTTPGET, 1L);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)MIN(timeout_ms, (uint64_t)LONG_MAX));
	SETOPT(CURLOPT_UNRESTRICTED_AUTH, 0L);
	SETOPT(CURLOPT_HTTPHEADER, headers);
	SETOPT(CURLOPT_WRITEFUNCTION, token_write);
	SETOPT(CURLOPT_WRITEDATA, &reply);
	SETOPT(CURLOPT_ERRORBUFFER, errbuf);
#undef SETOPT
	if (c == CURLE_OK)
		c = curl_easy_perform(b->token_easy);
	curl_easy_getinfo(b->token_easy, CURLINFO_RESPONSE_CODE, &code);
	/* The handle keeps its connections, not our buffers and headers. */
	curl_easy_setopt(b->token_easy, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
	curl_easy_setopt(b->token_easy, CURLOPT_ERRORBUFFER, (char *)NULL);
	headers_free(&headers);

	if (guard.denied && c == CURLE_COULDNT_CONNECT) {
		slot_why(x, "the registry's token realm %.*s: %s is in a denied network (%s)",
			 FATELF_FETCH_URL_SHOWN / 2, shown, guard.denied_addr, guard.denied_range);
	} else if (c == CURLE_HTTP_RETURNED_ERROR && (code == 401 || code == 403)) {
		slot_why(x, "the registry %s (its token service answered HTTP %ld)",
			 creds ? "refused the credentials" : "wants credentials", code);
	} else if (c == CURLE_HTTP_RETURNED_ERROR) {
		slot_why(x, "the registry's token service %.*s answered HTTP %ld%s", FATELF_FETCH_URL_SHOWN / 2,
			 shown, code, fatelf_fetch_http_reason(code));
	} else if (reply.too_long) {
		slot_why(x, "the registry's token service %.*s sent a reply longer than %d bytes",
			 FATELF_FETCH_URL_SHOWN / 2, shown, FATELF_FETCH_BATCH_TOKEN_REPLY_MAX);
	} else if (c != CURLE_OK) {
		slot_why(x, "the registry's token service %.*s: %s", FATELF_FETCH_URL_SHOWN / 2, shown,
			 errbuf[0] ? errbuf : curl_easy_strerror(c));
		if (c == CURLE_OUT_OF_MEMORY)
			goto oom;
	} else if (fatelf_oci_token_parse(reply.buf ? reply.buf : "", reply.len, &tok) < 0) {
		slot_why(x, "the registry's token service %.*s sent no token", FATELF_FETCH_URL_SHOWN / 2, shown);
	} else if (asprintf(&auth, "Authorization: Bearer %s", tok) < 0) {
		secret_free(&tok);
		goto oom;
	} else {
		secret_free(&b->auth[x->mirror]);
		b->auth[x->mirror] = auth;
		b->auth_serial[x->mirror] = ++b->serial;
		b->auth_basic[x->mirror] = false;
		nx = NX_AUTH;
	}
	secret_free(&tok);
	token_reply_free(&reply);
	fatelf_fetch_guard_reset(&guard);
	/* The get's code stays the registry's 401. */
	return nx;
oom:
	headers_free(&headers);
	token_reply_free(&reply);
	fatelf_fetch_guard_reset(&guard);
	b->error = -ENOMEM;
	return NX_ABORT;
}

/* A 401. From the mirror itself, with a challenge: the helper meets it
 * (fetch_batch.h, "Registry auth") and the get goes again on this mirror;
 * else the mirror gives way. */
static enum next slot_unauthorized(slot *x)
{
	batch *b = x->b;
	unsigned m = x->mirror;
	fatelf_oci_challenge ch;
	long redirects = 0;

	curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_COUNT, &redirects);
	if (redirects > 0 || (!x->challenge[0] && !x->challenge_long)) {
		slot_why(x, "the server answered HTTP 401%s", fatelf_fetch_http_reason(401));
		return NX_MIRROR;
	}
	if (x->challenge_long || fatelf_oci_challenge_parse(x->challenge, &ch) < 0) {
		slot_why(x, "the registry's WWW-Authenticate challenge is not one fatelf reads (HTTP 401)");
		return NX_MIRROR;
	}
	if (++x->auth_rounds > BATCH_AUTH_ROUNDS) {
		slot_why(x, "the registry refused the credentials (HTTP 401, %d times)", BATCH_AUTH_ROUNDS);
		return NX_MIRROR;
	}
	/* Another transfer took a new authorization since this one started. */
	if (b->auth[m] && b->auth_serial[m] != x->auth_sent)
		return NX_AUTH;
	if (x->authed || (ch.scheme == FATELF_OCI_AUTH_BASIC && x->auth_sent && b->auth_basic[m])) {
		slot_why(x, "the registry refused the credentials (HTTP 401)");
		return NX_MIRROR;
	}
	x->authed = true;
	if (ch.scheme == FATELF_OCI_AUTH_BEARER)
		return slot_token(x, &ch);
	if (!b->in->basic) {
		slot_why(x, "the registry wants credentials (HTTP 401)");
		return NX_MIRROR;
	}
	secret_free(&b->auth[m]);
	if (asprintf(&b->auth[m], "Authorization: Basic %s", b->in->basic) < 0) {
		b->auth[m] = NULL;
		b->error = -ENOMEM;
		return NX_ABORT;
	}
	b->auth_serial[m] = ++b->serial;
	b->auth_basic[m] = true;
	return NX_AUTH;
}

/* curl's word on an attempt that ended. */
static enum next slot_finished(slot *x, CURLcode res)
{
	const fatelf_fetch_opts *o = x->b->o;
	long code = 0;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	x->code = code;
	if (res == CURLE_OK && !x->body && !slot_body_start(x))
		res = CURLE_WRITE_ERROR;
	if (code == 401 && (x->stop == STOP_NONE || x->stop == STOP_STATUS))
		return slot_unauthorized(x);
	switch (x->stop) {
	case STOP_NONE:
		break;
	case STOP_OUTPUT:
		return NX_ABORT;
	case STOP_TOO_BIG:
	case STOP_LENGTH:
		return NX_RESTART;
	case STOP_RANGE:
	case STOP_STATUS:
		return NX_MIRROR;
	}
	if (res == CURLE_OK) {
		if (x->total && x->got < x->total) {
			slot_why(x, "the body ended after %" PRIu64 " of %" PRIu64 " bytes", x->got, x->total);
			return NX_RETRY;
		}
		return NX_DONE;
	}
	if (res == CURLE_FILESIZE_EXCEEDED) {
		slot_why_too_big(x);
		return NX_RESTART;
	}
	/* A refused socket is curl's "could not connect". */
	if (x->guard.denied && res == CURLE_COULDNT_CONNECT) {
		const fatelf_fetch_guard *g = &x->guard;

		if (x->responded)
			slot_why(x, "redirected to %.*s%s: %s is in a denied network (%s)",
				 FATELF_FETCH_URL_SHOWN / 2, g->denied_url ? g->denied_url : "?",
				 g->denied_url && strlen(g->denied_url) > FATELF_FETCH_URL_SHOWN / 2 ? "..." : "",
				 g->denied_addr, g->denied_range);
		else
			slot_why(x, "%s is in a denied network (%s)", g->denied_addr, g->denied_range);
		return NX_MIRROR;
	}
	if (res == CURLE_OPERATION_TIMEDOUT) {
		if (slot_past_deadline(x, 1000)) {
			slot_why_deadline(x);
			return NX_FAIL;
		}
		if (strstr(x->errbuf, "too slow")) {
			if (o->min_rate) {
				slot_why(x, "slower than %" PRIu64 " bytes/s for %u s (%" PRIu64 " bytes received)",
					 o->min_rate, o->low_speed_sec ? o->low_speed_sec : 30, x->got);
				return NX_MIRROR;
			}
			slot_why(x, "no data for %u seconds", o->timeout_sec ? o->timeout_sec : 60);
		} else {
			slot_why(x, "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(res));
		}
		/* Before any answer: the mirror cannot be reached. */
		return x->responded ? NX_RETRY : NX_MIRROR;
	}
	if (res == CURLE_UNSUPPORTED_PROTOCOL && code >= 300 && code < 400) {
		char *loc = NULL;
		_cleanup_free_ char *shown = NULL;

		if (curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &loc) == CURLE_OK && loc)
			shown = fatelf_text_url_redact(loc);
		slot_why(x, "redirected to %.*s%s: %s", FATELF_FETCH_URL_SHOWN / 2, shown ? shown : "?",
			 shown && strlen(shown) > FATELF_FETCH_URL_SHOWN / 2 ? "..." : "",
			 x->b->in->mirrors[x->mirror].https ? "a download from https follows redirects to https only"
							    : "only redirects to http and https are followed");
		return NX_MIRROR;
	}
	if (res == CURLE_HTTP_RETURNED_ERROR && code >= 400) {
		slot_why(x, "the server answered HTTP %ld%s", code, fatelf_fetch_http_reason(code));
		return NX_MIRROR;
	}
	if (code >= 300)
		slot_why(x, "%s (HTTP %ld)", x->errbuf[0] ? x->errbuf : curl_easy_strerror(res), code);
	else
		slot_why(x, "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(res));
	switch (res) {
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return NX_RETRY;
	default:
		return NX_MIRROR;
	}
}

/* One chunk of a file: mirror's object. */
static void slot_file_step(slot *x)
{
	batch *b = x->b;
	uint64_t cap = slot_cap(x);
	enum next nx = NX_RUNNING;
	ssize_t n;

	if (slot_past_deadline(x, 0)) {
		slot_why_deadline(x);
		nx = NX_FAIL;
		goto end;
	}
	do
		n = pread(x->fd, b->chunk, BATCH_FILE_CHUNK, (off_t)x->pos);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		slot_why(x, "read error: %s", strerror(errno));
		nx = NX_MIRROR;
	} else if (n == 0) {
		if (x->total && x->pos < x->total) {
			slot_why(x, "the file ended after %" PRIu64 " of %" PRIu64 " bytes", x->pos, x->total);
			nx = NX_MIRROR;
		} else {
			nx = NX_DONE;
		}
	} else if (cap && (uint64_t)n > cap - MIN(cap, x->pos)) {
		/* It grew while we read it. */
		slot_why_too_big(x);
		nx = NX_RESTART;
	} else if (fatelf_fetch_batch_out_data(&b->out, x->g->id, x->pos, b->chunk, (size_t)n) < 0) {
		nx = NX_ABORT;
	} else {
		x->pos += (uint64_t)n;
		x->got = x->pos;
		return;
	}
end:
	slot_close_file(x);
	if (slot_advance(x, nx))
		slot_go(x);
}

static void batch_free(batch *b)
{
	for (unsigned i = 0; b->slots && i < b->n_slots; i++) {
		slot *x = &b->slots[i];

		if (x->in_multi)
			curl_multi_remove_handle(b->multi, x->easy);
		if (x->easy)
			curl_easy_cleanup(x->easy);
		slot_close_file(x);
		free(x->url);
		free(x->shown);
		fatelf_fetch_guard_reset(&x->guard);
		headers_free(&x->headers);
	}
	free(b->slots);
	for (unsigned i = 0; i < FATELF_FETCH_BATCH_MIRRORS_MAX; i++)
		secret_free(&b->auth[i]);
	free(b->accept);
	if (b->token_easy)
		curl_easy_cleanup(b->token_easy);
	if (b->multi)
		curl_multi_cleanup(b->multi);
	free(b->chunk);
	fatelf_fetch_batch_out_free(&b->out);
}

static int batch_loop(batch *b)
{
	for (;;) {
		bool files = false;
		CURLMsg *msg;
		CURLMcode mc;
		int running = 0, left;

		for (unsigned i = 0; i < b->n_slots && !b->error && !b->out.error; i++)
			while (!b->slots[i].g && b->next < b->in->n_gets && !b->error && !b->out.error)
				slot_start(&b->slots[i], &b->in->gets[b->next++]);
		if (b->error || b->out.error || b->active == 0)
			break;

		mc = curl_multi_perform(b->multi, &running);
		if (mc != CURLM_OK) {
			b->error = mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : -EIO;
			break;
		}
		while ((msg = curl_multi_info_read(b->multi, &left))) {
			CURL *easy = msg->easy_handle;
			CURLcode res = msg->data.result;
			slot *x = NULL;
			enum next nx;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
			/* msg is gone after this. */
			curl_multi_remove_handle(b->multi, easy);
			x->in_multi = false;
			nx = slot_finished(x, res);
			if (slot_advance(x, nx))
				slot_go(x);
			if (b->error || b->out.error)
				break;
		}
		for (unsigned i = 0; i < b->n_slots && !b->error && !b->out.error; i++) {
			slot *x = &b->slots[i];

			if (x->g && x->fd >= 0) {
				slot_file_step(x);
				files |= x->g && x->fd >= 0;
			}
		}
		if (b->error || fatelf_fetch_batch_out_flush(&b->out) < 0)
			break;
		/* A slot that ended may take the next get at once. */
		for (unsigned i = 0; i < b->n_slots; i++)
			files |= !b->slots[i].g && b->next < b->in->n_gets;
		/* Every get ended: nothing to wait for. */
		if (b->active == 0 && b->next >= b->in->n_gets)
			break;
		mc = curl_multi_poll(b->multi, NULL, 0, files ? 0 : BATCH_POLL_MS, NULL);
		if (mc != CURLM_OK) {
			b->error = -EIO;
			break;
		}
	}
	if (!b->error && !b->out.error)
		fatelf_fetch_batch_out_flush(&b->out);
	return b->error ? b->error : b->out.error;
}

int fatelf_fetch_batch_run(const fatelf_fetch_batch_input *in, const fatelf_fetch_opts *o,
			   unsigned parallel, int out_fd, fatelf_diag *d)
{
	batch b = { .in = in, .o = o };
	int r;

	if (parallel == 0)
		parallel = FATELF_FETCH_BATCH_PARALLEL_DEFAULT;
	parallel = MIN(parallel, FATELF_FETCH_BATCH_PARALLEL_MAX);
	if (in->n_gets && parallel > in->n_gets)
		parallel = (unsigned)in->n_gets;
	if (o->deny)
		b.deny = *o->deny;
	b.proxied = o->proxy && o->proxy[0];

	if (fatelf_fetch_curl_init() != CURLE_OK)
		return fatelf_diag_set(d, -ENOMEM, -1, "cannot initialize curl");
	r = fatelf_fetch_batch_out_init(&b.out, out_fd);
	b.multi = curl_multi_init();
	b.slots = calloc(parallel, sizeof(*b.slots));
	b.chunk = malloc(BATCH_FILE_CHUNK);
	if (r == 0 && in->n_accept)
		r = batch_accept_header(in, &b.accept);
	if (r < 0 || !b.multi || !b.slots || !b.chunk) {
		batch_free(&b);
		return fatelf_diag_oom(d);
	}
	curl_multi_setopt(b.multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	b.n_slots = parallel;
	for (unsigned i = 0; i < parallel; i++) {
		slot *x = &b.slots[i];

		x->b = &b;
		x->fd = -1;
		x->guard.deny = &b.deny;
		x->guard.exempt = &b.exempt[0];
		x->easy = curl_easy_init();
		if (!x->easy) {
			batch_free(&b);
			return fatelf_diag_oom(d);
		}
	}

	r = batch_loop(&b);
	if (r < 0) {
		if (r == -EPIPE)
			fatelf_diag_set(d, r, -1, "the reader of the output went away");
		else if (b.out.error)
			fatelf_diag_set(d, r, -1, "write error: %s", strerror(-r));
		else
			fatelf_diag_set(d, r, -1, "%s", strerror(-r));
		batch_free(&b);
		return r;
	}
	batch_free(&b);
	return b.failed ? 1 : 0;
}
