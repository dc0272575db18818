/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How the daemon hears of changes of its mount table, and which mounts an audit reads. The
 * mountinfo poll (EPOLLPRI of /proc/self/mountinfo) wakes on every change; MountEvents= picks the
 * backend that judges it (one ops table each, in mount-source.c):
 *   - mountinfo: every change is an audit, of the whole table;
 *   - fanotify: the mount tracker (probe/mounttrack.h) hears attach and detach from fanotify and
 *     follows the relevant mounts; a wake-up of the poll (a remount) re-reads those few,
 *     coalesced as daemon/policy.h says, and is an audit only when one of them changed.
 * When the tracker fails, the source falls back to mountinfo for good (until a reload).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "config/conf.h"
#include "probe/mounttrack.h"
#include "snapshot/mountinfo.h"
#include "util/macro.h"
#include "util/systemd-dl.h"

struct mount_source;

/* Something changed that the next audit must see (REASON_MOUNT). */
typedef void (*mount_source_fn)(void *userdata);

/* Open the mountinfo poll (the mountinfo backend). Logs what went wrong. */
int mount_source_new(sd_event *event, mount_source_fn on_change, void *userdata,
		     struct mount_source **ret);
struct mount_source *mount_source_free(struct mount_source *m);
DEFINE_POINTER_CLEANUP(struct mount_source, mount_source_free)

/* MountEvents= of c (borrowed until the next call; CoalesceMSec= spaces the re-reads): start or
 * stop the tracker, at start and on reload. With auto, a kernel or a seccomp filter that does
 * not allow fanotify mount events or statmount() means mountinfo. Logs; < 0 only when
 * MountEvents=fanotify cannot be had, or out of memory. */
int mount_source_apply(struct mount_source *m, const struct config *c);

/* The mounts for the next audit's probe: 1 and *ret NULL for the whole table, 0 and the
 * followed mounts (taken over by the probe); -ENOMEM. */
int mount_source_table(struct mount_source *m, struct mount_table **ret);
/* Does the probe need every entry's unique id (for mount_source_follow())? */
bool mount_source_unique_ids(const struct mount_source *m);
/* After an audit: follow the relevant mounts of its analysis. -ENOMEM; another failure stops
 * the tracker (logged, and an audit of the whole table is due). */
int mount_source_follow(struct mount_source *m, const struct analysis *a);
/* Will the next audit read the whole table? */
bool mount_source_needs_full(const struct mount_source *m);
/* Trust nothing followed so far (a reload). */
void mount_source_forget(struct mount_source *m);

struct mount_source_stats {
	uint64_t poll_wakeups;		    /* changes the mountinfo poll reported */
	uint64_t fanotify_wakeups;	    /* wake-ups for fanotify events */
	bool tracking;			    /* the fanotify backend, now */
	struct mount_tracker_stats tracker; /* when tracking */
};
void mount_source_get_stats(const struct mount_source *m, struct mount_source_stats *ret);
