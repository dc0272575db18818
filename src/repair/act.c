/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Acting on a plan (repair/repair.h): each action's object opened again without following
 * links, checked to be what was probed, changed through that handle, and verified.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probe/namespace.h"
#include "repair/action.h"
#include "repair/verify.h"
#include "snapshot/mountinfo.h"
#include "util/caps.h"
#include "util/limits.h"
#include "util/procfs.h"
#include "util/string-util.h"
#include "util/path.h"
#include "util/fileio.h"
#include "util/string-table.h"

/* Open path as an O_PATH handle without following any symlink on the way (a mountpoint may be
 * a file: /dev/ptmx bind-mounted from pts/ptmx). */
static int open_nofollow(const char *path, bool directory)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0),
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

#ifdef SYS_openat2
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != E2BIG))
		return fd >= 0 ? fd : -errno;
#endif
	/* Older kernels, or a seccomp filter: only the last component is guarded. */
	fd = open(path, (int)how.flags | O_NOFOLLOW);
	return fd >= 0 ? fd : -errno;
}

/* Split "/dev/pts/3" into an O_PATH handle of "/dev/pts" and "3". */
static int open_parent(const char *path, const char **ret_name)
{
	_cleanup_free_ char *dir = path_dirname(path);
	const char *slash = strrchr(path, '/');

	if (!dir || !slash || !slash[1])
		return -EINVAL;
	*ret_name = slash + 1;
	return open_nofollow(dir, true);
}

/* Through the caller's own /proc (util/procfs.h): the same after entering a namespace. */
static int chmod_fd(int fd, mode_t mode)
{
	char p[64];
	int proc = procfs_fd();

	if (proc < 0)
		return proc;
	snprintf(p, sizeof(p), "self/fd/%d", fd);
	return fchmodat(proc, p, mode, 0) < 0 ? -errno : 0;
}

static int read_mounts(struct mount_table **ret)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct parse_error err;
	size_t size;
	int r, proc = procfs_fd();

	if (proc < 0)
		return proc;
	fd = openat(proc, "self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read_regular_fd(fd, MOUNTINFO_SIZE_MAX, &text, &size);
	if (r < 0)
		return r;
	return mount_table_parse(text, size, ret, &err);
}

/* Is the mount still there, the same instance, and nothing stacked on it? */
static int recheck_mount(const struct repair_action *a, struct devpts_options *ret_now,
			 char **ret_mount_options, const char **why)
{
	_cleanup_(mount_table_freep) struct mount_table *t = NULL;
	const struct mount_entry *e = NULL;
	int r = read_mounts(&t);

	if (r < 0) {
		*why = "cannot re-read /proc/self/mountinfo";
		return r;
	}
	for (size_t i = 0; i < t->n_entries; i++)
		if (t->entries[i].id == a->mount_id)
			e = &t->entries[i];
	if (!e || !streq(e->fstype, "devpts") || e->dev != a->dev ||
	    !streq(e->mountpoint, a->path)) {
		*why = "the mount is gone or changed since the probe";
		return -ESTALE;
	}
	for (size_t i = 0; i < t->n_entries; i++)
		if (t->entries[i].parent_id == a->mount_id &&
		    streq(t->entries[i].mountpoint, a->path)) {
			*why = "something is now mounted on top of it";
			return -ESTALE;
		}
	devpts_options_parse(e->super_options, ret_now);
	*ret_mount_options = strdup(e->mount_options);
	return *ret_mount_options ? 0 : -ENOMEM;
}

/* The MS_* flags of a per-mount option list ("rw,nosuid,nodev,noexec,relatime"). */
static unsigned long mount_flags(const char *options)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} map[] = {
		{ "ro", MS_RDONLY },	     { "nosuid", MS_NOSUID },
		{ "nodev", MS_NODEV },	     { "noexec", MS_NOEXEC },
		{ "noatime", MS_NOATIME },   { "nodiratime", MS_NODIRATIME },
		{ "relatime", MS_RELATIME }, { "strictatime", MS_STRICTATIME },
	};
	unsigned long flags = 0;

	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (option_get(options, map[i].name, NULL))
			flags |= map[i].flag;
	return flags;
}

