/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The new root's init, read from its files before switch-root (nothing of the new root can run
 * in the initramfs): which init the kernel command line's init= or /sbin/init leads to, the
 * systemd version from its libsystemd-shared-N.so, and whether systemd-remount-fs.service
 * will run (its unit file is there, not masked in /etc/systemd/system nor by systemd.mask=,
 * and pulled in: statically by local-fs.target, or by systemd-fstab-generator unless fstab=no).
 * Symlinks resolve inside the new root, as they will after the switch.
 */
#pragma once

#include "snapshot/initramfs-record.h"

/* newroot: absolute, the new root's mountpoint; cmdline: the kernel command line (may be NULL).
 * Fills ret (its strings malloc'ed); 0 or -ENOMEM. What cannot be read is unknown, not an
 * error. */
int newroot_init_read(const char *newroot, const char *cmdline, struct initramfs_init *ret);
