/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's scheduling rule (daemon/schedule.h) on a fake clock: coalescing, the CPU share,
 * the flags, and a burst of wake-ups run through it as the daemon's timer would. */
#include "daemon/policy.h"
#include "test.h"
#include "util/clock.h"

#define MS USEC_PER_MSEC

static const struct schedule_rule rule = { .window_usec = 50 * MS, .cpu_percent = 10 };

static void test_first_run(void)
{
	struct schedule s = { 0 };

	/* Never ran: at once, or a window from now when the change waits for its explanation. */
	EXPECT_INT(schedule_due(&s, &rule, 7 * MS, 0), 7 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 7 * MS, SCHEDULE_WAIT_WINDOW), 57 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 7 * MS, SCHEDULE_COST_UNKNOWN), 7 * MS);
}

static void test_window(void)
{
	struct schedule s = { 0 };

	schedule_start(&s, 1000 * MS);
	schedule_end(&s, 1001 * MS); /* 1 ms: at 10 %, the next no sooner than 10 ms after */
	EXPECT_INT(s.last_usec, 1 * MS);
	/* Within the window after the run: at its end. */
	EXPECT_INT(schedule_due(&s, &rule, 1002 * MS, 0), 1050 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 1049 * MS, 0), 1050 * MS);
	/* After a quiet window: at once. */
	EXPECT_INT(schedule_due(&s, &rule, 1050 * MS, 0), 1050 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 5000 * MS, 0), 5000 * MS);
	/* A change of /dev/ptmx waits a whole window from now, quiet or not. */
	EXPECT_INT(schedule_due(&s, &rule, 1002 * MS, SCHEDULE_WAIT_WINDOW), 1052 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 5000 * MS, SCHEDULE_WAIT_WINDOW), 5050 * MS);
}

static void test_cpu_share(void)
{
	struct schedule s = { 0 };

	/* 20 ms at 10 %: the next no sooner than 200 ms after the start, past the window. */
	schedule_start(&s, 1000 * MS);
	schedule_end(&s, 1020 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 1021 * MS, 0), 1200 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 1100 * MS, SCHEDULE_WAIT_WINDOW), 1200 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 1180 * MS, SCHEDULE_WAIT_WINDOW), 1230 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 1300 * MS, 0), 1300 * MS);
	/* A cost that says nothing of the next run: the window alone. */
	EXPECT_INT(schedule_due(&s, &rule, 1021 * MS, SCHEDULE_COST_UNKNOWN), 1050 * MS);
	/* No share at all. */
	EXPECT_INT(
	    schedule_due(&s, &(struct schedule_rule){ .window_usec = 50 * MS }, 1021 * MS, 0),
	    1050 * MS);
	/* All of one CPU: the next may start as the last ends. */
	EXPECT_INT(
	    schedule_due(&s, &(struct schedule_rule){ .window_usec = 5 * MS, .cpu_percent = 100 },
			 1021 * MS, 0),
	    1021 * MS);

	/* While a run goes on, the last finished one's cost counts from the new start. */
	schedule_start(&s, 2000 * MS);
	EXPECT_INT(schedule_due(&s, &rule, 2001 * MS, 0), 2200 * MS);
}

static void test_flags(void)
{
	EXPECT_INT(schedule_flags(REASON_PTMX), SCHEDULE_WAIT_WINDOW);
	EXPECT_INT(schedule_flags(REASON_PTMX | REASON_UDEV | REASON_MOUNT), SCHEDULE_WAIT_WINDOW);
	EXPECT_INT(schedule_flags(REASON_UDEV), 0);
	EXPECT_INT(schedule_flags(REASON_MOUNT | REASON_PTS | REASON_RELOAD | REASON_HOLDERS |
				  REASON_HELPER | REASON_RETRY | REASON_REPAIR),
		   0);
}

/* A wake-up every `every` for `length`, each run costing `cost`, through a one-shot timer that
 * stands once armed (the daemon's audit timer): how many runs. */
static unsigned burst(const struct schedule_rule *r, uint64_t every, uint64_t length, uint64_t cost,
		      unsigned flags)
{
	struct schedule s = { 0 };
	uint64_t armed = 0, now = 1000 * MS; /* 0: not armed */
	unsigned runs = 0;

	for (uint64_t t = now; t < now + length || armed; t += MS) {
		if (armed && t >= armed) {
			schedule_start(&s, t);
			schedule_end(&s, t + cost);
			runs++;
			armed = 0;
		}
		if ((t - now) % every == 0 && t < now + length && !armed)
			armed = schedule_due(&s, r, t, flags) ?: 1;
	}
	return runs;
}

static void test_burst(void)
{
	struct schedule_rule cheap = { .window_usec = 50 * MS, .cpu_percent = 100 };
	struct schedule_rule costly = { .window_usec = 50 * MS, .cpu_percent = 1 };
	unsigned n;

	/* One second of wake-ups every millisecond: one run per window (and the first at once). */
	n = burst(&cheap, 1 * MS, 1000 * MS, 1 * MS, 0);
	CHECK_MSG(n >= 20 && n <= 22, "cheap burst: %u runs, expected about 21", n);
	/* Each costing 5 ms at 1 %: one run per 500 ms. */
	n = burst(&costly, 1 * MS, 1000 * MS, 5 * MS, 0);
	CHECK_MSG(n >= 2 && n <= 3, "costly burst: %u runs, expected 2 or 3", n);
	/* The same with the cost not counting: the window again. */
	n = burst(&costly, 1 * MS, 1000 * MS, 5 * MS, SCHEDULE_COST_UNKNOWN);
	CHECK_MSG(n >= 20 && n <= 22, "burst of unknown cost: %u runs, expected about 21", n);
	/* Wake-ups further apart than the window: each its own run. */
	n = burst(&cheap, 100 * MS, 1000 * MS, 1 * MS, 0);
	EXPECT_INT(n, 10);
}

int main(void)
{
	test_first_run();
	test_window();
	test_cpu_share();
	test_flags();
	test_burst();
	return test_result("test-schedule");
}
