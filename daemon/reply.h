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
/* The host's targets, native first: []string. */
json_object *host_targets(const fatelf_host *h);

#endif
