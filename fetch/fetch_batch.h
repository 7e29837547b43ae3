/*
 * fatelf-fetch --batch: the objects of a repository install, many in one
 * process, from a list of mirrors, as framed binary on stdout.
 *
 * Invocation:
 *
 *   fatelf-fetch --batch [--parallel N] [--timeout SEC] [--deadline SEC]
 *                [--min-rate N] [--low-speed-time SEC] [--max-bytes N]
 *                [--deny-networks LIST] [--proxy URL] [--allow-file]
 *
 * Standard input (written whole by fatelfd, then closed; URLs come here
 * and never on the command line, which every local user can read, since
 * a mirror's URL may carry credentials). ASCII lines, each ended by "\n",
 * fields separated by one space:
 *
 *   mirror <base-url>                  1 to 16 of them, first; tried in
 *                                      this order
 *   accept <media-type>                0 to 8, before the first get
 *   basic <base64>                     at most one, before the first get
 *                                      (accept and basic lines may also
 *                                      come before or among the mirrors)
 *   get <id> <relative-path> <size>    then at most 1,000,000 of these
 *
 *   - base-url: http, https, or file with --allow-file (no other host);
 *     no query and no fragment. An object's URL is base-url, a "/" when
 *     base-url does not end with one, and relative-path.
 *   - media-type: [A-Za-z0-9.+/-]+, at most 127 bytes, one "/" with bytes
 *     on both sides of it; each once. With any, every HTTP request of the
 *     batch sends "Accept: <t1>, <t2>, ..." in the order given (an OCI
 *     registry returns an image index or manifest only to a request that
 *     accepts its type).
 *   - base64: an OCI registry's credentials, USER:PASSWORD in base64
 *     (standard alphabet, with its padding, at most 1024 bytes); the
 *     decoded bytes hold a ":" and no control character. Used only as
 *     registry auth asks for it (below), never shown.
 *   - id: decimal without leading zeros, 0 to 2^31; each id once.
 *   - relative-path: [a-zA-Z0-9._/:-]+, at most 4096 bytes, not starting
 *     with "/" or ":", no ".." component (a registry's paths:
 *     "v2/NAME/blobs/sha256:<hex>", "v2/NAME/manifests/<tag or digest>").
 *   - size: the object's bytes, decimal without leading zeros, at most
 *     2^63-1; 0: not known.
 *
 * Anything else (an unknown keyword, an empty line, a control character,
 * a line longer than 16 KiB or without its "\n", a mirror, an accept or a
 * basic after a get, a refused URL) is refused before any transfer: exit
 * 2 and one line on stderr that names the line (and a URL only without
 * its credentials, a basic line never with its argument). Nothing is
 * written to stdout before stdin has ended.
 *
 * Standard output, one writer, frames of different ids interleaved:
 *
 *   data <id> <offset> <len>\n<len bytes>
 *       bytes of the object, to be written at offset (pwrite). After a
 *       resume, offsets continue where the object's bytes stopped; when a
 *       server answers a range request with the whole object, data starts
 *       again at offset 0, and the bytes that follow replace the earlier
 *       ones. With a size, offset + len never exceeds it.
 *   done <id> <total>\n
 *       the object is complete: bytes 0 to total-1 are its content.
 *   fail <id> <code> <text>\n
 *       the object could not be fetched from any mirror: code is the HTTP
 *       status of the last answer (0 when there was none, as for a
 *       connection that failed), text one line of printable ASCII that
 *       names the last URL tried, without its credentials, and why.
 *
 * Every get ends in exactly one done or fail. Exit status: 0 every get
 * ended in done; 1 at least one ended in fail (or the reader of stdout
 * went away); 2 usage, or input refused; 3 system error.
 *
 * Transfers: up to N at a time (default 6, at most 64) on one curl multi
 * handle, so connections are kept alive and reused, and HTTP/2 multiplexes
 * over https. Each transfer follows the rules of one download (fetch.h):
 * http and https only, redirects never to file: nor from https down to
 * http, the proxy, the CA bundle, the silence timeout and the minimum
 * rate. Per object:
 *
 *   - a transfer that breaks (connection reset or closed early, nothing
 *     for --timeout seconds after an answer, a body shorter than its
 *     length) is retried on the same mirror up to 3 times, from the bytes
 *     already received ("Range: bytes=<got>-"); a 206 continues, a 200
 *     starts again from 0;
 *   - a mirror that answers 4xx or 5xx, cannot be reached, is refused by
 *     the deny list, is slower than --min-rate or used up its retries,
 *     gives way to the next mirror, which resumes from the bytes received;
 *   - a body longer than a non-zero size (or than --max-bytes when the
 *     size is not known), or a length announced that is not the size,
 *     gives way to the next mirror from offset 0; its excess never reaches
 *     stdout;
 *   - --deadline bounds the object as a whole, from its first request,
 *     over every mirror: past it the object fails.
 *
 * The deny list (--deny-networks) follows the rule of one download for
 * each mirror, as each is a URL root configured: a mirror's own requests
 * are always allowed; a redirect's hop is refused when its address is in
 * a denied range that mirror's host is not in, as learned from the
 * addresses that answered for it. Through --proxy, as for one download,
 * the list sees only the proxy's address.
 *
 * Registry auth (OCI distribution), per http or https mirror: a 401 from
 * the mirror itself (not from a redirect's hop) with a WWW-Authenticate
 * challenge (the last one of that answer) is met by the helper:
 *
 *   - Bearer realm="...",service="...",scope="...": a GET of the realm
 *     with "?service=...&scope=..." (those present, URL-encoded; "&" when
 *     the realm has a query already), with the basic credentials, when
 *     given, as HTTP Basic; its JSON reply (at most 64 KiB) holds the
 *     token, sent as "Authorization: Bearer <token>". The realm is https,
 *     or http when the mirror is http; its connection is a redirect's hop
 *     of that mirror for the deny list, through the same proxy, CA bundle
 *     and timeouts (and within the deadline);
 *   - Basic: "Authorization: Basic <base64>" when a basic line was given;
 *     without one, the mirror fails the object with code 401, "the
 *     registry wants credentials (HTTP 401)".
 *
 * The same get is then asked again on that mirror (not one of its 3
 * retries), and the authorization is kept for the mirror: every later
 * request to it sends it at once, so a batch makes one token request, not
 * one per object. When a request that carried it is answered 401, a fresh
 * token is asked for once for that get; another 401 fails the mirror for
 * it with code 401, "the registry refused the credentials (HTTP 401)". A
 * token service that refuses the credentials does the same. The
 * Authorization header goes to the mirror's own host and port alone,
 * never to a redirect's other host (a registry's blob storage), and
 * neither the credentials nor a token appear in a fail frame, on stderr,
 * or anywhere on stdout but in the bodies that servers send.
 *
 * file: mirrors (--allow-file) are read directly, with the same frames;
 * a missing or short file gives way to the next mirror.
 */
