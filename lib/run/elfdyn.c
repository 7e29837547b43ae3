/*
 * $ORIGIN reach: how many directories above its own an ELF image's
 * dynamic loader will look, through "$ORIGIN" or "${ORIGIN}" in its
 * DT_RPATH, DT_RUNPATH and DT_NEEDED strings. fatelf-run runs a record
 * from a cache entry, not from the fat file's directory; when the record
 * uses $ORIGIN, the entry has to mirror that directory and as many of its
 * ancestors as the references climb, so that ld.so (which takes $ORIGIN
 * from /proc/self/exe) finds the same libraries it would find next to the
 * fat file.
 *
 * The image is untrusted. Only the ELF header, the program header table,
 * the dynamic section and the strings it names are read, in bounded pieces
 * through the byte source, so the cost does not depend on the image size
 * (records can be 50 MiB and more). Every offset and size is checked
 * against the image, with overflow checks, before it is used.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fatelf.h"
#include "macro.h"
#include "run.h"

#define EHDR32_SIZE     52u
#define EHDR64_SIZE     64u
#define PHDR32_SIZE     32u
#define PHDR64_SIZE     56u
#define PN_XNUM         0xffffu
#define EV_CURRENT      1u

#define PT_LOAD         1u
#define PT_DYNAMIC      2u

#define DT_NULL         0u
#define DT_NEEDED       1u
#define DT_STRTAB       5u
#define DT_STRSZ        10u
#define DT_RPATH        15u
#define DT_RUNPATH      29u
#define DT_SONAME       14u
#define DT_FLAGS_1      0x6ffffffbu
#define DF_1_PIE        0x08000000u

/* Table entries are read in batches of this many. */
#define BATCH           64u
/* A dynamic section is a few dozen entries; this many without a DT_NULL
 * is not a real one, and walking it twice must stay cheap. */
#define DYN_MAX         (1u << 16)
/* The longest string read: rpaths and library names are far shorter, and
 * this is the only allocation, whatever DT_STRSZ claims. */
#define STR_MAX         (1u << 20)
/* Strings are read in pieces this big until their NUL turns up. */
#define STR_CHUNK       256u

typedef struct elf_view {
	const fatelf_reader *src;
	uint64_t base;
	uint64_t size;
	bool is64;
	int msb;
	uint64_t phoff;
	uint16_t phnum;
} elf_view;

typedef struct phdr {
	uint32_t type;
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
} phdr;

/* Reads image bytes [off, off + len), which the caller has bounds-checked. */
static int view_read(const elf_view *v, void *buf, size_t len, uint64_t off, const char *what,
		     fatelf_diag *d)
{
	int r = fatelf_reader_read_at(v->src, buf, len, v->base + off);

	if (r < 0)
		return fatelf_diag_set(d, r, -1, "reading %s: %s", what, fatelf_strerror(r));
	return 0;
}

/* true when [off, off + len) lies inside the image (overflow-safe). */
static bool view_contains(const elf_view *v, uint64_t off, uint64_t len)
{
	return off <= v->size && len <= v->size - off;
}

static int view_open(elf_view *v, fatelf_diag *d)
{
	uint8_t e[EHDR64_SIZE] = { 0 };
	size_t have = (size_t)MIN(v->size, (uint64_t)sizeof(e));
	unsigned ehsize, entsize;
	uint16_t phentsize;
	int r;

	r = view_read(v, e, have, 0, "the ELF header", d);
	if (r < 0)
		return r;
	if (have < 16 || memcmp(e, "\177ELF", 4) != 0)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "no ELF header: the image (0x%llx bytes) does not start with "
				       "7f 45 4c 46 and an identification", (unsigned long long)v->size);
	ehsize = fatelf_elf_ehdr_size(e[4]);
	if (ehsize == 0)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "ELF header: EI_CLASS is %u, not 1 (32-bit) or 2 (64-bit)", e[4]);
	if (e[5] != FATELF_DATA2LSB && e[5] != FATELF_DATA2MSB)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "ELF header: EI_DATA is %u, not 1 (little endian) or 2 (big endian)",
				       e[5]);
	if (v->size < ehsize)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "ELF header: the image is 0x%llx bytes, smaller than the %u-byte "
				       "header of its class", (unsigned long long)v->size, ehsize);
	v->is64 = ehsize == EHDR64_SIZE;
	v->msb = e[5] == FATELF_DATA2MSB;
	if (e[6] != EV_CURRENT || get_e32(e + 20, v->msb) != EV_CURRENT)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "ELF header: EI_VERSION %u, e_version %u: not 1", e[6],
				       get_e32(e + 20, v->msb));

	v->phoff = v->is64 ? get_e64(e + 32, v->msb) : get_e32(e + 28, v->msb);
	/* e_phentsize and e_phnum follow e_ehsize after the class-sized words */
	const uint8_t *tail = e + (v->is64 ? 52 : 40);
	phentsize = get_e16(tail + 2, v->msb);
	v->phnum = get_e16(tail + 4, v->msb);
	if (v->phnum == 0)
		return 0;
	entsize = v->is64 ? PHDR64_SIZE : PHDR32_SIZE;
	if (phentsize != entsize)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "ELF header: e_phentsize is %u, expected %u for ELFCLASS%s",
				       phentsize, entsize, v->is64 ? "64" : "32");
	if (v->phnum == PN_XNUM)
		return fatelf_diag_set(d, -FATELF_E_NOT_ELF, -1,
				       "ELF header: extended program header count (PN_XNUM) is not "
				       "supported");
	if (!view_contains(v, v->phoff, (uint64_t)v->phnum * entsize))
		return fatelf_diag_set(d, -FATELF_E_SEGMENT, -1,
				       "program header table [0x%llx, +0x%llx) lies outside the "
				       "image's 0x%llx bytes", (unsigned long long)v->phoff,
				       (unsigned long long)v->phnum * entsize,
				       (unsigned long long)v->size);
	return 0;
}

