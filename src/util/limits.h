/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every size bound of ptsguard in one place. Each is far beyond what a real
 * system produces; it exists so that a hostile or broken input (a crafted
 * snapshot, a table of a million mounts, a runaway group database) costs a
 * bounded amount of memory and fails with -EFBIG (or is cut, where said)
 * instead of exhausting the machine.
 */
#pragma once

/* /proc/self/mountinfo, read whole by the probe and by repair before it acts. Some 100 bytes a
 * line: more than two million mounts. */
#define MOUNTINFO_SIZE_MAX (256u << 20)

/* A snapshot file (ptsguard.snapshot/1): its embedded mountinfo may be as large as the above. */
#define SNAPSHOT_SIZE_MAX (256u << 20)

/* The initramfs hook's record (ptsguard.initramfs/1), which embeds a snapshot of the initramfs. */
#define INITRAMFS_RECORD_SIZE_MAX (64u << 20)

/* /etc/fstab, of the running system or of the new root the initramfs hook looks at. */
#define FSTAB_SIZE_MAX (4u << 20)

/* One configuration file or drop-in. */
#define CONFIG_FILE_SIZE_MAX (1u << 20)

/* One word of a list in the configuration (a check id, a mountpoint), NUL included. */
#define CONFIG_LIST_ITEM_SIZE 4096

/* A one-number file: a sysctl under /proc/sys. */
#define SYSCTL_FILE_SIZE_MAX 4096

/* The buffer getgrnam_r() may ask for, doubling from GROUP_BUFFER_SIZE_INIT on ERANGE: a group
 * entry of the group database (/etc/group or NSS) with its member list. */
#define GROUP_BUFFER_SIZE_INIT 1024
#define GROUP_BUFFER_SIZE_MAX  (1u << 20)

/* A group file read directly, not through NSS: the /etc/group of a namespace an audit judges
 * from the host (probe/namespace.h). */
#define GROUP_FILE_SIZE_MAX (16u << 20)

/* The reply buffer of one statmount() call, which grows until the mount's strings fit. */
#define STATMOUNT_BUFFER_SIZE_MAX (64u << 20)

/* Parents of a newly attached mount the daemon's tracker walks up before it gives up and reads
 * the whole table. */
#define MOUNT_PARENT_WALK_MAX 64

/* Items listed in one array of a finding's evidence (holders, slaves); the full count is given
 * beside the list. */
#define EVIDENCE_LIST_MAX 64
