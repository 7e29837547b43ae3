/*
 * Growing arrays: one place that grows a malloc'd array to hold a given
 * number of elements, doubling so that appending n elements costs O(n),
 * refusing a size whose byte count would overflow, and leaving the array
 * as it was when memory runs out.
 */
#ifndef FATELF_ARRAY_H
#define FATELF_ARRAY_H

#include <stddef.h>

/*
 * Makes *p (an array of *cap elements of elsize bytes, or NULL with *cap
 * 0) hold at least need elements: 0 with *p and *cap updated, or -ENOMEM
 * (also for a byte count over SIZE_MAX) with both untouched. Never
 * shrinks; new elements are not initialised. p is the address of any
 * object pointer (void ** only in name: it is read and written as bytes).
 */
int fatelf_grow(void *p, size_t *cap, size_t need, size_t elsize);

/* The usual call: GROW_ARRAY(list, cap, n + 1). */
#define GROW_ARRAY(ptr, cap, need) fatelf_grow(&(ptr), &(cap), (need), sizeof(*(ptr)))

#endif
