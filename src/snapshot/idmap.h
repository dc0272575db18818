/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The arithmetic of a user namespace's id maps (the text of /proc/PID/uid_map and gid_map, one
 * "INSIDE OUTSIDE COUNT" a line; NULL for the initial namespace's identity). Pure: no system
 * call, no snapshot.
 */
#pragma once

#include <stdbool.h>

/* An id of the initial user namespace (what mountinfo prints) as the namespace of map (a
 * uid_map or gid_map text, NULL for the identity) numbers it: 0, or -ENOENT when unmapped. */
int idmap_from_initial(const char *map, unsigned id, unsigned *ret);
/* The other way: an id of the namespace as the initial user namespace numbers it, or -ENOENT. */
int idmap_to_initial(const char *map, unsigned id, unsigned *ret);
/* idmap_from_initial(), or the overflow id for an unmapped id, as stat() in the namespace shows
 * it. */
#define IDMAP_OVERFLOW_ID 65534u
unsigned idmap_from_initial_or_overflow(const char *map, unsigned id);
/* The highest id of the namespace that map gives a number to, when it is not 0: -ENOENT when
 * only 0 is mapped, -EINVAL for the identity (NULL). */
int idmap_highest_inside(const char *map, unsigned *ret);
/* Does map give a number to the namespace's own id? (Can gid=id be mounted there?) */
bool idmap_has_inside(const char *map, unsigned id);
/* How many ids map gives a number to (2^32 for the initial namespace's identity, NULL). */
unsigned long long idmap_size(const char *map);
/* map with every outside id moved by delta, malloc'ed into *ret; -ERANGE when one would leave
 * the 32-bit range, -ENOMEM. */
int idmap_shifted(const char *map, long long delta, char **ret);
/* What map's outside ids are off by, told by one id: want as mountinfo prints it (the initial
 * namespace's number) is seen in the namespace as seen. 0 when they are right, or when that
 * cannot be told. */
long long idmap_offset(const char *map, unsigned want, unsigned seen);
