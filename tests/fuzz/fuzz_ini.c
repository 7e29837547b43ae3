/*
 * fuzz_ini: libFuzzer target for the INI reader (lib/basic/ini.c), which
 * reads fatelfd.conf, repos.d and registries.d, through a table of every
 * type it converts (boolean, path, the three numbers), a list key of the
 * caller's own, and a required key in a second section.
 *
 * Besides "no crash, no sanitizer report, no leak" it checks properties
 * that must hold for any input, and aborts (a libFuzzer crash) when one
 * does not:
 *   - a refusal is -EINVAL (or the list parser's own -EPERM) with the
 *     diag's code the same, its subject the file, and a message
 *     "fuzz.conf:LINE: " whose LINE is one of the input's lines, in clean
 *     text (hostile bytes escaped);
 *   - what a success stores keeps the table's rules (absolute path,
 *     numbers within range);
 *   - a blank line put in front moves a refusal one line down and changes
 *     nothing else;
 *   - "\r\n" line ends read the same as "\n" ones.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"
#include "macro.h"
#include "fuzz.h"

struct settings {
	bool flag;
	char *path;
	unsigned count;
	size_t entries;
	uint64_t size;
	unsigned items;
	bool named;
};

static int parse_item(ini_file *f, const ini_key *k, const char *value, void *field)
{
	struct settings *s = field;

	if (strcmp(value, "fail") == 0)
		return ini_error(f, -EPERM, k->name, "refused");
	s->items++;
	return 0;
}

static int parse_name(ini_file *f, const ini_key *k, const char *value, void *field)
{
	if (!*value)
		return ini_error(f, -EINVAL, k->name, "empty");
	*(bool *)field = true;
	return 0;
}

static const ini_key keys[] = {
	{ .section = "Main", .name = "Flag", .type = INI_BOOL, .offset = offsetof(struct settings, flag) },
	{ .section = "Main", .name = "Path", .type = INI_PATH, .offset = offsetof(struct settings, path) },
	{ .section = "Main", .name = "Count", .type = INI_UNSIGNED, .offset = offsetof(struct settings, count),
	  .min = 1, .max = 100 },
	{ .section = "Main", .name = "Entries", .type = INI_SIZE, .offset = offsetof(struct settings, entries),
	  .min = 0, .max = SIZE_MAX },
	{ .section = "Main", .name = "Size", .type = INI_BYTES, .offset = offsetof(struct settings, size),
	  .min = 4096, .max = (uint64_t)1 << 40 },
	{ .section = "Main", .name = "Item", .type = INI_CUSTOM, .offset = 0, .parse = parse_item },
	{ .section = "Other", .name = "Name", .type = INI_CUSTOM, .offset = offsetof(struct settings, named),
	  .flags = INI_REQUIRED, .parse = parse_name },
};

struct outcome {
	int r;
	unsigned line;          /* of a refusal */
	char rest[sizeof(((fatelf_diag *)0)->msg)];     /* its message after "fuzz.conf:LINE:" */
};

static void run(const char *text, size_t len, struct outcome *o)
{
	struct settings s = { .count = 1, .size = 4096 };
	const ini_table t = { .keys = keys, .nkeys = ARRAY_SIZE(keys), .base = &s };
	fatelf_diag d;
	char *end;
	unsigned long line;

	fatelf_diag_clear(&d);
	o->r = ini_parse(&t, "fuzz.conf", text, len, &d);
	o->line = 0;
	o->rest[0] = '\0';
	if (o->r == 0) {
		fuzz_assert(!s.path || s.path[0] == '/');
		fuzz_assert(s.count >= 1 && s.count <= 100);
		fuzz_assert(s.size >= 4096 && s.size <= (uint64_t)1 << 40);
		fuzz_assert(s.named);
		free(s.path);
		return;
	}
	free(s.path);
	fuzz_assert(o->r == -EINVAL || o->r == -EPERM);
	fuzz_assert(d.code == o->r);
	fuzz_assert(strcmp(d.subject, "fuzz.conf") == 0);
	fuzz_assert(fuzz_text_clean(d.msg));
	fuzz_assert(strncmp(d.msg, "fuzz.conf:", 10) == 0);
	line = strtoul(d.msg + 10, &end, 10);
	fuzz_assert(end > d.msg + 10 && *end == ':' && end[1] == ' ' && end[2] != '\0');
	fuzz_assert(line >= 1 && line <= UINT32_MAX);
	o->line = (unsigned)line;
	snprintf(o->rest, sizeof(o->rest), "%s", end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct outcome a, b;
	size_t lines = 1, longest = 0, cur = 0, n = 0;
	char *copy;

	for (size_t i = 0; i < size; i++) {
		if (text[i] == '\n') {
			lines += i + 1 < size;
			cur = 0;
		} else {
			longest = MAX(longest, ++cur);
		}
	}
	run(text, size, &a);
	if (a.r < 0)
		fuzz_assert(a.line <= lines);

	copy = malloc(2 * size + 2);
	fuzz_assert(copy != NULL);

	/* one blank line more in front */
	copy[0] = '\n';
	memcpy(copy + 1, data, size);
	run(copy, size + 1, &b);
	fuzz_assert(b.r == a.r);
	if (size > 0) {
		fuzz_assert(b.line == (a.r < 0 ? a.line + 1 : 0));
		fuzz_assert(strcmp(a.rest, b.rest) == 0);
	}

	/* "\r\n" line ends, where every line still fits */
	if (longest < INI_LINE_MAX) {
		for (size_t i = 0; i < size; i++) {
			if (text[i] == '\n')
				copy[n++] = '\r';
			copy[n++] = text[i];
		}
		run(copy, n, &b);
		fuzz_assert(b.r == a.r && b.line == a.line);
		fuzz_assert(strcmp(a.rest, b.rest) == 0);
	}
	free(copy);
	return 0;
}
