/*
 * Unit tests for fatelf-fetch --batch (fetch/fetch_batch.c): the parser
 * of its standard input (a good input, and each way a line is refused),
 * the frames it writes and the buffered writer, and whole batches over
 * file: mirrors (the network cases are tests/integration/fetchbatch.sh's).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch_batch.h"
#include "testutil.h"

/* ------------------------------------------------------------ helpers */

/* Feeds text (lines ended by '\n') to a fresh input: the first error, or
 * the end's result. */
static int parse_text(fatelf_fetch_batch_input *in, bool allow_file, const char *text,
		      fatelf_diag *d)
{
	const char *p = text;
	int r;

	fatelf_fetch_batch_input_init(in, allow_file);
	fatelf_diag_clear(d);
	while (*p) {
		const char *nl = strchr(p, '\n');

		ck_assert_msg(nl, "test input without its last newline");
		r = fatelf_fetch_batch_input_line(in, p, (size_t)(nl - p), d);
		if (r < 0)
			return r;
		p = nl + 1;
	}
	return fatelf_fetch_batch_input_end(in, d);
}

/* The input is refused with a message holding want. */
static void refused(const char *text, bool allow_file, const char *want)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d;
	int r = parse_text(&in, allow_file, text, &d);

	ck_assert_msg(r == -EINVAL, "accepted (%d): %s", r, text);
	ck_assert_msg(strstr(d.msg, want), "for %s: message \"%s\", wanted \"%s\"", text, d.msg, want);
	ck_assert_msg(!strstr(d.msg, "s3cret"), "the message shows a password: %s", d.msg);
	fatelf_fetch_batch_input_free(&in);
}

/* Writes text to a temp file and returns it open for reading at 0. */
static int text_fd(const void *text, size_t len)
{
	char path[] = "/tmp/fatelf-batch-in.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* The bytes written to fd (a temp file) so far. */
static char *fd_text(int fd, size_t *ret_len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)end + 1);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, (size_t)end, 0), (ssize_t)end);
	buf[end] = '\0';
	*ret_len = (size_t)end;
	return buf;
}

static int out_file(void)
{
	char path[] = "/tmp/fatelf-batch-out.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	return fd;
}

/* A batch's frames, rebuilt: each id's bytes and its end. */
#define MAX_OBJ 16
struct rebuilt {
	uint32_t id[MAX_OBJ];
	uint8_t *buf[MAX_OBJ];
	size_t cap[MAX_OBJ];
	int state[MAX_OBJ];         /* 0 running, 1 done, 2 failed */
	uint64_t total[MAX_OBJ];
	long code[MAX_OBJ];
	char text[MAX_OBJ][FATELF_FETCH_BATCH_FAIL_MAX];
	size_t n;
	unsigned restarts;
};

static size_t rb_slot(struct rebuilt *rb, uint32_t id)
{
	for (size_t i = 0; i < rb->n; i++)
		if (rb->id[i] == id)
			return i;
	ck_assert_uint_lt(rb->n, MAX_OBJ);
	rb->id[rb->n] = id;
	return rb->n++;
}

static void rebuild(const char *p, size_t len, struct rebuilt *rb)
{
	const char *end = p + len;

	memset(rb, 0, sizeof(*rb));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char line[FATELF_FETCH_BATCH_FAIL_MAX];
		uint32_t id;
		uint64_t off, n;
		long code;
		int used = 0;
		size_t i;

		ck_assert_ptr_nonnull(nl);
		ck_assert_uint_lt((size_t)(nl - p), sizeof(line));
		memcpy(line, p, (size_t)(nl - p));
		line[nl - p] = '\0';
		p = nl + 1;
		if (sscanf(line, "data %" SCNu32 " %" SCNu64 " %" SCNu64 "%n", &id, &off, &n, &used) == 3 &&
		    line[used] == '\0') {
			i = rb_slot(rb, id);
			ck_assert_int_eq(rb->state[i], 0);
			ck_assert_uint_le(n, (uint64_t)(end - p));
			if (off + n > rb->cap[i]) {
				rb->buf[i] = realloc(rb->buf[i], off + n);
				memset(rb->buf[i] + rb->cap[i], 0xee, off + n - rb->cap[i]);
				rb->cap[i] = off + n;
			}
			memcpy(rb->buf[i] + off, p, n);
			p += n;
		} else if (sscanf(line, "done %" SCNu32 " %" SCNu64 "%n", &id, &off, &used) == 2 &&
			   line[used] == '\0') {
			i = rb_slot(rb, id);
			ck_assert_int_eq(rb->state[i], 0);
			rb->state[i] = 1;
			rb->total[i] = off;
		} else if (sscanf(line, "fail %" SCNu32 " %ld %n", &id, &code, &used) == 2 && used > 0) {
			i = rb_slot(rb, id);
			ck_assert_int_eq(rb->state[i], 0);
			rb->state[i] = 2;
			rb->code[i] = code;
			snprintf(rb->text[i], sizeof(rb->text[i]), "%s", line + used);
		} else {
			ck_abort_msg("not a frame: %s", line);
		}
	}
}

