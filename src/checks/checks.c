/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "analysis/boot.h"
#include "checks/checks-impl.h"
#include "checks/checks.h"
#include "probe/fstab.h"
#include "util/json-util.h"
#include "util/util.h"

/* At most this many items in a list inside evidence; the full count is given beside it. */
#define EVIDENCE_LIST_MAX 64

static const char *const severity_names[_SEVERITY_MAX] = {
	[SEVERITY_INFO] = "info",
	[SEVERITY_WARNING] = "warning",
	[SEVERITY_CRITICAL] = "critical",
};

const char *severity_to_string(enum severity s)
{
	return s < _SEVERITY_MAX ? severity_names[s] : NULL;
}

int severity_from_string(const char *s)
{
	for (int i = 0; i < _SEVERITY_MAX; i++)
		if (streq(s, severity_names[i]))
			return i;
	return -EINVAL;
}

/* ---- findings list ---- */

static void finding_done(struct finding *f)
{
	free(f->summary);
	free(f->remedy);
	free(f->mountpoint);
	free(f->mount_ids);
	free(f->devices);
	json_object_put(f->evidence);
}

void findings_clear(struct findings *f)
{
	FOREACH_ARRAY (i, f->items, f->n_items)
		finding_done(i);
	free(f->items);
	*f = (struct findings){ 0 };
}

struct finding *findings_add(struct findings *f, const struct check_info *info,
			     enum severity severity, json_object *evidence)
{
	struct finding *n;

	if (!evidence || GROW(f->items, f->allocated, f->n_items + 1) < 0) {
		json_object_put(evidence);
		return NULL;
	}
	n = &f->items[f->n_items++];
	*n = (struct finding){ .check = info, .severity = severity, .evidence = evidence };
	return n;
}

int finding_add_mount(struct finding *f, unsigned mount_id, dev_t dev)
{
	bool have_dev = false;

	FOREACH_ARRAY (d, f->devices, f->n_devices)
		have_dev = have_dev || *d == dev;
	if (!have_dev) {
		dev_t *p = realloc(f->devices, sizeof(dev_t) * (f->n_devices + 1));
		if (!p)
			return -ENOMEM;
		f->devices = p;
		f->devices[f->n_devices++] = dev;
	}
	if (mount_id) {
		unsigned *p = realloc(f->mount_ids, sizeof(unsigned) * (f->n_mount_ids + 1));
		if (!p)
			return -ENOMEM;
		f->mount_ids = p;
		f->mount_ids[f->n_mount_ids++] = mount_id;
	}
	return 0;
}

static int compare_findings(const void *x, const void *y)
{
	const struct finding *a = x, *b = y;
	int c;

	if (a->severity != b->severity)
		return a->severity > b->severity ? -1 : 1;
	c = strcmp(a->check->id, b->check->id);
	if (c)
		return c;
	if (a->n_mount_ids && b->n_mount_ids && a->mount_ids[0] != b->mount_ids[0])
		return a->mount_ids[0] < b->mount_ids[0] ? -1 : 1;
	return strcmp(a->mountpoint ?: "", b->mountpoint ?: "");
}

void findings_filter(struct findings *f, enum severity min)
{
	size_t w = 0;

	FOREACH_ARRAY (i, f->items, f->n_items) {
		if (i->severity >= min)
			f->items[w++] = *i;
		else
			finding_done(i);
	}
	f->n_items = w;
}

void findings_sort(struct findings *f)
{
	if (f->n_items > 1)
		qsort(f->items, f->n_items, sizeof(struct finding), compare_findings);
}

enum severity findings_worst(const struct findings *f, bool *any)
{
	enum severity worst = SEVERITY_INFO;

	*any = f->n_items > 0;
	FOREACH_ARRAY (i, f->items, f->n_items)
		if (i->severity > worst)
			worst = i->severity;
	return worst;
}

int checks_run(const struct analysis *a, const struct check_policy *policy, struct findings *out)
{
	static const struct check_policy default_policy = { 0 };
	struct check_context ctx = {
		.a = a,
		.snap = a->snap,
		.policy = policy ?: &default_policy,
	};

	for (size_t i = 0; i < check_catalog_size; i++) {
		const struct check_info *c = &check_catalog[i];
		int r;

		if (!c->run || c->transition)
			continue;
		r = c->run(&ctx, c, out);
		if (r < 0)
			return r;
	}
	findings_sort(out);
	return 0;
}

/* ---- shared pieces of evidence ---- */

static const struct mount_entry *mount_at(const struct analysis *a, size_t i)
{
	return i == NO_MOUNT ? NULL : &a->snap->mounts->entries[i];
}

