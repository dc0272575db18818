/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The analysis of a snapshot (analysis/analysis.h): made and freed; its devpts instances with
 * their owners in the namespace's numbers; what /dev/ptmx is, where it leads and which
 * instance serves it. Reachability and covering are reachability.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "analysis/analysis-internal.h"
#include "analysis/analysis.h"
#include "snapshot/idmap.h"
#include "util/alloc.h"
#include "util/hashindex.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-table.h"
#include "util/string-util.h"

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

	/* A bind of a char node that is no devpts ptmx: since 4.7 the kernel looks up pts beside
	 * the node within the bind's own mount, whose root is the node itself, so nothing can be
	 * mounted there; where the node came from (the host's /dev, with a devpts beside it
	 * there) does not matter. */
	if (a->multi_instance && a->ptmx_kind == PTMX_BIND) {
		a->route = ROUTE_BIND_NO_INSTANCE;
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
	size_t n;
	int r;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->snap = snap;
	if (!snap->mounts)
		return -EINVAL;
	n = snap->mounts->n_entries;
	if (n >= NO_MOUNT)
		return -E2BIG;
	a->multi_instance = kernel_at_least(snap->kernel_release, 4, 7);
	a->reachable = calloc(n ?: 1, sizeof(bool));
	a->covered_by = calloc(n ?: 1, sizeof(*a->covered_by));
	a->stacked_on = calloc(n ?: 1, sizeof(*a->stacked_on));
	a->parent = calloc(n ?: 1, sizeof(*a->parent));
	a->serving_mount = NO_MOUNT;
	a->pts_covering_mount = NO_MOUNT;
	if (!a->reachable || !a->covered_by || !a->stacked_on || !a->parent)
		return -ENOMEM;

	/* Its index released before the instances: for 50,000 mounts it is 1 MiB. */
	r = analysis_reachability(a);
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
