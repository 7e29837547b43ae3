/*
 * fatelfd's metrics: what a fleet's monitoring asks of each machine, in
 * the Prometheus text format (daemon/promtext.c). They are computed here
 * and nowhere else: Status{prometheus: true} answers with them
 * (fatelfctl status --prometheus), and MetricsFile= gets the same text,
 * written atomically at start and after each job, for node_exporter's
 * textfile collector. The last Verify's outcome is kept in the state
 * directory (last-verify.json), so that a restart does not forget it.
 */
#ifndef FATELFD_METRICS_H
#define FATELFD_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fatelfd.h"

#define METRICS_NAME_MAX 256

typedef struct metrics {
	uint64_t packages;
	uint64_t files;
	uint64_t fat_files;
	uint64_t fat_files_fat;         /* installed as shipped */
	uint64_t bytes_on_disk;
	int64_t bytes_saved;
	uint64_t upgrades_pending;      /* installed packages a repository index offers newer */
	uint64_t held;
	/* The newest transaction that ended (committed, rolled back,
	 * failed or cancelled). */
	bool has_tx;
	int64_t tx_finished_at;
	char tx_kind[32];
	char tx_result[32];
	char tx_package[METRICS_NAME_MAX];
	/* The last Verify that ran to its end. */
	bool has_verify;
	int64_t verify_finished_at;
	uint64_t verify_checked;
	uint64_t verify_problems;
	char verify_package[METRICS_NAME_MAX]; /* "" when it verified every package */
} metrics;

/* The families and samples of m in the text format. */
int metrics_format(const metrics *m, FILE *f);

/* Status's totals, recomputed once per change of the store. */
int server_usage(server *s, uint64_t *ret_packages, store_usage *ret, fatelf_diag *d);
/* Everything, from the read-only store, the repositories' indexes kept in
 * the state directory, and last-verify.json. */
int metrics_collect(server *s, metrics *ret, fatelf_diag *d);
/* metrics_collect + metrics_format into a malloc'd text. */
int metrics_render(server *s, char **ret_text, size_t *ret_len, fatelf_diag *d);

/* Writes MetricsFile= (when set) again: a temp file in its directory,
 * mode 0644, renamed over it. A failure is logged, never fatal. */
void metrics_file_update(server *s);

/* A Verify ran to its end: keeps its outcome (package NULL: all). */
void metrics_verify_done(server *s, const char *package, uint64_t checked, uint64_t problems);

#endif
