/*
 * Unit tests for the daemon's configuration (daemon/conf.c): the defaults,
 * every key, drop-in order, KeepFat and Targets lists, the exact error an
 * admin sees for each kind of mistake ("FILE:LINE: Key: rule"), and
 * loading the trusted keys directory.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "testutil.h"

/* A key made by `minisign -G -W`: its .pub file as minisign wrote it. */
#define KEY_A_ID "26B2317543E54EFC"
#define KEY_A "RWT8TuVDdTGyJojW1b4oayjAwnxGYTRyDg0BwQgFkdwEo+71/NkR99Tc"
#define KEY_A_PUB "untrusted comment: minisign public key " KEY_A_ID "\n" KEY_A "\n"

static void put(const char *path, const char *text)
{
	tu_write_file(path, text, strlen(text));
}

static int load(engine_config *c, const char *path, fatelf_diag *d)
{
	fatelf_diag_clear(d);
	return engine_config_load(c, path, d);
}

/* Loads text as fatelfd.conf into a fresh config; expects success. */
static void load_text(engine_config *c, const char *text)
{
	fatelf_diag d;

	put("fatelfd.conf", text);
	engine_config_init(c);
	ck_assert_msg(load(c, "fatelfd.conf", &d) == 0, "%s", d.msg);
}

/* Loads text and expects -EINVAL with exactly msg. */
static void load_fails(const char *text, const char *msg)
{
	engine_config c;
	fatelf_diag d;

	put("fatelfd.conf", text);
	engine_config_init(&c);
	ck_assert_int_eq(load(&c, "fatelfd.conf", &d), -EINVAL);
	ck_assert_int_eq(d.code, -EINVAL);
	ck_assert_str_eq(d.msg, msg);
	ck_assert_str_eq(d.subject, "fatelfd.conf");
	engine_config_done(&c);
}

static void assert_defaults(const engine_config *c)
{
	ck_assert_str_eq(c->root, "/");
	ck_assert_str_eq(c->state_dir, "/var/lib/fatelf");
	ck_assert_int_eq(c->policy.policy, ENGINE_POLICY_NATIVE);
	ck_assert_uint_eq(c->policy.ntargets, 0);
	ck_assert_uint_eq(c->nkeep_fat, 0);
	ck_assert_ptr_null(c->keep_fat);
	ck_assert(c->require_signature);
	ck_assert_str_eq(c->trusted_keys, SYSCONFDIR "/fatelf/keys.d");
	ck_assert_ptr_null(c->admin_group);
	ck_assert(c->durable);
	ck_assert(c->ldconfig);
	ck_assert_str_eq(c->ldconfig_path, "/sbin/ldconfig");
	ck_assert_uint_eq(c->limits.max_path, 4095);
	ck_assert_uint_eq(c->limits.max_entries, 200000);
	ck_assert_uint_eq(c->limits.max_total, 64ull << 30);
	ck_assert_uint_eq(c->max_message, 1u << 20);
	ck_assert_uint_eq(c->max_connections_per_uid, 64);
	ck_assert_uint_eq(c->fetch_timeout, 60);
	ck_assert_uint_eq(c->fetch_deadline, 3600);
	ck_assert_uint_eq(c->fetch_min_rate, 1024);
	ck_assert_uint_eq(c->fetch_low_speed, 30);

	char deny[FATELF_NETRANGES_MAX * FATELF_NETRANGE_TEXT_MAX];
	ck_assert_int_eq(fatelf_netranges_format(&c->fetch_deny, deny, sizeof(deny)), 0);
	ck_assert_str_eq(deny, "127.0.0.0/8,0.0.0.0/8,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,"
			 "192.168.0.0/16,100.64.0.0/10,::1/128,::/128,fe80::/10,fc00::/7");
}

START_TEST(test_defaults)
{
	engine_config c;
	fatelf_diag d;

	tu_tmpdir();
	engine_config_init(&c);
	assert_defaults(&c);
	/* no file, no drop-ins: the defaults */
	ck_assert_int_eq(load(&c, "missing.conf", &d), 0);
	assert_defaults(&c);
	engine_config_done(&c);
	engine_config_done(&c);         /* twice is fine */

	/* comments and blank lines only */
	load_text(&c, "# all defaults\n; another comment\n\n   \n[Daemon]\n\t# indented\n[Policy]\n");
	assert_defaults(&c);
	engine_config_done(&c);

}
END_TEST

