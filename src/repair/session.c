/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "probe/namespace.h"
#include "report/journal.h"
#include "repair/outcomes.h"
#include "repair/session.h"
#include "util/log.h"
#include "util/strv.h"

int repair_target_still_judged(const struct namespace_target *ns, const char *when)
{
	uint64_t now = 0;
	int r = namespace_target_recheck(ns, &now);

	if (r == -ESRCH)
		log_error("repair: --namespace %d: process %d exited %s; its mount namespace %llu "
			  "is not judged again",
			  (int)ns->pid, (int)ns->pid, when, (unsigned long long)ns->mntns);
	else if (r == -ESTALE)
		log_error("repair: --namespace %d: process %d is now in mount namespace %llu, not "
			  "%llu that was judged (%s)",
			  (int)ns->pid, (int)ns->pid, (unsigned long long)now,
			  (unsigned long long)ns->mntns, when);
	else if (r == -EXDEV)
		log_error("repair: --namespace %d: process %d has another root directory now, not "
			  "%llu:%llu that was judged (%s)",
			  (int)ns->pid, (int)ns->pid, (unsigned long long)ns->root_dev,
			  (unsigned long long)ns->root_ino, when);
	else if (r < 0)
		log_error_errno(r, "repair: --namespace %d: cannot tell where process %d is now",
				(int)ns->pid, (int)ns->pid);
	return r;
}

/* Journal each outcome of the plan; remember the keys of what was repaired. */
static int journal_outcomes(struct repair_session *s)
{
	_cleanup_(transitions_done) struct transitions outcomes = { 0 };
	int r = repair_outcomes(&s->plan, &outcomes);

	if (r < 0)
		return r;
	s->repaired_keys = strv_free(s->repaired_keys);
	FOREACH_ARRAY (e, outcomes.items, outcomes.n_items) {
		r = journal_log_transition(e);
		if (r < 0) {
			if (s->journal_failed)
				s->journal_failed(s->userdata, r);
			else
				log_error_errno(r, "cannot write to the journal");
		}
		/* A repaired finding is not journaled again as resolved by the audit after it. */
		if (e->transition == TRANSITION_REPAIRED &&
		    strv_push(&s->repaired_keys, finding_key(e->finding)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* What was done before the namespace was found changed: said, since no report follows. */
static void log_actions(const struct repair_plan *p)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions)
		log_error("repair: %s %s: %s", action_result_to_string(a->result),
			  a->finding->check->id, a->detail ?: "");
}

int repair_session_run(struct repair_session *s, const struct analysis *a, const struct findings *f)
{
	struct repair_options o = {
		.dry_run = s->dry_run,
		.only = s->only,
		.verify_uid = s->verify_uid,
		.verify_gid = s->verify_gid,
		.pause_before_act = s->pause_before_act,
		.repairable_only = s->repairable_only,
		.policy = &s->config->check_policy,
		.tty_gid = a->snap->tty_gid,
		.ptmx_symlink = s->config->ptmx_symlink,
		.target = s->ns,
	};
	int r;

	if (!s->verify_given)
		config_probe_identity(s->config, &o.verify_uid, &o.verify_gid);
	r = repair_plan(a, f, &o, &s->plan);
	if (r >= 0 && !o.dry_run)
		r = repair_act_in(&s->plan, &o, s->ns);
	if (r < 0)
		return log_error_errno(r, "repair failed");
	if (o.dry_run)
		return 0;

	/* Verify by a fresh look at the world, of the namespace judged only. */
	if (s->ns) {
		r = repair_target_still_judged(s->ns, "during the repair");
		if (r < 0) {
			int k = journal_outcomes(s);

			log_actions(&s->plan);
			return k < 0 ? k : r;
		}
	}
	r = s->audit(s->userdata, &s->after);
	if (r < 0)
		return r;
	repair_confirm(&s->plan, &s->after.findings);
	r = journal_outcomes(s);
	if (r < 0)
		return log_error_errno(r, "cannot write to the journal");
	return 0;
}

void repair_session_done(struct repair_session *s)
{
	repair_plan_done(&s->plan);
	audit_result_done(&s->after);
	s->repaired_keys = strv_free(s->repaired_keys);
}
