/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

static int ptmx_not_device(const struct check_context *ctx, const struct check_info *info,
			   struct findings *out)
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
			       check_describe_node(fin ?: n));
	if (r < 0 || set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	if (n->type == NODE_SYMLINK || n->type == NODE_CHAR)
		r = set_printf(&f->remedy, "rm %s && mknod -m 0666 %s c 5 2", PTMX_PATH, PTMX_PATH);
	else
		r = set_printf(&f->remedy, "mv %s %s.broken && mknod -m 0666 %s c 5 2", PTMX_PATH,
			       PTMX_PATH, PTMX_PATH);
	return r;
}

const struct check_info check_ptmx_not_device = {
	.id = "ptmx-not-device",
	.severity = SEVERITY_CRITICAL,
	.message_id = "95da0956023d4965864bb4f72467a5c6",
	.summary = "/dev/ptmx is not the pty multiplexer device",
	.explanation = "/dev/ptmx exists but is neither a character device 5:2 nor a symlink or "
		       "bind mount that resolves to the ptmx node of a devpts instance: it is a "
		       "regular file, a directory, a dangling symlink or a device with another "
		       "major:minor. Opening it does not allocate a pty.",
	.remedy = "mv /dev/ptmx /dev/ptmx.broken && mknod -m 0666 /dev/ptmx c 5 2",
	.run = ptmx_not_device,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX) |
			       ALLOC_STEP_BIT(ALLOC_STEP_GRANTPT) |
			       ALLOC_STEP_BIT(ALLOC_STEP_UNLOCKPT) |
			       ALLOC_STEP_BIT(ALLOC_STEP_PTSNAME) },
};
