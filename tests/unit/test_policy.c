/*
 * Unit tests for the install policy (lib/install/policy.c): what each policy keeps
 * of a fat file on x86_64, aarch64 and riscv64 hosts, the KeepFat override,
 * the error an admin sees when no record fits, the stored policy text, and
 * the installed size, checked against the bytes a real thin writes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elfgen.h"
#include "engine.h"
#include "testutil.h"

#define C32 FATELF_CLASS32
#define C64 FATELF_CLASS64
#define LE FATELF_DATA2LSB
#define BE FATELF_DATA2MSB

#define EM_386 3
#define EM_ARM 40
#define EM_X86_64 62
#define EM_AARCH64 183
#define EM_RISCV 243

static void hdr_add_osabi(fatelf_header *h, uint16_t machine, uint8_t word_size, uint8_t byte_order,
			  uint8_t osabi)
{
	fatelf_record *r = &h->records[h->nrecords];

	memset(r, 0, sizeof(*r));
	r->target = (fatelf_target) {
		.machine = machine, .word_size = word_size, .byte_order = byte_order, .osabi = osabi,
	};
	r->offset = 4096u * (h->nrecords + 1u);
	r->size = 4096;
	h->nrecords++;
}

static void hdr_add(fatelf_header *h, uint16_t machine, uint8_t word_size, uint8_t byte_order)
{
	hdr_add_osabi(h, machine, word_size, byte_order, 0);
}

/* aarch64, x86_64, i386: the vendor's order */
static fatelf_header three(void)
{
	fatelf_header h;

	fatelf_header_init(&h);
	hdr_add(&h, EM_AARCH64, C64, LE);
	hdr_add(&h, EM_X86_64, C64, LE);
	hdr_add(&h, EM_386, C32, LE);
	return h;
}

static fatelf_host host(const char *m, unsigned flags)
{
	fatelf_host h;

	ck_assert_int_eq(fatelf_host_from_uname(m, flags, &h), 0);
	return h;
}

/* The kept indexes as "0 2". */
static const char *kept(const fatelf_keepset *k)
{
	static char buf[64];
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < FATELF_MAX_RECORDS; i++)
		if (fatelf_keep_has(k, i)) {
			int n = snprintf(buf + len, sizeof(buf) - len, "%s%u", len ? " " : "", i);
			ck_assert(n > 0 && (size_t)n < sizeof(buf) - len);
			len += (size_t)n;
		}
	return buf;
}

static engine_policy_spec spec(int policy)
{
	return (engine_policy_spec) { .policy = policy };
}

/* Runs a selection; returns its result and the keep set as text. */
static int sel(const engine_policy_spec *p, const char *const *globs, size_t nglobs,
	       const fatelf_host *h, const char *path, const fatelf_header *hdr,
	       const char **ret_kept, int *ret_form, fatelf_diag *d)
{
	fatelf_keepset k;
	int form = -1, r;

	/* a kept-as-shipped answer must not touch the outputs */
	memset(&k, 0xAA, sizeof(k));
	fatelf_diag_clear(d);
	r = engine_policy_select(p, globs, nglobs, h, path, hdr, &k, &form, d);
	if (r <= 0) {
		fatelf_keepset untouched;
		memset(&untouched, 0xAA, sizeof(untouched));
		ck_assert_mem_eq(&k, &untouched, sizeof(k));
		ck_assert_int_eq(form, -1);
	}
	*ret_kept = r == 1 ? kept(&k) : "";
	*ret_form = form;
	return r;
}

START_TEST(test_names)
{
	static const char *const names[] = { "native", "compatible", "keep", "targets" };
	int p = -1;

	for (int i = 0; i < 4; i++) {
		ck_assert_str_eq(engine_policy_name(i), names[i]);
		ck_assert_int_eq(engine_policy_from_name(names[i], &p), 0);
		ck_assert_int_eq(p, i);
	}
	ck_assert_int_eq(ENGINE_POLICY_NATIVE, 0);
	ck_assert_ptr_null(engine_policy_name(4));
	ck_assert_ptr_null(engine_policy_name(-1));
	p = 7;
	ck_assert_int_eq(engine_policy_from_name("Native", &p), -ENGINE_E_POLICY);
	ck_assert_int_eq(engine_policy_from_name("", &p), -ENGINE_E_POLICY);
	ck_assert_int_eq(engine_policy_from_name("thin", &p), -ENGINE_E_POLICY);
	ck_assert_int_eq(p, 7);
}
END_TEST

