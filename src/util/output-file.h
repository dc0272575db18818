/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writing a file that readers trust (the daemon's state file and Prometheus textfile, the CLI's
 * --output) into a directory someone else might control. The directory is opened once, with no
 * symlink anywhere on the way (openat2() RESOLVE_NO_SYMLINKS; before Linux 5.6, or under a
 * seccomp filter, a walk of O_NOFOLLOW|O_DIRECTORY opens, one component at a time), and must
 * belong to root or to the effective uid: a user owning it could swap what it holds. The daemon
 * runs as its own user without CAP_DAC_OVERRIDE (ptsguard.service's User=): it writes where that
 * user owns the directory, or where root owns it and lets that user's group write. The
 * temporary file is created and renamed relative to that descriptor, so nothing is resolved by
 * path twice. No logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Replace path atomically with data (mode), creating its directory (not the parents) when
 * make_dir. 0; -ELOOP (or -ENOTDIR) when a symlink is on the way; -EPERM with the owner in
 * *ret_owner (else (uid_t)-1) when the directory belongs to another user; another negative
 * errno. */
int output_file_write(const char *path, const char *data, size_t size, mode_t mode, bool make_dir,
		      uid_t *ret_owner);

#define OUTPUT_FILE_WHY_MAX 256

/* Why output_file_write() failed to write path, for a message, in buf; owner as *ret_owner gave
 * it. With path (the daemon's files), a permission error of a process that is not root names
 * the directory and says what to change; NULL: the plain error (the CLI's --output). */
const char *output_file_strerror(int r, uid_t owner, const char *path,
				 char buf[static OUTPUT_FILE_WHY_MAX]);