static size_t rb_find(const struct rebuilt *rb, uint32_t id)
{
	for (size_t i = 0; i < rb->n; i++)
		if (rb->id[i] == id)
			return i;
	ck_abort_msg("no frame for id %" PRIu32, id);
	return 0;
}

static void rb_free(struct rebuilt *rb)
{
	for (size_t i = 0; i < rb->n; i++)
		free(rb->buf[i]);
}

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
	return b;
}

/* ------------------------------------------------------------ the parser */

START_TEST(test_parse_good)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d;
	char text[1024];

	snprintf(text, sizeof(text),
		 "mirror http://fatelf:s3cret@mirror.example/repo\n"
		 "mirror https://cdn.example/r/\n"
		 "mirror file:///srv/fatelf%%20repo\n"
		 "get 0 objects/ab/abcdef.zst 12\n"
		 "get 2147483648 index 0\n"
		 "get 7 a/.b/..c/x..y/. %" PRId64 "\n"
		 "get 8 A-Z_0.9/- 1\n",
		 INT64_MAX);
	ck_assert_int_eq(parse_text(&in, true, text, &d), 0);
	ck_assert_uint_eq(in.line, 7);
	ck_assert_uint_eq(in.n_mirrors, 3);
	ck_assert_str_eq(in.mirrors[0].full, "http://fatelf:s3cret@mirror.example/repo");
	ck_assert_str_eq(in.mirrors[0].shown, "http://mirror.example/repo");
	ck_assert(!in.mirrors[0].https && !in.mirrors[0].is_file);
	ck_assert(in.mirrors[1].https);
	ck_assert(in.mirrors[2].is_file);
	ck_assert_str_eq(in.mirrors[2].path, "/srv/fatelf repo");
	ck_assert_uint_eq(in.n_gets, 4);
	ck_assert_uint_eq(in.gets[0].id, 0);
	ck_assert_uint_eq(in.gets[0].size, 12);
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[0]), "objects/ab/abcdef.zst");
	ck_assert_uint_eq(in.gets[1].id, 2147483648u);
	ck_assert_uint_eq(in.gets[1].size, 0);
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[1]), "index");
	ck_assert_uint_eq(in.gets[2].size, (uint64_t)INT64_MAX);
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[2]), "a/.b/..c/x..y/.");
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[3]), "A-Z_0.9/-");
	fatelf_fetch_batch_input_free(&in);

	/* A registry's list asked for by pages: a query after one '?'. */
	ck_assert_int_eq(parse_text(&in, false, "mirror http://h/\nget 0 v2/_catalog?n=1000&last=ns/a-b 0\n", &d), 0);
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[0]), "v2/_catalog?n=1000&last=ns/a-b");
	fatelf_fetch_batch_input_free(&in);

	/* Mirrors alone, no get: nothing to do, but valid. */
	ck_assert_int_eq(parse_text(&in, false, "mirror http://h/\n", &d), 0);
	ck_assert_uint_eq(in.n_gets, 0);
	fatelf_fetch_batch_input_free(&in);

	/* 16 mirrors are the most. */
	text[0] = '\0';
	for (int i = 0; i < 16; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "mirror http://m%d/\n", i);
	ck_assert_int_eq(parse_text(&in, false, text, &d), 0);
	ck_assert_uint_eq(in.n_mirrors, 16);
	fatelf_fetch_batch_input_free(&in);
}
END_TEST