START_TEST(test_native_x86_64)
{
	fatelf_host h = host("x86_64", 0);
	fatelf_header f = three();
	engine_policy_spec p = spec(ENGINE_POLICY_NATIVE);
	const char *k;
	fatelf_diag d;
	int form;

	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1");
	ck_assert_int_eq(form, FATELF_FORM_ELF);

	/* the kernel's rule: the first record the host runs, even as a
	 * compatible target, so i386 first means i386 */
	fatelf_header_init(&f);
	hdr_add(&f, EM_386, C32, LE);
	hdr_add(&f, EM_X86_64, C64, LE);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "0");
	ck_assert_int_eq(form, FATELF_FORM_ELF);

	/* a FreeBSD x86_64 record is passed over for the Linux one */
	fatelf_header_init(&f);
	hdr_add_osabi(&f, EM_X86_64, C64, LE, 9);
	hdr_add_osabi(&f, EM_X86_64, C64, LE, FATELF_OSABI_LINUX);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1");
}
END_TEST

START_TEST(test_compatible_x86_64)
{
	fatelf_host h = host("x86_64", 0);
	fatelf_header f = three();
	engine_policy_spec p = spec(ENGINE_POLICY_COMPATIBLE);
	const char *k;
	fatelf_diag d;
	int form;

	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/usr/lib/libx.so", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1 2");
	ck_assert_int_eq(form, FATELF_FORM_AUTO);

	/* only one fits: AUTO makes that a plain ELF */
	fatelf_header_init(&f);
	hdr_add(&f, EM_AARCH64, C64, LE);
	hdr_add(&f, EM_X86_64, C64, LE);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/usr/lib/libx.so", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1");
	ck_assert_int_eq(form, FATELF_FORM_AUTO);
}
END_TEST

START_TEST(test_aarch64_hosts)
{
	fatelf_host plain = host("aarch64", 0), arm32 = host("aarch64", FATELF_HOST_ARM32);
	engine_policy_spec native = spec(ENGINE_POLICY_NATIVE), compat = spec(ENGINE_POLICY_COMPATIBLE);
	fatelf_header f;
	const char *k;
	fatelf_diag d;
	int form;

	fatelf_header_init(&f);
	hdr_add(&f, EM_X86_64, C64, LE);
	hdr_add(&f, EM_ARM, C32, LE);
	hdr_add(&f, EM_AARCH64, C64, LE);
	hdr_add(&f, EM_AARCH64, C64, BE);

	ck_assert_int_eq(sel(&native, NULL, 0, &plain, "/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "2");
	ck_assert_int_eq(form, FATELF_FORM_ELF);
	ck_assert_int_eq(sel(&compat, NULL, 0, &plain, "/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "2");

	/* a CPU that runs AArch32 code: armhf comes first in the file, so the
	 * kernel would run it */
	ck_assert_int_eq(sel(&native, NULL, 0, &arm32, "/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1");
	ck_assert_int_eq(sel(&compat, NULL, 0, &arm32, "/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1 2");
	ck_assert_int_eq(form, FATELF_FORM_AUTO);
}
END_TEST

START_TEST(test_keep)
{
	fatelf_host h = host("x86_64", 0);
	fatelf_header f = three();
	engine_policy_spec p = spec(ENGINE_POLICY_KEEP);
	const char *k;
	fatelf_diag d;
	int form;

	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 0);

	/* keep needs no host record */
	fatelf_header_init(&f);
	hdr_add(&f, EM_RISCV, C64, LE);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 0);
}
END_TEST

START_TEST(test_targets)
{
	fatelf_host h = host("x86_64", 0);
	fatelf_header f = three();
	engine_policy_spec p;
	const char *k;
	fatelf_diag d;
	int form;

	fatelf_diag_clear(&d);
	ck_assert_int_eq(engine_policy_spec_parse("targets:aarch64,riscv64", &p, &d), 0);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "0");
	ck_assert_int_eq(form, FATELF_FORM_AUTO);
	engine_policy_spec_done(&p);

	/* the records named, in whatever order the list names them; the
	 * host does not matter */
	ck_assert_int_eq(engine_policy_spec_parse("targets:i386,aarch64", &p, &d), 0);
	fatelf_host rv = host("riscv64", 0);
	ck_assert_int_eq(sel(&p, NULL, 0, &rv, "/opt/x/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "0 2");
	engine_policy_spec_done(&p);

	/* a pattern may match several records */
	ck_assert_int_eq(engine_policy_spec_parse("targets:64bits", &p, &d), 0);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "0 1");
	engine_policy_spec_done(&p);

	/* nothing named: FATELF_E_NO_MATCH, saying what the file has */
	ck_assert_int_eq(engine_policy_spec_parse("targets:riscv64,s390x", &p, &d), 0);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), -FATELF_E_NO_MATCH);
	ck_assert_int_eq(d.code, -FATELF_E_NO_MATCH);
	ck_assert_str_eq(d.msg, "targets riscv64,s390x name no record; the file offers: "
			 "aarch64:64bits:le:sysv:osabiver0, x86_64:64bits:le:sysv:osabiver0, "
			 "i386:32bits:le:sysv:osabiver0");
	/* ... and as facts: the names asked for and what the file offers */
	ck_assert_str_eq(d.target, "riscv64,s390x");
	ck_assert_uint_eq(d.ntargets, 3);
	ck_assert_str_eq(d.targets[0], "aarch64:64bits:le:sysv:osabiver0");
	ck_assert_str_eq(d.targets[2], "i386:32bits:le:sysv:osabiver0");
	engine_policy_spec_done(&p);

	/* a spec built by hand with no targets is a policy error */
	p = spec(ENGINE_POLICY_TARGETS);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), -ENGINE_E_POLICY);
	p = spec(42);
	ck_assert_int_eq(sel(&p, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d), -ENGINE_E_POLICY);
}
END_TEST

