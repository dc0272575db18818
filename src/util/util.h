/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * String, file and number helpers shared by the parsers, the probe and the
 * sinks. All return 0 or a negative errno (HACKING.md, Errors) unless documented.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/macro.h"

/* Read a whole regular file (any size, also /proc files whose st_size is 0) into a
 * NUL-terminated buffer; *ret_size excludes the NUL; -EFBIG beyond max_size bytes. Opened
 * O_NONBLOCK (a FIFO never makes it wait for a writer) plus flags (O_NOFOLLOW where a symlink
 * is not expected); anything but a regular file (FIFO, device, socket, directory) is -EBADFD,
 * before a byte is read. /proc and /sys files are regular files. */
int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size);
int read_file_flags(const char *path, int flags, size_t max_size, char **ret, size_t *ret_size);
/* The same on an open descriptor. */
int read_regular_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
/* Any readable descriptor (standard input), to its end. */
int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
/* A file of /proc or /sys that we named (/proc/PID/mountinfo, /proc/PID/cgroup), which no
 * process can replace with a FIFO or a device: read to its end without the fstat(2) of the
 * regular-file check. Never for a path a user may have put something at. */
int read_kernel_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
/* strerror(-r), with -EBADFD of the readers above as "not a regular file". */
const char *read_error_string(int r);

/* fstatat() that never waits for a network or FUSE file system to confirm what it cached
 * (statx(AT_STATX_DONT_SYNC)): for paths outside /dev and /proc and for the files other
 * processes hold open, any of which may be on a hung NFS server or FUSE daemon. flags: 0 or
 * AT_SYMLINK_NOFOLLOW (and AT_EMPTY_PATH). Fills the fields of struct stat that statx gives. */
struct stat;
int stat_nosync(int dirfd, const char *path, int flags, struct stat *ret);

/* A directory read with getdents64(2) straight from a descriptor the caller opened (and still
 * owns): readdir() on fdopendir() would cost an fstat(2) and two fcntl(2) more. */
struct dir_reader {
	int fd;
	char *buf;
	size_t pos, end;
};
/* The next entry of d ("." and ".." included): 1 and *ret_name (valid until the next call),
 * 0 at the end, or -errno. dir_reader_done() frees the buffer, not the descriptor. */
int dir_reader_next(struct dir_reader *d, const char **ret_name);
void dir_reader_done(struct dir_reader *d);

/* Read a file holding one integer (a sysctl). */
int read_long_file(const char *path, long *ret);
/* The same from an open sysctl file, read again from its start (pread(2) at 0 gives the value
 * as it is now). */
int read_long_fd(int fd, long *ret);

/* Decode the octal escapes of mountinfo and fstab (\040, \011, \012, \134) in place. */
void unescape_octal(char *s);

/* Parse a mode written in octal ("620", "0620", "4755"): 0 or -EINVAL. */
int parse_mode(const char *s, mode_t *ret);
/* Format a mode as four-digit octal ("0620"); buf must hold 8 bytes. */
const char *format_mode(mode_t mode, char buf[static 8]);

/* Parse "major:minor" into a dev_t. */
int parse_devnum(const char *s, dev_t *ret);
/* Format a dev_t as "major:minor"; buf must hold 24 bytes. */
const char *format_devnum(dev_t dev, char buf[static 24]);

/* Parse a decimal unsigned integer that must span the whole string. */
int parse_uint(const char *s, unsigned *ret);

/* Compare kernel releases: is release at least major.minor? Unparseable counts as new. */
bool kernel_at_least(const char *release, unsigned major, unsigned minor);

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

/* Replace *field with a newly formatted string (the old one is freed). 0 or -ENOMEM. */
/* ret = the string the variadic arguments after fmt make, or NULL when out of memory. */
#define FORMAT_VA(ret, fmt)                                                                        \
	do {                                                                                       \
		va_list _ap;                                                                       \
		va_start(_ap, fmt);                                                                \
		(ret) = vformat(fmt, _ap);                                                         \
		va_end(_ap);                                                                       \
	} while (0)
/* vasprintf() that returns the string, or NULL when out of memory. */
_printf_(1, 0) char *vformat(const char *fmt, va_list ap);
_printf_(2, 3) int set_printf(char **field, const char *fmt, ...);

/* The index of s in names[0..n) (a table of an enum's names), or -EINVAL. */
int string_table_index(const char *const *names, int n, const char *s);

/* strdup that accepts NULL. */
char *strdup_or_null(const char *s);

static inline bool streq(const char *a, const char *b)
{
	return a && b && __builtin_strcmp(a, b) == 0;
}
/* Is path prefix itself or inside it? */
static inline bool path_at_or_below(const char *path, const char *prefix)
{
	return path_startswith(path, prefix) != NULL;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	return (!a && !b) || streq(a, b);
}
