/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Arrays that grow: doubled when full, the new part zeroed.
 */
#pragma once

#include <stddef.h>

/* Grow *array so that it can hold at least need elements. Returns 0 or -ENOMEM. */
int grow_array(void **array, size_t *allocated, size_t need, size_t elem_size);
#define GROW(array, allocated, need)                                                               \
	grow_array((void **)&(array), &(allocated), (need), sizeof(*(array)))
