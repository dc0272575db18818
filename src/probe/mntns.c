/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/mntns.h"
#include "util/fileio.h"
#include "probe/statmount-abi.h"
#include "util/alloc.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/procfs.h"

#define PF_KTHREAD 0x00200000UL

int64_t mntns_of_pid(int proc_fd, pid_t pid)
{
	char path[48];
	struct stat st;

	snprintf(path, sizeof(path), "%d/ns/mnt", (int)pid);
	if (fstatat(proc_fd, path, &st, 0) < 0)
		return -errno;
	return (int64_t)st.st_ino;
}

/* PF_KTHREAD in field 9 of /proc/PID/stat. A kernel thread's namespace is the initial one (or,
 * for kdevtmpfs, a private one with devtmpfs at its root), but it is no process of it: audit
 * through it would read nothing of its own, and kdevtmpfs's has no /dev/ptmx to judge. */
static bool is_kernel_thread(int proc_fd, pid_t pid)
{
	char path[48], buf[1024];
	const char *p;
	unsigned long flags;

	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	if (procfs_read_short(proc_fd, path, buf, sizeof(buf)) <= 0)
		return true;   /* gone: not a candidate either */
	p = strrchr(buf, ')'); /* comm may hold anything */
	return !p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1 ||
	       (flags & PF_KTHREAD);
}

int mntns_root_of_pid(int proc_fd, pid_t pid, struct stat *ret)
{
	char path[48];

	/* From what the kernel cached: a root on a FUSE whose daemon stopped answering (a user
	 * may chroot into one in a user namespace) must not stop the listing. */
	snprintf(path, sizeof(path), "%d/root", (int)pid);
	return stat_nosync(proc_fd, path, 0, ret);
}

/* The mount namespace inode of pid, and its root in *root: >= 0, or -errno of either. */
static int64_t mntns_of_pid_and_root(int proc_fd, pid_t pid, struct stat *root)
{
	int64_t ino = mntns_of_pid(proc_fd, pid);
	int k;

	if (ino < 0)
		return ino;
	k = mntns_root_of_pid(proc_fd, pid, root);
	return k < 0 ? k : ino;
}

/* Every item of a namespace (its own and its chroots') is indexed under its inode. */
const struct mntns *mntns_find(const struct mntns_list *l, uint64_t ino)
{
	struct hash_cursor c = { 0 };
	size_t i;

	while ((i = hash_index_next(&l->index, hash_u64(ino), &c)) != HASH_INDEX_NONE)
		if (l->items[i].ino == ino && !l->items[i].chroot)
			return &l->items[i];
	return NULL;
}

const struct mntns *mntns_find_root(const struct mntns_list *l, uint64_t ino, dev_t dev, ino_t rino)
{
	struct hash_cursor c = { 0 };
	size_t i;

	while ((i = hash_index_next(&l->index, hash_u64(ino), &c)) != HASH_INDEX_NONE)
		if (l->items[i].ino == ino && l->items[i].root_dev == dev &&
		    l->items[i].root_ino == rino)
			return &l->items[i];
	return NULL;
}

