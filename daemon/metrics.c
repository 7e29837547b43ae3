/*
 * fatelfd's metrics (metrics.h): gathered on the main thread from the
 * read-only store and the state directory, written as the Prometheus text
 * format for Status and for MetricsFile=.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "io.h"
#include "macro.h"
#include "metrics.h"
#include "promtext.h"
#include "repos.h"

#define LAST_VERIFY_FILE "last-verify.json"
#define LAST_VERIFY_MAX 4096
/* History rows read to find the newest that ended; queued rows come
 * first, and only a queue longer than this reads them all. */
#define TX_SCAN 64

/* ------------------------------------------------------------ the text */

#define GAUGE(name, help, value)                                          \
	do {                                                              \
		if ((r = prom_family(f, name, "gauge", help)) < 0 ||      \
		    (r = prom_sample(f, name, NULL, 0, (int64_t)(value))) < 0) \
			return r;                                         \
	} while (0)

int metrics_format(const metrics *m, FILE *f)
{
	int r;

	GAUGE("fatelf_packages", "Packages installed.", m->packages);
	GAUGE("fatelf_files", "Files the installed packages own.", m->files);
	GAUGE("fatelf_fat_files", "Installed files that were shipped as FatELF files.", m->fat_files);
	GAUGE("fatelf_fat_files_installed_fat",
	      "FatELF files installed fat, with every record as shipped.", m->fat_files_fat);
	GAUGE("fatelf_bytes_on_disk", "Bytes of the installed files.", m->bytes_on_disk);
	GAUGE("fatelf_bytes_saved",
	      "Bytes that thinning saved, against the fat files as shipped.", m->bytes_saved);
	GAUGE("fatelf_upgrades_pending",
	      "Installed packages of which a configured repository offers a newer version, "
	      "as of its last update.", m->upgrades_pending);
	GAUGE("fatelf_packages_held", "Packages held at their installed version.", m->held);
	if (m->has_tx) {
		const prom_label l[] = {
			{ "kind", m->tx_kind },
			{ "package", m->tx_package },
			{ "result", m->tx_result },
		};

		if ((r = prom_family(f, "fatelf_last_transaction_info", "gauge",
				     "The last transaction that ended: its kind, its package (empty for "
				     "several) and its result (committed, rolled-back, failed, cancelled).")) < 0 ||
		    (r = prom_sample(f, "fatelf_last_transaction_info", l, ARRAY_SIZE(l), 1)) < 0)
			return r;
		GAUGE("fatelf_last_transaction_timestamp_seconds",
		      "When the last transaction ended, in seconds since the epoch.", m->tx_finished_at);
		GAUGE("fatelf_last_transaction_success",
		      "1 when the last transaction that ended committed, else 0.",
		      strcmp(m->tx_result, "committed") == 0);
	}
	if (m->has_verify) {
		const prom_label l[] = { { "package", m->verify_package } };

		if ((r = prom_family(f, "fatelf_last_verify_info", "gauge",
				     "The last verify: the package it checked, empty for every package.")) < 0 ||
		    (r = prom_sample(f, "fatelf_last_verify_info", l, ARRAY_SIZE(l), 1)) < 0)
			return r;
		GAUGE("fatelf_last_verify_timestamp_seconds",
		      "When the last verify ended, in seconds since the epoch.", m->verify_finished_at);
		GAUGE("fatelf_last_verify_files_checked", "Files the last verify checked.", m->verify_checked);
		GAUGE("fatelf_last_verify_problems", "Problems the last verify found.", m->verify_problems);
	}
	return 0;
}

#undef GAUGE

/* ------------------------------------------------------------ gathering */

int server_usage(server *s, uint64_t *ret_packages, store_usage *ret, fatelf_diag *d)
{
	uint64_t gen = atomic_load(&s->store_gen);

	if (!s->usage_valid || s->usage_gen != gen) {
		store_usage u = { 0 };
		uint64_t npkg = 0;
		int r;

		r = store_package_count(engine_store(s->ro), &npkg, d);
		if (r >= 0)
			r = store_usage_get(engine_store(s->ro), 0, &u, d);
		if (r < 0)
			return r;
		s->usage = u;
		s->usage_packages = npkg;
		s->usage_gen = gen;
		s->usage_valid = true;
	}
	*ret = s->usage;
	*ret_packages = s->usage_packages;
	return 0;
}