static json_object *json_mount(const struct analysis *a, size_t i)
{
	const struct mount_entry *e = mount_at(a, i);
	json_object *o;

	if (!e)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "mount_id", json_object_new_int64(e->id));
	json_object_object_add(o, "mountpoint", json_object_new_string(e->mountpoint));
	json_object_object_add(o, "device", json_new_devnum(e->dev));
	json_object_object_add(o, "fstype", json_object_new_string(e->fstype));
	json_object_object_add(o, "options", json_object_new_string(e->super_options));
	return o;
}

static bool mode_is_healthy(const struct check_policy *p, mode_t mode)
{
	mode &= 0777;
	if (p->pin_mode)
		return mode == (p->mode & 0777);
	return mode == 0620 || mode == 0600;
}

/* The mode a repair or a person should set: pinned, else the current one if healthy, else 620. */
static mode_t wanted_mode(const struct check_policy *p, mode_t current)
{
	if (p->pin_mode)
		return p->mode & 0777;
	if (mode_is_healthy(p, current))
		return current & 0777;
	return 0620;
}

/* 0 when the serving instance is reached through no mount of ours (finding_add_mount skips 0). */
static unsigned serving_mount_id(const struct analysis *a)
{
	const struct mount_entry *e = mount_at(a, a->serving_mount);
	return e ? e->id : 0;
}

static const char *serving_mountpoint(const struct analysis *a)
{
	const struct mount_entry *e = mount_at(a, a->serving_mount);
	return e ? e->mountpoint : "/dev/pts";
}

/*
 * "mount -o remount,OPTIONS MP" that fixes what the finding needs and keeps every other option
 * of the instance: a devpts remount resets what it is not given (ptmxmode to 000 among them,
 * which would lock a pts/ptmx-symlink setup).
 */
static int set_remount_remedy(struct finding *f, const struct check_context *ctx,
			      const struct instance *in, const char *mp, bool fix_owner,
			      bool fix_ptmx)
{
	struct devpts_options o = in->options;
	_cleanup_free_ char *opts = NULL;

	if (fix_owner) {
		o.has_gid = true;
		o.gid = ctx->snap->tty_gid;
		o.mode = wanted_mode(ctx->policy, o.mode);
	}
	if (fix_ptmx)
		o.ptmxmode = 0666;
	opts = devpts_options_format(&o);
	if (!opts)
		return -ENOMEM;
	return set_printf(&f->remedy, "mount -o remount,%s %s", opts, mp);
}

/* Is this node a pty slave of the instance mounted at mp? Sets *index. */
static bool node_is_slave(const struct node *n, const char *mp, dev_t dev, unsigned *index)
{
	size_t l = strlen(mp);
	const char *name;

	if (n->type != NODE_CHAR || n->dev != dev || strncmp(n->path, mp, l) != 0)
		return false;
	name = n->path + l;
	if (l > 1 || mp[0] != '/') {
		if (*name != '/')
			return false;
		name++;
	}
	if (!isdigit((unsigned char)*name) || strchr(name, '/'))
		return false;
	return parse_uint(name, index) == 0;
}

/* ---- the checks ---- */

CHECK(ptmx_missing)
{
	const struct analysis *a = ctx->a;
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_MISSING)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(PTMX_PATH));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary, "%s does not exist: no pty can be allocated", PTMX_PATH) < 0 ||
	    set_printf(&f->remedy, "mknod -m 0666 %s c 5 2", PTMX_PATH) < 0 ||
	    set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	return 0;
}

static const char *describe_node(const struct node *n)
{
	if (!n)
		return "missing";
	switch (n->type) {
	case NODE_CHAR:
		return "character device";
	case NODE_SYMLINK:
		return "symlink";
	case NODE_DIR:
		return "directory";
	case NODE_FILE:
		return "regular file";
	case NODE_MISSING:
		return "missing";
	default:
		return "special file";
	}
}

