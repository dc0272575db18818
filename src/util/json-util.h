/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json-c constructors for the value shapes of the spec: octal modes, MAJOR:MINOR, nullable strings.
 */
#pragma once

#include <json-c/json.h>
#include <sys/types.h>

json_object *json_new_mode(mode_t mode);
json_object *json_new_devnum(dev_t dev);
json_object *json_new_string_or_null(const char *s);

/* Serialize deterministically (two-space pretty print, no slash escaping), with a newline. */
char *json_to_text(json_object *o, int pretty);
