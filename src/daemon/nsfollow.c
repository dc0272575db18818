/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon/holder-cache.h"
#include "daemon/nsfollow.h"
#include "daemon/schedule.h"
#include "pipeline/pipeline.h"
#include "pipeline/namespace-audit.h"
#include "probe/mntns.h"
#include "probe/namespace.h"
#include "probe/probe.h"
#include "report/journal.h"
#include "report/report.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/string-util.h"
#include "util/log.h"

/* A namespace just found is audited once it is this old: a runtime builds a container's /dev
 * after creating its namespace, and the half-built state is nothing to report. */
#define NAMESPACE_SETTLE_USEC (500 * 1000ULL)
/* A namespace followed holds two descriptors (its process's pidfd, its mount table). This many
 * are kept for everything else, the host's audits first: whoever can make mount namespaces (any
 * user, where user namespaces are allowed) must not leave the daemon without descriptors. */
#define FDS_PER_NAMESPACE 2
#define FDS_RESERVED	  256
/* And never more than this many, whatever that limit: each costs the daemon about 10 KiB (its
 * findings, its processes, its container), and a host runs a few thousand containers at most. */
#define FOLLOWED_MAX 16384
/* One pass of audits runs at most this long before it lets the event loop (the host's audit,
 * the watchdog) go on; the rest waits for the next pass, which AuditCPUPercent= spaces. */
#define PASS_BUDGET_USEC (50 * 1000ULL)
/* Its /dev: what the host's DEV_WATCH_MASK (daemon/watches.c) sees, and the directory itself
 * going or moving (it is watched through a descriptor, never re-resolved by path). */
#define NAMESPACE_DEV_WATCH_MASK                                                                   \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF |        \
	 IN_MOVE_SELF | IN_ONLYDIR)

struct followed {
	struct ns_follower *owner;
	uint64_t ino;
	/* The root its processes share; chroot: not the namespace's own (a chroot inside it,
	 * followed apart, probe/mntns.h). */
	dev_t root_dev;
	ino_t root_ino;
	bool chroot;
	char *root_field; /* "PTSGUARD_ROOT=<path>", from its first audit; NULL: none */
	pid_t pid;	  /* 0: its process exited, and no other of it is followed yet */
	unsigned pids_total;
	pid_t *pids; /* its processes at the last walk: where its holders are looked for */
	pid_t candidates[MNTNS_CANDIDATES]; /* of those, the ones it may be followed through */
	unsigned n_candidates;
	uint64_t ns_id; /* the kernel's id of the namespace (0: unknown): is it gone? */
	int pidfd, mountinfo_fd, dev_wd;
	sd_event_source *exit_source, *mount_source;
	char label[CONTAINER_LABEL_MAX]; /* "" when no container is known */
	bool labelled;			 /* its container looked for (at its first audit) */
	char mntns_field[48], container_field[CONTAINER_LABEL_MAX + 32];
	struct findings findings; /* of its last audit */
	uint64_t found;		  /* CLOCK_MONOTONIC */
	bool dirty, seen;
	bool unwatchable; /* there, but no descriptor could be had to follow it */
	/* Its process was in our user namespace when it was found: the namespace was made by
	 * one privileged there (a runtime, a service), not by any user in a user namespace. */
	bool privileged;
	/* Its holder search, in slices (daemon/holder-cache.h); holders_partial: the last audit
	 * left it under way, so the namespace is audited again to go on with it. */
	struct holder_cache holders;
	bool holders_partial;
};

struct ns_follower {
	sd_event *event;
	const struct config *config;
	ns_transition_fn on_transition;
	void *userdata;
	sd_event_source *scan_timer, *audit_timer, *inotify_source;
	int inotify_fd, proc_fd;
	struct followed **items;
	size_t n, allocated;
	struct schedule passes;
	uint64_t last_scan;
	uint64_t scan_due;	  /* the next regular walk (CLOCK_MONOTONIC) */
	size_t max_followed;	  /* FOLLOWED_MAX, or less when the descriptor limit says so */
	size_t next_audit;	  /* where the next pass starts: a pass cut short goes on there */
	bool over_limit;	  /* the last walk left namespaces unfollowed (said once) */
	struct stat own_userns;	  /* /proc/self/ns/user (st_ino 0: unknown) */
	struct host_serving host; /* the host's serving instance, from its last audit */
	struct ns_follower_stats stats;
};

