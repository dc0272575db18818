/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a repair did, as transitions (report/transitions.h): an action done is
 * "repaired", one refused or failed is "repair-failed", with the action's
 * detail. Actions for a person (manual), those not acted on (dry run) and
 * those whose verification was interfered with (inconclusive) have no outcome. `ptsguard repair`
 * and the daemon journal these alike.
 */
#pragma once

#include "repair/repair.h"
#include "report/transitions.h"

/* Append the outcomes of p's actions to *ret, in plan order; they borrow from p. */
int repair_outcomes(const struct repair_plan *p, struct transitions *ret);
