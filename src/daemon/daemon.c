/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "checks/ptmx-replaced.h"
#include "config/conf.h"
#include "daemon/daemon.h"
#include "daemon/holder-cache.h"
#include "daemon/host-audit.h"
#include "daemon/log-once.h"
#include "daemon/mount-source.h"
#include "daemon/nsfollow.h"
#include "daemon/policy.h"
#include "daemon/privileges.h"
#include "daemon/startup-guard.h"
#include "daemon/state.h"
#include "daemon/timer.h"
#include "daemon/watches.h"
#include "pipeline/pipeline.h"
#include "probe/probe.h"
#include "report/journal-queue.h"
#include "report/journal.h"
#include "report/outputs.h"
#include "report/report.h"
#include "report/transitions.h"
#include "snapshot/snapshot.h"
#include "util/clock.h"
#include "util/group.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/output-file.h"
#include "util/parse.h"
#include "util/string-util.h"
#include "util/strv.h"
#include "util/systemd-dl.h"

#define UDEV_RECEIVE_BUFFER (128 * 1024)

static void log_config_error(const struct config_error *err, int r, const char *what)
{
	char file_field[4200], line_field[32], text[CONFIG_ERROR_TEXT_MAX];
	const char *fields[] = { file_field, line_field, NULL };

	if (r != -EINVAL && r != -ENOENT) {
		log_error("%s: cannot load the configuration: %s", what, strerror(-r));
		return;
	}
	snprintf(file_field, sizeof(file_field), "CONFIG_FILE=%s", err->file);
	snprintf(line_field, sizeof(line_field), "CONFIG_LINE=%u", err->line);
	log_fields(LOG_ERR, err->file[0] ? fields : NULL, "%s; %s", config_error_format(err, text),
		   what);
}

/* Every key of the table with the value in effect (config_format_loaded()). */
static void log_config_loaded(const struct config *c, const char *verb)
{
	_cleanup_free_ char *line = NULL;

	if (config_format_loaded(c, verb, &line) >= 0)
		log_info("%s", line);
}

static void on_namespace_transition(void *userdata, const struct transition_event *e)
{
	daemon_log_transition(userdata, e);
}

/* Follow the other mount namespaces when the configuration says so, or stop. */
static void daemon_apply_namespaces(struct daemon *d)
{
	int r;

	if (d->config->namespaces_audit != NAMESPACES_AUDIT_ALL) {
		d->namespaces = ns_follower_free(d->namespaces);
		return;
	}
	if (d->namespaces) {
		ns_follower_set_config(d->namespaces, d->config);
		return;
	}
	r = ns_follower_new(d->event, d->config, &d->host, on_namespace_transition, d,
			    &d->namespaces);
	if (r < 0)
		log_warning("Cannot follow the other mount namespaces: %s", strerror(-r));
}

static void daemon_schedule_audit(struct daemon *d, unsigned reason);

/* An audit now, and the next one it asks for (daemon/host-audit.h). */
static void daemon_audit_now(struct daemon *d)
{
	unsigned next = 0;

	(void)daemon_audit(d, &next);
	if (next)
		daemon_schedule_audit(d, next);
}

/* An audit for reason (enum audit_reason), as daemon/policy.h says; one already due stands. */
static void daemon_schedule_audit(struct daemon *d, unsigned reason)
{
	struct schedule_rule rule = schedule_rule_from_config(d->config);
	unsigned flags = schedule_flags(reason);
	uint64_t now, due;
	int r;

	r = sd_event_source_get_enabled(d->audit_timer, NULL);
	if (r > 0)
		return;
	/* The cost of reading the whole table says nothing of an audit of the followed mounts. */
	if (d->last_audit_full && !mount_source_needs_full(d->mounts))
		flags |= SCHEDULE_COST_UNKNOWN;
	now = now_usec(CLOCK_MONOTONIC);
	due = schedule_due(&d->audits, &rule, now, flags);
	r = sd_event_source_set_time_accuracy(d->audit_timer, timer_accuracy(due, now));
	if (r >= 0)
		r = timer_arm(d->audit_timer, due);
	if (r < 0) {
		/* Never lose an audit: do it now rather than not at all. */
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the audit timer: %s", strerror(-r));
		daemon_audit_now(d);
		return;
	}
	daemon_ok(d, FAILURE_TIMER);
}

static int on_holder_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	daemon_schedule_audit(userdata, REASON_HOLDERS);
	return 0;
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	daemon_schedule_audit(userdata, REASON_RETRY);
	return 0;
}

