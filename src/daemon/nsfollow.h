/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon following the host's other mount namespaces ([Namespaces] Audit=all).
 *
 * How each is found and watched:
 *   - new namespaces: a walk of /proc every ScanSec= seconds (probe/mntns.h: a stat(2) of
 *     /proc/PID/ns/mnt and one of /proc/PID/root a process), and sooner, one coalescing window
 *     after a followed process exits. The kernel tells nothing when a namespace is created:
 *     fanotify's mount events (FAN_MARK_MNTNS) need a namespace to mark, and the proc
 *     connector's fork and exec events come for every process of the host, not for unshare(2)
 *     or setns(2). A chroot inside a namespace (a root of its own, probe/mntns.h) is followed
 *     apart from it, like one;
 *   - its mounts: POLLPRI on its /proc/PID/mountinfo, which the kernel raises on every change
 *     of that namespace's mount table (as the daemon's own mount source polls its own);
 *   - its /dev/ptmx: inotify on its /dev, resolved inside its root;
 *   - its going: a pidfd of the process it is followed through; when that process exits, the
 *     next walk follows it through another of its processes, or forgets it.
 *
 * Audits of namespaces are coalesced by the host's rule, but a pass always waits a whole
 * CoalesceMSec= (the host's first change after a quiet window is audited at once): changes
 * within it are audited together, and a pass starts no sooner than AuditCPUPercent= allows
 * after the last one's cost. A pass stops after PASS_BUDGET_USEC (the next one goes on where it
 * stopped), and no more namespaces are followed than the limit of open files leaves room for,
 * FDS_RESERVED kept for the rest, nor more than FOLLOWED_MAX (memory), privileged ones first:
 * whoever makes namespaces cannot hold up or starve the host's own audits. These decisions and
 * their constants are daemon/policy.h's.
 * Transitions are journaled like the host's, with PTSGUARD_MNTNS= and PTSGUARD_CONTAINER=.
 */
#pragma once

#include <stdint.h>

#include "config/conf.h"
#include "snapshot/snapshot.h"
#include "report/transitions.h"
#include "util/systemd-dl.h"

struct ns_follower;

struct ns_follower_stats {
	uint64_t scans, audits, appeared, gone, wakeups;
	/* CPU time spent letting go of a namespace whose followed process exited. The mount
	 * table held open to watch it keeps the namespace alive: when that was the last
	 * reference, the kernel tears the namespace down (unmounts it all) in the daemon's
	 * close(2), work the container's own exit would otherwise have done. */
	uint64_t release_usec;
	/* CPU time of the audits of namespaces, with the children they wait for (the allocation
	 * probe's, a guarded read's): what judging a container costs, apart from finding it,
	 * following it and letting it go. */
	uint64_t audit_usec;
	/* Passes of audits cut short to let the event loop go on (PASS_BUDGET_USEC). */
	uint64_t passes_cut;
	size_t followed;
	/* Namespaces the last walk found and could not follow: past what the limit of open files
	 * leaves room for (or out of descriptors). */
	size_t unfollowed;
};

/* Journal one transition (the daemon counts its detections); e carries the namespace's
 * context. */
typedef void (*ns_transition_fn)(void *userdata, const struct transition_event *e);

/* Start following (a first walk of /proc, each namespace audited, judged against the host's
 * serving instance host); config is borrowed and may be replaced with ns_follower_set_config().
 */
int ns_follower_new(sd_event *event, const struct config *config, const struct host_serving *host,
		    ns_transition_fn on_transition, void *userdata, struct ns_follower **ret);
struct ns_follower *ns_follower_free(struct ns_follower *f);
/* A reload: the new configuration, and every namespace audited again. */
void ns_follower_set_config(struct ns_follower *f, const struct config *config);
/* The host's serving instance, after each audit of the host: the namespaces are judged against
 * it (devpts-host-instance), and all audited again when it changed. */
int ns_follower_set_host(struct ns_follower *f, const struct host_serving *host);
void ns_follower_get_stats(const struct ns_follower *f, struct ns_follower_stats *ret);
