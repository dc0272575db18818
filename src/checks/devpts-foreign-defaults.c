/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

static int devpts_foreign_defaults(const struct check_context *ctx, const struct check_info *info,
				   struct findings *out)
{
	const struct analysis *a = ctx->a;

	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		const struct mount_entry *e = analysis_mount(a, in->visible_mount);
		struct devpts_fix fix = { .owner = true,
					  .tty_gid = ctx->snap->tty_gid,
					  .policy = ctx->policy };
		struct finding *f;
		json_object *ev;
		char mode[8];

		if (in->serving || in->covered || in->options.has_gid)
			continue;
		ev = check_evidence_at(e, NULL, in->dev);
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, in->dev) < 0 ||
		    set_printf(
			&f->summary,
			"devpts at %s has no gid= (mode %s): its ptys get the creator's group",
			e->mountpoint, format_mode(in->options.mode, mode)) < 0 ||
		    !(f->remedy = devpts_remount_command(&in->options, &fix, e->mountpoint)) ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_devpts_foreign_defaults = {
	.id = "devpts-foreign-defaults",
	.severity = SEVERITY_INFO,
	.message_id = "49badb95fcc74b6892ebf22359bd6ba9",
	.summary = "a separate devpts instance runs with default options",
	.explanation = "A devpts instance other than the one serving /dev/ptmx (for example in a "
		       "chroot or build root) was mounted without gid=: ptys allocated through it "
		       "get the creating process's group instead of tty.",
	.remedy = "mount -o remount,gid=5,mode=620 on that mountpoint",
	.run = devpts_foreign_defaults,
};
