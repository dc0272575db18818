/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"
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

int procfs_read_short(int dir_fd, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = -EBADF;
	ssize_t l;

	if (size == 0)
		return -EINVAL;
	buf[0] = 0;
	fd = openat(dir_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	l = read(fd, buf, size - 1);
	if (l < 0)
		return -errno;
	buf[l] = 0;
	return (int)l;
}

int procfs_read_comm(int dir_fd, const char *path, char *buf, size_t size)
{
	int r = procfs_read_short(dir_fd, path, buf, size);

	if (r < 0)
		return r;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int procfs_list_pids(int dir_fd, const char *path, pid_t **ret, size_t *ret_n)
{
	_cleanup_close_ int fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_(dir_reader_done) struct dir_reader d = { .fd = fd };
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, allocated = 0;
	const char *name;
	int r;

	if (fd < 0)
		return -errno;
	while ((r = dir_reader_next(&d, &name)) > 0) {
		unsigned pid;

		if (name[0] < '1' || name[0] > '9' || parse_uint(name, &pid) < 0)
			continue;
		if (GROW(pids, allocated, n + 1) < 0)
			return -ENOMEM;
		pids[n++] = (pid_t)pid;
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(pids);
	*ret_n = n;
	return 0;
}

int procfs_master_index(int pid_dir, const char *name, unsigned *ret)
{
	char path[300], buf[1024];
	_cleanup_close_ int f = -EBADF;
	ssize_t l;
	char *p;

	snprintf(path, sizeof(path), "fdinfo/%s", name);
	f = openat(pid_dir, path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	l = read(f, buf, sizeof(buf) - 1);
	if (l < 0)
		return -errno;
	buf[l] = 0;
	p = strstr(buf, "tty-index:");
	if (!p || sscanf(p + 10, "%u", ret) != 1)
		return -ENOENT;
	return 0;
}
