/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's decisions (daemon/policy.h) on a fake clock, each driven as the daemon drives
 * it: the scheduling rule (coalescing, the CPU share, the flags, a burst of wake-ups through a
 * one-shot timer), the holder search put off and its timer, audits set aside for a torn
 * /dev/ptmx, the output retry backoff, Policy=safe's tries and rounds, and the namespace
 * follower's settle time, pass budget, resume point and follow limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/checks.h"
#include "daemon/policy.h"
#include "test.h"
#include "util/clock.h"
#include "util/json-util.h"
#include "util/string-util.h"
#include "util/strv.h"

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

static void test_rule_from_config(void)
{
	struct config c = { .coalesce_usec = 250 * MS, .audit_cpu_percent = 7 };
	struct schedule_rule r = schedule_rule_from_config(&c);

	EXPECT_INT(r.window_usec, 250 * MS);
	EXPECT_INT(r.cpu_percent, 7);
}

static void test_timer_accuracy(void)
{
	/* Due now or past: the loop's next turn, not up to a millisecond later. */
	EXPECT_INT(timer_accuracy(5 * MS, 5 * MS), 1);
	EXPECT_INT(timer_accuracy(4 * MS, 5 * MS), 1);
	EXPECT_INT(timer_accuracy(5 * MS + 1, 5 * MS), TIMER_ACCURACY_USEC);
	EXPECT_INT(TIMER_ACCURACY_USEC, 1 * MS);
}

/* The host's holder search over audits: put off once after findings judged with no holder, never
 * twice in a row, and the timer each result arms. */
static void test_holder_pacing(void)
{
	const uint64_t max_age = 60 * USEC_PER_SEC;
	struct holder_pacing p = { 0 };
	struct timer_decision t;
	uint64_t now = 1000 * MS;

	/* The last findings had holders: never put off. */
	EXPECT(!holder_pacing_put_off(&p, false));

	/* An overmount appears where the findings kept had no holder: put off at this audit, which
	 * reports the search partial; the timer audits again at once. */
	p.judged_without_holders = true;
	EXPECT(holder_pacing_put_off(&p, false));
	t = holder_pacing_after(&p, true, HOLDERS_PARTIAL, now, max_age);
	EXPECT_INT(t.action, TIMER_AT);
	EXPECT_INT(t.usec, now);
	EXPECT(p.put_off);

	/* The next audit: not put off again, though its findings were judged with no holder. */
	now += 10 * MS;
	EXPECT(!holder_pacing_put_off(&p, false));
	/* Its search, in slices, is still under way: audit again at once, not put off. */
	t = holder_pacing_after(&p, false, HOLDERS_PARTIAL, now, max_age);
	EXPECT_INT(t.action, TIMER_AT);
	EXPECT_INT(t.usec, now);
	EXPECT(!p.put_off);
	/* A search under way is never put off. */
	EXPECT(!holder_pacing_put_off(&p, true));

	/* It completes: searched again when it expires, max_age from now. */
	now += 10 * MS;
	t = holder_pacing_after(&p, false, HOLDERS_SCANNED, now, max_age);
	EXPECT_INT(t.action, TIMER_AT);
	EXPECT_INT(t.usec, now + max_age);
	/* The cache reused: the timer armed for its expiry stands. */
	t = holder_pacing_after(&p, false, HOLDERS_REUSED, now + MS, max_age);
	EXPECT_INT(t.action, TIMER_LEAVE);
	/* Nothing covered any more: no timer. */
	t = holder_pacing_after(&p, false, HOLDERS_NONE_COVERED, now + 2 * MS, max_age);
	EXPECT_INT(t.action, TIMER_OFF);

	/* A put-off search that found nothing to search: not counted as put off. */
	p = (struct holder_pacing){ .judged_without_holders = true };
	(void)holder_pacing_after(&p, true, HOLDERS_NONE_COVERED, now, max_age);
	EXPECT(!p.put_off);
	EXPECT(holder_pacing_put_off(&p, false));
}