/* The shipped fatelfd.conf sets nothing, and the defaults it shows in its
 * commented-out "#Key=value" lines are the real ones. */
START_TEST(test_shipped_file)
{
	static const char *const keys[] = {
		"AdminGroup", "TrustedKeys", "RequireSignature", "Durable", "RunLdconfig",
		"LdconfigPath", "MaxEntries", "MaxPathLength", "MaxTotalSize", "MaxMessageSize",
		"MaxConnectionsPerUser", "FetchTimeoutSec", "FetchDeadlineSec", "FetchMinRateBytes",
		"FetchLowSpeedSec", "FetchDenyNetworks", "Policy", "Targets", "KeepFat",
		"MaxBufferedPerUser", "MaxBufferedTotal", "FetchProxy", "MetricsFile",
	};
	/* The file as installed: data/fatelfd.conf.in with the build's paths. */
	const char *top = getenv("top_builddir");
	char shipped[4096];
	engine_config c;
	fatelf_diag d;
	uint8_t *text;
	size_t len, out = 0;
	char *active;

	ck_assert_msg(top != NULL, "top_builddir is not set (run through make check)");
	snprintf(shipped, sizeof(shipped), "%s/data/fatelfd.conf", top);
	tu_tmpdir();
	engine_config_init(&c);
	ck_assert_msg(load(&c, shipped, &d) == 0, "%s", d.msg);
	assert_defaults(&c);
	engine_config_done(&c);

	text = tu_read_file(shipped, &len);
	ck_assert_ptr_nonnull(text);
	active = calloc(1, len + 1);
	ck_assert_ptr_nonnull(active);
	/* uncomment "#Key=" lines: a capital letter right after the '#' */
	for (size_t i = 0; i < len; i++) {
		bool bol = i == 0 || text[i - 1] == '\n';

		if (bol && text[i] == '#' && i + 1 < len && text[i + 1] >= 'A' && text[i + 1] <= 'Z')
			continue;
		active[out++] = (char)text[i];
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char want[64];
		snprintf(want, sizeof(want), "\n%s=", keys[i]);
		ck_assert_msg(strstr(active, want) != NULL, "the shipped file has no #%s= line", keys[i]);
	}
	put("active.conf", active);
	engine_config_init(&c);
	ck_assert_msg(load(&c, "active.conf", &d) == 0, "%s", d.msg);
	assert_defaults(&c);
	engine_config_done(&c);
	free(active);
	free(text);
}
END_TEST

START_TEST(test_every_key)
{
	engine_config c;

	tu_tmpdir();
	load_text(&c,
		  "[Daemon]\n"
		  "AdminGroup = fatelf-admin\n"
		  "TrustedKeys=/srv/keys\n"
		  "RequireSignature=no\n"
		  "Durable=false\n"
		  "RunLdconfig=0\n"
		  "LdconfigPath=/usr/sbin/ldconfig\n"
		  "MaxEntries=5000\n"
		  "MaxPathLength=1024\n"
		  "MaxTotalSize=3G\n"
		  "MaxMessageSize=256K\n"
		  "MaxConnectionsPerUser=8\n"
		  "FetchTimeoutSec=15\r\n"
		  "FetchDeadlineSec=0\n"
		  "FetchMinRateBytes=4K\n"
		  "FetchLowSpeedSec=12\n"
		  "FetchDenyNetworks=\n"
		  "FetchDenyNetworks=127.0.0.2/32, 10.0.0.0/8\n"
		  "FetchDenyNetworks=fe80::/10\n"
		  "[Policy]\n"
		  "Policy=targets\n"
		  "Targets=x86_64, i386 aarch64\n"
		  "KeepFat=/opt/shared/* /srv/nfs/*\n");
	ck_assert_str_eq(c.admin_group, "fatelf-admin");
	ck_assert_str_eq(c.trusted_keys, "/srv/keys");
	ck_assert(!c.require_signature);
	ck_assert(!c.durable);
	ck_assert(!c.ldconfig);
	ck_assert_str_eq(c.ldconfig_path, "/usr/sbin/ldconfig");
	ck_assert_uint_eq(c.limits.max_entries, 5000);
	ck_assert_uint_eq(c.limits.max_path, 1024);
	ck_assert_uint_eq(c.limits.max_total, 3ull << 30);
	ck_assert_uint_eq(c.max_message, 256u << 10);
	ck_assert_uint_eq(c.max_connections_per_uid, 8);
	ck_assert_uint_eq(c.fetch_timeout, 15);
	ck_assert_uint_eq(c.fetch_deadline, 0);
	ck_assert_uint_eq(c.fetch_min_rate, 4096);
	ck_assert_uint_eq(c.fetch_low_speed, 12);
	char deny[256];
	ck_assert_int_eq(fatelf_netranges_format(&c.fetch_deny, deny, sizeof(deny)), 0);
	ck_assert_str_eq(deny, "127.0.0.2/32,10.0.0.0/8,fe80::/10");
	ck_assert_int_eq(c.policy.policy, ENGINE_POLICY_TARGETS);
	ck_assert_uint_eq(c.policy.ntargets, 3);
	ck_assert_str_eq(c.policy.targets[0], "x86_64");
	ck_assert_str_eq(c.policy.targets[1], "i386");
	ck_assert_str_eq(c.policy.targets[2], "aarch64");
	ck_assert_uint_eq(c.nkeep_fat, 2);
	ck_assert_str_eq(c.keep_fat[0], "/opt/shared/*");
	ck_assert_str_eq(c.keep_fat[1], "/srv/nfs/*");
	/* not set by the file */
	ck_assert_str_eq(c.root, "/");
	ck_assert_str_eq(c.state_dir, "/var/lib/fatelf");

	/* the stored form of the policy */
	char buf[128];
	ck_assert_int_eq(engine_policy_spec_format(&c.policy, buf, sizeof(buf)), 27);
	ck_assert_str_eq(buf, "targets:x86_64,i386,aarch64");
	engine_config_done(&c);

	/* an empty AdminGroup is root only again */
	load_text(&c, "[Daemon]\nAdminGroup=wheel\nAdminGroup=\n");
	ck_assert_ptr_null(c.admin_group);
	engine_config_done(&c);
}
END_TEST

