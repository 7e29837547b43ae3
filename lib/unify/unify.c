/*
 * The unify rules (unify.h): a merge of the sources' sorted indexes, one
 * path at a time, in the manner of Mozilla's unify (identical files once,
 * a file missing or different in one tree an error), Chromium's
 * universalizer (modes and symlink targets must match) and
 * @electron/universal (an allow-list of single-arch files).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "macro.h"
#include "text.h"
#include "unify.h"

static const struct {
	const char *arch[3];
	const char *triplet;
} triplets[] = {
	{ { "amd64", "x86_64" }, "x86_64-linux-gnu" },
	{ { "arm64", "aarch64" }, "aarch64-linux-gnu" },
	{ { "armhf", "arm" }, "arm-linux-gnueabihf" },
	{ { "armel" }, "arm-linux-gnueabi" },
	{ { "i386", "i686", "i486" }, "i386-linux-gnu" },
	{ { "riscv64" }, "riscv64-linux-gnu" },
	{ { "ppc64el", "ppc64le", "powerpc64le" }, "powerpc64le-linux-gnu" },
	{ { "ppc64", "powerpc64" }, "powerpc64-linux-gnu" },
	{ { "s390x" }, "s390x-linux-gnu" },
	{ { "mips64el" }, "mips64el-linux-gnuabi64" },
	{ { "mipsel" }, "mipsel-linux-gnu" },
	{ { "loong64", "loongarch64" }, "loongarch64-linux-gnu" },
	{ { "x32" }, "x86_64-linux-gnux32" },
};

const char *fatelf_unify_triplet(const char *arch)
{
	if (!arch)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(triplets); i++)
		for (size_t k = 0; k < ARRAY_SIZE(triplets[i].arch) && triplets[i].arch[k]; k++)
			if (strcmp(arch, triplets[i].arch[k]) == 0)
				return triplets[i].triplet;
	return NULL;
}

/* path has triplet as one whole component */
static bool has_component(const char *path, const char *triplet)
{
	size_t tl = strlen(triplet);

	for (const char *p = path; (p = strstr(p, triplet)); p++)
		if ((p == path || p[-1] == '/') && (p[tl] == 0 || p[tl] == '/'))
			return true;
	return false;
}

static const char *type_word(int type)
{
	return type == FATELF_ENTRY_DIR ? "a directory" : type == FATELF_ENTRY_SYMLINK ? "a symlink" : "a file";
}

struct plan {
	const fatelf_unify_source *src;
	size_t n;
	const char *const *globs;
	size_t nglobs;
	fatelf_diag *d;
};

static const fatelf_unify_item *item_of(const struct plan *p, const fatelf_unify_decision *x, size_t s)
{
	return x->item[s] == FATELF_UNIFY_NONE ? NULL : &p->src[s].items[x->item[s]];
}

static int fail(const struct plan *p, int code, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(const struct plan *p, int code, const char *path, const char *fmt, ...)
{
	char msg[400], q[FATELF_TEXT_QUOTE_BUF];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The entry is the subject; the message names it too, once. */
	fatelf_diag_set(p->d, code, -1, "entry '%s': %s", fatelf_text_quote(path, q), msg);
	fatelf_diag_names(p->d, path);
	return code;
}

static bool per_arch_glob(const struct plan *p, const char *path)
{
	for (size_t i = 0; i < p->nglobs; i++)
		if (p->globs[i] && fnmatch(p->globs[i], path, 0) == 0)
			return true;
	return false;
}

/* The sources (by ARCH) whose slot in x is (missing ? empty : set), as
 * "arm64, armhf". */
static const char *arch_list(const struct plan *p, const fatelf_unify_decision *x, bool missing, char *buf,
			     size_t size)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t s = 0; s < p->n && o < size; s++)
		if ((x->item[s] == FATELF_UNIFY_NONE) == missing)
			o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? ", " : "", p->src[s].arch);
	return buf;
}

/* Every source's item of x is stored: its bytes count once, and it is
 * one more of *count (when not NULL). */
