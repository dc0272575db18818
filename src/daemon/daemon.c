/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <libmount.h>
#include <libudev.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "checks/ptmx-replaced.h"
#include "config/conf.h"
#include "pipeline/pipeline.h"
#include "daemon/daemon.h"
#include "daemon/holder-cache.h"
#include "daemon/nsfollow.h"
#include "daemon/privileges.h"
#include "daemon/repair-tries.h"
#include "daemon/startup-guard.h"
#include "config/conf.h"
#include "probe/mounttrack.h"
#include "probe/probe.h"
#include "repair/outcomes.h"
#include "repair/repair.h"
#include "repair/verify.h"
#include "report/journal-queue.h"
#include "report/journal.h"
#include "report/outputs.h"
#include "report/report.h"
#include "report/transitions.h"
#include "snapshot/snapshot.h"
#include "util/alloc.h"
#include "util/output-file.h"
#include "util/clock.h"
#include "util/group.h"
#include "util/json-util.h"
#include "util/parse.h"
#include "util/string-util.h"
#include "util/strv.h"

/* The audit timer may fire this late; the coalescing window is counted in milliseconds. */
#define AUDIT_TIMER_ACCURACY_USEC (1 * USEC_PER_MSEC)
#define UDEV_RECEIVE_BUFFER	  (128 * 1024)

/* Entries of /dev that matter: the multiplexer, and the directory its devpts is found in. */
#define DEV_WATCH_MASK                                                                             \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR |            \
	 IN_EXCL_UNLINK)
#define PTS_WATCH_MASK DEV_WATCH_MASK
/* The root: a change of mode or owner of itself or of /dev (pty-path-blocked). */
#define ROOT_WATCH_MASK (IN_ATTRIB | IN_ONLYDIR)
/* A helper directory: a file appearing, changing mode or owner, being written or going away. */
#define HELPER_WATCH_MASK (DEV_WATCH_MASK | IN_CLOSE_WRITE)

/* What an audit is scheduled for: it decides how soon. */
enum audit_reason {
	REASON_MOUNT = 1 << 0,
	REASON_UDEV = 1 << 1,
	/* inotify: an entry of /dev/pts or /dev/pts itself; the mode or owner of / or /dev */
	REASON_PTS = 1 << 2,
	REASON_PTMX = 1 << 3, /* inotify: the ptmx entry of /dev */
	REASON_RELOAD = 1 << 4,
	REASON_HOLDERS = 1 << 5, /* the holder search of covered instances is too old, or partial */
	REASON_HELPER = 1 << 6,	 /* inotify: a pt_chown appeared, changed or went away */
	REASON_RETRY = 1 << 7,	 /* the last audit's output files could not be written */
	REASON_REPAIR = 1 << 8,	 /* repairs exposed more than REPAIR_ROUNDS_MAX rounds could try */
};

/* Repairs in one audit: each round tries what the previous one's re-audit found untried. */
#define REPAIR_ROUNDS_MAX 3

/* A failed write of the state file or the textfile (a full or read-only /run) is retried by
 * auditing again: first after OUTPUT_RETRY_MIN_USEC, doubling up to OUTPUT_RETRY_MAX_USEC, until
 * both files are written; so they catch up with the system soon after space is freed. */
#define OUTPUT_RETRY_MIN_USEC (100ULL * USEC_PER_MSEC)
#define OUTPUT_RETRY_MAX_USEC (1ULL * USEC_PER_SEC)

/* udev replaces or chmods /dev/ptmx while it runs its rules and sends its event after: a change
 * of the node always waits one window, so that the event that explains it is seen with it. */
#define REASONS_WAIT_FOR_WINDOW REASON_PTMX

/* Recurring failures are logged once each, until the operation succeeds again. */
enum failure {
	FAILURE_AUDIT,
	FAILURE_JOURNAL,
	FAILURE_STATE_FILE,
	FAILURE_PROMETHEUS,
	FAILURE_WATCH_DEV,
	FAILURE_WATCH_PTS,
	FAILURE_WATCH_HELPERS,
	FAILURE_TIMER,
	_FAILURE_MAX,
};

struct watch {
	const char *path;
	uint32_t mask;
	enum failure failure; /* what a failure to watch it is logged as */
	int wd;
	dev_t dev;
	ino_t ino;
};

struct daemon {
	uint64_t detected_total[_SEVERITY_MAX]; /* Prometheus ptsguard_findings_total */
	sd_event *event;
	sd_event_source *sigterm_source, *sigint_source, *sighup_source;
	sd_event_source *mount_source, *udev_source, *inotify_source, *audit_timer;
	sd_event_source *tracker_source, *refresh_timer, *holder_timer, *retry_timer;
	sd_event_source *heartbeat_timer; /* the Prometheus textfile's heartbeat */
	uint64_t retry_usec; /* the current output retry interval; 0 when the files are written */

	struct libmnt_monitor *mount_monitor;
	struct mount_tracker *tracker; /* NULL: every mount change re-reads the whole table */
	struct udev *udev;
	struct udev_monitor *udev_monitor;
	int inotify_fd;
	struct watch root_watch, dev_watch, pts_watch;
	/* The serving instance's directory when /dev/ptmx leads elsewhere than /dev/pts: its
	 * slaves come and go there. serving_watch.path is serving_path, or NULL. */
	struct watch serving_watch;
	char *serving_path;
	/* The directories where a setuid pt_chown would be installed (setuid_helper_dirs()). */
	char **helper_dirs;
	struct watch *helper_watches;
	size_t n_helper_watches;

	char *config_path;
	bool no_probe; /* --no-probe: over what the configuration says */
	struct config *config;

	uint64_t last_audit_start, last_audit_usec;
	bool last_audit_full;  /* it read the whole table (always, without the tracker) */
	uint64_t last_refresh; /* the tracker's last re-read of the followed mounts */
	uint64_t n_audits, n_mount_events, n_udev_events, n_inotify_events, n_fanotify_wakeups;
	/* The /dev/pts/N entries the allocation probe of our own audits made and removed: their
	 * inotify events are ours, not a change to audit (else each audit would wake the next). */
	struct probe_echo {
		unsigned index;
		unsigned creates, deletes;
	} probe_echoes[4];

