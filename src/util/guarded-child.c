/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "util/clock.h"
#include "util/guarded-child.h"
#include "util/macro.h"

/* The child's stack: its work is a few frames of system calls (more in a sanitizer build). */
#define STACK_SIZE (256u * 1024u)

/* The 32-bit id calls where the plain ones take 16-bit ids (i386, arm). */
#ifdef SYS_setresuid32
#define SYS_SETRESUID SYS_setresuid32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETGROUPS SYS_setgroups32
#else
#define SYS_SETRESUID SYS_setresuid
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETGROUPS SYS_setgroups
#endif

enum {
	SETUP_NONE,
	SETUP_NAMESPACE,
	SETUP_ROOT,
	SETUP_PRIVILEGES,
	SETUP_CGROUP,
};

static const char *const setup_steps[] = { NULL, "namespace", "root", "privileges", "cgroup" };

/* What parent and child share, above the child's stack. */
struct shared {
	const struct guarded_child *c;
	pid_t parent;
	int setup_error;
	int setup_step;
	int complete; /* set last, by the child, once the rest is written */
	unsigned char answer[GUARD_ANSWER_MAX];
};

/* Keep the parent's real and saved uid, take the user's as effective uid and its gid as every
 * gid, then hold no capability. glibc's set*id() would signal every thread of the parent (the
 * child has its thread-local storage): the system calls themselves. */
