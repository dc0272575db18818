/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

/* Mount propagation around a stack (chain runs from its top down; the bottom was there first,
 * whatever made it a peer). The kernel numbers the mount it was asked for before the copies it
 * propagates, so among the peers (same shared:N) of a devpts of the stack at other mountpoints,
 * those with lower ids are where it came from (copies = false) and those with higher ids are its
 * copies (copies = true). Sets *ret_in (the stack's member) and returns the earliest such peer,
 * or NO_MOUNT. */
static size_t propagation_peer(const struct analysis *a, const size_t *chain, size_t n, bool copies,
			       size_t *ret_in)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t k = 0; k + 1 < n; k++) {
		const struct mount_entry *m = &t->entries[chain[k]];
		size_t peer = NO_MOUNT;

		if (!streq(m->fstype, "devpts") || m->shared == 0)
			continue;
		for (size_t i = 0; i < t->n_entries; i++) {
			const struct mount_entry *o = &t->entries[i];

			if (o->shared == m->shared && (copies ? o->id > m->id : o->id < m->id) &&
			    !streq(o->mountpoint, m->mountpoint) &&
			    (peer == NO_MOUNT || o->id < t->entries[peer].id))
				peer = i;
		}
		if (peer != NO_MOUNT) {
			*ret_in = chain[k];
			return peer;
		}
	}
	return NO_MOUNT;
}

/* The shared bind a mount of a stack came through or went out by: its first ancestor at
 * another mountpoint (for a chroot's --rbind /dev, that /dev). NULL when it has none. */
static const struct mount_entry *bind_below(const struct analysis *a, size_t m)
{
	const struct mount_table *t = a->snap->mounts;

	for (size_t b = a->parent[m]; b != NO_MOUNT; b = a->parent[b])
		if (!streq(t->entries[b].mountpoint, t->entries[m].mountpoint))
			return &t->entries[b];
	return NULL;
}

/* evidence.key: the peer of the stack's member at another mountpoint (the same shared:N, so the
 * member's), and which member it is a peer of. */
static void add_peer(const struct analysis *a, json_object *ev, const char *key, size_t peer,
		     const struct mount_entry *member)
{
	json_object *jp = check_json_mount(a, peer);

	json_object_object_add(jp, "peer_group", json_object_new_int64(member->shared));
	json_object_object_add(jp, "peer_of", json_object_new_int64(member->id));
	json_object_object_add(ev, key, jp);
}

