/*
 * Growing arrays.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* The first allocation's size, in elements. */
#define GROW_MIN 8

int fatelf_grow(void *p, size_t *cap, size_t need, size_t elsize)
{
	size_t ncap = *cap;
	void *old, *grown;

	if (need <= *cap)
		return 0;
	if (elsize == 0)
		return -EINVAL;
	if (ncap < GROW_MIN)
		ncap = GROW_MIN;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	/* Doubling past what a size_t counts in bytes: the least that fits. */
	if (ncap > SIZE_MAX / elsize)
		ncap = need;
	if (ncap > SIZE_MAX / elsize)
		return -ENOMEM;
	/* The pointer is copied as bytes: p may point at any object pointer
	 * type, which is not a void * to the compiler's aliasing rules. */
	memcpy(&old, p, sizeof(old));
	grown = realloc(old, ncap * elsize);
	if (!grown)
		return -ENOMEM;
	memcpy(p, &grown, sizeof(grown));
	*cap = ncap;
	return 0;
}