static void count_each(const struct plan *p, const fatelf_unify_decision *x, size_t *count,
		       fatelf_unify_stats *st)
{
	for (size_t s = 0; s < p->n; s++) {
		const fatelf_unify_item *it = item_of(p, x, s);

		if (!it)
			continue;
		if (count)
			(*count)++;
		st->bytes_in += it->size;
		st->bytes_once += it->size;
	}
}

static int decide(const struct plan *p, fatelf_unify_decision *x, fatelf_unify_stats *st)
{
	const fatelf_unify_item *first = NULL;
	size_t fs = 0, present = 0;
	char a[256], b[256];
	bool all_elf = true, same = true;

	for (size_t s = 0; s < p->n; s++) {
		const fatelf_unify_item *it = item_of(p, x, s);

		if (!it)
			continue;
		present++;
		if (!first) {
			first = it;
			fs = s;
			continue;
		}
		if (it->type != first->type)
			return fail(p, -FATELF_E_UNIFY_TYPE, x->path, "%s in %s, %s in %s (the entry types must agree)",
				    type_word(first->type), p->src[fs].arch, type_word(it->type), p->src[s].arch);
	}
	if (first->type == FATELF_ENTRY_DIR) {
		for (size_t s = fs + 1; s < p->n; s++) {
			const fatelf_unify_item *it = item_of(p, x, s);

			if (it && it->mode != first->mode)
				return fail(p, -FATELF_E_UNIFY_MODE, x->path,
					    "mode %04o in %s, %04o in %s (modes must agree)", first->mode,
					    p->src[fs].arch, it->mode, p->src[s].arch);
		}
		x->kind = FATELF_UNIFY_DIR;
		st->dirs++;
		return 0;
	}
	if (present < p->n) {
		for (size_t s = 0; s < p->n; s++)
			if (x->item[s] != FATELF_UNIFY_NONE && !per_arch_glob(p, x->path) &&
			    !(p->src[s].triplet && has_component(x->path, p->src[s].triplet)))
				return fail(p, -FATELF_E_UNIFY_MISSING, x->path,
					    "in %s, missing in %s (a path in some sources only needs --per-arch or the source's own multiarch triplet)",
					    arch_list(p, x, false, a, sizeof(a)), arch_list(p, x, true, b, sizeof(b)));
		x->kind = FATELF_UNIFY_PER_ARCH;
		count_each(p, x, &st->per_arch, st);
		return 0;
	}
	for (size_t s = 1; s < p->n; s++) {
		const fatelf_unify_item *it = item_of(p, x, s);

		if (first->type == FATELF_ENTRY_SYMLINK) {
			if (strcmp(it->link ? it->link : "", first->link ? first->link : "") != 0)
				return fail(p, -FATELF_E_UNIFY_SYMLINK, x->path,
					    "a symlink to '%s' in %s, to '%s' in %s (symlink targets must agree)",
					    fatelf_text_quote(first->link ? first->link : "", a), p->src[0].arch,
					    fatelf_text_quote(it->link ? it->link : "", b), p->src[s].arch);
			continue;
		}
		if (it->mode != first->mode)
			return fail(p, -FATELF_E_UNIFY_MODE, x->path, "mode %04o in %s, %04o in %s (modes must agree)",
				    first->mode, p->src[0].arch, it->mode, p->src[s].arch);
		if (it->size != first->size || memcmp(it->sha256, first->sha256, 32) != 0)
			same = false;
	}
	if (first->type == FATELF_ENTRY_SYMLINK || same) {
		x->kind = FATELF_UNIFY_SHARED;
		st->shared++;
		st->bytes_in += first->size * p->n;
		st->bytes_once += first->size;
		return 0;
	}
	for (size_t s = 0; s < p->n; s++)
		all_elf = all_elf && item_of(p, x, s)->elf;
	if (all_elf) {
		for (size_t s = 0; s < p->n; s++)
			for (size_t t = s + 1; t < p->n; t++)
				if (memcmp(&item_of(p, x, s)->target, &item_of(p, x, t)->target,
					   sizeof(fatelf_target)) == 0) {
					char tn[FATELF_TARGET_NAME_MAX];

					fatelf_target_format(&item_of(p, x, s)->target, tn);
					return fail(p, -FATELF_E_UNIFY_TARGET, x->path,
						    "%s and %s both give an ELF file for %s (one record a target)",
						    p->src[s].arch, p->src[t].arch, tn);
				}
		x->kind = FATELF_UNIFY_GLUE;
		st->glued++;
		count_each(p, x, NULL, st);
		return 0;
	}
	if (per_arch_glob(p, x->path)) {
		x->kind = FATELF_UNIFY_PER_ARCH;
		count_each(p, x, &st->per_arch, st);
		return 0;
	}
	for (size_t s = 1; s < p->n; s++) {
		const fatelf_unify_item *it = item_of(p, x, s);

		if (it->size != first->size || memcmp(it->sha256, first->sha256, 32) != 0)
			return fail(p, -FATELF_E_UNIFY_DIFFERS, x->path,
				    "the bytes differ between %s and %s, and not all are ELF files (--per-arch allows it)",
				    p->src[0].arch, p->src[s].arch);
	}
	return fail(p, -FATELF_E_UNIFY_DIFFERS, x->path, "the bytes differ");
}

