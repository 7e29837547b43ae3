/*
 * From a message to its method (daemon/dispatch.c): the table of every
 * method fatelfd serves, and the checks a call passes before its handler
 * runs.
 */
#ifndef FATELFD_DISPATCH_H
#define FATELFD_DISPATCH_H

#include <stddef.h>

#include "methods.h"

/* Handles one message from c (without its NUL). */
void dispatch_call(conn *c, const char *msg, size_t len);
/* The i-th method name the table holds, NULL past the end. */
const char *dispatch_method_name(size_t i);
/* The handler of m, a row of params_methods[] (NULL for any other). */
method_handler *dispatch_handler(const params_method *m);

#endif
