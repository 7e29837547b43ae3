/*
 * Unit tests for target names (lib/fatelf/machines.c, lib/fatelf/target.c): the machine
 * and osabi tables, parsing in every accepted syntax, conflicts and syntax
 * errors, finding records, the names printed back, and keep sets built
 * from names.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatelf.h"
#include "testutil.h"

#define C32 FATELF_CLASS32
#define C64 FATELF_CLASS64
#define LE FATELF_DATA2LSB
#define BE FATELF_DATA2MSB

static void hdr_add(fatelf_header *h, uint16_t machine, uint8_t word_size, uint8_t byte_order,
		    uint8_t osabi, uint8_t osabi_version)
{
	ck_assert_int_lt(h->nrecords, FATELF_MAX_RECORDS);
	fatelf_record *r = &h->records[h->nrecords];

	memset(r, 0, sizeof(*r));
	r->target = (fatelf_target) {
		.machine = machine, .word_size = word_size, .byte_order = byte_order,
		.osabi = osabi, .osabi_version = osabi_version,
	};
	r->offset = 4096u * (h->nrecords + 1u);
	r->size = 4096;
	h->nrecords++;
}

/* x86_64 sysv, x86_64 linux, i386, aarch64 */
static void hdr_small(fatelf_header *h)
{
	fatelf_header_init(h);
	hdr_add(h, 62, C64, LE, 0, 0);
	hdr_add(h, 62, C64, LE, 3, 0);
	hdr_add(h, 3, C32, LE, 0, 0);
	hdr_add(h, 183, C64, LE, 0, 0);
}

static fatelf_pattern parse_ok(const char *name)
{
	fatelf_pattern p;
	fatelf_diag d;

	fatelf_diag_clear(&d);
	int r = fatelf_pattern_parse(name, &p, &d);
	ck_assert_msg(r == 0, "parsing '%s' failed: %s (%s)", name, fatelf_error_name(r), d.msg);
	return p;
}

static void parse_fails(const char *name, const char *msg_part)
{
	fatelf_pattern p;
	fatelf_diag d;

	fatelf_diag_clear(&d);
	int r = fatelf_pattern_parse(name, &p, &d);
	ck_assert_msg(r == -FATELF_E_TARGET_SYNTAX, "'%s' gave %s, want FATELF_E_TARGET_SYNTAX",
		      name, fatelf_error_name(r));
	ck_assert_int_eq(d.code, -FATELF_E_TARGET_SYNTAX);
	if (msg_part)
		ck_assert_msg(strstr(d.msg, msg_part), "message for '%s' lacks '%s': %s", name,
			      msg_part, d.msg);
}

/* ---------------------------------------------------------------- tables */

START_TEST(test_machine_table_known)
{
	static const struct { uint16_t id; const char *name; } known[] = {
		{ 3, "i386" }, { 8, "mips" }, { 20, "ppc" }, { 21, "ppc64" }, { 22, "s390" },
		{ 40, "arm" }, { 50, "ia64" }, { 62, "x86_64" }, { 183, "aarch64" },
		{ 243, "riscv" }, { 247, "bpf" }, { 258, "loongarch" }, { 2, "sparc" },
		{ 43, "sparcv9" }, { 41, "alpha" }, { 4, "m68k" }, { 252, "csky" },
	};
	uint16_t m;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		ck_assert_str_eq(fatelf_machine_name(known[i].id), known[i].name);
		ck_assert_ptr_nonnull(fatelf_machine_desc(known[i].id));
		ck_assert_int_eq(fatelf_machine_from_name(known[i].name, &m), 0);
		ck_assert_uint_eq(m, known[i].id);
	}
	ck_assert_str_eq(fatelf_machine_desc(62), "AMD x86-64 architecture");
	ck_assert_ptr_null(fatelf_machine_name(0x9999));
	ck_assert_ptr_null(fatelf_machine_desc(0x9999));
	ck_assert_ptr_null(fatelf_machine_name(11)); /* reserved */
}
END_TEST

START_TEST(test_machine_names_round_trip)
{
	unsigned named = 0;

	for (unsigned id = 0; id <= UINT16_MAX; id++) {
		const char *n = fatelf_machine_name((uint16_t)id);
		uint16_t m = 0;

		if (!n) {
			ck_assert_ptr_null(fatelf_machine_desc((uint16_t)id));
			continue;
		}
		named++;
		ck_assert_ptr_nonnull(fatelf_machine_desc((uint16_t)id));
		ck_assert_msg(fatelf_machine_from_name(n, &m) == 0 && m == id,
			      "'%s' does not map back to %u", n, id);
		/* the name as a target pattern fixes the machine alone */
		fatelf_pattern p = parse_ok(n);
		ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE);
		ck_assert_uint_eq(p.target.machine, id);
		for (const char *c = n; *c; c++)
			ck_assert_msg(*c != ':' && !isupper((unsigned char)*c) && !isspace((unsigned char)*c),
				      "bad character in '%s'", n);
	}
	/* every assigned number up to EM_LOONGARCH at least */
	ck_assert_uint_ge(named, 190);
	for (unsigned id = 243; id <= 258; id++)
		ck_assert_msg(fatelf_machine_name((uint16_t)id), "no name for %u", id);
}
END_TEST

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* A machine name must never read as another kind of field. */
START_TEST(test_machine_names_never_clash)
{
	static const char *const aliases[] = {
		"i486", "i586", "i686", "armv7l", "armv7hl", "armv6l", "armhf", "armel",
		"aarch64_be", "arm64", "amd64", "ppc64le", "ppc64el", "powerpc", "powerpc64",
		"powerpc64le", "s390x", "riscv64", "riscv32", "mips64el", "mipsel", "loong64",
		"loongarch64", "x32", "sparc64", "x86_64-linux-gnu", "le", "be",
		"littleendian", "bigendian", "32bits", "64bits", "32bit", "64bit", "gnu",
	};

	for (unsigned id = 0; id <= UINT16_MAX; id++) {
		const char *n = fatelf_machine_name((uint16_t)id);
		uint8_t o;

		if (!n)
			continue;
		ck_assert_msg(fatelf_osabi_from_name(n, &o) != 0, "'%s' is also an osabi", n);
		for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
			ck_assert_msg(strcmp(n, aliases[i]) != 0, "'%s' is also an alias", n);
		static const char *const prefixes[] = { "record", "em", "osabiver", "osabi",
							"class", "data" };
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
			size_t pl = strlen(prefixes[i]);
			if (strncmp(n, prefixes[i], pl) == 0 && all_digits(n + pl))
				ck_abort_msg("'%s' looks like %sN", n, prefixes[i]);
		}
	}
	/* and osabi names are not machine names either */
	for (unsigned o = 0; o <= UINT8_MAX; o++) {
		const char *n = fatelf_osabi_name((uint8_t)o);
		uint16_t m;

		if (n)
			ck_assert_msg(fatelf_machine_from_name(n, &m) != 0,
				      "osabi '%s' is also a machine", n);
	}
}
END_TEST