START_TEST(test_values)
{
	static const struct { const char *text; bool want; } bools[] = {
		{ "yes", true }, { "no", false }, { "true", true }, { "false", false },
		{ "1", true }, { "0", false }, { "YES", true }, { "False", false },
	};
	static const struct { const char *text; uint64_t want; } sizes[] = {
		{ "123", 123 }, { "512K", 512ull << 10 }, { "2M", 2ull << 20 }, { "7G", 7ull << 30 },
		{ "1T", 1ull << 40 }, { "3 GiB", 3ull << 30 }, { "10KiB", 10ull << 10 },
		{ "4096B", 4096 },
	};
	engine_config c;
	char text[256];

	tu_tmpdir();
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		snprintf(text, sizeof(text), "[Daemon]\nRequireSignature=%s\nDurable=%s\n",
			 bools[i].want ? "no" : "yes", bools[i].text);
		load_text(&c, text);
		ck_assert_msg(c.durable == bools[i].want, "Durable=%s", bools[i].text);
		ck_assert(c.require_signature == !bools[i].want);
		engine_config_done(&c);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(text, sizeof(text), "[Daemon]\nMaxTotalSize=%s\n", sizes[i].text);
		load_text(&c, text);
		ck_assert_msg(c.limits.max_total == sizes[i].want, "MaxTotalSize=%s", sizes[i].text);
		engine_config_done(&c);
	}
	/* the largest size that fits */
	load_text(&c, "[Daemon]\nMaxTotalSize=16777215T\n");
	ck_assert_uint_eq(c.limits.max_total, 16777215ull << 40);
	engine_config_done(&c);
}
END_TEST

