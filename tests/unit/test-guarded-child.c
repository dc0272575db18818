/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guarded child (util/guarded-child.h) on the real kernel, as root in a private mount
 * namespace with a /dev of its own (a devpts gid=5,mode=620):
 *
 *   - while the child runs as nobody, a process of uid nobody cannot stop, kill, signal,
 *     trace or read the memory of it (EPERM / EACCES), and /proc/CHILD/status shows it with
 *     the parent's real and saved uid, nobody's effective uid, nobody's gid everywhere, no
 *     supplementary groups, no capability at all (from root, an empty bounding set too) and
 *     no_new_privs; the child itself cannot take a capability back; the parent's errno and
 *     dumpable flag are as they were;
 *   - the same with a parent that is not root (uid 1000 holding CAP_SETUID and CAP_SETGID,
 *     also as ambient capabilities, the way a daemon run as another user would): the child
 *     still drops every capability, its pty belongs to nobody and not to uid 1000, and a child
 *     that hangs is killed at its deadline by that parent, which has no CAP_KILL;
 *   - the same of a guarded worker (one process serving many requests), from either parent;
 *     one worker answers several requests; the descriptor a request hands it is open during
 *     the request and closed after it; a request that hangs is killed at its deadline
 *     (-ECANCELED), and the next is answered by a new worker, as is one after the worker was
 *     killed between requests;
 *   - with 1,000 more processes the allocation probe still gets a working pty.
 *
 * Exits 77 (skipped) when not root or without mount namespaces.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe/allocation.h"
#include "probe/allocation.h"
#include "test.h"
#include "util/group.h"
#include "util/guarded-child.h"
#include "util/macro.h"

#define EXIT_SKIP 77
#define OTHER_UID 1000

static char done_path[64], ready_path[64];

/* What the child sees of itself. */
struct self {
	uid_t r_uid, e_uid, s_uid;
	gid_t r_gid, e_gid, s_gid;
	int n_groups;
	uint32_t eff, prm, inh;
	int nnp;
	int raise_errno; /* capset() asking for CAP_SETUID back: its errno */
	bool released;	 /* the watcher said it was done */
};

/* What a process of uid nobody could do to the child, and saw of it. */
struct watch {
	pid_t child;
	int stop_errno, kill_errno, signal0_errno, ptrace_errno, mem_errno;
	char status[2048];
};

static void sleep_ms(long ms)
{
	(void)nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 },
			NULL);
}

/* In the guarded child: system calls only. Wait (up to 8 s) for the watcher to be done. */
static void inspect(void *userdata, void *answer)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	struct self *s = answer;
	struct stat st;

	(void)userdata;
	/* Privileges dropped: the watcher may look. */
	(void)close(open(ready_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	for (int i = 0; i < 800 && !s->released; i++) {
		s->released = stat(done_path, &st) == 0;
		if (!s->released)
			sleep_ms(10);
	}
	(void)getresuid(&s->r_uid, &s->e_uid, &s->s_uid);
	(void)getresgid(&s->r_gid, &s->e_gid, &s->s_gid);
	s->n_groups = getgroups(0, NULL);
	if (syscall(SYS_capget, &h, d) == 0) {
		s->eff = d[0].effective;
		s->prm = d[0].permitted;
		s->inh = d[0].inheritable;
	}
	s->nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	d[0].effective = d[0].permitted = 1u << CAP_SETUID;
	s->raise_errno = syscall(SYS_capset, &h, d) < 0 ? errno : 0;
}

/* In the guarded child: never answer. */
static void hang(void *userdata, void *answer)
{
	(void)userdata;
	(void)answer;
	for (;;)
		sleep_ms(1000);
}

static void drop_to(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		_exit(3);
}

/* As nobody: find the parent's other child, try everything on it, report, release it. */
_Noreturn static void watcher(pid_t parent, int out)
{
	struct watch w = { 0 };
	char path[64], buf[256];
	int fd;

	drop_to(65534, 65534);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)parent, (int)parent);
	for (int i = 0; i < 5000 && !w.child; i++) {
		FILE *f = fopen(path, "re");
		int k;

		while (f && fscanf(f, "%d", &k) == 1)
			if (k != getpid())
				w.child = k;
		if (f)
			fclose(f);
		if (!w.child)
			sleep_ms(1);
	}
	/* Only once the child has dropped its privileges (it creates ready_path then). */
	for (int i = 0; i < 5000 && access(ready_path, F_OK) < 0; i++)
		sleep_ms(1);
	if (w.child) {
		w.stop_errno = kill(w.child, SIGSTOP) < 0 ? errno : 0;
		w.kill_errno = kill(w.child, SIGKILL) < 0 ? errno : 0;
		w.signal0_errno = kill(w.child, 0) < 0 ? errno : 0;
		w.ptrace_errno = ptrace(PTRACE_ATTACH, w.child, NULL, NULL) < 0 ? errno : 0;
		snprintf(buf, sizeof(buf), "/proc/%d/mem", (int)w.child);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		w.mem_errno = fd < 0 ? errno : 0;
		snprintf(buf, sizeof(buf), "/proc/%d/status", (int)w.child);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			(void)!read(fd, w.status, sizeof(w.status) - 1);
	}
	(void)!write(out, &w, sizeof(w));
	fd = open(done_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	_exit(fd >= 0 ? 0 : 4);
}