START_TEST(test_keep_fat_override)
{
	static const char *const globs[] = { "/srv/nfs/*.so", "/opt/shared/*" };
	fatelf_host h = host("x86_64", 0);
	fatelf_header f = three();
	engine_policy_spec p = spec(ENGINE_POLICY_NATIVE);
	const char *k;
	fatelf_diag d;
	int form;

	/* '*' crosses '/' (FNM_PATHNAME off): the whole tree is covered */
	ck_assert_int_eq(sel(&p, globs, 2, &h, "/opt/shared/bin/deep/x", &f, &k, &form, &d), 0);
	ck_assert_int_eq(sel(&p, globs, 2, &h, "/srv/nfs/lib/libx.so", &f, &k, &form, &d), 0);
	/* not matched: the policy applies */
	ck_assert_int_eq(sel(&p, globs, 2, &h, "/opt/sharedx", &f, &k, &form, &d), 1);
	ck_assert_str_eq(k, "1");
	ck_assert_int_eq(sel(&p, globs, 2, &h, "/srv/nfs/lib/libx.so.1", &f, &k, &form, &d), 1);

	/* a KeepFat file this host cannot run is still installed fat */
	fatelf_header_init(&f);
	hdr_add(&f, EM_RISCV, C64, LE);
	ck_assert_int_eq(sel(&p, globs, 2, &h, "/opt/shared/bin/rv", &f, &k, &form, &d), 0);
	ck_assert_int_eq(sel(&p, globs, 2, &h, "/opt/other/bin/rv", &f, &k, &form, &d),
			 -FATELF_E_NO_HOST_RECORD);

	/* with targets too */
	engine_policy_spec t;
	ck_assert_int_eq(engine_policy_spec_parse("targets:s390x", &t, &d), 0);
	ck_assert_int_eq(sel(&t, globs, 2, &h, "/opt/shared/x", &f, &k, &form, &d), 0);
	engine_policy_spec_done(&t);
}
END_TEST

