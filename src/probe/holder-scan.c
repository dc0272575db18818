/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probe/holder-scan.h"
#include "probe/slaves.h"
#include "probe/namespace.h"
#include "util/alloc.h"
#include "util/caps.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/procfs.h"
#include "util/string-util.h"

/* How many fds are looked at between two looks at the clock (about 0.3 ms of work). */
#define FDS_PER_CLOCK_CHECK 64

#ifndef DEVPTS_SUPER_MAGIC
#define DEVPTS_SUPER_MAGIC 0x1cd1
#endif

void holder_scan_done(struct holder_scan *hs)
{
	free(hs->devs);
	free(hs->mounted);
	free(hs->pids);
	snapshot_free(hs->found);
	*hs = (struct holder_scan){ 0 };
}

static int covered_devs(const struct analysis *a, dev_t **ret, size_t *n)
{
	*n = 0;
	*ret = calloc(a->n_instances ?: 1, sizeof(dev_t));
	if (!*ret)
		return -ENOMEM;
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (in->covered)
			(*ret)[(*n)++] = in->dev;
	return 0;
}

/* The slaves listed at the root of the instance's first reachable mount of its root
 * directory; -ENOENT when none is reachable (a covered instance, or one reached only through
 * binds of single files). */
static int count_slaves(const struct namespace_target *ns, const struct analysis *a,
			const struct instance *in, const struct slave_listing *listed, long *ret)
{
	_cleanup_(dir_reader_done) struct dir_reader d = { 0 };
	_cleanup_close_ int fd = -EBADF; /* the reader does not own its fd */
	const struct mount_entry *e = NULL;
	const char *name;
	long n = 0;
	int r;

	for (size_t i = 0; i < in->n_mounts && !e; i++) {
		const struct mount_entry *m = analysis_mount(a, in->mounts[i]);

		if (a->reachable[in->mounts[i]] && streq(m->root, "/"))
			e = m;
	}
	if (!e)
		return -ENOENT;
	if (listed && listed->mount == e) {
		*ret = listed->n;
		return 0;
	}
	fd = ns_open(ns, e->mountpoint, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	d.fd = fd;
	while ((r = dir_reader_next(&d, &name)) > 0)
		n += name[0] >= '0' && name[0] <= '9';
	if (r < 0)
		return r;
	*ret = n;
	return 0;
}

int probe_ptys_unseen(const struct namespace_target *ns, struct snapshot *s,
		      const struct analysis *a, long nr, const struct slave_listing *listed_whole)
{
	long listed = 0;

	s->ptys_unseen = 0;
	if (nr < 0)
		return 0; /* no count: nothing to compare with, as before */
	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		long n;

		/* Once the instances listed account for the kernel's count, the rest cannot make
		 * any pty unseen: stop listing (with no pty at all, list nothing). */
		if (listed >= nr)
			break;
		/* An instance whose slaves cannot be listed leaves its ptys unseen. */
		if (count_slaves(ns, a, in, listed_whole, &n) >= 0)
			listed += n;
	}
	s->ptys_unseen = nr > listed ? nr - listed : 0;
	return 0;
}

bool holder_scan_wanted(const struct analysis *a)
{
	if (a->snap->ptys_unseen > 0)
		return true;
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (in->covered)
			return true;
	return false;
}

/* Every device the mount table has, whatever its filesystem. */
static int mounted_devs(const struct analysis *a, dev_t **ret, size_t *n)
{
	const struct mount_table *t = a->snap->mounts;

	*n = 0;
	*ret = calloc(t->n_entries ?: 1, sizeof(dev_t));
	if (!*ret)
		return -ENOMEM;
	FOREACH_ARRAY (e, t->entries, t->n_entries)
		(*ret)[(*n)++] = e->dev;
	return 0;
}

