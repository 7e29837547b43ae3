/*
 * fuzz_binfmt: libFuzzer target for the binfmt_misc entry parser and
 * matcher (lib/run/binfmt.c), whose input is text anyone allowed to register
 * an entry controls.
 *
 * Besides "no crash, no sanitizer report" it checks properties that must
 * hold for any input, and aborts (a libFuzzer crash) when one does not:
 *   - a failure is -EINVAL with a filled diagnostic, and leaves the
 *     output untouched;
 *   - a parsed entry fits the kernel's 256-byte buffer, its strings are
 *     terminated, its flags are distinct letters of "POCF", and its magic
 *     holds no bit outside its mask (as the kernel stores it);
 *   - printing the entry the way the kernel does and parsing that again
 *     gives the same entry;
 *   - matching against slices of the input agrees with a plain rendering
 *     of the kernel's rule, a buffer built from the magic always matches an
 *     enabled magic entry, and FatELF's own handler is never chosen.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelf.h"
#include "run.h"
#include "fuzz.h"

static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* The kernel's rule, written the way the kernel writes it. */
static bool reference_match(const fatelf_binfmt_entry *e, const uint8_t *buf, size_t len)
{
	if (!e->enabled || !e->magic_type || e->offset + e->magic_len > len)
		return false;
	for (size_t i = 0; i < e->magic_len; i++)
		if ((buf[e->offset + i] ^ e->magic[i]) & e->mask[i])
			return false;
	return true;
}

static void entry_check(const fatelf_binfmt_entry *e)
{
	fuzz_assert(terminated(e->name, sizeof(e->name)));
	fuzz_assert(terminated(e->interpreter, sizeof(e->interpreter)));
	fuzz_assert(e->interpreter[0] != '\0');
	fuzz_assert(terminated(e->flags, sizeof(e->flags)));
	fuzz_assert(strlen(e->flags) <= 4);
	for (size_t i = 0; e->flags[i]; i++) {
		fuzz_assert(strchr("POCF", e->flags[i]) != NULL);
		fuzz_assert(strchr(e->flags + i + 1, e->flags[i]) == NULL);
	}
	fuzz_assert(terminated(e->extension, sizeof(e->extension)));
	if (e->magic_type) {
		fuzz_assert(e->magic_len >= 1);
		fuzz_assert(e->offset + e->magic_len <= FATELF_BINFMT_BUF);
		for (size_t i = 0; i < e->magic_len; i++)
			fuzz_assert((e->magic[i] & ~e->mask[i]) == 0);
	} else {
		fuzz_assert(e->extension[0] != '\0');
		fuzz_assert(strchr(e->extension, '/') == NULL);
	}
}

/* The entry as /proc/sys/fs/binfmt_misc/NAME shows it. */
static size_t entry_print(const fatelf_binfmt_entry *e, char *buf, size_t size)
{
	size_t n;
	bool all_ones = true;

	n = (size_t)snprintf(buf, size, "%s\ninterpreter %s\nflags: %s\n",
			     e->enabled ? "enabled" : "disabled", e->interpreter, e->flags);
	if (!e->magic_type)
		return n + (size_t)snprintf(buf + n, size - n, "extension .%s\n", e->extension);
	n += (size_t)snprintf(buf + n, size - n, "offset %u\nmagic ", e->offset);
	for (size_t i = 0; i < e->magic_len; i++) {
		n += (size_t)snprintf(buf + n, size - n, "%02x", e->magic[i]);
		all_ones &= e->mask[i] == 0xff;
	}
	if (!all_ones) {
		n += (size_t)snprintf(buf + n, size - n, "\nmask ");
		for (size_t i = 0; i < e->magic_len; i++)
			n += (size_t)snprintf(buf + n, size - n, "%02x", e->mask[i]);
	}
	n += (size_t)snprintf(buf + n, size - n, "\n");
	fuzz_assert(n < size);
	return n;
}

static void fuzz_match(const fatelf_binfmt_entry *e, const uint8_t *data, size_t size)
{
	static uint8_t buf[FATELF_BINFMT_BUF];
	size_t len = size < sizeof(buf) ? size : sizeof(buf);
	fatelf_binfmt_entry off;

	/* the input's own bytes, at every length up to the buffer */
	for (size_t l = 0; l <= len; l += 1 + l / 8)
		fuzz_assert(fatelf_binfmt_matches(e, data, l) == reference_match(e, data, l));
	fuzz_assert(fatelf_binfmt_matches(e, data, len) == reference_match(e, data, len));

	/* a buffer that carries the magic at its offset */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, len);
	if (e->magic_type)
		memcpy(buf + e->offset, e->magic, e->magic_len);
	fuzz_assert(fatelf_binfmt_matches(e, buf, sizeof(buf)) == (e->enabled && e->magic_type));
	fuzz_assert(fatelf_binfmt_find_handler(e, 1, buf, sizeof(buf)) ==
		    (e->enabled && e->magic_type && !fatelf_binfmt_is_fatelf(e) ? 0 : -1));
	if (fatelf_binfmt_is_fatelf(e)) {
		fuzz_assert(e->offset == 0 && e->magic_len >= 4);
		fuzz_assert(memcmp(e->magic, "\xfa\x70\x0e\x1f", 4) == 0);
	}

	memcpy(&off, e, sizeof(off));
	off.enabled = false;
	fuzz_assert(!fatelf_binfmt_matches(&off, buf, sizeof(buf)));
	fuzz_assert(fatelf_binfmt_find_handler(&off, 1, buf, sizeof(buf)) == -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fatelf_binfmt_entry e, again;
	static char text[16384];
	fatelf_diag d;
	size_t n;
	int r;

	memset(&e, 0xa5, sizeof(e));
	memcpy(&again, &e, sizeof(e));
	fatelf_diag_clear(&d);
	r = fatelf_binfmt_parse("fuzz", (const char *)data, size, &e, &d);
	if (r < 0) {
		fuzz_assert(r == -EINVAL);
		fuzz_assert(d.code == r);
		fuzz_assert(terminated(d.msg, sizeof(d.msg)));
		fuzz_assert(d.msg[0] != '\0');
		fuzz_assert(memcmp(&e, &again, sizeof(e)) == 0);
		return 0;
	}
	fuzz_assert(r == 0);
	fuzz_assert(strcmp(e.name, "fuzz") == 0);
	entry_check(&e);

	n = entry_print(&e, text, sizeof(text));
	fatelf_diag_clear(&d);
	r = fatelf_binfmt_parse("fuzz", text, n, &again, &d);
	if (r < 0) {
		fprintf(stderr, "the reprinted entry does not parse: %s\n%s", d.msg, text);
		abort();
	}
	fuzz_assert(memcmp(&e, &again, sizeof(e)) == 0);

	fuzz_match(&e, data, size);
	return 0;
}
