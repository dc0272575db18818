/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What namespace.c, the namespace target (probe/namespace.h), gives the two files built on it,
 * and nothing for use outside them: namespace-paths.c resolves the target's paths under its
 * root (filling the directories the target keeps open, struct ns_dirs), and namespace-read.c
 * reads its files through those paths with its root's rights. Neither is called back by
 * namespace.c.
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

/* The directories ns_lstat() keeps open during one probe (namespace-paths.c fills them; the
 * target owns them): a directory resolved, by path; fd -errno when it could not be. */
struct ns_dir {
	char *path;
	int fd;
};

struct ns_dirs {
	bool active; /* between ns_dirs_begin() and ns_dirs_end() */
	/* ns_check_every_lookup() was called: ns_open() walks each path a component at a time
	 * (open_in_root_checked()). Not reset by ns_dirs_close(). */
	bool checked;
	size_t n, allocated;
	struct ns_dir *items;
};

/* Close the directories d keeps and end its scope (d stays, empty, for the next probe). */
void ns_dirs_close(struct ns_dirs *d);

/* statmount() of the mount holding a file, looked up among the mounts of t's namespace, asking
 * for mask; sx is the file's statx reply, asked with STATX_MNT_ID_UNIQUE_ABI (statx_nosync()):
 * 0 and *reply filled; -ENOENT when that mount is not one of the namespace's; -EOPNOTSUPP
 * where the kernel cannot say (no unique mount ids, namespace ids or statmount() of another
 * namespace: before Linux 6.11). Neither call asks the file system anything. */
struct statx;
int ns_statmount_in(const struct namespace_target *t, const struct statx *sx, uint64_t mask,
		    struct statmount_reply *reply);
