/* SPDX-License-Identifier: GPL-2.0-or-later */
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
	free(rec->init.path);
	free(rec->init.remount_fs_off);
	json_object_put(rec->findings);
	json_object_put(rec->summary);
	free(rec);
	return NULL;
}

/* strdup that keeps NULL: 0, or -ENOMEM. */
static int dup_str(const char *s, char **ret)
{
	*ret = NULL;
	if (s && !(*ret = strdup(s)))
		return -ENOMEM;
	return 0;
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
	if (dup_str(options, &inst->options) < 0)
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
	if (dup_str(mountpoint, &m->mountpoint) < 0 ||
	    dup_str(after_switch_root, &m->after_switch_root) < 0)
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

/* ---- writing ---- */

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
		json_object_object_add(o, "init", i);
	}
	json_object_object_add(o, "prediction", initramfs_prediction_to_json(&rec->prediction));
	if (rec->findings)
		json_object_object_add(o, "findings", json_object_get(rec->findings));
	if (rec->summary)
		json_object_object_add(o, "summary", json_object_get(rec->summary));
	return o;
}

/* ---- reading ---- */

static void path_of(char *buf, size_t size, const char *where, const char *key, size_t i)
{
	snprintf(buf, size, "%s%s%s[%zu]", where, *where ? "." : "", key, i);
}

static int load_mount(json_object *o, const char *where, struct initramfs_instance *inst,
		      struct load_error *err)
{
	const char *mountpoint, *after;
	long id = 0;
	bool covered = false;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if ((r = json_get_long(o, where, "mount_id", 0, UINT32_MAX, JSON_REQUIRED, &id, err)) < 0 ||
	    (r = json_get_string(o, where, "mountpoint", JSON_REQUIRED, &mountpoint, err)) < 0 ||
	    (r = json_get_string(o, where, "after_switch_root", JSON_NULLABLE, &after, err)) < 0 ||
	    (r = json_get_bool(o, where, "covered", JSON_REQUIRED, &covered, err)) < 0)
		return r;
	return initramfs_instance_add_mount(inst, (unsigned)id, mountpoint, after, covered)
		   ? 0
		   : -ENOMEM;
}

