/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "util/string-table.h"
#include "util/string-util.h"

int string_table_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (names[i] && streq(s, names[i]))
			return i;
	return -EINVAL;
}
