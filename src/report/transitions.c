/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/transitions.h"
#include "util/util.h"

static const char *const transition_names[_TRANSITION_MAX] = {
	[TRANSITION_DETECTED] = "detected",
	[TRANSITION_RESOLVED] = "resolved",
	[TRANSITION_REPAIRED] = "repaired",
	[TRANSITION_REPAIR_FAILED] = "repair-failed",
};

const char *transition_to_string(enum transition t)
{
	return t < _TRANSITION_MAX ? transition_names[t] : NULL;
}

char *finding_key(const struct finding *f)
{
	char *k;

	if (asprintf(&k, "%s\t%s\t%u", f->check->id, f->mountpoint ?: "",
		     f->n_mount_ids ? f->mount_ids[0] : 0) < 0)
		return NULL;
	return k;
}

bool finding_same_occurrence(const struct finding *x, const struct finding *y)
{
	json_object *ax, *ay;

	if (x->severity != y->severity)
		return false;
	if (!x->check->transition)
		return true;
	if (!json_object_object_get_ex(x->evidence, "after", &ax) ||
	    !json_object_object_get_ex(y->evidence, "after", &ay))
		return false;
	return json_object_equal(ax, ay);
}

static bool key_in(char *const *keys, size_t n, const char *key)
{
	for (size_t i = 0; keys && i < n; i++)
		if (streq(keys[i], key))
			return true;
	return false;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
}

static int findings_keys(const struct findings *f, char ***ret)
{
	char **keys = calloc(f->n_items ?: 1, sizeof(char *));

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_items; i++) {
		keys[i] = finding_key(&f->items[i]);
		if (!keys[i]) {
			free_keys(keys, i);
			return -ENOMEM;
		}
	}
	*ret = keys;
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
	char **keys_before = NULL, **keys_now = NULL;
	size_t n_quiet = 0;
	int r;

	r = findings_keys(before, &keys_before);
	if (r < 0)
		return r;
	r = findings_keys(now, &keys_now);
	if (r < 0) {
		free_keys(keys_before, before->n_items);
		return r;
	}
	while (quiet_keys && quiet_keys[n_quiet])
		n_quiet++;

	for (size_t i = 0; r >= 0 && i < before->n_items; i++)
		if (!key_in(keys_now, now->n_items, keys_before[i]) &&
		    !key_in(quiet_keys, n_quiet, keys_before[i]))
			r = transitions_add(ret, &before->items[i], TRANSITION_RESOLVED, NULL);

	for (size_t i = 0; r >= 0 && i < now->n_items; i++) {
		bool seen = false;

		for (size_t j = 0; !seen && j < before->n_items; j++)
			seen = streq(keys_now[i], keys_before[j]) &&
			       finding_same_occurrence(&now->items[i], &before->items[j]);
		if (!seen)
			r = transitions_add(ret, &now->items[i], TRANSITION_DETECTED, NULL);
	}

	free_keys(keys_before, before->n_items);
	free_keys(keys_now, now->n_items);
	return r;
}

void transitions_clear(struct transitions *t)
{
	free(t->items);
	*t = (struct transitions){ 0 };
}
