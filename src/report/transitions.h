/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Transitions of findings, as data: what became true (detected) or stopped
 * being true (resolved) between two audits, and what a repair did (repaired,
 * repair-failed). The daemon diffs each audit against the previous one; the
 * daemon and `ptsguard repair` turn repair outcomes into transitions too, and
 * both journal them the same way (journal_log_transition()).
 *
 * Which finding is the same one across audits is the findings' own rule
 * (checks/checks.h, finding_key() and finding_same_occurrence()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "checks/checks.h"

enum transition {
	TRANSITION_DETECTED,
	TRANSITION_RESOLVED,
	TRANSITION_REPAIRED,
	TRANSITION_REPAIR_FAILED,
	_TRANSITION_MAX,
};

const char *transition_to_string(enum transition t);

struct transition_event {
	const struct finding *finding; /* borrowed from the findings it came from */
	enum transition transition;
	const char *detail; /* borrowed; what a repair did, or NULL */
	/* Where, for a finding of another mount namespace than the host's (borrowed, or NULL):
	 * a prefix of the message for people (raw: the sink escapes it, for it holds what the
	 * namespace named), and "KEY=value" fields (NULL-terminated, exact). */
	const char *context;
	const char *const *context_fields;
};

struct transitions {
	struct transition_event *items;
	size_t n_items, allocated;
};

/*
 * Append to *ret the transitions from before to now: first each finding of before whose key is
 * gone, as resolved, in before's order (except those whose key is in quiet_keys, a
 * NULL-terminated list or NULL: journaled as repaired already); then each finding of now with
 * no same occurrence in before, as detected, in now's order. The events borrow the findings.
 */
int transitions_diff(const struct findings *before, const struct findings *now,
		     char *const *quiet_keys, struct transitions *ret);
int transitions_add(struct transitions *t, const struct finding *f, enum transition transition,
		    const char *detail);
void transitions_done(struct transitions *t);
