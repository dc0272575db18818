/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/stalling-fs.h"
#include "probe/statmount-abi.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/string-util.h"

static bool fuse_family(const char *fstype)
{
	return streq(fstype, "fuse") || streq(fstype, "fuseblk") || streq(fstype, "virtiofs") ||
	       strncmp(fstype, "fuse.", 5) == 0 || strncmp(fstype, "fuseblk.", 8) == 0;
}

bool fs_type_may_stall(const char *fstype)
{
	static const char *const network[] = { "nfs",  "nfs4",	 "cifs",      "smb3",	  "smbfs",
					       "9p",   "ceph",	 "afs",	      "coda",	  "lustre",
					       "gpfs", "beegfs", "glusterfs", "orangefs", "ncpfs" };

	if (!fstype)
		return false;
	if (fuse_family(fstype))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(network); i++)
		if (streq(fstype, network[i]))
			return true;
	return false;
}

const char *fs_type_stall_kind(const char *fstype)
{
	return fstype && fuse_family(fstype) ? "FUSE" : "network";
}

static const char *reply_string(const struct statmount_reply *sm, uint64_t bit, uint32_t off)
{
	return (sm->mask & bit) ? sm->str + off : NULL;
}

int mount_of_dir(int dirfd, uint64_t mntns_id, char **ret_type, char **ret_mountpoint)
{
	struct mount_id_request_ns q = {
		.req = { .size = mntns_id ? MOUNT_ID_REQUEST_SIZE_VER1 : MOUNT_ID_REQUEST_SIZE_VER0,
			 .param = SM_FS_TYPE | SM_MNT_POINT | SM_FS_SUBTYPE },
		.mnt_ns_id = mntns_id,
	};
	size_t size = sizeof(struct statmount_reply) + 2 * PATH_MAX;
	_cleanup_free_ struct statmount_reply *sm = malloc(size);
	_cleanup_free_ char *type = NULL, *mp = NULL;
	const char *t, *sub, *p;
	struct statx sx;
	struct stat st;
	int r;

	*ret_type = *ret_mountpoint = NULL;
	if (!sm)
		return -ENOMEM;
	r = statx_nosync(dirfd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE_ABI, &st, &sx);
	if (r < 0)
		return r;
	if (!(sx.stx_mask & STATX_MNT_ID_UNIQUE_ABI))
		return -EOPNOTSUPP;
	q.req.mnt_id = sx.stx_mnt_id;
	r = (int)syscall(__NR_statmount, &q, sm, size, 0);
	if (r < 0 && errno == EINVAL) { /* before the subtype was reported (Linux 6.13) */
		q.req.param &= ~(uint64_t)SM_FS_SUBTYPE;
		r = (int)syscall(__NR_statmount, &q, sm, size, 0);
	}
	if (r < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return errno == ENOSYS || errno == EINVAL || errno == E2BIG || errno == EOVERFLOW
			   ? -EOPNOTSUPP
			   : -errno;
	}
	t = reply_string(sm, SM_FS_TYPE, sm->fs_type);
	p = reply_string(sm, SM_MNT_POINT, sm->mnt_point);
	sub = reply_string(sm, SM_FS_SUBTYPE, sm->fs_subtype);
	if (!t)
		return -EOPNOTSUPP;
	p = p ?: ""; /* not reachable from the caller's root */
	if (sub && *sub)
		r = asprintf(&type, "%s.%s", t, sub);
	else
		r = (type = strdup(t)) ? 0 : -1;
	mp = strdup(p);
	if (r < 0 || !type || !mp)
		return -ENOMEM;
	*ret_type = TAKE_PTR(type);
	*ret_mountpoint = TAKE_PTR(mp);
	return 0;
}

int dir_may_stall(int dirfd, uint64_t mntns_id, char **ret_why)
{
	_cleanup_free_ char *type = NULL, *mp = NULL, *etype = NULL, *emp = NULL;
	int r;

	*ret_why = NULL;
	r = mount_of_dir(dirfd, mntns_id, &type, &mp);
	if (r < 0)
		return r;
	if (!fs_type_may_stall(type))
		return 0;
	etype = cescape(type);
	emp = cescape(mp);
	if (!etype || !emp ||
	    asprintf(ret_why,
		     "a %s file system (%s, mounted at %s), whose %s answers every lookup there "
		     "and may stop answering",
		     fs_type_stall_kind(type), etype, emp,
		     streq(fs_type_stall_kind(type), "FUSE") ? "daemon" : "server") < 0) {
		*ret_why = NULL;
		return -ENOMEM;
	}
	return 1;
}

/* The FUSE rule on the mount of fd: 0, or -EREMOTE; a mount that cannot be named passes. */
static int check_mount(int fd, uint64_t mntns_id)
{
	_cleanup_free_ char *type = NULL, *mp = NULL;
	int r = mount_of_dir(fd, mntns_id, &type, &mp);

	if (r == -ENOMEM)
		return r;
	return r == 0 && fs_type_may_stall(type) ? -EREMOTE : 0;
}

