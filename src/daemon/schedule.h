/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * When the daemon's work runs: the one coalescing and CPU-share rule of the host's audits, the
 * passes of audits of the other mount namespaces (daemon/nsfollow.h) and the mount tracker's
 * re-reads (daemon/mount-source.h). Pure: no I/O, no clock of its own; the caller passes the time
 * (CLOCK_MONOTONIC) and arms its timer for what comes out.
 *
 * Coalescing: the first wake-up after a quiet window runs at once (at idle a change is seen one
 * run after it); the wake-ups within the window after a run are handled by one run at its end,
 * so a burst costs one run per window. The share: a run starts no sooner after the previous one
 * than that one's cost allows within cpu_percent of one CPU, so a storm on a huge table costs
 * bounded CPU.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* What the host's audit is scheduled for: it decides how soon (schedule_flags()). */
enum audit_reason {
	REASON_MOUNT = 1 << 0,
	REASON_UDEV = 1 << 1,
	/* inotify: an entry of /dev/pts or /dev/pts itself; the mode or owner of / or /dev */
	REASON_PTS = 1 << 2,
	REASON_PTMX = 1 << 3, /* inotify: the ptmx entry of /dev */
	REASON_RELOAD = 1 << 4,
	REASON_HOLDERS = 1 << 5, /* the holder search of covered instances is too old, or partial */
	REASON_HELPER = 1 << 6,	 /* inotify: a pt_chown appeared, changed or went away */
	REASON_RETRY = 1 << 7,	 /* the last audit's output files could not be written */
	REASON_REPAIR = 1 << 8,	 /* repairs exposed more than the rounds of one audit could try */
};

/* One kind of work's history. Zero: it never ran. */
struct schedule {
	uint64_t last_start; /* when the last run started */
	uint64_t last_usec;  /* what the last finished run took */
	bool ran;
};

struct schedule_rule {
	uint64_t window_usec; /* CoalesceMSec= */
	unsigned cpu_percent; /* AuditCPUPercent= (1-100); 0: no share */
};

enum {
	/* Wait a whole window from now, even after a quiet one: what explains the change comes
	 * after it (udev sends its event once it has replaced or chmodded /dev/ptmx). */
	SCHEDULE_WAIT_WINDOW = 1 << 0,
	/* The last run's cost says nothing of the next one's (a read of the whole mount table
	 * before a read of the few mounts followed; the tracker's cheap re-reads). */
	SCHEDULE_COST_UNKNOWN = 1 << 1,
};

/* The flags of an audit of the host for reasons (enum audit_reason). */
unsigned schedule_flags(unsigned reasons);

/* When work woken at now runs: now or later. */
uint64_t schedule_due(const struct schedule *s, const struct schedule_rule *rule, uint64_t now,
		      unsigned flags);
/* A run starts at now; ends at now. */
void schedule_start(struct schedule *s, uint64_t now);
void schedule_end(struct schedule *s, uint64_t now);
