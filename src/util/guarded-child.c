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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "util/guard-internal.h"

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

static const char *const setup_steps[] = { NULL, "namespace", "root", "privileges", "cgroup" };

const char *guard_setup_step_name(int step)
{
	return step > 0 && step < (int)ELEMENTSOF(setup_steps) ? setup_steps[step] : NULL;
}

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
int guard_process(uid_t uid, gid_t gid, pid_t parent)
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

/* The child's 0, 1 and 2 on a pipe of its own (closed without one): a child that waits on a
 * file system that stopped answering (FUSE, NFS) cannot be killed and is left behind, and must
 * not keep the caller's stdout open, or whoever reads it (a pipe, a test harness, a monitoring
 * agent) waits for its end as long. The child writes nothing there. Nothing is opened by path:
 * a caller that entered another namespace's root (repair --namespace) would find that
 * namespace's /dev/null, any device it chose, opened with our privileges. */
static void stdio_detach(int keep_fd)
{
	int p[2] = { -1, -1 };

	if (pipe2(p, O_CLOEXEC) < 0)
		p[0] = p[1] = -1;
	for (int fd = 0; fd <= 2; fd++) {
		int to = fd == 0 ? p[0] : p[1];

		if (fd != keep_fd && fd != p[0] && fd != p[1])
			(void)(to >= 0 ? dup2(to, fd) : close(fd));
	}
	for (int i = 0; i < 2; i++)
		if (p[i] > 2 && p[i] != keep_fd)
			(void)close(p[i]);
}

/* Enter the namespace and root asked for, keep no descriptor but 0, 1 and 2 (on a pipe of its own),
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
	return guard_process(c->uid, c->gid, s->parent);
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

/* Children killed but not dead yet (their pidfds), reaped by a later run. */
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

bool guard_kill_or_leave(pid_t pid, int *pidfd)
{
	/* SIGKILL ends a stopped one too. Our euid is its real uid. */
	if (*pidfd < 0 || syscall(SYS_pidfd_send_signal, *pidfd, SIGKILL, NULL, 0) < 0)
		(void)kill(pid, SIGKILL);
	if (*pidfd >= 0 && n_left_behind < LEFT_MAX &&
	    !exited_by(pid, *pidfd, now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC)) {
		left_behind[n_left_behind++] = *pidfd;
		*pidfd = -EBADF;
		return true;
	}
	return false;
}

/* Wait for the child until the deadline, kill it past that, and reap it: how it ended. One
 * that does not die within a moment of SIGKILL is left behind (si_pid 0): it waits in the kernel
 * on a FUSE daemon that read the request and will not answer, uninterruptibly. Killed, it never
 * runs its own code again; a child sharing our memory may still have the kernel finish a call
 * into its buffers, so the caller must never reuse that memory. */
static siginfo_t reap(pid_t pid, int *pidfd, uint64_t deadline)
{
	siginfo_t si = { 0 };

	if (!exited_by(pid, *pidfd, deadline) && guard_kill_or_leave(pid, pidfd))
		return si;
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
		si = reap(pid, &pidfd, deadline);
		if (pidfd >= 0)
			close(pidfd);
		/* Left behind: its memory is its own from now on (leaked, never reused). */
		if (si.si_pid == 0) {
			if (kept)
				kept_memory = NULL;
			else if (!c->separate)
				mem = NULL;
		}
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
		.setup_step = guard_setup_step_name(s->setup_step),
	};
out:
	if (kept)
		__atomic_store_n(&kept_memory_taken, false, __ATOMIC_RELEASE);
	else if (mem)
		munmap(mem, size);
	errno = saved_errno;
	return r;
}