/*
 * Calls fn on each program header in order until it returns non-zero
 * (then returns that: > 0 stops the walk, < 0 is an error).
 */
static int view_each_phdr(const elf_view *v, int (*fn)(const phdr *ph, unsigned i, void *ctx),
			  void *ctx, fatelf_diag *d)
{
	const unsigned entsize = v->is64 ? PHDR64_SIZE : PHDR32_SIZE;
	uint8_t buf[BATCH * PHDR64_SIZE];

	for (unsigned first = 0; first < v->phnum; first += BATCH) {
		unsigned n = MIN(BATCH, (unsigned)v->phnum - first);
		int r = view_read(v, buf, (size_t)n * entsize, v->phoff + (uint64_t)first * entsize,
				  "the program header table", d);
		if (r < 0)
			return r;
		for (unsigned k = 0; k < n; k++) {
			const uint8_t *p = buf + (size_t)k * entsize;
			phdr ph = { .type = get_e32(p, v->msb) };

			if (v->is64) {
				ph.offset = get_e64(p + 8, v->msb);
				ph.vaddr = get_e64(p + 16, v->msb);
				ph.filesz = get_e64(p + 32, v->msb);
			} else {
				ph.offset = get_e32(p + 4, v->msb);
				ph.vaddr = get_e32(p + 8, v->msb);
				ph.filesz = get_e32(p + 16, v->msb);
			}
			r = fn(&ph, first + k, ctx);
			if (r != 0)
				return r;
		}
	}
	return 0;
}

/* ld.so uses the last PT_DYNAMIC it sees, so this does too. */
static int find_dynamic(const phdr *ph, unsigned i, void *ctx)
{
	phdr *dyn = ctx;

	(void)i;
	if (ph->type == PT_DYNAMIC)
		*dyn = *ph;
	return 0;
}

typedef struct strtab_map {
	const elf_view *v;
	uint64_t vaddr;
	uint64_t ret_offset;
	bool found;
	fatelf_diag *d;
} strtab_map;

/* The first PT_LOAD whose file bytes hold vaddr gives its file offset. */
static int map_strtab(const phdr *ph, unsigned i, void *ctx)
{
	strtab_map *m = ctx;

	if (ph->type != PT_LOAD || m->vaddr < ph->vaddr || m->vaddr - ph->vaddr >= ph->filesz)
		return 0;
	if (!view_contains(m->v, ph->offset, ph->filesz))
		return fatelf_diag_set(m->d, -FATELF_E_SEGMENT, -1,
				       "PT_LOAD segment (program header %u) holding DT_STRTAB covers "
				       "file bytes [0x%llx, +0x%llx), outside the image's 0x%llx bytes",
				       i, (unsigned long long)ph->offset,
				       (unsigned long long)ph->filesz, (unsigned long long)m->v->size);
	m->ret_offset = ph->offset + (m->vaddr - ph->vaddr);
	m->found = true;
	return 1;
}

/* The dynamic section's entries, read in batches. */
typedef struct dyn_walk {
	const elf_view *v;
	uint64_t offset;        /* in the image */
	uint64_t count;         /* entries to visit */
} dyn_walk;

