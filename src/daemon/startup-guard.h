/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The deadline of the daemon's start. The unit orders ptsguard before logind, getty and ssh, so
 * a first audit that waits on a hung NFS server or FUSE daemon (a lookup no statx() flag can
 * avoid) or on a slow disk would hold back logins until the start timeout fails the unit. The
 * guard is a thread that, once STARTUP_DEADLINE_USEC have passed without the first audit
 * ending, sends READY=1 with a STATUS= saying the service is degraded and where the audit
 * waits, then keeps the service watchdog fed (WATCHDOG=1 at half its interval) until the audit
 * ends. It touches nothing of the daemon: only sd_notify() and its own state.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define STARTUP_DEADLINE_USEC (10ULL * 1000000ULL)

struct startup_guard {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	bool running;
	bool done;
	bool degraded; /* READY=1 went out before the first audit ended */
	pid_t tid;     /* the thread that runs the audit, for its wchan */
	uint64_t start, deadline_usec;
};

/* Start the guard (a deadline of deadline_usec from now). On failure the daemon runs without
 * it, as before: a negative errno. */
int startup_guard_start(struct startup_guard *g, uint64_t deadline_usec);
/* The first audit ended: stop the thread. True when READY=1 went out before (degraded).
 * Does nothing on a guard that is not running. */
bool startup_guard_stop(struct startup_guard *g);
