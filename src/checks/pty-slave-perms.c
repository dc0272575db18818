/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "snapshot/devpts-mode.h"
#include "util/string-util.h"

static int pty_slave_perms(const struct check_context *ctx, const struct check_info *info,
			   struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct snapshot *s = ctx->snap;
	const struct instance *in = a->serving;
	const struct mount_entry *e = analysis_serving_mount(a);
	_cleanup_free_ char *paths = NULL;
	char modes[8];
	mode_t want;
	json_object *slaves = NULL, *ev;
	struct finding *f;
	size_t n = 0;
	unsigned idx;

	if (!in || !e)
		return 0;
	want = devpts_instance_mode(s, in->dev, &in->options, ctx->policy);
	FOREACH_ARRAY (node, s->nodes, s->n_nodes) {
		/* The configuration's rule: a pinned Mode= makes a slave at the other mode one to
		 * fix, as devpts-options-lost does for the instance. */
		bool mode_ok = devpts_mode_healthy(ctx->policy, node->mode);
		json_object *o;

		if (!node_is_slave(node, e->mountpoint, in->dev, &idx) ||
		    (node->gid == s->tty_gid && mode_ok) || check_slave_is_bound(s, in, idx))
			continue;
		if (!slaves)
			slaves = json_object_new_array();
		if (n++ >= EVIDENCE_LIST_MAX)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "index", json_object_new_int64(idx));
		json_object_object_add(o, "path", json_object_new_string(node->path));
		json_object_object_add(o, "uid", json_object_new_int64(node->uid));
		json_object_object_add(o, "gid", json_object_new_int64(node->gid));
		json_object_object_add(o, "mode", json_new_mode(node->mode));
		json_object_array_add(slaves, o);
		if (n <= 8) {
			char *np;
			if (asprintf(&np, "%s%s%s", paths ?: "", paths ? " " : "", node->path) <
			    0) {
				json_object_put(slaves);
				return -ENOMEM;
			}
			free(paths);
			paths = np;
		}
	}
	if (!slaves)
		return 0;
	ev = json_object_new_object();
	json_object_object_add(ev, "mountpoint", json_object_new_string(e->mountpoint));
	json_object_object_add(ev, "slaves", slaves);
	json_object_object_add(ev, "slaves_total", json_object_new_int64((int64_t)n));
	f = findings_add(out, info, info->severity, ev);
	if (!f || finding_add_mount(f, e->id, in->dev) < 0 ||
	    set_printf(&f->summary,
		       "%zu pty slave(s) under %s are not group %u with mode %s: created while "
		       "the devpts options were wrong",
		       n, e->mountpoint, (unsigned)s->tty_gid,
		       check_healthy_modes(ctx->policy, modes)) < 0 ||
	    set_printf(&f->remedy, "chgrp %u %s%s && chmod 0%03o %s%s", (unsigned)s->tty_gid, paths,
		       n > 8 ? " ..." : "", (unsigned)want, paths, n > 8 ? " ..." : "") < 0 ||
	    set_printf(&f->mountpoint, "%s", e->mountpoint) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_pty_slave_perms = {
	.id = "pty-slave-perms",
	.severity = SEVERITY_WARNING,
	.message_id = "6699b8f1149e421a9342b68a69ee9124",
	.summary = "pty slaves exist with the wrong group or mode",
	.explanation =
	    "Slave nodes on the serving instance have a group other than tty or a mode "
	    "other than 620/600 (only the mode [Devpts] Mode= pins, when it pins one): they "
	    "were created while the devpts options were wrong. "
	    "Fixing the mount options does not change existing slaves. A slave that is "
	    "itself bind-mounted elsewhere (a container manager's console, as LXC binds one "
	    "on /dev/console with mode 0700) has the mode its manager chose, and is left out. "
	    "So is a slave of the allocation probe's user that is gone or replaced within "
	    "150 ms of the listing: another ptsguard's probe (the daemon's, during an audit).",
	.remedy = "chgrp tty /dev/pts/N && chmod 620 /dev/pts/N (for each listed slave)",
	.repair = REPAIR_SLAVES,
	.run = pty_slave_perms,
};
