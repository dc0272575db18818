/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json-util.h"
#include "util/parse.h"

json_object *json_new_mode(mode_t mode)
{
	char buf[8];
	return json_object_new_string(format_mode(mode, buf));
}

json_object *json_new_devnum(dev_t dev)
{
	char buf[24];
	return json_object_new_string(format_devnum(dev, buf));
}

json_object *json_new_string_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static const char *json_text(json_object *o, int pretty, size_t *len)
{
	int flags =
	    JSON_C_TO_STRING_NOSLASHESCAPE |
	    (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);

	return json_object_to_json_string_length(o, flags, len);
}

json_object *json_new_array_sized(size_t n)
{
#if JSON_C_VERSION_NUM >= (15 << 8)
	return json_object_new_array_ext(n == 0 ? 1 : n < INT_MAX ? (int)n : INT_MAX);
#else
	(void)n;
	return json_object_new_array();
#endif
}

char *json_to_text(json_object *o, int pretty)
{
	size_t len;
	const char *s = json_text(o, pretty, &len);
	char *out;

	if (!s || !(out = malloc(len + 2)))
		return NULL;
	memcpy(out, s, len);
	out[len] = '\n';
	out[len + 1] = 0;
	return out;
}

int json_write(FILE *f, json_object *o, int pretty)
{
	size_t len;
	const char *s = json_text(o, pretty, &len);

	if (!s)
		return -ENOMEM;
	if (fwrite(s, 1, len, f) != len || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}
