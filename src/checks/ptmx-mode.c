/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

static int ptmx_mode(const struct check_context *ctx, const struct check_info *info,
		     struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct node *fin = a->ptmx_final;
	char mode[8];
	struct finding *f;
	json_object *ev;

	/* Only a plain char node: a devpts ptmx node's mode is ptmx-locked's business. */
	if (!fin || fin->type != NODE_CHAR || major(fin->rdev) != PTMX_RDEV_MAJOR ||
	    minor(fin->rdev) != PTMX_RDEV_MINOR || analysis_find_instance(a, fin->dev) ||
	    (fin->mode & 0777) == 0666)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "path", json_object_new_string(fin->path));
	json_object_object_add(ev, "mode", json_new_mode(fin->mode));
	json_object_object_add(ev, "uid", json_object_new_int64(fin->uid));
	json_object_object_add(ev, "gid", json_object_new_int64(fin->gid));
	f = findings_add(out, info, info->severity, ev);
	if (!f ||
	    set_printf(&f->summary, "%s has mode %s: only %s can allocate ptys", fin->path,
		       format_mode(fin->mode, mode),
		       (fin->mode & 0006) ? "some users" : "root") < 0 ||
	    set_printf(&f->remedy, "chmod 0666 %s", fin->path) < 0 ||
	    set_printf(&f->mountpoint, "%s", fin->path) < 0)
		return -ENOMEM;
	f->predicts_nothing = (fin->mode & 0006) == 0006;
	return 0;
}

const struct check_info check_ptmx_mode = {
	.id = "ptmx-mode",
	.severity = SEVERITY_WARNING,
	.message_id = "d46d05fc01204e46a1eeace102f8344e",
	.summary = "/dev/ptmx is not mode 0666",
	.explanation = "/dev/ptmx is a character node whose mode is not 0666. Users other than "
		       "root cannot open it, so they cannot allocate ptys (EACCES); access "
		       "control belongs to the slave nodes, not to the multiplexer.",
	.remedy = "chmod 0666 /dev/ptmx",
	.repair = REPAIR_CHMOD_PTMX,
	.run = ptmx_mode,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX),
		      .errnos = { EACCES },
		      .unless = "the node still gives others read and write" },
};