/* Between audits, say in the textfile that its series are still current. */
static int on_heartbeat_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	const char *path = d->config->prometheus_file;
	char why[OUTPUT_FILE_WHY_MAX];
	struct output_file_error err;
	int r;

	if (path) {
		r = prometheus_file_heartbeat(&d->prometheus, path, now_usec(CLOCK_REALTIME), &err);
		if (r < 0)
			daemon_fail(d, FAILURE_PROMETHEUS, "Failed to write %s: %s", path,
				    output_file_strerror(r, &err, path, why));
		else if (r > 0)
			daemon_ok(d, FAILURE_PROMETHEUS);
	}
	r = timer_arm(s, usec + d->config->prometheus_heartbeat_usec);
	if (r < 0)
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the heartbeat timer: %s",
			    strerror(-r));
	return 0;
}

/* ---- event handlers ---- */

static int on_audit_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	daemon_audit_now(userdata);
	return 0;
}

static int on_udev_event(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	struct udev_device *dev;

	while ((dev = udev_monitor_receive_device(d->udev_monitor))) {
		const char *action = udev_device_get_action(dev) ?: "?";
		unsigned long long seqnum = udev_device_get_seqnum(dev);
		char action_field[64], seqnum_field[64];
		const char *fields[] = { action_field, seqnum_field, NULL };

		if (!streq(udev_device_get_sysname(dev), "ptmx") ||
		    !streq(udev_device_get_subsystem(dev), "tty")) {
			udev_device_unref(dev);
			continue;
		}
		snprintf(action_field, sizeof(action_field), "PTSGUARD_UDEV_ACTION=%s", action);
		snprintf(seqnum_field, sizeof(seqnum_field), "PTSGUARD_UDEV_SEQNUM=%llu", seqnum);
		log_fields(LOG_INFO, fields, "udev: %s event for ptmx (seqnum %llu), auditing",
			   action, seqnum);
		d->udev_window.valid = true;
		snprintf(d->udev_window.action, sizeof(d->udev_window.action), "%s", action);
		d->udev_window.seqnum = seqnum;
		d->n_udev_events++;
		udev_device_unref(dev);
		daemon_schedule_audit(d, REASON_UDEV);
	}
	return 0;
}

/* Keep only the capabilities the configuration needs (daemon/privileges.h); after the tracker is
 * set up, which needs CAP_SYS_ADMIN. */
static void daemon_limit_privileges(struct daemon *d)
{
	uint64_t dropped = 0, missing = 0;
	char names[256];
	int r = privileges_limit(privileges_needed(d->config), &dropped, &missing);

	if (r < 0) {
		log_warning("Failed to drop capabilities: %s", strerror(-r));
		return;
	}
	if (missing)
		log_warning("Policy=%s needs %s, which this process is not permitted: repairs will "
			    "fail (see CapabilityBoundingSet= of the unit)",
			    repair_policy_to_string(d->config->repair_policy),
			    privileges_to_string(missing, names));
}

