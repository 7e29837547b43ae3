/*
 * libFuzzer target for the Varlink layer: the input is a byte stream as a
 * peer would send it, fed to the framer in chunks whose sizes come from
 * the input itself (so splits land everywhere). Every complete message
 * goes to the call parser, its parameters to a sample dispatch table, and
 * to the reply parser as a client would see it. Whatever is accepted must
 * serialize again and parse back to the same method and flags. Sanitizers
 * catch memory errors; the asserts catch a parser that disagrees with its
 * own serializer or a framer that exceeds its limit.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"

struct sample {
	const char *name;
	bool force;
	int64_t level;
	uint64_t size;
	const char **targets;
	json_object *extra;
};

static const vl_field sample_table[] = {
	{ .name = "name", .type = VL_STRING, .offset = offsetof(struct sample, name), .flags = VL_MANDATORY },
	{ .name = "force", .type = VL_BOOL, .offset = offsetof(struct sample, force) },
	{ .name = "level", .type = VL_INT64, .offset = offsetof(struct sample, level), .min = -5, .max = 5 },
	{ .name = "size", .type = VL_UINT64, .offset = offsetof(struct sample, size) },
	{ .name = "targets", .type = VL_STRV, .offset = offsetof(struct sample, targets) },
	{ .name = "extra", .type = VL_OBJECT, .offset = offsetof(struct sample, extra) },
	{}
};

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_varlink: %s\n", what);
		abort();
	}
}

static void message_handle(const char *msg, size_t len)
{
	vl_call c;
	vl_response resp;
	fatelf_diag d;

	check(strlen(msg) == len, "framer handed out a message with a NUL inside");
	if (vl_call_parse(msg, len, &c, &d) == 0) {
		struct sample s = { 0 };
		const char *bad = NULL;
		char *buf = NULL;
		size_t n;
		int r;

		check(vl_name_is_valid(c.method), "accepted an invalid method name");
		r = vl_dispatch(c.parameters, sample_table, &s, &bad);
		if (r == 0) {
			check(s.name != NULL, "mandatory field missing after dispatch");
			check(s.level >= -5 && s.level <= 5, "int64 out of range after dispatch");
			free(s.targets);
		} else {
			check(bad != NULL, "dispatch refused without naming a field");
			check(vl_reply_error_str(VL_ERROR_INVALID_PARAMETER, "parameter", bad, &buf, &n) == 0,
			      "InvalidParameter reply failed");
			check(vl_reply_parse(buf, n - 1, &resp, &d) == 0, "own error reply does not parse");
			vl_response_done(&resp);
			free(buf);
			buf = NULL;
		}
		/* Round trip: the serialized call parses to the same call. */
		if (vl_call_format(c.method, c.parameters, c.flags, &buf, &n) == 0) {
			vl_call again;

			check(buf[n - 1] == 0 && strlen(buf) == n - 1, "serialized call not NUL-terminated");
			check(vl_call_parse(buf, n - 1, &again, &d) == 0, "own call does not parse");
			check(strcmp(again.method, c.method) == 0 && again.flags == c.flags,
			      "call round trip changed");
			vl_call_done(&again);
			free(buf);
		}
		vl_call_done(&c);
	}
	if (vl_reply_parse(msg, len, &resp, &d) == 0) {
		char *buf = NULL;
		size_t n;
		int r = resp.error ? vl_reply_error(resp.error, resp.parameters, &buf, &n)
				   : vl_reply(resp.parameters, resp.continues, &buf, &n);

		check(r == 0, "accepted reply does not serialize");
		free(buf);
		vl_response_done(&resp);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	vl_buffer b;
	size_t pos = 1;

	if (size == 0)
		return 0;
	/* A small limit, so the oversize path is reached too. */
	vl_buffer_init(&b, 4096);
	while (pos < size) {
		/* Chunk sizes 1..64, from the first byte's bits and position. */
		size_t chunk = ((data[0] ^ pos) & 63) + 1;
		const char *msg;
		size_t len;
		int r;

		if (chunk > size - pos)
			chunk = size - pos;
		if (vl_buffer_append(&b, data + pos, chunk) < 0)
			break;
		pos += chunk;
		while ((r = vl_buffer_next(&b, &msg, &len)) == 1) {
			check(len <= 4096, "framer handed out an oversized message");
			message_handle(msg, len);
		}
		if (r < 0)
			break;
		check(vl_buffer_pending(&b) <= 4096, "framer holds an oversized partial message");
	}
	vl_buffer_done(&b);
	return 0;
}
