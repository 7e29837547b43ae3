/*
 * The trusted keys of io.fatelf.Manager: KeyAdd, KeyList and KeyRemove,
 * root's alone (daemon/methodset.h). The keys are the minisign *.pub
 * files of the TrustedKeys= directory, as at a start or a reload: KeyAdd
 * writes ID.pub there atomically (mode 0644) and KeyRemove unlinks the
 * file or files that hold the key, and both load the directory's keys
 * again at once and hand them to the worker, which takes them before its
 * next job. So the next install verifies with the new set, without a
 * restart or a SIGHUP. A key's comment is its file's untrusted comment.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "io.h"
#include "macro.h"
#include "methods.h"
#include "path.h"
#include "reply.h"
#include "worker.h"

#define E(name) "io.fatelf.Manager." name

/* A .pub file is two short lines (as lib/bundle/minisign.c reads them). */
#define KEY_TEXT_MAX 4096
/* What minisign keeps of an untrusted comment. */
#define KEY_COMMENT_MAX 1003
#define UNTRUSTED_PREFIX "untrusted comment:"

struct key_file {
	char *name;                     /* in the TrustedKeys directory */
	char *comment;
	fatelf_ms_pubkey key;
};

static void key_files_free(struct key_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].comment);
	}
	free(v);
}

/* The untrusted comment of a .pub file's text, malloc'd ("" without one);
 * bytes below 0x20 and 0x7f become '?'. NULL: out of memory. */
static char *key_comment(const char *text, size_t len)
{
	size_t plen = strlen(UNTRUSTED_PREFIX), n;
	const char *eol;
	char *c;

	if (len < plen || memcmp(text, UNTRUSTED_PREFIX, plen) != 0)
		return strdup("");
	text += plen;
	len -= plen;
	if (len > 0 && *text == ' ') {
		text++;
		len--;
	}
	eol = memchr(text, '\n', len);
	n = eol ? (size_t)(eol - text) : len;
	if (n > 0 && text[n - 1] == '\r')
		n--;
	if (n > KEY_COMMENT_MAX)
		n = KEY_COMMENT_MAX;
	c = strndup(text, n);
	for (size_t i = 0; c && c[i]; i++)
		if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
			c[i] = '?';
	return c;
}

/* dir/name, a *.pub file, read and parsed into *k (zeroed first). */
static int key_file_read(DIR *dh, const char *dir, const char *name, struct key_file *k, fatelf_diag *d)
{
	_cleanup_free_ char *text = NULL;
	fatelf_diag sub = { 0 };
	size_t len;
	int r;

	memset(k, 0, sizeof(*k));
	r = read_file_max(dirfd(dh), name, READ_FILE_REGULAR, KEY_TEXT_MAX, &text, &len);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "%s/%s: %s", dir, name,
				       r == -EFBIG ? "larger than a minisign public key" : strerror(-r));
	r = fatelf_ms_pubkey_parse(text, len, &k->key, &sub);
	if (r < 0)
		return fatelf_diag_set(d, r, -1, "%s/%s: %s", dir, name, sub.msg);
	k->name = strdup(name);
	k->comment = key_comment(text, len);
	return 0;
}

/*
 * Every *.pub file of dir (a missing directory has none), parsed, in name
 * order. A file that does not parse fails the whole list, as it fails a
 * start: d names it.
 */
