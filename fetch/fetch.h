/*
 * Downloads as a bundle byte source: an http, https or file URL fetched
 * with libcurl and handed to the bundle reader as it arrives, with no
 * temporary copy. The reader pulls (fatelf_reader.read); the
 * fetcher drives a curl multi handle until it has bytes, so memory stays
 * bounded by curl's own buffer. A transfer that fails, ends early, sends
 * nothing for the timeout, runs past its deadline, stays below the minimum
 * rate or connects into a denied network fails the read with -EIO and a
 * message that names the URL (without credentials) and the rule or what
 * curl said.
 */
#ifndef FATELF_FETCH_H
#define FATELF_FETCH_H

#include <curl/curl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bundle.h"
#include "netrange.h"

typedef struct fatelf_fetch fatelf_fetch;

typedef struct fatelf_fetch_opts {
	bool allow_file;            /* file:// URLs (fatelfd allows them for uid 0 only) */
	unsigned timeout_sec;       /* no byte for this long fails the transfer; 0: 60 */
	uint64_t max_bytes;         /* 0: no limit */
	const atomic_int *cancel;   /* when non-NULL and set, the read fails with -ECANCELED */
	/* A server that drips bytes: the transfer as a whole must end within
	 * deadline_sec, and may not stay slower than min_rate bytes a second
	 * for low_speed_sec (0: 30). 0: no deadline, no minimum rate. */
	unsigned deadline_sec;
	uint64_t min_rate;
	unsigned low_speed_sec;
	/* No connection into these networks, the redirects' included, except
	 * into the ones that the first URL's host is in itself (so a URL on
	 * 127.0.0.1 still works). Checked on the address each connection
	 * goes to, after name resolution. NULL: none. */
	const fatelf_netranges *deny;
	/* The proxy every connection goes through; NULL or "": none, not even
	 * one from the environment. Through a proxy the deny list sees only
	 * the proxy's address: where the proxy connects is the proxy's rule. */
	const char *proxy;
	/* The CA bundle that verifies servers; NULL: the system's. */
	const char *cainfo;
} fatelf_fetch_opts;

/* Checks the URL (scheme http, https or, if allowed, file) and starts the
 * transfer. -EINVAL for a URL we refuse, with d saying why. */
int fatelf_fetch_open(const char *url, const fatelf_fetch_opts *o, fatelf_fetch **ret,
		      fatelf_diag *d);
/* The byte source for fatelf_bundle_read; valid until close. */
void fatelf_fetch_source(fatelf_fetch *f, fatelf_reader *ret);
/* After the read: 0 when the transfer completed, or the error (and d). */
int fatelf_fetch_status(fatelf_fetch *f, fatelf_diag *d);
uint64_t fatelf_fetch_bytes(const fatelf_fetch *f);
/* The length the server announced, or 0 when unknown. */
uint64_t fatelf_fetch_length(const fatelf_fetch *f);
fatelf_fetch *fatelf_fetch_close(fatelf_fetch *f);

/*
 * The rules every transfer of fatelf-fetch follows, shared by the one-URL
 * download above and the batch of fetch_batch.h.
 */

/* Longest piece of a URL quoted in a message (fatelf_diag.msg is 512). */
#define FATELF_FETCH_URL_SHOWN 300

/* A URL that fatelf_fetch_url_check accepted. */
typedef struct fatelf_fetch_url {
	char *full;                 /* curl's normalized form: what is fetched */
	char *shown;                /* as messages quote it: without credentials */
	char *path;                 /* file:// only: the decoded path */
	bool is_file;
	bool https;
} fatelf_fetch_url;

/* Scheme http, https or, if allowed, file (no other host); -EINVAL with d
 * saying why (the URL quoted without its credentials). */
int fatelf_fetch_url_check(const char *url, bool allow_file, fatelf_fetch_url *ret, fatelf_diag *d);
void fatelf_fetch_url_clear(fatelf_fetch_url *u);

/* curl_global_init, once for the process (which may have threads). */
CURLcode fatelf_fetch_curl_init(void);

/*
 * The deny list on the connections of one transfer (one easy handle):
 * while check is false every connection is allowed (it goes to the host
 * that the admin chose); once it is true, a connection to an address in
 * a range of deny that is not in *exempt (the ranges that host is in)
 * fails, and the guard keeps what it refused.
 */
typedef struct fatelf_fetch_guard {
	CURL *easy;
	const fatelf_netranges *deny;   /* NULL or empty: no rule */
	const uint64_t *exempt;
	bool check;
	bool denied;                    /* a connection was refused: why, below */
	char denied_addr[INET6_ADDRSTRLEN + 16];
	char denied_range[FATELF_NETRANGE_TEXT_MAX];
	char *denied_url;               /* the hop curl was on, without credentials */
} fatelf_fetch_guard;

/* The ranges of the deny list that hold the address the transfer is
 * connected to (the one that answered). */
uint64_t fatelf_fetch_guard_primary_hits(const fatelf_fetch_guard *g);
/* Forgets a refusal, for the next transfer on the same handle. */
void fatelf_fetch_guard_reset(fatelf_fetch_guard *g);

/*
 * The options of every transfer: http and https only, redirects (at most
 * 5) that never step down from https, no proxy but o->proxy, the CA
 * bundle, failure on HTTP errors, the connect timeout and the minimum
 * rate (or, without one, the silence timeout), no signals, the user
 * agent, and g's rule on every connection when o->deny is not empty. The
 * deadline, the size limit, the URL and the callbacks are the caller's.
 */
CURLcode fatelf_fetch_setopt_common(CURL *easy, const fatelf_fetch_opts *o, bool https,
				    fatelf_fetch_guard *g);

/* " Not Found" for 404: the reason phrase of the statuses a mirror
 * commonly answers, with a leading space; "" for the others. */
const char *fatelf_fetch_http_reason(long status);

#endif
