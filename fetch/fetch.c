/*
 * Downloads as a pull-style bundle byte source (see fetch.h). One curl
 * easy handle runs inside a multi handle so that read() can drive the
 * transfer a step at a time: it performs and polls until curl's write
 * callback has handed over one chunk, and returns that chunk. While the
 * consumer holds a chunk the callback pauses the transfer, so memory stays
 * at one curl chunk whatever the download size. Polls are short, so a
 * cancel flag set by another thread is seen within a fraction of a second
 * even while the server sends nothing.
 *
 * file:// URLs (allowed only when the caller says so) are read with plain
 * read(2) instead: curl's file protocol pushes the whole file through the
 * write callback inside one call and cannot be paused (curl 7.88 fails the
 * transfer with a write error), so it would need a buffer the size of the
 * file, which is what this module exists to avoid.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "fetch.h"
#include "macro.h"
#include "text.h"

/* How long one poll waits before the cancel flag is looked at again. */
#define FETCH_POLL_MS 150
/* Chunk size of file:// reads (curl hands out at most CURL_MAX_WRITE_SIZE). */
#define FETCH_FILE_CHUNK (64 * 1024)
#define FETCH_URL_SHOWN FATELF_FETCH_URL_SHOWN

struct fatelf_fetch {
	CURLM *multi;
	CURL *easy;
	int fd;                     /* file:// only, else -1 */
	bool is_file;
	bool started;
	bool done;                  /* the transfer ended (well or not) */
	bool paused;                /* the write callback paused the transfer */
	bool too_big;               /* the write callback saw max_bytes exceeded */
	int status;                 /* 0 or the sticky error */
	fatelf_diag diag;
	char *shown;                /* the URL as messages quote it (no credentials) */
	char *path;                 /* file:// only: the decoded path */

	/* The chunk curl delivered; handed out by read, valid until the next read. */
	uint8_t *buf;
	size_t len, cap;

	uint64_t bytes;
	uint64_t max_bytes;
	uint64_t length;            /* announced length, 0 when unknown */
	unsigned timeout_sec;
	unsigned deadline_sec;      /* 0: none */
	uint64_t min_rate;          /* 0: none */
	unsigned low_speed_sec;
	uint64_t opened_ms;         /* CLOCK_MONOTONIC, for the deadline */
	const atomic_int *cancel;
	char errbuf[CURL_ERROR_SIZE];

	/* The deny list, and the ranges of it that the first URL's host is
	 * in (the address that gave the first response, which can only be
	 * that host's). The guard checks connections once a response came. */
	fatelf_netranges deny;
	uint64_t exempt;
	fatelf_fetch_guard guard;
	bool https;                 /* the first URL is https: so is every hop */
};

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static CURLcode fetch_global_result = CURLE_FAILED_INIT;

/* curl_global_init is not thread-safe; the daemon may open downloads from
 * worker threads, so it runs exactly once. */
