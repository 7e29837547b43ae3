/*
 * A job: what a call asked the worker to do (Install, Remove, Thin,
 * Verify, or a Cancel waiting for a rollback), and the names it goes by
 * in logs, history rows and Status.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"

job *job_new(int kind)
{
	job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->kind = kind;
	j->fd = -1;
	return j;
}

job *job_free(job *j)
{
	if (!j)
		return NULL;
	if (j->fd >= 0)
		close(j->fd);
	free(j->url);
	free(j->url_shown);
	free(j->path);
	free(j->source_path);
	free(j->package);
	free(j->repo_spec);
	free(j->repo_name);
	for (size_t i = 0; i < j->nmembers; i++) {
		free(j->members[i].spec);
		free(j->members[i].repo_name);
		free(j->members[i].source_path);
		if (j->members[i].has_fd && j->members[i].fd >= 0)
			close(j->members[i].fd);
		engine_result_done(&j->members[i].result);
	}
	free(j->members);
	for (size_t i = 0; j->packages && j->packages[i]; i++)
		free(j->packages[i]);
	free(j->packages);
	engine_policy_spec_done(&j->policy);
	engine_result_done(&j->result);
	if (j->has_cfg)
		engine_config_done(&j->cfg);
	if (j->reply)
		json_object_put(j->reply);
	free(j->sent_progress);
	while (j->waiters) {
		job *c = j->waiters;

		j->waiters = c->next;
		job_free(c);
	}
	free(j);
	return NULL;
}

const char *job_kind_name(int kind)
{
	switch (kind) {
	case JOB_INSTALL:
		return "install";
	case JOB_REMOVE:
		return "remove";
	case JOB_THIN:
		return "thin";
	case JOB_VERIFY:
		return "verify";
	case JOB_CANCEL:
		return "cancel";
	case JOB_UPDATE:
		return "update";
	}
	return "?";
}

/* The package a queued row names: Remove's, or Thin's only one. */
const char *job_row_package(const job *j)
{
	if (j->package)
		return j->package;
	if (j->packages && j->packages[0] && !j->packages[1])
		return j->packages[0];
	return NULL;
}

const char *job_what(const job *j)
{
	if (j->package)
		return j->package;
	if (j->autoremove)
		return "automatic packages";
	if (j->url)
		return j->url_shown;
	if (j->path)
		return j->path;
	if (j->repo_spec)
		return j->repo_spec;
	if (j->nmembers > 0)
		return j->kind == JOB_REMOVE ? "several packages" : "several bundles";
	return j->kind == JOB_INSTALL ? "bundle from fd" : "all packages";
}

/* Whether the job's message names what the job is about, told by the
 * facts: a failed download's message names its URL, and a message about
 * the job's own package or file has it for subject. */
bool job_diag_names_what(const job *j)
{
	const char *what = job_what(j);

	return j->fetch_failed || strcmp(j->diag.subject, what) == 0 || strcmp(j->diag.package, what) == 0;
}

store_tx_kind job_row_kind(const job *j)
{
	return j->kind == JOB_REMOVE ? STORE_TX_REMOVE : j->kind == JOB_THIN ? STORE_TX_THIN : STORE_TX_INSTALL;
}
