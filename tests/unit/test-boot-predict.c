/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The boot model (analysis/boot-predict.h) and the mode rule (snapshot/devpts-options.h): what the
 * record foresees for a devpts of the initramfs carried to /dev/pts that an fstab line lists,
 * under each init the new root may have (systemd with and without systemd-remount-fs, sysvinit,
 * upstart, none known), whether that is a warning for the kernel log, and which slave mode a
 * remount sets in each case of the rule's order.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/boot-predict.h"
#include "analysis/boot.h"
#include "snapshot/devpts-mode.h"
#include "snapshot/snapshot.h"
#include "test.h"
#include "util/string-util.h"

/* The initramfs at the switch: /dev (a mount of its own) with its devpts; the new root is "/"
 * here, so nothing moves and the devpts lands on /dev/pts. */
static const char mountinfo[] =
    "1 0 0:2 / / rw - rootfs rootfs rw\n"
    "20 1 0:5 / /dev rw,nosuid - devtmpfs udev rw,mode=755\n"
    "21 20 0:26 / /dev/pts rw,nosuid,noexec - devpts devpts rw,gid=5,mode=620,ptmxmode=000\n";

/* The new root's fstab: a devpts line on line 2 with defaults, healthy, noauto; none. */
static const char fstab_defaults[] = "UUID=1 / ext4 defaults 0 1\n"
				     "devpts /dev/pts devpts defaults 0 0\n",
		  fstab_healthy[] = "UUID=1 / ext4 defaults 0 1\n"
				    "devpts /dev/pts devpts gid=5,mode=620 0 0\n",
		  fstab_noauto[] = "UUID=1 / ext4 defaults 0 1\n"
				   "devpts /dev/pts devpts noauto,mode=600 0 0\n",
		  fstab_none[] = "UUID=1 / ext4 defaults 0 1\n";

struct want {
	enum boot_effect effect;
	bool double_mount;
	const char *options_after;
	int healthy_after;
	bool warns;
	const char *in_reason;
};

static void expect_prediction(const char *what, const char *fstab,
			      const struct initramfs_init *init, const struct want *w)
{
	_cleanup_(snapshot_freep) struct snapshot *s = snapshot_new();
	_cleanup_(analysis_freep) struct analysis *a = NULL;
	_cleanup_(initramfs_record_freep) struct initramfs_record *rec = NULL;
	struct parse_error perr = { 0 };
	char *text = strdup(mountinfo);
	const struct initramfs_prediction *p;

	if (!s || !text)
		abort();
	s->tty_gid = 5;
	s->fstab = strdup(fstab);
	EXPECT_INT(snapshot_set_mountinfo(s, text, strlen(mountinfo), &perr), 0);
	EXPECT_INT(analysis_new(s, &a), 0);
	if (!a)
		return;
	EXPECT_INT(initramfs_record_build(a, "/", "test", 0, init, &rec), 0);
	if (!rec)
		return;
	p = &rec->prediction;
	CHECK_MSG(p->effect == w->effect, "%s: effect %s, expected %s", what,
		  boot_effect_to_string(p->effect), boot_effect_to_string(w->effect));
	CHECK_MSG(p->double_mount == w->double_mount, "%s: double_mount %d", what, p->double_mount);
	CHECK_MSG(streq_ptr(p->options_after, w->options_after),
		  "%s: options_after %s, expected %s", what, p->options_after ?: "null",
		  w->options_after ?: "null");
	CHECK_MSG(p->healthy_after == w->healthy_after, "%s: healthy_after %d, expected %d", what,
		  p->healthy_after, w->healthy_after);
	CHECK_MSG(initramfs_prediction_warns(p) == w->warns, "%s: warns %d, expected %d", what,
		  initramfs_prediction_warns(p), w->warns);
	CHECK_MSG(p->reason && strstr(p->reason, w->in_reason), "%s: reason \"%s\" lacks \"%s\"",
		  what, p->reason ?: "", w->in_reason);
	CHECK_MSG(rec->has_init == (init != NULL), "%s: has_init %d", what, rec->has_init);
	EXPECT_INT(p->fstab_line, strstr(fstab, "devpts") && !strstr(fstab, "noauto") ? 2 : 0);
}

