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
#include "probe/initramfs-record.h"

/* The record's instance with this device, or NULL (also without a record). Borrowed. */
const struct initramfs_instance *initramfs_instance(const struct snapshot *s, dev_t dev);

/* The record's prediction of a second devpts mount, or NULL when none was made. Borrowed. */
const struct initramfs_prediction *initramfs_prediction(const struct snapshot *s);

/* Did the predicted double mount happen: is the predicted instance now covered at its
 * mountpoint? -1 without a prediction. */
int initramfs_prediction_came_true(const struct analysis *a);

/* The "boot" object of the report: the record's phase, prediction and its outcome; NULL
 * without a record. */
json_object *boot_report_json(const struct analysis *a);
