/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "analysis/boot.h"
#include "probe/namespace.h"
#include "snapshot/mountinfo.h"
#include "repair/repair.h"
#include "util/alloc.h"
#include "util/caps.h"
#include "util/fileio.h"
#include "util/json-util.h"
#include "util/limits.h"
#include "util/path.h"
#include "util/procfs.h"
#include "repair/verify.h"
#include "util/string-util.h"

static const char *const result_names[_ACTION_RESULT_MAX] = {
	[ACTION_PLANNED] = "planned",		[ACTION_DONE] = "done",
	[ACTION_REFUSED] = "refused",		[ACTION_FAILED] = "failed",
	[ACTION_INCONCLUSIVE] = "inconclusive",
};

const char *action_result_to_string(enum action_result r)
{
	return r < _ACTION_RESULT_MAX ? result_names[r] : NULL;
}

void repair_plan_clear(struct repair_plan *p)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		free(a->command);
		free(a->detail);
		free(a->path);
	}
	free(p->actions);
	*p = (struct repair_plan){ 0 };
}

/* Record an outcome; returns 0 so callers can `return outcome(...)`. */
_printf_(3, 4) static int outcome(struct repair_action *a, enum action_result r, const char *fmt,
				  ...)
{
	a->result = r;
	free(a->detail);
	FORMAT_VA(a->detail, fmt);
	return 0;
}

static struct repair_action *add_action(struct repair_plan *p, const struct finding *f,
					enum action_kind kind)
{
	struct repair_action *a;

	if (GROW(p->actions, p->allocated, p->n_actions + 1) < 0)
		return NULL;
	a = &p->actions[p->n_actions++];
	*a = (struct repair_action){ .finding = f, .kind = kind, .result = ACTION_PLANNED };
	return a;
}

static bool wanted(const struct repair_options *o, const char *id)
{
	if (!o->only)
		return true;
	for (char **i = o->only; *i; i++)
		if (streq(*i, id))
			return true;
	return false;
}

/* A failed allocation that another finding predicted (pty-allocation-fails naming a warning in
 * "predicted_by") is repaired with that finding, when this plan repairs it: nothing of its own to
 * refuse. */
static bool repaired_with_another(const struct findings *fs, const struct finding *f,
				  const struct repair_options *o)
{
	json_object *by = json_object_object_get(f->evidence, "predicted_by");
	const char *id = by ? json_object_get_string(by) : NULL;

	if (!id || !wanted(o, id))
		return false;
	FOREACH_ARRAY (g, fs->items, fs->n_items)
		if (streq(g->check->id, id) && !g->manual && g->check->repair != REPAIR_NONE)
			return true;
	return false;
}

/* What a remount action fixes, with the tty group and the policy of this repair. */
static struct devpts_fix action_fix(const struct repair_action *a, const struct repair_options *o)
{
	struct devpts_fix fix = a->fix;

	fix.tty_gid = o->tty_gid;
	fix.policy = o->policy;
	return fix;
}

/* The devpts options a remount should set, from the options it has now: the rule every remedy
 * follows too (analysis/devpts-options.h). */
static struct devpts_options target_options(const struct repair_action *a,
					    const struct devpts_options *now,
					    const struct repair_options *o)
{
	struct devpts_fix fix = action_fix(a, o);

	return devpts_options_target(now, &fix);
}

static int remount_command(struct repair_action *a, const struct devpts_options *now,
			   const struct repair_options *o)
{
	struct devpts_fix fix = action_fix(a, o);

	free(a->command);
	a->command = devpts_remount_command(now, &fix, a->path);
	return a->command ? 0 : -ENOMEM;
}

