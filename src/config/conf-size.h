/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The checks of configuration files made before libeconf opens and reads them: libeconf's
 * parser takes minutes on a file of a few megabytes, so a file over CONFIG_FILE_SIZE_MAX is
 * refused from its stat(2) alone; and libeconf would wait forever on a FIFO and read a device
 * such as /dev/zero until memory runs out, so anything but a regular file (after symlinks) is
 * refused too, without being opened. These functions name the same files libeconf's
 * econf_readDirsHistory() reads for ptsguard: the /etc main file, else the vendor one, and every
 * *.conf drop-in of both directories (libeconf 0.5 reads a vendor drop-in that an /etc one of the
 * same name replaces, too).
 * A file that cannot be stat'ed is left to libeconf, which reports it. No logging.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* 0 when path is missing, or a regular file within the limit; -EBADFD when it is not a regular
 * file (a FIFO, a device, a directory); -EFBIG when it is over the limit, with its size in
 * *ret_size. */
int config_file_check_size(const char *path, off_t *ret_size);

/* The same for every file of the directory pair that libeconf would read. On an error, the first
 * such file is copied to bad_path (size bytes); on -EFBIG its size is in *ret_size. */
int config_dirs_check_size(const char *vendor_dir, const char *admin_dir, char *bad_path,
			   size_t size, off_t *ret_size);