/* The value of a line of /proc/PID/status ("Uid:" -> "0\t65534\t0\t65534"), or "". */
static const char *status_field(const char *status, const char *key, char *buf, size_t size)
{
	const char *p = strstr(status, key), *e;

	buf[0] = 0;
	if (!p)
		return buf;
	p += strlen(key);
	p += strspn(p, " \t");
	e = strchrnul(p, '\n');
	snprintf(buf, size, "%.*s", (int)(e - p), p);
	return buf;
}

/* inspect() as a worker's request. */
static void inspect_request(int fd, const void *request, void *answer)
{
	(void)fd;
	(void)request;
	inspect(NULL, answer);
}

/* Run inspect() as nobody (in a guarded child, or a guarded worker when worker) with a watcher
 * of uid nobody; check both sides. parent_uid: ours; setpcap: whether we may empty the child's
 * bounding set (root may, uid 1000 here may not). */
static void guarded_against_nobody(const char *what, uid_t parent_uid, bool setpcap, bool worker)
{
	_cleanup_(guarded_worker_freep) struct guarded_worker *gw = NULL;
	struct guarded_child c = {
		.uid = 65534,
		.gid = 65534,
		.mntns_fd = -1,
		.root_fd = -1,
		.deadline_usec = 10ULL * 1000000ULL,
		.work = inspect,
		.answer_size = sizeof(struct self),
	};
	struct guarded_result g = { 0 };
	struct self s = { 0 };
	struct watch w = { 0 };
	char want[64], buf[128];
	int p[2], r, status;
	pid_t pid;

	/* Paths of this run's own (the child and the worker are each looked at, and a parent
	 * that is not root may not remove what nobody left in /tmp). */
	snprintf(done_path, sizeof(done_path), "/tmp/watcher-done-%u-%d", (unsigned)parent_uid,
		 worker);
	snprintf(ready_path, sizeof(ready_path), "/tmp/child-ready-%u-%d", (unsigned)parent_uid,
		 worker);
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0)
		watcher(getppid(), p[1]);
	close(p[1]);
	errno = EDOM;
	if (worker) {
		r = guarded_worker_new(&gw);
		if (r >= 0)
			r = guarded_worker_request(gw,
						   &(struct guarded_request){
						       .uid = c.uid,
						       .gid = c.gid,
						       .work = inspect_request,
						       .fd = -1,
						       .answer_size = sizeof(s),
						       .deadline_usec = c.deadline_usec,
						   },
						   &s, &g);
	} else
		r = guarded_child_run(&c, &s, &g);
	CHECK_MSG(errno == EDOM, "%s: errno changed to %d by the guarded child", what, errno);
	CHECK_MSG(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "%s: the parent is not dumpable after",
		  what);
	CHECK_MSG(read(p[0], &w, sizeof(w)) == sizeof(w), "%s: no word from the watcher", what);
	close(p[0]);
	waitpid(pid, &status, 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the watcher failed (%d)",
		  what, status);

	CHECK_MSG(r == 0, "%s: guarded_%s: %s", what, worker ? "worker_request" : "child_run",
		  strerror(-r));
	CHECK_MSG(w.child > 0, "%s: the watcher did not see the child", what);
	CHECK_MSG(s.released, "%s: the child was not released by the watcher", what);
	/* A process of the user the child runs as reaches none of it. */
	EXPECT_INT(w.stop_errno, EPERM);
	EXPECT_INT(w.kill_errno, EPERM);
	EXPECT_INT(w.signal0_errno, EPERM);
	EXPECT_INT(w.ptrace_errno, EPERM);
	CHECK_MSG(w.mem_errno == EACCES || w.mem_errno == EPERM, "%s: /proc/CHILD/mem: %s", what,
		  strerror(w.mem_errno));
	/* And the child is what it says, from outside and from inside. */
	snprintf(want, sizeof(want), "%u\t65534\t%u\t65534", (unsigned)parent_uid,
		 (unsigned)parent_uid);
	EXPECT_STR(status_field(w.status, "\nUid:", buf, sizeof(buf)), want);
	EXPECT_STR(status_field(w.status, "\nGid:", buf, sizeof(buf)),
		   "65534\t65534\t65534\t65534");
	EXPECT_STR(status_field(w.status, "\nGroups:", buf, sizeof(buf)), "");
	EXPECT_STR(status_field(w.status, "\nCapInh:", buf, sizeof(buf)), "0000000000000000");
	EXPECT_STR(status_field(w.status, "\nCapPrm:", buf, sizeof(buf)), "0000000000000000");
	EXPECT_STR(status_field(w.status, "\nCapEff:", buf, sizeof(buf)), "0000000000000000");
	EXPECT_STR(status_field(w.status, "\nCapAmb:", buf, sizeof(buf)), "0000000000000000");
	EXPECT_STR(status_field(w.status, "\nNoNewPrivs:", buf, sizeof(buf)), "1");
	if (setpcap)
		EXPECT_STR(status_field(w.status, "\nCapBnd:", buf, sizeof(buf)),
			   "0000000000000000");
	EXPECT_INT(s.r_uid, parent_uid);
	EXPECT_INT(s.e_uid, 65534);
	EXPECT_INT(s.s_uid, parent_uid);
	EXPECT_INT(s.e_gid, 65534);
	EXPECT_INT(s.n_groups, 0);
	EXPECT_INT(s.eff | s.prm | s.inh, 0);
	EXPECT_INT(s.nnp, 1);
	EXPECT_INT(s.raise_errno, EPERM);
	EXPECT_INT(g.as_uid, 65534);
	printf("%s: watcher as nobody got stop %s, kill %s, ptrace %s; child Uid: %s\n", what,
	       strerror(w.stop_errno), strerror(w.kill_errno), strerror(w.ptrace_errno),
	       status_field(w.status, "\nUid:", buf, sizeof(buf)));
}

