/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/namespace.h"
#include "probe/statmount-abi.h"
#include "snapshot/idmap.h"
#include "snapshot/snapshot.h"
#include "util/alloc.h"
#include "util/caps.h"
#include "util/fileio.h"
#include "util/guarded-child.h"
#include "util/limits.h"
#include "util/parse.h"
#include "util/path.h"
#include "util/string-util.h"

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
	free(t->root_path);
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

/* statmount() of the mount holding fd, looked up among the mounts of t's namespace, asking for
 * mask: 0 and *reply filled; -ENOENT when that mount is not one of the namespace's;
 * -EOPNOTSUPP where the kernel cannot say (no unique mount ids, namespace ids or statmount() of
 * another namespace: before Linux 6.11). Neither call asks the file system anything. */
static int statmount_in_ns(const struct namespace_target *t, int fd, uint64_t mask,
			   struct statmount_reply *reply)
{
	struct mount_id_request_ns q = { .req = { .size = MOUNT_ID_REQUEST_SIZE_VER1,
						  .param = mask },
					 .mnt_ns_id = t->mntns_id };
	struct statx sx;

	if (!t->mntns_id ||
	    statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID_UNIQUE_ABI, &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID_UNIQUE_ABI))
		return -EOPNOTSUPP;
	q.req.mnt_id = sx.stx_mnt_id;
	if (syscall(__NR_statmount, &q, reply, sizeof(*reply), 0) == 0)
		return (reply->mask & mask) == mask ? 0 : -EOPNOTSUPP;
	if (errno == ENOENT)
		return -ENOENT;
	return errno == ENOSYS || errno == EINVAL || errno == E2BIG ? -EOPNOTSUPP : -errno;
}

/* Is the mount that holds t's root directory one of t's mount namespace? A process can chroot
 * into a tree of another namespace (through /proc/PID/root of a process there): its own
 * mountinfo, printed relative to that root, then shows nothing it can see. 1 when it lies
 * outside, 0 when inside, -EOPNOTSUPP where the kernel cannot say (before Linux 6.11: no
 * unique mount ids, namespace ids or statmount() of another namespace). */
static int root_outside_mntns(const struct namespace_target *t)
{
	struct statmount_reply reply;
	int r = statmount_in_ns(t, t->root_fd, SM_MNT_BASIC, &reply);

	return r == -ENOENT ? 1 : r;
}

