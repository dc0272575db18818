/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an unprivileged user gets from /dev/ptmx: a child takes that user's
 * effective uid and gid (no supplementary groups, no capabilities), opens the
 * multiplexer, unlocks the pty, opens its slave through TIOCGPTPEER and
 * reports the slave's owner, group and mode. Repair uses it to prove a fix
 * (action_verify_pty(), repair/action.h);
 * the allocation probe (probe/allocation.h) runs in a guarded worker, the
 * same kind of process serving many requests.
 *
 * The child is a guarded one (util/guarded-child.h): its real and saved uid stay its parent's,
 * so processes of the user cannot signal or trace it; not dumpable, with a deadline; one that
 * is stopped or killed is reported as interfered with (-ECANCELED), never as an outcome.
 *
 * Returns negative errno and does not log.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "util/guarded-child.h"

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

/* Allocate a pty through ptmx as uid/gid. Returns 0 when the child answered (its outcome is in
 * *ret); -ECANCELED when it was stopped past the deadline, killed, or died without answering
 * (the caller may try again); another negative errno when it could not be started. */
int pty_check_as(const char *ptmx, uid_t uid, gid_t gid, struct pty_check *ret);

struct tty_check {
	int error;	  /* 0, or the errno of the failed step */
	const char *step; /* "open", "unlock", "index", "slave", "setsid", "ctty", "open_tty" */
	uid_t as_uid;
	gid_t as_gid;
};

struct slave_open {
	int error; /* 0, or the errno of the open */
	uid_t as_uid;
	gid_t as_gid;
};

/* As uid/gid, open the slave at path by its name for reading and writing (no controlling
 * terminal taken): what gpg's pinentry or screen do with the user's terminal. Returns as
 * pty_check_as(). */
int slave_open_as(const char *path, uid_t uid, gid_t gid, struct slave_open *ret);

/* As uid/gid, in a session of its own whose controlling terminal is a pty allocated through
 * ptmx, open tty (the /dev/tty node) for reading and writing: what ssh or sudo do to ask for a
 * password. Returns as pty_check_as(). */
int tty_check_as(const char *ptmx, const char *tty, uid_t uid, gid_t gid, struct tty_check *ret);
