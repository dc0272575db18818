/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/namespace.h"
#include "snapshot/snapshot.h"
#include "util/limits.h"
#include "util/util.h"

/* A directory ns_lstat() resolved, by path; fd -errno when it could not be. */
struct ns_dir {
	char *path;
	int fd;
};

struct ns_dirs {
	bool active; /* between ns_dirs_begin() and ns_dirs_end() */
	size_t n, allocated;
	struct ns_dir *items;
};

static void ns_dirs_close(struct ns_dirs *d)
{
	FOREACH_ARRAY (i, d->items, d->n) {
		free(i->path);
		closep(&i->fd);
	}
	d->n = 0;
	d->active = false;
}

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

struct namespace_target *namespace_target_free(struct namespace_target *t)
{
	if (!t)
		return NULL;
	if (t->dirs) {
		ns_dirs_close(t->dirs);
		free(t->dirs->items);
		free(t->dirs);
	}
	closep(&t->pidfd);
	closep(&t->proc_fd);
	closep(&t->mntns_fd);
	closep(&t->root_fd);
	free(t->uid_map);
	free(t->gid_map);
	free(t);
	return NULL;
}

int namespace_target_check(const struct namespace_target *t)
{
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

	/* A pidfd polls readable once the process has exited. */
	if (poll(&p, 1, 0) < 0)
		return -errno;
	return p.revents ? -ESRCH : 0;
}

int namespace_target_recheck(const struct namespace_target *t, uint64_t *ret_now)
{
	struct stat st;
	int r = namespace_target_check(t);

	if (r < 0)
		return r;
	/* /proc/PID is the pinned process (namespace_target_open()): its ns/mnt is where it is
	 * now, which the descriptor opened then (mntns_fd) does not follow. */
	if (fstatat(t->proc_fd, "ns/mnt", &st, 0) < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	if (ret_now)
		*ret_now = st.st_ino;
	if (st.st_ino != t->mntns || st.st_dev != t->mntns_dev)
		return -ESTALE;
	/* It may have exited after the stat, leaving a namespace in teardown. */
	return namespace_target_check(t);
}

int namespace_self_mntns(uint64_t *ret)
{
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) < 0)
		return -errno;
	*ret = st.st_ino;
	return 0;
}

/* Ours, once: the main process never changes its mount namespace (only children enter others). */
static int self_mntns_cached(uint64_t *ret)
{
	static uint64_t self;

	if (!self) {
		int r = namespace_self_mntns(&self);

		if (r < 0)
			return r;
	}
	*ret = self;
	return 0;
}

/* Our root directory, stat()ed once: what root_is_ours compares every namespace's with. NULL
 * (errno set) when it cannot be. */
static const struct stat *self_root_cached(void)
{
	static struct stat root;
	static bool known;

	if (!known && stat("/", &root) == 0)
		known = true;
	return known ? &root : NULL;
}

/* The maps of the user namespace; NULL for the identity (one line mapping every id). */
static int read_idmap(const struct namespace_target *t, const char *name, char **ret)
{
	_cleanup_free_ char *text = NULL;
	unsigned long long in, out, count;
	int used = 0, r;

	*ret = NULL;
	r = ns_read_proc(t, name, 64 * 1024, &text, NULL);
	if (r < 0)
		return r == -ENOENT ? 0 : r; /* no user namespaces in this kernel */
	if (sscanf(text, " %llu %llu %llu %n", &in, &out, &count, &used) == 3 && text[used] == 0 &&
	    in == 0 && out == 0 && count == 4294967295ULL)
		return 0;
	*ret = TAKE_PTR(text);
	return 0;
}

/* Is t in our own user namespace, and is that the initial one (identity maps)? Then its maps
 * are the identity too, and need no reading. Ours is alive (we are in it): its inode can be no
 * other namespace's. */
static bool same_userns_as_identity_self(const struct namespace_target *t)
{
	static int self_identity = -1; /* unknown yet */
	static struct stat self;
	struct stat st;

	if (self_identity < 0) {
		_cleanup_free_ char *uid = NULL, *gid = NULL;

		if (stat("/proc/self/ns/user", &self) < 0 ||
		    read_idmap(NULL, "uid_map", &uid) < 0 || read_idmap(NULL, "gid_map", &gid) < 0)
			return false;
		self_identity = !uid && !gid;
	}
	return self_identity && fstatat(t->proc_fd, "ns/user", &st, 0) == 0 &&
	       st.st_dev == self.st_dev && st.st_ino == self.st_ino;
}

/* /proc refuses a process that is gone with ENOENT or ESRCH: both mean "no such process". */
static int gone(int err)
{
	return err == ENOENT || err == ESRCH ? -ESRCH : -err;
}

