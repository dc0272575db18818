/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * glibc's setuid grantpt helper, pt_chown: where it may be installed, and its search, in our
 * own tree (glob(3), never waiting for a hung NFS or FUSE file system) or under another
 * namespace's root (each wildcard matched against a directory read once under that root).
 */
#pragma once

#include "snapshot/snapshot.h"

struct namespace_target;

/* Known places of the helper (glob patterns), and the directories they name that exist now, as
 * a NULL-terminated list (NULL when there are none): what the daemon watches for a helper being
 * installed or made setuid. */
extern const char *const pt_chown_paths[];
#define PT_CHOWN_NAME "pt_chown"
int setuid_helper_dirs(char ***ret);

/* Every regular file at one of pt_chown_paths in ns (NULL: ours), into s->helpers with its mode
 * and owner in the namespace's numbers. 0 or -ENOMEM. */
int probe_helpers(const struct namespace_target *ns, struct snapshot *s);