static int reconfigure(int fd, const struct devpts_options *t, const char *opts,
		       const char *mount_options, const char **ret_api)
{
#if defined(SYS_fspick) && defined(SYS_fsconfig)
	_cleanup_close_ int fs = -EBADF;
	char v[16];
	int r = 0;

	fs = (int)syscall(SYS_fspick, fd, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC);
	if (fs >= 0) {
		*ret_api = "fspick+fsconfig";
#define SET(key, ...)                                                                              \
	(snprintf(v, sizeof(v), __VA_ARGS__),                                                      \
	 (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, key, v, 0))
		if (t->has_uid)
			r = r < 0 ? r : SET("uid", "%u", (unsigned)t->uid);
		if (t->has_gid)
			r = r < 0 ? r : SET("gid", "%u", (unsigned)t->gid);
		r = r < 0 ? r : SET("mode", "%03o", (unsigned)(t->mode & 0777));
		r = r < 0 ? r : SET("ptmxmode", "%03o", (unsigned)(t->ptmxmode & 0777));
		if (t->has_max)
			r = r < 0 ? r : SET("max", "%u", t->max);
#undef SET
		if (r >= 0)
			r = (int)syscall(SYS_fsconfig, fs, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0);
		return r < 0 ? -errno : 0;
	}
	if (errno != ENOSYS && errno != EPERM && errno != EOPNOTSUPP)
		return -errno;
#endif
	/* No new mount API (old kernel, or a seccomp filter): mount(2) on the handle's magic link,
	 * so the remount lands on the mount checked above. MS_REMOUNT also sets the per-mount
	 * flags, so pass the ones the mount has. */
	{
		char p[64];
		int cwd, k;

		*ret_api = "mount(2)";
		snprintf(p, sizeof(p), "self/fd/%d", fd);
		k = procfs_chdir(&cwd);
		if (k < 0)
			return k;
		k = mount(NULL, p, NULL, MS_REMOUNT | mount_flags(mount_options), opts) < 0 ? -errno
											    : 0;
		procfs_chdir_back(cwd);
		return k;
	}
}

static int act_remount(struct repair_action *a, const struct repair_options *o)
{
	struct devpts_options now, t;
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *opts = NULL, *mount_options = NULL;
	const char *why = NULL, *api = "";
	struct statx stx;
	int r;

	r = recheck_mount(a, &now, &mount_options, &why);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return action_outcome(a, ACTION_REFUSED, "refused: %s", why);
	t = action_remount_target(a, &now, o);
	if (action_remount_command(a, &now, o) < 0 || !(opts = devpts_options_format(&t)))
		return -ENOMEM;
	if (now.has_gid == t.has_gid && now.gid == t.gid && now.mode == t.mode &&
	    now.ptmxmode == t.ptmxmode)
		return action_verify_pty(a, o, a->fix.owner, t.mode);

	fd = open_nofollow(a->path, false);
	if (fd < 0)
		return action_outcome(a, ACTION_REFUSED,
				      "refused: cannot open %s without following links: %s",
				      a->path, strerror(-fd));
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0)
		return action_outcome(a, ACTION_REFUSED, "refused: statx %s: %s", a->path,
				      strerror(errno));
	if ((stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id != a->mount_id)
		return action_outcome(a, ACTION_REFUSED, "refused: %s is now mount %llu, not %u",
				      a->path, (unsigned long long)stx.stx_mnt_id, a->mount_id);
	if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != a->dev)
		return action_outcome(a, ACTION_REFUSED,
				      "refused: %s is no longer the probed instance", a->path);

	r = reconfigure(fd, &t, opts, mount_options, &api);
	if (r < 0)
		return action_outcome(a, ACTION_FAILED, "remount through %s failed: %s", api,
				      strerror(-r));
	r = action_verify_pty(a, o, a->fix.owner, t.mode);
	if (r >= 0 && a->detail) {
		char *d;

		if (asprintf(&d, "remounted through %s; %s", api, a->detail) < 0)
			return -ENOMEM;
		free(a->detail);
		a->detail = d;
	}
	return r;
}

/* May the target's owner (repair_options.check_owner) create files in dir? 0 when it may (or
 * nothing limits it), else the errno the kernel gave that identity (-EACCES, -EROFS, ...). */