/* A worker's request: the worker's pid, the request's number, and what its descriptor is. */
struct served {
	pid_t pid;
	unsigned n;
	int fd_flags; /* fcntl(F_GETFD) of the descriptor handed over, -errno */
	int fd_number;
};

static void serve(int fd, const void *request, void *answer)
{
	struct served *a = answer;

	a->pid = getpid();
	memcpy(&a->n, request, sizeof(a->n));
	a->fd_number = fd;
	a->fd_flags = fd < 0 ? -EBADF : fcntl(fd, F_GETFD) < 0 ? -errno : 0;
	if (a->n == 1000)
		hang(NULL, NULL);
}

static int serve_request(struct guarded_worker *w, unsigned n, int fd, uint64_t deadline_usec,
			 struct served *ret)
{
	struct guarded_result g = { 0 };

	*ret = (struct served){ 0 };
	return guarded_worker_request(w,
				      &(struct guarded_request){
					  .uid = 65534,
					  .gid = 65534,
					  .work = serve,
					  .fd = fd,
					  .request = &n,
					  .request_size = sizeof(n),
					  .answer_size = sizeof(*ret),
					  .deadline_usec = deadline_usec,
				      },
				      ret, &g);
}

/* A request that hangs is killed at its deadline, and the next one is served by a new worker. */
static void worker_hang_killed(const char *what)
{
	_cleanup_(guarded_worker_freep) struct guarded_worker *w = NULL;
	struct served a, b;
	int r;

	EXPECT(guarded_worker_new(&w) == 0);
	r = serve_request(w, 1, -1, 10ULL * 1000000ULL, &a);
	CHECK_MSG(r == 0 && a.n == 1, "%s: first request: %s", what, strerror(-r));
	r = serve_request(w, 1000, -1, 300ULL * 1000ULL, &b);
	CHECK_MSG(r == -ECANCELED, "%s: a hung request: %s, not ECANCELED", what, strerror(-r));
	CHECK_MSG(a.pid > 0 && kill(a.pid, 0) < 0 && errno == ESRCH,
		  "%s: the hung worker %d is still there", what, (int)a.pid);
	r = serve_request(w, 2, -1, 10ULL * 1000000ULL, &b);
	CHECK_MSG(r == 0 && b.n == 2 && b.pid != a.pid && b.pid > 0,
		  "%s: after the hung one: %s, answered by %d (the hung one was %d)", what,
		  strerror(-r), (int)b.pid, (int)a.pid);
}

