/*
 * Replies to the call being handled on a connection (daemon/reply.c):
 * each is dropped when the call was oneway. Failures go through the one
 * error table of daemon/errmap.c.
 */
#ifndef FATELFD_REPLY_H
#define FATELFD_REPLY_H

#include "fatelfd.h"

void reply(conn *c, json_object *params);
void reply_error(conn *c, const char *name, json_object *params);
void reply_error_str(conn *c, const char *name, const char *key, const char *value);
/* Failed {code, message}: an error the interface has no name for. */
void reply_failed(conn *c, int r, const char *message);
/* Turns an engine failure into the interface's error reply on c. url is set
 * when the failure is the download of that URL (FetchFailed). */
void reply_failure(conn *c, int r, const fatelf_diag *d, const char *url);
/* The same for a failure about a repository (RepositoryInvalid names it). */
void reply_failure_repo(conn *c, int r, const fatelf_diag *d, const char *url, const char *repository);
/* PackageNotFound's parameters p: when p's package is in config-files
 * state (removed, changed config files kept), its kept_version and
 * kept_files, from st. */
void reply_kept_facts(store *st, json_object *p);
/* PackageNotFound of package, with those facts. */
void reply_package_not_found(conn *c, const char *package);
/* Entries of one reply in a stream (a call with "more"). */
#define REPLY_CHUNK 1000
/*
 * Answers a call made with "more" with o (taken) in chunks: each reply
 * holds o's other members as they are and at most REPLY_CHUNK entries of
 * its array member key, in order, the last one without continues; an empty
 * array is one reply. Nothing is sent on a oneway call.
 */
void reply_array_stream(conn *c, json_object *o, const char *key);
/* The host's targets, native first: []string. */
json_object *host_targets(const fatelf_host *h);

#endif