START_TEST(test_parse_refused)
{
	char text[FATELF_FETCH_BATCH_LINE_MAX + 64], path[FATELF_FETCH_BATCH_PATH_MAX + 2];

	/* Lines. */
	refused("", false, "no \"mirror\" line");
	refused("\n", false, "line 1: an empty line");
	refused("mirror http://h/\n\n", false, "line 2: an empty line");
	refused("mirror http://h/\r\n", false, "line 1: a byte that is not printable ASCII (at 17)");
	refused("mirror http://h/\nget 1\ta 1\n", false, "line 2: a byte that is not printable ASCII");
	refused("mirror http://h/\x7f\n", false, "not printable ASCII");
	refused("mirror http://h/\xc3\xa9\n", false, "not printable ASCII");
	refused("fetch 1 a 1\n", false, "line 1: unknown keyword \"fetch\"");
	refused("mirror\n", false, "unknown keyword \"mirror\" (or no argument)");
	refused("get\n", false, "unknown keyword \"get\"");
	refused("http://fatelf:s3cret@h/\n", false, "line 1: not a \"mirror\" or \"get\" line");
	refused(" mirror http://h/\n", false, "not a \"mirror\" or \"get\" line");
	refused("MIRROR http://h/\n", false, "unknown keyword \"MIRROR\"");

	/* Mirrors. */
	refused("mirror  http://h/\n", false, "line 1: \"mirror\" takes one URL");
	refused("mirror http://h/ http://g/\n", false, "\"mirror\" takes one URL");
	refused("mirror ftp://fatelf:s3cret@h/\n", false, "line 1: ftp://h/: only http and https URLs are accepted");
	refused("mirror h/repo\n", false, "only http and https URLs are accepted");
	refused("mirror http://h:99999/\n", false, "not a valid URL");
	refused("mirror file:///srv/repo\n", false, "file URLs are not allowed here");
	refused("mirror file://other/srv/repo\n", true, "line 1: file://other/srv/repo: not a valid URL");
	refused("mirror http://fatelf:s3cret@h/r?x=1\n", false,
		"line 1: http://h/r?x=1: a mirror's URL has no query and no fragment");
	refused("mirror http://h/r#x\n", false, "no query and no fragment");
	text[0] = '\0';
	for (int i = 0; i < 17; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "mirror http://m%d/\n", i);
	refused(text, false, "line 17: more than 16 mirrors");
	refused("get 1 a 1\nmirror http://h/\n", false, "line 1: a get before any mirror");
	refused("mirror http://h/\nget 1 a 1\nmirror http://g/\n", false, "line 3: a mirror after a get");

	/* Gets: fields. */
	refused("mirror http://h/\nget 1 a\n", false, "line 2: \"get\" takes an id, a path and a size");
	refused("mirror http://h/\nget 1 a 1 2\n", false, "takes an id, a path and a size");
	refused("mirror http://h/\nget 1  a 1\n", false, "takes an id, a path and a size");
	refused("mirror http://h/\nget 1  1\n", false, "an empty path");
	refused("mirror http://h/\nget 1 a 1 \n", false, "takes an id, a path and a size");
	refused("mirror http://h/\nget  1 a 1\n", false, "takes an id, a path and a size");
	refused("mirror http://h/\nget 1 a \n", false, "bad size \"\"");
	/* ... the id */
	refused("mirror http://h/\nget 01 a 1\n", false, "line 2: bad id \"01\"");
	refused("mirror http://h/\nget -1 a 1\n", false, "bad id \"-1\"");
	refused("mirror http://h/\nget +1 a 1\n", false, "bad id \"+1\"");
	refused("mirror http://h/\nget 0x1 a 1\n", false, "bad id \"0x1\"");
	refused("mirror http://h/\nget 2147483649 a 1\n", false, "bad id \"2147483649\"");
	refused("mirror http://h/\nget 99999999999999999999999 a 1\n", false, "bad id");
	refused("mirror http://h/\nget 5 a 1\nget 6 b 1\nget 5 c 2\n", false, "id 5 in two gets");
	/* ... the path */
	refused("mirror http://h/\nget 1 /etc/passwd 1\n", false, "line 2: an absolute path");
	refused("mirror http://h/\nget 1 .. 1\n", false, "a path with a \"..\" component");
	refused("mirror http://h/\nget 1 a=b 1\n", false, "a path with a byte other than");
	refused("mirror http://h/\nget 1 a&b?c 1\n", false, "a path with a byte other than");
	refused("mirror http://h/\nget 1 a?b?c 1\n", false, "a path with a byte other than");
	refused("mirror http://h/\nget 1 a?x=/../b 1\n", false, "a path with a \"..\" component");
	refused("mirror http://h/\nget 1 ../a 1\n", false, "\"..\" component");
	refused("mirror http://h/\nget 1 a/../b 1\n", false, "\"..\" component");
	refused("mirror http://h/\nget 1 a/.. 1\n", false, "\"..\" component");
	refused("mirror http://h/\nget 1 a%2f 1\n", false, "a byte other than [a-zA-Z0-9._/:-]");
	refused("mirror http://h/\nget 1 :a 1\n", false, "line 2: a path that starts with \":\"");
	refused("mirror http://h/\nget 1 :/a 1\n", false, "starts with \":\"");
	refused("mirror http://h/\nget 1 /v2/x/blobs/sha256:ab 1\n", false, "line 2: an absolute path");
	refused("mirror http://h/\nget 1 v2/x/../y/blobs/sha256:ab 1\n", false, "\"..\" component");
	refused("mirror http://h/\nget 1 v2/x/manifests/a@sha256:ab 1\n", false, "a byte other than");
	refused("mirror http://h/\nget 1 a?b#c 1\n", false, "a byte other than");
	refused("mirror http://h/\nget 1 ~root 1\n", false, "a byte other than");
	memset(path, 'a', FATELF_FETCH_BATCH_PATH_MAX + 1);
	path[FATELF_FETCH_BATCH_PATH_MAX + 1] = '\0';
	snprintf(text, sizeof(text), "mirror http://h/\nget 1 %s 1\n", path);
	refused(text, false, "a path longer than 4096 bytes");
	/* ... the size */
	refused("mirror http://h/\nget 1 a 01\n", false, "line 2: bad size \"01\"");
	refused("mirror http://h/\nget 1 a 1.5\n", false, "bad size \"1.5\"");
	refused("mirror http://h/\nget 1 a -1\n", false, "bad size \"-1\"");
	refused("mirror http://h/\nget 1 a 9223372036854775808\n", false, "bad size");
	refused("mirror http://h/\nget 1 a 18446744073709551616\n", false, "bad size");

	/* A line past the limit. */
	memset(text, 'x', sizeof(text));
	memcpy(text, "mirror http://h/", 16);
	text[FATELF_FETCH_BATCH_LINE_MAX + 1] = '\n';
	text[FATELF_FETCH_BATCH_LINE_MAX + 2] = '\0';
	refused(text, false, "line 1: longer than 16384 bytes");
}
END_TEST

