/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json-c constructors for the value shapes of the spec: octal modes, MAJOR:MINOR, nullable strings.
 */
#pragma once

#include <json-c/json.h>
#include <stdio.h>
#include <sys/types.h>

/* Add KEY, a string literal (its text is kept, not copied), to o, which must not have it yet:
 * no search of o's keys and no copy of the key, for the objects a report is built of. */
#define json_add_new(o, KEY, value)                                                                \
	json_object_object_add_ex((o), "" KEY, (value),                                            \
				  JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_KEY_IS_CONSTANT)

json_object *json_new_mode(mode_t mode);
json_object *json_new_devnum(dev_t dev);
json_object *json_new_string_or_null(const char *s);
/* An array with room for n items (at least one) where json-c can say so (0.15 on): its default
 * room is 32, 256 bytes for each of a report's many arrays of one. */
json_object *json_new_array_sized(size_t n);

/* Serialize deterministically (two-space pretty print, no slash escaping), with a newline. */
char *json_to_text(json_object *o, int pretty);
/* The same text written to f, without a copy of it. 0 or -EIO/-ENOMEM. */
int json_write(FILE *f, json_object *o, int pretty);