/* One worker for many requests; each request's descriptor closed by the worker after it; a
 * worker killed between requests replaced unseen. */
static void worker_requests(void)
{
	_cleanup_(guarded_worker_freep) struct guarded_worker *w = NULL;
	struct served a, first = { 0 };
	struct pollfd p;
	int pipe_fds[2], r;
	char c;

	EXPECT(guarded_worker_new(&w) == 0);
	for (unsigned n = 1; n <= 5; n++) {
		r = serve_request(w, n, -1, 10ULL * 1000000ULL, &a);
		CHECK_MSG(r == 0 && a.n == n && a.fd_number == -1,
			  "request %u: %s, answered %u (fd %d)", n, strerror(-r), a.n, a.fd_number);
		if (n == 1)
			first = a;
		CHECK_MSG(a.pid == first.pid && a.pid != getpid(),
			  "request %u served by %d, the first by %d: not one worker", n, (int)a.pid,
			  (int)first.pid);
	}
	/* A pipe's write end handed over: open in the worker during the request; once we close
	 * ours, the read end sees end of file only if the worker closed its copy too. */
	EXPECT(pipe2(pipe_fds, O_CLOEXEC) == 0);
	r = serve_request(w, 6, pipe_fds[1], 10ULL * 1000000ULL, &a);
	CHECK_MSG(r == 0 && a.pid == first.pid && a.fd_number >= 0 && a.fd_flags == 0,
		  "a request with a descriptor: %s, fd %d in the worker (%s)", strerror(-r),
		  a.fd_number, strerror(-a.fd_flags));
	close(pipe_fds[1]);
	p = (struct pollfd){ .fd = pipe_fds[0], .events = POLLIN };
	CHECK_MSG(poll(&p, 1, 10000) == 1 && read(pipe_fds[0], &c, 1) == 0,
		  "the worker still holds the descriptor of a request answered");
	close(pipe_fds[0]);
	/* The next request does not see it either. */
	r = serve_request(w, 7, -1, 10ULL * 1000000ULL, &a);
	CHECK_MSG(r == 0 && a.pid == first.pid, "request 7: %s", strerror(-r));

	/* Killed between requests (by root): the next request starts a new worker. */
	EXPECT(kill(first.pid, SIGKILL) == 0);
	sleep_ms(50);
	r = serve_request(w, 8, -1, 10ULL * 1000000ULL, &a);
	CHECK_MSG(r == 0 && a.n == 8 && a.pid != first.pid,
		  "after the worker was killed: %s, served by %d", strerror(-r), (int)a.pid);
	worker_hang_killed("parent root");
}

/* RssAnon of pid in KiB, -1 when unknown. */
static long rss_anon_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* A worker started ahead of its first request is forked then, not at that request: 32 MiB
 * written in between are not in it. Starting it again is nothing; with a request out, EBUSY. */
static void worker_started_ahead(void)
{
	_cleanup_(guarded_worker_freep) struct guarded_worker *w = NULL;
	const struct guarded_request q = {
		.uid = 65534,
		.gid = 65534,
		.work = serve,
		.fd = -1,
		.answer_size = sizeof(struct served),
		.deadline_usec = 10ULL * 1000000ULL,
	};
	const size_t big = 32u << 20;
	struct guarded_result g = { 0 };
	struct served a, b;
	unsigned n = 1;
	char *mem;
	long kib;
	int r;

	EXPECT(guarded_worker_new(&w) == 0);
	r = guarded_worker_start(w, &q);
	CHECK_MSG(r == 0, "starting the worker ahead: %s", strerror(-r));
	mem = malloc(big);
	EXPECT(mem);
	memset(mem, 1, big);
	r = serve_request(w, 1, -1, 10ULL * 1000000ULL, &a);
	kib = r == 0 ? rss_anon_kib(a.pid) : -1;
	CHECK_MSG(r == 0 && kib >= 0 && kib < (long)(big >> 10) / 2,
		  "the worker started ahead (%s) holds %ld KiB of anonymous memory: forked after "
		  "our %zu MiB were written",
		  strerror(-r), kib, big >> 20);
	free(mem);
	r = guarded_worker_start(w, &q);
	CHECK_MSG(r == 0, "starting a running worker again: %s", strerror(-r));
	r = guarded_worker_submit(w,
				  &(struct guarded_request){ .uid = 65534,
							     .gid = 65534,
							     .work = serve,
							     .fd = -1,
							     .request = &n,
							     .request_size = sizeof(n),
							     .answer_size = sizeof(b),
							     .deadline_usec = 10ULL * 1000000ULL });
	CHECK_MSG(r == 0, "a request: %s", strerror(-r));
	r = guarded_worker_start(w, &q);
	CHECK_MSG(r == -EBUSY, "starting with a request out: %s, not EBUSY", strerror(-r));
	r = guarded_worker_collect(w, &b, &g);
	CHECK_MSG(r == 0 && b.pid == a.pid, "its answer: %s, from %d (the worker is %d)",
		  strerror(-r), (int)b.pid, (int)a.pid);
}

