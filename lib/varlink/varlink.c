/*
 * The Varlink protocol layer (see varlink.h): framing of NUL-terminated
 * messages, the strict call and reply parsers, parameter dispatch tables
 * and the serializers. Nothing here touches a socket, so the daemon, the
 * client, the unit tests and the fuzzer all drive the same code.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "array.h"
#include "jsonput.h"
#include "macro.h"
#include "varlink.h"

static void json_tokener_freep(struct json_tokener **t)
{
	if (*t)
		json_tokener_free(*t);
}

/* ------------------------------------------------------------ framer */

void vl_buffer_init(vl_buffer *b, size_t max)
{
	*b = (vl_buffer){ .max = max ? max : VL_MESSAGE_MAX_DEFAULT };
}

void vl_buffer_done(vl_buffer *b)
{
	free(b->data);
	vl_buffer_init(b, b->max);
}

size_t vl_buffer_pending(const vl_buffer *b)
{
	return b->len - b->start;
}

void vl_buffer_trim(vl_buffer *b)
{
	if (!b->data || b->start < b->len)
		return;
	free(b->data);
	b->data = NULL;
	b->start = b->len = b->cap = b->tail = b->scan = 0;
}

/*
 * Finds the NULs in the bytes appended since the last call and checks the
 * message still arriving against max. Each byte is searched once, so a
 * peer that trickles a large message in one byte at a time costs linear
 * time, not quadratic.
 */
static int buffer_check(vl_buffer *b)
{
	while (b->scan < b->len) {
		const char *nul = memchr(b->data + b->scan, 0, b->len - b->scan);
		size_t end = nul ? (size_t)(nul - b->data) : b->len;

		if (end - b->tail > b->max)
			return b->error = -EMSGSIZE;
		if (!nul) {
			b->scan = b->len;
			break;
		}
		b->tail = b->scan = end + 1;
	}
	return 0;
}

int vl_buffer_append(vl_buffer *b, const void *data, size_t len)
{
	if (b->error)
		return b->error;
	if (len == 0)
		return 0;
	/* Drop what was handed out before growing. */
	if (b->start > 0) {
		memmove(b->data, b->data + b->start, b->len - b->start);
		b->len -= b->start;
		b->tail -= b->start;
		b->scan -= b->start;
		b->start = 0;
	}
	if (len > SIZE_MAX - b->len || GROW_ARRAY(b->data, b->cap, b->len + len) < 0)
		return -ENOMEM;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return buffer_check(b);
}

int vl_buffer_next(vl_buffer *b, const char **ret_msg, size_t *ret_len)
{
	const char *nul;
	size_t n;

	if (b->error)
		return b->error;
	/* Only bytes before the tail hold complete messages. */
	if (b->start >= b->tail)
		return 0;
	nul = memchr(b->data + b->start, 0, b->tail - b->start);
	if (!nul)
		return 0;
	n = (size_t)(nul - (b->data + b->start));
	*ret_msg = b->data + b->start;
	*ret_len = n;
	b->start += n + 1;
	return 1;
}

/* ------------------------------------------------------------ names */

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
 * One interface label, as the Varlink grammar has it:
 * [A-Za-z0-9]([-]*[A-Za-z0-9])*, the first label starting with a letter.
 * Upper case is allowed ("io.fatelf.Manager", "io.systemd.UserDatabase").
 */
