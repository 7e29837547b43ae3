/*
 * fatelf-oci: `fatelf repo push BUNDLE oci://HOST[:PORT]/NAME[:TAG]`
 * (doc/repository.md, "OCI registries"). The bundle is laid out as a
 * repository in a private temporary directory (its objects, manifest,
 * signature and pack list, exactly as `fatelf repo add` stores them);
 * then every object becomes a blob, one image manifest per target lists
 * the objects a native install there reads, one more lists them all, and
 * an image index under the tag names them. A blob or manifest the
 * registry already has is not sent again (HEAD first; a cross-repository
 * mount with --from), so a push of a version that changed one file
 * uploads that file's blob and the manifests alone. Auth: anonymous, then
 * the registry's WWW-Authenticate challenge (a bearer token from its
 * realm, or Basic), with credentials from a file only its owner reads.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exitstatus.h"
#include "hex.h"
#include "io.h"
#include "macro.h"
#include "oci.h"
#include "text.h"

/* Exit status: cmd.h's, and 4 when the registry refused the credentials. */
#define EXIT_FAILED     EXIT_INVALID
#define EXIT_PERMISSION 4

#define REPLY_MAX       (64u << 10)

static const char usage[] =
	"Usage: fatelf repo push [OPTIONS] BUNDLE oci://HOST[:PORT]/NAME[:TAG]\n"
	"\n"
	"Push a fat bundle to an OCI registry as an image index: one manifest per\n"
	"target (what a native install there fetches), one for the whole fat\n"
	"content, and the package's objects as blobs. TAG defaults to the package's\n"
	"version. A blob or manifest the registry has already is not sent again.\n"
	"\n"
	"Options:\n"
	"  --credentials FILE  USER:PASSWORD on one line, for Basic auth or a token;\n"
	"                      FILE must be readable by its owner alone\n"
	"  --from NAME         try a cross-repository mount from NAME, on the same\n"
	"                      registry, before uploading a blob\n"
	"  --plain-http        speak HTTP to a registry that is not on a loopback\n"
	"                      address (one on 127.0.0.0/8 or ::1 always is)\n"
	"  --json              print the result as JSON\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 pushed, 1 an invalid bundle or a registry that refused or\n"
	"failed, 2 usage, 3 a system error, 4 credentials missing or refused.\n";

struct buf {
	char *p;
	size_t len, max;
};

struct reg {
	CURL *c;
	fatelf_oci_ref ref;
	char base[600];                 /* scheme://host/v2/name */
	char user[256], pass[256];
	bool have_creds;
	char *auth;                     /* "Authorization: Bearer ..." once a challenge was met */
	bool basic;                     /* ... or Basic, with the credentials */
	long status;
	char location[4096];
	char challenge[2048];
	struct buf body;
	/* the upload's body */
	int in_fd;
	const char *in_mem;
	uint64_t in_len, in_off;
	/* counts */
	uint64_t uploaded, uploaded_bytes, present, mounted, manifests_put, manifests_present;
	uint64_t manifest_bytes;        /* the manifests' and the index's, sent */
};

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("fatelf: repo push: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'fatelf repo push --help'.\n", stderr);
	exit(EXIT_USAGE);
}

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("fatelf: repo push: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

/* ------------------------------------------------------------ HTTP */

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
	struct reg *g = ud;
	size_t len = size * n;

	if (len > g->body.max - g->body.len)
		return 0;
	memcpy(g->body.p + g->body.len, ptr, len);
	g->body.len += len;
	g->body.p[g->body.len] = '\0';
	return len;
}

static void header_value(const char *line, size_t len, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name), k;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	line += nl + 1;
	len -= nl + 1;
	while (len > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	k = MIN(len, outsz - 1);
	memcpy(out, line, k);
	out[k] = '\0';
}

static size_t on_header(char *ptr, size_t size, size_t n, void *ud)
{
	struct reg *g = ud;
	size_t len = size * n;

	header_value(ptr, len, "Location", g->location, sizeof(g->location));
	header_value(ptr, len, "WWW-Authenticate", g->challenge, sizeof(g->challenge));
	return len;
}