static bool name_in(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* Installed packages, not held, of which some repository's index offers a
 * newer version than the one installed: what 'fatelfctl upgrade' would
 * do. held: the held packages' names. */
static int count_upgrades(server *s, char **held, size_t nheld, uint64_t *ret, fatelf_diag *d)
{
	const engine_config *cfg = &s->cfg;
	struct repo_conf *confs = NULL;
	fatelf_repo_index **ix = NULL;
	store_package *pkgs = NULL;
	size_t nconfs = 0, npkgs = 0;
	uint64_t n = 0;
	int r;

	r = repo_conf_list(cfg->repos_dir, &confs, &nconfs, d);
	if (r < 0)
		return r;
	if (nconfs == 0) {
		*ret = 0;
		return 0;
	}
	ix = calloc(nconfs, sizeof(*ix));
	if (!ix) {
		r = fatelf_diag_oom(d);
		goto out;
	}
	/* A repository never updated has no index: it offers nothing yet. */
	for (size_t i = 0; i < nconfs; i++)
		(void)repo_state_load(cfg->state_dir, confs[i].name, &ix[i], NULL);
	r = store_package_list(engine_store(s->ro), &pkgs, &npkgs, d);
	if (r < 0)
		goto out;
	for (size_t p = 0; p < npkgs; p++)
		for (size_t i = 0; i < nconfs && !name_in(held, nheld, pkgs[p].name); i++) {
			const fatelf_repo_package *rp = ix[i] ? fatelf_repo_index_find(ix[i], pkgs[p].name) : NULL;

			if (rp && rp->nversions > 0 &&
			    fatelf_pkg_version_compare(rp->versions[rp->nversions - 1].version, pkgs[p].version) > 0) {
				n++;
				break;
			}
		}
	*ret = n;
	r = 0;
out:
	store_packages_free(pkgs, npkgs);
	for (size_t i = 0; ix && i < nconfs; i++)
		fatelf_repo_index_free(ix[i]);
	free(ix);
	repo_conf_list_free(confs, nconfs);
	return r;
}

static bool tx_ended(store_tx_state st)
{
	return st != STORE_TX_QUEUED && st != STORE_TX_PENDING;
}

static int last_transaction(server *s, metrics *m, fatelf_diag *d)
{
	for (uint64_t limit = TX_SCAN;; limit = 0) {
		store_tx *v = NULL;
		size_t n = 0;
		int r = store_tx_history(engine_store(s->ro), NULL, limit, &v, &n, d);

		if (r < 0)
			return r;
		for (size_t i = 0; i < n; i++) {
			const char *kind = store_tx_kind_to_text(v[i].kind);
			const char *state = store_tx_state_to_text(v[i].state);

			if (!tx_ended(v[i].state))
				continue;
			m->has_tx = true;
			m->tx_finished_at = v[i].finished_at;
			snprintf(m->tx_kind, sizeof(m->tx_kind), "%s", kind ? kind : "");
			snprintf(m->tx_result, sizeof(m->tx_result), "%s", state ? state : "");
			snprintf(m->tx_package, sizeof(m->tx_package), "%s", v[i].package ? v[i].package : "");
			break;
		}
		store_txs_free(v, n);
		if (m->has_tx || limit == 0 || n < limit)
			return 0;
	}
}

/* last-verify.json, written by this daemon; one that does not read back
 * as it writes it is ignored (no verify known). */
static void last_verify(server *s, metrics *m)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ json_object *o = NULL;
	json_object *v;
	size_t len = 0;

	(void)s;
	if (read_file_max(repo_state_fd(), LAST_VERIFY_FILE, READ_FILE_NOFOLLOW | READ_FILE_REGULAR,
			  LAST_VERIFY_MAX, &text, &len) < 0)
		return;
	o = json_tokener_parse(text);
	if (!o || !json_object_is_type(o, json_type_object))
		return;
	if (!json_object_object_get_ex(o, "finished_at", &v) || !json_object_is_type(v, json_type_int))
		return;
	m->verify_finished_at = json_object_get_int64(v);
	if (!json_object_object_get_ex(o, "checked", &v) || !json_object_is_type(v, json_type_int))
		return;
	m->verify_checked = (uint64_t)MAX(json_object_get_int64(v), 0);
	if (!json_object_object_get_ex(o, "problems", &v) || !json_object_is_type(v, json_type_int))
		return;
	m->verify_problems = (uint64_t)MAX(json_object_get_int64(v), 0);
	m->verify_package[0] = '\0';
	if (json_object_object_get_ex(o, "package", &v) && json_object_is_type(v, json_type_string))
		snprintf(m->verify_package, sizeof(m->verify_package), "%s", json_object_get_string(v));
	m->has_verify = true;
}