static int plan_remount(struct repair_plan *p, const struct analysis *an, const struct finding *f,
			const struct repair_options *o, bool owner, bool ptmx)
{
	const struct mount_entry *e;
	struct repair_action *a;

	if (!(e = analysis_serving_mount(an)))
		return 0;
	a = add_action(p, f, ACTION_REMOUNT);
	if (!a || !(a->path = strdup(e->mountpoint)))
		return -ENOMEM;
	a->mount_id = e->id;
	a->dev = e->dev;
	a->fix.owner = owner;
	a->fix.ptmx = ptmx;
	/* What the daemon or the initramfs recorded for this very instance healthy. */
	a->fix.last_healthy = healthy_mode_recorded(an->snap, e->dev);
	if (!an->reachable[an->serving_mount])
		return outcome(a, ACTION_REFUSED,
			       "mount %u is covered: ptsguard never touches a covered instance",
			       e->id);
	return remount_command(a, &an->serving->options, o);
}

static int plan_slaves(struct repair_plan *p, const struct analysis *an, const struct finding *f,
		       const struct repair_options *o)
{
	const struct mount_entry *e;
	mode_t mode;

	if (!(e = analysis_serving_mount(an)))
		return 0;
	/* The mode the instance gives new ptys once repaired: the one the remedy names too. */
	mode = instance_wanted_mode(an->snap, an->serving, o->policy);
	FOREACH_ARRAY (n, an->snap->nodes, an->snap->n_nodes) {
		bool ok_mode = devpts_mode_healthy(o->policy, n->mode); /* as pty-slave-perms */
		struct repair_action *a;
		unsigned idx;

		if (!node_is_slave(n, e->mountpoint, an->serving->dev, &idx) ||
		    (n->gid == o->tty_gid && ok_mode))
			continue;
		a = add_action(p, f, ACTION_SLAVE);
		if (!a || !(a->path = strdup(n->path)))
			return -ENOMEM;
		a->dev = n->dev;
		a->ino = n->ino;
		a->mode = mode;
		a->uid = n->uid;
		a->ctime = n->ctime;
		if (set_printf(&a->command, "chgrp %u %s && chmod 0%03o %s", (unsigned)o->tty_gid,
			       n->path, (unsigned)mode, n->path) < 0)
			return -ENOMEM;
		if (n->uid == 0)
			outcome(a, ACTION_REFUSED,
				"owned by root: ptsguard never changes a slave owned by root");
	}
	return 0;
}

/* The devpts at the pts directory beside /dev/ptmx, reachable, at its root. */
static const struct instance *instance_beside_ptmx(const struct analysis *an, size_t *ret_mount)
{
	_cleanup_free_ char *dir = path_dirname(PTMX_PATH),
			    *pts = dir ? path_join(dir, "pts") : NULL;

	size_t i = pts ? analysis_mount_at(an, pts) : NO_MOUNT;
	const struct mount_entry *e = i != NO_MOUNT ? &an->snap->mounts->entries[i] : NULL;

	if (!e || !streq(e->fstype, "devpts") || !streq(e->root, "/"))
		return NULL;
	*ret_mount = i;
	return analysis_find_instance(an, e->dev);
}

/* A missing /dev/ptmx: a char node, or (when the policy asks and the instance allows it) the
 * symlink systemd's PrivateDevices= and containers use. */
static int plan_ptmx(struct repair_plan *p, const struct analysis *an, const struct finding *f,
		     const struct repair_options *o)
{
	size_t mount = NO_MOUNT;
	const struct instance *in = o->ptmx_symlink ? instance_beside_ptmx(an, &mount) : NULL;
	struct repair_action *a;

	if (in && (in->options.ptmxmode & 0777) == 0666) {
		a = add_action(p, f, ACTION_SYMLINK);
		if (!a || !(a->path = strdup(PTMX_PATH)) ||
		    set_printf(&a->command, "ln -s pts/ptmx %s", PTMX_PATH) < 0)
			return -ENOMEM;
		a->dev = in->dev;
		a->mount_id = an->snap->mounts->entries[mount].id;
		return 0;
	}
	a = add_action(p, f, ACTION_MKNOD);
	if (!a || !(a->path = strdup(PTMX_PATH)) ||
	    set_printf(&a->command, "mknod -m 0666 %s c 5 2", PTMX_PATH) < 0)
		return -ENOMEM;
	return 0;
}

