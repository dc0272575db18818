/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One mount namespace followed (daemon/nsfollow-internal.h) through one of its processes: a
 * pidfd for its exit, POLLPRI on its mountinfo for its mounts, inotify on its /dev, and what
 * is done when that process exits; how its journal entries name it; letting go of it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/nsfollow-internal.h"
#include "probe/mntns.h"
#include "probe/stalling-fs.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

/* Its /dev: what the host's DEV_WATCH_MASK (daemon/watches.c) sees, and the directory itself
 * going or moving (it is watched through a descriptor, never re-resolved by path). */
#define NAMESPACE_DEV_WATCH_MASK                                                                   \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF |        \
	 IN_MOVE_SELF | IN_ONLYDIR)

void followed_unwatch(struct followed_ns *x)
{
	x->exit_source = sd_event_source_disable_unref(x->exit_source);
	x->mount_source = sd_event_source_disable_unref(x->mount_source);
	if (x->pidfd >= 0)
		close(x->pidfd);
	if (x->mountinfo_fd >= 0)
		close(x->mountinfo_fd);
	if (x->dev_wd >= 0 && x->owner->inotify_fd >= 0) {
		/* Several namespaces may share one /dev (one inode, one watch). */
		bool shared = false;

		for (size_t i = 0; i < x->owner->n; i++)
			shared = shared || (x->owner->items[i] != x &&
					    x->owner->items[i]->dev_wd == x->dev_wd);
		if (!shared)
			(void)inotify_rm_watch(x->owner->inotify_fd, x->dev_wd);
	}
	x->pidfd = x->mountinfo_fd = x->dev_wd = -1;
	x->pid = 0;
}

void followed_free(struct followed_ns *x)
{
	followed_unwatch(x);
	findings_done(&x->findings);
	holder_cache_done(&x->holders);
	free(x->pids);
	free(x->root_field);
	free(x);
}

/* x's process exited. Through another of its processes the last walk found, if one is still
 * there; else, when the kernel says the namespace is gone, x is forgotten at once. Else the
 * kernel is asked again one coalescing window later (a namespace may outlive its last process
 * for a moment), and only when it still cannot tell does that take a walk of /proc (once for a
 * storm of exits). */
static int on_process_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct followed_ns *x = userdata;
	struct ns_follower *f = x->owner;
	pid_t exited = x->pid;
	uint64_t cpu = now_usec(CLOCK_THREAD_CPUTIME_ID);

	f->stats.wakeups++;
	followed_unwatch(x);
	f->stats.release_usec += now_usec(CLOCK_THREAD_CPUTIME_ID) - cpu;
	for (unsigned k = 0; k < x->n_candidates && x->pid == 0; k++)
		if (x->candidates[k] != exited)
			(void)followed_watch(f, x, x->candidates[k]);
	if (x->pid != 0) {
		/* Its mount table was not watched for a moment. */
		x->dirty = true;
		follower_schedule_pass(f);
		return 0;
	}
	if (x->ns_id != 0 && mntns_id_exists(x->ns_id) == 0) {
		follower_forget(f, x);
		return 0;
	}
	follower_schedule_scan(f, f->config->coalesce_usec);
	return 0;
}

static int on_mounts(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct followed_ns *x = userdata;

	x->owner->stats.wakeups++;
	x->dirty = true;
	follower_schedule_pass(x->owner);
	return 0;
}

int follower_on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ns_follower *f = userdata;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			for (size_t i = 0; i < f->n; i++)
				if (f->items[i]->dev_wd == ev->wd || (ev->mask & IN_Q_OVERFLOW)) {
					f->items[i]->dirty = true;
					any = true;
				}
			p += sizeof(*ev) + ev->len;
		}
	}
	f->stats.wakeups++;
	if (any)
		follower_schedule_pass(f);
	return 0;
}

/* Its /dev, resolved inside its root: never a path of the host's. Resolved by the FUSE rule
 * (probe/stalling-fs.h: open_in_root_checked()): the mount of each directory on the way, the
 * root's first (which may lie above a chroot's root), is asked of the kernel before a name is
 * looked up in it, and where one is FUSE or a network file system (also through a symbolic
 * link) no lookup is made, here in the loop, where one its daemon never answers would stop
 * the daemon for good (no audit, no watchdog, not even SIGKILL): its /dev is not watched. The
 * namespace's audits refuse it alike; its mount table is still watched. Opening
 * /proc/PID/root asks no file system, nor does the watch added through /proc/self/fd (magic
 * links). */
static int watch_dev(struct ns_follower *f, struct followed_ns *x)
{
	_cleanup_close_ int root = -EBADF, dev = -EBADF;
	char path[64];

	if (f->inotify_fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)x->pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	dev = open_in_root_checked(root, x->ns_id, "dev", O_PATH | O_DIRECTORY);
	if (dev < 0)
		return dev;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dev);
	x->dev_wd = inotify_add_watch(f->inotify_fd, path, NAMESPACE_DEV_WATCH_MASK);
	return x->dev_wd < 0 ? -errno : 0;
}