START_TEST(test_em_numbers)
{
	uint16_t m;
	char buf[16];

	for (unsigned id = 0; id <= UINT16_MAX; id += 97) {
		snprintf(buf, sizeof(buf), "em%u", id);
		ck_assert_int_eq(fatelf_machine_from_name(buf, &m), 0);
		ck_assert_uint_eq(m, id);
	}
	ck_assert_int_eq(fatelf_machine_from_name("em65535", &m), 0);
	ck_assert_uint_eq(m, 65535);
	ck_assert_int_eq(fatelf_machine_from_name("em39321", &m), 0);
	ck_assert_uint_eq(m, 0x9999);
	ck_assert_int_eq(fatelf_machine_from_name("em65536", &m), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_machine_from_name("em", &m), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_machine_from_name("em-1", &m), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_machine_from_name("em+1", &m), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_machine_from_name("em1x", &m), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_machine_from_name("em99999999999999999999", &m),
			 -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_machine_from_name("nosuchcpu", &m), -FATELF_E_TARGET_SYNTAX);
}
END_TEST

START_TEST(test_osabi_table)
{
	static const struct { uint8_t id; const char *name; } known[] = {
		{ 0, "sysv" }, { 1, "hpux" }, { 2, "netbsd" }, { 3, "linux" }, { 4, "hurd" },
		{ 6, "solaris" }, { 7, "aix" }, { 8, "irix" }, { 9, "freebsd" }, { 10, "tru64" },
		{ 11, "modesto" }, { 12, "openbsd" }, { 13, "openvms" }, { 14, "nsk" },
		{ 15, "aros" }, { 16, "fenixos" }, { 17, "cloudabi" }, { 18, "openvos" },
		{ 64, "arm_aeabi" }, { 97, "armabi" }, { 255, "standalone" },
	};
	uint8_t o;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		ck_assert_str_eq(fatelf_osabi_name(known[i].id), known[i].name);
		ck_assert_int_eq(fatelf_osabi_from_name(known[i].name, &o), 0);
		ck_assert_uint_eq(o, known[i].id);
	}
	for (unsigned id = 0; id <= UINT8_MAX; id++) {
		const char *n = fatelf_osabi_name((uint8_t)id);
		char buf[16];

		if (n) {
			ck_assert_int_eq(fatelf_osabi_from_name(n, &o), 0);
			ck_assert_uint_eq(o, id);
		}
		snprintf(buf, sizeof(buf), "osabi%u", id);
		ck_assert_int_eq(fatelf_osabi_from_name(buf, &o), 0);
		ck_assert_uint_eq(o, id);
	}
	ck_assert_ptr_null(fatelf_osabi_name(200));
	ck_assert_int_eq(fatelf_osabi_from_name("gnu", &o), 0);
	ck_assert_uint_eq(o, 3);
	ck_assert_int_eq(fatelf_osabi_from_name("arm", &o), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_osabi_from_name("osabi256", &o), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(fatelf_osabi_from_name("osabi", &o), -FATELF_E_TARGET_SYNTAX);
	/* "arm" stays the machine */
	fatelf_pattern p = parse_ok("arm");
	ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE);
	ck_assert_uint_eq(p.target.machine, 40);
	p = parse_ok("armabi");
	ck_assert_uint_eq(p.want, FATELF_WANT_OSABI);
	ck_assert_uint_eq(p.target.osabi, 97);
}
END_TEST

/* ---------------------------------------------------------------- parsing */