int repair_plan(const struct analysis *an, const struct findings *fs,
		const struct repair_options *o, struct repair_plan *p)
{
	bool owner = false, ptmx = false;
	int r = 0;

	/* One remount fixes everything wrong with the serving instance: an owner fix verified
	 * through a still locked ptmx node would fail although it was right. */
	FOREACH_ARRAY (f, fs->items, fs->n_items) {
		if (!wanted(o, f->check->id) || f->check->repair != REPAIR_REMOUNT)
			continue;
		owner = owner || f->check->remount_owner;
		ptmx = ptmx || f->check->remount_ptmx;
	}
	FOREACH_ARRAY (f, fs->items, fs->n_items) {
		struct repair_action *a;

		if (!wanted(o, f->check->id))
			continue;
		switch (f->manual ? REPAIR_NONE : f->check->repair) {
		case REPAIR_REMOUNT:
			r = plan_remount(p, an, f, o, owner, ptmx);
			break;
		case REPAIR_SLAVES:
			r = plan_slaves(p, an, f, o);
			break;
		case REPAIR_CREATE_PTMX:
			r = plan_ptmx(p, an, f, o);
			break;
		case REPAIR_CHMOD_PTMX:
			if (!an->ptmx_final)
				break;
			a = add_action(p, f, ACTION_CHMOD);
			if (!a || !(a->path = strdup(an->ptmx_final->path)) ||
			    set_printf(&a->command, "chmod 0666 %s", an->ptmx_final->path) < 0)
				return -ENOMEM;
			a->dev = an->ptmx_final->dev;
			a->ino = an->ptmx_final->ino;
			break;
		case REPAIR_NONE:
		default:
			if (o->repairable_only || repaired_with_another(fs, f, o))
				break;
			a = add_action(p, f, ACTION_MANUAL);
			if (!a)
				return -ENOMEM;
			outcome(a, ACTION_REFUSED,
				"not repaired automatically (ptsguard never unmounts, deletes or "
				"guesses); remedy: %s",
				f->remedy ?: f->check->remedy);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- acting ---- */

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

static int verify_pty(struct repair_action *a, const struct repair_options *o, bool check_owner,
		      mode_t want_mode)
{
	struct pty_check c;
	int r = -ECANCELED;

	/* A child that was stopped or killed says nothing about the repair: try again, a few
	 * times, then say the repair is unverified rather than right or wrong. */
	for (unsigned i = 0; r == -ECANCELED && i < VERIFY_ATTEMPTS; i++)
		r = pty_check_as(PTMX_PATH, o->verify_uid, o->verify_gid, &c);
	if (r == -ECANCELED)
		return outcome(a, ACTION_INCONCLUSIVE,
			       "not verified: the verification child was stopped or killed by "
			       "another process %u times",
			       VERIFY_ATTEMPTS);
	if (r < 0)
		return outcome(a, ACTION_INCONCLUSIVE,
			       "not verified: cannot run the verification child: %s", strerror(-r));
	if (c.error)
		return outcome(a, ACTION_FAILED,
			       "verification: uid %u cannot allocate a pty: %s failed with %s",
			       (unsigned)c.as_uid, c.step ?: "?", strerrorname_np(c.error));
	if (check_owner && (c.gid != o->tty_gid || (c.mode & 0777) != (want_mode & 0777)))
		return outcome(a, ACTION_FAILED,
			       "verification: a pty opened by uid %u got group %u and mode %04o, "
			       "expected group %u and mode %04o",
			       (unsigned)c.as_uid, (unsigned)c.gid, (unsigned)c.mode,
			       (unsigned)o->tty_gid, (unsigned)want_mode);
	return outcome(a, ACTION_DONE,
		       "verified: a pty opened by uid %u got group %u and mode %04o",
		       (unsigned)c.as_uid, (unsigned)c.gid, (unsigned)c.mode);
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
		return outcome(a, ACTION_REFUSED, "refused: %s", why);
	t = target_options(a, &now, o);
	if (remount_command(a, &now, o) < 0 || !(opts = devpts_options_format(&t)))
		return -ENOMEM;
	if (now.has_gid == t.has_gid && now.gid == t.gid && now.mode == t.mode &&
	    now.ptmxmode == t.ptmxmode)
		return verify_pty(a, o, a->fix.owner, t.mode);

	fd = open_nofollow(a->path, false);
	if (fd < 0)
		return outcome(a, ACTION_REFUSED,
			       "refused: cannot open %s without following links: %s", a->path,
			       strerror(-fd));
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0)
		return outcome(a, ACTION_REFUSED, "refused: statx %s: %s", a->path,
			       strerror(errno));
	if ((stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id != a->mount_id)
		return outcome(a, ACTION_REFUSED, "refused: %s is now mount %llu, not %u", a->path,
			       (unsigned long long)stx.stx_mnt_id, a->mount_id);
	if (makedev(stx.stx_dev_major, stx.stx_dev_minor) != a->dev)
		return outcome(a, ACTION_REFUSED, "refused: %s is no longer the probed instance",
			       a->path);

	r = reconfigure(fd, &t, opts, mount_options, &api);
	if (r < 0)
		return outcome(a, ACTION_FAILED, "remount through %s failed: %s", api,
			       strerror(-r));
	r = verify_pty(a, o, a->fix.owner, t.mode);
	if (r >= 0 && a->detail) {
		char *d;

		if (asprintf(&d, "remounted through %s; %s", api, a->detail) < 0)
			return -ENOMEM;
		free(a->detail);
		a->detail = d;
	}
	return r;
}

/* The directory a missing node is to be created in, once sure nothing appeared there since the
 * plan; < 0 with the action refused otherwise. */
static int open_parent_of_missing(struct repair_action *a, const char **ret_name)
{
	struct stat st;
	int dir = open_parent(a->path, ret_name);

	if (dir < 0) {
		outcome(a, ACTION_REFUSED, "refused: cannot open the directory of %s: %s", a->path,
			strerror(-dir));
		return dir;
	}
	if (fstatat(dir, *ret_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		close(dir);
		outcome(a, ACTION_REFUSED, "refused: %s exists again", a->path);
		return -EEXIST;
	}
	return dir;
}

/* Make /dev/ptmx (the node, mode 0666 whatever the umask, or the symlink to pts/ptmx) in dir as
 * root:root. The daemon is not root (ptsguard.service's User=) and /dev is root's: it takes
 * root's file system ids for the call (util/caps.h), and checks the owner it got. */
static int create_as_root(int dir, const char *name, bool symlink)
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
		r = mknodat(dir, name, S_IFCHR | 0666, makedev(PTMX_RDEV_MAJOR, PTMX_RDEV_MINOR)) <
			    0
			? -errno
			: 0;
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

	dir = open_parent_of_missing(a, &name);
	if (dir < 0)
		return 0;
	if (fstatat(dir, "pts/ptmx", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISCHR(st.st_mode) ||
	    st.st_dev != a->dev || (st.st_mode & 0777) != 0666)
		return outcome(a, ACTION_REFUSED,
			       "refused: pts/ptmx beside %s is no longer the mode 0666 ptmx of "
			       "instance %u:%u",
			       a->path, major(a->dev), minor(a->dev));
	r = create_as_root(dir, name, true);
	if (r < 0)
		return outcome(a, ACTION_FAILED, "symlink %s: %s", a->path, strerror(-r));
	return verify_pty(a, o, false, 0);
}

static int act_mknod(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int dir = -EBADF;
	const char *name;
	int r;

	dir = open_parent_of_missing(a, &name);
	if (dir < 0)
		return 0;
	r = create_as_root(dir, name, false);
	if (r < 0)
		return outcome(a, ACTION_FAILED, "mknod %s: %s", a->path, strerror(-r));
	return verify_pty(a, o, false, 0);
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
		   : major(st->st_rdev) != PTMX_RDEV_MAJOR ||
			 minor(st->st_rdev) != PTMX_RDEV_MINOR)) {
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
		return outcome(a, ACTION_REFUSED, "refused: %s: %s", a->path, why);
	r = chmod_fd(fd, 0666);
	if (r < 0)
		return outcome(a, ACTION_FAILED, "chmod %s: %s", a->path, strerror(-r));
	return verify_pty(a, o, false, 0);
}

static int act_slave(struct repair_action *a, const struct repair_options *o)
{
	_cleanup_close_ int fd = -EBADF;
	const char *why = NULL;
	struct stat st;
	int r;

	fd = open_same_node(a, true, &st, &why);
	if (fd < 0)
		return outcome(a, ACTION_REFUSED, "refused: %s: %s", a->path, why);
	if (st.st_uid == 0)
		return outcome(a, ACTION_REFUSED,
			       "refused: owned by root: ptsguard never changes a root-owned slave");
	if (fchownat(fd, "", (uid_t)-1, o->tty_gid, AT_EMPTY_PATH) < 0)
		return outcome(a, ACTION_FAILED, "chgrp %s: %s", a->path, strerror(errno));
	r = chmod_fd(fd, a->mode);
	if (r < 0)
		return outcome(a, ACTION_FAILED, "chmod %s: %s", a->path, strerror(-r));
	if (fstat(fd, &st) < 0 || st.st_gid != o->tty_gid || (st.st_mode & 0777) != a->mode)
		return outcome(a, ACTION_FAILED, "verification: %s is still not group %u mode %04o",
			       a->path, (unsigned)o->tty_gid, (unsigned)a->mode);
	return outcome(a, ACTION_DONE, "verified: %s is group %u, mode %04o", a->path,
		       (unsigned)o->tty_gid, (unsigned)a->mode);
}

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
		outcome(a, ACTION_REFUSED,
			"refused: process %d exited after its mount namespace %llu was judged",
			(int)t->pid, (unsigned long long)t->mntns);
	else if (r == -ESTALE)
		outcome(a, ACTION_REFUSED,
			"refused: process %d is now in mount namespace %llu, not %llu that was "
			"judged",
			(int)t->pid, (unsigned long long)now, (unsigned long long)t->mntns);
	else if (r < 0)
		outcome(a, ACTION_REFUSED,
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
				outcome(a, ACTION_REFUSED, "%s", stale);
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
			switch (a->kind) {
			case ACTION_REMOUNT:
				r = act_remount(a, o);
				break;
			case ACTION_MKNOD:
				r = act_mknod(a, o);
				break;
			case ACTION_SYMLINK:
				r = act_symlink(a, o);
				break;
			case ACTION_CHMOD:
				r = act_chmod(a, o);
				break;
			case ACTION_SLAVE:
				r = act_slave(a, o);
				break;
			case ACTION_MANUAL:
				break;
			}
			if (r < 0)
				return r;
		}
	return 0;
}

void repair_confirm(struct repair_plan *p, const struct findings *after)
{
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		if ((a->result != ACTION_DONE && a->result != ACTION_INCONCLUSIVE) ||
		    a->kind == ACTION_SLAVE)
			continue;
		FOREACH_ARRAY (f, after->items, after->n_items)
			if (f->check == a->finding->check &&
			    streq_ptr(f->mountpoint, a->finding->mountpoint)) {
				outcome(a, ACTION_FAILED, "re-probe: %s is still present: %s",
					f->check->id, f->summary ?: "");
				break;
			}
	}
}

json_object *repair_plan_to_json(const struct repair_plan *p)
{
	json_object *arr = json_object_new_array();

	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "check", json_object_new_string(a->finding->check->id));
		json_object_object_add(o, "command", json_new_string_or_null(a->command));
		json_object_object_add(o, "result",
				       json_object_new_string(action_result_to_string(a->result)));
		json_object_object_add(o, "detail", json_new_string_or_null(a->detail));
		json_object_array_add(arr, o);
	}
	return arr;
}
