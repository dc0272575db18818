/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an unprivileged user gets from /dev/ptmx: a forked child drops its
 * privileges (no supplementary groups), opens the multiplexer, unlocks the
 * pty, opens its slave through TIOCGPTPEER and reports the slave's owner,
 * group and mode. Repair uses it to prove a fix; the allocation probe is
 * meant to build on it.
 *
 * The child cannot be interfered with by other unprivileged processes: its
 * real and saved uid are a transient uid from VERIFY_UID_MIN..VERIFY_UID_MAX
 * that no process had (as real, effective or saved uid, read from
 * /proc/PID/status) and systemd has not handed to a DynamicUser= service, so
 * no unprivileged process may signal or trace it (both need the sender's uid
 * to be the target's real or saved one), and it is not dumpable. Its effective uid and gid are the
 * same transient ids, or the user asked for. Every wait on it has a
 * deadline (a pidfd where the kernel has one): a child that is stopped past
 * the deadline is killed, and one that dies without answering is reported
 * as interfered with (-ECANCELED), never as an outcome.
 *
 * Returns negative errno and does not log.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* The range systemd uses for DynamicUser= (61184..65519): ids no account is meant to have.
 * Each verification picks a free one from a random start. */
#define VERIFY_UID_MIN 61184u
#define VERIFY_UID_MAX 65519u

/* No user: run as the transient ids themselves. */
#define VERIFY_TRANSIENT ((uid_t)-1)

/* How long one verification child may take from fork to exit. */
#define VERIFY_DEADLINE_USEC (3ULL * 1000000ULL)

struct pty_check {
	int error;	  /* 0, or the errno of the failed step */
	const char *step; /* "open", "unlock", "peer", "fstat" when error != 0 */
	uid_t as_uid;	  /* the effective uid the child allocated as */
	gid_t as_gid;
	unsigned index;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Allocate a pty through ptmx as uid/gid (VERIFY_TRANSIENT for both: a transient identity).
 * Returns 0 when the child answered (its outcome is in *ret); -ECANCELED when it was stopped
 * past the deadline, killed, or died without answering (the caller may try again); -EBUSY when
 * every transient uid is in use; another negative errno when it could not be started. */
int pty_check_as(const char *ptmx, uid_t uid, gid_t gid, struct pty_check *ret);
