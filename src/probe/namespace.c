/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The namespace target (probe/namespace.h): a process's mount namespace and root, opened once
 * and pinned by a pidfd, checked again before acting, entered by a child, and what it holds
 * released; its /proc/PID files; its user namespace's id maps and the ids of its files in its
 * own numbers; the processes in it. Its paths are namespace-paths.c, reading its files
 * namespace-read.c, both built on this file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/namespace-internal.h"
#include "probe/namespace.h"
#include "probe/stalling-fs.h"
#include "probe/statmount-abi.h"
#include "snapshot/idmap.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"

void ns_dirs_close(struct ns_dirs *d)
{
	FOREACH_ARRAY (i, d->items, d->n) {
		free(i->path);
		closep(&i->fd);
	}
	d->n = 0;
	d->active = false;
}

struct namespace_target *namespace_target_free(struct namespace_target *t)
{
	if (!t)
		return NULL;
	if (t->dirs) {
		ns_dirs_close(t->dirs);
		free(t->dirs->items);
		free(t->dirs);
	}
	closep(&t->pidfd);
	closep(&t->proc_fd);
	closep(&t->mntns_fd);
	closep(&t->root_fd);
	free(t->uid_map);
	free(t->gid_map);
	free(t->cgroup);
	free(t->root_path);
	free(t->root_stalls);
	free(t);
	return NULL;
}

int namespace_target_check(const struct namespace_target *t)
{
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

	/* A pidfd polls readable once the process has exited. */
	if (poll(&p, 1, 0) < 0)
		return -errno;
	return p.revents ? -ESRCH : 0;
}

int namespace_target_recheck(const struct namespace_target *t, uint64_t *ret_now)
{
	struct stat st;
	int r = namespace_target_check(t);

	if (r < 0)
		return r;
	/* /proc/PID is the pinned process (namespace_target_open()): its ns/mnt is where it is
	 * now, which the descriptor opened then (mntns_fd) does not follow. */
	if (fstatat(t->proc_fd, "ns/mnt", &st, 0) < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	if (ret_now)
		*ret_now = st.st_ino;
	if (st.st_ino != t->mntns || st.st_dev != t->mntns_dev)
		return -ESTALE;
	/* Its root now (root_fd stays the one it had): a chroot that went back to its old root
	 * would have the caller's act on a tree it no longer stands in. From the kernel's cache, as
	 * when it was opened: a root on a FUSE file system that stopped answering does not wait. */
	r = stat_nosync(t->proc_fd, "root", 0, &st);
	if (r < 0)
		return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
	if (st.st_dev != t->root_dev || st.st_ino != t->root_ino)
		return -EXDEV;
	/* It may have exited after the stat, leaving a namespace in teardown. */
	return namespace_target_check(t);
}

int namespace_self_mntns(uint64_t *ret)
{
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) < 0)
		return -errno;
	*ret = st.st_ino;
	return 0;
}

/* Ours, once: the main process never changes its mount namespace (only children enter others). */
static int self_mntns_cached(uint64_t *ret)
{
	static uint64_t self;

	if (!self) {
		int r = namespace_self_mntns(&self);

		if (r < 0)
			return r;
	}
	*ret = self;
	return 0;
}

/* Our root directory, stat()ed once: what root_is_ours compares every namespace's with. NULL
 * (errno set) when it cannot be. */
static const struct stat *self_root_cached(void)
{
	static struct stat root;
	static bool known;

	if (!known && stat("/", &root) == 0)
		known = true;
	return known ? &root : NULL;
}

