/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strict reading of JSON documents we define (ptsguard.snapshot/1, ptsguard.initramfs/1): fetch
 * a member of a given type, or fail with a message that names the key by its full path
 * ("instances[0].mounts[1].mount_id"). where is the path of obj ("" at the top level).
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

#include "util/macro.h"

struct load_error {
	char message[512];
};

/* flags: a key may be absent (JSON_OPTIONAL) or null (JSON_NULLABLE); *ret is then NULL. */
enum { JSON_REQUIRED = 0, JSON_OPTIONAL = 1, JSON_NULLABLE = 2 };

/* Format the message into err; returns -EINVAL. */
_printf_(2, 3) int load_fail(struct load_error *err, const char *fmt, ...);

int json_get(json_object *obj, const char *where, const char *key, json_type type, int flags,
	     json_object **ret, struct load_error *err);
int json_get_string(json_object *obj, const char *where, const char *key, int flags,
		    const char **ret, struct load_error *err);
/* An integer in [min, max]; *ret is left alone for an absent or null key. */
int json_get_long(json_object *obj, const char *where, const char *key, long min, long max,
		  int flags, long *ret, struct load_error *err);
/* A bool; *ret is left alone for an absent or null key. */
int json_get_bool(json_object *obj, const char *where, const char *key, int flags, bool *ret,
		  struct load_error *err);
/* An octal mode string ("0620"); *ret is left alone for an absent or null key. */
int json_get_mode(json_object *obj, const char *where, const char *key, int flags, mode_t *ret,
		  struct load_error *err);
/* A "MAJOR:MINOR" string; *ret is left alone for an absent or null key. */
int json_get_dev(json_object *obj, const char *where, const char *key, int flags, dev_t *ret,
		 struct load_error *err);
