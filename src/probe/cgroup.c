/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "probe/cgroup.h"
#include "probe/container.h"
#include "probe/namespace.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/string-util.h"

/* A devices.list has a line per rule: a container's few dozen, far below this. */
#define DEVICES_LIST_MAX (64u << 10)

enum { HIER_UNIFIED, HIER_DEVICES };

/* Does the controller list (comma-separated) name devices? */
static bool names_devices(const char *list, size_t n)
{
	for (const char *p = list, *end = list + n; p < end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (len == 7 && memcmp(p, "devices", 7) == 0)
			return true;
		p += len + 1;
	}
	return false;
}

/* The paths of the unified and devices hierarchies in the text of a /proc/PID/cgroup (NULL:
 * not listed), as pointers into text, which is cut into lines, and, ctls not NULL, the
 * controllers of their lines (the devices hierarchy's may be co-mounted with others: its
 * directory is named by them all). -EBADMSG when one is listed twice (a cgroup name with a
 * newline in it). */
static int parse_cgroups(char *text, char *paths[ALLOC_CGROUP_FDS],
			 struct cgroup_component ctls[ALLOC_CGROUP_FDS])
{
	paths[HIER_UNIFIED] = paths[HIER_DEVICES] = NULL;
	for (char *line = text, *next; line && *line; line = next) {
		char *c1, *c2;
		int which;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		c1 = strchr(line, ':');
		c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
			which = HIER_UNIFIED;
		else if (names_devices(c1 + 1, (size_t)(c2 - c1 - 1)))
			which = HIER_DEVICES;
		else
			continue;
		if (paths[which])
			return -EBADMSG;
		paths[which] = c2 + 1;
		if (ctls)
			ctls[which] = (struct cgroup_component){ c1 + 1, (size_t)(c2 - c1 - 1) };
	}
	return 0;
}

/* Ours, read once: the text and the two paths in it. */
static int own_cgroups(char **paths)
{
	static char *text;
	static char *own[ALLOC_CGROUP_FDS];
	int r;

	if (!text) {
		_cleanup_free_ char *t = NULL;

		r = ns_read_proc(NULL, "cgroup", CGROUP_FILE_SIZE_MAX, &t, NULL);
		if (r < 0)
			return r;
		r = parse_cgroups(t, own, NULL);
		if (r < 0)
			return r;
		text = TAKE_PTR(t);
	}
	paths[HIER_UNIFIED] = own[HIER_UNIFIED];
	paths[HIER_DEVICES] = own[HIER_DEVICES];
	return 0;
}

void probe_cgroup_fds_close(int fds[ALLOC_CGROUP_FDS])
{
	for (unsigned i = 0; i < ALLOC_CGROUP_FDS; i++)
		closep(&fds[i]);
}

/* The directory of path (absolute, as /proc/PID/cgroup says) beneath hierarchy mount fd, an
 * O_PATH descriptor, checked to be of the file system magic. */
static int open_cgroup_dir(int mount_fd, const char *path, unsigned long magic)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve =
		    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	_cleanup_close_ int dir = -EBADF;
	struct statfs sfs;

	if (path[0] != '/')
		return -EBADMSG;
	while (*path == '/')
		path++;
	dir = openat2_scoped(mount_fd, *path ? path : ".", &how);
	if (dir < 0)
		return dir;
	if (fstatfs(dir, &sfs) < 0)
		return -errno;
	if ((unsigned long)sfs.f_type != magic)
		return -EXDEV;
	return TAKE_FD(dir);
}

/* cgroup.procs of path beneath hierarchy mount fd. */
static int open_procs(int mount_fd, const char *path, unsigned long magic)
{
	_cleanup_close_ int dir = open_cgroup_dir(mount_fd, path, magic);
	int fd;

	if (dir < 0)
		return dir;
	fd = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 ? fd : -errno;
}

/* The cgroup file of t's process, to cut into lines: a copy of the one read when t was opened,
 * or, for ourselves (t NULL or our own), read now. 0 or negative errno. */