START_TEST(test_dropins)
{
	engine_config c;
	fatelf_diag d;

	tu_tmpdir();
	put("fatelfd.conf", "[Policy]\nPolicy=compatible\n[Daemon]\nRequireSignature=no\nFetchTimeoutSec=5\n");
	ck_assert_int_eq(mkdir("fatelfd.conf.d", 0755), 0);
	/* strcmp order: "10-..." before "9-...", so 9 wins */
	put("fatelfd.conf.d/9-last.conf", "[Policy]\nPolicy=keep\n");
	put("fatelfd.conf.d/10-first.conf", "[Policy]\nPolicy=native\n[Daemon]\nFetchTimeoutSec=7\n");
	put("fatelfd.conf.d/50-mid.conf", "[Daemon]\nFetchTimeoutSec=9\n");
	/* not drop-ins: other suffixes and hidden files, even if broken */
	put("fatelfd.conf.d/60-off.conf.disabled", "garbage\n");
	put("fatelfd.conf.d/.70-hidden.conf", "garbage\n");
	put("fatelfd.conf.d/README", "garbage\n");

	engine_config_init(&c);
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	ck_assert_int_eq(c.policy.policy, ENGINE_POLICY_KEEP);
	ck_assert_uint_eq(c.fetch_timeout, 9);
	ck_assert(!c.require_signature);     /* set by the main file only */
	engine_config_done(&c);

	/* a missing main file: the drop-ins still count */
	ck_assert_int_eq(rename("fatelfd.conf.d", "other.conf.d"), 0);
	engine_config_init(&c);
	ck_assert_msg(load(&c, "other.conf", &d) == 0, "%s", d.msg);
	ck_assert_int_eq(c.policy.policy, ENGINE_POLICY_KEEP);
	ck_assert_uint_eq(c.fetch_timeout, 9);
	ck_assert(c.require_signature);
	engine_config_done(&c);

	/* an error in a drop-in names the drop-in */
	put("other.conf.d/55-bad.conf", "[Daemon]\n\nFetchTimeoutSec=soon\n");
	engine_config_init(&c);
	ck_assert_int_eq(load(&c, "other.conf", &d), -EINVAL);
	ck_assert_str_eq(d.msg, "other.conf.d/55-bad.conf:3: FetchTimeoutSec: 'soon' is not a whole number");
	ck_assert_str_eq(d.subject, "other.conf.d/55-bad.conf");
	engine_config_done(&c);
}
END_TEST

START_TEST(test_keep_fat_lists)
{
	engine_config c;
	fatelf_diag d;

	tu_tmpdir();
	put("fatelfd.conf", "[Policy]\nKeepFat=/a/*\nKeepFat=  /b/* \t /c/*.so  \n");
	ck_assert_int_eq(mkdir("fatelfd.conf.d", 0755), 0);
	put("fatelfd.conf.d/10.conf", "[Policy]\nKeepFat=/d\n");
	engine_config_init(&c);
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(c.nkeep_fat, 4);
	ck_assert_str_eq(c.keep_fat[0], "/a/*");
	ck_assert_str_eq(c.keep_fat[1], "/b/*");
	ck_assert_str_eq(c.keep_fat[2], "/c/*.so");
	ck_assert_str_eq(c.keep_fat[3], "/d");

	/* an empty value clears what came before, later lines add again */
	put("fatelfd.conf.d/20.conf", "[Policy]\nKeepFat=\nKeepFat=/e/*\n");
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(c.nkeep_fat, 1);
	ck_assert_str_eq(c.keep_fat[0], "/e/*");
	engine_config_done(&c);

	/* a relative glob is refused, and nothing is added */
	load_fails("[Policy]\nKeepFat=/ok/* opt/*\n",
		   "fatelfd.conf:2: KeepFat: 'opt/*' is not an absolute path glob");
}
END_TEST

START_TEST(test_targets_policy)
{
	engine_config c;
	fatelf_diag d;

	tu_tmpdir();
	/* Targets without Policy=targets is dropped */
	load_text(&c, "[Policy]\nTargets=x86_64\nPolicy=compatible\n");
	ck_assert_int_eq(c.policy.policy, ENGINE_POLICY_COMPATIBLE);
	ck_assert_uint_eq(c.policy.ntargets, 0);
	engine_config_done(&c);

	/* the later list replaces the earlier one, across files */
	put("fatelfd.conf", "[Policy]\nPolicy=targets\nTargets=x86_64,i386\n");
	ck_assert_int_eq(mkdir("fatelfd.conf.d", 0755), 0);
	put("fatelfd.conf.d/a.conf", "[Policy]\nTargets=riscv64\n");
	engine_config_init(&c);
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	ck_assert_int_eq(c.policy.policy, ENGINE_POLICY_TARGETS);
	ck_assert_uint_eq(c.policy.ntargets, 1);
	ck_assert_str_eq(c.policy.targets[0], "riscv64");
	engine_config_done(&c);

	/* Policy=targets with no list: reported at the Policy= line */
	put("fatelfd.conf.d/a.conf", "[Policy]\n# cleared\nTargets=\n");
	engine_config_init(&c);
	ck_assert_int_eq(load(&c, "fatelfd.conf", &d), -EINVAL);
	ck_assert_str_eq(d.msg, "fatelfd.conf:2: Policy: targets needs a Targets= list");
	ck_assert_int_eq(unlink("fatelfd.conf.d/a.conf"), 0);
	put("fatelfd.conf.d/b.conf", "[Policy]\nPolicy=targets\n");
	put("fatelfd.conf", "");
	ck_assert_int_eq(load(&c, "fatelfd.conf", &d), -EINVAL);
	ck_assert_str_eq(d.msg, "fatelfd.conf.d/b.conf:2: Policy: targets needs a Targets= list");
	engine_config_done(&c);

	load_fails("[Policy]\nTargets=x86_64 vax11\n",
		   "fatelfd.conf:2: Targets: target name 'vax11': unknown field 'vax11'");
	load_fails("[Policy]\nPolicy=fast\n",
		   "fatelfd.conf:2: Policy: unknown policy 'fast' (native, compatible, keep or targets)");
	load_fails("[Policy]\nTargets=x86_64 x86_64 x86_64 x86_64 x86_64 x86_64 x86_64 x86_64 "
		   "x86_64 x86_64 x86_64 x86_64 x86_64 x86_64 x86_64 x86_64 x86_64\n",
		   "fatelfd.conf:2: Targets: more than 16 targets");
}
END_TEST

