/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

/* Where the serving instance is read-only: its mount (a read-only bind of /dev or /dev/pts, which
 * since Linux 5.12 a recursive read-only bind reaches too), its superblock (every mount of the
 * instance, everywhere), or both. */
static int devpts_read_only(const struct check_context *ctx, const struct check_info *info,
			    struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct instance *in = a->serving;
	const struct mount_entry *e = analysis_serving_mount(a);
	const char *mp = check_serving_mountpoint(a);
	struct devpts_fix keep = { .tty_gid = ctx->snap->tty_gid, .policy = ctx->policy };
	_cleanup_free_ char *remount = NULL;
	bool mount_ro, super_ro;
	struct finding *f;
	json_object *ev;

	if (a->route != ROUTE_OK || !in || !e)
		return 0;
	mount_ro = option_get(e->mount_options, "ro", NULL);
	super_ro = option_get(e->super_options, "ro", NULL);
	if (!mount_ro && !super_ro)
		return 0;
	ev = check_options_evidence(ctx, in, mp);
	json_object_object_add(ev, "read_only",
			       json_object_new_string(mount_ro && super_ro ? "both"
						      : super_ro	   ? "superblock"
									   : "mount"));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, check_serving_mount_id(a), in->dev) < 0 ||
	    set_printf(&f->summary,
		       "devpts at %s is read-only (%s): ptys are still allocated, but no "
		       "program can give a slave to the user it is for (sshd, login and sudo's "
		       "use_pty chown it: EROFS), so logins get no terminal",
		       mp,
		       super_ro ? "its superblock, for every mount of the instance"
				: "this mount only") < 0 ||
	    set_printf(&f->mountpoint, "%s", mp) < 0)
		return -ENOMEM;
	if (super_ro) {
		/* A remount without bind sets the superblock and the mount read-write, and resets
		 * every devpts option it is not given: all of them are given. */
		remount = devpts_remount_command(&in->options, &keep, mp);
		if (!remount ||
		    set_printf(&f->remedy,
			       "mount -o remount,rw,%s (the instance's own options kept; a "
			       "remount of a bind of one slave, such as a container's console, "
			       "made read-only without bind makes the whole instance read-only)",
			       remount + strlen("mount -o remount,")) < 0)
			return -ENOMEM;
		return 0;
	}
	if (set_printf(&f->remedy,
		       "mount -o remount,bind,rw %s (only this mount's flag; where /dev was given "
		       "read-only to a container, Docker 25 and later make -v /dev:/dev:ro "
		       "recursive on Linux 5.12+: use --mount "
		       "type=bind,src=/dev,dst=/dev,readonly,bind-recursive=writable)",
		       mp) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_devpts_read_only = {
	.id = "devpts-read-only",
	.severity = SEVERITY_CRITICAL,
	.message_id = "997178dbf6054d3294d1d54c4a2ef6b8",
	.summary = "the serving devpts instance is read-only",
	.explanation =
	    "The devpts mount that serves /dev/ptmx is read-only, either as a mount (a read-only "
	    "bind of /dev or /dev/pts; since Linux 5.12 a recursive read-only bind, which Docker "
	    "25 makes of -v /dev:/dev:ro, reaches the devpts below it) or as a superblock (a "
	    "remount read-only without bind, as a container's shutdown may do to the bind of its "
	    "console, makes the instance read-only for every mount of it, the host's included). "
	    "Allocation as one user still works, so an unprivileged allocation succeeds; but every "
	    "privileged program that hands the slave to the user who logs in (sshd, login, sudo "
	    "with use_pty) changes its owner, and that fails with EROFS: the session has no "
	    "terminal it can open. A mount-level flag is cleared by a bind remount of that mount; "
	    "a superblock-level one by a remount of the instance, which must repeat its options.",
	.remedy = "mount -o remount,bind,rw /dev/pts (the mount), or mount -o "
		  "remount,rw,gid=5,mode=620 /dev/pts (the superblock, options repeated)",
	.run = devpts_read_only,
};
