/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>

#include "checks/check.h"
#include "snapshot/devpts-mode.h"
#include "snapshot/idmap.h"
#include "util/string-util.h"

json_object *check_json_mount(const struct analysis *a, size_t i)
{
	const struct mount_entry *e = analysis_mount(a, i);
	json_object *o;

	if (!e)
		return NULL;
	o = json_object_new_object();
	json_add_new(o, "mount_id", json_object_new_int64(e->id));
	json_add_new(o, "mountpoint", json_object_new_string(e->mountpoint));
	json_add_new(o, "device", json_new_devnum(e->dev));
	json_add_new(o, "fstype", json_object_new_string(e->fstype));
	json_add_new(o, "options", json_object_new_string(e->super_options));
	return o;
}

unsigned check_serving_mount_id(const struct analysis *a)
{
	const struct mount_entry *e = analysis_serving_mount(a);
	return e ? e->id : 0;
}

const char *check_serving_mountpoint(const struct analysis *a)
{
	const struct mount_entry *e = analysis_serving_mount(a);
	return e ? e->mountpoint : "/dev/pts";
}

const char *check_describe_node(const struct node *n)
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

json_object *check_evidence_at(const struct mount_entry *e, const char *mp, dev_t dev)
{
	json_object *ev = json_object_new_object();

	json_add_new(ev, "mountpoint", json_object_new_string(mp ?: e->mountpoint));
	json_add_new(ev, "mount_id", e ? json_object_new_int64(e->id) : NULL);
	json_add_new(ev, "device", json_new_devnum(dev));
	json_add_new(ev, "options", json_object_new_string(e ? e->super_options : ""));
	return ev;
}

json_object *check_evidence_ptmx(const struct analysis *a)
{
	json_object *ev = json_object_new_object();

	json_add_new(ev, "path", json_object_new_string(PTMX_PATH));
	json_add_new(ev, "kind", json_object_new_string(ptmx_kind_to_string(a->ptmx_kind)));
	json_add_new(ev, "target", json_new_string_or_null(a->ptmx ? a->ptmx->target : NULL));
	return ev;
}

json_object *check_options_evidence(const struct check_context *ctx, const struct instance *in,
				    const char *mp)
{
	const struct mount_entry *e = analysis_serving_mount(ctx->a);
	json_object *ev = check_evidence_at(e, mp, in->dev), *modes = json_object_new_array();

	json_add_new(ev, "gid",
		     in->options.has_gid ? json_object_new_int64(in->options.gid) : NULL);
	json_add_new(ev, "mode", json_new_mode(in->options.mode));
	json_add_new(ev, "expected_gid", json_object_new_int64(ctx->snap->tty_gid));
	mode_t healthy[2];
	size_t n = devpts_modes_healthy(ctx->policy, healthy);

	for (size_t i = 0; i < n; i++)
		json_object_array_add(modes, json_new_mode(healthy[i]));
	json_add_new(ev, "expected_modes", modes);
	return ev;
}

const char *check_healthy_modes(const struct check_policy *p, char buf[static 8])
{
	mode_t healthy[2];
	size_t n = devpts_modes_healthy(p, healthy);

	if (n == 1)
		snprintf(buf, 8, "%03o", (unsigned)healthy[0]);
	else
		snprintf(buf, 8, "%03o/%03o", (unsigned)healthy[0], (unsigned)healthy[1]);
	return buf;
}

/* A userland that insists on the tty group (glibc before 2.33, whose grantpt() chowns the slave
 * to it, through pt_chown where it cannot itself): its path, or NULL. */
static const char *userland_needs_tty_group(const struct snapshot *s, json_object **ret_ev)
{
	const char *why = NULL;
	json_object *ev;

	FOREACH_ARRAY (h, s->helpers, s->n_helpers) {
		const char *base = strrchr(h->path, '/');

		if (base && streq(base + 1, "pt_chown")) {
			why = h->path;
			break;
		}
	}
	if (!why && s->userland.glibc_minor > 0 && s->userland.glibc_minor < 33)
		why = s->userland.libc;
	if (!why)
		return NULL;
	ev = json_object_new_object();
	json_object_object_add(ev, "libc", json_new_string_or_null(s->userland.libc));
	json_object_object_add(
	    ev, "glibc",
	    s->userland.glibc_minor ? json_object_new_int64(s->userland.glibc_minor) : NULL);
	json_object_object_add(ev, "pt_chown",
			       why == s->userland.libc ? NULL : json_object_new_string(why));
	*ret_ev = ev;
	return why;
}

