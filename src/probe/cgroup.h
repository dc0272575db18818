/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroups a probe of another namespace runs in. A container's device rules (the v1 devices
 * controller, or the BPF programs attached to its cgroup v2 directory) are met by a process in
 * its cgroup, not by one in ours: the allocation probe of a namespace joins the cgroups of the
 * namespace's process first, so that what it may open is what that process may open.
 *
 * Where the cgroups are is the kernel's word (/proc/PID/cgroup, read through the pinned
 * process's /proc directory); the directories are opened beneath our own cgroup mounts with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) and
 * checked to be cgroup file systems. A delegated owner may name its cgroups anything, a newline
 * included: a hierarchy listed twice is refused rather than guessed at.
 */
#pragma once

#include "probe/allocation.h"
#include "snapshot/snapshot.h"

struct namespace_target;

/* The cgroup.procs files (O_WRONLY|O_CLOEXEC) of the cgroups of t's process in the unified
 * hierarchy and the v1 devices hierarchy, each where it is not ours: fds[i] >= 0, else -1.
 * 0; -EACCES or -EPERM when we may not write them (the daemon as its own user: the probe then
 * runs in our cgroup); -EBADMSG when /proc/PID/cgroup is ambiguous; another -errno. */
int probe_cgroup_procs_of(const struct namespace_target *t, int fds[ALLOC_CGROUP_FDS]);
void probe_cgroup_fds_close(int fds[ALLOC_CGROUP_FDS]);

/* The device cgroup of t's process (t NULL or our own: ours), for a probe whose open failed
 * with EPERM: the v1 devices cgroup and its devices.list where that controller is mounted and
 * the process is in it, else the unified cgroup (version 2, no list); for another namespace, the
 * container it belongs to. The directory is opened as the cgroup.procs files above are, the list
 * read only. 0 and *ret; -ENOENT when neither hierarchy is there; another -errno. */
int probe_device_cgroup(const struct namespace_target *t, struct device_cgroup **ret);
