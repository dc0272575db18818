/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "analysis/analysis.h"
#include "snapshot/idmap.h"
#include "util/alloc.h"
#include "util/hashindex.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-table.h"
#include "util/string-util.h"

/*
 * Index of the mount table by (parent id, mountpoint): "is something mounted at P inside mount
 * M?" is the question behind both stacking and covering, and must stay O(1) on 50,000-mount
 * tables.
 */
struct child_index {
	struct hash_index x;
	const struct mount_table *t;
};

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

static size_t child_index_lookup(const struct child_index *ci, unsigned parent_id, const char *path,
				 size_t len, struct hash_cursor *c)
{
	return child_index_find(ci, parent_id, path, len, hash_path(path, len, parent_id), c);
}

static size_t child_at(const struct child_index *ci, unsigned parent_id, const char *path,
		       size_t len)
{
	struct hash_cursor c = { 0 };

	return child_index_lookup(ci, parent_id, path, len, &c);
}

static void child_index_done(struct child_index *ci)
{
	hash_index_done(&ci->x);
}

static int child_index_build(struct child_index *ci, const struct mount_table *t)
{
	int r;

	ci->t = t;
	r = hash_index_reserve(&ci->x, t->n_entries);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];
		size_t len = strlen(e->mountpoint);
		struct hash_cursor c = { 0 };

		/* A later duplicate (same parent, same mountpoint) replaces the earlier one: the
		 * kernel lists mounts in the order they were attached. */
		if (child_index_lookup(ci, e->parent_id, e->mountpoint, len, &c) != NO_MOUNT)
			hash_index_set(&ci->x, &c, i);
		else if ((r = hash_index_add(&ci->x, hash_path(e->mountpoint, len, e->parent_id),
					     i)) < 0)
			return r;
	}
	return 0;
}

static int compare_id(const void *a, const void *b, void *arg)
{
	const struct mount_table *t = arg;
	unsigned x = t->entries[*(const size_t *)a].id, y = t->entries[*(const size_t *)b].id;

	return x < y ? -1 : x > y;
}

/* Sorted permutation of the table by mount id, to find parents. */
static size_t *by_id_index(const struct mount_table *t)
{
	size_t *idx = malloc(sizeof(size_t) * (t->n_entries ?: 1));

	if (!idx)
		return NULL;
	for (size_t i = 0; i < t->n_entries; i++)
		idx[i] = i;
	qsort_r(idx, t->n_entries, sizeof(size_t), compare_id, (void *)t);
	return idx;
}

