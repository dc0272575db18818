/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Boot-time correlation: what the initramfs hook recorded (snapshot->initramfs,
 * snapshot/initramfs-record.h) against what the audit sees now. Device numbers and mount ids
 * survive the move of /dev into the new root, so an instance born in the initramfs is
 * recognised after switch-root.
 */
#pragma once

#include <json-c/json.h>

#include "analysis/analysis.h"
#include "snapshot/initramfs-record.h"

/* The record's instance with this device, or NULL (also without a record). Borrowed. */
const struct initramfs_instance *initramfs_instance(const struct snapshot *s, dev_t dev);

/* The record's prediction of what the boot does to the carried devpts (effect other than none),
 * or NULL when it foresaw nothing. Borrowed. */
const struct initramfs_prediction *initramfs_prediction(const struct snapshot *s);

/* Did the prediction come true? A double mount: the predicted instance is now covered at its
 * mountpoint by another devpts; a remount: it is still there with the fstab line's options;
 * kept: still there with the options it had in the initramfs. -1 without a prediction. */
int initramfs_prediction_came_true(const struct analysis *a);

/* Where the devpts serving at a mountpoint comes from, when the record knows: the recorded
 * instance (this mount's own, or one this mount is stacked on), its options before switch-root,
 * the options now, and what changed them. */
enum origin_change {
	ORIGIN_UNCHANGED,    /* the recorded instance, with its initramfs options */
	ORIGIN_REMOUNT,	     /* the recorded instance, remounted with the fstab line's options */
	ORIGIN_SECOND_MOUNT, /* another instance, mounted on top of the recorded one */
	ORIGIN_UNKNOWN,	     /* the recorded instance, with options no fstab line explains */
	_ORIGIN_CHANGE_MAX,
};

struct boot_origin {
	const struct initramfs_instance *rec; /* the recorded instance */
	const struct mount_entry *mount;      /* its mount at that place now */
	const char *now;		      /* the options of the mount audited */
	enum origin_change change;
	const struct initramfs_fstab_line
	    *line;    /* remount, second mount: the fstab line, or NULL */
	bool systemd; /* the record's init is systemd (or not recorded): remount-fs remounts */
	bool rc;      /* remount: that of Debian's rc scripts (initramfs_init.rc_devpts) */
};

/* The origin of the devpts mount at index idx of the table: 1 when the record knows it (ret
 * filled, borrowed), 0 when not (no record, not devpts, no recorded instance there). */
int boot_origin(const struct analysis *a, size_t idx, struct boot_origin *ret);
/* "fstab line 3 through systemd-remount-fs", "a second mount at fstab line 3", "unknown";
 * NULL when unchanged (or out of memory). malloc'ed. */
char *boot_origin_changed_by(const struct boot_origin *o);
const char *origin_change_to_string(enum origin_change c);
/* The evidence's "origin" object: initramfs_device, initramfs_mount_id, before_switch_root, now,
 * change, changed_by, fstab_line. */
json_object *boot_origin_json(const struct boot_origin *o);

/* The "boot" object of the report: the record's phase, prediction and its outcome; NULL
 * without a record. */
json_object *boot_report_json(const struct analysis *a);
