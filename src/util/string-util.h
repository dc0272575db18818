/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strings: comparison that takes NULL, copies, and formatting into a new string.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>

#include "util/macro.h"

/* ret = the string the variadic arguments after fmt make, or NULL when out of memory. */
#define FORMAT_VA(ret, fmt)                                                                        \
	do {                                                                                       \
		va_list _ap;                                                                       \
		va_start(_ap, fmt);                                                                \
		(ret) = vformat(fmt, _ap);                                                         \
		va_end(_ap);                                                                       \
	} while (0)
/* vasprintf() that returns the string, or NULL when out of memory. */
_printf_(1, 0) char *vformat(const char *fmt, va_list ap);
/* Replace *field with a newly formatted string (the old one is freed after: it may be an
 * argument). 0, or -ENOMEM with *field unchanged. */
_printf_(2, 3) int set_printf(char **field, const char *fmt, ...);

/* strdup that accepts NULL. */
char *strdup_or_null(const char *s);
/* *ret = strdup_or_null(s): 0, or -ENOMEM (*ret NULL) when s could not be copied. */
int strdup_or_null_to(const char *s, char **ret);

static inline bool streq(const char *a, const char *b)
{
	return a && b && __builtin_strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	return (!a && !b) || streq(a, b);
}
