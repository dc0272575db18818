/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

/* /dev/ptmx is a symlink on the host's devtmpfs, where the kernel itself made a char node 5:2:
 * something replaced it (runc#80: a container given the host's /dev made its pts/ptmx link). */
static bool node_replaced(const struct analysis *a)
{
	const struct mount_entry *dev = analysis_mount(a, analysis_mount_at(a, PTMX_DIR));

	return a->ptmx_kind == PTMX_SYMLINK && dev && streq(dev->fstype, "devtmpfs") &&
	       a->ptmx->dev == dev->dev;
}

static int ptmx_locked(const struct check_context *ctx, const struct check_info *info,
		       struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct node *fin = a->ptmx_final;
	const struct instance *in = a->serving;
	const char *mp = check_serving_mountpoint(a);
	char mode[8], ptmxmode[8];
	bool replaced;
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_OK || !fin || !in || fin->dev != in->dev ||
	    (fin->mode & 0006) == 0006)
		return 0;
	ev = check_evidence_ptmx(a);
	json_object_object_add(ev, "node", json_object_new_string(fin->path));
	json_object_object_add(ev, "node_mode", json_new_mode(fin->mode));
	json_object_object_add(ev, "ptmxmode", json_new_mode(in->options.ptmxmode));
	json_object_object_add(ev, "mountpoint", json_object_new_string(mp));
	replaced = node_replaced(a);
	if (replaced)
		json_object_object_add(ev, "replaced_node", json_object_new_boolean(true));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, check_serving_mount_id(a), in->dev) < 0 ||
	    set_printf(&f->summary,
		       "%s %s%s with mode %s (ptmxmode=%s): non-root pty allocation fails "
		       "with EACCES",
		       PTMX_PATH,
		       a->ptmx_kind == PTMX_BIND ? "is a bind mount of a devpts ptmx node"
						 : "leads to ",
		       a->ptmx_kind == PTMX_BIND ? "" : fin->path, format_mode(fin->mode, mode),
		       format_mode(in->options.ptmxmode, ptmxmode)) < 0 ||
	    check_set_remount_remedy(f, ctx, in, mp, info) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	if (replaced) {
		/* Put the device back rather than opening this instance's ptmx to everyone. */
		f->manual = true;
		if (set_printf(&f->remedy,
			       "restore the device node the kernel's devtmpfs had: rm %s && mknod "
			       "-m 0666 %s c %d %d",
			       PTMX_PATH, PTMX_PATH, PTMX_RDEV_MAJOR, PTMX_RDEV_MINOR) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_ptmx_locked = {
	.id = "ptmx-locked",
	.severity = SEVERITY_CRITICAL,
	.message_id = "c881dc2b22f8423ab00e40c26435d440",
	.summary = "/dev/ptmx leads to a devpts ptmx node that other users cannot open",
	.explanation =
	    "/dev/ptmx is a symlink (usually to pts/ptmx) or a bind mount of the ptmx "
	    "node inside a devpts instance, and that node's mode (the ptmxmode= mount "
	    "option, 000 by default) does not let other users open it: every non-root "
	    "pty allocation fails with EACCES. systemd's PrivateDevices= (systemd#7878), "
	    "rkt and runc produced this layout. When the link replaced the char node of "
	    "the host's devtmpfs (runc#80: a container given the host's /dev), the remedy "
	    "restores the node instead of opening the instance's ptmx to everyone.",
	.remedy = "mount -o remount,ptmxmode=0666 /dev/pts",
	.repair = REPAIR_REMOUNT,
	.remount_ptmx = true,
	.run = ptmx_locked,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX), .errnos = { EACCES } },
};
