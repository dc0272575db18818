/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The search for processes holding ptys of covered devpts instances, and of instances mounted
 * nowhere in the namespace (pty-instance-unreachable), in slices. The second only when the
 * kernel counts more ptys than the instances mounted here list (probe_ptys_unseen()): on a
 * host without containers or stranded sessions, never. It reads
 * /proc/PID/fd of every process (about 4-10 us an open fd), so a host or a namespace with a
 * million open fds costs seconds: too long for one dispatch of the daemon's event loop, whose
 * watchdog must be fed. A scan lists its processes when it starts, then looks at them in order,
 * each slice until a deadline; the next slice goes on at the process and fd where the last one
 * stopped (the fds of /proc/PID/fd are listed in ascending order), so the whole list is covered
 * however small the slices. Processes that start after the list was made are left to the next
 * scan. The one-shot commands run one slice with a generous deadline; the daemon a short slice
 * per audit, resumed at the audits that follow.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "snapshot/snapshot.h"

struct namespace_target;

/* A slice of the daemon's (each audit of the host or of a namespace). */
#define HOLDER_SCAN_SLICE_USEC (50 * 1000ULL)
/* The whole search of a one-shot audit (per namespace): past it, the report says partial. */
#define HOLDER_SCAN_ONESHOT_USEC (10 * 1000000ULL)

struct holder_scan {
	bool started, complete;
	dev_t *devs; /* the covered instances looked for, in analysis order */
	size_t n_devs;
	/* Also ptys of devpts instances mounted nowhere here: those on a filesystem none of
	 * mounted (every device of the mount table) is, that statfs() says are devpts. */
	bool strays, strays_wanted; /* wanted: a's snapshot had ptys unseen */
	dev_t *mounted;
	size_t n_mounted;
	uint64_t stray_mntns; /* mntns 0: strays only in processes of this one (ours) */
	uint64_t mntns;	      /* only processes of this mount namespace (0: every process) */
	pid_t *pids;	      /* the processes to look at, as listed at the start */
	size_t n_pids;
	size_t next;		/* the index in pids of the next process to look at */
	unsigned next_fd;	/* in that process: the first fd not looked at yet */
	struct snapshot *found; /* holders and holders_skipped found so far */
	unsigned processes_scanned;
	uint64_t fds_scanned;
};

/* Count the slaves listed by each devpts instance reachable in the namespace (a readdir of its
 * root each; the one probe_slaves() listed whole, listed_whole, is not read again) against nr,
 * the kernel's count read before any of them, into s->ptys_unseen. Microseconds. */
struct slave_listing;
int probe_ptys_unseen(const struct namespace_target *ns, struct snapshot *s,
		      const struct analysis *a, long nr, const struct slave_listing *listed_whole);
/* Whether a holder scan has anything to look for: an instance covered, or a pty unseen. */
bool holder_scan_wanted(const struct analysis *a);

/* Start a scan for the holders of a's covered instances (and, when a's snapshot has ptys
 * unseen, of instances mounted nowhere here) among pids (n of them), or, pids NULL,
 * among the processes proc (normally "/proc") lists now; mntns as above. 0 when nothing is
 * wanted (hs->started stays false: nothing to scan), 1 started, or negative errno. */
int holder_scan_start(struct holder_scan *hs, const struct analysis *a, const char *proc,
		      const pid_t *pids, size_t n, uint64_t mntns);
/* Whether hs looks for exactly the instances a says are covered, and for strays if a wants. */
bool holder_scan_same_devs(const struct holder_scan *hs, const struct analysis *a);
/* Go on until done or deadline (CLOCK_MONOTONIC, in usec) passes: 1 complete, 0 stopped at
 * the deadline (call again to go on), or negative errno (-ENOMEM; hs may be resumed). */
int holder_scan_run(struct holder_scan *hs, const char *proc, uint64_t deadline);
/* Put what hs found so far into s: the holders not already there of instances a says are
 * covered (and strays while a's snapshot has ptys unseen), the processes skipped, and how far
 * it went (s->holders_progress). */
int holder_scan_into(const struct holder_scan *hs, struct snapshot *s, const struct analysis *a);
/* Only those holders: what a scan under way adds to the last complete one's, or what the last
 * complete one, made for other instances, still says while a new one runs (the daemon). */
int holder_scan_add_holders(const struct holder_scan *hs, struct snapshot *s,
			    const struct analysis *a);
void holder_scan_done(struct holder_scan *hs);

/* Start, run until deadline and put into s in one go: the one-shot commands. */
int holder_scan_once(struct snapshot *s, const struct analysis *a, const char *proc,
		     const pid_t *pids, size_t n, uint64_t mntns, uint64_t deadline);

/* Scan proc (normally "/proc") for processes holding ptys of the covered instances of a, into
 * s->holders; nothing when no instance is covered. About 4-10 us an open fd, whatever it is:
 * a second on a host with 100,000 open fds. Bounded by HOLDER_SCAN_ONESHOT_USEC
 * (above): past it, s->holders_progress says the scan was partial. */
int probe_holders(struct snapshot *s, const struct analysis *a, const char *proc);
/* The same, counting only processes of mount namespace mntns (0: every process). */
int probe_holders_in(struct snapshot *s, const struct analysis *a, const char *proc,
		     uint64_t mntns);
/* The same over the processes pids only (those of mount namespace mntns that a walk of proc
 * listed: audit --all-namespaces walks /proc once for every namespace). */
int probe_holders_pids(struct snapshot *s, const struct analysis *a, const char *proc,
		       const pid_t *pids, size_t n_pids, uint64_t mntns);