int fatelf_unify_plan(const fatelf_unify_source *src, size_t n, const char *const *per_arch,
		      size_t nper_arch, fatelf_unify_decision **ret, size_t *ret_n,
		      fatelf_unify_stats *stats, fatelf_diag *d)
{
	struct plan p = { .src = src, .n = n, .globs = per_arch, .nglobs = nper_arch, .d = d };
	size_t pos[FATELF_UNIFY_MAX_SOURCES] = { 0 }, cap = 0, count = 0;
	fatelf_unify_decision *v = NULL;
	fatelf_unify_stats st = { 0 };
	int r;

	fatelf_diag_clear(d);
	*ret = NULL;
	*ret_n = 0;
	if (n == 0 || n > FATELF_UNIFY_MAX_SOURCES)
		return fatelf_diag_set(d, -FATELF_E_INVALID, -1, "%zu sources; 1 to %d are allowed", n,
				       FATELF_UNIFY_MAX_SOURCES);
	for (size_t s = 0; s < n; s++)
		for (size_t i = 1; i < src[s].nitems; i++)
			if (strcmp(src[s].items[i - 1].path, src[s].items[i].path) >= 0)
				return fatelf_diag_set(d, -EINVAL, -1, "the index of %s is not sorted by path",
						       src[s].arch);
	for (;;) {
		const char *least = NULL;
		fatelf_unify_decision *x;

		for (size_t s = 0; s < n; s++)
			if (pos[s] < src[s].nitems &&
			    (!least || strcmp(src[s].items[pos[s]].path, least) < 0))
				least = src[s].items[pos[s]].path;
		if (!least)
			break;
		if (count == cap) {
			size_t c = cap ? cap * 2 : 256;
			fatelf_unify_decision *nv = reallocarray(v, c, sizeof(*v));

			if (!nv) {
				free(v);
				return fatelf_diag_oom(d);
			}
			v = nv;
			cap = c;
		}
		x = &v[count];
		memset(x, 0, sizeof(*x));
		x->path = least;
		for (size_t s = 0; s < FATELF_UNIFY_MAX_SOURCES; s++)
			x->item[s] = FATELF_UNIFY_NONE;
		for (size_t s = 0; s < n; s++)
			if (pos[s] < src[s].nitems && strcmp(src[s].items[pos[s]].path, least) == 0)
				x->item[s] = pos[s]++;
		r = decide(&p, x, &st);
		if (r < 0) {
			free(v);
			return r;
		}
		count++;
	}
	*ret = v;
	*ret_n = count;
	if (stats)
		*stats = st;
	return 0;
}
