/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/policy.h"
#include "report/transitions.h"
#include "util/alloc.h"
#include "util/macro.h"
#include "util/strv.h"

/* ---- scheduling ---- */

struct schedule_rule schedule_rule_from_config(const struct config *c)
{
	return (struct schedule_rule){ .window_usec = c->coalesce_usec,
				       .cpu_percent = c->audit_cpu_percent };
}

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

uint64_t timer_accuracy(uint64_t due, uint64_t now)
{
	return due <= now ? 1 : TIMER_ACCURACY_USEC;
}

/* ---- the host's audit ---- */

bool holder_pacing_put_off(const struct holder_pacing *p, bool search_started)
{
	return p->judged_without_holders && !p->put_off && !search_started;
}

struct timer_decision holder_pacing_after(struct holder_pacing *p, bool put_off, int result,
					  uint64_t now, uint64_t max_age)
{
	p->put_off = put_off && result == HOLDERS_PARTIAL;
	switch (result) {
	case HOLDERS_PARTIAL:
		return (struct timer_decision){ TIMER_AT, now };
	case HOLDERS_NONE_COVERED:
		return (struct timer_decision){ TIMER_OFF, 0 };
	case HOLDERS_SCANNED:
		return (struct timer_decision){ TIMER_AT, now + max_age };
	default:
		return (struct timer_decision){ TIMER_LEAVE, 0 };
	}
}

bool torn_audit_set_aside(unsigned *torn_audits, unsigned woken)
{
	if ((woken & REASON_PTMX) && *torn_audits < TORN_AUDITS_MAX) {
		(*torn_audits)++;
		return true;
	}
	*torn_audits = 0;
	return false;
}

uint64_t output_retry_next(uint64_t current, bool failed)
{
	if (!failed)
		return 0;
	if (current == 0)
		return OUTPUT_RETRY_MIN_USEC;
	return current * 2 > OUTPUT_RETRY_MAX_USEC ? OUTPUT_RETRY_MAX_USEC : current * 2;
}

/* ---- Policy=safe ---- */

char *finding_try_key(const struct finding *f)
{
	_cleanup_free_ char *key = finding_key(f), *ev = finding_evidence_text(f);
	char *k;

	if (!key || !ev || asprintf(&k, "%s\t%s", key, ev) < 0)
		return NULL;
	return k;
}

/* Is try_key an appearance of a finding with key (finding_key())? */
static bool try_key_has_key(const char *try_key, const char *key)
{
	size_t n = strlen(key);

	return strncmp(try_key, key, n) == 0 && try_key[n] == '\t';
}

int repair_tries_prune(char ***tried, const struct findings *now)
{
	_cleanup_strv_free_ char **keep = NULL;

	for (char **t = *tried; t && *t; t++) {
		bool present = false;

		FOREACH_ARRAY (f, now->items, now->n_items) {
			_cleanup_free_ char *key = finding_key(f);

			if (!key)
				return -ENOMEM;
			present = present || try_key_has_key(*t, key);
		}
		if (present && strv_extend(&keep, *t) < 0)
			return -ENOMEM;
	}
	strv_free(*tried);
	*tried = TAKE_PTR(keep);
	return 0;
}

int repair_tries_select(char ***tried, const struct findings *now, struct findings *fresh)
{
	*fresh = (struct findings){ 0 };
	FOREACH_ARRAY (f, now->items, now->n_items) {
		char *key;
		int r = 0;

		if (!finding_repairable(f))
			continue;
		key = finding_try_key(f);
		if (!key)
			r = -ENOMEM;
		else if (strv_contains(*tried, key))
			free(key);
		else if (strv_push(tried, key) < 0 ||
			 GROW(fresh->items, fresh->allocated, fresh->n_items + 1) < 0)
			r = -ENOMEM;
		else
			fresh->items[fresh->n_items++] = *f; /* borrowed: freed with now */
		if (r < 0) {
			free(fresh->items);
			*fresh = (struct findings){ 0 };
			return r;
		}
	}
	return 0;
}

enum repair_round_next repair_round_next(unsigned round, bool tried)
{
	if (!tried)
		return REPAIR_ROUND_DONE;
	return round + 1 >= REPAIR_ROUNDS_MAX ? REPAIR_ROUND_NEXT_AUDIT : REPAIR_ROUND_AGAIN;
}

/* ---- the namespace follower ---- */

size_t ns_pass_index(size_t resume, size_t k, size_t n)
{
	return (resume + k) % n;
}

void ns_pass_begin(struct ns_pass *p, uint64_t now)
{
	*p = (struct ns_pass){ .start = now };
}

enum ns_pass_step ns_pass_next(struct ns_pass *p, size_t i, bool dirty, uint64_t found,
			       uint64_t now)
{
	uint64_t settles = found + NAMESPACE_SETTLE_USEC;

	if (!dirty)
		return NS_PASS_SKIP;
	if (settles > p->start) {
		if (p->settled == 0 || settles < p->settled)
			p->settled = settles;
		return NS_PASS_WAIT;
	}
	if (now - p->start >= PASS_BUDGET_USEC) {
		p->resume = i;
		p->cut = true;
		return NS_PASS_STOP;
	}
	return NS_PASS_AUDIT;
}

size_t follow_limit(uint64_t nofile)
{
	uint64_t room;

	if (nofile == UINT64_MAX)
		return FOLLOWED_MAX;
	room = nofile > FDS_RESERVED ? (nofile - FDS_RESERVED) / FDS_PER_NAMESPACE : 0;
	return room < FOLLOWED_MAX ? (size_t)room : FOLLOWED_MAX;
}

enum follow_new follow_new(size_t n, size_t max, bool privileged)
{
	if (n < max)
		return FOLLOW_NEW_YES;
	return privileged ? FOLLOW_NEW_IN_PLACE : FOLLOW_NEW_NO;
}
