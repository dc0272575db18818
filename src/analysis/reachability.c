/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which mounts of a snapshot's table are reachable by path, which are covered and by what,
 * which are stacked on which (analysis/analysis.h), on tables of any size and shape; and the
 * mounts those facts depend on (analysis_relevant_mounts()). */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-internal.h"
#include "analysis/analysis.h"
#include "util/alloc.h"
#include "util/hashindex.h"
#include "util/limits.h"
#include "util/string-util.h"

/*
 * Index of the mount table by (parent id, mountpoint): "is something mounted at P inside mount
 * M?" is the question behind both stacking and covering, and must stay O(1) on 50,000-mount
 * tables.
 */
struct child_index {
	struct hash_index x;
	const struct mount_table *t;
	/* Per mount, once asked for: the hash of its mountpoint seeded with its own id, not yet
	 * finished. A child's mountpoint begins with its parent's and its hashes are seeded with
	 * the parent's id, so they all continue from there: the parent's part is hashed once for
	 * all its children, not once for each. NULL when the parents are not known. Only the
	 * entries of the mounts asked for are written, and which those are is kept in a bitmap:
	 * in a large table few mounts are parents, and the pages of the rest are never touched
	 * (calloc() would clear every one of them; each costs a trap in some virtual machines). */
	struct prefix_hash *prefix;
	uint64_t *prefix_known;
};

/* A mountpoint is shorter than the table, which is at most MOUNTINFO_SIZE_MAX. */
struct prefix_hash {
	uint64_t state;
	uint32_t len;
};
static_assert(MOUNTINFO_SIZE_MAX <= UINT32_MAX, "a mountpoint's length fits in prefix_hash.len");

static bool child_is(const struct mount_entry *e, unsigned parent_id, const char *path, size_t len)
{
	return e->parent_id == parent_id && strncmp(e->mountpoint, path, len) == 0 &&
	       e->mountpoint[len] == 0;
}

static size_t child_index_find(const struct child_index *ci, unsigned parent_id, const char *path,
			       size_t len, uint64_t h, struct hash_cursor *c)
{
	size_t i;

	while ((i = hash_index_next(&ci->x, h, c)) != HASH_INDEX_NONE)
		if (child_is(&ci->t->entries[i], parent_id, path, len))
			return i;
	return NO_MOUNT;
}

static void child_index_done(struct child_index *ci)
{
	hash_index_done(&ci->x);
	free(ci->prefix);
	free(ci->prefix_known);
	ci->prefix = NULL;
	ci->prefix_known = NULL;
}

/* The hash state of mount i's whole mountpoint seeded with its id (ci->prefix is set). */
static const struct prefix_hash *own_prefix(struct child_index *ci, size_t i)
{
	struct prefix_hash *ph = &ci->prefix[i];
	const struct mount_entry *e = &ci->t->entries[i];
	uint64_t bit = UINT64_C(1) << (i % 64);

	if (!(ci->prefix_known[i / 64] & bit)) {
		ph->len = (uint32_t)strlen(e->mountpoint);
		ph->state = hash_path_feed(hash_path_start(e->id), e->mountpoint, ph->len);
		ci->prefix_known[i / 64] |= bit;
	}
	return ph;
}

/* Where the hash of e's mountpoint, seeded with its parent's id, stands after the bytes it shares
 * with the mountpoint of its parent (the mount at position parent): *state, and the number of
 * bytes returned. 0 and the bare seed when the parent is unknown or e's mountpoint does not begin
 * with its parent's. Either way hashing the rest from there gives hash_path() of the whole. */
static size_t hash_after_parent(struct child_index *ci, const struct mount_entry *e, size_t parent,
				uint64_t *state)
{
	const struct prefix_hash *ph;
	const struct mount_entry *p;

	*state = hash_path_start(e->parent_id);
	if (parent == NO_MOUNT || !ci->prefix)
		return 0;
	p = &ci->t->entries[parent];
	if (p->id != e->parent_id)
		return 0;
	ph = own_prefix(ci, parent);
	if (strncmp(e->mountpoint, p->mountpoint, ph->len) != 0)
		return 0;
	*state = ph->state;
	return ph->len;
}

/* How many entries ahead of the one being indexed its slot is asked for. */
#define CHILD_INDEX_PREFETCH 8

/* The index of t; parent, when given, is each mount's parent (NO_MOUNT: none known), whose
 * mountpoints are then hashed once for all their children. */
