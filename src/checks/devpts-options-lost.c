/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

static int devpts_options_lost(const struct check_context *ctx, const struct check_info *info,
			       struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const char *mp = check_serving_mountpoint(a);
	bool mode_ok;
	char mode[8];
	struct finding *f;
	json_object *ev;
	int r;

	if (a->route != ROUTE_OK || !in)
		return 0;
	mode_ok = devpts_mode_healthy(ctx->policy, in->options.mode);
	if (in->options.has_gid && mode_ok)
		return 0;
	ev = check_options_evidence(ctx, in, mp);
	check_add_origin(ctx, ev, a->serving_mount);
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, check_serving_mount_id(a), in->dev) < 0)
		return -ENOMEM;
	/* Only a mode that denies the owner their own slave stops an allocation. */
	f->predicts_nothing = (in->options.mode & 0600) == 0600;
	format_mode(in->options.mode, mode);
	if (!in->options.has_gid && !mode_ok)
		r = set_printf(
		    &f->summary,
		    "devpts at %s has no gid= and mode %s: new ptys get the creator's group "
		    "and a mode other users can use",
		    mp, mode);
	else if (!in->options.has_gid)
		r = set_printf(
		    &f->summary,
		    "devpts at %s has no gid= option: new ptys get the creator's group, not "
		    "tty",
		    mp);
	else
		r = set_printf(&f->summary, "devpts at %s has mode=%s: new ptys get mode %s", mp,
			       mode, mode);
	if (r < 0 || check_set_remount_remedy(f, ctx, in, mp, info) < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_devpts_options_lost = {
	.id = "devpts-options-lost",
	.severity = SEVERITY_CRITICAL,
	.severity_note = "info in a user namespace that maps a single gid, as unshare -r and "
			 "unprivileged bubblewrap make: its one user's ptys harm no one, and no "
			 "gid= can be set there",
	.message_id = "5908099010dc42dc8d236a30d092440e",
	.summary = "the serving devpts instance lacks gid=tty or a safe mode",
	.explanation = "The devpts instance that serves /dev/ptmx has no gid= option, or a slave "
		       "mode other than 620 or 600 (or the mode the configuration pins). New ptys "
		       "get the creating process's group or a mode that lets other users read or "
		       "write someone's terminal: write, wall and mesg break or open the terminal "
		       "to the wrong people (mosh#700, firejail#351). Since glibc 2.33 nothing in "
		       "user space corrects it: grantpt() only asks the kernel. For an instance "
		       "born in the initramfs, the evidence's origin says what it had before "
		       "switch-root and what changed it (an fstab line through systemd-remount-fs, "
		       "a second mount).",
	.remedy = "mount -o remount,gid=5,mode=620 /dev/pts",
	.repair = REPAIR_REMOUNT,
	.remount_owner = true,
	.run = devpts_options_lost,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_SLAVE),
		      .errnos = { EACCES },
		      .unless = "the mode gives the owner read and write (a missing `gid=` alone "
				"stops no allocation)" },
};
