/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Report sinks: the JSON report of docs/report.md, text for people, and
 * Prometheus text exposition. They format; none of them decides anything.
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "snapshot/snapshot.h"

struct report {
	const struct snapshot *snap;
	const struct analysis *a;
	const struct findings *findings;
	const char *source;    /* "live" or "snapshot" */
	uint64_t generated_at; /* CLOCK_REALTIME, microseconds */
	double duration;       /* seconds the audit took */
	/* Findings detected since the process started, by severity (the daemon counts its
	 * transitions); NULL: the findings of this report (a one-shot audit). */
	const uint64_t *detected_total;
	/* The daemon's way to the journal: entries waiting for journald, and those dropped since
	 * the start; NULL: not reported (a one-shot audit). */
	const struct journal_stats {
		uint64_t queued, dropped;
	} * journal;
};

json_object *report_to_json(const struct report *r);
int report_write_text(FILE *f, const struct report *r, bool color);
int report_write_prometheus(FILE *f, const struct report *r);

/* 0, 1 or 2 by the worst finding (monitoring-plugin convention). */
int report_exit_status(const struct findings *f);
