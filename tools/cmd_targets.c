/*
 * fatelf targets: what this machine runs (its uname machine, native and
 * compatible targets, as names every other command accepts) and whether
 * a binfmt_misc handler for FatELF is registered, so that a user can tell
 * which record a fat file would give them here and whether it would run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "macro.h"

const char cmd_targets_usage[] =
	"Usage: fatelf targets [--json]\n"
	"\n"
	"Show this machine's uname machine, the targets it runs natively and as\n"
	"compatible targets (machine:bits:order, and the familiar architecture\n"
	"name), and whether a binfmt_misc handler for FatELF is registered.\n"
	"\n"
	"Options:\n"
	"  -j, --json   print one JSON object\n"
	"  -h, --help   show this help\n";

#define BINFMT_DIR "/proc/sys/fs/binfmt_misc"
/* FatELF's magic as binfmt_misc prints it: the file's first bytes in hex */
#define BINFMT_FATELF_MAGIC "fa700e1f"

enum binfmt_state { BINFMT_UNAVAILABLE, BINFMT_NOT_REGISTERED, BINFMT_REGISTERED };

struct binfmt {
	enum binfmt_state state;
	bool enabled;
	char name[256];
};

/* Reads a binfmt_misc entry; true when its magic is FatELF's. */
static bool binfmt_entry_is_fatelf(int dirfd, const char *name, bool *ret_enabled)
{
	_cleanup_close_ int fd = -1;
	char buf[4096];
	ssize_t n;
	char *line, *next;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	*ret_enabled = strncmp(buf, "enabled", 7) == 0;
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "magic ", 6) == 0 &&
		    strncmp(line + 6, BINFMT_FATELF_MAGIC, strlen(BINFMT_FATELF_MAGIC)) == 0)
			return true;
	}
	return false;
}

static void binfmt_probe(struct binfmt *ret)
{
	const char *dir = getenv("FATELF_BINFMT_MISC_DIR");
	DIR *d;
	struct dirent *de;

	memset(ret, 0, sizeof(*ret));
	ret->state = BINFMT_UNAVAILABLE;
	d = opendir(dir && *dir ? dir : BINFMT_DIR);
	if (!d)
		return;
	/* An unmounted binfmt_misc is an empty directory: no "register" file. */
	if (faccessat(dirfd(d), "register", F_OK, 0) < 0) {
		closedir(d);
		return;
	}
	ret->state = BINFMT_NOT_REGISTERED;
	while ((de = readdir(d))) {
		bool enabled = false;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "register") == 0 ||
		    strcmp(de->d_name, "status") == 0)
			continue;
		if (binfmt_entry_is_fatelf(dirfd(d), de->d_name, &enabled)) {
			ret->state = BINFMT_REGISTERED;
			ret->enabled = enabled;
			snprintf(ret->name, sizeof(ret->name), "%s", de->d_name);
			break;
		}
	}
	closedir(d);
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

int cmd_targets(int argc, char **argv)
{
	fatelf_host host;
	struct binfmt bf;
	bool json = false;
	int r;

	r = cmd_parse_json(argc, argv, "targets", cmd_targets_usage, &json);
	if (r >= 0)
		return r;
	if (optind < argc)
		return cmd_usage_error("targets", "unexpected argument '%s'", argv[optind]);

	r = fatelf_host_detect(&host);
	if (r < 0) {
		fatelf_diag d;

		fatelf_diag_clear(&d);
		fatelf_diag_set(&d, r, -1, "cannot detect this machine's targets: %s",
				fatelf_strerror(r));
		return cmd_report(NULL, &d, r);
	}
	binfmt_probe(&bf);

	if (json) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		struct json_object *b = json_object_new_object();

		json_object_object_add(o, "uname_machine", json_object_new_string(host.uname_machine));
		json_object_object_add(o, "native", targets_json(host.native, host.nnative));
		json_object_object_add(o, "compatible", targets_json(host.compat, host.ncompat));
		json_object_object_add(b, "state", json_object_new_string(binfmt_state_name(bf.state)));
		json_object_object_add(b, "name", bf.state == BINFMT_REGISTERED ?
				       json_object_new_string(bf.name) : NULL);
		json_object_object_add(b, "enabled", bf.state == BINFMT_REGISTERED ?
				       json_object_new_boolean(bf.enabled) : NULL);
		json_object_object_add(o, "binfmt_misc", b);
		cmd_json_print(o);
		return EXIT_OK;
	}

	printf("%-14s %s\n", "uname machine:", host.uname_machine);
	print_targets_human("native:", host.native, host.nnative);
	print_targets_human("compatible:", host.compat, host.ncompat);
	if (bf.state == BINFMT_REGISTERED)
		printf("%-14s registered (%s%s)\n", "binfmt_misc:", bf.name,
		       bf.enabled ? "" : ", disabled");
	else
		printf("%-14s %s\n", "binfmt_misc:", binfmt_state_name(bf.state));
	return EXIT_OK;
}