static int load_instance(json_object *o, const char *where, struct initramfs_record *rec,
			 struct load_error *err)
{
	struct initramfs_instance *inst;
	const char *options;
	json_object *mounts;
	dev_t dev = 0;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if ((r = json_get_dev(o, where, "device", JSON_REQUIRED, &dev, err)) < 0 ||
	    (r = json_get_string(o, where, "options", JSON_NULLABLE, &options, err)) < 0 ||
	    (r = json_get(o, where, "mounts", json_type_array, JSON_REQUIRED, &mounts, err)) < 0)
		return r;
	inst = initramfs_record_add_instance(rec, dev, options);
	if (!inst)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(mounts); i++) {
		char path[256];

		path_of(path, sizeof(path), where, "mounts", i);
		r = load_mount(json_object_array_get_idx(mounts, i), path, inst, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_fstab_line(json_object *o, const char *where, struct initramfs_record *rec,
			   struct load_error *err)
{
	struct initramfs_fstab_line *l;
	const char *mountpoint, *options;
	long line = 0;
	bool noauto = false;
	size_t allocated = rec->n_fstab_devpts;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return load_fail(err, "key '%s': expected an object", where);
	if ((r = json_get_long(o, where, "line", 1, UINT32_MAX, JSON_REQUIRED, &line, err)) < 0 ||
	    (r = json_get_string(o, where, "mountpoint", JSON_REQUIRED, &mountpoint, err)) < 0 ||
	    (r = json_get_string(o, where, "options", JSON_REQUIRED, &options, err)) < 0 ||
	    (r = json_get_bool(o, where, "noauto", JSON_REQUIRED, &noauto, err)) < 0)
		return r;
	if (GROW(rec->fstab_devpts, allocated, rec->n_fstab_devpts + 1) < 0)
		return -ENOMEM;
	l = &rec->fstab_devpts[rec->n_fstab_devpts++];
	*l = (struct initramfs_fstab_line){ .line = (unsigned)line, .noauto = noauto };
	if (dup_str(mountpoint, &l->mountpoint) < 0 || dup_str(options, &l->options) < 0)
		return -ENOMEM;
	return 0;
}

typedef int (*load_item_fn)(json_object *o, const char *where, struct initramfs_record *rec,
			    struct load_error *err);

static int load_array(json_object *root, const char *where, const char *key, int flags,
		      load_item_fn fn, struct initramfs_record *rec, struct load_error *err)
{
	json_object *a;
	int r = json_get(root, where, key, json_type_array, flags, &a, err);

	if (r < 0 || !a)
		return r;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		char path[256];

		path_of(path, sizeof(path), where, key, i);
		r = fn(json_object_array_get_idx(a, i), path, rec, err);
		if (r < 0)
			return r;
	}
	return 1;
}

static int load_fstab(json_object *root, const char *where, struct initramfs_record *rec,
		      struct load_error *err)
{
	const char *path, *error;
	json_object *f;
	char at[256];
	int r = json_get(root, where, "fstab", json_type_object, JSON_OPTIONAL, &f, err);

	if (r < 0 || !f)
		return r;
	snprintf(at, sizeof(at), "%s%sfstab", where, *where ? "." : "");
	if ((r = json_get_string(f, at, "path", JSON_REQUIRED, &path, err)) < 0 ||
	    (r = json_get_bool(f, at, "present", JSON_REQUIRED, &rec->fstab_present, err)) < 0 ||
	    (r = json_get_string(f, at, "error", JSON_NULLABLE, &error, err)) < 0)
		return r;
	rec->has_fstab = true;
	if (dup_str(path, &rec->fstab_path) < 0 || dup_str(error, &rec->fstab_error) < 0)
		return -ENOMEM;
	return 0;
}

/* What records of newer hooks add to the prediction; an older one's effect follows from
 * double_mount. */
static int load_effect(json_object *o, const char *at, struct initramfs_prediction *p,
		       struct load_error *err)
{
	const int maybe = JSON_OPTIONAL | JSON_NULLABLE;
	const char *effect, *after;
	json_object *v;
	int e, r;

	p->effect = p->double_mount ? EFFECT_DOUBLE_MOUNT : EFFECT_NONE;
	if ((r = json_get_string(o, at, "effect", JSON_OPTIONAL, &effect, err)) < 0 ||
	    (r = json_get_string(o, at, "options_after", maybe, &after, err)) < 0 ||
	    (r = json_get(o, at, "healthy_after", json_type_boolean, maybe, &v, err)) < 0)
		return r;
	p->healthy_after = v ? json_object_get_boolean(v) : -1;
	if (!effect)
		return 0;
	e = boot_effect_from_string(effect);
	if (e < 0)
		return load_fail(
		    err,
		    "key '%s.effect': \"%s\" is not one of none, remount, double-mount, "
		    "kept",
		    at, effect);
	p->has_effect = true;
	p->effect = e;
	return dup_str(after, &p->options_after);
}

static int load_init(json_object *root, const char *where, struct initramfs_record *rec,
		     struct load_error *err)
{
	const int maybe = JSON_OPTIONAL | JSON_NULLABLE;
	struct initramfs_init *in = &rec->init;
	const char *kind, *path, *off;
	json_object *o, *v;
	long version = 0;
	char at[256];
	int k, r = json_get(root, where, "init", json_type_object, JSON_OPTIONAL, &o, err);

	if (r < 0 || !o)
		return r;
	snprintf(at, sizeof(at), "%s%sinit", where, *where ? "." : "");
	if ((r = json_get_string(o, at, "kind", JSON_REQUIRED, &kind, err)) < 0 ||
	    (r = json_get_string(o, at, "path", maybe, &path, err)) < 0 ||
	    (r = json_get_long(o, at, "systemd_version", 1, UINT32_MAX, maybe, &version, err)) <
		0 ||
	    (r = json_get(o, at, "remount_fs", json_type_boolean, maybe, &v, err)) < 0 ||
	    (r = json_get_string(o, at, "remount_fs_off", maybe, &off, err)) < 0)
		return r;
	k = init_kind_from_string(kind);
	if (k < 0)
		return load_fail(err,
				 "key '%s.kind': \"%s\" is not one of unknown, systemd, upstart, "
				 "sysvinit, openrc",
				 at, kind);
	rec->has_init = true;
	in->kind = k;
	in->systemd_version = (unsigned)version;
	in->remount_fs = v ? json_object_get_boolean(v) : -1;
	if (dup_str(path, &in->path) < 0 || dup_str(off, &in->remount_fs_off) < 0)
		return -ENOMEM;
	return 0;
}

static int load_prediction(json_object *root, const char *where, struct initramfs_prediction *p,
			   struct load_error *err)
{
	const int maybe = JSON_OPTIONAL | JSON_NULLABLE;
	const char *reason, *mountpoint;
	json_object *o, *v;
	long mount_id = 0, line = 0;
	char at[256];
	int r = json_get(root, where, "prediction", json_type_object, JSON_REQUIRED, &o, err);

	if (r < 0)
		return r;
	snprintf(at, sizeof(at), "%s%sprediction", where, *where ? "." : "");
	if ((r = json_get_bool(o, at, "double_mount", JSON_REQUIRED, &p->double_mount, err)) < 0 ||
	    (r = json_get_string(o, at, "reason", JSON_REQUIRED, &reason, err)) < 0 ||
	    (r = json_get(o, at, "device", json_type_string, maybe, &v, err)) < 0 ||
	    (r = json_get_dev(o, at, "device", maybe, &p->device, err)) < 0)
		return r;
	p->has_device = v != NULL;
	if ((r = json_get(o, at, "mount_id", json_type_int, maybe, &v, err)) < 0 ||
	    (r = json_get_long(o, at, "mount_id", 0, UINT32_MAX, maybe, &mount_id, err)) < 0)
		return r;
	p->has_mount_id = v != NULL;
	p->mount_id = (unsigned)mount_id;
	if ((r = json_get(o, at, "fstab_line", json_type_int, maybe, &v, err)) < 0 ||
	    (r = json_get_long(o, at, "fstab_line", 1, UINT32_MAX, maybe, &line, err)) < 0)
		return r;
	p->has_fstab_line = v != NULL;
	p->fstab_line = (unsigned)line;
	if ((r = json_get(o, at, "options_differ", json_type_boolean, maybe, &v, err)) < 0 ||
	    (r = json_get_string(o, at, "mountpoint", maybe, &mountpoint, err)) < 0)
		return r;
	p->options_differ = v ? json_object_get_boolean(v) : -1;
	if (dup_str(reason, &p->reason) < 0 || dup_str(mountpoint, &p->mountpoint) < 0)
		return -ENOMEM;
	return load_effect(o, at, p, err);
}

/* A member kept as JSON: any value of the type, or absent. */
static int keep(json_object *root, const char *where, const char *key, json_type type,
		json_object **ret, struct load_error *err)
{
	json_object *v;
	int r = json_get(root, where, key, type, JSON_OPTIONAL, &v, err);

	if (r < 0)
		return r;
	*ret = json_object_get(v);
	return 0;
}

int initramfs_record_from_json(json_object *root, const char *where, struct initramfs_record **ret,
			       struct load_error *err)
{
	_cleanup_(initramfs_record_freep) struct initramfs_record *rec = NULL;
	const char *schema, *generated_at, *phase, *newroot, *dev_move;
	bool dev_moved = false;
	int m, r;

	if (!json_object_is_type(root, json_type_object))
		return *where ? load_fail(err, "key '%s': expected an object", where)
			      : load_fail(err, "the top level must be a JSON object");
	rec = initramfs_record_new();
	if (!rec)
		return -ENOMEM;
	if ((r = json_get_string(root, where, "schema", JSON_REQUIRED, &schema, err)) < 0)
		return r;
	if (!streq(schema, INITRAMFS_RECORD_SCHEMA))
		return load_fail(err, "key '%s%sschema': \"%s\" is not %s", where,
				 *where ? "." : "", schema, INITRAMFS_RECORD_SCHEMA);
	if ((r = json_get_string(root, where, "generated_at", JSON_OPTIONAL | JSON_NULLABLE,
				 &generated_at, err)) < 0 ||
	    (r = json_get_string(root, where, "phase", JSON_REQUIRED, &phase, err)) < 0 ||
	    (r = json_get_string(root, where, "newroot", JSON_REQUIRED, &newroot, err)) < 0 ||
	    (r = json_get_bool(root, where, "dev_moved", JSON_REQUIRED, &dev_moved, err)) < 0 ||
	    (r = json_get_string(root, where, "dev_move", JSON_REQUIRED, &dev_move, err)) < 0)
		return r;
	m = dev_move_from_string(dev_move);
	if (m < 0)
		return load_fail(err,
				 "key '%s%sdev_move': \"%s\" is not one of none, pending, done",
				 where, *where ? "." : "", dev_move);
	if (dev_moved != (m != DEV_MOVE_NONE))
		return load_fail(err, "key '%s%sdev_moved': %s does not agree with dev_move \"%s\"",
				 where, *where ? "." : "", dev_moved ? "true" : "false", dev_move);
	rec->dev_move = m;
	if (dup_str(generated_at, &rec->generated_at) < 0 || dup_str(phase, &rec->phase) < 0 ||
	    dup_str(newroot, &rec->newroot) < 0)
		return -ENOMEM;

	if ((r = load_array(root, where, "instances", JSON_REQUIRED, load_instance, rec, err)) <
		0 ||
	    (r = load_fstab(root, where, rec, err)) < 0)
		return r;
	r = load_array(root, where, "fstab_devpts", JSON_OPTIONAL, load_fstab_line, rec, err);
	if (r < 0)
		return r;
	rec->has_fstab_devpts = r > 0;
	if ((r = load_init(root, where, rec, err)) < 0 ||
	    (r = load_prediction(root, where, &rec->prediction, err)) < 0 ||
	    (r = keep(root, where, "findings", json_type_array, &rec->findings, err)) < 0 ||
	    (r = keep(root, where, "summary", json_type_object, &rec->summary, err)) < 0)
		return r;
	*ret = TAKE_PTR(rec);
	return 0;
}