static size_t on_read(char *ptr, size_t size, size_t n, void *ud)
{
	struct reg *g = ud;
	size_t want = (size_t)MIN((uint64_t)(size * n), g->in_len - g->in_off);
	ssize_t k;

	if (want == 0)
		return 0;
	if (g->in_mem) {
		memcpy(ptr, g->in_mem + g->in_off, want);
		g->in_off += want;
		return want;
	}
	k = pread_all(g->in_fd, ptr, want, g->in_off);
	if (k <= 0)
		return CURL_READFUNC_ABORT;
	g->in_off += (uint64_t)k;
	return (size_t)k;
}

struct req {
	const char *method;
	const char *url;
	const char *content_type;
	const char *accept;
	int fd;                         /* body from fd (len bytes), or mem */
	const void *mem;
	uint64_t len;
	bool realm;                     /* to the token service */
};

/* Whether url is on the registry's own scheme, host and port. */
static bool on_registry(const struct reg *g, const char *url)
{
	size_t sl = strlen(g->ref.scheme), hl = strlen(g->ref.host);

	return strncmp(url, g->ref.scheme, sl) == 0 && strncmp(url + sl, "://", 3) == 0 &&
	       strncmp(url + sl + 3, g->ref.host, hl) == 0 && url[sl + 3 + hl] == '/';
}

