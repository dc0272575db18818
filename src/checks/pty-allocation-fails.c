/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Does a devices.list line ("c 5:2 rwm", "a *:* rwm", "c 136:* rw") allow rw on c major:minor
 * (minor < 0: any minor of it)? */
static bool devices_rule_allows(const char *line, size_t n, unsigned major, int minor)
{
	char type, maj[16], min[16], acc[8];
	char buf[64];

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, line, n);
	buf[n] = 0;
	if (sscanf(buf, "%c %15[^:]:%15s %7s", &type, maj, min, acc) != 4)
		return false;
	if (type != 'a' && type != 'c')
		return false;
	if (!streq(maj, "*") && strtoul(maj, NULL, 10) != major)
		return false;
	if (!streq(min, "*") && (minor < 0 || strtol(min, NULL, 10) != minor))
		return false;
	return strchr(acc, 'r') && strchr(acc, 'w');
}

/* devices.list allows c major:minor rw: 1; does not: 0; lists "a *:* rwm", the whole list of a
 * cgroup whose default is allow, which hides its deny rules: -1. */
static int devices_list_allows(const char *list, unsigned major, int minor)
{
	int allowed = 0;

	for (const char *p = list; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n == 9 && memcmp(p, "a *:* rwm", 9) == 0)
			return -1;
		if (devices_rule_allows(p, n, major, minor))
			allowed = 1;
		p += n + (nl ? 1 : 0);
	}
	return allowed;
}

/* The systemd unit of a cgroup path: its last component that ends in .service or .scope, as a
 * pointer into path with *len, or NULL. */
static const char *cgroup_unit(const char *path, size_t *len)
{
	const char *unit = NULL;

	for (const char *p = path; *p;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if ((n > 8 && memcmp(p + n - 8, ".service", 8) == 0) ||
		    (n > 6 && memcmp(p + n - 6, ".scope", 6) == 0)) {
			unit = p;
			*len = n;
		}
		p += n + (slash ? 1 : 0);
	}
	return unit;
}

/* An open that failed with EPERM where the probe's device cgroup was read (probe/cgroup.h): the
 * remedy names that cgroup and what it belongs to. 1 when it did, 0 when the cgroup is not to
 * blame (its list allows the node), -ENOMEM. */
static int device_cgroup_remedy(const struct check_context *ctx, enum alloc_step failed,
				json_object *ev, struct finding *f)
{
	const struct device_cgroup *d = ctx->snap->device_cgroup;
	bool slave = failed == ALLOC_STEP_OPEN_SLAVE;
	const char *node = slave ? "c 136:*" : "c 5:2", *unit;
	_cleanup_free_ char *owner = NULL;
	json_object *o;
	size_t unit_len = 0;
	int allows = -1;

	if (!d || ctx->snap->probe.error != EPERM)
		return 0;
	if (d->version == 1 && d->list) {
		allows = devices_list_allows(d->list, slave ? 136 : 5, slave ? -1 : 2);
		if (allows == 1)
			return 0;
	}
	unit = cgroup_unit(d->path, &unit_len);
	if (d->container_manager) {
		if (set_printf(&owner, "container %s %s", d->container_manager,
			       d->container_name ?: "?") < 0)
			return -ENOMEM;
	} else if (unit && set_printf(&owner, "unit %.*s", (int)unit_len, unit) < 0)
		return -ENOMEM;
	o = json_object_new_object();
	json_object_object_add(o, "version", json_object_new_int64(d->version));
	json_object_object_add(o, "path", json_object_new_string(d->path));
	json_object_object_add(o, "unit",
			       unit ? json_object_new_string_len(unit, (int)unit_len) : NULL);
	json_object_object_add(o, "container",
			       d->container_manager ? json_object_new_string(owner) : NULL);
	json_object_object_add(o, "device", json_object_new_string(node));
	json_object_object_add(o, "listed",
			       allows < 0 ? NULL : json_object_new_boolean(allows == 1));
	json_object_object_add(ev, "device_cgroup", o);
	if (d->version == 2)
		return set_printf(
			   &f->remedy,
			   "a device cgroup program (cgroup v2 BPF, e.g. systemd "
			   "DevicePolicy=closed without DeviceAllow=char-pts) denies %s rw to "
			   "the processes of cgroup %s%s%s%s: allow it where that program comes "
			   "from (DeviceAllow=char-pts rw and DeviceAllow=/dev/ptmx rw for a "
			   "unit, the runtime's device rules for a container); a seccomp filter "
			   "returning EPERM does the same (Seccomp: in /proc/PID/status)",
			   node, d->path, owner ? " (" : "", owner ?: "", owner ? ")" : "") < 0
			   ? -ENOMEM
			   : 1;
	if (allows == 0)
		return set_printf(
			   &f->remedy,
			   "the device cgroup %s%s%s%s (cgroup v1) does not allow %s rw: its "
			   "devices.list has no rule for it; allow it (echo '%s rwm' > "
			   "/sys/fs/cgroup/devices%s/devices.allow, and lastingly in the unit's "
			   "DeviceAllow=char-pts or the container's device rules)",
			   d->path, owner ? " (" : "", owner ?: "", owner ? ")" : "", node, node,
			   d->path) < 0
			   ? -ENOMEM
			   : 1;
	return set_printf(&f->remedy,
			  "the device cgroup %s%s%s%s (cgroup v1) denies %s rw: its devices.list "
			  "shows only \"a *:* rwm\", which is all a cgroup whose default is allow "
			  "shows, its deny rules hidden; allow it (echo '%s rwm' > "
			  "/sys/fs/cgroup/devices%s/devices.allow, and lastingly in the unit's or "
			  "the container's device rules)",
			  d->path, owner ? " (" : "", owner ?: "", owner ? ")" : "", node, node,
			  d->path) < 0
		   ? -ENOMEM
		   : 1;
}

