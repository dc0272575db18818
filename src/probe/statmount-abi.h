/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel ABI of listmount(2) and statmount(2) (include/uapi/linux/mount.h,
 * Linux 6.8 to 6.15), spelled out because glibc has no wrappers and Debian
 * 12's headers lack the structures. Our own names, so that newer headers
 * cannot clash. Shared by statmount.c, its test and its benchmark.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The common syscall table numbers them alike on every architecture but alpha and mips. */
#ifndef __NR_statmount
#if defined(__alpha__)
#define __NR_statmount 567
#elif defined(__mips__)
#define __NR_statmount (__NR_Linux + 457)
#else
#define __NR_statmount 457
#endif
#endif
#ifndef __NR_listmount
#if defined(__alpha__)
#define __NR_listmount 568
#elif defined(__mips__)
#define __NR_listmount (__NR_Linux + 458)
#else
#define __NR_listmount 458
#endif
#endif

/* struct mnt_id_req, first version: what both syscalls take. */
struct mount_id_request {
	uint32_t size;
	uint32_t spare;
	uint64_t mnt_id;
	uint64_t param; /* statmount: the request mask; listmount: the last id listed, or 0 */
};
#define MOUNT_ID_REQUEST_SIZE_VER0 24
_Static_assert(sizeof(struct mount_id_request) == MOUNT_ID_REQUEST_SIZE_VER0, "mnt_id_req ABI");

/* Its second version (Linux 6.11): the mounts of another namespace, named by its id. */
struct mount_id_request_ns {
	struct mount_id_request req; /* size MOUNT_ID_REQUEST_SIZE_VER1 */
	uint64_t mnt_ns_id;
};
#define MOUNT_ID_REQUEST_SIZE_VER1 32
_Static_assert(sizeof(struct mount_id_request_ns) == MOUNT_ID_REQUEST_SIZE_VER1, "mnt_id_req ABI");

/* statx(): the 64-bit mount id statmount() takes (Linux 6.8). */
#define STATX_MNT_ID_UNIQUE_ABI 0x00004000U

/* ioctl of a mount namespace's nsfs file (Linux 6.10): its 64-bit id, never reused. */
#define NSFS_GET_MNTNS_ID _IOR(0xb7, 0x5, uint64_t)

/* struct statmount as of Linux 6.15; strings are offsets into str[]. */
struct statmount_reply {
	uint32_t size;
	uint32_t mnt_opts;
	uint64_t mask;
	uint32_t sb_dev_major;
	uint32_t sb_dev_minor;
	uint64_t sb_magic;
	uint32_t sb_flags;
	uint32_t fs_type;
	uint64_t mnt_id;
	uint64_t mnt_parent_id;
	uint32_t mnt_id_old;
	uint32_t mnt_parent_id_old;
	uint64_t mnt_attr;
	uint64_t mnt_propagation;
	uint64_t mnt_peer_group;
	uint64_t mnt_master;
	uint64_t propagate_from;
	uint32_t mnt_root;
	uint32_t mnt_point;
	uint64_t mnt_ns_id;
	uint32_t fs_subtype;
	uint32_t sb_source;
	uint32_t opt_num;
	uint32_t opt_array;
	uint32_t opt_sec_num;
	uint32_t opt_sec_array;
	uint64_t supported_mask;
	uint64_t spare[45];
	char str[];
};
_Static_assert(offsetof(struct statmount_reply, mnt_id_old) == 56, "statmount ABI");
_Static_assert(offsetof(struct statmount_reply, mnt_root) == 104, "statmount ABI");
_Static_assert(offsetof(struct statmount_reply, sb_source) == 124, "statmount ABI");
_Static_assert(offsetof(struct statmount_reply, supported_mask) == 144, "statmount ABI");
_Static_assert(sizeof(struct statmount_reply) == 512, "statmount ABI");

#define SM_SB_BASIC	  0x0001U
#define SM_MNT_BASIC	  0x0002U
#define SM_MNT_ROOT	  0x0008U
#define SM_MNT_POINT	  0x0010U
#define SM_FS_TYPE	  0x0020U
#define SM_MNT_OPTS	  0x0080U
#define SM_FS_SUBTYPE	  0x0100U
#define SM_SB_SOURCE	  0x0200U
#define SM_SUPPORTED_MASK 0x1000U

#define LSMT_ROOT_ID UINT64_MAX /* listmount: the mounts below the caller's root */

/* MOUNT_ATTR_* (statmount's mnt_attr) */
#define ATTR_RDONLY	 0x00000001
#define ATTR_NOSUID	 0x00000002
#define ATTR_NODEV	 0x00000004
#define ATTR_NOEXEC	 0x00000008
#define ATTR_ATIME_MASK	 0x00000070
#define ATTR_RELATIME	 0x00000000
#define ATTR_NOATIME	 0x00000010
#define ATTR_NODIRATIME	 0x00000080
#define ATTR_IDMAP	 0x00100000
#define ATTR_NOSYMFOLLOW 0x00200000

/* SB_* (statmount's sb_flags: only these four are reported) */
#define SBF_RDONLY	0x00000001
#define SBF_SYNCHRONOUS 0x00000010
#define SBF_DIRSYNC	0x00000080
#define SBF_LAZYTIME	0x02000000

#define DEVPTS_MAGIC 0x1cd1 /* sb_magic of devpts */

#define SM_PROPAGATION_SLAVE  (1u << 19) /* MS_SLAVE, in mnt_propagation */
#define SM_PROPAGATION_SHARED (1u << 20) /* MS_SHARED */

#define LISTMOUNT_REVERSE (1u << 0) /* listmount: the latest ids first (Linux 6.14) */

static inline long sys_listmount_flags(const struct mount_id_request *req, uint64_t *ids, size_t n,
				       unsigned flags)
{
	return syscall(__NR_listmount, req, ids, n, flags);
}

static inline long sys_listmount(const struct mount_id_request *req, uint64_t *ids, size_t n)
{
	return sys_listmount_flags(req, ids, n, 0);
}

static inline long sys_statmount(const struct mount_id_request *req, struct statmount_reply *buf,
				 size_t size)
{
	return syscall(__NR_statmount, req, buf, size, 0);
}
