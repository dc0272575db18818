/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's capabilities, cut down to what its configuration lets it do. The unit's bounding
 * set allows everything repair may need; once the configuration is loaded (and the fanotify
 * mount tracker, which needs CAP_SYS_ADMIN to start, is set up) the daemon keeps only:
 *
 *   always          CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH: the holder scan reads every
 *                   process's /proc/PID/fd;
 *   Policy=safe     CAP_SYS_ADMIN (remount), CAP_CHOWN and CAP_FOWNER (a slave's group and
 *                   mode, /dev/ptmx's mode), CAP_SETUID and CAP_SETGID (the verification child
 *                   takes the probe user's effective uid and gid; its real uid stays the
 *                   daemon's, so the daemon kills it past its deadline without CAP_KILL; a
 *                   daemon that is not root also takes root's file system ids to create
 *                   /dev/ptmx in root's /dev, util/caps.h), and CAP_MKNOD unless
 *                   CreatePtmx=symlink;
 *   [Probe] Enabled CAP_SETUID and CAP_SETGID, for the allocation probe's child, the same;
 *   [Namespaces] Audit=all
 *                   CAP_SYS_ADMIN: whether a followed namespace still exists, and whether any
 *                   is newer than those followed, the kernel tells only a caller with it
 *                   (without it, listmount(2) says a live namespace is gone).
 *
 * Capabilities are dropped from the effective set only: the permitted set (the unit's bounding
 * set) stays, so that a reload that raises the policy takes back what it needs. What the
 * process was never permitted is reported as missing. No logging here.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "config/conf.h"

/* The capabilities (bit n = capability n) that c needs. */
uint64_t privileges_needed(const struct config *c);

/* Make the capabilities in keep the effective set (inheritable and ambient emptied; permitted
 * left as it is). *ret_dropped: those permitted and not kept; *ret_missing: those of keep that
 * are not permitted. 0 or -errno. */
int privileges_limit(uint64_t keep, uint64_t *ret_dropped, uint64_t *ret_missing);

/* "CAP_SYS_ADMIN CAP_MKNOD" for a set, in buf; "none" for the empty set. */
const char *privileges_to_string(uint64_t caps, char buf[static 256]);

/* The capabilities units/ptsguard.service gives the daemon (its bounding set and ambient set). */
extern const uint64_t privileges_service_set;

/*
 * What ptsguard.service sets up, done by the daemon itself for a start without systemd (an init
 * script): as root, drop every capability outside privileges_service_set from the bounding set,
 * become the user name (its uid and primary gid, no supplementary groups) keeping those
 * capabilities permitted and effective, set no_new_privs and the unit's UMask=0077. 1 when
 * switched; 0 when the process already runs as that user (then only no_new_privs is set); -ESRCH
 * for an unknown user, -EINVAL for root, -EPERM when neither root nor that user, or -errno.
 * *ret_uid and *ret_gid are the user's once it was found. Call before anything else is set up.
 */
int privileges_become_user(const char *name, uid_t *ret_uid, gid_t *ret_gid);
