/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The JSON form of a snapshot (ptsguard.snapshot/1, docs/snapshot.md): written whole, and read
 * by a strict loader whose errors name the key at fault.
 */
#pragma once

#include <json-c/json.h>

#include "snapshot/snapshot.h"
#include "util/json-load.h"

/* Errors while loading name the key (or the line of the embedded mountinfo). */
int snapshot_from_json(json_object *root, struct snapshot **ret, struct load_error *err);
/* Parse text (a whole file) into a snapshot; JSON syntax errors name line and column. */
int snapshot_parse(const char *text, size_t size, struct snapshot **ret, struct load_error *err);
json_object *snapshot_to_json(const struct snapshot *s);

json_object *devpts_seen_healthy_to_json(const struct devpts_seen_healthy *h);
/* {"device": "M:m", "mode": "0620"} at where (for messages); -EINVAL with err set when it is not
 * that, or the mode is not a healthy one. */
int devpts_seen_healthy_from_json(json_object *o, const char *where,
				  struct devpts_seen_healthy *ret, struct load_error *err);

json_object *snapshot_namespace_to_json(const struct snapshot_namespace *ns);