static void test_torn_audits(void)
{
	unsigned torn = 0;

	/* /dev/ptmx changes during every audit: TORN_AUDITS_MAX set aside, then one reported. */
	for (unsigned i = 1; i <= TORN_AUDITS_MAX; i++) {
		EXPECT(torn_audit_set_aside(&torn, REASON_PTMX | REASON_MOUNT));
		EXPECT_INT(torn, i);
	}
	EXPECT(!torn_audit_set_aside(&torn, REASON_PTMX));
	EXPECT_INT(torn, 0);
	/* And the count starts again after one is reported. */
	EXPECT(torn_audit_set_aside(&torn, REASON_PTMX));
	EXPECT_INT(torn, 1);
	/* Other changes during an audit set nothing aside, and end the run of torn ones. */
	EXPECT(!torn_audit_set_aside(&torn, REASON_MOUNT | REASON_UDEV | REASON_PTS));
	EXPECT_INT(torn, 0);
	EXPECT(!torn_audit_set_aside(&torn, 0));
	EXPECT_INT(TORN_AUDITS_MAX, 3);
}

/* The output files fail to be written at each audit the retry timer wakes, on a fake clock:
 * the retries double from OUTPUT_RETRY_MIN_USEC and are capped at OUTPUT_RETRY_MAX_USEC; a
 * write that works stops them, and the next failure starts from the minimum again. */
static void test_output_retry(void)
{
	const uint64_t want[] = { 100 * MS, 200 * MS, 400 * MS, 800 * MS, 1000 * MS, 1000 * MS };
	uint64_t interval = 0, now = 5000 * MS;

	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		interval = output_retry_next(interval, true);
		EXPECT_INT(interval, want[i]);
		now += interval; /* the retry timer fires, the audit fails to write again */
	}
	EXPECT_INT(now, 5000 * MS + 3500 * MS);
	EXPECT_INT(output_retry_next(interval, false), 0);
	EXPECT_INT(output_retry_next(0, false), 0);
	EXPECT_INT(output_retry_next(0, true), OUTPUT_RETRY_MIN_USEC);
	/* At the cap exactly, and past it. */
	EXPECT_INT(output_retry_next(OUTPUT_RETRY_MAX_USEC / 2, true), OUTPUT_RETRY_MAX_USEC);
	EXPECT_INT(output_retry_next(OUTPUT_RETRY_MAX_USEC / 2 + 1, true), OUTPUT_RETRY_MAX_USEC);
	EXPECT_INT(output_retry_next(OUTPUT_RETRY_MAX_USEC / 2 - 1, true),
		   OUTPUT_RETRY_MAX_USEC - 2);
}

/* A finding of check id on mount mount_id at mountpoint, with evidence (JSON text). */
static struct finding *add(struct findings *f, const char *id, const char *mountpoint,
			   unsigned mount_id, const char *evidence)
{
	const struct check_info *info = check_find(id);
	struct finding *x;

	CHECK_MSG(info, "no check %s", id);
	if (!info)
		return NULL;
	x = findings_add(f, info, SEVERITY_WARNING, json_tokener_parse(evidence));
	CHECK_MSG(x, "findings_add");
	if (!x)
		return NULL;
	x->mountpoint = strdup_or_null(mountpoint);
	EXPECT_INT(finding_add_mount(x, mount_id, 0), 0);
	return x;
}

/* One audit's Policy=safe selection: what it tries, as "check@mount" words, in order. */
static char *audit_tries(char ***tried, const struct findings *now)
{
	struct findings fresh;
	char *out = NULL;

	EXPECT_INT(repair_tries_prune(tried, now), 0);
	EXPECT_INT(repair_tries_select(tried, now, &fresh), 0);
	for (size_t i = 0; i < fresh.n_items; i++) {
		const struct finding *f = &fresh.items[i];
		char *joined;

		if (asprintf(&joined, "%s%s%s@%u", out ?: "", out ? " " : "", f->check->id,
			     f->n_mount_ids ? f->mount_ids[0] : 0) < 0)
			joined = NULL;
		free(out);
		out = joined;
	}
	free(fresh.items); /* borrowed: the findings are now's */
	return out ? out : strdup("");
}

