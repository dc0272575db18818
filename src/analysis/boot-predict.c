/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "analysis/boot-predict.h"
#include "snapshot/fstab.h"
#include "util/alloc.h"
#include "util/path.h"
#include "util/string-util.h"

/* What switch-root will do with the mounts of the initramfs. */
struct switch_root {
	const char *newroot;
	enum dev_move dev_move;
	size_t dev_mount; /* DEV_MOVE_PENDING: the /dev mount that moves, with all below it */
};

static void switch_root_init(const struct analysis *a, const char *newroot, struct switch_root *ret)
{
	_cleanup_free_ char *root_dev = path_join(newroot, "dev");
	struct stat st;

	*ret = (struct switch_root){ .newroot = newroot, .dev_mount = NO_MOUNT };
	if (!root_dev)
		return;
	if (streq(newroot, "/") || analysis_mount_at(a, root_dev) != NO_MOUNT) {
		ret->dev_move = DEV_MOVE_DONE;
		return;
	}
	/* switch_root(8), systemd and initramfs-tools' udev script move /dev when it is a mount
	 * of its own and the new root has a /dev to move it onto. */
	ret->dev_mount = analysis_mount_at(a, "/dev");
	if (ret->dev_mount != NO_MOUNT && stat(root_dev, &st) == 0 && S_ISDIR(st.st_mode))
		ret->dev_move = DEV_MOVE_PENDING;
	else
		ret->dev_mount = NO_MOUNT;
}

/* Where a mount of the initramfs is seen from the new root after switch-root, or NULL when it
 * stays behind in the initramfs. Points into the mount table. */
static const char *after_switch_root(const struct analysis *a, const struct switch_root *sr,
				     size_t idx)
{
	const struct mount_table *t = a->snap->mounts;
	const char *mountpoint = t->entries[idx].mountpoint;
	const char *rest = path_startswith(mountpoint, sr->newroot);

	if (rest)
		return *rest ? rest : "/";
	if (sr->dev_move != DEV_MOVE_PENDING)
		return NULL;
	/* A move takes the mount and everything mounted below it, nothing else: not what the /dev
	 * mount covers, for one. The walk is bounded: a hostile table may hold a parent cycle. */
	for (size_t i = idx, n = 0; i != NO_MOUNT && n <= t->n_entries; i = a->parent[i], n++)
		if (i == sr->dev_mount)
			return mountpoint;
	return NULL;
}

static int add_instances(const struct analysis *a, const struct switch_root *sr,
			 struct initramfs_record *rec)
{
	const struct mount_table *t = a->snap->mounts;

	FOREACH_ARRAY (inst, a->instances, a->n_instances) {
		struct initramfs_instance *ri;
		const char *options = NULL;

		/* The options of the instance are those of its first mount that has any. */
		FOREACH_ARRAY (idx, inst->mounts, inst->n_mounts)
			options = options ?: t->entries[*idx].super_options;
		ri = initramfs_record_add_instance(rec, inst->dev, options);
		if (!ri)
			return -ENOMEM;
		FOREACH_ARRAY (idx, inst->mounts, inst->n_mounts) {
			const struct mount_entry *e = &t->entries[*idx];

			if (!initramfs_instance_add_mount(ri, e->id, e->mountpoint,
							  after_switch_root(a, sr, *idx),
							  a->covered_by[*idx] != NO_MOUNT))
				return -ENOMEM;
		}
	}
	return 0;
}

/* The devpts lines of the new root's fstab. */
static int add_fstab_devpts(const char *fstab, struct initramfs_record *rec)
{
	_cleanup_(fstab_iter_done) struct fstab_iter it;
	struct fstab_entry e;
	size_t allocated = 0;
	int r;

	rec->has_fstab_devpts = true;
	fstab_iter_init(&it, fstab, fstab ? strlen(fstab) : 0);
	while ((r = fstab_iter_next(&it, &e)) > 0) {
		struct initramfs_fstab_line *l;

		if (!streq(e.vfstype, "devpts"))
			continue;
		if (GROW(rec->fstab_devpts, allocated, rec->n_fstab_devpts + 1) < 0)
			return -ENOMEM;
		l = &rec->fstab_devpts[rec->n_fstab_devpts++];
		*l = (struct initramfs_fstab_line){
			.line = e.line,
			.mountpoint = strdup(e.file),
			.options = strdup(e.options ?: "defaults"),
			.noauto = e.options && option_get(e.options, "noauto", NULL),
		};
		if (!l->mountpoint || !l->options)
			return -ENOMEM;
		path_strip_trailing_slashes(l->mountpoint);
	}
	return r;
}

