/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Paths of a namespace target (probe/namespace.h) resolved under its root with openat2, never
 * leaving it: ns_open(), ns_lstat() with the directories it keeps open for one probe
 * (ns_dirs_begin() to ns_dirs_end()), and the lookup of one name in a directory. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/namespace-internal.h"
#include "probe/namespace.h"
#include "probe/stalling-fs.h"
#include "util/alloc.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/path.h"
#include "util/string-util.h"

void ns_dirs_begin(const struct namespace_target *t)
{
	if (!t || !t->dirs)
		return;
	ns_dirs_close(t->dirs);
	t->dirs->active = true;
}

void ns_dirs_end(const struct namespace_target *t)
{
	if (t && t->dirs)
		ns_dirs_close(t->dirs);
}

void ns_check_every_lookup(const struct namespace_target *t)
{
	if (ns_in_root(t) && t->dirs)
		t->dirs->checked = true;
}

int ns_open(const struct namespace_target *t, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (ns_in_root(t) && t->dirs && t->dirs->checked)
		return open_in_root_checked(t->root_fd, t->mntns_ours ? 0 : t->mntns_id, path,
					    flags);
	if (ns_in_root(t))
		return openat2_scoped(t->root_fd, path, &how);
	fd = open(path, flags | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

int stat_in_dir(int dirfd, const char *name, struct stat *st)
{
	if (!*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
		return -EINVAL;
	return stat_nosync(dirfd, name, AT_SYMLINK_NOFOLLOW, st);
}

/* The directory dir of t, resolved under its root once in the scope of ns_dirs_begin(): a
 * descriptor owned by t->dirs, or -errno (also kept: a /dev that is not there is looked for
 * once); -EAGAIN outside the scope or out of memory, when the caller resolves the path whole. */
static int ns_dir_fd(const struct namespace_target *t, const char *dir)
{
	struct ns_dirs *d = t->dirs;
	struct ns_dir *i;

	if (!d || !d->active)
		return -EAGAIN;
	if (streq(dir, "/"))
		return t->root_fd;
	FOREACH_ARRAY (o, d->items, d->n)
		if (streq(o->path, dir))
			return o->fd;
	if (GROW(d->items, d->allocated, d->n + 1) < 0)
		return -EAGAIN;
	i = &d->items[d->n];
	i->path = strdup(dir);
	if (!i->path)
		return -EAGAIN;
	/* O_PATH: nothing of the file system's own is run to open it (and it needs no read
	 * permission); what its entries are is all we ask. */
	i->fd = ns_open(t, dir, O_PATH | O_DIRECTORY);
	d->n++;
	return i->fd;
}

/* lstat of path under t's root through the directory cache: 0, -errno, or -EAGAIN when path
 * must be resolved whole (no scope, a last component such as "..", out of memory). */
static int ns_lstat_in_dir(const struct namespace_target *t, const char *path, struct stat *st,
			   int *ret_dirfd, const char **ret_name)
{
	_cleanup_free_ char *dir = NULL;
	const char *name = strrchr(path, '/');
	int dirfd, r;

	if (!t->dirs || !t->dirs->active || path[0] != '/' || !name)
		return -EAGAIN;
	if (streq(path, "/")) {
		*ret_dirfd = t->root_fd;
		*ret_name = "";
		return stat_nosync(t->root_fd, "", AT_EMPTY_PATH, st);
	}
	name++;
	dir = path_dirname(path);
	if (!dir)
		return -EAGAIN;
	dirfd = ns_dir_fd(t, dir);
	if (dirfd == -EAGAIN)
		return dirfd;
	if (dirfd < 0)
		return dirfd; /* the directory is not there: neither is path */
	r = stat_in_dir(dirfd, name, st);
	if (r == -EINVAL)
		return -EAGAIN;
	*ret_dirfd = dirfd;
	*ret_name = name;
	return r;
}

int ns_lstat_whole(const struct namespace_target *t, const char *path, struct stat *st)
{
	_cleanup_close_ int fd = -EBADF;

	if (!ns_in_root(t))
		return lstat(path, st) < 0 ? -errno : 0;
	fd = ns_open(t, path, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	return fstat(fd, st) < 0 ? -errno : 0;
}

int ns_lstat(const struct namespace_target *t, const char *path, struct stat *st, char **ret_target)
{
	_cleanup_close_ int fd = -EBADF;
	int dirfd = -EBADF, r;
	const char *name = "";

	if (ret_target)
		*ret_target = NULL;
	if (!ns_in_root(t)) {
		if (lstat(path, st) < 0)
			return -errno;
	} else if ((r = ns_lstat_in_dir(t, path, st, &dirfd, &name)) != -EAGAIN) {
		if (r < 0)
			return r;
	} else {
		fd = ns_open(t, path, O_PATH | O_NOFOLLOW);
		if (fd < 0)
			return fd;
		if (fstat(fd, st) < 0)
			return -errno;
		dirfd = fd;
	}
	if (ret_target && S_ISLNK(st->st_mode)) {
		char buf[PATH_MAX];
		/* Under the root: the link in its directory (or itself, name ""). */
		ssize_t l = ns_in_root(t) ? readlinkat(dirfd, name, buf, sizeof(buf) - 1)
					  : readlink(path, buf, sizeof(buf) - 1);

		if (l >= 0) {
			buf[l] = 0;
			*ret_target = strdup(buf);
			if (!*ret_target)
				return -ENOMEM;
		}
	}
	return 0;
}
