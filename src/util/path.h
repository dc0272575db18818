/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Absolute, normalized paths as text: joined, cut, compared by prefix, a symlink's target
 * resolved. Purely lexical: nothing on disk is consulted.
 */
#pragma once

#include <stdbool.h>

/* Join dir and name with one '/'. Returns NULL on OOM. */
char *path_join(const char *dir, const char *name);
/* Directory part of an absolute path ("/dev/ptmx" -> "/dev", "/ptmx" -> "/"). */
char *path_dirname(const char *path);
/* If path is prefix itself or lies below it, the rest of path after prefix ("" or "/..."; all of
 * path when prefix is "/"), else NULL. Both absolute and normalized. */
const char *path_startswith(const char *path, const char *prefix);
/* Drop trailing slashes in place, keeping "/" itself. */
void path_strip_trailing_slashes(char *path);
/* Resolve a symlink target against the directory of the link and normalize "." and "..".
 * Purely lexical: nothing on disk is consulted. */
char *path_resolve_lexical(const char *link_path, const char *target);
/* Is path prefix itself or inside it? */
static inline bool path_at_or_below(const char *path, const char *prefix)
{
	return path_startswith(path, prefix) != NULL;
}
