/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The audits of the mount namespaces followed (daemon/nsfollow-internal.h): a pass over those
 * that changed, within its budget; one namespace's audit with its holders and its container;
 * its transitions journaled. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "daemon/nsfollow-internal.h"
#include "pipeline/namespace-audit.h"
#include "probe/probe.h"
#include "report/report.h"
#include "report/transitions.h"
#include "util/clock.h"
#include "util/escape.h"
#include "util/log.h"

/* Its container, looked for once, when it is first audited: a runtime moves a container's
 * process into its cgroup after creating its namespace, and a walk of /proc may come between. */
static void followed_set_container(struct followed_ns *x, struct namespace_audit *a)
{
	struct report_namespace n;

	x->labelled = true;
	/* A chroot's path, once: what its entries say it was at when found. */
	if (x->chroot && a->chroot &&
	    asprintf(&x->root_field, "PTSGUARD_ROOT=%s", a->target->root_path ?: "?") < 0)
		x->root_field = NULL;
	namespace_audit_attribute(a);
	n = namespace_audit_report(a, 0);
	report_container_label(&n, x->label, sizeof(x->label));
	snprintf(x->container_field, sizeof(x->container_field), "PTSGUARD_CONTAINER=%s", x->label);
}

static void journal_transitions(struct ns_follower *f, struct followed_ns *x,
				const struct findings *before, const struct findings *now)
{
	_cleanup_(transitions_done) struct transitions t = { 0 };
	const char *buf[4];
	const char *const *fields = followed_fields(x, buf);
	char name[PATH_MAX + 64], context[CONTAINER_LABEL_MAX + PATH_MAX + 128];

	followed_name(x, name, sizeof(name));
	if (x->label[0])
		snprintf(context, sizeof(context), "%s, %s", x->label, name);
	else
		snprintf(context, sizeof(context), "%s", name);
	if (transitions_diff(before, now, NULL, &t) < 0)
		return;
	FOREACH_ARRAY (e, t.items, t.n_items) {
		e->context = context;
		e->context_fields = fields;
		f->on_transition(f->userdata, e);
	}
}

/* Its holders among its processes of the last walk, searched anew at each audit (no maximum
 * age: an audit of a namespace comes from a change in it), a slice at a time. */
static int followed_holders(void *userdata, struct snapshot *s, const struct analysis *a)
{
	struct followed_ns *x = userdata;
	struct holder_scope where = {
		.proc = "/proc", .pids = x->pids, .n_pids = x->pids_total, .mntns = x->ino
	};
	int r;

	r = holder_cache_fill(&x->holders, s, a, &where, now_usec(CLOCK_MONOTONIC), 0,
			      HOLDER_SCAN_SLICE_USEC);
	if (r < 0)
		return r;
	x->holders_partial = r == HOLDERS_PARTIAL;
	return 0;
}

/* One namespace's audit; its transitions journaled. The target is opened for the audit only
 * (a few descriptors): the pidfd held says the pid is still the process followed. */
static void followed_audit(struct ns_follower *f, struct followed_ns *x)
{
	_cleanup_(namespace_audit_done) struct namespace_audit a = { 0 };
	struct audit_target target = { .probe.host = &f->host,
				       .holders = followed_holders,
				       .userdata = x };
	char why[sizeof(a.err.message) + 64];
	uint64_t cpu;
	int r;

	x->dirty = false;
	if (x->pid == 0)
		return;
	cpu = cpu_usec_with_children();
	r = namespace_audit_open(
	    &a, x->pid, x->ino,
	    &(struct namespace_root){ .dev = x->root_dev, .ino = x->root_ino, .chroot = x->chroot },
	    x->pidfd);
	if (r >= 0 && !x->labelled)
		followed_set_container(x, &a);
	/* The allocation probe too: its pty comes and goes in the namespace's /dev/pts, which
	 * this follower does not watch (only its /dev), so it wakes no audit of the namespace. */
	if (r >= 0)
		r = namespace_audit_run(&a, &target, f->config);
	f->stats.audit_usec += cpu_usec_with_children() - cpu;
	if (r < 0) {
		if (r != -ESRCH) {
			const char *buf[4];
			char name[PATH_MAX + 64];
			_cleanup_free_ char *escaped = NULL;

			followed_name(x, name, sizeof(name));
			escaped = cescape(name);
			log_fields(LOG_WARNING, followed_fields(x, buf),
				   "Cannot audit %s (pid %d): %s", escaped ?: "?", (int)x->pid,
				   namespace_audit_why(&a, r, why, sizeof(why)));
		}
		return;
	}
	f->stats.audits++;
	/* Its holder search goes on at the next pass. */
	if (x->holders_partial) {
		x->dirty = true;
		follower_schedule_pass(f);
	}
	journal_transitions(f, x, &x->findings, &a.result.findings);
	findings_done(&x->findings);
	x->findings = a.result.findings;
	a.result.findings = (struct findings){ 0 };
}

int follower_on_audit_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ns_follower *f = userdata;
	struct ns_pass pass;

	/* Which namespaces this pass audits, where it stops and resumes: daemon/policy.h. */
	ns_pass_begin(&pass, now_usec(CLOCK_MONOTONIC));
	schedule_start(&f->passes, pass.start);
	for (size_t k = 0; k < f->n; k++) {
		size_t i = ns_pass_index(f->next_audit, k, f->n);
		struct followed_ns *x = f->items[i];
		enum ns_pass_step step =
		    ns_pass_next(&pass, i, x->dirty, x->found, now_usec(CLOCK_MONOTONIC));

		if (step == NS_PASS_STOP) {
			f->next_audit = pass.resume;
			break;
		}
		if (step == NS_PASS_AUDIT)
			followed_audit(f, x);
	}
	schedule_end(&f->passes, now_usec(CLOCK_MONOTONIC));
	if (pass.cut) {
		f->stats.passes_cut++;
		follower_schedule_pass(f);
	}
	if (pass.settled > 0)
		(void)timer_arm_earliest(f->audit_timer, pass.settled);
	return 0;
}
