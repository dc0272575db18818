/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Time in microseconds, the unit of sd-event and of every interval in the
 * configuration. now_usec() cannot fail for the clocks used here
 * (CLOCK_MONOTONIC, CLOCK_REALTIME).
 */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC  1000000ULL
#define USEC_PER_MSEC 1000ULL

uint64_t now_usec(clockid_t clock);
/* CPU time, user and system, of this process and of the children it has waited for. */
uint64_t cpu_usec_with_children(void);
