/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The C library of the judged root, for a user namespace that maps a single gid: glibc before
 * 2.33 (or its setuid pt_chown) insists on giving a new slave the tty group, which such a
 * namespace cannot name, and no pty can be had there; from 2.33 on grantpt() only asks the
 * kernel. Only the library's name is read: before 2.34, libc.so.6 is a symlink to libc-2.N.so.
 */
#pragma once

#include "snapshot/snapshot.h"

struct namespace_target;

/* Fill s->userland from the first libc.so.6 of the usual library directories under ns's root
 * (NULL: ours), without opening any file. 0 or -ENOMEM; nothing found is not an error. */
int probe_userland(const struct namespace_target *ns, struct snapshot *s);
