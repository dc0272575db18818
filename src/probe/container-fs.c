/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What attribution reads of the system (container.c is the rule, on text alone): the owners of
 * the cgroup directories a path runs through (cgroup_trust_fs()), containerd's state
 * (containerd_task_fs()) and machined's registry, for the text of a process's /proc/PID/cgroup
 * (container_probe()). Every name here is the cgroup tree's, which a delegated user or a
 * container partly chooses: opened beneath /sys/fs/cgroup or the state directory, never followed
 * out of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "probe/container.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/string-util.h"

#define CGROUP_FS "/sys/fs/cgroup"

/* Whether names below a cgroup directory are someone else's than root's: it is not root's, or
 * others than root may create directories in it. */
static bool cgroup_dir_delegated(const struct stat *st)
{
	return st->st_uid != 0 || (st->st_mode & S_IWOTH) ||
	       ((st->st_mode & S_IWGRP) && st->st_gid != 0);
}

static int open_beneath(int dir_fd, const char *name, uint64_t resolve)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | resolve,
	};
	return openat2_scoped(dir_fd, name, &how);
}

/* The root of a hierarchy, checked to be a cgroup file system of its kind: cgroup v2 is
 * /sys/fs/cgroup itself or, on a hybrid host, its unified/; a v1 hierarchy is the directory its
 * controllers name ("cpu,cpuacct", "name=systemd" -> systemd/). */
static int open_hierarchy(int cgroup_fd, const char *name)
{
	_cleanup_close_ int fd = -EBADF;
	unsigned long magic = name[0] ? CGROUP_SUPER_MAGIC : CGROUP2_SUPER_MAGIC;
	struct statfs sfs;

	if (!name[0] && fstatfs(cgroup_fd, &sfs) == 0 && (unsigned long)sfs.f_type == magic)
		fd = open_beneath(cgroup_fd, ".", 0);
	else
		/* Its own mount, under /sys/fs/cgroup: RESOLVE_NO_XDEV would refuse it. */
		fd = open_beneath(cgroup_fd, name[0] ? name : "unified", 0);
	if (fd < 0)
		return fd;
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if ((unsigned long)sfs.f_type != magic)
		return -EMEDIUMTYPE;
	return TAKE_FD(fd);
}

/* The hierarchies' roots, each opened and checked once a process: a cgroup file system is
 * mounted once, at boot, and stays, while every namespace audited names its own cgroups in
 * it (four system calls a hierarchy a namespace, a dozen hierarchies on a v1 host). Only what
 * was found is kept; "" is the unified hierarchy. Whether a root's names are root's own is
 * asked again once its answer is a minute old: only root can change that owner or mode (a
 * container's root has no say over an inode of the host's root, nor has a delegated user), so
 * no one else can make the answer stale; and a run of --all-namespaces, or the daemon through
 * containers seconds apart, should not ask it for each namespace. */
#define HIERARCHIES_MAX	       32
#define HIERARCHY_RECHECK_USEC (60 * USEC_PER_SEC)
static struct {
	char name[NAME_MAX + 1];
	int fd;
	bool delegated;
	uint64_t checked; /* CLOCK_MONOTONIC_COARSE of the last fstat(); 0: never */
} hierarchies[HIERARCHIES_MAX];
static size_t n_hierarchies;

/* Whether names in root (a table's, i, or another: i == n_hierarchies) are someone else's. */
static int root_delegated(int root, size_t i, bool *ret)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC_COARSE);
	struct stat st;

	if (i < n_hierarchies && hierarchies[i].checked &&
	    now - hierarchies[i].checked < HIERARCHY_RECHECK_USEC) {
		*ret = hierarchies[i].delegated;
		return 0;
	}
	if (fstat(root, &st) < 0)
		return -errno;
	*ret = cgroup_dir_delegated(&st);
	if (i < n_hierarchies) {
		hierarchies[i].delegated = *ret;
		hierarchies[i].checked = now ?: 1;
	}
	return 0;
}

