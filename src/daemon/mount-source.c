/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon/log-once.h"
#include "daemon/mount-source.h"
#include "daemon/policy.h"
#include "daemon/timer.h"
#include "util/clock.h"
#include "util/log.h"

/* One backend: what a change of the table means, and which mounts an audit reads. */
struct mount_backend {
	const char *name;
	/* Start (m->tracker for fanotify); < 0: not here. */
	int (*open)(struct mount_source *m);
	void (*close)(struct mount_source *m);
	/* Its own events to poll for reading, or NULL: the mountinfo poll alone. */
	int (*fd)(const struct mount_source *m);
	/* Read them: > 0 an audit is due; < 0 the backend cannot go on. */
	int (*dispatch)(struct mount_source *m);
	/* The mountinfo poll woke: > 0 an audit is due; < 0 the backend cannot go on. NULL: every
	 * wake-up is an audit. Coalesced by the window (daemon/policy.h). */
	int (*refresh)(struct mount_source *m);
	/* As mount_source_table(); -ESTALE: read the whole table. */
	int (*table)(struct mount_source *m, struct mount_table **ret);
	int (*follow)(struct mount_source *m, const struct analysis *a);
	bool (*needs_full)(const struct mount_source *m);
	void (*forget)(struct mount_source *m);
	void (*stats)(const struct mount_source *m, struct mount_source_stats *ret);
};

struct mount_source {
	sd_event *event;
	mount_source_fn on_change;
	void *userdata;
	const struct config *config;

	int monitor_fd; /* the mountinfo poll: /proc/self/mountinfo, polled for EPOLLPRI */
	sd_event_source *monitor_source;

	const struct mount_backend *backend;
	struct mount_tracker *tracker; /* the fanotify backend's */
	sd_event_source *backend_source, *refresh_timer;
	struct schedule refreshes;
	struct log_once timer_failure;

	uint64_t poll_wakeups, fanotify_wakeups;
};

/* ---- mountinfo: the whole table on every change ---- */

static int mountinfo_table(struct mount_source *m, struct mount_table **ret)
{
	*ret = NULL;
	return 1;
}

static bool mountinfo_needs_full(const struct mount_source *m)
{
	return true;
}

static const struct mount_backend mountinfo_backend = {
	.name = "mountinfo",
	.table = mountinfo_table,
	.needs_full = mountinfo_needs_full,
};

/* ---- fanotify: the relevant mounts alone (probe/mounttrack.h) ---- */

static int fanotify_open(struct mount_source *m)
{
	return mount_tracker_new(&m->tracker);
}

static void fanotify_close(struct mount_source *m)
{
	m->tracker = mount_tracker_free(m->tracker);
}

static int fanotify_fd(const struct mount_source *m)
{
	return mount_tracker_fd(m->tracker);
}

static int fanotify_dispatch(struct mount_source *m)
{
	m->fanotify_wakeups++;
	return mount_tracker_read_events(m->tracker);
}

static int fanotify_refresh(struct mount_source *m)
{
	return mount_tracker_refresh(m->tracker);
}

static int fanotify_table(struct mount_source *m, struct mount_table **ret)
{
	return mount_tracker_table(m->tracker, ret);
}

static int fanotify_follow(struct mount_source *m, const struct analysis *a)
{
	return mount_tracker_follow(m->tracker, a);
}

static bool fanotify_needs_full(const struct mount_source *m)
{
	return mount_tracker_needs_full(m->tracker);
}

static void fanotify_forget(struct mount_source *m)
{
	mount_tracker_forget(m->tracker);
}

static void fanotify_stats(const struct mount_source *m, struct mount_source_stats *ret)
{
	ret->tracking = true;
	mount_tracker_get_stats(m->tracker, &ret->tracker);
}

static const struct mount_backend fanotify_backend = {
	.name = "fanotify",
	.open = fanotify_open,
	.close = fanotify_close,
	.fd = fanotify_fd,
	.dispatch = fanotify_dispatch,
	.refresh = fanotify_refresh,
	.table = fanotify_table,
	.follow = fanotify_follow,
	.needs_full = fanotify_needs_full,
	.forget = fanotify_forget,
	.stats = fanotify_stats,
};

/* ---- the source ---- */

static void backend_close(struct mount_source *m)
{
	m->backend_source = sd_event_source_disable_unref(m->backend_source);
	if (m->refresh_timer)
		(void)sd_event_source_set_enabled(m->refresh_timer, SD_EVENT_OFF);
	if (m->backend->close)
		m->backend->close(m);
	m->backend = &mountinfo_backend;
}

/* The backend failed: the whole table on every change from now on, starting now. */
static void stop_backend(struct mount_source *m, const char *why, int err)
{
	if (m->backend == &mountinfo_backend)
		return;
	log_warning("Incremental mount tracking stopped (%s: %s): re-reading the whole mount "
		    "table on every change from now on",
		    why, strerror(-err));
	backend_close(m);
	m->on_change(m->userdata);
}

static int on_backend_events(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct mount_source *m = userdata;
	int r = m->backend->dispatch(m);

	if (r < 0)
		stop_backend(m, "cannot read fanotify mount events", r);
	if (r != 0)
		m->on_change(m->userdata);
	return 0;
}

/* A remount of a followed mount has no event of its own: re-read them. */
static void refresh(struct mount_source *m)
{
	int r;

	schedule_start(&m->refreshes, now_usec(CLOCK_MONOTONIC));
	r = m->backend->refresh(m);
	if (r < 0)
		stop_backend(m, "cannot re-read the followed mounts", r);
	else if (r > 0)
		m->on_change(m->userdata);
}

static int on_refresh_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct mount_source *m = userdata;

	if (m->backend->refresh)
		refresh(m);
	return 0;
}

