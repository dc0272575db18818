/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The names of an enum's values, in one table indexed by the value: NAME_table[]. The macros
 * define the lookups both ways, so that no enum writes them by hand:
 *
 *     static const char *const severity_table[_SEVERITY_MAX] = {
 *             [SEVERITY_INFO] = "info", ...
 *     };
 *     DEFINE_STRING_TABLE_LOOKUP(severity, enum severity);
 *
 * gives const char *severity_to_string(enum severity) (NULL beyond the table or for a hole in
 * it) and int severity_from_string(const char *) (the value, or -EINVAL).
 */
#pragma once

#include "util/macro.h"

/* The index of s in names[0..n) (a table of an enum's names), or -EINVAL. */
int string_table_index(const char *const *names, int n, const char *s);

#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                           \
	const char *name##_to_string(type i)                                                       \
	{                                                                                          \
		return (size_t)i < ELEMENTSOF(name##_table) ? name##_table[i] : NULL;              \
	}

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)                                         \
	int name##_from_string(const char *s)                                                      \
	{                                                                                          \
		return string_table_index(name##_table, (int)ELEMENTSOF(name##_table), s);         \
	}

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                                     \
	DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                           \
	DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)
