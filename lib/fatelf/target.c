/*
 * Target names: how people and tools name a record. A name is parsed into
 * a pattern (some of machine, word size, byte order, osabi and osabi
 * version fixed, the rest wildcards, or a bare "recordN" index) and matched
 * against a record table. This module also prints names: the full
 * canonical form, the shortest unambiguous form (what split names files
 * by), and the familiar uname/Debian names. Keep sets, the record choices
 * that thin and the installer act on, are built here from names ("which
 * records does this name pick"); host.c builds them from a host.
 *
 * The historical ':' syntax lets fields come in any order. Each field is
 * looked up in a fixed order (gABI machine names first), and the machine
 * and osabi vocabularies are built so that no name can mean two things.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fatelf.h"
#include "macro.h"

/* Longest field we look up; anything longer is unknown anyway. */
#define FIELD_MAX 64
/* How much of a user's name a message quotes. */
#define QUOTE "%.100s"

/* A small bounded string builder for messages that list records. */
struct sbuf {
	char buf[sizeof(((fatelf_diag *)0)->msg)];
	size_t len;
	bool truncated;
};

static void sbuf_add(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbuf_add(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->truncated)
		return;
	va_start(ap, fmt);
	n = vsnprintf(s->buf + s->len, sizeof(s->buf) - s->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(s->buf) - s->len) {
		/* Keep what fits and say that the list goes on. */
		s->truncated = true;
		s->len = sizeof(s->buf) - 1;
		memcpy(s->buf + s->len - 3, "...", 3);
		s->buf[s->len] = '\0';
		return;
	}
	s->len += (size_t)n;
}

/* Names people type that fix machine, word size and byte order at once:
 * uname -m names, Debian architectures and multiarch triplets. */
struct alias {
	const char *name;
	uint16_t machine;
	uint8_t word_size;
	uint8_t byte_order;
};

#define A32LE(n, m) { n, m, FATELF_CLASS32, FATELF_DATA2LSB }
#define A32BE(n, m) { n, m, FATELF_CLASS32, FATELF_DATA2MSB }
#define A64LE(n, m) { n, m, FATELF_CLASS64, FATELF_DATA2LSB }
#define A64BE(n, m) { n, m, FATELF_CLASS64, FATELF_DATA2MSB }

static const struct alias aliases[] = {
	/* uname -m and Debian names */
	A32LE("i486", 3), A32LE("i586", 3), A32LE("i686", 3),
	A64LE("amd64", 62), A32LE("x32", 62),
	A64LE("arm64", 183), A64BE("aarch64_be", 183),
	A32LE("armv6l", 40), A32LE("armv7l", 40), A32LE("armv7hl", 40), A32LE("armv8l", 40),
	A32LE("armhf", 40), A32LE("armel", 40), A32BE("armeb", 40),
	A64LE("ppc64le", 21), A64LE("ppc64el", 21), A64BE("ppc64be", 21),
	A64LE("powerpc64le", 21), A64BE("powerpc64", 21), A32BE("powerpc", 20),
	A64BE("s390x", 22),
	A64LE("riscv64", 243), A32LE("riscv32", 243),
	A64LE("mips64el", 8), A64BE("mips64", 8), A32LE("mipsel", 8),
	A64LE("loong64", 258), A64LE("loongarch64", 258),
	A64BE("sparc64", 43),
	/* multiarch triplets */
	A64LE("x86_64-linux-gnu", 62), A32LE("x86_64-linux-gnux32", 62),
	A32LE("i386-linux-gnu", 3), A32LE("i686-linux-gnu", 3),
	A64LE("aarch64-linux-gnu", 183), A64BE("aarch64_be-linux-gnu", 183),
	A32LE("arm-linux-gnueabihf", 40), A32LE("arm-linux-gnueabi", 40),
	A64LE("powerpc64le-linux-gnu", 21), A64BE("powerpc64-linux-gnu", 21),
	A32BE("powerpc-linux-gnu", 20),
	A64BE("s390x-linux-gnu", 22),
	A64LE("riscv64-linux-gnu", 243),
	A64LE("mips64el-linux-gnuabi64", 8), A64BE("mips64-linux-gnuabi64", 8),
	A32LE("mipsel-linux-gnu", 8), A32BE("mips-linux-gnu", 8),
	A64LE("loongarch64-linux-gnu", 258),
	A64BE("sparc64-linux-gnu", 43),
};