/* Is pid's root still x's (a chroot's process may chroot again, a pid be reused)? */
static bool has_root(struct ns_follower *f, const struct followed_ns *x, pid_t pid)
{
	struct stat st;

	return mntns_root_of_pid(f->proc_fd, pid, &st) == 0 && st.st_dev == x->root_dev &&
	       st.st_ino == x->root_ino;
}

/* Follow x through pid: its exit, its mount table, its /dev. */
int followed_watch(struct ns_follower *f, struct followed_ns *x, pid_t pid)
{
	char path[64];
	uint64_t ns_id = 0;
	int64_t ns_ino;
	int r;

	x->pid = pid;
	x->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (x->pidfd < 0)
		goto fail;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	x->mountinfo_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (x->mountinfo_fd < 0)
		goto fail;
	/* Its id, when the kernel tells it (the inode is no proof: it is reused at once). */
	ns_ino = mntns_id_of_pid(f->proc_fd, pid, &ns_id);
	/* Opened after the pidfd: if the process is still there, these are its, and it is the
	 * namespace's (not a process that took the number of one that exited). */
	if (poll(&(struct pollfd){ .fd = x->pidfd, .events = POLLIN }, 1, 0) != 0 ||
	    (ns_ino == -ENOTTY ? mntns_of_pid(f->proc_fd, pid) : ns_ino) != (int64_t)x->ino ||
	    (ns_ino >= 0 && x->ns_id != 0 && ns_id != x->ns_id) || !has_root(f, x, pid)) {
		/* Gone, or in another namespace: one with the same inode, reused, is another. */
		errno = ESRCH;
		goto fail;
	}
	if (ns_ino >= 0)
		x->ns_id = ns_id;
	r = sd_event_add_io(f->event, &x->exit_source, x->pidfd, EPOLLIN, on_process_exit, x);
	if (r >= 0)
		r = sd_event_add_io(f->event, &x->mount_source, x->mountinfo_fd, EPOLLPRI,
				    on_mounts, x);
	if (r < 0) {
		followed_unwatch(x);
		return r;
	}
	(void)watch_dev(f, x);
	return 0;
fail:
	r = -errno;
	followed_unwatch(x);
	return r;
}

/* Its journal fields: PTSGUARD_MNTNS=, then PTSGUARD_CONTAINER= and PTSGUARD_ROOT= when it
 * has them; fields has room for four. */
const char *const *followed_fields(const struct followed_ns *x, const char *fields[4])
{
	size_t n = 0;

	fields[n++] = x->mntns_field;
	if (x->label[0])
		fields[n++] = x->container_field;
	if (x->root_field)
		fields[n++] = x->root_field;
	fields[n] = NULL;
	return fields;
}

/* How a person is told which it is: "mount namespace N", ", root PATH" for a chroot in it
 * (the path as the kernel gives it: journal.c escapes the whole context for MESSAGE=). */
void followed_name(const struct followed_ns *x, char *buf, size_t size)
{
	const char *root = x->root_field ? x->root_field + strlen("PTSGUARD_ROOT=") : NULL;

	snprintf(buf, size, "mount namespace %llu%s%s", (unsigned long long)x->ino,
		 root ? ", root " : "", root ?: "");
}

/* A namespace gone: its findings go with it (nothing was resolved); said once when it had
 * any. Not gone (there, but it could not be followed): let go of quietly, found again by a
 * later walk. */
void follower_forget_at(struct ns_follower *f, size_t i, bool gone)
{
	struct followed_ns *x = f->items[i];

	if (gone)
		f->stats.gone++;
	if (gone && x->findings.n_items > 0) {
		const char *buf[4];
		char name[PATH_MAX + 64];
		/* The label is what the namespace's cgroup says, the root what its tree's maker
		 * named: escaped for the message, exact in PTSGUARD_CONTAINER= and PTSGUARD_ROOT=
		 */
		_cleanup_free_ char *label = cescape(x->label), *escaped = NULL;

		followed_name(x, name, sizeof(name));
		name[0] = 'M';
		escaped = cescape(name);
		log_fields(LOG_INFO, followed_fields(x, buf),
			   "%s%s%s is gone, with its %zu finding(s)", escaped ?: "?",
			   x->label[0] ? " of " : "", label ?: "?", x->findings.n_items);
	}
	followed_free(x);
	f->items[i] = f->items[--f->n];
}

/* The same for x, gone, wherever it is in the list. */
void follower_forget(struct ns_follower *f, struct followed_ns *x)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i] == x) {
			follower_forget_at(f, i, true);
			return;
		}
}
