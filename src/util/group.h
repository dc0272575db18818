/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Group lookups: the probe asks for the gid of "tty" (grantpt()'s group), the
 * configuration for the one TTYGroup= names. Both go through the group
 * database (NSS), whatever the size of an entry.
 */
#pragma once

#include <sys/types.h>

#define TTY_GROUP_NAME "tty"
/* The gid of tty on every major distribution: used when the database has no group tty. */
#define TTY_GID_FALLBACK 5

/* The gid of group name, or of a decimal gid as given. 0; -ESRCH when the database has no such
 * group; another negative errno when it cannot be read (-ERANGE: an entry beyond
 * GROUP_BUFFER_SIZE_MAX). */
int group_lookup(const char *name, gid_t *ret);
