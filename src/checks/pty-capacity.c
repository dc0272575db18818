/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

static int pty_capacity(const struct check_context *ctx, const struct check_info *info,
			struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	long limit = s->pty_max - (s->initial_mount_ns ? 0 : s->pty_reserve);
	struct finding *f;
	json_object *ev;

	if (limit > 0 && s->pty_nr * 10 >= limit * 9) {
		ev = json_object_new_object();
		json_object_object_add(ev, "pty_nr", json_object_new_int64(s->pty_nr));
		json_object_object_add(ev, "pty_max", json_object_new_int64(s->pty_max));
		json_object_object_add(ev, "pty_reserve", json_object_new_int64(s->pty_reserve));
		json_object_object_add(ev, "limit", json_object_new_int64(limit));
		json_object_object_add(ev, "mount_namespace",
				       json_object_new_string(snapshot_mount_ns_kind(s)));
		f = findings_add(out, info, info->severity, ev);
		if (!f ||
		    set_printf(&f->summary,
			       "%ld of %ld allocatable ptys are in use (kernel.pty.nr)", s->pty_nr,
			       limit) < 0 ||
		    set_printf(&f->remedy, "sysctl -w kernel.pty.max=%ld", s->pty_max * 2) < 0)
			return -ENOMEM;
		/* Near the limit is a warning; only at it does an allocation fail. */
		f->predicts_nothing = s->pty_nr < limit;
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
		       "against kernel.pty.max (less kernel.pty.reserve for instances mounted "
		       "outside the initial mount namespace), or an instance's max= against its "
		       "own count. The next allocations fail with ENOSPC.",
	.remedy = "sysctl -w kernel.pty.max=<larger> (and persist it in /etc/sysctl.d/), or "
		  "remount the instance with a larger max=",
	.run = pty_capacity,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX),
		      .errnos = { ENOSPC },
		      .unless = "below the limit (near it is only a warning)" },
};
