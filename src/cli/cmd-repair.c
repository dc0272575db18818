/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard repair`: audit, then one repair session (repair/session.h: plan, act, audit
 * again, confirm, journal each outcome), then report the state after repair with the actions
 * taken. Exit status is that of the state after repair.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "analysis/analysis.h"
#include "checks/checks.h"
#include "cli/cli.h"
#include "probe/namespace-handle.h"
#include "probe/namespace.h"
#include "repair/repair.h"
#include "repair/session.h"
#include "report/report.h"
#include "util/escape.h"
#include "util/group.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/macro.h"

static void write_text(const struct repair_plan *p, const struct report *rep, bool dry_run,
		       bool color)
{
	const char *bold = color ? "\033[1m" : "", *reset = color ? "\033[0m" : "";

	/* The host name, and paths in commands and details, are what others named: escaped. */
	printf("%sptsguard repair%s on ", bold, reset);
	fputs_escaped(rep->snap->hostname ?: "?", stdout);
	printf("%s\n", dry_run ? " (dry run: nothing is changed)" : "");
	if (p->n_actions == 0)
		printf("  nothing to repair\n");
	FOREACH_ARRAY (a, p->actions, p->n_actions) {
		const char *what = a->result == ACTION_PLANNED ? "would run"
				   : a->kind == ACTION_MANUAL  ? "manual"
							       : action_result_to_string(a->result);

		printf("  %-9s %s%s%s", what, bold, a->finding->check->id, reset);
		if (a->command) {
			fputs(": ", stdout);
			fputs_escaped(a->command, stdout);
		}
		putchar('\n');
		if (a->detail) {
			fputs("            ", stdout);
			fputs_escaped(a->detail, stdout);
			putchar('\n');
		}
	}
	putchar('\n');
	report_write_text(stdout, rep, color);
}

struct repair_args {
	bool dry_run, no_probe;
	enum color_when color;
	char **only; /* --check IDs, NULL-terminated; NULL: all */
	size_t n_only;
	enum format format;
	const char *verify_user;
	const char *config_path;
	pid_t namespace_pid; /* --namespace: 0 for the host's own */
	uint64_t mntns;	     /* --mntns, or --namespace PID:ID: the namespace meant; 0 for any */
	bool allow_own;	     /* --allow-own-namespace */
	/* --target: the process meant, as a listing pinned it (probe/namespace-handle.h) */
	bool has_target;
	struct namespace_handle target;
};

static void repair_args_done(struct repair_args *args)
{
	free(args->only);
	args->only = NULL;
}

/* A mount namespace id as listings print it (the inode of /proc/PID/ns/mnt): decimal, not 0. */
static int parse_mntns(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s[0] || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end || v == 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The namespace --mntns names, once: given twice, or both ways, the ids must agree. */
static int set_mntns(struct repair_args *args, const char *s, const char *what)
{
	uint64_t v;

	if (parse_mntns(s, &v) < 0) {
		log_error("repair: %s: '%s' is not a mount namespace id (the number that "
			  "audit --all-namespaces prints, the inode of /proc/PID/ns/mnt)",
			  what, s);
		return -EINVAL;
	}
	if (args->mntns && args->mntns != v) {
		log_error("repair: %s: mount namespace %llu, but %llu was given already", what,
			  (unsigned long long)v, (unsigned long long)args->mntns);
		return -EINVAL;
	}
	args->mntns = v;
	return 0;
}

/* --target mntns:ID,root:DEV:INO,start:TICKS, as a listing prints it; its namespace must agree
 * with --mntns's. */
static int set_target(struct repair_args *args, const char *s)
{
	struct namespace_handle h;
	char mntns[24];

	if (namespace_handle_parse(s, &h) < 0) {
		log_error("repair: --target: '%s' is not a target as audit --all-namespaces "
			  "prints it (mntns:ID,root:DEV:INO,start:TICKS)",
			  s);
		return -EINVAL;
	}
	if (args->has_target && memcmp(&args->target, &h, sizeof(h)) != 0) {
		log_error("repair: --target: given twice, differently");
		return -EINVAL;
	}
	snprintf(mntns, sizeof(mntns), "%llu", (unsigned long long)h.mntns);
	if (set_mntns(args, mntns, "--target") < 0)
		return -EINVAL;
	args->has_target = true;
	args->target = h;
	return 0;
}

/* --namespace PID or PID:MNTNS. */
static int parse_namespace(struct repair_args *args, const char *s)
{
	_cleanup_free_ char *pid = strdup(s);
	char *colon = pid ? strchr(pid, ':') : NULL;

	if (!pid)
		return -ENOMEM;
	if (colon)
		*colon = 0;
	if (parse_namespace_pid("repair", pid, &args->namespace_pid) < 0)
		return -EINVAL;
	return colon ? set_mntns(args, colon + 1, "--namespace PID:MNTNS") : 0;
}

static void repair_help(void)
{
	printf("Usage: ptsguard repair [OPTIONS]\n"
	       "\n"
	       "Audit the live system, fix what is safe to fix, verify it as an unprivileged\n"
	       "user, audit again and report what was done and what is left. Exit status as\n"
	       "audit's, of the state after repair (before it, with --dry-run).\n"
	       "\n"
	       "Options:\n"
	       "  -n --dry-run                say what would be done; change nothing\n"
	       "     --check ID              repair only the findings of check ID (again for\n"
	       "                             more)\n"
	       "     --format FORMAT         text (the default) or json\n"
	       "     --json                  the same as --format json\n"
	       "     --verify-user USER      verify each repair by allocating a pty as USER\n"
	       "                             (default: [Probe] User=, else nobody)\n"
	       "     --color[=WHEN]          colour the text: auto (on a terminal, the\n"
	       "                             default), always or never\n"
	       "     --no-color              the same as --color=never\n"
	       "     --config FILE           read only this configuration file\n"
	       "     --namespace PID[:MNTNS] repair in the mount namespace of process PID\n"
	       "                             (refused when it is no longer MNTNS)\n"
	       "     --target TARGET         the target as a listing printed it\n"
	       "                             (mntns:ID,root:DEV:INO,start:TICKS): refused\n"
	       "                             unless its namespace, root and start time match\n"
	       "     --mntns MNTNS           the same check of the namespace, as an option\n"
	       "     --allow-own-namespace   let --namespace name a process of this mount\n"
	       "                             namespace at its root (the host itself)\n"
	       "     --no-probe              do not allocate a pty as an unprivileged user in\n"
	       "                             the audits (the allocation probe)\n"
	       "  -h --help                  show this help\n"
	       "\n"
	       "See REPAIR in ptsguard(8).\n");
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. */
static int repair_parse(int argc, char **argv, struct repair_args *ret)
{
	static const struct option options[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "check", required_argument, NULL, 'c' },
		FORMAT_OPTIONS,
		{ "verify-user", required_argument, NULL, 'u' },
		COLOR_OPTIONS,
		{ "config", required_argument, NULL, 'F' },
		{ "namespace", required_argument, NULL, 'N' },
		{ "mntns", required_argument, NULL, 'M' },
		{ "allow-own-namespace", no_argument, NULL, 'O' },
		{ "target", required_argument, NULL, 'T' },
		{ "no-probe", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, r;

	*ret = (struct repair_args){ .format = FORMAT_TEXT };
	while ((c = getopt_long(argc, argv, ":hn", options, NULL)) >= 0) {
		r = parse_format_option("repair", c, false, &ret->format);
		if (r == 0)
			r = parse_color_option("repair", c, &ret->color);
		if (r != 0) {
			if (r < 0)
				return r;
			continue;
		}
		switch (c) {
		case 'n':
			ret->dry_run = true;
			break;
		case 'c': {
			char **p;

			if (!check_find(optarg)) {
				log_error("repair: unknown check '%s' (see ptsguard checks)",
					  optarg);
				return -EINVAL;
			}
			p = realloc(ret->only, sizeof(char *) * (ret->n_only + 2));
			if (!p)
				return -ENOMEM;
			ret->only = p;
			ret->only[ret->n_only++] = optarg;
			ret->only[ret->n_only] = NULL;
			break;
		}
		case 'u':
			ret->verify_user = optarg;
			break;
		case 'F':
			ret->config_path = optarg;
			break;
		case 'N':
			r = parse_namespace(ret, optarg);
			if (r < 0)
				return r;
			break;
		case 'M':
			if (set_mntns(ret, optarg, "--mntns") < 0)
				return -EINVAL;
			break;
		case 'O':
			ret->allow_own = true;
			break;
		case 'T':
			if (set_target(ret, optarg) < 0)
				return -EINVAL;
			break;
		case 'P':
			ret->no_probe = true;
			break;
		case 'h':
			repair_help();
			return 1;
		default:
			return bad_option("repair", c, argv);
		}
	}
	if (!ret->namespace_pid && (ret->mntns || ret->allow_own)) {
		log_error("repair: --%s is about the namespace of --namespace PID: give "
			  "--namespace too",
			  ret->has_target ? "target"
			  : ret->mntns	  ? "mntns"
					  : "allow-own-namespace");
		return -EINVAL;
	}
	return no_more_arguments("repair", argc, argv);
}

/* The live audit repair starts from and verifies with, of the host or of ns; "audit failed"
 * for anything wrong. */
static int audit_live(const struct config *c, const struct namespace_target *ns, bool no_probe,
		      struct audit_result *ret)
{
	int r;

	*ret = (struct audit_result){ 0 };
	if (ns)
		return run_namespace(
		    "repair",
		    &(struct audit_target){ .probe.ns = ns, .probe.skip_allocation = no_probe }, c,
		    ret);
	r = run_audit(c, NULL, no_probe, ret);

	if (r < 0)
		log_error_errno(r, "audit failed");
	return r;
}

/* Is ns the namespace meant: the process --target pinned, in the namespace --mntns names, and
 * not ours unless allowed? Logs why not. A chroot of ours is not ours: it is acted on inside
 * its root, never the host's (and --target refuses it once it has gone back to that root). */
static int namespace_meant(const struct namespace_target *ns, const struct repair_args *args)
{
	struct namespace_handle now;
	char buf[160], given[NAMESPACE_HANDLE_MAX];
	const char *why;

	namespace_handle_of(ns, &now);
	if (args->has_target &&
	    (why = namespace_handle_differs(&args->target, &now, buf, sizeof(buf)))) {
		namespace_handle_format(&args->target, given, sizeof(given));
		log_error("repair: --namespace %d: process %d is not the target listed (--target "
			  "%s): %s: refusing to act (was its pid reused, or has it changed its "
			  "root?)",
			  (int)ns->pid, (int)ns->pid, given, why);
		return -ESTALE;
	}
	if (args->mntns && ns->mntns != args->mntns) {
		log_error("repair: --namespace %d: process %d is in mount namespace %llu, not %llu "
			  "(--mntns): refusing to act (was its pid reused?)",
			  (int)ns->pid, (int)ns->pid, (unsigned long long)ns->mntns,
			  (unsigned long long)args->mntns);
		return -ESTALE;
	}
	if (ns->own && !args->allow_own) {
		log_error(
		    "repair: --namespace %d: process %d is in ptsguard's own mount namespace "
		    "%llu, not another: refusing to act (was its pid reused?); ptsguard repair "
		    "without --namespace repairs this one, and --allow-own-namespace allows it "
		    "through --namespace",
		    (int)ns->pid, (int)ns->pid, (unsigned long long)ns->mntns);
		return -EPERM;
	}
	return 0;
}

static int write_result(const struct repair_plan *plan, const struct audit_result *shown,
			const struct repair_args *args, uint64_t t0)
{
	struct report rep = {
		.snap = shown->snap,
		.a = shown->a,
		.findings = &shown->findings,
		.source = "live",
		.generated_at = now_usec(CLOCK_REALTIME),
		.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
	};

	if (args->format == FORMAT_JSON) {
		json_object *o = report_to_json(&rep);
		int r;

		json_object_object_add(o, "dry_run", json_object_new_boolean(args->dry_run));
		json_object_object_add(o, "actions", repair_plan_to_json(plan));
		r = json_write(stdout, o, 1);
		json_object_put(o);
		if (r < 0)
			return -EIO;
	} else
		write_text(plan, &rep, args->dry_run, want_color(args->color));
	return flush_stdout();
}

struct audit_again {
	const struct config *config;
	const struct namespace_target *ns;
	bool no_probe;
};

/* The session's audit after acting: the same live audit as the one it repaired from. */
static int audit_again(void *userdata, struct audit_result *ret)
{
	const struct audit_again *x = userdata;

	return audit_live(x->config, x->ns, x->no_probe, ret);
}

static int repair_run(const struct repair_args *args)
{
	_cleanup_(namespace_target_freep) struct namespace_target *ns = NULL;
	_cleanup_(config_freep) struct config *config = NULL;
	struct audit_result before = { 0 };
	struct audit_again again = { .no_probe = args->no_probe };
	struct repair_session s = {
		.dry_run = args->dry_run,
		.only = args->only,
		.pause_before_act = test_hook_enabled("PTSGUARD_TEST_PAUSE_BEFORE_ACT"),
		.verify_given = args->verify_user != NULL,
		.audit = audit_again,
		.userdata = &again,
	};
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	int status = EXIT_UNKNOWN;

	if (args->verify_user && user_lookup(args->verify_user, &s.verify_uid, &s.verify_gid) < 0) {
		log_error("repair: unknown user '%s' for --verify-user", args->verify_user);
		return EXIT_UNKNOWN;
	}
	if (load_config("repair", args->config_path, &config) < 0)
		goto out;
	if (args->namespace_pid && open_namespace("repair", args->namespace_pid, &ns) < 0)
		goto out;
	if (ns && namespace_meant(ns, args) < 0)
		goto out;
	s.config = again.config = config;
	s.ns = again.ns = ns;

	if (audit_live(config, ns, args->no_probe, &before) < 0)
		goto out;
	/* What was read is of the namespace meant only if the process was there all along. */
	if (ns && repair_target_still_judged(ns, "during the audit") < 0)
		goto out;
	if (repair_session_run(&s, before.a, &before.findings) < 0)
		goto out;
	if (write_result(&s.plan, s.dry_run ? &before : &s.after, args, t0) < 0)
		goto out;
	status = report_exit_status(s.dry_run ? &before.findings : &s.after.findings);
out:
	repair_session_done(&s);
	audit_result_done(&before);
	return status;
}

int cmd_repair(int argc, char **argv)
{
	_cleanup_(repair_args_done) struct repair_args args = { 0 };
	int r = repair_parse(argc, argv, &args);

	if (r != 0)
		return r > 0 ? 0 : EXIT_UNKNOWN;
	return repair_run(&args);
}