static int dyn_each(const dyn_walk *w, int (*fn)(uint64_t tag, uint64_t val, void *ctx),
		    void *ctx, fatelf_diag *d)
{
	const unsigned entsize = w->v->is64 ? 16u : 8u;
	const unsigned half = entsize / 2;
	uint8_t buf[BATCH * 16];

	for (uint64_t first = 0; first < w->count; first += BATCH) {
		unsigned n = (unsigned)MIN((uint64_t)BATCH, w->count - first);
		int r = view_read(w->v, buf, (size_t)n * entsize, w->offset + first * entsize,
				  "the dynamic section", d);
		if (r < 0)
			return r;
		for (unsigned k = 0; k < n; k++) {
			const uint8_t *p = buf + (size_t)k * entsize;
			uint64_t tag = w->v->is64 ? get_e64(p, w->v->msb) : get_e32(p, w->v->msb);
			uint64_t val = w->v->is64 ? get_e64(p + half, w->v->msb)
						  : get_e32(p + half, w->v->msb);

			r = fn(tag, val, ctx);
			if (r != 0)
				return r;
		}
	}
	return 0;
}

typedef struct dyn_facts {
	uint64_t entries;       /* up to and including DT_NULL */
	uint64_t strtab, strsz;
	bool has_strtab, has_strsz;
	unsigned nstrings;      /* DT_NEEDED/RPATH/RUNPATH entries seen */
} dyn_facts;

/* Like ld.so, the last DT_STRTAB and DT_STRSZ win. */
static int dyn_scan(uint64_t tag, uint64_t val, void *ctx)
{
	dyn_facts *f = ctx;

	f->entries++;
	switch (tag) {
	case DT_NULL:
		return 1;
	case DT_STRTAB:
		f->strtab = val;
		f->has_strtab = true;
		break;
	case DT_STRSZ:
		f->strsz = val;
		f->has_strsz = true;
		break;
	case DT_NEEDED:
	case DT_RPATH:
	case DT_RUNPATH:
		f->nstrings++;
		break;
	}
	return 0;
}

static const char *tag_name(uint64_t tag)
{
	return tag == DT_NEEDED ? "DT_NEEDED" : tag == DT_RPATH ? "DT_RPATH" : "DT_RUNPATH";
}

static bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/*
 * Length of the dynamic string token "$ORIGIN" or "${ORIGIN}" at s (which
 * ends at end), or 0. As in glibc, "$ORIGIN" followed by a letter, digit
 * or '_' is another name ("$ORIGINX"), not the token.
 */
static size_t origin_token(const char *s, const char *end)
{
	size_t n = (size_t)(end - s);

	if (n >= 9 && memcmp(s, "${ORIGIN}", 9) == 0)
		return 9;
	if (n >= 7 && memcmp(s, "$ORIGIN", 7) == 0 && (n == 7 || !is_ident_char(s[7])))
		return 7;
	return 0;
}

/*
 * How far above $ORIGIN the path p[0..len) reaches, p being what follows
 * the token. Components count in order: ".." goes up, "." and empty ones
 * stay, names go down. When p does not start with '/', the token is glued
 * to more of a name ("$ORIGIN-x/lib" is "<dir>-x/lib"), a sibling of
 * $ORIGIN's directory: that is one level up, then down into it.
 */
static int path_reach(const char *p, size_t len)
{
	long level = 0, low = 0;
	size_t i = 0;

	if (len > 0 && p[0] != '/') {
		low = -1;
		while (i < len && p[i] != '/')
			i++;
	}
	while (i < len) {
		size_t start, n;

		i++;    /* the '/' */
		start = i;
		while (i < len && p[i] != '/')
			i++;
		n = i - start;
		if (n == 2 && p[start] == '.' && p[start + 1] == '.')
			level--;
		else if (n > 1 || (n == 1 && p[start] != '.'))
			level++;
		low = MIN(low, level);
	}
	/* strings are at most STR_MAX bytes, so this fits */
	return (int)-low;
}

/*
 * The deepest reach of the $ORIGIN tokens in one element (a path), or -1
 * when it has none. Each token counts from where it stands; what follows
 * a later token is then just a name, which can only lower the reach.
 */
static int element_reach(const char *s, size_t len)
{
	const char *end = s + len;
	int best = -1;

	for (const char *p = s; p < end; p++) {
		size_t t;

		if (*p != '$' || (t = origin_token(p, end)) == 0)
			continue;
		best = MAX(best, path_reach(p + t, (size_t)(end - p - t)));
	}
	return best;
}

/*
 * The reach of one string: DT_RPATH and DT_RUNPATH are ':'-separated
 * lists, each element a path; DT_NEEDED is one path (ld.so does not split
 * it, so a ':' in it is part of a name).
 */
