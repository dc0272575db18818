/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A mount namespace to judge (audit --namespace PID): the process's mount namespace and root,
 * held by file descriptors opened once, so that every later read is of that same namespace,
 * and nothing in it is trusted. Every path of the namespace is resolved under its root with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): an absolute symlink there stays there.
 * Files are opened non-blocking and read with the bounds of util/limits.h, as on the host.
 *
 * A NULL target everywhere below is the caller's own namespace: paths are then resolved the
 * ordinary way, as the probe always did.
 *
 * The target is pinned by a pidfd: namespace_target_check() tells whether the process is still
 * there (it may exit at any moment; the descriptors keep its namespace readable, but an audit
 * of a namespace whose process left says so rather than judging a namespace in teardown).
 *
 * Three files implement it, each built on the one before: namespace.c the target (opened,
 * pinned, checked again, entered; its /proc/PID files, ns_read_proc(); its id maps; its
 * processes), namespace-paths.c its paths (ns_open(), ns_lstat() and its open directories),
 * namespace-read.c the reading of its files (ns_read_file(), ns_read_files(), ns_group_find()).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/macro.h"

struct namespace_target {
	pid_t pid;
	int pidfd;	/* pidfd_open(pid): the process itself, not a reused number */
	int proc_fd;	/* /proc/PID: mountinfo, uid_map, gid_map */
	int mntns_fd;	/* /proc/PID/ns/mnt, for setns(CLONE_NEWNS) */
	int root_fd;	/* /proc/PID/root, O_PATH: every path of the namespace starts here */
	uint64_t mntns; /* inode number of its mount namespace (what lsns and /proc/PID/ns show) */
	uint64_t mntns_id; /* its 64-bit id, never reused (Linux 6.11); 0 where unknown */
	dev_t mntns_dev;   /* and the device of that inode (nsfs) */
	/* It is the caller's own mount namespace and root: judged as the host, with its usual
	 * paths. A process of the same namespace below another root (a chroot) is not own. */
	bool own;
	/* Its mount namespace is the caller's, whatever its root: own, or a chroot of ours. What
	 * repair --namespace refuses unless asked: a pid listed in a container and reused since
	 * by a process of the host names the host. */
	bool mntns_ours;
	/* Its root directory is the caller's (the same inode), in whatever mount namespace. */
	bool root_is_ours;
	/* That root directory (fstat of root_fd), and its path as the kernel prints it
	 * (readlink of /proc/PID/root: from the root of the mount namespace it lies in; NULL when
	 * unreadable). The path is made of names whoever built the tree chose: untrusted text,
	 * escaped wherever printed. */
	dev_t root_dev;
	ino_t root_ino;
	char *root_path;
	/* When the process started, in clock ticks after boot (field 22 of /proc/PID/stat, read
	 * through the pinned /proc/PID): with mntns and the root, what tells the process listed
	 * from another that has its pid since (probe/namespace-handle.h). */
	uint64_t start_time;
	/* Its root directory lies on a mount of another mount namespace (a chroot through
	 * /proc/PID/root of a process elsewhere): its mount table says nothing of what it sees,
	 * and it is not judged (probe_base() refuses it). False where the kernel cannot tell. */
	bool root_outside;
	/* Its root directory lies on a FUSE or network file system (the FUSE rule,
	 * probe/stalling-fs.h): what that mount is, for a person, escaped; NULL when it does not,
	 * or where the kernel cannot say (before Linux 6.11: the namespace's own table is all
	 * that is judged by). Such a mount may lie above the root, where the namespace's mountinfo,
	 * printed relative to its root, does not show it. It is not judged (probe_base()). */
	char *root_stalls;
	/* Its user namespace's maps, the text of /proc/PID/uid_map and gid_map; NULL for the
	 * identity (the initial user namespace). */
	char *uid_map, *gid_map;
	/* The text of its /proc/PID/cgroup, read once when it is opened: the cgroups of this
	 * audit, which attribution and the probe's device rules both go by. NULL, with the -errno
	 * of the read in cgroup_error, where it could not be read (no cgroups: -ENOENT). */
	char *cgroup;
	int cgroup_error;
	/* The directories of the namespace that ns_lstat() resolved under its root during one
	 * probe (ns_dirs_begin() to ns_dirs_end()), kept open so that each node costs one stat. */
	struct ns_dirs *dirs;
};

/* Open the namespace of pid. -ESRCH: no such process (or it exited meanwhile); -EACCES/-EPERM:
 * not allowed (ptrace access mode read is needed: root, in practice); other negative errno. */
int namespace_target_open(pid_t pid, struct namespace_target **ret);
struct namespace_target *namespace_target_free(struct namespace_target *t);
DEFINE_POINTER_CLEANUP(struct namespace_target, namespace_target_free)

/* 0 while the process is alive, -ESRCH once it has exited. */
int namespace_target_check(const struct namespace_target *t);

/* Right before acting on the namespace: 0 while the process is alive and still in the mount
 * namespace it was opened in (t->mntns, the one judged) and below the root it had; -ESRCH once
 * it has exited; -ESTALE when it has entered another mount namespace since, whose inode goes to
 * *ret_now (may be NULL); -EXDEV when it has another root directory now (a chroot gone back to
 * its old root); another negative errno when that cannot be told. */
int namespace_target_recheck(const struct namespace_target *t, uint64_t *ret_now);

/* The identity whose rights bound what repair creates in the target (probe/namespace.c says
 * why): for a chroot of the caller's own mount namespace, the process's effective uid and gid
 * (as the initial user namespace numbers them); for another mount namespace, the ids outside of
 * its user namespace's root (0 and 0 in the initial user namespace; the overflow id where
 * unmapped). 0 or -errno (-ESRCH: it exited). */
