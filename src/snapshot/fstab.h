/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /etc/fstab, the one parser: entries of whitespace-separated fields (spec, file, vfstype,
 * options; dump and pass are not read). A line is split on blanks and tabs; a field that starts
 * with '#' ends the line (comment); blank lines, comments and lines of fewer than three fields
 * yield nothing. Octal escapes of three digits (\040 for a space, \011 tab, \134 backslash) are
 * decoded in every field, as mount(8) does. The text is read up to size bytes or a NUL,
 * whichever comes first; memory is one copy of the longest line.
 */
#pragma once

#include "util/limits.h"

#include <stdbool.h>
#include <stddef.h>

/* What a reader of a file loads at most. */

struct fstab_entry {
	unsigned line; /* 1-based: every '\n' counts, comments and blank lines too */
	const char *spec;
	const char *file; /* the mountpoint */
	const char *vfstype;
	const char *options; /* NULL when the field is missing (mount reads "defaults") */
};

struct fstab_iter {
	const char *p, *end;
	unsigned line;
	char *buf; /* the current line, split and decoded in place */
	size_t allocated;
};

void fstab_iter_init(struct fstab_iter *it, const char *text, size_t size);
/* The next entry: 1 with *ret filled (its strings valid until the next call), 0 at the end,
 * -ENOMEM. */
int fstab_iter_next(struct fstab_iter *it, struct fstab_entry *ret);
void fstab_iter_done(struct fstab_iter *it);

/* Read root's etc/fstab as root sees it: absolute symlinks in there resolve inside root (with
 * openat2 RESOLVE_IN_ROOT, a plain open before Linux 5.6). -ENOENT when there is none, -EFBIG
 * above FSTAB_SIZE_MAX. */
int fstab_read_in_root(const char *root, char **ret);
