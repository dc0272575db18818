/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probe/namespace.h"
#include "probe/tty-sessions.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/procfs.h"
#include "util/string-util.h"

/* A process whose controlling terminal is one of the root-owned slaves. */
struct member {
	pid_t pid, sid, tpgid;
	size_t slave; /* index into the slaves looked for */
};

struct slave {
	unsigned index;
	dev_t rdev;
};

/* Session, terminal and foreground group of process pid from its stat line (the fields after
 * the command, which may hold anything, up to its last ')'). 0, or -errno. */
static int read_stat(int proc_fd, const char *pid, pid_t *sid, dev_t *tty, pid_t *tpgid)
{
	char path[32], buf[1024];
	unsigned long long tty_nr;
	int ppid, pgrp, session, fg, r;
	char *p, state;

	snprintf(path, sizeof(path), "%s/stat", pid);
	r = procfs_read_short(proc_fd, path, buf, sizeof(buf));
	if (r < 0)
		return r;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %d %d %llu %d", &state, &ppid, &pgrp, &session, &tty_nr,
			 &fg) != 6)
		return -EINVAL;
	*sid = session;
	/* The kernel's encoding of a device number in tty_nr (new_encode_dev). */
	*tty = makedev((unsigned)((tty_nr >> 8) & 0xfff),
		       (unsigned)((tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00)));
	*tpgid = fg;
	return 0;
}

/* The real uid and gid of process pid (the first of its status file's Uid: and Gid: lines). */
static int read_ids(int proc_fd, pid_t pid, uid_t *uid, gid_t *gid)
{
	char path[32], buf[4096];
	unsigned u, g;
	char *p, *q;
	int r;

	snprintf(path, sizeof(path), "%d/status", (int)pid);
	r = procfs_read_short(proc_fd, path, buf, sizeof(buf));
	if (r < 0)
		return r;
	p = strstr(buf, "\nUid:");
	q = strstr(buf, "\nGid:");
	if (!p || !q || sscanf(p + 5, "%u", &u) != 1 || sscanf(q + 5, "%u", &g) != 1)
		return -EINVAL;
	*uid = u;
	*gid = g;
	return 0;
}

/* Has process pid the slave rdev of instance dev open on a standard descriptor? */
static bool holds_slave(int proc_fd, pid_t pid, dev_t dev, dev_t rdev)
{
	for (int fd = 0; fd < 3; fd++) {
		char path[48];
		struct stat st;

		snprintf(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
		if (stat_nosync(proc_fd, path, 0, &st) == 0 && S_ISCHR(st.st_mode) &&
		    st.st_dev == dev && st.st_rdev == rdev)
			return true;
	}
	return false;
}

static bool dev_is_other_instance(const struct analysis *a, dev_t dev, dev_t serving)
{
	if (dev == serving)
		return false;
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (in->dev == dev)
			return true;
	return false;
}

/* Does process pid_dir hold the master of pty index of the serving instance? exact: only a
 * master opened through the instance's own ptmx (its st_dev is the instance's); otherwise also
 * one opened through a ptmx node outside every devpts (/dev/ptmx of devtmpfs), whose instance
 * cannot be told from outside: the pty number is what there is. */
static bool holds_master(const struct analysis *a, int pid_dir, unsigned index, bool exact)
{
	_cleanup_close_ int fd_dir = openat(pid_dir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_(dir_reader_done) struct dir_reader d = { .fd = fd_dir };
	const char *name;
	unsigned got;

	if (fd_dir < 0)
		return false;
	while (dir_reader_next(&d, &name) > 0) {
		struct stat st;

		if (name[0] == '.' || stat_nosync(d.fd, name, 0, &st) < 0 || !S_ISCHR(st.st_mode) ||
		    st.st_rdev != makedev(PTMX_RDEV_MAJOR, PTMX_RDEV_MINOR))
			continue;
		if (exact ? st.st_dev != a->serving->dev
			  : dev_is_other_instance(a, st.st_dev, a->serving->dev))
			continue;
		if (procfs_master_index(pid_dir, name, &got) == 0 && got == index)
			return true;
	}
	return false;
}

/* A process among pids holding the master of pty index of the serving instance. One that
 * opened it through the instance's own ptmx is certain, wherever it runs (conmon holds the
 * master a runtime opened inside its container). One that opened it through a ptmx outside
 * every devpts is taken only from the session's own mount namespace (mntns, 0 for unknown):
 * elsewhere that node leads to another instance, whose pty of the same number is another
 * terminal (the host's, that a CI runner or an ssh login holds). */
static pid_t find_master(const struct analysis *a, int proc_fd, const pid_t *pids, size_t n,
			 unsigned index, uint64_t mntns, uint64_t deadline)
{
	for (int pass = 0; pass < 2; pass++)
		FOREACH_ARRAY (pid, pids, n) {
			_cleanup_close_ int pid_dir = -EBADF;
			char path[32];

			if (now_usec(CLOCK_MONOTONIC) >= deadline)
				return 0;
			snprintf(path, sizeof(path), "%d", (int)*pid);
			if (pass == 1 && (mntns == 0 || ns_process_in(proc_fd, path, mntns) <= 0))
				continue;
			pid_dir = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (pid_dir >= 0 && holds_master(a, pid_dir, index, pass == 0))
				return *pid;
		}
	return 0;
}

/* The processes of the namespace judged (all of them for our own). */
static int list_pids(int proc_fd, const struct namespace_target *ns, pid_t **ret, size_t *ret_n)
{
	size_t n = 0;
	int r = procfs_list_pids(proc_fd, ".", ret, ret_n);

	if (r < 0 || !ns || ns->own)
		return r;
	/* Another namespace's sessions are its own processes'. */
	FOREACH_ARRAY (pid, *ret, *ret_n) {
		char name[16];

		snprintf(name, sizeof(name), "%d", (int)*pid);
		if (ns_process_in(proc_fd, name, ns->mntns) > 0)
			(*ret)[n++] = *pid;
	}
	*ret_n = n;
	return 0;
}

static const struct member *find_member(const struct member *m, size_t n, pid_t pid, pid_t sid,
					size_t slave)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].pid == pid && m[i].sid == sid && m[i].slave == slave)
			return &m[i];
	return NULL;
}

