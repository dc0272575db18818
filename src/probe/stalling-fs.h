/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE rule: file systems where a lookup may wait, for ever, on a process or a server that
 * stops answering (a FUSE daemon, which anyone may mount in a user namespace of their own; an
 * NFS, SMB, 9p or Ceph server). A lookup there that the daemon has read and not answered
 * cannot be killed, so ptsguard makes none from outside: a namespace or chroot whose lookups
 * would cross such a mount is not judged, its error naming the mount.
 *
 * The mounts a lookup under a root crosses are the one that holds the root directory itself
 * (which may lie ABOVE the root: a chroot into a directory of a FUSE mount, whose own
 * mountinfo, printed relative to its root, does not list it) and those below the root on the
 * way to the paths looked up. This file has the rule on a file system's type, and the mount
 * that holds a directory asked of the kernel (statmount(2), never of the file system).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* fuse, fuseblk, fuse.* (sshfs, glusterfs, ...), virtiofs, nfs, nfs4, cifs, smb3, 9p, ceph,
 * afs, coda, lustre, gpfs, beegfs, glusterfs, orangefs: lookups there wait on another party. */
bool fs_type_may_stall(const char *fstype);
/* "FUSE" for a FUSE file system (fuse, fuseblk, fuse.*, virtiofs), else "network": for the
 * messages that name it. */
const char *fs_type_stall_kind(const char *fstype);

/* The mount that holds the directory dirfd (an O_PATH descriptor will do), looked up among the
 * mounts of the mount namespace whose 64-bit id is mntns_id (0: the caller's own): its type as
 * mountinfo prints it ("fuse.sshfs") and its mount point from that namespace's root, both
 * malloc'ed into *ret_type and *ret_mountpoint. Nothing asks the file system (statx() with
 * AT_STATX_DONT_SYNC, then statmount()). 0; -ENOENT when the mount is not that namespace's;
 * -EOPNOTSUPP where the kernel cannot say (before Linux 6.8, or 6.11 for another namespace);
 * other negative errno. */
int mount_of_dir(int dirfd, uint64_t mntns_id, char **ret_type, char **ret_mountpoint);

/* Whether lookups in dirfd (a root directory) start on a file system that may stall: 1 and
 * *ret_why, malloc'ed, naming the mount for a person ("a FUSE file system (fuse.sshfs, mounted
 * at /srv/x), whose daemon answers every lookup there and may stop answering", escaped), 0
 * when they do not, a negative errno as mount_of_dir() where that cannot be told. */
int dir_may_stall(int dirfd, uint64_t mntns_id, char **ret_why);

/* open() of path under the root directory root_fd as openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS) would resolve it, but one component at a time, and the mount of each
 * directory asked (dir_may_stall()) before a name is looked up in it, and of what is opened
 * last: a symbolic link may lead anywhere in the namespace, onto a FUSE or network mount that
 * its own table shows elsewhere (/dev a link to a directory of an sshfs mount). The links on
 * the way are read from their own, checked, file system (40 at most). flags as for open();
 * the file is opened O_PATH first and reopened through /proc/self/fd with flags (no lookup).
 * A descriptor, or -EREMOTE where the lookup would reach such a mount, or another -errno. A
 * mount the kernel cannot name (before Linux 6.11) passes, as with openat2. */
int open_in_root_checked(int root_fd, uint64_t mntns_id, const char *path, int flags);
