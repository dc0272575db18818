/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Processes of the namespace holding ptys of a devpts instance that is mounted nowhere in it: a
 * session left on an instance after `umount -l /dev/pts` and a new mount, or a terminal handed
 * in from another mount namespace. Its holders are the holder scan's (probe/holder-scan.h),
 * whose records of such an instance carry a device no devpts mount here has.
 */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

/* A holder of an instance that no mount here shows. */
static bool unreachable(const struct analysis *a, const struct holder *h)
{
	return !analysis_find_instance(a, h->dev);
}

/* Whether process pid holds a master of pty index: one opened through a ptmx node outside
 * devpts has that node's device, not its instance's, so any device is taken. */
static bool holds_master(const struct snapshot *s, pid_t pid, unsigned index)
{
	FOREACH_ARRAY (h, s->holders, s->n_holders)
		if (h->pid == pid && h->index == index && h->end == HOLDER_END_MASTER)
			return true;
	return false;
}

/* A slave held by a process that does not hold its master too (or an end a snapshot did not
 * record). Masters alone are the consoles container managers (conmon, containerd-shim,
 * systemd-nspawn) keep of their containers' instances, and both ends in one process are a pty's
 * keeper (lxc-start keeps each of its container's ttys so): nobody here opens those by name. */
static bool as_terminal(const struct snapshot *s, const struct holder *h)
{
	return (h->end == HOLDER_END_SLAVE || h->end == HOLDER_END_UNKNOWN) &&
	       !holds_master(s, h->pid, h->index);
}

/* A holder of both ends of a pty: its keeper, not listed. */
static bool keeper(const struct snapshot *s, const struct holder *h)
{
	return h->end == HOLDER_END_BOTH ||
	       (h->end != HOLDER_END_MASTER && holds_master(s, h->pid, h->index));
}

static bool has_terminal(const struct snapshot *s, dev_t dev)
{
	FOREACH_ARRAY (h, s->holders, s->n_holders)
		if (h->dev == dev && as_terminal(s, h))
			return true;
	return false;
}

static bool dev_done(const struct snapshot *s, const struct holder *upto, dev_t dev)
{
	for (const struct holder *h = s->holders; h < upto; h++)
		if (h->dev == dev)
			return true;
	return false;
}

