/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
