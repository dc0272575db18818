/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nodes of the probe's first pass: /dev/ptmx and every hop of its symlink chain, the
 * directories an unprivileged open walks through to it and to /dev/pts, and /dev/tty's chain.
 * Each is lstat(2)ed under the namespace's root (ns NULL: ours) into a node of the snapshot; a
 * path that is not there is a NODE_MISSING node. Nothing is looked up per devpts mountpoint:
 * no check reads a ptmx node other than those of /dev/ptmx's own chain.
 */
#pragma once

#include "snapshot/snapshot.h"

struct namespace_target;

/* lstat path into a new node (no lookup first: the caller knows it is new). 0 or -ENOMEM. */
int probe_stat_new_node(const struct namespace_target *ns, struct snapshot *s, const char *path);
/* The same, once per path. */
int probe_add_node(const struct namespace_target *ns, struct snapshot *s, const char *path);

/* A node (/dev/ptmx, /dev/tty) and every hop of its symlink chain (at most eight). */
int probe_chain(const struct namespace_target *ns, struct snapshot *s, const char *path);
/* The directories a non-root open walks through (pty-path-blocked): those holding each hop of
 * /dev/ptmx's chain, and /dev/pts with its ancestors. After probe_chain() of /dev/ptmx. */
int probe_path_dirs(const struct namespace_target *ns, struct snapshot *s);
