/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

static int ptmx_missing(const struct check_context *ctx, const struct check_info *info,
			struct findings *out)
{
	const struct analysis *a = ctx->a;
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_MISSING)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(PTMX_PATH));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary, "%s does not exist: no pty can be allocated", PTMX_PATH) < 0 ||
	    set_printf(&f->remedy, "mknod -m 0666 %s c 5 2", PTMX_PATH) < 0 ||
	    set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_ptmx_missing = {
	.id = "ptmx-missing",
	.severity = SEVERITY_CRITICAL,
	.message_id = "23974b8a56d645cbbd550900396bcfe1",
	.summary = "/dev/ptmx does not exist",
	.explanation = "Pseudo-terminals are allocated by opening /dev/ptmx. Without it every "
		       "terminal emulator, ssh login, screen, tmux and container console fails "
		       "to allocate a pty.",
	.remedy = "mknod -m 0666 /dev/ptmx c 5 2",
	.repair = REPAIR_CREATE_PTMX,
	.run = ptmx_missing,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX), .errnos = { ENOENT } },
};
