/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "daemon/holder-cache.h"
#include "util/macro.h"

void holder_cache_done(struct holder_cache *c)
{
	holder_scan_done(&c->last);
	holder_scan_done(&c->pass);
	*c = (struct holder_cache){ 0 };
}

void holder_cache_expire(struct holder_cache *c)
{
	holder_scan_done(&c->pass);
	c->expired = c->last.started;
}

/* The last complete search, with what the one under way found so far. A last search made for
 * other instances (one more covered, or one no longer) still stands for those covered now,
 * but the report says partial, with the new search's progress, until that one completes: what
 * was found does not leave meanwhile. */
static int fill_from_last(const struct holder_cache *c, struct snapshot *s,
			  const struct analysis *a)
{
	int r;

	if (holder_scan_same_devs(&c->last, a)) {
		r = holder_scan_into(&c->last, s, a);
		return r < 0 ? r : holder_scan_add_holders(&c->pass, s, a);
	}
	r = holder_scan_add_holders(&c->last, s, a);
	return r < 0 ? r : holder_scan_into(&c->pass, s, a);
}

int holder_cache_fill(struct holder_cache *c, struct snapshot *s, const struct analysis *a,
		      const struct holder_scope *where, uint64_t now, uint64_t max_age,
		      uint64_t budget)
{
	int r;

	if (!holder_scan_wanted(a)) {
		holder_cache_done(c);
		return HOLDERS_NONE_COVERED;
	}
	/* A search under way for other instances (or strays no longer, or now, looked for)
	 * starts again; the last complete one is reused only for the very instances it was
	 * made for. */
	if (c->pass.started && !holder_scan_same_devs(&c->pass, a))
		holder_scan_done(&c->pass);
	if (c->last.started && !c->expired && holder_scan_same_devs(&c->last, a) &&
	    now < c->scanned_at + max_age) {
		r = fill_from_last(c, s, a);
		return r < 0 ? r : HOLDERS_REUSED;
	}

	if (!c->pass.started) {
		r = holder_scan_start(&c->pass, a, where->proc, where->pids, where->n_pids,
				      where->mntns);
		if (r == -ENOENT) { /* no /proc: nothing can be found, as before */
			s->holders_scanned = true;
			return HOLDERS_SCANNED;
		}
		if (r < 0)
			return r;
	}
	r = budget > 0 ? holder_scan_run(&c->pass, where->proc, now + budget) : 0;
	if (r < 0)
		return r;
	if (r == 0) {
		r = c->last.started ? fill_from_last(c, s, a) : holder_scan_into(&c->pass, s, a);
		return r < 0 ? r : HOLDERS_PARTIAL;
	}
	holder_scan_done(&c->last);
	c->last = c->pass;
	c->pass = (struct holder_scan){ 0 };
	c->expired = false;
	/* The caller's clock: it arms its rescan at now + max_age, which must find this expired. */
	c->scanned_at = now;
	r = holder_scan_into(&c->last, s, a);
	return r < 0 ? r : HOLDERS_SCANNED;
}