static void test_prediction(void)
{
	const struct initramfs_init systemd = { .kind = INIT_SYSTEMD,
						.systemd_version = 252,
						.remount_fs = 1 },
				    masked = { .kind = INIT_SYSTEMD,
					       .systemd_version = 252,
					       .remount_fs = 0,
					       .remount_fs_off = (char *)"it is masked" },
				    sysvinit = { .kind = INIT_SYSVINIT, .remount_fs = -1 },
				    openrc = { .kind = INIT_OPENRC, .remount_fs = -1 },
				    upstart = { .kind = INIT_UPSTART, .remount_fs = -1 },
				    unknown = { .kind = INIT_UNKNOWN, .remount_fs = -1 };

	/* Debian 12 as booted: remount-fs applies "defaults", gid= is lost; a warning. */
	expect_prediction("systemd, defaults", fstab_defaults, &systemd,
			  &(struct want){ EFFECT_REMOUNT, false, "mode=600", 0, true,
					  "systemd 252, whose systemd-remount-fs.service" });
	/* The healthy systemd boot: a remount with the same options, a note only. */
	expect_prediction("systemd, healthy line", fstab_healthy, &systemd,
			  &(struct want){ EFFECT_REMOUNT, false, "gid=5,mode=620", 1, false,
					  "will have gid=5,mode=620" });
	expect_prediction("systemd, remount-fs masked", fstab_defaults, &masked,
			  &(struct want){ EFFECT_KEPT, false, "gid=5,mode=620", 1, false,
					  "it is masked, so the instance keeps" });
	expect_prediction(
	    "sysvinit", fstab_defaults, &sysvinit,
	    &(struct want){ EFFECT_KEPT, false, "gid=5,mode=620", 1, false, "mount -a skips" });
	expect_prediction("openrc", fstab_defaults, &openrc,
			  &(struct want){ EFFECT_KEPT, false, "gid=5,mode=620", 1, false,
					  "openrc, whose mount -a" });
	expect_prediction("upstart", fstab_defaults, &upstart,
			  &(struct want){ EFFECT_DOUBLE_MOUNT, true, "mode=600", 0, true,
					  "rc.sysinit mounts it regardless" });
	/* upstart with a healthy line: a second instance is still a warning (devpts-overmount). */
	expect_prediction(
	    "upstart, healthy line", fstab_healthy, &upstart,
	    &(struct want){ EFFECT_DOUBLE_MOUNT, true, "gid=5,mode=620", 1, true, "CentOS 6" });
	expect_prediction(
	    "init unknown", fstab_defaults, &unknown,
	    &(struct want){ EFFECT_DOUBLE_MOUNT, true, "mode=600", 0, true, "is not known" });
	expect_prediction(
	    "init not read", fstab_defaults, NULL,
	    &(struct want){ EFFECT_DOUBLE_MOUNT, true, "mode=600", 0, true, "is not known" });
	/* Nothing mounts devpts again: the carried instance stays as it is. */
	expect_prediction("noauto", fstab_noauto, &systemd,
			  &(struct want){ EFFECT_NONE, false, "gid=5,mode=620", 1, false,
					  "mounts no devpts at boot" });
	expect_prediction(
	    "no fstab line", fstab_none, &systemd,
	    &(struct want){ EFFECT_NONE, false, "gid=5,mode=620", 1, false, "stays as it is" });
}

/* Debian's rc scripts (checkroot.sh: mountdevsubfs.sh reload) remount /dev/pts under sysvinit and
 * OpenRC with gid=TTYGRP,mode=TTYMODE, then the fstab line's options, which win; not when the
 * line says noauto; with their own options alone when fstab has no line. */
