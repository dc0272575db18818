/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/json-util.h"
#include "util/parse.h"
#include "util/string-util.h"

json_object *json_new_mode(mode_t mode)
{
	char buf[8];
	return json_object_new_string(format_mode(mode, buf));
}

json_object *json_new_devnum(dev_t dev)
{
	char buf[24];
	return json_object_new_string(format_devnum(dev, buf));
}

json_object *json_new_string_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

json_object *json_new_array_sized(size_t n)
{
#if JSON_C_VERSION_NUM >= (15 << 8)
	return json_object_new_array_ext(n == 0 ? 1 : n < INT_MAX ? (int)n : INT_MAX);
#else
	(void)n;
	return json_object_new_array();
#endif
}

/*
 * A tree's text written here rather than by json-c: byte for byte what
 * json_object_to_json_string_ext() gives with JSON_C_TO_STRING_NOSLASHESCAPE and PRETTY | SPACED
 * (pretty) or PLAIN, once every string and key is valid UTF-8 (sink_string();
 * tests/unit/test-util.c compares the two over random trees), without json-c's printbuf grown to
 * the whole text inside the root object and kept there, and without its append per piece: a report
 * of 500 findings is half a megabyte. Streamed to a file through a buffer of JSON_SINK_CHUNK bytes,
 * or grown in memory.
 */
#define JSON_SINK_CHUNK (64u << 10)

#define UTF8_REPLACEMENT "\xef\xbf\xbd"

static int sink_room(struct json_sink *s, size_t n)
{
	size_t cap;
	char *b;

	if (s->error)
		return s->error;
	if (s->cap - s->len >= n)
		return 0;
	if (s->f && s->len > 0) {
		if (fwrite(s->buf, 1, s->len, s->f) != s->len)
			return (s->error = -EIO);
		s->len = 0;
		if (s->cap >= n)
			return 0;
	}
	cap = s->cap ?: (s->f ? JSON_SINK_CHUNK : 4096);
	while (cap - s->len < n)
		cap *= 2;
	b = realloc(s->buf, cap);
	if (!b)
		return (s->error = -ENOMEM);
	s->buf = b;
	s->cap = cap;
	return 0;
}