static void followed_unwatch(struct followed *x)
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

static void followed_free(struct followed *x)
{
	followed_unwatch(x);
	findings_done(&x->findings);
	holder_cache_done(&x->holders);
	free(x->pids);
	free(x->root_field);
	free(x);
}

static int arm(sd_event_source *s, uint64_t usec)
{
	uint64_t cur;

	/* An earlier deadline already armed stands. */
	if (sd_event_source_get_enabled(s, NULL) > 0 && sd_event_source_get_time(s, &cur) >= 0 &&
	    cur <= usec)
		return 0;
	int r = sd_event_source_set_time(s, usec);
	return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* The next pass of audits: after the coalescing window, and no sooner than the CPU share
 * allows after the last pass (daemon/schedule.h). */
static void schedule_pass(struct ns_follower *f)
{
	struct schedule_rule rule = { .window_usec = f->config->coalesce_usec,
				      .cpu_percent = f->config->audit_cpu_percent };

	(void)arm(f->audit_timer,
		  schedule_due(&f->passes, &rule, now_usec(CLOCK_MONOTONIC), SCHEDULE_WAIT_WINDOW));
}

static void schedule_scan(struct ns_follower *f, uint64_t delay)
{
	(void)arm(f->scan_timer, now_usec(CLOCK_MONOTONIC) + delay);
}

/* The next regular walk, ScanSec= from now. */
static void schedule_regular_scan(struct ns_follower *f)
{
	f->scan_due = now_usec(CLOCK_MONOTONIC) + f->config->namespaces_scan_usec;
	(void)arm(f->scan_timer, f->scan_due);
}

static int followed_watch(struct ns_follower *f, struct followed *x, pid_t pid);
static void forget_followed(struct ns_follower *f, struct followed *x);

/* x's process exited. Through another of its processes the last walk found, if one is still
 * there; else, when the kernel says the namespace is gone, x is forgotten at once. Else the
 * kernel is asked again one coalescing window later (a namespace may outlive its last process
 * for a moment), and only when it still cannot tell does that take a walk of /proc (once for a
 * storm of exits). */
static int on_process_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct followed *x = userdata;
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
		schedule_pass(f);
		return 0;
	}
	if (x->ns_id != 0 && mntns_id_exists(x->ns_id) == 0) {
		forget_followed(f, x);
		return 0;
	}
	schedule_scan(f, f->config->coalesce_usec);
	return 0;
}

static int on_mounts(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct followed *x = userdata;

	x->owner->stats.wakeups++;
	x->dirty = true;
	schedule_pass(x->owner);
	return 0;
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
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
		schedule_pass(f);
	return 0;
}

/* Its /dev, resolved inside its root: never a path of the host's. */
static int watch_dev(struct ns_follower *f, struct followed *x)
{
	_cleanup_close_ int root = -EBADF, dev = -EBADF;
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char path[64];

	if (f->inotify_fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)x->pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	dev = (int)syscall(SYS_openat2, root, "dev", &how, sizeof(how));
	if (dev < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dev);
	x->dev_wd = inotify_add_watch(f->inotify_fd, path, NAMESPACE_DEV_WATCH_MASK);
	return x->dev_wd < 0 ? -errno : 0;
}

/* Is pid's root still x's (a chroot's process may chroot again, a pid be reused)? */
static bool has_root(struct ns_follower *f, const struct followed *x, pid_t pid)
{
	struct stat st;

	return mntns_root_of_pid(f->proc_fd, pid, &st) == 0 && st.st_dev == x->root_dev &&
	       st.st_ino == x->root_ino;
}

/* Its journal fields: PTSGUARD_MNTNS=, then PTSGUARD_CONTAINER= and PTSGUARD_ROOT= when it
 * has them; fields has room for four. */
static const char *const *followed_fields(const struct followed *x, const char *fields[4])
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
static void followed_name(const struct followed *x, char *buf, size_t size)
{
	const char *root = x->root_field ? x->root_field + strlen("PTSGUARD_ROOT=") : NULL;

	snprintf(buf, size, "mount namespace %llu%s%s", (unsigned long long)x->ino,
		 root ? ", root " : "", root ?: "");
}

/* Follow x through pid: its exit, its mount table, its /dev. */
static int followed_watch(struct ns_follower *f, struct followed *x, pid_t pid)
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

/* Its container, looked for once, when it is first audited: a runtime moves a container's
 * process into its cgroup after creating its namespace, and a walk of /proc may come between. */
