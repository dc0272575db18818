/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The strict loader of the initramfs record (snapshot/initramfs-record.h): every member checked
 * for its type and range, every error naming its key by its path. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/initramfs-record.h"
#include "util/alloc.h"
#include "util/json-util.h"
#include "util/string-util.h"

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
	if (strdup_or_null_to(mountpoint, &l->mountpoint) < 0 ||
	    strdup_or_null_to(options, &l->options) < 0)
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
	if (strdup_or_null_to(path, &rec->fstab_path) < 0 ||
	    strdup_or_null_to(error, &rec->fstab_error) < 0)
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
	return strdup_or_null_to(after, &p->options_after);
}

static int load_init(json_object *root, const char *where, struct initramfs_record *rec,
		     struct load_error *err)
{
	const int maybe = JSON_OPTIONAL | JSON_NULLABLE;
	struct initramfs_init *in = &rec->init;
	const char *kind, *path, *off, *rc;
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
	    (r = json_get_string(o, at, "remount_fs_off", maybe, &off, err)) < 0 ||
	    (r = json_get_string(o, at, "rc_devpts_remount", maybe, &rc, err)) < 0)
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
	if (strdup_or_null_to(path, &in->path) < 0 ||
	    strdup_or_null_to(off, &in->remount_fs_off) < 0 ||
	    strdup_or_null_to(rc, &in->rc_devpts) < 0)
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
	if (strdup_or_null_to(reason, &p->reason) < 0 ||
	    strdup_or_null_to(mountpoint, &p->mountpoint) < 0)
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
	if (strdup_or_null_to(generated_at, &rec->generated_at) < 0 ||
	    strdup_or_null_to(phase, &rec->phase) < 0 ||
	    strdup_or_null_to(newroot, &rec->newroot) < 0)
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