CHECK(ptmx_not_device)
{
	const struct analysis *a = ctx->a;
	const struct node *n = a->ptmx, *fin = a->ptmx_final;
	char rdev[24];
	struct finding *f;
	json_object *ev;
	int r;

	if (a->route != ROUTE_NOT_DEVICE)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(PTMX_PATH));
	json_object_object_add(ev, "type", json_object_new_string(node_type_to_string(n->type)));
	json_object_object_add(ev, "target", json_new_string_or_null(n->target));
	json_object_object_add(ev, "resolved", fin ? json_object_new_string(fin->path) : NULL);
	json_object_object_add(
	    ev, "resolved_type",
	    json_object_new_string(fin ? node_type_to_string(fin->type) : "missing"));
	json_object_object_add(ev, "rdev",
			       fin && fin->type == NODE_CHAR ? json_new_devnum(fin->rdev) : NULL);
	f = findings_add(out, info, info->severity, ev);
	if (!f)
		return -ENOMEM;
	if (n->type == NODE_SYMLINK && !fin)
		r = set_printf(&f->summary, "%s is a dangling symlink to %s", PTMX_PATH,
			       n->target ?: "?");
	else if (fin && fin->type == NODE_CHAR)
		r = set_printf(&f->summary,
			       "%s is character device %s, not the pty multiplexer 5:2", fin->path,
			       format_devnum(fin->rdev, rdev));
	else
		r = set_printf(&f->summary, "%s is a %s, not the pty multiplexer", PTMX_PATH,
			       describe_node(fin ?: n));
	if (r < 0 || set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	if (n->type == NODE_SYMLINK || n->type == NODE_CHAR)
		r = set_printf(&f->remedy, "rm %s && mknod -m 0666 %s c 5 2", PTMX_PATH, PTMX_PATH);
	else
		r = set_printf(&f->remedy, "mv %s %s.broken && mknod -m 0666 %s c 5 2", PTMX_PATH,
			       PTMX_PATH, PTMX_PATH);
	return r;
}

CHECK(ptmx_mode)
{
	const struct analysis *a = ctx->a;
	const struct node *fin = a->ptmx_final;
	char mode[8];
	struct finding *f;
	json_object *ev;

	/* Only a plain char node: a devpts ptmx node's mode is ptmx-locked's business. */
	if (!fin || fin->type != NODE_CHAR || major(fin->rdev) != PTMX_RDEV_MAJOR ||
	    minor(fin->rdev) != PTMX_RDEV_MINOR || analysis_find_instance(a, fin->dev) ||
	    (fin->mode & 0777) == 0666)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(fin->path));
	json_object_object_add(ev, "mode", json_new_mode(fin->mode));
	json_object_object_add(ev, "uid", json_object_new_int64(fin->uid));
	json_object_object_add(ev, "gid", json_object_new_int64(fin->gid));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary, "%s has mode %s: only %s can allocate ptys", fin->path,
		       format_mode(fin->mode, mode),
		       (fin->mode & 0006) ? "some users" : "root") < 0 ||
	    set_printf(&f->remedy, "chmod 0666 %s", fin->path) < 0 ||
	    set_printf(&f->mountpoint, "%s", fin->path) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(ptmx_no_devpts)
{
	const struct analysis *a = ctx->a;
	const struct node *pts;
	struct finding *f;
	json_object *ev;
	const char *state;

	if (a->route != ROUTE_NO_DEVPTS)
		return 0;
	pts = snapshot_find_node(ctx->snap, a->pts_path);
	state = !pts			    ? "unknown"
		: pts->type == NODE_DIR	    ? "empty directory"
		: pts->type == NODE_MISSING ? "missing"
					    : describe_node(pts);
	ev = json_object_new_object();
	json_object_object_add(ev, "ptmx", json_object_new_string(a->ptmx_final->path));
	json_object_object_add(ev, "pts", json_object_new_string(a->pts_path));
	json_object_object_add(ev, "pts_state", json_object_new_string(state));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary,
		       "nothing devpts is mounted at %s (%s): every open of %s fails with ENODEV",
		       a->pts_path, state, a->ptmx_final->path) < 0 ||
	    set_printf(&f->remedy,
		       "mkdir -p %s && mount -t devpts -o gid=%u,mode=620,ptmxmode=000 devpts %s",
		       a->pts_path, (unsigned)ctx->snap->tty_gid, a->pts_path) < 0 ||
	    set_printf(&f->mountpoint, "%s", a->pts_path) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(ptmx_locked)
{
	const struct analysis *a = ctx->a;
	const struct node *fin = a->ptmx_final;
	const struct instance *in = a->serving;
	const char *mp = serving_mountpoint(a);
	char mode[8], ptmxmode[8];
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_OK || !fin || !in || fin->dev != in->dev ||
	    (fin->mode & 0006) == 0006)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(PTMX_PATH));
	json_object_object_add(ev, "kind",
			       json_object_new_string(ptmx_kind_to_string(a->ptmx_kind)));
	json_object_object_add(ev, "target", json_new_string_or_null(a->ptmx->target));
	json_object_object_add(ev, "node", json_object_new_string(fin->path));
	json_object_object_add(ev, "node_mode", json_new_mode(fin->mode));
	json_object_object_add(ev, "ptmxmode", json_new_mode(in->options.ptmxmode));
	json_object_object_add(ev, "mountpoint", json_object_new_string(mp));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, serving_mount_id(a), in->dev) < 0 ||
	    set_printf(&f->summary,
		       "%s %s%s with mode %s (ptmxmode=%s): non-root pty allocation fails "
		       "with EACCES",
		       PTMX_PATH,
		       a->ptmx_kind == PTMX_BIND ? "is a bind mount of a devpts ptmx node"
						 : "leads to ",
		       a->ptmx_kind == PTMX_BIND ? "" : fin->path, format_mode(fin->mode, mode),
		       format_mode(in->options.ptmxmode, ptmxmode)) < 0 ||
	    set_remount_remedy(f, ctx, in, mp, false, true) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(pts_covered)
{
	const struct analysis *a = ctx->a;
	const struct mount_entry *cover = mount_at(a, a->pts_covering_mount);
	const struct mount_table *t = ctx->snap->mounts;
	struct finding *f;
	json_object *ev, *hidden = json_object_new_array();

	if (a->route != ROUTE_PTS_COVERED) {
		json_object_put(hidden);
		return 0;
	}
	ev = json_object_new_object();
	json_object_object_add(ev, "pts", json_object_new_string(a->pts_path));
	json_object_object_add(ev, "covering", json_mount(a, a->pts_covering_mount));
	f = findings_add(out, info, info->severity, ev);
	if (!f) {
		json_object_put(hidden);
		return -ENOMEM;
	}
	json_object_object_add(ev, "covered", hidden);
	if (cover && finding_add_mount(f, cover->id, cover->dev) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];
		if (a->reachable[i] || !streq(e->fstype, "devpts") ||
		    !streq(e->mountpoint, a->pts_path))
			continue;
		json_object_array_add(hidden, json_mount(a, i));
		if (finding_add_mount(f, e->id, e->dev) < 0)
			return -ENOMEM;
	}
	if (set_printf(
		&f->summary,
		"the devpts at %s is covered by %s mounted on %s: every open of %s fails with "
		"ENODEV",
		a->pts_path, cover ? cover->fstype : "a mount", cover ? cover->mountpoint : "?",
		PTMX_PATH) < 0 ||
	    set_printf(&f->remedy, "umount %s", cover ? cover->mountpoint : a->pts_path) < 0 ||
	    set_printf(&f->mountpoint, "%s", a->pts_path) < 0)
		return -ENOMEM;
	return 0;
}

