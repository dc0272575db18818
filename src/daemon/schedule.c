/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/schedule.h"

unsigned schedule_flags(unsigned reasons)
{
	/* udev replaces or chmods /dev/ptmx while it runs its rules and sends its event after: a
	 * change of the node waits one window, so that the event that explains it is seen with
	 * it. */
	return reasons & REASON_PTMX ? SCHEDULE_WAIT_WINDOW : 0;
}

static uint64_t later(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

uint64_t schedule_due(const struct schedule *s, const struct schedule_rule *rule, uint64_t now,
		      unsigned flags)
{
	uint64_t due = now;

	if (flags & SCHEDULE_WAIT_WINDOW)
		due = now + rule->window_usec;
	else if (s->ran)
		due = later(due, s->last_start + rule->window_usec);
	if (s->ran && !(flags & SCHEDULE_COST_UNKNOWN) && rule->cpu_percent > 0)
		due = later(due, s->last_start + s->last_usec * 100 / rule->cpu_percent);
	return due;
}

void schedule_start(struct schedule *s, uint64_t now)
{
	s->ran = true;
	s->last_start = now;
}

void schedule_end(struct schedule *s, uint64_t now)
{
	s->last_usec = now - s->last_start;
}
