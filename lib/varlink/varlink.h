/*
 * The Varlink protocol layer of libfatelf: pure message handling, no
 * sockets. It owns four things that fatelfd and fatelfctl share:
 *
 *  - the framer (vl_buffer), which turns the bytes read from a stream
 *    socket into whole NUL-terminated messages and bounds the size of a
 *    message, so a peer that never sends a NUL cannot eat memory;
 *  - the call parser (vl_call_parse), strict about JSON and about the
 *    shape of a call: "method", "parameters", "oneway", "more", "upgrade";
 *  - parameter dispatch tables (vl_dispatch), which check every field of
 *    "parameters" against a table and reject unknown fields before any
 *    handler runs;
 *  - reply builders and the client's reply parser.
 *
 * Every message from a peer is untrusted. Parsers return 0 or a negative
 * code (-EBADMSG for a message that breaks the protocol, -EINVAL for a bad
 * parameter, -EMSGSIZE, -ENOMEM) and say why in a fatelf_diag.
 * Serialized messages are returned malloc'd and include their NUL
 * terminator, ready to be written to the socket as they are.
 */
#ifndef FATELF_VARLINK_H
#define FATELF_VARLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "diag.h"

/* Defaults: the largest message (without its NUL) and JSON nesting. */
#define VL_MESSAGE_MAX_DEFAULT ((size_t)1 << 20)
#define VL_JSON_DEPTH 32
/* The longest method or error name we accept. */
#define VL_NAME_MAX 255

/* The standard errors of org.varlink.service (parameters in comments). */
#define VL_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"   /* interface */
#define VL_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"         /* method */
#define VL_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented" /* method */
#define VL_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"     /* parameter */
#define VL_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define VL_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"

/* ------------------------------------------------------------ framer */

/*
 * Bytes received and not yet handed out as messages. Complete messages
 * are handed out by vl_buffer_next in order; the unterminated tail (the
 * message still arriving) may not grow past max bytes.
 */
typedef struct vl_buffer {
	char *data;
	size_t start;   /* first byte not yet handed out */
	size_t len;     /* bytes held, from 0 */
	size_t cap;
	size_t tail;    /* where the message still arriving begins */
	size_t scan;    /* bytes before this were searched for a NUL */
	size_t max;     /* largest message, without its NUL */
	int error;      /* sticky: once oversized, the stream cannot be resynced */
} vl_buffer;

/* max 0 means VL_MESSAGE_MAX_DEFAULT. */
void vl_buffer_init(vl_buffer *b, size_t max);
void vl_buffer_done(vl_buffer *b);
/*
 * Adds bytes read from the peer. -EMSGSIZE (sticky) when a message grows
 * past max without its NUL; -ENOMEM. Call vl_buffer_next until it returns
 * 0 before appending more, so only one partial message is ever held.
 */
int vl_buffer_append(vl_buffer *b, const void *data, size_t len);
/*
 * Hands out the next complete message: returns 1 and sets *ret_msg to its
 * text (NUL-terminated, valid until the next append or done) and *ret_len
 * to its length without the NUL; returns 0 when none is complete; returns
 * the sticky error otherwise.
 */
int vl_buffer_next(vl_buffer *b, const char **ret_msg, size_t *ret_len);
/* Bytes of a message still arriving (non-zero at EOF means a cut message). */
size_t vl_buffer_pending(const vl_buffer *b);
/* Gives the memory back once every byte was handed out: a peer that sent
 * one large message must not keep its room while it idles. Invalidates
 * the messages handed out. */
void vl_buffer_trim(vl_buffer *b);

/* ------------------------------------------------------------ names */

/* true for "interface.Method": interface is reverse-domain with at least
 * two labels of letters, digits and inner hyphens, the first starting with
 * a letter (the Varlink grammar); Method is [A-Z][A-Za-z0-9]*. Error names
 * alike. */