static bool label_is_valid(const char *s, size_t n, bool first)
{
	if (n == 0 || !is_alnum(s[0]) || (first && (s[0] >= '0' && s[0] <= '9')))
		return false;
	if (s[n - 1] == '-')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

size_t vl_name_interface_len(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot ? (size_t)(dot - name) : 0;
}

bool vl_name_is_valid(const char *name)
{
	size_t n, iface, pos = 0, labels = 0;

	if (!name)
		return false;
	n = strnlen(name, VL_NAME_MAX + 1);
	if (n > VL_NAME_MAX)
		return false;
	iface = vl_name_interface_len(name);
	if (iface == 0)
		return false;
	/* Member: [A-Z][A-Za-z0-9]* */
	if (!(name[iface + 1] >= 'A' && name[iface + 1] <= 'Z'))
		return false;
	for (size_t i = iface + 2; i < n; i++)
		if (!is_alnum(name[i]))
			return false;
	while (pos <= iface) {
		const char *dot = memchr(name + pos, '.', iface - pos);
		size_t end = dot ? (size_t)(dot - name) : iface;

		if (!label_is_valid(name + pos, end - pos, labels == 0))
			return false;
		labels++;
		pos = end + 1;
	}
	return labels >= 2;
}

/* ------------------------------------------------------------ parsing */

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * json-c saturates an integer literal that does not fit: -1e20 written as
 * digits becomes INT64_MIN and 1e20 becomes UINT64_MAX, silently. So a
 * parsed message is checked here for integer literals beyond
 * [INT64_MIN, UINT64_MAX], which lets vl_dispatch trust the values it
 * reads. s is valid JSON, so digits outside strings belong to numbers.
 */
static bool integers_fit(const char *s, size_t len)
{
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		bool neg;
		size_t start, end, digits;

		if (in_string) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_string = false;
			continue;
		}
		if (s[i] == '"') {
			in_string = true;
			continue;
		}
		if (s[i] != '-' && !is_digit(s[i]))
			continue;
		neg = s[i] == '-';
		start = end = i + neg;
		while (end < len && is_digit(s[end]))
			end++;
		digits = end - start;
		if (!(end < len && (s[end] == '.' || s[end] == 'e' || s[end] == 'E'))) {
			const char *limit = neg ? "9223372036854775808" : "18446744073709551615";
			size_t n = strlen(limit);

			if (digits > n || (digits == n && memcmp(s + start, limit, n) > 0))
				return false;
		}
		while (end < len && (is_digit(s[end]) || s[end] == '.' || s[end] == 'e' || s[end] == 'E' ||
				     s[end] == '+' || s[end] == '-'))
			end++;
		i = end - 1;
	}
	return true;
}

/* One message as a JSON object: strict, bounded depth, valid UTF-8, no
 * NUL, nothing but white space after it. */
static int message_parse(const char *what, const char *msg, size_t len,
			 json_object **ret, fatelf_diag *d)
{
	_cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
	_cleanup_json_ json_object *o = NULL;
	enum json_tokener_error err;
	size_t end;

	if (memchr(msg, 0, len))
		return fatelf_diag_set(d, -EBADMSG, -1, "%s: a NUL byte inside the message", what);
	if (len > INT32_MAX)
		return fatelf_diag_set(d, -EMSGSIZE, -1, "%s: message too large", what);
	tok = json_tokener_new_ex(VL_JSON_DEPTH);
	if (!tok)
		return fatelf_diag_oom(d);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8 |
				    JSON_TOKENER_ALLOW_TRAILING_CHARS);
	o = json_tokener_parse_ex(tok, msg, (int)len);
	err = json_tokener_get_error(tok);
	if (!o || err != json_tokener_success) {
		if (err == json_tokener_continue || err == json_tokener_success)
			return fatelf_diag_set(d, -EBADMSG, -1, "%s: JSON ends early", what);
		return fatelf_diag_set(d, -EBADMSG, -1, "%s: invalid JSON at byte %zu: %s", what,
				       json_tokener_get_parse_end(tok), json_tokener_error_desc(err));
	}
	end = json_tokener_get_parse_end(tok);
	while (end < len && is_json_space(msg[end]))
		end++;
	if (end != len)
		return fatelf_diag_set(d, -EBADMSG, -1, "%s: trailing data at byte %zu", what, end);
	if (!json_object_is_type(o, json_type_object))
		return fatelf_diag_set(d, -EBADMSG, -1, "%s: the message is not a JSON object", what);
	if (!integers_fit(msg, len))
		return fatelf_diag_set(d, -EBADMSG, -1, "%s: an integer outside the 64-bit range", what);
	*ret = TAKE_PTR(o);
	return 0;
}

/* A string member without a NUL inside; NULL for any other type. */
static const char *string_value(json_object *v)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return NULL;
	return s;
}

/* The "parameters" member: an object, or a fresh empty one when absent. */
static int parameters_take(const char *what, json_object *v, json_object **ret, fatelf_diag *d)
{
	if (!v || json_object_is_type(v, json_type_null)) {
		*ret = json_object_new_object();
		return *ret ? 0 : fatelf_diag_oom(d);
	}
	if (!json_object_is_type(v, json_type_object))
		return fatelf_diag_set(d, -EBADMSG, -1, "%s: \"parameters\" is not an object", what);
	*ret = json_object_get(v);
	return 0;
}

