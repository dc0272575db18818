/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the initramfs hook foresees, just before switch-root: from the analysis of the
 * initramfs (whose snapshot carries the new root's /etc/fstab), where each devpts mount lands
 * in the new root, the devpts lines of that fstab, and the CentOS 6 prediction: a visible
 * devpts of the initramfs carried into the new root on a mountpoint that an auto devpts line
 * of fstab mounts again. What then happens depends on the root's init, which is not running yet
 * but whose files tell (probe/newroot-init.h); the reason says which and why.
 */
#pragma once

#include "analysis/analysis.h"
#include "snapshot/initramfs-record.h"

/* A record of a: phase, newroot (absolute, without trailing slashes), the move of /dev, the
 * instances, the fstab section (fstab_errno: why a->snap->fstab could not be read, 0 when it
 * was or there is none), its devpts lines, the new root's init (NULL: not read, unknown) and the
 * prediction of what that init does to the carried devpts (record->prediction.effect):
 * systemd's systemd-remount-fs remounts it with the fstab line's options, sysvinit's or
 * OpenRC's mount -a keeps it, upstart's rc.sysinit stacks a second one, an unknown init may do
 * the last. generated_at, findings and summary are the caller's. 0 or -ENOMEM. */
int initramfs_record_build(const struct analysis *a, const char *newroot, const char *phase,
			   int fstab_errno, const struct initramfs_init *init,
			   struct initramfs_record **ret);
