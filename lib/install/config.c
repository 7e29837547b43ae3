/*
 * The engine's configuration object: its defaults, a deep copy, and
 * release. Reading fatelfd.conf into it is the daemon's business. The
 * defaults are here and nowhere else: a copy fills them in for the
 * strings a caller left NULL.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "macro.h"

#define DEFAULT_ROOT            "/"
#define DEFAULT_STATE_DIR       "/var/lib/fatelf"
#define DEFAULT_TRUSTED_KEYS    SYSCONFDIR "/fatelf/keys.d"
#define DEFAULT_REPOS_DIR       SYSCONFDIR "/fatelf/repos.d"
#define DEFAULT_REGISTRIES_DIR  SYSCONFDIR "/fatelf/registries.d"
#define DEFAULT_LDCONFIG_PATH   "/sbin/ldconfig"

void engine_config_init(engine_config *c)
{
	memset(c, 0, sizeof(*c));
	/* A failed strdup leaves NULL; engine_config_load reports it. */
	c->root = strdup(DEFAULT_ROOT);
	c->state_dir = strdup(DEFAULT_STATE_DIR);
	c->policy.policy = ENGINE_POLICY_NATIVE;
	c->require_signature = true;
	c->trusted_keys = strdup(DEFAULT_TRUSTED_KEYS);
	c->repos_dir = strdup(DEFAULT_REPOS_DIR);
	c->registries_dir = strdup(DEFAULT_REGISTRIES_DIR);
	c->admin_group = NULL;
	c->durable = true;
	c->ldconfig = true;
	c->ldconfig_path = strdup(DEFAULT_LDCONFIG_PATH);
	fatelf_bundle_limits_default(&c->limits);
	c->max_message = 1u << 20;
	c->max_connections_per_uid = 64;
	c->max_buffered_per_uid = (uint64_t)16 << 20;
	c->max_buffered_total = (uint64_t)32 << 20;
	c->fetch_timeout = 60;
	c->fetch_deadline = 3600;
	c->fetch_min_rate = 1024;
	c->fetch_low_speed = 30;
	fatelf_netranges_default(&c->fetch_deny);
}

void engine_config_done(engine_config *c)
{
	if (!c)
		return;
	free(c->root);
	free(c->state_dir);
	engine_policy_spec_done(&c->policy);
	for (size_t i = 0; i < c->nkeep_fat; i++)
		free(c->keep_fat[i]);
	free(c->keep_fat);
	free(c->trusted_keys);
	free(c->repos_dir);
	free(c->registries_dir);
	free(c->admin_group);
	free(c->ldconfig_path);
	free(c->metrics_file);
	memset(c, 0, sizeof(*c));
}

/* src, else dflt, duplicated; NULL when both are. */
static int dup_or(char **dst, const char *src, const char *dflt)
{
	const char *v = src ? src : dflt;

	*dst = NULL;
	if (!v)
		return 0;
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

static int dup_or_null(char **dst, const char *src)
{
	return dup_or(dst, src, NULL);
}

/* A deep copy, so that a load that fails halfway changes nothing. A
 * caller that builds its config by hand may leave root, state_dir and
 * ldconfig_path NULL: the copy has the defaults. (trusted_keys NULL
 * stays NULL: no keys directory.) */
int engine_config_copy(engine_config *dst, const engine_config *src)
{
	engine_config c = *src;

	c.root = c.state_dir = c.trusted_keys = c.repos_dir = c.registries_dir = c.admin_group = c.ldconfig_path = NULL;
	c.metrics_file = NULL;
	c.keep_fat = NULL;
	c.nkeep_fat = 0;
	c.policy.ntargets = 0;
	memset(c.policy.targets, 0, sizeof(c.policy.targets));

	if (dup_or(&c.root, src->root, DEFAULT_ROOT) < 0 ||
	    dup_or(&c.state_dir, src->state_dir, DEFAULT_STATE_DIR) < 0 ||
	    dup_or_null(&c.trusted_keys, src->trusted_keys) < 0 ||
	    dup_or(&c.repos_dir, src->repos_dir, DEFAULT_REPOS_DIR) < 0 ||
	    dup_or(&c.registries_dir, src->registries_dir, DEFAULT_REGISTRIES_DIR) < 0 ||
	    dup_or_null(&c.admin_group, src->admin_group) < 0 ||
	    dup_or(&c.ldconfig_path, src->ldconfig_path, DEFAULT_LDCONFIG_PATH) < 0 ||
	    dup_or_null(&c.metrics_file, src->metrics_file) < 0)
		goto oom;
	for (size_t i = 0; i < src->policy.ntargets && i < ENGINE_TARGETS_MAX; i++) {
		if (dup_or_null(&c.policy.targets[i], src->policy.targets[i]) < 0)
			goto oom;
		c.policy.ntargets++;
	}
	if (src->nkeep_fat) {
		c.keep_fat = calloc(src->nkeep_fat, sizeof(*c.keep_fat));
		if (!c.keep_fat)
			goto oom;
		for (size_t i = 0; i < src->nkeep_fat; i++) {
			if (dup_or_null(&c.keep_fat[i], src->keep_fat[i]) < 0)
				goto oom;
			c.nkeep_fat++;
		}
	}
	*dst = c;
	return 0;
oom:
	engine_config_done(&c);
	return -ENOMEM;
}