static int daemon_reload(struct daemon *d)
{
	_cleanup_(config_freep) struct config *c = NULL;
	struct config_error err;
	int r;

	sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)now_usec(CLOCK_MONOTONIC));
	r = config_load(d->config_path, &c, &err);
	if (r < 0) {
		log_config_error(&err, r, "keeping the previous configuration");
	} else {
		config_free(d->config);
		d->config = TAKE_PTR(c);
		if (d->no_probe)
			d->config->probe_enabled = false;
		log_config_loaded(d->config, "Reloaded");
		holder_cache_expire(&d->holders);
		user_lookup_forget();
		mount_source_forget(d->mounts);
		if (mount_source_apply(d->mounts, d->config) < 0)
			log_warning("Carrying on with what tracks mount changes now");
		daemon_limit_privileges(d);
		/* Newly ignored findings leave quietly: nothing was resolved. */
		(void)pipeline_apply_ignore(d->config, &d->findings);
		/* What /dev/ptmx is now becomes the reference for ptmx-replaced. */
		ptmx_replaced_reset(&d->ptmx);
		prometheus_file_forget(&d->prometheus);
		dev_watches_find_helpers(d->watches);
		daemon_schedule_audit(d, REASON_RELOAD);
		daemon_apply_namespaces(d);
	}
	daemon_notify_status(d, true);
	return r;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;
	struct mount_source_stats mst;

	if (si->ssi_signo == SIGHUP) {
		(void)daemon_reload(d);
		return 0;
	}
	sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
	mount_source_get_stats(d->mounts, &mst);
	log_info(
	    "Stopping after %llu audits (wake-ups: %llu mount table, %llu fanotify, %llu udev, "
	    "%llu inotify)",
	    (unsigned long long)d->n_audits, (unsigned long long)mst.poll_wakeups,
	    (unsigned long long)mst.fanotify_wakeups, (unsigned long long)d->n_udev_events,
	    (unsigned long long)dev_watches_wakeups(d->watches));
	if (mst.tracking)
		log_info("Mount tracking: %llu mount events, %llu relevant, %llu full reads of the "
			 "table, %llu re-reads of the %zu followed mounts",
			 (unsigned long long)mst.tracker.events,
			 (unsigned long long)mst.tracker.relevant,
			 (unsigned long long)mst.tracker.full_reads,
			 (unsigned long long)mst.tracker.refreshes, mst.tracker.followed);
	if (d->namespaces) {
		struct ns_follower_stats st;

		ns_follower_get_stats(d->namespaces, &st);
		log_info(
		    "Mount namespaces: %zu followed, %llu appeared, %llu gone, %llu audits "
		    "(%.1f CPU-ms), %llu walks of /proc, %llu wake-ups, %.1f CPU-ms letting go of "
		    "those whose process exited",
		    st.followed, (unsigned long long)st.appeared, (unsigned long long)st.gone,
		    (unsigned long long)st.audits, (double)st.audit_usec / USEC_PER_MSEC,
		    (unsigned long long)st.scans, (unsigned long long)st.wakeups,
		    (double)st.release_usec / USEC_PER_MSEC);
		if (st.unfollowed > 0 || st.passes_cut > 0)
			log_info("Mount namespaces not followed at the last walk (over the most it "
				 "follows): %zu; passes of audits cut short: %llu",
				 st.unfollowed, (unsigned long long)st.passes_cut);
	}
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void on_mount_change(void *userdata)
{
	daemon_schedule_audit(userdata, REASON_MOUNT);
}

static void on_watch_change(void *userdata, unsigned reasons)
{
	daemon_schedule_audit(userdata, reasons);
}

/* ---- setup and teardown ---- */

static int add_described(int r, sd_event_source *s, const char *description)
{
	if (r < 0)
		return r;
	return sd_event_source_set_description(s, description);
}

/* udev and inotify are optional (see daemon_new()): they log at warning level. */
static int daemon_setup_udev_monitor(struct daemon *d)
{
	int fd, r;

	d->udev = udev_new();
	if (!d->udev)
		return log_warning("Failed to create a udev context"), -ENOMEM;
	d->udev_monitor = udev_monitor_new_from_netlink(d->udev, "udev");
	if (!d->udev_monitor) {
		r = errno > 0 ? -errno : -ENOMEM;
		return log_warning("Failed to create the udev monitor: %s", strerror(-r)), r;
	}
	r = udev_monitor_filter_add_match_subsystem_devtype(d->udev_monitor, "tty", NULL);
	if (r >= 0)
		r = udev_monitor_enable_receiving(d->udev_monitor);
	if (r < 0)
		return log_warning("Failed to listen to udev: %s", strerror(-r)), r;
	(void)udev_monitor_set_receive_buffer_size(d->udev_monitor, UDEV_RECEIVE_BUFFER);
	fd = udev_monitor_get_fd(d->udev_monitor);
	r = sd_event_add_io(d->event, &d->udev_source, fd, EPOLLIN, on_udev_event, d);
	r = add_described(r, d->udev_source, "udev-monitor");
	if (r < 0)
		return log_warning("Failed to watch udev events: %s", strerror(-r)), r;
	return 0;
}

static int on_journal_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;

	(void)journal_queue_flush(d->journal);
	return 0;
}

/* Before the loop waits: poll the journal's socket for room only while entries wait, and on
 * the socket it uses now (it connects anew when journald restarts). */
static int on_journal_prepare(sd_event_source *s, void *userdata)
{
	struct daemon *d = userdata;
	bool pending = journal_queue_pending(d->journal) > 0;
	int fd = journal_queue_fd(d->journal), r;

	if (sd_event_source_get_io_fd(s) != fd) {
		r = sd_event_source_set_io_fd(s, fd);
		if (r < 0)
			return r;
	}
	/* Stays enabled (a disabled source is not prepared again); waits for nothing when nothing
	 * waits. */
	return sd_event_source_set_io_events(s, pending ? EPOLLOUT : 0);
}

/* Without a journal socket at start, entries go through libsystemd (or to standard error), as
 * for the one-shot commands. */
