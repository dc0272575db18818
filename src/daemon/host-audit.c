/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One audit of the host (daemon/host-audit.h): it carries out what daemon/policy.h decides. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#include "daemon/host-audit.h"
#include "daemon/mount-source.h"
#include "daemon/nsfollow.h"
#include "daemon/policy.h"
#include "daemon/timer.h"
#include "daemon/watches.h"
#include "repair/session.h"
#include "report/journal-queue.h"
#include "report/report.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/output-file.h"
#include "util/strv.h"
#include "util/string-util.h"
#include "util/systemd-dl.h"

void daemon_log_transition(struct daemon *d, const struct transition_event *e)
{
	const struct finding *f = e->finding;
	int r;

	if (e->transition == TRANSITION_DETECTED && f->severity < _SEVERITY_MAX)
		d->detected_total[f->severity]++;
	d->last_transition = (struct report_transition){
		.at = now_usec(CLOCK_REALTIME),
		.check = f->check->id,
		.state = transition_to_string(e->transition),
		.severity = severity_to_string(f->severity),
	};
	r = journal_log_transition(e);
	if (r >= 0)
		daemon_ok(d, FAILURE_JOURNAL);
	else
		daemon_fail(d, FAILURE_JOURNAL, "Failed to log %s %s: %s", f->check->id,
			    transition_to_string(e->transition), strerror(-r));
}

/* Audit again later, backing off as output_retry_next() says: an output that could not be
 * written, or an audit that could not run (a mount table back as the last audit that ran saw it
 * wakes no audit of its own). */
static void daemon_retry_later(struct daemon *d)
{
	int r;

	d->retry_usec = output_retry_next(d->retry_usec, true);
	r = timer_arm(d->retry_timer, now_usec(CLOCK_MONOTONIC) + d->retry_usec);
	if (r < 0)
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the output retry timer: %s",
			    strerror(-r));
}

int daemon_log_transitions(struct daemon *d, const struct findings *now)
{
	_cleanup_(transitions_done) struct transitions t = { 0 };
	int r;

	r = transitions_diff(&d->findings, now, d->repaired_keys, &t);
	if (r < 0)
		return r;
	FOREACH_ARRAY (e, t.items, t.n_items)
		daemon_log_transition(d, e);

	/* A repaired finding that is still (or again) present is tracked like any other. */
	d->repaired_keys = strv_free(d->repaired_keys);
	return 0;
}

/* Is a failed write worth the retry timer's audits (a full /run frees itself)? Not a path that
 * is refused for what it is (a device, a FIFO...), which no retry changes: the next audit an
 * event brings tries it again. */
static bool output_retry_helps(int r)
{
	return r < 0 && r != -EEXIST && r != -ENXIO;
}

static void daemon_write_outputs(struct daemon *d, const struct report *rep)
{
	const struct config *c = d->config;
	bool failed = false;
	char why[OUTPUT_FILE_WHY_MAX];
	struct output_file_error err;
	int r;

	if (c->state_file) {
		r = state_file_write(c->state_file, rep, &err);
		if (r >= 0)
			daemon_ok(d, FAILURE_STATE_FILE);
		else
			daemon_fail(d, FAILURE_STATE_FILE, "Failed to write %s: %s", c->state_file,
				    output_file_strerror(r, &err, c->state_file, why));
		failed = failed || output_retry_helps(r);
	}

	if (c->prometheus_file) {
		r = prometheus_file_update(&d->prometheus, c->prometheus_file, rep,
					   now_usec(CLOCK_MONOTONIC), &err);
		if (r < 0)
			daemon_fail(d, FAILURE_PROMETHEUS, "Failed to write %s: %s",
				    c->prometheus_file,
				    output_file_strerror(r, &err, c->prometheus_file, why));
		else if (r > 0)
			daemon_ok(d, FAILURE_PROMETHEUS);
		failed = failed || output_retry_helps(r);
	}

	d->retry_usec = output_retry_next(d->retry_usec, failed);
	if (d->retry_usec == 0) {
		(void)sd_event_source_set_enabled(d->retry_timer, SD_EVENT_OFF);
		return;
	}
	daemon_retry_later(d);
}

void daemon_notify_status(struct daemon *d, bool ready)
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

/* Holders of covered instances, from the holder cache while it applies; a timer audits again
 * when a fresh scan expires, or at once while a search is under way. Whether the search is put
 * off, and when the timer fires: daemon/policy.h. */
