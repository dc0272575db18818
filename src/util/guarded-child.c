/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/guarded-child.h"
#include "util/macro.h"
#include "util/procfs.h"

DEFINE_POINTER_CLEANUP(DIR, closedir)

#define N_GUARDS (GUARD_UID_MAX - GUARD_UID_MIN + 1)

enum {
	SETUP_NONE,
	SETUP_NAMESPACE,
	SETUP_ROOT,
	SETUP_PRIVILEGES,
};

static const char *const setup_steps[] = { NULL, "namespace", "root", "privileges" };

struct wire {
	int setup_error;
	int setup_step;
	unsigned char answer[GUARD_ANSWER_MAX];
};

/* Enter the namespace and root asked for, keep no descriptor but out, become guard as real and
 * saved uid with uid/gid as the effective ids. A SETUP_ step on failure (errno set). */
static int setup(const struct guarded_child *c, int out, uid_t guard, uid_t uid, gid_t gid)
{
	if (c->mntns_fd >= 0 && setns(c->mntns_fd, CLONE_NEWNS) < 0)
		return SETUP_NAMESPACE;
	if (c->root_fd >= 0 && (fchdir(c->root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0))
		return SETUP_ROOT;
	/* Nothing of the parent's stays open in a process that runs as another user. */
	if (out > 3)
		(void)close_range(3, (unsigned)out - 1, 0);
	(void)close_range((unsigned)out + 1, ~0U, 0);
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(guard, uid, guard) < 0)
		return SETUP_PRIVILEGES;
	/* Changing uids already made it non-dumpable (unless fs.suid_dumpable says otherwise). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return SETUP_PRIVILEGES;
	return SETUP_NONE;
}

_Noreturn static void child(const struct guarded_child *c, int out, uid_t guard, uid_t uid,
			    gid_t gid)
{
	struct wire w = { 0 };

	/* Our parent gone, nobody waits for the answer. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	w.setup_step = setup(c, out, guard, uid, gid);
	if (w.setup_step != SETUP_NONE)
		w.setup_error = errno;
	else
		c->work(c->userdata, w.answer);
	(void)!write(out, &w, offsetof(struct wire, answer) + c->answer_size);
	_exit(0);
}

/* Mark in used[] the ids of the range that a process has as real, effective or saved uid. */
static int scan_uids(unsigned char used[static N_GUARDS])
{
	/* The caller's own /proc (util/procfs.h): also in a child that entered a namespace. */
	int proc = procfs_fd(),
	    dfd = proc >= 0 ? openat(proc, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : proc;
	_cleanup_(closedirp) DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;

	if (!d) {
		int r = dfd >= 0 ? -errno : dfd;

		if (dfd >= 0)
			close(dfd);
		return r;
	}
	while ((de = readdir(d))) {
		char path[300], buf[2048], *l;
		unsigned u[3];
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/status", de->d_name);
		fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue; /* gone since readdir() */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		l = strstr(buf, "\nUid:");
		if (!l || sscanf(l, "\nUid: %u %u %u", &u[0], &u[1], &u[2]) != 3)
			continue;
		for (int i = 0; i < 3; i++)
			if (u[i] >= GUARD_UID_MIN && u[i] <= GUARD_UID_MAX)
				used[u[i] - GUARD_UID_MIN] = 1;
	}
	return 0;
}

/* A transient uid of the range that no process has and systemd has not handed out. */
static int pick_guard(uid_t *ret)
{
	unsigned char used[N_GUARDS] = { 0 };
	unsigned v;
	int r = scan_uids(used);

	if (r < 0)
		return r;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (unsigned)now_usec(CLOCK_MONOTONIC) ^ ((unsigned)getpid() << 16);
	/* From a random start, the first free one: two children at once rarely collide. */
	for (unsigned i = 0; i < N_GUARDS; i++) {
		unsigned u = GUARD_UID_MIN + (v + i) % N_GUARDS;
		char lock[64];

		if (used[u - GUARD_UID_MIN])
			continue;
		/* One systemd handed to a DynamicUser= service: in use even with no process. */
		snprintf(lock, sizeof(lock), "/run/systemd/dynamic-uid/%u", u);
		if (access(lock, F_OK) == 0)
			continue;
		*ret = (uid_t)u;
		return 0;
	}
	return -EBUSY;
}

static int poll_until(int fd, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_usec(CLOCK_MONOTONIC);
		int r;

		if (now >= deadline)
			return 0;
		r = poll(&p, 1, (int)((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC));
		if (r < 0 && errno == EINTR)
			continue;
		return r < 0 ? -errno : r;
	}
}

/* Read the whole answer (size bytes) before the deadline; the number of bytes read, or
 * negative errno. */
static ssize_t read_answer(int rd, void *buf, size_t size, uint64_t deadline)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n;
		int r = poll_until(rd, deadline);

		if (r <= 0)
			return r < 0 ? r : (ssize_t)got;
		n = read(rd, (char *)buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Wait for the child's exit until the deadline, then kill it if need be, and reap it. */
static void reap(pid_t pid, int pidfd, int rd, uint64_t deadline)
{
	int status, r;

	/* Without a pidfd, the end of the pipe is the child's exit (it holds nothing else). */
	r = poll_until(pidfd >= 0 ? pidfd : rd, deadline);
	if (r <= 0)
		(void)kill(pid, SIGKILL); /* stopped, or hung: SIGKILL ends a stopped process too */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

int guarded_child_run(const struct guarded_child *c, void *answer, struct guarded_result *ret)
{
	_cleanup_close_ int rd = -EBADF, wr = -EBADF, pidfd = -EBADF;
	size_t size = offsetof(struct wire, answer) + c->answer_size;
	struct wire w = { 0 };
	uint64_t deadline;
	uid_t guard, uid;
	gid_t gid;
	int p[2], r;
	ssize_t n;
	pid_t pid;

	if (c->answer_size > GUARD_ANSWER_MAX)
		return -EINVAL;
	r = pick_guard(&guard);
	if (r < 0)
		return r;
	uid = c->uid == GUARD_TRANSIENT ? guard : c->uid;
	gid = c->gid == (gid_t)GUARD_TRANSIENT ? (gid_t)guard : c->gid;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	rd = p[0];
	wr = p[1];
	deadline = now_usec(CLOCK_MONOTONIC) + c->deadline_usec;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(c, wr, guard, uid, gid);
	close(TAKE_FD(wr));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	n = read_answer(rd, &w, size, deadline);
	reap(pid, pidfd, rd, deadline);
	/* Killed, or stopped past the deadline: no answer. A complete answer stands, however the
	 * child ended after giving it. */
	if (n != (ssize_t)size)
		return -ECANCELED;
	memcpy(answer, w.answer, c->answer_size);
	*ret = (struct guarded_result){
		.as_uid = uid,
		.as_gid = gid,
		.setup_error = w.setup_error,
		.setup_step = w.setup_step > 0 && w.setup_step < (int)ELEMENTSOF(setup_steps)
				  ? setup_steps[w.setup_step]
				  : NULL,
	};
	return 0;
}
