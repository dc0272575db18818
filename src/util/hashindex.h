/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An open-addressing index from a 64-bit hash to array positions: the one
 * hash table of ptsguard. The caller keeps the keys in its own array and
 * gives the hash of each (hash_path(), hash_u64()); the index keeps, per
 * slot, 32 bits of that hash and the position, 8 bytes in all. A lookup
 * walks the positions added under a hash, the oldest first, and the caller
 * compares its keys: different keys may share a hash, and a key may be
 * added more than once (hash_index_set() replaces instead). No removal.
 * Positions must be below UINT32_MAX (-E2BIG otherwise).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HASH_INDEX_NONE ((size_t)-1)

struct hash_index_slot {
	uint32_t tag;	/* the hash folded to 32 bits; where the slot lies derives from it */
	uint32_t value; /* position + 1; 0 = empty */
};

struct hash_index {
	struct hash_index_slot *slots;
	size_t n, mask;
	unsigned shift; /* 32 - log2(capacity) */
};

/* A place in the walk of one hash: zero-initialise it, { 0 }, before the first step. */
struct hash_cursor {
	size_t slot;
	bool started;
};

/* Make room for n positions in all (the index grows by itself too). 0 or -ENOMEM. */
int hash_index_reserve(struct hash_index *x, size_t n);
/* Add position value under hash. 0, -ENOMEM or -E2BIG. */
int hash_index_add(struct hash_index *x, uint64_t hash, size_t value);
/* Replace the position the cursor was last given by hash_index_next(). */
void hash_index_set(struct hash_index *x, const struct hash_cursor *c, size_t value);
/* Free the slots; the index is empty and usable again. */
void hash_index_done(struct hash_index *x);

/* The hash folded to the 32 bits a slot keeps. */
static inline uint32_t hash_index_tag_(uint64_t hash)
{
	return (uint32_t)(hash ^ (hash >> 32));
}

/* Fibonacci hashing: the top bits of the product depend on every bit of the tag, so that the
 * slot of an entry is found again from its tag alone when the index grows. */
static inline size_t hash_index_home_(const struct hash_index *x, uint32_t tag)
{
	return (uint32_t)(tag * 0x9e3779b9u) >> x->shift;
}

/* The next position added under hash (the oldest first), or HASH_INDEX_NONE. Inline: the
 * analysis asks this for every mount and every directory of its mountpoint. */
static inline size_t hash_index_next(const struct hash_index *x, uint64_t hash,
				     struct hash_cursor *c)
{
	uint32_t tag = hash_index_tag_(hash);
	size_t s;

	if (!x->slots)
		return HASH_INDEX_NONE;
	s = c->started ? (c->slot + 1) & x->mask : hash_index_home_(x, tag);
	c->started = true;
	for (; x->slots[s].value != 0; s = (s + 1) & x->mask)
		if (x->slots[s].tag == tag) {
			c->slot = s;
			return x->slots[s].value - 1;
		}
	c->slot = s;
	return HASH_INDEX_NONE;
}

/* Ask the CPU for the slot where a walk of hash starts, ahead of the walk: an index of 100,000
 * positions is 2 MiB, and a walk that starts there cold waits on memory. Only a hint: nothing
 * is read, and an index without slots is left alone. */
static inline void hash_index_prefetch(const struct hash_index *x, uint64_t hash)
{
	if (x->slots)
		__builtin_prefetch(&x->slots[hash_index_home_(x, hash_index_tag_(hash))]);
}

/* A well-mixed hash of a 64-bit key (mount ids, device numbers). */
static inline uint64_t hash_u64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	return k ^ (k >> 33);
}

/* FNV-1a of path[0..len) started from seed, with a final mix: for keys that are paths (the seed
 * adds a number to the key, as the parent mount of a mountpoint). */
uint64_t hash_path(const char *path, size_t len, uint64_t seed);

/* hash_path() in steps, for the hashes of every prefix of one path in a single pass:
 * state = hash_path_start(seed), then hash_path_feed() the bytes in order;
 * hash_path_finish(state) at any point equals hash_path() of the bytes fed so far. */
static inline uint64_t hash_path_start(uint64_t seed)
{
	return 1469598103934665603ULL ^ seed;
}

static inline uint64_t hash_path_feed(uint64_t state, const char *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++)
		state = (state ^ (unsigned char)bytes[i]) * 1099511628211ULL;
	return state;
}

static inline uint64_t hash_path_finish(uint64_t state)
{
	return state ^ (state >> 29);
}

/* One hash of two 64-bit keys (a parent mount and the hash of a mountpoint). */
static inline uint64_t hash_u64_pair(uint64_t a, uint64_t b)
{
	return hash_u64(a ^ (b * 0x9e3779b97f4a7c15ULL));
}
