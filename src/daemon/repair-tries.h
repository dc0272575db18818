/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Policy=safe tries each appearance of a repairable finding once: one that a repair cannot fix
 * is not tried again on every wake-up (the daemon's own remount is a mount event too). An
 * appearance is the finding's key (report/transitions.h) with its evidence: the same check on
 * the same mount with other evidence (one more slave with the wrong mode, other options) is a
 * new problem, tried in turn, whether it comes in an ordinary audit or in the re-audit after a
 * repair; one whose evidence did not change since its try is not. The tries of a key are kept
 * while a finding of that key stays (it may come back to evidence tried before: a slave of
 * root's left alone after a user's was repaired beside it).
 */
#pragma once

#include <stdbool.h>

#include "checks/checks.h"

/* The appearance of f, a string to keep while f stays (free()); NULL: out of memory. */
char *finding_try_key(const struct finding *f);
/* Is try_key an appearance of a finding with key (finding_key())? */
bool try_key_has_key(const char *try_key, const char *key);
