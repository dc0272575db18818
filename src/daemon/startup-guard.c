/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon/startup-guard.h"
#include "util/clock.h"
#include "util/string-util.h"
#include "util/systemd-dl.h"

static struct timespec monotonic_at(uint64_t usec)
{
	return (struct timespec){ .tv_sec = (time_t)(usec / USEC_PER_SEC),
				  .tv_nsec = (long)(usec % USEC_PER_SEC * 1000) };
}

/* Where the audit waits in the kernel (/proc/self/task/TID/wchan: "request_wait_answer" for a
 * FUSE daemon that does not answer, an rpc_* wait for NFS), or "" when it is not waiting. */
static void audit_wchan(pid_t tid, char *buf, size_t size)
{
	char path[64];
	int fd;
	ssize_t n;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	if (streq(buf, "0"))
		buf[0] = 0;
	for (char *p = buf; *p; p++) /* a kernel symbol: keep STATUS= one plain line */
		if (*p < 0x21 || *p > 0x7e)
			*p = '_';
}

static void *guard_run(void *userdata)
{
	struct startup_guard *g = userdata;
	uint64_t watchdog = 0, next = g->start + g->deadline_usec;

	if (sd_watchdog_enabled(false, &watchdog) <= 0)
		watchdog = 0;
	pthread_mutex_lock(&g->lock);
	while (!g->done) {
		struct timespec ts = monotonic_at(next);
		char wchan[128];

		if (g->degraded && watchdog == 0) {
			pthread_cond_wait(&g->cond, &g->lock);
			continue;
		}
		if (pthread_cond_timedwait(&g->cond, &g->lock, &ts) != ETIMEDOUT || g->done)
			continue;
		if (!g->degraded) {
			g->degraded = true;
			audit_wchan(g->tid, wchan, sizeof(wchan));
			sd_notifyf(
			    false,
			    "READY=1\nSTATUS=Degraded: the first audit has not ended after %llu s "
			    "(waiting in the kernel%s%s); ready without it, its result follows",
			    (unsigned long long)(g->deadline_usec / USEC_PER_SEC),
			    wchan[0] ? " at " : "", wchan);
		} else
			sd_notify(false, "WATCHDOG=1");
		next = now_usec(CLOCK_MONOTONIC) + watchdog / 2;
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int startup_guard_start(struct startup_guard *g, uint64_t deadline_usec)
{
	pthread_condattr_t attr;
	sigset_t all, old;
	int r;

	*g = (struct startup_guard){ .tid = (pid_t)syscall(SYS_gettid),
				     .start = now_usec(CLOCK_MONOTONIC),
				     .deadline_usec = deadline_usec };
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &attr);
	pthread_condattr_destroy(&attr);
	/* No signal is ever for this thread: the daemon's are read from a signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&g->thread, NULL, guard_run, g);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return -r;
	g->running = true;
	return 0;
}

bool startup_guard_stop(struct startup_guard *g)
{
	bool degraded;

	if (!g->running)
		return false;
	pthread_mutex_lock(&g->lock);
	g->done = true;
	degraded = g->degraded;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	g->running = false;
	return degraded;
}
