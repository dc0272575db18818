/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `ptsguard audit`: probe this host (or load a snapshot), analyse, run the checks, write the
 * report as text, JSON, Prometheus text or the monitoring-plugin line (to standard output, or
 * atomically to --output FILE), and exit with the monitoring-plugin status of what is left after
 * the filters --min-severity, --check and --ignore (0 ok, 1 warning, 2 critical, 3 could not
 * run). An audit that could not run still says so in the formats monitoring reads: Prometheus
 * text with ptsguard_audit_success 0, the plugin line UNKNOWN.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "pipeline/namespace-audit.h"
#include "probe/allocation.h"
#include "probe/mntns.h"
#include "probe/namespace.h"
#include "report/report.h"
#include "util/caps.h"
#include "util/escape.h"
#include "util/json-util.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/procfs.h"
#include "util/string-util.h"

struct audit_args {
	enum format format;
	const char *snapshot_path;   /* NULL: the live system */
	struct report_filter filter; /* --min-severity, --check, --ignore */
	bool *excluded;		     /* filter.excluded, owned; NULL: neither option given */
	bool has_only;		     /* --check given: what it names alone is shown */
	const char *output;	     /* --output FILE; NULL: standard output */
	bool quiet;		     /* -q: nothing on standard output */
	FILE *out;		     /* where the report is written */
	bool incomplete;	     /* the report could not be written whole */
	enum color_when color;
	const char *config_path;
	bool all_namespaces;
	pid_t namespace_pid; /* --namespace: 0 for none */
	bool no_probe;
};

/* --check ID (ignore false) or --ignore ID: the checks left out in ret->excluded. */
static int parse_check_option(const char *id, bool ignore, struct audit_args *ret)
{
	const struct check_info *c = check_find(id);
	size_t k;

	if (!c) {
		log_error("audit: --%s: unknown check '%s' (see ptsguard checks)",
			  ignore ? "ignore" : "check", id);
		return -EINVAL;
	}
	if (!ret->excluded) {
		ret->excluded = calloc(check_catalog_size, sizeof(bool));
		if (!ret->excluded)
			return log_error_errno(-ENOMEM, "audit");
		ret->filter.excluded = ret->excluded;
	}
	k = check_catalog_index(c);
	if (ignore) {
		ret->excluded[k] = true;
		return 0;
	}
	/* The first --check leaves out every check; each names one back in, unless ignored. */
	if (!ret->has_only) {
		for (size_t j = 0; j < check_catalog_size; j++)
			ret->excluded[j] = true;
		ret->has_only = true;
	}
	ret->excluded[k] = false;
	return 0;
}

static void audit_help(void)
{
	printf("Usage: ptsguard audit [OPTIONS]\n"
	       "\n"
	       "Audit devpts and /dev/ptmx on this host (or in a captured snapshot, or in the\n"
	       "mount namespace of another process) and report the findings. Exit status: 0\n"
	       "nothing at warning or above, 1 warning, 2 critical, 3 could not run.\n"
	       "\n"
	       "Options:\n"
	       "     --format FORMAT          text (the default), json, prometheus or plugin\n"
	       "                              (one monitoring-plugin line)\n"
	       "     --json                   the same as --format json\n"
	       "     --snapshot FILE          audit a snapshot (ptsguard snapshot) instead of\n"
	       "                              the live system; - reads standard input\n"
	       "     --min-severity LEVEL     report only findings at info (the default),\n"
	       "                              warning or critical and above\n"
	       "     --check ID               report only this check (repeatable)\n"
	       "     --ignore ID              leave this check out (repeatable)\n"
	       "  -q --quiet                  write nothing; the exit status only\n"
	       "     --output FILE            write the report to FILE, replaced atomically,\n"
	       "                              then exit with the audit's status\n"
	       "     --color[=WHEN]           colour the text: auto (on a terminal, the\n"
	       "                              default), always or never\n"
	       "     --no-color               the same as --color=never\n"
	       "     --config FILE            read only this configuration file\n"
	       "     --namespace PID          audit the mount namespace of process PID too\n"
	       "     --all-namespaces         audit every mount namespace of the host too\n"
	       "     --no-probe               do not allocate a pty as an unprivileged user\n"
	       "                              (the allocation probe)\n"
	       "  -h --help                   show this help\n"
	       "\n"
	       "See ptsguard(8) and ptsguard-checks(7).\n");
}

