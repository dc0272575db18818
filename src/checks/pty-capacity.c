/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

/* Does the serving instance tap kernel.pty.reserve? The kernel decides it once, when the
 * instance is mounted: only one mounted from the initial mount namespace may (a remount keeps
 * it). The host's own instances were; a container's own were not, and one given the host's
 * instance (a bind of the host's /dev/pts) has the host's. Where it cannot be told whether
 * this is the initial mount namespace, the smaller limit is assumed. */
static bool serving_has_reserve(const struct analysis *a)
{
	const struct snapshot *s = a->snap;

	return s->initial_mount_ns || (a->serving && snapshot_is_host_instance(s, a->serving->dev));
}

static json_object *global_evidence(const struct snapshot *s, long limit, bool reserve,
				    const char *scope)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "pty_nr", json_object_new_int64(s->pty_nr));
	json_object_object_add(ev, "pty_max", json_object_new_int64(s->pty_max));
	json_object_object_add(ev, "pty_reserve", json_object_new_int64(s->pty_reserve));
	json_object_object_add(ev, "limit", json_object_new_int64(limit));
	json_object_object_add(ev, "reserve_available", json_object_new_boolean(reserve));
	json_object_object_add(ev, "scope", json_object_new_string(scope));
	json_object_object_add(ev, "mount_namespace",
			       json_object_new_string(snapshot_mount_ns_kind(s)));
	return ev;
}

/* Who holds the ptys, for a remedy: every master is an open /dev/ptmx or pts/ptmx. */
#define HOLDERS_HINT "ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c ptmx counts the masters open"

/* More ptys for everyone, or fewer held. */
static int set_capacity_remedy(struct finding *f, const struct snapshot *s)
{
	return set_printf(
	    &f->remedy,
	    "sysctl -w kernel.pty.max=%ld (and persist it in /etc/sysctl.d/), or end the "
	    "sessions that hold them (%s)",
	    s->pty_max * 2, HOLDERS_HINT);
}

static int pty_capacity(const struct check_context *ctx, const struct check_info *info,
			struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	bool reserve = serving_has_reserve(a);
	long limit = s->pty_max - (reserve ? 0 : s->pty_reserve);
	long others = s->pty_max - s->pty_reserve;
	struct finding *f;
	json_object *ev;

	if (limit > 0 && s->pty_nr * 10 >= limit * 9) {
		f = findings_add(out, info, info->severity,
				 global_evidence(s, limit, reserve, "serving-instance"));
		if (!f ||
		    set_printf(
			&f->summary, "%ld of %ld allocatable ptys are in use (kernel.pty.nr%s)",
			s->pty_nr, limit,
			reserve ? "" : " against kernel.pty.max less kernel.pty.reserve") < 0 ||
		    set_capacity_remedy(f, s) < 0)
			return -ENOMEM;
		/* Near the limit is a warning; only at it does an allocation fail. */
		f->predicts_nothing = s->pty_nr < limit;
	} else if (s->initial_mount_ns && others > 0 && s->pty_nr * 10 >= others * 9) {
		/* The host's own instance keeps the reserve; every instance mounted in another
		 * mount namespace (each container's own) stops at pty.max - pty.reserve: the
		 * containers are out of ptys while the host's still work. */
		f = findings_add(out, info, info->severity,
				 global_evidence(s, others, false, "other-mount-namespaces"));
		if (!f ||
		    set_printf(
			&f->summary,
			"%ld of the %ld ptys that instances mounted in other mount namespaces "
			"(containers' own) may allocate are in use: they fail with ENOSPC "
			"from %ld on, while this host's instance keeps kernel.pty.reserve "
			"(%ld)",
			s->pty_nr, others, others, s->pty_reserve) < 0 ||
		    set_capacity_remedy(f, s) < 0)
			return -ENOMEM;
		/* The host's own allocation is not what fails. */
		f->predicts_nothing = true;
	}

	if (a->serving && a->serving->options.has_max && a->serving->options.max > 0) {
		const struct mount_entry *e = analysis_serving_mount(a);
		unsigned in_use = 0, idx;

		FOREACH_ARRAY (node, s->nodes, s->n_nodes)
			in_use += e && node_is_slave(node, e->mountpoint, a->serving->dev, &idx);
		if ((unsigned long)in_use * 10 < (unsigned long)a->serving->options.max * 9)
			return 0;
		ev = json_object_new_object();
		json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
		json_object_object_add(ev, "max", json_object_new_int64(a->serving->options.max));
		json_object_object_add(ev, "in_use", json_object_new_int64(in_use));
		f = findings_add(out, info, info->severity, ev);
		if (!f || finding_add_mount(f, e->id, e->dev) < 0 ||
		    set_printf(&f->summary, "%u of max=%u ptys are in use on %s", in_use,
			       a->serving->options.max, e->mountpoint) < 0 ||
		    set_printf(&f->remedy, "mount -o remount,max=%u %s",
			       a->serving->options.max * 2, e->mountpoint) < 0 ||
		    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
			return -ENOMEM;
		f->predicts_nothing = in_use < a->serving->options.max;
	}
	return 0;
}

const struct check_info check_pty_capacity = {
	.id = "pty-capacity",
	.severity = SEVERITY_WARNING,
	.message_id = "d0d9f8563ea342f6ad3a4a5fef9a4e57",
	.summary = "ptys in use are near the limit",
	.explanation = "The ptys in use reach 90% of what can still be allocated: kernel.pty.nr "
		       "against the limit of the instance that serves /dev/ptmx, which is "
		       "kernel.pty.max for an instance mounted from the initial mount namespace "
		       "and kernel.pty.max less kernel.pty.reserve for any other (the kernel "
		       "decides it when the instance is mounted: a container's own instance never "
		       "has the reserve, a container given the host's instance has it), or an "
		       "instance's max= against its own count. The next allocations fail with "
		       "ENOSPC. On the host it also warns when the host's own ptys still have "
		       "room but the instances of other mount namespaces, every container's, are "
		       "at their smaller limit (\"scope\": \"other-mount-namespaces\").",
	.remedy = "sysctl -w kernel.pty.max=<larger> (and persist it in /etc/sysctl.d/), or "
		  "remount the instance with a larger max=",
	.run = pty_capacity,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX),
		      .errnos = { ENOSPC },
		      .unless = "below the limit (near it is only a warning)" },
};