/* Familiar names for machine/class/order, for listings. Every name here
 * must parse (as a gABI name or an alias) to a pattern matching its row. */
struct arch {
	uint16_t machine;
	uint8_t word_size;
	uint8_t byte_order;
	const char *arch;
	const char *debian;
};

static const struct arch arches[] = {
	{ 62, FATELF_CLASS64, FATELF_DATA2LSB, "x86_64", "amd64" },
	{ 62, FATELF_CLASS32, FATELF_DATA2LSB, "x32", "x32" },
	{ 3, FATELF_CLASS32, FATELF_DATA2LSB, "i386", "i386" },
	{ 183, FATELF_CLASS64, FATELF_DATA2LSB, "aarch64", "arm64" },
	{ 183, FATELF_CLASS64, FATELF_DATA2MSB, "aarch64_be", NULL },
	/* ELF cannot tell hard-float from soft-float; Debian's live port is armhf. */
	{ 40, FATELF_CLASS32, FATELF_DATA2LSB, "arm", "armhf" },
	{ 40, FATELF_CLASS32, FATELF_DATA2MSB, "armeb", NULL },
	{ 21, FATELF_CLASS64, FATELF_DATA2LSB, "ppc64le", "ppc64el" },
	{ 21, FATELF_CLASS64, FATELF_DATA2MSB, "ppc64", "ppc64" },
	{ 20, FATELF_CLASS32, FATELF_DATA2MSB, "ppc", "powerpc" },
	{ 22, FATELF_CLASS64, FATELF_DATA2MSB, "s390x", "s390x" },
	{ 22, FATELF_CLASS32, FATELF_DATA2MSB, "s390", "s390" },
	{ 243, FATELF_CLASS64, FATELF_DATA2LSB, "riscv64", "riscv64" },
	{ 243, FATELF_CLASS32, FATELF_DATA2LSB, "riscv32", NULL },
	{ 258, FATELF_CLASS64, FATELF_DATA2LSB, "loongarch64", "loong64" },
	{ 8, FATELF_CLASS64, FATELF_DATA2LSB, "mips64el", "mips64el" },
	{ 8, FATELF_CLASS64, FATELF_DATA2MSB, "mips64", NULL },
	{ 8, FATELF_CLASS32, FATELF_DATA2LSB, "mipsel", "mipsel" },
	{ 8, FATELF_CLASS32, FATELF_DATA2MSB, "mips", "mips" },
	{ 43, FATELF_CLASS64, FATELF_DATA2MSB, "sparc64", "sparc64" },
	{ 50, FATELF_CLASS64, FATELF_DATA2LSB, "ia64", "ia64" },
	{ 41, FATELF_CLASS64, FATELF_DATA2LSB, "alpha", "alpha" },
	{ 4, FATELF_CLASS32, FATELF_DATA2MSB, "m68k", "m68k" },
};

/* Plain decimal after a prefix, no sign, at most max. */
static bool parse_prefixed(const char *s, const char *prefix, unsigned long max,
			   unsigned long *ret)
{
	size_t plen = strlen(prefix);
	unsigned long v = 0;
	size_t n;

	if (strncasecmp(s, prefix, plen) != 0)
		return false;
	s += plen;
	for (n = 0; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= 9)
			return false;
		v = v * 10 + (unsigned long)(s[n] - '0');
	}
	if (n == 0 || v > max)
		return false;
	*ret = v;
	return true;
}

static const char *const attr_names[] = {
	"machine", "osabi", "osabi version", "word size", "byte order",
};

/* Parser state: the pattern so far, and which field fixed each attribute,
 * so that a conflict can name both fields. */
struct parse_state {
	const char *name;
	fatelf_pattern p;
	char who[5][FIELD_MAX];
};

static int attr_index(unsigned bit)
{
	switch (bit) {
	case FATELF_WANT_MACHINE: return 0;
	case FATELF_WANT_OSABI: return 1;
	case FATELF_WANT_OSABIVER: return 2;
	case FATELF_WANT_WORDSIZE: return 3;
	default: return 4;
	}
}

