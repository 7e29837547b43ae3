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

#endif