static int child_index_build(struct child_index *ci, const struct mount_table *t,
			     const uint32_t *parent)
{
	size_t n = t->n_entries;
	_cleanup_free_ uint64_t *hashes = malloc(sizeof(uint64_t) * (n ?: 1));
	_cleanup_free_ uint32_t *lens = malloc(sizeof(uint32_t) * (n ?: 1));
	int r;

	if (!hashes || !lens)
		return -ENOMEM;
	ci->t = t;
	if (parent && (!(ci->prefix = malloc(sizeof(struct prefix_hash) * (n ?: 1))) ||
		       !(ci->prefix_known = calloc(n / 64 + 1, sizeof(uint64_t)))))
		return -ENOMEM;
	r = hash_index_reserve(&ci->x, n);
	if (r < 0)
		return r;
	/* The hashes first, so that each slot can be asked for before it is walked: the slots
	 * of a large table are scattered over more memory than the cache holds. */
	for (size_t i = 0; i < n; i++) {
		const struct mount_entry *e = &t->entries[i];
		uint64_t state;
		size_t done = hash_after_parent(ci, e, parent ? parent[i] : NO_MOUNT, &state);

		lens[i] = (uint32_t)strlen(e->mountpoint);
		hashes[i] =
		    hash_path_finish(hash_path_feed(state, e->mountpoint + done, lens[i] - done));
	}
	for (size_t i = 0; i < n; i++) {
		const struct mount_entry *e = &t->entries[i];
		struct hash_cursor c = { 0 };

		if (i + CHILD_INDEX_PREFETCH < n)
			hash_index_prefetch(&ci->x, hashes[i + CHILD_INDEX_PREFETCH]);
		/* A later duplicate (same parent, same mountpoint) replaces the earlier one: the
		 * kernel lists mounts in the order they were attached. */
		if (child_index_find(ci, e->parent_id, e->mountpoint, lens[i], hashes[i], &c) !=
		    NO_MOUNT)
			hash_index_set(&ci->x, &c, i);
		else if ((r = hash_index_add(&ci->x, hashes[i], i)) < 0)
			return r;
	}
	return 0;
}

/* A mount id and the position of its entry. The table sorted by id as an array of these, 8 bytes
 * a mount: sorting it and searching it for parents reads that array alone, not entries scattered
 * over the table (which on 100,000 mounts miss the cache at nearly every step). */
struct id_pos {
	unsigned id;
	uint32_t pos;
};

struct id_index {
	struct id_pos *items;
	size_t n;
	bool unique; /* no id appears twice (only a hostile table repeats one) */
};

/* items[0..n) by id, equal ids in the order given (by position, as they come): a radix sort, one
 * stable pass per byte of the ids, skipping a byte all ids share (mount ids are small numbers: two
 * passes). tmp holds n items. */
static void sort_id_pos(struct id_pos *items, struct id_pos *tmp, size_t n)
{
	for (unsigned shift = 0; shift < 32; shift += 8) {
		size_t count[256] = { 0 }, at = 0;

		for (size_t i = 0; i < n; i++)
			count[(items[i].id >> shift) & 0xff]++;
		if (count[(items[0].id >> shift) & 0xff] == n)
			continue;
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(items[i].id >> shift) & 0xff]++] = items[i];
		memcpy(items, tmp, n * sizeof(*items));
	}
}

static int id_index_build(struct id_index *ix, const struct mount_table *t)
{
	bool sorted = true;

	if (t->n_entries >= UINT32_MAX)
		return -E2BIG;
	ix->items = malloc(sizeof(struct id_pos) * (t->n_entries ?: 1));
	if (!ix->items)
		return -ENOMEM;
	ix->n = t->n_entries;
	for (size_t i = 0; i < ix->n; i++) {
		ix->items[i] = (struct id_pos){ .id = t->entries[i].id, .pos = (uint32_t)i };
		sorted = sorted && (i == 0 || ix->items[i - 1].id <= ix->items[i].id);
	}
	/* The kernel lists mounts by id more often than not: no sort then. */
	if (!sorted) {
		_cleanup_free_ struct id_pos *tmp = malloc(sizeof(struct id_pos) * ix->n);

		if (!tmp)
			return -ENOMEM;
		sort_id_pos(ix->items, tmp, ix->n);
	}
	ix->unique = true;
	for (size_t i = 1; i < ix->n && ix->unique; i++)
		ix->unique = ix->items[i].id != ix->items[i - 1].id;
	return 0;
}