static int daemon_holders(struct daemon *d, struct snapshot *s, const struct analysis *a)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC), max_age = d->config->holder_rescan_usec;
	bool put_off = holder_pacing_put_off(&d->holder_pacing, d->holders.pass.started);
	int r, k;

	r = holder_cache_fill(&d->holders, s, a, &(struct holder_scope){ .proc = "/proc" }, now,
			      max_age, put_off ? 0 : HOLDER_SCAN_SLICE_USEC);
	if (r < 0)
		return r;
	k = timer_apply(d->holder_timer,
			holder_pacing_after(&d->holder_pacing, put_off, r, now, max_age));
	if (k < 0)
		daemon_fail(d, FAILURE_TIMER, "Failed to arm the holder timer: %s", strerror(-k));
	return 0;
}

static int daemon_holders_cb(void *userdata, struct snapshot *s, const struct analysis *a)
{
	return daemon_holders(userdata, s, a);
}

/* The daemon's own check: /dev/ptmx against its baseline, with the udev event of the window. */
static int daemon_transitions_cb(void *userdata, const struct analysis *a, struct findings *out)
{
	struct daemon *d = userdata;

	return ptmx_replaced_check(&d->ptmx, a, &d->udev_window, out);
}

/* An audit that could not run (logged): the textfile says so, ptsguard_audit_success 0, until
 * one runs again; its heartbeats go on. */
static void daemon_prometheus_failed(struct daemon *d)
{
	const char *path = d->config->prometheus_file;
	struct output_file_error err;
	char why[OUTPUT_FILE_WHY_MAX];
	int r;

	if (!path)
		return;
	r = prometheus_file_failed(&d->prometheus, path, "probe", now_usec(CLOCK_MONOTONIC), &err);
	if (r < 0)
		daemon_fail(d, FAILURE_PROMETHEUS, "Failed to write %s: %s", path,
			    output_file_strerror(r, &err, path, why));
	else
		daemon_ok(d, FAILURE_PROMETHEUS);
}