static void sink_put(struct json_sink *s, const char *p, size_t n)
{
	if (sink_room(s, n) < 0)
		return;
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

#define sink_lit(s, LIT) sink_put((s), "" LIT, sizeof(LIT) - 1)

static void sink_indent(struct json_sink *s, int level, int pretty)
{
	size_t n = pretty ? (size_t)level * 2 : 0;

	if (n == 0 || sink_room(s, n) < 0)
		return;
	memset(s->buf + s->len, ' ', n);
	s->len += n;
}

/* json-c's escapes: the two-letter ones, \u00XX (lowercase) for the other bytes below a space;
 * every other byte as it is, '/', DEL and well-formed UTF-8 included; a byte that is not part of
 * well-formed UTF-8 (a name from a namespace may hold any byte) as U+FFFD, so that the text is
 * always valid JSON, which is UTF-8. json-c itself would write such a byte as it is: this is its
 * text of the string utf8_replace_invalid() (util/escape.h) makes. */
static void sink_string(struct json_sink *s, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	static const char letter[' '] = {
		['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r',
	};
	size_t start = 0;

	sink_lit(s, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		char esc[6] = { '\\', 0 };
		size_t k = 2;

		if (c >= 0x80) {
			size_t len = utf8_char_len(p + i, n - i);

			if (len > 0) {
				i += len - 1;
				continue;
			}
			sink_put(s, p + start, i - start);
			sink_lit(s, UTF8_REPLACEMENT);
			start = i + 1;
			continue;
		}
		if (c >= ' ' && c != '"' && c != '\\')
			continue;
		if (c == '"' || c == '\\')
			esc[1] = (char)c;
		else if (letter[c])
			esc[1] = letter[c];
		else {
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			k = 6;
		}
		sink_put(s, p + start, i - start);
		sink_put(s, esc, k);
		start = i + 1;
	}
	sink_put(s, p + start, n - start);
	sink_lit(s, "\"");
}

/* A container as json-c lays it out: its opening bracket, a newline when pretty; before each
 * item a comma after the first, a newline and the item's indentation; before the closing
 * bracket a newline after any item and the container's own indentation. */
static void sink_open(struct json_sink *s, char bracket, int pretty)
{
	sink_put(s, &bracket, 1);
	if (pretty)
		sink_lit(s, "\n");
}

static void sink_item(struct json_sink *s, bool first, int level, int pretty)
{
	if (!first) {
		sink_lit(s, ",");
		if (pretty)
			sink_lit(s, "\n");
	}
	sink_indent(s, level + 1, pretty);
}

static void sink_close(struct json_sink *s, char bracket, bool any, int level, int pretty)
{
	if (pretty && any)
		sink_lit(s, "\n");
	sink_indent(s, level, pretty);
	sink_put(s, &bracket, 1);
}

static void sink_key_separator(struct json_sink *s, int pretty)
{
	if (pretty)
		sink_lit(s, ": ");
	else
		sink_lit(s, ":");
}

/* An object's key and its separator. */
static void sink_key(struct json_sink *s, const char *key, int pretty)
{
	sink_string(s, key, strlen(key));
	sink_key_separator(s, pretty);
}

static void sink_bool(struct json_sink *s, bool v)
{
	if (v)
		sink_lit(s, "true");
	else
		sink_lit(s, "false");
}

static void sink_int64(struct json_sink *s, int64_t v)
{
	char num[24];

	sink_put(s, num, (size_t)snprintf(num, sizeof(num), "%" PRId64, v));
}

static void sink_value(struct json_sink *s, json_object *o, int level, int pretty)
{
	char num[24];
	int64_t v;
	size_t n;
	bool first = true;

	switch (json_object_get_type(o)) {
	case json_type_null:
		sink_lit(s, "null");
		return;
	case json_type_boolean:
		sink_bool(s, json_object_get_boolean(o));
		return;
	case json_type_int:
		/* An int64 answers INT64_MAX for a uint64 above it: that one is asked as such. */
		v = json_object_get_int64(o);
		if (v != INT64_MAX) {
			sink_int64(s, v);
			return;
		}
		n = (size_t)snprintf(num, sizeof(num), "%" PRIu64, json_object_get_uint64(o));
		sink_put(s, num, n);
		return;
	case json_type_string:
		sink_string(s, json_object_get_string(o), (size_t)json_object_get_string_len(o));
		return;
	case json_type_double: {
		/* json-c's own (a parsed number keeps its text): rare, and not ours to redo. */
		const char *text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n);

		if (!text)
			s->error = s->error ?: -ENOMEM;
		else
			sink_put(s, text, n);
		return;
	}
	case json_type_object:
		sink_open(s, '{', pretty);
		json_object_object_foreach(o, key, val)
		{
			sink_item(s, first, level, pretty);
			first = false;
			sink_key(s, key, pretty);
			sink_value(s, val, level + 1, pretty);
		}
		sink_close(s, '}', !first, level, pretty);
		return;
	case json_type_array:
		sink_open(s, '[', pretty);
		n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++) {
			sink_item(s, i == 0, level, pretty);
			sink_value(s, json_object_array_get_idx(o, i), level + 1, pretty);
		}
		sink_close(s, ']', n > 0, level, pretty);
		return;
	}
}

