/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The initramfs hook's record, ptsguard.initramfs/1, as plain data: what `ptsguard
 * initramfs-record` saw just before switch-root (the devpts instances, where each of their
 * mounts lands in the new root, the devpts lines of the new root's fstab, the prediction of a
 * second devpts mount) and what the booted system reads back (snapshot->initramfs) to
 * recognise an instance born in the initramfs. Device numbers and mount ids survive the move
 * of /dev into the new root.
 *
 * initramfs_record_to_json() writes the members in the order the hook always wrote them; the
 * sections a hand-written record may leave out (generated_at, fstab, fstab_devpts, findings,
 * summary) are written only when they were there. initramfs_record_from_json() is strict:
 * every error names the key by its path. The embedded snapshot ("snapshot") is not part of
 * the struct: the writer adds it, the reader ignores it.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "snapshot/devpts-options.h"
#include "util/json-load.h"
#include "util/macro.h"

#define INITRAMFS_RECORD_SCHEMA "ptsguard.initramfs/1"

/* Where the new root's /dev comes from at switch-root. */
enum dev_move {
	DEV_MOVE_NONE,	  /* /dev is no mount of its own (or the root has no /dev): nothing moves */
	DEV_MOVE_PENDING, /* switch_root, systemd or initramfs-tools' udev script will move it */
	DEV_MOVE_DONE,	  /* already moved (initramfs-tools: udev's init-bottom ran first) */
	_DEV_MOVE_MAX,
};

struct initramfs_mount {
	unsigned id;
	char *mountpoint;	 /* in the initramfs */
	char *after_switch_root; /* as seen from the new root; NULL: it stays behind */
	bool covered;		 /* something is mounted on top of it */
};

struct initramfs_instance {
	dev_t dev;
	char *options;		      /* super options as recorded; NULL when none were */
	struct devpts_options parsed; /* of options (the defaults when NULL) */
	struct initramfs_mount *mounts;
	size_t n_mounts;
};

/* A devpts line of the new root's fstab. */
struct initramfs_fstab_line {
	unsigned line;
	char *mountpoint; /* decoded, without trailing slashes */
	char *options;	  /* "defaults" when the field is missing */
	bool noauto;
};

/* What the new root's init does with a devpts that fstab lists and that is already mounted. */
enum init_kind {
	INIT_UNKNOWN,  /* no init found, or one not known: either of the below may happen */
	INIT_SYSTEMD,  /* systemd-remount-fs remounts it with fstab's options */
	INIT_UPSTART,  /* rc.sysinit mounts it again regardless: a second instance on top */
	INIT_SYSVINIT, /* util-linux mount -a: skips what is mounted */
	INIT_OPENRC,   /* likewise */
	_INIT_KIND_MAX,
};

/* The new root's init, as far as its files tell (nothing of the new root runs before the switch):
 * the "init" section of the record, absent from records of older hooks (has_init). */
struct initramfs_init {
	enum init_kind kind;
	char *path; /* what init= or /sbin/init leads to in the new root; NULL: none */
	unsigned systemd_version; /* of libsystemd-shared-N.so; 0 when unknown */
	int remount_fs;		  /* systemd: 1 remount-fs runs, 0 it does not; -1 otherwise */
	char *remount_fs_off;	  /* remount_fs == 0: why not */
	/* sysvinit or OpenRC with Debian's initscripts, whose checkroot.sh runs "mountdevsubfs.sh
	 * reload": the options that remount /dev/pts with, before those of its fstab line
	 * ("gid=TTYGRP,mode=TTYMODE" of /etc/default/devpts); NULL: no such remount. */
	char *rc_devpts;
};

/* What the boot does to the carried devpts at a mountpoint fstab lists. */
enum boot_effect {
	EFFECT_NONE,	     /* nothing: no auto fstab line there, or nothing carried */
	EFFECT_REMOUNT,	     /* the init remounts it: systemd-remount-fs with the line's options,
			      * Debian's rc scripts with theirs and the line's */
	EFFECT_DOUBLE_MOUNT, /* a second instance on top (or, init unknown, possibly) */
	EFFECT_KEPT,	     /* mount -a skips it: the initramfs options stay */
	_EFFECT_MAX,
};

struct initramfs_prediction {
	bool double_mount;
	char *reason;
	bool has_effect;	 /* effect, options_after, healthy_after were recorded */
	enum boot_effect effect; /* records of older hooks: from double_mount */
	char *options_after;	 /* what serves there after boot, as options; NULL: not known */
	int healthy_after;	 /* are those gid=tty and a healthy mode: -1 (null) unknown */
	/* The devpts mount of the initramfs carried into the new root, and where it lands. */
	bool has_device;
	dev_t device;
	bool has_mount_id;
	unsigned mount_id;
	char *mountpoint; /* NULL: none */
	/* The fstab line that mounts devpts (there) again. */
	bool has_fstab_line;
	unsigned fstab_line;
	int options_differ; /* -1 (null) unless double_mount */
};

struct initramfs_record {
	char *generated_at; /* "YYYY-MM-DDTHH:MM:SSZ"; NULL: not recorded */
	char *phase;	    /* the hook point, as given */
	char *newroot;
	enum dev_move dev_move; /* written also as "dev_moved": dev_move != none */
	struct initramfs_instance *instances;
	size_t n_instances;

	bool has_fstab; /* the "fstab" object: which file was read and how that went */
	char *fstab_path;
	bool fstab_present;
	char *fstab_error; /* strerror() text; NULL when read or absent */

	bool has_fstab_devpts;
	struct initramfs_fstab_line *fstab_devpts;
	size_t n_fstab_devpts;

	bool has_init;
	struct initramfs_init init;

	struct initramfs_prediction prediction;

	/* The audit of the initramfs as the report writes them ("findings", "summary"); kept as
	 * JSON, nothing reads them back. NULL when absent. */
	json_object *findings, *summary;
};

struct initramfs_record *initramfs_record_new(void);
struct initramfs_record *initramfs_record_free(struct initramfs_record *rec);
DEFINE_POINTER_CLEANUP(struct initramfs_record, initramfs_record_free)

/* Free what init holds (its strings); the struct stays. */
void initramfs_init_done(struct initramfs_init *init);

/* Do Debian's rc scripts remount /dev/pts in rec's new root? They do when its init has them
 * (init.rc_devpts), unless the first devpts line of fstab for /dev/pts, the one
 * mountdevsubfs.sh reads, says noauto. 1 with what the remount leaves in *ret (mount -o remount
 * -o RC -o LINE passes RC,LINE on, devpts keeps the last value of each option and resets every
 * option neither names) and that line, or NULL, in *ret_line (may be NULL); 0 when they do not
 * (nothing written); -ENOMEM. */
int initramfs_rc_remount(const struct initramfs_record *rec,
			 const struct initramfs_fstab_line **ret_line, struct devpts_options *ret);

/* Append an instance (options copied, parsed) or a mount of the last instance. NULL on OOM. */
struct initramfs_instance *initramfs_record_add_instance(struct initramfs_record *rec, dev_t dev,
							 const char *options);
struct initramfs_mount *initramfs_instance_add_mount(struct initramfs_instance *inst, unsigned id,
						     const char *mountpoint,
						     const char *after_switch_root, bool covered);

/* The record's instance with this device, or NULL (also for a NULL record). */
const struct initramfs_instance *initramfs_record_instance(const struct initramfs_record *rec,
							   dev_t dev);

const char *dev_move_to_string(enum dev_move m);
int dev_move_from_string(const char *s);
const char *init_kind_to_string(enum init_kind k);
int init_kind_from_string(const char *s);
const char *boot_effect_to_string(enum boot_effect e);
int boot_effect_from_string(const char *s);
/* Does the prediction say the boot leaves the carried instance with options other users can
 * misuse (a second instance or a remount without gid= or a healthy mode): a warning for the
 * kernel log. Otherwise the prediction is a note (info). */
bool initramfs_prediction_warns(const struct initramfs_prediction *p);

json_object *initramfs_record_to_json(const struct initramfs_record *rec);
json_object *initramfs_prediction_to_json(const struct initramfs_prediction *p);
/* where: the path of root for messages ("" for a record file, "initramfs" in a snapshot). */
int initramfs_record_from_json(json_object *root, const char *where, struct initramfs_record **ret,
			       struct load_error *err);