START_TEST(test_aliases)
{
	static const struct { const char *name; uint16_t m; uint8_t w, o; } a[] = {
		{ "i486", 3, C32, LE }, { "i586", 3, C32, LE }, { "i686", 3, C32, LE },
		{ "armv7l", 40, C32, LE }, { "armv7hl", 40, C32, LE }, { "armv6l", 40, C32, LE },
		{ "armhf", 40, C32, LE }, { "armel", 40, C32, LE }, { "armeb", 40, C32, BE },
		{ "aarch64_be", 183, C64, BE }, { "arm64", 183, C64, LE },
		{ "amd64", 62, C64, LE }, { "x32", 62, C32, LE },
		{ "ppc64le", 21, C64, LE }, { "ppc64el", 21, C64, LE }, { "ppc64be", 21, C64, BE },
		{ "powerpc", 20, C32, BE }, { "powerpc64", 21, C64, BE },
		{ "powerpc64le", 21, C64, LE }, { "s390x", 22, C64, BE },
		{ "riscv64", 243, C64, LE }, { "riscv32", 243, C32, LE },
		{ "mips64el", 8, C64, LE }, { "mipsel", 8, C32, LE },
		{ "loong64", 258, C64, LE }, { "loongarch64", 258, C64, LE },
		{ "sparc64", 43, C64, BE },
		{ "x86_64-linux-gnu", 62, C64, LE }, { "i386-linux-gnu", 3, C32, LE },
		{ "i686-linux-gnu", 3, C32, LE }, { "aarch64-linux-gnu", 183, C64, LE },
		{ "aarch64_be-linux-gnu", 183, C64, BE },
		{ "arm-linux-gnueabihf", 40, C32, LE }, { "arm-linux-gnueabi", 40, C32, LE },
		{ "powerpc64le-linux-gnu", 21, C64, LE }, { "powerpc64-linux-gnu", 21, C64, BE },
		{ "powerpc-linux-gnu", 20, C32, BE }, { "s390x-linux-gnu", 22, C64, BE },
		{ "riscv64-linux-gnu", 243, C64, LE },
		{ "mips64el-linux-gnuabi64", 8, C64, LE }, { "mipsel-linux-gnu", 8, C32, LE },
		{ "loongarch64-linux-gnu", 258, C64, LE },
		{ "x86_64-linux-gnux32", 62, C32, LE }, { "sparc64-linux-gnu", 43, C64, BE },
	};

	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		fatelf_pattern p = parse_ok(a[i].name);

		ck_assert_msg(p.want == (FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE |
					 FATELF_WANT_BYTEORDER), "%s: want 0x%x", a[i].name, p.want);
		ck_assert_msg(p.target.machine == a[i].m && p.target.word_size == a[i].w &&
			      p.target.byte_order == a[i].o, "%s: got %u/%u/%u", a[i].name,
			      p.target.machine, p.target.word_size, p.target.byte_order);
	}
	/* gABI names come first: they fix the machine alone */
	fatelf_pattern p = parse_ok("x86_64");
	ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE);
	ck_assert_uint_eq(p.target.machine, 62);
	p = parse_ok("i386");
	ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE);
	ck_assert_uint_eq(p.target.machine, 3);
	/* an alias combines with fields that agree */
	p = parse_ok("amd64:linux:64bits:le");
	ck_assert_uint_eq(p.want, FATELF_WANT_ALL & ~FATELF_WANT_OSABIVER);
	ck_assert_uint_eq(p.target.osabi, 3);
}
END_TEST

START_TEST(test_historical_any_order)
{
	static const char *const f[5] = { "x86_64", "64bits", "le", "linux", "osabiver0" };
	unsigned count = 0;

	/* all 120 orders of the five fields */
	for (int a = 0; a < 5; a++)
	for (int b = 0; b < 5; b++)
	for (int c = 0; c < 5; c++)
	for (int e = 0; e < 5; e++)
	for (int g = 0; g < 5; g++) {
		int used = (1 << a) | (1 << b) | (1 << c) | (1 << e) | (1 << g);
		char name[128];

		if (used != 0x1f)
			continue;
		snprintf(name, sizeof(name), "%s:%s:%s:%s:%s", f[a], f[b], f[c], f[e], f[g]);
		fatelf_pattern p = parse_ok(name);
		ck_assert_uint_eq(p.want, FATELF_WANT_ALL);
		ck_assert_uint_eq(p.target.machine, 62);
		ck_assert_uint_eq(p.target.word_size, C64);
		ck_assert_uint_eq(p.target.byte_order, LE);
		ck_assert_uint_eq(p.target.osabi, 3);
		ck_assert_uint_eq(p.target.osabi_version, 0);
		count++;
	}
	ck_assert_uint_eq(count, 120);

	fatelf_pattern p = parse_ok("be:32bit:ppc:osabiver2:osabi200");
	ck_assert_uint_eq(p.want, FATELF_WANT_ALL);
	ck_assert_uint_eq(p.target.machine, 20);
	ck_assert_uint_eq(p.target.word_size, C32);
	ck_assert_uint_eq(p.target.byte_order, BE);
	ck_assert_uint_eq(p.target.osabi, 200);
	ck_assert_uint_eq(p.target.osabi_version, 2);

	p = parse_ok("64bit:bigendian:em39321");
	ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE | FATELF_WANT_BYTEORDER);
	ck_assert_uint_eq(p.target.machine, 0x9999);
	ck_assert_uint_eq(p.target.word_size, C64);
	ck_assert_uint_eq(p.target.byte_order, BE);

	p = parse_ok("littleendian");
	ck_assert_uint_eq(p.want, FATELF_WANT_BYTEORDER);
	ck_assert_uint_eq(p.target.byte_order, LE);
	p = parse_ok("32bits");
	ck_assert_uint_eq(p.want, FATELF_WANT_WORDSIZE);
	ck_assert_uint_eq(p.target.word_size, C32);
	p = parse_ok("gnu");
	ck_assert_uint_eq(p.want, FATELF_WANT_OSABI);
	ck_assert_uint_eq(p.target.osabi, 3);
	p = parse_ok("osabiver255");
	ck_assert_uint_eq(p.want, FATELF_WANT_OSABIVER);
	ck_assert_uint_eq(p.target.osabi_version, 255);
}
END_TEST

/*
 * Every name in the historical fatelf-* tools' machine and osabi tables
 * parses, alone and in a full target name, to that table's number; the
 * numbers still print with today's names. (That table also listed a few
 * pre-gABI numbers under the names of 41, 87, 88, 22 and 89; those names
 * mean the gABI numbers here.)
 */