bool holder_scan_same_devs(const struct holder_scan *hs, const struct analysis *a)
{
	size_t n = 0;

	/* A scan that looked for strays serves one that does not: add_holders() leaves its
	 * strays out then. */
	if (!hs->strays_wanted && a->snap->ptys_unseen > 0)
		return false;

	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		if (!in->covered)
			continue;
		if (n >= hs->n_devs || hs->devs[n] != in->dev)
			return false;
		n++;
	}
	return n == hs->n_devs;
}

int holder_scan_start(struct holder_scan *hs, const struct analysis *a, const char *proc,
		      const pid_t *pids, size_t n, uint64_t mntns)
{
	int r;

	holder_scan_done(hs);
	r = covered_devs(a, &hs->devs, &hs->n_devs);
	hs->strays = hs->strays_wanted = a->snap->ptys_unseen > 0;
	/* Strays are looked for among the judged namespace's processes only: without mntns, ours
	 * (when that cannot be told, not at all). */
	if (hs->strays && !mntns) {
		struct stat st;
		int pfd = procfs_fd();

		if (pfd >= 0 && fstatat(pfd, "self/ns/mnt", &st, 0) == 0)
			hs->stray_mntns = st.st_ino;
		else
			hs->strays = false;
	}
	if (r >= 0 && hs->strays)
		r = mounted_devs(a, &hs->mounted, &hs->n_mounted);
	/* Nothing covered: only the namespace's processes have anything to show, and the others'
	 * fds are never read (one stat of each one's ns/mnt instead). */
	if (hs->strays && !mntns && hs->n_devs == 0)
		mntns = hs->stray_mntns;
	if (r < 0 || (hs->n_devs == 0 && !hs->strays)) {
		holder_scan_done(hs);
		return r;
	}
	hs->found = snapshot_new();
	if (!hs->found) {
		holder_scan_done(hs);
		return -ENOMEM;
	}
	if (pids) {
		hs->pids = malloc((n ?: 1) * sizeof(pid_t));
		if (!hs->pids) {
			holder_scan_done(hs);
			return -ENOMEM;
		}
		memcpy(hs->pids, pids, n * sizeof(pid_t));
		hs->n_pids = n;
	} else {
		r = procfs_list_pids(AT_FDCWD, proc, &hs->pids, &hs->n_pids);
		if (r < 0) {
			holder_scan_done(hs);
			return r;
		}
	}
	hs->mntns = mntns;
	hs->started = true;
	return 1;
}

static bool dev_in(dev_t dev, const dev_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == dev)
			return true;
	return false;
}

static struct holder *holder_find(const struct snapshot *s, pid_t pid, dev_t dev, unsigned index)
{
	FOREACH_ARRAY (h, s->holders, s->n_holders)
		if (h->pid == pid && h->dev == dev && h->index == index)
			return h;
	return NULL;
}

static bool holder_seen(const struct snapshot *s, pid_t pid, dev_t dev, unsigned index)
{
	return holder_find(s, pid, dev, index);
}

static bool pty_rdev(dev_t rdev)
{
	return (major(rdev) >= PTY_SLAVE_MAJOR_FIRST && major(rdev) <= PTY_SLAVE_MAJOR_LAST) ||
	       (major(rdev) == PTMX_RDEV_MAJOR && minor(rdev) == PTMX_RDEV_MINOR);
}

enum candidate { NOT_LOOKED_FOR, OF_COVERED, STRAY };

/* Whether the open file fd_dir/name (st) is a pty end looked for: one of a covered instance,
 * or, looking for strays, a pty end on a filesystem not mounted here that is devpts (a master
 * opened through a /dev/ptmx node is on that node's filesystem: never one). */
static enum candidate candidate(const struct holder_scan *hs, int fd_dir, const char *name,
				const struct stat *st)
{
	_cleanup_close_ int f = -EBADF;
	struct statfs sf;

	if (!S_ISCHR(st->st_mode))
		return NOT_LOOKED_FOR;
	if (dev_in(st->st_dev, hs->devs, hs->n_devs))
		return OF_COVERED;
	if (!hs->strays || !pty_rdev(st->st_rdev) || dev_in(st->st_dev, hs->mounted, hs->n_mounted))
		return NOT_LOOKED_FOR;
	/* O_PATH opens nothing of the device: fstatfs() of the file it names. */
	f = openat(fd_dir, name, O_PATH | O_CLOEXEC);
	return f >= 0 && fstatfs(f, &sf) == 0 && sf.f_type == DEVPTS_SUPER_MAGIC ? STRAY
										 : NOT_LOOKED_FOR;
}