static int key_files_load(const char *dir, struct key_file **ret, size_t *ret_n, fatelf_diag *d)
{
	DIR *dh = opendir(dir);
	struct key_file *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;

	if (!dh) {
		if (errno != ENOENT)
			return fatelf_diag_set(d, -errno, -1, "%s: cannot open the directory: %s", dir,
					       strerror(errno));
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	while ((errno = 0, de = readdir(dh))) {
		size_t nl = strlen(de->d_name);

		if (de->d_name[0] == '.' || nl <= 4 || strcmp(de->d_name + nl - 4, ".pub") != 0)
			continue;
		if (GROW_ARRAY(v, cap, n + 1) < 0) {
			r = fatelf_diag_oom(d);
			goto fail;
		}
		r = key_file_read(dh, dir, de->d_name, &v[n], d);
		if (r < 0)
			goto fail;
		n++;
		if (!v[n - 1].name || !v[n - 1].comment) {
			r = fatelf_diag_oom(d);
			goto fail;
		}
	}
	if (errno) {
		r = fatelf_diag_set(d, -errno, -1, "%s: cannot read the directory: %s", dir, strerror(errno));
		goto fail;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(v[j - 1].name, v[j].name) > 0; j--) {
			struct key_file t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	closedir(dh);
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	closedir(dh);
	key_files_free(v, n);
	return r;
}

/* {id, comment, file} */
static json_object *json_key(const char *dir, const struct key_file *k)
{
	json_object *o = json_object_new_object();
	_cleanup_free_ char *path = path_join(dir, k->name);
	char id[17];

	if (!o)
		return NULL;
	fatelf_ms_keyid_format(k->key.keyid, id);
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "comment", json_object_new_string(k->comment));
	json_object_object_add(o, "file", json_object_new_string(path ? path : k->name));
	return o;
}

/*
 * Loads the directory's keys again and hands them to the main thread's
 * state and the worker (which takes them before its next job).
 */
static int keys_reload(server *s, fatelf_diag *d)
{
	fatelf_ms_pubkey *keys = NULL;
	size_t nkeys = 0;
	int r;

	r = engine_config_load_keys(&s->cfg, &keys, &nkeys, d);
	if (r < 0)
		return r;
	worker_reconfigure(s->worker, &s->cfg, keys, nkeys);
	free(s->keys);
	s->keys = keys;
	s->nkeys = nkeys;
	return 0;
}

static void reply_key_invalid(conn *c, int r, const char *message)
{
	json_object *p = json_object_new_object();

	json_object_object_add(p, "code", json_object_new_string(fatelf_error_name(r)));
	json_object_object_add(p, "message", json_object_new_string(message));
	reply_error(c, E("KeyInvalid"), p);
	json_object_put(p);
}

/* Writes text to dir/name, atomically, mode 0644; dir is made if missing. */
static int key_write(const char *dir, const char *name, const char *text, fatelf_diag *d)
{
	_cleanup_free_ char *path = path_join(dir, name);
	fatelf_atomic a;
	int r;

	if (!path)
		return fatelf_diag_oom(d);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fatelf_diag_set(d, -errno, -1, "%s: cannot make the directory: %s", dir,
				       strerror(errno));
	r = fatelf_atomic_open(&a, path, 0644, d);
	if (r < 0)
		return r;
	a.durable = true;
	r = fchmod(a.fd, 0644) < 0 ? -errno : write_all(a.fd, text, strlen(text));
	if (r < 0) {
		fatelf_atomic_abort(&a);
		return fatelf_diag_set(d, r, -1, "%s: cannot write: %s", path, strerror(-r));
	}
	return fatelf_atomic_commit(&a, d);
}

void method_key_add(conn *c, const vl_call *call, union method_params *p)
{
	server *s = c->srv;
	const char *dir = s->cfg.trusted_keys, *text = p->key_add.key;
	size_t len = strlen(text);
	_cleanup_free_ char *comment = NULL, *file = NULL, *name = NULL;
	struct key_file *v = NULL, added = { 0 };
	size_t n = 0;
	fatelf_ms_pubkey key;
	fatelf_diag d = { 0 };
	char id[17], line[64];
	json_object *o;
	int r;

	(void)call;
	if (len > KEY_TEXT_MAX) {
		reply_key_invalid(c, -FATELF_E_KEY_FORMAT, "larger than a minisign public key");
		return;
	}
	r = fatelf_ms_pubkey_parse(text, len, &key, &d);
	if (r < 0) {
		reply_key_invalid(c, r, d.msg);
		return;
	}
	fatelf_ms_keyid_format(key.keyid, id);
	comment = key_comment(text, len);
	if (!comment) {
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	if (!comment[0]) {
		free(comment);
		if (asprintf(&comment, "minisign public key %s", id) < 0) {
			comment = NULL;
			reply_failed(c, -ENOMEM, NULL);
			return;
		}
	}
	r = key_files_load(dir, &v, &n, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (memcmp(v[i].key.keyid, key.keyid, sizeof(key.keyid)) != 0)
			continue;
		if (memcmp(v[i].key.pk, key.pk, sizeof(key.pk)) != 0) {
			char msg[512];

			snprintf(msg, sizeof(msg), "%s/%s already holds another key with the id %s", dir,
				 v[i].name, id);
			key_files_free(v, n);
			reply_key_invalid(c, -FATELF_E_KEY_FORMAT, msg);
			return;
		}
		/* Already trusted: nothing to do. */
		o = json_object_new_object();
		json_object_object_add(o, "key", json_key(dir, &v[i]));
		json_object_object_add(o, "added", json_object_new_boolean(0));
		key_files_free(v, n);
		reply(c, o);
		json_object_put(o);
		return;
	}
	key_files_free(v, n);

	fatelf_ms_pubkey_format(&key, line);
	if (asprintf(&file, UNTRUSTED_PREFIX " %s\n%s\n", comment, line) < 0 ||
	    asprintf(&name, "%s.pub", id) < 0) {
		reply_failed(c, -ENOMEM, NULL);
		return;
	}
	r = key_write(dir, name, file, &d);
	if (r >= 0)
		r = keys_reload(s, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	daemon_log(6, "trusted key %s added (%s/%s)", id, dir, name);
	added.name = name;
	added.comment = comment;
	added.key = key;
	o = json_object_new_object();
	json_object_object_add(o, "key", json_key(dir, &added));
	json_object_object_add(o, "added", json_object_new_boolean(1));
	reply(c, o);
	json_object_put(o);
}

void method_key_list(conn *c, const vl_call *call, union method_params *p)
{
	const char *dir = c->srv->cfg.trusted_keys;
	struct key_file *v = NULL;
	size_t n = 0;
	fatelf_diag d = { 0 };
	json_object *o, *a;
	int r;

	(void)call;
	(void)p;
	r = key_files_load(dir, &v, &n, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	o = json_object_new_object();
	a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_key(dir, &v[i]));
	json_object_object_add(o, "directory", json_object_new_string(dir));
	json_object_object_add(o, "keys", a);
	key_files_free(v, n);
	reply(c, o);
	json_object_put(o);
}

/* Whether id (hex, any case, leading zeros allowed) names keyid. */
static bool key_id_matches(const char *id, const uint8_t keyid[FATELF_MS_KEYID_SIZE])
{
	char want[17];

	fatelf_ms_keyid_format(keyid, want);
	while (id[0] == '0' && id[1])
		id++;
	return strcasecmp(id, want) == 0;
}

void method_key_remove(conn *c, const vl_call *call, union method_params *p)
{
	server *s = c->srv;
	const char *dir = s->cfg.trusted_keys, *id = p->key_remove.id;
	struct key_file *v = NULL;
	size_t n = 0, removed = 0;
	fatelf_diag d = { 0 };
	json_object *o = NULL, *a;
	int r;

	(void)call;
	r = key_files_load(dir, &v, &n, &d);
	if (r < 0) {
		reply_failed(c, r, d.msg);
		return;
	}
	a = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;

		if (!key_id_matches(id, v[i].key.keyid))
			continue;
		path = path_join(dir, v[i].name);
		if (!path || unlink(path) < 0) {
			r = path ? -errno : -ENOMEM;
			fatelf_diag_set(&d, r, -1, "%s: cannot remove: %s", path ? path : v[i].name,
					strerror(-r));
			break;
		}
		json_object_array_add(a, json_key(dir, &v[i]));
		removed++;
	}
	key_files_free(v, n);
	if (r >= 0 && removed == 0) {
		json_object_put(a);
		reply_error_str(c, E("KeyNotFound"), "id", id);
		return;
	}
	if (removed > 0) {
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0)
			(void)fsync(dfd);
		int k = keys_reload(s, &d);
		if (r >= 0)
			r = k;
	}
	if (r < 0) {
		json_object_put(a);
		reply_failed(c, r, d.msg);
		return;
	}
	daemon_log(6, "trusted key %s removed from %s", id, dir);
	o = json_object_new_object();
	json_object_object_add(o, "keys", a);
	reply(c, o);
	json_object_put(o);
}
