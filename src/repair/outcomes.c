/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "repair/outcomes.h"

int repair_outcomes(const struct repair_plan *p, struct transitions *ret)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		int r;

		/* Unverified is neither repaired nor failed: the next audit tells. */
		if (a->kind == ACTION_MANUAL || a->result == ACTION_PLANNED ||
		    a->result == ACTION_INCONCLUSIVE)
			continue;
		r = transitions_add(ret, a->finding,
				    a->result == ACTION_DONE ? TRANSITION_REPAIRED
							     : TRANSITION_REPAIR_FAILED,
				    a->detail);
		if (r < 0)
			return r;
	}
	return 0;
}