/* As uid 1000 with CAP_SETUID and CAP_SETGID (permitted, effective, inheritable, ambient). */
static int become_capable_user(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	uint32_t caps = (1u << CAP_SETUID) | (1u << CAP_SETGID);

	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(0, NULL) < 0 ||
	    setresgid(OTHER_UID, OTHER_UID, OTHER_UID) < 0 ||
	    setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0)
		return -errno;
	d[0].effective = d[0].permitted = d[0].inheritable = caps;
	if (syscall(SYS_capset, &h, d) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETUID, 0, 0) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETGID, 0, 0) < 0)
		return -errno;
	/* Dumpable again after the change of uid, as a service started as that user is. */
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 ? -errno : 0;
}

static int capable_user_parent(void)
{
	struct guarded_child c = {
		.uid = 65534,
		.gid = 65534,
		.mntns_fd = -1,
		.root_fd = -1,
		.deadline_usec = 300ULL * 1000ULL,
		.work = hang,
	};
	struct guarded_result g;
	struct alloc_options ao = {
		.uid = 65534, .gid = 65534, .root_fd = -1, .cgroup_fds = { -1, -1 }
	};
	struct alloc_probe pc = { 0 };
	char answer[1];
	int r = become_capable_user();

	if (r < 0) {
		fprintf(stderr, "cannot become uid %d with CAP_SETUID and CAP_SETGID: %s\n",
			OTHER_UID, strerror(-r));
		return 1;
	}
	guarded_against_nobody("parent uid 1000 with capabilities", OTHER_UID, false, false);
	guarded_against_nobody("worker, parent uid 1000 with capabilities", OTHER_UID, false, true);
	/* The pty it allocates is nobody's, not ours. */
	r = probe_allocation(&ao, &pc);
	CHECK_MSG(r == 0 && alloc_probe_succeeded(&pc),
		  "the allocation probe from uid 1000: %s, %s", strerror(r < 0 ? -r : 0),
		  strerror(pc.error));
	EXPECT_INT(pc.uid, 65534);
	EXPECT_INT(pc.slave.uid, 65534);
	EXPECT_INT(pc.slave.gid, 5);
	EXPECT_INT(pc.slave.mode, 0620);
	/* A child that never answers is killed at its deadline by a parent without CAP_KILL (a
	 * wait that never ended would time the test out). */
	r = guarded_child_run(&c, answer, &g);
	EXPECT_INT(r, -ECANCELED);
	/* The same of a worker. */
	worker_hang_killed("parent uid 1000 with capabilities");
	return test_failures ? 1 : 0;
}

/* In the guarded child: answer with what it is handed (8 bytes), or with nothing. */
static void mark(void *userdata, void *answer)
{
	if (userdata)
		memcpy(answer, userdata, 8);
}

/* In the guarded child: where its stack is (its frame: a sanitizer may keep locals elsewhere). */
static void where(void *userdata, void *answer)
{
	uintptr_t a = (uintptr_t)__builtin_frame_address(0);

	(void)userdata;
	memcpy(answer, &a, sizeof(a));
}

/* Whether address a is in one of our mappings. */
static bool mapped(uintptr_t a)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi;
	char line[512];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi;
	if (f)
		fclose(f);
	return found;
}