static json_object *options_evidence(const struct check_context *ctx, const struct instance *in,
				     const char *mp)
{
	const struct mount_entry *e = mount_at(ctx->a, ctx->a->serving_mount);
	json_object *ev = json_object_new_object(), *modes = json_object_new_array();

	json_object_object_add(ev, "mountpoint", json_object_new_string(mp));
	json_object_object_add(ev, "mount_id", e ? json_object_new_int64(e->id) : NULL);
	json_object_object_add(ev, "device", json_new_devnum(in->dev));
	json_object_object_add(ev, "options", json_object_new_string(e ? e->super_options : ""));
	json_object_object_add(ev, "gid",
			       in->options.has_gid ? json_object_new_int64(in->options.gid) : NULL);
	json_object_object_add(ev, "mode", json_new_mode(in->options.mode));
	json_object_object_add(ev, "expected_gid", json_object_new_int64(ctx->snap->tty_gid));
	if (ctx->policy->pin_mode)
		json_object_array_add(modes, json_new_mode(ctx->policy->mode));
	else {
		json_object_array_add(modes, json_new_mode(0620));
		json_object_array_add(modes, json_new_mode(0600));
	}
	json_object_object_add(ev, "expected_modes", modes);
	return ev;
}

CHECK(devpts_options_lost)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const char *mp = serving_mountpoint(a);
	bool mode_ok;
	char mode[8];
	struct finding *f;
	int r;

	if (a->route != ROUTE_OK || !in)
		return 0;
	mode_ok = mode_is_healthy(ctx->policy, in->options.mode);
	if (in->options.has_gid && mode_ok)
		return 0;
	f = findings_add(out, info, info->severity, options_evidence(ctx, in, mp));
	if (!f || finding_add_mount(f, serving_mount_id(a), in->dev) < 0)
		return -ENOMEM;
	format_mode(in->options.mode, mode);
	if (!in->options.has_gid && !mode_ok)
		r = set_printf(
		    &f->summary,
		    "devpts at %s has no gid= and mode %s: new ptys get the creator's group "
		    "and a mode other users can use",
		    mp, mode);
	else if (!in->options.has_gid)
		r = set_printf(
		    &f->summary,
		    "devpts at %s has no gid= option: new ptys get the creator's group, not "
		    "tty",
		    mp);
	else
		r = set_printf(&f->summary, "devpts at %s has mode=%s: new ptys get mode %s", mp,
			       mode, mode);
	if (r < 0 || set_remount_remedy(f, ctx, in, mp, true, false) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(devpts_gid_mismatch)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const char *mp = serving_mountpoint(a);
	struct finding *f;

	if (a->route != ROUTE_OK || !in || !in->options.has_gid ||
	    in->options.gid == ctx->snap->tty_gid)
		return 0;
	f = findings_add(out, info, info->severity, options_evidence(ctx, in, mp));
	if (!f || finding_add_mount(f, serving_mount_id(a), in->dev) < 0 ||
	    set_printf(&f->summary,
		       "devpts at %s has gid=%u, but the tty group is %u: new ptys belong to the "
		       "wrong group",
		       mp, (unsigned)in->options.gid, (unsigned)ctx->snap->tty_gid) < 0 ||
	    set_remount_remedy(f, ctx, in, mp, true, false) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(devpts_overmount)
{
	const struct analysis *a = ctx->a;
	const struct mount_table *t = ctx->snap->mounts;

	for (size_t top = 0; top < t->n_entries; top++) {
		const struct mount_entry *e = &t->entries[top];
		size_t chain[64], n = 0, n_devpts = 0, cur;
		const struct mount_entry *from_initramfs = NULL;
		json_object *ev, *stack;
		struct finding *f;

		if (a->stacked_on[top] != NO_MOUNT)
			continue;
		/* Walk down from the top of this stack to its bottom. */
		for (cur = top; cur != NO_MOUNT && n < ELEMENTSOF(chain);) {
			size_t p = a->parent[cur];

			chain[n++] = cur;
			n_devpts += streq(t->entries[cur].fstype, "devpts");
			if (p == NO_MOUNT || !streq(t->entries[p].mountpoint, e->mountpoint) ||
			    a->stacked_on[p] != cur)
				break;
			cur = p;
		}
		if (n_devpts < 2)
			continue;

		stack = json_object_new_array();
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "stack", stack);
		f = findings_add(out, info, info->severity, ev);
		if (!f)
			return -ENOMEM;
		for (size_t i = n; i-- > 0;) {
			const struct mount_entry *m = &t->entries[chain[i]];
			json_object *jm = json_mount(a, chain[i]);

			/* Born in the initramfs (the hook's record knows its device)? */
			if (streq(m->fstype, "devpts") && initramfs_instance(ctx->snap, m->dev)) {
				json_object_object_add(jm, "origin",
						       json_object_new_string("initramfs"));
				if (!from_initramfs)
					from_initramfs = m;
			}
			json_object_array_add(stack, jm);
			if (streq(m->fstype, "devpts") && finding_add_mount(f, m->id, m->dev) < 0)
				return -ENOMEM;
		}
		if ((from_initramfs && from_initramfs != e
			 ? set_printf(
			       &f->summary,
			       "%zu devpts mounts are stacked on %s: mount %u was mounted in "
			       "the initramfs and moved here, mount %u mounted on top of it "
			       "after switch-root",
			       n_devpts, e->mountpoint, from_initramfs->id, e->id)
			 : set_printf(
			       &f->summary,
			       "%zu devpts mounts are stacked on %s; only the top one (mount "
			       "%u) is reachable",
			       n_devpts, e->mountpoint, e->id)) < 0 ||
		    set_printf(
			&f->remedy,
			"find what mounts devpts twice at boot (fstab and initramfs or init "
			"scripts) and drop one; then, once nothing holds the covered instance: "
			"umount %s",
			e->mountpoint) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The instance reachable at the top of mountpoint mp, if any. */
static const struct instance *visible_instance_at(const struct analysis *a, const char *mp)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t i = 0; i < t->n_entries; i++)
		if (a->reachable[i] && streq(t->entries[i].fstype, "devpts") &&
		    streq(t->entries[i].mountpoint, mp))
			return analysis_find_instance(a, t->entries[i].dev);
	return NULL;
}

static bool slave_exists(const struct analysis *a, const struct instance *in, unsigned index)
{
	const struct mount_entry *e = mount_at(a, in->visible_mount);
	unsigned idx;

	if (!e)
		return false;
	FOREACH_ARRAY (n, a->snap->nodes, a->snap->n_nodes)
		if (node_is_slave(n, e->mountpoint, in->dev, &idx) && idx == index)
			return true;
	return false;
}

CHECK(devpts_orphan_in_use)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;

	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		const struct mount_entry *first = mount_at(a, in->mounts[0]);
		const struct instance *vis;
		json_object *ev, *holders = NULL, *mps;
		_cleanup_free_ char *pids = NULL;
		size_t n = 0;
		struct finding *f;
		char dev[24];

		if (!in->covered)
			continue;
		vis = visible_instance_at(a, first->mountpoint);
		FOREACH_ARRAY (h, s->holders, s->n_holders) {
			json_object *o;
			char *np;

			if (h->dev != in->dev)
				continue;
			if (!holders)
				holders = json_object_new_array();
			if (n++ >= EVIDENCE_LIST_MAX)
				continue;
			o = json_object_new_object();
			json_object_object_add(o, "pid", json_object_new_int64(h->pid));
			json_object_object_add(o, "comm", json_object_new_string(h->comm ?: ""));
			json_object_object_add(o, "index", json_object_new_int64(h->index));
			json_object_object_add(
			    o, "colliding_index",
			    json_object_new_boolean(vis && slave_exists(a, vis, h->index)));
			json_object_array_add(holders, o);
			if (asprintf(&np, "%s%s%d (%s)", pids ?: "", pids ? ", " : "", h->pid,
				     h->comm ?: "?") < 0) {
				json_object_put(holders);
				return -ENOMEM;
			}
			free(pids);
			pids = np;
		}
		if (!holders)
			continue;

		mps = json_object_new_array();
		ev = json_object_new_object();
		json_object_object_add(ev, "device", json_new_devnum(in->dev));
		json_object_object_add(ev, "mountpoints", mps);
		json_object_object_add(ev, "visible_device",
				       vis ? json_new_devnum(vis->dev) : NULL);
		json_object_object_add(ev, "holders", holders);
		json_object_object_add(ev, "holders_total", json_object_new_int64((int64_t)n));
		f = findings_add(out, info, info->severity, ev);
		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < in->n_mounts; i++) {
			const struct mount_entry *m = mount_at(a, in->mounts[i]);
			json_object_array_add(mps, json_object_new_string(m->mountpoint));
			if (finding_add_mount(f, m->id, m->dev) < 0)
				return -ENOMEM;
		}
		if (set_printf(
			&f->summary,
			"covered devpts instance %s under %s still has %zu pty fd(s) open: their "
			"/dev/pts/N names point at other ptys",
			format_devnum(in->dev, dev), first->mountpoint, n) < 0 ||
		    set_printf(
			&f->remedy,
			"end the sessions holding them (pid %s), then remove the duplicate devpts "
			"mount",
			pids) < 0 ||
		    set_printf(&f->mountpoint, "%s", first->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

CHECK(devpts_shared_instance)
{
	const struct analysis *a = ctx->a;
	const struct mount_table *t = ctx->snap->mounts;

	if (a->multi_instance || !a->serving)
		return 0;
	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];
		struct finding *f;
		json_object *ev;
		char dev[24];

		if (!a->reachable[i] || !streq(e->fstype, "devpts") || e->dev != a->serving->dev ||
		    i == a->serving_mount)
			continue;
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "mount_id", json_object_new_int64(e->id));
		json_object_object_add(ev, "device", json_new_devnum(e->dev));
		json_object_object_add(ev, "options", json_object_new_string(e->super_options));
		json_object_object_add(ev, "system_mountpoint",
				       json_object_new_string(serving_mountpoint(a)));
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, e->dev) < 0 ||
		    set_printf(&f->summary,
			       "devpts at %s is the system instance %s: mounting or remounting it "
			       "changes the options of %s",
			       e->mountpoint, format_devnum(e->dev, dev),
			       serving_mountpoint(a)) < 0 ||
		    set_printf(&f->remedy,
			       "umount %s && mount -t devpts -o newinstance,ptmxmode=0666,gid=%u,"
			       "mode=620 devpts %s",
			       e->mountpoint, (unsigned)ctx->snap->tty_gid, e->mountpoint) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

CHECK(devpts_foreign_defaults)
{
	const struct analysis *a = ctx->a;

	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		const struct mount_entry *e = mount_at(a, in->visible_mount);
		struct finding *f;
		json_object *ev;
		char mode[8];

		if (in->serving || in->covered || in->options.has_gid)
			continue;
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "mount_id", json_object_new_int64(e->id));
		json_object_object_add(ev, "device", json_new_devnum(in->dev));
		json_object_object_add(ev, "options", json_object_new_string(e->super_options));
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, in->dev) < 0 ||
		    set_printf(
			&f->summary,
			"devpts at %s has no gid= (mode %s): its ptys get the creator's group",
			e->mountpoint, format_mode(in->options.mode, mode)) < 0 ||
		    set_printf(&f->remedy, "mount -o remount,gid=%u,mode=620 %s",
			       (unsigned)ctx->snap->tty_gid, e->mountpoint) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