	struct holder_cache holders;
	struct findings findings; /* of the last audit, Ignore= applied */
	/* The serving instance as last seen healthy: what a repair of it restores (also from the
	 * state file, for the next daemon of this boot and for ptsguard repair). */
	struct devpts_seen_healthy last_healthy;
	/* Repair hook: keys (finding_key()) of findings journaled as repaired. When such a finding
	 * is gone at the next audit, no "resolved" entry follows the "repaired" one. */
	char **repaired_keys;
	/* Policy=safe: the appearances (finding_try_key()) of the repairable findings whose
	 * repair was tried, kept while they stay present. Each appearance of a finding is tried
	 * once: one that a repair did not fix is not tried again on every wake-up (our own remount
	 * is a mount event too); one that changed is (daemon/repair-tries.h). */
	char **tried_keys;

	struct ptmx_replaced ptmx;	    /* /dev/ptmx against its baseline */
	struct ptmx_udev_event udev_window; /* the last ptmx udev event since the last audit */

	char *failures[_FAILURE_MAX]; /* the failure last logged, per operation */
	char *status;
	struct prometheus_file prometheus;

	/* [Namespaces] Audit=all: the other mount namespaces, or NULL; they are judged against
	 * the host's serving instance of the last audit. */
	struct ns_follower *namespaces;
	struct host_serving host;

	/* The journal without blocking: a journald that stops reading must not stop audits. */
	struct journal_queue *journal;
	sd_event_source *journal_source;

	/* READY=1 (degraded) when the first audit is late: see daemon/startup-guard.h. */
	struct startup_guard startup;
};

/* ---- logging: the journal when there is one (with fields), else standard error ---- */

#define log_info(...)	 journal_logf(LOG_INFO, NULL, __VA_ARGS__)
#define log_warning(...) journal_logf(LOG_WARNING, NULL, __VA_ARGS__)
#define log_err(...)	 journal_logf(LOG_ERR, NULL, __VA_ARGS__)

/* Log a failure once, not on every audit while it lasts. */
_printf_(3, 4) static void daemon_fail(struct daemon *d, enum failure what, const char *fmt, ...)
{
	char *msg;

	FORMAT_VA(msg, fmt);
	if (!msg)
		return;
	if (streq(msg, d->failures[what])) {
		free(msg);
		return;
	}
	log_err("%s", msg);
	free(d->failures[what]);
	d->failures[what] = msg;
}

/* The operation worked: its next failure is logged again. */
static void daemon_ok(struct daemon *d, enum failure what)
{
	free(d->failures[what]);
	d->failures[what] = NULL;
}

static void log_config_error(const struct config_error *err, int r, const char *what)
{
	char file_field[4200], line_field[32], text[CONFIG_ERROR_TEXT_MAX];
	const char *fields[] = { file_field, line_field, NULL };

	if (r != -EINVAL && r != -ENOENT) {
		log_err("%s: cannot load the configuration: %s", what, strerror(-r));
		return;
	}
	snprintf(file_field, sizeof(file_field), "CONFIG_FILE=%s", err->file);
	snprintf(line_field, sizeof(line_field), "CONFIG_LINE=%u", err->line);
	journal_logf(LOG_ERR, err->file[0] ? fields : NULL, "%s; %s",
		     config_error_format(err, text), what);
}

/* Every key of the table with the value in effect (config_format_loaded()). */
static void log_config_loaded(const struct config *c, const char *verb)
{
	_cleanup_free_ char *line = NULL;

	if (config_format_loaded(c, verb, &line) >= 0)
		log_info("%s", line);
}

/* ---- one audit ---- */

/* Journal one transition; count what was detected for ptsguard_findings_total. */
static void log_transition(struct daemon *d, const struct transition_event *e)
{
	const struct finding *f = e->finding;
	int r;

	if (e->transition == TRANSITION_DETECTED && f->severity < _SEVERITY_MAX)
		d->detected_total[f->severity]++;
	r = journal_log_transition(e);
	if (r >= 0)
		daemon_ok(d, FAILURE_JOURNAL);
	else
		daemon_fail(d, FAILURE_JOURNAL, "Failed to log %s %s: %s", f->check->id,
			    transition_to_string(e->transition), strerror(-r));
}

static void on_namespace_transition(void *userdata, const struct transition_event *e)
{
	log_transition(userdata, e);
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

/* One journal entry per transition between the previous audit's findings and these. A finding
 * journaled as repaired since then leaves without a "resolved" entry. */
static int daemon_log_transitions(struct daemon *d, const struct findings *now)
{
	_cleanup_(transitions_clear) struct transitions t = { 0 };
	int r;

	r = transitions_diff(&d->findings, now, d->repaired_keys, &t);
	if (r < 0)
		return r;
	FOREACH_ARRAY (e, t.items, t.n_items)
		log_transition(d, e);

	/* A repaired finding that is still (or again) present is tracked like any other. */
	d->repaired_keys = strv_free(d->repaired_keys);
	return 0;
}

static int arm_timer(sd_event_source *s, uint64_t usec);

static void daemon_write_outputs(struct daemon *d, const struct report *rep)
{
	const struct config *c = d->config;
	bool failed = false;
	char why[OUTPUT_FILE_WHY_MAX];
	int r;

	if (c->state_file) {
		r = state_file_write(c->state_file, rep);
		if (r >= 0)
			daemon_ok(d, FAILURE_STATE_FILE);
		else
			daemon_fail(d, FAILURE_STATE_FILE, "Failed to write %s: %s", c->state_file,
				    output_file_strerror(r, (uid_t)-1, c->state_file, why));
		failed = failed || r < 0;
	}

	if (c->prometheus_file) {
		r = prometheus_file_update(&d->prometheus, c->prometheus_file, rep,
					   now_usec(CLOCK_MONOTONIC));
		if (r < 0)
			daemon_fail(d, FAILURE_PROMETHEUS, "Failed to write %s: %s",
				    c->prometheus_file,
				    output_file_strerror(r, (uid_t)-1, c->prometheus_file, why));
		else if (r > 0)
			daemon_ok(d, FAILURE_PROMETHEUS);
		failed = failed || r < 0;
	}

	if (!failed) {
		d->retry_usec = 0;
		(void)sd_event_source_set_enabled(d->retry_timer, SD_EVENT_OFF);
		return;
	}
	d->retry_usec = d->retry_usec == 0			    ? OUTPUT_RETRY_MIN_USEC
			: d->retry_usec * 2 > OUTPUT_RETRY_MAX_USEC ? OUTPUT_RETRY_MAX_USEC
								    : d->retry_usec * 2;
	r = arm_timer(d->retry_timer, now_usec(CLOCK_MONOTONIC) + d->retry_usec);
	if (r < 0)
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the output retry timer: %s",
			    strerror(-r));
}