static int cgroup_text(const struct namespace_target *t, char **ret)
{
	if (!t || t->own)
		return ns_read_proc(NULL, "cgroup", CGROUP_FILE_SIZE_MAX, ret, NULL);
	if (!t->cgroup)
		return t->cgroup_error;
	*ret = strdup(t->cgroup);
	return *ret ? 0 : -ENOMEM;
}

int probe_cgroup_procs_of(const struct namespace_target *t, int fds[ALLOC_CGROUP_FDS])
{
	static const unsigned long magic[ALLOC_CGROUP_FDS] = { CGROUP2_SUPER_MAGIC,
							       CGROUP_SUPER_MAGIC };
	_cleanup_free_ char *text = NULL;
	char *theirs[ALLOC_CGROUP_FDS], *ours[ALLOC_CGROUP_FDS];
	struct cgroup_component ctls[ALLOC_CGROUP_FDS];
	int r;

	fds[HIER_UNIFIED] = fds[HIER_DEVICES] = -1;
	r = own_cgroups(ours);
	if (r < 0)
		return r;
	r = cgroup_text(t, &text);
	if (r < 0)
		return r;
	r = parse_cgroups(text, theirs, ctls);
	if (r < 0)
		return r;
	for (int i = 0; i < ALLOC_CGROUP_FDS; i++) {
		int mount_fd;

		if (!theirs[i] || (ours[i] && streq(ours[i], theirs[i])))
			continue;
		mount_fd = cgroup_hierarchy_root(&ctls[i]);
		if (mount_fd < 0)
			continue;
		r = open_procs(mount_fd, theirs[i], magic[i]);
		if (r < 0) {
			probe_cgroup_fds_close(fds);
			return r;
		}
		fds[i] = r;
	}
	return 0;
}

/* devices.list of the v1 cgroup path beneath the hierarchy's mount_fd, read only (a kernel
 * file: no FIFO can be put there). */
static int read_devices_list(int mount_fd, const char *path, char **ret)
{
	_cleanup_close_ int dir = -EBADF, fd = -EBADF;

	dir = open_cgroup_dir(mount_fd, path, CGROUP_SUPER_MAGIC);
	if (dir < 0)
		return dir;
	fd = openat(dir, "devices.list", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	return read_kernel_fd(fd, DEVICES_LIST_MAX, ret, NULL);
}

int probe_device_cgroup(const struct namespace_target *t, struct device_cgroup **ret)
{
	_cleanup_(device_cgroup_freep) struct device_cgroup *d = NULL;
	_cleanup_free_ char *text = NULL;
	char *paths[ALLOC_CGROUP_FDS];
	struct cgroup_component ctls[ALLOC_CGROUP_FDS];
	bool other = t && !t->own;
	int mount_fd, r;

	*ret = NULL;
	r = cgroup_text(t, &text);
	if (r < 0)
		return r;
	r = parse_cgroups(text, paths, ctls);
	if (r < 0)
		return r;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* Where the v1 controller is mounted and the process is in it, its rules are the ones
	 * met (a hybrid host may have BPF programs on the unified side too, which nothing lists).
	 */
	if (paths[HIER_DEVICES] && (mount_fd = cgroup_hierarchy_root(&ctls[HIER_DEVICES])) >= 0) {
		d->version = 1;
		d->path = strdup(paths[HIER_DEVICES]);
		if (!d->path)
			return -ENOMEM;
		r = read_devices_list(mount_fd, d->path, &d->list);
		if (r == -ENOMEM)
			return r;
	} else if (paths[HIER_UNIFIED] && cgroup_hierarchy_root(&ctls[HIER_UNIFIED]) >= 0) {
		d->version = 2;
		d->path = strdup(paths[HIER_UNIFIED]);
		if (!d->path)
			return -ENOMEM;
	} else
		return -ENOENT;
	if (other) {
		struct container c = { 0 };

		r = container_probe(t->cgroup, MACHINES_DIR, &c);
		if (r > 0 && c.manager &&
		    (!(d->container_manager = strdup(c.manager)) ||
		     ((c.name || c.id) && !(d->container_name = strdup(c.name ?: c.id))))) {
			container_done(&c);
			return -ENOMEM;
		}
		container_done(&c);
	}
	*ret = TAKE_PTR(d);
	return 0;
}
