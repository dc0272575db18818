/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation probe: a guarded worker (util/guarded-child.h) running as an unprivileged user,
 * serving the probes of many audits (or, for a lone audit, a guarded child), allocates a pty the
 * way programs do, open("/dev/ptmx"), grantpt(), unlockpt(), ptsname(), open() of that name, and
 * checks that the name leads to the slave TIOCGPTPEER gives. The result is plain data
 * (snapshot/allocation.h). Nothing it opens outlives the request: the pty is closed before the
 * answer is sent, so once it is collected /dev/pts/N is gone.
 *
 * In another mount namespace, every path is resolved under the namespace's root, handed to the
 * worker with the request, by openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), instead of
 * entering the namespace and chrooting there: the same outcome, for the kernel finds the devpts
 * instance of an opened ptmx by looking up "pts" beside it through the file's own mount (which
 * for a path resolved under that root is the namespace's), and checks permissions with the
 * worker's credentials only. glibc's grantpt() is TIOCGPTN, unlockpt() TIOCSPTLCK and
 * ptsname_r() TIOCGPTN and "/dev/pts/N" (glibc 2.33 and later, no stat), so the probe makes
 * those calls itself and opens the name under the root rather than as the host's path.
 */
#pragma once

#include <sys/types.h>

#include "snapshot/allocation.h"
#include "util/guarded-child.h"

/* How long one request of the probe may take, from submission to answer. */
#define ALLOC_DEADLINE_USEC (2ULL * 1000000ULL)
/* In another namespace, which chooses what its /dev/ptmx is: far less (a healthy probe takes a
 * millisecond or two), so that no namespace holds up a run over many. */
#define ALLOC_NS_DEADLINE_USEC (400ULL * 1000ULL)
/* What the probes of one run over many namespaces (--all-namespaces) may take together (the time
 * they are waited for: all of it for an attempt that never answers, what is beyond
 * ALLOC_ANSWER_FREE_USEC for one that does); those that would start later are ALLOC_SKIPPED. */
#define ALLOC_RUN_BUDGET_USEC  (2ULL * 1000000ULL)
#define ALLOC_ANSWER_FREE_USEC (100ULL * 1000ULL)
/* Requests made before the probe is reported interfered with. */
#define ALLOC_ATTEMPTS 3
/* The cgroup hierarchies a probe child joins: the unified one and the v1 devices one. */
#define ALLOC_CGROUP_FDS 2

struct alloc_options {
	uid_t uid; /* the user to allocate as, and its group */
	gid_t gid;
	int root_fd; /* >= 0: resolve every path under this root (a namespace's); -1: ours */
	uint64_t deadline_usec; /* of one attempt; 0: ALLOC_DEADLINE_USEC */
	/* What the probes of a run may still take together, in microseconds, charged with the
	 * time each attempt is waited for (ALLOC_RUN_BUDGET_USEC says how); no attempt starts
	 * once it is 0. NULL: no budget. */
	uint64_t *budget_left;
	/* The cgroup.procs files (O_WRONLY) of the namespace's own cgroups where they are not
	 * ours, -1 elsewhere: the child joins them before it drops its privileges, so that the
	 * device rules the namespace's users meet are the ones it meets (probe/cgroup.h). Only
	 * when join_cgroups. */
	bool join_cgroups;
	int cgroup_fds[ALLOC_CGROUP_FDS];
	/* probe_allocation() only (a worker serves many and ignores them): */
	/* A descriptor is reopened through our /proc's descriptor (util/procfs.h: opened before a
	 * namespace was entered) rather than "/proc" by path, which in a root entered is that
	 * root's. Only with root_fd < 0 (with a root, we are in our own mount namespace). */
	bool own_proc;
	/* Once the pty works, the child takes it as its controlling terminal in a session of its
	 * own and opens /dev/tty (alloc_probe.tty): repair's verification of /dev/tty. */
	bool tty;
};

/* Start worker w for the probes of user uid and group gid ahead of the first (see
 * guarded_worker_start()). */
int probe_allocation_prepare(struct guarded_worker *w, uid_t uid, gid_t gid);
/* Hand the probe to worker w and return at once: it allocates while the caller goes on. 0, or a
 * negative errno when no worker could be started or given it. */
int probe_allocation_submit(struct guarded_worker *w, const struct alloc_options *o);
/* The probe submitted (submitted: what probe_allocation_submit() returned) into *ret:
 * ALLOC_PERFORMED (with the steps), ALLOC_INTERFERED (a worker stopped or killed past its
 * deadline ALLOC_ATTEMPTS times) or ALLOC_SETUP_FAILED. Negative errno when no worker could be
 * started (ret untouched). */
int probe_allocation_collect(struct guarded_worker *w, const struct alloc_options *o, int submitted,
			     struct alloc_probe *ret);
/* Is the budget of o spent? Then *ret says ALLOC_SKIPPED: nothing is to be started. */
bool probe_allocation_skipped(const struct alloc_options *o, struct alloc_probe *ret);
/* The probe of a lone audit: in a guarded child of its own (guarded_child_run(), a clone
 * sharing our memory, which costs a fraction of starting a worker), waited for. The same
 * outcome as on a worker. */
int probe_allocation(const struct alloc_options *o, struct alloc_probe *ret);
