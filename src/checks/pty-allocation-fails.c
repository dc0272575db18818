/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

/*
 * The allocation probe's result (snapshot/allocation.h) judged against the other findings. Each
 * check's row says which failure its findings predict (struct probe_prediction; the table is in
 * docs/checks.md, "The allocation probe"). For every finding with a prediction:
 *
 *   - the probe failed at a predicted step with a predicted errno: "confirmed_by_probe": true;
 *   - the probe got past the predicted steps, or failed at one of them otherwise (another errno),
 *     or succeeded: "confirmed_by_probe": false (the finding stays: what it describes is there,
 *     but users are not, or not that way, stopped by it);
 *   - the probe failed before reaching any predicted step: nothing is said.
 *
 * A failure no critical finding confirms is this check's finding: one only a warning confirms
 * (ptmx-mode at 0600, pty-capacity at the limit) still leaves users without a pty, so it is
 * reported, critical, naming the finding that predicted it and taking its remedy. It runs after
 * every other check (after_others), reading their findings in out.
 */

static bool errno_predicted(const struct probe_prediction *p, int e)
{
	if (!p->errnos[0])
		return true;
	for (size_t i = 0; i < ELEMENTSOF(p->errnos) && p->errnos[i]; i++)
		if (p->errnos[i] == e)
			return true;
	return false;
}

static int pty_allocation_fails(const struct check_context *ctx, const struct check_info *info,
				struct findings *out)
{
	const struct alloc_probe *p = &ctx->snap->probe;
	enum alloc_step failed = _ALLOC_STEP_MAX;
	bool has_failed, confirmed = false;
	const char *step, *err, *by_id = NULL, *by_remedy = NULL;
	const struct mount_entry *e;
	const struct check_info *by = NULL;
	struct finding *f;
	json_object *ev;

	if (p->status != ALLOC_PERFORMED)
		return 0;
	has_failed = alloc_probe_failed(p, &failed);
	FOREACH_ARRAY (i, out->items, out->n_items) {
		const struct probe_prediction *pred = &i->check->predicts;
		/* The predicted steps the probe reached: all of them when it succeeded. */
		unsigned reached = has_failed ? ALLOC_STEP_BIT(failed + 1) - 1 : ~0u;
		bool yes;

		if (!pred->steps || i->predicts_nothing || !(pred->steps & reached))
			continue;
		yes = has_failed && (pred->steps & ALLOC_STEP_BIT(failed)) &&
		      (p->mismatch || errno_predicted(pred, p->error));
		json_object_object_add(i->evidence, "confirmed_by_probe",
				       json_object_new_boolean(yes));
		if (yes && i->severity == SEVERITY_CRITICAL)
			confirmed = true;
		else if (yes && !by_id) {
			/* Static strings or ones out owns: neither moves when findings_add()
			 * grows the array. */
			by = i->check;
			by_id = by->id;
			by_remedy = i->remedy;
		}
	}
	if (!has_failed || confirmed)
		return 0;

	step = alloc_step_to_string(failed);
	err = errno_name(p->error) ?: "an unknown error";
	ev = json_object_new_object();
	json_object_object_add(ev, "step", json_object_new_string(step));
	json_object_object_add(ev, "errno", errno_to_json(p->error));
	json_object_object_add(ev, "uid", json_object_new_int64(p->uid));
	json_object_object_add(ev, "gid", json_object_new_int64(p->gid));
	json_object_object_add(ev, "ptsname",
			       p->ptsname[0] ? json_object_new_string(p->ptsname) : NULL);
	if (by_id)
		json_object_object_add(ev, "predicted_by", json_object_new_string(by_id));
	f = findings_add(out, info, info->severity, ev);
	if (!f || set_printf(&f->mountpoint, "%s", PTMX_PATH) < 0)
		return -ENOMEM;
	f->predicted_by = by;
	if (by_id) {
		if (set_printf(&f->summary,
			       "uid %u (gid %u) cannot allocate a pty: %s failed with %s, as %s "
			       "predicts",
			       (unsigned)p->uid, (unsigned)p->gid, step, err, by_id) < 0 ||
		    set_printf(&f->remedy, "%s, the remedy of %s", by_remedy ?: "see it", by_id) <
			0)
			return -ENOMEM;
		return 0;
	}
	if (p->mismatch) {
		if (set_printf(&f->summary,
			       "a pty allocated by uid %u is not the one its name %s opens, and no "
			       "other finding explains it",
			       (unsigned)p->uid, p->ptsname) < 0)
			return -ENOMEM;
	} else if (set_printf(&f->summary,
			      "uid %u (gid %u) cannot allocate a pty: %s failed with %s, and no "
			      "other finding explains it",
			      (unsigned)p->uid, (unsigned)p->gid, step, err) < 0)
		return -ENOMEM;
	/* Every device node on a nodev mount fails to open with EACCES, whatever its mode: the
	 * serving devpts mounted nodev fails every slave open, and mountinfo says so. */
	e = analysis_serving_mount(ctx->a);
	if (e && failed == ALLOC_STEP_OPEN_SLAVE && p->error == EACCES &&
	    option_get(e->mount_options, "nodev", NULL)) {
		json_object_object_add(ev, "nodev", json_object_new_string(e->mountpoint));
		if (set_printf(
			&f->remedy,
			"the devpts at %s is mounted nodev, so no slave can be opened: mount "
			"-o remount,dev %s (and drop nodev from what mounts it: fstab, the "
			"container's mount options)",
			e->mountpoint, e->mountpoint) < 0)
			return -ENOMEM;
		return 0;
	}
	if (set_printf(&f->remedy,
		       "find what denies %s to uid %u beyond the mount table: an LSM (journalctl "
		       "-k | grep -i -e apparmor -e avc), the device cgroup (c 5:2 and c 136:* "
		       "rw), a seccomp filter (Seccomp: in /proc/PID/status); reproduce with "
		       "setpriv --reuid=%u --regid=%u --clear-groups script -qc true /dev/null",
		       step, (unsigned)p->uid, (unsigned)p->uid, (unsigned)p->gid) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_pty_allocation_fails = {
	.id = "pty-allocation-fails",
	.severity = SEVERITY_CRITICAL,
	.message_id = "5ec6e8577438442e9fbb7ed50308c509",
	.summary = "an unprivileged user cannot allocate a pty, and no critical finding says why",
	.explanation =
	    "Live audits as root allocate a pty the way programs do, from a child that runs as "
	    "an unprivileged user (nobody, or [Probe] User=): open /dev/ptmx, grantpt, "
	    "unlockpt, ptsname, open the slave by that name, and compare it with the slave "
	    "TIOCGPTPEER gives. That allocation failed. When no other finding predicts the step "
	    "it failed at, what denies it is outside what ptsguard reads statically: a Linux "
	    "security module (AppArmor, SELinux), the device cgroup, a seccomp filter, or a "
	    "kernel quirk. When a critical finding predicts it, that finding says "
	    "\"confirmed_by_probe\": true instead, and this one is not reported. When only a "
	    "warning predicts it (/dev/ptmx of mode 0600, no pty left), it is reported here all "
	    "the same, naming that warning (\"predicted_by\") and taking its remedy: users are "
	    "without ptys either way.",
	.remedy = "look beyond the mount table for what denies the failing step to the user: "
		  "the kernel log for LSM denials, the device cgroup (c 5:2 and c 136:* rw), "
		  "seccomp filters",
	.run = pty_allocation_fails,
	.after_others = true,
};