/* Runs one after another share the child's memory, and none answers with a former run's. */
static void runs_in_turn(void)
{
	struct guarded_child c = { .uid = 65534,
				   .gid = 65534,
				   .mntns_fd = -1,
				   .root_fd = -1,
				   .deadline_usec = 5ULL * 1000000ULL,
				   .work = mark,
				   .answer_size = sizeof(uintptr_t) };
	static const char zero[8];
	struct guarded_result g = { 0 };
	uintptr_t first = 0, second = 0;
	char answer[8];
	int r;

	c.userdata = (void *)"earlier";
	r = guarded_child_run(&c, answer, &g);
	CHECK_MSG(r == 0 && memcmp(answer, "earlier", 8) == 0, "a run answering: %d", r);
	/* Work that writes nothing: zeroes, not what the run before wrote in the same place. */
	c.userdata = NULL;
	memset(answer, 'x', sizeof(answer));
	r = guarded_child_run(&c, answer, &g);
	CHECK_MSG(r == 0 && memcmp(answer, zero, 8) == 0, "a run answering nothing: %d", r);
	/* One killed past its deadline has no answer, and the next one is whole. */
	c.work = hang;
	c.deadline_usec = 100000;
	r = guarded_child_run(&c, answer, &g);
	CHECK_MSG(r == -ECANCELED, "a hung run: %d, want -ECANCELED", r);
	c.work = mark;
	c.userdata = (void *)"after it";
	c.deadline_usec = 5ULL * 1000000ULL;
	r = guarded_child_run(&c, answer, &g);
	CHECK_MSG(r == 0 && memcmp(answer, "after it", 8) == 0, "the run after a hung one: %d", r);
	/* The child's stack stays mapped for the next run, which runs on it again. */
	c.work = where;
	r = guarded_child_run(&c, &first, &g);
	CHECK_MSG(r == 0 && first != 0 && mapped(first), "the stack is kept after a run: %d", r);
	r = guarded_child_run(&c, &second, &g);
	CHECK_MSG(r == 0 && second == first, "the next run's stack: %#lx, the last one's %#lx",
		  (unsigned long)second, (unsigned long)first);
}

static unsigned count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
	if (d)
		closedir(d);
	return n;
}

static void many_processes(void)
{
	struct alloc_options o = { .uid = 65534, .gid = 65534, .root_fd = -1 };
	struct alloc_probe p = { 0 };
	pid_t kids[1000];
	int n = 0, r;
	char buf[256];

	for (; n < (int)ELEMENTSOF(kids); n++) {
		kids[n] = fork();
		if (kids[n] < 0)
			break;
		if (kids[n] == 0) {
			pause();
			_exit(0);
		}
	}
	CHECK_MSG(n == (int)ELEMENTSOF(kids), "only %d sleepers started", n);
	r = probe_allocation(&o, &p);
	CHECK_MSG(r == 0 && alloc_probe_succeeded(&p), "with %u processes: %s", count_processes(),
		  r < 0 ? strerror(-r) : alloc_probe_describe(&p, buf, sizeof(buf)));
	printf("with %u processes: %s\n", count_processes(),
	       alloc_probe_describe(&p, buf, sizeof(buf)));
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
}

int main(void)
{
	struct stat before, after;
	int status = -1, r;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: needs root (mount namespaces, devpts mounts, other uids)\n");
		return EXIT_SKIP;
	}
	if (stat("/proc/self/ns/mnt", &before) < 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		printf("SKIP: no private mount namespace: %m\n");
		return EXIT_SKIP;
	}
	/* Only in a namespace of our own is /dev ours to replace. */
	if (stat("/proc/self/ns/mnt", &after) < 0 || after.st_ino == before.st_ino) {
		fprintf(stderr, "still in the original mount namespace: stopping\n");
		return 1;
	}
	if (mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") < 0 ||
	    mount("tmpfs", "/dev", "tmpfs", 0, "mode=755") < 0 ||
	    mknod("/dev/ptmx", S_IFCHR | 0666, makedev(5, 2)) < 0 || chmod("/dev/ptmx", 0666) < 0 ||
	    mkdir("/dev/pts", 0755) < 0 ||
	    mount("devpts", "/dev/pts", "devpts", 0, "newinstance,gid=5,mode=620") < 0) {
		fprintf(stderr, "cannot build the test's /dev: %m\n");
		return 1;
	}
	guarded_against_nobody("parent root", 0, true, false);
	guarded_against_nobody("worker, parent root", 0, true, true);
	worker_requests();
	worker_started_ahead();
	runs_in_turn();

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit((r = capable_user_parent(), fflush(stdout), r));
	CHECK_MSG(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
		  "as uid %d with capabilities: failed (status %d)", OTHER_UID, status);

	many_processes();
	return test_result("test-guarded-child");
}
