/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the four files of the namespace follower (daemon/nsfollow.h) share, and nothing for use
 * outside them:
 *   - nsfollow.c: the follower itself, the walk of /proc that finds namespaces, and the API;
 *   - nsfollow-audit.c: the passes of audits of the namespaces that changed, each namespace's
 *     audit and its transitions journaled;
 *   - nsfollow-watch.c: one namespace followed through one of its processes (its exit, its
 *     mount table, its /dev), how its journal entries name it, and letting go of it;
 *   - nsfollow-timers.c: when the next pass of audits and the next walk run.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "checks/checks.h"
#include "daemon/holder-cache.h"
#include "daemon/nsfollow.h"
#include "daemon/policy.h"
#include "daemon/timer.h"
#include "probe/mntns.h"
#include "report/report.h"
#include "util/systemd-dl.h"

struct followed_ns {
	struct ns_follower *owner;
	uint64_t ino;
	/* The root its processes share; chroot: not the namespace's own (a chroot inside it,
	 * followed apart, probe/mntns.h). */
	dev_t root_dev;
	ino_t root_ino;
	bool chroot;
	char *root_field; /* "PTSGUARD_ROOT=<path>", from its first audit; NULL: none */
	pid_t pid;	  /* 0: its process exited, and no other of it is followed yet */
	unsigned pids_total;
	pid_t *pids; /* its processes at the last walk: where its holders are looked for */
	pid_t candidates[MNTNS_CANDIDATES]; /* of those, the ones it may be followed through */
	unsigned n_candidates;
	uint64_t ns_id; /* the kernel's id of the namespace (0: unknown): is it gone? */
	int pidfd, mountinfo_fd, dev_wd;
	sd_event_source *exit_source, *mount_source;
	char label[CONTAINER_LABEL_MAX]; /* "" when no container is known */
	bool labelled;			 /* its container looked for (at its first audit) */
	char mntns_field[48], container_field[CONTAINER_LABEL_MAX + 32];
	struct findings findings; /* of its last audit */
	uint64_t found;		  /* CLOCK_MONOTONIC */
	bool dirty, seen;
	bool unwatchable; /* there, but no descriptor could be had to follow it */
	/* Its process was in our user namespace when it was found: the namespace was made by
	 * one privileged there (a runtime, a service), not by any user in a user namespace. */
	bool privileged;
	/* Its holder search, in slices (daemon/holder-cache.h); holders_partial: the last audit
	 * left it under way, so the namespace is audited again to go on with it. */
	struct holder_cache holders;
	bool holders_partial;
};

struct ns_follower {
	sd_event *event;
	const struct config *config;
	ns_transition_fn on_transition;
	void *userdata;
	sd_event_source *scan_timer, *audit_timer, *inotify_source;
	int inotify_fd, proc_fd;
	struct followed_ns **items;
	size_t n, allocated;
	struct schedule passes;
	uint64_t last_scan;
	uint64_t scan_due;	  /* the next regular walk (CLOCK_MONOTONIC) */
	size_t max_followed;	  /* FOLLOWED_MAX, or less when the descriptor limit says so */
	size_t next_audit;	  /* where the next pass starts: a pass cut short goes on there */
	bool over_limit;	  /* the last walk left namespaces unfollowed (said once) */
	struct stat own_userns;	  /* /proc/self/ns/user (st_ino 0: unknown) */
	struct host_serving host; /* the host's serving instance, from its last audit */
	struct ns_follower_stats stats;
};

/* Each file calls only those listed after it: nsfollow.c all three, nsfollow-audit.c the
 * two below it, nsfollow-watch.c the timers; none calls back up. */

/* nsfollow-audit.c */
/* A pass of audits, of the namespaces marked dirty. */
int follower_on_audit_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* nsfollow-watch.c */
/* Follow x through pid: its exit, its mount table, its /dev. 0, or -errno (-ESRCH: pid is gone
 * or no longer in x's namespace and root), x then followed through nothing (x->pid 0). */
int followed_watch(struct ns_follower *f, struct followed_ns *x, pid_t pid);
/* Stop following x through its process: x->pid 0, its descriptors and watches released. */
void followed_unwatch(struct followed_ns *x);
/* x unwatched and freed; it must be out of f->items already. */
void followed_free(struct followed_ns *x);
/* The inotify descriptor of every namespace's /dev became readable. */
int follower_on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata);
/* Its journal fields: PTSGUARD_MNTNS=, then PTSGUARD_CONTAINER= and PTSGUARD_ROOT= when it
 * has them; fields has room for four. */
const char *const *followed_fields(const struct followed_ns *x, const char *fields[4]);
/* How a person is told which it is: "mount namespace N", ", root PATH" for a chroot in it
 * (the path as the kernel gives it: journal.c escapes the whole context for MESSAGE=). */
void followed_name(const struct followed_ns *x, char *buf, size_t size);
/* Let go of f->items[i] and free it. gone: the namespace is gone, and its findings with it
 * (said once when it had any); else it is there but not followed (quietly: found again by a
 * later walk). */
void follower_forget_at(struct ns_follower *f, size_t i, bool gone);
/* x is gone: follower_forget_at() wherever it is in the list. */
void follower_forget(struct ns_follower *f, struct followed_ns *x);

/* nsfollow-timers.c */
/* The next pass of audits: after the coalescing window, and no sooner than the CPU share
 * allows after the last pass (daemon/policy.h). */
void follower_schedule_pass(struct ns_follower *f);
/* A walk of /proc, delay from now. */
void follower_schedule_scan(struct ns_follower *f, uint64_t delay);
/* The next regular walk, ScanSec= from now. */
void follower_schedule_regular_scan(struct ns_follower *f);
