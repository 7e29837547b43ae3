/*
 * Unit tests for the host (lib/fatelf/host.c) and the "compatible" keep set: what
 * each uname -m name runs, the kernel's record selection rule, the error a
 * user sees when nothing fits, and detection on the machine running the
 * tests.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/utsname.h>

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

static fatelf_host host(const char *uname_m, unsigned flags)
{
	fatelf_host h;

	ck_assert_msg(fatelf_host_from_uname(uname_m, flags, &h) == 0, "uname '%s'", uname_m);
	ck_assert_str_eq(h.uname_machine, uname_m);
	return h;
}

/* "m/w/o" lists, e.g. "62/2/1 3/1/1" */
static void assert_targets(const fatelf_target *t, unsigned n, const char *want, const char *what)
{
	char got[256] = "";
	size_t len = 0;

	for (unsigned i = 0; i < n; i++) {
		int k = snprintf(got + len, sizeof(got) - len, "%s%u/%u/%u", i ? " " : "",
				 t[i].machine, t[i].word_size, t[i].byte_order);
		ck_assert(k > 0 && (size_t)k < sizeof(got) - len);
		len += (size_t)k;
		/* osabi fields are unused and zero */
		ck_assert_uint_eq(t[i].osabi, 0);
		ck_assert_uint_eq(t[i].osabi_version, 0);
	}
	ck_assert_msg(strcmp(got, want) == 0, "%s: got '%s', want '%s'", what, got, want);
}