int vl_call_parse(const char *msg, size_t len, vl_call *ret, fatelf_diag *d)
{
	static const struct {
		const char *key;
		unsigned flag;
	} flag_keys[] = {
		{ "oneway", VL_CALL_ONEWAY },
		{ "more", VL_CALL_MORE },
		{ "upgrade", VL_CALL_UPGRADE },
	};
	_cleanup_json_ json_object *root = NULL, *params = NULL;
	_cleanup_free_ char *method = NULL;
	json_object *params_v = NULL;
	const char *name = NULL;
	unsigned flags = 0;
	int r;

	r = message_parse("call", msg, len, &root, d);
	if (r < 0)
		return r;
	json_object_object_foreach(root, key, v) {
		size_t i;

		if (strcmp(key, "method") == 0) {
			name = string_value(v);
			if (!name)
				return fatelf_diag_set(d, -EBADMSG, -1, "call: \"method\" is not a string");
			continue;
		}
		if (strcmp(key, "parameters") == 0) {
			params_v = v;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(flag_keys); i++)
			if (strcmp(key, flag_keys[i].key) == 0)
				break;
		if (i == ARRAY_SIZE(flag_keys))
			return fatelf_diag_set(d, -EBADMSG, -1, "call: unknown member \"%.64s\"", key);
		if (json_object_is_type(v, json_type_null))
			continue;
		if (!json_object_is_type(v, json_type_boolean))
			return fatelf_diag_set(d, -EBADMSG, -1, "call: \"%s\" is not a boolean",
					       flag_keys[i].key);
		if (json_object_get_boolean(v))
			flags |= flag_keys[i].flag;
	}
	if (!name)
		return fatelf_diag_set(d, -EBADMSG, -1, "call: no \"method\"");
	if (!vl_name_is_valid(name))
		return fatelf_diag_set(d, -EBADMSG, -1,
				       "call: method \"%.64s\" is not a valid interface.Method name", name);
	if ((flags & VL_CALL_ONEWAY) && (flags & VL_CALL_MORE))
		return fatelf_diag_set(d, -EBADMSG, -1, "call: \"oneway\" and \"more\" together");
	r = parameters_take("call", params_v, &params, d);
	if (r < 0)
		return r;
	method = strdup(name);
	if (!method)
		return fatelf_diag_oom(d);
	*ret = (vl_call){
		.method = TAKE_PTR(method),
		.parameters = TAKE_PTR(params),
		.flags = flags,
	};
	return 0;
}

void vl_call_done(vl_call *c)
{
	if (!c)
		return;
	free(c->method);
	if (c->parameters)
		json_object_put(c->parameters);
	*c = (vl_call){ 0 };
}

int vl_reply_parse(const char *msg, size_t len, vl_response *ret, fatelf_diag *d)
{
	_cleanup_json_ json_object *root = NULL, *params = NULL;
	_cleanup_free_ char *error = NULL;
	json_object *params_v = NULL;
	const char *ename = NULL;
	bool continues = false;
	int r;

	r = message_parse("reply", msg, len, &root, d);
	if (r < 0)
		return r;
	json_object_object_foreach(root, key, v) {
		if (strcmp(key, "parameters") == 0) {
			params_v = v;
		} else if (strcmp(key, "continues") == 0) {
			if (json_object_is_type(v, json_type_null))
				continue;
			if (!json_object_is_type(v, json_type_boolean))
				return fatelf_diag_set(d, -EBADMSG, -1, "reply: \"continues\" is not a boolean");
			continues = json_object_get_boolean(v);
		} else if (strcmp(key, "error") == 0) {
			if (json_object_is_type(v, json_type_null))
				continue;
			ename = string_value(v);
			if (!ename)
				return fatelf_diag_set(d, -EBADMSG, -1, "reply: \"error\" is not a string");
			if (!vl_name_is_valid(ename))
				return fatelf_diag_set(d, -EBADMSG, -1,
						       "reply: error \"%.64s\" is not a fully qualified name",
						       ename);
		} else {
			return fatelf_diag_set(d, -EBADMSG, -1, "reply: unknown member \"%.64s\"", key);
		}
	}
	if (ename && continues)
		return fatelf_diag_set(d, -EBADMSG, -1, "reply: an error that continues");
	r = parameters_take("reply", params_v, &params, d);
	if (r < 0)
		return r;
	if (ename) {
		error = strdup(ename);
		if (!error)
			return fatelf_diag_oom(d);
	}
	*ret = (vl_response){
		.error = TAKE_PTR(error),
		.parameters = TAKE_PTR(params),
		.continues = continues,
	};
	return 0;
}