static void test_prediction_rc(void)
{
	const struct initramfs_init sysvinit = { .kind = INIT_SYSVINIT,
						 .remount_fs = -1,
						 .rc_devpts = (char *)"gid=5,mode=600" },
				    openrc = { .kind = INIT_OPENRC,
					       .remount_fs = -1,
					       .rc_devpts = (char *)"gid=5,mode=600" },
				    other_group = { .kind = INIT_SYSVINIT,
						    .remount_fs = -1,
						    .rc_devpts = (char *)"gid=7,mode=620" };

	/* Debian 12's /etc/default/devpts: TTYMODE=600 over the initramfs's 620; still healthy. */
	expect_prediction("rc, defaults", fstab_defaults, &sysvinit,
			  &(struct want){ EFFECT_REMOUNT, false, "gid=5,mode=600", 1, false,
					  "mountdevsubfs.sh reload\": it remounts /dev/pts with "
					  "gid=5,mode=600" });
	expect_prediction("rc, healthy line", fstab_healthy, &openrc,
			  &(struct want){ EFFECT_REMOUNT, false, "gid=5,mode=620", 1, false,
					  "and then the line's options, so the instance will have "
					  "gid=5,mode=620" });
	expect_prediction("rc, noauto", fstab_noauto, &sysvinit,
			  &(struct want){ EFFECT_NONE, false, "gid=5,mode=620", 1, false,
					  "mounts no devpts at boot" });
	expect_prediction("rc, no fstab line", fstab_none, &sysvinit,
			  &(struct want){ EFFECT_REMOUNT, false, "gid=5,mode=600", 1, false,
					  "where /etc/fstab mounts no devpts" });
	/* A TTYGRP that is not the tty group: a loss foretold, a warning. */
	expect_prediction("rc, another group", fstab_none, &other_group,
			  &(struct want){ EFFECT_REMOUNT, false, "gid=7,mode=620", 0, true,
					  "not the tty group" });
}

/* After the boot: the audit checks the rc prediction against the table and names the remount
 * as the origin of what changed. */
static void test_rc_came_true(void)
{
	static const char booted[] = "1 0 0:2 / / rw - ext4 /dev/vda rw\n"
				     "20 1 0:5 / /dev rw,nosuid - devtmpfs udev rw,mode=755\n"
				     "21 20 0:26 / /dev/pts rw,nosuid,noexec - devpts devpts "
				     "rw,gid=5,mode=600,ptmxmode=000\n";
	const struct initramfs_init sysvinit = { .kind = INIT_SYSVINIT,
						 .remount_fs = -1,
						 .rc_devpts = (char *)"gid=5,mode=600" };
	_cleanup_(snapshot_freep) struct snapshot *initrd = snapshot_new(), *s = snapshot_new();
	_cleanup_(analysis_freep) struct analysis *a = NULL, *b = NULL;
	struct parse_error perr = { 0 };
	char *text = strdup(mountinfo), *text2 = strdup(booted);
	struct boot_origin o;
	_cleanup_free_ char *by = NULL;

	if (!initrd || !s || !text || !text2)
		abort();
	initrd->tty_gid = s->tty_gid = 5;
	initrd->fstab = strdup("devpts /dev/pts devpts defaults 0 0\n");
	EXPECT_INT(snapshot_set_mountinfo(initrd, text, strlen(mountinfo), &perr), 0);
	EXPECT_INT(analysis_new(initrd, &a), 0);
	EXPECT_INT(snapshot_set_mountinfo(s, text2, strlen(booted), &perr), 0);
	if (!a)
		return;
	EXPECT_INT(initramfs_record_build(a, "/", "test", 0, &sysvinit, &s->initramfs), 0);
	EXPECT_INT(analysis_new(s, &b), 0);
	if (!b || !s->initramfs)
		return;
	EXPECT_INT(initramfs_prediction_came_true(b), 1);
	EXPECT_INT(boot_origin(b, 2, &o), 1);
	EXPECT_INT(o.change, ORIGIN_REMOUNT);
	EXPECT_INT(o.rc, 1);
	by = boot_origin_changed_by(&o);
	CHECK_MSG(streq_ptr(by, "fstab line 1 through Debian's mountdevsubfs.sh"), "changed_by %s",
		  by ?: "null");
}

static mode_t wanted(const struct check_policy *policy, const char *now, mode_t last_healthy)
{
	struct devpts_options o;

	devpts_options_parse(now, &o);
	return devpts_mode_wanted(policy, &o, last_healthy);
}

