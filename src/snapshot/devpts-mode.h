/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mode rule applied to an instance of a snapshot: devpts_mode_wanted() (devpts-options.h)
 * with what the snapshot recorded of that instance (the daemon's state, the initramfs record).
 */
#pragma once

#include "snapshot/devpts-options.h"
#include "snapshot/snapshot.h"

/* The mode instance dev of s was last seen healthy with: the daemon's record (its state file,
 * s->last_healthy) when it has seen this instance so, else what the initramfs record saw on it
 * (gid= set, a healthy mode) before something at boot changed it; 0 when neither knows. The
 * last_healthy of devpts_mode_wanted() for an instance of a snapshot. */
mode_t devpts_mode_recorded(const struct snapshot *s, dev_t dev);

/* The fix of instance dev of s (its tty group, the mode recorded for it): what a remedy names and
 * repair plans. */
struct devpts_fix devpts_fix_for(const struct snapshot *s, dev_t dev,
				 const struct check_policy *policy, bool owner, bool ptmx);

/* The slave mode instance dev of s, with the options now, is to have: what a remount fixing its
 * owner sets (devpts_mode_wanted() with devpts_mode_recorded()), so what repair gives its slaves
 * and what pty-slave-perms names. */
mode_t devpts_instance_mode(const struct snapshot *s, dev_t dev, const struct devpts_options *now,
			    const struct check_policy *policy);
