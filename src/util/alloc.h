/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Arrays that grow: doubled when full, the new part zeroed. And the heap of a command that runs
 * once, faulted in ahead of its first touches.
 */
#pragma once

#include <stddef.h>

/* Grow *array so that it can hold at least need elements. Returns 0 or -ENOMEM. */
int grow_array(void **array, size_t *allocated, size_t need, size_t elem_size);
#define GROW(array, allocated, need)                                                               \
	grow_array((void **)&(array), &(allocated), (need), sizeof(*(array)))

/*
 * A one-shot command's heap, faulted in with one madvise(MADV_POPULATE_WRITE) rather than a
 * page fault at each first touch: the audit of a large mount table touches some thousand fresh
 * pages of heap (its parsed table, the analysis's arrays, the report), and each fault costs
 * microseconds, ten in some virtual machines; the kernel fills them in one call for about
 * half as much each. heap_prefault(bytes) takes that much from the top of the heap, faults it
 * in and gives it back to the allocator, which (kept by main's mallopt(), never trimmed) hands
 * it out next. Nothing unless heap_prefault_enable() was called (main, for the one-shot commands,
 * with M_MMAP_THRESHOLD at 4 MiB: HEAP_PREFAULT_MAX stays below it) and bytes is at least
 * HEAP_PREFAULT_MIN.
 */
#define HEAP_PREFAULT_MIN (256u << 10)
#define HEAP_PREFAULT_MAX ((4u << 20) - (64u << 10))
void heap_prefault_enable(void);
void heap_prefault(size_t bytes);