int metrics_collect(server *s, metrics *ret, fatelf_diag *d)
{
	metrics m = { 0 };
	store_usage u = { 0 };
	char **held = NULL;
	size_t nheld = 0;
	int r;

	r = server_usage(s, &m.packages, &u, d);
	if (r < 0)
		return r;
	m.files = u.files;
	m.fat_files = u.fat_files;
	m.fat_files_fat = u.fat_files_fat;
	m.bytes_on_disk = u.installed_size;
	m.bytes_saved = u.bytes_saved;
	r = store_holds(engine_store(s->ro), &held, &nheld, d);
	if (r < 0)
		return r;
	m.held = nheld;
	r = count_upgrades(s, held, nheld, &m.upgrades_pending, d);
	store_holds_free(held, nheld);
	if (r < 0)
		return r;
	r = last_transaction(s, &m, d);
	if (r < 0)
		return r;
	last_verify(s, &m);
	*ret = m;
	return 0;
}

int metrics_render(server *s, char **ret_text, size_t *ret_len, fatelf_diag *d)
{
	metrics m;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	r = metrics_collect(s, &m, d);
	if (r < 0)
		return r;
	f = open_memstream(&text, &len);
	if (!f)
		return fatelf_diag_oom(d);
	r = metrics_format(&m, f);
	if (fclose(f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0) {
		free(text);
		return fatelf_diag_set(d, r, -1, "the metrics do not format: %s", strerror(-r));
	}
	*ret_text = text;
	*ret_len = len;
	return 0;
}

/* ------------------------------------------------------------ files */

/* path's bytes replaced at once: a temp file beside it, renamed over it. */
static int write_atomic(const char *path, const char *text, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = NULL;
	const char *slash = strrchr(path, '/');
	int fd, r;

	if (!slash)
		return -EINVAL;
	if (asprintf(&tmp, "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1) < 0) {
		tmp = NULL;
		return -ENOMEM;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = fchmod(fd, mode) < 0 ? -errno : 0;
	if (r >= 0)
		r = write_all(fd, text, len);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		(void)unlink(tmp);
	return r;
}

/* The same for name in dirfd (the state directory's descriptor): a temp file
 * beside it, renamed over it. */
static int write_atomic_at(int dirfd, const char *name, const char *text, size_t len, mode_t mode)
{
	fatelf_tmpfile t = { .fd = -1 };
	int r;

	r = fatelf_tmpfile_open(dirfd, name, mode, &t);
	if (r >= 0 && fchmod(t.fd, mode) < 0)
		r = -errno;
	if (r >= 0)
		r = write_all(t.fd, text, len);
	if (r >= 0)
		r = fatelf_tmpfile_commit(&t, name, false);
	if (r < 0)
		fatelf_tmpfile_abort(&t);
	return r;
}

void metrics_file_update(server *s)
{
	const char *path = s->cfg.metrics_file;
	_cleanup_free_ char *text = NULL;
	fatelf_diag d = { 0 };
	size_t len = 0;
	int r;

	if (!path)
		return;
	r = metrics_render(s, &text, &len, &d);
	if (r < 0) {
		log_error("metrics: %s: not written: %s", path, fatelf_diag_text(&d, r));
		return;
	}
	r = write_atomic(path, text, len, 0644);
	if (r < 0)
		log_error("metrics: %s: cannot write: %s", path, strerror(-r));
}

void metrics_verify_done(server *s, const char *package, uint64_t checked, uint64_t problems)
{
	json_object *o = json_object_new_object();
	const char *text;
	int r;

	if (!o)
		return;
	json_object_object_add(o, "finished_at", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(o, "package", package ? json_object_new_string(package) : NULL);
	json_object_object_add(o, "checked", json_object_new_int64((int64_t)MIN(checked, (uint64_t)INT64_MAX)));
	json_object_object_add(o, "problems", json_object_new_int64((int64_t)MIN(problems, (uint64_t)INT64_MAX)));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	r = text ? write_atomic_at(repo_state_fd(), LAST_VERIFY_FILE, text, strlen(text), 0600) : -ENOMEM;
	if (r < 0)
		log_error("metrics: %s/%s: cannot write: %s", s->cfg.state_dir, LAST_VERIFY_FILE, strerror(-r));
	json_object_put(o);
}
