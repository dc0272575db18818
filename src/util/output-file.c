/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/output-file.h"
#include "util/path.h"
#include "util/string-util.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* The walk for kernels without openat2(): every component opened with O_NOFOLLOW. */
static int open_dir_walk(const char *dir)
{
	_cleanup_free_ char *copy = strdup(dir);
	_cleanup_close_ int fd = -EBADF;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	fd = open(dir[0] == '/' ? "/" : ".", DIR_FLAGS);
	if (fd < 0)
		return -errno;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int next = openat(fd, c, DIR_FLAGS);

		if (next < 0)
			return -errno; /* ELOOP or ENOTDIR on a symlink */
		close(fd);
		fd = next;
	}
	return TAKE_FD(fd);
}

static int open_dir(const char *dir)
{
	struct open_how how = {
		/* Without O_NOFOLLOW: a symlink last is then ELOOP like any other, not ENOTDIR. */
		.flags = DIR_FLAGS & ~O_NOFOLLOW,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

#ifdef SYS_openat2
	fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	if (errno != ENOSYS && errno != EPERM && errno != E2BIG)
		return -errno;
#endif
	return open_dir_walk(dir);
}

/* The directory of path, created when missing and make_dir: its parent is opened the same way,
 * and the new directory is made and opened relative to it. */
static int open_output_dir(const char *path, bool make_dir)
{
	_cleanup_free_ char *dir = path_dirname(path), *parent = NULL;
	_cleanup_close_ int pfd = -EBADF;
	const char *name;
	int fd;

	if (!dir)
		return -ENOMEM;
	fd = open_dir(dir);
	if (fd != -ENOENT || !make_dir)
		return fd;
	parent = path_dirname(dir);
	name = strrchr(dir, '/');
	name = name ? name + 1 : dir;
	if (!parent)
		return -ENOMEM;
	pfd = open_dir(parent);
	if (pfd < 0)
		return pfd;
	bool made = mkdirat(pfd, name, 0755) >= 0;

	if (!made && errno != EEXIST)
		return -errno;
	fd = openat(pfd, name, DIR_FLAGS);
	if (fd < 0)
		return -errno;
	/* 0755 whatever the umask (the unit's UMask=0077): readers of the files need the way in. */
	if (made && fchmod(fd, 0755) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int write_all(int fd, const char *data, size_t size)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, data + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* What is at name in dfd, not following a symlink: 0 absent, 1 a regular file, -EEXIST anything
 * else (told in *err), or another negative errno. */
static int entry_kind(int dfd, const char *name, struct output_file_error *err)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 1;
	err->found = st.st_mode & S_IFMT;
	err->rdev = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? st.st_rdev : 0;
	return -EEXIST;
}

/* Rename tmp to name in dfd once what is at name has been looked at again: absent, without
 * replacing what appears meanwhile (looked at once more); a regular file, replaced. */
static int put_in_place(int dfd, const char *tmp, const char *name, struct output_file_error *err)
{
	for (unsigned tries = 0; tries < 4; tries++) {
		int r = entry_kind(dfd, name, err);

		if (r < 0)
			return r;
		if (r == 0) {
			if (renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) >= 0)
				return 0;
			if (errno == EEXIST)
				continue;
			/* Not every file system (or seccomp filter) has the flag: as for a
			 * regular file, then. */
			if (errno != EINVAL && errno != ENOSYS && errno != EPERM)
				return -errno;
		}
		return renameat(dfd, tmp, dfd, name) < 0 ? -errno : 0;
	}
	return -EAGAIN; /* made and removed again and again under us */
}

/* The names of standard output a user may give for "-". */
static const char *const stdout_names[] = { "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1" };

static bool is_stdout_name(const char *path)
{
	for (size_t i = 0; i < ELEMENTSOF(stdout_names); i++)
		if (streq(path, stdout_names[i]))
			return true;
	return false;
}

int output_file_write(const char *path, const char *data, size_t size, mode_t mode, bool make_dir,
		      struct output_file_error *ret_err)
{
	_cleanup_close_ int dfd = -EBADF, fd = -EBADF;
	struct output_file_error dummy, *err = ret_err ? ret_err : &dummy;
	const char *base = strrchr(path, '/');
	char tmp[NAME_MAX + 1];
	struct stat st;
	int r;

	*err = (struct output_file_error){ .owner = (uid_t)-1 };
	if (is_stdout_name(path)) {
		err->stdout_name = true;
		return -ENXIO;
	}
	base = base ? base + 1 : path;
	if (!*base)
		return -EISDIR;
	dfd = open_output_dir(path, make_dir);
	if (dfd < 0)
		return dfd;
	if (fstat(dfd, &st) < 0)
		return -errno;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		err->owner = st.st_uid;
		return -EPERM;
	}
	/* Before anything is made: a refusal leaves the directory as it was. */
	r = entry_kind(dfd, base, err);
	if (r < 0)
		return r;
	/* NAME.XXXXXX, as mkstemp(3) names it, but created relative to the directory. */
	if (strlen(base) + 8 > sizeof(tmp))
		return -ENAMETOOLONG;
	for (unsigned i = 0;; i++) {
		static const char chars[] =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
		unsigned char rnd[6];

		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
			for (size_t k = 0; k < sizeof(rnd); k++)
				rnd[k] = (unsigned char)(random() ^ (getpid() >> k) ^ i);
		snprintf(tmp, sizeof(tmp), "%s.", base);
		for (size_t k = 0; k < sizeof(rnd); k++)
			tmp[strlen(base) + 1 + k] = chars[rnd[k] % (sizeof(chars) - 1)];
		tmp[strlen(base) + 1 + sizeof(rnd)] = 0;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST || i >= 100)
			break;
	}
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, size);
	if (r >= 0 && (fchmod(fd, mode) < 0 || fsync(fd) < 0))
		r = -errno;
	if (r >= 0)
		r = put_in_place(dfd, tmp, base, err);
	if (r < 0)
		(void)unlinkat(dfd, tmp, 0);
	return r;
}

