/*
 * The host: which machine/class/byte-order combinations this machine runs,
 * natively or as a compatible target (i386 on x86_64, AArch32 on some
 * aarch64 CPUs), and the kernel's rule for picking a FatELF record. The
 * installer's "native" and "compatible" policies and fatelf-run all go
 * through here, so that what they choose is what a FatELF-aware kernel
 * would run.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/utsname.h>

#include "fatelf.h"
#include "macro.h"

static void host_add(fatelf_target *list, unsigned *n, uint16_t machine, uint8_t word_size,
		     uint8_t byte_order)
{
	if (*n >= FATELF_HOST_MAX)
		return;
	list[*n] = (fatelf_target) {
		.machine = machine, .word_size = word_size, .byte_order = byte_order,
	};
	(*n)++;
}

#define NATIVE(m, w, o) host_add(h.native, &h.nnative, m, FATELF_CLASS##w, FATELF_DATA2##o)
#define COMPAT(m, w, o) host_add(h.compat, &h.ncompat, m, FATELF_CLASS##w, FATELF_DATA2##o)

static bool str_is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool str_has_suffix(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

int fatelf_host_from_uname(const char *machine, unsigned flags, fatelf_host *ret)
{
	fatelf_host h;
	const char *m = machine;

	if (!m || !ret || strlen(m) >= sizeof(h.uname_machine))
		return -FATELF_E_INVALID;
	/* whole-struct zero, padding too: callers may compare hosts bytewise */
	memset(&h, 0, sizeof(h));
	memcpy(h.uname_machine, m, strlen(m) + 1);

	if (str_is(m, "x86_64") || str_is(m, "amd64")) {
		NATIVE(62, 64, LSB);
		COMPAT(3, 32, LSB);
	} else if (str_is(m, "i386") || str_is(m, "i486") || str_is(m, "i586") ||
		   str_is(m, "i686")) {
		NATIVE(3, 32, LSB);
	} else if (str_is(m, "aarch64") || str_is(m, "arm64")) {
		NATIVE(183, 64, LSB);
		if (flags & FATELF_HOST_ARM32)
			COMPAT(40, 32, LSB);
	} else if (str_is(m, "aarch64_be")) {
		NATIVE(183, 64, MSB);
		if (flags & FATELF_HOST_ARM32)
			COMPAT(40, 32, MSB);
	} else if (str_is(m, "arm") || (str_has_prefix(m, "armv") && str_has_suffix(m, "l"))) {
		/* armv5tel, armv6l, armv7l, armv8l (an AArch32 process or
		 * kernel on a 64-bit CPU) */
		NATIVE(40, 32, LSB);
	} else if (str_is(m, "armeb") || (str_has_prefix(m, "armv") && str_has_suffix(m, "b"))) {
		NATIVE(40, 32, MSB);
	} else if (str_is(m, "s390x")) {
		NATIVE(22, 64, MSB);
		COMPAT(22, 32, MSB);
	} else if (str_is(m, "s390")) {
		NATIVE(22, 32, MSB);
	} else if (str_is(m, "ppc64")) {
		NATIVE(21, 64, MSB);
		COMPAT(20, 32, MSB);
	} else if (str_is(m, "ppc64le")) {
		/* Little-endian 64-bit Power kernels run no 32-bit code. */
		NATIVE(21, 64, LSB);
	} else if (str_is(m, "ppc") || str_is(m, "ppcle")) {
		if (str_is(m, "ppc"))
			NATIVE(20, 32, MSB);
		else
			NATIVE(20, 32, LSB);
	} else if (str_is(m, "riscv64")) {
		NATIVE(243, 64, LSB);
	} else if (str_is(m, "riscv32")) {
		NATIVE(243, 32, LSB);
	} else if (str_is(m, "loongarch64")) {
		NATIVE(258, 64, LSB);
	} else if (str_is(m, "mips64")) {
		NATIVE(8, 64, MSB);
		COMPAT(8, 32, MSB);
	} else if (str_is(m, "mips64el")) {
		NATIVE(8, 64, LSB);
		COMPAT(8, 32, LSB);
	} else if (str_is(m, "mips")) {
		NATIVE(8, 32, MSB);
	} else if (str_is(m, "mipsel")) {
		NATIVE(8, 32, LSB);
	} else if (str_is(m, "sparc64")) {
		NATIVE(43, 64, MSB);
		/* 32-bit SPARC code is EM_SPARC or, using v9 instructions,
		 * EM_SPARC32PLUS. */
		COMPAT(2, 32, MSB);
		COMPAT(18, 32, MSB);
	} else if (str_is(m, "sparc")) {
		NATIVE(2, 32, MSB);
		NATIVE(18, 32, MSB);
	} else if (str_is(m, "ia64")) {
		NATIVE(50, 64, LSB);
	} else if (str_is(m, "alpha")) {
		NATIVE(41, 64, LSB);
	} else if (str_is(m, "m68k")) {
		NATIVE(4, 32, MSB);
	} else {
		return -FATELF_E_INVALID;
	}
	*ret = h;
	return 0;
}

/*
 * Whether this aarch64 kernel runs AArch32 processes. A kernel built
 * without 32-bit support, or on a CPU without AArch32 at EL0, refuses the
 * PER_LINUX32 personality. The old personality is restored at once, so
 * the probe has no lasting effect.
 */
