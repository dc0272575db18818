/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an unprivileged user gets from /dev/ptmx: a forked child drops to the
 * given uid and gid (no supplementary groups), opens the multiplexer,
 * unlocks the pty, opens its slave through TIOCGPTPEER and reports the
 * slave's owner, group and mode. Repair uses it to prove a fix.
 */
#pragma once

#include <sys/types.h>

struct pty_check {
	int error;	  /* 0, or the errno of the failed step */
	const char *step; /* "open", "unlock", "peer", "fstat" when error != 0 */
	unsigned index;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Returns 0 when the child ran (its outcome is in *ret), or a negative errno. */
int pty_check_as(const char *ptmx, uid_t uid, gid_t gid, struct pty_check *ret);
