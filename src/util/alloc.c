/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* MADV_POPULATE_WRITE (Linux 5.14): before it, madvise() says EINVAL and nothing is done. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static bool prefault_enabled;

void heap_prefault_enable(void)
{
	prefault_enabled = true;
}

void heap_prefault(size_t bytes)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start, end;
	void *p;

	if (!prefault_enabled || bytes < HEAP_PREFAULT_MIN)
		return;
	if (bytes > HEAP_PREFAULT_MAX)
		bytes = HEAP_PREFAULT_MAX;
	/* From the top of the heap (nothing freed is this big yet), and back to it when freed:
	 * what is allocated next is carved from these pages. */
	p = malloc(bytes);
	if (!p)
		return;
	start = ((uintptr_t)p + page - 1) & ~(page - 1);
	end = ((uintptr_t)p + bytes) & ~(page - 1);
	if (end > start)
		(void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
	free(p);
}