static void daemon_setup_journal(struct daemon *d)
{
	int r;

	if (!journal_available() || journal_open_queue(&d->journal) < 0)
		return;
	r = sd_event_add_io(d->event, &d->journal_source, journal_queue_fd(d->journal), 0,
			    on_journal_writable, d);
	if (r >= 0)
		r = sd_event_source_set_prepare(d->journal_source, on_journal_prepare);
	r = add_described(r, d->journal_source, "journal-queue");
	if (r < 0) {
		d->journal_source = sd_event_source_disable_unref(d->journal_source);
		d->journal = journal_queue_free(d->journal);
		log_warning("Sending to the journal may block: %s", strerror(-r));
		return;
	}
	journal_use_queue(d->journal);
}

/* The soft limit of open files up to the hard one (systemd's default soft limit, 1024, is
 * kept for programs that use select(2); this one uses none): each mount namespace followed
 * holds two, and the budget for them comes from this limit (daemon/nsfollow.c). */
static void raise_open_file_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* --user: what the unit's User=, capability sets and NoNewPrivileges= give, for a start by an
 * init script (daemon/privileges.h). */
static int daemon_become_user(const char *name)
{
	char names[256];
	uid_t uid = 0;
	gid_t gid = 0;
	int r = privileges_become_user(name, &uid, &gid);

	if (r == -ESRCH)
		log_error("--user %s: no such user", name);
	else if (r == -EINVAL)
		log_error("--user %s: the daemon does not run as root", name);
	else if (r == -EPERM)
		log_error("--user %s: only root may become another user", name);
	else if (r < 0)
		log_error("--user %s: cannot become that user: %s", name, strerror(-r));
	else if (r > 0)
		log_info("Running as %s (uid %u, gid %u) with no new privileges, permitted %s",
			 name, (unsigned)uid, (unsigned)gid,
			 privileges_to_string(privileges_service_set, names));
	return r;
}

int daemon_new(const struct daemon_options *opts, struct daemon **ret)
{
	_cleanup_(daemon_freep) struct daemon *d = NULL;
	struct config_error err;
	const char *dl_error;
	int r;

	/* libsystemd and libudev: loaded here, not at every start of a one-shot command; before
	 * there is a daemon to free, which takes them. */
	r = systemd_dl_load(&dl_error);
	if (r < 0)
		return log_error("Cannot run the daemon: %s", dl_error), r;
	d = calloc(1, sizeof(*d));
	/* Every message of the daemon's from now on is a journal entry; with no journal at start
	 * (a host without systemd), a line on standard error and in syslog. */
	log_set_sink(journal_log_sink);
	journal_use_syslog(!journal_available());
	if (!d)
		return log_error("Out of memory"), -ENOMEM;
	if (opts->user) {
		r = daemon_become_user(opts->user);
		if (r < 0)
			return r;
	}
	raise_open_file_limit();
	if (opts->config_path) {
		d->config_path = strdup(opts->config_path);
		if (!d->config_path)
			return -ENOMEM;
	}
	r = config_load(d->config_path, &d->config, &err);
	if (r < 0) {
		log_config_error(&err, r, "not starting");
		return r;
	}
	d->no_probe = opts->no_probe;
	if (d->no_probe)
		d->config->probe_enabled = false;
	log_config_loaded(d->config, "Loaded");
	/* From here on, what waits on a file system counts against the start's deadline. */
	r = startup_guard_start(&d->startup, STARTUP_DEADLINE_USEC);
	if (r < 0)
		log_warning("No deadline for the first audit: %s", strerror(-r));
	/* A daemon before this one in this boot (/run) may have seen the instance healthy. */
	if (d->config->state_file)
		(void)probe_read_last_healthy(d->config->state_file, &d->last_healthy);

	r = sd_event_new(&d->event);
	if (r < 0)
		return log_error("Failed to create the event loop: %s", strerror(-r)), r;

	r = sd_event_add_signal(d->event, &d->sigterm_source, SIGTERM, on_signal, d);
	r = add_described(r, d->sigterm_source, "signal-term");
	if (r >= 0)
		r = sd_event_add_signal(d->event, &d->sigint_source, SIGINT, on_signal, d);
	r = add_described(r, d->sigint_source, "signal-int");
	if (r >= 0)
		r = sd_event_add_signal(d->event, &d->sighup_source, SIGHUP, on_signal, d);
	r = add_described(r, d->sighup_source, "signal-hup");
	if (r < 0)
		return log_error("Failed to handle signals: %s", strerror(-r)), r;

	daemon_setup_journal(d);

	r = timer_add(d->event, &d->audit_timer, on_audit_timer, d, "audit-timer");
	if (r >= 0)
		r = timer_add(d->event, &d->holder_timer, on_holder_timer, d, "holder-timer");
	if (r >= 0)
		r = timer_add(d->event, &d->retry_timer, on_retry_timer, d, "output-retry-timer");
	if (r >= 0)
		r = timer_add(d->event, &d->heartbeat_timer, on_heartbeat_timer, d,
			      "heartbeat-timer");
	if (r >= 0)
		r = timer_arm(d->heartbeat_timer,
			      now_usec(CLOCK_MONOTONIC) + d->config->prometheus_heartbeat_usec);
	if (r < 0)
		return log_error("Failed to create the timers: %s", strerror(-r)), r;

	/* Watch first, then audit: a change between the two is seen, never missed. The mount table
	 * is what matters most; without udev (a container) or inotify (its limits reached) the
	 * daemon still sees every mount change, so it carries on. */
	r = mount_source_new(d->event, on_mount_change, d, &d->mounts);
	if (r < 0)
		return r;
	r = mount_source_apply(d->mounts, d->config);
	if (r < 0)
		return r;
	if (daemon_setup_udev_monitor(d) < 0)
		log_warning("Continuing without udev events for ptmx");
	r = dev_watches_new(d->event, on_watch_change, d, &d->watches);
	if (r < 0)
		return log_error("Out of memory"), r;
	if (dev_watches_start(d->watches) < 0)
		log_warning("Continuing without watching /dev/ptmx and /dev/pts: only mount table "
			    "changes and udev events trigger audits");

	r = sd_event_set_watchdog(d->event, true);
	if (r < 0)
		return log_error("Failed to enable the watchdog: %s", strerror(-r)), r;
	daemon_limit_privileges(d);

	*ret = TAKE_PTR(d);
	return 0;
}

