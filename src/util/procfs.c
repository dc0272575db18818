/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
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

int procfs_read_comm(int dir_fd, const char *path, char *buf, size_t size)
{
	int fd = openat(dir_fd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ssize_t l;

	if (size == 0)
		return -EINVAL;
	buf[0] = 0;
	if (fd < 0)
		return -errno;
	l = read(fd, buf, size - 1);
	if (l < 0) {
		l = -errno;
		close(fd);
		return (int)l;
	}
	close(fd);
	buf[l] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}
