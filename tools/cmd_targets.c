/*
 * fatelf targets: what this machine runs (its uname machine, native and
 * compatible targets, as names every other command accepts) and whether
 * a binfmt_misc handler for FatELF is registered, so that a user can tell
 * which record a fat file would give them here and whether it would run.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cmd.h"
#include "macro.h"
#include "run.h"

const char cmd_targets_usage[] =
	"Usage: fatelf targets [--json] [--names]\n"
	"\n"
	"Show this machine's uname machine, the targets it runs natively and as\n"
	"compatible targets (machine:bits:order, and the familiar architecture\n"
	"name), the targets other binfmt_misc handlers (qemu-user) run for it\n"
	"(\"emulated\"), and whether the binfmt_misc handler for FatELF\n"
	"(fatelf-run) is registered. FATELF_BINFMT_MISC_DIR names another\n"
	"directory to read binfmt_misc entries from.\n"
	"\n"
	"Options:\n"
	"  -j, --json   print one JSON object\n"
	"  -n, --names  print instead the familiar architecture names every command\n"
	"               takes as a TARGET (x86_64, aarch64, amd64, arm64, ...), one a\n"
	"               line; with --json, an array of {\"arch\", \"debian\", \"target\"}\n"
	"  -h, --help   show this help\n";

enum binfmt_state { BINFMT_UNAVAILABLE, BINFMT_NOT_REGISTERED, BINFMT_REGISTERED };

struct binfmt {
	enum binfmt_state state;
	int error;                              /* why unavailable */
	fatelf_binfmt_entry *entries;
	size_t nentries;
	const fatelf_binfmt_entry *fatelf;      /* FatELF's handler, when registered */
};

/* A target the host does not run, that a binfmt_misc entry would. */
struct emulated {
	fatelf_target target;
	const char *handler;
};

static void binfmt_probe(struct binfmt *ret)
{
	fatelf_binfmt_entry *list = NULL;
	int n;

	memset(ret, 0, sizeof(*ret));
	n = fatelf_binfmt_list(NULL, &list);
	if (n < 0) {
		ret->state = BINFMT_UNAVAILABLE;
		ret->error = n;
		return;
	}
	ret->state = BINFMT_NOT_REGISTERED;
	ret->entries = list;
	ret->nentries = (size_t)n;
	/* Several FatELF entries would be odd; an enabled one is the one the
	 * kernel uses, so report that one first. */
	for (size_t i = 0; i < ret->nentries; i++) {
		const fatelf_binfmt_entry *e = &list[i];

		if (!fatelf_binfmt_is_fatelf(e))
			continue;
		if (!ret->fatelf || (e->enabled && !ret->fatelf->enabled))
			ret->fatelf = e;
	}
	if (ret->fatelf)
		ret->state = BINFMT_REGISTERED;
}

static const char *binfmt_state_name(enum binfmt_state s)
{
	switch (s) {
	case BINFMT_REGISTERED:
		return "registered";
	case BINFMT_NOT_REGISTERED:
		return "not registered";
	default:
		return "unavailable";
	}
}

static void put_e16(uint8_t *p, uint16_t v, bool msb)
{
	p[msb ? 0 : 1] = (uint8_t)(v >> 8);
	p[msb ? 1 : 0] = (uint8_t)v;
}

/* The first bytes of an ELF executable for t: what the kernel shows a
 * binfmt_misc magic when such a record is exec'd. */
static size_t elf_header_for(const fatelf_target *t, uint16_t e_type, uint8_t buf[64])
{
	bool msb = t->byte_order == FATELF_DATA2MSB;
	size_t size = t->word_size == FATELF_CLASS64 ? 64 : 52;

	memset(buf, 0, 64);
	memcpy(buf, "\x7f" "ELF", 4);
	buf[4] = t->word_size;
	buf[5] = t->byte_order;
	buf[6] = 1;             /* EI_VERSION */
	buf[7] = 0;             /* EI_OSABI: SYSV */
	put_e16(buf + 16, e_type, msb);
	put_e16(buf + 18, t->machine, msb);
	buf[msb ? 23 : 20] = 1; /* e_version, 32 bits */
	put_e16(buf + (size == 64 ? 52 : 40), (uint16_t)size, msb);    /* e_ehsize */
	return size;
}

