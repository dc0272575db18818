/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount table: /proc/<pid>/mountinfo text parsed into plain entries, in
 * the kernel's order, with paths unescaped. Parsing is strict: a malformed
 * line is an error that names the line and what is wrong with it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/macro.h"

struct mount_strings;

struct parse_error {
	unsigned line; /* 1-based; 0 when the error is not about one line */
	char message[256];
};

/* The strings point into the table's buffer or its string blocks, and an entry's may be the same
 * as its neighbour's: they are the table's, never to be written or freed one by one. */
struct mount_entry {
	unsigned id;
	unsigned parent_id;
	dev_t dev;
	char *root;
	char *mountpoint;
	char *fstype;
	char *source;
	char *mount_options; /* per mount: rw,nosuid,relatime */
	char *super_options; /* per superblock: rw,gid=5,mode=620,ptmxmode=000 */
	unsigned shared;     /* peer group (optional field shared:N), 0 when not shared */
	unsigned master;     /* peer group it receives from (master:N), 0 when not a slave */
};

struct mount_table {
	struct mount_entry *entries;
	size_t n_entries;
	char *buffer;		       /* the strings of a copy or of statmount(), or NULL */
	struct mount_strings *strings; /* the strings of a parsed text, or NULL */
	/* statmount()'s 64-bit id of each entry, or NULL for a table read from mountinfo text: kept
	 * apart so that the entries of the usual table are 72 bytes, not 80 (at 10,000 mounts, 20
	 * pages fewer to touch, and their copies while the table grows). */
	uint64_t *unique_ids;
};

/* Parse mountinfo text. On -EINVAL, *err says which line and why. */
int mount_table_parse(const char *text, size_t size, struct mount_table **ret,
		      struct parse_error *err);
/* The same, read from fd until its end: -EFBIG past max_size bytes, -errno if a read fails. */
int mount_table_read_fd(int fd, size_t max_size, struct mount_table **ret, struct parse_error *err);
struct mount_table *mount_table_free(struct mount_table *t);
/* Every field the same (the tables' unique ids are not fields of an entry). */
bool mount_entry_equal(const struct mount_entry *x, const struct mount_entry *y);
/* A deep copy of the entries at the given indices, in that order (all of them when idx is
 * NULL), with their unique ids. */
int mount_table_copy(const struct mount_table *t, const size_t *idx, size_t n,
		     struct mount_table **ret);
DEFINE_POINTER_CLEANUP(struct mount_table, mount_table_free)

/* Find an option in a comma-separated list: returns true if present; *ret_value (may be NULL)
 * points into a malloc'ed copy of the value, or NULL for a flag. */
bool option_get(const char *options, const char *name, char **ret_value);