static bool drop_privileges(uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = { 0 };

	/* The bounding set while CAP_SETPCAP may still be effective: up to the last capability
	 * (EINVAL), or not at all without CAP_SETPCAP (EPERM: the daemon, whose unit bounds it). */
	for (unsigned long cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; cap++)
		;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return false;
	/* A caller that may not change ids (an unprivileged run) is already the user it asks for,
	 * and keeps its own groups: it has no rights of anyone else's to give away. */
	if (syscall(SYS_SETGROUPS, 0, NULL) < 0 &&
	    !(errno == EPERM && uid == geteuid() && gid == getegid()))
		return false;
	if (syscall(SYS_SETRESGID, gid, gid, gid) < 0 ||
	    syscall(SYS_SETRESUID, (uid_t)-1, uid, (uid_t)-1) < 0)
		return false;
	/* Leaving euid 0 clears the effective set only (the real uid is still 0), and a caller
	 * that is not root keeps all of them: drop them here, whoever the caller is. */
	if (syscall(SYS_capset, &h, none) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return false;
	/* Changing the euid already made it not dumpable (unless fs.suid_dumpable says
	 * otherwise). */
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
}

/* What every guarded process does once its descriptors are closed: drop privileges, then die
 * with its parent. A SETUP_ step on failure (errno set). */
static int guard(uid_t uid, gid_t gid, pid_t parent)
{
	if (!drop_privileges(uid, gid))
		return SETUP_PRIVILEGES;
	/* After the change of credentials, which resets it. Our parent gone, nobody waits for
	 * the answer. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return SETUP_PRIVILEGES;
	if (getppid() != parent) {
		errno = ESRCH;
		return SETUP_PRIVILEGES;
	}
	return SETUP_NONE;
}

/* The child's 0, 1 and 2 on the caller's /dev/null (closed without one): a child that waits on
 * a file system that stopped answering (FUSE, NFS) cannot be killed and is left behind, and
 * must not keep the caller's stdout open, or whoever reads it (a pipe, a test harness, a
 * monitoring agent) waits for its end as long. The child writes nothing there. */
static void stdio_detach(int keep_fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);

	for (int fd = 0; fd <= 2; fd++)
		if (fd != keep_fd && fd != null)
			(void)(null >= 0 ? dup2(null, fd) : close(fd));
	if (null > 2 && null != keep_fd)
		(void)close(null);
}

/* Enter the namespace and root asked for, keep no descriptor but 0, 1 and 2 (on /dev/null),
 * drop privileges. A SETUP_ step on failure (errno set). */
static int setup(const struct shared *s)
{
	const struct guarded_child *c = s->c;

	stdio_detach(c->keep_fd);

	for (unsigned i = 0; i < c->n_join_fds; i++)
		if (c->join_fds[i] >= 0 && write(c->join_fds[i], "0", 1) != 1)
			return SETUP_CGROUP;
	if (c->mntns_fd >= 0 && setns(c->mntns_fd, CLONE_NEWNS) < 0)
		return SETUP_NAMESPACE;
	if (c->root_fd >= 0 && (fchdir(c->root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0))
		return SETUP_ROOT;
	/* Nothing of the parent's stays open in a process that runs as another user, but what
	 * the work is handed. */
	if (c->keep_fd > 3)
		(void)close_range(3, (unsigned)c->keep_fd - 1, 0);
	(void)close_range(c->keep_fd >= 3 ? (unsigned)c->keep_fd + 1 : 3, ~0U, 0);
	return guard(c->uid, c->gid, s->parent);
}

/* The child, on its own stack in the parent's memory, every signal blocked. It returns into
 * clone()'s exit(2) of this task alone: no atexit handler, no stdio. */
static int child(void *userdata)
{
	struct shared *s = userdata;
	int step = setup(s);

	if (step != SETUP_NONE) {
		s->setup_error = errno ?: EIO;
		s->setup_step = step;
	} else
		s->c->work(s->c->userdata, s->answer);
	__atomic_store_n(&s->complete, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Start the child: a clone sharing our memory, or under valgrind (which runs no clone(CLONE_VM)
 * but a thread's) a fork, which shares only the mapping s is in. */
static pid_t start(struct shared *s, int *pidfd)
{
	pid_t pid;

	if (!RUNNING_ON_VALGRIND && !s->c->separate) {
		pid = clone(child, s, CLONE_VM | CLONE_PIDFD | SIGCHLD, s, pidfd);
		if (pid >= 0 || errno != EINVAL)
			return pid;
		/* A kernel without CLONE_PIDFD (before 5.2). */
		return clone(child, s, CLONE_VM | SIGCHLD, s);
	}
	pid = fork();
	if (pid == 0)
		_exit(child(s));
	if (pid > 0)
		*pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return pid;
}

/* Whether the child exited before the deadline: poll its pidfd, or without one its status. No
 * errno is read while it may run (it writes the same errno). */
static bool exited_by(pid_t pid, int pidfd, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_usec(CLOCK_MONOTONIC);
		siginfo_t si = { 0 };

		if (pidfd >= 0) {
			struct pollfd p = { .fd = pidfd, .events = POLLIN };
			int r;

			if (now >= deadline)
				return false;
			r = poll(&p, 1,
				 (int)((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC));
			if (r != 0)
				return r > 0;
			continue;
		}
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
			return true;
		if (now >= deadline)
			return false;
		(void)nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
}

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Separate children killed but not dead yet (their pidfds), reaped by a later run. */
#define LEFT_MAX 64
static int left_behind[LEFT_MAX];
static unsigned n_left_behind;

static void reap_left_behind(void)
{
	for (unsigned i = 0; i < n_left_behind;) {
		siginfo_t si = { 0 };

		if (waitid((idtype_t)P_PIDFD, (id_t)left_behind[i], &si, WEXITED | WNOHANG) == 0 &&
		    si.si_pid == 0) {
			i++;
			continue;
		}
		close(left_behind[i]);
		left_behind[i] = left_behind[--n_left_behind];
	}
}

/* Wait for the child until the deadline, kill it past that, and reap it: how it ended. A
 * separate child that does not die within a moment of SIGKILL is left behind (si_code 0). */
static siginfo_t reap(pid_t pid, int *pidfd, uint64_t deadline, bool separate)
{
	siginfo_t si = { 0 };

	if (!exited_by(pid, *pidfd, deadline)) {
		/* Stopped, or hung: SIGKILL ends a stopped one too. Our euid is its real uid. */
		if (*pidfd < 0 || syscall(SYS_pidfd_send_signal, *pidfd, SIGKILL, NULL, 0) < 0)
			(void)kill(pid, SIGKILL);
		if (separate && *pidfd >= 0 && n_left_behind < LEFT_MAX &&
		    !exited_by(pid, *pidfd, now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC)) {
			left_behind[n_left_behind++] = *pidfd;
			*pidfd = -EBADF;
			return si;
		}
	}
	/* Until it is gone: it shares our memory. */
	while (waitid(P_PID, (id_t)pid, &si, WEXITED) < 0 && errno == EINTR)
		;
	return si;
}

/* The child's memory: a guard page, its stack, and the shared part above it. Shared for a
 * forked child (under valgrind); a cloned one shares all our memory anyway, and private, the
 * memory is not shared with a process we fork (repair's child in a namespace), which may run
 * guarded children of its own on its copy. */
static char *child_memory_map(size_t page, size_t size, bool separate)
{
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 (RUNNING_ON_VALGRIND || separate ? MAP_SHARED : MAP_PRIVATE) |
			     MAP_ANONYMOUS | MAP_STACK,
			 -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	if (mprotect(mem, page, PROT_NONE) < 0) {
		int saved = errno;

		munmap(mem, size);
		errno = saved;
		return NULL;
	}
	return mem;
}

/* The memory of the last child, kept for the next one: a child is reaped before
 * guarded_child_run() returns, so nothing uses it between two runs. Mapping it for each run
 * cost more than the child (the pages faulted in again, and the unmapping flushes the TLB of
 * every CPU the child ran on): a daemon following hundreds of namespaces probes each. Taken
 * by one run at a time; a run that finds it taken (another thread's) maps its own. */
static char *kept_memory;
static bool kept_memory_taken;

int guarded_child_run(const struct guarded_child *c, void *answer, struct guarded_result *ret)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE),
	       size = page + STACK_SIZE + ((sizeof(struct shared) + page - 1) & ~(page - 1));
	int saved_errno = errno, pidfd = -EBADF, dumpable, r = 0;
	sigset_t all, saved_mask;
	bool kept = false;
	struct shared *s;
	uint64_t deadline;
	siginfo_t si;
	char *mem;
	pid_t pid;

	if (c->answer_size > GUARD_ANSWER_MAX)
		return -EINVAL;
	reap_left_behind();
	/* A separate child may outlive this run: its memory is its own mapping, never reused. */
	if (!c->separate && !__atomic_exchange_n(&kept_memory_taken, true, __ATOMIC_ACQUIRE)) {
		kept = true;
		if (!kept_memory)
			kept_memory = child_memory_map(page, size, false);
		mem = kept_memory;
	} else
		mem = child_memory_map(page, size, c->separate);
	if (!mem) {
		r = -errno;
		goto out;
	}
	/* A child killed in the middle of its work leaves its frames' redzones marked in
	 * AddressSanitizer's shadow: clean for this one, as a new mapping would be. */
	UNPOISON(mem + page, STACK_SIZE);
	s = (struct shared *)(mem + page + STACK_SIZE);
	*s = (struct shared){ .c = c, .parent = getpid() };
	dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);

	/* The child inherits the mask: no handler of ours ever runs in it, and none in us makes a
	 * call fail with EINTR (and write errno) while it runs. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved_mask);
	deadline = now_usec(CLOCK_MONOTONIC) + c->deadline_usec;
	pid = start(s, &pidfd);
	if (pid < 0)
		r = -errno;
	else {
		si = reap(pid, &pidfd, deadline, c->separate);
		if (pidfd >= 0)
			close(pidfd);
	}
	/* The child's change of euid made our shared memory not dumpable. */
	if (dumpable == 0 || dumpable == 1)
		(void)prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	if (r < 0)
		goto out;

	/* Stopped past the deadline, killed, or gone without saying it was done: no answer. */
	if (si.si_code != CLD_EXITED || si.si_status != 0 ||
	    !__atomic_load_n(&s->complete, __ATOMIC_ACQUIRE)) {
		r = -ECANCELED;
		goto out;
	}
	memcpy(answer, s->answer, c->answer_size);
	*ret = (struct guarded_result){
		.as_uid = c->uid,
		.as_gid = c->gid,
		.setup_error = s->setup_error,
		.setup_step = s->setup_step > 0 && s->setup_step < (int)ELEMENTSOF(setup_steps)
				  ? setup_steps[s->setup_step]
				  : NULL,
	};
out:
	if (kept)
		__atomic_store_n(&kept_memory_taken, false, __ATOMIC_RELEASE);
	else if (mem)
		munmap(mem, size);
	errno = saved_errno;
	return r;
}

/* The worker's side of a request and of an answer: a datagram each. */
struct wire_request {
	uint64_t seq;
	uint32_t answer_size;
	unsigned char data[GUARD_REQUEST_MAX];
};

struct wire_answer {
	uint64_t seq;
	int32_t setup_error;
	int32_t setup_step;
	unsigned char answer[GUARD_ANSWER_MAX];
};

struct guarded_worker {
	pid_t pid; /* 0: no worker */
	int sock;  /* our end of the pair; the other is the worker's alone */
	/* What it was started as, and for. */
	uid_t uid;
	gid_t gid;
	void (*work)(int fd, const void *request, void *answer);
	/* The request out, if any. */
	bool pending;
	bool lost; /* it could not be handed over: the worker died meanwhile */
	uint64_t seq, deadline;
	size_t answer_size;
};

/* In the worker: the socket as 0 and 1, and as 2 unless standard error is kept there; nothing
 * else. Everything a request hands over or its work opens is then above 2, closed in one call. */
static void keep_only(int sock, bool keep_stderr)
{
	if (sock != 0)
		(void)dup2(sock, 0);
	(void)dup2(0, 1);
	if (!keep_stderr)
		(void)dup2(0, 2);
	(void)close_range(3, ~0U, 0);
}

/* The worker: guarded like the child above, then one request after the other until the caller
 * closes its end (or kills it). A worker that could not drop its privileges says so to the first
 * request and exits. */
_Noreturn static void worker_main(const struct guarded_worker *w, int sock, pid_t parent)
{
	/* Standard error only when it is not a terminal (a sanitizer's report goes there): the
	 * worker outlives the passes of an audit, and would otherwise count among the holders of
	 * the terminal it was started from. (fd 2 may be the socket itself.) */
	bool keep_stderr = sock != 2 && !isatty(2);
	int step, setup_errno = 0;

	/* Nothing of the parent's but the socket (and maybe standard error). */
	keep_only(sock, keep_stderr);
	sock = 0;
	step = guard(w->uid, w->gid, parent);
	if (step != SETUP_NONE)
		setup_errno = errno ?: EIO;
	for (;;) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} control;
		struct wire_request q = { 0 };
		struct wire_answer a;
		struct iovec iov = { .iov_base = &q, .iov_len = sizeof(q) };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = &control,
				     .msg_controllen = sizeof(control) };
		size_t head = offsetof(struct wire_answer, answer);
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		int fd = -1;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)offsetof(struct wire_request, data))
			_exit(0); /* the caller is done (or the request makes no sense) */
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int)))
				memcpy(&fd, CMSG_DATA(c), sizeof(int));
		memset(&a, 0, sizeof(a));
		a.seq = q.seq;
		if (step != SETUP_NONE) {
			a.setup_error = setup_errno;
			a.setup_step = step;
		} else if (q.answer_size <= sizeof(a.answer))
			w->work(fd, q.data, a.answer);
		/* Whatever the request handed us and the work opened is closed before it is
		 * answered: all of it is above 2. */
		(void)close_range(3, ~0U, 0);
		if (q.answer_size > sizeof(a.answer) ||
		    send(sock, &a, head + q.answer_size, MSG_NOSIGNAL) < 0 || step != SETUP_NONE)
			_exit(0);
	}
}

