/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's inotify watches on the host's own directories: / and /dev (a change of mode or
 * owner on the way to the ptys, the ptmx entry, the pts entry), /dev/pts (its slaves), the
 * directory of the serving instance when /dev/ptmx leads elsewhere, and the directories where a
 * setuid pt_chown would be installed. Each change is told to the daemon as the reasons of an
 * audit (enum audit_reason); the /dev/pts/N that the allocation probe of the daemon's own audits
 * makes and removes is not a change (else each audit would wake the next). A watched directory
 * that goes away, or that something is mounted on, is watched anew before the next audit.
 */
#pragma once

#include <stdint.h>

#include "analysis/analysis.h"
#include "snapshot/allocation.h"
#include "util/macro.h"
#include "util/systemd-dl.h"

struct dev_watches;

/* Something changed: an audit for reasons (enum audit_reason) is due. */
typedef void (*dev_watches_fn)(void *userdata, unsigned reasons);

int dev_watches_new(sd_event *event, dev_watches_fn on_change, void *userdata,
		    struct dev_watches **ret);
struct dev_watches *dev_watches_free(struct dev_watches *w);
DEFINE_POINTER_CLEANUP(struct dev_watches, dev_watches_free)

/* Start watching (an inotify instance, the pt_chown directories). Logs at warning level: the
 * daemon goes on without (then only the mount table and udev wake it). */
int dev_watches_start(struct dev_watches *w);
/* Before each audit: (re)watch each directory whose path leads elsewhere now (a mount on top, a
 * new /dev). Failures are journaled once each. */
void dev_watches_update(struct dev_watches *w);
/* Find the pt_chown directories again (a reload). */
void dev_watches_find_helpers(struct dev_watches *w);
/* After an audit: the /dev/pts/N its allocation probe made and removed is expected, twice. */
void dev_watches_expect_probe(struct dev_watches *w, const struct alloc_probe *p);
/* After an audit: follow the directory of the instance a serves when it is not /dev/pts. A
 * directory watched anew sees only what changes from then on: one more audit (REASON_PTS) covers
 * what came before. */
void dev_watches_follow_serving(struct dev_watches *w, const struct analysis *a);
/* Read the events queued now, as the event loop would, without waking anyone: the reasons
 * they give (0: none, or nothing but our probe's echoes), for the caller to schedule. */
unsigned dev_watches_read_now(struct dev_watches *w);
/* Wake-ups that asked for an audit. */
uint64_t dev_watches_wakeups(const struct dev_watches *w);
