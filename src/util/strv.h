/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NULL-terminated lists of malloc'ed strings. NULL is the empty list: every
 * function accepts it. On failure a list is left as it was.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/macro.h"

/* Free every string and the list; returns NULL. */
char **strv_free(char **l);
static inline void strv_freep(char ***l)
{
	strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);
/* Append s, taking ownership of it (freed on failure too). 0 or -ENOMEM. */
int strv_push(char ***l, char *s);
/* Append a copy of s. 0 or -ENOMEM. */
int strv_extend(char ***l, const char *s);