static void fetch_global_init(void)
{
	fetch_global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

CURLcode fatelf_fetch_curl_init(void)
{
	pthread_once(&fetch_once, fetch_global_init);
	return fetch_global_result;
}

static uint64_t fetch_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A URL curl could not parse is quoted as given; it may hold anything, and
 * the message ends up on one log line. */
static void fetch_quote(char *out, size_t size, const char *url)
{
	size_t i;

	for (i = 0; i + 1 < size && url[i]; i++)
		out[i] = (url[i] >= 0x20 && url[i] < 0x7f) ? url[i] : '?';
	out[i] = '\0';
}

static void curl_urlp(CURLU **u)
{
	if (*u)
		curl_url_cleanup(*u);
}

static void curl_freep(char **p)
{
	if (*p)
		curl_free(*p);
}

/* Records the first error of the transfer; later ones are its consequences. */
static int fetch_fail(fatelf_fetch *f, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fetch_fail(fatelf_fetch *f, int code, const char *fmt, ...)
{
	char what[384];
	va_list ap;

	if (f->status < 0)
		return f->status;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	f->status = fatelf_diag_set(&f->diag, code, -1, "%.*s%s: %s", FETCH_URL_SHOWN, f->shown,
				    strlen(f->shown) > FETCH_URL_SHOWN ? "..." : "", what);
	f->done = true;
	return f->status;
}

static size_t fetch_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	fatelf_fetch *f = userdata;
	size_t n = size * nmemb;

	if (n == 0)
		return 0;
	/* The consumer still holds the last chunk: curl keeps this one until
	 * read() unpauses, so at most one chunk is ever buffered here. */
	if (f->len > 0) {
		f->paused = true;
		return CURL_WRITEFUNC_PAUSE;
	}
	/* Also enforced here: a server may send no length, or lie about it. */
	if (f->max_bytes && (f->bytes > f->max_bytes || n > f->max_bytes - f->bytes)) {
		f->too_big = true;
		return 0;
	}
	if (GROW_ARRAY(f->buf, f->cap, n) < 0)
		return 0;
	memcpy(f->buf, ptr, n);
	f->len = n;
	f->bytes += n;
	return n;
}

/* The ranges of the deny list that hold the address curl is connected
 * to (text, as CURLINFO_PRIMARY_IP gives it). */
uint64_t fatelf_fetch_guard_primary_hits(const fatelf_fetch_guard *g)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	char *ip = NULL;

	if (!g->deny || !g->deny->n)
		return 0;
	if (curl_easy_getinfo(g->easy, CURLINFO_PRIMARY_IP, &ip) != CURLE_OK || !ip)
		return 0;
	if (inet_pton(AF_INET, ip, &a4.sin_addr) == 1)
		return fatelf_netranges_match(g->deny, (const struct sockaddr *)&a4, sizeof(a4));
	if (inet_pton(AF_INET6, ip, &a6.sin6_addr) == 1)
		return fatelf_netranges_match(g->deny, (const struct sockaddr *)&a6, sizeof(a6));
	return 0;
}

void fatelf_fetch_guard_reset(fatelf_fetch_guard *g)
{
	g->check = false;
	g->denied = false;
	g->denied_addr[0] = g->denied_range[0] = '\0';
	free(g->denied_url);
	g->denied_url = NULL;
}

/* The first header line of a response: from now on, every connection is
 * for a redirect's hop. The ranges exempt from the deny list are those of
 * the address that answered, not of every address the first host's name
 * gave: a name that lists 127.0.0.1 where nothing listens, then a public
 * server, would otherwise open the loopback to that server's redirects. */
static size_t fetch_header_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	fatelf_fetch *f = userdata;

	(void)ptr;
	if (!f->guard.check && f->deny.n)
		f->exempt = fatelf_fetch_guard_primary_hits(&f->guard);
	f->guard.check = true;
	return size * nmemb;
}

static void fetch_note_denied(fatelf_fetch_guard *g, const struct curl_sockaddr *a, uint64_t hits)
{
	const void *addr = a->family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)&a->addr)->sin6_addr
						 : (const void *)&((const struct sockaddr_in *)&a->addr)->sin_addr;
	char *url = NULL;
	unsigned i = 0;

	if (g->denied)
		return;
	g->denied = true;
	if (!inet_ntop(a->family, addr, g->denied_addr, sizeof(g->denied_addr)))
		snprintf(g->denied_addr, sizeof(g->denied_addr), "?");
	else if (fatelf_netrange_is_unspecified(&a->addr, a->addrlen))
		snprintf(g->denied_addr, sizeof(g->denied_addr), "%s (this host)",
			 a->family == AF_INET6 ? "::" : "0.0.0.0");
	while (i + 1 < FATELF_NETRANGES_MAX && !(hits & ((uint64_t)1 << i)))
		i++;
	fatelf_netrange_format(&g->deny->v[i], g->denied_range);
	/* curl has moved to the hop's URL before it connects. */
	free(g->denied_url);
	g->denied_url = NULL;
	if (curl_easy_getinfo(g->easy, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url)
		g->denied_url = fatelf_text_url_redact(url);
}

/* Every connection curl makes, to the address it resolved: the deny list
 * is checked here rather than on names, so a name that resolves to
 * another address by the time of the connection (DNS rebinding) gains
 * nothing. */