static size_t lookup_id(const struct mount_table *t, const size_t *idx, unsigned id)
{
	size_t lo = 0, hi = t->n_entries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		unsigned x = t->entries[idx[mid]].id;

		if (x == id)
			return idx[mid];
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
 * costs O(L) whatever its depth (hashing every prefix anew was O(L * depth)). *work, when
 * given, is increased by the bytes hashed.
 */
static size_t sibling_cover(const struct child_index *ci, const struct mount_entry *e,
			    const struct mount_entry *parent, size_t *work)
{
	const char *mp = e->mountpoint;
	size_t plen = parent ? strlen(parent->mountpoint) : 0, done = 0;
	uint64_t state = hash_path_start(e->parent_id);

	for (const char *p = strchr(mp + 1, '/'); p; p = strchr(p + 1, '/')) {
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

static int compute_reachability(struct analysis *a, const struct child_index *ci,
				const size_t *by_id)
{
	const struct mount_table *t = a->snap->mounts;
	size_t n = t->n_entries;
	size_t *parent = a->parent;
	_cleanup_free_ size_t *sibling = NULL, *pos_cover = NULL, *stack = NULL;
	_cleanup_free_ unsigned char *state = NULL; /* 0 new, 1 on stack, 2 done */

	sibling = malloc(sizeof(size_t) * (n ?: 1));
	pos_cover = calloc(n ?: 1, sizeof(size_t));
	stack = malloc(sizeof(size_t) * (n ?: 1));
	state = calloc(n ?: 1, 1);
	if (!sibling || !pos_cover || !stack || !state)
		return -ENOMEM;

	for (size_t i = 0; i < n; i++) {
		const struct mount_entry *e = &t->entries[i];
		size_t p = lookup_id(t, by_id, e->parent_id), top;

		if (p == i)
			p = NO_MOUNT;
		parent[i] = p;
		top = child_at(ci, e->id, e->mountpoint, strlen(e->mountpoint));
		a->stacked_on[i] = top == i ? NO_MOUNT : top;
		sibling[i] =
		    sibling_cover(ci, e, p == NO_MOUNT ? NULL : &t->entries[p], &a->cover_work);
	}

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
			stack[depth++] = cur;
			cur = parent[cur];
		}
		/* A cycle (only a hostile table has one): the last mount walked, whose parent is
		 * already on the stack, becomes a root, so every parent is done before its child.
		 */
		if (cur != NO_MOUNT && state[cur] == 1)
			parent[stack[depth - 1]] = NO_MOUNT;
		while (depth > 0) {
			size_t m = stack[--depth], p = parent[m], hide = sibling[m];

			if (hide == NO_MOUNT && p != NO_MOUNT)
				hide = a->stacked_on[p] == m ? pos_cover[p] : a->covered_by[p];
			pos_cover[m] = hide;
			a->covered_by[m] = hide != NO_MOUNT ? hide : a->stacked_on[m];
			a->reachable[m] = a->covered_by[m] == NO_MOUNT;
			state[m] = 2;
		}
	}
	return 0;
}

struct instance *analysis_find_instance(const struct analysis *a, dev_t dev)
{
	struct hash_cursor c = { 0 };
	size_t i;

	while ((i = hash_index_next(&a->instances_by_dev, hash_u64(dev), &c)) != HASH_INDEX_NONE)
		if (a->instances[i].dev == dev)
			return &a->instances[i];
	return NULL;
}

/* mountinfo prints gid= and uid= as the initial user namespace numbers them; the judged
 * namespace's tty group and users are its own numbers. An id it cannot name keeps the initial
 * namespace's number and is marked unmapped. */
static void translate_owner(const struct snapshot *s, struct instance *in)
{
	unsigned v;

	if (in->options.has_gid) {
		if (idmap_from_initial(s->gid_map, in->options.gid, &v) >= 0)
			in->options.gid = v;
		else
			in->gid_unmapped = true;
	}
	if (in->options.has_uid) {
		if (idmap_from_initial(s->uid_map, in->options.uid, &v) >= 0)
			in->options.uid = v;
		else
			in->uid_unmapped = true;
	}
}

static int collect_instances(struct analysis *a)
{
	const struct mount_table *t = a->snap->mounts;
	size_t allocated = 0, n_devpts = 0;
	int r;

	/* An index by device: there may be as many instances as mounts (hostile tables). */
	for (size_t i = 0; i < t->n_entries; i++)
		n_devpts += streq(t->entries[i].fstype, "devpts");
	r = hash_index_reserve(&a->instances_by_dev, n_devpts);
	if (r < 0)
		return r;

	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];
		struct instance *in;

		if (!streq(e->fstype, "devpts"))
			continue;
		in = analysis_find_instance(a, e->dev);
		if (!in) {
			if (GROW(a->instances, allocated, a->n_instances + 1) < 0)
				return -ENOMEM;
			r = hash_index_add(&a->instances_by_dev, hash_u64(e->dev), a->n_instances);
			if (r < 0)
				return r;
			in = &a->instances[a->n_instances++];
			*in = (struct instance){ .dev = e->dev, .visible_mount = NO_MOUNT };
			devpts_options_parse(e->super_options, &in->options);
			translate_owner(a->snap, in);
		}
		if (GROW(in->mounts, in->allocated_mounts, in->n_mounts + 1) < 0)
			return -ENOMEM;
		in->mounts[in->n_mounts++] = i;
		if (a->reachable[i] && in->visible_mount == NO_MOUNT)
			in->visible_mount = i;
	}
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		in->covered = in->visible_mount == NO_MOUNT;
	return 0;
}

size_t analysis_mount_at(const struct analysis *a, const char *path)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t i = t->n_entries; i > 0; i--)
		if (a->reachable[i - 1] && streq(t->entries[i - 1].mountpoint, path))
			return i - 1;
	return NO_MOUNT;
}

