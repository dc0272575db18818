/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/path.h"
#include "util/string-util.h"

/*
 * ptsname() always answers "/dev/pts/N": it knows the index, not the instance. A /dev/ptmx that
 * is a symlink or a bind mount into some other instance allocates there, so every program that
 * reopens its slave by that name gets index N of whatever is at /dev/pts instead.
 */
static int ptmx_foreign_instance(const struct check_context *ctx, const struct check_info *info,
				 struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const struct mount_entry *serving = analysis_serving_mount(a), *pts;
	_cleanup_free_ char *dir = path_dirname(PTMX_PATH), *pts_path = NULL;
	size_t at_pts;
	struct finding *f;
	json_object *ev;

	if (!dir)
		return -ENOMEM;
	if (a->route != ROUTE_OK || !in ||
	    (a->ptmx_kind != PTMX_SYMLINK && a->ptmx_kind != PTMX_BIND))
		return 0;
	pts_path = path_join(dir, "pts");
	if (!pts_path)
		return -ENOMEM;
	at_pts = analysis_mount_at(a, pts_path);
	pts = analysis_mount(a, at_pts);
	if (pts && streq(pts->fstype, "devpts") && pts->dev == in->dev)
		return 0;

	ev = check_evidence_ptmx(a);
	json_object_object_add(ev, "serving_device", json_new_devnum(in->dev));
	json_object_object_add(ev, "serving_mountpoint",
			       serving ? json_object_new_string(serving->mountpoint) : NULL);
	json_object_object_add(ev, "pts_path", json_object_new_string(pts_path));
	json_object_object_add(ev, "pts_mount", check_json_mount(a, at_pts));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, serving ? serving->id : 0, in->dev) < 0 ||
	    (pts && streq(pts->fstype, "devpts") && finding_add_mount(f, pts->id, pts->dev) < 0) ||
	    set_printf(&f->summary,
		       "%s allocates on the devpts at %s, but ptsname() names slaves under %s, "
		       "%s: a program reopening its slave by name gets another pty",
		       PTMX_PATH, serving ? serving->mountpoint : "(no mount)", pts_path,
		       pts && streq(pts->fstype, "devpts") ? "another instance" : "no devpts") <
		0 ||
	    set_printf(&f->remedy, "make %s lead to the instance at %s: ln -sf pts/ptmx %s",
		       PTMX_PATH, pts_path, PTMX_PATH) < 0 ||
	    set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_ptmx_foreign_instance = {
	.id = "ptmx-foreign-instance",
	.severity = SEVERITY_CRITICAL,
	.message_id = "ea3870f62f484a97922cd7b60841ef31",
	.summary = "/dev/ptmx allocates on another devpts instance than the one at /dev/pts",
	.explanation =
	    "/dev/ptmx is a symlink or a bind mount that leads into a devpts instance other "
	    "than the one mounted at /dev/pts beside it. The kernel allocates the pty there, "
	    "but ptsname() still answers /dev/pts/N, which on the instance at /dev/pts is "
	    "another pty (someone else's terminal) or none at all. Programs that reopen "
	    "their slave by name (login, script, screen, grantpt users) attach to the wrong "
	    "terminal or fail.",
	.remedy = "point /dev/ptmx at the instance mounted at /dev/pts: ln -sf pts/ptmx /dev/ptmx "
		  "(or bind-mount /dev/pts/ptmx onto it)",
	.run = ptmx_foreign_instance,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_PTSNAME) |
			       ALLOC_STEP_BIT(ALLOC_STEP_OPEN_SLAVE) |
			       ALLOC_STEP_BIT(ALLOC_STEP_COMPARE) },
};