static bool host_runs_aarch32(void)
{
	int old = personality(0xffffffff);
	int r;

	if (old == -1)
		return false;
	r = personality(PER_LINUX32);
	if (r == -1)
		return false;
	(void)personality((unsigned long)old);
	return true;
}

int fatelf_host_detect(fatelf_host *ret)
{
	struct utsname u;
	char machine[sizeof(u.machine) + 2];
	unsigned flags = 0;

	if (uname(&u) < 0)
		return -errno;
	snprintf(machine, sizeof(machine), "%s", u.machine);

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* MIPS kernels report "mips"/"mips64" whatever their byte order. */
	if (str_is(machine, "mips") || str_is(machine, "mips64"))
		snprintf(machine, sizeof(machine), "%sel", u.machine);
#endif
	if (str_has_prefix(machine, "aarch64") && host_runs_aarch32())
		flags |= FATELF_HOST_ARM32;
	return fatelf_host_from_uname(machine, flags, ret);
}

int fatelf_host_runs(const fatelf_host *h, const fatelf_target *t)
{
	for (unsigned i = 0; i < h->nnative && i < FATELF_HOST_MAX; i++)
		if (h->native[i].machine == t->machine && h->native[i].word_size == t->word_size &&
		    h->native[i].byte_order == t->byte_order)
			return 2;
	for (unsigned i = 0; i < h->ncompat && i < FATELF_HOST_MAX; i++)
		if (h->compat[i].machine == t->machine && h->compat[i].word_size == t->word_size &&
		    h->compat[i].byte_order == t->byte_order)
			return 1;
	return 0;
}

/* The osabi part of the kernel's rule: a Linux kernel runs SYSV and Linux
 * ELF images, and only ABI version 0 of them. */
static bool host_osabi_ok(const fatelf_target *t)
{
	return (t->osabi == FATELF_OSABI_SYSV || t->osabi == FATELF_OSABI_LINUX) &&
	       t->osabi_version == 0;
}

/* Appends to buf[cap] at *len, stopping (with "...") when full. */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len + 1 >= cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *len) {
		*len = cap - 1;
		if (cap > 4)
			memcpy(buf + cap - 4, "...", 4);
		return;
	}
	*len += (size_t)n;
}

static void host_target_name(const fatelf_target *t, char buf[FATELF_TARGET_NAME_MAX])
{
	const char *a = fatelf_target_arch(t);

	if (a)
		snprintf(buf, FATELF_TARGET_NAME_MAX, "%s", a);
	else
		fatelf_target_format_fields(t, FATELF_WANT_MACHINE | FATELF_WANT_WORDSIZE |
					    FATELF_WANT_BYTEORDER, buf);
}

int fatelf_host_select(const fatelf_host *h, const fatelf_header *hdr, fatelf_diag *d)
{
	char msg[sizeof(((fatelf_diag *)0)->msg)];
	char name[FATELF_TARGET_NAME_MAX];
	size_t len = 0;

	for (int i = 0; i < hdr->nrecords; i++) {
		const fatelf_target *t = &hdr->records[i].target;

		if (fatelf_host_runs(h, t) > 0 && host_osabi_ok(t))
			return i;
	}

	append(msg, sizeof(msg), &len, "no record runs on this host (%s:",
	       h->uname_machine[0] ? h->uname_machine : "unknown");
	for (unsigned i = 0; i < h->nnative && i < FATELF_HOST_MAX; i++) {
		host_target_name(&h->native[i], name);
		append(msg, sizeof(msg), &len, "%s %s", i ? "," : "", name);
	}
	for (unsigned i = 0; i < h->ncompat && i < FATELF_HOST_MAX; i++) {
		host_target_name(&h->compat[i], name);
		append(msg, sizeof(msg), &len, "%s %s", i || h->nnative ? "," : "", name);
	}
	append(msg, sizeof(msg), &len, "); the file offers: ");
	if (d)
		d->ntargets = 0;
	for (int i = 0; i < hdr->nrecords; i++) {
		fatelf_target_format(&hdr->records[i].target, name);
		append(msg, sizeof(msg), &len, "%s%s", i ? ", " : "", name);
		fatelf_diag_add_target(d, name);
	}
	if (hdr->nrecords == 0)
		append(msg, sizeof(msg), &len, "nothing");
	return fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1, "%s", msg);
}

/* The "compatible" policy: here, beside select, so that the host module
 * uses the target module and never the other way round. */
int fatelf_keep_from_host(const fatelf_header *hdr, const fatelf_host *h,
			  fatelf_keepset *ret, fatelf_diag *d)
{
	fatelf_keepset k;

	fatelf_keep_clear(&k);
	for (int i = 0; i < hdr->nrecords; i++) {
		const fatelf_target *t = &hdr->records[i].target;

		if (fatelf_host_runs(h, t) > 0 &&
		    (t->osabi == FATELF_OSABI_SYSV || t->osabi == FATELF_OSABI_LINUX) &&
		    t->osabi_version == 0)
			fatelf_keep_add(&k, (unsigned)i);
	}
	if (fatelf_keep_count(&k) == 0) {
		/* The kernel's rule is the same test on each record, so select
		 * fails too, with the message that lists both sides. */
		int r = fatelf_host_select(h, hdr, d);

		return r < 0 ? r : fatelf_diag_set(d, -FATELF_E_NO_HOST_RECORD, -1,
						   "no record runs on this host");
	}
	*ret = k;
	return (int)fatelf_keep_count(&k);
}
