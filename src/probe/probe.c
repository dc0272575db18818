/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "probe/allocation.h"
#include "probe/cgroup.h"
#include "probe/holder-scan.h"
#include "probe/kernel-facts.h"
#include "probe/namespace.h"
#include "probe/probe.h"
#include "probe/ptmx-route.h"
#include "probe/setuid-helpers.h"
#include "probe/slave-copies.h"
#include "probe/slaves.h"
#include "probe/stalling-fs.h"
#include "probe/statmount.h"
#include "probe/tty-members.h"
#include "probe/tty-sessions.h"
#include "probe/userland.h"
#include "snapshot/idmap.h"
#include "snapshot/initramfs-record.h"
#include "snapshot/snapshot-json.h"
#include "util/caps.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/group.h"
#include "util/limits.h"
#include "util/path.h"
#include "util/string-util.h"

/* The initramfs hook's record, if this boot has one (its embedded snapshot is not read). A
 * record that is not JSON or not a valid ptsguard.initramfs/1 is ignored: it must never stop
 * an audit. */
static void probe_initramfs_record(struct snapshot *s)
{
	_cleanup_free_ char *text = NULL;
	struct load_error err;
	json_object *o;

	/* root writes it to /run: neither a symlink nor a FIFO there is the record */
	if (read_file_flags(INITRAMFS_RECORD_PATH, O_NOFOLLOW, INITRAMFS_RECORD_SIZE_MAX, &text,
			    NULL) < 0)
		return;
	o = json_tokener_parse(text);
	if (o && initramfs_record_from_json(o, "", &s->initramfs, &err) < 0)
		s->initramfs = NULL;
	json_object_put(o);
}

int probe_read_last_healthy(const char *path, struct devpts_seen_healthy *ret)
{
	_cleanup_free_ char *text = NULL;
	struct load_error err;
	json_object *o, *v;
	int r;

	r = read_file_flags(path, O_NOFOLLOW, STATE_FILE_READ_MAX, &text, NULL);
	if (r < 0)
		return r;
	o = json_tokener_parse(text);
	if (!o || !json_object_is_type(o, json_type_object))
		r = -EINVAL;
	else if (!json_object_object_get_ex(o, "last_healthy", &v) ||
		 !json_object_is_type(v, json_type_object))
		r = -ENODATA;
	else
		r = devpts_seen_healthy_from_json(v, "last_healthy", ret, &err);
	json_object_put(o);
	return r;
}

/* group: a namespace's /etc/group as ns_read_files() read it (NULL for our own). */
static int probe_identity(struct snapshot *s, const struct probe_options *opts,
			  struct ns_file *group, struct parse_error *err)
{
	struct utsname u;
	gid_t gid;
	int r;

	if (opts->kernel) {
		s->hostname = strdup_or_null(opts->kernel->hostname);
		s->kernel_release = strdup_or_null(opts->kernel->kernel_release);
	} else if (uname(&u) == 0) {
		s->hostname = strdup(u.nodename);
		s->kernel_release = strdup(u.release);
	} else
		return -errno;
	if ((!s->hostname && (!opts->kernel || opts->kernel->hostname)) ||
	    (!s->kernel_release && (!opts->kernel || opts->kernel->kernel_release)))
		return -ENOMEM;
	/* The configuration's TTYGroup=, else group tty as grantpt() and the kernel's users
	 * understand it; 5 only when the database has no such group. A database that cannot be
	 * read is an error: guessing 5 there would report, and repair, a healthy gid= as wrong. */
	if (opts->has_tty_gid && !group) {
		s->tty_gid = opts->tty_gid;
		return 0;
	}
	/* A namespace's own group file, read directly: its NSS modules are not ours to run. */
	if (group)
		r = group->error == -ENOENT ? -ESRCH
		    : group->error < 0	    ? group->error
					    : ns_group_find(group->text, TTY_GROUP_NAME, &gid);
	else
		r = group_lookup(TTY_GROUP_NAME, &gid);
	if (r == -ESRCH)
		gid = TTY_GID_FALLBACK;
	else if (r < 0) {
		snprintf(err->message, sizeof(err->message),
			 "cannot look up group " TTY_GROUP_NAME "%s: %s",
			 group ? " in its /etc/group" : "",
			 group ? ns_read_error_string(r) : strerror(-r));
		return r;
	}
	s->tty_gid = gid;
	return 0;
}

