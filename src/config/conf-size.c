/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/conf-size.h"
#include "util/limits.h"
#include "util/string-util.h"

#define MAIN_FILE  "ptsguard.conf"
#define DROPIN_DIR "ptsguard.conf.d"
#define SUFFIX	   ".conf"

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

int config_file_check_size(const char *path, off_t *ret_size)
{
	struct stat st;

	/* stat(), not open(): opening a FIFO would wait for a writer, and opening a device may do
	 * something (a watchdog, a tape). It follows a symlink, as libeconf's fopen() does. */
	if (stat(path, &st) < 0)
		return 0;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	if (st.st_size <= (off_t)CONFIG_FILE_SIZE_MAX)
		return 0;
	*ret_size = st.st_size;
	return -EFBIG;
}

static int check_one(const char *dir, const char *sub, const char *name, char *bad_path,
		     size_t size, off_t *ret_size)
{
	char path[4096];
	int r;

	if (snprintf(path, sizeof(path), "%s%s%s/%s", dir, sub ? "/" : "", sub ?: "", name) >=
	    (int)sizeof(path))
		return 0; /* libeconf cannot open it either */
	r = config_file_check_size(path, ret_size);
	if (r < 0)
		snprintf(bad_path, size, "%s", path);
	return r;
}

static bool is_dropin(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > strlen(SUFFIX) && streq(name + n - strlen(SUFFIX), SUFFIX);
}

/* Every drop-in of dir/DROPIN_DIR: libeconf 0.5 reads a vendor drop-in even when /etc has one
 * of the same name. */
static int check_dropins(const char *dir, char *bad_path, size_t size, off_t *ret_size)
{
	_cleanup_(closedirp) DIR *d = NULL;
	char path[4096];
	struct dirent *de;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", dir, DROPIN_DIR) >= (int)sizeof(path))
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!is_dropin(de->d_name))
			continue;
		r = check_one(dir, DROPIN_DIR, de->d_name, bad_path, size, ret_size);
		if (r < 0)
			return r;
	}
	return 0;
}

int config_dirs_check_size(const char *vendor_dir, const char *admin_dir, char *bad_path,
			   size_t size, off_t *ret_size)
{
	char admin_main[4096];
	int r;

	snprintf(admin_main, sizeof(admin_main), "%s/%s", admin_dir, MAIN_FILE);
	r = check_one(access(admin_main, F_OK) == 0 ? admin_dir : vendor_dir, NULL, MAIN_FILE,
		      bad_path, size, ret_size);
	if (r < 0)
		return r;
	r = check_dropins(vendor_dir, bad_path, size, ret_size);
	if (r < 0)
		return r;
	return check_dropins(admin_dir, bad_path, size, ret_size);
}