START_TEST(test_historical_table)
{
	static const struct { uint16_t id; const char *name; } machines[] = {
		{ 0, "none" }, { 1, "m32" }, { 2, "sparc" }, { 3, "386" }, { 3, "i386" }, { 4, "68k" },
		{ 5, "88k" }, { 7, "860" }, { 8, "mips" }, { 9, "s370" }, { 10, "mips-rs3" },
		{ 15, "pa-risc" }, { 17, "vpp500" }, { 18, "sparc32plus" }, { 19, "960" }, { 20, "ppc" },
		{ 21, "ppc64" }, { 22, "s390" }, { 36, "v800" }, { 37, "fr20" }, { 38, "rh32" },
		{ 39, "rce" }, { 40, "arm" }, { 41, "alpha" }, { 42, "sh" }, { 43, "sparcv9" },
		{ 44, "tricore" }, { 45, "arc" }, { 46, "h8-300" }, { 47, "h8-300h" }, { 48, "h8s" },
		{ 49, "h8-500" }, { 50, "ia64" }, { 51, "mipsx" }, { 52, "coldfire" }, { 53, "m68hc12" },
		{ 54, "mma" }, { 55, "pcp" }, { 56, "ncpu" }, { 57, "ndr1" }, { 58, "starcore" },
		{ 59, "me16" }, { 60, "st100" }, { 61, "tinyj" }, { 62, "x86_64" }, { 63, "pdsp" },
		{ 64, "pdp10" }, { 65, "pdp11" }, { 66, "fx66" }, { 67, "st9plus" }, { 68, "st7" },
		{ 69, "68hc16" }, { 70, "68hc11" }, { 71, "68hc08" }, { 72, "68hc05" }, { 73, "svx" },
		{ 74, "st19" }, { 75, "vax" }, { 76, "cris" }, { 77, "javelin" }, { 78, "firepath" },
		{ 79, "zsp" }, { 80, "mmix" }, { 81, "huany" }, { 82, "prism" }, { 83, "avr" },
		{ 84, "fr30" }, { 85, "d10v" }, { 86, "d30v" }, { 87, "v850" }, { 88, "m32r" },
		{ 89, "mn10300" }, { 90, "mn10200" }, { 91, "pj" }, { 92, "openrisc" }, { 93, "arc_a5" },
		{ 94, "xtensa" }, { 95, "videocore" }, { 96, "tmm_gpp" }, { 97, "ns32k" }, { 98, "tpc" },
		{ 99, "snp1k" }, { 100, "st200" }, { 101, "ip2k" }, { 102, "max" }, { 103, "cr" },
		{ 104, "f2mc16" }, { 105, "msp430" }, { 106, "blackfin" }, { 107, "se_c33" },
		{ 108, "sep" }, { 109, "arca" }, { 110, "unicore" },
	};
	static const struct { uint8_t id; const char *name; } osabis[] = {
		{ 0, "sysv" }, { 1, "hpux" }, { 2, "netbsd" }, { 3, "linux" }, { 4, "hurd" },
		{ 5, "86open" }, { 6, "solaris" }, { 7, "aix" }, { 8, "irix" }, { 9, "freebsd" },
		{ 10, "tru64" }, { 11, "modesto" }, { 12, "openbsd" }, { 13, "openvms" }, { 14, "nsk" },
		{ 15, "aros" }, { 97, "armabi" }, { 255, "standalone" },
	};
	char name[64];

	for (size_t i = 0; i < sizeof(machines) / sizeof(machines[0]); i++) {
		uint16_t m = 0xffff;

		ck_assert_msg(fatelf_machine_from_name(machines[i].name, &m) == 0 &&
			      m == machines[i].id, "'%s' is not machine %u", machines[i].name,
			      machines[i].id);
		fatelf_pattern p = parse_ok(machines[i].name);
		ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE);
		ck_assert_uint_eq(p.target.machine, machines[i].id);
		snprintf(name, sizeof(name), "%s:32bits:be:sysv:osabiver0", machines[i].name);
		p = parse_ok(name);
		ck_assert_uint_eq(p.want, FATELF_WANT_ALL);
		ck_assert_uint_eq(p.target.machine, machines[i].id);
		ck_assert_ptr_nonnull(fatelf_machine_name(machines[i].id));
	}
	for (size_t i = 0; i < sizeof(osabis) / sizeof(osabis[0]); i++) {
		uint8_t o = 0;

		ck_assert_msg(fatelf_osabi_from_name(osabis[i].name, &o) == 0 &&
			      o == osabis[i].id, "'%s' is not osabi %u", osabis[i].name,
			      osabis[i].id);
		snprintf(name, sizeof(name), "x86_64:%s", osabis[i].name);
		fatelf_pattern p = parse_ok(name);
		ck_assert_uint_eq(p.want, FATELF_WANT_MACHINE | FATELF_WANT_OSABI);
		ck_assert_uint_eq(p.target.osabi, osabis[i].id);
	}
	/* printing keeps today's names */
	ck_assert_str_eq(fatelf_machine_name(4), "m68k");
	ck_assert_str_eq(fatelf_machine_name(15), "parisc");
	ck_assert_str_eq(fatelf_machine_name(93), "arc_compact");
	ck_assert_ptr_null(fatelf_osabi_name(5));
}
END_TEST