/* readlink of /proc/PID/root (proc_fd: /proc/PID), bounded: 0 and *ret, or -errno. */
static int read_root_path(int proc_fd, char **ret)
{
	_cleanup_free_ char *buf = malloc(PATH_MAX);
	ssize_t n;

	*ret = NULL;
	if (!buf)
		return -ENOMEM;
	n = readlinkat(proc_fd, "root", buf, PATH_MAX - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
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
	if ((r = stat_nosync(t->root_fd, "", AT_EMPTY_PATH, &st)) < 0)
		return gone(-r);
	t->root_is_ours = st.st_dev == root->st_dev && st.st_ino == root->st_ino;
	t->root_dev = st.st_dev;
	t->root_ino = st.st_ino;
	if (!t->root_is_ours) {
		r = read_root_path(t->proc_fd, &t->root_path);
		if (r == -ENOMEM)
			return r;
	}
	/* A process in our namespace but below another root (a chroot) is judged under its root,
	 * as an audit run inside it would be: mountinfo already shows only what is under it. */
	if (ioctl(t->mntns_fd, NSFS_GET_MNTNS_ID, &t->mntns_id) < 0)
		t->mntns_id = 0;
	t->mntns_ours = self == t->mntns;
	t->own = t->mntns_ours && t->root_is_ours;
	t->root_outside = !t->own && root_outside_mntns(t) == 1;
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

/* File systems whose files are the kernel's, not the namespace's: a "file" there acts when it is
 * read (/proc/kmsg drains the kernel log, /proc/PID/mem reads another process). A namespace that
 * binds one over a file we read is refused, whatever its owner and mode. */
static bool pseudo_fs(long type)
{
	switch ((unsigned long)type) {
	case 0x9fa0:	 /* proc */
	case 0x62656572: /* sysfs */
	case 0x64626720: /* debugfs */
	case 0x74726163: /* tracefs */
	case 0x73636673: /* securityfs */
	case 0xcafe4a11: /* bpf */
	case 0x27e0eb:	 /* cgroup */
	case 0x63677270: /* cgroup2 */
	case 0x62656570: /* configfs */
	case 0xde5e81e4: /* efivarfs */
	case 0x6165676c: /* pstore */
	case 0xf97cff8c: /* selinuxfs */
	case 0x43415d53: /* smackfs */
	case 0x1cd1:	 /* devpts */
		return true;
	default:
		return false;
	}
}

/* One read of a namespace's file, by a guarded child with the namespace's identity. The child
 * shares our memory (or, under valgrind, the mapping buf is in): it fills buf and the answer. */
struct ns_read_job {
	int root_fd;
	const char *path;
	int flags;
	char *buf; /* max_size + 1 bytes, MAP_SHARED */
	size_t max_size;
};

struct ns_read_answer {
	int error; /* 0, an errno, or NS_READ_PSEUDO / EBADFD / EFBIG */
	uint64_t size;
};

static void ns_read_work(void *userdata, void *answer)
{
	const struct ns_read_job *j = userdata;
	struct ns_read_answer *a = answer;
	struct open_how how = {
		.flags = (uint64_t)(O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | j->flags),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct statfs sfs;
	struct stat st;
	size_t got = 0;
	int fd;

	/* O_NONBLOCK: a FIFO planted there must not make the read wait for a writer; it is refused
	 * from fstat() just after, before anything is read. */
	fd = (int)syscall(SYS_openat2, j->root_fd, j->path, &how, sizeof(how));
	if (fd < 0) {
		a->error = errno ?: EIO;
		return;
	}
	if (fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0) {
		a->error = errno ?: EIO;
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		a->error = EBADFD;
		return;
	}
	if (pseudo_fs(sfs.f_type)) {
		a->error = NS_READ_PSEUDO;
		return;
	}
	for (;;) {
		ssize_t n = read(fd, j->buf + got, j->max_size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			a->error = errno ?: EIO;
			return;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > j->max_size) {
			a->error = EFBIG;
			return;
		}
	}
	a->size = got;
}

/* File systems whose opens and reads wait on a server or a user-space daemon (FUSE, NFS, SMB,
 * 9p, Ceph, ...): a file there is read by a guarded child, under its deadline, so that one that
 * stops answering holds up nothing but that child. */
static bool remote_fs(long type)
{
	switch ((unsigned long)type) {
	case 0x65735546: /* fuse */
	case 0x6969:	 /* nfs */
	case 0x517b:	 /* smb */
	case 0xff534d42: /* cifs */
	case 0xfe534d42: /* smb2 */
	case 0x01021997: /* v9fs */
	case 0x00c36400: /* ceph */
	case 0x5346414f: /* afs */
	case 0x73757245: /* coda */
	case 0x47504653: /* gpfs */
	case 0x19830326: /* fhgfs */
	case 0x0bd00bd0: /* lustre */
		return true;
	default:
		return false;
	}
}

/* The file behind the O_PATH descriptor fd, opened for reading through /proc/self/fd (the node
 * checked is the node opened), with the kernel's checks for the identity uid:gid and none of
 * our capabilities (as_caller: a caller without them opens it as itself). An fd, or -errno;
 * -EAGAIN when it cannot be done here (no /proc, more groups than we can set aside): the caller
 * hands it to a guarded child. */
static int reopen_as(int fd, uid_t uid, gid_t gid, bool as_caller)
{
	struct fsids_saved saved;
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!as_caller && fsids_become_user(uid, gid, &saved) < 0)
		return -EAGAIN;
	r = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (r < 0)
		r = -errno;
	if (!as_caller)
		fsids_restore(&saved);
	return r == -ENOENT || r == -ENOTDIR ? -EAGAIN : r;
}

/* The magic number of the file system fd is on, asked of the mount (statmount(), Linux 6.11)
 * rather than of the file system: fstatfs() would ask a FUSE daemon or a server, and wait for
 * it. 0, or -EOPNOTSUPP where the kernel cannot say so. */
static int fs_magic_of(const struct namespace_target *t, int fd, uint64_t *ret)
{
	struct statmount_reply reply;
	int r = statmount_in_ns(t, fd, SM_SB_BASIC, &reply);

	if (r < 0)
		return r;
	*ret = reply.sb_magic;
	return 0;
}

/* ns_read_file() here, without a child, where nothing can wait: the file is looked at with
 * O_PATH first (no driver runs, no FIFO waits, no lease breaks) and statx(AT_STATX_DONT_SYNC),
 * its file system asked of its mount, refused unless it is a regular file of a local, real
 * file system, then opened with the identity's rights alone and read. -EAGAIN: the child is
 * needed (a remote or FUSE file system, a kernel that cannot say which, or the identity could
 * not be taken here). */
static int ns_read_file_here(const struct namespace_target *t, const char *path, int flags,
			     uid_t uid, gid_t gid, bool as_caller, size_t max_size, char **ret,
			     size_t *ret_size)
{
	_cleanup_close_ int opath = -EBADF, fd = -EBADF;
	struct stat st, again;
	uint64_t magic;
	int r;

	opath = ns_open(t, path, O_PATH | (flags & O_NOFOLLOW));
	if (opath < 0)
		return opath;
	r = stat_nosync(opath, "", AT_EMPTY_PATH, &st);
	if (r < 0)
		return r;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	if (fs_magic_of(t, opath, &magic) < 0 || remote_fs((long)magic))
		return -EAGAIN;
	if (pseudo_fs((long)magic))
		return -NS_READ_PSEUDO;
	fd = reopen_as(opath, uid, gid, as_caller);
	if (fd < 0)
		return fd;
	if (fstat(fd, &again) < 0)
		return -errno;
	if (again.st_dev != st.st_dev || again.st_ino != st.st_ino)
		return -EBADFD;
	return read_regular_fd(fd, max_size, ret, ret_size);
}

/* The ids a file of the namespace is read as: its root's, as the initial user namespace numbers
 * them (the owner of a rootless container's files: the user who made it), or the overflow id
 * where its root has none. */
static void ns_reader_ids(const struct namespace_target *t, uid_t *uid, gid_t *gid)
{
	unsigned u, g;

	*uid = idmap_to_initial(t->uid_map, 0, &u) == 0 ? (uid_t)u : IDMAP_OVERFLOW_ID;
	*gid = idmap_to_initial(t->gid_map, 0, &g) == 0 ? (gid_t)g : IDMAP_OVERFLOW_ID;
}

int ns_read_file(const struct namespace_target *t, const char *path, int flags, size_t max_size,
		 char **ret, size_t *ret_size)
{
	struct ns_read_job j = {
		.root_fd = t ? t->root_fd : -1, .path = path, .flags = flags, .max_size = max_size
	};
	struct guarded_child c = {
		.mntns_fd = -1,
		.root_fd = -1,
		.keep_fd = j.root_fd,
		.deadline_usec = NS_READ_DEADLINE_USEC,
		.work = ns_read_work,
		.userdata = &j,
		.answer_size = sizeof(struct ns_read_answer),
		/* A read a FUSE daemon or a server has taken cannot be killed until it answers:
		 * a fork, left behind past its deadline, never waited for. */
		.separate = true,
	};
	struct ns_read_answer a = { 0 };
	struct guarded_result g = { 0 };
	size_t map_size = max_size + 1;
	bool as_caller;
	char *text;
	int r;

	if (!in_root(t))
		return read_file_flags(path, flags, max_size, ret, ret_size);
	/* Whatever the namespace put at path is opened with its root's identity and no capability
	 * of ours (no CAP_DAC_OVERRIDE, CAP_SYSLOG or CAP_SYS_PTRACE): a host file bound there that
	 * its root may not read stays unread, and what it may read it could have read itself.
	 * Here when nothing can wait (a local file system); else by a guarded child with that
	 * identity, whose deadline bounds a server or FUSE daemon that stops answering. Only the
	 * pages it reads are touched: the map costs its size in address space only. */
	/* A caller that may not change its ids has no right of root's to lend: it reads as itself
	 * (its child too). */
	as_caller = !caps_may_change_ids();
	if (as_caller) {
		c.uid = geteuid();
		c.gid = getegid();
	} else
		ns_reader_ids(t, &c.uid, &c.gid);
	r = ns_read_file_here(t, path, flags, c.uid, c.gid, as_caller, max_size, ret, ret_size);
	if (r != -EAGAIN)
		return r;
	j.buf = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j.buf == MAP_FAILED)
		return -errno;
	r = guarded_child_run(&c, &a, &g);
	if (r == -ECANCELED)
		r = -ETIMEDOUT; /* stopped, killed or hung past the deadline: not read */
	else if (r >= 0 && g.setup_error)
		r = -g.setup_error;
	else if (r >= 0 && a.error)
		r = -a.error;
	if (r >= 0) {
		text = malloc((size_t)a.size + 1);
		if (!text)
			r = -ENOMEM;
		else {
			memcpy(text, j.buf, (size_t)a.size);
			text[a.size] = 0;
			*ret = text;
			if (ret_size)
				*ret_size = (size_t)a.size;
		}
	}
	munmap(j.buf, map_size);
	return r;
}

const char *ns_read_error_string(int r)
{
	switch (-r) {
	case NS_READ_PSEUDO:
		return "a file of a kernel pseudo file system (proc, sysfs, ...), not read";
	case ETIMEDOUT:
		return "its reader did not finish (stopped, killed or hung): not read";
	case EFBIG:
		return "too large";
	default:
		return read_error_string(r);
	}
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
