/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

/* The check that names sessions stranded on a devpts instance no mount here shows: an empty
 * /dev/pts after a lazy umount, or a chroot's teardown that propagated. */
#define UNREACHABLE_CHECK_ID "pty-instance-unreachable"
#define LOST_HOLDERS_NAMED   4

/* The remedy's last words when ptys are held where no devpts of this namespace shows them: the
 * holders the snapshot has on an instance mounted nowhere here, named (and put in the evidence
 * as "lost_holders"); else, in the initial mount namespace with no devpts mounted at all, the
 * kernel's count of open ptys. "" when neither. */
static int lost_sessions(const struct check_context *ctx, json_object *ev, char **ret)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_free_ char *named = NULL;
	json_object *lost = NULL;
	unsigned n = 0;

	FOREACH_ARRAY (h, s->holders, s->n_holders) {
		json_object *o;

		if (analysis_find_instance(ctx->a, h->dev))
			continue;
		if (!lost)
			lost = json_object_new_array();
		o = json_object_new_object();
		json_object_object_add(o, "pid", json_object_new_int64(h->pid));
		json_object_object_add(o, "comm", json_new_string_or_null(h->comm));
		json_object_object_add(o, "dev", json_new_devnum(h->dev));
		json_object_object_add(o, "index", json_object_new_int64(h->index));
		json_object_array_add(lost, o);
		if (n++ < LOST_HOLDERS_NAMED &&
		    set_printf(&named, "%s%spid %d (%s) on pts %u", named ?: "", named ? ", " : "",
			       (int)h->pid, h->comm ?: "?", h->index) < 0) {
			json_object_put(lost);
			return -ENOMEM;
		}
	}
	if (lost) {
		json_object_object_add(ev, "lost_holders", lost);
		return set_printf(ret,
				  "; sessions are left on a devpts instance no longer mounted here "
				  "(%s%s): a new devpts does not bring them back, see %s",
				  named, n > LOST_HOLDERS_NAMED ? ", ..." : "",
				  UNREACHABLE_CHECK_ID);
	}
	if (!s->ns && s->initial_mount_ns && ctx->a->n_instances == 0 && s->pty_nr > 0)
		return set_printf(
		    ret,
		    "; kernel.pty.nr counts %ld open ptys that no devpts here shows: if "
		    "sessions were left on an instance unmounted from here, see %s",
		    s->pty_nr, UNREACHABLE_CHECK_ID);
	return set_printf(ret, "%s", "");
}

static int ptmx_no_devpts(const struct check_context *ctx, const struct check_info *info,
			  struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct node *pts;
	_cleanup_free_ char *lost = NULL, *opts = NULL;
	struct finding *f;
	json_object *ev;
	const char *state;

	if (a->route != ROUTE_NO_DEVPTS)
		return 0;
	pts = snapshot_find_node(ctx->snap, a->pts_path);
	state = !pts			    ? "unknown"
		: pts->type == NODE_DIR	    ? "empty directory"
		: pts->type == NODE_MISSING ? "missing"
					    : check_describe_node(pts);
	ev = json_object_new_object();
	json_object_object_add(ev, "ptmx", json_object_new_string(a->ptmx_final->path));
	json_object_object_add(ev, "pts", json_object_new_string(a->pts_path));
	json_object_object_add(ev, "pts_state", json_object_new_string(state));
	if (pts && pts->type == NODE_SYMLINK)
		json_object_object_add(ev, "pts_target", json_new_string_or_null(pts->target));
	if (lost_sessions(ctx, ev, &lost) < 0) {
		json_object_put(ev);
		return -ENOMEM;
	}
	/* A char /dev/ptmx reaches the instance at pts beside it whatever its ptmxmode. */
	opts = devpts_fresh_options(ctx->policy, ctx->snap->tty_gid, false, false);
	f = findings_add(out, info, info->severity, ev);
	if (!f || !opts ||
	    set_printf(&f->summary,
		       "nothing devpts is mounted at %s (%s): every open of %s fails with ENODEV",
		       a->pts_path, state, a->ptmx_final->path) < 0 ||
	    set_printf(&f->mountpoint, "%s", a->pts_path) < 0)
		return -ENOMEM;
	/* The kernel looks for a mount on the name pts itself and never follows a link there;
	 * mkdir -p and mount would follow it, mount on its target (over a devpts already there,
	 * if any) and leave /dev/ptmx failing as before. */
	if (pts && pts->type == NODE_SYMLINK) {
		if (set_printf(&f->remedy,
			       "%s is a symlink (to %s): mkdir -p and mount would follow it and "
			       "mount on its target (stacking a second devpts if one is there), "
			       "where %s never looks; remove the link first: rm %s && mkdir %s && "
			       "mount -t devpts -o %s devpts %s (or, to "
			       "keep the link, mount on its target deliberately with ptmxmode=0666 "
			       "and make %s a symlink to pts/ptmx)%s",
			       a->pts_path, pts->target ?: "?", a->ptmx_final->path, a->pts_path,
			       a->pts_path, opts, a->pts_path, a->ptmx_final->path, lost) < 0)
			return -ENOMEM;
		return 0;
	}
	if (set_printf(&f->remedy, "mkdir -p %s && mount -t devpts -o %s devpts %s%s", a->pts_path,
		       opts, a->pts_path, lost) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_ptmx_no_devpts = {
	.id = "ptmx-no-devpts",
	.severity = SEVERITY_CRITICAL,
	.message_id = "390770a5284b479f8621682585dc1a01",
	.summary = "no devpts is mounted beside /dev/ptmx",
	.explanation = "Since Linux 4.7 a /dev/ptmx character node finds its devpts instance by "
		       "looking up \"pts\" in its own directory. Nothing devpts is mounted there "
		       "(or the directory is missing), so every open of /dev/ptmx fails with "
		       "ENODEV. The kernel looks for a mount on the name pts itself: when pts is a "
		       "symlink, it never follows it, and the remedy says to remove the link "
		       "rather than mount through it. When ptys are still held on an instance "
		       "no longer mounted here (a lazy umount, a chroot's teardown that "
		       "propagated), a new devpts does not bring their sessions back: the remedy "
		       "points to " UNREACHABLE_CHECK_ID ", which names them.",
	.remedy = "mkdir -p /dev/pts && mount -t devpts -o gid=5,mode=620 devpts /dev/pts",
	.run = ptmx_no_devpts,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX) },
};