START_TEST(test_from_uname_table)
{
	static const struct { const char *m; unsigned flags; const char *native, *compat; } t[] = {
		{ "x86_64", 0, "62/2/1", "3/1/1" },
		{ "i386", 0, "3/1/1", "" }, { "i486", 0, "3/1/1", "" },
		{ "i586", 0, "3/1/1", "" }, { "i686", 0, "3/1/1", "" },
		{ "aarch64", 0, "183/2/1", "" },
		{ "aarch64", FATELF_HOST_ARM32, "183/2/1", "40/1/1" },
		{ "aarch64_be", 0, "183/2/2", "" },
		{ "armv7l", 0, "40/1/1", "" }, { "armv6l", 0, "40/1/1", "" },
		{ "armv8l", 0, "40/1/1", "" }, { "arm", 0, "40/1/1", "" },
		{ "s390x", 0, "22/2/2", "22/1/2" }, { "s390", 0, "22/1/2", "" },
		{ "ppc64", 0, "21/2/2", "20/1/2" }, { "ppc64le", 0, "21/2/1", "" },
		{ "ppc", 0, "20/1/2", "" },
		{ "riscv64", 0, "243/2/1", "" }, { "loongarch64", 0, "258/2/1", "" },
		{ "mips64", 0, "8/2/2", "8/1/2" }, { "mips64el", 0, "8/2/1", "8/1/1" },
		{ "mips", 0, "8/1/2", "" }, { "mipsel", 0, "8/1/1", "" },
		{ "sparc64", 0, "43/2/2", "2/1/2 18/1/2" },
		/* the flag means nothing off aarch64 */
		{ "x86_64", FATELF_HOST_ARM32, "62/2/1", "3/1/1" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		fatelf_host h = host(t[i].m, t[i].flags);

		assert_targets(h.native, h.nnative, t[i].native, t[i].m);
		assert_targets(h.compat, h.ncompat, t[i].compat, t[i].m);
	}
}
END_TEST

START_TEST(test_from_uname_unknown)
{
	fatelf_host h, before;
	char longname[100];

	memset(&h, 0x5a, sizeof(h));
	before = h;
	ck_assert_int_eq(fatelf_host_from_uname("pdp11", 0, &h), -FATELF_E_INVALID);
	ck_assert_int_eq(fatelf_host_from_uname("", 0, &h), -FATELF_E_INVALID);
	ck_assert_int_eq(fatelf_host_from_uname("X86_64", 0, &h), -FATELF_E_INVALID);
	ck_assert_int_eq(fatelf_host_from_uname(NULL, 0, &h), -FATELF_E_INVALID);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(fatelf_host_from_uname(longname, 0, &h), -FATELF_E_INVALID);
	/* ret untouched on failure */
	ck_assert_mem_eq(&h, &before, sizeof(h));
}
END_TEST

START_TEST(test_host_runs)
{
	fatelf_host h = host("x86_64", 0);
	fatelf_target t = { .machine = 62, .word_size = C64, .byte_order = LE };

	ck_assert_int_eq(fatelf_host_runs(&h, &t), 2);
	/* osabi does not matter here */
	t.osabi = 9;
	t.osabi_version = 4;
	ck_assert_int_eq(fatelf_host_runs(&h, &t), 2);
	t = (fatelf_target) { .machine = 3, .word_size = C32, .byte_order = LE };
	ck_assert_int_eq(fatelf_host_runs(&h, &t), 1);
	t = (fatelf_target) { .machine = 62, .word_size = C32, .byte_order = LE }; /* x32 */
	ck_assert_int_eq(fatelf_host_runs(&h, &t), 0);
	t = (fatelf_target) { .machine = 62, .word_size = C64, .byte_order = BE };
	ck_assert_int_eq(fatelf_host_runs(&h, &t), 0);
	t = (fatelf_target) { .machine = 183, .word_size = C64, .byte_order = LE };
	ck_assert_int_eq(fatelf_host_runs(&h, &t), 0);

	fatelf_host a = host("aarch64", FATELF_HOST_ARM32);
	t = (fatelf_target) { .machine = 40, .word_size = C32, .byte_order = LE };
	ck_assert_int_eq(fatelf_host_runs(&a, &t), 1);
	a = host("aarch64", 0);
	ck_assert_int_eq(fatelf_host_runs(&a, &t), 0);
}
END_TEST

START_TEST(test_select_order)
{
	fatelf_header f;
	fatelf_host x86 = host("x86_64", 0);
	fatelf_host arm = host("aarch64", 0);
	fatelf_host arm32 = host("aarch64", FATELF_HOST_ARM32);

	/* the vendor's order wins, and compatible targets count */
	fatelf_header_init(&f);
	hdr_add(&f, 183, C64, LE, 0, 0);
	hdr_add(&f, 3, C32, LE, 0, 0);
	hdr_add(&f, 62, C64, LE, 0, 0);
	hdr_add(&f, 40, C32, LE, 0, 0);
	ck_assert_int_eq(fatelf_host_select(&x86, &f, NULL), 1);
	ck_assert_int_eq(fatelf_host_select(&arm, &f, NULL), 0);

	fatelf_header_init(&f);
	hdr_add(&f, 62, C64, LE, 0, 0);
	hdr_add(&f, 3, C32, LE, 0, 0);
	ck_assert_int_eq(fatelf_host_select(&x86, &f, NULL), 0);

	/* AArch32 only counts when the CPU runs it */
	fatelf_header_init(&f);
	hdr_add(&f, 40, C32, LE, 0, 0);
	ck_assert_int_eq(fatelf_host_select(&arm, &f, NULL), -FATELF_E_NO_HOST_RECORD);
	ck_assert_int_eq(fatelf_host_select(&arm32, &f, NULL), 0);
}
END_TEST

START_TEST(test_select_osabi)
{
	fatelf_header f;
	fatelf_host x86 = host("x86_64", 0);

	/* only SYSV and Linux, ABI version 0 */
	fatelf_header_init(&f);
	hdr_add(&f, 62, C64, LE, 9, 0);         /* freebsd */
	hdr_add(&f, 62, C64, LE, 0, 1);         /* sysv, abiversion 1 */
	hdr_add(&f, 62, C64, LE, 200, 0);       /* unknown osabi */
	hdr_add(&f, 62, C64, LE, 3, 1);         /* linux, abiversion 1 */
	hdr_add(&f, 62, C64, LE, 3, 0);         /* linux */
	hdr_add(&f, 62, C64, LE, 0, 0);         /* sysv */
	ck_assert_int_eq(fatelf_host_select(&x86, &f, NULL), 4);
	f.records[4].target.osabi = 12;
	ck_assert_int_eq(fatelf_host_select(&x86, &f, NULL), 5);
	f.records[5].target.osabi_version = 2;
	ck_assert_int_eq(fatelf_host_select(&x86, &f, NULL), -FATELF_E_NO_HOST_RECORD);
}
END_TEST

START_TEST(test_select_no_match_message)
{
	fatelf_header f;
	fatelf_diag d;
	fatelf_host x86 = host("x86_64", 0);

	fatelf_header_init(&f);
	hdr_add(&f, 183, C64, LE, 0, 0);
	hdr_add(&f, 243, C64, LE, 0, 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_host_select(&x86, &f, &d), -FATELF_E_NO_HOST_RECORD);
	ck_assert_int_eq(d.code, -FATELF_E_NO_HOST_RECORD);
	ck_assert_str_eq(d.msg, "no record runs on this host (x86_64: x86_64, i386); the file "
			 "offers: aarch64:64bits:le:sysv:osabiver0, riscv:64bits:le:sysv:osabiver0");

	/* a host target without a familiar name is printed by its fields */
	fatelf_host sparc = host("sparc64", 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_host_select(&sparc, &f, &d), -FATELF_E_NO_HOST_RECORD);
	ck_assert_str_eq(d.msg, "no record runs on this host (sparc64: sparc64, sparc:32bits:be, "
			 "sparc32plus:32bits:be); the file offers: "
			 "aarch64:64bits:le:sysv:osabiver0, riscv:64bits:le:sysv:osabiver0");

	/* the osabi rule shows in the listed targets */
	fatelf_header_init(&f);
	hdr_add(&f, 62, C64, LE, 9, 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_host_select(&x86, &f, &d), -FATELF_E_NO_HOST_RECORD);
	ck_assert_ptr_nonnull(strstr(d.msg, "the file offers: x86_64:64bits:le:freebsd:osabiver0"));

	/* a long table is cut, inside the message buffer */
	fatelf_header_init(&f);
	for (int i = 0; i < FATELF_MAX_RECORDS; i++)
		hdr_add(&f, (uint16_t)(2000 + i), C64, LE, 0, 0);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_host_select(&x86, &f, &d), -FATELF_E_NO_HOST_RECORD);
	ck_assert_uint_lt(strlen(d.msg), sizeof(d.msg));
	ck_assert_ptr_nonnull(strstr(d.msg, "em2000:64bits:le:sysv:osabiver0"));
	ck_assert_str_eq(d.msg + strlen(d.msg) - 3, "...");
}
END_TEST