static size_t covered_devpts_at(const struct analysis *a, const char *path)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t i = 0; i < t->n_entries; i++)
		if (!a->reachable[i] && streq(t->entries[i].fstype, "devpts") &&
		    streq(t->entries[i].mountpoint, path))
			return i;
	return NO_MOUNT;
}

static bool is_ptmx_rdev(const struct node *n)
{
	return n->type == NODE_CHAR && major(n->rdev) == PTMX_RDEV_MAJOR &&
	       minor(n->rdev) == PTMX_RDEV_MINOR;
}

/* The reachable mount of the instance's root, where its slaves are: a bind mount of its ptmx
 * node (LXC's /dev/ptmx) reaches the instance but holds no slave. NO_MOUNT when none. */
static size_t instance_root_mount(const struct analysis *a, const struct instance *in)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t k = 0; k < in->n_mounts; k++)
		if (a->reachable[in->mounts[k]] && streq(t->entries[in->mounts[k]].root, "/"))
			return in->mounts[k];
	return NO_MOUNT;
}

static void set_serving(struct analysis *a, struct instance *in, size_t via)
{
	a->route = ROUTE_OK;
	a->serving = in;
	a->serving_mount = via != NO_MOUNT ? via : in->visible_mount;
	in->serving = true;
}

/* Old kernels: a char node reaches the one system instance, whichever mount shows it. */
static void route_single_instance(struct analysis *a, size_t at_pts)
{
	const struct mount_table *t = a->snap->mounts;

	if (at_pts != NO_MOUNT && streq(t->entries[at_pts].fstype, "devpts")) {
		set_serving(a, analysis_find_instance(a, t->entries[at_pts].dev), at_pts);
		return;
	}
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (!in->covered) {
			set_serving(a, in, NO_MOUNT);
			return;
		}
	if (a->n_instances > 0)
		set_serving(a, &a->instances[0], NO_MOUNT);
	else
		a->route = ROUTE_UNKNOWN;
}

static int route_ptmx(struct analysis *a)
{
	const struct snapshot *s = a->snap;
	const struct mount_table *t = s->mounts;
	const struct node *n = snapshot_find_node(s, PTMX_PATH);
	_cleanup_free_ char *dir = NULL;
	size_t at_pts, hidden;
	struct instance *in;

	a->ptmx = n;
	a->route = ROUTE_NOT_DEVICE;
	a->ptmx_bind_mount = analysis_mount_at(a, PTMX_PATH);

	if (!n || n->type == NODE_MISSING) {
		a->ptmx_kind = PTMX_MISSING;
		a->route = ROUTE_MISSING;
		return 0;
	}
	switch (n->type) {
	case NODE_CHAR:
		a->ptmx_kind = a->ptmx_bind_mount != NO_MOUNT ? PTMX_BIND : PTMX_CHAR;
		break;
	case NODE_SYMLINK:
		a->ptmx_kind = PTMX_SYMLINK;
		break;
	default:
		a->ptmx_kind = a->ptmx_bind_mount != NO_MOUNT ? PTMX_BIND : PTMX_OTHER;
		break;
	}

	/* Follow symlinks the way open() would, through the nodes the probe recorded. */
	for (int hops = 0; n && n->type == NODE_SYMLINK; hops++) {
		_cleanup_free_ char *next = NULL;

		if (hops >= 8 || !n->target)
			return 0; /* ELOOP: not a device */
		next = path_resolve_lexical(n->path, n->target);
		if (!next)
			return -ENOMEM;
		n = snapshot_find_node(s, next);
	}
	a->ptmx_final = n && n->type != NODE_MISSING ? n : NULL;
	if (!a->ptmx_final || !is_ptmx_rdev(n))
		return 0;

	/* A devpts ptmx node (through a symlink or a bind mount) serves its own instance. */
	in = analysis_find_instance(a, n->dev);
	if (in) {
		_cleanup_free_ char *holder = path_dirname(n->path);
		size_t via = holder ? analysis_mount_at(a, holder) : NO_MOUNT;

		if (!holder)
			return -ENOMEM;
		/* The mount its slaves are under: the one holding the node when that is the
		 * instance's root, else any reachable root mount of it, else the bind itself. */
		if (via == NO_MOUNT || t->entries[via].dev != in->dev ||
		    !streq(t->entries[via].root, "/"))
			via = instance_root_mount(a, in);
		if (via == NO_MOUNT && a->ptmx_kind == PTMX_BIND)
			via = a->ptmx_bind_mount;
		set_serving(a, in, via);
		return 0;
	}

	dir = path_dirname(n->path);
	if (!dir)
		return -ENOMEM;
	a->pts_path = path_join(dir, "pts");
	if (!a->pts_path)
		return -ENOMEM;
	at_pts = analysis_mount_at(a, a->pts_path);

	if (!a->multi_instance) {
		route_single_instance(a, at_pts);
		return 0;
	}
	if (at_pts != NO_MOUNT && streq(t->entries[at_pts].fstype, "devpts") &&
	    streq(t->entries[at_pts].root, "/")) {
		set_serving(a, analysis_find_instance(a, t->entries[at_pts].dev), at_pts);
		return 0;
	}
	hidden = covered_devpts_at(a, a->pts_path);
	if (hidden != NO_MOUNT) {
		a->route = ROUTE_PTS_COVERED;
		a->pts_covering_mount = at_pts != NO_MOUNT ? at_pts : a->covered_by[hidden];
		return 0;
	}
	a->route = ROUTE_NO_DEVPTS;
	return 0;
}

