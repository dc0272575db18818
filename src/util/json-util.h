/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json-c constructors for the value shapes of the spec: octal modes, MAJOR:MINOR, nullable strings.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/macro.h"

/* Add KEY, a string literal (its text is kept, not copied), to o, which must not have it yet:
 * no search of o's keys and no copy of the key, for the objects a report is built of. */
#define json_add_new(o, KEY, value)                                                                \
	json_object_object_add_ex((o), "" KEY, (value),                                            \
				  JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_KEY_IS_CONSTANT)

DEFINE_POINTER_CLEANUP(json_object, json_object_put)

json_object *json_new_mode(mode_t mode);
json_object *json_new_devnum(dev_t dev);
json_object *json_new_string_or_null(const char *s);
/* An array with room for n items (at least one) where json-c can say so (0.15 on): its default
 * room is 32, 256 bytes for each of a report's many arrays of one. */
json_object *json_new_array_sized(size_t n);

/* Serialize deterministically (two-space pretty print, no slash escaping), with a newline. */
char *json_to_text(json_object *o, int pretty);
/* The same unindented, with no newline, in an allocation of its size: a value kept as text. */
char *json_to_compact(json_object *o);
/* The same text written to f, without a copy of it. 0 or -EIO/-ENOMEM. */
int json_write(FILE *f, json_object *o, int pretty);

/* The text being written: to f through a buffer of 64 KiB, or kept in buf (f NULL). */
struct json_sink {
	FILE *f;
	char *buf;
	size_t len, cap;
	int error; /* the first: -ENOMEM, -EIO, or -E2BIG (nested deeper than JSON_EMIT_DEPTH) */
};

/*
 * A value described once, item by item, and either built as a json-c tree or written as the text
 * json_write() would give for that tree, as it is described, with no tree at all: a report of
 * 500 devpts instances is some 2,500 objects and 2,000 arrays, 2 MB of json-c's hash tables
 * for a text of half a megabyte. Keys are not copied (string literals); key is NULL for an item
 * of an array. emit_value() takes its reference to v (NULL: null).
 */
#define JSON_EMIT_DEPTH 16

struct json_emit {
	bool tree_mode;
	int pretty;
	int level; /* the text's: how deep in an enclosing text this value is written */
	int depth;
	json_object *open[JSON_EMIT_DEPTH]; /* a tree's open containers */
	char close[JSON_EMIT_DEPTH];	    /* the text's closing brackets */
	bool any[JSON_EMIT_DEPTH];	    /* whether each has an item yet */
	json_object *root;
	struct json_sink sink;
};

void emit_start_tree(struct json_emit *e);
/* level: the nesting at which the value sits in a text written around it (0: the whole text). */
void emit_start_text(struct json_emit *e, FILE *f, int pretty, int level);
void emit_object(struct json_emit *e, const char *key);
void emit_array(struct json_emit *e, const char *key, size_t n_hint);
void emit_end(struct json_emit *e);
void emit_value(struct json_emit *e, const char *key, json_object *v);
/* A value kept as json_to_compact() wrote it: the same as emit_value() of the value it holds. */
void emit_json_text(struct json_emit *e, const char *key, const char *text);
void emit_null(struct json_emit *e, const char *key);
void emit_string(struct json_emit *e, const char *key, const char *v); /* NULL: null */
void emit_int(struct json_emit *e, const char *key, int64_t v);
void emit_bool(struct json_emit *e, const char *key, bool v);
void emit_mode(struct json_emit *e, const char *key, mode_t mode);
void emit_devnum(struct json_emit *e, const char *key, dev_t dev);
/* The tree (NULL when something failed). */
json_object *emit_take_tree(struct json_emit *e);
/* The rest of the text, and a newline if asked, written to the file: 0 or -errno. */
int emit_finish_file(struct json_emit *e, bool newline);
/* The text, with a newline if asked, or NULL when something failed. */
char *emit_take_text(struct json_emit *e, bool newline);
