/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "util/json-load.h"
#include "util/parse.h"

int load_fail(struct load_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *json_type_word(json_type t)
{
	switch (t) {
	case json_type_string:
		return "a string";
	case json_type_int:
		return "an integer";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_boolean:
		return "true or false";
	default:
		return "a value";
	}
}

/* Fetch obj[key] of the given type. *ret is NULL for an allowed null or an absent optional key. */
int json_get(json_object *obj, const char *where, const char *key, json_type type, int flags,
	     json_object **ret, struct load_error *err)
{
	json_object *v = NULL;
	char name[256];

	snprintf(name, sizeof(name), "%s%s%s", where, *where ? "." : "", key);
	*ret = NULL;
	if (!json_object_object_get_ex(obj, key, &v)) {
		if (flags & JSON_OPTIONAL)
			return 0;
		return load_fail(err, "missing key '%s'", name);
	}
	if (!v) {
		if (flags & (JSON_NULLABLE | JSON_OPTIONAL))
			return 0;
		return load_fail(err, "key '%s' must not be null", name);
	}
	if (!json_object_is_type(v, type))
		return load_fail(err, "key '%s': expected %s", name, json_type_word(type));
	*ret = v;
	return 0;
}

int json_get_string(json_object *obj, const char *where, const char *key, int flags,
		    const char **ret, struct load_error *err)
{
	json_object *v;
	int r = json_get(obj, where, key, json_type_string, flags, &v, err);

	if (r < 0)
		return r;
	*ret = v ? json_object_get_string(v) : NULL;
	return 0;
}

int json_get_long(json_object *obj, const char *where, const char *key, long min, long max,
		  int flags, long *ret, struct load_error *err)
{
	json_object *v;
	int64_t x;
	int r = json_get(obj, where, key, json_type_int, flags, &v, err);

	if (r < 0 || !v)
		return r;
	x = json_object_get_int64(v);
	if (x < min || x > max)
		return load_fail(err, "key '%s%s%s': %lld is out of range", where,
				 *where ? "." : "", key, (long long)x);
	*ret = (long)x;
	return 0;
}

int json_get_mode(json_object *obj, const char *where, const char *key, int flags, mode_t *ret,
		  struct load_error *err)
{
	const char *s;
	int r = json_get_string(obj, where, key, flags, &s, err);

	if (r < 0 || !s)
		return r;
	if (parse_mode(s, ret) < 0)
		return load_fail(err, "key '%s.%s': \"%s\" is not an octal mode", where, key, s);
	return 0;
}

int json_get_dev(json_object *obj, const char *where, const char *key, int flags, dev_t *ret,
		 struct load_error *err)
{
	const char *s;
	int r = json_get_string(obj, where, key, flags, &s, err);

	if (r < 0 || !s)
		return r;
	if (parse_devnum(s, ret) < 0)
		return load_fail(err, "key '%s.%s': \"%s\" is not MAJOR:MINOR", where, key, s);
	return 0;
}

int json_get_bool(json_object *obj, const char *where, const char *key, int flags, bool *ret,
		  struct load_error *err)
{
	json_object *v;
	int r = json_get(obj, where, key, json_type_boolean, flags, &v, err);

	if (r < 0 || !v)
		return r;
	*ret = json_object_get_boolean(v);
	return 0;
}
