/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/limits.h"
#include "util/macro.h"
#include "util/path.h"

/* st: fd's stat when the caller has it (NULL: fstat() here). */
static int read_fd_stat(int fd, const struct stat *st, size_t max_size, char **ret,
			size_t *ret_size)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0, allocated = 0;
	struct stat own;
	bool regular;

	if (!st && fstat(fd, &own) == 0)
		st = &own;
	/* /proc files report st_size 0; regular files tell us how much to expect. */
	if (st && S_ISREG(st->st_mode) && st->st_size > 0) {
		if ((uint64_t)st->st_size > max_size)
			return -EFBIG; /* refuse before reading a byte */
		allocated = (size_t)st->st_size + 1;
	}
	if (allocated < 65536)
		allocated = 65536;
	if (allocated > max_size + 1)
		allocated = max_size + 1;
	buf = malloc(allocated);
	if (!buf)
		return -ENOMEM;

	regular = st && S_ISREG(st->st_mode) && st->st_size > 0;
	for (;;) {
		size_t asked;
		ssize_t n;

		if (size + 1 >= allocated) {
			size_t na;
			char *p;

			if (allocated > max_size)
				return -EFBIG;
			na = allocated > SIZE_MAX / 2 ? SIZE_MAX : allocated * 2;
			if (na > max_size + 1)
				na = max_size + 1;
			p = realloc(buf, na);
			if (!p)
				return -ENOMEM;
			buf = p;
			allocated = na;
		}
		asked = allocated - size - 1;
		n = read(fd, buf + size, asked);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		size += (size_t)n;
		/* A regular file that gave all its stat promised and less than was asked is at its
		 * end: a read(2) that would return 0 is not needed to learn it (one system call per
		 * file; a file growing meanwhile is read as it was, as it would be a moment later).
		 */
		if (regular && size == (size_t)st->st_size && (size_t)n < asked)
			break;
	}
	if (size > max_size)
		return -EFBIG;
	buf[size] = 0;
	/* Give back the doubling slack: a 1 MiB mountinfo would otherwise hold 2 MiB. */
	if (allocated > size + 1 + 4096) {
		char *p = realloc(buf, size + 1);
		if (p)
			buf = p;
	}
	if (ret_size)
		*ret_size = size;
	*ret = TAKE_PTR(buf);
	return 0;
}

int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size)
{
	return read_fd_stat(fd, NULL, max_size, ret, ret_size);
}

int read_kernel_fd(int fd, size_t max_size, char **ret, size_t *ret_size)
{
	/* A stat that says nothing (st_size 0, as /proc's say anyway): no fstat() to learn it. */
	return read_fd_stat(fd, &(struct stat){ 0 }, max_size, ret, ret_size);
}

int read_regular_fd(int fd, size_t max_size, char **ret, size_t *ret_size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	return read_regular_fd_stat(fd, &st, max_size, ret, ret_size);
}

int read_regular_fd_stat(int fd, const struct stat *st, size_t max_size, char **ret,
			 size_t *ret_size)
{
	if (!S_ISREG(st->st_mode))
		return -EBADFD;
	return read_fd_stat(fd, st, max_size, ret, ret_size);
}

int read_file_flags(const char *path, int flags, size_t max_size, char **ret, size_t *ret_size)
{
	_cleanup_close_ int fd = -EBADF;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just after. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags);
	if (fd < 0)
		return -errno;
	return read_regular_fd(fd, max_size, ret, ret_size);
}

int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size)
{
	return read_file_flags(path, 0, max_size, ret, ret_size);
}

/* Each try is a path walk of microseconds, which a rename or a mount lands in only now and
 * then, unless a process renames on another CPU as fast as it can: the first tries follow each
 * other at once. A burst of the kernel's own (the teardown of a namespace of thousands of
 * mounts takes the mount lock again and again for milliseconds) outlasts any number of those:
 * the later tries wait, 50 us doubling up to 2 ms, some 23 ms in all before EAGAIN is given up
 * on. */
#define OPENAT2_TRIES	    32
#define OPENAT2_QUICK_TRIES 16
#define OPENAT2_WAIT_USEC   50
#define OPENAT2_WAIT_MAX    2000

