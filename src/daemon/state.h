/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's daemon as daemon.c (the loop, its sources, scheduling, reloads) and host-audit.c
 * (one audit of the host) share it: struct daemon. The namespace follower and the other modules
 * below them keep their own state.
 */
#pragma once

#include <stdint.h>
#include <syslog.h>

#include "checks/ptmx-replaced.h"
#include "daemon/holder-cache.h"
#include "daemon/log-once.h"
#include "daemon/policy.h"
#include "daemon/startup-guard.h"
#include "config/conf.h"
#include "pipeline/pipeline.h"
#include "report/journal.h"
#include "report/outputs.h"
#include "report/transitions.h"
#include "util/clock.h"
#include "util/systemd-dl.h"

/* Recurring failures are logged once each, until the operation succeeds again. */
enum failure {
	FAILURE_AUDIT,
	FAILURE_JOURNAL,
	FAILURE_STATE_FILE,
	FAILURE_PROMETHEUS,
	FAILURE_TIMER,
	_FAILURE_MAX,
};

struct daemon {
	uint64_t detected_total[_SEVERITY_MAX];
	/* The last transition journaled, for the state file (ptsguard status); at 0: none yet.
	 * Its strings are the catalog's and the transition names': static. */
	struct report_transition last_transition; /* Prometheus ptsguard_findings_total */
	sd_event *event;
	sd_event_source *sigterm_source, *sigint_source, *sighup_source;
	sd_event_source *udev_source, *audit_timer, *holder_timer, *retry_timer;
	sd_event_source *heartbeat_timer; /* the Prometheus textfile's heartbeat */
	uint64_t retry_usec; /* the current output retry interval; 0 when the files are written */

	struct mount_source *mounts; /* the mountinfo poll, maybe the tracker (mount-source.h) */
	struct udev *udev;
	struct udev_monitor *udev_monitor;
	struct dev_watches *watches; /* inotify on /, /dev, /dev/pts... (daemon/watches.h) */

	char *config_path;
	bool no_probe; /* --no-probe: over what the configuration says */
	struct config *config;

	struct schedule audits;
	bool last_audit_full; /* it read the whole table (always, without the tracker) */
	uint64_t n_audits, n_udev_events;
	/* Audits in a row set aside because /dev/ptmx changed while they looked at it
	 * (daemon_audit()). */
	unsigned torn_audits;

	struct holder_cache holders;
	/* Whether the search for holders may be put off until after an audit's outputs
	 * (daemon/policy.h). */
	struct holder_pacing holder_pacing;
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
	 * is a mount event too); one that changed is (daemon/policy.h). */
	char **tried_keys;

	struct ptmx_replaced ptmx;	    /* /dev/ptmx against its baseline */
	struct ptmx_udev_event udev_window; /* the last ptmx udev event since the last audit */

	struct log_once failures[_FAILURE_MAX];
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

/* Log a failure once, not on every audit while it lasts; the operation worked: its next failure
 * is logged again. */
#define daemon_fail(d, what, ...) log_once_fail(&(d)->failures[what], __VA_ARGS__)
#define daemon_ok(d, what)	  log_once_ok(&(d)->failures[what])
