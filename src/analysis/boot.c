/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "analysis/boot.h"
#include "util/json-util.h"
#include "util/string-table.h"
#include "util/string-util.h"

const struct initramfs_instance *initramfs_instance(const struct snapshot *s, dev_t dev)
{
	return initramfs_record_instance(s->initramfs, dev);
}

const struct initramfs_prediction *initramfs_prediction(const struct snapshot *s)
{
	if (!s->initramfs || s->initramfs->prediction.effect == EFFECT_NONE)
		return NULL;
	return &s->initramfs->prediction;
}

static bool options_equal(const char *x, const char *y)
{
	struct devpts_options a, b;

	devpts_options_parse(x ?: "", &a);
	devpts_options_parse(y ?: "", &b);
	return devpts_options_same(&a, &b);
}

int initramfs_prediction_came_true(const struct analysis *a)
{
	const struct initramfs_prediction *p = initramfs_prediction(a->snap);
	const struct initramfs_instance *rec;
	const struct mount_table *t = a->snap->mounts;

	if (!p)
		return -1;
	if (!p->mountpoint || !p->has_device)
		return 0;
	rec = initramfs_instance(a->snap, p->device);
	for (size_t i = 0; i < t->n_entries; i++) {
		const struct mount_entry *e = &t->entries[i];

		if (e->dev != p->device || !streq(e->mountpoint, p->mountpoint))
			continue;
		switch (p->effect) {
		case EFFECT_DOUBLE_MOUNT:
			if (!a->reachable[i] && a->stacked_on[i] != NO_MOUNT &&
			    streq(t->entries[a->stacked_on[i]].fstype, "devpts"))
				return 1;
			break;
		case EFFECT_REMOUNT:
			/* still the one there, with the fstab line's options */
			if (a->reachable[i] && options_equal(e->super_options, p->options_after))
				return 1;
			break;
		case EFFECT_KEPT:
			if (a->reachable[i] && rec && options_equal(e->super_options, rec->options))
				return 1;
			break;
		default:
			break;
		}
	}
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

/* The auto devpts line of the record's fstab for mountpoint, or NULL. */
static const struct initramfs_fstab_line *fstab_line_at(const struct initramfs_record *rec,
							const char *mountpoint)
{
	FOREACH_ARRAY (l, rec->fstab_devpts, rec->n_fstab_devpts)
		if (!l->noauto && streq(l->mountpoint, mountpoint))
			return l;
	return NULL;
}

/* Does the mount at /dev/pts have what the remount of Debian's rc scripts gives it? Then the
 * fstab line that remount took its options from, or NULL, in *ret_line (else left alone). */
static bool rc_remounted(const struct initramfs_record *rec, const struct mount_entry *e,
			 const struct initramfs_fstab_line **ret_line)
{
	const struct initramfs_fstab_line *line;
	struct devpts_options want, now;

	if (!streq(e->mountpoint, "/dev/pts") || initramfs_rc_remount(rec, &line, &want) <= 0)
		return false;
	devpts_options_parse(e->super_options, &now);
	if (!devpts_options_same(&want, &now))
		return false;
	*ret_line = line;
	return true;
}

static const char *const origin_change_table[_ORIGIN_CHANGE_MAX] = {
	[ORIGIN_UNCHANGED] = "unchanged",
	[ORIGIN_REMOUNT] = "remount",
	[ORIGIN_SECOND_MOUNT] = "second-mount",
	[ORIGIN_UNKNOWN] = "unknown",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(origin_change, enum origin_change);

int boot_origin(const struct analysis *a, size_t idx, struct boot_origin *ret)
{
	const struct initramfs_record *rec = a->snap->initramfs;
	const struct mount_table *t = a->snap->mounts;
	const struct mount_entry *e;
	size_t cur, n = 0;

	*ret = (struct boot_origin){ 0 };
	if (!rec || idx == NO_MOUNT || !streq(t->entries[idx].fstype, "devpts"))
		return 0;
	e = &t->entries[idx];
	ret->now = e->super_options;
	ret->systemd = !rec->has_init || rec->init.kind == INIT_SYSTEMD;
	ret->rec = initramfs_instance(a->snap, e->dev);
	if (ret->rec) {
		const struct initramfs_fstab_line *l = fstab_line_at(rec, e->mountpoint);

		ret->mount = e;
		if (options_equal(ret->rec->options, e->super_options))
			ret->change = ORIGIN_UNCHANGED;
		else if (rc_remounted(rec, e, &ret->line)) {
			ret->change = ORIGIN_REMOUNT;
			ret->rc = true;
		} else if (l && options_equal(l->options, e->super_options)) {
			/* what a remount with the line's options leaves: every other option reset
			 */
			ret->change = ORIGIN_REMOUNT;
			ret->line = l;
		} else
			ret->change = ORIGIN_UNKNOWN;
		return 1;
	}
	/* A devpts of the record below this one on the same mountpoint: this is a second mount. The
	 * walk is bounded: a hostile table may hold a parent cycle. */
	for (cur = idx; n <= t->n_entries; n++) {
		size_t p = a->parent[cur];

		if (p == NO_MOUNT || !streq(t->entries[p].mountpoint, e->mountpoint) ||
		    a->stacked_on[p] != cur)
			return 0;
		cur = p;
		if (streq(t->entries[p].fstype, "devpts") &&
		    (ret->rec = initramfs_instance(a->snap, t->entries[p].dev))) {
			ret->mount = &t->entries[p];
			ret->change = ORIGIN_SECOND_MOUNT;
			ret->line = fstab_line_at(rec, e->mountpoint);
			return 1;
		}
	}
	return 0;
}

char *boot_origin_changed_by(const struct boot_origin *o)
{
	char *s = NULL;

	switch (o->change) {
	case ORIGIN_REMOUNT:
		if (o->rc && o->line)
			(void)set_printf(&s, "fstab line %u through Debian's mountdevsubfs.sh",
					 o->line->line);
		else if (o->rc)
			(void)set_printf(&s, "Debian's mountdevsubfs.sh");
		else
			(void)set_printf(&s, "fstab line %u through %s", o->line->line,
					 o->systemd ? "systemd-remount-fs" : "a remount");
		break;
	case ORIGIN_SECOND_MOUNT:
		if (o->line)
			(void)set_printf(&s, "a second mount at fstab line %u", o->line->line);
		else
			(void)set_printf(&s, "a second mount that no fstab line names");
		break;
	case ORIGIN_UNKNOWN:
		(void)set_printf(&s, "unknown");
		break;
	default:
		break;
	}
	return s;
}

json_object *boot_origin_json(const struct boot_origin *o)
{
	json_object *j = json_object_new_object();
	char *by = boot_origin_changed_by(o);

	json_object_object_add(j, "initramfs_device", json_new_devnum(o->rec->dev));
	json_object_object_add(j, "initramfs_mount_id", json_object_new_int64(o->mount->id));
	json_object_object_add(j, "before_switch_root", json_new_string_or_null(o->rec->options));
	json_object_object_add(j, "now", json_object_new_string(o->now));
	json_object_object_add(j, "change",
			       json_object_new_string(origin_change_to_string(o->change)));
	json_object_object_add(j, "changed_by", json_new_string_or_null(by));
	json_object_object_add(j, "fstab_line",
			       o->line ? json_object_new_int64(o->line->line) : NULL);
	free(by);
	return j;
}
