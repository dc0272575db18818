/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the guarded child (guarded-child.c) and the guarded worker (guarded-worker.c) share: the
 * steps of becoming guarded, and becoming so. Not for use outside those two files.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

enum {
	SETUP_NONE,
	SETUP_NAMESPACE,
	SETUP_ROOT,
	SETUP_PRIVILEGES,
	SETUP_CGROUP,
};

/* The name of a SETUP_ step for guarded_result.setup_step ("namespace", ...; NULL for none). */
const char *guard_setup_step_name(int step);

/* Drop privileges to uid/gid (keeping the caller's real uid, so that user cannot signal us), no
 * capabilities, no new privileges, not dumpable, killed with the parent, which must still be
 * parent. SETUP_NONE, or a SETUP_ step with errno set. */
int guard_process(uid_t uid, gid_t gid, pid_t parent);

/* Kill a guarded process past its deadline; one that does not die within a moment (waiting
 * uninterruptibly on a FUSE daemon that will not answer) is left behind, its pidfd kept and
 * reaped by a later guarded_child_run(): true, and *pidfd taken. false: dead, to be reaped by
 * the caller. */
bool guard_kill_or_leave(pid_t pid, int *pidfd);
