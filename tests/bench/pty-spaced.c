/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pty-spaced: what the ground truth of one container costs the kernel when containers come far
 * apart, as the daemon's audits of them do (a benchmark's floor, not a test).
 *
 *   build/tests/bench/pty-spaced [--count N] [--gap-ms MS] [--user NAME]
 *
 * As root it first takes an unprivileged user's ids (default nobody), as the allocation probe
 * does. Then, back to back and again with MS milliseconds of sleep before each (default 1000),
 * N times each (default 8), interleaved:
 *
 *   pty        one pty allocated in this process: /dev/ptmx opened, unlocked, its slave opened
 *              with TIOCGPTPEER, both closed;
 *   clone      a child sharing our memory (clone(CLONE_VM)) that exits at once, waited for;
 *   clone+pty  such a child allocating one pty, waited for: what the daemon's probe of a
 *              container does at the least (it runs in a child of its own, which joins the
 *              container's cgroups).
 *
 * Printed: each step's CPU (user and system, children included, from getrusage()), median and
 * range, both ways, and their ratio. tests/bench/runtimes-bench runs it beside the daemon. A
 * VM that shadows page tables pays for touching again, after a pause, what a step touched the
 * last time; a machine idle between steps may run them slower clocked: both are this machine's,
 * not ptsguard's, and fall on the daemon's audits of containers seconds apart alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

enum { STEP_PTY, STEP_CLONE, STEP_CLONE_PTY, N_STEPS };
static const char *const step_names[N_STEPS] = { "pty", "clone", "clone+pty" };

static char child_stack[1 << 16] __attribute__((aligned(16)));

static int allocate(void)
{
	int ptmx = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC), pts, unlock = 0;

	if (ptmx < 0)
		return -1;
	pts =
	    ioctl(ptmx, TIOCSPTLCK, &unlock) < 0 ? -1 : ioctl(ptmx, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	if (pts >= 0)
		close(pts);
	close(ptmx);
	return pts >= 0 ? 0 : -1;
}

static int child_nothing(void *arg)
{
	(void)arg;
	return 0;
}

static int child_pty(void *arg)
{
	(void)arg;
	return allocate() == 0 ? 0 : 1;
}

static double cpu_ms(void)
{
	struct rusage self, children;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
			children.ru_stime.tv_sec) *
		   1e3 +
	       (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec +
			children.ru_stime.tv_usec) /
		   1e3;
}

/* One step; its CPU in ms, or a negative value when it failed. */
static double run_step(int step)
{
	double t0 = cpu_ms();
	int status = 0, ok;
	pid_t pid;

	if (step == STEP_PTY)
		ok = allocate() == 0;
	else {
		pid = clone(step == STEP_CLONE ? child_nothing : child_pty,
			    child_stack + sizeof(child_stack), CLONE_VM | SIGCHLD, NULL);
		ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		     WEXITSTATUS(status) == 0;
	}
	return ok ? cpu_ms() - t0 : -1;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), compare_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int drop_to(const char *user)
{
	struct passwd *pw = getpwnam(user);

	if (!pw) {
		fprintf(stderr, "pty-spaced: no user %s\n", user);
		return -1;
	}
	if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0) {
		fprintf(stderr, "pty-spaced: cannot become %s: %s\n", user, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *user = "nobody";
	int count = 8, gap_ms = 1000;
	double *ms[2][N_STEPS];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gap-ms") && i + 1 < argc)
			gap_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--user") && i + 1 < argc)
			user = argv[++i];
		else {
			fprintf(stderr,
				"usage: pty-spaced [--count N] [--gap-ms MS] [--user NAME]\n");
			return 2;
		}
	}
	if (count < 1 || gap_ms < 0) {
		fprintf(stderr, "pty-spaced: --count must be at least 1, --gap-ms not negative\n");
		return 2;
	}
	if (geteuid() == 0 && drop_to(user) < 0)
		return 1;
	for (int spaced = 0; spaced < 2; spaced++)
		for (int s = 0; s < N_STEPS; s++)
			if (!(ms[spaced][s] = calloc((size_t)count, sizeof(double))))
				return 1;
	/* One untimed round first: the first allocation of a process also faults in its code. */
	for (int s = 0; s < N_STEPS; s++)
		(void)run_step(s);
	for (int spaced = 0; spaced < 2; spaced++)
		for (int i = 0; i < count; i++)
			for (int s = 0; s < N_STEPS; s++) {
				struct timespec gap = { gap_ms / 1000,
							(long)(gap_ms % 1000) * 1000000 };

				if (spaced)
					nanosleep(&gap, NULL);
				ms[spaced][s][i] = run_step(s);
				if (ms[spaced][s][i] < 0) {
					fprintf(stderr, "pty-spaced: %s failed: %s\n",
						step_names[s], strerror(errno));
					return 1;
				}
			}
	printf("| step, as %s | back to back: CPU ms, median (range) | %d ms apart | ratio |\n"
	       "|---|---:|---:|---:|\n",
	       user, gap_ms);
	for (int s = 0; s < N_STEPS; s++) {
		double lo[2], hi[2], med[2];

		for (int spaced = 0; spaced < 2; spaced++) {
			lo[spaced] = hi[spaced] = ms[spaced][s][0];
			for (int i = 1; i < count; i++) {
				if (ms[spaced][s][i] < lo[spaced])
					lo[spaced] = ms[spaced][s][i];
				if (ms[spaced][s][i] > hi[spaced])
					hi[spaced] = ms[spaced][s][i];
			}
			med[spaced] = median(ms[spaced][s], count);
		}
		printf("| %s | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.1fx |\n", step_names[s],
		       med[0], lo[0], hi[0], med[1], lo[1], hi[1],
		       med[0] > 0 ? med[1] / med[0] : 0);
	}
	return 0;
}
