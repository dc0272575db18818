/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <time.h>

#include "daemon/timer.h"

int timer_add(sd_event *e, sd_event_source **ret, sd_event_time_handler_t handler, void *userdata,
	      const char *description)
{
	int r = sd_event_add_time(e, ret, CLOCK_MONOTONIC, UINT64_MAX, TIMER_ACCURACY_USEC, handler,
				  userdata);

	if (r >= 0)
		r = sd_event_source_set_description(*ret, description);
	return r < 0 ? r : sd_event_source_set_enabled(*ret, SD_EVENT_OFF);
}

int timer_arm(sd_event_source *s, uint64_t usec)
{
	int r = sd_event_source_set_time(s, usec);

	return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

int timer_arm_earliest(sd_event_source *s, uint64_t usec)
{
	uint64_t cur;

	if (sd_event_source_get_enabled(s, NULL) > 0 && sd_event_source_get_time(s, &cur) >= 0 &&
	    cur <= usec)
		return 0;
	return timer_arm(s, usec);
}

int timer_apply(sd_event_source *s, struct timer_decision d)
{
	switch (d.action) {
	case TIMER_OFF:
		return sd_event_source_set_enabled(s, SD_EVENT_OFF);
	case TIMER_AT:
		return timer_arm(s, d.usec);
	default:
		return 0;
	}
}
