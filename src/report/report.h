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

struct report_namespace;

/* What a command's filters leave out of its report: findings below --min-severity, and the
 * checks --check did not name or --ignore did. A filtered finding is left out of every output,
 * never shown as absent: its check's Prometheus series is not written, and the text says how
 * many were not shown. */
struct report_filter {
	enum severity min_severity;
	/* By catalog index (check_catalog[]): the check is left out; NULL: none is. */
	const bool *excluded;
};

/* The index of c in check_catalog[]. */
size_t check_catalog_index(const struct check_info *c);
/* Drop (and free) the findings filter leaves out of f; count them by severity in hidden[] (added
 * to what it holds) and, when hidden_checks is not NULL, set their checks' entries there (by
 * catalog index). */
void report_filter_apply(const struct report_filter *filter, struct findings *f,
			 size_t hidden[static _SEVERITY_MAX], bool *hidden_checks);

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
	/* The daemon's last transition journaled (CLOCK_REALTIME microseconds, the check, what
	 * happened to it: detected, resolved, repaired...); NULL: none yet, or not the daemon's. */
	const struct report_transition {
		uint64_t at;
		const char *check, *state, *severity;
	} * last_transition;
	/* The daemon that writes this state file; 0: not the daemon's. */
	pid_t daemon_pid;
	/* Other mount namespaces judged beside the host (audit --namespace, --all-namespaces): the
	 * report's "namespaces" array; NULL: no such key. */
	const struct report_namespace *namespaces;
	size_t n_namespaces;
	/* The filters applied to findings (NULL: none, the daemon's report), how many findings
	 * they left out by severity, and (NULL: unknown) by catalog index which checks had one. */
	const struct report_filter *filter;
	size_t hidden[_SEVERITY_MAX];
	const bool *hidden_checks;
	/* Text: other namespaces are written after this report (--all-namespaces), so its first
	 * line's verdict is the host's alone. */
	bool namespaces_follow;
};

/* One element of "namespaces": which namespace, who made it, and its own report (whose own
 * namespaces are ignored). container_manager NULL: "container" is null. */
struct report_namespace {
	uint64_t mntns;
	pid_t pid;
	unsigned pids_total;
	/* A chroot inside the namespace, judged on its own root: that root's path as seen in the
	 * namespace (untrusted text, escaped where printed); NULL: the namespace's own root. */
	const char *root;
	/* The auditor's own mount namespace and root directory: the host itself, which repair
	 * --namespace acts on only with --allow-own-namespace. A chroot of the host is not own: it
	 * is repaired inside its root. */
	bool own;
	/* What pins it for repair --namespace --target (probe/namespace-handle.h: its namespace,
	 * root and process start time); NULL: not printed. */
	const char *target;
	const char *container_manager, *container_id, *container_name;
	const char *container_pod_uid; /* its Kubernetes pod's uid, or NULL */
	const char *comm;	       /* the process's name, for the text header; may be NULL */
	/* Why it could not be judged (an error of its own, never the run's): report is then
	 * empty, and the JSON item says "report": null and "error". NULL: judged. */
	const char *error;
	struct report report;
};

/* The exit status over the host's findings and every namespace's (the worst). */
int report_exit_status_all(const struct report *r);

json_object *report_to_json(const struct report *r);
/* The same report's text (pretty, with a newline) written to f with no tree: 0 or -errno. */
int report_write_json(FILE *f, const struct report *r);
/* The same text in memory, NULL when out of memory. */
char *report_to_text(const struct report *r);
/* { mntns, [root,] pid, [target,] pids_total, container, report }: one item of a report's
 * namespaces[], its text written to f as it sits at that nesting level of an enclosing text, no
 * newline after it. 0 or -errno. */
int report_namespace_write_json(FILE *f, const struct report_namespace *n, int level);
/* The container as one label: "<manager>/<name>", else "<manager>/<id>" (a 64-digit id cut to
 * 12), else "<manager>"; "" when none. The pod is not in it. */
#define CONTAINER_LABEL_MAX 256
void report_container_label(const struct report_namespace *n, char *buf, size_t size);
/* Whether a report has nothing to show: no finding, none left out by a filter either (then it is
 * one of "N other namespaces: no findings"). */
bool report_clean(const struct report *r);
/* One block for a namespace: a header naming its container, /dev/ptmx, its findings. */
int report_write_namespace_text(FILE *f, const struct report_namespace *n, bool color);
/* "N other namespaces: no findings". */
void report_write_namespaces_clean(FILE *f, size_t clean);
int report_write_text(FILE *f, const struct report *r, bool color);
int report_write_prometheus(FILE *f, const struct report *r);
/* The series of other namespaces, collected while each is audited and written beside the
 * host's (a metric's series must stay together): their findings present, by check, and their
 * counts by severity, each labelled with mntns and container. */
struct prometheus_namespaces {
	FILE *finding, *findings; /* open_memstream()s */
	char *finding_text, *findings_text;
	size_t finding_size, findings_size;
};
int prometheus_namespaces_init(struct prometheus_namespaces *p);
int prometheus_namespaces_add(struct prometheus_namespaces *p, const struct report_namespace *n);
void prometheus_namespaces_done(struct prometheus_namespaces *p);
int report_write_prometheus_all(FILE *f, const struct report *r, struct prometheus_namespaces *ns);

/* 0, 1 or 2 by the worst finding (monitoring-plugin convention). */
int report_exit_status(const struct findings *f);

/* The exposition of an audit that could not run: ptsguard_build_info, ptsguard_audit_success 0
 * and ptsguard_audit_error{reason} 1. reason is a word of ours ("configuration", "snapshot",
 * "probe", "namespace"). */
int report_write_prometheus_failed(FILE *f, const char *reason);

/* The monitoring-plugin line (Nagios, Icinga, NRPE, node-problem-detector): one line,
 * "PTSGUARD <OK|WARNING|CRITICAL|UNKNOWN> - <summary> | critical=N warning=N info=N". Its
 * findings are collected over the host and every namespace, then written once. */
struct plugin_summary {
	size_t counts[_SEVERITY_MAX]; /* findings shown, by severity */
	size_t hidden;		      /* findings the filters left out */
	size_t failed;		      /* namespaces that could not be judged */
	int *worst;		      /* by catalog index: the worst severity found, or -1 */
};
int plugin_summary_init(struct plugin_summary *p);
void plugin_summary_add(struct plugin_summary *p, const struct report *r);
void plugin_summary_done(struct plugin_summary *p);
/* The line for status (0-3, the exit status). */
int report_write_plugin(FILE *f, const struct plugin_summary *p, int status);
/* The line of an audit that could not run: "PTSGUARD UNKNOWN - <why>", no performance data
 * (nothing was counted). why is made one line, '|' replaced. */
int report_write_plugin_failed(FILE *f, const char *why);
