/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE rule (probe/stalling-fs.h): which file system types a lookup may wait on for good
 * (FUSE and network ones; not the kernel's own that merely share a prefix, fusectl and nfsd),
 * and the mount that holds a directory as the kernel names it: /proc's, through our own
 * namespace and through its 64-bit id, is "proc" mounted at /proc, and no stall.
 *
 * open_in_root_checked(), which walks a path a component at a time, opens under a scratch root
 * what openat2(RESOLVE_IN_ROOT) opens there, for absolute and relative links, ".." past the
 * root, a trailing slash, a link not followed (O_NOFOLLOW) and one that loops.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/openat2.h>
#include <limits.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/stalling-fs.h"
#include "probe/statmount-abi.h"
#include "test.h"
#include "util/fileio.h"
#include "util/macro.h"

static void types(void)
{
	static const char *const stall[] = { "fuse",	 "fuseblk", "fuse.sshfs", "fuse.glusterfs",
					     "virtiofs", "nfs",	    "nfs4",	  "cifs",
					     "smb3",	 "9p",	    "ceph",	  "afs" };
	static const char *const local[] = { "ext4",	"xfs",	  "btrfs", "tmpfs",
					     "overlay", "devpts", "proc",  "sysfs",
					     "fusectl", "nfsd",	  "fuse_", "nfs4x" };

	for (size_t i = 0; i < ELEMENTSOF(stall); i++)
		CHECK_MSG(fs_type_may_stall(stall[i]), "%s may stall", stall[i]);
	for (size_t i = 0; i < ELEMENTSOF(local); i++)
		CHECK_MSG(!fs_type_may_stall(local[i]), "%s does not stall", local[i]);
	EXPECT(!fs_type_may_stall(NULL));
	EXPECT_STR(fs_type_stall_kind("fuse.sshfs"), "FUSE");
	EXPECT_STR(fs_type_stall_kind("fuseblk"), "FUSE");
	EXPECT_STR(fs_type_stall_kind("nfs4"), "network");
}

static void proc_mount(uint64_t mntns_id, const char *what)
{
	_cleanup_close_ int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *type = NULL, *mp = NULL, *why = NULL;
	int r;

	EXPECT(fd >= 0);
	r = mount_of_dir(fd, mntns_id, &type, &mp);
	if (r == -EOPNOTSUPP) {
		printf("%s: the kernel cannot name a directory's mount: skipped\n", what);
		return;
	}
	CHECK_MSG(r == 0, "%s: mount_of_dir(/proc): %d", what, r);
	if (r < 0)
		return;
	EXPECT_STR(type, "proc");
	EXPECT_STR(mp, "/proc");
	EXPECT_INT(dir_may_stall(fd, mntns_id, &why), 0);
	EXPECT(why == NULL);
}

static char base[] = "/tmp/ptsguard-stalling-XXXXXX";

static void at(char *buf, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", base, rel);
}

/* The inode openat2(RESOLVE_IN_ROOT) reaches, or -errno. */
static long long reference(int root, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	/* Retried on EAGAIN as the product does (util/fileio.h): a ".." resolved while any mount
	 * or rename happens on the machine fails that way, and other tests mount all the time. */
	int fd = openat2_scoped(root, path, &how);
	struct stat st;
	long long r;

	if (fd < 0)
		return fd;
	r = fstat(fd, &st) < 0 ? -errno : (long long)st.st_ino;
	close(fd);
	return r;
}

static long long checked(int root, const char *path, int flags)
{
	int fd = open_in_root_checked(root, 0, path, flags);
	struct stat st;
	long long r;

	if (fd < 0)
		return fd;
	r = fstat(fd, &st) < 0 ? -errno : (long long)st.st_ino;
	close(fd);
	return r;
}

static void walks(void)
{
	static const char *const paths[] = {
		"",
		"/",
		"a",
		"/a/b/file",
		"a/b/file/",
		"abs",
		"abs/file",
		"rel/file",
		"a/b/up/b/file",
		"../../a/b/file",
		"a/../../../a",
		"loop",
		"loop/x",
		"missing/x",
		"a/b/file/x",
		"dangling",
		"a//b/./file",
		"abs/../b/file",
		"/abs/",
		"rel",
	};
	static const int flags[] = { O_PATH, O_PATH | O_NOFOLLOW, O_RDONLY, O_PATH | O_DIRECTORY,
				     O_RDONLY | O_DIRECTORY };
	char p[PATH_MAX];
	int root;

	if (!mkdtemp(base)) {
		CHECK_MSG(false, "mkdtemp: %m");
		return;
	}
	at(p, "a");
	EXPECT_INT(mkdir(p, 0755), 0);
	at(p, "a/b");
	EXPECT_INT(mkdir(p, 0755), 0);
	at(p, "a/b/file");
	close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	at(p, "abs");
	EXPECT_INT(symlink("/a/b", p), 0); /* absolute: under the root */
	at(p, "rel");
	EXPECT_INT(symlink("a/b", p), 0);
	at(p, "a/b/up");
	EXPECT_INT(symlink("../../a", p), 0);
	at(p, "loop");
	EXPECT_INT(symlink("loop", p), 0);
	at(p, "dangling");
	EXPECT_INT(symlink("/nowhere", p), 0);
	root = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	EXPECT(root >= 0);
	for (size_t i = 0; i < ELEMENTSOF(paths); i++)
		for (size_t j = 0; j < ELEMENTSOF(flags); j++) {
			long long want = reference(root, paths[i], flags[j]),
				  got = checked(root, paths[i], flags[j]);

			CHECK_MSG(want == got, "\"%s\" flags %#o: %lld, openat2 %lld", paths[i],
				  flags[j], got, want);
		}
	close(root);
	snprintf(p, sizeof(p), "rm -rf %s", base);
	EXPECT_INT(system(p), 0);
}

int main(void)
{
	_cleanup_close_ int ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	uint64_t id = 0;

	types();
	walks();
	proc_mount(0, "our own namespace");
	if (ns >= 0 && ioctl(ns, NSFS_GET_MNTNS_ID, &id) == 0)
		proc_mount(id, "our namespace by its id");
	return test_result("test-stalling-fs");
}
