/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Files of a namespace target (probe/namespace.h) read as its root would read them and no
 * more: regular files of real file systems only, opened with its root's ids and none of our
 * capabilities, bounded; by a guarded child under a deadline where the file system may wait on
 * a server. Also its /proc/PID files and the lookup of a group in its /etc/group. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "probe/namespace-internal.h"
#include "probe/namespace.h"
#include "probe/statmount-abi.h"
#include "snapshot/idmap.h"
#include "util/caps.h"
#include "util/fileio.h"
#include "util/guarded-child.h"
#include "util/limits.h"
#include "util/macro.h"
#include "util/parse.h"

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
	fd = openat2_scoped(j->root_fd, j->path, &how);
	if (fd < 0) {
		a->error = -fd;
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

/* The magic number of the file system fd is on, asked of the mount (statmount(), Linux 6.11)
 * rather than of the file system: fstatfs() would ask a FUSE daemon or a server, and wait for
 * it. 0, or -EOPNOTSUPP where the kernel cannot say so. */
static int fs_magic_of(const struct namespace_target *t, const struct statx *sx, uint64_t *ret)
{
	struct statmount_reply reply;
	int r = ns_statmount_in(t, sx, SM_SB_BASIC, &reply);

	if (r < 0)
		return r;
	*ret = reply.sb_magic;
	return 0;
}

/* A read here, without a child, is for where nothing can wait, in three steps. First the file
 * is looked at with O_PATH (no driver runs, no FIFO waits, no lease breaks) and
 * statx(AT_STATX_DONT_SYNC), its file system asked of its mount, and refused unless it is a
 * regular file of a local, real file system: its O_PATH descriptor, or -errno; -EAGAIN when
 * the child is needed (a remote or FUSE file system, a kernel that cannot say which). */
static int look_here(const struct namespace_target *t, const struct ns_file *f, struct stat *st)
{
	_cleanup_close_ int opath = -EBADF;
	struct statx sx;
	uint64_t magic;
	int r;

	opath = ns_open(t, f->path, O_PATH | (f->flags & O_NOFOLLOW));
	if (opath < 0)
		return opath;
	r = statx_nosync(opath, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE_ABI, st, &sx);
	if (r < 0)
		return r;
	if (!S_ISREG(st->st_mode))
		return -EBADFD;
	if (fs_magic_of(t, &sx, &magic) < 0 || remote_fs((long)magic))
		return -EAGAIN;
	if (pseudo_fs((long)magic))
		return -NS_READ_PSEUDO;
	return TAKE_FD(opath);
}

/* Then the files looked at are opened for reading through /proc/self/fd (the node checked is
 * the node opened), all under one switch to the identity uid:gid, with the kernel's checks for
 * it and none of our capabilities (as_caller: a caller without them opens them as itself).
 * fds[i] is set where opath[i] is a descriptor: an fd, or -errno; -EAGAIN where it cannot be
 * done here (no /proc, more groups than we can set aside): the child reads that one. */
static void reopen_as(const int *opath, int *fds, size_t n, uid_t uid, gid_t gid, bool as_caller)
{
	struct fsids_saved saved;
	bool switched = false;

	for (size_t i = 0; i < n; i++) {
		char path[64];
		int r;

		if (opath[i] < 0)
			continue;
		if (!as_caller && !switched) {
			if (fsids_become_user(uid, gid, &saved) < 0) {
				fds[i] = -EAGAIN;
				continue;
			}
			switched = true;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", opath[i]);
		r = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (r < 0)
			r = -errno;
		fds[i] = r == -ENOENT || r == -ENOTDIR ? -EAGAIN : r;
	}
	if (switched)
		fsids_restore(&saved);
}

/* Last, each descriptor opened, when it is the node looked at, is read. */
static int read_here(int fd, const struct stat *st, struct ns_file *f)
{
	struct stat again;

	if (fstat(fd, &again) < 0)
		return -errno;
	if (again.st_dev != st->st_dev || again.st_ino != st->st_ino)
		return -EBADFD;
	return read_regular_fd_stat(fd, &again, f->max_size, &f->text, &f->size);
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

/* One file read by a guarded child with the identity uid:gid, under its deadline. */
static int read_by_child(const struct namespace_target *t, struct ns_file *f, uid_t uid, gid_t gid)
{
	struct ns_read_job j = {
		.root_fd = t->root_fd, .path = f->path, .flags = f->flags, .max_size = f->max_size
	};
	struct guarded_child c = {
		.mntns_fd = -1,
		.root_fd = -1,
		.keep_fd = j.root_fd,
		.uid = uid,
		.gid = gid,
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
	size_t map_size = f->max_size + 1;
	int r;

	/* Only the pages it reads are touched: the map costs its size in address space only. */
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
		f->text = malloc((size_t)a.size + 1);
		if (!f->text)
			r = -ENOMEM;
		else {
			memcpy(f->text, j.buf, (size_t)a.size);
			f->text[a.size] = 0;
			f->size = (size_t)a.size;
		}
	}
	munmap(j.buf, map_size);
	return r;
}

void ns_read_files(const struct namespace_target *t, struct ns_file *files, size_t n)
{
	int opath[NS_FILES_MAX], fds[NS_FILES_MAX];
	struct stat st[NS_FILES_MAX];
	bool as_caller;
	uid_t uid;
	gid_t gid;

	assert(n <= NS_FILES_MAX);
	for (size_t i = 0; i < n; i++) {
		files[i].text = NULL;
		files[i].size = 0;
	}
	if (!ns_in_root(t)) {
		for (size_t i = 0; i < n; i++)
			files[i].error =
			    read_file_flags(files[i].path, files[i].flags, files[i].max_size,
					    &files[i].text, &files[i].size);
		return;
	}
	/* Whatever the namespace put at a path is opened with its root's identity and no
	 * capability of ours (no CAP_DAC_OVERRIDE, CAP_SYSLOG or CAP_SYS_PTRACE): a host file bound
	 * there that its root may not read stays unread, and what it may read it could have read
	 * itself. Here when nothing can wait (a local file system), every file of the call under
	 * one switch of identity; else by a guarded child with that identity, whose deadline
	 * bounds a server or FUSE daemon that stops answering. A caller that may not change its
	 * ids has no right of root's to lend: it reads as itself (its child too). */
	as_caller = !caps_may_change_ids();
	if (as_caller) {
		uid = geteuid();
		gid = getegid();
	} else
		ns_reader_ids(t, &uid, &gid);
	for (size_t i = 0; i < n; i++) {
		opath[i] = look_here(t, &files[i], &st[i]);
		fds[i] = opath[i];
	}
	reopen_as(opath, fds, n, uid, gid, as_caller);
	for (size_t i = 0; i < n; i++) {
		int r = fds[i] >= 0 ? read_here(fds[i], &st[i], &files[i]) : fds[i];

		if (fds[i] >= 0)
			close(fds[i]);
		if (opath[i] >= 0)
			close(opath[i]);
		if (r == -EAGAIN)
			r = read_by_child(t, &files[i], uid, gid);
		files[i].error = r < 0 ? r : 0;
	}
}

void ns_files_done(struct ns_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(files[i].text);
		files[i].text = NULL;
	}
}

int ns_read_file(const struct namespace_target *t, const char *path, int flags, size_t max_size,
		 char **ret, size_t *ret_size)
{
	struct ns_file f = { .path = path, .flags = flags, .max_size = max_size };

	ns_read_files(t, &f, 1);
	if (f.error < 0)
		return f.error;
	*ret = f.text;
	if (ret_size)
		*ret_size = f.size;
	return 0;
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

int ns_group_find(char *text, const char *name, gid_t *ret)
{
	size_t len = strlen(name);

	/* name:password:gid:members, one group a line; the first entry of a name wins, as for
	 * the files module of NSS. The text is cut up on the way. */
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
