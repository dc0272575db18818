/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
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
	char *s;

	/* Formatted before the old value is freed: it may be one of the arguments. */
	FORMAT_VA(s, fmt);
	if (!s)
		return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int strdup_or_null_to(const char *s, char **ret)
{
	*ret = strdup_or_null(s);
	return s && !*ret ? -ENOMEM : 0;
}