void vl_response_done(vl_response *r)
{
	if (!r)
		return;
	free(r->error);
	if (r->parameters)
		json_object_put(r->parameters);
	*r = (vl_response){ 0 };
}

/* ------------------------------------------------------------ dispatch */

static const vl_field *field_find(const vl_field *table, const char *name)
{
	for (const vl_field *f = table; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* Whether v (not null) fits field f. */
static bool field_value_ok(const vl_field *f, json_object *v)
{
	switch (f->type) {
	case VL_STRING:
		return string_value(v) != NULL;
	case VL_BOOL:
		return json_object_is_type(v, json_type_boolean);
	case VL_INT64: {
		int64_t x;

		if (!json_object_is_type(v, json_type_int))
			return false;
		x = json_object_get_int64(v);
		/* json-c clamps values above INT64_MAX; its uint64 view tells. */
		if (x == INT64_MAX && json_object_get_uint64(v) != (uint64_t)INT64_MAX)
			return false;
		if ((f->min || f->max) && (x < f->min || x > f->max))
			return false;
		return true;
	}
	case VL_UINT64: {
		uint64_t x;

		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return false;
		x = json_object_get_uint64(v);
		return !f->umax || x <= f->umax;
	}
	case VL_STRV: {
		size_t n;

		if (!json_object_is_type(v, json_type_array))
			return false;
		n = json_object_array_length(v);
		for (size_t i = 0; i < n; i++)
			if (!string_value(json_object_array_get_idx(v, i)))
				return false;
		return true;
	}
	case VL_OBJECT:
		return json_object_is_type(v, json_type_object);
	case VL_ARRAY:
		return json_object_is_type(v, json_type_array);
	}
	return false;
}

static const char **strv_new(json_object *v)
{
	size_t n = json_object_array_length(v);
	const char **a = calloc(n + 1, sizeof(*a));

	if (!a)
		return NULL;
	for (size_t i = 0; i < n; i++)
		a[i] = json_object_get_string(json_object_array_get_idx(v, i));
	return a;
}

int vl_dispatch(json_object *params, const vl_field *table, void *dest, const char **ret_bad_field)
{
	_cleanup_free_ const char ***strvs = NULL;
	size_t nfields = 0, i;

	if (params && !json_object_is_type(params, json_type_object)) {
		if (ret_bad_field)
			*ret_bad_field = NULL;
		return -EINVAL;
	}
	/* Pass 1: judge every field, so dest is untouched on any error. */
	if (params) {
		json_object_object_foreach(params, key, v) {
			const vl_field *f = field_find(table, key);

			if (!f || (!json_object_is_type(v, json_type_null) && !field_value_ok(f, v)) ||
			    (json_object_is_type(v, json_type_null) && (f->flags & VL_MANDATORY))) {
				if (ret_bad_field)
					*ret_bad_field = f ? f->name : key;
				return -EINVAL;
			}
		}
	}
	for (const vl_field *f = table; f->name; f++, nfields++) {
		json_object *v = NULL;

		if ((f->flags & VL_MANDATORY) &&
		    (!params || !json_object_object_get_ex(params, f->name, &v) || !v)) {
			if (ret_bad_field)
				*ret_bad_field = f->name;
			return -EINVAL;
		}
	}
	/* The only allocation comes before the first store. */
	strvs = calloc(nfields + 1, sizeof(*strvs));
	if (!strvs)
		return -ENOMEM;
	for (i = 0; i < nfields; i++) {
		json_object *v = NULL;

		if (table[i].type != VL_STRV || !params ||
		    !json_object_object_get_ex(params, table[i].name, &v) || !v)
			continue;
		strvs[i] = strv_new(v);
		if (!strvs[i]) {
			for (size_t j = 0; j < i; j++)
				free(strvs[j]);
			return -ENOMEM;
		}
	}
	/* Pass 2: store. */
	for (i = 0; i < nfields; i++) {
		const vl_field *f = &table[i];
		uint8_t *p = (uint8_t *)dest + f->offset;
		json_object *v = NULL;

		if (!params || !json_object_object_get_ex(params, f->name, &v) || !v)
			continue;
		switch (f->type) {
		case VL_STRING: {
			const char *s = json_object_get_string(v);

			memcpy(p, &s, sizeof(s));
			break;
		}
		case VL_BOOL: {
			bool b = json_object_get_boolean(v);

			memcpy(p, &b, sizeof(b));
			break;
		}
		case VL_INT64: {
			int64_t x = json_object_get_int64(v);

			memcpy(p, &x, sizeof(x));
			break;
		}
		case VL_UINT64: {
			uint64_t x = json_object_get_uint64(v);

			memcpy(p, &x, sizeof(x));
			break;
		}
		case VL_STRV:
			memcpy(p, &strvs[i], sizeof(strvs[i]));
			break;
		case VL_OBJECT:
		case VL_ARRAY:
			memcpy(p, &v, sizeof(v));
			break;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ serializing */

/* Serializes o with its NUL terminator into a malloc'd buffer. */
static int message_format(json_object *o, char **ret_buf, size_t *ret_len)
{
	size_t n;
	const char *s = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	char *buf;

	if (!s)
		return -ENOMEM;
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*ret_buf = buf;
	*ret_len = n + 1;
	return 0;
}

/* Adds "parameters": params (a new reference) or {}. */
static int parameters_add(json_object *msg, json_object *params)
{
	json_object *p;

	if (params && !json_object_is_type(params, json_type_object))
		return -EINVAL;
	p = params ? json_object_get(params) : json_object_new_object();
	if (!p)
		return -ENOMEM;
	if (json_object_object_add(msg, "parameters", p) < 0) {
		json_object_put(p);
		return -ENOMEM;
	}
	return 0;
}

static int add_new(json_object *msg, const char *key, json_object *v)
{
	if (!v)
		return -ENOMEM;
	if (json_object_object_add(msg, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int vl_call_format(const char *method, json_object *params, unsigned flags,
		   char **ret_buf, size_t *ret_len)
{
	_cleanup_json_ json_object *msg = NULL;
	int r;

	if (!vl_name_is_valid(method) || (flags & ~(VL_CALL_ONEWAY | VL_CALL_MORE | VL_CALL_UPGRADE)) ||
	    ((flags & VL_CALL_ONEWAY) && (flags & VL_CALL_MORE)))
		return -EINVAL;
	msg = json_object_new_object();
	if (!msg)
		return -ENOMEM;
	r = add_new(msg, "method", json_object_new_string(method));
	if (r < 0)
		return r;
	r = parameters_add(msg, params);
	if (r < 0)
		return r;
	if ((flags & VL_CALL_ONEWAY) && (r = add_new(msg, "oneway", json_object_new_boolean(1))) < 0)
		return r;
	if ((flags & VL_CALL_MORE) && (r = add_new(msg, "more", json_object_new_boolean(1))) < 0)
		return r;
	if ((flags & VL_CALL_UPGRADE) && (r = add_new(msg, "upgrade", json_object_new_boolean(1))) < 0)
		return r;
	return message_format(msg, ret_buf, ret_len);
}

int vl_reply(json_object *params, bool continues, char **ret_buf, size_t *ret_len)
{
	_cleanup_json_ json_object *msg = json_object_new_object();
	int r;

	if (!msg)
		return -ENOMEM;
	r = parameters_add(msg, params);
	if (r < 0)
		return r;
	if (continues && (r = add_new(msg, "continues", json_object_new_boolean(1))) < 0)
		return r;
	return message_format(msg, ret_buf, ret_len);
}

int vl_reply_error(const char *error_name, json_object *params, char **ret_buf, size_t *ret_len)
{
	_cleanup_json_ json_object *msg = NULL;
	int r;

	if (!vl_name_is_valid(error_name))
		return -EINVAL;
	msg = json_object_new_object();
	if (!msg)
		return -ENOMEM;
	r = add_new(msg, "error", json_object_new_string(error_name));
	if (r < 0)
		return r;
	r = parameters_add(msg, params);
	if (r < 0)
		return r;
	return message_format(msg, ret_buf, ret_len);
}

int vl_reply_error_str(const char *error_name, const char *key, const char *value,
		       char **ret_buf, size_t *ret_len)
{
	_cleanup_json_ json_object *params = json_object_new_object();
	int r;

	if (!params)
		return -ENOMEM;
	r = add_new(params, key, json_object_new_string(value ? value : ""));
	if (r < 0)
		return r;
	return vl_reply_error(error_name, params, ret_buf, ret_len);
}