/* Like audits, the first wake-up after a quiet window is handled at once and those within the
 * window after a re-read by one at its end: the poll firing for every mount of a storm costs a
 * re-read per window, not per mount. */
static void schedule_refresh(struct mount_source *m)
{
	/* The CPU share does not apply: their cost is unknown (SCHEDULE_COST_UNKNOWN). */
	struct schedule_rule rule = schedule_rule_from_config(m->config);
	uint64_t now = now_usec(CLOCK_MONOTONIC), due;
	int r;

	if (sd_event_source_get_enabled(m->refresh_timer, NULL) > 0)
		return;
	due = schedule_due(&m->refreshes, &rule, now, SCHEDULE_COST_UNKNOWN);
	if (due <= now) {
		refresh(m);
		return;
	}
	r = timer_arm(m->refresh_timer, due);
	if (r < 0) {
		log_once_fail(&m->timer_failure, "Failed to arm the refresh timer: %s",
			      strerror(-r));
		refresh(m);
	}
}

static int on_poll(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct mount_source *m = userdata;

	/* The kernel's poll of mountinfo said EPOLLPRI once for the changes since it was last
	 * asked, and took note that it did: the next epoll_wait() does not report it again. So
	 * there is nothing to read or acknowledge. */
	m->poll_wakeups++;
	if (m->backend->refresh)
		schedule_refresh(m);
	else
		m->on_change(m->userdata);
	return 0;
}

int mount_source_new(sd_event *event, mount_source_fn on_change, void *userdata,
		     struct mount_source **ret)
{
	_cleanup_(mount_source_freep) struct mount_source *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return log_error("Out of memory"), -ENOMEM;
	m->monitor_fd = -EBADF;
	m->event = sd_event_ref(event);
	m->on_change = on_change;
	m->userdata = userdata;
	m->backend = &mountinfo_backend;
	/* What libmount's kernel monitor does, without linking libmount (and its libblkid,
	 * libselinux and libpcre2, which every command would load): the kernel's mountinfo says
	 * EPOLLPRI (and EPOLLERR) when the mount namespace changed since its last poll. */
	m->monitor_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (m->monitor_fd < 0) {
		r = -errno;
		return log_error("Failed to open /proc/self/mountinfo: %s", strerror(-r)), r;
	}
	r = sd_event_add_io(event, &m->monitor_source, m->monitor_fd, EPOLLPRI, on_poll, m);
	if (r >= 0)
		r = sd_event_source_set_description(m->monitor_source, "mount-monitor");
	if (r >= 0)
		r = timer_add(event, &m->refresh_timer, on_refresh_timer, m, "refresh-timer");
	if (r < 0)
		return log_error("Failed to watch the mount table: %s", strerror(-r)), r;
	*ret = TAKE_PTR(m);
	return 0;
}

/* Start a backend other than mountinfo: open it, poll its events. */
static int backend_open(struct mount_source *m, const struct mount_backend *b)
{
	int r;

	m->backend = b;
	r = b->open(m);
	if (r >= 0 && b->fd) {
		r = sd_event_add_io(m->event, &m->backend_source, b->fd(m), EPOLLIN,
				    on_backend_events, m);
		if (r >= 0)
			r = sd_event_source_set_description(m->backend_source,
							    "fanotify-mount-events");
	}
	if (r < 0)
		backend_close(m);
	return r;
}

int mount_source_apply(struct mount_source *m, const struct config *c)
{
	enum mount_events want = c->mount_events;
	int r;

	m->config = c;
	if (want == MOUNT_EVENTS_MOUNTINFO) {
		stop_backend(m, "MountEvents=mountinfo", -ECANCELED);
		return 0;
	}
	if (m->backend == &fanotify_backend)
		return 0;
	r = backend_open(m, &fanotify_backend);
	if (r >= 0) {
		log_info("Tracking mounts incrementally through fanotify mount events");
		return 0;
	}
	if (r == -ENOMEM || want == MOUNT_EVENTS_FANOTIFY)
		return log_error("MountEvents=%s: cannot listen to fanotify mount events: %s",
				 mount_events_to_string(want), strerror(-r)),
		       r;
	log_info("Incremental mount tracking is not available here (%s): re-reading the whole "
		 "mount table on every change",
		 strerror(-r));
	return 0;
}

int mount_source_table(struct mount_source *m, struct mount_table **ret)
{
	int r = m->backend->table(m, ret);

	return r == -ENOMEM ? r : r != 0;
}

bool mount_source_unique_ids(const struct mount_source *m)
{
	return m->backend->follow != NULL;
}

int mount_source_follow(struct mount_source *m, const struct analysis *a)
{
	int r;

	if (!m->backend->follow)
		return 0;
	r = m->backend->follow(m, a);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		stop_backend(m, "cannot follow the relevant mounts", r);
	return 0;
}

bool mount_source_needs_full(const struct mount_source *m)
{
	return m->backend->needs_full(m);
}

void mount_source_forget(struct mount_source *m)
{
	if (m->backend->forget)
		m->backend->forget(m);
}

void mount_source_get_stats(const struct mount_source *m, struct mount_source_stats *ret)
{
	*ret = (struct mount_source_stats){ .poll_wakeups = m->poll_wakeups,
					    .fanotify_wakeups = m->fanotify_wakeups };
	if (m->backend->stats)
		m->backend->stats(m, ret);
}

struct mount_source *mount_source_free(struct mount_source *m)
{
	if (!m)
		return NULL;
	backend_close(m);
	sd_event_source_disable_unref(m->monitor_source);
	sd_event_source_disable_unref(m->refresh_timer);
	if (m->monitor_fd >= 0)
		close(m->monitor_fd);
	log_once_ok(&m->timer_failure);
	sd_event_unref(m->event);
	free(m);
	return NULL;
}