bool output_file_is_stdout(const char *path)
{
	struct stat a, b;

	if (streq(path, "-"))
		return true;
	return is_stdout_name(path) && stat(path, &a) >= 0 && fstat(STDOUT_FILENO, &b) >= 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static const char *file_type_name(mode_t type)
{
	switch (type) {
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "not a regular file";
	}
}

const char *output_file_strerror(int r, const struct output_file_error *err, const char *path,
				 char buf[static OUTPUT_FILE_WHY_MAX])
{
	_cleanup_free_ char *dir = path ? path_dirname(path) : NULL;
	unsigned me = (unsigned)geteuid();
	uid_t owner = err ? err->owner : (uid_t)-1;

	if (r == -EEXIST && err && err->found) {
		if (err->found == S_IFCHR || err->found == S_IFBLK)
			snprintf(buf, OUTPUT_FILE_WHY_MAX,
				 "it is %s (%u:%u), not a regular file: refused, left as it is",
				 file_type_name(err->found), major(err->rdev), minor(err->rdev));
		else
			snprintf(buf, OUTPUT_FILE_WHY_MAX,
				 "it is %s, not a regular file: refused, left as it is",
				 file_type_name(err->found));
		return buf;
	}
	if (r == -ENXIO && err && err->stdout_name) {
		snprintf(buf, OUTPUT_FILE_WHY_MAX,
			 "a name of standard output that does not lead to it here (refused)");
		return buf;
	}

	if (r == -EPERM && owner != (uid_t)-1 && me == 0)
		snprintf(buf, OUTPUT_FILE_WHY_MAX,
			 "its directory belongs to uid %u, not root (refused)", (unsigned)owner);
	else if (r == -EPERM && owner != (uid_t)-1)
		snprintf(buf, OUTPUT_FILE_WHY_MAX,
			 "its directory belongs to uid %u, neither root nor uid %u (refused)",
			 (unsigned)owner, me);
	else if (r == -EPERM && me != 0 && dir)
		snprintf(buf, OUTPUT_FILE_WHY_MAX,
			 "not permitted (its directory %s must be root's or uid %u's)", dir, me);
	else if (r == -EPERM)
		snprintf(buf, OUTPUT_FILE_WHY_MAX, "not permitted (its directory must be root's)");
	else if (r == -EACCES && me != 0 && dir)
		snprintf(
		    buf, OUTPUT_FILE_WHY_MAX,
		    "uid %u may not write in %s: give that directory to uid %u, or let its "
		    "group write there (root-owned, group %u, mode 0775); see ptsguard.conf(5)",
		    me, dir, me, (unsigned)getegid());
	else if (r == -ELOOP)
		snprintf(buf, OUTPUT_FILE_WHY_MAX, "a symbolic link is on the way (refused)");
	else
		snprintf(buf, OUTPUT_FILE_WHY_MAX, "%s", strerror(-r));
	return buf;
}