/* Just past the closing quote of the string whose opening quote is at p. */
static const char *text_string_end(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

/*
 * The value at p in a compact text sink_value() wrote (json_to_compact()), written again as
 * sink_value() writes the tree it came from, at level: strings and numbers are copied as they
 * stand (sink_value() writes them alike compact or pretty), containers laid out. Returns where
 * the value ends. A text it did not write sets -EINVAL and ends the walk.
 */
static const char *sink_text_value(struct json_sink *s, const char *p, int level, int pretty)
{
	const char *q;

	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		bool first = true;

		sink_open(s, *p++, pretty);
		while (*p && *p != close) {
			if (!first && *p == ',')
				p++;
			sink_item(s, first, level, pretty);
			first = false;
			if (close == '}') {
				q = text_string_end(p);
				sink_put(s, p, (size_t)(q - p));
				sink_key_separator(s, pretty);
				p = *q == ':' ? q + 1 : q;
			}
			p = sink_text_value(s, p, level + 1, pretty);
		}
		sink_close(s, close, !first, level, pretty);
		return *p ? p + 1 : p;
	}
	q = *p == '"' ? text_string_end(p) : p + strcspn(p, ",]}");
	if (q == p) {
		s->error = s->error ?: -EINVAL;
		return p + strlen(p);
	}
	sink_put(s, p, (size_t)(q - p));
	return q;
}

char *json_to_compact(json_object *o)
{
	struct json_emit e;
	char *text, *shrunk;

	emit_start_text(&e, NULL, 0, 0);
	sink_value(&e.sink, o, 0, e.pretty);
	text = emit_take_text(&e, false);
	/* The sink's buffer is 4 KiB at least: kept, a finding's 130 bytes would take that. */
	shrunk = text ? realloc(text, strlen(text) + 1) : NULL;
	return shrunk ?: text;
}

char *json_to_text(json_object *o, int pretty)
{
	struct json_emit e;

	emit_start_text(&e, NULL, pretty, 0);
	sink_value(&e.sink, o, 0, e.pretty);
	return emit_take_text(&e, true);
}

int json_write(FILE *f, json_object *o, int pretty)
{
	struct json_emit e;

	emit_start_text(&e, f, pretty, 0);
	sink_value(&e.sink, o, 0, e.pretty);
	return emit_finish_file(&e, true);
}

/* The item about to be added to the open container: in the text, its separator, indentation and
 * key. */
static void emit_item(struct json_emit *e, const char *key)
{
	int d = e->depth;

	if (!e->tree_mode && d > 0) {
		sink_item(&e->sink, !e->any[d - 1], e->level + d - 1, e->pretty);
		if (key)
			sink_key(&e->sink, key, e->pretty);
	}
	if (d > 0)
		e->any[d - 1] = true;
}

/* A tree's value into the open container (the root when none is open); NULL is null. */
static void emit_tree_add(struct json_emit *e, const char *key, json_object *v)
{
	json_object *top = e->depth > 0 ? e->open[e->depth - 1] : NULL;

	if (e->depth == 0) {
		json_object_put(e->root);
		e->root = v;
	} else if (!top) /* a container that could not be made: the error is set */
		json_object_put(v);
	else if (json_object_is_type(top, json_type_array))
		json_object_array_add(top, v);
	else
		json_object_object_add_ex(
		    top, key, v, JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_KEY_IS_CONSTANT);
}

static void emit_begin(struct json_emit *e, const char *key, bool array, size_t n_hint)
{
	json_object *c = NULL;

	if (e->depth >= JSON_EMIT_DEPTH) {
		e->sink.error = e->sink.error ?: -E2BIG;
		return;
	}
	emit_item(e, key);
	if (e->tree_mode) {
		c = array ? json_new_array_sized(n_hint) : json_object_new_object();
		if (!c)
			e->sink.error = e->sink.error ?: -ENOMEM;
		emit_tree_add(e, key, c);
	} else
		sink_open(&e->sink, array ? '[' : '{', e->pretty);
	e->open[e->depth] = c;
	e->close[e->depth] = array ? ']' : '}';
	e->any[e->depth] = false;
	e->depth++;
}

