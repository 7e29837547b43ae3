/*
 * Error codes and diagnostics: one strerror for errno and FATELF_E_* codes,
 * their symbolic names, and the fatelf_diag filler.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "macro.h"

struct code_text {
	const char *name;
	const char *text;
};

static const struct code_text codes[FATELF_E_MAX - FATELF_E_BASE] = {
#define C(id, t) [FATELF_E_##id - FATELF_E_BASE] = { "FATELF_E_" #id, t }
	C(SHORT, "file is shorter than the FatELF header"),
	C(MAGIC, "not a FatELF file (bad magic)"),
	C(VERSION, "unsupported FatELF version"),
	C(HDR_RESERVED, "header reserved byte is not zero"),
	C(NO_RECORDS, "record count is zero"),
	C(TABLE_TRUNCATED, "record table does not fit in the file"),
	C(REC_RESERVED, "record reserved bytes are not zero"),
	C(WORD_SIZE, "invalid word size"),
	C(BYTE_ORDER, "invalid byte order"),
	C(OVERFLOW, "record offset + size overflows"),
	C(OUTSIDE, "record extends past the end of the file"),
	C(TOO_SMALL, "record is smaller than an ELF header"),
	C(OVERLAP_TABLE, "record overlaps the header table"),
	C(ALIGN, "record offset is not aligned"),
	C(4GIB, "32-bit record ends above 4 GiB"),
	C(OVERLAP, "records overlap"),
	C(DUPLICATE, "two records have the same target"),
	C(ELF_MAGIC, "record is not an ELF image"),
	C(ELF_CLASS, "ELF class differs from the record's word size"),
	C(ELF_DATA, "ELF data encoding differs from the record's byte order"),
	C(ELF_VERSION, "unsupported ELF version"),
	C(ELF_MACHINE, "ELF machine differs from the record's machine"),
	C(ELF_OSABI, "ELF OS ABI differs from the record's osabi"),
	C(ELF_ABIVERSION, "ELF ABI version differs from the record's osabi_version"),
	C(ELF_EHSIZE, "invalid ELF header size"),
	C(PH_ENTSIZE, "invalid program header entry size"),
	C(PH_TABLE, "program header table lies outside the record"),
	C(SEGMENT, "loadable segment lies outside the record"),
	C(TARGET_SYNTAX, "invalid target name"),
	C(NO_MATCH, "no record matches the target"),
	C(AMBIGUOUS, "several records match the target"),
	C(NOT_ELF, "not an ELF file"),
	C(TOO_MANY, "too many records (at most 255)"),
	C(NO_HOST_RECORD, "no record runs on this host"),
	C(STREAM_TRUNCATED, "input ended before the last record"),
	C(STREAM_STATE, "stream used after it ended or failed"),
	C(EMPTY_KEEP, "nothing selected to keep"),
	C(INVALID, "invalid argument"),
	C(KEY_FORMAT, "not a minisign Ed25519 key"),
	C(KEY_PASSWORD, "wrong password for the secret key"),
	C(SIG_FORMAT, "not a minisign signature"),
	C(SIG_ALGORITHM, "legacy (non-prehashed) signatures are not accepted"),
	C(SIG_KEY, "signed by a key that is not trusted"),
	C(SIG_INVALID, "signature verification failed"),
	C(SIG_COMMENT, "trusted comment signature verification failed"),
	C(SIG_MISSING, "the bundle is not signed"),
	C(MANIFEST_JSON, "manifest is not valid JSON"),
	C(MANIFEST_TOO_BIG, "manifest is too large"),
	C(MANIFEST_SCHEMA, "manifest does not follow the schema"),
	C(MANIFEST_FORMAT, "unsupported bundle format version"),
	C(PKG_NAME, "invalid package name"),
	C(PKG_VERSION, "invalid package version"),
	C(PATH_ABSOLUTE, "absolute path"),
	C(PATH_DOTDOT, "path with a '..' component"),
	C(PATH_INVALID, "invalid path"),
	C(PATH_DUPLICATE, "duplicate path"),
	C(PATH_SYMLINK, "path passes through a symlink of the bundle"),
	C(PATH_PARENT, "parent directory is not in the bundle"),
	C(MODE, "invalid or undeclared setuid/setgid mode"),
	C(LIMIT, "a bundle limit is exceeded"),
	C(RECORDS, "FatELF records disagree with the manifest"),
	C(ARCHIVE, "damaged or truncated archive"),
	C(MEMBER_ORDER, "fatbundle.json is not the first member"),
	C(MEMBER_UNKNOWN, "member not listed in the manifest"),
	C(MEMBER_MISSING, "entry has no member in the archive"),
	C(MEMBER_DUPLICATE, "duplicate member"),
	C(MEMBER_TYPE, "member type not allowed or not as listed"),
	C(MEMBER_SIZE, "member size differs from the manifest"),
	C(HASH, "SHA-256 mismatch"),
	C(RECORD_HASH, "FatELF record SHA-256 mismatch"),
	C(DEB_FORMAT, "not a valid .deb package"),
	C(DEB_CONTROL, "invalid .deb control file"),
	C(UNIFY_TYPE, "entry types differ across sources"),
	C(UNIFY_MISSING, "path missing in some sources"),
	C(UNIFY_MODE, "modes differ across sources"),
	C(UNIFY_SYMLINK, "symlink targets differ across sources"),
	C(UNIFY_DIFFERS, "file contents differ across sources"),
	C(UNIFY_TARGET, "two sources give the same target"),
	C(UNIFY_ARCH, "an ELF file's target is not its source's architecture"),
	C(UNIFY_FIELD, "package sources disagree on a control field"),
	C(UNIFY_SCRIPTS, "a package source has maintainer scripts"),
#undef C
#define E(id, t) [ENGINE_E_##id - FATELF_E_BASE] = { "ENGINE_E_" #id, t }
	E(CONFLICT, "the path belongs to another package or already exists"),
	E(DOWNGRADE, "the offered version is older than the installed one"),
	E(NOT_INSTALLED, "the package is not installed"),
	E(DISK_FULL, "not enough free disk space"),
	E(POLICY, "invalid policy or target list"),
	E(SETID, "setuid/setgid files may not be installed by this caller"),
	E(LOCKED, "another process holds the state directory"),
	E(DIR_UNSAFE, "an existing directory is owned or writable by someone other than root"),
	E(NAME_RESERVED, "an entry is named like the engine's temp files (.fatelf.*)"),
	E(HELD, "the package is held at its installed version"),
	E(DEPENDENCY_MISSING, "a dependency is neither installed nor in the transaction"),
	E(DEPENDENCY_BROKEN, "installed packages depend on the package"),
#undef E
#define C(id, t) [FATELF_E_##id - FATELF_E_BASE] = { "FATELF_E_" #id, t }
	C(REPO_FORMAT, "not a fatelf repository"),
	C(REPO_INDEX, "invalid repository index"),
	C(REPO_ROLLBACK, "the repository index is older than one already accepted"),
	C(REPO_EXPIRED, "the repository index has expired"),
	C(REPO_PACK, "invalid pack list"),
	C(REPO_OBJECT, "corrupt repository object"),
	C(REPO_MISSING, "the repository has no such file"),
	C(REPO_OCI, "not a fatelf artifact of an OCI registry"),
	C(REPO_LIMIT, "a registry's reply is larger than its bound"),
	C(REPO_MISMATCH, "the repository index is another repository's"),
#undef C
};

static const struct code_text *lookup(int code)
{
	if (code < 0)
		code = -code;
	if (code >= FATELF_E_BASE && code < FATELF_E_MAX)
		return &codes[code - FATELF_E_BASE];
	return NULL;
}

const char *fatelf_strerror(int code)
{
	const struct code_text *c = lookup(code);

	if (c)
		return c->text;
	return strerror(code < 0 ? -code : code);
}

const char *fatelf_error_name(int code)
{
	const struct code_text *c = lookup(code);

	if (c)
		return c->name;
	if (code < 0)
		code = -code;
	if (code == 0)
		return "OK";
	/* strerrorname_np is glibc 2.32+; Debian 12 has 2.36. */
	const char *n = strerrorname_np(code);
	return n ? n : "EUNKNOWN";
}