START_TEST(test_conflicts)
{
	static const struct { const char *name, *a, *b; } bad[] = {
		{ "x86_64:arm", "'x86_64'", "'arm'" },
		{ "amd64:32bits", "'amd64'", "'32bits'" },
		{ "64bits:32bit", "'64bits'", "'32bit'" },
		{ "le:be", "'le'", "'be'" },
		{ "armhf:bigendian", "'armhf'", "'bigendian'" },
		{ "sysv:linux", "'sysv'", "'linux'" },
		{ "osabiver0:osabiver1", "'osabiver0'", "'osabiver1'" },
		{ "amd64:arm64", "'amd64'", "'arm64'" },
		{ "em62:em63", "'em62'", "'em63'" },
		{ "x86_64:osabi3:sysv", "'osabi3'", "'sysv'" },
		{ "x32:x86_64-linux-gnu", "'x32'", "'x86_64-linux-gnu'" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		parse_fails(bad[i].name, bad[i].a);
		parse_fails(bad[i].name, bad[i].b);
	}
	/* the same value twice is fine */
	fatelf_pattern p = parse_ok("em62:x86_64:amd64:x86_64-linux-gnu:64bits:le:le");
	ck_assert_uint_eq(p.target.machine, 62);
	p = parse_ok("linux:gnu:osabi3");
	ck_assert_uint_eq(p.target.osabi, 3);
}
END_TEST

START_TEST(test_syntax_errors)
{
	char longname[300];

	parse_fails("", NULL);
	parse_fails(":", "empty field");
	parse_fails("x86_64:", "empty field");
	parse_fails(":x86_64", "empty field");
	parse_fails("x86_64::le", "empty field");
	parse_fails("foo", "'foo'");
	parse_fails("x86_64:64bits:wibble", "'wibble'");
	parse_fails("em65536", "'em65536'");
	parse_fails("osabi256", "'osabi256'");
	parse_fails("osabiver256", "'osabiver256'");
	parse_fails("x86_64 ", "'x86_64 '");
	parse_fails("record1:le", "record1");
	parse_fails("x86_64:record1", "record1");
	parse_fails("record", "'record'");
	parse_fails("record-1", NULL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	parse_fails(longname, "unknown field");
	ck_assert_int_lt(fatelf_pattern_parse(NULL, &(fatelf_pattern){0}, NULL), 0);
}
END_TEST

START_TEST(test_case_insensitive)
{
	fatelf_pattern p = parse_ok("X86_64:LE:Linux");

	ck_assert_uint_eq(p.target.machine, 62);
	ck_assert_uint_eq(p.target.byte_order, LE);
	ck_assert_uint_eq(p.target.osabi, 3);
	p = parse_ok("ARM64");
	ck_assert_uint_eq(p.target.machine, 183);
}
END_TEST

/* ---------------------------------------------------------------- finding */

START_TEST(test_record_n)
{
	fatelf_header h;
	fatelf_diag d;
	fatelf_pattern p;

	hdr_small(&h);
	p = parse_ok("record3");
	ck_assert_uint_eq(p.want, FATELF_WANT_RECORD);
	ck_assert_int_eq(p.record, 3);
	ck_assert(fatelf_pattern_match(&p, &h.records[0].target, 3));
	ck_assert(!fatelf_pattern_match(&p, &h.records[3].target, 2));
	for (int i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "record%d", i);
		ck_assert_int_eq(fatelf_target_find(name, &h, NULL), i);
	}
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_target_find("record4", &h, &d), -FATELF_E_NO_MATCH);
	ck_assert_int_eq(d.code, -FATELF_E_NO_MATCH);
	ck_assert_ptr_nonnull(strstr(d.msg, "'record4'"));
	ck_assert_int_eq(fatelf_target_find("record99999", &h, NULL), -FATELF_E_NO_MATCH);
}
END_TEST

START_TEST(test_find)
{
	fatelf_header h;
	fatelf_diag d;

	hdr_small(&h);
	ck_assert_int_eq(fatelf_target_find("x86_64:linux", &h, NULL), 1);
	ck_assert_int_eq(fatelf_target_find("x86_64:sysv", &h, NULL), 0);
	ck_assert_int_eq(fatelf_target_find("i386", &h, NULL), 2);
	ck_assert_int_eq(fatelf_target_find("i686-linux-gnu", &h, NULL), 2);
	ck_assert_int_eq(fatelf_target_find("arm64", &h, NULL), 3);
	ck_assert_int_eq(fatelf_target_find("aarch64", &h, NULL), 3);
	ck_assert_int_eq(fatelf_target_find("32bits", &h, NULL), 2);

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_target_find("x86_64", &h, &d), -FATELF_E_AMBIGUOUS);
	ck_assert_int_eq(d.code, -FATELF_E_AMBIGUOUS);
	ck_assert_ptr_nonnull(strstr(d.msg, "'x86_64'"));
	ck_assert_ptr_nonnull(strstr(d.msg, "record 0 (x86_64:64bits:le:sysv:osabiver0)"));
	ck_assert_ptr_nonnull(strstr(d.msg, "record 1 (x86_64:64bits:le:linux:osabiver0)"));
	ck_assert_ptr_null(strstr(d.msg, "record 2"));

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_target_find("riscv64", &h, &d), -FATELF_E_NO_MATCH);
	ck_assert_str_eq(d.target, "riscv64");
	ck_assert_str_eq(d.msg, "no record matches 'riscv64'; the file has: "
		"x86_64:64bits:le:sysv:osabiver0, x86_64:64bits:le:linux:osabiver0, "
		"i386:32bits:le:sysv:osabiver0, aarch64:64bits:le:sysv:osabiver0");

	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_target_find("nonsense", &h, &d), -FATELF_E_TARGET_SYNTAX);
	ck_assert_int_eq(d.code, -FATELF_E_TARGET_SYNTAX);

	/* pattern_find names the pattern by its fields */
	fatelf_pattern p = parse_ok("amd64");
	ck_assert_int_eq(fatelf_pattern_find(&p, &h, NULL), -FATELF_E_AMBIGUOUS);
	p = parse_ok("s390x");
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_pattern_find(&p, &h, &d), -FATELF_E_NO_MATCH);
	ck_assert_ptr_nonnull(strstr(d.msg, "'s390:64bits:be'"));
	p = parse_ok("le:sysv:32bits");
	ck_assert_int_eq(fatelf_pattern_find(&p, &h, NULL), 2);
}
END_TEST

