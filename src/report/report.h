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
	/* Other mount namespaces judged beside the host (audit --namespace, --all-namespaces): the
	 * report's "namespaces" array; NULL: no such key. */
	const struct report_namespace *namespaces;
	size_t n_namespaces;
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