/* accept and basic: a registry's media types and credentials. */
START_TEST(test_parse_registry)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d;
	char text[4096], mt[160];

	ck_assert_int_eq(parse_text(&in, false,
				    "mirror http://127.0.0.1:5000/\n"
				    "accept application/vnd.oci.image.index.v1+json\n"
				    "accept application/vnd.oci.image.manifest.v1+json\n"
				    "basic dmVuZG9yOnMzY3JldA==\n"
				    "get 1 v2/fatelf/hello/manifests/1.0 0\n"
				    "get 2 v2/fatelf/hello/manifests/sha256:"
				    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef 0\n"
				    "get 3 v2/fatelf/hello/blobs/sha256:"
				    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef 12\n"
				    "get 4 a:b/c: 1\n",
				    &d),
			 0);
	ck_assert_uint_eq(in.n_accept, 2);
	ck_assert_str_eq(in.accept[0], "application/vnd.oci.image.index.v1+json");
	ck_assert_str_eq(in.accept[1], "application/vnd.oci.image.manifest.v1+json");
	ck_assert_str_eq(in.basic, "dmVuZG9yOnMzY3JldA==");
	ck_assert_uint_eq(in.n_gets, 4);
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[2]),
			 "v2/fatelf/hello/blobs/sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[3]), "a:b/c:");
	fatelf_fetch_batch_input_free(&in);
	ck_assert_ptr_null(in.basic);

	/* Before the mirrors too; every padding; a UTF-8 password; 8 media
	 * types, one of 127 bytes. */
	memset(mt, 'a', sizeof(mt));
	mt[0] = 'x';
	mt[1] = '/';
	mt[127] = '\0';
	snprintf(text, sizeof(text),
		 "basic dTpzM2NyZXTDqQ==\naccept a/b\nmirror http://h/\naccept A-Z.0+9/x\n"
		 "accept t/3\naccept t/4\naccept t/5\naccept t/6\naccept t/7\naccept %s\n",
		 mt);
	ck_assert_int_eq(parse_text(&in, false, text, &d), 0);
	ck_assert_uint_eq(in.n_accept, 8);
	ck_assert_str_eq(in.accept[7], mt);
	fatelf_fetch_batch_input_free(&in);
	ck_assert_int_eq(parse_text(&in, false, "mirror http://h/\nbasic dmVuZG9yOnMzY3I=\n", &d), 0);
	fatelf_fetch_batch_input_free(&in);
	ck_assert_int_eq(parse_text(&in, false, "mirror http://h/\nbasic dmVuZG9yOnMzY3Jl\n", &d), 0);
	fatelf_fetch_batch_input_free(&in);

	/* accept */
	refused("mirror http://h/\naccept\n", false, "line 2: unknown keyword \"accept\" (or no argument)");
	refused("mirror http://h/\naccept application/json text/plain\n", false,
		"line 2: a media type with a byte other than [A-Za-z0-9.+/-]");
	refused("mirror http://h/\naccept application/json;q=1\n", false, "line 2: a media type with a byte other");
	refused("mirror http://h/\naccept */*\n", false, "a media type with a byte other");
	refused("mirror http://h/\naccept  a/b\n", false, "a media type with a byte other");
	refused("mirror http://h/\naccept json\n", false, "line 2: \"json\" is not a media type (TYPE/SUBTYPE)");
	refused("mirror http://h/\naccept /json\n", false, "is not a media type");
	refused("mirror http://h/\naccept a/\n", false, "is not a media type");
	refused("mirror http://h/\naccept a/b/c\n", false, "\"a/b/c\" is not a media type");
	refused("mirror http://h/\naccept a/b\naccept a/b\n", false, "line 3: the media type \"a/b\" twice");
	mt[127] = 'a';
	mt[128] = '\0';
	snprintf(text, sizeof(text), "mirror http://h/\naccept %s\n", mt);
	refused(text, false, "line 2: a media type longer than 127 bytes");
	refused("mirror http://h/\naccept t/1\naccept t/2\naccept t/3\naccept t/4\naccept t/5\n"
		"accept t/6\naccept t/7\naccept t/8\naccept t/9\n",
		false, "line 10: more than 8 accept lines");
	refused("mirror http://h/\nget 1 a 1\naccept a/b\n", false, "line 3: an accept after a get");

	/* basic: never quoted. */
	refused("mirror http://h/\nbasic\n", false, "line 2: unknown keyword \"basic\" (or no argument)");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3JldA==\nbasic dmVuZG9yOnMzY3JldA==\n", false,
		"line 3: a second basic line");
	refused("mirror http://h/\nget 1 a 1\nbasic dmVuZG9yOnMzY3JldA==\n", false, "line 3: a basic after a get");
	refused("mirror http://h/\nbasic vendor:s3cret\n", false,
		"line 2: \"basic\": not base64 (its length is not a multiple of 4)");
	refused("mirror http://h/\nbasic vendor:s3cret!!!\n", false,
		"line 2: \"basic\": not base64 (a byte outside A-Za-z0-9+/, or \"=\" inside)");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3JldA\n", false, "its length is not a multiple of 4");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3JldA= \n", false, "not base64");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3Jl=A==\n", false, "\"=\" inside");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3JldA===\n", false, "not base64");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3JldA-_\n", false, "a byte outside A-Za-z0-9+/");
	refused("mirror http://h/\nbasic ====\n", false, "not base64");
	/* "dmVuZG9yOnMzY3JldB==": the same bytes, with padding bits set. */
	refused("mirror http://h/\nbasic dmVuZG9yOnMzY3JldB==\n", false,
		"line 2: \"basic\": not base64 in its canonical form");
	refused("mirror http://h/\nbasic dmVuZG9yczNjcmV0\n", false,
		"line 2: \"basic\": the credentials are not USER:PASSWORD (no \":\")");
	refused("mirror http://h/\nbasic dmVuZG9yOnMzCmNyZXQ=\n", false,
		"line 2: \"basic\": the credentials hold a control character");
	refused("mirror http://h/\nbasic dmU6czNjcmV0fw==\n", false, "hold a control character");
	memset(text, 0, sizeof(text));
	memcpy(text, "mirror http://h/\nbasic ", 23);
	memset(text + 23, 'A', 1028);
	memcpy(text + 23 + 1028, "\n", 2);
	refused(text, false, "line 2: \"basic\": longer than 1024 bytes");
	/* 1024 bytes are the most: "AAA6" is 0x00 0x00 0x3a, a control
	 * character; "OjE6" is ":1:". */
	text[0] = '\0';
	snprintf(text, sizeof(text), "mirror http://h/\nbasic ");
	for (int i = 0; i < 256; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "OjE6");
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "\n");
	ck_assert_int_eq(parse_text(&in, false, text, &d), 0);
	ck_assert_uint_eq(strlen(in.basic), 1024);
	fatelf_fetch_batch_input_free(&in);
	snprintf(text, sizeof(text), "mirror http://h/\nbasic AAA6\n");
	refused(text, false, "control character");
}
END_TEST