static unsigned attr_get(const fatelf_target *t, unsigned bit)
{
	switch (bit) {
	case FATELF_WANT_MACHINE: return t->machine;
	case FATELF_WANT_OSABI: return t->osabi;
	case FATELF_WANT_OSABIVER: return t->osabi_version;
	case FATELF_WANT_WORDSIZE: return t->word_size;
	default: return t->byte_order;
	}
}

static void attr_put(fatelf_target *t, unsigned bit, unsigned v)
{
	switch (bit) {
	case FATELF_WANT_MACHINE: t->machine = (uint16_t)v; break;
	case FATELF_WANT_OSABI: t->osabi = (uint8_t)v; break;
	case FATELF_WANT_OSABIVER: t->osabi_version = (uint8_t)v; break;
	case FATELF_WANT_WORDSIZE: t->word_size = (uint8_t)v; break;
	default: t->byte_order = (uint8_t)v; break;
	}
}

static int state_fix(struct parse_state *st, unsigned bit, unsigned v, const char *field,
		     fatelf_diag *d)
{
	int ai = attr_index(bit);

	if (st->p.want & bit) {
		if (attr_get(&st->p.target, bit) == v)
			return 0;
		return fatelf_diag_set(d, -FATELF_E_TARGET_SYNTAX, -1,
				       "target name '" QUOTE "': '%s' and '%s' give different %ss",
				       st->name, st->who[ai], field, attr_names[ai]);
	}
	st->p.want |= bit;
	attr_put(&st->p.target, bit, v);
	snprintf(st->who[ai], sizeof(st->who[ai]), "%s", field);
	return 0;
}

static const struct alias *alias_lookup(const char *field)
{
	for (size_t i = 0; i < ARRAY_SIZE(aliases); i++)
		if (strcasecmp(field, aliases[i].name) == 0)
			return &aliases[i];
	return NULL;
}

static int parse_field(struct parse_state *st, const char *f, fatelf_diag *d)
{
	const struct alias *a;
	unsigned long v;
	uint16_t machine;
	uint8_t osabi;
	int r;

	/* In the documented lookup order: gABI name, alias, osabi name, then
	 * the keywords and numbers. The machine and osabi lookups also take
	 * "emN" and "osabiN", which mean the same whenever they are tried. */
	if (fatelf_machine_from_name(f, &machine) == 0)
		return state_fix(st, FATELF_WANT_MACHINE, machine, f, d);
	a = alias_lookup(f);
	if (a) {
		r = state_fix(st, FATELF_WANT_MACHINE, a->machine, f, d);
		if (r >= 0)
			r = state_fix(st, FATELF_WANT_WORDSIZE, a->word_size, f, d);
		if (r >= 0)
			r = state_fix(st, FATELF_WANT_BYTEORDER, a->byte_order, f, d);
		return r;
	}
	if (fatelf_osabi_from_name(f, &osabi) == 0)
		return state_fix(st, FATELF_WANT_OSABI, osabi, f, d);
	if (strcasecmp(f, "32bits") == 0 || strcasecmp(f, "32bit") == 0)
		return state_fix(st, FATELF_WANT_WORDSIZE, FATELF_CLASS32, f, d);
	if (strcasecmp(f, "64bits") == 0 || strcasecmp(f, "64bit") == 0)
		return state_fix(st, FATELF_WANT_WORDSIZE, FATELF_CLASS64, f, d);
	if (strcasecmp(f, "le") == 0 || strcasecmp(f, "littleendian") == 0)
		return state_fix(st, FATELF_WANT_BYTEORDER, FATELF_DATA2LSB, f, d);
	if (strcasecmp(f, "be") == 0 || strcasecmp(f, "bigendian") == 0)
		return state_fix(st, FATELF_WANT_BYTEORDER, FATELF_DATA2MSB, f, d);
	if (parse_prefixed(f, "osabiver", UINT8_MAX, &v))
		return state_fix(st, FATELF_WANT_OSABIVER, (unsigned)v, f, d);
	/* What fatelf_target_format prints for invalid word sizes and byte
	 * orders, so that even a broken record's name parses back. */
	if (parse_prefixed(f, "class", UINT8_MAX, &v))
		return state_fix(st, FATELF_WANT_WORDSIZE, (unsigned)v, f, d);
	if (parse_prefixed(f, "data", UINT8_MAX, &v))
		return state_fix(st, FATELF_WANT_BYTEORDER, (unsigned)v, f, d);
	if (parse_prefixed(f, "record", INT32_MAX, &v))
		return fatelf_diag_set(d, -FATELF_E_TARGET_SYNTAX, -1,
				       "target name '" QUOTE "': '%s' must be the whole name",
				       st->name, f);
	return fatelf_diag_set(d, -FATELF_E_TARGET_SYNTAX, -1,
			       "target name '" QUOTE "': unknown field '%s'", st->name, f);
}

