/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount namespaces of a host, found by one walk of /proc (audit --all-namespaces, the
 * daemon's [Namespaces] Audit=all): each process's /proc/PID/ns/mnt is stat(2)ed and grouped by
 * its inode, then by its root directory (the st_dev and st_ino of /proc/PID/root): a process
 * whose root is not its namespace's (a chroot: sbuild, pbuilder, mock, arch-chroot) is listed
 * apart, once for each distinct root, and judged on that root. A namespace's root is the root
 * of its first process (the lowest pid: its init), or ours for the caller's own namespace. A
 * process that exits during the walk, a kernel thread, a process whose namespace cannot be read
 * (not root) is passed over, never an error.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/hashindex.h"

/* Processes kept per namespace to audit it through: when the first has exited by the time its
 * turn comes, the next is tried. */
#define MNTNS_CANDIDATES 4

struct mntns {
	uint64_t
	    ino; /* the inode of the namespace in nsfs: what `lsns` and /proc/PID/ns/mnt show */
	unsigned pids_total;
	unsigned n_pids;
	pid_t pids[MNTNS_CANDIDATES]; /* the lowest pids that are not kernel threads */
	pid_t *all;		      /* every process of it (pids_total), for its holders */
	size_t allocated_all;
	/* Its first process is a kernel thread: kdevtmpfs lives in a namespace of its own, apart
	 * from kthreadd's. Each of its processes is then checked; none is a candidate. */
	bool kernel;
	/* The root directory its processes share (of /proc/PID/root). */
	dev_t root_dev;
	ino_t root_ino;
	/* That root is not the namespace's: a chroot inside namespace ino (which may be the
	 * caller's own), listed apart from it. */
	bool chroot;
};

#define MNTNS_SKIPPED_NAMED 4

struct mntns_list {
	struct mntns *items; /* in the order /proc lists them: by the lowest pid */
	size_t n, allocated;
	struct hash_index index; /* ino -> position */
	uint64_t self_ino;  /* the caller's own namespace (not in items, but its chroots are) */
	unsigned pids_self; /* processes in the caller's namespace and root */
	unsigned skipped;   /* processes whose namespace could not be read */
	pid_t skipped_pids[MNTNS_SKIPPED_NAMED]; /* the first of them, to name */
};

/* The caller knows the namespace of inode ino from an earlier walk, and that it is no kernel
 * thread's (the daemon's followed ones): its first process's stat is not read again. */
typedef bool (*mntns_known_fn)(void *userdata, uint64_t ino);

/* Walk proc ("/proc") once. The caller's own namespace is counted but not listed. known may be
 * NULL: each namespace's first process is then checked for a kernel thread. */
int mntns_enumerate(const char *proc, mntns_known_fn known, void *userdata, struct mntns_list *ret);
void mntns_list_done(struct mntns_list *l);
/* The namespace whose inode is ino (at its own root, not a chroot), or NULL. */
const struct mntns *mntns_find(const struct mntns_list *l, uint64_t ino);
/* The item of namespace ino at root (dev, rino), a chroot or not, or NULL. */
const struct mntns *mntns_find_root(const struct mntns_list *l, uint64_t ino, dev_t dev,
				    ino_t rino);

/* The root directory of process pid under proc_fd (stat(2) of /proc/PID/root) into *ret: 0, or
 * a negative errno (-ENOENT, -ESRCH once it has exited; -EACCES when not ours to read). */
int mntns_root_of_pid(int proc_fd, pid_t pid, struct stat *ret);

/* The mount namespace inode of process pid under proc, or a negative errno (-ENOENT, -ESRCH
 * once it has exited; -EACCES when not ours to read). */
int64_t mntns_of_pid(int proc_fd, pid_t pid);

/* The id of the mount namespace of process pid under proc_fd into *ret: 64 bits the kernel
 * never reuses (the inode is reused at once). Returns the namespace's inode, read from the same
 * open file, or a negative errno (-ENOTTY before Linux 6.10). */
int64_t mntns_id_of_pid(int proc_fd, pid_t pid, uint64_t *ret);
/* Does the mount namespace with that id still exist (it lives while a process, an open file of
 * it or a bind mount of its nsfs file holds it)? 1, 0, or a negative errno when the kernel cannot
 * tell (listmount(2) of another namespace: Linux 6.11). */
int mntns_id_exists(uint64_t id);
