/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "snapshot/fstab.h"
#include "util/parse.h"
#include "util/string-util.h"

/* Is /dev/ptmx here a devpts ptmx node of the instance mounted at mountpoint (a pts/ptmx
 * symlink or bind, as every container, nspawn and PrivateDevices= have)? Then ptmxmode= decides
 * who may allocate, and a remount that does not give it resets it to 000: mount(2) does, and so
 * does mount -o remount with an fstab line, which systemd-remount-fs runs at every boot. */
static bool ptmx_through_instance(const struct analysis *a, const char *mountpoint)
{
	const char *mp = check_serving_mountpoint(a);
	size_t n = strlen(mountpoint);

	while (n > 1 && mountpoint[n - 1] == '/')
		n--;
	return a->route == ROUTE_OK && a->serving && a->ptmx_final &&
	       a->ptmx_final->dev == a->serving->dev && mp && strlen(mp) == n &&
	       strncmp(mp, mountpoint, n) == 0;
}

static int fstab_devpts_options(const struct check_context *ctx, const struct check_info *info,
				struct findings *out)
{
	const struct snapshot *s = ctx->snap;
	_cleanup_(fstab_iter_done) struct fstab_iter it;
	struct fstab_entry fe;
	int r;

	fstab_iter_init(&it, s->fstab, s->fstab ? strlen(s->fstab) : 0);
	while ((r = fstab_iter_next(&it, &fe)) > 0) {
		_cleanup_free_ char *gid = NULL, *mode = NULL, *ptmxmode = NULL;
		const char *opts, *mountpoint = fe.file;
		unsigned line = fe.line;
		unsigned gid_v;
		mode_t mode_v = 0600;
		bool gid_ok, mode_ok, has_mode, through, ptmx_ok = true;
		mode_t ptmx_v = 0;
		char modes[8];
		struct finding *f;
		json_object *ev;

		if (!streq(fe.vfstype, "devpts"))
			continue;
		opts = fe.options ?: "defaults";
		gid_ok = option_get(opts, "gid", &gid) && parse_uint(gid, &gid_v) == 0 &&
			 gid_v == s->tty_gid;
		has_mode = option_get(opts, "mode", &mode);
		if (has_mode && parse_mode(mode, &mode_v) < 0)
			mode_v = 07777;
		mode_ok = devpts_mode_healthy(ctx->policy, mode_v);
		through = ptmx_through_instance(ctx->a, mountpoint);
		if (through)
			ptmx_ok = option_get(opts, "ptmxmode", &ptmxmode) &&
				  parse_mode(ptmxmode, &ptmx_v) == 0 && (ptmx_v & 0006) == 0006;
		if (gid_ok && mode_ok && ptmx_ok)
			continue;
		ev = json_object_new_object();
		json_object_object_add(ev, "file", json_object_new_string("/etc/fstab"));
		json_object_object_add(ev, "line", json_object_new_int64(line));
		json_object_object_add(ev, "mountpoint", json_object_new_string(mountpoint));
		json_object_object_add(ev, "options", json_object_new_string(opts));
		if (through)
			json_object_object_add(ev, "ptmx_through_instance",
					       json_object_new_boolean(true));
		check_add_origin(ctx, ev, analysis_mount_at(ctx->a, mountpoint));
		f = findings_add(out, info, info->severity, ev);
		if (!f ||
		    set_printf(&f->summary,
			       "/etc/fstab line %u mounts devpts on %s with \"%s\": %s%s%s%s%s%s",
			       line, mountpoint, opts, gid_ok ? "" : "no gid=tty",
			       !gid_ok && !mode_ok ? ", " : "", mode_ok ? "" : "no mode=",
			       mode_ok ? "" : check_healthy_modes(ctx->policy, modes),
			       ptmx_ok || (gid_ok && mode_ok) ? "" : ", ",
			       ptmx_ok
				   ? ""
				   : "no ptmxmode=0666 while /dev/ptmx leads to its pts/ptmx: a "
				     "remount with this line resets ptmxmode to 000 and every "
				     "non-root pty allocation fails with EACCES") < 0 ||
		    set_printf(
			&f->remedy,
			"edit /etc/fstab line %u to: devpts %s devpts gid=%u,mode=%03o%s 0 0", line,
			mountpoint, (unsigned)s->tty_gid,
			/* no mode= at all: name the traditional mode, not the default */
			(unsigned)devpts_mode_wanted(
			    ctx->policy,
			    &(struct devpts_options){ .mode = has_mode ? mode_v : 07777,
						      .has_gid = gid_ok },
			    0),
			through ? ",ptmxmode=0666" : "") < 0 ||
		    set_printf(&f->mountpoint, "%s", mountpoint) < 0)
			return -ENOMEM;
	}
	return r;
}

const struct check_info check_fstab_devpts_options = {
	.id = "fstab-devpts-options",
	.severity = SEVERITY_WARNING,
	.message_id = "6251d54e166946aca8a6c1474a1c3a84",
	.summary = "/etc/fstab mounts devpts without gid=tty and a safe mode",
	.explanation = "/etc/fstab has a devpts entry whose options would not give gid=<tty gid> "
		       "and mode 620 or 600. Under systemd, systemd-remount-fs applies them to "
		       "/dev/pts at every boot (a devpts remount resets what it is not given: "
		       "\"defaults\" drops gid= and sets mode 600); elsewhere a remount or a "
		       "second mount does, and the system's ptys lose their group or mode. When "
		       "the initramfs record knows the instance, the evidence's origin says what "
		       "it had before switch-root. Where /dev/ptmx leads to the instance's own "
		       "pts/ptmx (a symlink or bind: containers, nspawn, PrivateDevices=), the "
		       "line must also give ptmxmode=0666: a remount that does not resets it to "
		       "000, and every non-root allocation then fails with EACCES; beside a "
		       "character /dev/ptmx, ptmxmode does not matter.",
	.remedy = "change the entry to: devpts /dev/pts devpts gid=5,mode=620 0 0",
	.run = fstab_devpts_options,
};