/* /proc/PID/mountinfo of the namespace audited (ns NULL: /proc/self/mountinfo) read into a table,
 * or its text kept too when that is wanted. For another namespace, its mountpoints as its root
 * sees them: what every path below resolves under. */
static int read_mounts(struct snapshot *s, const struct probe_options *opts,
		       const struct namespace_target *ns, struct mount_table **ret,
		       struct parse_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	char *text;
	size_t size;
	int r;

	if (opts->need_mountinfo_text) {
		r = ns_read_proc(ns, "mountinfo", MOUNTINFO_SIZE_MAX, &text, &size);
		if (r >= 0)
			return snapshot_set_mountinfo(s, text, size, err);
	} else {
		fd = ns_open_proc(ns, "mountinfo");
		r = fd < 0 ? fd : mount_table_read_fd(fd, MOUNTINFO_SIZE_MAX, ret, err);
		if (r >= 0 || err->line)
			return r;
	}
	if (ns) {
		snprintf(err->message, sizeof(err->message), "cannot read /proc/%d/mountinfo: %s",
			 (int)ns->pid,
			 r == -ENOENT || r == -ESRCH ? "the process has exited" : strerror(-r));
		return r == -ENOENT ? -ESRCH : r;
	}
	/* Name the file: with nsenter -m alone, /proc may be another pid namespace's. */
	snprintf(err->message, sizeof(err->message), "cannot read /proc/self/mountinfo: %s%s",
		 strerror(-r),
		 r == -ENOENT ? " (is /proc here another pid namespace's? enter with "
				"nsenter -m -p -r)"
			      : "");
	return r;
}

/* listmount()/statmount() where that is cheaper (statmount.h: slaves of big peer groups, where
 * mountinfo turns quadratic); the text otherwise, and whenever the text itself is wanted. Any
 * error of the kernel path but ENOMEM falls back to the text. */
static int probe_mounts(struct snapshot *s, const struct probe_options *opts,
			struct parse_error *err)
{
	const struct namespace_target *ns = opts->ns && !opts->ns->own ? opts->ns : NULL;
	struct mount_table *t = NULL;
	int r = -EOPNOTSUPP; /* the text, unless the kernel's table is wanted and given */

	if (opts->mounts) {
		snapshot_set_mount_table(s, opts->mounts);
		return 0;
	}
	if (!ns && !opts->need_mountinfo_text &&
	    (opts->need_unique_ids || mount_table_prefer_kernel())) {
		r = mount_table_from_kernel(&t);
		if (r == -ENOMEM)
			return r;
	}
	if (r < 0)
		r = read_mounts(s, opts, ns, &t, err);
	if (r >= 0 && t)
		snapshot_set_mount_table(s, t);
	return r;
}

/* Which namespace this is, and what serves /dev/ptmx on the host, for devpts-host-instance. */
static int probe_namespace(const struct probe_options *opts, struct snapshot *s)
{
	const struct namespace_target *ns = opts->ns;

	if (!ns || ns->own)
		return 0;
	s->ns = calloc(1, sizeof(*s->ns));
	if (!s->ns)
		return -ENOMEM;
	s->ns->mntns = ns->mntns;
	s->ns->pid = ns->pid;
	s->ns->root_is_host = ns->root_is_ours;
	if (opts->host) {
		s->ns->host = *opts->host;
		s->ns->host.mountpoint = strdup_or_null(opts->host->mountpoint);
		if (opts->host->mountpoint && !s->ns->host.mountpoint)
			return -ENOMEM;
	}
	return 0;
}

/* A FUSE or network mount of another namespace that a path we look up there passes through
 * (its /, /dev, /etc, the directories of the setuid helpers, a devpts mountpoint's
 * directories), or NULL: the FUSE rule of probe/stalling-fs.h on the namespace's own table
 * (the mount that holds its root, which may lie above it, is namespace_target_open()'s).
 * Those lookups are made here, not in a child with a deadline: one on a FUSE file system whose
 * daemon stopped would stop the audit of every namespace after it. lxcfs's files under /proc
 * and /sys are never looked up there. */
