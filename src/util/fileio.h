/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading files and directories, bounded and never blocked: whole files (regular only, unless the
 * kernel named them), sysctls, directory entries, and stat(2) that never waits for a network
 * file system. All return 0 or a negative errno (HACKING.md, Errors) unless documented.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Read a whole regular file (any size, also /proc files whose st_size is 0) into a
 * NUL-terminated buffer; *ret_size excludes the NUL; -EFBIG beyond max_size bytes. Opened
 * O_NONBLOCK (a FIFO never makes it wait for a writer) plus flags (O_NOFOLLOW where a symlink
 * is not expected); anything but a regular file (FIFO, device, socket, directory) is -EBADFD,
 * before a byte is read. /proc and /sys files are regular files. */
int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size);
int read_file_flags(const char *path, int flags, size_t max_size, char **ret, size_t *ret_size);
/* The same on an open descriptor. */
int read_regular_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
/* The same where the caller has fd's fstat() already. */
struct stat;
int read_regular_fd_stat(int fd, const struct stat *st, size_t max_size, char **ret,
			 size_t *ret_size);
/* Any readable descriptor (standard input), to its end. */
int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
/* A file of /proc or /sys that we named (/proc/PID/mountinfo, /proc/PID/cgroup), which no
 * process can replace with a FIFO or a device: read to its end without the fstat(2) of the
 * regular-file check. Never for a path a user may have put something at. */
int read_kernel_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
struct open_how;
/* openat2(2) of path under dirfd, as how says: fd or -errno. A lookup scoped to a root or
 * beneath a directory (RESOLVE_IN_ROOT, RESOLVE_BENEATH) fails with EAGAIN when a ".." on its
 * way met a rename or a mount made meanwhile anywhere on the host, which any process can cause
 * at will: it is tried again, a bounded number of times over at most some 23 ms, so that churn
 * elsewhere does not leave the caller blind. */
int openat2_scoped(int dirfd, const char *path, const struct open_how *how);
/* Read root's file at path (relative to root) as root sees it: absolute symlinks and ".." on
 * the way resolve inside root (openat2 RESOLVE_IN_ROOT; a plain open of root/path before Linux
 * 5.6 or under a seccomp filter that refuses it). Only a regular file is read (a FIFO there
 * never makes it wait). -ENOENT when there is none, -EFBIG above max_size. */
int read_file_in_root(const char *root, const char *path, size_t max_size, char **ret);
/* strerror(-r), with -EBADFD of the readers above as "not a regular file". */
const char *read_error_string(int r);

/* fstatat() that never waits for a network or FUSE file system to confirm what it cached
 * (statx(AT_STATX_DONT_SYNC)): for paths outside /dev and /proc and for the files other
 * processes hold open, any of which may be on a hung NFS server or FUSE daemon. flags: 0 or
 * AT_SYMLINK_NOFOLLOW (and AT_EMPTY_PATH). Fills the fields of struct stat that statx gives. */
struct stat;
int stat_nosync(int dirfd, const char *path, int flags, struct stat *ret);
/* The same, asking the kernel for mask beyond STATX_BASIC_STATS (STATX_MNT_ID_UNIQUE, say):
 * its whole reply in *sx too, for what struct stat has no field for. */
struct statx;
int statx_nosync(int dirfd, const char *path, int flags, unsigned mask, struct stat *ret,
		 struct statx *sx);

/* A directory read with getdents64(2) straight from a descriptor the caller opened (and still
 * owns): readdir() on fdopendir() would cost an fstat(2) and two fcntl(2) more. */
struct dir_reader {
	int fd;
	char *buf;
	size_t pos, end;
	unsigned char
	    type; /* d_type of the last entry (DT_UNKNOWN: the file system does not say) */
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
