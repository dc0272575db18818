/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

static int devpts_gid_mismatch(const struct check_context *ctx, const struct check_info *info,
			       struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const char *mp = check_serving_mountpoint(a);
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_OK || !in || !in->options.has_gid ||
	    (!in->gid_unmapped && in->options.gid == ctx->snap->tty_gid))
		return 0;
	ev = check_options_evidence(ctx, in, mp);
	if (in->gid_unmapped)
		json_object_object_add(ev, "unmapped", json_object_new_boolean(true));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, check_serving_mount_id(a), in->dev) < 0 ||
	    (in->gid_unmapped
		 ? set_printf(&f->summary,
			      "devpts at %s has gid=%u (initial user namespace), which this user "
			      "namespace does not map: new ptys belong to a group nobody here has",
			      mp, (unsigned)in->options.gid)
		 : set_printf(&f->summary,
			      "devpts at %s has gid=%u, but the tty group is %u: new ptys belong "
			      "to the wrong group",
			      mp, (unsigned)in->options.gid, (unsigned)ctx->snap->tty_gid)) < 0 ||
	    check_set_remount_remedy(f, ctx, in, mp, info) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_devpts_gid_mismatch = {
	.id = "devpts-gid-mismatch",
	.severity = SEVERITY_WARNING,
	.severity_note = "info in a user namespace that maps a single gid, as unshare -r and "
			 "unprivileged bubblewrap make: its one user's ptys harm no one, and no "
			 "gid= can be set there",
	.message_id = "804a620704274c23ae177a977b5157b9",
	.summary = "the serving devpts instance's gid= is not the tty group",
	.explanation = "The devpts instance that serves /dev/ptmx has gid=N, but N is not the gid "
		       "of group tty. New ptys belong to that group: its members can write to "
		       "every terminal that says mesg y, and write and wall, which run setgid "
		       "tty, cannot.",
	.remedy = "mount -o remount,gid=5 /dev/pts",
	.repair = REPAIR_REMOUNT,
	.remount_owner = true,
	.run = devpts_gid_mismatch,
};
