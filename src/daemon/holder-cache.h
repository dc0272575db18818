/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's last scan for processes holding ptys of covered devpts
 * instances. A scan reads every open fd on the host, about 10 us each: a
 * second at 100,000 fds. So a scan is reused while the same instances are
 * covered and it is younger than the configured maximum age; the caller
 * audits again when it expires (only while an instance is covered), so what
 * holds a covered instance is seen within that time, and a finding about it
 * is resolved within it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "snapshot/snapshot.h"

struct holder_cache {
	bool valid;
	dev_t *covered; /* the instances covered then, in analysis order */
	size_t n_covered;
	struct snapshot *found; /* holders and holders_skipped only */
	uint64_t scanned_at;
};

enum holder_fill {
	HOLDERS_NONE_COVERED, /* nothing to scan for: the cache is empty */
	HOLDERS_REUSED,	      /* copied from the last scan */
	HOLDERS_SCANNED,      /* scanned proc anew: expires at scanned_at + max_age */
};

/* Put the holders of a's covered instances into s, from the cache while it applies at now
 * (CLOCK_MONOTONIC), else by scanning proc ("/proc"). Returns an enum holder_fill or negative
 * errno. */
int holder_cache_fill(struct holder_cache *c, struct snapshot *s, const struct analysis *a,
		      const char *proc, uint64_t now, uint64_t max_age);
/* Forget the last scan (and free it). */
void holder_cache_clear(struct holder_cache *c);
