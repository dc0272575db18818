/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json-util.h"
#include "util/parse.h"

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
 * (pretty) or PLAIN (tests/unit/test-util.c compares the two over random trees), without
 * json-c's printbuf grown to the whole text inside the root object and kept there, and without
 * its append per piece: a report of 500 findings is half a megabyte. Streamed to a file through
 * a buffer of JSON_SINK_CHUNK bytes, or grown in memory.
 */
#define JSON_SINK_CHUNK (64u << 10)

struct json_sink {
	FILE *f; /* NULL: the text is kept in buf */
	char *buf;
	size_t len, cap;
	int error; /* the first: -ENOMEM or -EIO */
};

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
 * every other byte as it is, '/' and bytes of 0x7f and up included. */
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
		if (json_object_get_boolean(o))
			sink_lit(s, "true");
		else
			sink_lit(s, "false");
		return;
	case json_type_int:
		/* An int64 answers INT64_MAX for a uint64 above it: that one is asked as such. */
		v = json_object_get_int64(o);
		n = (size_t)(v == INT64_MAX
				 ? snprintf(num, sizeof(num), "%" PRIu64, json_object_get_uint64(o))
				 : snprintf(num, sizeof(num), "%" PRId64, v));
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
			sink_string(s, key, strlen(key));
			if (pretty)
				sink_lit(s, ": ");
			else
				sink_lit(s, ":");
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

char *json_to_text(json_object *o, int pretty)
{
	struct json_sink s = { 0 };

	sink_value(&s, o, 0, pretty != 0);
	sink_put(&s, "\n", 2); /* and the NUL */
	if (s.error) {
		free(s.buf);
		return NULL;
	}
	return s.buf;
}

int json_write(FILE *f, json_object *o, int pretty)
{
	struct json_sink s = { .f = f };
	int r;

	sink_value(&s, o, 0, pretty != 0);
	sink_lit(&s, "\n");
	if (!s.error && s.len > 0 && fwrite(s.buf, 1, s.len, f) != s.len)
		s.error = -EIO;
	r = s.error;
	free(s.buf);
	return r;
}