void fatelf_diag_clear(fatelf_diag *d)
{
	if (!d)
		return;
	memset(d, 0, sizeof(*d));
	d->record = -1;
}

int fatelf_diag_set(fatelf_diag *d, int code, int record, const char *fmt, ...)
{
	if (d) {
		va_list ap;

		d->code = code;
		d->record = record;
		d->has &= ~(unsigned)FATELF_DIAG_NAMED;
		va_start(ap, fmt);
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* The one wording of -ENOMEM, with or without a diag. */
static const char oom_text[] = "out of memory";

int fatelf_diag_oom(fatelf_diag *d)
{
	return fatelf_diag_set(d, -ENOMEM, -1, "%s", oom_text);
}

const char *fatelf_diag_text(const fatelf_diag *d, int r)
{
	if (d && r != 0 && d->code == r && d->msg[0])
		return d->msg;
	if (r == -ENOMEM)
		return oom_text;
	return fatelf_strerror(r);
}

void fatelf_diag_names(fatelf_diag *d, const char *subject)
{
	if (!d)
		return;
	snprintf(d->subject, sizeof(d->subject), "%s", subject);
	d->has |= FATELF_DIAG_NAMED;
}

int fatelf_diag_at(fatelf_diag *d, int code, int record, const char *subject, const char *fmt, ...)
{
	if (d) {
		va_list ap;
		int n;

		d->code = code;
		d->record = record;
		snprintf(d->subject, sizeof(d->subject), "%s", subject);
		n = snprintf(d->msg, sizeof(d->msg), "%s: ", subject);
		if (n >= 0 && (size_t)n < sizeof(d->msg)) {
			va_start(ap, fmt);
			vsnprintf(d->msg + n, sizeof(d->msg) - (size_t)n, fmt, ap);
			va_end(ap);
		}
		d->has |= FATELF_DIAG_NAMED;
	}
	return code;
}

void fatelf_diag_fact(fatelf_diag *d, size_t offset, size_t size, const char *s)
{
	if (d && offset + size <= sizeof(*d) && size)
		snprintf((char *)d + offset, size, "%s", s ? s : "");
}

void fatelf_diag_add_target(fatelf_diag *d, const char *target)
{
	if (!d || !target || d->ntargets >= FATELF_DIAG_TARGETS_MAX)
		return;
	snprintf(d->targets[d->ntargets++], FATELF_DIAG_TARGET_MAX, "%s", target);
}

const char *fatelf_version(void)
{
	return PACKAGE_VERSION;
}