static void id_index_done(struct id_index *ix)
{
	free(ix->items);
	*ix = (struct id_index){ 0 };
}

/* The position of a mount with this id, NO_MOUNT when none. */
static size_t lookup_id(const struct id_index *ix, unsigned id)
{
	size_t lo = 0, hi = ix->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		unsigned x = ix->items[mid].id;

		if (x == id)
			return ix->items[mid].pos;
		if (x < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NO_MOUNT;
}

/*
 * The mount hiding e from its siblings: one mounted inside the same parent on a strict ancestor
 * directory of e's mountpoint (a tmpfs on /dev hides /dev/pts mounted in the same parent), the
 * shortest directory first, as the kernel's path walk meets it. One pass over the mountpoint:
 * the hash of each directory continues the hash of the one before, so a mountpoint of L bytes
 * costs O(L) whatever its depth (hashing every prefix anew was O(L * depth)), and less when its
 * parent's part is hashed already. *work, when given, is increased by the bytes hashed.
 */
static size_t sibling_cover(struct child_index *ci, const struct mount_entry *e, size_t parent,
			    size_t *work)
{
	const char *mp = e->mountpoint;
	size_t plen = parent != NO_MOUNT ? strlen(ci->t->entries[parent].mountpoint) : 0, done;
	uint64_t state;

	/* No directory up to the parent's mountpoint is looked up: start after it when the
	 * mountpoint begins with it (its hash already known). */
	done = hash_after_parent(ci, e, parent, &state);
	for (const char *p = strchr(mp + (done > 0 ? done : 1), '/'); p; p = strchr(p + 1, '/')) {
		size_t len = (size_t)(p - mp);
		struct hash_cursor c = { 0 };
		size_t hit;

		state = hash_path_feed(state, mp + done, len - done);
		if (work)
			*work += len - done;
		done = len;
		if (len <= plen)
			continue;
		hit = child_index_find(ci, e->parent_id, mp, len, hash_path_finish(state), &c);
		if (hit != NO_MOUNT)
			return hit;
	}
	return NO_MOUNT;
}

static int compute_reachability(struct analysis *a, const struct id_index *by_id)
{
	_cleanup_(child_index_done) struct child_index index = { 0 };
	struct child_index *ci = &index;
	const struct mount_table *t = a->snap->mounts;
	size_t n = t->n_entries;
	uint32_t *parent = a->parent;
	/* Positions in 32 bits, as in struct analysis. */
	_cleanup_free_ uint32_t *sibling = NULL, *pos_cover = NULL, *stack = NULL;
	_cleanup_free_ unsigned char *state = NULL; /* 0 new, 1 on stack, 2 done */
	_cleanup_free_ bool *has_child = NULL;
	int r;

	sibling = malloc(sizeof(*sibling) * (n ?: 1));
	pos_cover = calloc(n ?: 1, sizeof(*pos_cover));
	stack = malloc(sizeof(*stack) * (n ?: 1));
	state = calloc(n ?: 1, 1);
	has_child = calloc(n ?: 1, sizeof(bool));
	if (!sibling || !pos_cover || !stack || !state || !has_child)
		return -ENOMEM;

	/* Parents first: a mount that is no mount's parent has nothing stacked on it, and most
	 * mounts of a large table are such leaves, each a lookup saved. With an id repeated, the
	 * mount found for it need not be the one a child names: every mount is looked at then. */
	for (size_t i = 0; i < n; i++) {
		size_t p = lookup_id(by_id, t->entries[i].parent_id);

		if (p != NO_MOUNT)
			has_child[p] = true;
		parent[i] = (uint32_t)(p == i ? NO_MOUNT : p);
	}
	r = child_index_build(ci, t, parent);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct mount_entry *e = &t->entries[i];
		size_t top = NO_MOUNT;

		if (has_child[i] || !by_id->unique) {
			const struct prefix_hash *own = own_prefix(ci, i);
			struct hash_cursor c = { 0 };

			top = child_index_find(ci, e->id, e->mountpoint, own->len,
					       hash_path_finish(own->state), &c);
		}
		a->stacked_on[i] = (uint32_t)(top == i ? NO_MOUNT : top);
		sibling[i] = (uint32_t)sibling_cover(ci, e, parent[i], &a->cover_work);
	}
	/* The index released before the walk below and the instances: for 50,000 mounts it is
	 * 1 MiB. */
	child_index_done(ci);

	/*
	 * A mount is reachable when nothing hides its position and nothing is stacked on it.
	 * Its position is hidden by a sibling over an ancestor directory, or by whatever hides
	 * its parent: the parent's own position when it is stacked on the parent (the cover is
	 * itself), else the parent's cover. Walk parent chains without recursion (hostile tables
	 * may chain a million mounts) and cut cycles.
	 */
	for (size_t i = 0; i < n; i++) {
		size_t depth = 0, cur = i;

		while (cur != NO_MOUNT && state[cur] == 0) {
			state[cur] = 1;
			stack[depth++] = (uint32_t)cur;
			cur = parent[cur];
		}
		/* A cycle (only a hostile table has one): the last mount walked, whose parent is
		 * already on the stack, becomes a root, so every parent is done before its child.
		 */
		if (cur != NO_MOUNT && state[cur] == 1)
			parent[stack[depth - 1]] = (uint32_t)NO_MOUNT;
		while (depth > 0) {
			size_t m = stack[--depth], p = parent[m], hide = sibling[m];

			if (hide == NO_MOUNT && p != NO_MOUNT)
				hide = a->stacked_on[p] == m ? pos_cover[p] : a->covered_by[p];
			pos_cover[m] = (uint32_t)hide;
			a->covered_by[m] = hide != NO_MOUNT ? (uint32_t)hide : a->stacked_on[m];
			a->reachable[m] = a->covered_by[m] == NO_MOUNT;
			state[m] = 2;
		}
	}
	return 0;
}

