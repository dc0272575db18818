/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "util/path.h"
#include "util/string-util.h"

char *path_join(const char *dir, const char *name)
{
	char *p;
	size_t l = strlen(dir);

	while (l > 0 && dir[l - 1] == '/')
		l--;
	while (*name == '/')
		name++;
	if (asprintf(&p, "%.*s/%s", (int)l, dir, name) < 0)
		return NULL;
	return p;
}

const char *path_startswith(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (streq(prefix, "/"))
		return path;
	if (strncmp(path, prefix, n) != 0 || (path[n] != 0 && path[n] != '/'))
		return NULL;
	return path + n;
}

void path_strip_trailing_slashes(char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		path[--n] = 0;
}

char *path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

char *path_resolve_lexical(const char *link_path, const char *target)
{
	_cleanup_free_ char *joined = NULL, *dir = NULL;
	char *out, *w;
	size_t n;

	if (target[0] == '/')
		joined = strdup(target);
	else {
		dir = path_dirname(link_path);
		if (!dir)
			return NULL;
		joined = path_join(dir, target);
	}
	if (!joined)
		return NULL;

	n = strlen(joined);
	out = malloc(n + 2);
	if (!out)
		return NULL;
	w = out;
	for (const char *p = joined; *p;) {
		const char *e;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		len = (size_t)(e - p);
		if (len == 1 && p[0] == '.') {
			/* skip */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (w > out && *--w != '/')
				;
		} else {
			*w++ = '/';
			memcpy(w, p, len);
			w += len;
		}
		p = e;
	}
	if (w == out)
		*w++ = '/';
	*w = 0;
	return out;
}
