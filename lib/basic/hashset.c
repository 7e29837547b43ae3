/* Open addressing over the caller's items (hashset.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashset.h"

struct hashset_slot {
	uint64_t hash;
	size_t item;                    /* the caller's index + 1; 0: free */
};

#define HASHSET_MIN 64

static void put(struct hashset_slot *v, size_t cap, uint64_t hash, size_t item1)
{
	size_t i = (size_t)hash & (cap - 1);

	while (v[i].item)
		i = (i + 1) & (cap - 1);
	v[i] = (struct hashset_slot){ .hash = hash, .item = item1 };
}

size_t hashset_find(const hashset *s, uint64_t hash, const void *key, hashset_eq_fn eq,
		    const void *userdata)
{
	if (s->n == 0)
		return HASHSET_NONE;
	for (size_t i = (size_t)hash & (s->cap - 1); s->v[i].item; i = (i + 1) & (s->cap - 1))
		if (s->v[i].hash == hash && eq(s->v[i].item - 1, key, userdata))
			return s->v[i].item - 1;
	return HASHSET_NONE;
}

int hashset_add(hashset *s, uint64_t hash, size_t item)
{
	if (item == HASHSET_NONE)
		return -EINVAL;
	/* Half full at most: a probe ends soon at a free slot. */
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : HASHSET_MIN;
		struct hashset_slot *v;

		if (cap < s->cap)
			return -ENOMEM;
		v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i].item)
				put(v, cap, s->v[i].hash, s->v[i].item);
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	put(s->v, s->cap, hash, item + 1);
	s->n++;
	return 0;
}

void hashset_clear(hashset *s)
{
	if (s->v)
		memset(s->v, 0, s->cap * sizeof(*s->v));
	s->n = 0;
}

void hashset_done(hashset *s)
{
	if (!s)
		return;
	free(s->v);
	*s = (hashset){ 0 };
}

uint64_t hashset_hash_str(const char *str)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)str; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

uint64_t hashset_hash_digest(const uint8_t sha[32])
{
	uint64_t h;

	memcpy(&h, sha, sizeof(h));
	return h;
}

int digest_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}