int fatelf_pattern_parse(const char *name, fatelf_pattern *ret, fatelf_diag *d)
{
	struct parse_state st = { .name = name };
	unsigned long v;
	const char *p;

	if (!name || !ret)
		return fatelf_diag_set(d, -EINVAL, -1, "no target name");
	if (!*name)
		return fatelf_diag_set(d, -FATELF_E_TARGET_SYNTAX, -1, "empty target name");

	if (parse_prefixed(name, "record", INT32_MAX, &v)) {
		*ret = (fatelf_pattern) { .want = FATELF_WANT_RECORD, .record = (int)v };
		return 0;
	}

	p = name;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char field[FIELD_MAX];
		int r;

		if (len == 0)
			return fatelf_diag_set(d, -FATELF_E_TARGET_SYNTAX, -1,
					       "target name '" QUOTE "' has an empty field", name);
		if (len >= sizeof(field))
			return fatelf_diag_set(d, -FATELF_E_TARGET_SYNTAX, -1,
					       "target name '" QUOTE "': unknown field '%.*s...'",
					       name, 40, p);
		memcpy(field, p, len);
		field[len] = '\0';
		r = parse_field(&st, field, d);
		if (r < 0)
			return r;
		if (!end)
			break;
		p = end + 1;
	}
	st.p.record = -1;
	*ret = st.p;
	return 0;
}

bool fatelf_pattern_match(const fatelf_pattern *p, const fatelf_target *t, int index)
{
	if (p->want & FATELF_WANT_RECORD)
		return index == p->record;
	if ((p->want & FATELF_WANT_MACHINE) && t->machine != p->target.machine)
		return false;
	if ((p->want & FATELF_WANT_OSABI) && t->osabi != p->target.osabi)
		return false;
	if ((p->want & FATELF_WANT_OSABIVER) && t->osabi_version != p->target.osabi_version)
		return false;
	if ((p->want & FATELF_WANT_WORDSIZE) && t->word_size != p->target.word_size)
		return false;
	if ((p->want & FATELF_WANT_BYTEORDER) && t->byte_order != p->target.byte_order)
		return false;
	return true;
}

static int pattern_find_named(const fatelf_pattern *p, const fatelf_header *hdr,
			      const char *name, fatelf_diag *d)
{
	struct sbuf list = { .len = 0 };
	int found = -1, nfound = 0;

	for (int i = 0; i < hdr->nrecords; i++)
		if (fatelf_pattern_match(p, &hdr->records[i].target, i)) {
			if (nfound++ == 0)
				found = i;
		}
	if (nfound == 1)
		return found;

	/* The whole message goes through the builder, so that a long list
	 * is cut with "..." rather than silently. */
	if (nfound == 0)
		sbuf_add(&list, "no record matches '" QUOTE "'; the file has: ", name);
	else
		sbuf_add(&list, "'" QUOTE "' matches %d records: ", name, nfound);
	for (int i = 0, n = 0; i < hdr->nrecords; i++) {
		char t[FATELF_TARGET_NAME_MAX];

		if (nfound > 1 && !fatelf_pattern_match(p, &hdr->records[i].target, i))
			continue;
		fatelf_target_format(&hdr->records[i].target, t);
		if (nfound > 1)
			sbuf_add(&list, "%srecord %d (%s)", n++ ? ", " : "", i, t);
		else
			sbuf_add(&list, "%s%s", n++ ? ", " : "", t);
	}
	FATELF_DIAG_FACT(d, target, name);
	return fatelf_diag_set(d, nfound ? -FATELF_E_AMBIGUOUS : -FATELF_E_NO_MATCH, -1, "%s",
			       list.buf);
}

