/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/limits.h"
#include "util/util.h"

int grow_array(void **array, size_t *allocated, size_t need, size_t elem_size)
{
	size_t n;
	void *p;

	if (need <= *allocated)
		return 0;
	n = *allocated ? *allocated : 8;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem_size)
			return -ENOMEM;
		n *= 2;
	}
	p = realloc(*array, n * elem_size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *allocated * elem_size, 0, (n - *allocated) * elem_size);
	*array = p;
	*allocated = n;
	return 0;
}

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
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	return read_fd_stat(fd, &st, max_size, ret, ret_size);
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

void unescape_octal(char *s)
{
	char *w = s;

	for (char *p = s; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
			p += 4;
		} else
			*w++ = *p++;
	}
	*w = 0;
}

int parse_mode(const char *s, mode_t *ret)
{
	unsigned long v = 0;
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++, n++) {
		if (*p < '0' || *p > '7' || n >= 6)
			return -EINVAL;
		v = v * 8 + (unsigned long)(*p - '0');
	}
	if (v > 07777)
		return -EINVAL;
	*ret = (mode_t)v;
	return 0;
}

const char *format_mode(mode_t mode, char buf[static 8])
{
	snprintf(buf, 8, "%04o", (unsigned)(mode & 07777));
	return buf;
}

int parse_uint(const char *s, unsigned *ret)
{
	unsigned long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end || v > UINT_MAX)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

int parse_devnum(const char *s, dev_t *ret)
{
	unsigned ma, mi;
	const char *colon;
	char buf[16];
	size_t n;

	if (!s)
		return -EINVAL;
	colon = strchr(s, ':');
	if (!colon)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (parse_uint(buf, &ma) < 0 || parse_uint(colon + 1, &mi) < 0)
		return -EINVAL;
	*ret = makedev(ma, mi);
	return 0;
}

const char *format_devnum(dev_t dev, char buf[static 24])
{
	snprintf(buf, 24, "%u:%u", major(dev), minor(dev));
	return buf;
}

bool kernel_at_least(const char *release, unsigned want_major, unsigned want_minor)
{
	unsigned ma, mi;

	if (!release || sscanf(release, "%u.%u", &ma, &mi) != 2)
		return true;
	return ma > want_major || (ma == want_major && mi >= want_minor);
}

char *path_join(const char *dir, const char *name)
{
	char *p;
	size_t l = strlen(dir);

	while (l > 0 && dir[l - 1] == '/')
		l--;
	while (*name == '/')
		name++;
	if (asprintf(&p, "%.*s/%s", (int)l, dir, name) < 0)
		return NULL;
	return p;
}

const char *path_startswith(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (streq(prefix, "/"))
		return path;
	if (strncmp(path, prefix, n) != 0 || (path[n] != 0 && path[n] != '/'))
		return NULL;
	return path + n;
}

void path_strip_trailing_slashes(char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		path[--n] = 0;
}

char *path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

char *path_resolve_lexical(const char *link_path, const char *target)
{
	_cleanup_free_ char *joined = NULL, *dir = NULL;
	char *out, *w;
	size_t n;

	if (target[0] == '/')
		joined = strdup(target);
	else {
		dir = path_dirname(link_path);
		if (!dir)
			return NULL;
		joined = path_join(dir, target);
	}
	if (!joined)
		return NULL;

	n = strlen(joined);
	out = malloc(n + 2);
	if (!out)
		return NULL;
	w = out;
	for (const char *p = joined; *p;) {
		const char *e;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		len = (size_t)(e - p);
		if (len == 1 && p[0] == '.') {
			/* skip */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (w > out && *--w != '/')
				;
		} else {
			*w++ = '/';
			memcpy(w, p, len);
			w += len;
		}
		p = e;
	}
	if (w == out)
		*w++ = '/';
	*w = 0;
	return out;
}

char *vformat(const char *fmt, va_list ap)
{
	char *s;

	return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

int set_printf(char **field, const char *fmt, ...)
{
	free(*field);
	FORMAT_VA(*field, fmt);
	return *field ? 0 : -ENOMEM;
}

char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int string_table_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (names[i] && streq(s, names[i]))
			return i;
	return -EINVAL;
}

int stat_nosync(int dirfd, const char *path, int flags, struct stat *ret)
{
	struct statx sx;

	if (statx(dirfd, path, flags | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &sx) < 0)
		return -errno;
	*ret = (struct stat){
		.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
		.st_ino = sx.stx_ino,
		.st_mode = sx.stx_mode,
		.st_nlink = sx.stx_nlink,
		.st_uid = sx.stx_uid,
		.st_gid = sx.stx_gid,
		.st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor),
		.st_size = (off_t)sx.stx_size,
		.st_blksize = (blksize_t)sx.stx_blksize,
		.st_blocks = (blkcnt_t)sx.stx_blocks,
		.st_atim = { .tv_sec = sx.stx_atime.tv_sec, .tv_nsec = sx.stx_atime.tv_nsec },
		.st_mtim = { .tv_sec = sx.stx_mtime.tv_sec, .tv_nsec = sx.stx_mtime.tv_nsec },
		.st_ctim = { .tv_sec = sx.stx_ctime.tv_sec, .tv_nsec = sx.stx_ctime.tv_nsec },
	};
	return 0;
}
