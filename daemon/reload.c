/*
 * fatelfd's reload on SIGHUP: fatelfd.conf (and its drop-ins) and the
 * TrustedKeys directory are read again, from the defaults up, as at a
 * start. Nothing changes unless both load: a config with a bad line, or a
 * key file that does not parse, is logged and the running settings stay.
 *
 * The main thread's settings (authorization, connection limits, Status,
 * GetPolicy, the error fields) change at once. The worker takes its copy
 * between two jobs, so a job that runs meanwhile ends with the settings it
 * started with. The root and the state directory come from the command
 * line and keep their values; so does the socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fatelfd.h"
#include "worker.h"
#include "macro.h"
#include "metrics.h"

void server_reload(server *s)
{
	engine_config cfg;
	fatelf_ms_pubkey *keys = NULL;
	size_t nkeys = 0;
	fatelf_diag d = { 0 };
	bool running;
	int r;

	engine_config_init(&cfg);
	r = engine_config_load(&cfg, s->config_path, &d);
	if (r < 0) {
		log_error("reload refused: %s; the running configuration stays",
			  fatelf_diag_text(&d, r));
		goto out;
	}
	free(cfg.root);
	free(cfg.state_dir);
	cfg.root = strdup(s->cfg.root);
	cfg.state_dir = strdup(s->cfg.state_dir);
	if (!cfg.root || !cfg.state_dir) {
		log_error("reload refused: %s; the running configuration stays", fatelf_diag_text(NULL, -ENOMEM));
		goto out;
	}
	r = engine_config_load_keys(&cfg, &keys, &nkeys, &d);
	if (r < 0) {
		log_error("reload refused: trusted keys: %s; the running configuration stays",
			  fatelf_diag_text(&d, r));
		goto out;
	}
	r = engine_reconfigure(s->ro, &cfg, NULL, 0, &d);
	if (r < 0) {
		log_error("reload refused: %s; the running configuration stays",
			  fatelf_diag_text(&d, r));
		goto out;
	}
	running = worker_reconfigure(s->worker, &cfg, keys, nkeys);
	engine_config_done(&s->cfg);
	s->cfg = cfg;
	memset(&cfg, 0, sizeof(cfg));
	free(s->keys);
	s->keys = TAKE_PTR(keys);
	s->nkeys = nkeys;
	log_info("reloaded %s: %zu trusted key%s in %s%s", s->config_path, nkeys, nkeys == 1 ? "" : "s",
		 s->cfg.trusted_keys, running ? "; the running job keeps the settings it started with" : "");
	/* MetricsFile= may name another file now. */
	metrics_file_update(s);
out:
	engine_config_done(&cfg);
	free(keys);
}