#ifndef FATELF_FETCH_BATCH_H
#define FATELF_FETCH_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch.h"

#define FATELF_FETCH_BATCH_MIRRORS_MAX 16
#define FATELF_FETCH_BATCH_GETS_MAX 1000000
#define FATELF_FETCH_BATCH_ID_MAX ((uint32_t)1 << 31)
#define FATELF_FETCH_BATCH_PATH_MAX 4096
#define FATELF_FETCH_BATCH_LINE_MAX 16384
#define FATELF_FETCH_BATCH_ACCEPT_MAX 8
#define FATELF_FETCH_BATCH_MEDIA_TYPE_MAX 127
#define FATELF_FETCH_BATCH_BASIC_MAX 1024
/* A token service's reply, at most. */
#define FATELF_FETCH_BATCH_TOKEN_REPLY_MAX (64 * 1024)
#define FATELF_FETCH_BATCH_PARALLEL_DEFAULT 6
#define FATELF_FETCH_BATCH_PARALLEL_MAX 64
/* Retries of a broken transfer on one mirror. */
#define FATELF_FETCH_BATCH_RETRIES 3
/* A data or done frame's header line, its "\n" and a NUL. */
#define FATELF_FETCH_BATCH_HEAD_MAX 64
/* A fail frame's text, at most (longer text is cut). */
#define FATELF_FETCH_BATCH_TEXT_MAX 1024
/* A whole fail frame and a NUL. */
#define FATELF_FETCH_BATCH_FAIL_MAX (FATELF_FETCH_BATCH_TEXT_MAX + FATELF_FETCH_BATCH_HEAD_MAX)

/* ------------------------------------------------------------ stdin */

typedef struct fatelf_fetch_batch_get {
	uint32_t id;
	uint64_t size;              /* 0: not known */
	size_t path;                /* offset of the path (NUL-terminated) in the input's pool */
} fatelf_fetch_batch_get;