/* STATUS= when it changed; READY=1 with it after the first audit. */
static void daemon_notify_status(struct daemon *d, bool ready)
{
	_cleanup_free_ char *s = findings_status_text(&d->findings);

	if (!s)
		return;
	if (ready)
		sd_notifyf(false, "READY=1\nSTATUS=%s", s);
	else if (!streq(s, d->status))
		sd_notifyf(false, "STATUS=%s", s);
	free(d->status);
	d->status = TAKE_PTR(s);
}

/* (Re)watch a directory when what its path leads to changed (a mount on top, a new /dev). */
static void watch_update(struct daemon *d, struct watch *w)
{
	struct stat st;
	int wd;

	if (d->inotify_fd < 0)
		return;
	if (stat(w->path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (w->wd >= 0)
			(void)inotify_rm_watch(d->inotify_fd, w->wd);
		w->wd = -1;
		return;
	}
	if (w->wd >= 0 && st.st_dev == w->dev && st.st_ino == w->ino)
		return;
	wd = inotify_add_watch(d->inotify_fd, w->path, w->mask);
	if (wd < 0) {
		daemon_fail(d, w->failure, "Failed to watch %s: %m", w->path);
		return;
	}
	daemon_ok(d, w->failure);
	if (w->wd >= 0 && w->wd != wd)
		(void)inotify_rm_watch(d->inotify_fd, w->wd);
	w->wd = wd;
	w->dev = st.st_dev;
	w->ino = st.st_ino;
}

static void watch_all(struct daemon *d)
{
	watch_update(d, &d->root_watch);
	watch_update(d, &d->dev_watch);
	watch_update(d, &d->pts_watch);
	if (d->serving_watch.path)
		watch_update(d, &d->serving_watch);
	for (size_t i = 0; i < d->n_helper_watches; i++)
		watch_update(d, &d->helper_watches[i]);
}

static void helper_watches_clear(struct daemon *d)
{
	for (size_t i = 0; i < d->n_helper_watches; i++)
		if (d->inotify_fd >= 0 && d->helper_watches[i].wd >= 0)
			(void)inotify_rm_watch(d->inotify_fd, d->helper_watches[i].wd);
	free(d->helper_watches);
	d->helper_watches = NULL;
	d->n_helper_watches = 0;
	d->helper_dirs = strv_free(d->helper_dirs);
}

/* Watch where a pt_chown would be installed, chmodded or removed: nothing else tells the
 * daemon of a package putting a setuid helper in place. Found again on a reload. */
static void helper_watches_setup(struct daemon *d)
{
	int r;

	helper_watches_clear(d);
	if (d->inotify_fd < 0)
		return;
	r = setuid_helper_dirs(&d->helper_dirs);
	if (r >= 0 && d->helper_dirs) {
		d->n_helper_watches = strv_length(d->helper_dirs);
		d->helper_watches = calloc(d->n_helper_watches, sizeof(struct watch));
		if (!d->helper_watches)
			r = -ENOMEM;
	}
	if (r < 0) {
		daemon_fail(d, FAILURE_WATCH_HELPERS, "Failed to watch for pt_chown: %s",
			    strerror(-r));
		d->n_helper_watches = 0;
		return;
	}
	for (size_t i = 0; i < d->n_helper_watches; i++)
		d->helper_watches[i] = (struct watch){
			.path = d->helper_dirs[i],
			.mask = HELPER_WATCH_MASK,
			.failure = FAILURE_WATCH_HELPERS,
			.wd = -1,
		};
}

/* One look at the system: what the sinks and the repair policy work from. */
struct audit {
	struct snapshot *snap;
	struct analysis *a;
	struct findings findings; /* sorted, Ignore= applied, ptmx-replaced added */
};

static void audit_done(struct audit *x)
{
	findings_clear(&x->findings);
	x->a = analysis_free(x->a);
	x->snap = snapshot_free(x->snap);
}

static void daemon_stop_tracking(struct daemon *d, const char *why, int err);
static int daemon_apply_mount_events(struct daemon *d);

/* Fire once at usec (CLOCK_MONOTONIC). */
static int arm_timer(sd_event_source *s, uint64_t usec)
{
	int r = sd_event_source_set_time(s, usec);

	return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* Holders of covered instances, from the holder cache while it applies; a timer audits again
 * when a fresh scan expires, or at once while a search is under way. */
static int daemon_holders(struct daemon *d, struct snapshot *s, const struct analysis *a)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC), max_age = d->config->holder_rescan_usec;
	int r, k;

	r = holder_cache_fill(&d->holders, s, a, &(struct holder_scope){ .proc = "/proc" }, now,
			      max_age, HOLDER_SCAN_SLICE_USEC);
	if (r < 0)
		return r;
	/* A search under way goes on at the next audit, soon (daemon_schedule_audit() spaces it
	 * as AuditCPUPercent= says): no dispatch of the loop holds the watchdog for the whole. */
	if (r == HOLDERS_PARTIAL) {
		k = arm_timer(d->holder_timer, now);
		if (k < 0)
			daemon_fail(d, FAILURE_TIMER, "Failed to arm the holder timer: %s",
				    strerror(-k));
	}
	if (r == HOLDERS_NONE_COVERED)
		(void)sd_event_source_set_enabled(d->holder_timer, SD_EVENT_OFF);
	if (r == HOLDERS_SCANNED) {
		k = arm_timer(d->holder_timer, now + max_age);
		if (k < 0)
			daemon_fail(d, FAILURE_TIMER, "Failed to arm the holder timer: %s",
				    strerror(-k));
	}
	return 0;
}

/* Probe, analyse, run the checks, drop what Ignore= ignores, compare /dev/ptmx. Logs failures.
 * With the tracker, the probe audits the followed mounts alone unless a full read is due. */
static int daemon_holders_cb(void *userdata, struct snapshot *s, const struct analysis *a)
{
	return daemon_holders(userdata, s, a);
}