int daemon_collect(struct daemon *d, struct audit_result *ret)
{
	struct audit_target t = {
		.probe = { .need_unique_ids = mount_source_unique_ids(d->mounts),
			   .last_healthy = &d->last_healthy },
		.holders = daemon_holders_cb,
		.transitions = daemon_transitions_cb,
		.userdata = d,
	};
	struct parse_error perr;
	int r;

	r = mount_source_table(d->mounts, &t.probe.mounts);
	if (r < 0)
		return daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s", strerror(-r)), r;
	d->last_audit_full = r > 0;
#if PTSGUARD_TEST_HOOKS
	/* Tests: the pipeline fails for as long as the file this names exists. */
	const char *fail = getenv("PTSGUARD_TEST_FAIL_AUDIT");

	if (fail && access(fail, F_OK) == 0) {
		/* As the pipeline would: the table it takes over is freed on failure too. */
		t.probe.mounts = mount_table_free(t.probe.mounts);
		return daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s (test hook)", strerror(EIO)),
		       -EIO;
	}
#endif
	r = pipeline_run(&t, d->config, ret, &perr);
	if (r == -EINVAL && perr.line)
		daemon_fail(d, FAILURE_AUDIT, "Cannot audit: /proc/self/mountinfo line %u: %s",
			    perr.line, perr.message);
	else if (r < 0)
		daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s", strerror(-r));
	if (r < 0)
		return r;

	r = mount_source_follow(d->mounts, ret->a);
	if (r < 0) {
		audit_result_done(ret);
		daemon_fail(d, FAILURE_AUDIT, "Cannot audit: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* The serving instance healthy now (gid= the tty group, a healthy mode under the policy) is what
 * a later repair of it restores; the state file carries what was last seen so. */
static void daemon_note_healthy(struct daemon *d, const struct audit_result *now)
{
	const struct instance *in = now->a->serving;

	if (in && !in->gid_unmapped)
		devpts_seen_healthy_note(&d->last_healthy, &d->config->check_policy, in->dev,
					 &in->options, now->snap->tty_gid);
	now->snap->last_healthy = d->last_healthy;
}

/* The repair session's audit after acting: the daemon's own. */
static int daemon_repair_audit(void *userdata, struct audit_result *ret)
{
	return daemon_collect(userdata, ret);
}

static void daemon_repair_journal_failed(void *userdata, int r)
{
	struct daemon *d = userdata;

	daemon_fail(d, FAILURE_JOURNAL, "Failed to log a repair: %s", strerror(-r));
}

/*
 * Repair the repairable findings of this audit not tried yet in their present appearance (one
 * repair session, repair/session.h: outcomes journaled, re-audited), and journal the transitions
 * from what was found to what is left, leaving that in *now. Returns 1 when something was tried
 * (the re-audit may have found what the repair exposed), 0 when there was nothing to try.
 */
static int daemon_repair(struct daemon *d, struct audit_result *now)
{
	struct repair_session s = {
		.config = d->config,
		.repairable_only = true,
		.audit = daemon_repair_audit,
		.journal_failed = daemon_repair_journal_failed,
		.userdata = d,
	};
	struct findings fresh = { 0 };
	int r;

	r = repair_tries_prune(&d->tried_keys, &now->findings);
	if (r >= 0)
		r = repair_tries_select(&d->tried_keys, &now->findings, &fresh);
	if (r < 0)
		return r;
	if (fresh.n_items == 0) {
		free(fresh.items);
		return 0;
	}
	r = repair_session_run(&s, now->a, &fresh);
	if (r < 0)
		goto out;
	strv_free(d->repaired_keys);
	d->repaired_keys = TAKE_PTR(s.repaired_keys);

	/* What the repair left is now the state: log the transitions from this audit to it. */
	findings_done(&d->findings);
	d->findings = now->findings;
	now->findings = (struct findings){ 0 };
	r = daemon_log_transitions(d, &s.after.findings);
	if (r >= 0) {
		struct audit_result before = *now;

		*now = s.after;
		s.after = before;
		r = 1;
	}
out:
	repair_session_done(&s);
	free(fresh.items);
	return r;
}

int daemon_audit(struct daemon *d, unsigned *ret_reasons)
{
	_cleanup_(audit_result_done) struct audit_result now = { 0 };
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	struct report rep;
	enum repair_round_next step = REPAIR_ROUND_DONE;
	bool set_aside = false;
	unsigned woken = 0;
	int r;

	d->n_audits++;
	schedule_start(&d->audits, t0);
	/* Before the probe too: what changes in a directory from here on wakes another audit. */
	dev_watches_update(d->watches);

	r = daemon_collect(d, &now);
	if (r < 0) {
		daemon_prometheus_failed(d);
		daemon_retry_later(d);
		goto done;
	}
	dev_watches_expect_probe(d->watches, &now.snap->probe);
	daemon_ok(d, FAILURE_AUDIT);
	dev_watches_follow_serving(d->watches, now.a);
	/* /dev/ptmx replaced while this audit looked: its node and the probe's open may have met
	 * two different ones (the old node judged healthy, the new one failing the probe: a
	 * critical pty-allocation-fails for one audit). The change asks for the next audit,
	 * which reports instead; a few in a row at most, and only root can replace it. */
	woken = dev_watches_read_now(d->watches);
	set_aside = torn_audit_set_aside(&d->torn_audits, woken);
	if (set_aside) {
		log_debug("/dev/ptmx changed during the audit: auditing again before reporting");
		goto done;
	}

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
		unsigned round = 0;

		do {
			r = daemon_repair(d, &now);
			if (r < 0)
				goto done;
			step = repair_round_next(round++, r > 0);
		} while (step == REPAIR_ROUND_AGAIN);
	} else
		d->tried_keys = strv_free(d->tried_keys);

	findings_done(&d->findings);
	d->findings = now.findings;
	now.findings = (struct findings){ 0 };
	d->holder_pacing.judged_without_holders = now.snap->n_holders == 0;
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
		.last_transition = d->last_transition.at ? &d->last_transition : NULL,
		.daemon_pid = getpid(),
	};
	daemon_write_outputs(d, &rep);
	daemon_notify_status(d, false);

done:
	/* An audit set aside leaves the udev event of its window to the next one. */
	if (!set_aside)
		d->udev_window = (struct ptmx_udev_event){ 0 };
	schedule_end(&d->audits, now_usec(CLOCK_MONOTONIC));
	/* What the events read just now ask for, as the event loop would have; and one more audit
	 * when repair's rounds ran out while each still changed something. */
	*ret_reasons = woken | (step == REPAIR_ROUND_NEXT_AUDIT ? REASON_REPAIR : 0);
	/* A whole table was just freed: give its pages back rather than keep the peak. */
	if (d->last_audit_full)
		(void)malloc_trim(0);
	return r < 0 ? r : 0;
}
