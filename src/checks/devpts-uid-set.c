/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

static int devpts_uid_set(const struct check_context *ctx, const struct check_info *info,
			  struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const char *mp = check_serving_mountpoint(a);
	struct devpts_options keep;
	_cleanup_free_ char *options = NULL;
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_OK || !in || !in->options.has_uid)
		return 0;
	ev = check_options_evidence(ctx, in, mp);
	json_object_object_add(ev, "uid", json_object_new_int64(in->options.uid));
	if (in->uid_unmapped)
		json_object_object_add(ev, "unmapped", json_object_new_boolean(true));
	/* A devpts remount resets what it is not given: leaving uid= out drops it. */
	keep = in->options;
	keep.has_uid = false;
	options = devpts_options_format(&keep);
	f = findings_add(out, info, info->severity, ev);
	if (!f || !options || finding_add_mount(f, check_serving_mount_id(a), in->dev) < 0 ||
	    set_printf(&f->summary,
		       "devpts at %s is mounted with uid=%u: every new slave belongs to that "
		       "user, so others cannot reopen their own terminal",
		       mp, (unsigned)in->options.uid) < 0 ||
	    set_printf(&f->remedy,
		       "drop uid= where devpts is mounted (fstab, container configuration), "
		       "then: mount -o remount,%s %s",
		       options, mp) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	/* A slave mode that lets everyone read and write leaves the name usable. */
	f->predicts_nothing = (in->options.mode & 0006) == 0006;
	return 0;
}

const struct check_info check_devpts_uid_set = {
	.id = "devpts-uid-set",
	.severity = SEVERITY_CRITICAL,
	.message_id = "8489fa7b84284730872b936f375c7d87",
	.summary = "the serving devpts instance was mounted with uid=",
	.explanation = "The devpts instance that serves /dev/ptmx has uid=N: every new slave "
		       "belongs to user N instead of the process that allocated it. Users cannot "
		       "reopen their own terminal by name, so tty, script, screen and write fail "
		       "with EACCES (systemd#337).",
	.remedy = "remove uid= from the devpts mount options, then remount without it: "
		  "mount -o remount,gid=5,mode=620 /dev/pts",
	.run = devpts_uid_set,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_SLAVE),
		      .errnos = { EACCES },
		      .unless = "the mode gives everyone read and write" },
};
