/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tty group's members: old advice ("add yourself to tty" for mosh, screen, write) leaves
 * users in it, and a member of tty may write to every terminal of mode 620.
 */
#pragma once

#include "snapshot/snapshot.h"

struct ns_file;

/* The member list of the group of s->tty_gid into s->tty_members: from group, a namespace's own
 * /etc/group as read (its users' uids unknown: its passwd is not read), or, group NULL, through
 * our NSS, with each member's uid. A group file that could not be read leaves them unknown. 0 or
 * -ENOMEM. */
int probe_tty_members(const struct ns_file *group, struct snapshot *s);