int mntns_enumerate(const char *proc, mntns_known_fn known, void *userdata, struct mntns_list *ret)
{
	_cleanup_close_ int proc_fd = -EBADF;
	struct mntns_list l = { 0 };
	size_t last = SIZE_MAX; /* a position: the array moves as it grows */
	struct dirent *de;
	struct stat self, self_root;
	int64_t kthread_ino;
	DIR *d;
	int r = 0;

	*ret = (struct mntns_list){ 0 };
	proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return -errno;
	if (fstatat(proc_fd, "self/ns/mnt", &self, 0) < 0)
		return -errno;
	l.self_ino = self.st_ino;
	if ((r = stat_nosync(proc_fd, "self/root", 0, &self_root)) < 0)
		return r;
	/* Kernel threads are all in the namespace of kthreadd (pid 2, when /proc shows them at
	 * all): only that namespace's processes need their stat read to tell. */
	kthread_ino = mntns_of_pid(proc_fd, 2);
	d = fdopendir(dup(proc_fd));
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		unsigned pid_u;
		int64_t ino;
		struct mntns *ns;
		struct stat root;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    parse_uint(de->d_name, &pid_u) < 0)
			continue;
		ino = mntns_of_pid_and_root(proc_fd, (pid_t)pid_u, &root);
		/* A process caught while it exits or execs can refuse for a moment (its mm and
		 * credentials in flux): asked again, it is gone or readable. A refusal that stays,
		 * of a process still there, is what is counted. */
		if (ino < 0 && ino != -ENOENT && ino != -ESRCH) {
			ino = mntns_of_pid_and_root(proc_fd, (pid_t)pid_u, &root);
			if (ino < 0 && faccessat(proc_fd, de->d_name, F_OK, 0) < 0)
				ino = -ESRCH;
		}
		if (ino < 0) {
			if (ino != -ENOENT && ino != -ESRCH && l.skipped++ < MNTNS_SKIPPED_NAMED)
				l.skipped_pids[l.skipped - 1] = (pid_t)pid_u;
			continue;
		}
		if ((uint64_t)ino == l.self_ino && root.st_dev == self_root.st_dev &&
		    root.st_ino == self_root.st_ino) {
			l.pids_self++;
			continue;
		}
		/* Processes of one namespace are mostly neighbours in pid order. */
		ns = last != SIZE_MAX && l.items[last].ino == (uint64_t)ino &&
			     l.items[last].root_dev == root.st_dev &&
			     l.items[last].root_ino == root.st_ino
			 ? &l.items[last]
			 : (struct mntns *)mntns_find_root(&l, (uint64_t)ino, root.st_dev,
							   root.st_ino);
		if (!ns) {
			/* The first process of a namespace gives its root (its init's; ours for
			 * our own): a later one of another root is a chroot in it. */
			bool chroot = (uint64_t)ino == l.self_ino || mntns_find(&l, (uint64_t)ino);

			if (GROW(l.items, l.allocated, l.n + 1) < 0 ||
			    hash_index_add(&l.index, hash_u64((uint64_t)ino), l.n) < 0) {
				r = -ENOMEM;
				break;
			}
			ns = &l.items[l.n++];
			/* At most one read per namespace: kthreadd's is known to hold kernel
			 * threads, and a kernel thread that made a namespace of its own
			 * (kdevtmpfs, at boot) is its first process. One the caller knows from an
			 * earlier walk is not read again: on a host of hundreds of containers
			 * these reads were a tenth of the daemon's CPU. */
			*ns =
			    (struct mntns){ .ino = (uint64_t)ino,
					    .root_dev = root.st_dev,
					    .root_ino = root.st_ino,
					    .chroot = chroot,
					    .kernel = ino != kthread_ino &&
						      !(known && known(userdata, (uint64_t)ino)) &&
						      is_kernel_thread(proc_fd, (pid_t)pid_u) };
		}
		last = (size_t)(ns - l.items);
		if (GROW(ns->all, ns->allocated_all, ns->pids_total + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		ns->all[ns->pids_total++] = (pid_t)pid_u;
		if (ns->n_pids < MNTNS_CANDIDATES && ((ino != kthread_ino && !ns->kernel) ||
						      !is_kernel_thread(proc_fd, (pid_t)pid_u)))
			ns->pids[ns->n_pids++] = (pid_t)pid_u;
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	if (r < 0) {
		mntns_list_done(&l);
		return r;
	}
	*ret = l;
	return 0;
}

void mntns_list_done(struct mntns_list *l)
{
	FOREACH_ARRAY (ns, l->items, l->n)
		free(ns->all);
	free(l->items);
	hash_index_done(&l->index);
	*l = (struct mntns_list){ 0 };
}

int64_t mntns_id_of_pid(int proc_fd, pid_t pid, uint64_t *ret)
{
	_cleanup_close_ int fd = -EBADF;
	char path[48];
	struct stat st;
	uint64_t id = 0;

	snprintf(path, sizeof(path), "%d/ns/mnt", (int)pid);
	fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || ioctl(fd, NSFS_GET_MNTNS_ID, &id) < 0)
		return -errno;
	*ret = id;
	return (int64_t)st.st_ino;
}

int mntns_id_exists(uint64_t id)
{
	struct mount_id_request_ns req = {
		.req = { .size = MOUNT_ID_REQUEST_SIZE_VER1, .mnt_id = LSMT_ROOT_ID },
		.mnt_ns_id = id,
	};
	uint64_t first;

	if (id == 0)
		return -EINVAL;
	/* ENOENT: no namespace has that id any more (ids are not reused). */
	if (syscall(__NR_listmount, &req, &first, 1, 0) >= 0)
		return 1;
	return errno == ENOENT ? 0 : -errno;
}