int ns_open_proc(const struct namespace_target *t, const char *name)
{
	char path[64];
	int fd;

	if (t)
		fd = openat(t->proc_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	else {
		snprintf(path, sizeof(path), "/proc/self/%s", name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	return fd < 0 ? -errno : fd;
}

int ns_read_proc(const struct namespace_target *t, const char *name, size_t max_size, char **ret,
		 size_t *ret_size)
{
	_cleanup_close_ int fd = ns_open_proc(t, name);

	if (fd < 0)
		return fd;
	/* A file of /proc/PID, which no process can replace: no regular-file check needed. */
	return read_kernel_fd(fd, max_size, ret, ret_size);
}

/* The maps of the user namespace; NULL for the identity (one line mapping every id). */
static int read_idmap(const struct namespace_target *t, const char *name, char **ret)
{
	_cleanup_free_ char *text = NULL;
	unsigned long long in, out, count;
	int used = 0, r;

	*ret = NULL;
	r = ns_read_proc(t, name, 64 * 1024, &text, NULL);
	if (r < 0)
		return r == -ENOENT ? 0 : r; /* no user namespaces in this kernel */
	if (sscanf(text, " %llu %llu %llu %n", &in, &out, &count, &used) == 3 && text[used] == 0 &&
	    in == 0 && out == 0 && count == 4294967295ULL)
		return 0;
	*ret = TAKE_PTR(text);
	return 0;
}

/* Is t in our own user namespace, and is that the initial one (identity maps)? Then its maps
 * are the identity too, and need no reading. Ours is alive (we are in it): its inode can be no
 * other namespace's. */
static bool same_userns_as_identity_self(const struct namespace_target *t)
{
	static int self_identity = -1; /* unknown yet */
	static struct stat self;
	struct stat st;

	if (self_identity < 0) {
		_cleanup_free_ char *uid = NULL, *gid = NULL;

		if (stat("/proc/self/ns/user", &self) < 0 ||
		    read_idmap(NULL, "uid_map", &uid) < 0 || read_idmap(NULL, "gid_map", &gid) < 0)
			return false;
		self_identity = !uid && !gid;
	}
	return self_identity && fstatat(t->proc_fd, "ns/user", &st, 0) == 0 &&
	       st.st_dev == self.st_dev && st.st_ino == self.st_ino;
}

/* /proc refuses a process that is gone with ENOENT or ESRCH: both mean "no such process". */
static int gone(int err)
{
	return err == ENOENT || err == ESRCH ? -ESRCH : -err;
}

/* namespace-internal.h */
int ns_statmount_in(const struct namespace_target *t, const struct statx *sx, uint64_t mask,
		    struct statmount_reply *reply)
{
	struct mount_id_request_ns q = { .req = { .size = MOUNT_ID_REQUEST_SIZE_VER1,
						  .param = mask },
					 .mnt_ns_id = t->mntns_id };

	if (!t->mntns_id || !(sx->stx_mask & STATX_MNT_ID_UNIQUE_ABI))
		return -EOPNOTSUPP;
	q.req.mnt_id = sx->stx_mnt_id;
	if (syscall(__NR_statmount, &q, reply, sizeof(*reply), 0) == 0)
		return (reply->mask & mask) == mask ? 0 : -EOPNOTSUPP;
	if (errno == ENOENT)
		return -ENOENT;
	return errno == ENOSYS || errno == EINVAL || errno == E2BIG ? -EOPNOTSUPP : -errno;
}

/* Is the mount that holds t's root directory one of t's mount namespace? A process can chroot
 * into a tree of another namespace (through /proc/PID/root of a process there): its own
 * mountinfo, printed relative to that root, then shows nothing it can see. 1 when it lies
 * outside, 0 when inside, -EOPNOTSUPP where the kernel cannot say (before Linux 6.11: no
 * unique mount ids, namespace ids or statmount() of another namespace). */
static int root_outside_mntns(const struct namespace_target *t, const struct statx *sx)
{
	struct statmount_reply reply;
	int r = ns_statmount_in(t, sx, SM_MNT_BASIC, &reply);

	return r == -ENOENT ? 1 : r;
}

/* readlink of /proc/PID/root (proc_fd: /proc/PID), bounded: 0 and *ret, or -errno. */
static int read_root_path(int proc_fd, char **ret)
{
	_cleanup_free_ char *buf = malloc(PATH_MAX);
	ssize_t n;

	*ret = NULL;
	if (!buf)
		return -ENOMEM;
	n = readlinkat(proc_fd, "root", buf, PATH_MAX - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks: the fields after the name, which
 * ends at the last ')' (the name itself may hold any byte). */
static int read_start_time(const struct namespace_target *t, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	unsigned long long v;
	const char *p;
	int r = ns_read_proc(t, "stat", 4096, &text, NULL);

	if (r < 0)
		return r;
	p = strrchr(text, ')');
	/* Fields 3 (the state) to 21 skipped: 19 of them. */
	if (!p || sscanf(p + 1,
			 " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %llu",
			 &v) != 1)
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* The second number of a "Uid:" or "Gid:" line of /proc/PID/status (real, effective, saved,
 * file system): the effective id. */
static int status_effective_id(const char *text, const char *key, unsigned *ret)
{
	size_t n = strlen(key);

	for (const char *l = text; l; l = strchr(l, '\n')) {
		if (*l == '\n')
			l++;
		if (strncmp(l, key, n) == 0)
			return sscanf(l + n, " %*u %u", ret) == 1 ? 0 : -EBADMSG;
	}
	return -EBADMSG;
}

/* Whose rights a creation in the target stays within. A chroot of our own mount namespace is
 * made by whoever holds CAP_SYS_CHROOT, which needs only search permission on the directory: a
 * user given that capability can stand in a directory of root's. What the process itself may
 * write there is the limit. Another mount namespace belongs to its user namespace's root: in the
 * initial user namespace only root makes one, and a container's tree is its root's. */
int namespace_target_owner(const struct namespace_target *t, uid_t *ret_uid, gid_t *ret_gid)
{
	unsigned u, g;

	if (t->mntns_ours && !t->root_is_ours) {
		_cleanup_free_ char *text = NULL;
		int r = ns_read_proc(t, "status", 64 * 1024, &text, NULL);

		if (r < 0)
			return gone(-r);
		if ((r = status_effective_id(text, "Uid:", &u)) < 0 ||
		    (r = status_effective_id(text, "Gid:", &g)) < 0)
			return r;
	} else {
		if (idmap_to_initial(t->uid_map, 0, &u) < 0)
			u = IDMAP_OVERFLOW_ID;
		if (idmap_to_initial(t->gid_map, 0, &g) < 0)
			g = IDMAP_OVERFLOW_ID;
	}
	*ret_uid = (uid_t)u;
	*ret_gid = (gid_t)g;
	return 0;
}

int namespace_target_open(pid_t pid, struct namespace_target **ret)
{
	_cleanup_(namespace_target_freep) struct namespace_target *t = NULL;
	const struct stat *root;
	struct statx sx;
	struct stat st;
	char path[64];
	uint64_t self;
	int r;

	if (pid <= 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct namespace_target){ .pid = pid,
					.pidfd = -EBADF,
					.proc_fd = -EBADF,
					.mntns_fd = -EBADF,
					.root_fd = -EBADF };
	t->dirs = calloc(1, sizeof(*t->dirs));
	if (!t->dirs)
		return -ENOMEM;
	/* The pidfd first, then /proc/PID, then the pidfd again: if the process is still alive
	 * after /proc/PID was opened, /proc/PID is that process and not a reuse of its number. */
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (t->pidfd < 0)
		return gone(errno);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	t->proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->proc_fd < 0)
		return gone(errno);
	t->mntns_fd = openat(t->proc_fd, "ns/mnt", O_RDONLY | O_CLOEXEC);
	if (t->mntns_fd < 0)
		return gone(errno);
	t->root_fd = openat(t->proc_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->root_fd < 0)
		return gone(errno);
	if ((r = namespace_target_check(t)) < 0)
		return r;
	/* Read through /proc/PID, which is the pinned process (or fails: it exited). */
	r = read_start_time(t, &t->start_time);
	if (r < 0)
		return r == -EBADMSG ? r : gone(-r);
	if (fstat(t->mntns_fd, &st) < 0)
		return -errno;
	t->mntns = st.st_ino;
	t->mntns_dev = st.st_dev;
	if ((r = self_mntns_cached(&self)) < 0)
		return r;
	root = self_root_cached();
	if (!root)
		return -errno;
	r = statx_nosync(t->root_fd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE_ABI, &st, &sx);
	if (r < 0)
		return gone(-r);
	t->root_is_ours = st.st_dev == root->st_dev && st.st_ino == root->st_ino;
	t->root_dev = st.st_dev;
	t->root_ino = st.st_ino;
	if (!t->root_is_ours) {
		r = read_root_path(t->proc_fd, &t->root_path);
		if (r == -ENOMEM)
			return r;
	}
	/* A process in our namespace but below another root (a chroot) is judged under its root,
	 * as an audit run inside it would be: mountinfo already shows only what is under it. */
	if (ioctl(t->mntns_fd, NSFS_GET_MNTNS_ID, &t->mntns_id) < 0)
		t->mntns_id = 0;
	t->mntns_ours = self == t->mntns;
	t->own = t->mntns_ours && t->root_is_ours;
	t->root_outside = !t->own && root_outside_mntns(t, &sx) == 1;
	/* Every lookup under its root starts on the mount that holds the root: one of FUSE or
	 * of a network file system may stall it, wherever that mount's mount point lies. */
	if (!t->own && !t->root_outside) {
		r = dir_may_stall(t->root_fd, t->mntns_ours ? 0 : t->mntns_id, &t->root_stalls);
		if (r == -ENOMEM)
			return r;
	}
	if (!same_userns_as_identity_self(t) && ((r = read_idmap(t, "uid_map", &t->uid_map)) < 0 ||
						 (r = read_idmap(t, "gid_map", &t->gid_map)) < 0))
		return gone(-r);
	/* Its container and its device rules are judged later from this one read: a failure is
	 * theirs to tell (a process gone meanwhile is found so by the audit). */
	r = ns_read_proc(t, "cgroup", CGROUP_FILE_SIZE_MAX, &t->cgroup, NULL);
	if (r == -ENOMEM)
		return r;
	t->cgroup_error = r < 0 ? r : 0;
	*ret = TAKE_PTR(t);
	return 0;
}

int namespace_enter(const struct namespace_target *t)
{
	if (!t || t->own)
		return 0;
	if (setns(t->mntns_fd, CLONE_NEWNS) < 0)
		return -errno;
	/* setns() put us at the namespace's root; the process may have its own below it. */
	if (fchdir(t->root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

void ns_translate_ids(const struct namespace_target *t, struct stat *st)
{
	if (!ns_in_root(t))
		return;
	st->st_uid = idmap_from_initial_or_overflow(t->uid_map, st->st_uid);
	st->st_gid = idmap_from_initial_or_overflow(t->gid_map, st->st_gid);
}

int ns_process_in(int proc_fd, const char *pid, uint64_t mntns)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ns/mnt", pid);
	if (fstatat(proc_fd, path, &st, 0) < 0)
		return -errno;
	return st.st_ino == mntns;
}

int namespace_count_processes(const struct namespace_target *t, unsigned *ret)
{
	_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	if (proc_fd < 0)
		return -errno;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned pid;

		if (parse_uint(de->d_name, &pid) == 0 &&
		    ns_process_in(proc_fd, de->d_name, t->mntns) > 0)
			n++;
	}
	closedir(d);
	*ret = n;
	return 0;
}