START_TEST(test_errors)
{
	static const struct { const char *text, *msg; } bad[] = {
		{ "[Daemon]\nRequireSignature=yes\nBogus=1\n",
		  "fatelfd.conf:3: Bogus: unknown key in [Daemon]" },
		/* keys are case-sensitive */
		{ "[Daemon]\nrequiresignature=yes\n",
		  "fatelfd.conf:2: requiresignature: unknown key in [Daemon]" },
		{ "[Daemon]\nPolicy=keep\n",
		  "fatelfd.conf:2: Policy: unknown key in [Daemon] (it belongs in [Policy])" },
		{ "# top\n[Install]\n", "fatelfd.conf:2: [Install]: unknown section (only [Daemon] and [Policy])" },
		{ "[daemon]\n", "fatelfd.conf:1: [daemon]: unknown section (only [Daemon] and [Policy])" },
		{ "[Daemon] # note\n",
		  "fatelfd.conf:1: [Daemon] # note: a section header is '[Name]' alone on its line" },
		{ "Policy=keep\n",
		  "fatelfd.conf:1: Policy: key outside a section (put it under [Daemon] or [Policy])" },
		{ "[Daemon]\nRequireSignature=maybe\n",
		  "fatelfd.conf:2: RequireSignature: 'maybe' is not a boolean (yes, no, true, false, on, off, 1 or 0)" },
		{ "[Daemon]\nDurable=\n",
		  "fatelfd.conf:2: Durable: '' is not a boolean (yes, no, true, false, on, off, 1 or 0)" },
		{ "[Daemon]\nMaxTotalSize=12Q\n",
		  "fatelfd.conf:2: MaxTotalSize: '12Q' is not a size (bytes, or a number with K, M, G or T)" },
		{ "[Daemon]\nMaxTotalSize=-1\n",
		  "fatelfd.conf:2: MaxTotalSize: '-1' is not a size (bytes, or a number with K, M, G or T)" },
		{ "[Daemon]\nMaxTotalSize=0\n",
		  "fatelfd.conf:2: MaxTotalSize: 0 is out of range (1 to 18446744073709551615)" },
		{ "[Daemon]\nMaxTotalSize=16777216T\n", "fatelfd.conf:2: MaxTotalSize: 16777216T is out of range" },
		{ "[Daemon]\nMaxMessageSize=2G\n",
		  "fatelfd.conf:2: MaxMessageSize: 2G is out of range (4096 to 1073741824)" },
		{ "[Daemon]\nMaxEntries=0x10\n", "fatelfd.conf:2: MaxEntries: '0x10' is not a whole number" },
		{ "[Daemon]\nMaxEntries=99999999999999999999999\n",
		  "fatelfd.conf:2: MaxEntries: 99999999999999999999999 is out of range (1 to 18446744073709551615)" },
		{ "[Daemon]\nMaxPathLength=4096\n", "fatelfd.conf:2: MaxPathLength: 4096 is out of range (1 to 4095)" },
		{ "[Daemon]\nMaxConnectionsPerUser=0\n",
		  "fatelfd.conf:2: MaxConnectionsPerUser: 0 is out of range (1 to 65536)" },
		{ "[Daemon]\nFetchTimeoutSec=1.5\n", "fatelfd.conf:2: FetchTimeoutSec: '1.5' is not a whole number" },
		{ "[Daemon]\nFetchDeadlineSec=604801\n",
		  "fatelfd.conf:2: FetchDeadlineSec: 604801 is out of range (0 to 604800)" },
		{ "[Daemon]\nFetchMinRateBytes=2G\n",
		  "fatelfd.conf:2: FetchMinRateBytes: 2G is out of range (0 to 1073741824)" },
		{ "[Daemon]\nFetchLowSpeedSec=0\n",
		  "fatelfd.conf:2: FetchLowSpeedSec: 0 is out of range (1 to 86400)" },
		{ "[Daemon]\nFetchDenyNetworks=10.0.0.0/8 example.org\n",
		  "fatelfd.conf:2: FetchDenyNetworks: 'example.org' is not an IPv4 or IPv6 network" },
		{ "[Daemon]\nFetchDenyNetworks=10.0.0.1/8\n",
		  "fatelfd.conf:2: FetchDenyNetworks: '10.0.0.1/8': bits are set past the prefix length "
		  "(the network is 10.0.0.0/8)" },
		{ "[Daemon]\nFetchDenyNetworks=::/200\n",
		  "fatelfd.conf:2: FetchDenyNetworks: '::/200': the prefix length is more than 128" },
		{ "[Daemon]\nTrustedKeys=keys.d\n", "fatelfd.conf:2: TrustedKeys: 'keys.d' is not an absolute path" },
		{ "[Daemon]\nLdconfigPath=ldconfig\n",
		  "fatelfd.conf:2: LdconfigPath: 'ldconfig' is not an absolute path" },
		{ "[Daemon]\nAdminGroup=a b\n", "fatelfd.conf:2: AdminGroup: 'a b' is not a group name" },
		/* what a message quotes of a value is escaped */
		{ "[Daemon]\nAdminGroup=a\033]0;x\n",
		  "fatelfd.conf:2: AdminGroup: 'a\\x1b]0;x' is not a group name" },
		{ "[Policy]\nPolicy=\xff\n",
		  "fatelfd.conf:2: Policy: unknown policy '\\xff' (native, compatible, keep or targets)" },
		{ "[Daemon]\njust some words\n",
		  "fatelfd.conf:2: syntax: 'just some words' is not a [Section] header, a Key=Value line or a comment" },
		{ "[Daemon]\n=yes\n", "fatelfd.conf:2: syntax: '=yes' has no key" },
	};

	tu_tmpdir();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		load_fails(bad[i].text, bad[i].msg);

	/* a NUL byte */
	engine_config c;
	fatelf_diag d;
	tu_write_file("nul.conf", "[Daemon]\nDurable=yes\0\n", 23);
	engine_config_init(&c);
	ck_assert_int_eq(load(&c, "nul.conf", &d), -EINVAL);
	ck_assert_str_eq(d.msg, "nul.conf:2: syntax: line holds a NUL byte");
	engine_config_done(&c);
}
END_TEST

