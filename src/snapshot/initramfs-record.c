/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The initramfs record (snapshot/initramfs-record.h): its names of values, building it, and its
 * JSON form as the hook writes it. Its strict loader is initramfs-record-load.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/initramfs-record.h"
#include "util/alloc.h"
#include "util/json-util.h"
#include "util/string-table.h"
#include "util/string-util.h"

static const char *const dev_move_table[_DEV_MOVE_MAX] = {
	[DEV_MOVE_NONE] = "none",
	[DEV_MOVE_PENDING] = "pending",
	[DEV_MOVE_DONE] = "done",
};
DEFINE_STRING_TABLE_LOOKUP(dev_move, enum dev_move);

static const char *const init_kind_table[_INIT_KIND_MAX] = {
	[INIT_UNKNOWN] = "unknown",   [INIT_SYSTEMD] = "systemd", [INIT_UPSTART] = "upstart",
	[INIT_SYSVINIT] = "sysvinit", [INIT_OPENRC] = "openrc",
};
DEFINE_STRING_TABLE_LOOKUP(init_kind, enum init_kind);

static const char *const boot_effect_table[_EFFECT_MAX] = {
	[EFFECT_NONE] = "none",
	[EFFECT_REMOUNT] = "remount",
	[EFFECT_DOUBLE_MOUNT] = "double-mount",
	[EFFECT_KEPT] = "kept",
};
DEFINE_STRING_TABLE_LOOKUP(boot_effect, enum boot_effect);

bool initramfs_prediction_warns(const struct initramfs_prediction *p)
{
	return p->effect == EFFECT_DOUBLE_MOUNT ||
	       (p->effect == EFFECT_REMOUNT && p->healthy_after == 0);
}

int initramfs_rc_remount(const struct initramfs_record *rec,
			 const struct initramfs_fstab_line **ret_line, struct devpts_options *ret)
{
	const struct initramfs_fstab_line *line = NULL;
	_cleanup_free_ char *options = NULL;

	if (!rec->init.rc_devpts)
		return 0;
	FOREACH_ARRAY (l, rec->fstab_devpts, rec->n_fstab_devpts)
		if (streq(l->mountpoint, "/dev/pts")) {
			line = l;
			break;
		}
	if (line && line->noauto)
		return 0;
	/* option_get() takes the first value of an option: the line's go first. */
	if (asprintf(&options, "%s%s%s", line ? line->options : "", line ? "," : "",
		     rec->init.rc_devpts) < 0)
		return -ENOMEM;
	devpts_options_parse(options, ret);
	if (ret_line)
		*ret_line = line;
	return 1;
}

void initramfs_init_done(struct initramfs_init *init)
{
	free(init->path);
	free(init->remount_fs_off);
	free(init->rc_devpts);
	*init = (struct initramfs_init){ 0 };
}

struct initramfs_record *initramfs_record_new(void)
{
	struct initramfs_record *rec = calloc(1, sizeof(*rec));

	if (rec) {
		rec->prediction.options_differ = -1;
		rec->prediction.healthy_after = -1;
		rec->init.remount_fs = -1;
	}
	return rec;
}

struct initramfs_record *initramfs_record_free(struct initramfs_record *rec)
{
	if (!rec)
		return NULL;
	free(rec->generated_at);
	free(rec->phase);
	free(rec->newroot);
	FOREACH_ARRAY (inst, rec->instances, rec->n_instances) {
		free(inst->options);
		FOREACH_ARRAY (m, inst->mounts, inst->n_mounts) {
			free(m->mountpoint);
			free(m->after_switch_root);
		}
		free(inst->mounts);
	}
	free(rec->instances);
	free(rec->fstab_path);
	free(rec->fstab_error);
	FOREACH_ARRAY (l, rec->fstab_devpts, rec->n_fstab_devpts) {
		free(l->mountpoint);
		free(l->options);
	}
	free(rec->fstab_devpts);
	free(rec->prediction.reason);
	free(rec->prediction.mountpoint);
	free(rec->prediction.options_after);
	initramfs_init_done(&rec->init);
	json_object_put(rec->findings);
	json_object_put(rec->summary);
	free(rec);
	return NULL;
}

struct initramfs_instance *initramfs_record_add_instance(struct initramfs_record *rec, dev_t dev,
							 const char *options)
{
	struct initramfs_instance *inst;
	size_t allocated = rec->n_instances;

	if (GROW(rec->instances, allocated, rec->n_instances + 1) < 0)
		return NULL;
	inst = &rec->instances[rec->n_instances];
	*inst = (struct initramfs_instance){ .dev = dev };
	if (strdup_or_null_to(options, &inst->options) < 0)
		return NULL;
	devpts_options_parse(options ?: "", &inst->parsed);
	rec->n_instances++;
	return inst;
}

struct initramfs_mount *initramfs_instance_add_mount(struct initramfs_instance *inst, unsigned id,
						     const char *mountpoint,
						     const char *after_switch_root, bool covered)
{
	struct initramfs_mount *m;
	size_t allocated = inst->n_mounts;

	if (GROW(inst->mounts, allocated, inst->n_mounts + 1) < 0)
		return NULL;
	m = &inst->mounts[inst->n_mounts];
	*m = (struct initramfs_mount){ .id = id, .covered = covered };
	inst->n_mounts++;
	if (strdup_or_null_to(mountpoint, &m->mountpoint) < 0 ||
	    strdup_or_null_to(after_switch_root, &m->after_switch_root) < 0)
		return NULL;
	return m;
}

