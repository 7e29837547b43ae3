/*
 * The ELF bytes inspect reads, caught from a stream (elfcatch.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elfcatch.h"
#include "macro.h"
#include "reader.h"

/* Copies what [off, off + len) of the file has of [doff, doff + dlen) into dst. */
static void catch_range(uint8_t *dst, uint64_t doff, uint64_t dlen, const void *buf, uint64_t off, size_t len)
{
	uint64_t lo = MAX(doff, off), hi = MIN(doff + dlen, off + (uint64_t)len);

	if (lo < hi)
		memcpy(dst + (lo - doff), (const uint8_t *)buf + (lo - off), (size_t)(hi - lo));
}

static uint64_t get_n(const uint8_t *p, unsigned n, bool msb)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[msb ? n - 1 - i : i] << (8 * i);
	return v;
}

/* Places the program header table from the whole head (an ELF header). */
static int place(fatelf_elfcatch *c)
{
	const uint8_t *h = c->head;
	bool is64 = h[4] == FATELF_CLASS64, msb = h[5] == FATELF_DATA2MSB;
	uint64_t phoff = is64 ? get_n(h + 32, 8, msb) : get_n(h + 28, 4, msb);
	unsigned entsize = (unsigned)get_n(h + (is64 ? 54 : 42), 2, msb);
	unsigned phnum = (unsigned)get_n(h + (is64 ? 56 : 44), 2, msb);

	c->placed = true;
	/* A table inspect refuses before it reads one is not caught. */
	if (!fatelf_is_elf(h, sizeof(c->head)) || phnum == 0 || phnum == 0xffff || entsize != (is64 ? 56u : 32u) ||
	    phoff > UINT64_MAX - (uint64_t)phnum * entsize)
		return 0;
	c->tab_off = phoff;
	c->tab_len = (uint64_t)phnum * entsize;
	c->tab = calloc(1, (size_t)c->tab_len);
	if (!c->tab)
		return -ENOMEM;
	/* A 32-bit table may start inside the 64 bytes of the head. */
	catch_range(c->tab, c->tab_off, c->tab_len, c->head, 0, sizeof(c->head));
	return 0;
}

int fatelf_elfcatch_block(fatelf_elfcatch *c, const void *buf, uint64_t off, size_t len)
{
	if (len > UINT64_MAX - off)
		return -EINVAL;
	catch_range(c->head, 0, sizeof(c->head), buf, off, len);
	if (!c->placed && off + len >= sizeof(c->head)) {
		int r = place(c);

		if (r < 0)
			return r;
	}
	if (c->tab)
		catch_range(c->tab, c->tab_off, c->tab_len, buf, off, len);
	return 0;
}

/* Random access over what was caught; anything else is not there. */
static ssize_t caught_pread(const fatelf_reader *r, void *buf, size_t len, uint64_t off)
{
	const fatelf_elfcatch *c = r->ctx;

	if (off <= sizeof(c->head) && len <= sizeof(c->head) - off) {
		memcpy(buf, c->head + off, len);
		return (ssize_t)len;
	}
	if (c->tab && off >= c->tab_off && off - c->tab_off <= c->tab_len && len <= c->tab_len - (off - c->tab_off)) {
		memcpy(buf, c->tab + (off - c->tab_off), len);
		return (ssize_t)len;
	}
	return -EIO;
}

int fatelf_elfcatch_inspect(fatelf_elfcatch *c, uint64_t size, fatelf_elfinfo *ret, fatelf_diag *d)
{
	fatelf_reader rd = { .pread = caught_pread, .size = size, .ctx = c, .fd = -1 };

	if (!c->placed) {
		int r = place(c);

		if (r < 0)
			return fatelf_diag_oom(d);
	}
	return fatelf_elf_inspect(&rd, 0, size, -1, ret, d);
}

void fatelf_elfcatch_done(fatelf_elfcatch *c)
{
	free(c->tab);
	c->tab = NULL;
}
