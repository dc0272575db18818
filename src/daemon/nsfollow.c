/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The namespace follower (daemon/nsfollow.h): the list of the namespaces it follows and how
 * many it may, the walk of /proc that finds namespaces and lets go of those gone, and its API.
 * Following one is nsfollow-watch.c, auditing them nsfollow-audit.c, its timers
 * nsfollow-timers.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon/nsfollow-internal.h"
#include "pipeline/pipeline.h"
#include "probe/mntns.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/log.h"
#include "util/string-util.h"

/* The one followed for namespace ino at root (dev, rino); any of namespace ino when root is
 * NULL. */
static struct followed_ns *find(struct ns_follower *f, uint64_t ino, const struct mntns *root)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i]->ino == ino && (!root || (f->items[i]->root_dev == root->root_dev &&
							  f->items[i]->root_ino == root->root_ino)))
			return f->items[i];
	return NULL;
}

/* x lost its process and ns, of the same inode, is listed now: is it still x's namespace, or a
 * new one that took the inode of x's, gone meanwhile? Told by the kernel's id when it has one. */
static bool same_namespace(struct ns_follower *f, const struct followed_ns *x,
			   const struct mntns *ns)
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

/* Let go of one namespace made in a user namespace (quietly; found again, and left out, by the
 * next walk), for a privileged one to take its place (follow_new(), daemon/policy.h). */
static bool make_room(struct ns_follower *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (!f->items[i]->privileged) {
			/* Counted here if this walk listed it already; else when it comes. */
			if (f->items[i]->seen)
				f->stats.unfollowed++;
			follower_forget_at(f, i, false);
			return true;
		}
	return false;
}

/* Walk /proc: follow what is new, re-follow what lost its process, forget what is gone. */
static void walk_proc(struct ns_follower *f)
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
		struct followed_ns *x = find(f, ns->ino, ns);
		enum follow_new follow;
		bool fresh, privileged;

		if (ns->n_pids == 0)
			continue;
		/* A namespace gone and a new one with its inode: the old one forgotten now, the new
		 * one followed from this walk on (not a walk later). */
		if (x && x->pid == 0 && !same_namespace(f, x, ns)) {
			follower_forget(f, x);
			x = NULL;
		}
		fresh = !x;
		privileged = fresh && in_own_userns(f, ns->pids[0]);
		follow = fresh ? follow_new(f->n, f->max_followed, privileged) : FOLLOW_NEW_YES;
		if (follow == FOLLOW_NEW_NO || (follow == FOLLOW_NEW_IN_PLACE && !make_room(f))) {
			f->stats.unfollowed++;
			continue;
		}
		if (fresh) {
			if (GROW(f->items, f->allocated, f->n + 1) < 0 ||
			    !(x = calloc(1, sizeof(*x))))
				break;
			*x = (struct followed_ns){ .owner = f,
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
			follower_forget_at(f, i, !f->items[i]->unwatchable);
	if (f->stats.unfollowed > 0 && !f->over_limit)
		log_warning("Not following %zu mount namespace(s): %zu followed already, the most "
			    "it follows (%d at most, fewer when the limit of open files, "
			    "LimitNOFILE=, leaves room for fewer)",
			    f->stats.unfollowed, f->n, FOLLOWED_MAX);
	f->over_limit = f->stats.unfollowed > 0;
	if (any)
		follower_schedule_pass(f);
}

static int on_scan_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ns_follower *f = userdata;
	bool walk = now_usec(CLOCK_MONOTONIC) >= f->scan_due;

	/* Before the regular walk is due: for the namespaces whose last known process exited.
	 * Those the kernel now says are gone need no walk. */
	for (size_t i = f->n; i-- > 0 && !walk;) {
		struct followed_ns *x = f->items[i];

		if (x->pid != 0)
			continue;
		if (x->ns_id != 0 && mntns_id_exists(x->ns_id) == 0) {
			follower_forget_at(f, i, true);
			continue;
		}
		log_fields(LOG_DEBUG, (const char *const[]){ x->mntns_field, NULL },
			   "Mount namespace %llu: no known process left to follow it through, "
			   "walking /proc for one",
			   (unsigned long long)x->ino);
		walk = true;
	}
	if (!walk) {
		(void)timer_arm_earliest(s, f->scan_due);
		return 0;
	}
	walk_proc(f);
	follower_schedule_regular_scan(f);
	return 0;
}

/* How many namespaces to follow with the limit of open files (follow_limit(), daemon/policy.h). */
static size_t max_followed(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return follow_limit(UINT64_MAX);
	return follow_limit(rl.rlim_cur);
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
		r = sd_event_add_time(event, &f->audit_timer, CLOCK_MONOTONIC, 0, 0,
				      follower_on_audit_timer, f);
	if (r >= 0 && f->inotify_fd >= 0)
		r = sd_event_add_io(event, &f->inotify_source, f->inotify_fd, EPOLLIN,
				    follower_on_inotify, f);
	if (r >= 0)
		r = sd_event_source_set_enabled(f->audit_timer, SD_EVENT_OFF);
	/* Armed below, after the first walk (armed at 0 now, it would walk again at once). */
	if (r >= 0)
		r = sd_event_source_set_enabled(f->scan_timer, SD_EVENT_OFF);
	if (r >= 0) {
		(void)sd_event_source_set_description(f->scan_timer, "namespaces-scan");
		(void)sd_event_source_set_description(f->audit_timer, "namespaces-audit");
		/* The first walk and audits at once. */
		walk_proc(f);
		follower_on_audit_timer(f->audit_timer, 0, f);
		follower_schedule_regular_scan(f);
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
	follower_schedule_pass(f);
	follower_schedule_regular_scan(f);
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
			follower_schedule_pass(f);
	}
	host_serving_done(&f->host);
	f->host = h;
	return 0;
}