static const struct mount_entry *fuse_on_lookup_path(const struct mount_table *t)
{
	static const char *const looked_up[] = { "/dev",   "/etc",    "/usr", "/lib", "/lib32",
						 "/lib64", "/libx32", "/bin", "/sbin" };

	FOREACH_ARRAY (m, t->entries, t->n_entries) {
		if (!fs_type_may_stall(m->fstype))
			continue;
		for (size_t i = 0; i < ELEMENTSOF(looked_up); i++)
			if (path_at_or_below(looked_up[i], m->mountpoint))
				return m;
		FOREACH_ARRAY (d, t->entries, t->n_entries)
			if (streq(d->fstype, "devpts") &&
			    path_at_or_below(d->mountpoint, m->mountpoint))
				return m;
	}
	return NULL;
}

static void files_done(struct ns_file (*files)[2])
{
	ns_files_done(*files, 2);
}

int probe_base(const struct probe_options *opts, struct snapshot **ret, struct parse_error *err)
{
	static const struct probe_options defaults = { 0 };
	_cleanup_(snapshot_freep) struct snapshot *s = NULL;
	_cleanup_(files_done) struct ns_file files[2] = {
		{ .path = "/etc/group", .max_size = GROUP_FILE_SIZE_MAX },
		{ .path = "/etc/fstab", .max_size = FSTAB_SIZE_MAX },
	};
	bool foreign;
	int r;

	opts = opts ?: &defaults;
	foreign = opts->ns && !opts->ns->own;
	*err = (struct parse_error){ 0 };
	s = snapshot_new();
	if (!s) {
		mount_table_free(opts->mounts);
		return -ENOMEM;
	}

	if (opts->ns && opts->ns->root_outside) {
		snprintf(err->message, sizeof(err->message),
			 "its root directory lies outside its mount namespace (a chroot into "
			 "another namespace's tree): its mount table does not show what it sees, "
			 "so it is not judged");
		mount_table_free(opts->mounts);
		return -EXDEV;
	}
	if (opts->ns && opts->ns->root_stalls) {
		snprintf(
		    err->message, sizeof(err->message),
		    "its root directory lies on %s: not judged from outside; run ptsguard audit "
		    "inside it",
		    opts->ns->root_stalls);
		mount_table_free(opts->mounts);
		return -EXDEV;
	}
	/* The directories of the namespace stay open from here to the end of probe_details(). */
	ns_dirs_begin(opts->ns);
	r = probe_mounts(s, opts, err);
	if (r < 0)
		return r;
	if (opts->ns && !opts->ns->own) {
		const struct mount_entry *m = fuse_on_lookup_path(s->mounts);

		if (m) {
			_cleanup_free_ char *mp = cescape(m->mountpoint),
					    *type = cescape(m->fstype);

			snprintf(err->message, sizeof(err->message),
				 "its %s is a %s file system (%s), whose %s answers every lookup "
				 "there and may stop answering: not judged from outside; run "
				 "ptsguard audit inside it",
				 mp ?: "mount", fs_type_stall_kind(m->fstype), type ?: "fuse",
				 streq(fs_type_stall_kind(m->fstype), "FUSE") ? "daemon"
									      : "server");
			return -EXDEV;
		}
		/* One elsewhere in its table may still be reached through a symbolic link. */
		FOREACH_ARRAY (e, s->mounts->entries, s->mounts->n_entries)
			if (fs_type_may_stall(e->fstype)) {
				ns_check_every_lookup(opts->ns);
				break;
			}
	}
	/* A namespace's two files under one switch to its identity (ns_read_files()). */
	if (foreign)
		ns_read_files(opts->ns, files, ELEMENTSOF(files));
	r = probe_identity(s, opts, foreign ? &files[0] : NULL, err);
	if (r < 0)
		return r;
	r = probe_tty_members(foreign ? &files[0] : NULL, s);
	if (r < 0)
		return r;
	r = probe_kernel(opts->kernel, opts->ns, s);
	if (r < 0)
		return r;
	r = probe_namespace(opts, s);
	if (r < 0)
		return r;

	/* An fstab that cannot be read leaves nothing to say about it. */
	if (foreign)
		s->fstab = TAKE_PTR(files[1].text);
	else
		(void)ns_read_file(NULL, "/etc/fstab", 0, FSTAB_SIZE_MAX, &s->fstab, NULL);

	if ((r = probe_chain(opts->ns, s, PTMX_PATH)) < 0 ||
	    (r = probe_chain(opts->ns, s, DEV_TTY_PATH)) < 0 ||
	    (r = probe_path_dirs(opts->ns, s)) < 0) {
		if (r == -EREMOTE) {
			snprintf(
			    err->message, sizeof(err->message),
			    "a path looked up there leads, through a symbolic link, onto a FUSE "
			    "or network file system, whose daemon or server may stop answering: "
			    "not judged from outside; run ptsguard audit inside it");
			return -EXDEV;
		}
		return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

static int probe_details_in(const struct probe_options *opts, struct snapshot *s,
			    const struct analysis *a)
{
	int r;

	/* Adding nodes may move s->nodes: only a's instances and mount indices are used here. */
	const struct namespace_target *ns = opts ? opts->ns : NULL;
	bool other = ns && !ns->own;
	struct slave_listing listed;
	long nr;

	if (a->pts_path && (r = probe_add_node(ns, s, a->pts_path)) < 0)
		return r;
	/* The kernel's count of ptys before any instance is listed (probe_pty_nr()). */
	nr = probe_pty_nr();
	r = probe_slaves(ns, opts && opts->has_alloc_user ? &opts->alloc_uid : NULL, s, a, &listed);
	if (r < 0)
		return r;
	r = probe_slave_copies(ns, s, a);
	if (r < 0)
		return r;
	/* A namespace that maps one gid: can its userland live without a tty group? */
	if (idmap_size(s->gid_map) == 1 && (r = probe_userland(ns, s)) < 0)
		return r;
	r = probe_tty_sessions(ns, s, a);
	if (r < 0)
		return r;
	/* Before the holders, whoever searches for them (the daemon and --all-namespaces after
	 * this pass): whether some pty lives on an instance not mounted here. */
	r = probe_ptys_unseen(ns, s, a, nr, &listed);
	if (r < 0)
		return r;
	if (!opts || !opts->skip_holders) {
		r = probe_holders_in(s, a, "/proc", other ? ns->mntns : 0);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	r = probe_helpers(ns, s);
	if (r < 0)
		return r;
	/* The record is the host's boot (its /run): it says nothing of another namespace. */
	if (!other)
		probe_initramfs_record(s);
	/* Likewise the daemon's memory: of the host's instances. A state file that cannot be read
	 * or says nothing of it is no record; it never stops an audit. */
	if (!other && opts && opts->last_healthy)
		s->last_healthy = *opts->last_healthy;
	else if (!other && opts && opts->state_file)
		(void)probe_read_last_healthy(opts->state_file, &s->last_healthy);
	/* A namespace whose process left is being torn down: what was read may be half of it. */
	if (other)
		return namespace_target_check(ns);
	return 0;
}

/* An open that failed with EPERM for the probe: the device cgroup its user met, for the check to
 * name. Nothing is read otherwise: a healthy host pays nothing. */
static int probe_denied_open(const struct probe_options *opts, struct snapshot *s)
{
	enum alloc_step step;
	int r;

	if (!alloc_probe_failed(&s->probe, &step) || s->probe.error != EPERM ||
	    (step != ALLOC_STEP_OPEN_PTMX && step != ALLOC_STEP_OPEN_SLAVE))
		return 0;
	r = probe_device_cgroup(opts ? opts->ns : NULL, &s->device_cgroup);
	return r == -ENOMEM ? r : 0;
}

int probe_details(const struct probe_options *opts, struct snapshot *s, const struct analysis *a)
{
	int r = probe_details_in(opts, s, a);

	if (r >= 0)
		r = probe_denied_open(opts, s);

	ns_dirs_end(opts ? opts->ns : NULL);
	return r;
}

/* Would the probe's lookups under ns's root (/dev/ptmx and where its links lead, /dev/pts where
 * its slave is opened) reach a FUSE or network mount? Asked by the FUSE rule's walk, before a
 * child is started that would wait there for good and be left behind. The namespace itself is
 * then refused by probe_base() (its table, or the same walk through its links). */
static bool alloc_paths_may_stall(const struct namespace_target *ns)
{
	static const struct {
		const char *path;
		int flags;
	} paths[] = { { "/dev/ptmx", O_PATH }, { "/dev/pts", O_PATH | O_DIRECTORY } };
	uint64_t id = ns->mntns_ours ? 0 : ns->mntns_id;

	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		int fd = open_in_root_checked(ns->root_fd, id, paths[i].path, paths[i].flags);

		if (fd == -EREMOTE)
			return true;
		if (fd >= 0)
			close(fd);
	}
	return false;
}

/* Why a process that may not change ids runs no probe: a user without either capability is not
 * root; root, or a user given some, names the first of the two it lacks. */
static enum alloc_status alloc_missing_caps(void)
{
	uint64_t eff = caps_effective();
	uint64_t need = CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID);

	if (geteuid() != 0 && !(eff & need))
		return ALLOC_NOT_ROOT;
	return eff & CAP_BIT(CAP_SETUID) ? ALLOC_NO_CAP_SETGID : ALLOC_NO_CAP_SETUID;
}

void probe_allocation_start(const struct probe_options *opts, struct guarded_worker *w,
			    struct alloc_pending *ret)
{
	bool other = opts->ns && !opts->ns->own;
	int r;

	*ret = (struct alloc_pending){ .worker = w,
				       .o = { .root_fd = other ? opts->ns->root_fd : -1,
					      .cgroup_fds = { -1, -1 },
					      .budget_left = opts->alloc_budget } };
	if (opts->skip_allocation) {
		ret->status = ALLOC_DISABLED;
		return;
	}
	/* Not judged (probe_base()): no child is left waiting in a lookup there either. */
	if (other &&
	    (opts->ns->root_outside || opts->ns->root_stalls || alloc_paths_may_stall(opts->ns))) {
		ret->status = ALLOC_SKIPPED;
		return;
	}
	/* Root, or the daemon as its own user with CAP_SETUID and CAP_SETGID (util/caps.h). */
	if (!caps_may_change_ids()) {
		ret->status = alloc_missing_caps();
		return;
	}
	if (opts->has_alloc_user) {
		ret->o.uid = opts->alloc_uid;
		ret->o.gid = opts->alloc_gid;
	} else { /* cannot fail: "nobody" always has its fallback */
		(void)user_lookup(PROBE_USER_DEFAULT, &ret->o.uid, &ret->o.gid);
		if (!other)
			probe_user_mapped(&ret->o.uid, &ret->o.gid);
	}
	ret->status = ALLOC_PERFORMED;
	if (other) {
		/* Another namespace chose its /dev/ptmx: a short deadline, and the device rules of
		 * its own cgroups. A child joins them; the one worker of a run cannot (it is
		 * unprivileged by then), so such a probe runs in a child of its own. We may not
		 * write them (the daemon as its own user, without CAP_DAC_OVERRIDE): the probe
		 * stays in our cgroup, and opens no node but a ptmx and its own pty all the same.
		 */
		ret->o.deadline_usec = ALLOC_NS_DEADLINE_USEC;
		r = probe_cgroup_procs_of(opts->ns, ret->o.cgroup_fds);
		if (r < 0 && r != -EACCES && r != -EPERM) {
			ret->status = ALLOC_SETUP_FAILED;
			ret->cgroup_error = -r;
			return;
		}
		ret->o.join_cgroups = ret->o.cgroup_fds[0] >= 0 || ret->o.cgroup_fds[1] >= 0;
		if (ret->o.join_cgroups)
			ret->worker = NULL;
	}
	if (probe_allocation_skipped(&ret->o, &(struct alloc_probe){ 0 }))
		ret->status = ALLOC_SKIPPED;
	else if (ret->worker)
		ret->submitted = probe_allocation_submit(ret->worker, &ret->o);
}

void alloc_pending_done(struct alloc_pending *p)
{
	probe_cgroup_fds_close(p->o.cgroup_fds);
}

int probe_allocation_into(struct alloc_pending *p, struct snapshot *s)
{
	int r;

	if (p->status == ALLOC_SETUP_FAILED) {
		s->probe = (struct alloc_probe){ .status = ALLOC_SETUP_FAILED,
						 .uid = p->o.uid,
						 .gid = p->o.gid,
						 .error = p->cgroup_error,
						 .setup_step = "cgroup" };
		return 0;
	}
	if (p->status != ALLOC_PERFORMED) {
		s->probe = (struct alloc_probe){ .status = p->status };
		return 0;
	}

	r = p->worker ? probe_allocation_collect(p->worker, &p->o, p->submitted, &s->probe)
		      : probe_allocation(&p->o, &s->probe);
	if (r < 0) {
		s->probe = (struct alloc_probe){
			.status = ALLOC_SETUP_FAILED,
			.uid = p->o.uid,
			.gid = p->o.gid,
			.error = -r,
			.setup_step = "start",
		};
		if (r == -ENOMEM)
			return r;
	}
	return 0;
}
