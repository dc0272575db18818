/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

static int devpts_shared_instance(const struct check_context *ctx, const struct check_info *info,
				  struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct mount_table *t = ctx->snap->mounts;
	_cleanup_free_ char *opts = NULL;

	if (a->multi_instance || !a->serving)
		return 0;
	/* A private instance for the chroot, reached there through its own pts/ptmx. */
	opts = devpts_fresh_options(ctx->policy, ctx->snap->tty_gid, true, true);
	if (!opts)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];
		struct finding *f;
		json_object *ev;
		char dev[24];

		if (!a->reachable[i] || !streq(e->fstype, "devpts") || e->dev != a->serving->dev ||
		    i == a->serving_mount)
			continue;
		ev = check_evidence_at(e, NULL, e->dev);
		json_object_object_add(ev, "system_mountpoint",
				       json_object_new_string(check_serving_mountpoint(a)));
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, e->dev) < 0 ||
		    set_printf(&f->summary,
			       "devpts at %s is the system instance %s: mounting or remounting it "
			       "changes the options of %s",
			       e->mountpoint, format_devnum(e->dev, dev),
			       check_serving_mountpoint(a)) < 0 ||
		    set_printf(&f->remedy, "umount %s && mount -t devpts -o %s devpts %s",
			       e->mountpoint, opts, e->mountpoint) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_devpts_shared_instance = {
	.id = "devpts-shared-instance",
	.severity = SEVERITY_WARNING,
	.message_id = "f64a918913134f71aa8279ab128899f7",
	.summary = "a devpts mount outside /dev/pts shares the system instance (kernel < 4.7)",
	.explanation = "Before Linux 4.7 every devpts mount made without newinstance is the same "
		       "filesystem. A devpts mounted in a chroot or build root this way (as "
		       "xen-create-image does) shares the system /dev/pts: any mount or remount "
		       "there with other options resets the options of the system's ptys.",
	.remedy = "umount the mount and mount it again with -o "
		  "newinstance,gid=5,mode=620,ptmxmode=0666 (and link ptmx -> pts/ptmx "
		  "there); then mount -o remount,gid=5,mode=620 /dev/pts",
	.run = devpts_shared_instance,
};
