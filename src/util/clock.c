/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/resource.h>

#include "util/clock.h"

uint64_t now_usec(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t rusage_usec(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) < 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * USEC_PER_SEC +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

uint64_t cpu_usec_with_children(void)
{
	return rusage_usec(RUSAGE_SELF) + rusage_usec(RUSAGE_CHILDREN);
}
