/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "util/procfs.h"

static int proc_dir = -EBADF;

int procfs_fd(void)
{
	if (proc_dir < 0) {
		proc_dir = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (proc_dir < 0)
			return -errno;
	}
	return proc_dir;
}

int procfs_chdir(int *saved_cwd)
{
	int p = procfs_fd();

	if (p < 0)
		return p;
	*saved_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*saved_cwd < 0)
		return -errno;
	if (fchdir(p) < 0) {
		int r = -errno;

		close(*saved_cwd);
		return r;
	}
	return 0;
}

void procfs_chdir_back(int saved_cwd)
{
	(void)!fchdir(saved_cwd);
	close(saved_cwd);
}
