/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The initramfs record (snapshot/initramfs-record.h): a written record reads back to the same
 * bytes, the typed lookup, and strict reading that names the key. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "snapshot/initramfs-record.h"
#include "test.h"
#include "util/json-util.h"

static const char record[] =
    "{\"schema\": \"ptsguard.initramfs/1\", \"generated_at\": \"2024-01-01T00:00:00Z\","
    " \"phase\": \"pre-pivot\", \"newroot\": \"/sysroot\", \"dev_moved\": true,"
    " \"dev_move\": \"pending\", \"instances\": [{\"device\": \"0:26\","
    " \"options\": \"rw,gid=5,mode=600,ptmxmode=000\", \"mounts\": [{\"mount_id\": 29,"
    " \"mountpoint\": \"/dev/pts\", \"after_switch_root\": \"/dev/pts\", \"covered\": false},"
    " {\"mount_id\": 30, \"mountpoint\": \"/x\", \"after_switch_root\": null,"
    " \"covered\": true}]}], \"fstab\": {\"path\": \"/sysroot/etc/fstab\", \"present\": true,"
    " \"error\": null}, \"fstab_devpts\": [{\"line\": 4, \"mountpoint\": \"/dev/pts\","
    " \"options\": \"gid=5,mode=620\", \"noauto\": false}], \"prediction\": {"
    "\"double_mount\": true, \"reason\": \"r\", \"device\": \"0:26\", \"mount_id\": 29,"
    " \"mountpoint\": \"/dev/pts\", \"fstab_line\": 4, \"options_differ\": true},"
    " \"findings\": [], \"summary\": {\"critical\": 0}, \"snapshot\": {}}";

/* What a newer hook writes besides: the new root's init and the prediction's effect. */
static const char record_init[] =
    "{\"schema\": \"ptsguard.initramfs/1\", \"phase\": \"init-bottom\", \"newroot\": \"/root\","
    " \"dev_moved\": true, \"dev_move\": \"pending\", \"instances\": [{\"device\": \"0:26\","
    " \"options\": \"rw,gid=5,mode=620,ptmxmode=000\", \"mounts\": []}], \"fstab_devpts\": [{"
    "\"line\": 3, \"mountpoint\": \"/dev/pts\", \"options\": \"defaults\", \"noauto\": false}],"
    " \"init\": {\"kind\": \"systemd\", \"path\": \"/usr/lib/systemd/systemd\","
    " \"systemd_version\": 252, \"remount_fs\": true, \"remount_fs_off\": null,"
    " \"rc_devpts_remount\": null},"
    " \"prediction\": {\"double_mount\": false, \"reason\": \"r\", \"device\": \"0:26\","
    " \"mount_id\": 29, \"mountpoint\": \"/dev/pts\", \"fstab_line\": 3, \"options_differ\": true,"
    " \"effect\": \"remount\", \"options_after\": \"mode=600\", \"healthy_after\": false}}";

static int load(const char *text, struct initramfs_record **ret, struct load_error *err)
{
	json_object *o = json_tokener_parse(text);
	int r;

	if (!o)
		return -EINVAL;
	r = initramfs_record_from_json(o, "initramfs", ret, err);
	json_object_put(o);
	return r;
}

static void test_round_trip(void)
{
	struct initramfs_record *rec = NULL, *again = NULL;
	const struct initramfs_instance *inst;
	struct load_error err = { { 0 } };
	char *t1 = NULL, *t2 = NULL;
	json_object *o;

	EXPECT_INT(load(record, &rec, &err), 0);
	if (!rec)
		return;
	EXPECT_STR(rec->phase, "pre-pivot");
	EXPECT_INT(rec->dev_move, DEV_MOVE_PENDING);
	inst = initramfs_record_instance(rec, makedev(0, 26));
	EXPECT(inst != NULL);
	if (inst) {
		EXPECT_INT(inst->n_mounts, 2);
		EXPECT(inst->parsed.has_gid);
		EXPECT_INT(inst->parsed.mode, 0600);
		EXPECT(inst->mounts[1].after_switch_root == NULL);
	}
	EXPECT(initramfs_record_instance(rec, makedev(0, 27)) == NULL);
	EXPECT(initramfs_record_instance(NULL, makedev(0, 26)) == NULL);
	EXPECT_INT(rec->prediction.fstab_line, 4);
	EXPECT_INT(rec->prediction.options_differ, 1);

	o = initramfs_record_to_json(rec);
	t1 = json_to_text(o, 1);
	json_object_put(o);
	EXPECT_INT(load(t1, &again, &err), 0);
	if (again) {
		o = initramfs_record_to_json(again);
		t2 = json_to_text(o, 1);
		json_object_put(o);
		EXPECT_STR(t1, t2);
	}
	/* everything of the input but the snapshot is written back, in the same order */
	o = json_tokener_parse(record);
	json_object_object_del(o, "snapshot");
	free(t2);
	t2 = json_to_text(o, 1);
	json_object_put(o);
	EXPECT_STR(t1, t2);
	free(t1);
	free(t2);
	initramfs_record_free(again);
	initramfs_record_free(rec);
}