static void followed_set_container(struct followed *x, struct namespace_audit *a)
{
	struct report_namespace n;

	x->labelled = true;
	/* A chroot's path, once: what its entries say it was at when found. */
	if (x->chroot && a->chroot &&
	    asprintf(&x->root_field, "PTSGUARD_ROOT=%s", a->target->root_path ?: "?") < 0)
		x->root_field = NULL;
	namespace_audit_attribute(a);
	n = namespace_audit_report(a, 0);
	report_container_label(&n, x->label, sizeof(x->label));
	snprintf(x->container_field, sizeof(x->container_field), "PTSGUARD_CONTAINER=%s", x->label);
}

static void journal_transitions(struct ns_follower *f, struct followed *x,
				const struct findings *before, const struct findings *now)
{
	_cleanup_(transitions_done) struct transitions t = { 0 };
	const char *buf[4];
	const char *const *fields = followed_fields(x, buf);
	char name[PATH_MAX + 64], context[CONTAINER_LABEL_MAX + PATH_MAX + 128];

	followed_name(x, name, sizeof(name));
	if (x->label[0])
		snprintf(context, sizeof(context), "%s, %s", x->label, name);
	else
		snprintf(context, sizeof(context), "%s", name);
	if (transitions_diff(before, now, NULL, &t) < 0)
		return;
	FOREACH_ARRAY (e, t.items, t.n_items) {
		e->context = context;
		e->context_fields = fields;
		f->on_transition(f->userdata, e);
	}
}

/* Its holders among its processes of the last walk, searched anew at each audit (no maximum
 * age: an audit of a namespace comes from a change in it), a slice at a time. */
static int followed_holders(void *userdata, struct snapshot *s, const struct analysis *a)
{
	struct followed *x = userdata;
	struct holder_scope where = {
		.proc = "/proc", .pids = x->pids, .n_pids = x->pids_total, .mntns = x->ino
	};
	int r;

	r = holder_cache_fill(&x->holders, s, a, &where, now_usec(CLOCK_MONOTONIC), 0,
			      HOLDER_SCAN_SLICE_USEC);
	if (r < 0)
		return r;
	x->holders_partial = r == HOLDERS_PARTIAL;
	return 0;
}

/* One namespace's audit; its transitions journaled. The target is opened for the audit only
 * (a few descriptors): the pidfd held says the pid is still the process followed. */
static void followed_audit(struct ns_follower *f, struct followed *x)
{
	_cleanup_(namespace_audit_done) struct namespace_audit a = { 0 };
	struct audit_target target = { .probe.host = &f->host,
				       .holders = followed_holders,
				       .userdata = x };
	char why[sizeof(a.err.message) + 64];
	int r;

	x->dirty = false;
	if (x->pid == 0)
		return;
	r = namespace_audit_open(
	    &a, x->pid, x->ino,
	    &(struct namespace_root){ .dev = x->root_dev, .ino = x->root_ino, .chroot = x->chroot },
	    x->pidfd);
	if (r >= 0 && !x->labelled)
		followed_set_container(x, &a);
	/* The allocation probe too: its pty comes and goes in the namespace's /dev/pts, which
	 * this follower does not watch (only its /dev), so it wakes no audit of the namespace. */
	if (r >= 0)
		r = namespace_audit_run(&a, &target, f->config);
	if (r < 0) {
		if (r != -ESRCH) {
			const char *buf[4];
			char name[PATH_MAX + 64];
			_cleanup_free_ char *escaped = NULL;

			followed_name(x, name, sizeof(name));
			escaped = cescape(name);
			log_fields(LOG_WARNING, followed_fields(x, buf),
				   "Cannot audit %s (pid %d): %s", escaped ?: "?", (int)x->pid,
				   namespace_audit_why(&a, r, why, sizeof(why)));
		}
		return;
	}
	f->stats.audits++;
	/* Its holder search goes on at the next pass. */
	if (x->holders_partial) {
		x->dirty = true;
		schedule_pass(f);
	}
	journal_transitions(f, x, &x->findings, &a.result.findings);
	findings_done(&x->findings);
	x->findings = a.result.findings;
	a.result.findings = (struct findings){ 0 };
}