/* Long no-match lists stay inside the message buffer and say they go on. */
START_TEST(test_find_long_list)
{
	fatelf_header h;
	fatelf_diag d;

	fatelf_header_init(&h);
	for (int i = 0; i < FATELF_MAX_RECORDS; i++)
		hdr_add(&h, (uint16_t)(1000 + i), C64, LE, 0, 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_target_find("x86_64", &h, &d), -FATELF_E_NO_MATCH);
	ck_assert_uint_lt(strlen(d.msg), sizeof(d.msg));
	ck_assert_ptr_nonnull(strstr(d.msg, "em1000:64bits:le:sysv:osabiver0"));
	ck_assert_ptr_nonnull(strstr(d.msg, "..."));
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_target_find("64bits", &h, &d), -FATELF_E_AMBIGUOUS);
	ck_assert_ptr_nonnull(strstr(d.msg, "255 records"));
}
END_TEST

/* ---------------------------------------------------------------- printing */

/* A header with the awkward cases: one machine with several osabis, big
 * endian, unknown machine and osabi numbers, osabi versions. */
static void hdr_many(fatelf_header *h)
{
	fatelf_header_init(h);
	hdr_add(h, 62, C64, LE, 0, 0);
	hdr_add(h, 62, C64, LE, 3, 0);
	hdr_add(h, 62, C64, LE, 9, 0);
	hdr_add(h, 62, C64, LE, 3, 1);
	hdr_add(h, 62, C32, LE, 0, 0);
	hdr_add(h, 3, C32, LE, 0, 0);
	hdr_add(h, 3, C32, LE, 3, 0);
	hdr_add(h, 183, C64, LE, 0, 0);
	hdr_add(h, 183, C64, BE, 0, 0);
	hdr_add(h, 40, C32, LE, 0, 0);
	hdr_add(h, 40, C32, BE, 97, 0);
	hdr_add(h, 21, C64, BE, 0, 0);
	hdr_add(h, 21, C64, LE, 0, 0);
	hdr_add(h, 20, C32, BE, 0, 0);
	hdr_add(h, 22, C64, BE, 0, 0);
	hdr_add(h, 22, C32, BE, 0, 0);
	hdr_add(h, 243, C64, LE, 0, 0);
	hdr_add(h, 258, C64, LE, 0, 0);
	hdr_add(h, 0x9999, C64, LE, 0, 0);
	hdr_add(h, 0x9999, C32, BE, 200, 0);
	hdr_add(h, 8, C32, BE, 200, 7);
	hdr_add(h, 8, C32, BE, 255, 0);
	hdr_add(h, 0, C32, LE, 0, 0);
}

static void check_round_trips(const fatelf_header *h)
{
	for (int i = 0; i < h->nrecords; i++) {
		char full[FATELF_TARGET_NAME_MAX], shrt[FATELF_TARGET_NAME_MAX];
		fatelf_diag d;
		fatelf_pattern p;

		fatelf_target_format(&h->records[i].target, full);
		fatelf_target_short_name(h, i, shrt);
		fatelf_diag_clear(&d);
		ck_assert_msg(fatelf_target_find(full, h, &d) == i, "full name '%s' of record %d: %s",
			      full, i, d.msg);
		fatelf_diag_clear(&d);
		ck_assert_msg(fatelf_target_find(shrt, h, &d) == i, "short name '%s' of record %d: %s",
			      shrt, i, d.msg);
		/* the full name matches exactly this target */
		p = parse_ok(full);
		ck_assert_uint_eq(p.want, FATELF_WANT_ALL);
		ck_assert(fatelf_target_equal(&p.target, &h->records[i].target));
		ck_assert_uint_le(strlen(shrt), strlen(full));
	}
}

START_TEST(test_format_and_short_names)
{
	fatelf_header h;
	char buf[FATELF_TARGET_NAME_MAX];

	hdr_many(&h);
	check_round_trips(&h);

	fatelf_target_format(&h.records[0].target, buf);
	ck_assert_str_eq(buf, "x86_64:64bits:le:sysv:osabiver0");
	fatelf_target_format(&h.records[8].target, buf);
	ck_assert_str_eq(buf, "aarch64:64bits:be:sysv:osabiver0");
	fatelf_target_format(&h.records[10].target, buf);
	ck_assert_str_eq(buf, "arm:32bits:be:armabi:osabiver0");
	fatelf_target_format(&h.records[19].target, buf);
	ck_assert_str_eq(buf, "em39321:32bits:be:osabi200:osabiver0");
	fatelf_target_format(&h.records[20].target, buf);
	ck_assert_str_eq(buf, "mips:32bits:be:osabi200:osabiver7");

	/* shortest names, fields in canonical order */
	static const struct { int i; const char *name; } want[] = {
		{ 0, "x86_64:64bits:sysv" }, { 1, "x86_64:linux:osabiver0" },
		{ 2, "x86_64:freebsd" }, { 3, "x86_64:osabiver1" }, { 4, "x86_64:32bits" },
		{ 5, "i386:sysv" }, { 6, "i386:linux" }, { 7, "aarch64:le" },
		{ 8, "aarch64:be" }, { 9, "arm:le" }, { 10, "arm:be" }, { 11, "ppc64:be" },
		{ 12, "ppc64:le" }, { 13, "ppc" }, { 14, "s390:64bits" }, { 15, "s390:32bits" },
		{ 16, "riscv" }, { 17, "loongarch" }, { 18, "em39321:64bits" },
		{ 19, "em39321:32bits" }, { 20, "mips:osabi200" }, { 21, "mips:standalone" },
		{ 22, "none" },
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		fatelf_target_short_name(&h, want[k].i, buf);
		ck_assert_str_eq(buf, want[k].name);
	}

	/* one record: the machine alone */
	fatelf_header one;
	fatelf_header_init(&one);
	hdr_add(&one, 62, C64, LE, 0, 0);
	fatelf_target_short_name(&one, 0, buf);
	ck_assert_str_eq(buf, "x86_64");
}
END_TEST