/* One session (the members from first on with its sid and slave): recorded when it is on the
 * instance, with its uid, leader and (not root's) the master's holder. */
static int add_session(const struct namespace_target *ns, struct snapshot *s,
		       const struct analysis *a, int proc_fd, const struct member *m, size_t n,
		       size_t first, const struct slave *sl, const pid_t *pids, size_t n_pids,
		       uint64_t *deadline)
{
	const struct member *leader, *who;
	struct tty_session t = { .dev = a->serving->dev, .index = sl->index, .sid = m[first].sid };
	char comm[64] = "", holder_comm[64] = "";
	bool on_instance = false;
	struct stat ids = { 0 };
	char path[32];

	for (size_t i = first; i < n; i++)
		if (m[i].sid == t.sid && m[i].slave == m[first].slave &&
		    holds_slave(proc_fd, m[i].pid, a->serving->dev, sl->rdev)) {
			on_instance = true;
			break;
		}
	if (!on_instance)
		return 0;
	leader = find_member(m, n, t.sid, t.sid, m[first].slave);
	who = leader ?: find_member(m, n, m[first].tpgid, t.sid, m[first].slave);
	if (!who || read_ids(proc_fd, who->pid, &ids.st_uid, &ids.st_gid) < 0)
		return 0;
	ns_translate_ids(ns, &ids);
	t.uid = ids.st_uid;
	t.gid = ids.st_gid;
	if (leader) {
		t.leader = leader->pid;
		snprintf(path, sizeof(path), "%d/comm", (int)leader->pid);
		(void)procfs_read_comm(proc_fd, path, comm, sizeof(comm));
		t.leader_comm = comm;
	}
	if (t.uid != 0) {
		struct stat ns_st;

		snprintf(path, sizeof(path), "%d/ns/mnt", (int)who->pid);
		t.holder = find_master(a, proc_fd, pids, n_pids, sl->index,
				       fstatat(proc_fd, path, &ns_st, 0) == 0 ? ns_st.st_ino : 0,
				       *deadline);
		if (t.holder) {
			struct stat h = { 0 };

			snprintf(path, sizeof(path), "%d/comm", (int)t.holder);
			(void)procfs_read_comm(proc_fd, path, holder_comm, sizeof(holder_comm));
			t.holder_comm = holder_comm;
			if (read_ids(proc_fd, t.holder, &h.st_uid, &h.st_gid) == 0)
				ns_translate_ids(ns, &h);
			t.holder_uid = h.st_uid;
		}
	}
	return snapshot_add_tty_session(s, &t);
}

int probe_tty_sessions(const struct namespace_target *ns, struct snapshot *s,
		       const struct analysis *a)
{
	const struct mount_entry *e = analysis_serving_mount(a);
	_cleanup_free_ struct slave *slaves = NULL;
	_cleanup_free_ struct member *members = NULL;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n_slaves = 0, allocated = 0, n_members = 0, allocated_members = 0, n_pids = 0;
	uint64_t deadline;
	int proc_fd, r;

	if (!e || !a->serving)
		return 0;
	FOREACH_ARRAY (node, s->nodes, s->n_nodes) {
		unsigned idx;

		if (!node_is_slave(node, e->mountpoint, a->serving->dev, &idx) || node->uid != 0)
			continue;
		if (GROW(slaves, allocated, n_slaves + 1) < 0)
			return -ENOMEM;
		slaves[n_slaves++] = (struct slave){ .index = idx, .rdev = node->rdev };
	}
	if (n_slaves == 0)
		return 0; /* the common case: nothing read */

	proc_fd = procfs_fd();
	if (proc_fd < 0)
		return 0;
	r = list_pids(proc_fd, ns, &pids, &n_pids);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;
	FOREACH_ARRAY (pid, pids, n_pids) {
		char name[16];
		pid_t sid = 0, tpgid = 0;
		dev_t tty = 0;

		snprintf(name, sizeof(name), "%d", (int)*pid);
		if (read_stat(proc_fd, name, &sid, &tty, &tpgid) < 0 || sid <= 0)
			continue;
		for (size_t i = 0; i < n_slaves; i++) {
			if (slaves[i].rdev != tty)
				continue;
			if (GROW(members, allocated_members, n_members + 1) < 0)
				return -ENOMEM;
			members[n_members++] =
			    (struct member){ .pid = *pid, .sid = sid, .tpgid = tpgid, .slave = i };
		}
	}
	deadline = now_usec(CLOCK_MONOTONIC) + TTY_SESSIONS_HOLDER_USEC;
	/* Each session once: at its first member. */
	for (size_t i = 0; i < n_members; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = members[j].sid == members[i].sid &&
			       members[j].slave == members[i].slave;
		if (seen)
			continue;
		r = add_session(ns, s, a, proc_fd, members, n_members, i, &slaves[members[i].slave],
				pids, n_pids, &deadline);
		if (r < 0)
			return r;
	}
	return 0;
}
