/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The namespace follower's two timers (daemon/nsfollow-internal.h): when the next pass of
 * audits runs (the coalescing window and the CPU share of daemon/policy.h) and when the next
 * walk of /proc does. */
#include "daemon/nsfollow-internal.h"
#include "util/clock.h"

/* The next pass of audits: after the coalescing window, and no sooner than the CPU share
 * allows after the last pass (daemon/policy.h). */
void follower_schedule_pass(struct ns_follower *f)
{
	struct schedule_rule rule = schedule_rule_from_config(f->config);

	(void)timer_arm_earliest(
	    f->audit_timer,
	    schedule_due(&f->passes, &rule, now_usec(CLOCK_MONOTONIC), SCHEDULE_WAIT_WINDOW));
}

void follower_schedule_scan(struct ns_follower *f, uint64_t delay)
{
	(void)timer_arm_earliest(f->scan_timer, now_usec(CLOCK_MONOTONIC) + delay);
}

/* The next regular walk, ScanSec= from now. */
void follower_schedule_regular_scan(struct ns_follower *f)
{
	f->scan_due = now_usec(CLOCK_MONOTONIC) + f->config->namespaces_scan_usec;
	(void)timer_arm_earliest(f->scan_timer, f->scan_due);
}
