/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Journal sink: one structured entry per transition of a finding
 * (spec/interface.md, Journal), with the catalog's MESSAGE_ID so that
 * `journalctl -x` explains it. Without a journal socket the same line goes
 * to standard error.
 */
#pragma once

#include <stdbool.h>

#include "checks/checks.h"

enum transition {
	TRANSITION_DETECTED,
	TRANSITION_RESOLVED,
	TRANSITION_REPAIRED,
	TRANSITION_REPAIR_FAILED,
	_TRANSITION_MAX,
};

const char *transition_to_string(enum transition t);

/* The PRIORITY= of an entry: critical 2, warning 4, info 6; resolved and repaired 5. */
int transition_priority(enum transition t, enum severity s);

/* Log one transition of f. detail (may be NULL) is appended to the message, e.g. what a repair
 * did. Extra fields ("KEY=value", may be NULL-terminated list or NULL) are sent as they are. */
int journal_log_finding(const struct finding *f, enum transition t, const char *detail,
			const char *const *extra_fields);

/* Where entries go: the journal if its socket exists, else standard error. libsystemd always
 * uses /run/systemd/journal/socket, so tests run journald in a mount namespace with its own /run.
 */
bool journal_available(void);