const struct initramfs_instance *initramfs_record_instance(const struct initramfs_record *rec,
							   dev_t dev)
{
	if (!rec)
		return NULL;
	FOREACH_ARRAY (inst, rec->instances, rec->n_instances)
		if (inst->dev == dev)
			return inst;
	return NULL;
}

json_object *initramfs_prediction_to_json(const struct initramfs_prediction *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "double_mount", json_object_new_boolean(p->double_mount));
	json_object_object_add(o, "reason", json_new_string_or_null(p->reason));
	json_object_object_add(o, "device", p->has_device ? json_new_devnum(p->device) : NULL);
	json_object_object_add(o, "mount_id",
			       p->has_mount_id ? json_object_new_int64(p->mount_id) : NULL);
	json_object_object_add(o, "mountpoint", json_new_string_or_null(p->mountpoint));
	json_object_object_add(o, "fstab_line",
			       p->has_fstab_line ? json_object_new_int64(p->fstab_line) : NULL);
	json_object_object_add(o, "options_differ",
			       p->options_differ >= 0 ? json_object_new_boolean(p->options_differ)
						      : NULL);
	if (p->has_effect) {
		json_object_object_add(o, "effect",
				       json_object_new_string(boot_effect_to_string(p->effect)));
		json_object_object_add(o, "options_after",
				       json_new_string_or_null(p->options_after));
		json_object_object_add(
		    o, "healthy_after",
		    p->healthy_after >= 0 ? json_object_new_boolean(p->healthy_after) : NULL);
	}
	return o;
}

static json_object *instance_to_json(const struct initramfs_instance *inst)
{
	json_object *o = json_object_new_object(), *mounts = json_object_new_array();

	FOREACH_ARRAY (m, inst->mounts, inst->n_mounts) {
		json_object *mo = json_object_new_object();

		json_object_object_add(mo, "mount_id", json_object_new_int64(m->id));
		json_object_object_add(mo, "mountpoint", json_object_new_string(m->mountpoint));
		json_object_object_add(mo, "after_switch_root",
				       json_new_string_or_null(m->after_switch_root));
		json_object_object_add(mo, "covered", json_object_new_boolean(m->covered));
		json_object_array_add(mounts, mo);
	}
	json_object_object_add(o, "device", json_new_devnum(inst->dev));
	json_object_object_add(o, "options", json_new_string_or_null(inst->options));
	json_object_object_add(o, "mounts", mounts);
	return o;
}

static json_object *fstab_line_to_json(const struct initramfs_fstab_line *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "line", json_object_new_int64(l->line));
	json_object_object_add(o, "mountpoint", json_object_new_string(l->mountpoint));
	json_object_object_add(o, "options", json_object_new_string(l->options));
	json_object_object_add(o, "noauto", json_object_new_boolean(l->noauto));
	return o;
}

json_object *initramfs_record_to_json(const struct initramfs_record *rec)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(o, "schema", json_object_new_string(INITRAMFS_RECORD_SCHEMA));
	if (rec->generated_at)
		json_object_object_add(o, "generated_at",
				       json_object_new_string(rec->generated_at));
	json_object_object_add(o, "phase", json_object_new_string(rec->phase ?: ""));
	json_object_object_add(o, "newroot", json_object_new_string(rec->newroot ?: ""));
	json_object_object_add(o, "dev_moved",
			       json_object_new_boolean(rec->dev_move != DEV_MOVE_NONE));
	json_object_object_add(o, "dev_move",
			       json_object_new_string(dev_move_to_string(rec->dev_move)));
	FOREACH_ARRAY (inst, rec->instances, rec->n_instances)
		json_object_array_add(arr, instance_to_json(inst));
	json_object_object_add(o, "instances", arr);
	if (rec->has_fstab) {
		json_object *f = json_object_new_object();

		json_object_object_add(f, "path", json_object_new_string(rec->fstab_path ?: ""));
		json_object_object_add(f, "present", json_object_new_boolean(rec->fstab_present));
		json_object_object_add(f, "error", json_new_string_or_null(rec->fstab_error));
		json_object_object_add(o, "fstab", f);
	}
	if (rec->has_fstab_devpts) {
		arr = json_object_new_array();
		FOREACH_ARRAY (l, rec->fstab_devpts, rec->n_fstab_devpts)
			json_object_array_add(arr, fstab_line_to_json(l));
		json_object_object_add(o, "fstab_devpts", arr);
	}
	if (rec->has_init) {
		const struct initramfs_init *in = &rec->init;
		json_object *i = json_object_new_object();

		json_object_object_add(i, "kind",
				       json_object_new_string(init_kind_to_string(in->kind)));
		json_object_object_add(i, "path", json_new_string_or_null(in->path));
		json_object_object_add(
		    i, "systemd_version",
		    in->systemd_version ? json_object_new_int64(in->systemd_version) : NULL);
		json_object_object_add(i, "remount_fs",
				       in->remount_fs >= 0 ? json_object_new_boolean(in->remount_fs)
							   : NULL);
		json_object_object_add(i, "remount_fs_off",
				       json_new_string_or_null(in->remount_fs_off));
		json_object_object_add(i, "rc_devpts_remount",
				       json_new_string_or_null(in->rc_devpts));
		json_object_object_add(o, "init", i);
	}
	json_object_object_add(o, "prediction", initramfs_prediction_to_json(&rec->prediction));
	if (rec->findings)
		json_object_object_add(o, "findings", json_object_get(rec->findings));
	if (rec->summary)
		json_object_object_add(o, "summary", json_object_get(rec->summary));
	return o;
}