static curl_socket_t fetch_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
	fatelf_fetch_guard *g = clientp;

	/* Before the first response, every connection is to the first URL's
	 * host, which the admin chose. */
	if (purpose == CURLSOCKTYPE_IPCXN && g->deny && g->deny->n && g->check) {
		uint64_t exempt = g->exempt ? *g->exempt : 0;
		uint64_t hits = fatelf_netranges_match(g->deny, &a->addr, a->addrlen);

		if (hits & ~exempt) {
			fetch_note_denied(g, a, hits & ~exempt);
			return CURL_SOCKET_BAD;
		}
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

void fatelf_fetch_url_clear(fatelf_fetch_url *u)
{
	free(u->full);
	free(u->shown);
	free(u->path);
	*u = (fatelf_fetch_url){ 0 };
}

static int fetch_url_parse(const char *url, bool allow_file, fatelf_fetch_url *ret, fatelf_diag *d)
{
	_cleanup_(curl_urlp) CURLU *u = curl_url();
	_cleanup_(curl_freep) char *scheme = NULL, *full = NULL, *host = NULL, *path = NULL;
	_cleanup_free_ char *shown = NULL;
	const char *accepted = allow_file ? "only http, https and file URLs are accepted"
					  : "only http and https URLs are accepted";
	char quoted[FETCH_URL_SHOWN + 1];
	CURLUcode uc;

	if (!u)
		return fatelf_diag_oom(d);
	/* No scheme guessing: "example.org/x" is not taken for http. */
	uc = curl_url_set(u, CURLUPART_URL, url, 0);
	if (uc == CURLUE_OK)
		uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	if (uc != CURLUE_OK) {
		_cleanup_free_ char *redacted = fatelf_text_url_redact(url);

		if (!redacted)
			return fatelf_diag_oom(d);
		fetch_quote(quoted, sizeof(quoted), redacted);
		/* A bad port or host is not a matter of the scheme. */
		if (uc != CURLUE_UNSUPPORTED_SCHEME && uc != CURLUE_NO_SCHEME && uc != CURLUE_BAD_SCHEME)
			return fatelf_diag_set(d, -EINVAL, -1, "%s: not a valid URL (%s)", quoted,
					       curl_url_strerror(uc));
		return fatelf_diag_set(d, -EINVAL, -1, "%s: %s (%s)", quoted, accepted,
				       curl_url_strerror(uc));
	}
	if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
		return fatelf_diag_oom(d);

	/* Messages and logs quote the URL; its credentials must not end up there. */
	shown = fatelf_text_url_redact(full);
	if (!shown)
		return fatelf_diag_oom(d);

	/* curl lowercases the scheme. */
	if (strcmp(scheme, "file") == 0) {
		if (!allow_file)
			return fatelf_diag_set(d, -EINVAL, -1, "%.*s: file URLs are not allowed here",
					       FETCH_URL_SHOWN, shown);
		uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
		if (uc == CURLUE_OK && host[0] && strcmp(host, "localhost") != 0)
			return fatelf_diag_set(d, -EINVAL, -1,
					       "%.*s: a file URL must not name another host",
					       FETCH_URL_SHOWN, shown);
		/* Decoding refuses %00, so the path is a C string as the URL meant it. */
		uc = curl_url_get(u, CURLUPART_PATH, &path, CURLU_URLDECODE);
		if (uc != CURLUE_OK || path[0] != '/')
			return fatelf_diag_set(d, -EINVAL, -1, "%.*s: bad file URL path",
					       FETCH_URL_SHOWN, shown);
		ret->is_file = true;
		ret->path = strdup(path);
		if (!ret->path)
			return fatelf_diag_oom(d);
	} else if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
		return fatelf_diag_set(d, -EINVAL, -1, "%.*s: %s", FETCH_URL_SHOWN, shown, accepted);
	}
	ret->https = strcmp(scheme, "https") == 0;

	ret->shown = TAKE_PTR(shown);
	ret->full = strdup(full);
	if (!ret->full)
		return fatelf_diag_oom(d);
	return 0;
}

int fatelf_fetch_url_check(const char *url, bool allow_file, fatelf_fetch_url *ret, fatelf_diag *d)
{
	int r;

	*ret = (fatelf_fetch_url){ 0 };
	r = fetch_url_parse(url, allow_file, ret, d);
	if (r < 0)
		fatelf_fetch_url_clear(ret);
	return r;
}