/* /sys/fs/cgroup, opened once it opens. */
static int cgroup_fs(void)
{
	static int fd = -EBADF;

	if (fd < 0) {
		fd = open(CGROUP_FS, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	return fd;
}

/* The root of the hierarchy controllers name: a descriptor of the table's (its index in *i),
 * or one of the caller's to close (*i == n_hierarchies) when the table is full; or -errno. */
static int hierarchy_root(const struct cgroup_component *controllers, size_t *i)
{
	char name[NAME_MAX + 1];
	const char *ctl = controllers->s;
	size_t n = controllers->n;
	int fd;

	if (n >= 5 && memcmp(ctl, "name=", 5) == 0) {
		ctl += strlen("name=");
		n -= strlen("name=");
		if (n == 0)
			return -EINVAL;
	}
	if (n >= sizeof(name) || memchr(ctl, '/', n))
		return -EINVAL;
	memcpy(name, ctl, n);
	name[n] = 0;
	for (*i = 0; *i < n_hierarchies; (*i)++)
		if (streq(hierarchies[*i].name, name))
			return hierarchies[*i].fd;
	/* Which names root chose is read from the cgroup file systems themselves. */
	fd = cgroup_fs();
	if (fd < 0)
		return fd;
	fd = open_hierarchy(fd, name);
	if (fd < 0 || n_hierarchies == HIERARCHIES_MAX)
		return fd;
	memcpy(hierarchies[n_hierarchies].name, name, n + 1);
	hierarchies[n_hierarchies].fd = fd;
	hierarchies[n_hierarchies++].checked = 0;
	return fd;
}

int cgroup_hierarchy_root(const struct cgroup_component *controllers)
{
	size_t i;
	int fd = hierarchy_root(controllers, &i);

	if (fd >= 0 && i == n_hierarchies) {
		close(fd); /* a table full of hierarchies: no host mounts that many */
		return -EMFILE;
	}
	return fd;
}

int cgroup_trust_fs(void *userdata, const struct cgroup_component *controllers,
		    const struct cgroup_component *comps, size_t n, bool *delegated)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	size_t h;
	int root, r;

	(void)userdata;
	*delegated = false;
	root = hierarchy_root(controllers, &h);
	if (root < 0)
		return root;
	if (h == n_hierarchies)
		fd = root; /* not the table's: ours to close */
	r = root_delegated(root, h, delegated);
	if (r < 0)
		return r;
	if (*delegated)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char name[NAME_MAX + 1];
		int next;

		/* A name that is no directory's (the process moved, or a line forged): the path
		 * counts down to here. */
		if (comps[i].n >= sizeof(name))
			return (int)i;
		memcpy(name, comps[i].s, comps[i].n);
		name[comps[i].n] = 0;
		if (streq(name, ".") || streq(name, ".."))
			return (int)i;
		next = open_beneath(i == 0 ? root : fd, name, RESOLVE_NO_XDEV);
		if (next < 0)
			return (int)i;
		if (fd >= 0)
			close(fd);
		fd = next;
		if (fstat(fd, &st) < 0)
			return (int)i;
		if (cgroup_dir_delegated(&st)) {
			*delegated = true;
			return (int)(i + 1);
		}
	}
	return (int)n;
}

/* containerd's task state directory, when root alone may make directories in it. */
static int open_tasks_dir(void)
{
	_cleanup_close_ int fd = open(CONTAINERD_TASKS_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (cgroup_dir_delegated(&st))
		return -EPERM;
	return TAKE_FD(fd);
}

bool containerd_task_fs(void *userdata, const struct cgroup_component *ns,
			const struct cgroup_component *id)
{
	struct cgroup_sources *src = userdata;
	_cleanup_close_ int fd = -EBADF;
	char name[2 * 76 + 2];
	struct stat st;

	/* Opened at the first path that looks like a task's: most hosts never ask. */
	if (src->tasks_fd == -EBADF)
		src->tasks_fd = open_tasks_dir();
	/* Names is_containerd_name() took: no '/', no "..", short. */
	if (src->tasks_fd < 0 || ns->n + id->n + 2 > sizeof(name))
		return false;
	snprintf(name, sizeof(name), "%.*s/%.*s", (int)ns->n, ns->s, (int)id->n, id->s);
	fd = open_beneath(src->tasks_fd, name, RESOLVE_NO_XDEV);
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == 0;
}

/* machined's name for a unit: /run/systemd/machines/unit:<unit> is a symlink to it. */
static char *machine_for_unit(const char *machines, const char *unit)
{
	_cleanup_free_ char *link = NULL;
	char target[256];
	ssize_t n;

	if (!machines || !unit || strchr(unit, '/'))
		return NULL;
	if (asprintf(&link, "%s/unit:%s", machines, unit) < 0) {
		link = NULL;
		return NULL;
	}
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = 0;
	if (strchr(target, '/'))
		return NULL;
	return strdup(target);
}

int container_probe(const char *cgroup, const char *machines, struct container *ret)
{
	_cleanup_free_ char *machine = NULL;
	struct cgroup_sources src;
	int r;

	*ret = (struct container){ 0 };
	/* containerd's tasks only when the host's registries are asked. */
	src = (struct cgroup_sources){ .tasks_fd = machines ? -EBADF : -ENOENT };
	r = container_from_cgroup(cgroup, cgroup_trust_fs, containerd_task_fs, &src, ret);
	if (src.tasks_fd >= 0)
		close(src.tasks_fd);
	if (r < 0)
		return r;
	machine = machine_for_unit(machines, ret->unit);
	if (machine) {
		if (!ret->manager)
			ret->manager = "unknown";
		if (!ret->name || streq(ret->manager, "nspawn")) {
			free(ret->name);
			ret->name = TAKE_PTR(machine);
		}
		r = 1;
	}
	return r;
}
