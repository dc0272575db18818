/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the three files of the namespace target (probe/namespace.h) share, and nothing for use
 * outside them:
 *   - namespace.c: the target itself: opened and pinned, checked again, entered; its user
 *     namespace's id maps; which processes are in it;
 *   - namespace-paths.c: paths under its root: opened, and lstat()ed through the directories
 *     kept open for one probe;
 *   - namespace-read.c: files of the namespace read with its root's rights alone, bounded, by a
 *     guarded child where a file system may not answer; its /proc files and its group file.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "probe/namespace.h"
#include "probe/statmount-abi.h"

/* Paths are resolved under t's root: t is another namespace's, or a chroot (not own). */
static inline bool ns_in_root(const struct namespace_target *t)
{
	return t && !t->own;
}

/* namespace-paths.c: the directories ns_lstat() keeps open (t->dirs), empty; and freed, with
 * each one closed (NULL: nothing). */
struct ns_dirs *ns_dirs_new(void);
void ns_dirs_free(struct ns_dirs *d);

/* namespace.c: statmount() of the mount holding fd, looked up among the mounts of t's
 * namespace, asking for mask: 0 and *reply filled; -ENOENT when that mount is not one of the
 * namespace's; -EOPNOTSUPP where the kernel cannot say (no unique mount ids, namespace ids or
 * statmount() of another namespace: before Linux 6.11). Neither call asks the file system
 * anything. */
int ns_statmount_in(const struct namespace_target *t, int fd, uint64_t mask,
		    struct statmount_reply *reply);