START_TEST(test_no_host_record)
{
	fatelf_host h = host("riscv64", 0);
	fatelf_header f;
	engine_policy_spec native = spec(ENGINE_POLICY_NATIVE), compat = spec(ENGINE_POLICY_COMPATIBLE);
	static const char want[] =
		"no record runs on this host (riscv64: riscv64); the file offers: "
		"x86_64:64bits:le:sysv:osabiver0, aarch64:64bits:le:sysv:osabiver0";
	const char *k;
	fatelf_diag d;
	int form;

	fatelf_header_init(&f);
	hdr_add(&f, EM_X86_64, C64, LE);
	hdr_add(&f, EM_AARCH64, C64, LE);
	ck_assert_int_eq(sel(&native, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d),
			 -FATELF_E_NO_HOST_RECORD);
	ck_assert_int_eq(d.code, -FATELF_E_NO_HOST_RECORD);
	ck_assert_str_eq(d.msg, want);
	ck_assert_uint_eq(d.ntargets, 2);
	ck_assert_str_eq(d.targets[1], "aarch64:64bits:le:sysv:osabiver0");
	/* no file name: the caller prefixes it */
	ck_assert_ptr_null(strstr(d.msg, "/opt/x"));

	ck_assert_int_eq(sel(&compat, NULL, 0, &h, "/opt/x/bin/x", &f, &k, &form, &d),
			 -FATELF_E_NO_HOST_RECORD);
	ck_assert_str_eq(d.msg, want);

	/* an x86_64 host and a FreeBSD-only file: the osabi shows */
	fatelf_host x86 = host("x86_64", 0);
	fatelf_header_init(&f);
	hdr_add_osabi(&f, EM_X86_64, C64, LE, 9);
	ck_assert_int_eq(sel(&native, NULL, 0, &x86, "/opt/x/bin/x", &f, &k, &form, &d),
			 -FATELF_E_NO_HOST_RECORD);
	ck_assert_str_eq(d.msg, "no record runs on this host (x86_64: x86_64, i386); the file offers: "
			 "x86_64:64bits:le:freebsd:osabiver0");

	/* a NULL diag is fine */
	fatelf_keepset ks;
	ck_assert_int_eq(engine_policy_select(&native, NULL, 0, &h, "/x", &f, &ks, &form, NULL),
			 -FATELF_E_NO_HOST_RECORD);
}
END_TEST

START_TEST(test_spec_round_trip)
{
	static const char *const texts[] = {
		"native", "compatible", "keep", "targets:x86_64", "targets:x86_64,i386",
		"targets:aarch64:64bits:le,record2,em62",
	};
	char buf[256];
	fatelf_diag d;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		engine_policy_spec p;

		fatelf_diag_clear(&d);
		ck_assert_msg(engine_policy_spec_parse(texts[i], &p, &d) == 0, "%s: %s", texts[i], d.msg);
		ck_assert_int_eq(engine_policy_spec_format(&p, buf, sizeof(buf)), (int)strlen(texts[i]));
		ck_assert_str_eq(buf, texts[i]);
		engine_policy_spec_done(&p);
		ck_assert_int_eq(p.ntargets, 0);
	}

	/* spaces and extra commas are accepted, the stored form is canonical */
	engine_policy_spec p;
	ck_assert_int_eq(engine_policy_spec_parse("targets: x86_64 ,, i386\taarch64,", &p, &d), 0);
	ck_assert_int_eq(p.policy, ENGINE_POLICY_TARGETS);
	ck_assert_uint_eq(p.ntargets, 3);
	ck_assert_str_eq(p.targets[2], "aarch64");
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, sizeof(buf)), 27);
	ck_assert_str_eq(buf, "targets:x86_64,i386,aarch64");

	/* too small a buffer */
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, 27), -ENOSPC);
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, 28), 27);
	engine_policy_spec_done(&p);
	p = spec(ENGINE_POLICY_COMPATIBLE);
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, 10), -ENOSPC);
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, 11), 10);
	p = spec(ENGINE_POLICY_TARGETS);
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, sizeof(buf)), -ENGINE_E_POLICY);
	p = spec(9);
	ck_assert_int_eq(engine_policy_spec_format(&p, buf, sizeof(buf)), -ENGINE_E_POLICY);
}
END_TEST