/*
 * Every target with a familiar architecture name that the host does not
 * run itself but an enabled binfmt_misc entry (not FatELF's) would, as an
 * executable (ET_EXEC) or a PIE (ET_DYN). The names come from the
 * library's table, found by asking it about every machine, class and
 * order: the table is private, and this costs a few milliseconds.
 */
static unsigned emulated_find(const fatelf_host *host, const struct binfmt *bf,
			      struct emulated **ret)
{
	struct emulated *v = NULL;
	unsigned n = 0;
	size_t cap = 0;

	*ret = NULL;
	if (bf->nentries == 0)
		return 0;
	for (uint32_t m = 0; m <= UINT16_MAX; m++)
		for (uint8_t w = FATELF_CLASS32; w <= FATELF_CLASS64; w++)
			for (uint8_t o = FATELF_DATA2LSB; o <= FATELF_DATA2MSB; o++) {
				fatelf_target t = {
					.machine = (uint16_t)m, .word_size = w, .byte_order = o,
				};
				static const uint16_t types[] = { 2 /* ET_EXEC */, 3 /* ET_DYN */ };
				uint8_t buf[64];
				int h = -1;

				if (!fatelf_target_arch(&t) || fatelf_host_runs(host, &t) > 0)
					continue;
				for (size_t i = 0; i < ARRAY_SIZE(types) && h < 0; i++) {
					size_t len = elf_header_for(&t, types[i], buf);

					h = fatelf_binfmt_find_handler(bf->entries, bf->nentries, buf, len);
				}
				if (h < 0)
					continue;
				if (GROW_ARRAY(v, cap, n + 1) < 0)
					goto out;       /* list what fits */
				v[n++] = (struct emulated) { .target = t, .handler = bf->entries[h].name };
			}
out:
	*ret = v;
	return n;
}

static void target_name(const fatelf_target *t, char buf[FATELF_TARGET_NAME_MAX])
{
	fatelf_target_format_fields(t, FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE |
				    FATELF_WANT_BYTEORDER, buf);
}

static void print_targets_human(const char *title, const fatelf_target *v, unsigned n)
{
	char name[FATELF_TARGET_NAME_MAX];

	if (n == 0) {
		printf("%-14s -\n", title);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		const char *arch = fatelf_target_arch(&v[i]);

		target_name(&v[i], name);
		printf("%-14s %s (%s)\n", i == 0 ? title : "", name, arch ? arch : "-");
	}
}

static struct json_object *targets_json(const fatelf_target *v, unsigned n)
{
	struct json_object *a = json_object_new_array();
	char name[FATELF_TARGET_NAME_MAX];

	for (unsigned i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();
		const char *arch = fatelf_target_arch(&v[i]);

		target_name(&v[i], name);
		json_object_object_add(o, "target", json_object_new_string(name));
		json_object_object_add(o, "arch", arch ? json_object_new_string(arch) : NULL);
		json_object_array_add(a, o);
	}
	return a;
}

static void print_emulated_human(const struct emulated *v, unsigned n)
{
	char name[FATELF_TARGET_NAME_MAX];

	if (n == 0) {
		printf("%-14s -\n", "emulated:");
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		target_name(&v[i].target, name);
		printf("%-14s %s (%s) by %s\n", i == 0 ? "emulated:" : "", name,
		       fatelf_target_arch(&v[i].target), v[i].handler);
	}
}

static struct json_object *emulated_json(const struct emulated *v, unsigned n)
{
	struct json_object *a = json_object_new_array();
	char name[FATELF_TARGET_NAME_MAX];

	for (unsigned i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		target_name(&v[i].target, name);
		json_object_object_add(o, "target", json_object_new_string(name));
		json_object_object_add(o, "arch", json_object_new_string(fatelf_target_arch(&v[i].target)));
		json_object_object_add(o, "handler", json_object_new_string(v[i].handler));
		json_object_array_add(a, o);
	}
	return a;
}

static void print_binfmt_human(const struct binfmt *bf)
{
	const fatelf_binfmt_entry *e = bf->fatelf;

	switch (bf->state) {
	case BINFMT_REGISTERED:
		printf("%-14s registered (%s, %s, flags %s%s)\n", "binfmt_misc:", e->name,
		       e->interpreter, e->flags[0] ? e->flags : "-", e->enabled ? "" : ", disabled");
		break;
	case BINFMT_NOT_REGISTERED:
		printf("%-14s not registered\n", "binfmt_misc:");
		break;
	default:
		if (bf->error == -ENOENT)
			printf("%-14s unavailable (binfmt_misc is not mounted)\n", "binfmt_misc:");
		else
			printf("%-14s unavailable (%s)\n", "binfmt_misc:", fatelf_strerror(bf->error));
		break;
	}
}

