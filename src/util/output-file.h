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
 * path twice.
 *
 * Only an absent path or a regular file is replaced. What is there is looked at with fstatat()
 * on the directory's descriptor without following a symlink, before the temporary file is made
 * (a refusal leaves nothing behind) and again just before the rename: a character or block
 * device, a FIFO, a socket, a directory or a symlink is refused and left as it is. An absent
 * path is filled with renameat2(RENAME_NOREPLACE), so something made there meanwhile is never
 * replaced (it is looked at again); where the file system lacks that flag, and for a regular
 * file, the rename follows the second look. What remains is the moment between that look and
 * the rename, open only to who may write in the directory, which must be root or the effective
 * uid already. No logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Why output_file_write() failed, beside its errno. */
struct output_file_error {
	uid_t owner;  /* -EPERM: the directory's owner when it is another user, else (uid_t)-1 */
	mode_t found; /* -EEXIST: the type (S_IFMT bits) of what is at the path, else 0 */
	dev_t rdev;   /* -EEXIST on a device: its number */
	bool stdout_name; /* -ENXIO: path is a name of standard output that leads elsewhere */
};

/* Replace path atomically with data (mode), creating its directory (not the parents) when
 * make_dir. 0; -EEXIST when path is neither absent nor a regular file (err->found says what it
 * is; it is left unchanged); -ENXIO for a name of standard output (output_file_is_stdout())
 * that does not lead to it, which is never replaced either; -ELOOP (or -ENOTDIR) when a symlink is
 * on the way to its directory; -EPERM with err->owner set when the directory belongs to another
 * user; another negative errno. err may be NULL. */
int output_file_write(const char *path, const char *data, size_t size, mode_t mode, bool make_dir,
		      struct output_file_error *err);

/* Does path mean standard output, to be written in place rather than replaced? "-", and
 * /dev/stdout, /dev/fd/1 and /proc/self/fd/1 when they lead to the very file standard output
 * is (the same device and inode): the shell's redirection then decides where it goes. When one
 * of those names leads elsewhere (or nowhere), output_file_write() refuses it; any other symlink
 * is refused as a symlink. */
bool output_file_is_stdout(const char *path);

#define OUTPUT_FILE_WHY_MAX 256

/* Why output_file_write() failed to write path, for a message, in buf; err as it filled it (or
 * NULL). With path (the daemon's files), a permission error of a process that is not root
 * names the directory and says what to change; NULL: the plain error (the CLI's --output). */
const char *output_file_strerror(int r, const struct output_file_error *err, const char *path,
				 char buf[static OUTPUT_FILE_WHY_MAX]);