START_TEST(test_spec_parse_errors)
{
	static const struct { const char *text, *msg; } bad[] = {
		{ "", "unknown policy '' (native, compatible, keep or targets)" },
		{ "thin", "unknown policy 'thin' (native, compatible, keep or targets)" },
		{ "Native", "unknown policy 'Native' (native, compatible, keep or targets)" },
		{ "native:x86_64", "policy native takes no target list" },
		{ "targets", "policy targets needs at least one target name" },
		{ "targets:", "policy targets needs at least one target name" },
		{ "targets: , ", "policy targets needs at least one target name" },
		{ "targets:x86_64,vax11", NULL },
		{ "averyveryverylongpolicyname", NULL },
	};
	fatelf_diag d;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		engine_policy_spec p = { .policy = 77 };

		fatelf_diag_clear(&d);
		ck_assert_msg(engine_policy_spec_parse(bad[i].text, &p, &d) == -ENGINE_E_POLICY,
			      "'%s' parsed", bad[i].text);
		ck_assert_int_eq(d.code, -ENGINE_E_POLICY);
		if (bad[i].msg)
			ck_assert_str_eq(d.msg, bad[i].msg);
		/* left untouched */
		ck_assert_int_eq(p.policy, 77);
		ck_assert_uint_eq(p.ntargets, 0);
	}
	engine_policy_spec p;
	ck_assert_int_eq(engine_policy_spec_parse("targets:x86_64,vax11", &p, &d), -ENGINE_E_POLICY);
	ck_assert_msg(strncmp(d.msg, "target name 'vax11': ", 21) == 0, "%s", d.msg);
	ck_assert_int_eq(engine_policy_spec_parse("targets:x86_64,a", &p, &d), -ENGINE_E_POLICY);
	ck_assert_str_eq(d.msg, "target name 'a': unknown field 'a'");
	/* 16 is the most */
	ck_assert_int_eq(engine_policy_spec_parse(
		"targets:x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,"
		"x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,i386,aarch64", &p, &d), -ENGINE_E_POLICY);
	ck_assert_str_eq(d.msg, "more than 16 targets");
	ck_assert_int_eq(engine_policy_spec_parse(
		"targets:x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,"
		"x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,x86_64,i386", &p, &d), 0);
	ck_assert_uint_eq(p.ntargets, 16);
	engine_policy_spec_done(&p);
}
END_TEST

/* A real FatELF of aarch64 (64 KiB aligned), x86_64 and i386 images, its
 * manifest entry, and the entry's header. */
typedef struct fat_fixture {
	uint8_t *bytes;
	size_t len;
	fatelf_header hdr;
	fatelf_bundle_record recs[3];
	fatelf_bundle_entry e;
} fat_fixture;

static void fat_make(fat_fixture *x)
{
	static const struct { uint16_t m; uint8_t w; uint64_t size, align; } spec[] = {
		{ EM_AARCH64, C64, 70000, 65536 }, { EM_X86_64, C64, 9000, 0 }, { EM_386, C32, 5000, 0 },
	};
	elfgen_image imgs[3];
	uint8_t *own[3];

	memset(x, 0, sizeof(*x));
	for (int i = 0; i < 3; i++) {
		elfgen_opts o;

		elfgen_defaults(&o, spec[i].m, spec[i].w, LE);
		o.size = spec[i].size;
		o.seed = (uint32_t)i + 1;
		o.p_align = spec[i].align ? spec[i].align : 4096;
		own[i] = elfgen_make(&o, &imgs[i].len);
		ck_assert_ptr_nonnull(own[i]);
		imgs[i].data = own[i];
		imgs[i].align = spec[i].align;
	}
	x->bytes = elfgen_fat(imgs, 3, &x->len, &x->hdr);
	ck_assert_ptr_nonnull(x->bytes);
	for (int i = 0; i < 3; i++)
		free(own[i]);

	x->e.path = (char *)"opt/x/bin/x";
	x->e.type = FATELF_ENTRY_FILE;
	x->e.mode = 0755;
	x->e.size = x->len;
	x->e.kind = FATELF_KIND_FATELF;
	x->e.nrecords = x->hdr.nrecords;
	x->e.header_size = (uint32_t)FATELF_TABLE_SIZE(x->hdr.nrecords);
	x->e.records = x->recs;
	for (unsigned i = 0; i < x->hdr.nrecords; i++) {
		x->recs[i].target = x->hdr.records[i].target;
		x->recs[i].offset = x->hdr.records[i].offset;
		x->recs[i].size = x->hdr.records[i].size;
	}
}

