/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

static int kernel_single_instance(const struct check_context *ctx, const struct check_info *info,
				  struct findings *out)
{
	_cleanup_free_ char *opts = NULL;
	struct finding *f;
	json_object *ev;

	if (ctx->a->multi_instance)
		return 0;
	opts = devpts_fresh_options(ctx->policy, ctx->snap->tty_gid, true, true);
	if (!opts)
		return -ENOMEM;
	ev = json_object_new_object();
	json_object_object_add(ev, "kernel", json_object_new_string(ctx->snap->kernel_release));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary,
		       "kernel %s predates 4.7: devpts mounts without newinstance share one "
		       "instance",
		       ctx->snap->kernel_release) < 0 ||
	    set_printf(&f->remedy, "mount extra devpts instances with -o %s", opts) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_kernel_single_instance = {
	.id = "kernel-single-instance",
	.severity = SEVERITY_INFO,
	.message_id = "9bf06320265c47a6a1948aec3cf52433",
	.summary = "the kernel shares one devpts instance between mounts (< 4.7)",
	.explanation = "This kernel is older than 4.7: every devpts mount made without newinstance "
		       "joins the single system instance, so a mount in a chroot changes the "
		       "system's ptys. Mount extra devpts instances with newinstance.",
	.remedy = "mount extra devpts instances with -o newinstance,gid=5,mode=620,ptmxmode=0666",
	.run = kernel_single_instance,
};
