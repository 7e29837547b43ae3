/*
 * Who may call what (daemon/authz.c): the methods that change the system
 * are for uid 0 and the members of AdminGroup= only.
 */
#ifndef FATELFD_AUTHZ_H
#define FATELFD_AUTHZ_H

#include <stdbool.h>

#include "fatelfd.h"

/* Whether c's peer is root or in the admin group. */
bool authz_caller_is_admin(const conn *c);

#endif