CHECK(pty_slave_perms)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	const struct instance *in = a->serving;
	const struct mount_entry *e = mount_at(a, a->serving_mount);
	_cleanup_free_ char *paths = NULL;
	json_object *slaves = NULL, *ev;
	struct finding *f;
	size_t n = 0;
	unsigned idx;

	if (!in || !e)
		return 0;
	FOREACH_ARRAY (node, s->nodes, s->n_nodes) {
		bool mode_ok = (node->mode & 0777) == 0620 || (node->mode & 0777) == 0600;
		json_object *o;

		if (!node_is_slave(node, e->mountpoint, in->dev, &idx) ||
		    (node->gid == s->tty_gid && mode_ok))
			continue;
		if (!slaves)
			slaves = json_object_new_array();
		if (n++ >= EVIDENCE_LIST_MAX)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "index", json_object_new_int64(idx));
		json_object_object_add(o, "path", json_object_new_string(node->path));
		json_object_object_add(o, "uid", json_object_new_int64(node->uid));
		json_object_object_add(o, "gid", json_object_new_int64(node->gid));
		json_object_object_add(o, "mode", json_new_mode(node->mode));
		json_object_array_add(slaves, o);
		if (n <= 8) {
			char *np;
			if (asprintf(&np, "%s%s%s", paths ?: "", paths ? " " : "", node->path) <
			    0) {
				json_object_put(slaves);
				return -ENOMEM;
			}
			free(paths);
			paths = np;
		}
	}
	if (!slaves)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
	json_object_object_add(ev, "slaves", slaves);
	json_object_object_add(ev, "slaves_total", json_object_new_int64((int64_t)n));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, e->id, in->dev) < 0 ||
	    set_printf(
		&f->summary,
		"%zu pty slave(s) under %s are not group %u with mode 620/600: created while "
		"the devpts options were wrong",
		n, e->mountpoint, (unsigned)s->tty_gid) < 0 ||
	    set_printf(&f->remedy, "chgrp %u %s%s && chmod 0620 %s%s", (unsigned)s->tty_gid, paths,
		       n > 8 ? " ..." : "", paths, n > 8 ? " ..." : "") < 0 ||
	    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(pt_chown_setuid)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_free_ char *paths = NULL;
	json_object *helpers = NULL, *ev;
	enum severity sev;
	struct finding *f;

	FOREACH_ARRAY (h, s->helpers, s->n_helpers) {
		json_object *o;
		char *np;

		if (!(h->mode & 04000) || h->uid != 0)
			continue;
		if (!helpers)
			helpers = json_object_new_array();
		o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(h->path));
		json_object_object_add(o, "mode", json_new_mode(h->mode));
		json_object_object_add(o, "uid", json_object_new_int64(h->uid));
		json_object_array_add(helpers, o);
		if (asprintf(&np, "%s%s%s", paths ?: "", paths ? " " : "", h->path) < 0) {
			json_object_put(helpers);
			return -ENOMEM;
		}
		free(paths);
		paths = np;
	}
	if (!helpers)
		return 0;
	sev = s->user_namespaces_max > 0 ? SEVERITY_CRITICAL : SEVERITY_WARNING;
	ev = json_object_new_object();
	json_object_object_add(ev, "helpers", helpers);
	json_object_object_add(ev, "user_namespaces_max",
			       json_object_new_int64(s->user_namespaces_max));
	f = findings_add(out, info, sev, ev);
	if (!f ||
	    set_printf(&f->summary, "setuid-root pt_chown installed: %s%s", paths,
		       sev == SEVERITY_CRITICAL
			   ? " (user namespaces are enabled: CVE-2013-2207 is exploitable)"
			   : "") < 0 ||
	    set_printf(&f->remedy, "chmod u-s %s", paths) < 0)
		return -ENOMEM;
	return 0;
}

