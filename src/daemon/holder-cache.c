/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/holder-cache.h"
#include "probe/probe.h"
#include "util/util.h"

void holder_cache_clear(struct holder_cache *c)
{
	free(c->covered);
	snapshot_free(c->found);
	*c = (struct holder_cache){ 0 };
}

static int copy_holders(struct snapshot *to, const struct snapshot *from)
{
	FOREACH_ARRAY (h, from->holders, from->n_holders)
		if (snapshot_add_holder(to, h) < 0)
			return -ENOMEM;
	to->holders_scanned = true;
	to->holders_skipped = from->holders_skipped;
	return 0;
}

int holder_cache_fill(struct holder_cache *c, struct snapshot *s, const struct analysis *a,
		      const char *proc, uint64_t now, uint64_t max_age)
{
	_cleanup_free_ dev_t *covered = calloc(a->n_instances ?: 1, sizeof(dev_t));
	size_t n = 0;
	int r;

	if (!covered)
		return -ENOMEM;
	FOREACH_ARRAY (in, a->instances, a->n_instances)
		if (in->covered)
			covered[n++] = in->dev;
	if (n == 0) {
		holder_cache_clear(c);
		return HOLDERS_NONE_COVERED;
	}
	if (c->valid && c->n_covered == n && memcmp(c->covered, covered, n * sizeof(dev_t)) == 0 &&
	    now < c->scanned_at + max_age) {
		r = copy_holders(s, c->found);
		return r < 0 ? r : HOLDERS_REUSED;
	}

	r = probe_holders(s, a, proc);
	if (r < 0 && r != -ENOENT)
		return r;
	holder_cache_clear(c);
	c->found = snapshot_new();
	if (!c->found || copy_holders(c->found, s) < 0)
		return -ENOMEM;
	c->covered = TAKE_PTR(covered);
	c->n_covered = n;
	c->scanned_at = now;
	c->valid = true;
	return HOLDERS_SCANNED;
}