int check_set_remount_remedy(struct finding *f, const struct check_context *ctx,
			     const struct instance *in, const char *mp,
			     const struct check_info *info)
{
	struct devpts_fix fix = devpts_fix_for(ctx->snap, in->dev, ctx->policy, info->remount_owner,
					       info->remount_ptmx);
	unsigned outside;

	/* gid= names a group of the mounter's user namespace: one that maps no such gid (a
	 * single-id map, as unshare -r and rootless setups make) refuses the mount (EINVAL). */
	if (info->remount_owner && !idmap_has_inside(ctx->snap->gid_map, ctx->snap->tty_gid)) {
		f->manual = true;
		if (finding_evidence_add(f, "gid_settable", json_object_new_boolean(false)) < 0)
			return -ENOMEM;
		/* A namespace that maps one gid (unshare -r, unprivileged bubblewrap) has one
		 * user: its ptys in its own group harm no one, and nothing better can be set.
		 * Reported for what it is, not as a failure. */
		if (idmap_size(ctx->snap->gid_map) == 1) {
			json_object *old = NULL;
			const char *why = userland_needs_tty_group(ctx->snap, &old);

			/* Unless its userland insists on a tty group it cannot have: then nobody
			 * there gets a pty (grantpt() fails; pt_chown, not setuid here, cannot). */
			if (why) {
				if (finding_evidence_add(f, "single_id_namespace",
							 json_object_new_boolean(true)) < 0 ||
				    finding_evidence_add(f, "old_userland", old) < 0)
					return -ENOMEM;
				return set_printf(
				    &f->remedy,
				    "this namespace maps a single gid, so %s cannot have gid=, and "
				    "its userland (%s) gives every new slave the tty group, which "
				    "it "
				    "cannot name: grantpt() fails and no pty can be had; map a "
				    "range "
				    "that includes gid %u (/etc/subgid and newgidmap, podman "
				    "--userns=auto, unshare --map-auto), or use the runtime's "
				    "fakeroot mode (apptainer or singularity --fakeroot), or an "
				    "image "
				    "with glibc 2.33 or later",
				    mp, why, (unsigned)ctx->snap->tty_gid);
			}
			f->severity = SEVERITY_INFO;
			if (finding_evidence_add(f, "single_id_namespace",
						 json_object_new_boolean(true)) < 0)
				return -ENOMEM;
			return set_printf(&f->remedy,
					  "nothing to do for this namespace's one user: gid=%u "
					  "cannot be set on %s in a user namespace that maps a "
					  "single gid; to give it a tty group, map a range that "
					  "includes gid %u (/etc/subgid, newgidmap)",
					  (unsigned)ctx->snap->tty_gid, mp,
					  (unsigned)ctx->snap->tty_gid);
		}
		return set_printf(
		    &f->remedy,
		    "gid=%u cannot be set on %s here: this user namespace maps no "
		    "gid %u, so the mount fails with EINVAL; map a range that "
		    "includes the tty group (/etc/subgid, newgidmap) to the container "
		    "and mount devpts with gid=%u there",
		    (unsigned)ctx->snap->tty_gid, mp, (unsigned)ctx->snap->tty_gid,
		    (unsigned)ctx->snap->tty_gid);
	}
	/* The host's own instance, judged for a namespace in another user namespace: its groups are
	 * not the host's, so any remount made for it (gid= of its tty group, as the host numbers
	 * that) would change the host's new ptys too. Not before those: they remount nothing, and
	 * a single-id namespace's finding stays info wherever its instance is. */
	if (snapshot_is_host_instance(ctx->snap, in->dev) && !snapshot_in_host_userns(ctx->snap)) {
		f->manual = true;
		if (finding_evidence_add(f, "host_instance", json_object_new_boolean(true)) < 0)
			return -ENOMEM;
		return set_printf(
		    &f->remedy,
		    "do not remount %s for this namespace: it is the host's own devpts "
		    "instance (bound from the host's %s), and this namespace's user "
		    "namespace numbers groups otherwise, so a remount made for it "
		    "would change the host's new ptys too; give the namespace a devpts "
		    "instance of its own (see devpts-host-instance)",
		    mp, ctx->snap->ns->host.mountpoint ?: "?");
	}
	/* A gid= this user namespace cannot name came from a mount made outside it: only a root
	 * outside may remount that instance, and gid= is read in that root's numbers, so the
	 * command gives the tty group as the map numbers it. From the host the maps are the
	 * initial namespace's and the host's root is that root. Inside, a map numbers its
	 * outside ids as the parent user namespace does (the host's, or an outer container's
	 * when nested, whose root mounted the instance); and nothing there tells an instance
	 * mounted for the namespace from the host's own bound in (which the branch above
	 * catches from the host): the remedy says so. */
	if (info->remount_owner && in->gid_unmapped &&
	    idmap_to_initial(ctx->snap->gid_map, ctx->snap->tty_gid, &outside) >= 0) {
		_cleanup_free_ char *cmd = NULL;

		fix.tty_gid = outside;
		cmd = devpts_remount_command(&in->options, &fix, mp);
		if (!cmd)
			return -ENOMEM;
		if (snapshot_judged_from_host(ctx->snap))
			return set_printf(
			    &f->remedy,
			    "%s, run by the host's root in this mount namespace (this "
			    "devpts was mounted from outside the namespace's user "
			    "namespace, so nothing inside may remount it; gid %u is its "
			    "tty group %u as the host numbers it)",
			    cmd, outside, (unsigned)ctx->snap->tty_gid);
		return set_printf(
		    &f->remedy,
		    "%s, run in this mount namespace by the root of this user namespace's "
		    "parent: the host's, or an outer container's when this one is nested in it "
		    "(this devpts was mounted from outside this user namespace, so nothing "
		    "inside may remount it; gid %u is its tty group %u as the parent numbers "
		    "it); but not if it is the host's own /dev/pts bound in: that would change "
		    "the host's new ptys too, and this namespace needs a devpts instance of its "
		    "own",
		    cmd, outside, (unsigned)ctx->snap->tty_gid);
	}
	free(f->remedy);
	f->remedy = devpts_remount_command(&in->options, &fix, mp);
	return f->remedy ? 0 : -ENOMEM;
}

