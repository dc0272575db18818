/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount table from listmount(2) and statmount(2) instead of mountinfo
 * text: the same entries, field for field, in the same order as
 * mount_table_parse() gives for /proc/self/mountinfo of the calling process
 * (its mount namespace, seen from its root). Needs a kernel whose statmount()
 * reports its supported mask and every field mountinfo prints (6.15 and
 * later).
 *
 * One field cannot be had: statmount() does not report the superblock's
 * SB_MANDLOCK, so a superblock mounted with "mand" (a no-op since Linux 5.15,
 * printed all the same) lacks ",mand" in super_options here.
 */
#pragma once

#include "snapshot/mountinfo.h"

/*
 * Enumerate the caller's mount namespace. A negative errno means "read
 * mountinfo instead": -ENOSYS (kernel before 6.8, or a seccomp filter that
 * says so), -EPERM (a seccomp filter or an LSM), -EOPNOTSUPP (statmount()
 * lacks a field mountinfo shows); -ENOMEM as usual.
 */
int mount_table_from_kernel(struct mount_table **ret);

/* The same for the given mounts only (unique ids, in any order), in the kernel's order: what a
 * whole table would hold of them. Mounts that are gone are left out. */
int mount_table_from_ids(const uint64_t *ids, size_t n_ids, struct mount_table **ret);

/* What the tracker's full read keeps of every mount: enough to find the ones that matter, about
 * 32 bytes a mount where a table entry with its strings takes some 200. */
struct mount_brief {
	uint64_t id, parent;	  /* unique ids */
	uint64_t mountpoint_hash; /* hash_path() of the whole mountpoint, seed 0 */
	bool devpts;
};

/* Every mount of our namespace visible from our root, in the kernel's order: one statmount()
 * of three fields each. Errors as mount_table_from_kernel(). */
int mount_briefs_from_kernel(struct mount_brief **ret, size_t *ret_n);

/* What the mount-event tracker needs to know of a mount that just appeared. */
struct mount_peek {
	uint64_t id, parent; /* unique ids; parent == id at the root of the namespace */
	char *mountpoint;    /* malloc'ed; "" when not reachable from our root */
	bool devpts;
};

/* -ENOENT: the mount is gone (or is not in our namespace). */
int mount_peek(uint64_t id, struct mount_peek *ret);

/*
 * Is mount_table_from_kernel() the cheaper way here? Usually not: on 10,000
 * mounts it costs 67 ms where mountinfo costs 40 ms (statmount() per mount
 * against one text). But mountinfo prints "propagate_from:" for every slave
 * mount, found by walking its master's whole peer group: in a namespace whose
 * mounts are slaves of large peer groups (bind mounts of shared volumes, seen
 * from a container or a sandboxed service) the text turns quadratic, 1.7 s
 * for 10,000 mounts in one peer group against 73 ms through statmount().
 * Estimated from listmount() and statmount() of 64 mounts spread over the
 * table (about 2 ms on 10,000 mounts); false when the syscalls are unusable.
 * Figures: tests/bench/statmount-bench.c.
 */
bool mount_table_prefer_kernel(void);