static struct json_object *binfmt_json(const struct binfmt *bf)
{
	const fatelf_binfmt_entry *e = bf->fatelf;
	struct json_object *b = json_object_new_object();

	json_object_object_add(b, "state", json_object_new_string(binfmt_state_name(bf->state)));
	json_object_object_add(b, "name", e ? json_object_new_string(e->name) : NULL);
	json_object_object_add(b, "enabled", e ? json_object_new_boolean(e->enabled) : NULL);
	json_object_object_add(b, "interpreter", e ? json_object_new_string(e->interpreter) : NULL);
	json_object_object_add(b, "flags", e ? json_object_new_string(e->flags) : NULL);
	return b;
}

/* Whether name is row i's Debian name that an earlier name already gave. */
static bool name_seen(const char *name, size_t row)
{
	fatelf_target t;
	const char *arch, *debian;

	for (size_t i = 0; i <= row && fatelf_arch_get(i, &t, &arch, &debian); i++)
		if (strcmp(arch, name) == 0 || (i < row && debian && strcmp(debian, name) == 0))
			return true;
	return false;
}

static int print_names(bool json)
{
	_cleanup_json_ struct json_object *a = json ? json_object_new_array() : NULL;
	const char *arch, *debian;
	fatelf_target t;

	for (size_t i = 0; fatelf_arch_get(i, &t, &arch, &debian); i++) {
		char name[FATELF_TARGET_NAME_MAX];

		if (!json) {
			puts(arch);
			if (debian && !name_seen(debian, i))
				puts(debian);
			continue;
		}
		struct json_object *o = json_object_new_object();

		fatelf_target_format_fields(&t, FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE |
					    FATELF_WANT_BYTEORDER, name);
		json_object_object_add(o, "arch", json_object_new_string(arch));
		json_object_object_add(o, "debian", debian ? json_object_new_string(debian) : NULL);
		json_object_object_add(o, "target", json_object_new_string(name));
		json_object_array_add(a, o);
	}
	if (json)
		cmd_json_print(a);
	return EXIT_OK;
}

/* 1 to go on, 0 when done (--help), else CMD_E_USAGE (reported). */
static int parse_targets_options(int argc, char **argv, bool *ret_json, bool *ret_names)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "names", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jnh", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			*ret_json = true;
			break;
		case 'n':
			*ret_names = true;
			break;
		case 'h':
			cmd_help(cmd_targets_usage);
			return 0;
		default:
			return cmd_option_failed("targets", c, argv);
		}
	}
	return 1;
}

int cmd_targets(int argc, char **argv)
{
	_cleanup_free_ struct emulated *emu = NULL;
	fatelf_host host;
	struct binfmt bf;
	bool json = false, names = false;
	unsigned nemu;
	int r;

	r = parse_targets_options(argc, argv, &json, &names);
	if (r <= 0)
		return cmd_exit_code(r);
	if (optind < argc)
		return cmd_usage_error("targets", "unexpected argument '%s'", argv[optind]);
	if (names)
		return print_names(json);

	r = fatelf_host_detect(&host);
	if (r < 0) {
		fatelf_diag d;

		fatelf_diag_clear(&d);
		fatelf_diag_set(&d, r, -1, "cannot detect this machine's targets: %s",
				fatelf_strerror(r));
		return cmd_report(NULL, &d, r);
	}
	binfmt_probe(&bf);
	nemu = emulated_find(&host, &bf, &emu);

	if (json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();

		json_object_object_add(o, "uname_machine", json_object_new_string(host.uname_machine));
		json_object_object_add(o, "native", targets_json(host.native, host.nnative));
		json_object_object_add(o, "compatible", targets_json(host.compat, host.ncompat));
		json_object_object_add(o, "emulated", emulated_json(emu, nemu));
		json_object_object_add(o, "binfmt_misc", binfmt_json(&bf));
		cmd_json_print(o);
	} else {
		printf("%-14s %s\n", "uname machine:", host.uname_machine);
		print_targets_human("native:", host.native, host.nnative);
		print_targets_human("compatible:", host.compat, host.ncompat);
		print_emulated_human(emu, nemu);
		print_binfmt_human(&bf);
	}
	free(bf.entries);
	return EXIT_OK;
}