/* A full table of pseudo-random distinct targets. */
START_TEST(test_round_trip_random)
{
	fatelf_header h;
	uint32_t x = 12345;

	for (int round = 0; round < 20; round++) {
		fatelf_header_init(&h);
		while (h.nrecords < FATELF_MAX_RECORDS) {
			fatelf_target t;
			bool dup = false;

			x = x * 1103515245u + 12345u;
			/* few machines and osabis, so that names must grow */
			static const uint16_t ms[] = { 62, 3, 183, 0x9999, 40, 8, 258, 0 };
			t.machine = ms[(x >> 8) % 8];
			t.word_size = (uint8_t)(1 + ((x >> 12) & 1));
			t.byte_order = (uint8_t)(1 + ((x >> 13) & 1));
			t.osabi = (uint8_t)((x >> 16) % 5 == 4 ? 200 : (x >> 16) % 5);
			t.osabi_version = (uint8_t)((x >> 20) % 3);
			for (int i = 0; i < h.nrecords; i++)
				dup |= fatelf_target_equal(&t, &h.records[i].target);
			if (!dup)
				hdr_add(&h, t.machine, t.word_size, t.byte_order, t.osabi,
					t.osabi_version);
		}
		check_round_trips(&h);
	}
}
END_TEST

START_TEST(test_format_total)
{
	fatelf_header h;
	char buf[FATELF_TARGET_NAME_MAX];

	fatelf_header_init(&h);
	hdr_add(&h, 62, 7, 9, 0, 0);
	hdr_add(&h, 62, 0, 0, 200, 255);
	hdr_add(&h, 65535, 255, 255, 255, 255);
	fatelf_target_format(&h.records[0].target, buf);
	ck_assert_str_eq(buf, "x86_64:class7:data9:sysv:osabiver0");
	fatelf_target_format(&h.records[2].target, buf);
	ck_assert_str_eq(buf, "em65535:class255:data255:standalone:osabiver255");
	check_round_trips(&h);

	/* two identical records: only the index tells them apart */
	hdr_add(&h, 62, 7, 9, 0, 0);
	fatelf_target_short_name(&h, 3, buf);
	ck_assert_str_eq(buf, "record3");
	ck_assert_int_eq(fatelf_target_find(buf, &h, NULL), 3);
	fatelf_target_short_name(&h, 0, buf);
	ck_assert_str_eq(buf, "record0");
}
END_TEST

START_TEST(test_format_fields)
{
	fatelf_target t = { .machine = 62, .word_size = C64, .byte_order = LE, .osabi = 3 };
	char buf[FATELF_TARGET_NAME_MAX];

	fatelf_target_format_fields(&t, FATELF_WANT_MACHINE | FATELF_WANT_OSABI, buf);
	ck_assert_str_eq(buf, "x86_64:linux");
	fatelf_target_format_fields(&t, FATELF_WANT_BYTEORDER | FATELF_WANT_WORDSIZE, buf);
	ck_assert_str_eq(buf, "64bits:le");
	fatelf_target_format_fields(&t, FATELF_WANT_OSABIVER, buf);
	ck_assert_str_eq(buf, "osabiver0");
	fatelf_target_format_fields(&t, 0, buf);
	ck_assert_str_eq(buf, "");
	fatelf_target_format_fields(&t, FATELF_WANT_ALL, buf);
	ck_assert_str_eq(buf, "x86_64:64bits:le:linux:osabiver0");
}
END_TEST

