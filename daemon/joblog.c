/*
 * A job's lines in the daemon's log: queued, started, done, failed,
 * cancelled. Each names the job's number, its kind, its package and
 * version as far as they are known at that moment, and the uid that asked:
 *
 *   job 12 install hello=1.1 (uid 1000): started (transaction 40)
 *   job 12 upgrade hello 1.0 -> 1.1 (uid 1000): done (transaction 40, ...)
 *
 * In the journal the same facts are fields (FATELF_PACKAGE, FATELF_VERSION,
 * FATELF_TXID, FATELF_KIND, FATELF_UID), so that a log pipeline never parses
 * the text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "job.h"

/* Who a line is about. */
typedef struct job_subject {
	const char *kind;       /* the word after the number: install, upgrade, remove... */
	const char *name;       /* the package, or what the job is about; NULL: left out */
	const char *package;    /* FATELF_PACKAGE */
	const char *old_version; /* shown as "OLD -> NEW" beside a different version */
	const char *version;    /* FATELF_VERSION: the package's version after the job */
	int64_t txid;
	char spec_name[256];    /* a repository spec "NAME=VERSION", cut in two */
} job_subject;

static void job_say(int prio, const job *j, const job_subject *s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void job_say(int prio, const job *j, const job_subject *s, const char *fmt, ...)
{
	const char *version = s->version ? s->version : s->old_version;
	const log_fields f = { .package = s->package, .version = version, .txid = s->txid, .kind = s->kind,
			       .uid = j->uid, .has_uid = true };
	/* A version follows the name it belongs to; with no name, the
	 * message says which. */
	const char *v = s->name ? version : NULL;
	bool both = v && s->old_version && s->version && strcmp(s->old_version, s->version) != 0;
	char text[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	daemon_log_fields(prio, &f, "job %llu %s%s%s%s%s%s%s (uid %u): %s", (unsigned long long)j->seq, s->kind,
			  s->name ? " " : "", s->name ? s->name : "", v ? " " : "", both ? s->old_version : "",
			  both ? " -> " : "", v ? v : "", (unsigned)j->uid, text);
}

/* Before the job has run: what the call named. A repository's "NAME=VERSION"
 * is a package and a version already. */
static void job_subject_asked(const job *j, job_subject *ret)
{
	const char *spec = j->nmembers == 0 ? j->repo_spec : NULL;
	const char *eq = spec ? strchr(spec, '=') : NULL;

	*ret = (job_subject){ .kind = job_kind_name(j->kind), .name = job_what(j), .package = job_row_package(j),
			      .txid = j->txid };
	if (spec && !eq)
		ret->package = spec;
	else if (eq && (size_t)(eq - spec) < sizeof(ret->spec_name)) {
		memcpy(ret->spec_name, spec, (size_t)(eq - spec));
		ret->spec_name[eq - spec] = '\0';
		ret->name = ret->package = ret->spec_name;
		ret->version = eq + 1;
	}
}

/* After it ran: what it did, to which package and version. */
static void job_subject_done(const job *j, const engine_result *res, job_subject *ret)
{
	job_subject_asked(j, ret);
	ret->kind = res->change ? res->change : res->kind ? res->kind : ret->kind;
	if (res->package)
		ret->name = ret->package = res->package;
	if (res->package || res->new_version || res->old_version) {
		ret->old_version = res->old_version;
		ret->version = res->new_version;
	}
	ret->txid = res->txid ? res->txid : j->dry_run ? 0 : j->txid;
}

void job_log_queued(const job *j, const job *ahead)
{
	job_subject s;

	job_subject_asked(j, &s);
	job_say(6, j, &s, "queued behind job %llu (transaction %lld)", (unsigned long long)ahead->seq,
		(long long)j->txid);
}

void job_log_started(const job *j)
{
	job_subject s;

	job_subject_asked(j, &s);
	job_say(6, j, &s, "started (%stransaction %lld)", j->dry_run ? "dry run, " : "", (long long)j->txid);
}

void job_log_event(const job *j, const char *event)
{
	job_subject s;

	job_subject_asked(j, &s);
	job_say(6, j, &s, "%s (transaction %lld)", event, (long long)j->txid);
}

static void job_log_failed(const job *j)
{
	job_subject s;

	job_subject_asked(j, &s);
	if (j->diag.package[0])
		s.package = j->diag.package;
	/* The message names the bundle or the package itself. */
	if (j->diag.msg[0] && job_diag_names_what(j))
		s.name = NULL;
	job_say(3, j, &s, "%s", fatelf_diag_text(&j->diag, j->r));
}

void job_log_ended(const job *j)
{
	const engine_result *res = &j->result;
	job_subject s;

	if (j->r < 0) {
		job_log_failed(j);
		return;
	}
	for (size_t i = 0; i < j->nmembers; i++) {
		const engine_result *m = &j->members[i].result;

		job_subject_done(j, m, &s);
		if (!m->change && !m->kind)
			s.kind = "install";
		job_say(6, j, &s, "%s (transaction %lld, %llu files, %llu bytes written, %lld saved)",
			j->dry_run ? "dry run done" : "done, one transaction with the others", (long long)m->txid,
			(unsigned long long)m->files, (unsigned long long)m->bytes_written, (long long)m->bytes_saved);
	}
	if (j->nmembers > 0)
		return;
	job_subject_done(j, res, &s);
	if (j->dry_run)
		job_say(6, j, &s, "dry run done (%llu files, %llu bytes to write, %lld to save)",
			(unsigned long long)res->files, (unsigned long long)res->bytes_written,
			(long long)res->bytes_saved);
	else
		job_say(6, j, &s, "done (transaction %lld, %llu files, %llu bytes written, %lld saved)",
			(long long)res->txid, (unsigned long long)res->files, (unsigned long long)res->bytes_written,
			(long long)res->bytes_saved);
	if (res->signature && strcmp(res->signature, "unverified") == 0)
		job_say(4, j, &s, "the signature was not verified: key %s is not trusted, "
			"the bundle was installed as unsigned", res->signer);
}