typedef struct fatelf_fetch_batch_input {
	bool allow_file;            /* file: mirrors; set before the first line */
	fatelf_fetch_url mirrors[FATELF_FETCH_BATCH_MIRRORS_MAX];
	size_t n_mirrors;
	/* accept lines, in their order */
	char accept[FATELF_FETCH_BATCH_ACCEPT_MAX][FATELF_FETCH_BATCH_MEDIA_TYPE_MAX + 1];
	size_t n_accept;
	char *basic;                /* the basic line's base64; NULL: none (wiped when freed) */
	fatelf_fetch_batch_get *gets;
	size_t n_gets, cap_gets;
	char *pool;                 /* the paths */
	size_t pool_len, pool_cap;
	unsigned long line;         /* lines taken so far */
} fatelf_fetch_batch_input;

void fatelf_fetch_batch_input_init(fatelf_fetch_batch_input *in, bool allow_file);
void fatelf_fetch_batch_input_free(fatelf_fetch_batch_input *in);
/* One line, without its "\n". -EINVAL for a line refused, with d saying
 * why ("line N: ..."); -ENOMEM. */
int fatelf_fetch_batch_input_line(fatelf_fetch_batch_input *in, const char *line, size_t len,
				  fatelf_diag *d);
/* After the last line: at least one mirror, each id once. */
int fatelf_fetch_batch_input_end(fatelf_fetch_batch_input *in, fatelf_diag *d);
/* The whole input from fd, to its end: lines, then the end's checks.
 * -EINVAL for input refused (d says why), -errno for a read error. */
int fatelf_fetch_batch_input_read(fatelf_fetch_batch_input *in, int fd, fatelf_diag *d);

static inline const char *fatelf_fetch_batch_path(const fatelf_fetch_batch_input *in,
						  const fatelf_fetch_batch_get *g)
{
	return in->pool + g->path;
}

/* ------------------------------------------------------------ stdout */

/* Frame encoding; each returns the bytes written to buf (no NUL counted).
 * A fail frame's text is made one line: every byte that is not printable
 * ASCII becomes '?', and text past FATELF_FETCH_BATCH_TEXT_MAX is cut. */
size_t fatelf_fetch_batch_head_data(char buf[FATELF_FETCH_BATCH_HEAD_MAX], uint32_t id,
				    uint64_t offset, uint64_t len);
size_t fatelf_fetch_batch_head_done(char buf[FATELF_FETCH_BATCH_HEAD_MAX], uint32_t id,
				    uint64_t total);
size_t fatelf_fetch_batch_line_fail(char buf[FATELF_FETCH_BATCH_FAIL_MAX], uint32_t id, long code,
				    const char *text);

/* The one writer of frames: buffered, flushed by the caller (before it
 * waits) or when full. The first write error sticks (-EPIPE: the reader
 * went away) and every later call returns it. */
typedef struct fatelf_fetch_batch_out {
	int fd;
	int error;
	uint8_t *buf;
	size_t len, cap;
} fatelf_fetch_batch_out;

int fatelf_fetch_batch_out_init(fatelf_fetch_batch_out *out, int fd);
void fatelf_fetch_batch_out_free(fatelf_fetch_batch_out *out);
int fatelf_fetch_batch_out_data(fatelf_fetch_batch_out *out, uint32_t id, uint64_t offset,
				const void *buf, size_t len);
int fatelf_fetch_batch_out_done(fatelf_fetch_batch_out *out, uint32_t id, uint64_t total);
int fatelf_fetch_batch_out_fail(fatelf_fetch_batch_out *out, uint32_t id, long code,
				const char *text);
int fatelf_fetch_batch_out_flush(fatelf_fetch_batch_out *out);

/* ------------------------------------------------------------ the transfers */

/*
 * Fetches every get of in, parallel at a time (0: the default), under
 * o's limits (o->max_bytes bounds an object whose size is not known;
 * o->deadline_sec each object), and writes the frames to out_fd. 0: every
 * get ended in done; 1: some in fail; <0: a system error, or the output's
 * (-EPIPE: its reader went away), with d.
 */
int fatelf_fetch_batch_run(const fatelf_fetch_batch_input *in, const fatelf_fetch_opts *o,
			   unsigned parallel, int out_fd, fatelf_diag *d);

#endif
