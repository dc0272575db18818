/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation probe: a guarded child (util/guarded-child.h) becomes an unprivileged user and
 * allocates a pty the way programs do, open("/dev/ptmx"), grantpt(), unlockpt(), ptsname(),
 * open() of that name, and checks that the name leads to the slave TIOCGPTPEER gives. The
 * result is plain data (snapshot/allocation.h). The child may first enter a mount namespace and
 * a root (both as file descriptors) so that it allocates as that namespace's programs would.
 * Nothing it opens outlives it: it answers and exits.
 */
#pragma once

#include <sys/types.h>

#include "snapshot/allocation.h"

/* How long one probe child may take from fork to exit. */
#define ALLOC_DEADLINE_USEC (2ULL * 1000000ULL)
/* Children started before the probe is reported interfered with. */
#define ALLOC_ATTEMPTS 3

struct alloc_options {
	uid_t uid; /* the user to allocate as, and its group */
	gid_t gid;
	int mntns_fd; /* >= 0: enter this mount namespace first; -1: the caller's */
	int root_fd;  /* >= 0: and this root; -1: the caller's */
};

/* Probe; *ret gets ALLOC_PERFORMED (with the steps), ALLOC_INTERFERED or ALLOC_SETUP_FAILED.
 * Negative errno when no child could be started (ret untouched). */
int probe_allocation(const struct alloc_options *o, struct alloc_probe *ret);