/* Only a refusal means a process we could not inspect; anything else (ENOENT, ESRCH, a zombie
 * half gone) is a process that exited while we looked. */
static int not_allowed(int err)
{
	return err == EACCES || err == EPERM ? -err : 0;
}

/* The pty number of the pty end st (a candidate()), or -1. */
static int pty_index(int pid_dir, const char *name, const struct stat *st)
{
	unsigned index;

	if (major(st->st_rdev) >= PTY_SLAVE_MAJOR_FIRST &&
	    major(st->st_rdev) <= PTY_SLAVE_MAJOR_LAST)
		return (int)((major(st->st_rdev) - PTY_SLAVE_MAJOR_FIRST) * 256 +
			     minor(st->st_rdev));
	if (major(st->st_rdev) == PTMX_RDEV_MAJOR && minor(st->st_rdev) == PTMX_RDEV_MINOR &&
	    procfs_master_index(pid_dir, name, &index) >= 0)
		return (int)index;
	return -1;
}

/* Does process pid_name run our own executable (the inode of /proc/self/exe)? */
static int runs_ptsguard(int proc_fd, const char *pid_name)
{
	static struct stat self;
	static int self_known = -1;
	char path[32];
	struct stat st;

	if (self_known < 0)
		self_known = stat_nosync(proc_fd, "self/exe", 0, &self) == 0;
	snprintf(path, sizeof(path), "%s/exe", pid_name);
	return self_known && stat_nosync(proc_fd, path, 0, &st) == 0 && st.st_dev == self.st_dev &&
	       st.st_ino == self.st_ino;
}

/* Look at the fds of process pid_name from hs->next_fd on: 1 done with it, 0 stopped at the
 * deadline (hs->next_fd says where to go on), -EACCES or -EPERM not inspectable, -ENOMEM. When
 * the deadline passes, at least one fd has been looked at in this call (*progress). */