static int one_instance(const struct check_info *info, const struct analysis *a, dev_t dev,
			const struct instance *reach, struct findings *out)
{
	const struct snapshot *s = a->snap;
	json_object *ev, *holders = json_object_new_array();
	_cleanup_free_ char *named = NULL, *pids = NULL;
	size_t n = 0, colliding = 0;
	struct finding *f;
	char devbuf[24];

	FOREACH_ARRAY (h, s->holders, s->n_holders) {
		bool collides;
		json_object *o;
		char *np, fdbuf[24];

		if (h->dev != dev || keeper(s, h))
			continue;
		collides = reach && check_slave_exists(a, reach, h->index);
		colliding += collides;
		if (n++ >= EVIDENCE_LIST_MAX)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "pid", json_object_new_int64(h->pid));
		json_object_object_add(o, "comm", json_object_new_string(h->comm ?: ""));
		json_object_object_add(o, "fd", h->fd >= 0 ? json_object_new_int64(h->fd) : NULL);
		json_object_object_add(o, "end",
				       json_object_new_string(holder_end_to_string(h->end)));
		json_object_object_add(o, "index", json_object_new_int64(h->index));
		/* What the name /dev/pts/N opens here: another pty (its index), or nothing. */
		json_object_object_add(o, "colliding_index",
				       collides ? json_object_new_int64(h->index) : NULL);
		json_object_array_add(holders, o);
		if (h->fd >= 0)
			snprintf(fdbuf, sizeof(fdbuf), " fd %d", h->fd);
		else
			fdbuf[0] = 0;
		if (asprintf(&np, "%s%spid %d (%s)%s on pts %u%s", named ?: "", named ? ", " : "",
			     h->pid, h->comm ?: "?", fdbuf, h->index,
			     collides ? ", whose name now opens another pty" : "") < 0) {
			json_object_put(holders);
			return -ENOMEM;
		}
		free(named);
		named = np;
		if (asprintf(&np, "%s%s%d", pids ?: "", pids ? " " : "", h->pid) < 0) {
			json_object_put(holders);
			return -ENOMEM;
		}
		free(pids);
		pids = np;
	}

	ev = json_object_new_object();
	json_object_object_add(ev, "device", json_new_devnum(dev));
	json_object_object_add(ev, "reachable_device", reach ? json_new_devnum(reach->dev) : NULL);
	json_object_object_add(ev, "holders", holders);
	json_object_object_add(ev, "holders_total", json_object_new_int64((int64_t)n));
	json_object_object_add(ev, "colliding_total", json_object_new_int64((int64_t)colliding));
	json_object_object_add(ev, "holders_scan_complete",
			       json_object_new_boolean(!s->holders_progress.partial));
	f = findings_add(out, info, colliding ? SEVERITY_CRITICAL : SEVERITY_WARNING, ev);
	if (!f)
		return -ENOMEM;
	if (reach &&
	    finding_add_mount(f, analysis_mount(a, reach->visible_mount)->id, reach->dev) < 0)
		return -ENOMEM;
	if (set_printf(
		&f->summary,
		"%zu pty fd(s) here belong to devpts instance %s, which is mounted nowhere in "
		"this namespace: %s%s",
		n, format_devnum(dev, devbuf), named, n > EVIDENCE_LIST_MAX ? ", ..." : "") < 0 ||
	    set_printf(&f->remedy,
		       "end these sessions (kill -HUP %s) and start them again from a terminal on "
		       "the instance at /dev/pts; their /dev/pts/N names cannot be repaired",
		       pids) < 0 ||
	    set_printf(&f->mountpoint, "/dev/pts") < 0)
		return -ENOMEM;
	return 0;
}

static int pty_instance_unreachable(const struct check_context *ctx, const struct check_info *info,
				    struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	const struct instance *reach = check_instance_at(a, "/dev/pts");

	FOREACH_ARRAY (h, s->holders, s->n_holders) {
		int r;

		if (!unreachable(a, h) || dev_done(s, h, h->dev) || !has_terminal(s, h->dev))
			continue;
		r = one_instance(info, a, h->dev, reach, out);
		if (r < 0)
			return r;
	}
	return 0;
}

const struct check_info check_pty_instance_unreachable = {
	.id = "pty-instance-unreachable",
	.severity = SEVERITY_CRITICAL,
	.message_id = "c45db160325043ca833cf0383b2431b8",
	.summary = "processes hold ptys of a devpts instance not mounted in their namespace",
	.explanation =
	    "A process of this mount namespace holds a pty (its slave, and perhaps the master "
	    "beside it) of a devpts instance that is mounted nowhere in the namespace: a session "
	    "left on the old instance after `umount -l /dev/pts` and a new devpts mount (or a "
	    "chroot tool's teardown that propagated), or a terminal handed in from another mount "
	    "namespace (flatpak-spawn --host, old lxc exec and docker exec). Its name /dev/pts/N "
	    "now opens another pty of the instance mounted here, or nothing: tty says \"not a "
	    "tty\", ttyname() fails ENODEV, and write, wall, utmp and anything that reopens the "
	    "terminal by name reach the wrong one. Critical when the same index names another "
	    "pty here, warning when it names none. Masters alone, and both ends in one process, "
	    "are what container managers keep of their containers' consoles and ttys (conmon, "
	    "lxc-start): not reported. Found by the search for holders, which "
	    "runs when the kernel counts more ptys than the instances mounted here show.",
	.remedy = "end the listed sessions and start them again from a terminal on the instance "
		  "mounted at /dev/pts; nothing can move a pty to another instance",
	.severity_note = "warning when no pty of the reachable instance has the same index",
	.run = pty_instance_unreachable,
};