START_TEST(test_entry_header)
{
	fat_fixture x;
	fatelf_header h, want;
	fatelf_diag d;
	uint8_t a[FATELF_TABLE_SIZE(3)], b[FATELF_TABLE_SIZE(3)];

	fat_make(&x);
	ck_assert_uint_eq(x.hdr.nrecords, 3);
	fatelf_diag_clear(&d);
	ck_assert_int_eq(engine_entry_header(&x.e, &h, &d), 0);
	/* the same table as the file's own bytes */
	ck_assert_int_eq(fatelf_header_decode(x.bytes, x.len, &want, &d), 0);
	ck_assert_int_eq(fatelf_header_encode(&h, a, sizeof(a)), (ssize_t)sizeof(a));
	ck_assert_int_eq(fatelf_header_encode(&want, b, sizeof(b)), (ssize_t)sizeof(b));
	ck_assert_mem_eq(a, b, sizeof(a));
	ck_assert_mem_eq(a, x.bytes, sizeof(a));

	/* not a FatELF entry */
	x.e.kind = FATELF_KIND_ELF;
	ck_assert_int_eq(engine_entry_header(&x.e, &h, &d), -FATELF_E_INVALID);
	x.e.kind = FATELF_KIND_FATELF;
	x.e.nrecords = 0;
	ck_assert_int_eq(engine_entry_header(&x.e, &h, &d), -FATELF_E_RECORDS);
	x.e.nrecords = 3;
	/* the table rules hold for the manifest's records too */
	x.recs[1].offset += 8;
	ck_assert_int_eq(engine_entry_header(&x.e, &h, &d), -FATELF_E_ALIGN);
	x.recs[1].offset -= 8;
	x.e.size = x.recs[2].offset + x.recs[2].size - 1;
	ck_assert_int_eq(engine_entry_header(&x.e, &h, &d), -FATELF_E_OUTSIDE);
	free(x.bytes);
}
END_TEST

static uint64_t file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

START_TEST(test_installed_size)
{
	static const struct { const char *host, *policy; } cases[] = {
		{ "x86_64", "native" }, { "x86_64", "compatible" },
		{ "aarch64", "native" }, { "i686", "compatible" },
		{ "riscv64", "targets:aarch64,i386" }, { "x86_64", "targets:x86_64" },
		{ "x86_64", "targets:aarch64,x86_64,i386" },
	};
	fat_fixture x;
	fatelf_diag d;
	uint64_t size;

	tu_tmpdir();
	fat_make(&x);
	tu_write_file("fat", x.bytes, x.len);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fatelf_host h = host(cases[i].host, 0);
		engine_policy_spec p;
		fatelf_header hdr;
		fatelf_keepset k;
		fatelf_plan plan;
		int form, r;

		fatelf_diag_clear(&d);
		ck_assert_int_eq(engine_policy_spec_parse(cases[i].policy, &p, &d), 0);
		ck_assert_int_eq(engine_entry_header(&x.e, &hdr, &d), 0);
		r = engine_policy_select(&p, NULL, 0, &h, "/opt/x/bin/x", &hdr, &k, &form, &d);
		ck_assert_msg(r == 1, "%s/%s: %d %s", cases[i].host, cases[i].policy, r, d.msg);
		ck_assert_int_eq(engine_installed_size(&x.e, 1, &k, form, &size, &d), 0);
		/* what the plan says ... */
		ck_assert_int_eq(fatelf_plan_make(&hdr, &k, form, &plan, &d), 0);
		ck_assert_uint_eq(size, plan.out_size);
		/* ... and what a real thin writes */
		ck_assert_int_eq(fatelf_thin("thin", "fat", &k, form, &d), 0);
		ck_assert_msg(file_size("thin") == size, "%s/%s: installed size %llu, thin wrote %llu",
			      cases[i].host, cases[i].policy, (unsigned long long)size,
			      (unsigned long long)file_size("thin"));
		if (fatelf_keep_count(&k) < 3)
			ck_assert_uint_lt(size, x.len);
		engine_policy_spec_done(&p);
	}

	/* kept as shipped: the shipped size, whatever the keep set says */
	fatelf_keepset none;
	fatelf_keep_clear(&none);
	ck_assert_int_eq(engine_installed_size(&x.e, 0, &none, FATELF_FORM_AUTO, &size, &d), 0);
	ck_assert_uint_eq(size, x.len);
	/* thinned to nothing is an error, and *ret is left alone */
	size = 12345;
	ck_assert_int_eq(engine_installed_size(&x.e, 1, &none, FATELF_FORM_AUTO, &size, &d),
			 -FATELF_E_EMPTY_KEEP);
	ck_assert_uint_eq(size, 12345);
	free(x.bytes);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_native_x86_64);
	tcase_add_test(tc, test_compatible_x86_64);
	tcase_add_test(tc, test_aarch64_hosts);
	tcase_add_test(tc, test_keep);
	tcase_add_test(tc, test_targets);
	tcase_add_test(tc, test_keep_fat_override);
	tcase_add_test(tc, test_no_host_record);
	tcase_add_test(tc, test_spec_round_trip);
	tcase_add_test(tc, test_spec_parse_errors);
	tcase_add_test(tc, test_entry_header);
	tcase_add_test(tc, test_installed_size);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(policy_suite());
}