int daemon_run(struct daemon *d)
{
	int r;

	daemon_audit_now(d);
	/* The guard covers the host's first audit only: what follows (the first walk of the
	 * other namespaces) makes no lookup that may stall (the FUSE rule), and were it stuck,
	 * no thread but the loop's may tell the watchdog that the daemon runs. */
	if (startup_guard_stop(&d->startup))
		log_warning(
		    "The first audit ended %.1f s after the start, past its deadline of %llu "
		    "s: the service was reported ready (degraded) before it",
		    (double)(now_usec(CLOCK_MONOTONIC) - d->startup.start) / 1e6,
		    (unsigned long long)(STARTUP_DEADLINE_USEC / USEC_PER_SEC));
	daemon_apply_namespaces(d);
	daemon_notify_status(d, true);
	r = sd_event_loop(d->event);
	if (r < 0)
		return log_error("Event loop failed: %s", strerror(-r)), r;
	return 0;
}

struct daemon *daemon_free(struct daemon *d)
{
	if (!d)
		return NULL;
	(void)startup_guard_stop(&d->startup);
	sd_event_source_disable_unref(d->sigterm_source);
	sd_event_source_disable_unref(d->sigint_source);
	sd_event_source_disable_unref(d->sighup_source);
	sd_event_source_disable_unref(d->udev_source);
	sd_event_source_disable_unref(d->audit_timer);
	sd_event_source_disable_unref(d->holder_timer);
	sd_event_source_disable_unref(d->heartbeat_timer);
	sd_event_source_disable_unref(d->journal_source);
	if (d->journal) {
		/* What still waits gets one last chance; then back to libsystemd's way. */
		(void)journal_queue_flush(d->journal);
		journal_use_queue(NULL);
		journal_queue_free(d->journal);
	}
	sd_event_source_disable_unref(d->retry_timer);
	ns_follower_free(d->namespaces);
	dev_watches_free(d->watches);
	host_serving_done(&d->host);
	sd_event_unref(d->event);
	mount_source_free(d->mounts);
	udev_monitor_unref(d->udev_monitor);
	udev_unref(d->udev);
	holder_cache_done(&d->holders);
	findings_done(&d->findings);
	d->repaired_keys = strv_free(d->repaired_keys);
	d->tried_keys = strv_free(d->tried_keys);
	ptmx_replaced_reset(&d->ptmx);
	config_free(d->config);
	free(d->config_path);
	for (size_t i = 0; i < _FAILURE_MAX; i++)
		daemon_ok(d, i);
	free(d->status);
	prometheus_file_forget(&d->prometheus);
	free(d);
	return NULL;
}
