/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The options of a devpts instance, the one rule of what healthy options are, and the one rule
 * of which slave mode a remount sets. A slave mode is healthy when it is 620 (the traditional
 * value) or 600 (systemd 258's default), or exactly the mode the configuration pins (Mode=). The
 * remedy text of every check, every repair action, the mode repair gives a slave and the mode
 * the daemon records as last seen healthy all derive from here, so a report and a repair never
 * disagree.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct devpts_options {
	bool has_gid;
	gid_t gid;
	bool has_uid;
	uid_t uid;
	mode_t mode;	 /* slave mode; 0600 when not given */
	mode_t ptmxmode; /* mode of pts/ptmx; 0000 when not given */
	bool has_max;
	unsigned max;
};

/* What the configuration may change about what counts as healthy ([Devpts] Mode=). */
struct check_policy {
	bool pin_mode; /* Mode= pinned: only this slave mode is healthy */
	mode_t mode;
};

/* The traditional slave mode: what is set when nothing better is known. */
#define DEVPTS_MODE_DEFAULT 0620

void devpts_options_parse(const char *super_options, struct devpts_options *ret);
/* The option string a remount needs to keep everything of o: a devpts remount resets every
 * option it is not given (mode to 600, ptmxmode to 000, max to the limit), through mount(2) and
 * fsconfig() alike. Default values are left out. Returns a malloc'ed string or NULL. */
char *devpts_options_format(const struct devpts_options *o);

/* The healthy slave modes under policy (may be NULL), most usual first; returns how many. */
size_t devpts_modes_healthy(const struct check_policy *policy, mode_t ret[static 2]);
/* Is mode (permission bits) a healthy slave mode? policy may be NULL. */
bool devpts_mode_healthy(const struct check_policy *policy, mode_t mode);
/* The same options: gid=, uid=, the modes (permission bits) and max=. */
bool devpts_options_same(const struct devpts_options *x, const struct devpts_options *y);
/* Are these options healthy: gid= the tty group, and a healthy slave mode? policy may be NULL. */
bool devpts_options_healthy(const struct check_policy *policy, const struct devpts_options *o,
			    gid_t tty_gid);
/* The slave mode to set on an instance that has the options now, the one rule of it (repair,
 * every remedy, the slaves' mode). In this order:
 *   1. the pinned mode (Mode=), when the policy pins one;
 *   2. now's mode, when healthy and set together with gid=: a complete setting someone chose;
 *   3. last_healthy, the mode the instance had when it was last seen with gid= and a healthy
 *      mode (the daemon's or the initramfs record; 0 when unknown): a remount without gid=
 *      (systemd-remount-fs applying an fstab line "defaults") resets the mode to the kernel's
 *      600 too, so a mode that came without gid= says less about this instance than what it
 *      had before;
 *   4. now's mode, when healthy even without gid= (600 may be meant: systemd 258's default);
 *   5. 620. */
mode_t devpts_mode_wanted(const struct check_policy *policy, const struct devpts_options *now,
			  mode_t last_healthy);

/* A devpts instance as the daemon last saw it healthy (gid= the tty group, a healthy slave mode),
 * kept in its state file: the mode a repair of that instance restores when nothing says
 * better (snapshot/devpts-mode.h, devpts_mode_recorded). */
struct devpts_seen_healthy {
	bool known;
	dev_t dev;
	mode_t mode; /* 0620 or 0600 */
};

/* The daemon's record: an instance seen now with healthy options (gid= the tty group, a healthy
 * mode under policy) is what a later repair of it restores. Updates *seen when so. */
void devpts_seen_healthy_note(struct devpts_seen_healthy *seen, const struct check_policy *policy,
			      dev_t dev, const struct devpts_options *o, gid_t tty_gid);

/* What a remount must fix. */
struct devpts_fix {
	bool owner; /* gid= the tty group, and a healthy mode */
	bool ptmx;  /* ptmxmode=0666, so that a pts/ptmx symlink or bind opens for everyone */
	gid_t tty_gid;
	const struct check_policy *policy; /* may be NULL */
	mode_t last_healthy;		   /* 0 when unknown */
};

/* The options after a remount of an instance that has now: what fix asks, the rest kept. */
struct devpts_options devpts_options_target(const struct devpts_options *now,
					    const struct devpts_fix *fix);
/* The options of a devpts instance mounted afresh, for a remedy that mounts one: "gid=G,mode=M"
 * with the slave mode of the rule (the pinned Mode=, else 620), then "ptmxmode=0666" when ptmx
 * is set (the instance is reached through a pts/ptmx link or bind; a char /dev/ptmx beside it
 * needs none), with "newinstance," first when newinstance is set (kernels before 4.7).
 * malloc'ed, or NULL. */
char *devpts_fresh_options(const struct check_policy *policy, gid_t tty_gid, bool newinstance,
			   bool ptmx);
/* "mount -o remount,OPTIONS MOUNTPOINT" for those target options, malloc'ed, or NULL. */
char *devpts_remount_command(const struct devpts_options *now, const struct devpts_fix *fix,
			     const char *mountpoint);