static int on_audit_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ns_follower *f = userdata;
	uint64_t t0 = now_usec(CLOCK_MONOTONIC), settled = 0;
	bool cut = false;

	schedule_start(&f->passes, t0);
	/* From where the last pass stopped, round: none waits behind others that keep changing. */
	for (size_t k = 0; k < f->n; k++) {
		size_t i = (f->next_audit + k) % f->n;
		struct followed *x = f->items[i];

		if (!x->dirty)
			continue;
		if (x->found + NAMESPACE_SETTLE_USEC > t0) {
			if (settled == 0 || x->found + NAMESPACE_SETTLE_USEC < settled)
				settled = x->found + NAMESPACE_SETTLE_USEC;
			continue;
		}
		if (now_usec(CLOCK_MONOTONIC) - t0 >= PASS_BUDGET_USEC) {
			f->next_audit = i;
			cut = true;
			break;
		}
		followed_audit(f, x);
	}
	schedule_end(&f->passes, now_usec(CLOCK_MONOTONIC));
	if (cut) {
		f->stats.passes_cut++;
		schedule_pass(f);
	}
	if (settled > 0)
		(void)arm(f->audit_timer, settled);
	return 0;
}

/* The one followed for namespace ino at root (dev, rino); any of namespace ino when root is
 * NULL. */
static struct followed *find(struct ns_follower *f, uint64_t ino, const struct mntns *root)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i]->ino == ino && (!root || (f->items[i]->root_dev == root->root_dev &&
							  f->items[i]->root_ino == root->root_ino)))
			return f->items[i];
	return NULL;
}

/* A namespace gone: its findings go with it (nothing was resolved); said once when it had
 * any. Not gone (there, but it could not be followed): let go of quietly, found again by a
 * later walk. */
static void forget(struct ns_follower *f, size_t i, bool gone)
{
	struct followed *x = f->items[i];

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
static void forget_followed(struct ns_follower *f, struct followed *x)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i] == x) {
			forget(f, i, true);
			return;
		}
}

/* x lost its process and ns, of the same inode, is listed now: is it still x's namespace, or a
 * new one that took the inode of x's, gone meanwhile? Told by the kernel's id when it has one. */
static bool same_namespace(struct ns_follower *f, const struct followed *x, const struct mntns *ns)
{
	uint64_t id = 0;

	if (x->ns_id == 0)
		return true;
	for (unsigned k = 0; k < ns->n_pids; k++)
		if (mntns_id_of_pid(f->proc_fd, ns->pids[k], &id) == (int64_t)ns->ino)
			return id == x->ns_id;
	return true; /* none left to tell: following fails, and it is forgotten */
}

/* A namespace followed already: it was found to be no kernel thread's when it was new (an
 * inode reused meanwhile is a container's too, kdevtmpfs's namespace being made at boot). */
static bool followed_known(void *userdata, uint64_t ino)
{
	return find(userdata, ino, NULL) != NULL;
}

/* Whether pid is in our user namespace: then the mount namespace it is in was made by a process
 * privileged in ours (joining or making one needs CAP_SYS_ADMIN over it). */
static bool in_own_userns(struct ns_follower *f, pid_t pid)
{
	struct stat st;
	char path[64];

	snprintf(path, sizeof(path), "%d/ns/user", (int)pid);
	return f->own_userns.st_ino != 0 && fstatat(f->proc_fd, path, &st, 0) == 0 &&
	       st.st_dev == f->own_userns.st_dev && st.st_ino == f->own_userns.st_ino;
}

/* At the most it follows, a privileged namespace takes the place of one made in a user
 * namespace (let go of quietly; found again, and left out, by the next walk): whoever makes
 * namespaces of their own cannot crowd out the containers of the host's runtimes. */
static bool make_room(struct ns_follower *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (!f->items[i]->privileged) {
			/* Counted here if this walk listed it already; else when it comes. */
			if (f->items[i]->seen)
				f->stats.unfollowed++;
			forget(f, i, false);
			return true;
		}
	return false;
}