/* FetchDenyNetworks= adds to the defaults; an empty value clears them. */
START_TEST(test_deny_networks)
{
	engine_config c;
	fatelf_netranges def;
	char text[8192];
	size_t n;

	tu_tmpdir();
	fatelf_netranges_default(&def);
	load_text(&c, "[Daemon]\nFetchDenyNetworks=127.0.0.2/32\n");
	ck_assert_uint_eq(c.fetch_deny.n, def.n + 1);
	ck_assert_int_eq(memcmp(c.fetch_deny.v, def.v, def.n * sizeof(def.v[0])), 0);
	engine_config_done(&c);

	load_text(&c, "[Daemon]\nFetchDenyNetworks=\n");
	ck_assert_uint_eq(c.fetch_deny.n, 0);
	engine_config_done(&c);

	/* 64 at most, defaults included */
	n = (size_t)snprintf(text, sizeof(text), "[Daemon]\nFetchDenyNetworks=\nFetchDenyNetworks=");
	for (int i = 0; i < FATELF_NETRANGES_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "10.%d.0.0/16 ", i);
	snprintf(text + n, sizeof(text) - n, "\n");
	load_text(&c, text);
	ck_assert_uint_eq(c.fetch_deny.n, FATELF_NETRANGES_MAX);
	engine_config_done(&c);
	snprintf(text + n, sizeof(text) - n, "\nFetchDenyNetworks=11.0.0.0/8\n");
	load_fails(text, "fatelfd.conf:4: FetchDenyNetworks: more than 64 networks");
}
END_TEST