static int scan_process(struct holder_scan *hs, int proc_fd, const char *pid_name,
			uint64_t deadline, bool *progress)
{
	_cleanup_close_ int pid_dir = -EBADF, fd_dir = -EBADF;
	_cleanup_(dir_reader_done) struct dir_reader d = { 0 };
	char path[32], comm[64] = "";
	const char *name;
	unsigned pid, since_clock = 0;
	struct snapshot *s = hs->found;
	int in_ns = -1; /* a process of the judged namespace: unknown yet */
	int ours = -1;	/* a process of ptsguard's own binary: unknown yet */

	if (parse_uint(pid_name, &pid) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/fd", pid_name);
	fd_dir = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd_dir < 0)
		return not_allowed(errno) ?: 1; /* exited meanwhile: not an error */
	d.fd = fd_dir;
	while (dir_reader_next(&d, &name) > 0) {
		struct stat st;
		unsigned fd;
		int index;
		struct holder *h;

		if (name[0] == '.' || parse_uint(name, &fd) < 0 || fd < hs->next_fd)
			continue;
		if (*progress && ++since_clock >= FDS_PER_CLOCK_CHECK) {
			since_clock = 0;
			if (now_usec(CLOCK_MONOTONIC) >= deadline) {
				hs->next_fd = fd;
				return 0;
			}
		}
		*progress = true;
		hs->fds_scanned++;
		/* stat() follows the magic link to the open file itself, whatever its path; one
		 * on a hung NFS server or FUSE daemon answers from what the kernel cached. */
		enum candidate c;

		if (stat_nosync(fd_dir, name, 0, &st) < 0 ||
		    (c = candidate(hs, fd_dir, name, &st)) == NOT_LOOKED_FOR)
			continue;
		/* Every process's ptys of a covered instance are its; a stray only in the judged
		 * namespace's processes (a container's own, seen from the host, are not lost). */
		if (c == STRAY && !hs->mntns) {
			if (in_ns < 0)
				in_ns = ns_process_in(proc_fd, pid_name, hs->stray_mntns) == 1;
			if (!in_ns)
				continue;
		}
		/* ptsguard's own processes (another run's probe worker or guarded child, which
		 * enter namespaces and allocate there) hold no session: not strays. */
		if (c == STRAY) {
			if (ours < 0)
				ours = runs_ptsguard(proc_fd, pid_name);
			if (ours)
				continue;
		}
		/* /proc/PID of the process whose fd/ this is (not of a later one with its number),
		 * only for a process that holds a pty: its fdinfo and comm. */
		if (pid_dir < 0) {
			pid_dir = openat(fd_dir, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (pid_dir < 0)
				break;
		}
		index = pty_index(pid_dir, name, &st);
		if (index < 0)
			continue;
		if (!comm[0])
			(void)procfs_read_comm(pid_dir, "comm", comm, sizeof(comm));
		/* A process holding several fds of one pty counts once; holding both ends, as
		 * both, with the slave's fd. */
		h = holder_find(s, (pid_t)pid, st.st_dev, (unsigned)index);
		if (h) {
			bool master = major(st.st_rdev) == PTMX_RDEV_MAJOR;

			if (h->end == HOLDER_END_MASTER && !master) {
				h->end = HOLDER_END_BOTH;
				h->fd = (int)fd;
			} else if (h->end == HOLDER_END_SLAVE && master)
				h->end = HOLDER_END_BOTH;
			continue;
		}
		if (GROW(s->holders, s->allocated_holders, s->n_holders + 1) < 0)
			return -ENOMEM;
		h = &s->holders[s->n_holders];
		*h = (struct holder){ .pid = (pid_t)pid,
				      .dev = st.st_dev,
				      .index = (unsigned)index,
				      .fd = (int)fd,
				      .end = major(st.st_rdev) == PTMX_RDEV_MAJOR
						 ? HOLDER_END_MASTER
						 : HOLDER_END_SLAVE };
		h->comm = strdup(comm);
		if (!h->comm)
			return -ENOMEM;
		s->n_holders++;
	}
	return 1;
}

/* One more process that could not be inspected, for error r; the first one's is kept. */
static void skipped(struct snapshot *found, int r)
{
	found->holders_skipped++;
	if (!found->holders_skipped_errno)
		found->holders_skipped_errno = -r;
}

/* The rights this scan reads /proc/PID/fd with (an fd/ of another user's process takes
 * CAP_SYS_PTRACE). */
static enum holders_scanner scanner_rights(void)
{
	if (caps_effective() & (UINT64_C(1) << CAP_SYS_PTRACE))
		return HOLDERS_SCANNER_PRIVILEGED;
	return geteuid() == 0 ? HOLDERS_SCANNER_NO_PTRACE : HOLDERS_SCANNER_USER;
}

int holder_scan_run(struct holder_scan *hs, const char *proc, uint64_t deadline)
{
	_cleanup_close_ int own_fd = -EBADF;
	bool progress = false;
	int proc_fd, r;

	if (!hs->started || hs->complete)
		return 1;
	/* Our /proc, opened once for every namespace of a run (util/procfs.h). */
	if (streq(proc, "/proc"))
		proc_fd = procfs_fd();
	else {
		own_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		proc_fd = own_fd < 0 ? -errno : own_fd;
	}
	if (proc_fd < 0)
		return proc_fd;

	for (; hs->next < hs->n_pids; hs->next++, hs->next_fd = 0) {
		char name[16];

		if (progress && now_usec(CLOCK_MONOTONIC) >= deadline)
			return 0;
		snprintf(name, sizeof(name), "%d", (int)hs->pids[hs->next]);
		/* A namespace's holders are its own processes (listed a moment ago: still there,
		 * and still of the namespace?); one that cannot be told is one more that could
		 * not be inspected. */
		if (hs->mntns && hs->next_fd == 0) {
			r = ns_process_in(proc_fd, name, hs->mntns);
			if (r == 0 || r == -ENOENT || r == -ESRCH)
				continue;
			if (r < 0) {
				progress = true;
				skipped(hs->found, r);
				continue;
			}
		}
		r = scan_process(hs, proc_fd, name, deadline, &progress);
		if (r == 0)
			return 0;
		if (r == -ENOMEM)
			return r;
		progress = true;
		if (r < 0)
			skipped(hs->found, r);
		else
			hs->processes_scanned++;
	}
	hs->complete = true;
	/* The list is of no more use; what was found stays. */
	free(hs->pids);
	hs->pids = NULL;
	hs->n_pids = hs->next = 0;
	return 1;
}

static bool covered_now(const struct analysis *a, dev_t dev)
{
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (in->covered && in->dev == dev)
			return true;
	return false;
}

int holder_scan_add_holders(const struct holder_scan *hs, struct snapshot *s,
			    const struct analysis *a)
{
	if (!hs->found)
		return 0;
	FOREACH_ARRAY (h, hs->found->holders, hs->found->n_holders) {
		/* A holder of an instance covered then and not now, or a stray (no pty unseen
		 * now: it is gone), is no longer news. */
		if (dev_in(h->dev, hs->devs, hs->n_devs) ? !covered_now(a, h->dev)
							 : s->ptys_unseen <= 0)
			continue;
		if (!holder_seen(s, h->pid, h->dev, h->index) && snapshot_add_holder(s, h) < 0)
			return -ENOMEM;
	}
	return 0;
}

int holder_scan_into(const struct holder_scan *hs, struct snapshot *s, const struct analysis *a)
{
	if (!hs->started)
		return 0;
	if (holder_scan_add_holders(hs, s, a) < 0)
		return -ENOMEM;
	s->holders_scanned = true;
	s->holders_skipped += hs->found->holders_skipped;
	if (!s->holders_skipped_errno)
		s->holders_skipped_errno = hs->found->holders_skipped_errno;
	s->holders_scanner = scanner_rights();
	s->holders_progress = (struct holders_progress){
		.partial = !hs->complete,
		.processes_scanned = hs->processes_scanned,
		.processes_left = hs->complete ? 0 : (unsigned)(hs->n_pids - hs->next),
		.fds_scanned = hs->fds_scanned,
	};
	return 0;
}

int holder_scan_once(struct snapshot *s, const struct analysis *a, const char *proc,
		     const pid_t *pids, size_t n, uint64_t mntns, uint64_t deadline)
{
	_cleanup_(holder_scan_done) struct holder_scan hs = { 0 };
	int r = holder_scan_start(&hs, a, proc, pids, n, mntns);

	if (r <= 0)
		return r;
	r = holder_scan_run(&hs, proc, deadline);
	if (r < 0)
		return r;
	return holder_scan_into(&hs, s, a);
}

int probe_holders(struct snapshot *s, const struct analysis *a, const char *proc)
{
	return probe_holders_in(s, a, proc, 0);
}

int probe_holders_pids(struct snapshot *s, const struct analysis *a, const char *proc,
		       const pid_t *pids, size_t n_pids, uint64_t mntns)
{
	static const pid_t none[1];

	/* NULL would mean every process proc lists. */
	return holder_scan_once(s, a, proc, pids ?: none, pids ? n_pids : 0, mntns,
				now_usec(CLOCK_MONOTONIC) + HOLDER_SCAN_ONESHOT_USEC);
}

/* Only when a covered instance exists (the common case stays cheap). */
int probe_holders_in(struct snapshot *s, const struct analysis *a, const char *proc, uint64_t mntns)
{
	return holder_scan_once(s, a, proc, NULL, 0, mntns,
				now_usec(CLOCK_MONOTONIC) + HOLDER_SCAN_ONESHOT_USEC);
}
