/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's one-shot CLOCK_MONOTONIC timers, armed as daemon/policy.h decides: made off,
 * then armed for a time, armed unless an earlier time is armed already, or turned off. Each
 * returns 0 or a negative errno of sd-event.
 */
#pragma once

#include <stdint.h>

#include "daemon/policy.h"
#include "util/systemd-dl.h"

/* A timer off until armed, firing up to TIMER_ACCURACY_USEC late, named description. */
int timer_add(sd_event *e, sd_event_source **ret, sd_event_time_handler_t handler, void *userdata,
	      const char *description);
/* Fire once at usec. */
int timer_arm(sd_event_source *s, uint64_t usec);
/* Fire once at usec, unless it is armed for usec or earlier already (that deadline stands). */
int timer_arm_earliest(sd_event_source *s, uint64_t usec);
/* What d says: leave it, turn it off, or timer_arm() it. */
int timer_apply(sd_event_source *s, struct timer_decision d);
