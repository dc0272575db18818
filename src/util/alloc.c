/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

int grow_array(void **array, size_t *allocated, size_t need, size_t elem_size)
{
	size_t n;
	void *p;

	if (need <= *allocated)
		return 0;
	n = *allocated ? *allocated : 8;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem_size)
			return -ENOMEM;
		n *= 2;
	}
	p = realloc(*array, n * elem_size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *allocated * elem_size, 0, (n - *allocated) * elem_size);
	*array = p;
	*allocated = n;
	return 0;
}
