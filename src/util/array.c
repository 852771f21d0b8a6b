/* SPDX-License-Identifier: GPL-2.0-or-later */
/* array.c - growable arrays. */
#include "util/smr.h"

#include <stdlib.h>

int smr_array_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t nc;
	void *q;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 256;
	if (nc < n + 1)
		nc = n + 1;
	if (size && nc > SIZE_MAX / size)
		return -ENOMEM;
	q = realloc(*p, nc * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}