void check_add_origin(const struct check_context *ctx, json_object *ev, size_t idx)
{
	struct boot_origin o;

	if (boot_origin(ctx->a, idx, &o) > 0)
		json_object_object_add(ev, "origin", boot_origin_json(&o));
}

const struct instance *check_instance_at(const struct analysis *a, const char *mp)
{
	const struct mount_table *t = a->snap->mounts;
	size_t i = analysis_mount_at(a, mp);

	if (i == NO_MOUNT || !streq(t->entries[i].fstype, "devpts"))
		return NULL;
	return analysis_find_instance(a, t->entries[i].dev);
}

bool check_slave_exists(const struct analysis *a, const struct instance *in, unsigned index)
{
	const struct mount_entry *e = analysis_mount(a, in->visible_mount);
	unsigned idx;

	if (!e)
		return false;
	FOREACH_ARRAY (n, a->snap->nodes, a->snap->n_nodes)
		if (node_is_slave(n, e->mountpoint, in->dev, &idx) && idx == index)
			return true;
	return false;
}

bool check_slave_is_bound(const struct snapshot *s, const struct instance *in, unsigned idx)
{
	char root[16];

	snprintf(root, sizeof(root), "/%u", idx);
	FOREACH_ARRAY (m, in->mounts, in->n_mounts)
		if (streq(s->mounts->entries[*m].root, root))
			return true;
	return false;
}