/* A NUL inside a line (the line functions take a length). */
START_TEST(test_parse_nul)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d;

	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_line(&in, "mirror http://h/\0x", 18, &d), -EINVAL);
	ck_assert_msg(strstr(d.msg, "line 1: a byte that is not printable ASCII (at 17)"), "%s", d.msg);
	fatelf_fetch_batch_input_free(&in);
}
END_TEST

START_TEST(test_parse_too_many_gets)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d;
	char line[64];
	int r = 0;

	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_line(&in, "mirror http://h/", 16, &d), 0);
	for (uint32_t i = 0; i < FATELF_FETCH_BATCH_GETS_MAX && r == 0; i++) {
		int n = snprintf(line, sizeof(line), "get %" PRIu32 " o 1", i);

		r = fatelf_fetch_batch_input_line(&in, line, (size_t)n, &d);
	}
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(in.n_gets, FATELF_FETCH_BATCH_GETS_MAX);
	ck_assert_int_eq(fatelf_fetch_batch_input_line(&in, "get 1000000 o 1", 15, &d), -EINVAL);
	ck_assert_msg(strstr(d.msg, "line 1000002: more than 1000000 gets"), "%s", d.msg);
	fatelf_fetch_batch_input_free(&in);

	/* A million distinct ids end well. */
	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_line(&in, "mirror http://h/", 16, &d), 0);
	for (uint32_t i = 0; i < FATELF_FETCH_BATCH_GETS_MAX; i++) {
		int n = snprintf(line, sizeof(line), "get %" PRIu32 " o 1", FATELF_FETCH_BATCH_GETS_MAX - i);

		ck_assert_int_eq(fatelf_fetch_batch_input_line(&in, line, (size_t)n, &d), 0);
	}
	ck_assert_int_eq(fatelf_fetch_batch_input_end(&in, &d), 0);
	fatelf_fetch_batch_input_free(&in);
}
END_TEST

/* The whole input from a descriptor: lines across reads, a cut last
 * line, a long line without its newline. */