#define EXPECT_TRIES(tried, now, want)                                                             \
	do {                                                                                       \
		char *_got = audit_tries(tried, now);                                              \
		EXPECT_STR(_got, want);                                                            \
		free(_got);                                                                        \
	} while (0)

/* Each appearance of a repairable finding is tried once: again only when its evidence changed,
 * or when it went away and came back. */
static void test_repair_tries(void)
{
	char **tried = NULL;
	struct findings a = { 0 }, b = { 0 }, c = { 0 }, none = { 0 };

	add(&a, "pty-slave-perms", "/dev/pts", 30, "{\"slaves\":[3]}");
	add(&a, "pts-covered", "/dev/pts", 31, "{}"); /* not repairable */
	add(&a, "devpts-gid-mismatch", "/dev/pts", 30, "{\"gid\":0}");
	{
		struct finding *m = add(&a, "devpts-gid-mismatch", "/mnt/pts", 40, "{\"gid\":0}");

		if (m)
			m->manual = true; /* its repair is the operator's: never tried */
	}

	/* The first audit tries both repairable ones, in order. */
	EXPECT_TRIES(&tried, &a, "pty-slave-perms@30 devpts-gid-mismatch@30");
	EXPECT_INT(strv_length(tried), 2);
	/* They stay as they were (the repair could not fix them): not tried again. */
	EXPECT_TRIES(&tried, &a, "");
	EXPECT_TRIES(&tried, &a, "");

	/* One more slave with the wrong mode: a new appearance, tried; the other one is not. */
	add(&b, "pty-slave-perms", "/dev/pts", 30, "{\"slaves\":[3,4]}");
	add(&b, "devpts-gid-mismatch", "/dev/pts", 30, "{\"gid\":0}");
	EXPECT_TRIES(&tried, &b, "pty-slave-perms@30");
	/* Back to the evidence tried first while the key stayed: tried already. */
	EXPECT_TRIES(&tried, &a, "");
	EXPECT_INT(strv_length(tried), 3);

	/* The slaves' finding goes away: its tries are forgotten; the other's kept. */
	add(&c, "devpts-gid-mismatch", "/dev/pts", 30, "{\"gid\":0}");
	EXPECT_TRIES(&tried, &c, "");
	EXPECT_INT(strv_length(tried), 1);
	/* It comes back: tried again. */
	EXPECT_TRIES(&tried, &a, "pty-slave-perms@30");

	/* Nothing left: nothing remembered. */
	EXPECT_TRIES(&tried, &none, "");
	EXPECT_INT(strv_length(tried), 0);

	strv_free(tried);
	findings_done(&a);
	findings_done(&b);
	findings_done(&c);
}

/* The rounds of one audit's repairs: while each round tries something, up to REPAIR_ROUNDS_MAX,
 * then another audit. */
static void test_repair_rounds(void)
{
	unsigned rounds;
	enum repair_round_next step;

	EXPECT_INT(repair_round_next(0, false), REPAIR_ROUND_DONE);
	EXPECT_INT(repair_round_next(0, true), REPAIR_ROUND_AGAIN);
	EXPECT_INT(repair_round_next(REPAIR_ROUNDS_MAX - 2, true), REPAIR_ROUND_AGAIN);
	EXPECT_INT(repair_round_next(REPAIR_ROUNDS_MAX - 1, true), REPAIR_ROUND_NEXT_AUDIT);
	EXPECT_INT(repair_round_next(REPAIR_ROUNDS_MAX - 1, false), REPAIR_ROUND_DONE);

	/* Every re-audit exposes something new: the cap, then the next audit. */
	rounds = 0;
	do
		step = repair_round_next(rounds++, true);
	while (step == REPAIR_ROUND_AGAIN);
	EXPECT_INT(rounds, REPAIR_ROUNDS_MAX);
	EXPECT_INT(step, REPAIR_ROUND_NEXT_AUDIT);
	/* The second round finds nothing left to try: done, no audit asked for. */
	rounds = 0;
	do
		step = repair_round_next(rounds, rounds == 0), rounds++;
	while (step == REPAIR_ROUND_AGAIN);
	EXPECT_INT(rounds, 2);
	EXPECT_INT(step, REPAIR_ROUND_DONE);
}

