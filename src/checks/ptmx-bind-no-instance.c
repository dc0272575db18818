/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

/* /dev/ptmx is a bind mount of a ptmx character node from outside devpts (a sandbox or build tool
 * binding the host's /dev/ptmx): since Linux 4.7 no instance can be reached through it. */
static int ptmx_bind_no_instance(const struct check_context *ctx, const struct check_info *info,
				 struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct mount_entry *bind = analysis_mount(a, a->ptmx_bind_mount);
	const struct instance *pts = check_instance_at(a, "/dev/pts");
	struct devpts_fix fix = { .ptmx = true,
				  .tty_gid = ctx->snap->tty_gid,
				  .policy = ctx->policy };
	_cleanup_free_ char *remount = NULL;
	struct finding *f;
	json_object *ev;
	char dev[24];

	if (a->route != ROUTE_BIND_NO_INSTANCE)
		return 0;
	ev = check_evidence_ptmx(a);
	json_object_object_add(ev, "bind_mount_id", bind ? json_object_new_int64(bind->id) : NULL);
	json_object_object_add(ev, "bind_source_root",
			       bind ? json_object_new_string(bind->root) : NULL);
	json_object_object_add(ev, "bind_source_fstype",
			       bind ? json_object_new_string(bind->fstype) : NULL);
	json_object_object_add(
	    ev, "node_device",
	    a->ptmx_final ? json_object_new_string(format_devnum(a->ptmx_final->dev, dev)) : NULL);
	json_object_object_add(ev, "reaches", NULL);
	f = findings_add(out, info, info->severity, ev);
	if (!f || (bind && finding_add_mount(f, bind->id, bind->dev) < 0) ||
	    set_printf(&f->summary,
		       "%s is a bind mount of a ptmx node from %s (%s), not of a devpts ptmx: it "
		       "reaches no devpts instance, and every open fails with ENOENT",
		       PTMX_PATH, bind ? bind->fstype : "outside devpts",
		       bind ? bind->root : "?") < 0 ||
	    set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	/* The fix binds or links the node of the instance that should serve: the one at
	 * /dev/pts, opened to everyone. */
	if (pts && (pts->options.ptmxmode & 0777) != 0666) {
		remount = devpts_remount_command(&pts->options, &fix, "/dev/pts");
		if (!remount)
			return -ENOMEM;
	}
	if (set_printf(
		&f->remedy,
		"umount %s && rm -f %s && ln -s pts/ptmx %s%s%s%s (or bind the instance's own "
		"node: mount --bind /dev/pts/ptmx %s; sandboxes: bind /dev/pts/ptmx, not "
		"the host's /dev/ptmx)",
		PTMX_PATH, PTMX_PATH, PTMX_PATH, pts ? "" : ", with a devpts mounted at /dev/pts",
		remount ? " && " : "", remount ?: "", PTMX_PATH) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_ptmx_bind_no_instance = {
	.id = "ptmx-bind-no-instance",
	.severity = SEVERITY_CRITICAL,
	.message_id = "123ff934a63342e39511000141b7f2a7",
	.summary = "/dev/ptmx is a bind of a ptmx node from outside devpts and reaches no instance",
	.explanation =
	    "/dev/ptmx is a bind mount of a character node 5:2 that is not a devpts ptmx node, as "
	    "sandboxes and build tools make when they bind the host's /dev/ptmx. Since Linux 4.7 "
	    "an open of a ptmx node finds its devpts instance by looking up pts beside the node "
	    "within the mount the node was opened through; a file bind mount's root is the node "
	    "itself, nothing is mounted beside it there, and every open fails with ENOENT, "
	    "whatever is mounted at /dev/pts or beside the node where it came from. Link "
	    "/dev/ptmx to pts/ptmx, or bind the devpts instance's own ptmx node, with that "
	    "instance's ptmxmode=0666.",
	.remedy = "umount /dev/ptmx && rm -f /dev/ptmx && ln -s pts/ptmx /dev/ptmx && mount -o "
		  "remount,gid=5,mode=620,ptmxmode=666 /dev/pts",
	.run = ptmx_bind_no_instance,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX), .errnos = { ENOENT } },
};
