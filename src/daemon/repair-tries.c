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
	_cleanup_free_ char *key = finding_key(f), *ev = finding_evidence_text(f);
	char *k;

	if (!key || !ev || asprintf(&k, "%s\t%s", key, ev) < 0)
		return NULL;
	return k;
}

bool try_key_has_key(const char *try_key, const char *key)
{
	size_t n = strlen(key);

	return strncmp(try_key, key, n) == 0 && try_key[n] == '\t';
}