int namespace_target_open(pid_t pid, struct namespace_target **ret)
{
	_cleanup_(namespace_target_freep) struct namespace_target *t = NULL;
	const struct stat *root;
	struct stat st;
	char path[64];
	uint64_t self;
	int r;

	if (pid <= 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct namespace_target){ .pid = pid,
					.pidfd = -EBADF,
					.proc_fd = -EBADF,
					.mntns_fd = -EBADF,
					.root_fd = -EBADF };
	t->dirs = calloc(1, sizeof(*t->dirs));
	if (!t->dirs)
		return -ENOMEM;
	/* The pidfd first, then /proc/PID, then the pidfd again: if the process is still alive
	 * after /proc/PID was opened, /proc/PID is that process and not a reuse of its number. */
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (t->pidfd < 0)
		return gone(errno);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	t->proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->proc_fd < 0)
		return gone(errno);
	t->mntns_fd = openat(t->proc_fd, "ns/mnt", O_RDONLY | O_CLOEXEC);
	if (t->mntns_fd < 0)
		return gone(errno);
	t->root_fd = openat(t->proc_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->root_fd < 0)
		return gone(errno);
	if ((r = namespace_target_check(t)) < 0)
		return r;
	if (fstat(t->mntns_fd, &st) < 0)
		return -errno;
	t->mntns = st.st_ino;
	t->mntns_dev = st.st_dev;
	if ((r = self_mntns_cached(&self)) < 0)
		return r;
	root = self_root_cached();
	if (!root)
		return -errno;
	if (fstat(t->root_fd, &st) < 0)
		return gone(errno);
	t->root_is_ours = st.st_dev == root->st_dev && st.st_ino == root->st_ino;
	/* A process in our namespace but below another root (a chroot) is judged under its root,
	 * as an audit run inside it would be: mountinfo already shows only what is under it. */
	t->mntns_ours = self == t->mntns;
	t->own = t->mntns_ours && t->root_is_ours;
	if (!same_userns_as_identity_self(t) && ((r = read_idmap(t, "uid_map", &t->uid_map)) < 0 ||
						 (r = read_idmap(t, "gid_map", &t->gid_map)) < 0))
		return gone(-r);
	*ret = TAKE_PTR(t);
	return 0;
}

int namespace_enter(const struct namespace_target *t)
{
	if (!t || t->own)
		return 0;
	if (setns(t->mntns_fd, CLONE_NEWNS) < 0)
		return -errno;
	/* setns() put us at the namespace's root; the process may have its own below it. */
	if (fchdir(t->root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

static bool in_root(const struct namespace_target *t)
{
	return t && !t->own;
}

int ns_open(const struct namespace_target *t, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (!in_root(t))
		fd = open(path, flags | O_CLOEXEC);
	else
		fd = (int)syscall(SYS_openat2, t->root_fd, path, &how, sizeof(how));
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

	if (!in_root(t))
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
	if (!in_root(t)) {
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
		ssize_t l = in_root(t) ? readlinkat(dirfd, name, buf, sizeof(buf) - 1)
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

void ns_translate_ids(const struct namespace_target *t, struct stat *st)
{
	if (!in_root(t))
		return;
	st->st_uid = idmap_from_initial_or_overflow(t->uid_map, st->st_uid);
	st->st_gid = idmap_from_initial_or_overflow(t->gid_map, st->st_gid);
}

int ns_read_file(const struct namespace_target *t, const char *path, int flags, size_t max_size,
		 char **ret, size_t *ret_size)
{
	_cleanup_close_ int fd = -EBADF;

	if (!in_root(t))
		return read_file_flags(path, flags, max_size, ret, ret_size);
	/* O_NONBLOCK: a FIFO planted there must not make the audit wait for a writer. */
	fd = ns_open(t, path, O_RDONLY | O_NOCTTY | O_NONBLOCK | flags);
	if (fd < 0)
		return fd;
	return read_regular_fd(fd, max_size, ret, ret_size);
}

int ns_read_proc(const struct namespace_target *t, const char *name, size_t max_size, char **ret,
		 size_t *ret_size)
{
	_cleanup_close_ int fd = -EBADF;
	char path[64];

	if (!t) {
		snprintf(path, sizeof(path), "/proc/self/%s", name);
		return read_full_file(path, max_size, ret, ret_size);
	}
	fd = openat(t->proc_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* A file of /proc/PID, which no process can replace: no regular-file check needed. */
	return read_kernel_fd(fd, max_size, ret, ret_size);
}

int ns_group_lookup(const struct namespace_target *t, const char *name, gid_t *ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len = strlen(name);
	int r;

	r = ns_read_file(t, "/etc/group", 0, GROUP_FILE_SIZE_MAX, &text, NULL);
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return r;
	/* name:password:gid:members, one group a line; the first entry of a name wins, as for
	 * the files module of NSS. */
	for (char *line = text, *next; line && *line; line = next) {
		char *gid_field, *end;
		unsigned gid;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, name, len) != 0 || line[len] != ':')
			continue;
		gid_field = strchr(line + len + 1, ':');
		if (!gid_field)
			continue;
		gid_field++;
		end = strchr(gid_field, ':');
		if (end)
			*end = 0;
		if (parse_uint(gid_field, &gid) < 0)
			continue;
		*ret = (gid_t)gid;
		return 0;
	}
	return -ESRCH;
}

int ns_process_in(int proc_fd, const char *pid, uint64_t mntns)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ns/mnt", pid);
	if (fstatat(proc_fd, path, &st, 0) < 0)
		return -errno;
	return st.st_ino == mntns;
}

int namespace_count_processes(const struct namespace_target *t, unsigned *ret)
{
	_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	if (proc_fd < 0)
		return -errno;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned pid;

		if (parse_uint(de->d_name, &pid) == 0 &&
		    ns_process_in(proc_fd, de->d_name, t->mntns) > 0)
			n++;
	}
	closedir(d);
	*ret = n;
	return 0;
}