static int owner_may_create(int dir, const struct repair_options *o)
{
	struct fsids_saved saved;
	int r;

	if (!o->check_owner || o->owner_uid == 0)
		return 0;
	r = fsids_become_user(o->owner_uid, o->owner_gid, &saved);
	if (r < 0)
		return r;
	/* AT_EACCESS: the ids and capabilities in force (those just taken), not the real ones. */
	r = faccessat(dir, ".", W_OK | X_OK, AT_EACCESS) < 0 ? -errno : 0;
	fsids_restore(&saved);
	return r;
}

/* The directory a missing node is to be created in, once sure nothing appeared there since the
 * plan and that the target's owner could create it there itself; < 0 with the action refused
 * otherwise. */
static int open_parent_of_missing(struct repair_action *a, const struct repair_options *o,
				  const char **ret_name)
{
	struct stat st;
	int dir = open_parent(a->path, ret_name), r;

	if (dir < 0) {
		action_outcome(a, ACTION_REFUSED, "refused: cannot open the directory of %s: %s",
			       a->path, strerror(-dir));
		return dir;
	}
	r = owner_may_create(dir, o);
	if (r < 0) {
		close(dir);
		action_outcome(
		    a, ACTION_REFUSED,
		    "refused: uid %u (gid %u), who the target belongs to, may not create "
		    "%s (%s): repair creates nothing where the target's owner could not",
		    (unsigned)o->owner_uid, (unsigned)o->owner_gid, a->path, strerror(-r));
		return r;
	}
	if (fstatat(dir, *ret_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		close(dir);
		action_outcome(a, ACTION_REFUSED, "refused: %s exists again", a->path);
		return -EEXIST;
	}
	return dir;
}

/* After a node was made or given its mode: /dev/ptmx is verified by allocating through it,
 * /dev/tty by opening it from a session whose controlling terminal is a new pty (both by the
 * allocation probe, repair/verify.h). */
static int verify_node(struct repair_action *a, const struct repair_options *o)
{
	if (a->rdev != makedev(DEV_TTY_RDEV_MAJOR, DEV_TTY_RDEV_MINOR))
		return action_verify_pty(a, o, false, 0);
	return action_verify_tty(a, o);
}

/* Make /dev/ptmx (the node, mode 0666 whatever the umask, or the symlink to pts/ptmx) in dir as
 * root:root. The daemon is not root (ptsguard.service's User=) and /dev is root's: it takes
 * root's file system ids for the call (util/caps.h), and checks the owner it got. */
static int create_as_root(int dir, const char *name, bool symlink, dev_t rdev)
{
	struct fsids_saved saved;
	struct stat st;
	mode_t mask;
	int r;

	r = fsids_become_root(&saved);
	if (r < 0)
		return r;
	mask = umask(0);
	if (symlink)
		r = symlinkat("pts/ptmx", dir, name) < 0 ? -errno : 0;
	else
		r = mknodat(dir, name, S_IFCHR | 0666, rdev) < 0 ? -errno : 0;
	umask(mask);
	fsids_restore(&saved);
	if (r < 0)
		return r;
	/* A file system that ignores the creator's ids (or maps them) would leave it another's. */
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (st.st_uid != 0 || st.st_gid != 0) &&
	    fchownat(dir, name, 0, 0, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/* The symlink: only while pts/ptmx beside it is still the 0666 ptmx node of the instance the
 * plan saw, so that the link never leads to a node users cannot open. */
static int act_symlink(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int dir = -EBADF;
	const char *name;
	struct stat st;
	int r;

	dir = open_parent_of_missing(a, o, &name);
	if (dir < 0)
		return 0;
	if (fstatat(dir, "pts/ptmx", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISCHR(st.st_mode) ||
	    st.st_dev != a->dev || (st.st_mode & 0777) != 0666)
		return action_outcome(
		    a, ACTION_REFUSED,
		    "refused: pts/ptmx beside %s is no longer the mode 0666 ptmx of "
		    "instance %u:%u",
		    a->path, major(a->dev), minor(a->dev));
	r = create_as_root(dir, name, true, 0);
	if (r < 0)
		return action_outcome(a, ACTION_FAILED, "symlink %s: %s", a->path, strerror(-r));
	return action_verify_pty(a, o, false, 0);
}

static int act_mknod(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int dir = -EBADF;
	const char *name;
	int r;

	dir = open_parent_of_missing(a, o, &name);
	if (dir < 0)
		return 0;
	r = create_as_root(dir, name, false, a->rdev);
	if (r < 0)
		return action_outcome(a, ACTION_FAILED, "mknod %s: %s", a->path, strerror(-r));
	return verify_node(a, o);
}

/* Open a node as an O_PATH handle and insist it is the one probed. */
static int open_same_node(struct repair_action *a, bool slave, struct stat *st, const char **why)
{
	_cleanup_close_ int dir = -EBADF;
	const char *name;
	int fd;

	dir = open_parent(a->path, &name);
	if (dir < 0) {
		*why = "cannot open its directory without following links";
		return dir;
	}
	fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = "it is gone";
		return -errno;
	}
	if (fstat(fd, st) < 0 || !S_ISCHR(st->st_mode) || st->st_dev != a->dev ||
	    (a->ino && st->st_ino != a->ino) ||
	    (slave ? major(st->st_rdev) < PTY_SLAVE_MAJOR_FIRST ||
			 major(st->st_rdev) > PTY_SLAVE_MAJOR_LAST
		   : st->st_rdev != a->rdev)) {
		close(fd);
		*why = "it is no longer the node that was probed (replaced, or a symlink)";
		return -ESTALE;
	}
	if (slave && (st->st_uid != a->uid || ((a->ctime.tv_sec || a->ctime.tv_nsec) &&
					       (st->st_ctim.tv_sec != a->ctime.tv_sec ||
						st->st_ctim.tv_nsec != a->ctime.tv_nsec)))) {
		close(fd);
		*why = "its owner or change time differs from what was probed (the index now "
		       "belongs to another pty, or the slave was changed since)";
		return -ESTALE;
	}
	return fd;
}

static int act_chmod(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int fd = -EBADF;
	const char *why = NULL;
	struct stat st;
	int r;

	fd = open_same_node(a, false, &st, &why);
	if (fd < 0)
		return action_outcome(a, ACTION_REFUSED, "refused: %s: %s", a->path, why);
	r = chmod_fd(fd, 0666);
	if (r < 0)
		return action_outcome(a, ACTION_FAILED, "chmod %s: %s", a->path, strerror(-r));
	return verify_node(a, o);
}

static int act_slave(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int fd = -EBADF;
	const char *why = NULL;
	struct stat st;
	int r;

	fd = open_same_node(a, true, &st, &why);
	if (fd < 0)
		return action_outcome(a, ACTION_REFUSED, "refused: %s: %s", a->path, why);
	if (st.st_uid == 0)
		return action_outcome(
		    a, ACTION_REFUSED,
		    "refused: owned by root: ptsguard never changes a root-owned slave");
	if (fchownat(fd, "", (uid_t)-1, o->tty_gid, AT_EMPTY_PATH) < 0)
		return action_outcome(a, ACTION_FAILED, "chgrp %s: %s", a->path, strerror(errno));
	r = chmod_fd(fd, a->mode);
	if (r < 0)
		return action_outcome(a, ACTION_FAILED, "chmod %s: %s", a->path, strerror(-r));
	if (fstat(fd, &st) < 0 || st.st_gid != o->tty_gid || (st.st_mode & 0777) != a->mode)
		return action_outcome(a, ACTION_FAILED,
				      "verification: %s is still not group %u mode %04o", a->path,
				      (unsigned)o->tty_gid, (unsigned)a->mode);
	return action_outcome(a, ACTION_DONE, "verified: %s is group %u, mode %04o", a->path,
			      (unsigned)o->tty_gid, (unsigned)a->mode);
}

/* The root-owned slave of a user's session, given to that user (its group and mode stay), then
 * opened by name as that user: what the user could not do. */
static int act_slave_owner(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int fd = -EBADF;
	const char *why = NULL;
	struct slave_open c;
	struct stat st;
	int r = -ECANCELED;

	fd = open_same_node(a, true, &st, &why);
	if (fd < 0)
		return action_outcome(a, ACTION_REFUSED, "refused: %s: %s", a->path, why);
	if (st.st_uid != 0 || a->owner == 0)
		return action_outcome(a, ACTION_REFUSED, "refused: %s is not root's any more",
				      a->path);
	if (fchownat(fd, "", a->owner, (gid_t)-1, AT_EMPTY_PATH) < 0)
		return action_outcome(a, ACTION_FAILED, "chown %s: %s", a->path, strerror(errno));
	for (unsigned i = 0; r == -ECANCELED && i < VERIFY_ATTEMPTS; i++)
		r = slave_open_as(a->path, st.st_dev, st.st_ino, a->owner, a->owner_gid, &c);
	if (r < 0)
		return action_verify_unanswered(a, r);
	if (c.not_slave)
		return action_outcome(
		    a, ACTION_FAILED,
		    "verification: %s is no longer the slave given to uid %u: not "
		    "opened",
		    a->path, (unsigned)a->owner);
	if (c.error)
		return action_outcome(a, ACTION_FAILED, "verification: uid %u cannot open %s: %s",
				      (unsigned)c.as_uid, a->path, strerrorname_np(c.error));
	return action_outcome(a, ACTION_DONE, "verified: uid %u opened %s by name",
			      (unsigned)c.as_uid, a->path);
}

/* How each kind of action is taken; ACTION_MANUAL is for a person. */
static int (*const act_by_kind[])(struct repair_action *a, const struct repair_options *o) = {
	[ACTION_REMOUNT] = act_remount, [ACTION_MKNOD] = act_mknod,
	[ACTION_SYMLINK] = act_symlink, [ACTION_CHMOD] = act_chmod,
	[ACTION_SLAVE] = act_slave,	[ACTION_SLAVE_OWNER] = act_slave_owner,
};

/* repair --namespace: is the process judged still there, in the namespace judged? 0, or the
 * action refused saying why (and < 0 returned); -ENOMEM. */
static int recheck_target(struct repair_action *a, const struct repair_options *o)
{
	const struct namespace_target *t = o->target;
	uint64_t now = 0;
	int r;

	if (!t)
		return 0;
	r = namespace_target_recheck(t, &now);
	if (r == -ESRCH)
		action_outcome(
		    a, ACTION_REFUSED,
		    "refused: process %d exited after its mount namespace %llu was judged",
		    (int)t->pid, (unsigned long long)t->mntns);
	else if (r == -ESTALE)
		action_outcome(
		    a, ACTION_REFUSED,
		    "refused: process %d is now in mount namespace %llu, not %llu that was "
		    "judged",
		    (int)t->pid, (unsigned long long)now, (unsigned long long)t->mntns);
	else if (r == -EXDEV)
		action_outcome(a, ACTION_REFUSED,
			       "refused: process %d has another root directory now, not %llu:%llu "
			       "that was judged",
			       (int)t->pid, (unsigned long long)t->root_dev,
			       (unsigned long long)t->root_ino);
	else if (r < 0)
		action_outcome(
		    a, ACTION_REFUSED,
		    "refused: cannot tell whether process %d is still in mount namespace %llu: "
		    "%s",
		    (int)t->pid, (unsigned long long)t->mntns, strerror(-r));
	if (r < 0 && !a->detail)
		return -ENOMEM;
	return r < 0 ? -ESTALE : 0;
}

int repair_act(struct repair_plan *p, const struct repair_options *o)
{
	const char *stale = NULL;

	if (o->pause_before_act) {
		char line[16];

		fprintf(stderr,
			"ptsguard: paused before acting (test hook); send a line to go on\n");
		fflush(stderr);
		if (!fgets(line, sizeof(line), stdin))
			clearerr(stdin);
	}
	/* /dev/ptmx itself first: a remount is verified by opening it, which a missing or mode-0600
	 * node would fail although the remount was right. */
	for (int pass = 0; pass < 2; pass++)
		FOREACH_ARRAY (a, p->actions, p->n_actions) {
			bool node = a->kind == ACTION_MKNOD || a->kind == ACTION_SYMLINK ||
				    a->kind == ACTION_CHMOD;
			int r = 0;

			if (a->result != ACTION_PLANNED || node != (pass == 0))
				continue;
			/* Once the target is not what was judged, nothing more is done. */
			if (stale) {
				action_outcome(a, ACTION_REFUSED, "%s", stale);
				if (!a->detail)
					return -ENOMEM;
				continue;
			}
			r = recheck_target(a, o);
			if (r == -ENOMEM)
				return r;
			if (r < 0) {
				stale = a->detail;
				continue;
			}
			if ((size_t)a->kind < ELEMENTSOF(act_by_kind) && act_by_kind[a->kind])
				r = act_by_kind[a->kind](a, o);
			if (r < 0)
				return r;
		}
	return 0;
}