static int string_reach(uint64_t tag, const char *s, size_t len)
{
	int best = -1;

	if (tag == DT_NEEDED)
		return element_reach(s, len);
	for (size_t i = 0; i <= len;) {
		const char *colon = memchr(s + i, ':', len - i);
		size_t n = colon ? (size_t)(colon - (s + i)) : len - i;

		best = MAX(best, element_reach(s + i, n));
		i += n + 1;
	}
	return best;
}

typedef struct str_scan {
	const elf_view *v;
	uint64_t strtab;        /* file offset of DT_STRTAB in the image */
	uint64_t strsz;
	char *buf;              /* reused for every string */
	size_t cap;
	int depth;
	fatelf_diag *d;
} str_scan;

/* Reads the NUL-terminated string at stroff into s->buf; *ret_len excludes the NUL. */
static int str_read(str_scan *s, uint64_t tag, uint64_t stroff, size_t *ret_len)
{
	uint64_t at, limit;
	size_t len = 0;

	if (stroff >= s->strsz)
		return fatelf_diag_set(s->d, -FATELF_E_SEGMENT, -1,
				       "%s string offset 0x%llx is not below DT_STRSZ 0x%llx",
				       tag_name(tag), (unsigned long long)stroff,
				       (unsigned long long)s->strsz);
	if (s->strtab > s->v->size || stroff >= s->v->size - s->strtab)
		return fatelf_diag_set(s->d, -FATELF_E_SEGMENT, -1,
				       "%s string at DT_STRTAB file offset 0x%llx + 0x%llx lies outside "
				       "the image's 0x%llx bytes", tag_name(tag),
				       (unsigned long long)s->strtab, (unsigned long long)stroff,
				       (unsigned long long)s->v->size);
	at = s->strtab + stroff;
	limit = MIN(s->strsz - stroff, s->v->size - at);

	for (;;) {
		size_t want;

		if ((uint64_t)len >= limit)
			return fatelf_diag_set(s->d, -FATELF_E_SEGMENT, -1,
					       "%s string at DT_STRTAB + 0x%llx has no NUL before the end "
					       "of %s", tag_name(tag), (unsigned long long)stroff,
					       limit == s->strsz - stroff ? "DT_STRSZ" : "the image");
		if (len >= STR_MAX)
			return fatelf_diag_set(s->d, -FATELF_E_LIMIT, -1,
					       "%s string at DT_STRTAB + 0x%llx is longer than %u bytes",
					       tag_name(tag), (unsigned long long)stroff, STR_MAX);
		want = (size_t)MIN((uint64_t)STR_CHUNK, limit - len);
		want = MIN(want, (size_t)STR_MAX - len);
		if (len + want > s->cap) {
			size_t cap = MAX(s->cap * 2, (size_t)4096);
			char *nb;

			cap = MIN(cap, (size_t)STR_MAX);
			nb = realloc(s->buf, cap);
			if (!nb)
				return fatelf_diag_oom(s->d);
			s->buf = nb;
			s->cap = cap;
		}
		int r = view_read(s->v, s->buf + len, want, at + len, "the dynamic string table",
				  s->d);
		if (r < 0)
			return r;
		const char *nul = memchr(s->buf + len, '\0', want);
		if (nul) {
			*ret_len = (size_t)(nul - s->buf);
			return 0;
		}
		len += want;
	}
}

static int str_visit(uint64_t tag, uint64_t val, void *ctx)
{
	str_scan *s = ctx;
	size_t len = 0;
	int r, reach;

	if (tag != DT_NEEDED && tag != DT_RPATH && tag != DT_RUNPATH)
		return 0;
	r = str_read(s, tag, val, &len);
	if (r < 0)
		return r;
	reach = string_reach(tag, s->buf, len);
	if (reach > FATELF_ORIGIN_DEPTH_MAX)
		return fatelf_diag_set(s->d, -FATELF_E_LIMIT, -1,
				       "%s string at DT_STRTAB + 0x%llx reaches %d directories above "
				       "$ORIGIN, more than the %d allowed", tag_name(tag),
				       (unsigned long long)val, reach, FATELF_ORIGIN_DEPTH_MAX);
	s->depth = MAX(s->depth, reach);
	return 0;
}

/* Opens the image's view and finds its PT_DYNAMIC, checked to lie inside
 * the image: dyn->type is PT_DYNAMIC when there is one, 0 when not. */
