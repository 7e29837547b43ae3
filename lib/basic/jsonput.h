/*
 * json_object_put as a cleanup attribute, for the layers that speak JSON
 * through json-c (the Varlink library, the daemon, the tools). Nothing
 * in lib/basic calls json-c: this header is all of it, and only its
 * includers, which link json-c, use it.
 */
#ifndef FATELF_JSONPUT_H
#define FATELF_JSONPUT_H

#include <json-c/json.h>

#include "macro.h"

static inline void json_putp(json_object **o)
{
	if (*o)
		json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

#endif
