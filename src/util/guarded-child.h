/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A short piece of work done in a forked child as an unprivileged user, safe from other
 * processes of that user: what repair's verification and the allocation probe run in.
 *
 * The child's real and saved uid are a transient uid from GUARD_UID_MIN..GUARD_UID_MAX that no
 * process had (as real, effective or saved uid, read from /proc/PID/status) and systemd has not
 * handed to a DynamicUser= service, so no unprivileged process may signal or trace it (both need
 * the sender's uid to be the target's real or saved one), and it is not dumpable. Its effective
 * uid and gid are the same transient ids, or the user asked for, with no supplementary groups.
 * Before dropping its privileges it may enter a mount namespace and a root (both as file
 * descriptors), and it keeps no descriptor of its parent but the pipe of its answer. Every wait
 * on it has a deadline (a pidfd where the kernel has one): a child that is stopped past the
 * deadline is killed, and one that dies without answering is reported as interfered with
 * (-ECANCELED), never as an outcome. The child exits after answering, so whatever it opened
 * is closed.
 *
 * Returns negative errno and does not log.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The range systemd uses for DynamicUser= (61184..65519): ids no account is meant to have.
 * Each child picks a free one from a random start. */
#define GUARD_UID_MIN 61184u
#define GUARD_UID_MAX 65519u

/* No user: run as the transient ids themselves. */
#define GUARD_TRANSIENT ((uid_t)-1)

/* The most an answer may hold: one write to a pipe of at most PIPE_BUF bytes is atomic. */
#define GUARD_ANSWER_MAX 1024

struct guarded_child {
	uid_t uid; /* the effective ids the work runs as; GUARD_TRANSIENT for the transient ones */
	gid_t gid;
	int mntns_fd; /* >= 0: setns(CLONE_NEWNS) into it first; -1: stay */
	int root_fd;  /* >= 0: then make it the root and the working directory; -1: stay */
	uint64_t deadline_usec; /* from fork to exit */
	/* In the child, privileges dropped: fill answer (answer_size bytes, zeroed before). */
	void (*work)(void *userdata, void *answer);
	void *userdata;
	size_t answer_size; /* at most GUARD_ANSWER_MAX */
};

struct guarded_result {
	uid_t as_uid; /* the effective ids the work ran (or was to run) as */
	gid_t as_gid;
	/* 0; or the errno with which the child could not start its work (the answer is then
	 * zeroes), and what it was doing: "namespace", "root" or "privileges". */
	int setup_error;
	const char *setup_step;
};

/* Run c->work in a guarded child. Returns 0 when the child answered (answer filled, or
 * ret->setup_error set); -ECANCELED when it was stopped past the deadline, killed, or died
 * without answering (the caller may try again); -EBUSY when every transient uid is in use;
 * another negative errno when it could not be started. */
int guarded_child_run(const struct guarded_child *c, void *answer, struct guarded_result *ret);