int analysis_new(const struct snapshot *snap, struct analysis **ret)
{
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	_cleanup_(child_index_done) struct child_index ci = { 0 };
	_cleanup_free_ size_t *by_id = NULL;
	size_t n;
	int r;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->snap = snap;
	if (!snap->mounts)
		return -EINVAL;
	n = snap->mounts->n_entries;
	a->multi_instance = kernel_at_least(snap->kernel_release, 4, 7);
	a->reachable = calloc(n ?: 1, sizeof(bool));
	a->covered_by = calloc(n ?: 1, sizeof(size_t));
	a->stacked_on = calloc(n ?: 1, sizeof(size_t));
	a->parent = calloc(n ?: 1, sizeof(size_t));
	by_id = by_id_index(snap->mounts);
	a->serving_mount = NO_MOUNT;
	a->pts_covering_mount = NO_MOUNT;
	if (!a->reachable || !a->covered_by || !a->stacked_on || !a->parent || !by_id)
		return -ENOMEM;

	r = child_index_build(&ci, snap->mounts);
	if (r < 0)
		return r;
	r = compute_reachability(a, &ci, by_id);
	child_index_done(&ci); /* before the instances: a 50,000-mount index is 1 MiB */
	if (r < 0)
		return r;
	r = collect_instances(a);
	if (r < 0)
		return r;
	r = route_ptmx(a);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(a);
	return 0;
}

int analysis_update_nodes(struct analysis *a)
{
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		in->serving = false;
	free(a->pts_path);
	a->pts_path = NULL;
	a->ptmx = a->ptmx_final = NULL;
	a->serving = NULL;
	a->serving_mount = NO_MOUNT;
	a->pts_covering_mount = NO_MOUNT;
	return route_ptmx(a);
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
	r = child_index_build(&ci, t);
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
		ADD(sibling_cover(&ci, &t->entries[m], p == NO_MOUNT ? NULL : &t->entries[p],
				  NULL));
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

struct analysis *analysis_free(struct analysis *a)
{
	if (!a)
		return NULL;
	free(a->reachable);
	free(a->covered_by);
	free(a->stacked_on);
	free(a->parent);
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		free(in->mounts);
	free(a->instances);
	hash_index_done(&a->instances_by_dev);
	free(a->pts_path);
	free(a);
	return NULL;
}

static const char *const ptmx_kind_table[] = {
	[PTMX_CHAR] = "char",	    [PTMX_SYMLINK] = "symlink", [PTMX_BIND] = "bind",
	[PTMX_MISSING] = "missing", [PTMX_OTHER] = "other",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ptmx_kind, enum ptmx_kind);
