/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The size limit of configuration files, applied before libeconf reads them: libeconf's parser
 * takes minutes on a file of a few megabytes, so a file over CONFIG_FILE_SIZE_MAX is refused
 * from its stat(2) alone. These functions name the same files libeconf's
 * econf_readDirsHistory() reads for ptsguard: the /etc main file, else the vendor one, and every
 * *.conf drop-in of both directories (libeconf 0.5 reads a vendor drop-in that an /etc one of the
 * same name replaces, too).
 * A file that cannot be stat'ed is left to libeconf, which reports it. No logging.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* 0 when path is missing or within the limit; -EFBIG when it is over, with its size in
 * *ret_size; -ENOMEM. */
int config_file_check_size(const char *path, off_t *ret_size);

/* The same for every file of the directory pair that libeconf would read. On -EFBIG, the first
 * such file is copied to bad_path (size bytes) and its size is in *ret_size. */
int config_dirs_check_size(const char *vendor_dir, const char *admin_dir, char *bad_path,
			   size_t size, off_t *ret_size);
