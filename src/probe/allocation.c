/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"
#include "probe/allocation.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/procfs.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define PTS_DIR		"/dev/pts/"
#define PTY_SLAVE_MAJOR 136u

#ifndef DEVPTS_SUPER_MAGIC
#define DEVPTS_SUPER_MAGIC 0x1cd1
#endif

struct answer {
	unsigned n_steps; /* steps taken; the last failed when error or mismatch */
	int error;
	bool mismatch;
	int index; /* -1: unknown */
	char ptsname[64];
	bool not_ptmx;	/* /dev/ptmx is not c 5:2: nothing was opened */
	int peer_error; /* TIOCGPTPEER unsupported (ENOTTY, EINVAL): the slave judged by path */
	bool has_slave; /* the slave opened by name, as stat() shows it to the worker: */
	uint64_t slave_dev;
	uint32_t slave_uid, slave_gid, slave_mode;
	/* With where.tty, once the pty works: */
	unsigned tty_step; /* enum alloc_tty_step reached; the last failed when tty_error */
	int tty_error;
	bool not_tty; /* /dev/tty is not c 5:0: it was not opened */
};

/* Where and what a request allocates: the namespace's root (-1: ours), the /proc that reopens a
 * descriptor (-1: "/proc" by path), and whether /dev/tty is opened after. */
struct where {
	int root;
	int proc;
	bool tty;
};

/* In the worker, as the user: each step as a program takes it. Returns false (with errno) when
 * the step failed. */
static bool step(struct answer *a, enum alloc_step s, bool ok)
{
	a->n_steps = (unsigned)s + 1;
	if (!ok)
		a->error = errno ?: EIO;
	return ok;
}

/* open() of path as a program of the namespace whose root is root (-1: ours) would. */
static int open_in(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)flags,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};

	int fd;

	if (root < 0)
		return open(path, flags);
	fd = openat2_scoped(root, path, &how);
	if (fd < 0)
		errno = -fd;
	return fd < 0 ? -1 : fd;
}

/* ptsname_r() as glibc (2.33 and later) does it on Linux: TIOCGPTN (n, asked once for all the
 * steps), then "/dev/pts/N", nothing looked up. An errno, or 0. */
static int pts_name(unsigned n, char *buf, size_t size)
{
	char digits[16];
	size_t len = (size_t)(format_decimal(digits, n) - digits);

	if (sizeof(PTS_DIR) + len > size)
		return ERANGE;
	memcpy(buf, PTS_DIR, sizeof(PTS_DIR) - 1);
	memcpy(buf + sizeof(PTS_DIR) - 1, digits, len);
	buf[sizeof(PTS_DIR) - 1 + len] = 0;
	return 0;
}

/* What the namespace put at a path is looked at before anything of it is opened for I/O: an
 * O_PATH descriptor runs nothing of a device's driver, takes no lease and waits for no FIFO
 * writer. The multiplexer: a character device 5:2 (a devpts ptmx node is one too). */
static bool is_ptmx(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 5 && minor(st->st_rdev) == 2;
}

/* A pty slave: a character device of the Unix 98 pty majors. */
static bool is_pty_slave(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) >= 136 && major(st->st_rdev) <= 143;
}

/* A kernel without TIOCGPTPEER (before 4.13) answers ENOTTY (EINVAL from some drivers). */
static bool peer_unsupported(int e)
{
	return e == ENOTTY || e == EINVAL;
}

/* Copy the NUL-terminated src into dst of size bytes; false when it does not fit. The child may
 * call no stdio. */
static bool copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

/* The most symlinks open() follows on a path (the kernel's MAXSYMLINKS). */
#define PTMX_LINKS_MAX 40

/*
 * The directory holding the node /dev/ptmx leads to under root: the one of the last hop of its
 * symlink chain, each hop read with readlinkat() and the directories opened as open_in() opens
 * them. Its O_PATH descriptor, the node's name in it in name (of size bytes); -1 with errno.
 */
