/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The files a long-running audit keeps up to date, and its one-line status:
 *
 * - the state file: the JSON report (indented), replaced atomically (a reader
 *   sees the old report or the new one, never part of one), mode 0644;
 * - the Prometheus textfile: same atomicity, rewritten at once when the ids or
 *   severities of the findings changed, else at most once per
 *   PROMETHEUS_REFRESH_USEC (so the audit's own gauges stay fresh without a
 *   write per mount event); and between audits (PrometheusHeartbeatSec=)
 *   with the same series and a new ptsguard_daemon_heartbeat_timestamp_seconds,
 *   so that a textfile left behind by a daemon that stopped can be told from the
 *   one of a quiet host whose last audit is old and still current;
 * - after an audit that could not run, the textfile says so (ptsguard_audit_success 0)
 *   until one runs again, rather than keep an older audit's series current;
 * - the status text for sd_notify STATUS=.
 *
 * Each file's directory is created when missing (not its parents), and
 * written through util/output-file.h: no symlink on the way, a directory of
 * root's, and only an absent path or a regular file replaced (anything else is
 * refused and left as it is, -EEXIST). They return negative errno, with what
 * output_file_strerror() needs in *err, and do not log.
 */
#pragma once

#include <stdint.h>

#include "checks/checks.h"
#include "report/report.h"
#include "util/output-file.h"

#define PROMETHEUS_REFRESH_USEC (1000000ULL)

int state_file_write(const char *path, const struct report *rep, struct output_file_error *err);

/* What the last write of a textfile was, to tell whether the next one is due. */
struct prometheus_file {
	char *signature;  /* findings_signature() of the report written */
	char *series;	  /* the report's series as written, without the heartbeat */
	uint64_t written; /* CLOCK_MONOTONIC, microseconds */
};

/* Write rep to path unless the last write had the same signature and is younger than
 * PROMETHEUS_REFRESH_USEC at now (CLOCK_MONOTONIC). 1 written, 0 not due, or negative errno
 * (then the next call writes). */
int prometheus_file_update(struct prometheus_file *p, const char *path, const struct report *rep,
			   uint64_t now, struct output_file_error *err);
/* Write the series of the last update again with the heartbeat at now (CLOCK_REALTIME,
 * microseconds): 1 written, 0 when nothing was written yet, or negative errno. */
int prometheus_file_heartbeat(struct prometheus_file *p, const char *path, uint64_t now,
			      struct output_file_error *err);
/* An audit that could not run: write report_write_prometheus_failed()'s series (reason) with the
 * heartbeat at once; the heartbeats after it repeat them, and the next update writes whatever
 * the findings. now as for prometheus_file_update(). 1 written, or negative errno. */
int prometheus_file_failed(struct prometheus_file *p, const char *path, const char *reason,
			   uint64_t now, struct output_file_error *err);
/* Make the next update write whatever the findings (and free). */
void prometheus_file_forget(struct prometheus_file *p);
