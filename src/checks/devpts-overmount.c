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

/* One stack of devpts mounts: its mounts bottom first (chain, top at 0), where it is. */
struct stack {
	const struct mount_entry *top;
	size_t chain[64], n, n_devpts;
	const struct mount_entry *from_initramfs; /* the lowest devpts born in the initramfs */
};

/* A stack nothing reaches (the old /dev under a container's new one): a fact. */
static int describe_hidden(const struct analysis *a, const struct stack *st, size_t hidden_by,
			   struct finding *f)
{
	const struct mount_entry *h = analysis_mount(a, hidden_by);

	if (set_printf(&f->summary,
		       "%zu devpts mounts are stacked on %s, all hidden by mount %u on %s: none "
		       "of them is reachable by path",
		       st->n_devpts, st->top->mountpoint, h ? h->id : 0,
		       h ? h->mountpoint : "?") < 0 ||
	    set_printf(&f->remedy,
		       "nothing to do for the ptys reached by path; the hidden instances go away "
		       "with the last process holding one of their ptys") < 0)
		return -ENOMEM;
	return 0;
}

/* A devpts that arrived by propagation from a peer mounted elsewhere (a chroot's --rbind
 * /dev on a shared /dev), or (to) one mounted here and propagated to a peer: 1 when the stack is
 * that case (described), 0 when not, -ENOMEM. */
static int describe_propagated(const struct analysis *a, const struct stack *st, json_object *ev,
			       bool to, struct finding *f)
{
	const struct mount_table *t = a->snap->mounts;
	const struct mount_entry *e = st->top, *pm, *mm, *bind;
	size_t member = NO_MOUNT, peer = propagation_peer(a, st->chain, st->n, to, &member);

	if (peer == NO_MOUNT)
		return 0;
	pm = &t->entries[peer];
	mm = &t->entries[member];
	bind = bind_below(a, to ? st->chain[st->n - 1] : peer);
	add_peer(a, ev, to ? "propagated_to" : "propagated_from", peer, mm);
	if (!to)
		return set_printf(&f->summary,
				  "%zu devpts mounts are stacked on %s: mount %u arrived by mount "
				  "propagation, a peer (shared:%u) of mount %u on %s",
				  st->n_devpts, e->mountpoint, mm->id, mm->shared, pm->id,
				  pm->mountpoint) < 0 ||
			       set_printf(
				   &f->remedy,
				   "devpts mounted on %s propagated here through a shared "
				   "bind: make that bind a slave before mounting in it (mount "
				   "--make-rslave %s), then, once nothing holds the extra "
				   "instance: umount %s",
				   pm->mountpoint, bind ? bind->mountpoint : pm->mountpoint,
				   e->mountpoint) < 0
			   ? -ENOMEM
			   : 1;
	return set_printf(&f->summary,
			  "%zu devpts mounts are stacked on %s: mount %u, mounted here on a shared "
			  "bind (shared:%u), propagated to %s as mount %u",
			  st->n_devpts, e->mountpoint, mm->id, mm->shared, pm->mountpoint,
			  pm->id) < 0 ||
		       set_printf(&f->remedy,
				  "the devpts mounted on %s also covers %s through a shared bind: "
				  "once nothing holds its ptys, umount %s (the unmount propagates "
				  "to its copies), and make the bind a slave before mounting in it "
				  "again (mount --make-rslave %s)",
				  e->mountpoint, pm->mountpoint, e->mountpoint,
				  bind ? bind->mountpoint : e->mountpoint) < 0
		   ? -ENOMEM
		   : 1;
}

/* A plain stack: at the judged root's /dev/pts or from the initramfs, boot mounted devpts twice;
 * elsewhere, the setup of a chroot, build root or container did. */