static int ptmx_dir(int root, char *name, size_t size)
{
	char cur[PATH_MAX], link[PATH_MAX];

	if (!copy_str(cur, sizeof(cur), "/dev/ptmx"))
		return -1;
	for (unsigned hops = 0; hops <= PTMX_LINKS_MAX; hops++) {
		char *slash = strrchr(cur, '/');
		size_t dlen;
		ssize_t n;
		int dir;

		if (!slash || !copy_str(name, size, slash + 1) || !*name ||
		    strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			errno = ENOENT;
			return -1;
		}
		dlen = slash == cur ? 1 : (size_t)(slash - cur);
		cur[dlen] = 0;
		dir = open_in(root, cur, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return -1;
		n = readlinkat(dir, name, link, sizeof(link) - 1);
		if (n < 0) {
			if (errno == EINVAL) /* not a symlink: the node itself */
				return dir;
			close(dir);
			return -1;
		}
		close(dir);
		link[n] = 0;
		if (link[0] == '/') {
			memcpy(cur, link, (size_t)n + 1);
			continue;
		}
		/* Relative: beside the link, as the kernel resolves it. */
		if (dlen + 1 + (size_t)n >= sizeof(cur)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (dlen > 1)
			cur[dlen++] = '/';
		memcpy(cur + dlen, link, (size_t)n + 1);
	}
	errno = ELOOP;
	return -1;
}

/*
 * The devpts instance the master opened through the O_PATH descriptor ptmx (whose stat is st) is
 * on, as the kernel finds it: the instance of the node itself when it is a devpts ptmx (a
 * pts/ptmx link or bind); else the devpts mounted at "pts" in the directory holding the node
 * (a file bind-mounted there: the directory of its mountpoint), which for a chain of symlinks is
 * the directory of its last hop, not /dev. 0 when unknown (then nothing is the master's).
 */
static dev_t master_instance(int root, int ptmx, const struct stat *st)
{
	char name[NAME_MAX + 1];
	struct stat node, pts;
	struct statfs fs;
	dev_t dev = 0;
	int dir, fd;

	if (fstatfs(ptmx, &fs) == 0 && fs.f_type == DEVPTS_SUPER_MAGIC)
		return st->st_dev;
	dir = ptmx_dir(root, name, sizeof(name));
	if (dir < 0)
		return 0;
	/* Still the node that was opened: a chain changed meanwhile says nothing. */
	if (fstatat(dir, name, &node, AT_SYMLINK_NOFOLLOW) < 0 || node.st_dev != st->st_dev ||
	    node.st_ino != st->st_ino) {
		close(dir);
		return 0;
	}
	fd = openat(dir, "pts", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return 0;
	if (fstatfs(fd, &fs) == 0 && fs.f_type == DEVPTS_SUPER_MAGIC && fstat(fd, &pts) == 0)
		dev = pts.st_dev;
	close(fd);
	return dev;
}

/* Is st the slave of pty index n? Slave n is 136:0 plus n, whichever way the numbers split. */
static bool slave_of_index(const struct stat *st, unsigned n)
{
	unsigned ma = major(st->st_rdev), mi = minor(st->st_rdev);

	return (ma == PTY_SLAVE_MAJOR && mi == n) ||
	       (ma >= PTY_SLAVE_MAJOR && (ma - PTY_SLAVE_MAJOR) * 256 + mi == n && mi < 256);
}

/* The file behind the O_PATH descriptor fd, opened with flags: through /proc/self/fd, so that
 * the node checked is the node opened (a path resolved again could have been swapped), with
 * every permission check (the device cgroup's too) of a plain open(). proc: the /proc to go
 * through (-1: "/proc" by path; a process that entered another root has its own). -1 with
 * errno. */
static int reopen(int proc, int fd, int flags)
{
	char path[32] = "/proc/self/fd/";

	*format_decimal(path + strlen(path), (unsigned)fd) = 0;
	if (proc >= 0)
		return openat(proc, path + strlen("/proc/"), flags);
	return open(path, flags);
}

/* /dev/tty: a character device 5:0. */
static bool is_tty_node(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 5 && minor(st->st_rdev) == 0;
}

/*
 * What ssh or sudo do to ask for a password, on the pty just allocated (slave: a descriptor of
 * its slave): a session of the child's own, the slave its controlling terminal, then /dev/tty
 * opened. /dev/tty is looked at with O_PATH first and opened only when it is c 5:0, through that
 * descriptor: the node a namespace put there is never opened otherwise.
 */
static void open_tty(const struct where *w, int slave, struct answer *a)
{
	const int flags = O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK;
	struct stat st;
	int path, fd;

	errno = 0;
	a->tty_step = ALLOC_TTY_SETSID + 1;
	if (setsid() < 0)
		goto fail;
	a->tty_step = ALLOC_TTY_CTTY + 1;
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		goto fail;
	a->tty_step = ALLOC_TTY_OPEN + 1;
	path = open_in(w->root, "/dev/tty", O_PATH | O_CLOEXEC);
	if (path < 0 || fstat(path, &st) < 0)
		goto fail;
	if (!is_tty_node(&st)) {
		a->not_tty = true;
		return;
	}
	fd = reopen(w->proc, path, flags);
	if (fd < 0)
		goto fail;
	return;
fail:
	a->tty_error = errno ?: EIO;
}

/* One allocation as a program makes it, where w says (and with w->tty, /dev/tty opened on it). */
static void allocate_pty(const struct where *w, struct answer *a)
{
	const int root = w->root;
	const int flags = O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK;
	struct stat ptmx_st = { 0 }, by_name, peer_st;
	int path, ptmx_path, master, slave = -1, peer, peer_errno = 0, p, unlock = 0, ptn_errno = 0;
	dev_t master_dev = 0;
	bool ours;

	errno = 0;
	a->index = -1;
	path = open_in(root, "/dev/ptmx", O_PATH | O_CLOEXEC);
	if (path >= 0 && fstat(path, &ptmx_st) == 0 && !is_ptmx(&ptmx_st)) {
		/* Not the multiplexer: whatever it is (a watchdog, a regular file with a lease),
		 * it is not opened, and nothing here is a probe result. */
		a->not_ptmx = true;
		return;
	}
	master = path >= 0 ? reopen(w->proc, path, flags) : -1;
	if (!step(a, ALLOC_STEP_OPEN_PTMX, master >= 0))
		return;
	ptmx_path = path;
	/* Not a step of its own (grantpt() and ptsname() ask the same): which /dev/pts/N this
	 * probe makes and removes, whatever fails next. */
	if (ioctl(master, TIOCGPTN, &p) < 0) {
		ptn_errno = errno ?: EIO;
		p = -1;
	}
	a->index = p;
	/* grantpt(): glibc only checks that it is a ptmx descriptor, by TIOCGPTN (ENOTTY is
	 * EINVAL there). */
	errno = ptn_errno == ENOTTY ? EINVAL : ptn_errno;
	if (!step(a, ALLOC_STEP_GRANTPT, ptn_errno == 0))
		return;
	/* unlockpt(): TIOCSPTLCK; glibc takes EINVAL (no such ioctl) as unlocked. */
	errno = 0;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0 && errno == EINVAL)
		errno = 0;
	if (!step(a, ALLOC_STEP_UNLOCKPT, errno == 0))
		return;
	/* ptsname_r(): its TIOCGPTN is the one above, which succeeded. */
	errno = pts_name((unsigned)p, a->ptsname, sizeof(a->ptsname));
	if (!step(a, ALLOC_STEP_PTSNAME, errno == 0)) {
		a->ptsname[0] = 0;
		return;
	}
#if PTSGUARD_TEST_HOOKS
	/* Tests mount on /dev/pts while the pty is held here, its name known, its slave not yet
	 * looked up. */
	if (getenv("PTSGUARD_TEST_PROBE_HOLD_MSEC"))
		usleep((useconds_t)strtoul(getenv("PTSGUARD_TEST_PROBE_HOLD_MSEC"), NULL, 10) *
		       1000);
#endif
	/* The slave itself, asked of the master (its step comes after the name's, as programs
	 * take them): what the name must lead to before it is opened. */
	peer = ioctl(master, TIOCGPTPEER, flags);
	if (peer < 0 || fstat(peer, &peer_st) < 0)
		peer_errno = errno ?: EIO;
	/* No TIOCGPTPEER (kernels before 4.13): the slave is what the name opens, once it is the
	 * slave of this index on the instance the master is on, as programs there take it. */
	if (peer < 0 && peer_unsupported(peer_errno)) {
		a->peer_error = peer_errno;
		master_dev = master_instance(root, ptmx_path, &ptmx_st);
	}
	errno = 0;
	path = open_in(root, a->ptsname, O_PATH | O_CLOEXEC);
	if (!step(a, ALLOC_STEP_OPEN_SLAVE, path >= 0 && fstat(path, &by_name) == 0))
		return;
	/* Opened for I/O only when it is a pty slave, and the one allocated where the kernel can
	 * say so: a name that leads elsewhere is a mismatch, found without opening it. */
	if (a->peer_error)
		ours = is_pty_slave(&by_name) && slave_of_index(&by_name, (unsigned)p) &&
		       master_dev && by_name.st_dev == master_dev;
	else
		ours = is_pty_slave(&by_name) &&
		       (peer_errno ||
			(by_name.st_dev == peer_st.st_dev && by_name.st_rdev == peer_st.st_rdev));
	errno = 0;
	if (ours) {
		slave = reopen(w->proc, path, flags);
		if (!step(a, ALLOC_STEP_OPEN_SLAVE, slave >= 0))
			return;
	} else if (faccessat(path, "", R_OK | W_OK, AT_EMPTY_PATH | AT_EACCESS) < 0) {
		/* What a program's open() of the name would meet first (the permission checks of
		 * the mode, ACLs and the device cgroup), asked without opening it. */
		step(a, ALLOC_STEP_OPEN_SLAVE, false);
		return;
	}
	a->has_slave = true;
	a->slave_dev = by_name.st_dev;
	a->slave_uid = by_name.st_uid;
	a->slave_gid = by_name.st_gid;
	a->slave_mode = by_name.st_mode & 07777;
	errno = peer_errno;
	if (!step(a, ALLOC_STEP_PEER, peer_errno == 0 || a->peer_error))
		return;
	/* The same pty: one devpts instance (st_dev) and one index (st_rdev); two instances
	 * number their slaves alike. */
	a->n_steps = ALLOC_STEP_COMPARE + 1;
	a->mismatch = !ours;
	if (w->tty && ours)
		open_tty(w, peer >= 0 ? peer : slave, a);
	/* Every descriptor opened here is closed before the answer is read (by the worker before
	 * it answers; a lone child exits): the pty is gone, its /dev/pts/N with it. */
}

/* The device of what /dev/pts is under root now (0: none): a mount on it or an unmount of it
 * changes it. */
static dev_t pts_dir_dev(int root)
{
	struct stat st;
	int fd = open_in(root, "/dev/pts", O_PATH | O_DIRECTORY | O_CLOEXEC);
	dev_t dev = fd >= 0 && fstat(fd, &st) == 0 ? st.st_dev : 0;

	if (fd >= 0)
		close(fd);
	return dev;
}

/*
 * The work of a request. A devpts mounted on /dev/pts or unmounted from it while the steps ran
 * leaves the master on one instance and the name of its slave looked up on another: a failure
 * or a mismatch that says nothing of either. Such an allocation is made once more (only once:
 * a table that changes all the time gets the second answer); one that failed with /dev/pts
 * the same before and after stands. What the first opened stays open until the answer is read,
 * as always.
 */
static void allocate_where(const struct where *w, struct answer *a)
{
	dev_t before = pts_dir_dev(w->root);

	allocate_pty(w, a);
	if (a->not_ptmx || (a->error == 0 && !a->mismatch) || pts_dir_dev(w->root) == before)
		return;
	*a = (struct answer){ 0 };
	allocate_pty(w, a);
}

/* The work of a worker's request: root is the namespace's root, or -1. */
static void allocate(int root, const void *request, void *answer)
{
	(void)request;
	allocate_where(&(struct where){ .root = root, .proc = -1 }, answer);
}

/* The answer (r: what running the work returned) as the probe's record. */
static int alloc_result(const struct alloc_options *o, int r, struct answer *a,
			const struct guarded_result *g, struct alloc_probe *ret)
{
	if (r == -ECANCELED) {
		*ret = (struct alloc_probe){ .status = ALLOC_INTERFERED,
					     .uid = o->uid,
					     .gid = o->gid };
		return 0;
	}
	if (r < 0)
		return r;
	*ret = (struct alloc_probe){ .uid = g->as_uid, .gid = g->as_gid, .index = -1 };
	if (g->setup_error) {
		ret->status = ALLOC_SETUP_FAILED;
		ret->error = g->setup_error;
		snprintf(ret->setup_step, sizeof(ret->setup_step), "%s",
			 g->setup_step ?: "privileges");
		return 0;
	}
	if (a->not_ptmx) {
		ret->status = ALLOC_NOT_PTMX;
		return 0;
	}
	ret->status = ALLOC_PERFORMED;
	ret->n_steps = a->n_steps > _ALLOC_STEP_MAX ? _ALLOC_STEP_MAX : a->n_steps;
	ret->error = a->error;
	ret->mismatch = a->mismatch;
	ret->peer_error = a->n_steps > ALLOC_STEP_PEER ? a->peer_error : 0;
	ret->index = a->n_steps > 0 ? a->index : -1;
	a->ptsname[sizeof(a->ptsname) - 1] = 0;
	memcpy(ret->ptsname, a->ptsname, sizeof(ret->ptsname));
	if (a->has_slave)
		ret->slave = (struct alloc_slave){ .known = true,
						   .dev = (dev_t)a->slave_dev,
						   .uid = a->slave_uid,
						   .gid = a->slave_gid,
						   .mode = (mode_t)a->slave_mode };
	if (a->tty_step > 0)
		ret->tty =
		    (struct alloc_tty){ .n_steps = a->tty_step > _ALLOC_TTY_MAX ? _ALLOC_TTY_MAX
										: a->tty_step,
					.error = a->tty_error,
					.not_tty = a->not_tty };
	return 0;
}

/* The deadline of an attempt starting now: o's, cut to what is left of its budget; 0 when the
 * budget is spent. */
static uint64_t attempt_deadline(const struct alloc_options *o)
{
	uint64_t d = o->deadline_usec ?: ALLOC_DEADLINE_USEC;

	if (!o->budget_left)
		return d;
	return d < *o->budget_left ? d : *o->budget_left;
}

/* The time since t0 (CLOCK_MONOTONIC) of an attempt that ended in r, taken from o's budget: all
 * of it when the attempt never answered (-ECANCELED), else what it took beyond
 * ALLOC_ANSWER_FREE_USEC. A busy host's slow but healthy probes do not spend the budget meant
 * for namespaces that stall them. */
static void charge(const struct alloc_options *o, uint64_t t0, int r)
{
	uint64_t spent = now_usec(CLOCK_MONOTONIC) - t0;

	if (r != -ECANCELED)
		spent = spent > ALLOC_ANSWER_FREE_USEC ? spent - ALLOC_ANSWER_FREE_USEC : 0;
	if (o->budget_left)
		*o->budget_left -= spent < *o->budget_left ? spent : *o->budget_left;
}

bool probe_allocation_skipped(const struct alloc_options *o, struct alloc_probe *ret)
{
	if (attempt_deadline(o))
		return false;
	*ret = (struct alloc_probe){ .status = ALLOC_SKIPPED, .index = -1 };
	return true;
}

static struct guarded_request alloc_request(const struct alloc_options *o)
{
	return (struct guarded_request){
		.uid = o->uid,
		.gid = o->gid,
		.work = allocate,
		.fd = o->root_fd,
		.answer_size = sizeof(struct answer),
		.deadline_usec = attempt_deadline(o) ?: 1,
	};
}

int probe_allocation_prepare(struct guarded_worker *w, uid_t uid, gid_t gid)
{
	struct guarded_request q = alloc_request(&(struct alloc_options){
	    .uid = uid, .gid = gid, .root_fd = -1, .cgroup_fds = { -1, -1 } });

	return guarded_worker_start(w, &q);
}

int probe_allocation_submit(struct guarded_worker *w, const struct alloc_options *o)
{
	struct guarded_request q = alloc_request(o);

	return guarded_worker_submit(w, &q);
}

int probe_allocation_collect(struct guarded_worker *w, const struct alloc_options *o, int submitted,
			     struct alloc_probe *ret)
{
	struct guarded_result g = { 0 };
	struct answer a = { 0 };
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	int r = submitted;

	/* A worker stopped or killed by someone says nothing about ptys: try again, a few times
	 * (each on a new worker), then say so rather than report an outcome. What the budget
	 * pays for is the waiting: the worker's work while we read is free. */
	if (r >= 0)
		r = guarded_worker_collect(w, &a, &g);
	charge(o, t0, r);
	for (unsigned i = 1; r == -ECANCELED && i < ALLOC_ATTEMPTS && attempt_deadline(o); i++) {
		t0 = now_usec(CLOCK_MONOTONIC);
		r = probe_allocation_submit(w, o);
		if (r >= 0)
			r = guarded_worker_collect(w, &a, &g);
		charge(o, t0, r);
	}
	return alloc_result(o, r, &a, &g, ret);
}

/* allocate() in a lone guarded child: userdata is where (its descriptor kept open for it). The
 * child exits after it, which closes what it opened. */
static void allocate_once(void *userdata, void *answer)
{
	allocate_where(userdata, answer);
}

int probe_allocation(const struct alloc_options *o, struct alloc_probe *ret)
{
	struct where w = { .root = o->root_fd, .proc = -1, .tty = o->tty };
	struct guarded_child c = {
		.uid = o->uid,
		.gid = o->gid,
		.mntns_fd = -1,
		.root_fd = -1,
		.keep_fd = o->root_fd,
		.join_fds = o->cgroup_fds,
		.n_join_fds = o->join_cgroups ? ALLOC_CGROUP_FDS : 0,
		.work = allocate_once,
		.userdata = &w,
		.answer_size = sizeof(struct answer),
	};
	struct guarded_result g = { 0 };
	struct answer a = { 0 };
	int r = -ECANCELED;

	if (probe_allocation_skipped(o, ret))
		return 0;
	/* One descriptor is kept for the child: a root given is resolved in our own /proc. */
	if (o->own_proc && o->root_fd < 0) {
		w.proc = procfs_fd();
		if (w.proc < 0)
			return w.proc;
		c.keep_fd = w.proc;
	}
	for (unsigned i = 0; r == -ECANCELED && i < ALLOC_ATTEMPTS; i++) {
		uint64_t t0 = now_usec(CLOCK_MONOTONIC);

		c.deadline_usec = attempt_deadline(o);
		if (!c.deadline_usec)
			break;
		r = guarded_child_run(&c, &a, &g);
		charge(o, t0, r);
	}
	return alloc_result(o, r, &a, &g, ret);
}