CHECK(pty_capacity)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	long limit = s->pty_max - (s->initial_mount_ns ? 0 : s->pty_reserve);
	struct finding *f;
	json_object *ev;

	if (limit > 0 && s->pty_nr * 10 >= limit * 9) {
		ev = json_object_new_object();
		json_object_object_add(ev, "pty_nr", json_object_new_int64(s->pty_nr));
		json_object_object_add(ev, "pty_max", json_object_new_int64(s->pty_max));
		json_object_object_add(ev, "pty_reserve", json_object_new_int64(s->pty_reserve));
		json_object_object_add(ev, "limit", json_object_new_int64(limit));
		f = findings_add(out, info, info->severity, ev);
		if (!f ||
		    set_printf(&f->summary,
			       "%ld of %ld allocatable ptys are in use (kernel.pty.nr)", s->pty_nr,
			       limit) < 0 ||
		    set_printf(&f->remedy, "sysctl -w kernel.pty.max=%ld", s->pty_max * 2) < 0)
			return -ENOMEM;
	}

	if (a->serving && a->serving->options.has_max && a->serving->options.max > 0) {
		const struct mount_entry *e = mount_at(a, a->serving_mount);
		unsigned in_use = 0, idx;

		FOREACH_ARRAY (node, s->nodes, s->n_nodes)
			in_use += e && node_is_slave(node, e->mountpoint, a->serving->dev, &idx);
		if ((unsigned long)in_use * 10 < (unsigned long)a->serving->options.max * 9)
			return 0;
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "max", json_object_new_int64(a->serving->options.max));
		json_object_object_add(ev, "in_use", json_object_new_int64(in_use));
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, e->dev) < 0 ||
		    set_printf(&f->summary, "%u of max=%u ptys are in use on %s", in_use,
			       a->serving->options.max, e->mountpoint) < 0 ||
		    set_printf(&f->remedy, "mount -o remount,max=%u %s",
			       a->serving->options.max * 2, e->mountpoint) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