START_TEST(test_input_read)
{
	fatelf_fetch_batch_input in;
	fatelf_diag d;
	size_t cap = 8 << 20, len = 0;
	char *text = malloc(cap);
	int fd;

	ck_assert_ptr_nonnull(text);
	len += (size_t)snprintf(text, cap, "mirror http://h/\n");
	for (int i = 0; len + 100 < cap && i < 50000; i++)
		len += (size_t)snprintf(text + len, cap - len, "get %d objects/%02x/%064d.zst %d\n", i,
					i & 0xff, i, i + 1);
	fd = text_fd(text, len);
	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_read(&in, fd, &d), 0);
	ck_assert_uint_eq(in.n_gets, 50000);
	ck_assert_uint_eq(in.gets[49999].id, 49999);
	ck_assert_uint_eq(in.gets[49999].size, 50000);
	ck_assert_str_eq(fatelf_fetch_batch_path(&in, &in.gets[1234]),
			 "objects/d2/0000000000000000000000000000000000000000000000000000000000001234.zst");
	fatelf_fetch_batch_input_free(&in);
	close(fd);

	/* Cut short: "get 5 x 1" could have been "get 5 x 1000". */
	fd = text_fd("mirror http://h/\nget 5 x 1", 26);
	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_read(&in, fd, &d), -EINVAL);
	ck_assert_msg(strstr(d.msg, "line 2: no newline at its end"), "%s", d.msg);
	fatelf_fetch_batch_input_free(&in);
	close(fd);

	/* A line that never ends. */
	memset(text, 'x', 100000);
	memcpy(text, "mirror http://h/\nget 1 ", 23);
	fd = text_fd(text, 100000);
	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_read(&in, fd, &d), -EINVAL);
	ck_assert_msg(strstr(d.msg, "line 2: longer than 16384 bytes"), "%s", d.msg);
	fatelf_fetch_batch_input_free(&in);
	close(fd);

	/* Nothing at all. */
	fd = text_fd("", 0);
	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_read(&in, fd, &d), -EINVAL);
	ck_assert_msg(strstr(d.msg, "no \"mirror\" line"), "%s", d.msg);
	fatelf_fetch_batch_input_free(&in);
	close(fd);

	/* A read error is not the input's fault. */
	fatelf_fetch_batch_input_init(&in, false);
	ck_assert_int_eq(fatelf_fetch_batch_input_read(&in, -1, &d), -EBADF);
	fatelf_fetch_batch_input_free(&in);
	free(text);
}
END_TEST

/* ------------------------------------------------------------ frames */