static int fetch_url_check(fatelf_fetch *f, const char *url, bool allow_file, char **ret_url,
			   fatelf_diag *d)
{
	fatelf_fetch_url u = { 0 };
	int r = fatelf_fetch_url_check(url, allow_file, &u, d);

	f->is_file = u.is_file;
	f->https = u.https;
	f->path = TAKE_PTR(u.path);
	f->shown = TAKE_PTR(u.shown);
	*ret_url = TAKE_PTR(u.full);
	fatelf_fetch_url_clear(&u);
	return r;
}

CURLcode fatelf_fetch_setopt_common(CURL *easy, const fatelf_fetch_opts *o, bool https,
				    fatelf_fetch_guard *g)
{
	unsigned timeout_sec = o->timeout_sec ? o->timeout_sec : 60;
	unsigned low_speed_sec = o->low_speed_sec ? o->low_speed_sec : 30;
	CURLcode c = CURLE_OK;

#define SETOPT(opt, val) do { if (c == CURLE_OK) c = curl_easy_setopt(easy, opt, val); } while (0)
	/* Never a redirect to file:// (that would read the daemon's files for a
	 * remote server), and http/https only for the first URL too. */
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	/* ... and no step down from https to http, where anyone on the way
	 * could answer for the server. */
	SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
	if (o->cainfo)
		SETOPT(CURLOPT_CAINFO, o->cainfo);
	/* Only the proxy the admin configured, never one from the
	 * environment: the deny list would meet that proxy's address, and the
	 * proxy would connect anywhere. */
	SETOPT(CURLOPT_PROXY, o->proxy ? o->proxy : "");
	SETOPT(CURLOPT_FOLLOWLOCATION, 1L);
	SETOPT(CURLOPT_MAXREDIRS, 5L);
	SETOPT(CURLOPT_FAILONERROR, 1L);
	/* A source that sends nothing for timeout_sec fails rather than hanging
	 * the transaction forever. */
	SETOPT(CURLOPT_CONNECTTIMEOUT, (long)timeout_sec);
	if (o->min_rate) {
		/* ... and one that drips bytes fails too: below the minimum
		 * rate for low_speed_sec, or past the deadline whatever it sends. */
		SETOPT(CURLOPT_LOW_SPEED_LIMIT, (long)MIN(o->min_rate, (uint64_t)LONG_MAX));
		SETOPT(CURLOPT_LOW_SPEED_TIME, (long)low_speed_sec);
	} else {
		SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
		SETOPT(CURLOPT_LOW_SPEED_TIME, (long)timeout_sec);
	}
	if (g && g->deny && g->deny->n) {
		g->easy = easy;
		SETOPT(CURLOPT_OPENSOCKETFUNCTION, fetch_open_socket);
		SETOPT(CURLOPT_OPENSOCKETDATA, g);
	}
	/* The daemon is threaded; curl must not use signals for DNS timeouts. */
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_USERAGENT, "fatelf/" PACKAGE_VERSION);
#undef SETOPT
	return c;
}

static int fetch_curl_setup(fatelf_fetch *f, const fatelf_fetch_opts *o, const char *url,
			    fatelf_diag *d)
{
	CURLcode c = CURLE_OK;
	CURLMcode mc;

	if (fatelf_fetch_curl_init() != CURLE_OK)
		return fatelf_diag_set(d, -ENOMEM, -1, "%.*s: cannot initialize curl: %s",
				       FETCH_URL_SHOWN, f->shown,
				       curl_easy_strerror(fetch_global_result));
	f->multi = curl_multi_init();
	f->easy = curl_easy_init();
	if (!f->multi || !f->easy)
		return fatelf_diag_oom(d);

	f->guard.deny = &f->deny;
	f->guard.exempt = &f->exempt;
	c = fatelf_fetch_setopt_common(f->easy, o, f->https, &f->guard);
#define SETOPT(opt, val) do { if (c == CURLE_OK) c = curl_easy_setopt(f->easy, opt, val); } while (0)
	SETOPT(CURLOPT_URL, url);
	if (f->deadline_sec)
		SETOPT(CURLOPT_TIMEOUT, (long)f->deadline_sec);
	SETOPT(CURLOPT_HEADERFUNCTION, fetch_header_cb);
	SETOPT(CURLOPT_HEADERDATA, f);
	if (f->max_bytes)
		SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)MIN(f->max_bytes, (uint64_t)INT64_MAX));
	SETOPT(CURLOPT_ERRORBUFFER, f->errbuf);
	SETOPT(CURLOPT_WRITEFUNCTION, fetch_write_cb);
	SETOPT(CURLOPT_WRITEDATA, f);
