/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "util/hashindex.h"

#define MIN_BITS 4

static void place(struct hash_index *x, uint32_t tag, uint32_t value)
{
	size_t s = hash_index_home_(x, tag);

	while (x->slots[s].value != 0)
		s = (s + 1) & x->mask;
	x->slots[s] = (struct hash_index_slot){ .tag = tag, .value = value };
}

/* Kept at most half full, so that probe sequences stay short and an empty slot always exists.
 * Growing walks the old slots from an empty one on: no run of occupied slots is split by the
 * wrap-around, so entries of one tag keep their order (the oldest first) in the new slots. */
static int resize(struct hash_index *x, size_t want)
{
	struct hash_index_slot *old = x->slots;
	size_t old_cap = old ? x->mask + 1 : 0;
	unsigned bits = MIN_BITS;
	size_t cap;

	while (bits < 32 && ((size_t)1 << bits) < want * 2)
		bits++;
	cap = (size_t)1 << bits;
	if (cap <= old_cap)
		return 0;
	if (cap / 2 < want)
		return -E2BIG;
	x->slots = calloc(cap, sizeof(*x->slots));
	if (!x->slots) {
		x->slots = old;
		return -ENOMEM;
	}
	x->mask = cap - 1;
	x->shift = 32 - bits;
	if (old_cap > 0) {
		size_t start = 0;

		while (old[start].value != 0)
			start++;
		for (size_t k = 1; k <= old_cap; k++) {
			const struct hash_index_slot *o = &old[(start + k) & (old_cap - 1)];

			if (o->value != 0)
				place(x, o->tag, o->value);
		}
	}
	free(old);
	return 0;
}

int hash_index_reserve(struct hash_index *x, size_t n)
{
	return resize(x, n);
}

int hash_index_add(struct hash_index *x, uint64_t hash, size_t value)
{
	int r;

	if (value >= UINT32_MAX)
		return -E2BIG;
	if (!x->slots || (x->n + 1) * 2 > x->mask + 1) {
		r = resize(x, x->n + 1);
		if (r < 0)
			return r;
	}
	place(x, hash_index_tag_(hash), (uint32_t)value + 1);
	x->n++;
	return 0;
}

void hash_index_set(struct hash_index *x, const struct hash_cursor *c, size_t value)
{
	/* value is below UINT32_MAX like every position added (the caller's positions). */
	x->slots[c->slot].value = (uint32_t)value + 1;
}

void hash_index_done(struct hash_index *x)
{
	free(x->slots);
	*x = (struct hash_index){ 0 };
}

uint64_t hash_path(const char *path, size_t len, uint64_t seed)
{
	return hash_path_finish(hash_path_feed(hash_path_start(seed), path, len));
}