#define CHECKED_DEPTH_MAX 256
#define CHECKED_LINKS_MAX 40

struct walk {
	int fds[CHECKED_DEPTH_MAX + 1]; /* fds[0]: the root (not ours); then each directory */
	size_t depth;
};

static void walk_to_root(struct walk *w)
{
	while (w->depth > 0)
		close(w->fds[w->depth--]);
}

/* The next component of *p (a cursor into the rest of the path) into name: 0 when there is
 * none left, else its length. At the start of a path (start: the path given, or a link's
 * target) a '/' sends the walk back to the root. */
static size_t next_component(const char **p, bool start, struct walk *w, char *name, size_t size)
{
	const char *s = *p, *e;

	if (start && *s == '/')
		walk_to_root(w);
	while (*s == '/')
		s++;
	e = strchrnul(s, '/');
	if ((size_t)(e - s) >= size)
		return SIZE_MAX;
	memcpy(name, s, (size_t)(e - s));
	name[e - s] = 0;
	*p = e;
	return (size_t)(e - s);
}

static bool only_slashes(const char *p)
{
	return p[strspn(p, "/")] == 0;
}

int open_in_root_checked(int root_fd, uint64_t mntns_id, const char *path, int flags)
{
	struct walk w = { .fds = { root_fd }, .depth = 0 };
	_cleanup_free_ char *rest = strdup(path), *name = malloc(NAME_MAX + 1);
	const char *p;
	unsigned links = 0;
	bool start = true;
	int fd = -EBADF, r;

	if (!rest || !name)
		return -ENOMEM;
	if (!*path)
		return -ENOENT;
	p = rest;
	for (;;) {
		struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
					.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						   RESOLVE_NO_MAGICLINKS };
		size_t n = next_component(&p, start, &w, name, NAME_MAX + 1);
		int cur = w.fds[w.depth];
		bool last;
		struct stat st;

		start = false;
		if (n == SIZE_MAX) {
			r = -ENAMETOOLONG;
			goto fail;
		}
		if (n == 0) { /* the path ended on a directory already walked: it is the file */
			fd = fcntl(cur, F_DUPFD_CLOEXEC, 3);
			if (fd < 0) {
				r = -errno;
				goto fail;
			}
			break;
		}
		if (streq(name, "."))
			continue;
		if (streq(name, "..")) {
			if (w.depth > 0)
				close(w.fds[w.depth--]);
			continue;
		}
		/* The lookup of name is made by the file system of cur. */
		r = check_mount(cur, mntns_id);
		if (r < 0)
			goto fail;
		fd = openat2_scoped(cur, name, &how);
		if (fd < 0) {
			r = fd;
			goto fail;
		}
		r = stat_nosync(fd, "", AT_EMPTY_PATH, &st);
		if (r < 0)
			goto fail;
		last = only_slashes(p);
		/* A link is followed unless it ends the path, with no slash after it, under
		 * O_NOFOLLOW. */
		if (S_ISLNK(st.st_mode) && (!last || *p || !(flags & O_NOFOLLOW))) {
			char target[PATH_MAX];
			ssize_t l = readlinkat(fd, "", target, sizeof(target) - 1);
			char *joined;

			if (l < 0) {
				r = -errno;
				goto fail;
			}
			target[l] = 0;
			if (++links > CHECKED_LINKS_MAX) {
				r = -ELOOP;
				goto fail;
			}
			if (asprintf(&joined, "%s%s", target, p) < 0) {
				r = -ENOMEM;
				goto fail;
			}
			free(rest);
			rest = joined;
			p = rest;
			start = true;
			closep(&fd);
			continue;
		}
		if (last) {
			if (!*p || S_ISDIR(st.st_mode))
				break;
			r = -ENOTDIR; /* "name/" of a file */
			goto fail;
		}
		if (!S_ISDIR(st.st_mode)) {
			r = -ENOTDIR;
			goto fail;
		}
		if (w.depth == CHECKED_DEPTH_MAX) {
			r = -ENAMETOOLONG;
			goto fail;
		}
		w.fds[++w.depth] = TAKE_FD(fd);
	}
	walk_to_root(&w);
	/* What is opened last may be a mount's root: its file system answers the open. */
	r = check_mount(fd, mntns_id);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (flags & O_PATH) {
		struct stat st;

		if ((flags & O_DIRECTORY) &&
		    (stat_nosync(fd, "", AT_EMPTY_PATH, &st) < 0 || !S_ISDIR(st.st_mode))) {
			close(fd);
			return -ENOTDIR;
		}
		return fd;
	} else {
		char proc[64];
		int reopened;

		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		reopened = open(proc, (flags & ~O_NOFOLLOW) | O_CLOEXEC);
		r = reopened < 0 ? -errno : reopened;
		close(fd);
		return r;
	}
fail:
	if (fd >= 0)
		close(fd);
	walk_to_root(&w);
	return r;
}