START_TEST(test_keep_from_host)
{
	fatelf_header f;
	fatelf_keepset k, before;
	fatelf_diag d;
	fatelf_host x86 = host("x86_64", 0);
	fatelf_host arm = host("aarch64", 0);
	fatelf_host rv = host("riscv64", 0);

	fatelf_header_init(&f);
	hdr_add(&f, 62, C64, LE, 0, 0);         /* 0 yes */
	hdr_add(&f, 183, C64, LE, 0, 0);        /* 1 aarch64 */
	hdr_add(&f, 3, C32, LE, 3, 0);          /* 2 yes: compat, linux */
	hdr_add(&f, 62, C64, LE, 9, 0);         /* 3 freebsd */
	hdr_add(&f, 3, C32, LE, 0, 1);          /* 4 abiversion 1 */
	hdr_add(&f, 62, C32, LE, 0, 0);         /* 5 x32 */

	ck_assert_int_eq(fatelf_keep_from_host(&f, &x86, &k, NULL), 2);
	ck_assert(fatelf_keep_has(&k, 0) && fatelf_keep_has(&k, 2));
	ck_assert_uint_eq(fatelf_keep_count(&k), 2);

	ck_assert_int_eq(fatelf_keep_from_host(&f, &arm, &k, NULL), 1);
	ck_assert(fatelf_keep_has(&k, 1));
	ck_assert_uint_eq(fatelf_keep_count(&k), 1);

	before = k;
	fatelf_diag_clear(&d);
	ck_assert_int_eq(fatelf_keep_from_host(&f, &rv, &k, &d), -FATELF_E_NO_HOST_RECORD);
	ck_assert_int_eq(d.code, -FATELF_E_NO_HOST_RECORD);
	ck_assert_ptr_nonnull(strstr(d.msg, "(riscv64: riscv64)"));
	ck_assert_ptr_nonnull(strstr(d.msg, "x86_64:64bits:le:sysv:osabiver0"));
	ck_assert_ptr_nonnull(strstr(d.msg, "aarch64:64bits:le:sysv:osabiver0"));
	ck_assert_mem_eq(&k, &before, sizeof(k));

	/* the kept set always contains what select picks */
	for (int i = 0; i < 2; i++) {
		fatelf_host *h = i ? &arm : &x86;
		int sel = fatelf_host_select(h, &f, NULL);

		ck_assert_int_ge(sel, 0);
		ck_assert_int_gt(fatelf_keep_from_host(&f, h, &k, NULL), 0);
		ck_assert(fatelf_keep_has(&k, (unsigned)sel));
	}
}
END_TEST

START_TEST(test_detect)
{
	struct utsname u;
	fatelf_host h, want;
	int before = personality(0xffffffff);

	ck_assert_int_eq(uname(&u), 0);
	ck_assert_int_eq(fatelf_host_detect(&h), 0);
	ck_assert_str_eq(h.uname_machine, u.machine);
	/* the AArch32 probe must not leave the personality changed */
	ck_assert_int_eq(personality(0xffffffff), before);

	if (strcmp(u.machine, "x86_64") == 0) {
		assert_targets(h.native, h.nnative, "62/2/1", "native");
		assert_targets(h.compat, h.ncompat, "3/1/1", "compat");
	} else {
		unsigned flags = h.ncompat && strncmp(u.machine, "aarch64", 7) == 0 ?
				 FATELF_HOST_ARM32 : 0;

		ck_assert_int_eq(fatelf_host_from_uname(u.machine, flags, &want), 0);
		ck_assert_mem_eq(&h, &want, sizeof(h));
	}
}
END_TEST

static Suite *host_suite(void)
{
	Suite *s = suite_create("host");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_from_uname_table);
	tcase_add_test(tc, test_from_uname_unknown);
	tcase_add_test(tc, test_host_runs);
	tcase_add_test(tc, test_select_order);
	tcase_add_test(tc, test_select_osabi);
	tcase_add_test(tc, test_select_no_match_message);
	tcase_add_test(tc, test_keep_from_host);
	tcase_add_test(tc, test_detect);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(host_suite());
}