START_TEST(test_fetch_proxy)
{
	engine_config c;

	tu_tmpdir();
	load_text(&c, "[Daemon]\n");
	ck_assert_str_eq(c.fetch_proxy, "");
	engine_config_done(&c);
	load_text(&c, "[Daemon]\nFetchProxy=http://proxy.example:3128\n");
	ck_assert_str_eq(c.fetch_proxy, "http://proxy.example:3128");
	engine_config_done(&c);
	load_text(&c, "[Daemon]\nFetchProxy=socks5h://[::1]:1080/\nFetchProxy=\n");
	ck_assert_str_eq(c.fetch_proxy, "");
	engine_config_done(&c);
	load_fails("[Daemon]\nFetchProxy=http://u:pw@proxy:3128\n",
		   "fatelfd.conf:2: FetchProxy: a proxy URL may not hold credentials "
		   "(the download helper's command line is public)");
	load_fails("[Daemon]\nFetchProxy=ftp://proxy\n",
		   "fatelfd.conf:2: FetchProxy: 'ftp://proxy' is not an http://, https:// or socks5h:// URL");
	load_fails("[Daemon]\nFetchProxy=http://\n", "fatelfd.conf:2: FetchProxy: 'http://' names no host");
	load_fails("[Daemon]\nFetchProxy=http://proxy:3128/x\n",
		   "fatelfd.conf:2: FetchProxy: 'http://proxy:3128/x' has a path; a proxy is scheme://host[:port]");
	load_fails("[Daemon]\nFetchProxy=http://pro xy\n",
		   "fatelfd.conf:2: FetchProxy: 'http://pro xy' is not a host[:port]");
}
END_TEST

START_TEST(test_limits)
{
	engine_config c;
	fatelf_diag d;
	char *big;

	tu_tmpdir();
	/* a 4096-byte line is fine, 4097 is not */
	big = malloc(8192);
	ck_assert_ptr_nonnull(big);
	memcpy(big, "[Policy]\nKeepFat=/", 18);
	memset(big + 18, 'x', 4096 - 9);
	memcpy(big + 18 + 4096 - 9, "\n", 2);
	ck_assert_uint_eq(strlen(big + 9), 4097);       /* the line and its newline */
	put("fatelfd.conf", big);
	engine_config_init(&c);
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(c.nkeep_fat, 1);
	ck_assert_uint_eq(strlen(c.keep_fat[0]), 4096 - 8);
	engine_config_done(&c);

	memcpy(big + 18 + 4096 - 9, "y\n", 3);
	load_fails(big, "fatelfd.conf:2: syntax: line is longer than 4096 bytes");
	free(big);

	/* 1 MiB of comments is fine, one byte more is not */
	size_t mib = 1u << 20;
	big = malloc(mib + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, '#', mib);
	for (size_t i = 1000; i < mib; i += 1000)
		big[i] = '\n';
	tu_write_file("fatelfd.conf", big, mib);
	engine_config_init(&c);
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	big[mib] = '\n';
	tu_write_file("fatelfd.conf", big, mib + 1);
	ck_assert_int_eq(load(&c, "fatelfd.conf", &d), -EINVAL);
	ck_assert_str_eq(d.msg, "fatelfd.conf: larger than 1 MiB");
	free(big);
	engine_config_done(&c);

	/* a directory where the file should be */
	ck_assert_int_eq(mkdir("dir.conf", 0755), 0);
	engine_config_init(&c);
	ck_assert_int_eq(load(&c, "dir.conf", &d), -EISDIR);
	ck_assert_str_eq(d.msg, "dir.conf: cannot read: Is a directory");
	ck_assert_int_eq(load(&c, "", &d), -EINVAL);
	engine_config_done(&c);
}
END_TEST

