/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The slaves of the serving instance (the probe's second pass), and the user the allocation
 * probes run as, whose short-lived slaves are not counted as anyone's.
 */
#pragma once

#include <sys/types.h>

#include "analysis/analysis.h"
#include "snapshot/snapshot.h"

struct namespace_target;

/* The default probe user where our user namespace does not map it: the highest id it maps,
 * uid and gid each (left as they are when it maps them). */
void probe_user_mapped(uid_t *uid, gid_t *gid);

/* What probe_slaves() listed whole: the mount whose directory it read (NULL: none, or a listing
 * cut short) and how many slaves were there, for probe_ptys_unseen() not to read it again. */
struct slave_listing {
	const struct mount_entry *mount;
	long n;
};

/* Every slave of the instance a says serves /dev/ptmx, as a node of s. A slave of the probe
 * user (alloc_uid; NULL: the default one) that goes or is replaced within 150 ms is another
 * ptsguard's probe in the middle of its allocation, and dropped. A directory that cannot be
 * opened or listed is not an error (what was read is what there is to judge): 0 or -ENOMEM.
 * *listed: the listing, before any slave was dropped. */
int probe_slaves(const struct namespace_target *ns, const uid_t *alloc_uid, struct snapshot *s,
		 const struct analysis *a, struct slave_listing *listed);