int guarded_worker_new(struct guarded_worker **ret)
{
	struct guarded_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->sock = -EBADF;
	*ret = w;
	return 0;
}

/* Kill the worker (our euid is its real uid: no CAP_KILL needed) and reap it. */
static void worker_stop(struct guarded_worker *w)
{
	int saved_errno = errno;

	if (w->pid > 0) {
		(void)kill(w->pid, SIGKILL);
		while (waitid(P_PID, (id_t)w->pid, &(siginfo_t){ 0 }, WEXITED) < 0 &&
		       errno == EINTR)
			;
	}
	if (w->sock >= 0)
		close(w->sock);
	w->pid = 0;
	w->sock = -EBADF;
	w->pending = false;
	errno = saved_errno;
}

struct guarded_worker *guarded_worker_free(struct guarded_worker *w)
{
	if (w) {
		worker_stop(w);
		free(w);
	}
	return NULL;
}

/* A fork, not a clone sharing our memory: it runs while we go on, with an errno, a malloc and a
 * sanitizer state of its own. Every signal blocked across the fork and in it: no handler of ours
 * ever runs there. */
static int worker_start(struct guarded_worker *w, const struct guarded_request *q)
{
	sigset_t all, saved_mask;
	pid_t parent = getpid(), pid;
	int sv[2], saved_errno;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	w->uid = q->uid;
	w->gid = q->gid;
	w->work = q->work;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved_mask);
	pid = fork();
	if (pid == 0)
		worker_main(w, sv[1], parent);
	saved_errno = errno;
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	/* Its end is its alone: when it dies, ours reads end of file. */
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -saved_errno;
	}
	w->pid = pid;
	w->sock = sv[0];
	return 0;
}

