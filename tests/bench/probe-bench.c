/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-bench: what one allocation probe costs (a benchmark, not a test: it asserts nothing).
 *
 *   build/tests/bench/probe-bench [--runs N] [--processes N]
 *
 * As root, in a private mount namespace of its own with a healthy /dev (tmpfs, ptmx 5:2, devpts
 * gid=5,mode=620), it times probe_allocation() as nobody (a worker of its own started, asked
 * once and stopped: what a lone audit pays), and one probe on a worker kept running (what each
 * namespace of --all-namespaces pays), --runs times (default 200): median, p90 and max in ms.
 * --processes N starts N sleeping children first (default 0) and the figures are printed for the
 * count of processes seen in /proc: the probe looks nothing up per process, so they should not
 * move. For comparison it also times, for a child that exits at once, a plain fork() and waitpid()
 * (what the probe's child was until it became a clone) and a clone(CLONE_VM) on a stack of its own,
 * waited for by polling its pidfd (the floor of the guarded child).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe/allocation.h"
#include "util/clock.h"
#include "util/group.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static unsigned count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
	closedir(d);
	return n;
}

static int exit_at_once(void *userdata)
{
	(void)userdata;
	return 0;
}

static void report(const char *what, double *ms, int runs)
{
	qsort(ms, (size_t)runs, sizeof(double), cmp_double);
	printf("%-30s median %7.3f ms   p90 %7.3f ms   max %7.3f ms\n", what, ms[runs / 2],
	       ms[(runs * 9) / 10], ms[runs - 1]);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "processes", required_argument, NULL, 'p' },
		{},
	};
	struct alloc_options o = { .root_fd = -1 };
	int runs = 200, extra = 0, c, failed = 0;
	double *ms, *worker_ms, *fork_ms, *clone_ms, floor_median;
	struct guarded_worker *w = NULL;
	size_t stack_size = 64 * 1024;
	char *stack;
	pid_t *kids;

	while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
		if (c == 'r')
			runs = atoi(optarg);
		else if (c == 'p')
			extra = atoi(optarg);
		else
			return 2;
	}
	if (runs < 1 || extra < 0)
		return 2;
	if (geteuid() != 0) {
		fprintf(stderr, "probe-bench: needs root\n");
		return 1;
	}
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/dev", "tmpfs", 0, "mode=755") < 0 ||
	    mknod("/dev/ptmx", S_IFCHR | 0666, makedev(5, 2)) < 0 || chmod("/dev/ptmx", 0666) < 0 ||
	    mkdir("/dev/pts", 0755) < 0 ||
	    mount("devpts", "/dev/pts", "devpts", 0, "newinstance,gid=5,mode=620") < 0) {
		fprintf(stderr, "probe-bench: cannot build a private /dev: %m\n");
		return 1;
	}
	kids = calloc((size_t)extra + 1, sizeof(pid_t));
	ms = calloc((size_t)runs, sizeof(double));
	worker_ms = calloc((size_t)runs, sizeof(double));
	fork_ms = calloc((size_t)runs, sizeof(double));
	clone_ms = calloc((size_t)runs, sizeof(double));
	stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (!kids || !ms || !worker_ms || guarded_worker_new(&w) < 0 || !fork_ms || !clone_ms ||
	    stack == MAP_FAILED)
		return 1;
	for (int i = 0; i < extra; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
	}
	user_lookup(PROBE_USER_DEFAULT, &o.uid, &o.gid);

	for (int i = 0; i < runs; i++) {
		struct alloc_probe p;
		uint64_t t0 = now_usec(CLOCK_MONOTONIC);
		pid_t pid;
		int r = probe_allocation(&o, &p);

		ms[i] = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1000.0;
		failed += r < 0 || !alloc_probe_succeeded(&p);

		t0 = now_usec(CLOCK_MONOTONIC);
		r = probe_allocation_collect(w, &o, probe_allocation_submit(w, &o), &p);
		worker_ms[i] = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1000.0;
		failed += r < 0 || !alloc_probe_succeeded(&p);

		t0 = now_usec(CLOCK_MONOTONIC);
		pid = fork();
		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
		fork_ms[i] = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1000.0;

		t0 = now_usec(CLOCK_MONOTONIC);
		{
			int pidfd = -1;

			pid = clone(exit_at_once, stack + stack_size,
				    CLONE_VM | CLONE_PIDFD | SIGCHLD, NULL, &pidfd);
			if (pid > 0) {
				(void)poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1,
					   1000);
				waitpid(pid, NULL, 0);
				close(pidfd);
			}
		}
		clone_ms[i] = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1000.0;
	}
	printf("probe-bench: %d probes as uid %u, %u processes in /proc%s\n", runs, (unsigned)o.uid,
	       count_processes(), failed ? " (SOME PROBES DID NOT GET A WORKING PTY)" : "");
	report("allocation probe", ms, runs);
	report("probe on a running worker", worker_ms, runs);
	report("fork + exit + wait", fork_ms, runs);
	report("clone(CLONE_VM) + exit + wait", clone_ms, runs);
	floor_median = fork_ms[runs / 2];
	printf("probe / fork: %.2fx\n", floor_median > 0 ? ms[runs / 2] / floor_median : 0.0);
	floor_median = clone_ms[runs / 2];
	printf("probe / clone(CLONE_VM): %.1fx\n",
	       floor_median > 0 ? ms[runs / 2] / floor_median : 0.0);

	guarded_worker_free(w);
	for (int i = 0; i < extra; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return failed ? 1 : 0;
}