#undef SETOPT
	if (c != CURLE_OK)
		return fatelf_diag_set(d, -EINVAL, -1, "%.*s: %s", FETCH_URL_SHOWN, f->shown,
				       curl_easy_strerror(c));
	mc = curl_multi_add_handle(f->multi, f->easy);
	if (mc != CURLM_OK)
		return fatelf_diag_set(d, -ENOMEM, -1, "%.*s: %s", FETCH_URL_SHOWN, f->shown,
				       curl_multi_strerror(mc));
	f->started = true;
	return 0;
}

int fatelf_fetch_open(const char *url, const fatelf_fetch_opts *o, fatelf_fetch **ret,
		      fatelf_diag *d)
{
	static const fatelf_fetch_opts defaults;
	_cleanup_free_ char *full = NULL;
	fatelf_fetch *f;
	int r;

	if (!url || !ret)
		return fatelf_diag_set(d, -EINVAL, -1, "no URL");
	if (!o)
		o = &defaults;
	f = calloc(1, sizeof(*f));
	if (!f)
		return fatelf_diag_oom(d);
	f->fd = -1;
	f->max_bytes = o->max_bytes;
	f->timeout_sec = o->timeout_sec ? o->timeout_sec : 60;
	f->deadline_sec = o->deadline_sec;
	f->min_rate = o->min_rate;
	f->low_speed_sec = o->low_speed_sec ? o->low_speed_sec : 30;
	if (o->deny)
		f->deny = *o->deny;
	f->opened_ms = fetch_now_ms();
	f->cancel = o->cancel;
	fatelf_diag_clear(&f->diag);

	r = fetch_url_check(f, url, o->allow_file, &full, d);
	if (r == 0 && !f->is_file)
		r = fetch_curl_setup(f, o, full, d);
	if (r < 0) {
		fatelf_fetch_close(f);
		return r;
	}
	*ret = f;
	return 0;
}

static bool fetch_cancelled(const fatelf_fetch *f)
{
	return f->cancel && atomic_load(f->cancel);
}

static bool fetch_past_deadline(const fatelf_fetch *f, uint64_t slack_ms)
{
	return f->deadline_sec && fetch_now_ms() - f->opened_ms + slack_ms >= (uint64_t)f->deadline_sec * 1000;
}

static int fetch_fail_deadline(fatelf_fetch *f)
{
	return fetch_fail(f, -EIO, "the download did not end within its deadline of %u s "
			  "(%" PRIu64 " bytes received)", f->deadline_sec, f->bytes);
}

/* The reason phrase of the statuses a mirror commonly answers. */
const char *fatelf_fetch_http_reason(long status)
{
	switch (status) {
	case 400: return " Bad Request";
	case 401: return " Unauthorized";
	case 403: return " Forbidden";
	case 404: return " Not Found";
	case 410: return " Gone";
	case 416: return " Range Not Satisfiable";
	case 429: return " Too Many Requests";
	case 500: return " Internal Server Error";
	case 502: return " Bad Gateway";
	case 503: return " Service Unavailable";
	case 504: return " Gateway Timeout";
	}
	return "";
}

