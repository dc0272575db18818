/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The audit pipeline, the one way every command and the daemon turn a system into findings: a
 * target (the live system, or a snapshot taken elsewhere) and a resolved configuration in; the
 * snapshot, its analysis and the findings out.
 *
 *   configuration -> allocation probe started -> probe_base -> analysis -> its answer
 *                 -> probe_details -> checks -> transition checks -> [Ignore] -> order
 *
 * The configuration is applied before anything is read (TTYGroup= is the tty group the probe
 * records, [Probe] whether and as whom the allocation probe runs); the analysis of the first
 * pass says which instance serves /dev/ptmx, and so which slaves and holders the second pass
 * reads. Given a worker, the allocation probe runs there while the first pass reads; a lone
 * audit runs it at "its answer", in a guarded child (see snapshot_stage()). For a snapshot the
 * probe passes are skipped. It never logs: the caller says what went wrong.
 */
#pragma once

#include "checks/checks.h"
#include "config/conf.h"
#include "probe/probe.h"

struct audit_target {
	/* A snapshot to audit (taken over, also on failure), or NULL for the live system. */
	struct snapshot *snapshot;
	/* The live system: what to read. probe.mounts is taken over, also on failure. */
	struct probe_options probe;
	/* When set, called instead of the /proc scan for holders of covered instances (the
	 * daemon keeps a scan for a while); probe.skip_holders is implied. */
	int (*holders)(void *userdata, struct snapshot *s, const struct analysis *a);
	void *userdata;
	/* The guarded worker the allocation probe runs in (util/guarded-child.h), kept across
	 * the audits of a run; NULL: a guarded child of its own (one probe). */
	struct guarded_worker *probe_worker;
	/* Stop once the snapshot is complete and analysed: no checks (snapshot,
	 * initramfs-record). */
	bool snapshot_only;
	/* When set, called (with userdata) after the checks to add the findings of the checks
	 * raised on a change (check_info.transition), which only a long-lived caller can run:
	 * Ignore= and the order of the findings apply to them as to the others. */
	int (*transitions)(void *userdata, const struct analysis *a, struct findings *out);
};

/* One look at a system: what the reports, the repairs and the daemon's sinks work from. */
struct audit_result {
	struct snapshot *snap;
	struct analysis *a;
	struct findings findings; /* ordered (findings_sort()), Ignore= applied */
};

/* The host's serving instance from an analysis of the caller's own namespace (probe.host of a
 * namespace audit): known is false when nothing serves /dev/ptmx there. */
int host_serving_from_analysis(const struct analysis *a, struct host_serving *ret);
void host_serving_done(struct host_serving *h);

/* Run the pipeline; c may be NULL (the built-in defaults). On -EINVAL from the live mount table,
 * *err names the mountinfo line at fault. On failure *ret is left empty.
 *
 * A namespace (t->probe.ns, opened by the caller; every command and the daemon go through
 * pipeline/namespace-audit.h): the same pipeline, judged in its own terms (probe/namespace.h);
 * t->probe.host is the host's serving instance (NULL: read here, one probe pass of the caller's
 * namespace). -ESRCH: the process does not exist, or exited before the audit was complete;
 * -EACCES/-EPERM: not allowed to read it. */
int pipeline_run(const struct audit_target *t, const struct config *c, struct audit_result *ret,
		 struct parse_error *err);
void audit_result_done(struct audit_result *r);

/* Ignore= of c on findings kept from an earlier run (a reload: the newly ignored leave quietly,
 * nothing was resolved); pipeline_run() applies it to its own. The order stays. */
int pipeline_apply_ignore(const struct config *c, struct findings *f);
