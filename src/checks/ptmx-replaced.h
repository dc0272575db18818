/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ptmx-replaced, the check raised on a change (check_info.transition): it
 * compares /dev/ptmx with a baseline kept across audits, so only a long-lived
 * caller (the daemon) runs it, once per audit.
 *
 * The baseline is /dev/ptmx at the first audit after start or reset, or when
 * it is first fixed after being missing or not a device (a fix is not a
 * replacement). Only its kind, symlink target, device number and devpts
 * instance count; mode and owner belong to other checks. While /dev/ptmx
 * differs, each audit adds one finding; a replacement by something else
 * again is a new occurrence (its evidence "after" changes). The finding's
 * evidence is {path, before, after, udev_event}, and when a udev event for
 * ptmx came in the audit window of the replacement, its journal_fields are
 * PTSGUARD_UDEV_ACTION= and PTSGUARD_UDEV_SEQNUM=.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "checks/checks.h"

/* A udev event about ptmx (subsystem tty), as the daemon received it. */
struct ptmx_udev_event {
	bool valid;
	char action[32];
	unsigned long long seqnum;
};

/* What /dev/ptmx is, as far as this check cares. */
struct ptmx_state {
	bool valid;
	enum ptmx_kind kind;
	enum node_type type;
	mode_t mode;
	char *target; /* symlink target as read */
	bool has_rdev;
	dev_t rdev; /* of the char node open() ends at */
	bool has_instance;
	dev_t instance; /* bind mount: the devpts instance the node belongs to */
};

struct ptmx_replaced {
	struct ptmx_state baseline;
	bool baseline_broken;		      /* it was missing or not a device then */
	struct ptmx_state replaced;	      /* what it was replaced with, while it differs */
	struct ptmx_udev_event replaced_udev; /* the udev event that came with that replacement */
};

/* Compare /dev/ptmx as a has it with the baseline, and add the finding to out while it differs.
 * udev is the ptmx udev event seen since the previous audit (NULL or !valid: none). 0 or
 * -ENOMEM. */
int ptmx_replaced_check(struct ptmx_replaced *p, const struct analysis *a,
			const struct ptmx_udev_event *udev, struct findings *out);
/* Forget the baseline (reload): the next check takes /dev/ptmx as it is then. Frees. */
void ptmx_replaced_reset(struct ptmx_replaced *p);
