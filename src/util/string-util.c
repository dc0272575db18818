/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/string-util.h"

char *vformat(const char *fmt, va_list ap)
{
	char *s;

	return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

int set_printf(char **field, const char *fmt, ...)
{
	free(*field);
	FORMAT_VA(*field, fmt);
	return *field ? 0 : -ENOMEM;
}

char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}