bool vl_name_is_valid(const char *name);
/* Length of the interface part of a valid name (up to its last dot). */
size_t vl_name_interface_len(const char *name);

/* ------------------------------------------------------------ calls */

#define VL_CALL_ONEWAY 0x1u
#define VL_CALL_MORE 0x2u
#define VL_CALL_UPGRADE 0x4u

typedef struct vl_call {
	char *method;               /* validated name */
	json_object *parameters;    /* an object, empty when absent; owned */
	unsigned flags;             /* VL_CALL_* */
} vl_call;

/*
 * Parses one message (without its NUL). Strict JSON, at most
 * VL_JSON_DEPTH deep, no NUL, nothing after the object. "oneway" and
 * "more" together are refused. -EBADMSG with d naming the rule; -ENOMEM.
 * ret is set only on success; release it with vl_call_done.
 */
int vl_call_parse(const char *msg, size_t len, vl_call *ret, fatelf_diag *d);
void vl_call_done(vl_call *c);
/* A client's call, serialized with its NUL. params may be NULL ({}), and
 * is not consumed. -EINVAL for a bad method name or flags. */
int vl_call_format(const char *method, json_object *params, unsigned flags,
		   char **ret_buf, size_t *ret_len);

/* ------------------------------------------------------------ dispatch */

typedef enum vl_type {
	VL_STRING,      /* const char *, borrowed from params, no NUL inside */
	VL_BOOL,        /* bool */
	VL_INT64,       /* int64_t, within [min, max] when either is non-zero */
	VL_UINT64,      /* uint64_t, at most umax when it is non-zero */
	VL_STRV,        /* const char **, NULL-terminated, malloc'd array
			   (free() it); the strings are borrowed */
	VL_OBJECT,      /* json_object *, borrowed, any object */
	VL_ARRAY,       /* json_object *, borrowed, any array (its items are the handler's to check) */
} vl_type;

#define VL_MANDATORY 0x1u   /* absent or null is an error */

typedef struct vl_field {
	const char *name;
	vl_type type;
	size_t offset;      /* offsetof the destination in dest */
	unsigned flags;
	int64_t min, max;   /* VL_INT64 range */
	uint64_t umax;      /* VL_UINT64 limit */
} vl_field;

/*
 * Checks params (an object, or NULL for none) against table (ended by an
 * entry whose name is NULL) and fills dest. Every field is checked before
 * dest is touched: on error dest is unchanged and *ret_bad_field (if not
 * NULL) names the offending field, for an InvalidParameter reply. An
 * unknown field, a wrong type, a value out of range and a missing
 * mandatory field are -EINVAL. A null value counts as absent. Absent
 * optional fields leave their destination as it was (the caller's
 * default).
 */
int vl_dispatch(json_object *params, const vl_field *table, void *dest, const char **ret_bad_field);

/* ------------------------------------------------------------ replies */

/* A reply, serialized with its NUL. params may be NULL ({}) and is not
 * consumed. "continues" is written only when true. */
int vl_reply(json_object *params, bool continues, char **ret_buf, size_t *ret_len);
/* An error reply; error_name must be fully qualified (-EINVAL if not). */
int vl_reply_error(const char *error_name, json_object *params, char **ret_buf, size_t *ret_len);
/* An error reply with one string parameter, e.g. VL_ERROR_INVALID_PARAMETER
 * with key "parameter" and the field's name. */
int vl_reply_error_str(const char *error_name, const char *key, const char *value,
		       char **ret_buf, size_t *ret_len);

/* A reply as the client sees it. */
typedef struct vl_response {
	char *error;                /* fully qualified name, NULL on success */
	json_object *parameters;    /* an object, empty when absent; owned */
	bool continues;
} vl_response;

/* Parses one reply (without its NUL) as vl_call_parse does a call. An
 * error reply that says it continues is refused. */
int vl_reply_parse(const char *msg, size_t len, vl_response *ret, fatelf_diag *d);
void vl_response_done(vl_response *r);

#endif