/* Walk /proc: follow what is new, re-follow what lost its process, forget what is gone. */
static void scan(struct ns_follower *f)
{
	struct mntns_list l;
	bool any = false;
	int r;

	f->stats.scans++;
	f->last_scan = now_usec(CLOCK_MONOTONIC);
	r = mntns_enumerate("/proc", followed_known, f, &l);
	if (r < 0) {
		log_warning("Cannot list the mount namespaces: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < f->n; i++)
		f->items[i]->seen = f->items[i]->unwatchable = false;
	f->stats.unfollowed = 0;
	FOREACH_ARRAY (ns, l.items, l.n) {
		struct followed *x = find(f, ns->ino, ns);
		bool fresh, privileged;

		if (ns->n_pids == 0)
			continue;
		/* A namespace gone and a new one with its inode: the old one forgotten now, the new
		 * one followed from this walk on (not a walk later). */
		if (x && x->pid == 0 && !same_namespace(f, x, ns)) {
			forget_followed(f, x);
			x = NULL;
		}
		fresh = !x;
		privileged = fresh && in_own_userns(f, ns->pids[0]);
		if (fresh && f->n >= f->max_followed && !(privileged && make_room(f))) {
			f->stats.unfollowed++;
			continue;
		}
		if (fresh) {
			if (GROW(f->items, f->allocated, f->n + 1) < 0 ||
			    !(x = calloc(1, sizeof(*x))))
				break;
			*x = (struct followed){ .owner = f,
						.privileged = privileged,
						.ino = ns->ino,
						.root_dev = ns->root_dev,
						.root_ino = ns->root_ino,
						.chroot = ns->chroot,
						.found = f->last_scan,
						.pidfd = -1,
						.mountinfo_fd = -1,
						.dev_wd = -1 };
			snprintf(x->mntns_field, sizeof(x->mntns_field), "PTSGUARD_MNTNS=%llu",
				 (unsigned long long)x->ino);
			f->items[f->n++] = x;
			f->stats.appeared++;
		}
		x->seen = true;
		{
			pid_t *p = reallocarray(x->pids, ns->pids_total ?: 1, sizeof(pid_t));

			if (!p)
				break;
			memcpy(p, ns->all, ns->pids_total * sizeof(pid_t));
			x->pids = p;
			x->pids_total = ns->pids_total;
			memcpy(x->candidates, ns->pids, sizeof(x->candidates));
			x->n_candidates = ns->n_pids;
		}
		if (x->pid != 0)
			continue;
		for (unsigned k = 0; k < ns->n_pids && x->pid == 0; k++) {
			r = followed_watch(f, x, ns->pids[k]);
			/* Out of descriptors (or memory): the namespace is there all the same. */
			x->unwatchable =
			    x->unwatchable || r == -EMFILE || r == -ENFILE || r == -ENOMEM;
		}
		if (x->pid == 0) {
			if (x->unwatchable)
				f->stats.unfollowed++;
			continue;
		}
		x->dirty = true;
		any = true;
	}
	mntns_list_done(&l);
	for (size_t i = f->n; i-- > 0;)
		if (!f->items[i]->seen || f->items[i]->pid == 0)
			forget(f, i, !f->items[i]->unwatchable);
	if (f->stats.unfollowed > 0 && !f->over_limit)
		log_warning("Not following %zu mount namespace(s): %zu followed already, the most "
			    "it follows (%d at most, fewer when the limit of open files, "
			    "LimitNOFILE=, leaves room for fewer)",
			    f->stats.unfollowed, f->n, FOLLOWED_MAX);
	f->over_limit = f->stats.unfollowed > 0;
	if (any)
		schedule_pass(f);
}

static int on_scan_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ns_follower *f = userdata;
	bool walk = now_usec(CLOCK_MONOTONIC) >= f->scan_due;

	/* Before the regular walk is due: for the namespaces whose last known process exited.
	 * Those the kernel now says are gone need no walk. */
	for (size_t i = f->n; i-- > 0 && !walk;) {
		struct followed *x = f->items[i];

		if (x->pid != 0)
			continue;
		if (x->ns_id != 0 && mntns_id_exists(x->ns_id) == 0) {
			forget(f, i, true);
			continue;
		}
		log_fields(LOG_DEBUG, (const char *const[]){ x->mntns_field, NULL },
			   "Mount namespace %llu: no known process left to follow it through, "
			   "walking /proc for one",
			   (unsigned long long)x->ino);
		walk = true;
	}
	if (!walk) {
		(void)arm(s, f->scan_due);
		return 0;
	}
	scan(f);
	schedule_regular_scan(f);
	return 0;
}

/* How many namespaces to follow: FOLLOWED_MAX, or what the limit of open files leaves room for
 * with FDS_RESERVED kept. */
static size_t max_followed(void)
{
	struct rlimit rl;
	size_t room;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return FOLLOWED_MAX;
	room = rl.rlim_cur > FDS_RESERVED ? (size_t)(rl.rlim_cur - FDS_RESERVED) / FDS_PER_NAMESPACE
					  : 0;
	return room < FOLLOWED_MAX ? room : FOLLOWED_MAX;
}

static int host_copy(const struct host_serving *from, struct host_serving *to)
{
	*to = *from;
	to->mountpoint = strdup_or_null(from->mountpoint);
	return from->mountpoint && !to->mountpoint ? -ENOMEM : 0;
}

int ns_follower_new(sd_event *event, const struct config *config, const struct host_serving *host,
		    ns_transition_fn on_transition, void *userdata, struct ns_follower **ret)
{
	struct ns_follower *f = calloc(1, sizeof(*f));
	int r;

	if (!f)
		return -ENOMEM;
	if (host_copy(host, &f->host) < 0) {
		free(f);
		return -ENOMEM;
	}
	f->event = sd_event_ref(event);
	f->config = config;
	f->max_followed = max_followed();
	if (stat("/proc/self/ns/user", &f->own_userns) < 0)
		f->own_userns.st_ino = 0;
	f->on_transition = on_transition;
	f->userdata = userdata;
	f->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	f->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->proc_fd < 0) {
		r = -errno;
		if (f->inotify_fd >= 0)
			close(f->inotify_fd);
		sd_event_unref(f->event);
		free(f);
		return r;
	}
	r = sd_event_add_time(event, &f->scan_timer, CLOCK_MONOTONIC, 0, 0, on_scan_timer, f);
	if (r >= 0)
		r = sd_event_add_time(event, &f->audit_timer, CLOCK_MONOTONIC, 0, 0, on_audit_timer,
				      f);
	if (r >= 0 && f->inotify_fd >= 0)
		r = sd_event_add_io(event, &f->inotify_source, f->inotify_fd, EPOLLIN, on_inotify,
				    f);
	if (r >= 0)
		r = sd_event_source_set_enabled(f->audit_timer, SD_EVENT_OFF);
	/* Armed below, after the first walk (armed at 0 now, it would walk again at once). */
	if (r >= 0)
		r = sd_event_source_set_enabled(f->scan_timer, SD_EVENT_OFF);
	if (r >= 0) {
		(void)sd_event_source_set_description(f->scan_timer, "namespaces-scan");
		(void)sd_event_source_set_description(f->audit_timer, "namespaces-audit");
		/* The first walk and audits at once. */
		scan(f);
		on_audit_timer(f->audit_timer, 0, f);
		schedule_regular_scan(f);
	}
	if (r < 0) {
		ns_follower_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

struct ns_follower *ns_follower_free(struct ns_follower *f)
{
	if (!f)
		return NULL;
	/* Each out of the list before it is freed: followed_unwatch() looks at the others. */
	while (f->n > 0)
		followed_free(f->items[--f->n]);
	free(f->items);
	sd_event_source_disable_unref(f->scan_timer);
	sd_event_source_disable_unref(f->audit_timer);
	sd_event_source_disable_unref(f->inotify_source);
	if (f->inotify_fd >= 0)
		close(f->inotify_fd);
	close(f->proc_fd);
	host_serving_done(&f->host);
	sd_event_unref(f->event);
	free(f);
	return NULL;
}

void ns_follower_set_config(struct ns_follower *f, const struct config *config)
{
	f->config = config;
	for (size_t i = 0; i < f->n; i++) {
		/* Newly ignored findings leave quietly, as the host's do. */
		(void)pipeline_apply_ignore(config, &f->items[i]->findings);
		f->items[i]->dirty = true;
	}
	schedule_pass(f);
	schedule_regular_scan(f);
}

void ns_follower_get_stats(const struct ns_follower *f, struct ns_follower_stats *ret)
{
	*ret = f->stats;
	ret->followed = f->n;
}

int ns_follower_set_host(struct ns_follower *f, const struct host_serving *host)
{
	struct host_serving h;
	int r = host_copy(host, &h);

	if (r < 0)
		return r;
	/* devpts-host-instance compares each namespace with the host's serving instance. */
	if (h.known != f->host.known || h.dev != f->host.dev || h.mount_id != f->host.mount_id) {
		for (size_t i = 0; i < f->n; i++)
			f->items[i]->dirty = true;
		if (f->n > 0)
			schedule_pass(f);
	}
	host_serving_done(&f->host);
	f->host = h;
	return 0;
}