static int describe_plain(const struct stack *st, struct finding *f)
{
	const struct mount_entry *e = st->top, *ini = st->from_initramfs;

	if (!ini && !streq(e->mountpoint, "/dev/pts"))
		return set_printf(&f->summary,
				  "%zu devpts mounts are stacked on %s; only the top one (mount "
				  "%u) is reachable",
				  st->n_devpts, e->mountpoint, e->id) < 0 ||
			       set_printf(
				   &f->remedy,
				   "find what mounted devpts on %s a second time (the setup "
				   "script of a chroot, build root or container) and drop one; "
				   "then, once nothing holds the covered instance: umount %s",
				   e->mountpoint, e->mountpoint) < 0
			   ? -ENOMEM
			   : 0;
	if ((ini && ini != e ? set_printf(&f->summary,
					  "%zu devpts mounts are stacked on %s: mount %u was "
					  "mounted in the initramfs and moved here, mount %u "
					  "mounted on top of it after switch-root",
					  st->n_devpts, e->mountpoint, ini->id, e->id)
			     : set_printf(&f->summary,
					  "%zu devpts mounts are stacked on %s; only the top one "
					  "(mount %u) is reachable",
					  st->n_devpts, e->mountpoint, e->id)) < 0 ||
	    set_printf(&f->remedy,
		       "find what mounts devpts twice at boot (fstab and initramfs or init "
		       "scripts) and drop one; then, once nothing holds the covered instance: "
		       "umount %s",
		       e->mountpoint) < 0)
		return -ENOMEM;
	return 0;
}

/* The stack whose top mount is top, walked down to its bottom; false when it holds fewer than
 * two devpts mounts. */
static bool stack_at(const struct analysis *a, size_t top, struct stack *st)
{
	const struct mount_table *t = a->snap->mounts;

	*st = (struct stack){ .top = &t->entries[top] };
	for (size_t cur = top; cur != NO_MOUNT && st->n < ELEMENTSOF(st->chain);) {
		size_t p = a->parent[cur];

		st->chain[st->n++] = cur;
		st->n_devpts += streq(t->entries[cur].fstype, "devpts");
		if (p == NO_MOUNT || !streq(t->entries[p].mountpoint, st->top->mountpoint) ||
		    a->stacked_on[p] != cur)
			break;
		cur = p;
	}
	return st->n_devpts >= 2;
}

static int devpts_overmount(const struct check_context *ctx, const struct check_info *info,
			    struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct mount_table *t = ctx->snap->mounts;

	for (size_t top = 0; top < t->n_entries; top++) {
		json_object *ev, *stack;
		struct finding *f;
		struct stack st;
		size_t hidden_by;
		int r;

		if (a->stacked_on[top] != NO_MOUNT || !stack_at(a, top, &st))
			continue;
		hidden_by = a->reachable[top] ? NO_MOUNT : a->covered_by[top];
		stack = json_object_new_array();
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint",
				       json_object_new_string(st.top->mountpoint));
		json_object_object_add(ev, "stack", stack);
		json_object_object_add(ev, "hidden", json_object_new_boolean(!a->reachable[top]));
		if (!a->reachable[top])
			json_object_object_add(ev, "hidden_by", check_json_mount(a, hidden_by));
		check_add_origin(ctx, ev, top);
		f = findings_add(out, info, a->reachable[top] ? info->severity : SEVERITY_INFO, ev);
		if (!f)
			return -ENOMEM;
		for (size_t i = st.n; i-- > 0;) {
			const struct mount_entry *m = &t->entries[st.chain[i]];
			json_object *jm = check_json_mount(a, st.chain[i]);

			/* Born in the initramfs (the hook's record knows its device)? */
			if (streq(m->fstype, "devpts") && initramfs_instance(ctx->snap, m->dev)) {
				json_object_object_add(jm, "origin",
						       json_object_new_string("initramfs"));
				if (!st.from_initramfs)
					st.from_initramfs = m;
			}
			json_object_array_add(stack, jm);
			if (streq(m->fstype, "devpts") && finding_add_mount(f, m->id, m->dev) < 0)
				return -ENOMEM;
		}
		if (!a->reachable[top])
			r = describe_hidden(a, &st, hidden_by, f);
		else if ((r = describe_propagated(a, &st, ev, false, f)) == 0 &&
			 (r = describe_propagated(a, &st, ev, true, f)) == 0)
			r = describe_plain(&st, f);
		if (r < 0 || set_printf(&f->mountpoint, "%s", st.top->mountpoint) < 0)
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