START_TEST(test_failed_load_changes_nothing)
{
	engine_config c;
	fatelf_diag d;

	tu_tmpdir();
	load_text(&c, "[Daemon]\nFetchTimeoutSec=5\n[Policy]\nKeepFat=/a/*\nPolicy=keep\n");
	put("fatelfd.conf", "[Daemon]\nFetchTimeoutSec=6\n[Policy]\nKeepFat=\nKeepFat=/b/*\nPolicy=native\nX=1\n");
	ck_assert_int_eq(load(&c, "fatelfd.conf", &d), -EINVAL);
	ck_assert_str_eq(d.msg, "fatelfd.conf:7: X: unknown key in [Policy]");
	ck_assert_uint_eq(c.fetch_timeout, 5);
	ck_assert_uint_eq(c.nkeep_fat, 1);
	ck_assert_str_eq(c.keep_fat[0], "/a/*");
	ck_assert_int_eq(c.policy.policy, ENGINE_POLICY_KEEP);

	/* and a later good load applies on top of what is there */
	put("fatelfd.conf", "[Policy]\nKeepFat=/b/*\n");
	ck_assert_msg(load(&c, "fatelfd.conf", &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(c.nkeep_fat, 2);
	ck_assert_uint_eq(c.fetch_timeout, 5);
	engine_config_done(&c);
}
END_TEST

static void assert_key_is_a(const fatelf_ms_pubkey *k)
{
	char id[17], text[64];

	fatelf_ms_keyid_format(k->keyid, id);
	ck_assert_str_eq(id, KEY_A_ID);
	fatelf_ms_pubkey_format(k, text);
	ck_assert_str_eq(text, KEY_A);
}

START_TEST(test_keys)
{
	const char *dir = tu_tmpdir();
	engine_config c;
	fatelf_ms_pubkey *keys = NULL, b;
	fatelf_diag d;
	size_t n = 99;
	char path[4200], btext[64], bfile[200];

	engine_config_init(&c);
	free(c.trusted_keys);
	snprintf(path, sizeof(path), "%s/keys.d", dir);
	c.trusted_keys = strdup(path);

	/* a missing directory: no keys */
	fatelf_diag_clear(&d);
	ck_assert_int_eq(engine_config_load_keys(&c, &keys, &n, &d), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(keys);

	/* an empty one too */
	ck_assert_int_eq(mkdir("keys.d", 0755), 0);
	n = 99;
	ck_assert_int_eq(engine_config_load_keys(&c, &keys, &n, &d), 0);
	ck_assert_uint_eq(n, 0);

	/* a second key written by hand from its bytes */
	memset(&b, 0, sizeof(b));
	for (int i = 0; i < 8; i++)
		b.keyid[i] = (uint8_t)(0x11 * (i + 1));
	for (int i = 0; i < 32; i++)
		b.pk[i] = (uint8_t)(i * 7 + 3);
	fatelf_ms_pubkey_format(&b, btext);
	snprintf(bfile, sizeof(bfile), "untrusted comment: key b\n%s\n", btext);

	/* name order, not creation order; other files are not keys */
	put("keys.d/b-second.pub", bfile);
	put("keys.d/a-first.pub", KEY_A_PUB);
	put("keys.d/notes.txt", "not a key\n");
	put("keys.d/.hidden.pub", "not a key\n");
	ck_assert_msg(engine_config_load_keys(&c, &keys, &n, &d) == 2, "%s", d.msg);
	ck_assert_uint_eq(n, 2);
	assert_key_is_a(&keys[0]);
	ck_assert_mem_eq(&keys[1], &b, sizeof(b));
	free(keys);
	keys = NULL;

	/* a key that does not parse is an error naming its file */
	put("keys.d/c-broken.pub", "untrusted comment: broken\nRWQnotakey\n");
	n = 99;
	ck_assert_int_eq(engine_config_load_keys(&c, &keys, &n, &d), -FATELF_E_KEY_FORMAT);
	snprintf(path, sizeof(path), "%s/keys.d/c-broken.pub: ", dir);
	ck_assert_msg(strncmp(d.msg, path, strlen(path)) == 0, "%s", d.msg);
	snprintf(path, sizeof(path), "%s/keys.d/c-broken.pub", dir);
	ck_assert_str_eq(d.subject, path);
	ck_assert_uint_eq(n, 99);
	ck_assert_ptr_null(keys);

	/* a directory named like a key */
	ck_assert_int_eq(unlink("keys.d/c-broken.pub"), 0);
	ck_assert_int_eq(mkdir("keys.d/d.pub", 0755), 0);
	ck_assert_int_eq(engine_config_load_keys(&c, &keys, &n, &d), -EISDIR);
	ck_assert_ptr_nonnull(strstr(d.msg, "keys.d/d.pub: "));
	engine_config_done(&c);
}
END_TEST

static Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_shipped_file);
	tcase_add_test(tc, test_every_key);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_dropins);
	tcase_add_test(tc, test_keep_fat_lists);
	tcase_add_test(tc, test_targets_policy);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_deny_networks);
	tcase_add_test(tc, test_fetch_proxy);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_failed_load_changes_nothing);
	tcase_add_test(tc, test_keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(conf_suite());
}