/* Turns curl's final word on the transfer into our status. */
static void fetch_finish(fatelf_fetch *f, CURLcode res)
{
	long http = 0;

	if (res == CURLE_OK) {
		f->done = true;
		return;
	}
	if (f->too_big || res == CURLE_FILESIZE_EXCEEDED) {
		fetch_fail(f, -EFBIG, "the download is larger than the limit of %" PRIu64 " bytes",
			   f->max_bytes);
		return;
	}
	/* A refused socket is curl's "could not connect"; a hop that had
	 * another address to go to ended for another reason. */
	if (f->guard.denied && res == CURLE_COULDNT_CONNECT) {
		const fatelf_fetch_guard *g = &f->guard;

		fetch_fail(f, -EIO, "redirected to %.*s%s: %s is in a denied network (%s)",
			   FETCH_URL_SHOWN / 2, g->denied_url ? g->denied_url : "?",
			   g->denied_url && strlen(g->denied_url) > FETCH_URL_SHOWN / 2 ? "..." : "",
			   g->denied_addr, g->denied_range);
		return;
	}
	if (res == CURLE_OPERATION_TIMEDOUT && fetch_past_deadline(f, 1000)) {
		fetch_fail_deadline(f);
		return;
	}
	if (res == CURLE_OPERATION_TIMEDOUT && f->min_rate && strstr(f->errbuf, "too slow")) {
		fetch_fail(f, -EIO, "slower than %" PRIu64 " bytes/s for %u s (%" PRIu64 " bytes received)",
			   f->min_rate, f->low_speed_sec, f->bytes);
		return;
	}
	curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &http);
	if (res == CURLE_UNSUPPORTED_PROTOCOL && http >= 300 && http < 400) {
		char *loc = NULL;
		_cleanup_free_ char *shown = NULL;

		/* curl has moved to the hop's URL when it refuses its scheme. */
		if (curl_easy_getinfo(f->easy, CURLINFO_EFFECTIVE_URL, &loc) == CURLE_OK && loc)
			shown = fatelf_text_url_redact(loc);
		fetch_fail(f, -EIO, "redirected to %.*s%s: %s", FETCH_URL_SHOWN / 2, shown ? shown : "?",
			   shown && strlen(shown) > FETCH_URL_SHOWN / 2 ? "..." : "",
			   f->https ? "a download from https follows redirects to https only"
				    : "only redirects to http and https are followed");
		return;
	}
	/* curl's own text for this ("The requested URL returned error: 404")
	 * only repeats the status. */
	if (res == CURLE_HTTP_RETURNED_ERROR && http >= 400)
		fetch_fail(f, -EIO, "the server answered HTTP %ld%s", http, fatelf_fetch_http_reason(http));
	else if (http >= 300)
		fetch_fail(f, -EIO, "%s (HTTP %ld)", f->errbuf[0] ? f->errbuf : curl_easy_strerror(res),
			   http);
	else
		fetch_fail(f, -EIO, "%s", f->errbuf[0] ? f->errbuf : curl_easy_strerror(res));
}