static int daemon_collect(struct daemon *d, struct audit *ret)
{
	struct audit_target t = {
		.probe = { .need_unique_ids = d->tracker != NULL,
			   .last_healthy = &d->last_healthy },
		.holders = daemon_holders_cb,
		.userdata = d,
	};
	struct audit_result res;
	struct parse_error perr;
	int r;

	d->last_audit_full = true;
	if (d->tracker) {
		r = mount_tracker_table(d->tracker, &t.probe.mounts);
		if (r == -ENOMEM)
			return daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s", strerror(-r)), r;
		d->last_audit_full = r != 0;
	}
	r = pipeline_run(&t, d->config, &res, &perr);
	if (r == -EINVAL && perr.line)
		daemon_fail(d, FAILURE_AUDIT, "Cannot audit: /proc/self/mountinfo line %u: %s",
			    perr.line, perr.message);
	else if (r < 0)
		daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s", strerror(-r));
	if (r < 0)
		return r;
	ret->snap = res.snap;
	ret->a = res.a;
	ret->findings = res.findings;

	if (d->tracker) {
		int k = mount_tracker_follow(d->tracker, ret->a);

		if (k == -ENOMEM)
			r = k;
		else if (k < 0)
			daemon_stop_tracking(d, "cannot follow the relevant mounts", k);
	}
	if (r >= 0)
		r = ptmx_replaced_check(&d->ptmx, ret->a, &d->udev_window, &ret->findings);
	/* Ignore= applies to the daemon's own check as to the others. */
	if (r >= 0)
		r = config_drop_ignored(d->config, &ret->findings);
	if (r < 0) {
		daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s", strerror(-r));
		return r;
	}
	findings_sort(&ret->findings);
	return 0;
}

/* Forget the tries of the findings now has no more: one that comes back is tried again (and one
 * that changes, daemon/repair-tries.h). */
static int daemon_prune_tried(struct daemon *d, const struct findings *now)
{
	_cleanup_strv_free_ char **keep = NULL;

	for (char **t = d->tried_keys; t && *t; t++) {
		bool present = false;

		FOREACH_ARRAY (f, now->items, now->n_items) {
			_cleanup_free_ char *key = finding_key(f);

			if (!key)
				return -ENOMEM;
			present = present || try_key_has_key(*t, key);
		}
		if (present && strv_extend(&keep, *t) < 0)
			return -ENOMEM;
	}
	strv_free(d->tried_keys);
	d->tried_keys = TAKE_PTR(keep);
	return 0;
}

/*
 * Repair the repairable findings of this audit not tried yet in their present appearance,
 * journal each outcome, re-probe, and journal the transitions from what was found to what is
 * left, leaving that in *now. Returns 1 when something was tried (the re-audit may have found
 * what the repair exposed), 0 when there was nothing to try.
 */
