/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Boot-time correlation: what the initramfs hook recorded (snapshot->initramfs,
 * probe/initramfs-record.h) against what the audit sees now. Device numbers and mount ids
 * survive the move of /dev into the new root, so an instance born in the initramfs is
 * recognised after switch-root.
 */
#pragma once

#include <json-c/json.h>

#include "analysis/analysis.h"
#include "snapshot/initramfs-record.h"

/* The record's instance with this device, or NULL (also without a record). Borrowed. */
const struct initramfs_instance *initramfs_instance(const struct snapshot *s, dev_t dev);

/* The slave mode the record saw on this instance when its options were healthy (gid= set, mode
 * 620 or 600): what the instance had before something at boot changed it. 0 when unknown. */
mode_t initramfs_healthy_mode(const struct snapshot *s, dev_t dev);

/* The slave mode the instance should have under policy: pinned; else its mode if healthy; else
 * as the record last saw it healthy; else 620. What a remount sets, and what a slave of it is
 * given. */
mode_t instance_wanted_mode(const struct snapshot *s, const struct instance *in,
			    const struct check_policy *policy);

/* The record's prediction of a second devpts mount, or NULL when none was made. Borrowed. */
const struct initramfs_prediction *initramfs_prediction(const struct snapshot *s);

/* Did the predicted double mount happen: is the predicted instance now covered at its
 * mountpoint? -1 without a prediction. */
int initramfs_prediction_came_true(const struct analysis *a);

/* The "boot" object of the report: the record's phase, prediction and its outcome; NULL
 * without a record. */
json_object *boot_report_json(const struct analysis *a);