static void test_init_and_effect(void)
{
	struct initramfs_record *rec = NULL, *old = NULL;
	struct load_error err = { { 0 } };
	char *text = NULL, *again;
	json_object *o;

	EXPECT_INT(load(record_init, &rec, &err), 0);
	if (rec) {
		EXPECT(rec->has_init);
		EXPECT_INT(rec->init.kind, INIT_SYSTEMD);
		EXPECT_INT(rec->init.systemd_version, 252);
		EXPECT_INT(rec->init.remount_fs, 1);
		EXPECT(rec->prediction.has_effect);
		EXPECT_INT(rec->prediction.effect, EFFECT_REMOUNT);
		EXPECT_STR(rec->prediction.options_after, "mode=600");
		EXPECT_INT(rec->prediction.healthy_after, 0);
		EXPECT(initramfs_prediction_warns(&rec->prediction));
		o = initramfs_record_to_json(rec);
		text = json_to_text(o, 0);
		json_object_put(o);
		o = json_tokener_parse(record_init);
		again = json_to_text(o, 0);
		json_object_put(o);
		EXPECT_STR(text, again);
		free(again);
		free(text);
	}
	/* An older hook's record: no init, the effect follows from double_mount. */
	EXPECT_INT(load(record, &old, &err), 0);
	if (old) {
		EXPECT(!old->has_init && !old->prediction.has_effect);
		EXPECT_INT(old->prediction.effect, EFFECT_DOUBLE_MOUNT);
		EXPECT_INT(old->prediction.healthy_after, -1);
	}
	initramfs_record_free(old);
	initramfs_record_free(rec);
}

static void expect_error_in(const char *base, const char *from, const char *to, const char *message)
{
	struct initramfs_record *rec = NULL;
	struct load_error err = { { 0 } };
	char *text = strdup(base), *p = strstr(text, from);
	char buf[4096];

	if (!p) {
		CHECK_MSG(false, "'%s' not in the record", from);
		free(text);
		return;
	}
	*p = 0;
	snprintf(buf, sizeof(buf), "%s%s%s", text, to, p + strlen(from));
	EXPECT_INT(load(buf, &rec, &err), -EINVAL);
	EXPECT_STR(err.message, message);
	initramfs_record_free(rec);
	free(text);
}

static void expect_error(const char *from, const char *to, const char *message)
{
	expect_error_in(record, from, to, message);
}

static void test_strict(void)
{
	expect_error("\"0:26\", \"options\"", "\"026\", \"options\"",
		     "key 'initramfs.instances[0].device': \"026\" is not MAJOR:MINOR");
	expect_error("\"mount_id\": 30", "\"mount_id\": \"30\"",
		     "key 'initramfs.instances[0].mounts[1].mount_id': expected an integer");
	expect_error("\"covered\": true", "\"cover\": true",
		     "missing key 'initramfs.instances[0].mounts[1].covered'");
	expect_error("\"pending\"", "\"later\"",
		     "key 'initramfs.dev_move': \"later\" is not one of none, pending, done");
	expect_error("\"dev_moved\": true", "\"dev_moved\": false",
		     "key 'initramfs.dev_moved': false does not agree with dev_move \"pending\"");
	expect_error(
	    "initramfs/1", "initramfs/2",
	    "key 'initramfs.schema': \"ptsguard.initramfs/2\" is not ptsguard.initramfs/1");
	expect_error("\"line\": 4", "\"line\": 0",
		     "key 'initramfs.fstab_devpts[0].line': 0 is out of range");
	expect_error("\"double_mount\": true", "\"double_mount\": 1",
		     "key 'initramfs.prediction.double_mount': expected true or false");
	expect_error("\"present\": true", "\"present\": null",
		     "key 'initramfs.fstab.present' must not be null");
	expect_error_in(
	    record_init, "\"remount\"", "\"remounted\"",
	    "key 'initramfs.prediction.effect': \"remounted\" is not one of none, remount, "
	    "double-mount, kept");
	expect_error_in(
	    record_init, "\"systemd\",", "\"runit\",",
	    "key 'initramfs.init.kind': \"runit\" is not one of unknown, systemd, upstart, "
	    "sysvinit, openrc");
	expect_error_in(record_init, "\"systemd_version\": 252", "\"systemd_version\": \"252\"",
			"key 'initramfs.init.systemd_version': expected an integer");
	expect_error_in(record_init, "\"healthy_after\": false", "\"healthy_after\": 0",
			"key 'initramfs.prediction.healthy_after': expected true or false");
	expect_error_in(record_init, "\"rc_devpts_remount\": null", "\"rc_devpts_remount\": 600",
			"key 'initramfs.init.rc_devpts_remount': expected a string");
}

/* A sysvinit root with Debian's rc scripts: their remount options come back as written. */
static void test_rc_devpts(void)
{
	struct initramfs_record *rec = NULL;
	struct load_error err = { { 0 } };
	char *text = strdup(record_init), *p;
	char buf[4096];

	p = text ? strstr(text, "\"rc_devpts_remount\": null") : NULL;
	if (!p) {
		CHECK_MSG(false, "no rc_devpts_remount in the record");
		free(text);
		return;
	}
	*p = 0;
	snprintf(buf, sizeof(buf), "%s\"rc_devpts_remount\": \"gid=5,mode=600\"%s", text,
		 p + strlen("\"rc_devpts_remount\": null"));
	EXPECT_INT(load(buf, &rec, &err), 0);
	if (rec)
		EXPECT_STR(rec->init.rc_devpts, "gid=5,mode=600");
	initramfs_record_free(rec);
	free(text);
}

int main(void)
{
	test_round_trip();
	test_strict();
	test_rc_devpts();
	test_init_and_effect();
	return test_result("test-initramfs-record");
}
