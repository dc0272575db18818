/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/repair-tries.h"
#include "report/transitions.h"
#include "util/json-util.h"
#include "util/macro.h"

char *finding_try_key(const struct finding *f)
{
	_cleanup_free_ char *key = finding_key(f);
	const char *ev;
	char *k;

	if (!key)
		return NULL;
	ev = f->evidence ? json_object_to_json_string_ext(f->evidence, JSON_C_TO_STRING_PLAIN)
			 : "null";
	if (!ev || asprintf(&k, "%s\t%s", key, ev) < 0)
		return NULL;
	return k;
}

bool try_key_has_key(const char *try_key, const char *key)
{
	size_t n = strlen(key);

	return strncmp(try_key, key, n) == 0 && try_key[n] == '\t';
}
