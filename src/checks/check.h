/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the check modules share, and only they (src/checks/<id>.c): the catalog rows they define,
 * and the pieces of evidence, remedies and lookups more than one check writes the same way.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "analysis/boot.h"
#include "check-list.h"
#include "checks/checks.h"
#include "util/json-util.h"
#include "util/limits.h"

/* The catalog rows, one per module, declared from the list in src/meson.build. */
#define CHECK_DECLARE(name) extern const struct check_info check_##name;
CHECK_LIST(CHECK_DECLARE)
#undef CHECK_DECLARE

/* The devpts instance whose mount is on top at mountpoint mp, if any: what /dev/pts/N names
 * there. */
const struct instance *check_instance_at(const struct analysis *a, const char *mp);
/* Whether a slave node of pty index of instance in is listed under its visible mount. */
bool check_slave_exists(const struct analysis *a, const struct instance *in, unsigned index);
/* Slave idx of instance in is bound somewhere itself (one of the instance's mounts has root
 * "/idx"): a container manager's console, whose owner and mode its manager chose (LXC binds its
 * console pty on /dev/console with mode 0700 on purpose). Only the instance's own few mounts
 * are looked at, not the whole table. */
bool check_slave_is_bound(const struct snapshot *s, const struct instance *in, unsigned idx);
/* {mount_id, mountpoint, device, fstype, options} of mount i, or NULL for NO_MOUNT. */
json_object *check_json_mount(const struct analysis *a, size_t i);
/* The id of the mount the serving instance is reached through; 0 when there is none (and
 * finding_add_mount() records no mount id for 0). */
unsigned check_serving_mount_id(const struct analysis *a);
/* Where the serving instance is mounted; "/dev/pts" when it is reached through no mount. */
const char *check_serving_mountpoint(const struct analysis *a);
/* "character device", "symlink", ... for a person; "missing" for NULL. */
const char *check_describe_node(const struct node *n);
/* "620/600", or the pinned mode: the slave modes the policy accepts, for summaries. */
const char *check_healthy_modes(const struct check_policy *p, char buf[static 8]);

/* A new evidence object that starts with where a devpts mount is: its mountpoint (mp, or e's),
 * mount id, the instance's device and its super options. e may be NULL (no mount of ours). */
json_object *check_evidence_at(const struct mount_entry *e, const char *mp, dev_t dev);
/* A new evidence object that starts with what /dev/ptmx is: path, kind, symlink target. */
json_object *check_evidence_ptmx(const struct analysis *a);
/* The evidence of a finding about the serving instance's options (in mounted at mp). */
json_object *check_options_evidence(const struct check_context *ctx, const struct instance *in,
				    const char *mp);
/* When the initramfs record knows the devpts mount at index idx (or the one it is stacked on),
 * its "origin" (analysis/boot.h): the options before switch-root, now, and what changed them. */
void check_add_origin(const struct check_context *ctx, json_object *ev, size_t idx);
/* The remount that fixes what the check's row says a remount fixes (remount_owner,
 * remount_ptmx) and keeps every other option of in, mounted at mp: the options repair sets. */
int check_set_remount_remedy(struct finding *f, const struct check_context *ctx,
			     const struct instance *in, const char *mp,
			     const struct check_info *info);
