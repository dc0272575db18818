/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What planning, acting and verifying share about one action of a plan (repair/repair.h): its
 * outcome, and for a remount the options it sets. Within src/repair/ only.
 */
#pragma once

#include "repair/repair.h"
#include "util/macro.h"

/* Record an outcome (the detail formatted); returns 0 so callers can `return
 * action_outcome(...)`. Out of memory leaves the detail NULL. */
_printf_(3, 4) int action_outcome(struct repair_action *a, enum action_result r, const char *fmt,
				  ...);

/* The devpts options a remount action sets on an instance that has the options now, with the
 * tty group and the policy of this repair: the rule every remedy follows too
 * (snapshot/devpts-options.h). */
struct devpts_options action_remount_target(const struct repair_action *a,
					    const struct devpts_options *now,
					    const struct repair_options *o);
/* a->command for those options; -ENOMEM. */
int action_remount_command(struct repair_action *a, const struct devpts_options *now,
			   const struct repair_options *o);

/* Prove an action with a pty allocated as o's verification user (repair/verify.h), and record
 * the outcome: done, failed, or inconclusive when the child was interfered with on every try.
 * With check_owner, the slave must also have the tty group and want_mode. Returns 0. */
int action_verify_pty(struct repair_action *a, const struct repair_options *o, bool check_owner,
		      mode_t want_mode);
/* Prove that /dev/tty (a->path) works: opened by o's verification user from a session whose
 * controlling terminal is a pty it allocated (repair/verify.h), and record the outcome as
 * action_verify_pty(). Returns 0. */
int action_verify_tty(struct repair_action *a, const struct repair_options *o);
/* The outcome when the verification child did not answer, r < 0: -ECANCELED when it was
 * interfered with on every one of VERIFY_ATTEMPTS tries, another errno when it could not be
 * started. Inconclusive either way, said which. Returns 0. */
int action_verify_unanswered(struct repair_action *a, int r);
