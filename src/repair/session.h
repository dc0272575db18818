/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One repair session, the sequence `ptsguard repair` and the daemon's Policy=safe share: from an
 * audit and the findings to repair, the repair options out of the configuration, plan, act (in
 * the namespace judged, for repair --namespace), a fresh audit as the caller makes it, confirm
 * each action against it, and journal every outcome (repair/outcomes.h). What to repair and what
 * to do with the state after it stay with the caller: the daemon keeps its memory of what it
 * tried (daemon/repair-tries.h), the command prints its report.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "pipeline/pipeline.h"
#include "repair/repair.h"

struct repair_session {
	/* In, set by the caller. */
	const struct config *config; /* the check policy, PtmxSymlink=, the [Probe] identity */
	bool dry_run;	       /* plan only: nothing is acted on, audited again or journaled */
	char **only;	       /* check ids to repair; NULL: all */
	bool repairable_only;  /* no actions for a person (repair_options) */
	bool pause_before_act; /* tests: wait for a line on stdin between plan and act */
	/* --verify-user: the verification child's identity; else the configuration's [Probe]
	 * identity (config_probe_identity()). */
	bool verify_given;
	uid_t verify_uid;
	gid_t verify_gid;
	/* repair --namespace: the process whose namespace was audited; NULL for our own. */
	const struct namespace_target *ns;
	/* The fresh look after acting (the same kind of audit as the one repaired from); logs its
	 * own failures. */
	int (*audit)(void *userdata, struct audit_result *ret);
	/* An outcome the journal did not take (r < 0); NULL: logged as an error. */
	void (*journal_failed)(void *userdata, int r);
	void *userdata;

	/* Out, freed by repair_session_done(). */
	struct repair_plan plan;
	struct audit_result after; /* the audit after acting; empty on a dry run */
	char **repaired_keys;	   /* finding_key() of each outcome journaled as repaired */
};

/*
 * Repair the findings f of the audit whose analysis is a (f may be a part of that audit's
 * findings; they must outlive the session's plan). Returns 0 with the plan's outcomes and
 * s->after set, or a negative errno, logged: planning or acting failed, the audit after acting
 * failed, or (repair --namespace) the process left the namespace judged while the repair acted,
 * in which case what was done is journaled and said, and no audit follows.
 */
int repair_session_run(struct repair_session *s, const struct analysis *a,
		       const struct findings *f);
void repair_session_done(struct repair_session *s);

/* repair --namespace: is the process still alive and in the mount namespace judged? 0, or a
 * negative errno logged with why not; when says since when ("during the audit"). */
int repair_target_still_judged(const struct namespace_target *ns, const char *when);
