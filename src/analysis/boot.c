/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "analysis/boot.h"
#include "util/json-util.h"
#include "util/util.h"

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

json_object *initramfs_instance(const struct snapshot *s, dev_t dev)
{
	json_object *arr;
	char want[24];

	if (!s->initramfs || !json_object_object_get_ex(s->initramfs, "instances", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return NULL;
	format_devnum(dev, want);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *in = json_object_array_get_idx(arr, i);

		if (streq(get_str(in, "device"), want))
			return in;
	}
	return NULL;
}

json_object *initramfs_prediction(const struct snapshot *s)
{
	json_object *p, *v;

	if (!s->initramfs || !json_object_object_get_ex(s->initramfs, "prediction", &p) ||
	    !json_object_is_type(p, json_type_object) ||
	    !json_object_object_get_ex(p, "double_mount", &v) || !json_object_get_boolean(v))
		return NULL;
	return p;
}

int initramfs_prediction_came_true(const struct analysis *a)
{
	json_object *p = initramfs_prediction(a->snap);
	const struct mount_table *t = a->snap->mounts;
	const char *mp, *device;
	dev_t dev;

	if (!p)
		return -1;
	mp = get_str(p, "mountpoint");
	device = get_str(p, "device");
	if (!mp || !device || parse_devnum(device, &dev) < 0)
		return 0;
	for (size_t i = 0; i < t->n_entries; i++)
		if (t->entries[i].dev == dev && streq(t->entries[i].mountpoint, mp) &&
		    !a->reachable[i] && a->stacked_on[i] != NO_MOUNT &&
		    streq(t->entries[a->stacked_on[i]].fstype, "devpts"))
			return 1;
	return 0;
}

json_object *boot_report_json(const struct analysis *a)
{
	json_object *o, *p;
	int came;

	if (!a->snap->initramfs)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "initramfs_record", json_object_new_boolean(true));
	json_object_object_add(o, "phase",
			       json_new_string_or_null(get_str(a->snap->initramfs, "phase")));
	p = initramfs_prediction(a->snap);
	json_object_object_add(o, "prediction", p ? json_object_get(p) : NULL);
	came = initramfs_prediction_came_true(a);
	json_object_object_add(o, "prediction_came_true",
			       came < 0 ? NULL : json_object_new_boolean(came == 1));
	return o;
}

mode_t initramfs_healthy_mode(const struct snapshot *s, dev_t dev)
{
	json_object *rec = initramfs_instance(s, dev);
	const char *opts = rec ? get_str(rec, "options") : NULL;
	struct devpts_options then;

	if (!opts)
		return 0;
	devpts_options_parse(opts, &then);
	if (!then.has_gid || !devpts_mode_healthy(NULL, then.mode))
		return 0;
	return then.mode & 0777;
}

mode_t instance_wanted_mode(const struct snapshot *s, const struct instance *in,
			    const struct check_policy *policy)
{
	return devpts_mode_wanted(policy, in->options.mode, initramfs_healthy_mode(s, in->dev));
}