/* A worker running as another user, or for another work, is no worker for q. */
static void worker_stop_unfit(struct guarded_worker *w, const struct guarded_request *q)
{
	if (w->pid > 0 && (w->uid != q->uid || w->gid != q->gid || w->work != q->work))
		worker_stop(w);
}

int guarded_worker_start(struct guarded_worker *w, const struct guarded_request *q)
{
	if (w->pending)
		return -EBUSY;
	worker_stop_unfit(w, q);
	return w->pid > 0 ? 0 : worker_start(w, q);
}

static int worker_send(struct guarded_worker *w, const struct guarded_request *q)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} control = { 0 };
	struct wire_request m = { .seq = w->seq, .answer_size = (uint32_t)q->answer_size };
	struct iovec iov = { .iov_base = &m,
			     .iov_len = offsetof(struct wire_request, data) + q->request_size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (q->request_size > 0)
		memcpy(m.data, q->request, q->request_size);
	if (q->fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = &control;
		mh.msg_controllen = sizeof(control);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &q->fd, sizeof(int));
	}
	while (sendmsg(w->sock, &mh, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret);

static int worker_submit(struct guarded_worker *w, const struct guarded_request *q)
{
	int r;

	if (q->answer_size > GUARD_ANSWER_MAX || q->request_size > GUARD_REQUEST_MAX)
		return -EINVAL;
	if (w->pending) {
		unsigned char dropped[GUARD_ANSWER_MAX];
		struct guarded_result g;

		(void)worker_collect(w, dropped, &g);
	}
	worker_stop_unfit(w, q);
	w->seq++;
	w->lost = false;
	for (unsigned attempt = 0;; attempt++) {
		if (w->pid <= 0 && (r = worker_start(w, q)) < 0)
			return r;
		r = worker_send(w, q);
		if (r >= 0)
			break;
		/* EPIPE, ECONNRESET: it died since the last request (killed by someone): once
		 * more with a new one; then it counts as a worker that died without answering. */
		worker_stop(w);
		if (r != -EPIPE && r != -ECONNRESET)
			return r;
		if (attempt > 0) {
			w->lost = true;
			break;
		}
	}
	w->pending = true;
	w->answer_size = q->answer_size;
	w->deadline = now_usec(CLOCK_MONOTONIC) + q->deadline_usec;
	return 0;
}

static int worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret)
{
	size_t head = offsetof(struct wire_answer, answer);
	struct wire_answer a;

	if (!w->pending)
		return -ENOENT;
	w->pending = false;
	if (w->lost)
		return -ECANCELED;
	for (bool first = true;; first = false) {
		struct pollfd p = { .fd = w->sock, .events = POLLIN };
		uint64_t now;
		ssize_t n;
		int r;

		/* The answer is there already, most of the time (the caller was busy meanwhile): it
		 * counts, even past the deadline. */
		if (first) {
			n = recv(w->sock, &a, sizeof(a), MSG_DONTWAIT);
			if (n >= 0 || (errno != EAGAIN && errno != EINTR))
				goto received;
		}
		now = now_usec(CLOCK_MONOTONIC);
		r = poll(&p, 1,
			 now >= w->deadline
			     ? 0
			     : (int)((w->deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			worker_stop(w);
			return r;
		}
		if (r == 0) {
			if (now_usec(CLOCK_MONOTONIC) < w->deadline)
				continue;
			/* Stopped, or hung: SIGKILL ends a stopped one too. */
			worker_stop(w);
			return -ECANCELED;
		}
		n = recv(w->sock, &a, sizeof(a), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
	received:
		/* End of file: it died without answering (killed, or worse). */
		if (n < (ssize_t)head || (size_t)n != head + w->answer_size) {
			worker_stop(w);
			return -ECANCELED;
		}
		if (a.seq == w->seq)
			break;
		/* The answer to an earlier request, dropped: not this one's. */
	}
	memcpy(answer, a.answer, w->answer_size);
	*ret = (struct guarded_result){
		.as_uid = w->uid,
		.as_gid = w->gid,
		.setup_error = a.setup_error,
		.setup_step = a.setup_step > 0 && a.setup_step < (int)ELEMENTSOF(setup_steps)
				  ? setup_steps[a.setup_step]
				  : NULL,
	};
	/* A worker that could not set itself up exits after saying so. */
	if (a.setup_error)
		worker_stop(w);
	return 0;
}

/* Neither changes errno: the caller's, as guarded_child_run() keeps it. */
int guarded_worker_submit(struct guarded_worker *w, const struct guarded_request *q)
{
	int saved_errno = errno, r = worker_submit(w, q);

	errno = saved_errno;
	return r;
}

int guarded_worker_collect(struct guarded_worker *w, void *answer, struct guarded_result *ret)
{
	int saved_errno = errno, r = worker_collect(w, answer, ret);

	errno = saved_errno;
	return r;
}

int guarded_worker_request(struct guarded_worker *w, const struct guarded_request *q, void *answer,
			   struct guarded_result *ret)
{
	int r = guarded_worker_submit(w, q);

	return r < 0 ? r : guarded_worker_collect(w, answer, ret);
}