static int devpts_overmount(const struct check_context *ctx, const struct check_info *info,
			    struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct mount_table *t = ctx->snap->mounts;

	for (size_t top = 0; top < t->n_entries; top++) {
		const struct mount_entry *e = &t->entries[top];
		size_t chain[64], n = 0, n_devpts = 0, cur, hidden_by, peer, member = NO_MOUNT;
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

		/* A stack nothing reaches (the old /dev under a container's new one): a fact. */
		hidden_by = a->reachable[top] ? NO_MOUNT : a->covered_by[top];
		stack = json_object_new_array();
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "stack", stack);
		json_object_object_add(ev, "hidden", json_object_new_boolean(!a->reachable[top]));
		if (!a->reachable[top])
			json_object_object_add(ev, "hidden_by", check_json_mount(a, hidden_by));
		check_add_origin(ctx, ev, top);
		f = findings_add(out, info, a->reachable[top] ? info->severity : SEVERITY_INFO, ev);
		if (!f)
			return -ENOMEM;
		for (size_t i = n; i-- > 0;) {
			const struct mount_entry *m = &t->entries[chain[i]];
			json_object *jm = check_json_mount(a, chain[i]);

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
		if (hidden_by != NO_MOUNT || !a->reachable[top]) {
			const struct mount_entry *h = analysis_mount(a, hidden_by);

			if (set_printf(
				&f->summary,
				"%zu devpts mounts are stacked on %s, all hidden by mount %u "
				"on %s: none of them is reachable by path",
				n_devpts, e->mountpoint, h ? h->id : 0,
				h ? h->mountpoint : "?") < 0 ||
			    set_printf(&f->remedy,
				       "nothing to do for the ptys reached by path; the hidden "
				       "instances go away with the last process holding one of "
				       "their ptys") < 0 ||
			    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
				return -ENOMEM;
			continue;
		}
		peer = propagation_peer(a, chain, n, false, &member);
		if (peer != NO_MOUNT) {
			const struct mount_entry *pm = &t->entries[peer], *mm = &t->entries[member];
			const struct mount_entry *bind = bind_below(a, peer);

			add_peer(a, ev, "propagated_from", peer, mm);
			if (set_printf(
				&f->summary,
				"%zu devpts mounts are stacked on %s: mount %u arrived by mount "
				"propagation, a peer (shared:%u) of mount %u on %s",
				n_devpts, e->mountpoint, mm->id, mm->shared, pm->id,
				pm->mountpoint) < 0 ||
			    set_printf(
				&f->remedy,
				"devpts mounted on %s propagated here through a shared bind: "
				"make that bind a slave before mounting in it (mount "
				"--make-rslave %s), then, once nothing holds the extra "
				"instance: umount %s",
				pm->mountpoint, bind ? bind->mountpoint : pm->mountpoint,
				e->mountpoint) < 0 ||
			    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
				return -ENOMEM;
			continue;
		}
		peer = propagation_peer(a, chain, n, true, &member);
		if (peer != NO_MOUNT) {
			const struct mount_entry *pm = &t->entries[peer], *mm = &t->entries[member];
			const struct mount_entry *bind = bind_below(a, chain[n - 1]);

			add_peer(a, ev, "propagated_to", peer, mm);
			if (set_printf(
				&f->summary,
				"%zu devpts mounts are stacked on %s: mount %u, mounted here "
				"on a shared bind (shared:%u), propagated to %s as mount %u",
				n_devpts, e->mountpoint, mm->id, mm->shared, pm->mountpoint,
				pm->id) < 0 ||
			    set_printf(
				&f->remedy,
				"the devpts mounted on %s also covers %s through a shared "
				"bind: once nothing holds its ptys, umount %s (the unmount "
				"propagates to its copies), and make the bind a slave before "
				"mounting in it again (mount --make-rslave %s)",
				e->mountpoint, pm->mountpoint, e->mountpoint,
				bind ? bind->mountpoint : e->mountpoint) < 0 ||
			    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
				return -ENOMEM;
			continue;
		}
		/* Not /dev/pts of the judged root and not from the initramfs: not the boot's doing
		 * (a build root's or a chroot's setup that mounted devpts again). */
		if (!from_initramfs && !streq(e->mountpoint, "/dev/pts")) {
			if (set_printf(
				&f->summary,
				"%zu devpts mounts are stacked on %s; only the top one (mount "
				"%u) is reachable",
				n_devpts, e->mountpoint, e->id) < 0 ||
			    set_printf(&f->remedy,
				       "find what mounted devpts on %s a second time (the setup "
				       "script of a chroot, build root or container) and drop one; "
				       "then, once nothing holds the covered instance: umount %s",
				       e->mountpoint, e->mountpoint) < 0 ||
			    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
				return -ENOMEM;
			continue;
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

const struct check_info check_devpts_overmount = {
	.id = "devpts-overmount",
	.severity = SEVERITY_WARNING,
	.message_id = "e21ed20fd98349989c744ade7035adb3",
	.summary = "devpts mounts are stacked on one mountpoint",
	.explanation =
	    "Two or more devpts mounts sit on one mountpoint; only the top one is "
	    "reachable. This is the CentOS 6 pattern (the initramfs devpts is moved to "
	    "/dev/pts, then mount -a mounts another on top) and Slackware 14.1's. Since "
	    "Linux 4.7 each is a separate instance: ptys opened before the second "
	    "mount live on the covered one. A devpts that arrived by mount propagation "
	    "(a chroot's rbind of a shared /dev) is named with the mount it came from, and "
	    "the stack it was mounted on with its copies; a stack elsewhere than /dev/pts "
	    "is not blamed on the boot; a stack hidden as a whole under another mount is "
	    "only reported as info.",
	.remedy = "remove the second devpts mount at boot (fstab or init script); once "
		  "nothing holds the covered instance: umount /dev/pts (unmounts the top "
		  "only if it is the duplicate)",
	.severity_note = "info when the whole stack is hidden under another mount (the old /dev "
			 "under a container's new one): nothing reaches it by path",
	.run = devpts_overmount,
};
