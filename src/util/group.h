/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Group and user lookups: the probe asks for the gid of "tty" (grantpt()'s group), the
 * configuration for the one TTYGroup= names, and for the user the allocation probe runs as
 * ([Probe] User=, repair --verify-user). They go through NSS, whatever the size of an entry.
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

/* The user the allocation probe runs as unless told otherwise. */
#define PROBE_USER_DEFAULT "nobody"
/* The kernel's overflow id: "nobody" where the database has no such user. */
#define NOBODY_ID_FALLBACK 65534

/* The uid and primary gid of user name, or of a decimal uid as given (then its gid too).
 * "nobody" missing from the database is NOBODY_ID_FALLBACK. 0; -ESRCH when there is no such
 * user. "nobody" is looked up once a process, until user_lookup_forget() (the daemon's
 * reload); other names each time. */
int user_lookup(const char *name, uid_t *uid, gid_t *gid);
void user_lookup_forget(void);