struct prediction {
	/* The visible devpts mount of the initramfs that moves into the new root, or NULL; and
	 * where it lands there. */
	const struct mount_entry *carried;
	const char *lands;
	/* The auto fstab line that mounts devpts there (matched), else the first auto devpts line,
	 * or NULL; and whether its options differ from the instance's. */
	const struct initramfs_fstab_line *line;
	bool matched;
	bool options_differ;
	enum boot_effect effect;
	bool rc; /* the remount is that of Debian's rc scripts (initramfs_init.rc_devpts) */
	struct devpts_options after; /* what serves there after boot (effect != none, carried) */
};

/* What the new root's init does with a mounted devpts that an auto fstab line lists. */
static enum boot_effect init_effect(const struct initramfs_init *init)
{
	switch (init ? init->kind : INIT_UNKNOWN) {
	case INIT_SYSTEMD:
		/* Every systemd since 2011 (systemd-remount-api-vfs, systemd-remount-fs from 2012
		 * on) runs "mount PATH -o remount" for each API file system fstab lists, /dev/pts
		 * among them; a devpts remount resets every option it is not given. */
		return init->remount_fs == 0 ? EFFECT_KEPT : EFFECT_REMOUNT;
	case INIT_SYSVINIT:
	case INIT_OPENRC:
		/* mount -a skips what is mounted (Debian's rc scripts: rc_prediction()) */
		return EFFECT_KEPT;
	case INIT_UPSTART:
	default:
		return EFFECT_DOUBLE_MOUNT; /* unknown: the worst that can happen */
	}
}

/* Debian's rc scripts remount the carried devpts when it lands on /dev/pts: the prediction
 * becomes theirs, whatever the init alone would do. */
static int rc_prediction(const struct initramfs_record *rec, struct prediction *p)
{
	struct devpts_options after;
	int r;

	if (!p->carried || !streq(p->lands, "/dev/pts"))
		return 0;
	r = initramfs_rc_remount(rec, NULL, &after);
	if (r <= 0)
		return r;
	p->effect = EFFECT_REMOUNT;
	p->rc = true;
	p->after = after;
	if (!p->matched)
		p->line = NULL; /* the first auto line, somewhere else */
	return 0;
}

static int predict(const struct analysis *a, const struct initramfs_record *rec,
		   const struct switch_root *sr, const struct initramfs_init *init,
		   struct prediction *ret)
{
	const struct mount_table *t = a->snap->mounts;

	*ret = (struct prediction){ 0 };
	FOREACH_ARRAY (e, rec->fstab_devpts, rec->n_fstab_devpts)
		if (!e->noauto) {
			ret->line = e;
			break;
		}
	FOREACH_ARRAY (inst, a->instances, a->n_instances) {
		FOREACH_ARRAY (idx, inst->mounts, inst->n_mounts) {
			const struct mount_entry *m = &t->entries[*idx];
			const char *lands = after_switch_root(a, sr, *idx);

			if (!lands || a->covered_by[*idx] != NO_MOUNT)
				continue;
			if (!ret->carried) {
				ret->carried = m;
				ret->lands = lands;
				devpts_options_parse(m->super_options, &ret->after);
			}
			FOREACH_ARRAY (e, rec->fstab_devpts, rec->n_fstab_devpts) {
				struct devpts_options mine, theirs;

				if (e->noauto || !streq(e->mountpoint, lands))
					continue;
				devpts_options_parse(m->super_options, &mine);
				devpts_options_parse(e->options, &theirs);
				*ret = (struct prediction){
					.carried = m,
					.lands = lands,
					.line = e,
					.matched = true,
					.options_differ = !devpts_options_same(&mine, &theirs),
					.effect = init_effect(init),
				};
				ret->after = ret->effect == EFFECT_KEPT ? mine : theirs;
				return rc_prediction(rec, ret);
			}
		}
	}
	/* No line mounts devpts where it lands: the rc scripts remount it all the same. */
	return rc_prediction(rec, ret);
}

