/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A snapshot made fit for a public bug report (snapshot --redact): the names that identify a
 * machine or a person replaced by stable placeholders, each distinct name by its own, so that
 * the same name stays the same name throughout and the audit of the snapshot is unchanged.
 */
#pragma once

#include <stdbool.h>

#include "snapshot/snapshot.h"

/* Replace, in s: the host name ("host"); each process name of a pty holder or session
 * ("process-1", ...); each user name of the tty group's members ("user-1", ...); and in the
 * mount table's and fstab's text, the source (a server's name or address) and mount options of
 * every mount whose file system type network() says is a network one ("server-1", ...). 0 or
 * -ENOMEM (then s is partly redacted: write nothing). */
int snapshot_redact(struct snapshot *s, bool (*network)(const char *fstype));
