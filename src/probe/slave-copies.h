/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Copies of pty slaves: character nodes of a slave major (136-143) in /dev that no devpts
 * instance holds (a runtime that copied a slave, docker-in-docker's /dev/console,
 * --device=/dev/pts/N:/dev/x). Such a node answers every open with EIO.
 */
#pragma once

#include "analysis/analysis.h"
#include "snapshot/snapshot.h"

struct namespace_target;

/* The first and last major numbers of pty slaves (UNIX98_PTY_SLAVE_MAJOR and the seven after). */
#define PTY_SLAVE_MAJOR_FIRST 136
#define PTY_SLAVE_MAJOR_LAST  143

/* Add to s every character node directly in /dev of a slave major that is on no devpts instance
 * a knows. Only /dev itself is listed, and only the entries its directory says are character
 * devices (or does not say) are looked at. A /dev that cannot be listed is not an error: 0 or
 * -ENOMEM. */
int probe_slave_copies(const struct namespace_target *ns, struct snapshot *s,
		       const struct analysis *a);