/* A namespace of a pass: whether it changed, when it was found, what its audit costs. */
struct fake_ns {
	bool dirty;
	uint64_t found, cost;
	unsigned audits;
};

/* One pass at start over ns (n of them) from *resume, each audit advancing the fake clock by
 * its cost, as follower_on_audit_timer() runs it. Returns the pass; *resume updated when cut. */
static struct ns_pass run_pass(struct fake_ns *ns, size_t n, size_t *resume, uint64_t start)
{
	struct ns_pass p;
	uint64_t clock = start;

	ns_pass_begin(&p, start);
	for (size_t k = 0; k < n; k++) {
		size_t i = ns_pass_index(*resume, k, n);
		enum ns_pass_step step = ns_pass_next(&p, i, ns[i].dirty, ns[i].found, clock);

		if (step == NS_PASS_STOP) {
			*resume = p.resume;
			break;
		}
		if (step == NS_PASS_AUDIT) {
			ns[i].audits++;
			ns[i].dirty = false;
			clock += ns[i].cost;
		}
	}
	return p;
}

static void test_ns_pass_settle(void)
{
	const uint64_t t = 10000 * MS;
	struct fake_ns ns[3] = {
		{ .dirty = true,
		  .found = t - NAMESPACE_SETTLE_USEC,
		  .cost = MS }, /* just settled */
		{ .dirty = true, .found = t - NAMESPACE_SETTLE_USEC + 1, .cost = MS },
		{ .dirty = true, .found = t - 100 * MS, .cost = MS },
	};
	size_t resume = 0;
	struct ns_pass p = run_pass(ns, 3, &resume, t);

	/* The one found a whole settle time ago is audited; the two younger wait, and the pass says
	 * when the first of them settles. */
	EXPECT_INT(ns[0].audits, 1);
	EXPECT_INT(ns[1].audits, 0);
	EXPECT_INT(ns[2].audits, 0);
	EXPECT_INT(p.settled, t + 1);
	EXPECT(!p.cut);
	/* At that time, the first; at the next settle time, the other. */
	p = run_pass(ns, 3, &resume, p.settled);
	EXPECT_INT(ns[1].audits, 1);
	EXPECT_INT(ns[2].audits, 0);
	EXPECT_INT(p.settled, t - 100 * MS + NAMESPACE_SETTLE_USEC);
	p = run_pass(ns, 3, &resume, p.settled);
	EXPECT_INT(ns[2].audits, 1);
	EXPECT_INT(p.settled, 0);
	/* Nothing changed: a pass audits nothing. */
	p = run_pass(ns, 3, &resume, t + 10 * USEC_PER_SEC);
	EXPECT_INT(ns[0].audits + ns[1].audits + ns[2].audits, 3);
	EXPECT_INT(NAMESPACE_SETTLE_USEC, 500 * MS);
}

