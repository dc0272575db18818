/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel says of an audit's target beyond its mounts: the pty sysctls, whether its
 * mount namespace is the initial one (kernel.pty.reserve), and its user namespace's id maps.
 */
#pragma once

#include "snapshot/snapshot.h"

struct namespace_target;

/* What the kernel says alike to every mount namespace: the host's name and release (uname(2) of
 * our own UTS namespace) and the sysctls the probe reads (always the caller's /proc/sys). An
 * audit of many namespaces takes them once, from the host's snapshot, and hands them to each
 * (probe_options.kernel) instead of asking the kernel again for every namespace. */
struct probe_kernel_facts {
	char *hostname, *kernel_release;
	long pty_max, pty_reserve, pty_nr, user_namespaces_max;
};
/* A copy of s's; 0 or -ENOMEM. */
int probe_kernel_facts_from_snapshot(const struct snapshot *s, struct probe_kernel_facts *ret);
void probe_kernel_facts_done(struct probe_kernel_facts *k);

/* The sysctls into s (given's, when given: read once for many namespaces), whether ns (NULL:
 * ours) is the initial mount namespace, and its user namespace's id maps. 0 or -ENOMEM. */
int probe_kernel(const struct probe_kernel_facts *given, const struct namespace_target *ns,
		 struct snapshot *s);

/* The ptys the kernel counts (/proc/sys/kernel/pty/nr) now, or -1 where it cannot say: one
 * pread(2) of the file probe_kernel() keeps open. Read again just before the instances are
 * listed (probe_ptys_unseen()): a pty allocated between the two makes the count look short (a
 * scan for nothing), never one closed meanwhile look complete; the snapshot's count, taken
 * before the mount table was read and parsed, would leave a wider window for the first. */
long probe_pty_nr(void);