int fatelf_pattern_find(const fatelf_pattern *p, const fatelf_header *hdr, fatelf_diag *d)
{
	char name[FATELF_TARGET_NAME_MAX];

	if (p->want & FATELF_WANT_RECORD)
		snprintf(name, sizeof(name), "record%d", p->record);
	else
		fatelf_target_format_fields(&p->target, p->want, name);
	return pattern_find_named(p, hdr, name, d);
}

int fatelf_target_find(const char *name, const fatelf_header *hdr, fatelf_diag *d)
{
	fatelf_pattern p;
	int r;

	r = fatelf_pattern_parse(name, &p, d);
	if (r < 0)
		return r;
	return pattern_find_named(&p, hdr, name, d);
}

void fatelf_target_format_fields(const fatelf_target *t, unsigned want,
				 char buf[FATELF_TARGET_NAME_MAX])
{
	size_t len = 0;

	/* Each piece is short and bounded (see the tables), so the whole
	 * name stays far below FATELF_TARGET_NAME_MAX; snprintf guards anyway. */
#define ADD(...) do { \
		int n_ = snprintf(buf + len, FATELF_TARGET_NAME_MAX - len, "%s", len ? ":" : ""); \
		if (n_ > 0 && (size_t)n_ < FATELF_TARGET_NAME_MAX - len) \
			len += (size_t)n_; \
		n_ = snprintf(buf + len, FATELF_TARGET_NAME_MAX - len, __VA_ARGS__); \
		if (n_ > 0) \
			len = MIN(len + (size_t)n_, (size_t)FATELF_TARGET_NAME_MAX - 1); \
	} while (0)

	buf[0] = '\0';
	if (want & FATELF_WANT_MACHINE) {
		const char *m = fatelf_machine_name(t->machine);

		if (m)
			ADD("%s", m);
		else
			ADD("em%u", t->machine);
	}
	if (want & FATELF_WANT_WORDSIZE) {
		if (t->word_size == FATELF_CLASS32)
			ADD("32bits");
		else if (t->word_size == FATELF_CLASS64)
			ADD("64bits");
		else
			ADD("class%u", t->word_size);
	}
	if (want & FATELF_WANT_BYTEORDER) {
		if (t->byte_order == FATELF_DATA2LSB)
			ADD("le");
		else if (t->byte_order == FATELF_DATA2MSB)
			ADD("be");
		else
			ADD("data%u", t->byte_order);
	}
	if (want & FATELF_WANT_OSABI) {
		const char *o = fatelf_osabi_name(t->osabi);

		if (o)
			ADD("%s", o);
		else
			ADD("osabi%u", t->osabi);
	}
	if (want & FATELF_WANT_OSABIVER)
		ADD("osabiver%u", t->osabi_version);
#undef ADD
}

void fatelf_target_format(const fatelf_target *t, char buf[FATELF_TARGET_NAME_MAX])
{
	fatelf_target_format_fields(t, FATELF_WANT_ALL, buf);
}

static int count_matches(const fatelf_header *hdr, const fatelf_pattern *p)
{
	int n = 0;

	for (int i = 0; i < hdr->nrecords; i++)
		if (fatelf_pattern_match(p, &hdr->records[i].target, i))
			n++;
	return n;
}

