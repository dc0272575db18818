/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/transitions.h"
#include "util/alloc.h"
#include "util/json-util.h"
#include "util/string-table.h"
#include "util/string-util.h"
#include "util/strv.h"

static const char *const transition_table[_TRANSITION_MAX] = {
	[TRANSITION_DETECTED] = "detected",
	[TRANSITION_RESOLVED] = "resolved",
	[TRANSITION_REPAIRED] = "repaired",
	[TRANSITION_REPAIR_FAILED] = "repair-failed",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(transition, enum transition);

/* The keys of f's findings, in order, as a NULL-terminated list. */
static int findings_keys(const struct findings *f, char ***ret)
{
	_cleanup_strv_free_ char **keys = NULL;

	FOREACH_ARRAY (i, f->items, f->n_items) {
		char *k = finding_key(i);

		if (!k || strv_push(&keys, k) < 0)
			return -ENOMEM;
	}
	if (!keys && !(keys = calloc(1, sizeof(char *))))
		return -ENOMEM;
	*ret = TAKE_PTR(keys);
	return 0;
}

int transitions_add(struct transitions *t, const struct finding *f, enum transition transition,
		    const char *detail)
{
	if (GROW(t->items, t->allocated, t->n_items + 1) < 0)
		return -ENOMEM;
	t->items[t->n_items++] = (struct transition_event){
		.finding = f,
		.transition = transition,
		.detail = detail,
	};
	return 0;
}

int transitions_diff(const struct findings *before, const struct findings *now,
		     char *const *quiet_keys, struct transitions *ret)
{
	_cleanup_strv_free_ char **keys_before = NULL, **keys_now = NULL;
	int r;

	r = findings_keys(before, &keys_before);
	if (r >= 0)
		r = findings_keys(now, &keys_now);

	for (size_t i = 0; r >= 0 && i < before->n_items; i++)
		if (!strv_contains(keys_now, keys_before[i]) &&
		    !strv_contains(quiet_keys, keys_before[i]))
			r = transitions_add(ret, &before->items[i], TRANSITION_RESOLVED, NULL);

	for (size_t i = 0; r >= 0 && i < now->n_items; i++) {
		bool seen = false;

		for (size_t j = 0; !seen && j < before->n_items; j++)
			seen = streq(keys_now[i], keys_before[j]) &&
			       finding_same_occurrence(&now->items[i], &before->items[j]);
		if (!seen)
			r = transitions_add(ret, &now->items[i], TRANSITION_DETECTED, NULL);
	}
	return r;
}

void transitions_done(struct transitions *t)
{
	free(t->items);
	*t = (struct transitions){ 0 };
}
