/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Repair: turn repairable findings into actions (docs/checks.md, "What repair may and may not do"),
 * re-check each action's precondition right before acting (the world may have
 * moved since the probe), act through file descriptors, and verify what an
 * unprivileged user now gets. Never unmounts, never touches a covered
 * instance, never follows a symlink it did not expect, never changes a slave
 * owned by root (but to give it to the non-root user whose session runs on it).
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "probe/allocation.h"

enum action_result {
	ACTION_PLANNED, /* --dry-run */
	ACTION_DONE,
	ACTION_REFUSED, /* precondition failed, or not repairable: nothing was changed */
	ACTION_FAILED,	/* acted, or tried to, and the outcome is wrong */
	/* acted; the verification child was interfered with (stopped, killed) on every attempt,
	 * so the outcome is neither claimed nor denied: the re-probe alone judges it */
	ACTION_INCONCLUSIVE,
	_ACTION_RESULT_MAX,
};

enum action_kind {
	ACTION_MANUAL,	    /* not repairable: the finding's remedy is for a person */
	ACTION_REMOUNT,	    /* devpts options: gid/mode and/or ptmxmode */
	ACTION_MKNOD,	    /* create /dev/ptmx, or /dev/tty (rdev says which) */
	ACTION_SYMLINK,	    /* create /dev/ptmx -> pts/ptmx */
	ACTION_CHMOD,	    /* /dev/ptmx, or /dev/tty (rdev), to 0666 */
	ACTION_SLAVE,	    /* one slave: group tty, the instance's mode (devpts_mode_wanted) */
	ACTION_SLAVE_OWNER, /* one root-owned slave: to the uid of its session */
};

struct repair_action {
	const struct finding *finding; /* what it repairs (owned by the caller's findings) */
	enum action_kind kind;
	enum action_result result;
	char *command; /* what a person would type; NULL for ACTION_MANUAL */
	char *detail;

	/* the world as probed, re-checked before acting */
	char *path; /* mountpoint (remount) or node path */
	unsigned mount_id;
	dev_t dev;
	ino_t ino;
	/* mknod, chmod: the device the node is (c 5:2 /dev/ptmx, c 5:0 /dev/tty) */
	dev_t rdev;
	struct devpts_fix
	    fix;     /* remount: what it fixes (tty gid and policy come from the options) */
	mode_t mode; /* slave: the mode it is given */
	/* slave: the owner and change time probed. A pty index (and so its inode number) may be
	 * reused by another user's new pty between plan and act; the new one differs in these. */
	uid_t uid;
	struct timespec ctime; /* zero: not known, not compared */
	/* slave owner: the session's uid it is given, and its gid (verification opens the slave
	 * by name as them) */
	uid_t owner;
	gid_t owner_gid;
};

/* Verification children started per action before it is reported inconclusive. */
#define VERIFY_ATTEMPTS 3

struct namespace_target;

struct repair_options {
	bool dry_run;
	char **only;	  /* check ids to repair; NULL = all */
	uid_t verify_uid; /* the verification child's effective uid (repair/verify.h) */
	gid_t verify_gid;
	bool pause_before_act; /* tests: wait for a line on stdin between plan and act */
	bool repairable_only;  /* no ACTION_MANUAL entries for the other findings (the daemon) */
	const struct check_policy *policy;
	gid_t tty_gid;
	/* A missing /dev/ptmx becomes a symlink to pts/ptmx when the devpts at /dev/pts lets
	 * everyone open its ptmx (ptmxmode=0666); a char node otherwise. */
	bool ptmx_symlink;
	/* repair --namespace: the process whose namespace was judged. Each action is taken only
	 * while it is alive and still in that mount namespace (namespace_target_recheck()),
	 * checked right before it; once not, it and every action after it are refused. */
	const struct namespace_target *target;
	/* repair --namespace: the cgroup.procs files of the namespace's own cgroups
	 * (probe/cgroup.h), which the verification child joins first, so that it meets the device
	 * rules users there meet; only when verify_join_cgroups. verify_cgroup_error: they could
	 * not be found (an errno; every verification is then inconclusive). */
	bool verify_join_cgroups;
	int verify_cgroup_fds[ALLOC_CGROUP_FDS];
	int verify_cgroup_error;
	/* repair --namespace: nothing is created (a missing /dev/ptmx or /dev/tty, a symlink) in a
	 * directory that this identity, the target's owner (namespace_target_owner()), may not
	 * create files in: chroot(2) needs only search permission, so a user who may chroot can
	 * stand in a directory of root's that only root may write. Asked of the kernel with those
	 * file system ids, no supplementary group and no capability. Root of the initial user
	 * namespace is no limit. */
	bool check_owner;
	uid_t owner_uid;
	gid_t owner_gid;
};

struct repair_plan {
	struct repair_action *actions;
	size_t n_actions, allocated;
};

int repair_plan(const struct analysis *a, const struct findings *f, const struct repair_options *o,
		struct repair_plan *ret);
/* Act on every planned action in order; results and details are filled in. */
int repair_act(struct repair_plan *p, const struct repair_options *o);
/* After a re-probe: an action marked done whose finding is still there has failed. */
void repair_confirm(struct repair_plan *p, const struct findings *after);
void repair_plan_done(struct repair_plan *p);

const char *action_result_to_string(enum action_result r);
json_object *repair_plan_to_json(const struct repair_plan *p);

struct host_serving;

/* repair_act() for the namespace of a namespace audit (repair --namespace): from a child that
 * has entered ns (probe/namespace.h: setns to its mount namespace, chroot to its root); the
 * outcomes come back to p over a pipe. The plan is in the namespace's ids (its snapshot's);
 * they are turned into the initial user namespace's for acting. An action whose object is the
 * host's own (a devpts instance mounted on the host, a node or directory that is the same inode
 * on the host: a /dev bound in) is refused before the child starts: nothing of the host, or of
 * a namespace not named, is changed. */
int repair_act_in(struct repair_plan *p, const struct repair_options *o,
		  const struct namespace_target *ns);
