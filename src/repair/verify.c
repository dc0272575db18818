/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probe/allocation.h"
#include "repair/action.h"
#include "repair/verify.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/procfs.h"
#include "util/string-util.h"

/* The allocation probe as o's verification user, in the process's own root (a namespace's,
 * entered, for repair --namespace) and the namespace's cgroups; with tty, /dev/tty opened on
 * its pty. As probe_allocation(); not run when the namespace's cgroups could not be found
 * (verify_cgroup_error, returned negated). */
static int verify_probe(const struct repair_options *o, bool tty, struct alloc_probe *ret)
{
	struct alloc_options ao = {
		.uid = o->verify_uid,
		.gid = o->verify_gid,
		.root_fd = -1,
		.deadline_usec = VERIFY_DEADLINE_USEC,
		.join_cgroups = o->verify_join_cgroups,
		.cgroup_fds = { -1, -1 },
		.own_proc = true,
		.tty = tty,
	};

	/* Not in ours: the device rules there are not the namespace's. */
	if (o->verify_cgroup_error)
		return -o->verify_cgroup_error;
	if (ao.join_cgroups)
		memcpy(ao.cgroup_fds, o->verify_cgroup_fds, sizeof(ao.cgroup_fds));
	return probe_allocation(&ao, ret);
}

int action_verify_unanswered(struct repair_action *a, int r)
{
	if (r == -ECANCELED)
		return action_outcome(
		    a, ACTION_INCONCLUSIVE,
		    "not verified: the verification child was stopped or killed by "
		    "another process %u times",
		    VERIFY_ATTEMPTS);
	return action_outcome(a, ACTION_INCONCLUSIVE,
			      "not verified: cannot run the verification child: %s", strerror(-r));
}

/* The probe's answer when it got no working pty, recorded as a's outcome: 1 when it did (the
 * caller goes on), else 0. */
static int verify_no_pty(struct repair_action *a, const struct repair_options *o, int r,
			 const struct alloc_probe *p)
{
	enum alloc_step s;

	if (o->verify_cgroup_error)
		return action_outcome(a, ACTION_INCONCLUSIVE,
				      "not verified: cannot find the namespace's cgroups: %s",
				      strerror(o->verify_cgroup_error));
	if (r < 0)
		return action_verify_unanswered(a, r);
	switch (p->status) {
	case ALLOC_PERFORMED:
		if (alloc_probe_succeeded(p))
			return 1;
		if (!alloc_probe_failed(p, &s))
			return action_outcome(a, ACTION_INCONCLUSIVE,
					      "not verified: the allocation stopped short");
		if (s == ALLOC_STEP_COMPARE)
			return action_outcome(
			    a, ACTION_FAILED,
			    "verification: uid %u allocated a pty, but its name %s "
			    "leads to another pty (not opened)",
			    (unsigned)p->uid, p->ptsname);
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: uid %u cannot allocate a pty: %s failed with %s",
		    (unsigned)p->uid, alloc_step_to_string(s), strerrorname_np(p->error) ?: "?");
	case ALLOC_INTERFERED:
		return action_verify_unanswered(a, -ECANCELED);
	case ALLOC_SETUP_FAILED:
		if (streq(p->setup_step, "start"))
			return action_verify_unanswered(a, -p->error);
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: uid %u cannot allocate a pty: %s failed with %s",
		    (unsigned)p->uid, p->setup_step, strerrorname_np(p->error) ?: "?");
	case ALLOC_NOT_PTMX:
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: %s is not the pty multiplexer (c 5:2): not opened", PTMX_PATH);
	default:
		return action_outcome(a, ACTION_INCONCLUSIVE, "not verified: the probe was %s",
				      alloc_status_to_string(p->status));
	}
}

int action_verify_pty(struct repair_action *a, const struct repair_options *o, bool check_owner,
		      mode_t want_mode)
{
	struct alloc_probe p = { 0 };
	int r = verify_probe(o, false, &p);

	if (verify_no_pty(a, o, r, &p) <= 0)
		return 0;
	if (check_owner && (!p.slave.known || p.slave.gid != o->tty_gid ||
			    (p.slave.mode & 0777) != (want_mode & 0777)))
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: a pty opened by uid %u got group %u and mode %04o, "
		    "expected group %u and mode %04o",
		    (unsigned)p.uid, (unsigned)p.slave.gid, (unsigned)p.slave.mode,
		    (unsigned)o->tty_gid, (unsigned)want_mode);
	return action_outcome(a, ACTION_DONE,
			      "verified: a pty opened by uid %u got group %u and mode %04o",
			      (unsigned)p.uid, (unsigned)p.slave.gid, (unsigned)p.slave.mode);
}