static const char *init_name(const struct initramfs_init *init, char buf[static 32])
{
	if (init->kind == INIT_SYSTEMD && init->systemd_version)
		snprintf(buf, 32, "systemd %u", init->systemd_version);
	else
		snprintf(buf, 32, "%s", init_kind_to_string(init->kind));
	return buf;
}

static int prediction_reason(const struct prediction *p, const struct initramfs_init *init,
			     bool healthy_after, char **ret)
{
	const struct mount_entry *m = p->carried;
	_cleanup_free_ char *head = NULL, *after = NULL;
	char name[32];

	const char *lost =
	    healthy_after ? ""
	    : !p->after.has_gid
		? ": no gid=, new ptys get their creator's group (devpts-options-lost)"
		: ": not the tty group and a healthy mode (devpts-options-lost)";

	if (p->matched || p->rc) {
		after = devpts_options_format(&p->after);
		if (!after)
			return -ENOMEM;
	}
	if (p->matched &&
	    set_printf(&head,
		       "devpts %u:%u, mounted in the initramfs on %s (%s), is carried into "
		       "the new root to %s, and /etc/fstab line %u mounts devpts there (\"%s\")",
		       major(m->dev), minor(m->dev), m->mountpoint, m->super_options, p->lands,
		       p->line->line, p->line->options) < 0)
		return -ENOMEM;
	if (!p->matched && p->rc &&
	    set_printf(&head,
		       "devpts %u:%u, mounted in the initramfs on %s (%s), is carried into "
		       "the new root to %s, where /etc/fstab mounts no devpts",
		       major(m->dev), minor(m->dev), m->mountpoint, m->super_options, p->lands) < 0)
		return -ENOMEM;
	if (p->rc)
		return set_printf(
		    ret,
		    "%s: the new root's init is %s with Debian's rc scripts, whose "
		    "checkroot.sh runs \"mountdevsubfs.sh reload\": it remounts %s with "
		    "%s (TTYGRP and TTYMODE, /etc/default/devpts)%s, so the instance "
		    "will have %s%s",
		    head, init_name(init, name), p->lands, init->rc_devpts,
		    p->matched ? " and then the line's options" : "", after, lost);
	if (p->matched && p->effect == EFFECT_REMOUNT)
		return set_printf(ret,
				  "%s: the new root's init is %s, whose systemd-remount-fs.service "
				  "remounts it with those options, so the instance will have %s%s",
				  head, init_name(init, name), after, lost);
	if (p->matched && p->effect == EFFECT_KEPT)
		return set_printf(ret,
				  "%s: the new root's init is %s, %s, so the instance keeps the "
				  "initramfs options (%s)",
				  head, init_name(init, name),
				  init->kind == INIT_SYSTEMD
				      ? init->remount_fs_off
					    ?: "systemd-remount-fs.service does not run"
				      : "whose mount -a skips what is already mounted",
				  after);
	if (p->matched && init->kind == INIT_UPSTART)
		return set_printf(ret,
				  "%s: the new root's init is upstart, whose rc.sysinit mounts it "
				  "regardless: a second instance is stacked on top with %s "
				  "(devpts-overmount, the CentOS 6 recipe)",
				  head, after);
	if (p->matched)
		return set_printf(
		    ret,
		    "%s: the new root's init is not known; one that mounts it regardless stacks a "
		    "second instance on top (devpts-overmount, the CentOS 6 recipe), systemd's "
		    "systemd-remount-fs remounts it with %s, one that skips mounted filesystems "
		    "(util-linux mount -a) keeps the initramfs options%s",
		    head, after, p->options_differ ? "" : " (the same)");
	if (m && p->line)
		return set_printf(ret,
				  "devpts %u:%u from the initramfs lands on %s and /etc/fstab line "
				  "%u mounts devpts on %s: different places, nothing is stacked",
				  major(m->dev), minor(m->dev), p->lands, p->line->line,
				  p->line->mountpoint);
	if (m)
		return set_printf(ret,
				  "devpts %u:%u from the initramfs lands on %s and the new root's "
				  "/etc/fstab mounts no devpts at boot: it stays as it is",
				  major(m->dev), minor(m->dev), p->lands);
	if (p->line)
		return set_printf(
		    ret,
		    "no devpts of the initramfs reaches the new root; /etc/fstab line "
		    "%u mounts devpts on %s",
		    p->line->line, p->line->mountpoint);
	return set_printf(ret, "no devpts of the initramfs reaches the new root and its "
			       "/etc/fstab mounts none at boot: its init mounts its own");
}

