/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/string-util.h"
#include "util/strv.h"

char **strv_free(char **l)
{
	for (char **p = l; p && *p; p++)
		free(*p);
	free(l);
	return NULL;
}

size_t strv_length(char *const *l)
{
	size_t n = 0;

	while (l && l[n])
		n++;
	return n;
}

bool strv_contains(char *const *l, const char *s)
{
	for (char *const *p = l; p && *p; p++)
		if (streq(*p, s))
			return true;
	return false;
}

int strv_push(char ***l, char *s)
{
	size_t n = strv_length(*l);
	char **p;

	if (!s)
		return -ENOMEM;
	p = realloc(*l, sizeof(char *) * (n + 2));
	if (!p) {
		free(s);
		return -ENOMEM;
	}
	p[n] = s;
	p[n + 1] = NULL;
	*l = p;
	return 0;
}

int strv_extend(char ***l, const char *s)
{
	return strv_push(l, strdup(s));
}