static int daemon_repair(struct daemon *d, struct audit *now)
{
	_cleanup_(audit_done) struct audit after = { 0 };
	struct repair_plan plan = { 0 };
	struct repair_options ro = {
		.policy = &d->config->check_policy,
		.tty_gid = now->snap->tty_gid,
		.repairable_only = true,
		.ptmx_symlink = d->config->ptmx_symlink,
	};
	struct findings fresh = { 0 };
	struct transitions outcomes = { 0 };
	int r;

	config_probe_identity(d->config, &ro.verify_uid, &ro.verify_gid);

	r = daemon_prune_tried(d, &now->findings);
	if (r < 0)
		return r;
	/* Only the repairable findings not tried yet; each is tried from here on. */
	FOREACH_ARRAY (f, now->findings.items, now->findings.n_items) {
		char *key;

		if (!finding_repairable(f))
			continue;
		key = finding_try_key(f);
		if (!key)
			r = -ENOMEM;
		else if (strv_contains(d->tried_keys, key))
			free(key);
		else if (strv_push(&d->tried_keys, key) < 0 ||
			 GROW(fresh.items, fresh.allocated, fresh.n_items + 1) < 0)
			r = -ENOMEM;
		else
			fresh.items[fresh.n_items++] = *f; /* borrowed: freed with now */
		if (r < 0) {
			free(fresh.items);
			return r;
		}
	}
	if (fresh.n_items == 0) {
		free(fresh.items);
		return 0;
	}
	r = repair_plan(now->a, &fresh, &ro, &plan);
	if (r >= 0)
		r = repair_act(&plan, &ro);
	if (r >= 0)
		r = daemon_collect(d, &after);
	if (r < 0)
		goto out;
	repair_confirm(&plan, &after.findings);

	r = repair_outcomes(&plan, &outcomes);
	if (r < 0)
		goto out;
	d->repaired_keys = strv_free(d->repaired_keys);
	FOREACH_ARRAY (e, outcomes.items, outcomes.n_items) {
		r = journal_log_transition(e);
		if (r < 0)
			daemon_fail(d, FAILURE_JOURNAL, "Failed to log a repair: %s", strerror(-r));
		/* A repaired finding is not journaled again as resolved by the audit after it. */
		if (e->transition == TRANSITION_REPAIRED &&
		    strv_push(&d->repaired_keys, finding_key(e->finding)) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}

	/* What the repair left is now the state: log the transitions from this audit to it. */
	findings_clear(&d->findings);
	d->findings = now->findings;
	now->findings = (struct findings){ 0 };
	r = daemon_log_transitions(d, &after.findings);
	if (r >= 0) {
		struct audit tmp = *now;
		*now = after;
		after = tmp;
		r = 1;
	}
out:
	transitions_clear(&outcomes);
	free(fresh.items);
	repair_plan_clear(&plan);
	return r;
}

/* The probe of this audit created and removed /dev/pts/N: expect those two events. */
static void probe_echo_expect(struct daemon *d, const struct alloc_probe *p)
{
	struct probe_echo *slot = NULL;

	if (p->status != ALLOC_PERFORMED || p->index < 0)
		return;
	for (size_t i = 0; i < ELEMENTSOF(d->probe_echoes) && !slot; i++)
		if (d->probe_echoes[i].index == (unsigned)p->index &&
		    (d->probe_echoes[i].creates || d->probe_echoes[i].deletes))
			slot = &d->probe_echoes[i];
	for (size_t i = 0; i < ELEMENTSOF(d->probe_echoes) && !slot; i++)
		if (!d->probe_echoes[i].creates && !d->probe_echoes[i].deletes)
			slot = &d->probe_echoes[i];
	if (!slot) /* more probes unheard than slots: let the oldest go (one extra audit) */
		slot = &d->probe_echoes[0];
	if (slot->index != (unsigned)p->index)
		*slot = (struct probe_echo){ .index = (unsigned)p->index };
	slot->creates++;
	slot->deletes++;
}

/* Is e (of the /dev/pts watch) the echo of our own probe? Each expected event is taken once, in
 * order: a user's pty that gets the same index after ours is gone is seen. */
static bool probe_echo_consume(struct daemon *d, const struct inotify_event *e)
{
	unsigned index;

	if (!e->len || parse_uint(e->name, &index) < 0)
		return false;
	FOREACH_ARRAY (x, d->probe_echoes, ELEMENTSOF(d->probe_echoes)) {
		if (x->index != index || (!x->creates && !x->deletes))
			continue;
		if ((e->mask & IN_CREATE) && x->creates && x->creates >= x->deletes) {
			x->creates--;
			return true;
		}
		if ((e->mask & IN_DELETE) && x->deletes > x->creates) {
			x->deletes--;
			return true;
		}
		/* Between its creation and removal, a change of its owner or mode is ours too. */
		if ((e->mask & IN_ATTRIB) && x->deletes > x->creates)
			return true;
	}
	return false;
}

static void daemon_schedule_audit(struct daemon *d, unsigned reason);

/* Follow the directory of the instance a serves when it is not /dev/pts. A directory watched
 * anew only sees what changes from now on: one more audit covers what came before. */
static void daemon_follow_serving(struct daemon *d, const struct analysis *a)
{
	const struct mount_entry *e = analysis_serving_mount(a);
	const char *mp = e ? e->mountpoint : NULL;

	if (mp && streq(mp, "/dev/pts"))
		mp = NULL;
	if (streq_ptr(mp, d->serving_path))
		return;
	if (d->serving_watch.wd >= 0 && d->inotify_fd >= 0)
		(void)inotify_rm_watch(d->inotify_fd, d->serving_watch.wd);
	d->serving_watch.wd = -1;
	free(d->serving_path);
	d->serving_path = mp ? strdup(mp) : NULL;
	d->serving_watch.path = d->serving_path;
	if (d->serving_path) {
		watch_update(d, &d->serving_watch);
		/* The probe of this audit came and went before the watch: no echo of it will
		 * arrive there, and a user's pty of the same index must not pass for one. */
		memset(d->probe_echoes, 0, sizeof(d->probe_echoes));
		daemon_schedule_audit(d, REASON_PTS);
	}
}

/* The serving instance healthy now (gid= the tty group, a healthy mode under the policy) is what
 * a later repair of it restores; the state file carries what was last seen so. */
static void daemon_note_healthy(struct daemon *d, const struct audit *now)
{
	const struct instance *in = now->a->serving;

	if (in && !in->gid_unmapped &&
	    devpts_options_healthy(&d->config->check_policy, &in->options, now->snap->tty_gid))
		d->last_healthy = (struct devpts_seen_healthy){ .known = true,
								.dev = in->dev,
								.mode = in->options.mode & 0777 };
	now->snap->last_healthy = d->last_healthy;
}

static int daemon_audit(struct daemon *d)
{
	_cleanup_(audit_done) struct audit now = { 0 };
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	struct report rep;
	int r;

	d->n_audits++;
	d->last_audit_start = t0;
	/* Before the probe too: what changes in a directory from here on wakes another audit. */
	watch_all(d);

	r = daemon_collect(d, &now);
	if (r < 0)
		goto done;
	probe_echo_expect(d, &now.snap->probe);
	daemon_ok(d, FAILURE_AUDIT);
	daemon_follow_serving(d, now.a);

	r = daemon_log_transitions(d, &now.findings);
	if (r < 0)
		goto done;
	/* Kept whatever [Namespaces] says: a reload to Audit=all has it at once. */
	host_serving_done(&d->host);
	r = host_serving_from_analysis(now.a, &d->host);
	if (r >= 0 && d->namespaces)
		r = ns_follower_set_host(d->namespaces, &d->host);
	if (r < 0)
		goto done;

	/* Policy=safe: repair what just appeared, then report the world as repair left it. A
	 * repair's re-audit may find what its finding hid (no /dev/ptmx: no instance to judge the
	 * slaves of): that is repaired in turn, a few rounds at most; past them, the next audit. */
	if (d->config->repair_policy == REPAIR_POLICY_SAFE) {
		for (unsigned round = 0;; round++) {
			r = daemon_repair(d, &now);
			if (r <= 0)
				break;
			if (round + 1 == REPAIR_ROUNDS_MAX) {
				daemon_schedule_audit(d, REASON_REPAIR);
				break;
			}
		}
		if (r < 0)
			goto done;
	} else
		d->tried_keys = strv_free(d->tried_keys);

	findings_clear(&d->findings);
	d->findings = now.findings;
	now.findings = (struct findings){ 0 };
	daemon_note_healthy(d, &now);

	rep = (struct report){
		.snap = now.snap,
		.a = now.a,
		.findings = &d->findings,
		.source = "live",
		.generated_at = now_usec(CLOCK_REALTIME),
		.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
		.detected_total = d->detected_total,
		.journal = d->journal ? &(struct journal_stats){
			.queued = journal_queue_pending(d->journal),
			.dropped = journal_queue_dropped(d->journal),
		} : NULL,
	};
	daemon_write_outputs(d, &rep);
	daemon_notify_status(d, false);

done:
	d->udev_window = (struct ptmx_udev_event){ 0 };
	d->last_audit_usec = now_usec(CLOCK_MONOTONIC) - t0;
	/* A whole table was just freed: give its pages back rather than keep the peak. */
	if (d->last_audit_full)
		(void)malloc_trim(0);
	return r;
}

/*
 * Coalescing: the first event after a quiet window is audited at once (at idle a finding is
 * journaled one audit after the change); events within the window after an audit are handled by
 * one audit at its end, so a burst costs one audit per window. The rate limit: an audit starts
 * no sooner after the previous one than its cost allows within AuditCPUPercent= of one CPU, so a
 * mount storm on a huge table costs bounded CPU.
 */
static void daemon_schedule_audit(struct daemon *d, unsigned reason)
{
	uint64_t now, due, next;
	int r;

	r = sd_event_source_get_enabled(d->audit_timer, NULL);
	if (r > 0)
		return;
	now = now_usec(CLOCK_MONOTONIC);
	if (reason & REASONS_WAIT_FOR_WINDOW)
		due = now + d->config->coalesce_usec;
	else {
		due = now;
		if (d->n_audits > 0) {
			next = d->last_audit_start + d->config->coalesce_usec;
			if (due < next)
				due = next;
		}
	}
	/* The cost of reading the whole table says nothing of an audit of the followed mounts. */
	if (d->n_audits > 0 &&
	    !(d->last_audit_full && d->tracker && !mount_tracker_needs_full(d->tracker))) {
		next =
		    d->last_audit_start + d->last_audit_usec * 100 / d->config->audit_cpu_percent;
		if (due < next)
			due = next;
	}
	r = arm_timer(d->audit_timer, due);
	if (r < 0) {
		/* Never lose an audit: do it now rather than not at all. */
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the audit timer: %s", strerror(-r));
		(void)daemon_audit(d);
		return;
	}
	daemon_ok(d, FAILURE_TIMER);
}

/*
 * With the tracker, attach and detach come as fanotify events: what else wakes the mountinfo
 * poll and matters is a remount or a change of options of a followed mount. The tracker re-reads
 * its few mounts to tell; like audits, the first wake-up after a quiet window is handled at once
 * and those within the window after a re-read by one at its end, so that the poll firing for
 * every mount of a storm costs a re-read per window, not per mount.
 */
static void daemon_refresh(struct daemon *d)
{
	int r;

	d->last_refresh = now_usec(CLOCK_MONOTONIC);
	r = mount_tracker_refresh(d->tracker);
	if (r < 0)
		daemon_stop_tracking(d, "cannot re-read the followed mounts", r);
	else if (r > 0)
		daemon_schedule_audit(d, REASON_MOUNT);
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

static int on_refresh_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;

	if (d->tracker)
		daemon_refresh(d);
	return 0;
}

/* Between audits, say in the textfile that its series are still current. */
static int on_heartbeat_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	const char *path = d->config->prometheus_file;
	char why[OUTPUT_FILE_WHY_MAX];
	int r;

	if (path) {
		r = prometheus_file_heartbeat(&d->prometheus, path, now_usec(CLOCK_REALTIME));
		if (r < 0)
			daemon_fail(d, FAILURE_PROMETHEUS, "Failed to write %s: %s", path,
				    output_file_strerror(r, (uid_t)-1, path, why));
		else if (r > 0)
			daemon_ok(d, FAILURE_PROMETHEUS);
	}
	r = arm_timer(s, usec + d->config->prometheus_heartbeat_usec);
	if (r < 0)
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the heartbeat timer: %s",
			    strerror(-r));
	return 0;
}