static int view_open_dynamic(elf_view *v, phdr *dyn, fatelf_diag *d)
{
	int r;

	if (v->size > UINT64_MAX - v->base)
		return fatelf_diag_set(d, -EINVAL, -1, "the image [0x%llx, +0x%llx) overflows 64 bits",
				       (unsigned long long)v->base, (unsigned long long)v->size);
	r = view_open(v, d);
	if (r < 0)
		return r;
	r = view_each_phdr(v, find_dynamic, dyn, d);
	if (r < 0)
		return r;
	if (dyn->type == PT_DYNAMIC && !view_contains(v, dyn->offset, dyn->filesz))
		return fatelf_diag_set(d, -FATELF_E_SEGMENT, -1,
				       "PT_DYNAMIC covers file bytes [0x%llx, +0x%llx), outside the "
				       "image's 0x%llx bytes", (unsigned long long)dyn->offset,
				       (unsigned long long)dyn->filesz, (unsigned long long)v->size);
	return 0;
}

int fatelf_elf_origin_depth(const fatelf_reader *src, uint64_t base, uint64_t size,
			    int *ret_depth, fatelf_diag *d)
{
	elf_view v = { .src = src, .base = base, .size = size };
	phdr dyn = { .type = 0 };
	dyn_facts facts = { 0 };
	dyn_walk walk;
	strtab_map map;
	str_scan scan = { .v = &v, .depth = -1, .d = d };
	unsigned entsize;
	int r;

	r = view_open_dynamic(&v, &dyn, d);
	if (r < 0)
		return r;
	if (dyn.type != PT_DYNAMIC) {
		*ret_depth = -1;
		return 0;
	}

	entsize = v.is64 ? 16u : 8u;
	walk = (dyn_walk) { .v = &v, .offset = dyn.offset, .count = dyn.filesz / entsize };
	if (walk.count > DYN_MAX)
		walk.count = DYN_MAX;
	r = dyn_each(&walk, dyn_scan, &facts, d);
	if (r < 0)
		return r;
	if (r == 0 && dyn.filesz / entsize > DYN_MAX)
		return fatelf_diag_set(d, -FATELF_E_LIMIT, -1,
				       "PT_DYNAMIC has no DT_NULL in its first %u entries", DYN_MAX);
	if (facts.nstrings == 0) {
		*ret_depth = -1;
		return 0;
	}
	if (!facts.has_strtab || !facts.has_strsz)
		return fatelf_diag_set(d, -FATELF_E_SEGMENT, -1,
				       "the dynamic section has DT_NEEDED, DT_RPATH or DT_RUNPATH "
				       "entries but no %s", facts.has_strtab ? "DT_STRSZ" : "DT_STRTAB");

	map = (strtab_map) { .v = &v, .vaddr = facts.strtab, .d = d };
	r = view_each_phdr(&v, map_strtab, &map, d);
	if (r < 0)
		return r;
	if (!map.found)
		return fatelf_diag_set(d, -FATELF_E_SEGMENT, -1,
				       "DT_STRTAB address 0x%llx is in no PT_LOAD segment's file bytes",
				       (unsigned long long)facts.strtab);

	scan.strtab = map.ret_offset;
	scan.strsz = facts.strsz;
	walk.count = facts.entries;
	r = dyn_each(&walk, str_visit, &scan, d);
	free(scan.buf);
	if (r < 0)
		return r;
	*ret_depth = scan.depth;
	return 0;
}

/* What the dynamic section says about the image being a library. */
typedef struct dyn_lib {
	bool soname, pie;
} dyn_lib;

static int dyn_lib_scan(uint64_t tag, uint64_t val, void *ctx)
{
	dyn_lib *l = ctx;

	if (tag == DT_NULL)
		return 1;
	if (tag == DT_SONAME)
		l->soname = true;
	else if (tag == DT_FLAGS_1 && (val & DF_1_PIE))
		l->pie = true;
	return 0;
}

int fatelf_elf_dyn_library(const fatelf_reader *src, uint64_t base, uint64_t size, bool *ret_soname,
			   bool *ret_pie, fatelf_diag *d)
{
	elf_view v = { .src = src, .base = base, .size = size };
	phdr dyn = { .type = 0 };
	dyn_lib lib = { 0 };
	dyn_walk walk;
	unsigned entsize;
	int r;

	r = view_open_dynamic(&v, &dyn, d);
	if (r < 0)
		return r;
	if (dyn.type == PT_DYNAMIC) {
		entsize = v.is64 ? 16u : 8u;
		walk = (dyn_walk) { .v = &v, .offset = dyn.offset,
				    .count = MIN(dyn.filesz / entsize, (uint64_t)DYN_MAX) };
		r = dyn_each(&walk, dyn_lib_scan, &lib, d);
		if (r < 0)
			return r;
	}
	*ret_soname = lib.soname;
	*ret_pie = lib.pie;
	return 0;
}
