/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "checks/check.h"
#include "util/string-util.h"

static int pts_covered(const struct check_context *ctx, const struct check_info *info,
		       struct findings *out)
{
	const struct analysis *a = ctx->a;
	const struct mount_entry *cover = analysis_mount(a, a->pts_covering_mount);
	const struct mount_table *t = ctx->snap->mounts;
	struct finding *f;
	json_object *ev, *hidden = json_object_new_array();

	if (a->route != ROUTE_PTS_COVERED) {
		json_object_put(hidden);
		return 0;
	}
	ev = json_object_new_object();
	json_object_object_add(ev, "pts", json_object_new_string(a->pts_path));
	json_object_object_add(ev, "covering", check_json_mount(a, a->pts_covering_mount));
	f = findings_add(out, info, info->severity, ev);
	if (!f) {
		json_object_put(hidden);
		return -ENOMEM;
	}
	json_object_object_add(ev, "covered", hidden);
	if (cover && finding_add_mount(f, cover->id, cover->dev) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];
		if (a->reachable[i] || !streq(e->fstype, "devpts") ||
		    !streq(e->mountpoint, a->pts_path))
			continue;
		json_object_array_add(hidden, check_json_mount(a, i));
		if (finding_add_mount(f, e->id, e->dev) < 0)
			return -ENOMEM;
	}
	if (set_printf(
		&f->summary,
		"the devpts at %s is covered by %s mounted on %s: every open of %s fails with "
		"ENODEV",
		a->pts_path, cover ? cover->fstype : "a mount", cover ? cover->mountpoint : "?",
		PTMX_PATH) < 0 ||
	    set_printf(&f->remedy, "umount %s", cover ? cover->mountpoint : a->pts_path) < 0 ||
	    set_printf(&f->mountpoint, "%s", a->pts_path) < 0)
		return -ENOMEM;
	return 0;
}

const struct check_info check_pts_covered = {
	.id = "pts-covered",
	.severity = SEVERITY_CRITICAL,
	.message_id = "03a239d72aa5488ba68cbd9d3c154e82",
	.summary = "the devpts mount at /dev/pts is covered by another mount",
	.explanation = "A mount that is not devpts sits on top of the devpts at /dev/pts, or a "
		       "mount over /dev hides it, so the lookup of \"pts\" beside /dev/ptmx no "
		       "longer reaches the devpts instance: every open of /dev/ptmx fails with "
		       "ENODEV, and existing ptys vanish from /dev/pts.",
	.remedy = "umount the covering mount (see evidence), e.g. umount /dev/pts",
	.run = pts_covered,
	.predicts = { .steps = ALLOC_STEP_BIT(ALLOC_STEP_OPEN_PTMX) |
			       ALLOC_STEP_BIT(ALLOC_STEP_OPEN_SLAVE) |
			       ALLOC_STEP_BIT(ALLOC_STEP_COMPARE) },
};