static int set_prediction(const struct prediction *p, const struct initramfs_init *init,
			  gid_t tty_gid, struct initramfs_prediction *ret)
{
	bool healthy = devpts_options_healthy(NULL, &p->after, tty_gid);

	*ret = (struct initramfs_prediction){
		.double_mount = p->effect == EFFECT_DOUBLE_MOUNT,
		.has_device = p->carried != NULL,
		.device = p->carried ? p->carried->dev : 0,
		.has_mount_id = p->carried != NULL,
		.mount_id = p->carried ? p->carried->id : 0,
		.has_fstab_line = p->line != NULL,
		.fstab_line = p->line ? p->line->line : 0,
		.options_differ = p->matched ? p->options_differ : -1,
		.has_effect = true,
		.effect = p->effect,
		.healthy_after = p->carried ? healthy : -1,
	};
	if (p->lands && !(ret->mountpoint = strdup(p->lands)))
		return -ENOMEM;
	if (p->carried && !(ret->options_after = devpts_options_format(&p->after)))
		return -ENOMEM;
	return prediction_reason(p, init, healthy, &ret->reason);
}

static int copy_init(const struct initramfs_init *from, struct initramfs_init *to)
{
	*to = *from;
	to->path = NULL;
	to->remount_fs_off = NULL;
	to->rc_devpts = NULL;
	if (strdup_or_null_to(from->path, &to->path) < 0 ||
	    strdup_or_null_to(from->remount_fs_off, &to->remount_fs_off) < 0 ||
	    strdup_or_null_to(from->rc_devpts, &to->rc_devpts) < 0)
		return -ENOMEM;
	return 0;
}

int initramfs_record_build(const struct analysis *a, const char *newroot, const char *phase,
			   int fstab_errno, const struct initramfs_init *init,
			   struct initramfs_record **ret)
{
	_cleanup_(initramfs_record_freep) struct initramfs_record *rec = initramfs_record_new();
	struct prediction prediction;
	struct switch_root sr;
	int r;

	if (!rec || !(rec->phase = strdup(phase)) || !(rec->newroot = strdup(newroot)))
		return -ENOMEM;
	switch_root_init(a, newroot, &sr);
	rec->dev_move = sr.dev_move;
	r = add_instances(a, &sr, rec);
	if (r < 0)
		return r;
	rec->has_fstab = true;
	rec->fstab_path = path_join(newroot, "etc/fstab");
	rec->fstab_present = a->snap->fstab != NULL;
	if (!rec->fstab_path ||
	    (fstab_errno && !(rec->fstab_error = strdup(strerror(fstab_errno)))))
		return -ENOMEM;
	r = add_fstab_devpts(a->snap->fstab, rec);
	if (r < 0)
		return r;
	if (init) {
		rec->has_init = true;
		if (copy_init(init, &rec->init) < 0)
			return -ENOMEM;
	}
	r = predict(a, rec, &sr, &rec->init, &prediction);
	if (r < 0)
		return r;
	r = set_prediction(&prediction, &rec->init, a->snap->tty_gid, &rec->prediction);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(rec);
	return 0;
}
