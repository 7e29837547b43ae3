/*
 * "Did you mean": the known name nearest to a word a user mistyped, a
 * verb or a package, by the Damerau-Levenshtein distance (optimal string
 * alignment: a swap of two neighbours is one edit, as typing makes them),
 * or the one name the word begins.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "fatelfctl.h"

/* Longer words are no typo of a verb or a package name worth the work. */
#define SUGGEST_MAX 64

static int lower(char c)
{
	return tolower((unsigned char)c);
}

/* The distance between a and b, letters compared without case (package
 * names are lowercase, and a capital is a typo too). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = lower(a[i - 1]) != lower(b[j - 1]);
			size_t v = d[i - 1][j] + 1;

			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
			    lower(a[i - 2]) == lower(b[j - 1]) && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

static bool is_prefix(const char *word, const char *name)
{
	size_t n = strlen(word);

	if (n == 0 || n >= strlen(name))
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(word[i]) != lower(name[i]))
			return false;
	return true;
}

const char *ctl_suggest(const char *word, const char *const *names, size_t n)
{
	/* Two edits of a short word make it any other short word: at most
	 * one edit below five letters. */
	size_t len = strlen(word), limit = len < 5 ? 1 : 2;
	const char *best = NULL, *prefixed = NULL;
	size_t best_d = SIZE_MAX, nprefixed = 0;

	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, names[i]);

		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
		if (is_prefix(word, names[i]) && (!prefixed || strcmp(prefixed, names[i]) != 0)) {
			prefixed = names[i];
			nprefixed++;
		}
	}
	/* A near name is a likelier meaning than a long one the word begins. */
	if (best && best_d <= limit)
		return best;
	return nprefixed == 1 && len >= 2 ? prefixed : NULL;
}