void emit_object(struct json_emit *e, const char *key)
{
	emit_begin(e, key, false, 0);
}

void emit_array(struct json_emit *e, const char *key, size_t n_hint)
{
	emit_begin(e, key, true, n_hint);
}

void emit_end(struct json_emit *e)
{
	if (e->depth == 0)
		return;
	e->depth--;
	if (!e->tree_mode)
		sink_close(&e->sink, e->close[e->depth], e->any[e->depth], e->level + e->depth,
			   e->pretty);
}

void emit_value(struct json_emit *e, const char *key, json_object *v)
{
	emit_item(e, key);
	if (e->tree_mode) {
		emit_tree_add(e, key, v);
		return;
	}
	sink_value(&e->sink, v, e->level + e->depth, e->pretty);
	json_object_put(v);
}

void emit_json_text(struct json_emit *e, const char *key, const char *text)
{
	json_object *v;

	emit_item(e, key);
	if (!e->tree_mode) {
		sink_text_value(&e->sink, text, e->level + e->depth, e->pretty);
		return;
	}
	v = json_tokener_parse(text);
	if (!v && !streq(text, "null"))
		e->sink.error = e->sink.error ?: -EINVAL;
	emit_tree_add(e, key, v);
}

void emit_null(struct json_emit *e, const char *key)
{
	emit_item(e, key);
	if (e->tree_mode)
		emit_tree_add(e, key, NULL);
	else
		sink_lit(&e->sink, "null");
}

void emit_string(struct json_emit *e, const char *key, const char *v)
{
	if (!v) {
		emit_null(e, key);
		return;
	}
	emit_item(e, key);
	if (e->tree_mode)
		emit_tree_add(e, key, json_object_new_string(v));
	else
		sink_string(&e->sink, v, strlen(v));
}

void emit_int(struct json_emit *e, const char *key, int64_t v)
{
	emit_item(e, key);
	if (e->tree_mode)
		emit_tree_add(e, key, json_object_new_int64(v));
	else
		sink_int64(&e->sink, v);
}

void emit_bool(struct json_emit *e, const char *key, bool v)
{
	emit_item(e, key);
	if (e->tree_mode)
		emit_tree_add(e, key, json_object_new_boolean(v));
	else
		sink_bool(&e->sink, v);
}

void emit_mode(struct json_emit *e, const char *key, mode_t mode)
{
	char buf[8];

	emit_string(e, key, format_mode(mode, buf));
}

void emit_devnum(struct json_emit *e, const char *key, dev_t dev)
{
	char buf[24];

	emit_string(e, key, format_devnum(dev, buf));
}

void emit_start_tree(struct json_emit *e)
{
	*e = (struct json_emit){ .tree_mode = true };
}

void emit_start_text(struct json_emit *e, FILE *f, int pretty, int level)
{
	*e = (struct json_emit){ .sink = { .f = f }, .pretty = pretty != 0, .level = level };
}

json_object *emit_take_tree(struct json_emit *e)
{
	json_object *o = e->root;

	e->root = NULL;
	if (e->sink.error) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int emit_finish_file(struct json_emit *e, bool newline)
{
	int r;

	if (newline)
		sink_lit(&e->sink, "\n");
	if (!e->sink.error && e->sink.len > 0 &&
	    fwrite(e->sink.buf, 1, e->sink.len, e->sink.f) != e->sink.len)
		e->sink.error = -EIO;
	r = e->sink.error;
	free(e->sink.buf);
	e->sink = (struct json_sink){ 0 };
	return r;
}

char *emit_take_text(struct json_emit *e, bool newline)
{
	char *text;

	if (newline)
		sink_lit(&e->sink, "\n");
	sink_put(&e->sink, "", 1); /* the NUL */
	text = e->sink.buf;
	if (e->sink.error) {
		free(text);
		text = NULL;
	}
	e->sink = (struct json_sink){ 0 };
	return text;
}
