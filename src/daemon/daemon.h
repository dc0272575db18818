/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon: the event loop and its scheduling. A struct daemon owns the
 * sd-event loop and every source in it: the mount table's poll and its
 * backend (daemon/mount-source.h), the udev monitor, the inotify watches on
 * /, /dev and /dev/pts (daemon/watches.h), the audit, holder and retry
 * timers, and the signals. Each burst of events becomes one audit (the
 * pipeline: probe -> checks, ptmx-replaced against its baseline among them
 * -> Ignore=), whose transitions from the previous audit are journaled; then
 * the repair policy is applied, and the state file, the Prometheus textfile
 * and STATUS= are brought up to date (daemon/host-audit.h). When and
 * whether: daemon/policy.h, which decides and does nothing.
 * What each step does lives in its own module (report/transitions.h,
 * report/outputs.h, daemon/holder-cache.h, checks/ptmx-replaced.h,
 * repair/session.h); its repair policy (which findings Policy=safe repairs,
 * daemon/policy.h) is the daemon's own.
 */
#pragma once

#include "util/macro.h"

struct daemon;

struct daemon_options {
	const char *config_path; /* NULL: the standard locations */
	bool no_probe;		 /* no allocation probe, whatever [Probe] Enabled= says */
	const char *user;	 /* NULL, or become this user as the unit would (privileges.h) */
};

/* Load the configuration and set up the loop and its sources. Logs what went wrong. */
int daemon_new(const struct daemon_options *opts, struct daemon **ret);
/* Audit once, tell the service manager READY=1, then loop until SIGTERM or SIGINT. */
int daemon_run(struct daemon *d);
struct daemon *daemon_free(struct daemon *d);
DEFINE_POINTER_CLEANUP(struct daemon, daemon_free)