static ssize_t fetch_read_file(fatelf_fetch *f, const void **ret_buf)
{
	struct stat st;
	ssize_t n;

	if (f->fd < 0) {
		/* O_NONBLOCK so that a FIFO cannot hang the open; it is refused below. */
		f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (f->fd < 0)
			return fetch_fail(f, -EIO, "cannot open: %s", strerror(errno));
		if (fstat(f->fd, &st) < 0)
			return fetch_fail(f, -EIO, "cannot open: %s", strerror(errno));
		if (!S_ISREG(st.st_mode))
			return fetch_fail(f, -EIO, "not a regular file");
		if (f->max_bytes && (uint64_t)st.st_size > f->max_bytes)
			return fetch_fail(f, -EFBIG,
					  "the download is larger than the limit of %" PRIu64 " bytes",
					  f->max_bytes);
		f->length = (uint64_t)st.st_size;
		f->buf = malloc(FETCH_FILE_CHUNK);
		if (!f->buf)
			return fetch_fail(f, -ENOMEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
		f->cap = FETCH_FILE_CHUNK;
	}
	do
		n = read(f->fd, f->buf, f->cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fetch_fail(f, -EIO, "read error: %s", strerror(errno));
	if (n == 0) {
		f->done = true;
		return 0;
	}
	/* The file may grow while we read it. */
	if (f->max_bytes && (uint64_t)n > f->max_bytes - f->bytes)
		return fetch_fail(f, -EFBIG, "the download is larger than the limit of %" PRIu64 " bytes",
				  f->max_bytes);
	f->bytes += (uint64_t)n;
	*ret_buf = f->buf;
	return n;
}

static ssize_t fetch_read(void *ctx, const void **ret_buf)
{
	fatelf_fetch *f = ctx;

	/* The consumer is done with the chunk handed out last time. */
	f->len = 0;
	if (f->status < 0)
		return f->status;
	if (fetch_cancelled(f))
		return fetch_fail(f, -ECANCELED, "cancelled");
	if (f->is_file)
		return f->done ? 0 : fetch_read_file(f, ret_buf);

	if (f->paused) {
		CURLcode c;

		f->paused = false;
		/* Unpausing may call the write callback right away with the chunk
		 * curl held back, and so may fail the way a transfer does (the
		 * size limit, say); a chunk it delivered first still goes out. */
		c = curl_easy_pause(f->easy, CURLPAUSE_CONT);
		if (c != CURLE_OK)
			fetch_finish(f, c);
	}

	/* The time the consumer spends between reads is not the server's. */
	uint64_t since = fetch_now_ms();

	for (;;) {
		CURLMsg *msg;
		CURLMcode mc;
		int running = 0, left;

		/* Bytes before the end: a failure after them is reported on the
		 * next call, so the consumer sees every byte that arrived. */
		if (f->len > 0) {
			*ret_buf = f->buf;
			return (ssize_t)f->len;
		}
		if (f->status < 0)
			return f->status;
		if (f->done)
			return 0;
		if (fetch_cancelled(f))
			return fetch_fail(f, -ECANCELED, "cancelled");

		mc = curl_multi_perform(f->multi, &running);
		if (mc != CURLM_OK)
			return fetch_fail(f, -EIO, "%s", curl_multi_strerror(mc));
		while ((msg = curl_multi_info_read(f->multi, &left)))
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == f->easy)
				fetch_finish(f, msg->data.result);
		if (f->len > 0 || f->done || f->status < 0)
			continue;
		if (!running) {
			/* Not running and no DONE message: should not happen, but
			 * never spin on it. */
			return fetch_fail(f, -EIO, "the transfer stopped without a result");
		}
		/* curl's own low-speed check averages over several seconds; this
		 * holds the promise of fetch.h: no byte for timeout_sec fails. */
		if (fetch_now_ms() - since >= (uint64_t)f->timeout_sec * 1000)
			return fetch_fail(f, -EIO, "no data for %u seconds", f->timeout_sec);
		/* curl's own timer does not run while the transfer is paused. */
		if (fetch_past_deadline(f, 0))
			return fetch_fail_deadline(f);
		mc = curl_multi_poll(f->multi, NULL, 0, FETCH_POLL_MS, NULL);
		if (mc != CURLM_OK)
			return fetch_fail(f, -EIO, "%s", curl_multi_strerror(mc));
	}
}

void fatelf_fetch_source(fatelf_fetch *f, fatelf_reader *ret)
{
	*ret = (fatelf_reader){ .read = fetch_read, .ctx = f };
}

/*
 * An error when the transfer failed or was cancelled; 0 otherwise, which
 * includes a consumer that stopped reading before the end (the bundle
 * reader may stop at the archive's end marker, or on its own error, which
 * is then the one to report).
 */
int fatelf_fetch_status(fatelf_fetch *f, fatelf_diag *d)
{
	if (f->status < 0) {
		if (d)
			*d = f->diag;
		return f->status;
	}
	return 0;
}

uint64_t fatelf_fetch_bytes(const fatelf_fetch *f)
{
	return f->bytes;
}

uint64_t fatelf_fetch_length(const fatelf_fetch *f)
{
	curl_off_t cl = -1;

	if (f->is_file || !f->easy)
		return f->length;
	/* Before the first body byte the headers may still be a redirect's. */
	if (f->bytes == 0 && !f->done)
		return 0;
	if (curl_easy_getinfo(f->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK || cl < 0)
		return 0;
	return (uint64_t)cl;
}

fatelf_fetch *fatelf_fetch_close(fatelf_fetch *f)
{
	if (!f)
		return NULL;
	if (f->multi && f->easy && f->started)
		curl_multi_remove_handle(f->multi, f->easy);
	if (f->easy)
		curl_easy_cleanup(f->easy);
	if (f->multi)
		curl_multi_cleanup(f->multi);
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f->shown);
	free(f->path);
	fatelf_fetch_guard_reset(&f->guard);
	free(f);
	return NULL;
}