/* The ioctl a step of the probe makes on the master it opened, or NULL for a step that opens a
 * node (or compares): grantpt() and ptsname() ask TIOCGPTN (glibc 2.33 and later), unlockpt()
 * TIOCSPTLCK, and the peer TIOCGPTPEER. */
static const char *step_ioctl(enum alloc_step s)
{
	switch (s) {
	case ALLOC_STEP_GRANTPT:
	case ALLOC_STEP_PTSNAME:
		return "TIOCGPTN";
	case ALLOC_STEP_UNLOCKPT:
		return "TIOCSPTLCK";
	case ALLOC_STEP_PEER:
		return "TIOCGPTPEER";
	default:
		return NULL;
	}
}

/* An ioctl on the master denied (EACCES, EPERM) after /dev/ptmx opened: what can deny that. The
 * device cgroup and the node's mode are judged at open(2) and cannot; an ioctl filter can: a
 * Landlock domain that handles LANDLOCK_ACCESS_FS_IOCTL_DEV (Linux 6.10) without granting it
 * beneath /dev/pts and /dev/ptmx (EACCES), a seccomp filter on ioctl(2) (any errno it was
 * written with), an LSM's ioctl hook. 1 when it is such a failure (the remedy set), 0, -ENOMEM. */
static int ioctl_denied_remedy(const struct alloc_probe *p, enum alloc_step failed, json_object *ev,
			       struct finding *f)
{
	const char *ioctl = step_ioctl(failed);

	if (!ioctl || (p->error != EACCES && p->error != EPERM))
		return 0;
	json_object_object_add(ev, "ioctl_denied", json_object_new_string(ioctl));
	return set_printf(
		   &f->remedy,
		   "open(/dev/ptmx) succeeded and the %s ioctl on it was then denied with "
		   "%s: not the device cgroup or a mode, which are judged at open, but an "
		   "ioctl filter in the process's sandbox: a Landlock domain handling "
		   "LANDLOCK_ACCESS_FS_IOCTL_DEV (Linux 6.10+) must grant it beneath /dev/pts "
		   "and /dev/ptmx (the sandbox's rules for device ioctls), a seccomp filter "
		   "must let ioctl(2) %s pass (Seccomp: 2 in /proc/PID/status means one is "
		   "loaded; Seccomp_filters: says how many), or an LSM denies it (journalctl -k "
		   "| grep -i -e apparmor -e avc); reproduce inside the sandbox with script "
		   "-qc true /dev/null",
		   ioctl, errno_name(p->error) ?: "an error", ioctl) < 0
		   ? -ENOMEM
		   : 1;
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
		if (finding_evidence_add(i, "confirmed_by_probe", json_object_new_boolean(yes)) < 0)
			return -ENOMEM;
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
	/* An ioctl denied on a master that opened: an ioctl filter, never the device cgroup. */
	{
		int r = ioctl_denied_remedy(p, failed, ev, f);

		if (r != 0)
			return r < 0 ? r : 0;
	}
	/* EPERM opening a node: the device cgroup the probe met, when its rules do not clear it. */
	if (failed == ALLOC_STEP_OPEN_PTMX || failed == ALLOC_STEP_OPEN_SLAVE) {
		int r = device_cgroup_remedy(ctx, failed, ev, f);

		if (r != 0)
			return r < 0 ? r : 0;
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
	    "kernel quirk. An open of /dev/ptmx or of the slave failing with EPERM names the "
	    "device cgroup of the judged process (ptsguard's own for its own namespace): on "
	    "cgroup v1 its path, and whether its devices.list allows c 5:2 or c 136:*; on cgroup "
	    "v2, where the rules are a BPF program nothing lists, the cgroup that carries it; "
	    "with the systemd unit (the path's last .service or .scope) or the container it "
	    "belongs to. An ioctl on the master denied after /dev/ptmx opened (grantpt and "
	    "ptsname's TIOCGPTN, unlockpt's TIOCSPTLCK, TIOCGPTPEER) names ioctl filtering "
	    "instead: a Landlock domain handling LANDLOCK_ACCESS_FS_IOCTL_DEV without granting "
	    "it beneath /dev/pts and /dev/ptmx, or a seccomp filter on ioctl; the device cgroup "
	    "cannot deny an ioctl on a file already open. When a critical finding predicts it, "
	    "that finding says "
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
