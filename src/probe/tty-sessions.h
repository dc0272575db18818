/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sessions on slaves owned by root (snapshot.h, struct tty_session): what
 * pty-owner-not-session-user judges. Nothing is read unless a slave of the serving instance,
 * as the second pass listed them, is owned by root (most hosts have none, or root's own few).
 * Then /proc/PID/stat of every process of the namespace (its mount namespace's, for another
 * one) gives each one's session and controlling terminal (tty_nr); a terminal's device number
 * names a pty index but not its instance, so a session counts only when one of its processes
 * has that very slave (the instance's device, the index) open on a standard descriptor. For a
 * session not of root, the process holding the pty's master is looked for among the same
 * processes' descriptors, within a deadline.
 */
#pragma once

#include "analysis/analysis.h"
#include "snapshot/snapshot.h"

struct namespace_target;

/* The master search's budget, per audit. */
#define TTY_SESSIONS_HOLDER_USEC (2 * 1000000ULL)

/* Into s->tty_sessions. 0 (also when /proc cannot be read: nothing to judge), or -ENOMEM. */
int probe_tty_sessions(const struct namespace_target *ns, struct snapshot *s,
		       const struct analysis *a);