START_TEST(test_arch_names)
{
	static const struct { uint16_t m; uint8_t w, o; const char *arch, *deb; } want[] = {
		{ 62, C64, LE, "x86_64", "amd64" }, { 62, C32, LE, "x32", "x32" },
		{ 3, C32, LE, "i386", "i386" }, { 183, C64, LE, "aarch64", "arm64" },
		{ 183, C64, BE, "aarch64_be", NULL }, { 40, C32, LE, "arm", "armhf" },
		{ 40, C32, BE, "armeb", NULL }, { 21, C64, LE, "ppc64le", "ppc64el" },
		{ 21, C64, BE, "ppc64", "ppc64" }, { 20, C32, BE, "ppc", "powerpc" },
		{ 22, C64, BE, "s390x", "s390x" }, { 22, C32, BE, "s390", "s390" },
		{ 243, C64, LE, "riscv64", "riscv64" }, { 243, C32, LE, "riscv32", NULL },
		{ 258, C64, LE, "loongarch64", "loong64" }, { 8, C64, LE, "mips64el", "mips64el" },
		{ 8, C32, LE, "mipsel", "mipsel" }, { 8, C32, BE, "mips", "mips" },
		{ 43, C64, BE, "sparc64", "sparc64" },
		{ 62, C64, BE, NULL, NULL }, { 0x9999, C64, LE, NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		fatelf_target t = { .machine = want[i].m, .word_size = want[i].w,
				    .byte_order = want[i].o };

		ck_assert_pstr_eq(fatelf_target_arch(&t), want[i].arch);
		ck_assert_pstr_eq(fatelf_target_debian_arch(&t), want[i].deb);
	}

	/* every familiar name parses back to a pattern matching its target */
	for (unsigned m = 0; m <= 300; m++)
		for (uint8_t w = 1; w <= 2; w++)
			for (uint8_t o = 1; o <= 2; o++)
				for (uint8_t osabi = 0; osabi <= 3; osabi += 3) {
					fatelf_target t = { .machine = (uint16_t)m, .word_size = w,
							    .byte_order = o, .osabi = osabi };
					const char *names[2] = { fatelf_target_arch(&t),
								 fatelf_target_debian_arch(&t) };

					for (int k = 0; k < 2; k++) {
						if (!names[k])
							continue;
						fatelf_pattern p = parse_ok(names[k]);
						ck_assert_msg(fatelf_pattern_match(&p, &t, 0),
							      "'%s' does not match %u/%u/%u", names[k],
							      m, w, o);
					}
				}
}
END_TEST

START_TEST(test_target_equal)
{
	fatelf_target a = { .machine = 62, .word_size = C64, .byte_order = LE };
	fatelf_target b = a;

	ck_assert(fatelf_target_equal(&a, &b));
	b.osabi_version = 1;
	ck_assert(!fatelf_target_equal(&a, &b));
	b = a;
	b.osabi = 3;
	ck_assert(!fatelf_target_equal(&a, &b));
	b = a;
	b.byte_order = BE;
	ck_assert(!fatelf_target_equal(&a, &b));
	b = a;
	b.word_size = C32;
	ck_assert(!fatelf_target_equal(&a, &b));
	b = a;
	b.machine = 3;
	ck_assert(!fatelf_target_equal(&a, &b));
}
END_TEST

/* ---------------------------------------------------------------- keep sets */

START_TEST(test_keep_basics)
{
	fatelf_keepset k;

	fatelf_keep_clear(&k);
	ck_assert_uint_eq(fatelf_keep_count(&k), 0);
	fatelf_keep_add(&k, 0);
	fatelf_keep_add(&k, 7);
	fatelf_keep_add(&k, 8);
	fatelf_keep_add(&k, 254);
	fatelf_keep_add(&k, 8);
	fatelf_keep_add(&k, 255);       /* out of range: ignored */
	ck_assert_uint_eq(fatelf_keep_count(&k), 4);
	ck_assert(fatelf_keep_has(&k, 0));
	ck_assert(fatelf_keep_has(&k, 7));
	ck_assert(fatelf_keep_has(&k, 8));
	ck_assert(fatelf_keep_has(&k, 254));
	ck_assert(!fatelf_keep_has(&k, 1));
	ck_assert(!fatelf_keep_has(&k, 255));
	ck_assert(!fatelf_keep_has(&k, 100000));
	fatelf_keep_clear(&k);
	ck_assert_uint_eq(fatelf_keep_count(&k), 0);
	ck_assert(!fatelf_keep_has(&k, 7));
}
END_TEST

START_TEST(test_keep_from_names)
{
	fatelf_header h;
	fatelf_keepset k;
	fatelf_diag d;

	hdr_small(&h);
	const char *n1[] = { "x86_64", "i386" };
	ck_assert_int_eq(fatelf_keep_from_names(&h, n1, 2, &k, NULL), 3);
	ck_assert(fatelf_keep_has(&k, 0) && fatelf_keep_has(&k, 1) && fatelf_keep_has(&k, 2));
	ck_assert(!fatelf_keep_has(&k, 3));

	const char *n2[] = { "record3", "aarch64", "x86_64:linux" };
	ck_assert_int_eq(fatelf_keep_from_names(&h, n2, 3, &k, NULL), 2);
	ck_assert(fatelf_keep_has(&k, 1) && fatelf_keep_has(&k, 3));
	ck_assert_uint_eq(fatelf_keep_count(&k), 2);

	/* failures leave ret alone */
	fatelf_keepset before = k;
	const char *n3[] = { "x86_64", "riscv64" };
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_keep_from_names(&h, n3, 2, &k, &d), -FATELF_E_NO_MATCH);
	ck_assert_ptr_nonnull(strstr(d.msg, "'riscv64'"));
	ck_assert_mem_eq(&k, &before, sizeof(k));
	const char *n4[] = { "x86_64:bogus" };
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_keep_from_names(&h, n4, 1, &k, &d), -FATELF_E_TARGET_SYNTAX);
	ck_assert_ptr_nonnull(strstr(d.msg, "'bogus'"));
	ck_assert_int_eq(fatelf_keep_from_names(&h, n4, 0, &k, NULL), -FATELF_E_EMPTY_KEEP);
	ck_assert_mem_eq(&k, &before, sizeof(k));
}
END_TEST

static Suite *target_suite(void)
{
	Suite *s = suite_create("target");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_machine_table_known);
	tcase_add_test(tc, test_machine_names_round_trip);
	tcase_add_test(tc, test_machine_names_never_clash);
	tcase_add_test(tc, test_em_numbers);
	tcase_add_test(tc, test_osabi_table);
	tcase_add_test(tc, test_aliases);
	tcase_add_test(tc, test_historical_any_order);
	tcase_add_test(tc, test_historical_table);
	tcase_add_test(tc, test_conflicts);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_case_insensitive);
	tcase_add_test(tc, test_record_n);
	tcase_add_test(tc, test_find);
	tcase_add_test(tc, test_find_long_list);
	tcase_add_test(tc, test_format_and_short_names);
	tcase_add_test(tc, test_round_trip_random);
	tcase_add_test(tc, test_format_total);
	tcase_add_test(tc, test_format_fields);
	tcase_add_test(tc, test_arch_names);
	tcase_add_test(tc, test_target_equal);
	tcase_add_test(tc, test_keep_basics);
	tcase_add_test(tc, test_keep_from_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(target_suite());
}
