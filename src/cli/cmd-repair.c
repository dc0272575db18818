/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard repair`: probe, plan, act, re-probe, verify (repair.h), then
 * report the state after repair with the actions taken, and journal each
 * outcome. Exit status is that of the state after repair.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "cli/cli.h"
#include "report/journal.h"
#include "repair/outcomes.h"
#include "repair/repair.h"
#include "report/report.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/util.h"

struct audit_state {
	struct snapshot *snap;
	struct analysis *a;
	struct findings findings;
};

static void audit_state_clear(struct audit_state *s)
{
	findings_clear(&s->findings);
	s->a = analysis_free(s->a);
	s->snap = snapshot_free(s->snap);
}

static int audit_live(struct audit_state *s, const struct config *c)
{
	struct audit_result res;
	int r = run_audit(&(struct audit_target){ 0 }, c, &res);

	if (r < 0)
		return r;
	s->snap = res.snap;
	s->a = res.a;
	s->findings = res.findings;
	return 0;
}

static int resolve_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);
	unsigned v;

	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		return 0;
	}
	if (parse_uint(name, &v) == 0 && v != 0) {
		*uid = v;
		*gid = v;
		return 0;
	}
	if (streq(name, "nobody")) { /* no NSS entry: the conventional overflow id */
		*uid = 65534;
		*gid = 65534;
		return 0;
	}
	return -ENOENT;
}

static void journal_outcomes(const struct repair_plan *p)
{
	_cleanup_(transitions_clear) struct transitions outcomes = { 0 };
	int r = repair_outcomes(p, &outcomes);

	if (r < 0) {
		log_error_errno(r, "cannot write to the journal");
		return;
	}
	FOREACH_ARRAY (e, outcomes.items, outcomes.n_items) {
		r = journal_log_transition(e);
		if (r < 0)
			log_error_errno(r, "cannot write to the journal");
	}
}

static void write_text(const struct repair_plan *p, const struct report *rep, bool dry_run,
		       bool color)
{
	const char *bold = color ? "\033[1m" : "", *reset = color ? "\033[0m" : "";

	printf("%sptsguard repair%s on %s%s\n", bold, reset, rep->snap->hostname ?: "?",
	       dry_run ? " (dry run: nothing is changed)" : "");
	if (p->n_actions == 0)
		printf("  nothing to repair\n");
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		const char *what = a->result == ACTION_PLANNED ? "would run"
				   : a->kind == ACTION_MANUAL  ? "manual"
							       : action_result_to_string(a->result);

		printf("  %-9s %s%s%s", what, bold, a->finding->check->id, reset);
		if (a->command)
			printf(": %s", a->command);
		putchar('\n');
		if (a->detail)
			printf("            %s\n", a->detail);
	}
	putchar('\n');
	report_write_text(stdout, rep, color);
}

int cmd_repair(int argc, char **argv)
{
	static const struct option options[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "check", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "verify-user", required_argument, NULL, 'u' },
		{ "pause-before-act", no_argument, NULL, 'P' },
		{ "no-color", no_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	_cleanup_(config_freep) struct config *config = NULL;
	const char *config_path = NULL;
	struct audit_state before = { 0 }, after = { 0 };
	struct repair_plan plan = { 0 };
	struct repair_options ro = { .verify_uid = 65534, .verify_gid = 65534 };
	_cleanup_free_ char **only = NULL;
	size_t n_only = 0;
	enum format format = FORMAT_TEXT;
	const char *verify_user = "nobody";
	bool no_color = false;
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	struct report rep;
	int c, r, status = EXIT_UNKNOWN;

	while ((c = getopt_long(argc, argv, ":hn", options, NULL)) >= 0) {
		switch (c) {
		case 'n':
			ro.dry_run = true;
			break;
		case 'c': {
			char **p;

			if (!check_find(optarg)) {
				log_error("repair: unknown check '%s' (see ptsguard checks)",
					  optarg);
				return EXIT_UNKNOWN;
			}
			p = realloc(only, sizeof(char *) * (n_only + 2));
			if (!p)
				return EXIT_UNKNOWN;
			only = p;
			only[n_only++] = optarg;
			only[n_only] = NULL;
			break;
		}
		case 'f':
			if (parse_format("repair", optarg, false, &format) < 0)
				return EXIT_UNKNOWN;
			break;
		case 'j':
			format = FORMAT_JSON;
			break;
		case 'u':
			verify_user = optarg;
			break;
		case 'P':
			ro.pause_before_act = true;
			break;
		case 'C':
			no_color = true;
			break;
		case 'F':
			config_path = optarg;
			break;
		case 'h':
			printf("Usage: ptsguard repair [--dry-run] [--check ID]... [--format "
			       "text|json]\n"
			       "                       [--verify-user USER] [--config FILE]\n");
			return 0;
		default:
			bad_option("repair", c, argv);
			return EXIT_UNKNOWN;
		}
	}
	if (optind < argc) {
		log_error("repair: unexpected argument '%s'", argv[optind]);
		return EXIT_UNKNOWN;
	}
	if (resolve_user(verify_user, &ro.verify_uid, &ro.verify_gid) < 0) {
		log_error("repair: unknown user '%s' for --verify-user", verify_user);
		return EXIT_UNKNOWN;
	}
	ro.only = only;
	if (load_config("repair", config_path, &config) < 0)
		goto out;
	ro.policy = &config->check_policy;
	ro.ptmx_symlink = config->ptmx_symlink;

	if (audit_live(&before, config) < 0)
		goto out;
	ro.tty_gid = before.snap->tty_gid;
	r = repair_plan(before.a, &before.findings, &ro, &plan);
	if (r >= 0 && !ro.dry_run)
		r = repair_act(&plan, &ro);
	if (r < 0) {
		log_error_errno(r, "repair failed");
		goto out;
	}

	/* Verify by a fresh look at the world, and report that state. */
	if (!ro.dry_run) {
		if (audit_live(&after, config) < 0)
			goto out;
		repair_confirm(&plan, &after.findings);
		journal_outcomes(&plan);
	}
	{
		struct audit_state *shown = ro.dry_run ? &before : &after;

		rep = (struct report){
			.snap = shown->snap,
			.a = shown->a,
			.findings = &shown->findings,
			.source = "live",
			.generated_at = now_usec(CLOCK_REALTIME),
			.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
		};
		if (format == FORMAT_JSON) {
			json_object *o = report_to_json(&rep);
			_cleanup_free_ char *text = NULL;

			json_object_object_add(o, "dry_run", json_object_new_boolean(ro.dry_run));
			json_object_object_add(o, "actions", repair_plan_to_json(&plan));
			text = json_to_text(o, 1);
			json_object_put(o);
			if (!text || fputs(text, stdout) < 0)
				goto out;
		} else
			write_text(&plan, &rep, ro.dry_run, want_color(no_color));
		if (fflush(stdout) != 0)
			goto out;
		status = report_exit_status(&shown->findings);
	}
out:
	repair_plan_clear(&plan);
	audit_state_clear(&before);
	audit_state_clear(&after);
	return status;
}
