/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "analysis/boot.h"
#include "util/json-util.h"
#include "util/util.h"

const struct initramfs_instance *initramfs_instance(const struct snapshot *s, dev_t dev)
{
	return initramfs_record_instance(s->initramfs, dev);
}

const struct initramfs_prediction *initramfs_prediction(const struct snapshot *s)
{
	if (!s->initramfs || !s->initramfs->prediction.double_mount)
		return NULL;
	return &s->initramfs->prediction;
}

int initramfs_prediction_came_true(const struct analysis *a)
{
	const struct initramfs_prediction *p = initramfs_prediction(a->snap);
	const struct mount_table *t = a->snap->mounts;

	if (!p)
		return -1;
	if (!p->mountpoint || !p->has_device)
		return 0;
	for (size_t i = 0; i < t->n_entries; i++)
		if (t->entries[i].dev == p->device &&
		    streq(t->entries[i].mountpoint, p->mountpoint) && !a->reachable[i] &&
		    a->stacked_on[i] != NO_MOUNT &&
		    streq(t->entries[a->stacked_on[i]].fstype, "devpts"))
			return 1;
	return 0;
}

json_object *boot_report_json(const struct analysis *a)
{
	const struct initramfs_prediction *p;
	json_object *o;
	int came;

	if (!a->snap->initramfs)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "initramfs_record", json_object_new_boolean(true));
	json_object_object_add(o, "phase", json_new_string_or_null(a->snap->initramfs->phase));
	p = initramfs_prediction(a->snap);
	json_object_object_add(o, "prediction", p ? initramfs_prediction_to_json(p) : NULL);
	came = initramfs_prediction_came_true(a);
	json_object_object_add(o, "prediction_came_true",
			       came < 0 ? NULL : json_object_new_boolean(came == 1));
	return o;
}

mode_t initramfs_healthy_mode(const struct snapshot *s, dev_t dev)
{
	const struct initramfs_instance *rec = initramfs_instance(s, dev);

	if (!rec || !rec->options || !rec->parsed.has_gid ||
	    !devpts_mode_healthy(NULL, rec->parsed.mode))
		return 0;
	return rec->parsed.mode & 0777;
}

mode_t instance_wanted_mode(const struct snapshot *s, const struct instance *in,
			    const struct check_policy *policy)
{
	return devpts_mode_wanted(policy, in->options.mode, initramfs_healthy_mode(s, in->dev));
}