static void test_mode_rule(void)
{
	const struct check_policy pin600 = { .pin_mode = true, .mode = 0600 };

	/* 1. pinned */
	EXPECT_INT(wanted(&pin600, "gid=5,mode=620", 0620), 0600);
	/* 2. a healthy mode that came with gid= is kept, whatever the record says */
	EXPECT_INT(wanted(NULL, "gid=7,mode=600", 0620), 0600);
	/* 3. the record's mode over one a remount without gid= left (the Debian 12 boot) */
	EXPECT_INT(wanted(NULL, "mode=600", 0620), 0620);
	EXPECT_INT(wanted(NULL, "gid=5,mode=644", 0600), 0600);
	EXPECT_INT(wanted(NULL, "mode=644", 0600), 0600);
	/* an unhealthy record does not count */
	EXPECT_INT(wanted(NULL, "mode=600", 0644), 0600);
	/* 4. without a record, a healthy mode stays even without gid= */
	EXPECT_INT(wanted(NULL, "mode=600", 0), 0600);
	EXPECT_INT(wanted(NULL, "mode=620", 0), 0620);
	/* 5. else 620 */
	EXPECT_INT(wanted(NULL, "gid=5,mode=644", 0), 0620);
	EXPECT_INT(wanted(NULL, "mode=666", 0), 0620);
}

/* The rule for an instance of a snapshot: the daemon's record over the initramfs record, both
 * only when healthy; what the remedy's fix names and what a slave is given agree. */
static void test_instance_mode(void)
{
	const struct check_policy pin600 = { .pin_mode = true, .mode = 0600 };
	struct initramfs_instance recorded[] = {
		{ .dev = 10, .options = (char *)"gid=5,mode=600" },
		{ .dev = 11, .options = (char *)"mode=620" },
	};
	struct initramfs_record rec = { .instances = recorded, .n_instances = 2 };
	struct snapshot s = { .tty_gid = 5, .initramfs = &rec };
	struct devpts_options now, healthy;
	struct devpts_fix fix;

	devpts_options_parse(recorded[0].options, &recorded[0].parsed);
	devpts_options_parse(recorded[1].options, &recorded[1].parsed);
	devpts_options_parse("mode=600", &now);
	/* the initramfs saw 10 healthy; 11 without gid=; 12 not at all */
	EXPECT_INT(devpts_mode_recorded(&s, 10), 0600);
	EXPECT_INT(devpts_mode_recorded(&s, 11), 0);
	EXPECT_INT(devpts_mode_recorded(&s, 12), 0);
	EXPECT_INT(devpts_instance_mode(&s, 10, &now, NULL), 0600);
	EXPECT_INT(devpts_instance_mode(&s, 12, &now, NULL), 0600);
	EXPECT_INT(devpts_instance_mode(&s, 12, &now, &pin600), 0600);

	/* the daemon records 10 at 620 once seen so: that wins over the initramfs record */
	devpts_options_parse("gid=5,mode=620", &healthy);
	devpts_seen_healthy_note(&s.last_healthy, NULL, 10, &healthy, 5);
	EXPECT_INT(s.last_healthy.known, 1);
	EXPECT_INT(devpts_mode_recorded(&s, 10), 0620);
	EXPECT_INT(devpts_instance_mode(&s, 10, &now, NULL), 0620);
	/* not healthy (another group, another mode): the record stays */
	devpts_options_parse("gid=7,mode=620", &healthy);
	devpts_seen_healthy_note(&s.last_healthy, NULL, 11, &healthy, 5);
	devpts_options_parse("gid=5,mode=644", &healthy);
	devpts_seen_healthy_note(&s.last_healthy, NULL, 11, &healthy, 5);
	EXPECT_INT(s.last_healthy.dev, 10);

	/* a remedy's remount sets what a slave is given */
	fix = devpts_fix_for(&s, 10, NULL, true, false);
	EXPECT_INT(fix.tty_gid, 5);
	EXPECT_INT(devpts_options_target(&now, &fix).mode,
		   devpts_instance_mode(&s, 10, &now, NULL));
}

int main(void)
{
	test_prediction();
	test_prediction_rc();
	test_rc_came_true();
	test_mode_rule();
	test_instance_mode();
	return test_result("test-boot-predict");
}