START_TEST(test_frames)
{
	char head[FATELF_FETCH_BATCH_HEAD_MAX], fail[FATELF_FETCH_BATCH_FAIL_MAX];
	char text[3000];
	size_t n;

	n = fatelf_fetch_batch_head_data(head, 7, 0, 5);
	ck_assert_str_eq(head, "data 7 0 5\n");
	ck_assert_uint_eq(n, 11);
	n = fatelf_fetch_batch_head_data(head, 2147483648u, UINT64_MAX, UINT64_MAX);
	ck_assert_str_eq(head, "data 2147483648 18446744073709551615 18446744073709551615\n");
	ck_assert_uint_eq(n, strlen(head));
	n = fatelf_fetch_batch_head_done(head, 0, 0);
	ck_assert_str_eq(head, "done 0 0\n");
	ck_assert_uint_eq(n, 9);
	n = fatelf_fetch_batch_head_done(head, 4294967295u, UINT64_MAX);
	ck_assert_str_eq(head, "done 4294967295 18446744073709551615\n");

	n = fatelf_fetch_batch_line_fail(fail, 3, 404, "http://h/x: the server answered HTTP 404 Not Found");
	ck_assert_str_eq(fail, "fail 3 404 http://h/x: the server answered HTTP 404 Not Found\n");
	ck_assert_uint_eq(n, strlen(fail));
	/* One line of printable ASCII, whatever the text holds. */
	fatelf_fetch_batch_line_fail(fail, 3, 0, "a\nb\r\tc\x7f\xc3\xa9");
	ck_assert_str_eq(fail, "fail 3 0 a?b??c???\n");
	fatelf_fetch_batch_line_fail(fail, 3, 0, "");
	ck_assert_str_eq(fail, "fail 3 0 failed\n");
	fatelf_fetch_batch_line_fail(fail, 3, 0, NULL);
	ck_assert_str_eq(fail, "fail 3 0 failed\n");
	fatelf_fetch_batch_line_fail(fail, 3, -5, "x");
	ck_assert_str_eq(fail, "fail 3 0 x\n");
	fatelf_fetch_batch_line_fail(fail, 3, 1000, "x");
	ck_assert_str_eq(fail, "fail 3 0 x\n");
	/* Long text is cut. */
	memset(text, 'y', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	n = fatelf_fetch_batch_line_fail(fail, 2147483648u, 503, text);
	ck_assert_uint_eq(n, strlen("fail 2147483648 503 ") + FATELF_FETCH_BATCH_TEXT_MAX + 1);
	ck_assert_uint_eq(n, strlen(fail));
	ck_assert_int_eq(fail[n - 1], '\n');
	ck_assert_ptr_null(memchr(fail, '\n', n - 1));
}
END_TEST

START_TEST(test_writer)
{
	fatelf_fetch_batch_out out;
	uint8_t *big = pattern(600000, 3);
	int fd = out_file(), p[2];
	char *got, want[128];
	size_t len;

	ck_assert_int_eq(fatelf_fetch_batch_out_init(&out, fd), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_data(&out, 1, 0, "abc", 3), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_done(&out, 1, 3), 0);
	/* Buffered until a flush. */
	ck_assert_int_eq(lseek(fd, 0, SEEK_END), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_flush(&out), 0);
	got = fd_text(fd, &len);
	ck_assert_uint_eq(len, 11 + 3 + 9);
	ck_assert(memcmp(got, "data 1 0 3\nabcdone 1 3\n", len) == 0);
	free(got);

	/* More than the buffer goes out in order, and whole. */
	ck_assert_int_eq(fatelf_fetch_batch_out_data(&out, 2, 5, "x", 1), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_data(&out, 3, 0, big, 600000), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_fail(&out, 2, 0, "why\nnot"), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_flush(&out), 0);
	got = fd_text(fd, &len);
	snprintf(want, sizeof(want), "data 1 0 3\nabcdone 1 3\ndata 2 5 1\nxdata 3 0 600000\n");
	ck_assert_uint_eq(len, strlen(want) + 600000 + strlen("fail 2 0 why?not\n"));
	ck_assert(memcmp(got, want, strlen(want)) == 0);
	ck_assert(memcmp(got + strlen(want), big, 600000) == 0);
	ck_assert(memcmp(got + strlen(want) + 600000, "fail 2 0 why?not\n", 17) == 0);
	free(got);
	fatelf_fetch_batch_out_free(&out);
	close(fd);

	/* A reader that went away: -EPIPE, for good. */
	ck_assert_int_eq(pipe(p), 0);
	close(p[0]);
	ck_assert_int_eq(fatelf_fetch_batch_out_init(&out, p[1]), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_done(&out, 1, 1), 0);
	ck_assert_int_eq(fatelf_fetch_batch_out_flush(&out), -EPIPE);
	ck_assert_int_eq(fatelf_fetch_batch_out_done(&out, 2, 1), -EPIPE);
	ck_assert_int_eq(fatelf_fetch_batch_out_data(&out, 2, 0, big, 600000), -EPIPE);
	ck_assert_int_eq(fatelf_fetch_batch_out_flush(&out), -EPIPE);
	fatelf_fetch_batch_out_free(&out);
	close(p[1]);
	free(big);
}
END_TEST

/* ------------------------------------------------------------ batches over file: */

START_TEST(test_run_file_mirrors)
{
	const char *dir = tu_tmpdir();
	fatelf_fetch_opts o = { .allow_file = true };
	fatelf_fetch_batch_input in;
	struct rebuilt rb;
	uint8_t *a = pattern(300000, 1), *b = pattern(5, 2), *c = pattern(70000, 3);
	char text[4096], *got;
	fatelf_diag d;
	size_t len, i;
	int fd;

	ck_assert_int_eq(mkdir("one", 0755), 0);
	ck_assert_int_eq(mkdir("two", 0755), 0);
	ck_assert_int_eq(mkdir("two/objects", 0755), 0);
	ck_assert_int_eq(mkdir("one/objects", 0755), 0);
	tu_write_file("two/objects/a", a, 300000);
	tu_write_file("two/objects/b", b, 5);
	tu_write_file("two/objects/empty", "", 0);
	/* The first mirror has a wrong copy of c (shorter) and a directory. */
	tu_write_file("one/objects/c", c, 1000);
	tu_write_file("two/objects/c", c, 70000);
	ck_assert_int_eq(mkdir("one/objects/dir", 0755), 0);

	snprintf(text, sizeof(text),
		 "mirror file://%s/one\n"
		 "mirror file://localhost%s/two/\n"
		 "get 1 objects/a 300000\n"
		 "get 2 objects/b 0\n"
		 "get 3 objects/empty 0\n"
		 "get 4 objects/c 70000\n"
		 "get 5 objects/missing 10\n"
		 "get 6 objects/b 6\n"
		 "get 7 objects/dir 0\n",
		 dir, dir);
	ck_assert_int_eq(parse_text(&in, true, text, &d), 0);

	for (unsigned parallel = 1; parallel <= 8; parallel += 7) {
		fd = out_file();
		ck_assert_int_eq(fatelf_fetch_batch_run(&in, &o, parallel, fd, &d), 1);
		got = fd_text(fd, &len);
		close(fd);
		rebuild(got, len, &rb);
		free(got);
		ck_assert_uint_eq(rb.n, 7);

		i = rb_find(&rb, 1);
		ck_assert_int_eq(rb.state[i], 1);
		ck_assert_uint_eq(rb.total[i], 300000);
		ck_assert(memcmp(rb.buf[i], a, 300000) == 0);
		i = rb_find(&rb, 2);
		ck_assert_int_eq(rb.state[i], 1);
		ck_assert_uint_eq(rb.total[i], 5);
		ck_assert(memcmp(rb.buf[i], b, 5) == 0);
		i = rb_find(&rb, 3);
		ck_assert_int_eq(rb.state[i], 1);
		ck_assert_uint_eq(rb.total[i], 0);
		/* The short copy on the first mirror is skipped for the second's. */
		i = rb_find(&rb, 4);
		ck_assert_int_eq(rb.state[i], 1);
		ck_assert_uint_eq(rb.total[i], 70000);
		ck_assert(memcmp(rb.buf[i], c, 70000) == 0);

		i = rb_find(&rb, 5);
		ck_assert_int_eq(rb.state[i], 2);
		ck_assert_int_eq(rb.code[i], 0);
		/* curl writes file://localhost/ as file:/// */
		snprintf(text, sizeof(text),
			 "file://%s/two/objects/missing: cannot open: No such file or directory", dir);
		ck_assert_str_eq(rb.text[i], text);
		i = rb_find(&rb, 6);
		ck_assert_int_eq(rb.state[i], 2);
		ck_assert_msg(strstr(rb.text[i], "/two/objects/b: the file is 5 bytes, not the expected 6"), "%s",
			      rb.text[i]);
		ck_assert_ptr_null(rb.buf[i]);
		i = rb_find(&rb, 7);
		ck_assert_int_eq(rb.state[i], 2);
		ck_assert_msg(strstr(rb.text[i], "/two/objects/dir: cannot open: No such file"), "%s", rb.text[i]);
		rb_free(&rb);
	}
	fatelf_fetch_batch_input_free(&in);

	/* Every get done: 0. --max-bytes bounds an object of size 0. */
	snprintf(text, sizeof(text), "mirror file://%s/two\nget 1 objects/a 0\nget 2 objects/b 0\n", dir);
	ck_assert_int_eq(parse_text(&in, true, text, &d), 0);
	fd = out_file();
	ck_assert_int_eq(fatelf_fetch_batch_run(&in, &o, 0, fd, &d), 0);
	close(fd);
	o.max_bytes = 1000;
	fd = out_file();
	ck_assert_int_eq(fatelf_fetch_batch_run(&in, &o, 0, fd, &d), 1);
	got = fd_text(fd, &len);
	close(fd);
	rebuild(got, len, &rb);
	free(got);
	i = rb_find(&rb, 1);
	ck_assert_int_eq(rb.state[i], 2);
	ck_assert_msg(strstr(rb.text[i], "the download is larger than the limit of 1000 bytes"), "%s", rb.text[i]);
	ck_assert_int_eq(rb.state[rb_find(&rb, 2)], 1);
	rb_free(&rb);
	fatelf_fetch_batch_input_free(&in);

	/* A mirror that cannot be reached, code 0, and the reader gone. */
	ck_assert_int_eq(parse_text(&in, false, "mirror http://127.0.0.1:1/r\nget 9 x 0\n", &d), 0);
	o = (fatelf_fetch_opts){ .timeout_sec = 5 };
	fd = out_file();
	ck_assert_int_eq(fatelf_fetch_batch_run(&in, &o, 0, fd, &d), 1);
	got = fd_text(fd, &len);
	close(fd);
	ck_assert_msg(strncmp(got, "fail 9 0 http://127.0.0.1:1/r/x: ", 33) == 0, "%s", got);
	free(got);
	{
		int p[2];

		ck_assert_int_eq(pipe(p), 0);
		close(p[0]);
		ck_assert_int_eq(fatelf_fetch_batch_run(&in, &o, 0, p[1], &d), -EPIPE);
		close(p[1]);
	}
	fatelf_fetch_batch_input_free(&in);
	free(a);
	free(b);
	free(c);
}
END_TEST

static Suite *fetch_batch_suite(void)
{
	Suite *s = suite_create("fetch_batch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_parse_good);
	tcase_add_test(tc, test_parse_refused);
	tcase_add_test(tc, test_parse_registry);
	tcase_add_test(tc, test_parse_nul);
	tcase_add_test(tc, test_parse_too_many_gets);
	tcase_add_test(tc, test_input_read);
	tcase_add_test(tc, test_frames);
	tcase_add_test(tc, test_writer);
	tcase_add_test(tc, test_run_file_mirrors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* The tests talk to 127.0.0.1 directly; a reader that goes away is
	 * an error to see, not a signal. */
	static const char *proxies[] = { "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
					 "all_proxy", "ALL_PROXY" };
	for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
		unsetenv(proxies[i]);
	signal(SIGPIPE, SIG_IGN);
	return tu_run_suite(fetch_batch_suite());
}
