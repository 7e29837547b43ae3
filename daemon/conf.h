/*
 * fatelfd.conf: the file and its drop-ins read into an engine_config, and
 * the trusted keys it names.
 */
#ifndef FATELFD_CONF_H
#define FATELFD_CONF_H

#include "engine.h"

/*
 * Reads path (a missing file means the defaults) and then PATH.d/ *.conf
 * (fatelfd.conf.d next to it) in name order, later values overriding
 * earlier ones; KeepFat= accumulates, and an empty KeepFat= clears the
 * list. Format: lib/basic/ini.h's, with the sections [Daemon] and
 * [Policy]. An unknown section or key, a bad value or a line that is none
 * of these is -EINVAL with d naming file, line and key ("FILE:LINE: Key:
 * rule").
 */
int engine_config_load(engine_config *c, const char *path, fatelf_diag *d);
/* Loads every *.pub file of c->trusted_keys (a missing directory: no keys).
 * A file that does not parse is an error naming it. */
int engine_config_load_keys(const engine_config *c, fatelf_ms_pubkey **ret_keys, size_t *ret_n,
			    fatelf_diag *d);

#endif
