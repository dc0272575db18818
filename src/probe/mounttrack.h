/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Incremental mount tracking for the daemon, for tables of any size. fanotify mount
 * events (FAN_MNT_ATTACH/FAN_MNT_DETACH on our mount namespace, Linux 6.15)
 * say exactly which mount came or went; statmount() says what it is. The
 * tracker keeps only the relevant mounts (analysis_relevant_mounts(): devpts
 * mounts, what is at /dev/ptmx and the pts directory, and everything their
 * reachability depends on) and re-reads those alone, so an unrelated mount
 * costs one statmount() and no audit, whatever the size of the table.
 *
 * A mount that appears is relevant when it is devpts, or when its mountpoint
 * is at or above a relevant mount's (it may cover or stack on it), or inside
 * a devpts mountpoint or /dev (it may shadow a node the probe looks at). A
 * relevant mount that is visible at its mountpoint joins the set with its
 * parents; one that is not (mounted beneath, or into a hidden directory) asks
 * for a full read, as does a queue overflow. A mount that goes is relevant
 * when it is in the set. Remounts have no fanotify event: the mountinfo poll
 * wakes the daemon, and the tracker re-reads its few mounts to tell whether
 * one of them changed; a remount of any other mount changes nothing the
 * checks read.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "snapshot/mountinfo.h"
#include "util/macro.h"

struct mount_tracker;

/* Start listening. -EOPNOTSUPP, -EINVAL, -ENOSYS or -EPERM: the kernel (before 6.15) or a
 * seccomp filter does not allow it, read mountinfo instead. */
int mount_tracker_new(struct mount_tracker **ret);
struct mount_tracker *mount_tracker_free(struct mount_tracker *t);
DEFINE_POINTER_CLEANUP(struct mount_tracker, mount_tracker_free)

/* The fanotify descriptor to poll for reading. */
int mount_tracker_fd(const struct mount_tracker *t);

/* After an audit: follow the relevant mounts of its analysis. The table must come from
 * statmount() (every entry has its unique id), else -EOPNOTSUPP. */
int mount_tracker_follow(struct mount_tracker *t, const struct analysis *a);

/* Read the queued events. > 0 when the next audit has something new to see. */
int mount_tracker_read_events(struct mount_tracker *t);

/* Something changed that has no fanotify event (a remount): > 0 when one of the followed
 * mounts is not what it was at the last audit. */
int mount_tracker_refresh(struct mount_tracker *t);

/* The followed mounts as they are now, for the probe. When nothing is followed yet, or after a
 * queue overflow or a mount that appeared hidden, it first finds them again from a brief of
 * every mount (and returns 1, else 0). -ESTALE: that failed, read the whole table instead. */
int mount_tracker_table(struct mount_tracker *t, struct mount_table **ret);
/* Will the next mount_tracker_table() read the whole table? */
bool mount_tracker_needs_full(const struct mount_tracker *t);
/* Make it (on reload: trust nothing followed so far). */
void mount_tracker_forget(struct mount_tracker *t);

struct mount_tracker_stats {
	uint64_t events;   /* attach and detach events read */
	uint64_t relevant; /* of those, the ones that touched the followed mounts */
	uint64_t refreshes, full_reads;
	size_t followed; /* mounts followed now */
};
void mount_tracker_get_stats(const struct mount_tracker *t, struct mount_tracker_stats *ret);