/*
 * The closure: seeds, then for every member its parent, what is stacked on it and the sibling
 * that hides it first (the shortest directory), until nothing is added. Reachability, stacking
 * and covering of a member are computed from members only (compute_reachability() reads only
 * that first sibling, and no member's first sibling can be shorter among fewer mounts), so an
 * analysis of these entries alone gives the same facts for each of them.
 */
int analysis_relevant_mounts(const struct analysis *a, size_t **ret, size_t *ret_n)
{
	const struct mount_table *t = a->snap->mounts;
	size_t n = t->n_entries, n_out = 0, n_work = 0;
	_cleanup_free_ size_t *work = malloc(sizeof(size_t) * (n ?: 1));
	_cleanup_free_ bool *in = calloc(n ?: 1, sizeof(bool));
	_cleanup_(child_index_done) struct child_index ci = { 0 };
	size_t *out;
	int r;

	if (!work || !in)
		return -ENOMEM;
	r = child_index_build(&ci, t, a->parent);
	if (r < 0)
		return r;
#define ADD(i)                                                                                     \
	do {                                                                                       \
		size_t _i = (i);                                                                   \
		if (_i != NO_MOUNT && !in[_i]) {                                                   \
			in[_i] = true;                                                             \
			work[n_work++] = _i;                                                       \
		}                                                                                  \
	} while (0)
	for (size_t i = 0; i < n; i++) {
		const struct mount_entry *e = &t->entries[i];

		/* /dev and /dev/pts too: ptmx-foreign-instance and ptmx-locked read what is
		 * mounted there whatever /dev/ptmx is */
		if (streq(e->fstype, "devpts") || streq(e->mountpoint, PTMX_PATH) ||
		    streq(e->mountpoint, PTMX_DIR) || streq(e->mountpoint, PTS_PATH) ||
		    (a->pts_path && streq(e->mountpoint, a->pts_path)))
			ADD(i);
	}
	while (n_work > 0) {
		size_t m = work[--n_work], p = a->parent[m];

		ADD(p);
		ADD(a->stacked_on[m]);
		ADD(sibling_cover(&ci, &t->entries[m], p, NULL));
	}
#undef ADD
	child_index_done(&ci);

	out = malloc(sizeof(size_t) * (n ?: 1));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (in[i])
			out[n_out++] = i;
	*ret = out;
	*ret_n = n_out;
	return 0;
}

int analysis_reachability(struct analysis *a)
{
	_cleanup_(id_index_done) struct id_index by_id = { 0 };
	int r;

	r = id_index_build(&by_id, a->snap->mounts);
	if (r < 0)
		return r;
	return compute_reachability(a, &by_id);
}