/* 0: run; 1: done (help shown); negative: a usage error, logged. */
static int audit_parse(int argc, char **argv, struct audit_args *ret)
{
	static const struct option options[] = {
		FORMAT_OPTIONS,
		{ "snapshot", required_argument, NULL, 's' },
		{ "min-severity", required_argument, NULL, 'm' },
		COLOR_OPTIONS,
		{ "config", required_argument, NULL, 'c' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "namespace", required_argument, NULL, 'N' },
		{ "no-probe", no_argument, NULL, 'P' },
		{ "check", required_argument, NULL, 'k' },
		{ "ignore", required_argument, NULL, 'i' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	_cleanup_free_ char **ignored = NULL;
	size_t n_ignored = 0;
	int c, r;

	*ret = (struct audit_args){ .format = FORMAT_TEXT, .filter.min_severity = SEVERITY_INFO };
	while ((c = getopt_long(argc, argv, ":hq", options, NULL)) >= 0) {
		/* The monitoring-plugin line is audit's alone. */
		if (c == 'f' && streq(optarg, "plugin")) {
			ret->format = FORMAT_PLUGIN;
			continue;
		}
		r = parse_format_option("audit", c, true, &ret->format);
		if (r == 0)
			r = parse_color_option("audit", c, &ret->color);
		if (r == 0)
			r = parse_target_option("audit", c, &ret->namespace_pid, &ret->no_probe);
		if (r != 0) {
			if (r < 0)
				return r;
			continue;
		}
		switch (c) {
		case 's':
			ret->snapshot_path = optarg;
			break;
		case 'm':
			r = severity_from_string(optarg);
			if (r < 0) {
				log_error("audit: unknown severity '%s' (expected info, warning or "
					  "critical)",
					  optarg);
				return -EINVAL;
			}
			ret->filter.min_severity = r;
			break;
		case 'k':
			r = parse_check_option(optarg, false, ret);
			if (r < 0)
				return r;
			break;
		case 'i': {
			char **p;

			/* Applied after every --check, whatever the order. */
			if (!check_find(optarg)) {
				log_error(
				    "audit: --ignore: unknown check '%s' (see ptsguard checks)",
				    optarg);
				return -EINVAL;
			}
			p = realloc(ignored, sizeof(char *) * (n_ignored + 1));
			if (!p)
				return log_error_errno(-ENOMEM, "audit");
			ignored = p;
			ignored[n_ignored++] = optarg;
			break;
		}
		case 'q':
			ret->quiet = true;
			break;
		case 'o':
			ret->output = optarg;
			break;
		case 'c':
			ret->config_path = optarg;
			break;
		case 'A':
			ret->all_namespaces = true;
			break;
		case 'h':
			audit_help();
			return 1;
		default:
			return bad_option("audit", c, argv);
		}
	}
	if ((ret->all_namespaces || ret->namespace_pid) && ret->snapshot_path) {
		log_error("audit: --%s and --snapshot exclude each other (a snapshot holds one "
			  "namespace and records which)",
			  ret->all_namespaces ? "all-namespaces" : "namespace");
		return -EINVAL;
	}
	if (ret->all_namespaces && ret->namespace_pid) {
		log_error("audit: --namespace and --all-namespaces exclude each other");
		return -EINVAL;
	}
	for (size_t k = 0; k < n_ignored; k++) {
		r = parse_check_option(ignored[k], true, ret);
		if (r < 0)
			return r;
	}
	return no_more_arguments("audit", argc, argv);
}

/* The plugin line of a report and its namespaces, with the exit status's word. */
static int write_plugin(FILE *f, const struct report *rep)
{
	struct plugin_summary p;
	int r = plugin_summary_init(&p);

	if (r < 0)
		return r;
	plugin_summary_add(&p, rep);
	FOREACH_ARRAY (n, rep->namespaces, rep->n_namespaces)
		plugin_summary_add(&p, &n->report);
	r = report_write_plugin(f, &p, report_exit_status_all(rep));
	plugin_summary_done(&p);
	return r;
}

/* Colour only on a terminal, never into --output's file. */
static bool audit_color(const struct audit_args *args)
{
	return args->out == stdout && want_color(args->color);
}

static int write_report(const struct report *rep, const struct audit_args *args)
{
	FILE *f = args->out;
	int r;

	switch (args->format) {
	case FORMAT_JSON:
		r = report_write_json(f, rep);
		break;
	case FORMAT_PROMETHEUS:
		r = report_write_prometheus(f, rep);
		break;
	case FORMAT_PLUGIN:
		r = write_plugin(f, rep);
		break;
	default:
		r = report_write_text(f, rep, audit_color(args));
		break;
	}
	if (r >= 0)
		r = f == stdout ? flush_stdout() : fflush(f) != 0 ? -errno : 0;
	return r;
}

/* The first error logged, for the plugin line of an audit that could not run (monitoring shows
 * that line, not standard error). */
static char first_error[256];

static void plugin_log_sink(int priority, const char *const *fields, const char *message)
{
	(void)fields;
	if (priority <= LOG_ERR && !first_error[0])
		snprintf(first_error, sizeof(first_error), "%s", message);
	fprintf(stderr, "ptsguard: %s\n", message);
}

/* An audit that could not run (reason: why, in a word of ours): the formats monitoring reads say
 * so themselves, Prometheus with ptsguard_audit_success 0, the plugin line UNKNOWN; the others
 * write nothing. EXIT_UNKNOWN. */
static int audit_failed(const struct audit_args *args, const char *reason)
{
	int r = 0;

	if (args->format == FORMAT_PROMETHEUS)
		r = report_write_prometheus_failed(args->out, reason);
	else if (args->format == FORMAT_PLUGIN)
		r = report_write_plugin_failed(
		    args->out, first_error[0] ? first_error : "the audit could not run");
	if (r >= 0)
		r = args->out == stdout ? flush_stdout() : fflush(args->out) != 0 ? -errno : 0;
	if (r < 0 && !ferror(stdout)) /* else main() says "write error" */
		log_error_errno(r, "cannot write the report");
	return EXIT_UNKNOWN;
}

/* What --all-namespaces has written and counted so far: each namespace is audited, written (or,
 * for Prometheus, its few series kept) and freed before the next. */
struct namespaces_output {
	struct audit_args *args;
	const struct config *config;
	struct host_serving host;	  /* the host's serving instance, read once */
	struct probe_kernel_facts kernel; /* the host's name, release and sysctls, read once */
	struct prometheus_namespaces prom;
	struct plugin_summary plugin;
	size_t audited, clean, failed;
	int status;
	/* Writing the report failed: the run stops there (the namespaces' own errors never stop
	 * it). */
	bool write_error;
	/* What the allocation probes of the run may still take together; later ones are
	 * skipped (probe/allocation.h). */
	uint64_t probe_budget_left;
	/* The allocation probe's default user, looked up once for every namespace (unset: the
	 * configuration names one, or the pipeline looks it up itself). */
	bool has_probe_user;
	uid_t probe_uid;
	gid_t probe_gid;
};

/* One item of the host report's "namespaces", written as it is described at its nesting (each
 * line four more spaces in), without a newline after it. */
static int write_json_item(FILE *f, const struct report_namespace *n, bool first)
{
	int r;

	fputs(first ? "\n    " : ",\n    ", f);
	r = report_namespace_write_json(f, n, 2);
	return r < 0 ? r : ferror(f) ? -EIO : 0;
}

static int write_namespace(struct namespaces_output *out, const struct report_namespace *n)
{
	switch (out->args->format) {
	case FORMAT_JSON:
		return write_json_item(out->args->out, n, out->audited == 0);
	case FORMAT_PROMETHEUS:
		return prometheus_namespaces_add(&out->prom, n);
	case FORMAT_PLUGIN:
		plugin_summary_add(&out->plugin, &n->report);
		return 0;
	default: {
		struct report_namespace named = *n;
		char path[32], comm[64];

		if (report_clean(&n->report) && !out->args->namespace_pid) {
			out->clean++;
			return 0;
		}
		/* Only a block's header names the process: read for it alone. */
		snprintf(path, sizeof(path), "%d/comm", (int)n->pid);
		if (procfs_fd() >= 0 &&
		    procfs_read_comm(procfs_fd(), path, comm, sizeof(comm)) >= 0)
			named.comm = comm;
		return report_write_namespace_text(out->args->out, &named, audit_color(out->args));
	}
	}
}

/* Holders of a listed namespace (or chroot): its own processes, as the walk found them. */
static int listed_holders(void *userdata, struct snapshot *s, const struct analysis *a)
{
	const struct mntns *ns = userdata;

	return probe_holders_pids(s, a, "/proc", ns->all, ns->pids_total, ns->ino);
}

/* Audit the namespace a opened and write it; listed: what the walk of /proc found of it. Returns
 * what namespace_audit_run() does; a failure to write the report is not the namespace's: it sets
 * out->write_error. */
static int audit_listed_ns(struct namespaces_output *out, struct namespace_audit *a,
			   const struct mntns *listed)
{
	struct audit_target target = { .probe.host = &out->host,
				       .probe.kernel = &out->kernel,
				       .probe.skip_allocation = out->args->no_probe,
				       .probe.has_alloc_user = out->has_probe_user,
				       .probe.alloc_uid = out->probe_uid,
				       .probe.alloc_gid = out->probe_gid,
				       .probe.alloc_budget = &out->probe_budget_left,
				       .holders = listed_holders,
				       .userdata = (void *)listed,
				       .probe_worker = cli_probe_worker() };
	struct report_namespace ns_rep;
	int r;

	namespace_audit_attribute(a);
	r = namespace_audit_run(a, &target, out->config);
	if (r < 0)
		return r;
	ns_rep = namespace_audit_report(a, listed->pids_total);
	report_filter_apply(&out->args->filter, &a->result.findings, ns_rep.report.hidden, NULL);
	ns_rep.report.filter = &out->args->filter;
	if (write_namespace(out, &ns_rep) < 0)
		out->write_error = true;
	out->audited++;
	if (report_exit_status(&a->result.findings) > out->status)
		out->status = report_exit_status(&a->result.findings);
	return 0;
}

/* A namespace that could not be judged: its item says why (JSON: "report": null and "error";
 * text: one line), and the run goes on with the next. */
static void write_namespace_error(struct namespaces_output *out, struct namespace_audit *a,
				  unsigned pids_total, const char *error)
{
	struct report_namespace n;
	_cleanup_free_ char *escaped = NULL;
	int r = 0;

	namespace_audit_attribute(a);
	n = namespace_audit_report(a, pids_total);
	n.report = (struct report){ 0 };
	n.error = error;
	switch (out->args->format) {
	case FORMAT_JSON:
		r = write_json_item(out->args->out, &n, out->audited == 0);
		out->audited++;
		break;
	case FORMAT_PROMETHEUS:
	case FORMAT_PLUGIN:
		break; /* counted in the exit status only (and the plugin line's "not judged") */
	default: {
		_cleanup_free_ char *root = n.root ? cescape(n.root) : NULL;

		escaped = cescape(error);
		if (fprintf(out->args->out, "\nmount namespace %llu%s%s (pid %d): not judged: %s\n",
			    (unsigned long long)n.mntns, n.root ? ", root " : "",
			    n.root ? root ?: "?" : "", (int)n.pid, escaped ?: "?") < 0)
			r = -EIO;
		break;
	}
	}
	if (r < 0)
		out->write_error = true;
}

/* Audit namespace ns through the first of its processes still there. 0 when audited or when all
 * its processes are gone; negative when it could not be judged (logged, and written as its
 * item). */
static int audit_listed(struct namespaces_output *out, const struct mntns *ns)
{
	for (unsigned k = 0; k < ns->n_pids; k++) {
		_cleanup_(namespace_audit_done) struct namespace_audit a = { 0 };
		char why[sizeof(a.err.message) + 64];
		int r;

		/* Gone, or its pid taken by a process elsewhere since the walk: the next. */
		struct namespace_root root = { .dev = ns->root_dev,
					       .ino = ns->root_ino,
					       .chroot = ns->chroot };

		r = namespace_audit_open(&a, ns->pids[k], ns->ino, &root, -1);
		if (r >= 0)
			r = audit_listed_ns(out, &a, ns);
		if (r == -ESRCH)
			continue;
		if (r < 0) {
			namespace_audit_why(&a, r, why, sizeof(why));
			log_error("audit: mount namespace %llu%s (pid %d): %s",
				  (unsigned long long)ns->ino, ns->chroot ? ", a chroot in it" : "",
				  (int)ns->pids[k], why);
			if (a.target)
				write_namespace_error(out, &a, ns->pids_total, why);
		}
		return r;
	}
	return 0;
}

/* Every other mount namespace, after the host's report (JSON: inside it, before its closing
 * brace; Prometheus: the host's report is written at the end, with the namespaces' series). */
/* Name the processes whose namespace the walk could not read (the first few, with their
 * names): a person can then tell whether one of them is a container. */
static void log_skipped(const struct mntns_list *l)
{
	char names[MNTNS_SKIPPED_NAMED * 300] = "";
	size_t used = 0;

	for (unsigned k = 0; k < l->skipped && k < MNTNS_SKIPPED_NAMED; k++) {
		_cleanup_free_ char *escaped = NULL;
		char path[32], comm[64];
		int n;

		snprintf(path, sizeof(path), "%d/comm", (int)l->skipped_pids[k]);
		if (procfs_fd() < 0 || procfs_read_comm(procfs_fd(), path, comm, sizeof(comm)) < 0)
			comm[0] = 0;
		/* A process names itself: nothing of it reaches a terminal unescaped. */
		escaped = cescape(comm);
		n = snprintf(names + used, sizeof(names) - used, "%spid %d%s%s", k ? ", " : "",
			     (int)l->skipped_pids[k], comm[0] ? " " : "", escaped ?: "");
		if (n < 0 || (size_t)n >= sizeof(names) - used)
			break;
		used += (size_t)n;
	}
	log_error("audit: the mount namespace of %u process%s could not be read (not allowed): "
		  "%s%s",
		  l->skipped, l->skipped == 1 ? "" : "es", names,
		  l->skipped > MNTNS_SKIPPED_NAMED ? ", ..." : "");
}

/* --all-namespaces: the probe of each namespace runs as the same user, looked up once rather
 * than through NSS for every namespace, on one worker. That worker is forked now, before the
 * host's mount table is read: a fork of the process holding it would copy its page tables, and
 * every page it wrote later would be copied again. */
static void probe_worker_prepare(struct namespaces_output *out)
{
	config_probe_identity(out->config, &out->probe_uid, &out->probe_gid);
	out->has_probe_user = true;
	/* Not started (no memory, no process): the first probe tries again and says why. */
	if (!out->args->no_probe && caps_may_change_ids() && cli_probe_worker())
		(void)probe_allocation_prepare(cli_probe_worker(), out->probe_uid, out->probe_gid);
}

static int audit_namespaces(struct namespaces_output *out)
{
	struct mntns_list l;
	int r;

	/* However many namespaces, and whatever they do to their /dev/ptmx, the probes of one run
	 * take at most this long together. */
	out->probe_budget_left = ALLOC_RUN_BUDGET_USEC;
	r = mntns_enumerate("/proc", NULL, NULL, &l);
	if (r < 0)
		return log_error_errno(r, "audit: cannot list the mount namespaces in /proc");
	FOREACH_ARRAY (ns, l.items, l.n) {
		r = audit_listed(out, ns);
		if (r == -ENOMEM || out->write_error)
			break;
		if (r < 0)
			out->failed++;
		r = 0;
	}
	if (l.skipped > 0)
		log_skipped(&l);
	mntns_list_done(&l);
	return out->write_error ? -EIO : r;
}

/* --namespace PID (opened before the host was read): judged beside the host, and nothing
 * written unless it could be: the host's report with one namespaces[] item. The exit status. */
static int audit_named(struct namespaces_output *out, struct namespace_target *t,
		       struct report *host)
{
	struct audit_target target = { .probe.host = &out->host,
				       .probe.skip_allocation = out->args->no_probe };
	_cleanup_(namespace_audit_done) struct namespace_audit a = { 0 };
	struct report_namespace ns_rep;
	unsigned pids_total = 0;
	int r, status;

	namespace_audit_borrow(&a, t);
	namespace_audit_attribute(&a);
	(void)namespace_count_processes(t, &pids_total);
	target.probe.ns = t;
	a.started = now_usec(CLOCK_MONOTONIC);
	if (run_namespace("audit", &target, out->config, &a.result) < 0)
		return audit_failed(out->args, "namespace");
	ns_rep = namespace_audit_report(&a, pids_total);
	report_filter_apply(&out->args->filter, &a.result.findings, ns_rep.report.hidden, NULL);
	ns_rep.report.filter = &out->args->filter;
	host->namespaces = &ns_rep;
	host->n_namespaces = 1;
	r = write_report(host, out->args);
	status = report_exit_status_all(host);
	host->namespaces = NULL;
	host->n_namespaces = 0;
	if (r < 0) {
		if (!ferror(stdout)) /* else main() says "write error" */
			log_error_errno(r, "cannot write the report");
		out->args->incomplete = true;
		return EXIT_UNKNOWN;
	}
	return status;
}

static int audit_run(struct audit_args *args)
{
	_cleanup_(config_freep) struct config *config = NULL;
	_cleanup_(namespace_target_freep) struct namespace_target *named = NULL;
	struct namespaces_output out = { .args = args };
	_cleanup_free_ bool *hidden_checks = calloc(check_catalog_size ?: 1, sizeof(bool));
	struct audit_result res;
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	struct report rep;
	_cleanup_free_ char *host_json = NULL;
	int r, status;

	/* The host's configuration for the host; a snapshot from elsewhere only with --config. */
	if (args->config_path || !args->snapshot_path)
		r = load_config("audit", args->config_path, &config);
	else
		r = config_new_default(&config);
	if (r < 0)
		return audit_failed(args, "configuration");
	if (!hidden_checks)
		return log_error_errno(-ENOMEM, "audit"), EXIT_UNKNOWN;
	out.config = config;
	if (args->namespace_pid && open_namespace("audit", args->namespace_pid, &named) < 0)
		return audit_failed(args, "namespace");
	/* Reading is harmless, but the block printed is this host's again: a pid taken from a
	 * listing may have been reused by one of its processes since (repair refuses it). */
	if (named && named->own)
		log_error("audit: warning: --namespace %d: process %d is in ptsguard's own mount "
			  "namespace %llu and root: what is judged is this host again (was its pid "
			  "reused?)",
			  (int)named->pid, (int)named->pid, (unsigned long long)named->mntns);
	/* Tests: the target may exit here, between opening it and reading it. */
	if (named)
		test_hook_pause("PTSGUARD_TEST_PAUSE_NAMESPACE", "after opening the namespace");
	if (args->all_namespaces)
		probe_worker_prepare(&out);
	r = run_audit(config, args->snapshot_path, args->no_probe, &res);
	if (r < 0)
		return audit_failed(args, args->snapshot_path ? "snapshot" : "probe");

	rep = (struct report){
		.snap = res.snap,
		.a = res.a,
		.findings = &res.findings,
		.source = args->snapshot_path ? "snapshot" : "live",
		.generated_at = now_usec(CLOCK_REALTIME),
		.duration = (double)(now_usec(CLOCK_MONOTONIC) - t0) / 1e6,
		.filter = &args->filter,
		.hidden_checks = hidden_checks,
	};
	/* The filters drop findings from the output and the exit status alike. */
	report_filter_apply(&args->filter, &res.findings, rep.hidden, hidden_checks);
	status = report_exit_status(&res.findings);
	if (!args->all_namespaces && !named) {
		r = write_report(&rep, args);
		goto done;
	}
	r = host_serving_from_analysis(res.a, &out.host);
	if (r < 0)
		goto done;
	if (named) {
		status = audit_named(&out, named, &rep);
		goto done;
	}

	/* The host's report first; its snapshot is freed before the first namespace is read. */
	switch (args->format) {
	case FORMAT_JSON: {
		char *end;

		host_json = report_to_text(&rep);
		if (!host_json || !(end = strrchr(host_json, '}'))) {
			r = -ENOMEM;
			goto done;
		}
		*end = 0;
		while (end > host_json && (end[-1] == '\n' || end[-1] == ' '))
			*--end = 0;
		fputs(host_json, args->out);
		fputs(",\n  \"namespaces\": [", args->out);
		break;
	}
	case FORMAT_PROMETHEUS:
		r = prometheus_namespaces_init(&out.prom);
		if (r < 0)
			goto done;
		break;
	case FORMAT_PLUGIN:
		r = plugin_summary_init(&out.plugin);
		if (r < 0)
			goto done;
		plugin_summary_add(&out.plugin, &rep);
		break;
	default:
		rep.namespaces_follow = true;
		r = write_report(&rep, args);
		break;
	}
	if (r < 0)
		goto done;
	/* Prometheus writes the host's findings at the end: they are all it keeps of the host. */
	r = probe_kernel_facts_from_snapshot(res.snap, &out.kernel);
	if (r < 0)
		goto done;
	res.a = analysis_free(res.a);
	res.snap = snapshot_free(res.snap);
	rep.snap = NULL;
	rep.a = NULL;

	r = audit_namespaces(&out);
	if (out.status > status)
		status = out.status;
	/* A namespace not judged: nothing can be said of it; among many, the worst finding still
	 * says most. */
	if (out.failed > 0 && status == 0)
		status = EXIT_UNKNOWN;
	if (r < 0)
		goto done;
	switch (args->format) {
	case FORMAT_JSON:
		fputs(out.audited > 0 ? "\n  ]\n}\n" : "]\n}\n", args->out);
		break;
	case FORMAT_PROMETHEUS:
		r = report_write_prometheus_all(args->out, &rep, &out.prom);
		break;
	case FORMAT_PLUGIN:
		out.plugin.failed = out.failed;
		r = report_write_plugin(args->out, &out.plugin, status);
		break;
	default:
		if (out.clean > 0)
			report_write_namespaces_clean(args->out, out.clean);
		else if (out.audited == 0 && out.failed == 0)
			fputs("\nNo other mount namespace on this host.\n", args->out);
		if (out.failed > 0)
			fprintf(args->out, "%zu namespace%s could not be audited\n", out.failed,
				out.failed == 1 ? "" : "s");
		break;
	}
	if (r >= 0)
		r = args->out == stdout ? flush_stdout() : fflush(args->out) != 0 ? -errno : 0;
done:
	prometheus_namespaces_done(&out.prom);
	plugin_summary_done(&out.plugin);
	host_serving_done(&out.host);
	probe_kernel_facts_done(&out.kernel);
	audit_result_done(&res);
	if (r < 0) {
		if (!ferror(stdout)) /* else main() says "write error" */
			log_error_errno(r, "cannot write the report");
		args->incomplete = true;
		return EXIT_UNKNOWN;
	}
	return status;
}

/* --output FILE and --quiet: the report is written into memory, then replaced atomically into
 * FILE (when it was written whole), or dropped. The audit's exit status either way; 3 when the
 * file could not be written. */
static int audit_buffered(struct audit_args *args)
{
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	int status;

	args->out = open_memstream(&text, &size);
	if (!args->out)
		return log_error_errno(-errno, "audit"), EXIT_UNKNOWN;
	status = audit_run(args);
	if (fclose(args->out) != 0) {
		log_error_errno(-ENOMEM, "cannot write the report");
		return EXIT_UNKNOWN;
	}
	args->out = NULL;
	/* Nothing written (a text audit that could not run), or not whole: the file is kept. */
	if (!args->output || args->incomplete || size == 0)
		return status;
	if (write_output("audit", args->output, text, false) < 0)
		return EXIT_UNKNOWN;
	return status;
}

int cmd_audit(int argc, char **argv)
{
	struct audit_args args;
	int r = audit_parse(argc, argv, &args);

	if (r != 0) {
		free(args.excluded);
		return r > 0 ? 0 : EXIT_UNKNOWN;
	}
	if (args.format == FORMAT_PLUGIN)
		log_set_sink(plugin_log_sink);
	if (args.output || args.quiet)
		r = audit_buffered(&args);
	else {
		args.out = stdout;
		r = audit_run(&args);
	}
	log_set_sink(NULL);
	free(args.excluded);
	return r;
}