static void daemon_schedule_refresh(struct daemon *d)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC), due = d->last_refresh + d->config->coalesce_usec;
	int r;

	if (sd_event_source_get_enabled(d->refresh_timer, NULL) > 0)
		return;
	if (d->last_refresh == 0 || due <= now) {
		daemon_refresh(d);
		return;
	}
	r = arm_timer(d->refresh_timer, due);
	if (r < 0) {
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the refresh timer: %s", strerror(-r));
		daemon_refresh(d);
	}
}

/* ---- event handlers ---- */

static int on_audit_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)daemon_audit(userdata);
	return 0;
}

static int on_mount_change(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	unsigned n = 0;
	int r;

	while ((r = mnt_monitor_next_change(d->mount_monitor, NULL, NULL)) == 0)
		n++;
	if (r < 0) {
		/* The fd stays readable: carrying on would spin, and mount changes are what the
		 * daemon is for. Let the service manager restart it. */
		log_err("Failed to read the mount monitor: %s", strerror(-r));
		return sd_event_exit(d->event, r);
	}
	d->n_mount_events += n;
	if (d->tracker)
		daemon_schedule_refresh(d);
	else
		daemon_schedule_audit(d, REASON_MOUNT);
	return 0;
}

static int on_mount_events(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	int r;

	d->n_fanotify_wakeups++;
	r = mount_tracker_read_events(d->tracker);
	if (r < 0)
		daemon_stop_tracking(d, "cannot read fanotify mount events", r);
	if (r != 0)
		daemon_schedule_audit(d, REASON_MOUNT);
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
		journal_logf(LOG_INFO, fields, "udev: %s event for ptmx (seqnum %llu), auditing",
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

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;
	union {
		struct inotify_event ev;
		char raw[4096];
	} buf;
	struct watch *dir_watches[] = { &d->root_watch, &d->dev_watch, &d->pts_watch,
					&d->serving_watch };
	unsigned reasons = 0;

	for (;;) {
		ssize_t n = read(fd, &buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			int r = -errno;

			if (r == -EAGAIN)
				break;
			/* Still readable: carrying on would spin. Let the service manager restart
			 * the daemon. */
			log_err("Failed to read inotify events: %s", strerror(-r));
			return sd_event_exit(d->event, r);
		}
		for (char *p = buf.raw; p < buf.raw + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if (e->mask & IN_Q_OVERFLOW)
				reasons |= REASON_PTMX | REASON_PTS;
			else if ((e->wd == d->pts_watch.wd || e->wd == d->serving_watch.wd) &&
				 !probe_echo_consume(d, e))
				reasons |= REASON_PTS;
			else if (e->wd == d->dev_watch.wd && e->len && streq(e->name, "ptmx"))
				reasons |= REASON_PTMX;
			else if (e->wd == d->dev_watch.wd && e->len && streq(e->name, "pts"))
				reasons |= REASON_PTS;
			/* A directory on the way to the ptys changed mode or owner. */
			else if ((e->wd == d->dev_watch.wd && !e->len && (e->mask & IN_ATTRIB)) ||
				 (e->wd == d->root_watch.wd && (e->mask & IN_ATTRIB) &&
				  (!e->len || streq(e->name, "dev"))))
				reasons |= REASON_PTS;
			for (size_t i = 0; i < d->n_helper_watches; i++)
				if (e->wd == d->helper_watches[i].wd &&
				    ((e->len && streq(e->name, PT_CHOWN_NAME)) ||
				     (e->mask & IN_IGNORED))) {
					if (e->mask & IN_IGNORED)
						d->helper_watches[i].wd = -1;
					reasons |= REASON_HELPER;
				}
			/* A watched directory went away (unmounted, removed): watch anew. The
			 * IN_IGNORED of a watch the daemon replaced itself is no news. */
			if (e->mask & IN_IGNORED)
				FOREACH_ARRAY (w, dir_watches, ELEMENTSOF(dir_watches))
					if (e->wd == (*w)->wd) {
						(*w)->wd = -1;
						reasons |= REASON_PTS;
					}
			p += sizeof(struct inotify_event) + e->len;
		}
	}
	if (reasons) {
		d->n_inotify_events++;
		daemon_schedule_audit(d, reasons);
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
		holder_cache_clear(&d->holders);
		if (d->tracker)
			mount_tracker_forget(d->tracker);
		if (daemon_apply_mount_events(d) < 0)
			log_warning("Carrying on with what tracks mount changes now");
		daemon_limit_privileges(d);
		/* Newly ignored findings leave quietly: nothing was resolved. */
		(void)config_drop_ignored(d->config, &d->findings);
		/* What /dev/ptmx is now becomes the reference for ptmx-replaced. */
		ptmx_replaced_reset(&d->ptmx);
		prometheus_file_forget(&d->prometheus);
		helper_watches_setup(d);
		daemon_schedule_audit(d, REASON_RELOAD);
		daemon_apply_namespaces(d);
	}
	daemon_notify_status(d, true);
	return r;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;

	if (si->ssi_signo == SIGHUP) {
		(void)daemon_reload(d);
		return 0;
	}
	sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
	log_info(
	    "Stopping after %llu audits (wake-ups: %llu mount table, %llu fanotify, %llu udev, "
	    "%llu inotify)",
	    (unsigned long long)d->n_audits, (unsigned long long)d->n_mount_events,
	    (unsigned long long)d->n_fanotify_wakeups, (unsigned long long)d->n_udev_events,
	    (unsigned long long)d->n_inotify_events);
	if (d->tracker) {
		struct mount_tracker_stats st;

		mount_tracker_get_stats(d->tracker, &st);
		log_info("Mount tracking: %llu mount events, %llu relevant, %llu full reads of the "
			 "table, %llu re-reads of the %zu followed mounts",
			 (unsigned long long)st.events, (unsigned long long)st.relevant,
			 (unsigned long long)st.full_reads, (unsigned long long)st.refreshes,
			 st.followed);
	}
	if (d->namespaces) {
		struct ns_follower_stats st;

		ns_follower_get_stats(d->namespaces, &st);
		log_info(
		    "Mount namespaces: %zu followed, %llu appeared, %llu gone, %llu audits, "
		    "%llu walks of /proc, %llu wake-ups, %.1f CPU-ms letting go of those whose "
		    "process exited",
		    st.followed, (unsigned long long)st.appeared, (unsigned long long)st.gone,
		    (unsigned long long)st.audits, (unsigned long long)st.scans,
		    (unsigned long long)st.wakeups, (double)st.release_usec / USEC_PER_MSEC);
		if (st.unfollowed > 0 || st.passes_cut > 0)
			log_info("Mount namespaces not followed at the last walk (over the most it "
				 "follows): %zu; passes of audits cut short: %llu",
				 st.unfollowed, (unsigned long long)st.passes_cut);
	}
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* ---- setup and teardown ---- */

static int add_described(int r, sd_event_source *s, const char *description)
{
	if (r < 0)
		return r;
	return sd_event_source_set_description(s, description);
}

/* A one-shot CLOCK_MONOTONIC timer, off until armed. */
static int add_timer(struct daemon *d, sd_event_source **ret, sd_event_time_handler_t handler,
		     const char *description)
{
	int r = sd_event_add_time(d->event, ret, CLOCK_MONOTONIC, UINT64_MAX,
				  AUDIT_TIMER_ACCURACY_USEC, handler, d);

	r = add_described(r, *ret, description);
	return r < 0 ? r : sd_event_source_set_enabled(*ret, SD_EVENT_OFF);
}

static int daemon_setup_mount_monitor(struct daemon *d)
{
	int fd, r;

	d->mount_monitor = mnt_new_monitor();
	if (!d->mount_monitor)
		return log_err("Failed to create the mount monitor"), -ENOMEM;
	r = mnt_monitor_enable_kernel(d->mount_monitor, true);
	if (r < 0)
		return log_err("Failed to enable the kernel mount monitor: %s", strerror(-r)), r;
	fd = mnt_monitor_get_fd(d->mount_monitor);
	if (fd < 0)
		return log_err("Failed to get the mount monitor fd: %s", strerror(-fd)), fd;
	r = sd_event_add_io(d->event, &d->mount_source, fd, EPOLLIN, on_mount_change, d);
	r = add_described(r, d->mount_source, "mount-monitor");
	if (r < 0)
		return log_err("Failed to watch the mount table: %s", strerror(-r)), r;
	return 0;
}

static void daemon_stop_tracking(struct daemon *d, const char *why, int err)
{
	if (!d->tracker)
		return;
	log_warning("Incremental mount tracking stopped (%s: %s): re-reading the whole mount table "
		    "on every change from now on",
		    why, strerror(-err));
	d->tracker_source = sd_event_source_disable_unref(d->tracker_source);
	d->tracker = mount_tracker_free(d->tracker);
	daemon_schedule_audit(d, REASON_MOUNT);
}

/* MountEvents=: start or stop the tracker (at start and on reload). With auto, a kernel or a
 * seccomp filter that does not allow fanotify mount events or statmount() means mountinfo. */
static int daemon_apply_mount_events(struct daemon *d)
{
	enum mount_events want = d->config->mount_events;
	int r;

	if (want == MOUNT_EVENTS_MOUNTINFO) {
		if (d->tracker)
			daemon_stop_tracking(d, "MountEvents=mountinfo", -ECANCELED);
		return 0;
	}
	if (d->tracker)
		return 0;
	r = mount_tracker_new(&d->tracker);
	if (r >= 0) {
		r = sd_event_add_io(d->event, &d->tracker_source, mount_tracker_fd(d->tracker),
				    EPOLLIN, on_mount_events, d);
		r = add_described(r, d->tracker_source, "fanotify-mount-events");
		if (r < 0) {
			d->tracker_source = sd_event_source_disable_unref(d->tracker_source);
			d->tracker = mount_tracker_free(d->tracker);
		}
	}
	if (r >= 0) {
		log_info("Tracking mounts incrementally through fanotify mount events");
		return 0;
	}
	if (r == -ENOMEM || want == MOUNT_EVENTS_FANOTIFY)
		return log_err("MountEvents=%s: cannot listen to fanotify mount events: %s",
			       mount_events_to_string(want), strerror(-r)),
		       r;
	log_info(
	    "Incremental mount tracking is not available here (%s): re-reading the whole mount "
	    "table on every change",
	    strerror(-r));
	return 0;
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

static int daemon_setup_inotify(struct daemon *d)
{
	int r;

	d->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (d->inotify_fd < 0) {
		r = -errno;
		return log_warning("Failed to create an inotify instance: %s", strerror(-r)), r;
	}
	d->root_watch = (struct watch){
		.path = "/", .mask = ROOT_WATCH_MASK, .failure = FAILURE_WATCH_DEV, .wd = -1
	};
	d->dev_watch = (struct watch){
		.path = "/dev", .mask = DEV_WATCH_MASK, .failure = FAILURE_WATCH_DEV, .wd = -1
	};
	d->pts_watch = (struct watch){
		.path = "/dev/pts", .mask = PTS_WATCH_MASK, .failure = FAILURE_WATCH_PTS, .wd = -1
	};
	d->serving_watch = (struct watch){ .path = d->serving_path,
					   .mask = PTS_WATCH_MASK,
					   .failure = FAILURE_WATCH_PTS,
					   .wd = -1 };
	r = sd_event_add_io(d->event, &d->inotify_source, d->inotify_fd, EPOLLIN, on_inotify, d);
	r = add_described(r, d->inotify_source, "dev-inotify");
	if (r < 0) {
		d->inotify_source = sd_event_source_disable_unref(d->inotify_source);
		close(d->inotify_fd);
		d->inotify_fd = -EBADF;
		return log_warning("Failed to watch /dev: %s", strerror(-r)), r;
	}
	helper_watches_setup(d);
	watch_all(d);
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

int daemon_new(const struct daemon_options *opts, struct daemon **ret)
{
	_cleanup_(daemon_freep) struct daemon *d = calloc(1, sizeof(*d));
	struct config_error err;
	int r;

	if (!d)
		return log_err("Out of memory"), -ENOMEM;
	raise_open_file_limit();
	d->inotify_fd = -EBADF;
	d->root_watch.wd = d->dev_watch.wd = d->pts_watch.wd = d->serving_watch.wd = -1;
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
		return log_err("Failed to create the event loop: %s", strerror(-r)), r;

	r = sd_event_add_signal(d->event, &d->sigterm_source, SIGTERM, on_signal, d);
	r = add_described(r, d->sigterm_source, "signal-term");
	if (r >= 0)
		r = sd_event_add_signal(d->event, &d->sigint_source, SIGINT, on_signal, d);
	r = add_described(r, d->sigint_source, "signal-int");
	if (r >= 0)
		r = sd_event_add_signal(d->event, &d->sighup_source, SIGHUP, on_signal, d);
	r = add_described(r, d->sighup_source, "signal-hup");
	if (r < 0)
		return log_err("Failed to handle signals: %s", strerror(-r)), r;

	daemon_setup_journal(d);

	r = add_timer(d, &d->audit_timer, on_audit_timer, "audit-timer");
	if (r >= 0)
		r = add_timer(d, &d->refresh_timer, on_refresh_timer, "refresh-timer");
	if (r >= 0)
		r = add_timer(d, &d->holder_timer, on_holder_timer, "holder-timer");
	if (r >= 0)
		r = add_timer(d, &d->retry_timer, on_retry_timer, "output-retry-timer");
	if (r >= 0)
		r = add_timer(d, &d->heartbeat_timer, on_heartbeat_timer, "heartbeat-timer");
	if (r >= 0)
		r = arm_timer(d->heartbeat_timer,
			      now_usec(CLOCK_MONOTONIC) + d->config->prometheus_heartbeat_usec);
	if (r < 0)
		return log_err("Failed to create the timers: %s", strerror(-r)), r;

	/* Watch first, then audit: a change between the two is seen, never missed. The mount table
	 * is what matters most; without udev (a container) or inotify (its limits reached) the
	 * daemon still sees every mount change, so it carries on. */
	r = daemon_setup_mount_monitor(d);
	if (r < 0)
		return r;
	r = daemon_apply_mount_events(d);
	if (r < 0)
		return r;
	if (daemon_setup_udev_monitor(d) < 0)
		log_warning("Continuing without udev events for ptmx");
	if (daemon_setup_inotify(d) < 0)
		log_warning("Continuing without watching /dev/ptmx and /dev/pts: only mount table "
			    "changes and udev events trigger audits");

	r = sd_event_set_watchdog(d->event, true);
	if (r < 0)
		return log_err("Failed to enable the watchdog: %s", strerror(-r)), r;
	daemon_limit_privileges(d);

	*ret = TAKE_PTR(d);
	return 0;
}

int daemon_run(struct daemon *d)
{
	int r;

	(void)daemon_audit(d);
	daemon_apply_namespaces(d);
	if (startup_guard_stop(&d->startup))
		log_warning(
		    "The first audit ended %.1f s after the start, past its deadline of %llu "
		    "s: the service was reported ready (degraded) before it",
		    (double)(now_usec(CLOCK_MONOTONIC) - d->startup.start) / 1e6,
		    (unsigned long long)(STARTUP_DEADLINE_USEC / USEC_PER_SEC));
	daemon_notify_status(d, true);
	r = sd_event_loop(d->event);
	if (r < 0)
		return log_err("Event loop failed: %s", strerror(-r)), r;
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
	sd_event_source_disable_unref(d->mount_source);
	sd_event_source_disable_unref(d->tracker_source);
	sd_event_source_disable_unref(d->udev_source);
	sd_event_source_disable_unref(d->inotify_source);
	sd_event_source_disable_unref(d->audit_timer);
	sd_event_source_disable_unref(d->refresh_timer);
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
	host_serving_done(&d->host);
	sd_event_unref(d->event);
	mnt_unref_monitor(d->mount_monitor);
	mount_tracker_free(d->tracker);
	udev_monitor_unref(d->udev_monitor);
	udev_unref(d->udev);
	helper_watches_clear(d);
	if (d->inotify_fd >= 0)
		close(d->inotify_fd);
	holder_cache_clear(&d->holders);
	findings_clear(&d->findings);
	d->repaired_keys = strv_free(d->repaired_keys);
	d->tried_keys = strv_free(d->tried_keys);
	ptmx_replaced_reset(&d->ptmx);
	config_free(d->config);
	free(d->config_path);
	free(d->serving_path);
	for (size_t i = 0; i < _FAILURE_MAX; i++)
		free(d->failures[i]);
	free(d->status);
	prometheus_file_forget(&d->prometheus);
	free(d);
	return NULL;
}
