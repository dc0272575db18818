/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "snapshot/devpts-mode.h"
#include "snapshot/initramfs-record.h"

mode_t devpts_mode_recorded(const struct snapshot *s, dev_t dev)
{
	const struct initramfs_instance *rec = initramfs_record_instance(s->initramfs, dev);

	if (s->last_healthy.known && s->last_healthy.dev == dev)
		return s->last_healthy.mode & 0777;
	if (!rec || !rec->options || !rec->parsed.has_gid ||
	    !devpts_mode_healthy(NULL, rec->parsed.mode))
		return 0;
	return rec->parsed.mode & 0777;
}

struct devpts_fix devpts_fix_for(const struct snapshot *s, dev_t dev,
				 const struct check_policy *policy, bool owner, bool ptmx)
{
	return (struct devpts_fix){
		.owner = owner,
		.ptmx = ptmx,
		.tty_gid = s->tty_gid,
		.policy = policy,
		.last_healthy = devpts_mode_recorded(s, dev),
	};
}

mode_t devpts_instance_mode(const struct snapshot *s, dev_t dev, const struct devpts_options *now,
			    const struct check_policy *policy)
{
	struct devpts_fix fix = devpts_fix_for(s, dev, policy, true, false);

	return devpts_options_target(now, &fix).mode;
}