CHECK(fstab_devpts_options)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_(fstab_iter_done) struct fstab_iter it;
	struct fstab_entry fe;
	int r;

	fstab_iter_init(&it, s->fstab, s->fstab ? strlen(s->fstab) : 0);
	while ((r = fstab_iter_next(&it, &fe)) > 0) {
		_cleanup_free_ char *gid = NULL, *mode = NULL;
		const char *opts, *mountpoint = fe.file;
		unsigned line = fe.line;
		unsigned gid_v;
		mode_t mode_v = 0600;
		bool gid_ok, mode_ok, has_mode;
		struct finding *f;
		json_object *ev;

		if (!streq(fe.vfstype, "devpts"))
			continue;
		opts = fe.options ?: "defaults";
		gid_ok = option_get(opts, "gid", &gid) && parse_uint(gid, &gid_v) == 0 &&
			 gid_v == s->tty_gid;
		has_mode = option_get(opts, "mode", &mode);
		if (has_mode && parse_mode(mode, &mode_v) < 0)
			mode_v = 07777;
		mode_ok = mode_is_healthy(ctx->policy, mode_v);
		if (gid_ok && mode_ok)
			continue;
		ev = json_object_new_object();
		json_object_object_add(ev, "file", json_object_new_string("/etc/fstab"));
		json_object_object_add(ev, "line", json_object_new_int64(line));
		json_object_object_add(ev, "mountpoint", json_object_new_string(mountpoint));
		json_object_object_add(ev, "options", json_object_new_string(opts));
		f = findings_add(out, info, info->severity, ev);
		if (!f ||
		    set_printf(
			&f->summary, "/etc/fstab line %u mounts devpts on %s with \"%s\": %s%s%s",
			line, mountpoint, opts, gid_ok ? "" : "no gid=tty",
			!gid_ok && !mode_ok ? ", " : "", mode_ok ? "" : "no mode=620/600") < 0 ||
		    set_printf(&f->remedy,
			       "edit /etc/fstab line %u to: devpts %s devpts gid=%u,mode=%03o 0 0",
			       line, mountpoint, (unsigned)s->tty_gid,
			       /* no mode= at all: name the traditional mode, not the default */
			       (unsigned)wanted_mode(ctx->policy, has_mode ? mode_v : 07777)) < 0 ||
		    set_printf(&f->mountpoint, "%s", mountpoint) < 0)
			return -ENOMEM;
	}
	return r;
}

CHECK(kernel_single_instance)
{
	struct finding *f;
	json_object *ev;

	if (ctx->a->multi_instance)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "kernel", json_object_new_string(ctx->snap->kernel_release));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary,
		       "kernel %s predates 4.7: devpts mounts without newinstance share one "
		       "instance",
		       ctx->snap->kernel_release) < 0 ||
	    set_printf(&f->remedy, "%s", info->remedy) < 0)
		return -ENOMEM;
	return 0;
}
