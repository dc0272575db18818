/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/parse.h"
#include "util/string-util.h"

static int devpts_orphan_in_use(const struct check_context *ctx, const struct check_info *info,
				struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;

	FOREACH_ARRAY (in, a->instances, a->n_instances) {
		const struct mount_entry *first = analysis_mount(a, in->mounts[0]);
		const struct instance *vis;
		json_object *ev, *holders = NULL, *mps;
		_cleanup_free_ char *pids = NULL;
		size_t n = 0;
		struct finding *f;
		char dev[24];

		if (!in->covered)
			continue;
		vis = check_instance_at(a, first->mountpoint);
		FOREACH_ARRAY (h, s->holders, s->n_holders) {
			json_object *o;
			char *np;

			if (h->dev != in->dev)
				continue;
			if (!holders)
				holders = json_object_new_array();
			if (n++ >= EVIDENCE_LIST_MAX)
				continue;
			o = json_object_new_object();
			json_object_object_add(o, "pid", json_object_new_int64(h->pid));
			json_object_object_add(o, "comm", json_object_new_string(h->comm ?: ""));
			json_object_object_add(o, "index", json_object_new_int64(h->index));
			/* The pty its name now opens: the same index on the visible instance,
			 * or null when that one has none. */
			json_object_object_add(o, "colliding_index",
					       vis && check_slave_exists(a, vis, h->index)
						   ? json_object_new_int64(h->index)
						   : NULL);
			json_object_array_add(holders, o);
			if (asprintf(&np, "%s%s%d (%s)", pids ?: "", pids ? ", " : "", h->pid,
				     h->comm ?: "?") < 0) {
				json_object_put(holders);
				return -ENOMEM;
			}
			free(pids);
			pids = np;
		}
		if (!holders)
			continue;

		mps = json_object_new_array();
		ev = json_object_new_object();
		json_object_object_add(ev, "device", json_new_devnum(in->dev));
		json_object_object_add(ev, "mountpoints", mps);
		json_object_object_add(ev, "visible_device",
				       vis ? json_new_devnum(vis->dev) : NULL);
		json_object_object_add(ev, "holders", holders);
		json_object_object_add(ev, "holders_total", json_object_new_int64((int64_t)n));
		/* A search cut short at its time budget: there may be more (holders_total is a
		 * lower bound). */
		json_object_object_add(ev, "holders_scan_complete",
				       json_object_new_boolean(!s->holders_progress.partial));
		f = findings_add(out, info, info->severity, ev);
		if (!f)
			return -ENOMEM;
		for (size_t i = 0; i < in->n_mounts; i++) {
			const struct mount_entry *m = analysis_mount(a, in->mounts[i]);
			json_object_array_add(mps, json_object_new_string(m->mountpoint));
			if (finding_add_mount(f, m->id, m->dev) < 0)
				return -ENOMEM;
		}
		if (set_printf(
			&f->summary,
			"covered devpts instance %s under %s still has %s%zu pty fd(s) open: their "
			"/dev/pts/N names point at other ptys%s",
			format_devnum(in->dev, dev), first->mountpoint,
			s->holders_progress.partial ? "at least " : "", n,
			s->holders_progress.partial
			    ? " (the search for holders is not complete yet)"
			    : "") < 0 ||
		    set_printf(
			&f->remedy,
			"end the sessions holding them (pid %s), then remove the duplicate devpts "
			"mount",
			pids) < 0 ||
		    set_printf(&f->mountpoint, "%s", first->mountpoint) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct check_info check_devpts_orphan_in_use = {
	.id = "devpts-orphan-in-use",
	.severity = SEVERITY_CRITICAL,
	.message_id = "ca664e673da14c99b72763f52aff2069",
	.summary = "a covered devpts instance still has ptys held open",
	.explanation = "A devpts instance that no path reaches any more still has ptys held open "
		       "by processes. ptsname() on such a master returns /dev/pts/N, which now "
		       "names a different pty (or none) on the visible instance: anything that "
		       "chowns or opens by that name (pt_chown, grantpt, session loggers, "
		       "utmp writers) acts on someone else's terminal.",
	.remedy = "restart the listed processes (their sessions) so they allocate ptys on "
		  "the visible instance, then remove the duplicate devpts mount",
	.run = devpts_orphan_in_use,
};
