/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's search for processes holding ptys of covered devpts instances. A search reads
 * every open fd on the host (4-10 us each: seconds at a million fds), more than one dispatch
 * of the event loop may take while the watchdog waits. So each audit runs it for a slice
 * (HOLDER_SCAN_SLICE_USEC) only, and the next audit goes on where it stopped
 * (probe/holder-scan.h): the caller audits again soon while a search is under way. A complete
 * search is reused while the same instances are covered and it is younger than the configured
 * maximum age; the caller audits again when it expires (only while an instance is covered), so
 * what holds a covered instance is seen within that time (and the time a new search takes).
 * While a search after the first is under way, the last complete one stands, with what the new
 * one has found so far added; before the first completes, the report says partial. When other
 * instances are covered (one more, or one fewer), a new search starts, and the last one still
 * stands for the instances it looked for that are covered yet, the report saying partial until
 * the new one completes: what holds an instance does not drop out of the report for a while
 * because another instance was covered.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "probe/holder-scan.h"
#include "snapshot/snapshot.h"

struct holder_cache {
	struct holder_scan last; /* the last complete search (last.complete), or none */
	uint64_t scanned_at;	 /* when it completed (CLOCK_MONOTONIC) */
	struct holder_scan pass; /* the search under way, or none (pass.started false) */
	bool expired;		 /* holder_cache_expire(): last is not reused, only stands */
};

enum holder_fill {
	HOLDERS_NONE_COVERED, /* nothing to scan for: the cache is empty */
	HOLDERS_REUSED,	      /* copied from the last complete search */
	HOLDERS_SCANNED,      /* a search completed: expires at scanned_at + max_age */
	HOLDERS_PARTIAL,      /* a search is under way: audit again soon to go on with it */
};

/* Where to search: the processes proc ("/proc") lists (pids NULL), or pids (n of them, those
 * still in mount namespace mntns: a namespace the daemon follows). */
struct holder_scope {
	const char *proc;
	const pid_t *pids;
	size_t n_pids;
	uint64_t mntns;
};

/* Put the holders of a's covered instances into s, from the cache while it applies at now
 * (CLOCK_MONOTONIC), else by going on with (or starting) a search of where until now + budget.
 * Budget 0 runs no slice: a search is started (its processes listed) if none is under way, and
 * HOLDERS_PARTIAL says what the last complete one (if it applies) and this one have found so
 * far. Returns an enum holder_fill or negative errno. */
int holder_cache_fill(struct holder_cache *c, struct snapshot *s, const struct analysis *a,
		      const struct holder_scope *where, uint64_t now, uint64_t max_age,
		      uint64_t budget);
/* Forget every search (and free them). */
void holder_cache_done(struct holder_cache *c);
/* Search again at the next fill (a reload): the search under way is dropped, and the last
 * complete one stands, as when it expires, until the new one completes. What was found does
 * not leave the report because the configuration was read again. */
void holder_cache_expire(struct holder_cache *c);
