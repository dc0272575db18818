/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "repair/verify.h"
#include "util/clock.h"
#include "util/macro.h"
#include "util/procfs.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

DEFINE_POINTER_CLEANUP(DIR, closedir)

#define N_GUARDS (VERIFY_UID_MAX - VERIFY_UID_MIN + 1)

enum {
	STEP_NONE,
	STEP_PRIVILEGES,
	STEP_OPEN,
	STEP_UNLOCK,
	STEP_INDEX,
	STEP_PEER,
	STEP_FSTAT,
};

struct wire {
	int error;
	int step;
	unsigned index;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

static const char *const steps[] = { "", "privileges", "open", "unlock", "index", "peer", "fstat" };

/* Become guard as real and saved uid, with uid/gid as the effective ids; a step on failure. */
static int drop_privileges(uid_t guard, uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(guard, uid, guard) < 0)
		return STEP_PRIVILEGES;
	/* Changing uids already made it non-dumpable (unless fs.suid_dumpable says otherwise). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return STEP_PRIVILEGES;
	return STEP_NONE;
}

_Noreturn static void child(int out, const char *ptmx, uid_t guard, uid_t uid, gid_t gid)
{
	struct wire w = { 0 };
	int fd, peer, unlock = 0;
	struct stat st;

	/* Our parent gone, nobody waits for the answer. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	w.step = drop_privileges(guard, uid, gid);
	if (w.step != STEP_NONE)
		w.error = errno;
	else if ((fd = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		w.step = STEP_OPEN;
	else if (ioctl(fd, TIOCSPTLCK, &unlock) < 0)
		w.step = STEP_UNLOCK;
	else if (ioctl(fd, TIOCGPTN, &w.index) < 0)
		w.step = STEP_INDEX;
	else if ((peer = ioctl(fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		w.step = STEP_PEER;
	else if (fstat(peer, &st) < 0)
		w.step = STEP_FSTAT;
	else {
		w.uid = st.st_uid;
		w.gid = st.st_gid;
		w.mode = st.st_mode & 07777;
	}
	if (w.step > STEP_PRIVILEGES)
		w.error = errno;
	(void)!write(out, &w, sizeof(w));
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
			if (u[i] >= VERIFY_UID_MIN && u[i] <= VERIFY_UID_MAX)
				used[u[i] - VERIFY_UID_MIN] = 1;
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
	/* From a random start, the first free one: two verifications at once rarely collide. */
	for (unsigned i = 0; i < N_GUARDS; i++) {
		unsigned u = VERIFY_UID_MIN + (v + i) % N_GUARDS;
		char lock[64];

		if (used[u - VERIFY_UID_MIN])
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

/* Read the whole answer before the deadline; the number of bytes read, or negative errno. */
static ssize_t read_answer(int rd, struct wire *w, uint64_t deadline)
{
	size_t got = 0;

	while (got < sizeof(*w)) {
		ssize_t n;
		int r = poll_until(rd, deadline);

		if (r <= 0)
			return r < 0 ? r : (ssize_t)got;
		n = read(rd, (char *)w + got, sizeof(*w) - got);
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

static int check_once(const char *ptmx, uid_t guard, uid_t uid, gid_t gid, struct wire *ret)
{
	_cleanup_close_ int rd = -EBADF, wr = -EBADF, pidfd = -EBADF;
	uint64_t deadline;
	struct wire w = { 0 };
	int p[2];
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	rd = p[0];
	wr = p[1];
	deadline = now_usec(CLOCK_MONOTONIC) + VERIFY_DEADLINE_USEC;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(wr, ptmx, guard, uid == VERIFY_TRANSIENT ? guard : uid,
		      gid == (gid_t)VERIFY_TRANSIENT ? (gid_t)guard : gid);
	close(TAKE_FD(wr));
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	n = read_answer(rd, &w, deadline);
	reap(pid, pidfd, rd, deadline);
	/* Killed, or stopped past the deadline: no answer. A complete answer stands, however the
	 * child ended after giving it. */
	if (n != (ssize_t)sizeof(w))
		return -ECANCELED;
	*ret = w;
	return 0;
}

int pty_check_as(const char *ptmx, uid_t uid, gid_t gid, struct pty_check *ret)
{
	struct wire w = { 0 };
	uid_t guard;
	int r;

	r = pick_guard(&guard);
	if (r < 0)
		return r;
	r = check_once(ptmx, guard, uid, gid, &w);
	if (r < 0)
		return r;
	*ret = (struct pty_check){
		.error = w.error,
		.step = w.step > 0 && w.step < (int)ELEMENTSOF(steps) ? steps[w.step] : NULL,
		.as_uid = uid == VERIFY_TRANSIENT ? guard : uid,
		.as_gid = gid == (gid_t)VERIFY_TRANSIENT ? (gid_t)guard : gid,
		.index = w.index,
		.uid = w.uid,
		.gid = w.gid,
		.mode = w.mode,
	};
	return 0;
}