void fatelf_target_short_name(const fatelf_header *hdr, int index,
			      char buf[FATELF_TARGET_NAME_MAX])
{
	/* The optional fields in canonical order. The machine is always
	 * named: "64bits" alone would be short but says nothing. */
	static const unsigned optional[] = {
		FATELF_WANT_WORDSIZE, FATELF_WANT_BYTEORDER, FATELF_WANT_OSABI,
		FATELF_WANT_OSABIVER,
	};
	const fatelf_target *t;

	if (!hdr || index < 0 || index >= hdr->nrecords) {
		snprintf(buf, FATELF_TARGET_NAME_MAX, "record%d", index);
		return;
	}
	t = &hdr->records[index].target;

	/* Fewest fields first; among equally short names, the one whose
	 * fields come earliest in canonical order (so the usual answer is
	 * a prefix of the full name: "arm:32bits", "x86_64:64bits:le:linux"). */
	for (unsigned nfields = 0; nfields <= ARRAY_SIZE(optional); nfields++) {
		unsigned best_key = UINT32_MAX, best_want = 0;

		for (unsigned mask = 0; mask < (1u << ARRAY_SIZE(optional)); mask++) {
			fatelf_pattern p = { .target = *t, .record = -1 };
			unsigned key = 0;

			if ((unsigned)__builtin_popcount(mask) != nfields)
				continue;
			p.want = FATELF_WANT_MACHINE;
			for (unsigned b = 0; b < ARRAY_SIZE(optional); b++)
				if (mask & (1u << b)) {
					p.want |= optional[b];
					/* earlier field = more significant bit */
					key |= 1u << (ARRAY_SIZE(optional) - 1 - b);
				}
			/* Lexicographic preference for earlier fields: larger key wins. */
			if (count_matches(hdr, &p) == 1 &&
			    (best_key == UINT32_MAX || key > best_key)) {
				best_key = key;
				best_want = p.want;
			}
		}
		if (best_key != UINT32_MAX) {
			fatelf_target_format_fields(t, best_want, buf);
			return;
		}
	}
	/* Two records with the same target (an invalid file): only the index
	 * can tell them apart. */
	snprintf(buf, FATELF_TARGET_NAME_MAX, "record%d", index);
}

static const struct arch *arch_lookup(const fatelf_target *t)
{
	for (size_t i = 0; i < ARRAY_SIZE(arches); i++)
		if (arches[i].machine == t->machine && arches[i].word_size == t->word_size &&
		    arches[i].byte_order == t->byte_order)
			return &arches[i];
	return NULL;
}

const char *fatelf_target_arch(const fatelf_target *t)
{
	const struct arch *a = arch_lookup(t);

	return a ? a->arch : NULL;
}

bool fatelf_arch_get(size_t i, fatelf_target *ret_target, const char **ret_arch,
		     const char **ret_debian)
{
	if (i >= ARRAY_SIZE(arches))
		return false;
	*ret_target = (fatelf_target){
		.machine = arches[i].machine,
		.word_size = arches[i].word_size,
		.byte_order = arches[i].byte_order,
	};
	*ret_arch = arches[i].arch;
	*ret_debian = arches[i].debian;
	return true;
}

const char *fatelf_target_debian_arch(const fatelf_target *t)
{
	const struct arch *a = arch_lookup(t);

	return a ? a->debian : NULL;
}

bool fatelf_target_equal(const fatelf_target *a, const fatelf_target *b)
{
	return a->machine == b->machine && a->osabi == b->osabi &&
	       a->osabi_version == b->osabi_version && a->word_size == b->word_size &&
	       a->byte_order == b->byte_order;
}

/* Keep sets chosen by name (by host: host.c; the bit operations: layout.c) */

int fatelf_keep_from_names(const fatelf_header *hdr, const char *const *names, size_t n,
			   fatelf_keepset *ret, fatelf_diag *d)
{
	fatelf_keepset k;

	if (n == 0)
		return fatelf_diag_set(d, -FATELF_E_EMPTY_KEEP, -1, "no target names given");
	fatelf_keep_clear(&k);
	for (size_t i = 0; i < n; i++) {
		fatelf_pattern p;
		bool any = false;
		int r;

		r = fatelf_pattern_parse(names[i], &p, d);
		if (r < 0)
			return r;
		for (int j = 0; j < hdr->nrecords; j++)
			if (fatelf_pattern_match(&p, &hdr->records[j].target, j)) {
				fatelf_keep_add(&k, (unsigned)j);
				any = true;
			}
		if (!any)
			/* Reuse find's wording, which lists what the file has. */
			return pattern_find_named(&p, hdr, names[i], d);
	}
	*ret = k;
	return (int)fatelf_keep_count(&k);
}
