/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>

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

char *json_to_text(json_object *o, int pretty)
{
	int flags =
	    JSON_C_TO_STRING_NOSLASHESCAPE |
	    (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
	const char *s = json_object_to_json_string_ext(o, flags);
	char *out;

	if (!s || asprintf(&out, "%s\n", s) < 0)
		return NULL;
	return out;
}
