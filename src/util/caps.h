/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The process's own capabilities, for the decisions that used to ask "am I root?".
 * ptsguard.service runs the daemon as its own user (User=ptsguard) with ambient capabilities:
 * being allowed to do something is then a capability, not uid 0.
 *
 * The root file system ids: /dev belongs to root, and a process that is not root may create
 * nothing there without CAP_DAC_OVERRIDE, which ptsguard is never given. Repair, which holds
 * CAP_SETUID and CAP_SETGID for its verification child anyway, takes root's file system uid
 * and gid for the one call that creates /dev/ptmx, so the node is root's from the start, and
 * returns to its own ids (and its effective set: the kernel empties the file capabilities of
 * the effective set when the file system uid leaves 0) right after. No logging here.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define CAP_BIT(c) (UINT64_C(1) << (c))

/* The effective (or permitted) set, bit n = capability n; 0 when it cannot be read. */
uint64_t caps_effective(void);
uint64_t caps_permitted(void);

/* Effective CAP_SETUID and CAP_SETGID (root has them unless they were taken away): may run a
 * child as another user. */
bool caps_may_change_ids(void);

#define FSIDS_GROUPS_MAX 64

struct fsids_saved {
	bool changed;
	uid_t uid;
	gid_t gid;
	/* whether the file system uid and gid were set to others (an id that stays, as root's
	 * going to a namespace root's 0, needs neither a check nor a way back) */
	bool uid_changed, gid_changed;
	/* the sets as they were: only the effective set is changed, and given back */
	uint32_t effective[2], permitted[2], inheritable[2];
	/* fsids_become_user(): the supplementary groups it emptied */
	bool groups_changed;
	int n_groups;
	gid_t groups[FSIDS_GROUPS_MAX];
};

/* Take file system uid and gid 0 unless they are already 0 (root). 0 or -errno (-EPERM
 * without CAP_SETUID and CAP_SETGID); on failure nothing is changed. */
int fsids_become_root(struct fsids_saved *saved);
/* The other way, for opening a file with the rights of another identity and none of ours: file
 * system uid and gid those given, no supplementary group, an empty effective set (permitted
 * kept), in the calling thread only (the raw system calls, not glibc's, which change every
 * thread). What open() then allows is what that identity may open: no CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH or CAP_SYS_PTRACE of ours lends it anything. 0 or -errno (-EPERM without
 * CAP_SETUID and CAP_SETGID, -E2BIG with more than FSIDS_GROUPS_MAX groups); on failure
 * nothing is changed. */
int fsids_become_user(uid_t uid, gid_t gid, struct fsids_saved *saved);
/* Back to the ids, groups and effective set fsids_become_root() or fsids_become_user() found;
 * a process that cannot get its own identity back aborts rather than go on as another. */
void fsids_restore(const struct fsids_saved *saved);
