/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One audit of the host, for the loop (daemon.c) to run: the pipeline (probe -> checks,
 * ptmx-replaced against its baseline among them -> Ignore=), its transitions from the previous
 * audit journaled, Policy=safe's repair of what it found, then the state file, the Prometheus
 * textfile and STATUS= brought up to date. It decides nothing of its own: what daemon/policy.h
 * says is carried out here, and what the next audit is wanted for goes back to the caller, who
 * schedules it. Failures are logged once each (struct daemon's failures).
 */
#pragma once

#include <stdbool.h>

#include "daemon/state.h"
#include "report/transitions.h"

/* Journal one transition; count what was detected for ptsguard_findings_total. */
void daemon_log_transition(struct daemon *d, const struct transition_event *e);
/* One journal entry per transition between the previous audit's findings and these. A finding
 * journaled as repaired since then leaves without a "resolved" entry. */
int daemon_log_transitions(struct daemon *d, const struct findings *now);
/* STATUS= when it changed; READY=1 with it after the first audit. */
void daemon_notify_status(struct daemon *d, bool ready);
/* Probe, analyse, run the checks (ptmx-replaced with them), drop what Ignore= ignores. Logs
 * failures. With the tracker, the probe audits the followed mounts alone unless a full read is
 * due. */
int daemon_collect(struct daemon *d, struct audit_result *ret);
/* One audit, its transitions journaled, Policy=safe applied, the outputs written. *ret_reasons
 * (enum audit_reason; 0: none) says what another audit is wanted for, even on failure: the
 * changes its watches read at its end, and REASON_REPAIR when repair's rounds ran out while each
 * still changed something. 0 or -errno. */
int daemon_audit(struct daemon *d, unsigned *ret_reasons);