static int send_once(struct reg *g, const struct req *q)
{
	struct curl_slist *hs = NULL;
	char h[512];
	CURLcode rc;

	curl_easy_reset(g->c);
	g->body.len = 0;
	g->body.p[0] = '\0';
	g->location[0] = '\0';
	g->challenge[0] = '\0';
	g->status = 0;
	curl_easy_setopt(g->c, CURLOPT_URL, q->url);
	curl_easy_setopt(g->c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(g->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(g->c, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(g->c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(g->c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(g->c, CURLOPT_USERAGENT, "fatelf/" PACKAGE_VERSION);
	curl_easy_setopt(g->c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(g->c, CURLOPT_WRITEDATA, g);
	curl_easy_setopt(g->c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(g->c, CURLOPT_HEADERDATA, g);
	/* The credentials and the token go to the registry itself (and the
	 * credentials to its token service), never to another host that an
	 * upload's Location names. */
	if (g->auth && on_registry(g, q->url))
		hs = curl_slist_append(hs, g->auth);
	if (g->basic && (q->realm || on_registry(g, q->url))) {
		curl_easy_setopt(g->c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(g->c, CURLOPT_USERNAME, g->user);
		curl_easy_setopt(g->c, CURLOPT_PASSWORD, g->pass);
	}
	if (q->content_type) {
		snprintf(h, sizeof(h), "Content-Type: %s", q->content_type);
		hs = curl_slist_append(hs, h);
	}
	if (q->accept) {
		snprintf(h, sizeof(h), "Accept: %s", q->accept);
		hs = curl_slist_append(hs, h);
	}
	if (strcmp(q->method, "HEAD") == 0) {
		curl_easy_setopt(g->c, CURLOPT_NOBODY, 1L);
	} else if (strcmp(q->method, "PUT") == 0) {
		g->in_fd = q->fd;
		g->in_mem = q->mem;
		g->in_len = q->len;
		g->in_off = 0;
		curl_easy_setopt(g->c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(g->c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(g->c, CURLOPT_READDATA, g);
		curl_easy_setopt(g->c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->len);
		/* no "Expect: 100-continue" round trip */
		hs = curl_slist_append(hs, "Expect:");
	} else if (strcmp(q->method, "POST") == 0) {
		curl_easy_setopt(g->c, CURLOPT_POST, 1L);
		curl_easy_setopt(g->c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(g->c, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(g->c, CURLOPT_HTTPHEADER, hs);
	rc = curl_easy_perform(g->c);
	curl_slist_free_all(hs);
	if (rc != CURLE_OK)
		return fail(EXIT_SYSTEM, "%s %s: %s", q->method, q->url, curl_easy_strerror(rc)), -EIO;
	curl_easy_getinfo(g->c, CURLINFO_RESPONSE_CODE, &g->status);
	return 0;
}

/* After a 401: a bearer token from the challenge's realm, or Basic. */
static int authenticate(struct reg *g)
{
	fatelf_oci_challenge ch;
	char url[2048], scope[600];
	char *es = NULL, *esc = NULL, *tok = NULL;
	long status;
	int k;

	if (fatelf_oci_challenge_parse(g->challenge, &ch) < 0)
		return fail(EXIT_PERMISSION, "%s: an authentication challenge this tool does not speak", g->ref.host),
		       -EACCES;
	if (ch.scheme == FATELF_OCI_AUTH_BASIC) {
		if (!g->have_creds || g->basic)
			return fail(EXIT_PERMISSION, "%s: the registry %s credentials (--credentials FILE)", g->ref.host,
				    g->basic ? "refused the" : "wants"), -EACCES;
		g->basic = true;
		return 0;
	}
	if (ch.scope[0])
		snprintf(scope, sizeof(scope), "%s", ch.scope);
	else
		snprintf(scope, sizeof(scope), "repository:%s:pull,push", g->ref.name);
	if (strncmp(ch.realm, "https://", 8) != 0 &&
	    !(strncmp(ch.realm, "http://", 7) == 0 && strcmp(g->ref.scheme, "http") == 0))
		return fail(EXIT_PERMISSION, "%s: token realm %s is not https", g->ref.host, ch.realm), -EACCES;
	es = curl_easy_escape(g->c, ch.service, 0);
	esc = curl_easy_escape(g->c, scope, 0);
	snprintf(url, sizeof(url), "%s%sservice=%s&scope=%s", ch.realm, strchr(ch.realm, '?') ? "&" : "?",
		 es ? es : "", esc ? esc : "");
	curl_free(es);
	curl_free(esc);
	free(g->auth);
	g->auth = NULL;
	if (send_once(g, &(struct req){ .method = "GET", .url = url, .realm = true }) < 0)
		return -EIO;
	status = g->status;
	if (status == 401 && g->have_creds) {
		/* the realm asks for the credentials */
		g->basic = true;
		k = send_once(g, &(struct req){ .method = "GET", .url = url, .realm = true });
		g->basic = false;
		if (k < 0)
			return -EIO;
		status = g->status;
	}
	if (status != 200)
		return fail(EXIT_PERMISSION, "%s: the token service said %ld%s", g->ref.host, status,
			    g->have_creds ? "" : " (no credentials given: --credentials FILE)"), -EACCES;
	k = fatelf_oci_token_parse(g->body.p, g->body.len, &tok);
	if (k < 0)
		return fail(EXIT_FAILED, "%s: the token service's reply has no token", g->ref.host), k;
	k = asprintf(&g->auth, "Authorization: Bearer %s", tok);
	explicit_bzero(tok, strlen(tok));
	free(tok);
	if (k < 0) {
		g->auth = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int send_req(struct reg *g, const struct req *q)
{
	int k = send_once(g, q);

	if (k == 0 && g->status == 401) {
		k = authenticate(g);
		if (k == 0)
			k = send_once(g, q);
		if (k == 0 && g->status == 401)
			return fail(EXIT_PERMISSION, "%s: the registry refused the credentials", g->ref.host), -EACCES;
	}
	return k;
}

/* ------------------------------------------------------------ blobs */

static void digest_text(const uint8_t sha[32], char out[72])
{
	memcpy(out, "sha256:", 7);
	fatelf_hex(sha, 32, out + 7);
}

static int blob_push(struct reg *g, const uint8_t digest[32], int fd, const void *mem, uint64_t len, const char *from)
{
	char dg[72], url[4800], put[8300];
	const char *loc;
	int k;

	digest_text(digest, dg);
	snprintf(url, sizeof(url), "%s/blobs/%s", g->base, dg);
	if ((k = send_req(g, &(struct req){ .method = "HEAD", .url = url })) < 0)
		return k;
	if (g->status == 200) {
		g->present++;
		return 0;
	}
	if (g->status != 404)
		return fail(EXIT_FAILED, "HEAD %s: the registry said %ld", url, g->status), -EIO;
	if (from) {
		char *ef = curl_easy_escape(g->c, from, 0);

		snprintf(url, sizeof(url), "%s/blobs/uploads/?mount=%s&from=%s", g->base, dg, ef ? ef : "");
		curl_free(ef);
		if ((k = send_req(g, &(struct req){ .method = "POST", .url = url })) < 0)
			return k;
		if (g->status == 201) {
			g->mounted++;
			return 0;
		}
		/* 202: the registry started an upload instead */
	} else {
		snprintf(url, sizeof(url), "%s/blobs/uploads/", g->base);
		if ((k = send_req(g, &(struct req){ .method = "POST", .url = url })) < 0)
			return k;
	}
	if (g->status != 202 || !g->location[0])
		return fail(EXIT_FAILED, "POST %s: the registry said %ld", url, g->status), -EIO;
	loc = g->location;
	if (loc[0] == '/')
		snprintf(put, sizeof(put), "%s://%s%s%sdigest=%s", g->ref.scheme, g->ref.host, loc,
			 strchr(loc, '?') ? "&" : "?", dg);
	else if (strncmp(loc, "http://", 7) == 0 || strncmp(loc, "https://", 8) == 0)
		snprintf(put, sizeof(put), "%s%sdigest=%s", loc, strchr(loc, '?') ? "&" : "?", dg);
	else
		return fail(EXIT_FAILED, "POST %s: an upload location this tool cannot follow", url), -EIO;
	if ((k = send_req(g, &(struct req){ .method = "PUT", .url = put, .content_type = "application/octet-stream",
					   .fd = fd, .mem = mem, .len = len })) < 0)
		return k;
	if (g->status != 201)
		return fail(EXIT_FAILED, "PUT of blob %s: the registry said %ld: %.200s", dg, g->status, g->body.p), -EIO;
	g->uploaded++;
	g->uploaded_bytes += len;
	return 0;
}

static int manifest_push(struct reg *g, const char *ref, const char *media_type, const char *text, size_t len,
			 bool head_first)
{
	char url[4800];
	int k;

	snprintf(url, sizeof(url), "%s/manifests/%s", g->base, ref);
	if (head_first) {
		if ((k = send_req(g, &(struct req){ .method = "HEAD", .url = url, .accept = media_type })) < 0)
			return k;
		if (g->status == 200) {
			g->manifests_present++;
			return 0;
		}
	}
	if ((k = send_req(g, &(struct req){ .method = "PUT", .url = url, .content_type = media_type, .fd = -1,
					   .mem = text, .len = len })) < 0)
		return k;
	if (g->status != 201)
		return fail(EXIT_FAILED, "PUT of manifest %s: the registry said %ld: %.300s", ref, g->status, g->body.p),
		       -EIO;
	g->manifests_put++;
	g->manifest_bytes += len;
	return 0;
}

/* ------------------------------------------------------------ the push */

/* An object's blob: its file in the repository, and the file's digest. */
struct oblob {
	fatelf_oci_blob b;
	int fd;
};

static int file_digest(int fd, uint8_t ret[32], uint64_t *ret_size)
{
	uint8_t buf[64 << 10];
	fatelf_sha256 *h = fatelf_sha256_new();
	uint64_t off = 0;

	if (!h)
		return -ENOMEM;
	for (;;) {
		ssize_t n = pread_all(fd, buf, sizeof(buf), off);

		if (n < 0) {
			fatelf_sha256_free(h);
			return (int)n;
		}
		if (n == 0)
			break;
		fatelf_sha256_update(h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	fatelf_sha256_final(h, ret);
	fatelf_sha256_free(h);
	*ret_size = off;
	return 0;
}

static int open_object(const fatelf_repo_dir *r, const uint8_t sha[32], uint64_t size, struct oblob *ob)
{
	char rel[FATELF_REPO_OBJECT_PATH_MAX];
	int k;

	fatelf_repo_object_path(sha, rel);
	ob->fd = openat(r->fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (ob->fd < 0)
		return -errno;
	memcpy(ob->b.object, sha, 32);
	ob->b.object_size = size;
	k = file_digest(ob->fd, ob->b.digest, &ob->b.size);
	return k;
}

struct layerset {
	const struct oblob *all;        /* sorted by object, as the pack's objects */
	size_t nall;
	fatelf_oci_blob *v;
	size_t n;
};

static int layer_add(void *ctx, const uint8_t sha[32], uint64_t size)
{
	struct layerset *s = ctx;
	size_t lo = 0, hi = s->nall;

	(void)size;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = memcmp(s->all[mid].b.object, sha, 32);

		if (c == 0) {
			s->v[s->n++] = s->all[mid].b;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

static int read_creds(const char *file, struct reg *g)
{
	struct stat st;
	char *text = NULL, *colon, *nl;
	size_t len;
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), k;

	if (fd < 0)
		return fail(EXIT_SYSTEM, "%s: %s", file, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
		close(fd);
		return fail(EXIT_FAILED, "%s: a credentials file must be a regular file of yours that no one "
			    "else may read (chmod 600)", file);
	}
	k = read_fd_max(fd, 1024, &text, &len);
	close(fd);
	if (k < 0)
		return fail(EXIT_SYSTEM, "%s: %s", file, strerror(-k));
	nl = strpbrk(text, "\r\n");
	if (nl)
		*nl = '\0';
	colon = strchr(text, ':');
	if (!colon || colon == text || strlen(text) >= sizeof(g->user) || strlen(colon + 1) >= sizeof(g->pass)) {
		explicit_bzero(text, len);
		free(text);
		return fail(EXIT_FAILED, "%s: expected one line USER:PASSWORD", file);
	}
	*colon = '\0';
	snprintf(g->user, sizeof(g->user), "%s", text);
	snprintf(g->pass, sizeof(g->pass), "%s", colon + 1);
	g->have_creds = true;
	explicit_bzero(text, len);
	free(text);
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* The temporary directory (mkdtemp's: no one else writes in it). */
static void rm_tree(const char *path)
{
	(void)nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* One push's state: the bundle laid out as a repository in tmp, the
 * version it holds, and what becomes of it in the registry. */
struct push {
	char tmp[PATH_MAX];
	fatelf_repo_dir *r;
	const fatelf_repo_version *v;
	fatelf_manifest *m;
	fatelf_repo_pack *pack;
	char *mtext, *sig;
	size_t mlen, slen;
	struct oblob *obs, packb;       /* obs: one per pack object, in its order */
	fatelf_oci_blob config;
	struct layerset ls;
	fatelf_oci_entry *entries;      /* the index's: one manifest per target, then the fat one */
	char **texts;
	size_t nentries;
	char *index;
	size_t index_len;
	char index_digest[72];
};

static void push_done(struct push *p)
{
	for (size_t i = 0; p->obs && p->pack && i < p->pack->nobjects; i++)
		if (p->obs[i].fd >= 0)
			close(p->obs[i].fd);
	if (p->packb.fd >= 0)
		close(p->packb.fd);
	for (size_t i = 0; p->texts && i < p->nentries; i++)
		free(p->texts[i]);
	free(p->texts);
	free(p->entries);
	free(p->ls.v);
	free(p->obs);
	free(p->index);
	free(p->mtext);
	free(p->sig);
	fatelf_repo_pack_free(p->pack);
	fatelf_manifest_free(p->m);
	fatelf_repo_close(p->r);
	if (p->tmp[0])
		rm_tree(p->tmp);
}

/* The bundle added to a new repository in p->tmp, as `fatelf repo add`
 * stores it; the tag, when none was named, is its version. Returns the
 * exit status. */
static int push_stage(struct push *p, const char *bundle, struct reg *g)
{
	const char *tmp = getenv("TMPDIR");
	fatelf_repo_add_result res;
	fatelf_bundle_read_opts ro = { 0 };
	char untrusted[FATELF_MS_KEYID_SIZE * 2 + 1];
	fatelf_diag d = { 0 };
	int fd, k;

	snprintf(p->tmp, sizeof(p->tmp), "%s/fatelf-push.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(p->tmp)) {
		p->tmp[0] = '\0';
		return fail(EXIT_SYSTEM, "cannot make a temporary directory: %s", strerror(errno));
	}
	fd = open(bundle, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(EXIT_SYSTEM, "cannot open %s: %s", bundle, strerror(errno));
	ro.untrusted_keyid = untrusted;
	if ((k = fatelf_repo_init(p->tmp, NULL, (int64_t)time(NULL), &d)) < 0 ||
	    (k = fatelf_repo_open(p->tmp, true, NULL, 0, &p->r, &d)) < 0 ||
	    (k = fatelf_repo_add_bundle(p->r, p->r->index, fd, &ro, &res, &d)) < 0) {
		close(fd);
		return fail(EXIT_FAILED, "%s: %s", bundle, fatelf_diag_text(&d, k));
	}
	close(fd);
	if (p->r->index->npackages != 1 || p->r->index->packages[0].nversions != 1)
		return fail(EXIT_FAILED, "%s: not one package version", bundle);
	p->v = &p->r->index->packages[0].versions[0];
	if (!g->ref.tag[0]) {
		if (!fatelf_oci_tag_valid(p->v->version))
			return fail(EXIT_USAGE, "version %s is not a valid tag: name one (oci://HOST/NAME:TAG)",
				    p->v->version);
		snprintf(g->ref.tag, sizeof(g->ref.tag), "%s", p->v->version);
	}
	return EXIT_OK;
}

/* The version's manifest (its text, signature and parse) and pack list. */
static int push_load_version(struct push *p, const char *bundle)
{
	char rel[FATELF_REPO_MANIFEST_PATH_MAX];
	fatelf_diag d = { 0 };
	int k;

	fatelf_repo_manifest_path(p->v->manifest, false, rel);
	if ((k = fatelf_repo_read_file(p->r, rel, 64u << 20, &p->mtext, &p->mlen, &d)) < 0)
		goto diag;
	if (p->v->signed_manifest) {
		fatelf_repo_manifest_path(p->v->manifest, true, rel);
		if ((k = fatelf_repo_read_file(p->r, rel, FATELF_REPO_SIG_MAX, &p->sig, &p->slen, &d)) < 0)
			goto diag;
	}
	if ((k = fatelf_manifest_parse(p->mtext, p->mlen, NULL, &p->m, &d)) < 0 ||
	    (k = fatelf_repo_load_pack(p->r, p->v, p->m, &p->pack, &d)) < 0)
		goto diag;
	return EXIT_OK;
diag:
	return fail(EXIT_FAILED, "%s: %s", bundle, fatelf_diag_text(&d, k));
}

/* Every object's blob opened and digested, in the pack's order (by
 * object), the pack list's and the config's (the manifest itself). */
static int push_open_blobs(struct push *p)
{
	size_t nobjects = p->pack->nobjects;
	int k;

	p->obs = calloc(nobjects ? nobjects : 1, sizeof(*p->obs));
	p->ls.v = calloc(nobjects ? nobjects : 1, sizeof(*p->ls.v));
	p->entries = calloc(p->m->ntargets + 1, sizeof(*p->entries));
	p->texts = calloc(p->m->ntargets + 1, sizeof(*p->texts));
	if (!p->obs || !p->ls.v || !p->entries || !p->texts)
		return fail(EXIT_SYSTEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
	for (size_t i = 0; i < nobjects; i++)
		p->obs[i].fd = -1;
	for (size_t i = 0; i < nobjects; i++)
		if ((k = open_object(p->r, p->pack->objects[i].sha256, p->pack->objects[i].size, &p->obs[i])) < 0)
			return fail(EXIT_SYSTEM, "object %zu of the version: %s", i, strerror(-k));
	if ((k = open_object(p->r, p->v->pack, p->v->pack_size, &p->packb)) < 0)
		return fail(EXIT_SYSTEM, "the pack list: %s", strerror(-k));
	memcpy(p->config.digest, p->v->manifest, 32);
	memcpy(p->config.object, p->v->manifest, 32);
	p->config.size = p->config.object_size = p->mlen;
	p->ls.all = p->obs;
	p->ls.nall = nobjects;
	return EXIT_OK;
}

/* The exit status of a failed blob_push or manifest_push (reported). */
static int push_failed(int k)
{
	return k == -EACCES ? EXIT_PERMISSION : EXIT_FAILED;
}

/* Blobs first: a registry takes a manifest only when it has its blobs. */
static int push_blobs(struct push *p, struct reg *g, const char *from)
{
	int k;

	for (size_t i = 0; i < p->pack->nobjects; i++)
		if ((k = blob_push(g, p->obs[i].b.digest, p->obs[i].fd, NULL, p->obs[i].b.size, from)) < 0)
			return push_failed(k);
	if ((p->v->frames > 0 && (k = blob_push(g, p->packb.b.digest, p->packb.fd, NULL, p->packb.b.size, from)) < 0) ||
	    (k = blob_push(g, p->config.digest, -1, p->mtext, p->mlen, from)) < 0)
		return push_failed(k);
	return EXIT_OK;
}

static int sha256_of(const char *text, size_t len, uint8_t ret[32])
{
	fatelf_sha256 *h = fatelf_sha256_new();

	if (!h)
		return -ENOMEM;
	fatelf_sha256_update(h, text, len);
	fatelf_sha256_final(h, ret);
	fatelf_sha256_free(h);
	return 0;
}

/* One image manifest per target, then the fat one, then the index that
 * names them under the tag. */
static int push_manifests(struct push *p, struct reg *g)
{
	uint8_t sha[32];
	char dg[72];
	size_t tlen;
	int k;

	for (size_t t = 0; t <= p->m->ntargets; t++) {
		const fatelf_target *tg = t < p->m->ntargets ? &p->m->targets[t] : NULL;
		fatelf_oci_entry *e = &p->entries[p->nentries];

		p->ls.n = 0;
		if (fatelf_oci_objects_for(p->m, p->pack, tg, layer_add, &p->ls) < 0)
			return fail(EXIT_FAILED, "the pack list lacks an object the manifest needs");
		/* the pack list only where it says more than the manifest: frames */
		if (fatelf_oci_manifest_json(p->m, &p->config, p->sig, p->v->frames > 0 ? &p->packb.b : NULL,
					     p->ls.v, p->ls.n, tg, &p->texts[p->nentries], &tlen) < 0 ||
		    sha256_of(p->texts[p->nentries], tlen, e->digest) < 0)
			return fail(EXIT_SYSTEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
		digest_text(e->digest, dg);
		e->size = tlen;
		e->target = tg;
		if ((k = manifest_push(g, dg, FATELF_OCI_MT_MANIFEST, p->texts[p->nentries], tlen, true)) < 0)
			return push_failed(k);
		p->nentries++;
	}
	if (fatelf_oci_index_json(p->m, p->entries, p->nentries, &p->index, &p->index_len) < 0)
		return fail(EXIT_SYSTEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
	if ((k = manifest_push(g, g->ref.tag, FATELF_OCI_MT_INDEX, p->index, p->index_len, false)) < 0)
		return push_failed(k);
	g->manifests_put--;     /* counted: the manifests alone */
	if (sha256_of(p->index, p->index_len, sha) < 0)
		return fail(EXIT_SYSTEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
	digest_text(sha, p->index_digest);
	return EXIT_OK;
}

static void push_print_json(const struct push *p, const struct reg *g)
{
	char ref[sizeof(g->ref.host) + sizeof(g->ref.name) + sizeof(g->ref.tag) + 16];
	json_object *o = json_object_new_object();

	snprintf(ref, sizeof(ref), "oci://%s/%s:%s", g->ref.host, g->ref.name, g->ref.tag);
	json_object_object_add(o, "package", json_object_new_string(p->m->name));
	json_object_object_add(o, "version", json_object_new_string(p->m->version));
	json_object_object_add(o, "reference", json_object_new_string(ref));
	json_object_object_add(o, "index", json_object_new_string(p->index_digest));
	json_object_object_add(o, "manifests", json_object_new_int64((int64_t)p->nentries));
	json_object_object_add(o, "manifests_put", json_object_new_int64((int64_t)g->manifests_put));
	json_object_object_add(o, "blobs",
			       json_object_new_int64((int64_t)(p->pack->nobjects + 1 + (p->v->frames > 0))));
	json_object_object_add(o, "uploaded", json_object_new_int64((int64_t)g->uploaded));
	json_object_object_add(o, "uploaded_bytes", json_object_new_int64((int64_t)g->uploaded_bytes));
	json_object_object_add(o, "present", json_object_new_int64((int64_t)g->present));
	json_object_object_add(o, "mounted", json_object_new_int64((int64_t)g->mounted));
	json_object_object_add(o, "manifest_bytes", json_object_new_int64((int64_t)g->manifest_bytes));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static void push_print(const struct push *p, const struct reg *g)
{
	printf("pushed %s %s to oci://%s/%s:%s (%s): %zu manifests (%" PRIu64 " new), %" PRIu64
	       " blobs uploaded (%" PRIu64 " bytes), %" PRIu64 " already there%s\n",
	       p->m->name, p->m->version, g->ref.host, g->ref.name, g->ref.tag, p->index_digest, p->nentries,
	       g->manifests_put, g->uploaded, g->uploaded_bytes, g->present + g->mounted,
	       g->mounted ? " (mounted)" : "");
}

static int push(const char *bundle, struct reg *g, const char *from, bool json)
{
	struct push p = { .packb = { .fd = -1 } };
	int status;

	if ((status = push_stage(&p, bundle, g)) == EXIT_OK &&
	    (status = push_load_version(&p, bundle)) == EXIT_OK &&
	    (status = push_open_blobs(&p)) == EXIT_OK &&
	    (status = push_blobs(&p, g, from)) == EXIT_OK &&
	    (status = push_manifests(&p, g)) == EXIT_OK) {
		if (json)
			push_print_json(&p, g);
		else
			push_print(&p, g);
	}
	push_done(&p);
	return status;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "credentials", required_argument, NULL, 'c' },
		{ "from", required_argument, NULL, 'f' },
		{ "plain-http", no_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *creds = NULL, *from = NULL;
	bool plain = false, json = false;
	struct reg g = { 0 };
	int c, status;

	/* argv: fatelf-oci push ARGS... (from `fatelf repo push`) */
	if (argc < 2 || strcmp(argv[1], "push") != 0)
		die_usage("expected 'push'");
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case 'c':
			creds = optarg;
			break;
		case 'f':
			from = optarg;
			break;
		case 'p':
			plain = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			die_usage("unknown option");
		}
	}
	if (argc - optind != 2)
		die_usage("expected BUNDLE and oci://HOST[:PORT]/NAME[:TAG]");
	if (fatelf_oci_ref_parse(argv[optind + 1], plain, &g.ref) < 0)
		die_usage("'%s' is not oci://HOST[:PORT]/NAME[:TAG] (NAME: lower-case path components; TAG: "
			  "[A-Za-z0-9_][A-Za-z0-9._-]*, at most 128)", argv[optind + 1]);
	if (from && !fatelf_oci_name_valid(from))
		die_usage("--from '%s' is not a repository name", from);
	if (creds && (status = read_creds(creds, &g)) != 0)
		return status;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return fail(EXIT_SYSTEM, "cannot start libcurl");
	g.c = curl_easy_init();
	g.body.max = REPLY_MAX;
	g.body.p = malloc(g.body.max + 1);
	if (!g.c || !g.body.p)
		return fail(EXIT_SYSTEM, "%s", fatelf_diag_text(NULL, -ENOMEM));
	g.body.p[0] = '\0';
	snprintf(g.base, sizeof(g.base), "%s://%s/v2/%s", g.ref.scheme, g.ref.host, g.ref.name);
	status = push(argv[optind], &g, from, json);
	explicit_bzero(g.pass, sizeof(g.pass));
	if (g.auth)
		explicit_bzero(g.auth, strlen(g.auth));
	free(g.auth);
	free(g.body.p);
	curl_easy_cleanup(g.c);
	curl_global_cleanup();
	return status;
}