static const char *const tty_steps[_ALLOC_TTY_MAX] = {
	[ALLOC_TTY_SETSID] = "setsid",
	[ALLOC_TTY_CTTY] = "ctty",
	[ALLOC_TTY_OPEN] = "open_tty",
};

int action_verify_tty(struct repair_action *a, const struct repair_options *o)
{
	struct alloc_probe p = { 0 };
	int r = verify_probe(o, true, &p);
	unsigned n;

	if (verify_no_pty(a, o, r, &p) <= 0)
		return 0;
	n = p.tty.n_steps;
	if (p.tty.not_tty)
		return action_outcome(a, ACTION_FAILED,
				      "verification: %s is not c %d:%d: not opened", a->path,
				      DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR);
	if (n == 0)
		return action_outcome(a, ACTION_INCONCLUSIVE,
				      "not verified: the verification child did not try %s",
				      a->path);
	if (p.tty.error)
		return action_outcome(a, ACTION_FAILED,
				      "verification: uid %u cannot open %s: %s failed with %s",
				      (unsigned)p.uid, a->path, tty_steps[n - 1],
				      strerrorname_np(p.tty.error) ?: "?");
	return action_outcome(a, ACTION_DONE,
			      "verified: uid %u opened its controlling terminal through %s",
			      (unsigned)p.uid, a->path);
}

struct open_request {
	const char *path;
	dev_t dev;
	ino_t ino;
	int proc; /* our /proc (util/procfs.h), opened before a namespace was entered */
};

struct open_wire {
	int error;
	bool not_slave;
};

/* In the guarded child: the name looked at with O_PATH (no symlink followed on the way), then
 * opened through that descriptor only when it is still the slave repaired. */
static void open_by_name(void *userdata, void *answer)
{
	const struct open_request *q = userdata;
	struct open_wire *w = answer;
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char p[32] = "self/fd/";
	struct stat st;
	int path, fd;

	path = openat2_scoped(AT_FDCWD, q->path, &how);
	/* Before 5.6, or a seccomp filter: only the last component is guarded. */
	if (path == -ENOSYS || path == -EPERM || path == -E2BIG)
		if ((path = open(q->path, (int)how.flags)) < 0)
			path = -errno;
	if (path < 0) {
		w->error = -path;
		return;
	}
	if (fstat(path, &st) < 0) {
		w->error = errno;
		return;
	}
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) < PTY_SLAVE_MAJOR_FIRST ||
	    major(st.st_rdev) > PTY_SLAVE_MAJOR_LAST || st.st_dev != q->dev ||
	    st.st_ino != q->ino) {
		w->not_slave = true;
		return;
	}
	*format_decimal(p + strlen(p), (unsigned)path) = 0;
	fd = openat(q->proc, p, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		w->error = errno;
	else
		close(fd);
}

int slave_open_as(const char *path, dev_t dev, ino_t ino, uid_t uid, gid_t gid,
		  struct slave_open *ret)
{
	struct open_request q = { .path = path, .dev = dev, .ino = ino, .proc = procfs_fd() };
	struct guarded_child c = {
		.uid = uid,
		.gid = gid,
		.mntns_fd = -1,
		.root_fd = -1,
		.keep_fd = q.proc,
		.deadline_usec = VERIFY_DEADLINE_USEC,
		.work = open_by_name,
		.userdata = &q,
		.answer_size = sizeof(struct open_wire),
	};
	struct guarded_result g;
	struct open_wire w = { 0 };
	int r;

	if (q.proc < 0)
		return q.proc;
	r = guarded_child_run(&c, &w, &g);
	if (r < 0)
		return r;
	*ret = (struct slave_open){
		.error = g.setup_error ?: w.error,
		.not_slave = !g.setup_error && w.not_slave,
		.as_uid = g.as_uid,
		.as_gid = g.as_gid,
	};
	return 0;
}