int namespace_target_owner(const struct namespace_target *t, uid_t *ret_uid, gid_t *ret_gid);

/* The mount namespace inode of the caller (for "the host"), and of any process: 0 or -errno. */
int namespace_self_mntns(uint64_t *ret);

/* In a child about to act or allocate in the namespace: setns() to its mount namespace, then
 * chroot to its root and chdir there. Privileges are still those of the caller: drop them
 * afterwards. The user namespace is not entered (ids stay the initial namespace's). Never call
 * it in the main process. 0 or -errno. */
int namespace_enter(const struct namespace_target *t);

/* Paths of the namespace (t NULL: the caller's own). Each returns 0 or a negative errno. */
/* open() of path under the root; flags as for open() (O_CLOEXEC is added). */
int ns_open(const struct namespace_target *t, const char *path, int flags);
/* lstat() of path under the root; *ret_target (may be NULL) the symlink's target, as read.
 * Between ns_dirs_begin() and ns_dirs_end() the directory of path is resolved under the root
 * once, kept open, and path's last component is looked up in it with stat_in_dir(): /dev/ptmx,
 * /dev/pts and each slave in /dev/pts cost a stat each, not an openat2, an fstat and a close.
 * Outside that scope nothing is kept open (an open directory would keep a mount of the
 * namespace busy). */
int ns_lstat(const struct namespace_target *t, const char *path, struct stat *st,
	     char **ret_target);
/* The same without the directory cache or the link's target: path resolved whole, one openat2
 * when it is not there (for a path looked up once). */
int ns_lstat_whole(const struct namespace_target *t, const char *path, struct stat *st);
/* The namespace has a FUSE or network mount (probe/stalling-fs.h) that none of the paths its
 * probe looks up lies on, but a symbolic link may lead there: from now on ns_open() (and
 * ns_lstat() through it) resolves each path a component at a time, asking the kernel for the
 * mount of each directory before a name is looked up in it, and fails with -EREMOTE rather than
 * look anything up on such a mount. t NULL or own: nothing. */
void ns_check_every_lookup(const struct namespace_target *t);
/* Start (again) and end the scope of ns_lstat()'s open directories; t NULL or own: nothing. */
void ns_dirs_begin(const struct namespace_target *t);
void ns_dirs_end(const struct namespace_target *t);
/* lstat() of name in directory dirfd without waiting for a network or FUSE file system
 * (statx(AT_STATX_DONT_SYNC)), name a single component: not empty, no '/', neither "." nor
 * "..". Such a lookup cannot leave the directory (a symlink there is not followed), so one in a
 * directory opened under a namespace's root stays under it. 0, -EINVAL for any other name, or
 * -errno. */
int stat_in_dir(int dirfd, const char *name, struct stat *st);
/* read_file_flags() (util.h) under the root: regular files only, bounded, non-blocking; in
 * another namespace, opened and read by a guarded child (util/guarded-child.h) with the identity
 * of the namespace's root (its outside uid and gid; the overflow id where it has none) and no
 * capability, and refused on a kernel pseudo file system (proc, sysfs, debugfs, tracefs,
 * securityfs and the like: -NS_READ_PSEUDO). -EBADFD: not a regular file; -EFBIG: over
 * max_size; -ETIMEDOUT: the reader did not answer by NS_READ_DEADLINE_USEC. Whatever the file,
 * nothing but this call's result leaves the namespace: ns_read_error_string() says it. */
#define NS_READ_PSEUDO	      EMEDIUMTYPE
#define NS_READ_DEADLINE_USEC (2ULL * 1000000ULL)
int ns_read_file(const struct namespace_target *t, const char *path, int flags, size_t max_size,
		 char **ret, size_t *ret_size);
/* Several files of one namespace read as ns_read_file() reads one, but those read here (not by
 * a child) under one switch of identity: the credential work of a read (a dozen system calls
 * each way) once a call. error says, for each, what ns_read_file() would return. */
#define NS_FILES_MAX 4
struct ns_file {
	const char *path;
	int flags;
	size_t max_size;
	char *text; /* the caller's to free (ns_files_done()); NULL when error */
	size_t size;
	int error;
};
void ns_read_files(const struct namespace_target *t, struct ns_file *files, size_t n);
void ns_files_done(struct ns_file *files, size_t n);
/* For a person: what an error of ns_read_file() means. */
const char *ns_read_error_string(int r);
/* A stat from the host gives the initial user namespace's ids: turn them into the namespace's
 * own, as a stat there would give them (the overflow id where it has none), so that a namespace's
 * snapshot is in its own numbers like that of an audit run inside it. */
void ns_translate_ids(const struct namespace_target *t, struct stat *st);
/* At most this much of a /proc/PID/cgroup is read: a line per hierarchy. */
#define CGROUP_FILE_SIZE_MAX (64u << 10)

/* A file of /proc/PID (t NULL: /proc/self), e.g. "mountinfo", "gid_map": opened (read-only,
 * close-on-exec), or read whole. */
int ns_open_proc(const struct namespace_target *t, const char *name);
int ns_read_proc(const struct namespace_target *t, const char *name, size_t max_size, char **ret,
		 size_t *ret_size);

/* The gid of group name in the text of a group file (a namespace's /etc/group, read with the
 * bound of GROUP_FILE_SIZE_MAX; never through NSS: the namespace's NSS modules are not ours to
 * run), which is cut up on the way: 0, or -ESRCH when there is no such group. */
int ns_group_find(char *text, const char *name, gid_t *ret);

/* Is process pid (a name of /proc) in the mount namespace mntns? 1, 0, or -errno. */
int ns_process_in(int proc_fd, const char *pid, uint64_t mntns);

/* Processes in t's mount namespace (pids_total of the report). */
int namespace_count_processes(const struct namespace_target *t, unsigned *ret);
