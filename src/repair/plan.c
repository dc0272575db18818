/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Planning: the actions for the repairable findings of one audit (repair/repair.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "repair/action.h"
#include "snapshot/devpts-mode.h"
#include "util/string-util.h"
#include "util/json-util.h"
#include "util/path.h"
#include "util/alloc.h"

static struct repair_action *add_action(struct repair_plan *p, const struct finding *f,
					enum action_kind kind)
{
	struct repair_action *a;

	if (GROW(p->actions, p->allocated, p->n_actions + 1) < 0)
		return NULL;
	a = &p->actions[p->n_actions++];
	*a = (struct repair_action){ .finding = f, .kind = kind, .result = ACTION_PLANNED };
	return a;
}

static bool wanted(const struct repair_options *o, const char *id)
{
	if (!o->only)
		return true;
	for (char **i = o->only; *i; i++)
		if (streq(*i, id))
			return true;
	return false;
}

/* A failed allocation that another finding predicted (pty-allocation-fails naming a warning in
 * predicted_by) is repaired with that finding, when this plan repairs it: nothing of its own to
 * refuse. */
static bool repaired_with_another(const struct findings *fs, const struct finding *f,
				  const struct repair_options *o)
{
	const struct check_info *by = f->predicted_by;

	if (!by || !wanted(o, by->id))
		return false;
	FOREACH_ARRAY (g, fs->items, fs->n_items)
		if (g->check == by && !g->manual && g->check->repair != REPAIR_NONE)
			return true;
	return false;
}

static int plan_remount(struct repair_plan *p, const struct analysis *an, const struct finding *f,
			const struct repair_options *o, bool owner, bool ptmx)
{
	const struct mount_entry *e;
	struct repair_action *a;

	if (!(e = analysis_serving_mount(an)))
		return 0;
	a = add_action(p, f, ACTION_REMOUNT);
	if (!a || !(a->path = strdup(e->mountpoint)))
		return -ENOMEM;
	a->mount_id = e->id;
	a->dev = e->dev;
	/* With what the daemon or the initramfs recorded for this very instance healthy. */
	a->fix = devpts_fix_for(an->snap, e->dev, o->policy, owner, ptmx);
	if (!an->reachable[an->serving_mount])
		return action_outcome(
		    a, ACTION_REFUSED,
		    "mount %u is covered: ptsguard never touches a covered instance", e->id);
	return action_remount_command(a, &an->serving->options, o);
}

static int plan_slaves(struct repair_plan *p, const struct analysis *an, const struct finding *f,
		       const struct repair_options *o)
{
	const struct mount_entry *e;
	mode_t mode;

	if (!(e = analysis_serving_mount(an)))
		return 0;
	/* The mode the instance gives new ptys once repaired: the one the remedy names too. */
	mode = devpts_instance_mode(an->snap, an->serving->dev, &an->serving->options, o->policy);
	FOREACH_ARRAY (n, an->snap->nodes, an->snap->n_nodes) {
		bool ok_mode = devpts_mode_healthy(o->policy, n->mode); /* as pty-slave-perms */
		struct repair_action *a;
		unsigned idx;

		if (!node_is_slave(n, e->mountpoint, an->serving->dev, &idx) ||
		    (n->gid == o->tty_gid && ok_mode))
			continue;
		a = add_action(p, f, ACTION_SLAVE);
		if (!a || !(a->path = strdup(n->path)))
			return -ENOMEM;
		a->dev = n->dev;
		a->ino = n->ino;
		a->mode = mode;
		a->uid = n->uid;
		a->ctime = n->ctime;
		if (set_printf(&a->command, "chgrp %u %s && chmod 0%03o %s", (unsigned)o->tty_gid,
			       n->path, (unsigned)mode, n->path) < 0)
			return -ENOMEM;
		if (n->uid == 0)
			action_outcome(
			    a, ACTION_REFUSED,
			    "owned by root: ptsguard never changes a slave owned by root");
	}
	return 0;
}

/* pty-owner-not-session-user: the slave its evidence names, given to the session's uid. */
static int plan_session_owner(struct repair_plan *p, const struct analysis *an,
			      const struct finding *f)
{
	_cleanup_(json_object_putp) json_object *path = NULL, *session = NULL;
	json_object *uid, *gid;
	const struct node *n;
	struct repair_action *a;

	(void)finding_evidence_get(f, "path", &path);
	(void)finding_evidence_get(f, "session", &session);
	uid = session ? json_object_object_get(session, "uid") : NULL;
	gid = session ? json_object_object_get(session, "gid") : NULL;
	if (!path || !uid || !gid ||
	    !(n = snapshot_find_node(an->snap, json_object_get_string(path))))
		return 0;
	a = add_action(p, f, ACTION_SLAVE_OWNER);
	if (!a || !(a->path = strdup(n->path)))
		return -ENOMEM;
	a->dev = n->dev;
	a->ino = n->ino;
	a->uid = n->uid;
	a->ctime = n->ctime;
	a->owner = (uid_t)json_object_get_int64(uid);
	a->owner_gid = (gid_t)json_object_get_int64(gid);
	if (set_printf(&a->command, "chown %u %s", (unsigned)a->owner, n->path) < 0)
		return -ENOMEM;
	if (a->owner == 0 || n->uid != 0)
		action_outcome(a, ACTION_REFUSED,
			       "refused: %s is no longer root's, or its session is", n->path);
	return 0;
}

/* The devpts at the pts directory beside /dev/ptmx, reachable, at its root. */
static const struct instance *instance_beside_ptmx(const struct analysis *an, size_t *ret_mount)
{
	_cleanup_free_ char *dir = path_dirname(PTMX_PATH),
			    *pts = dir ? path_join(dir, "pts") : NULL;

	size_t i = pts ? analysis_mount_at(an, pts) : NO_MOUNT;
	const struct mount_entry *e = i != NO_MOUNT ? &an->snap->mounts->entries[i] : NULL;

	if (!e || !streq(e->fstype, "devpts") || !streq(e->root, "/"))
		return NULL;
	*ret_mount = i;
	return analysis_find_instance(an, e->dev);
}

/* A missing /dev/ptmx: a char node, or (when the policy asks and the instance allows it) the
 * symlink systemd's PrivateDevices= and containers use. */
static int plan_ptmx(struct repair_plan *p, const struct analysis *an, const struct finding *f,
		     const struct repair_options *o)
{
	size_t mount = NO_MOUNT;
	const struct instance *in = o->ptmx_symlink ? instance_beside_ptmx(an, &mount) : NULL;
	struct repair_action *a;

	if (in && (in->options.ptmxmode & 0777) == 0666) {
		a = add_action(p, f, ACTION_SYMLINK);
		if (!a || !(a->path = strdup(PTMX_PATH)) ||
		    set_printf(&a->command, "ln -s pts/ptmx %s", PTMX_PATH) < 0)
			return -ENOMEM;
		a->dev = in->dev;
		a->mount_id = an->snap->mounts->entries[mount].id;
		return 0;
	}
	a = add_action(p, f, ACTION_MKNOD);
	if (!a || !(a->path = strdup(PTMX_PATH)) ||
	    set_printf(&a->command, "mknod -m 0666 %s c 5 2", PTMX_PATH) < 0)
		return -ENOMEM;
	a->rdev = makedev(PTMX_RDEV_MAJOR, PTMX_RDEV_MINOR);
	return 0;
}

/* /dev/tty: made when missing, given mode 0666 when only its mode is wrong (dev-tty-broken's
 * evidence says which, and where its symlink chain ends); anything else is for a person. */
static int plan_dev_tty(struct repair_plan *p, const struct analysis *an, const struct finding *f)
{
	_cleanup_(json_object_putp) json_object *problem = NULL, *resolved = NULL;
	const struct node *n;
	struct repair_action *a;

	(void)finding_evidence_get(f, "problem", &problem);
	(void)finding_evidence_get(f, "resolved", &resolved);
	if (problem && streq(json_object_get_string(problem), "missing")) {
		a = add_action(p, f, ACTION_MKNOD);
		if (!a || !(a->path = strdup(DEV_TTY_PATH)) ||
		    set_printf(&a->command, "mknod -m 0666 %s c %d %d", DEV_TTY_PATH,
			       DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR) < 0)
			return -ENOMEM;
		a->rdev = makedev(DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR);
		return 0;
	}
	if (!problem || !streq(json_object_get_string(problem), "mode") || !resolved ||
	    !(n = snapshot_find_node(an->snap, json_object_get_string(resolved))))
		return 0;
	a = add_action(p, f, ACTION_CHMOD);
	if (!a || !(a->path = strdup(n->path)) ||
	    set_printf(&a->command, "chmod 0666 %s", n->path) < 0)
		return -ENOMEM;
	a->dev = n->dev;
	a->ino = n->ino;
	a->rdev = makedev(DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR);
	return 0;
}

int repair_plan(const struct analysis *an, const struct findings *fs,
		const struct repair_options *o, struct repair_plan *p)
{
	bool owner = false, ptmx = false;
	int r = 0;

	/* One remount fixes everything wrong with the serving instance: an owner fix verified
	 * through a still locked ptmx node would fail although it was right. */
	FOREACH_ARRAY (f, fs->items, fs->n_items) {
		if (!wanted(o, f->check->id) || f->check->repair != REPAIR_REMOUNT)
			continue;
		owner = owner || f->check->remount_owner;
		ptmx = ptmx || f->check->remount_ptmx;
	}
	FOREACH_ARRAY (f, fs->items, fs->n_items) {
		struct repair_action *a;

		if (!wanted(o, f->check->id))
			continue;
		switch (f->manual ? REPAIR_NONE : f->check->repair) {
		case REPAIR_REMOUNT:
			r = plan_remount(p, an, f, o, owner, ptmx);
			break;
		case REPAIR_SLAVES:
			r = plan_slaves(p, an, f, o);
			break;
		case REPAIR_CREATE_PTMX:
			r = plan_ptmx(p, an, f, o);
			break;
		case REPAIR_DEV_TTY:
			r = plan_dev_tty(p, an, f);
			break;
		case REPAIR_SESSION_OWNER:
			r = plan_session_owner(p, an, f);
			break;
		case REPAIR_CHMOD_PTMX:
			if (!an->ptmx_final)
				break;
			a = add_action(p, f, ACTION_CHMOD);
			if (!a || !(a->path = strdup(an->ptmx_final->path)) ||
			    set_printf(&a->command, "chmod 0666 %s", an->ptmx_final->path) < 0)
				return -ENOMEM;
			a->dev = an->ptmx_final->dev;
			a->ino = an->ptmx_final->ino;
			a->rdev = makedev(PTMX_RDEV_MAJOR, PTMX_RDEV_MINOR);
			break;
		case REPAIR_NONE:
		default:
			if (o->repairable_only || repaired_with_another(fs, f, o))
				break;
			a = add_action(p, f, ACTION_MANUAL);
			if (!a)
				return -ENOMEM;
			action_outcome(
			    a, ACTION_REFUSED,
			    "not repaired automatically (ptsguard never unmounts, deletes or "
			    "guesses); remedy: %s",
			    f->remedy ?: f->check->remedy);
		}
		if (r < 0)
			return r;
	}
	return 0;
}
