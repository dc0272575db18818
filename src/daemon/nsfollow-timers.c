/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The namespace follower's two timers (daemon/nsfollow-internal.h): when the next pass of
 * audits runs (the coalescing window and the CPU share of daemon/schedule.h) and when the next
 * walk of /proc does. */
#include "daemon/nsfollow-internal.h"
#include "util/clock.h"

int follower_arm(sd_event_source *s, uint64_t usec)
{
	uint64_t cur;

	/* An earlier deadline already armed stands. */
	if (sd_event_source_get_enabled(s, NULL) > 0 && sd_event_source_get_time(s, &cur) >= 0 &&
	    cur <= usec)
		return 0;
	int r = sd_event_source_set_time(s, usec);
	return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* The next pass of audits: after the coalescing window, and no sooner than the CPU share
 * allows after the last pass (daemon/schedule.h). */
void follower_schedule_pass(struct ns_follower *f)
{
	struct schedule_rule rule = { .window_usec = f->config->coalesce_usec,
				      .cpu_percent = f->config->audit_cpu_percent };

	(void)follower_arm(
	    f->audit_timer,
	    schedule_due(&f->passes, &rule, now_usec(CLOCK_MONOTONIC), SCHEDULE_WAIT_WINDOW));
}

void follower_schedule_scan(struct ns_follower *f, uint64_t delay)
{
	(void)follower_arm(f->scan_timer, now_usec(CLOCK_MONOTONIC) + delay);
}

/* The next regular walk, ScanSec= from now. */
void follower_schedule_regular_scan(struct ns_follower *f)
{
	f->scan_due = now_usec(CLOCK_MONOTONIC) + f->config->namespaces_scan_usec;
	(void)follower_arm(f->scan_timer, f->scan_due);
}