int openat2_scoped(int dirfd, const char *path, const struct open_how *how)
{
	unsigned wait = OPENAT2_WAIT_USEC;

	for (unsigned i = 0;; i++) {
		int fd = (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));

		if (fd >= 0)
			return fd;
		if (errno != EAGAIN || i + 1 >= OPENAT2_TRIES)
			return -errno;
		if (i + 1 >= OPENAT2_QUICK_TRIES) {
			(void)usleep(wait);
			wait = wait * 2 > OPENAT2_WAIT_MAX ? OPENAT2_WAIT_MAX : wait * 2;
		}
	}
}

int read_file_in_root(const char *root, const char *path, size_t max_size, char **ret)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_free_ char *full = NULL;
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;

	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = openat2_scoped(dfd, path, &how);
	if (fd < 0) {
		/* Before 5.6, or a seccomp filter that refuses what it does not know. */
		if (fd != -ENOSYS && fd != -EPERM)
			return fd;
		full = path_join(root, path);
		if (!full)
			return -ENOMEM;
		fd = open(full, (int)how.flags);
		if (fd < 0)
			return -errno;
	}
	return read_regular_fd(fd, max_size, ret, NULL);
}

const char *read_error_string(int r)
{
	return r == -EBADFD ? "not a regular file" : strerror(-r);
}

#define DIR_READER_BUF (32u << 10)

int dir_reader_next(struct dir_reader *d, const char **ret_name)
{
	const struct dirent64 *de;

	if (d->pos >= d->end) {
		ssize_t n;

		if (!d->buf && !(d->buf = malloc(DIR_READER_BUF)))
			return -ENOMEM;
		n = getdents64(d->fd, d->buf, DIR_READER_BUF);
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		d->pos = 0;
		d->end = (size_t)n;
	}
	de = (const struct dirent64 *)(d->buf + d->pos);
	d->pos += de->d_reclen;
	d->type = de->d_type;
	*ret_name = de->d_name;
	return 1;
}

void dir_reader_done(struct dir_reader *d)
{
	free(d->buf);
	*d = (struct dir_reader){ .fd = d->fd };
}

/* The integer of a sysctl's text. */
static int parse_long_text(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s)
		return -EINVAL;
	while (*end == '\n' || *end == ' ')
		end++;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int read_long_file(const char *path, long *ret)
{
	_cleanup_free_ char *s = NULL;
	int r;

	r = read_full_file(path, SYSCTL_FILE_SIZE_MAX, &s, NULL);
	return r < 0 ? r : parse_long_text(s, ret);
}

int read_long_fd(int fd, long *ret)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(buf))
		return -EFBIG; /* no number of a long is that long */
	buf[n] = 0;
	return parse_long_text(buf, ret);
}

int statx_nosync(int dirfd, const char *path, int flags, unsigned mask, struct stat *ret,
		 struct statx *sx)
{
	if (statx(dirfd, path, flags | AT_STATX_DONT_SYNC, STATX_BASIC_STATS | mask, sx) < 0)
		return -errno;
	*ret = (struct stat){
		.st_dev = makedev(sx->stx_dev_major, sx->stx_dev_minor),
		.st_ino = sx->stx_ino,
		.st_mode = sx->stx_mode,
		.st_nlink = sx->stx_nlink,
		.st_uid = sx->stx_uid,
		.st_gid = sx->stx_gid,
		.st_rdev = makedev(sx->stx_rdev_major, sx->stx_rdev_minor),
		.st_size = (off_t)sx->stx_size,
		.st_blksize = (blksize_t)sx->stx_blksize,
		.st_blocks = (blkcnt_t)sx->stx_blocks,
		.st_atim = { .tv_sec = sx->stx_atime.tv_sec, .tv_nsec = sx->stx_atime.tv_nsec },
		.st_mtim = { .tv_sec = sx->stx_mtime.tv_sec, .tv_nsec = sx->stx_mtime.tv_nsec },
		.st_ctim = { .tv_sec = sx->stx_ctime.tv_sec, .tv_nsec = sx->stx_ctime.tv_nsec },
	};
	return 0;
}

int stat_nosync(int dirfd, const char *path, int flags, struct stat *ret)
{
	struct statx sx;

	return statx_nosync(dirfd, path, flags, 0, ret, &sx);
}
