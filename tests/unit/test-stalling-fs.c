/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE rule (probe/stalling-fs.h): which file system types a lookup may wait on for good
 * (FUSE and network ones; not the kernel's own that merely share a prefix, fusectl and nfsd),
 * and the mount that holds a directory as the kernel names it: /proc's, through our own
 * namespace and through its 64-bit id, is "proc" mounted at /proc, and no stall.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "probe/stalling-fs.h"
#include "probe/statmount-abi.h"
#include "test.h"
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

int main(void)
{
	_cleanup_close_ int ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	uint64_t id = 0;

	types();
	proc_mount(0, "our own namespace");
	if (ns >= 0 && ioctl(ns, NSFS_GET_MNTNS_ID, &id) == 0)
		proc_mount(id, "our namespace by its id");
	return test_result("test-stalling-fs");
}