static void test_ns_pass_budget(void)
{
	struct fake_ns ns[10];
	size_t resume = 0;
	struct ns_pass p;
	unsigned total = 0;

	/* Ten changed namespaces, 20 ms each: a 50 ms budget audits three a pass (the third
	 * starts at 40 ms, the fourth would at 60 ms), then stops and resumes where it stopped. */
	for (size_t i = 0; i < 10; i++)
		ns[i] = (struct fake_ns){ .dirty = true, .cost = 20 * MS };
	p = run_pass(ns, 10, &resume, 100 * USEC_PER_SEC);
	EXPECT(p.cut);
	EXPECT_INT(resume, 3);
	EXPECT_INT(ns[0].audits + ns[1].audits + ns[2].audits, 3);
	EXPECT_INT(ns[3].audits, 0);
	p = run_pass(ns, 10, &resume, 101 * USEC_PER_SEC);
	EXPECT(p.cut);
	EXPECT_INT(resume, 6);
	EXPECT_INT(ns[5].audits, 1);
	EXPECT_INT(ns[6].audits, 0);
	p = run_pass(ns, 10, &resume, 102 * USEC_PER_SEC);
	EXPECT_INT(resume, 9);
	/* The last pass goes round from 9: the budget is not spent, nothing is cut. */
	p = run_pass(ns, 10, &resume, 103 * USEC_PER_SEC);
	EXPECT(!p.cut);
	for (size_t i = 0; i < 10; i++) {
		CHECK_MSG(ns[i].audits == 1, "namespace %zu audited %u times", i, ns[i].audits);
		total += ns[i].audits;
	}
	EXPECT_INT(total, 10);

	/* The budget's edge: spent exactly, the pass stops; a microsecond less, it audits. */
	ns_pass_begin(&p, USEC_PER_SEC);
	EXPECT_INT(ns_pass_next(&p, 4, true, 0, USEC_PER_SEC + PASS_BUDGET_USEC - 1),
		   NS_PASS_AUDIT);
	EXPECT(!p.cut);
	EXPECT_INT(ns_pass_next(&p, 5, true, 0, USEC_PER_SEC + PASS_BUDGET_USEC), NS_PASS_STOP);
	EXPECT(p.cut);
	EXPECT_INT(p.resume, 5);
	/* Past the budget, one that did not change is passed over, not stopped at. */
	ns_pass_begin(&p, 0);
	EXPECT_INT(ns_pass_next(&p, 2, false, 0, 10 * PASS_BUDGET_USEC), NS_PASS_SKIP);
	EXPECT(!p.cut);
	EXPECT_INT(ns_pass_index(8, 3, 10), 1);
	EXPECT_INT(PASS_BUDGET_USEC, 50 * MS);
}

static void test_follow_limit(void)
{
	EXPECT_INT(follow_limit(UINT64_MAX), FOLLOWED_MAX);
	EXPECT_INT(follow_limit(1024), (1024 - FDS_RESERVED) / FDS_PER_NAMESPACE);
	EXPECT_INT(follow_limit(FDS_RESERVED + 1), 0);
	EXPECT_INT(follow_limit(FDS_RESERVED + 2), 1);
	EXPECT_INT(follow_limit(FDS_RESERVED), 0);
	EXPECT_INT(follow_limit(10), 0);
	/* The cap, met exactly and passed. */
	EXPECT_INT(follow_limit(FDS_RESERVED + FOLLOWED_MAX * FDS_PER_NAMESPACE), FOLLOWED_MAX);
	EXPECT_INT(follow_limit(FDS_RESERVED + FOLLOWED_MAX * FDS_PER_NAMESPACE - 2),
		   FOLLOWED_MAX - 1);
	EXPECT_INT(follow_limit(1ULL << 40), FOLLOWED_MAX);

	EXPECT_INT(follow_new(0, 2, false), FOLLOW_NEW_YES);
	EXPECT_INT(follow_new(1, 2, false), FOLLOW_NEW_YES);
	EXPECT_INT(follow_new(2, 2, false), FOLLOW_NEW_NO);
	EXPECT_INT(follow_new(2, 2, true), FOLLOW_NEW_IN_PLACE);
	EXPECT_INT(follow_new(0, 0, false), FOLLOW_NEW_NO);
}

int main(void)
{
	test_first_run();
	test_window();
	test_cpu_share();
	test_flags();
	test_burst();
	test_rule_from_config();
	test_timer_accuracy();
	test_holder_pacing();
	test_torn_audits();
	test_output_retry();
	test_repair_tries();
	test_repair_rounds();
	test_ns_pass_settle();
	test_ns_pass_budget();
	test_follow_limit();
	return test_result("test-daemon-policy");
}
